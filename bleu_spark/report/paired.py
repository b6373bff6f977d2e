"""A section's paired tests against the baseline, and the baseline marked among its groups."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from .sections import Section
from .shared import LANGPAIR, SYSTEM, metric_name

SIGNIFICANCE = 0.05  # paired tests: p below this gets a star


def _paired_rows(paired: Sequence[dict]) -> List[Dict[str, Any]]:
    rows = []
    for row in paired:
        low, high = row.get("delta_ci_low"), row.get("delta_ci_high")
        p_value = row.get("p_value")
        rows.append(dict(row, significant=p_value is not None and p_value < SIGNIFICANCE,
                         interval=None if low is None or high is None else (low, high)))
    return sorted(rows, key=lambda r: (-(r.get("delta") or 0.0), str(r.get("system"))))


def attach_paired(sections: List[Section], group_cols: Sequence[str], paired: Optional[Sequence[dict]]) -> None:
    """Each section's paired tests, and its baseline marked among its groups."""
    by_langpair = LANGPAIR in group_cols
    for section in sections:
        mine = [r for r in paired or [] if (not by_langpair or r.get(LANGPAIR) == section.key)
                and metric_name(r) == section.metric.name]
        section.paired = _paired_rows(mine)
        baselines = {r.get("baseline") for r in mine} - {None}
        for group in section.groups:
            system = group.values.get(SYSTEM)
            group.baseline = system is not None and str(system) in baselines  # "3" names 3


def paired_columns(paired: Optional[Sequence[dict]]) -> List[str]:
    """The comparison's group columns: the keys of a paired row that are not test results."""
    known = {"metric", "system", "baseline", "test", "delta", "p_value", "delta_ci_low",
             "delta_ci_high"}
    columns: List[str] = []
    for row in paired or []:
        columns += [k for k in row if k not in known and k not in columns]
    return columns
