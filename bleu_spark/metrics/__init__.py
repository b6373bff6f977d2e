"""One module (or package) per metric, and the registry."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type

from ..errors import UsageError
from .base import Choices, Metric, StatColumn
from .bleu import Bleu
from .checks import CHECKS, parse_checks
from .chrf import Chrf, ChrfPlusPlus
from .means import SegmentScore, parse_segment_scores
from .ter import Ter

# The registry of reference metrics: name (as `--metrics` and the statistics table's `metric`
# column spell it) -> metric.
REGISTRY: Dict[str, Type[Metric]] = {m.name: m for m in (Bleu, Chrf, ChrfPlusPlus, Ter)}
DEFAULT = ("bleu",)

__all__ = ["Choices", "Metric", "StatColumn", "REGISTRY", "CHECKS", "DEFAULT", "get",
           "parse_names", "parse_checks", "parse_segment_scores", "configured", "declaration", "kinds",
           "of_row", "is_stat_column", "column_comment", "stat_column", "stat_order", "checked_choices"]


def get(name: str) -> Type[Metric]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UsageError(f"unknown metric {name!r}; choose from: {', '.join(REGISTRY)}") from None


def parse_names(value) -> tuple:
    """`bleu,chrf` (or a list) -> registered names, in order, each once."""
    if value is None:
        return DEFAULT
    parts = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(dict.fromkeys(str(p).strip().lower() for p in parts if str(p).strip()))
    if not names:
        raise UsageError(f"--metrics needs at least one of: {', '.join(REGISTRY)}")
    for name in names:
        get(name)
    return names


def configured(names: Sequence[str], settings: Mapping[str, Any], choices: Any) -> tuple:
    """The metrics a run measures, with the run's options."""
    return tuple(get(name).from_settings(settings, choices) for name in names)


def kinds() -> Tuple[Type[Metric], ...]:
    """Every kind of metric a statistics table may hold: the reference metrics (the registry as
    it is now), the checks (`--checks`, by name) and segment scores (`--segment-scores`, named
    by their columns)."""
    return (*REGISTRY.values(), *CHECKS.values(), SegmentScore)


def extra_metrics(segment_scores, checks, settings: Mapping[str, Any]) -> tuple:
    """The metrics measured from the rows' own columns: a segment score per `(column, better)`
    of `--segment-scores`, a check per name of `--checks`; a name taken twice is one line."""
    made = (*(SegmentScore(column, better) for column, better in segment_scores),
            *(CHECKS[name].from_settings(settings) for name in checks))
    for metric in made[:len(segment_scores)]:
        if metric.name in REGISTRY or metric.name in CHECKS:
            raise UsageError(f"--segment-scores column {metric.name} has the name of a metric; "
                             f"rename it in the input")
    return made


def declaration(name: str) -> Type[Metric]:
    """The kind of metric a statistics row's `metric` names: a reference metric, a check, else
    a segment score (named by its column)."""
    return REGISTRY.get(name) or CHECKS.get(name) or SegmentScore


def readable(name, options_texts: Sequence[Optional[str]]) -> bool:
    """Whether statistics rows of this metric name, with these options texts, are of a kind this
    installation scores (a segment score by its recorded kind)."""
    if name in REGISTRY or name in CHECKS:
        return True
    return name is not None and all(SegmentScore.recorded(t) for t in options_texts)


def of_row(row: Mapping[str, Any], choices: Any) -> Metric:
    """The metric of one statistics row, with the run's scoring choices."""
    return declaration(row["metric"]).from_measurement(row, choices)


def is_stat_column(name: str) -> bool:
    return any(m.owns_column(name) for m in kinds())


def column_comment(name: str) -> str:
    """What a statistic column holds, said by the metric owning it."""
    return next(m.column_comment(name) for m in kinds() if m.owns_column(name))


def stat_column(name: str) -> StatColumn:
    """A statistic column's declaration (type, how rows combine it), from the metric owning it."""
    return next(m.stat_column(name) for m in kinds() if m.owns_column(name))


def reserved_column(name: str) -> bool:
    """Whether a group column would take the name of a statistic column of some metric."""
    return any(name.startswith(m.column_prefixes) or m.owns_column(name) for m in kinds())


def result_types() -> dict:
    """Every metric's result fields and their Arrow types, in registry order."""
    types: dict = {}
    for metric in kinds():
        types.update(metric.result_types)
    return types


def order_of(name: str) -> int:
    """A metric's place among the kinds (the order rows of one group are shown in): the
    reference metrics, the checks, then segment scores."""
    named = [*REGISTRY, *CHECKS]
    return named.index(name) if name in named else len(named)


def stat_order(names: Sequence[str]) -> List[str]:
    """Statistic columns in the kinds' order, each metric's in its own."""
    owners = list(kinds())

    def key(name):
        index = next(i for i, m in enumerate(owners) if m.owns_column(name))
        return (index, owners[index].column_order(name))

    return sorted((n for n in names if is_stat_column(n)), key=key)


def checked_choices(choices: Mapping[str, Any], measurements: Optional[Sequence[Mapping]] = None) -> dict:
    """The run's scoring choices, checked by every metric against the measurement rows of the
    statistics they will score (None: before any is read), with what they imply added."""
    for metric in REGISTRY.values():
        choices = metric.checked_choices(choices, measurements)
    return dict(choices)
