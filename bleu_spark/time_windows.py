"""Time windows (`--time-col COL --window SPEC`): each row's time floored to its window, a group
column of its own (`window_start`), derived from an Arrow batch where its rows are measured.

Windows are aligned to the Unix epoch, as Spark's `window()` aligns them: a window of length L
starts at every multiple of L since 1970-01-01 00:00 UTC. A time with a time zone is taken as
its instant (Parquet stores it as UTC); a naive time (Spark's `timestamp_ntz`, a pandas column
without a zone) is taken as UTC. A date is its midnight.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import UsageError
from .rows import NULL_TIME

WINDOW_START = "window_start"
WINDOW_TYPE = pa.timestamp("us", tz="UTC")

_UNIT_SECONDS = {"m": 60, "min": 60, "h": 3600, "d": 86400}
_SPEC = re.compile(r"([0-9]+)(m|min|h|d)")
LARGEST_COUNT = 1_000_000             # of a unit: 1,000,000 days stays far inside int64 microseconds
_PER_SECOND = {"s": 1, "ms": 10 ** 3, "us": 10 ** 6, "ns": 10 ** 9}
_DAY = 86400


def window_seconds(spec: str) -> int:
    """The length a window spec names, in seconds: a positive whole number and a unit, minutes
    (`15m`, `15min`), hours (`1h`) or days (`1d`); anything else is one line, exit 2."""
    found = _SPEC.fullmatch(spec) if isinstance(spec, str) else None
    count = int(found.group(1)) if found else 0
    if not found or not 0 < count <= LARGEST_COUNT:
        raise UsageError(f"--window {spec!r} is not a window: a whole number from 1 to "
                         f"{LARGEST_COUNT:,} and a unit, m or min (minutes), h (hours) or d "
                         f"(days), e.g. 15m, 1h, 1d")
    return count * _UNIT_SECONDS[found.group(2)]


@dataclass(frozen=True)
class TimeWindow:
    """The windows of a run: the time column and the window's length."""
    column: str
    seconds: int

    @classmethod
    def of(cls, column: Optional[str], spec: Optional[str]) -> Optional["TimeWindow"]:
        """The run's windows from --time-col and --window (both, or neither: exit 2)."""
        if column is None and spec is None:
            return None
        if column is None or spec is None:
            given, missing = ("--window", "--time-col COL") if column is None else ("--time-col", "--window SPEC")
            raise UsageError(f"{given} needs {missing}: a window is a length over a time column")
        if not column:
            raise UsageError("--time-col needs a column name")
        return cls(column, window_seconds(spec))

    def starts(self, times: Union[pa.Array, pa.ChunkedArray]) -> pa.Array:
        """Each time's window start, as timestamp[us, tz=UTC]; null where the time is null."""
        if isinstance(times, pa.ChunkedArray):
            times = times.combine_chunks()
        if pa.types.is_date(times.type):  # a date is its midnight: whole seconds
            per_second, values = 1, _integers(times.cast(pa.date32()), pa.int32()) * _DAY
        else:
            unit = times.type.unit
            per_second = _PER_SECOND[unit]
            # A zone changes no stored value (the instant is UTC): the integers are the epoch's.
            values = _integers(times, pa.int64())
        length = self.seconds * per_second
        floored = values - np.mod(values, length)       # numpy's mod floors: times before 1970 too
        micros = floored // per_second * 10 ** 6        # exact: a start is a whole minute
        return pa.array(micros, WINDOW_TYPE, mask=times.is_null().to_numpy(zero_copy_only=False))

    def added(self, batch: Union[pa.RecordBatch, pa.Table]):
        """The batch with its `window_start` column appended (from its time column)."""
        return batch.append_column(pa.field(WINDOW_START, WINDOW_TYPE), self.starts(batch.column(self.column)))

    def rejections(self, times: pa.Array) -> pa.Array:
        """Per row, `null_time` where its time is null, else null."""
        return pc.if_else(pc.is_null(times), pa.scalar(NULL_TIME), pa.scalar(None, pa.string()))


def _integers(array: pa.Array, as_type: pa.DataType) -> np.ndarray:
    """The stored integers of a temporal array (nulls as 0, masked by the caller), as int64."""
    return pc.fill_null(array.cast(as_type), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def check_window_grouping(group_by, grouping_sets, partition_by) -> None:
    """With windows, groups the user names must name `window_start` (the default groups get it
    appended); a timestamp is no partition folder key."""
    if WINDOW_START in (partition_by or ()):
        raise UsageError(f"--partition-by {WINDOW_START}: a timestamp is not a partition folder "
                         f"key (its text holds ':' and a zone readers type back otherwise); "
                         f"partition by a date or string column of the input, and slice windows "
                         f"with aggregate --where \"{WINDOW_START} >= '2026-01-07 00:00:00'\"")
    named = [tuple(group_by)] if group_by is not None else [tuple(s) for s in grouping_sets or ()]
    if named and not any(WINDOW_START in columns for columns in named):
        flag = "--group-by" if group_by is not None else "--grouping-sets"
        raise UsageError(f"--window makes the group column {WINDOW_START}, which {flag} does not "
                         f"name: add {WINDOW_START} where windows are to be scored apart")
