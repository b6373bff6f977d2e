"""The one coverage rule of everything that compares systems (paired tests, rank ranges and
clusters): the systems of a comparison group are compared on the same segments, or not at all.

A system scored on half of the segments would otherwise be ranked or tested on another test
set than the rest, and both resampling methods would give numbers that mean nothing: the
poisson replicate sums of different segment sets are not draws of one test set, and sacrebleu's
draws pick segments by position. Same segments: the same count and the same fingerprint (the
sum of the segments' hashes, `statstable.COUNTS`). Groups without scored segments are listed
with no score and compared with nothing, so they take no part.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from ..errors import UsageError
from ..shown import shown


def _coverage(row: Mapping[str, Any]) -> tuple:
    return row["n_segments"], row.get("segment_fingerprint")


def check_same_segments(systems: Mapping[Any, Mapping[str, Any]], where: str, purpose: str,
                        reference: Optional[Any] = None) -> None:
    """`systems`: system -> its group's summed statistics row, in one comparison group named
    by `where`. Each system with scored segments covers the segments of `reference` (the
    baseline; by default the system with the most segments, ties by name), else one line
    (exit 2) naming both and their counts. `purpose`: what asked (`paired tests`, `--clusters`)."""
    scored = {name: row for name, row in systems.items() if row["n_segments"]}
    if not scored:
        return
    if reference is None or reference not in scored:
        reference = min(scored, key=lambda s: (-scored[s]["n_segments"], shown(s)))
    wanted = _coverage(scored[reference])
    for name in sorted(scored, key=shown):
        row = scored[name]
        if _coverage(row) != wanted:
            raise UsageError(
                f"{purpose} compare systems on the same segments, but in {where} "
                f"{shown(name)} covers other segments than {shown(reference)} "
                f"({row['n_segments']} vs {wanted[0]} segments); select the segments they share "
                f"(in the input, or with aggregate --where)")
