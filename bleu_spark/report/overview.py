"""The overview: groups x language pairs, a matrix per metric, and the table of contents."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Sequence

from ..metrics import order_of
from .sections import TOP, Group, Section

# The overview's shades, worst to best within a column; the last DARK_SHADES take white text.
SHADES = ("#f1f6fc", "#d3e4f5", "#a3c6ea", "#5f9dd9", "#2466b0")
DARK_SHADES = 2


@dataclass
class Matrix:
    """One metric's scores: a row per group (best first on average), a column per section."""
    metric: Any
    columns: List[Section]
    rows: List[Dict[str, Any]]   # label, baseline, cells (one per column, None where absent)

    @property
    def top(self) -> List[Dict[str, Any]]:
        return self.rows[:TOP]

    @property
    def rest(self) -> List[Dict[str, Any]]:
        return self.rows[TOP:]


def _shade(score: float, scores: Sequence[float], higher_is_better: bool) -> int:
    """The shade of a score among its column's: 0 for the worst .. len(SHADES)-1 for the best.
    Within a column only: scores of other language pairs are of other test sets."""
    low, high = min(scores), max(scores)
    if high == low:  # nothing to compare it with (one system): the middle shade
        return len(SHADES) // 2
    place = (score - low) / (high - low)
    return round((place if higher_is_better else 1.0 - place) * (len(SHADES) - 1))


def _cell(group: Group, section: Section, scores: Sequence[float]) -> Dict[str, Any]:
    if group.score is None:
        return dict(score=None, href="#" + section.anchor, shade=None, dark=False)
    shade = _shade(group.score, scores, section.metric.higher_is_better)
    return dict(score=group.score, href="#" + section.anchor, shade=SHADES[shade],
                dark=shade >= len(SHADES) - DARK_SHADES, cluster=group.cluster,
                rank_range=group.rank_range)


def _matrix(columns: List[Section]) -> Matrix:
    cells: Dict[str, Dict[int, Dict[str, Any]]] = {}
    baselines = set()
    for index, section in enumerate(columns):
        scores = [g.score for g in section.groups if g.score is not None]
        for group in section.groups:
            cells.setdefault(group.label, {})[index] = _cell(group, section, scores)
            if group.baseline:
                baselines.add(group.label)
    places = _places(columns)
    order = sorted(cells, key=lambda label: (places(label), label))
    rows = [dict(label=label, baseline=label in baselines,
                 cells=[cells[label].get(i) for i in range(len(columns))]) for label in order]
    return Matrix(columns[0].metric, columns, rows)


def _places(columns: List[Section]):
    """A row's place: its mean rank relative to each column's size (0 the best), a column
    without it counting as last, so a system of one language pair does not top those of all."""
    ranks = [{g.label: rank / len(s.groups) for rank, g in enumerate(s.groups)} for s in columns]
    return lambda label: sum(r.get(label, 1.0) for r in ranks) / len(ranks)


def overview(sections: Sequence[Section]) -> List[Matrix]:
    by_metric: Dict[str, List[Section]] = {}
    for section in sections:
        by_metric.setdefault(section.metric.name, []).append(section)
    return [_matrix(by_metric[name]) for name in sorted(by_metric, key=order_of)]


def contents(sections: Sequence[Section]) -> List[Dict[str, Any]]:
    """The table of contents: a line per language pair, linking each of its metrics' sections."""
    entries: Dict[str, List[Section]] = {}
    for section in sections:
        entries.setdefault(section.column, []).append(section)
    return [dict(heading=heading, sections=mine) for heading, mine in entries.items()]
