"""What the report shows of the segments: per group and metric, the segments scored worst, and
against a baseline the segments lost most and a sample of (baseline, system) score pairs.

Computed by Spark over the segments table the tasks wrote (read back through pyarrow, whatever
file system connectors the cluster has); only a bounded number of rows a group reaches the driver (`WORST`, `LOSSES`, `POINTS`), whatever the input's size.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from .. import metrics
from ..segments import POSITION, SENTENCE_SCORE, SEGMENT_HASH
from . import names
from .files import read_files

WORST, LOSSES, POINTS = 10, 10, 300
BASELINE_SCORE, LOSS = "baseline_score", "loss"
CANDIDATE = "candidate"  # carried, the baseline's translation is shown beside the system's
_RANK = "_rank"
OCCURRENCE = "_occurrence"  # the how-manieth row of its segment hash in its group, from 1


def read(spark: SparkSession, where, files: Sequence[str], partition_types: dict) -> Optional[DataFrame]:
    """This run's segments (the files its tasks wrote, `where` a `store.TableFiles`), read by the
    tasks through pyarrow, their partition columns from the folder names; None when none."""
    return read_files(spark, where, list(files), partition_types)


def _badness(column: str) -> Column:
    """A score turned so that higher is worse, whatever the metric's direction."""
    lower_better = [name for name, m in metrics.REGISTRY.items() if not m.higher_is_better]
    return F.when(F.col("metric").isin(lower_better), F.col(column)).otherwise(-F.col(column))


def _top(frame: DataFrame, by: Sequence[str], order: Column, n: int) -> DataFrame:
    window = Window.partitionBy(*names.columns(by)).orderBy(order, F.col(SEGMENT_HASH))
    return frame.withColumn(_RANK, F.row_number().over(window)).where(F.col(_RANK) <= n).drop(_RANK)


def highlights(frame: DataFrame, group_cols: Sequence[str], key_cols: Sequence[str],
               text_cols: Sequence[str], baseline: Optional[str]) -> Dict[str, List[dict]]:
    """`columns`: what names and shows a segment (key, carried columns); `baseline`; `worst`: each group's
    and metric's lowest-scored segments (highest for TER); with a
    baseline, `losses`: the segments where a system lost most against the baseline on the same
    segment, and `points`: up to POINTS (baseline, system) sentence-score pairs per group.
    Segments are the same by their key, or without one (`key_cols` a row's position) by their
    hash, which is of their references."""
    by = [*group_cols, "metric"]
    pair_on = list(key_cols)
    if tuple(key_cols) == POSITION:
        # No key: a segment is known by its references' hash, which a reference that repeats
        # (the same sentence on several days) shares. The k-th row of a hash in a system's rows,
        # in input order, pairs with the k-th of the baseline's: one to one, never one to many.
        frame = frame.withColumn(OCCURRENCE, F.row_number().over(
            Window.partitionBy(*names.columns(by), SEGMENT_HASH).orderBy(*POSITION)))
        pair_on = [SEGMENT_HASH, OCCURRENCE]
    columns = list(dict.fromkeys([*(c for c in key_cols if c not in by), *text_cols]))
    shown = list(dict.fromkeys([*by, *columns, SENTENCE_SCORE, SEGMENT_HASH]))
    rows = frame.select(*names.columns([*shown, *(c for c in pair_on if c not in shown)]))
    found = {"columns": columns, "baseline": baseline,
             "worst": _collected(_top(rows, by, _badness(SENTENCE_SCORE).desc(), WORST), shown)}
    if baseline is None or "system" not in group_cols:
        return found
    same = [c for c in (*group_cols, *pair_on, "metric") if c != "system"]
    theirs = [names.column(c).alias(f"baseline_{c}") for c in text_cols if c == CANDIDATE]
    base = frame.where(F.col("system") == baseline).select(
        *names.columns(dict.fromkeys(same)), F.col(SENTENCE_SCORE).alias(BASELINE_SCORE), *theirs)
    paired = rows.where(F.col("system") != baseline).join(base, on=list(dict.fromkeys(same)))
    paired = paired.withColumn(LOSS, _badness(SENTENCE_SCORE) + _badness(BASELINE_SCORE) * -1)
    found["losses"] = _collected(_top(paired.where(F.col(LOSS) > 0), by, F.col(LOSS).desc(), LOSSES),
                                 [*shown, *(f"baseline_{c}" for c in text_cols if c == CANDIDATE),
                                  BASELINE_SCORE, LOSS])
    points = paired.select(*names.columns(by), SENTENCE_SCORE, BASELINE_SCORE, SEGMENT_HASH)
    found["points"] = _collected(_top(points, by, F.lit(0), POINTS), [*by, SENTENCE_SCORE, BASELINE_SCORE])
    return found


def _collected(frame: DataFrame, shown: Sequence[str]) -> List[dict]:
    return [dict(zip(shown, r)) for r in frame.select(*names.columns(shown)).collect()]
