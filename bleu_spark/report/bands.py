"""A metric's interpretation bands on the page: a score's band and colour, and the bands'
legend."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

NO_BAND_COLOUR = "#1c7ed6"  # bars of a metric without interpretation bands


def _band(score: float, bands) -> Optional[Tuple[float, bool, str, str]]:
    for band in bands:
        low, inclusive = band[0], band[1]
        if score > low or (inclusive and score == low):
            return band
    return bands[-1] if bands else None  # NaN compares false with everything


def interpretation(score: Optional[float], bands) -> Optional[str]:
    """The interpretation band of a score (0-100) among a metric's `bands`, or None for no
    score or a metric without bands."""
    band = None if score is None else _band(score, bands)
    return band[2] if band else None


def band_colour(score: float, bands) -> str:
    band = _band(score, bands)
    return band[3] if band else NO_BAND_COLOUR


def band_legend(bands) -> List[Dict[str, str]]:
    """Each band's name, colour and score range, read off a metric's bands."""
    legend = []
    for index, (low, _, name, colour) in enumerate(bands):
        if index == 0:
            span = f"above {low:g}"
        elif index == len(bands) - 1:
            span = f"below {bands[index - 1][0]:g}"
        else:
            span = f"{low:g}–{bands[index - 1][0]:g}"
        legend.append(dict(name=name, colour=colour, range=span))
    return legend
