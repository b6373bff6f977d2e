"""The page's header: the run's facts, the partitions the scores cover, and each metric's
bands explained once."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..metrics import order_of
from .bands import band_legend
from .sections import Section
from .shared import MISSING, time_text

PARTITION_VALUES_SHOWN = 12  # more partition values than this are shown as first … last


def run_facts(run: Optional[dict]) -> List[Tuple[str, str]]:
    """(name, value) pairs of the run info worth a line on the page, those present only."""
    if not run:
        return []
    config = run.get("config") or {}
    rows = run.get("rows") or {}
    facts = [("run", run.get("run_id") or run.get("id")),
             ("time", run.get("time") or run.get("started") or run.get("finished")),
             ("input", run.get("input") or config.get("input")),
             ("rows read", rows.get("read")), ("rows scored", rows.get("scored")),
             ("rows rejected", rows.get("rejected"))]
    return [(name, time_text(value)) for name, value in facts if value is not None]


def partition_facts(partitions: Optional[Dict[str, Sequence[Any]]]) -> List[Tuple[str, str]]:
    """(column, the values the page covers) per partition column; a long list as its ends."""
    facts = []
    for column, values in (partitions or {}).items():
        texts = sorted(MISSING if v is None else time_text(v) for v in set(values))
        shown = ", ".join(texts) if len(texts) <= PARTITION_VALUES_SHOWN else f"{texts[0]} … {texts[-1]}"
        facts.append((column, f"{shown} ({len(texts)} partition{'s' if len(texts) != 1 else ''})"))
    return facts


def band_notes(sections: Sequence[Section]) -> List[Dict[str, Any]]:
    """Once per page, for each metric on it that has bands: its legend and where it comes from."""
    metrics = {s.metric.name: s.metric for s in sections if s.metric.bands}
    return [dict(title=m.title, legend=band_legend(m.bands), source=m.bands_source[0],
                 url=m.bands_source[1]) for m in (metrics[n] for n in sorted(metrics, key=order_of))]
