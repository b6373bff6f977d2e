"""Rank ranges and significance clusters of the systems of one comparison group.

Every system of a comparison group is scored on the same bootstrap draws (sacrebleu's index
matrix, or the hashed Poisson weights of each segment), so replicate b ranks all systems on one
resample of the test set. From those ranks:

- `rank`: 1 + the number of systems with a strictly better score;
- `rank_low`, `rank_high`: the sorted replicate ranks at B // 40 and B - B // 40 - 1
  (sacrebleu's positions for its interval bounds);
- `cluster`: systems ordered best first (ties by name); a new cluster starts before position i
  when every system from i on has a `rank_low` above the `rank_high` of every system before it.

Pure numpy: ranking 2,000 systems over 1,000 replicates is a few sorts of a (B, k) matrix.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np

from .percentiles import percentile_positions

FIELDS = ("rank", "rank_low", "rank_high", "cluster")


def ranks(scores: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """(B, k) scores -> (B, k) ranks: in each row, 1 + the number of systems strictly better.
    Tied systems share the best rank of their tie (competition ranking, "1224")."""
    scores = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    key = -scores if higher_is_better else scores  # ascending key: smaller is better
    order = np.argsort(key, axis=1, kind="stable")
    ordered = np.take_along_axis(key, order, axis=1)
    positions = np.broadcast_to(np.arange(key.shape[1]), key.shape)
    # A tie's rank is the position its first member has in the sorted row.
    starts = np.ones(key.shape, bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.maximum.accumulate(np.where(starts, positions, 0), axis=1)
    result = np.empty(key.shape, np.int64)
    np.put_along_axis(result, order, first + 1, axis=1)
    return result


def rank_range(replicate_ranks: np.ndarray):
    """Per system (column), the sorted replicate ranks at sacrebleu's percentile positions."""
    low, high = percentile_positions(len(replicate_ranks))
    ordered = np.sort(replicate_ranks, axis=0)
    return ordered[low], ordered[high]


def cluster_numbers(order: np.ndarray, rank_low: np.ndarray, rank_high: np.ndarray) -> np.ndarray:
    """Cluster of each system, given the systems' order best first: a boundary before position
    i when the smallest rank_low from i on exceeds the largest rank_high before i."""
    low, high = rank_low[order], rank_high[order]
    after = np.minimum.accumulate(low[::-1])[::-1]   # min rank_low over positions i..k-1
    before = np.maximum.accumulate(high)             # max rank_high over positions 0..i
    boundary = np.zeros(len(order), np.int64)
    boundary[1:] = after[1:] > before[:-1]
    result = np.empty(len(order), np.int64)
    result[order] = 1 + np.cumsum(boundary)
    return result


def rank_systems(scores: Sequence[float], replicate_scores: np.ndarray, names: Sequence[str],
                 higher_is_better: bool) -> Dict[str, np.ndarray]:
    """The four fields of k systems: `scores` (k,), `replicate_scores` (B, k) on shared draws."""
    scores = np.asarray(scores, dtype=np.float64)
    rank = ranks(scores[None, :], higher_is_better)[0]
    low, high = rank_range(ranks(replicate_scores, higher_is_better))
    # Best first, ties by name: by rank, then name (rank orders exactly as the score does).
    order = np.array(sorted(range(len(names)), key=lambda i: (rank[i], str(names[i]))), np.int64)
    return {"rank": rank, "rank_low": low, "rank_high": high,
            "cluster": cluster_numbers(order, low, high)}


def add_clusters(rows: List[dict], replicates: List, key_of, name_of, higher_is_better_of) -> None:
    """Set the four fields on every row that has replicate scores (None elsewhere), ranking the
    rows that share `key_of(row)` (the comparison group) together. `replicates[i]` is row i's
    (B,) replicate scores, drawn like every other row of its comparison."""
    for row in rows:
        row.update(dict.fromkeys(FIELDS))
    groups: Dict[tuple, List[int]] = {}
    for index, (row, scores) in enumerate(zip(rows, replicates)):
        if scores is not None:
            groups.setdefault(key_of(row), []).append(index)
    for members in groups.values():
        lengths = {len(replicates[i]) for i in members}
        if len(lengths) != 1:  # cannot happen: one run draws one B
            raise ValueError(f"replicate counts differ within a comparison group: {sorted(lengths)}")
        matrix = np.column_stack([replicates[i] for i in members])
        fields = rank_systems([rows[i]["score"] for i in members], matrix,
                              [name_of(rows[i]) for i in members],
                              higher_is_better_of(rows[members[0]]))
        for column, index in enumerate(members):
            rows[index].update({f: int(fields[f][column]) for f in FIELDS})
