"""Grouping sets: the columns a score row is grouped by, and a set's name in the tables."""
from __future__ import annotations

from typing import List, Sequence, Tuple

from ..errors import UsageError

GroupingSet = Tuple[str, ...]


def label(grouping_set: GroupingSet, implicit: Sequence[str] = ()) -> str:
    """A grouping set's name, the same whatever order its columns were given in: its columns
    sorted, without the `implicit` ones (the output's partition columns, which every set of a
    partitioned run holds: a dashboard query names the grouping it asked for)."""
    return ",".join(sorted(c for c in grouping_set if c not in implicit))


def distinct_sets(sets) -> List[GroupingSet]:
    """Grouping sets without repeats, a set given twice in two orders counted once."""
    sets = [tuple(dict.fromkeys(s)) for s in sets]
    return list({frozenset(s): s for s in reversed(sets)}.values())[::-1]


def check_clusters(sets: Sequence[GroupingSet], system_col: str = "system") -> None:
    """Clusters rank systems: some grouping set must hold the system column."""
    if not any(system_col in s for s in sets):
        raise UsageError(f"--clusters ranks systems: {system_col} must be a group column")
