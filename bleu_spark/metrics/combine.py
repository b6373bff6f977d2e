"""A statistic column's declaration (`StatColumn`), and how statistics combine, built from each
column's declared type and combine: the one place the numpy and pyarrow reductions come from
(Spark's: `spark/reduce.py`), so that a statistic combined by min or max, or a float, gives a
group the same value on any partitioning and in every engine. Nothing here names a metric.

A float statistic summed is exact on any partitioning only when its partial sums are (values
with few significant bits); the product's metrics keep integers for that reason (TER's
`ter_ref_len_scaled`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ..errors import UsageError

SUM, MIN, MAX = "sum", "min", "max"
NUMPY_TYPES = {pa.int64(): np.int64, pa.float64(): np.float64}
_REDUCE = {SUM: np.sum, MIN: np.min, MAX: np.max}


@dataclass(frozen=True)
class StatColumn:
    """A statistic column: its name in the statistics table, Arrow type (int64 or float64) and
    how rows combine it (sum, min or max)."""
    name: str
    type: pa.DataType = pa.int64()
    combine: str = SUM

    def __post_init__(self):
        if self.type not in NUMPY_TYPES or self.combine not in _REDUCE:
            raise TypeError(f"statistic column {self.name}: type {self.type} and combine "
                            f"{self.combine!r} (int64 or double; sum, min or max)")


def matrix_type(columns: Sequence[StatColumn]):
    """The numpy type of a (segments, width) matrix of these statistics: float64 when one of them
    is a float (a segment's integer statistics are far below 2**53, so held exactly), else int64."""
    return np.float64 if any(c.type == pa.float64() for c in columns) else np.int64


def combined(columns: Sequence[StatColumn], stats: np.ndarray) -> List:
    """One group's statistics from its segments' (n, width), each column as it declares; 0 for
    no segments."""
    return [NUMPY_TYPES[c.type](_REDUCE[c.combine](stats[:, i]) if len(stats) else 0).item()
            for i, c in enumerate(columns)]


def arrow_aggregations(columns: Sequence[StatColumn]) -> List[Tuple[str, str]]:
    """pyarrow's `TableGroupBy.aggregate` of these columns (its functions are named as ours)."""
    return [(c.name, c.combine) for c in columns]


def arrow_columns(columns: Sequence[StatColumn], values: dict, n: int) -> List[pa.Array]:
    """Arrow arrays of `columns` in order, each of its declared type: `values[name]` (numpy), or
    nulls where a name has none (another metric's column)."""
    return [pa.array(values[c.name]).cast(c.type) if c.name in values else pa.nulls(n, c.type)
            for c in columns]


def check_resampled(columns: Sequence[StatColumn], metric: str) -> None:
    """Replicate and trial sums (`resampling/`) are packed integer lists added element-wise
    across partitions: statistics that are not integer sums cannot be resampled so."""
    odd = [c for c in columns if c.combine != SUM or c.type != pa.int64()]
    if odd:
        raise UsageError(f"{metric} cannot be resampled by the Poisson bootstrap: its statistic "
                         f"{odd[0].name} is {odd[0].type} combined by {odd[0].combine}, and "
                         f"replicate sums add integers")
