"""The groups of a grouping set: statistics summed per group and measurement, each group of one
measurement, and the metric each statistics row is scored with."""
from __future__ import annotations

from typing import List, Tuple

import pyarrow as pa

from .. import metrics, statstable
from ..errors import IncompatibleStatisticsError, MixedTokenizerGroupError
from ..metrics.base import differing_options
from .sets import GroupingSet


def metric_of(row: dict, config) -> metrics.Metric:
    """The metric of a statistics row, with its measurement and the run's scoring choices."""
    return metrics.of_row(row, config)


def summed(stats: pa.Table, keys) -> Tuple[pa.Table, pa.Table]:
    """The sums per key, and the same without the replicate and trial sums: the rows read as
    Python values (the packed sums are read per group as matrices, never as Python lists)."""
    sums = statstable.summed(stats, keys)
    return sums, sums.drop_columns(list(statstable.SAMPLES))


def check_one_measurement(sums: List[dict], grouping_set: GroupingSet) -> None:
    """Statistics measured differently (another tokenizer, case, max order, version) never add
    up: `sums` has a row per group and measurement, so a group with two rows is refused."""
    seen = {}
    for row in sums:
        key = (*(row[c] for c in grouping_set), row["metric"])
        if key not in seen:
            seen[key] = row
            continue
        differing = {m: f"{seen[key][m]} vs {row[m]}" for m in statstable.MEASUREMENT
                     if seen[key][m] != row[m] and m != statstable.METRIC_OPTIONS}
        differing.update(differing_options(seen[key][statstable.METRIC_OPTIONS],
                                           row[statstable.METRIC_OPTIONS]))
        where = ", ".join(f"{c}={v}" for c, v in zip(grouping_set, key)) or "the whole table"
        where += "" if row["metric"] == statstable.METRIC else f" ({row['metric']})"
        what = "; ".join(f"{m}: {v}" for m, v in differing.items())
        if set(differing) <= {"tokenize", "tokenizer_signature"}:
            raise MixedTokenizerGroupError(
                f"group {where} would mix statistics of different tokenizers ({what}); group "
                f"by the language pair too, or score with one --tokenize")
        raise IncompatibleStatisticsError(
            f"group {where} would sum statistics measured with different settings ({what}); "
            f"aggregate them separately")
