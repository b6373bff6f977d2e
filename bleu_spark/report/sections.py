"""The page's sections and the score rows each shows: a section per language pair (or one for
the page) and metric, its groups ranked best first."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..metrics import REGISTRY, declaration, order_of
from .bands import band_colour, interpretation
from .shared import (DEFAULT_METRIC, LANGPAIR, MISSING, SYSTEM, group_label, label_columns,
                     metric_name, value_text)

TOP = 20           # systems shown per section and in the overview; the rest are folded
# What a group of each label column is called ("11 systems"); other columns: "groups".
NOUNS = {SYSTEM: ("system", "systems"), LANGPAIR: ("language pair", "language pairs")}


@dataclass
class Group:
    """One score row as the page shows it."""
    values: Dict[str, Any]   # group column -> value
    label: str               # the group columns other than the section's, joined
    row: Dict[str, Any]
    baseline: bool = False   # the baseline of the section's paired tests

    @property
    def score(self) -> Optional[float]:
        return self.row.get("score")

    @property
    def interval(self) -> Optional[Tuple[float, float]]:
        low, high = self.row.get("ci_low"), self.row.get("ci_high")
        return None if low is None or high is None else (low, high)

    @property
    def cluster(self) -> Optional[int]:
        return self.row.get("cluster")

    @property
    def rank_range(self) -> str:
        """The bootstrap's rank range, `2–4` (one rank alone when it is sure)."""
        low, high = self.row.get("rank_low"), self.row.get("rank_high")
        return "" if low is None else str(low) if low == high else f"{low}–{high}"

    @property
    def rejected(self) -> bool:
        return (self.row.get("n_rejected") or 0) > 0

    @property
    def partial(self) -> bool:
        coverage = self.row.get("coverage")
        return coverage is not None and coverage < 1.0


@dataclass
class Segments:
    """One group's segments the page shows (`--segments`): its worst, and where it lost most to
    the baseline."""
    label: str
    worst: List[Dict[str, Any]]
    losses: List[Dict[str, Any]]


@dataclass
class Section:
    title: str
    key: Optional[Any]       # the language pair, or None for the one section of the page
    groups: List[Group]      # ranked by score, best first; groups without a score last
    charts: List[Dict[str, Any]] = field(default_factory=list)
    paired: List[Dict[str, Any]] = field(default_factory=list)
    segments: List[Segments] = field(default_factory=list)  # per group, with --segments
    metric: Any = None       # the metric of its scores (title, bands, direction)
    anchor: str = ""         # its element id, which the overview and the contents link to
    noun: Tuple[str, str] = ("group", "groups")

    @property
    def metric_title(self) -> str:
        return self.metric.title

    @property
    def column(self) -> str:
        """Its heading in the overview and the contents."""
        return "all" if self.key is None else value_text(self.key)

    @property
    def top(self) -> List[Group]:
        return self.groups[:TOP]

    @property
    def rest(self) -> List[Group]:
        return self.groups[TOP:]

    def count(self, number: int) -> str:
        return f"{number} {self.noun[0] if number == 1 else self.noun[1]}"

    def interpretation(self, score: Optional[float]) -> str:
        return interpretation(score, self.metric.bands) or MISSING

    def band_colour(self, score: float) -> str:
        return band_colour(score, self.metric.bands)

    @property
    def signatures(self) -> List[str]:
        return sorted({g.row["signature"] for g in self.groups if g.row.get("signature")})

    @property
    def has_clusters(self) -> bool:
        return any(g.cluster is not None for g in self.groups)

    @property
    def one_comparison(self) -> bool:
        """Whether its rows are one comparison group (they differ in the system alone): only
        then do bands across the table mean ties (clusters are numbered per comparison)."""
        return len({tuple((c, v) for c, v in g.values.items() if c != SYSTEM)
                    for g in self.groups}) <= 1

    @property
    def has_coverage(self) -> bool:
        # Coverage is measured only against a segment key; without one every row would say "—".
        return any(g.row.get("coverage") is not None for g in self.groups)

    @property
    def unscored(self) -> List[Group]:
        return [g for g in self.groups if g.score is None]


def _noun(label_cols: Sequence[str]) -> Tuple[str, str]:
    only = label_cols[0] if len(label_cols) == 1 else None
    return NOUNS.get(only, ("group", "groups"))


def shown_metric(row: dict, name: Optional[str]):
    """What a section of a metric reads its title, bands and direction from: the row's measured
    metric (a segment score's are its column's), else the kind its name says, else BLEU."""
    measured = getattr(row, "measured", None)
    if measured is not None:
        return measured
    return declaration(name) if name else REGISTRY[DEFAULT_METRIC]


def _ranked(groups: List[Group], higher_is_better: bool = True) -> List[Group]:
    """Best first (the highest score, or the lowest for a metric where lower is better)."""
    sign = -1.0 if higher_is_better else 1.0
    return sorted(groups, key=lambda g: (g.score is None, sign * (g.score or 0.0), g.label))


def sections_of(scores: Sequence[dict], group_cols: Sequence[str]) -> List[Section]:
    """A section per language pair (or one for the page) and metric, each metric's sections
    after the one before in the registry's order within a language pair."""
    by_langpair = LANGPAIR in group_cols
    label_cols = label_columns(group_cols, by_langpair)
    buckets: Dict[Any, List[Group]] = {}
    for row in scores:
        values = {c: row.get(c) for c in group_cols}
        key = (values[LANGPAIR] if by_langpair else None, metric_name(row))
        buckets.setdefault(key, []).append(Group(values, group_label(values, label_cols), row))
    several = len({metric for _, metric in buckets}) > 1
    keys = sorted(buckets, key=lambda k: (k[0] is None, str(k[0]), order_of(k[1])))
    sections = []
    for number, (langpair, name) in enumerate(keys):
        metric = shown_metric(buckets[langpair, name][0].row, name)
        title = value_text(langpair) if by_langpair else f"All {_noun(label_cols)[1]}"
        sections.append(Section(f"{title} · {metric.title}" if several else title, langpair,
                                _ranked(buckets[langpair, name], metric.higher_is_better),
                                metric=metric, anchor=f"section-{number}", noun=_noun(label_cols)))
    return sections
