"""One module (or package) per metric, and the registry."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Type

from ..errors import IncompatibleStatisticsError, UsageError
from .base import Choices, Metric, StatColumn
from .bleu import Bleu
from .chrf import Chrf, ChrfPlusPlus
from .ter import Ter

# The registry: name (as `--metrics` and the statistics table's `metric` column spell it) -> metric.
REGISTRY: Dict[str, Type[Metric]] = {m.name: m for m in (Bleu, Chrf, ChrfPlusPlus, Ter)}
DEFAULT = ("bleu",)

__all__ = ["Choices", "Metric", "StatColumn", "REGISTRY", "DEFAULT", "get", "parse_names", "configured",
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


def of_row(row: Mapping[str, Any], choices: Any) -> Metric:
    """The metric of one statistics row, with the run's scoring choices."""
    name = row["metric"]
    if name not in REGISTRY:
        raise IncompatibleStatisticsError(f"statistics of metric {name} (this installation reads "
                                          f"{', '.join(REGISTRY)})")
    return REGISTRY[name].from_measurement(row, choices)


def is_stat_column(name: str) -> bool:
    return any(m.owns_column(name) for m in REGISTRY.values())


def column_comment(name: str) -> str:
    """What a statistic column holds, said by the metric owning it."""
    return next(m.column_comment(name) for m in REGISTRY.values() if m.owns_column(name))


def stat_column(name: str) -> StatColumn:
    """A statistic column's declaration (type, how rows combine it), from the metric owning it."""
    return next(m.stat_column(name) for m in REGISTRY.values() if m.owns_column(name))


def reserved_column(name: str) -> bool:
    """Whether a group column would take the name of a statistic column of some metric."""
    return any(name.startswith(m.column_prefixes) or m.owns_column(name) for m in REGISTRY.values())


def result_types() -> dict:
    """Every metric's result fields and their Arrow types, in registry order."""
    types: dict = {}
    for metric in REGISTRY.values():
        types.update(metric.result_types)
    return types


def order_of(name: str) -> int:
    """A metric's place in the registry (the order rows of one group are shown in)."""
    return list(REGISTRY).index(name) if name in REGISTRY else len(REGISTRY)


def stat_order(names: Sequence[str]) -> List[str]:
    """Statistic columns in the registry's order, each metric's in its own."""
    owners = list(REGISTRY.values())

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
