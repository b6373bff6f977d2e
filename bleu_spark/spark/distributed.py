"""Groups scored where their statistics are summed: a result of many groups (a group a document,
an hour, a customer) never comes to the driver.

The partial sums stay a DataFrame; the rows of a group meet in one task, which adds them up into
the statistics table's row (`statistics_table`); each comparison group (a grouping set's rows
that differ in the system alone) meets in one task, which scores it with the very function the
driver uses (`scoring.score_sets`, `scoring.paired_rows`: intervals, clusters and paired tests
need nothing outside their comparison group), and the sink writes the frames from the executors.
The driver holds plans, counts, the first rows a person reads and the commit: its memory does
not grow with the number of groups, an executor's grows with its largest comparison group.
"""
from __future__ import annotations

import datetime
from collections import Counter
from typing import Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from .. import errors, metrics, scoring
from ..resampling import Resampling
from ..time_windows import WINDOW_START
from ..scoring.tables import (DASHBOARD_SHARED, GROUPING, INTERVAL_FIELDS, PAIRED_TYPES,
                              SCORE_TYPES, json_rows)
from ..resampling import clusters
from .names import column, columns, map_in_arrow
from .stats import (METRIC, N_SEGMENTS, REASON, TOKENIZE, PartitionPlan, merged_sums, output_schema,
                    partial_sums, statistics_table)

SYSTEM = "system"
# Columns of the frames between tasks and driver, never written; named so no input column can
# be one of them.
ERROR = "__bleu_spark_error"      # a scoring task's user error (`errors.BleuSparkError`)
WARNING = "__bleu_spark_warning"  # a paired test's warning (no baseline in a comparison group)
SET = "__bleu_spark_set"          # the grouping set a score row belongs to, by its place
ORDER = "__bleu_spark_metric"     # the metric's place, for rows shown in the driver's order
SACREBLEU = {"name": "__bleu_spark_name", "verbose_score": "__bleu_spark_verbose"}


def partials_frame(spark: SparkSession, scan, read: Optional[DataFrame], plan: PartitionPlan,
                   *accumulators) -> DataFrame:
    """Every task's partial sums, a row per (group, tokenizer, metric, reason) and task, left
    where they are: read by the Python workers' own reader (`scan`, an ArrowScan) or from
    Spark's scan (`read`: the columns the partition function reads)."""
    if scan is not None:
        return scan.partials_frame(spark, plan, *accumulators)
    return map_in_arrow(read, partial_sums(plan, *accumulators), output_schema(plan, read.schema))


def stats_frame(partials: DataFrame, plan: PartitionPlan, resampling: str,
                partitions: int) -> DataFrame:
    """The statistics table as a DataFrame of `partitions` partitions: the partial rows of a
    group (every task's, every reason's) brought to one task, added up and made the table's
    row (`statistics_table`)."""
    empty = to_arrow_schema(partials.schema, timezone="UTC").empty_table()
    schema = from_arrow_schema(statistics_table(empty, plan, resampling).schema)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if tables:
            yield from statistics_table(merged_sums(tables, plan), plan, resampling).to_batches()

    together = partials.repartition(partitions, *columns((*plan.group_cols, TOKENIZE, METRIC)))
    return map_in_arrow(together, run, schema)


def rejected_counts(partials: DataFrame, plan: PartitionPlan) -> Counter:
    """The rows rejected, by reason (each metric's rows count them: those of the first)."""
    first = partials.filter((F.col(METRIC) == plan.measured[0].name) & F.col(REASON).isNotNull())
    rows = first.groupBy(REASON).agg(F.sum(N_SEGMENTS).alias("n")).collect()
    return Counter({r[REASON]: r["n"] for r in rows})


def with_coverage(stats: DataFrame, reference_keys: DataFrame, group_cols: Sequence[str],
                  segment_key: Sequence[str]) -> Tuple[DataFrame, List[str]]:
    """`n_reference_segments` filled by a join with the reference set's segment counts (per
    value of the group columns in the segment key), and one warning for the groups short of
    theirs, with a few of them named."""
    shared = [c for c in group_cols if c in segment_key]
    counts = reference_keys.groupBy(*columns(shared)).agg(F.count(F.lit(1)).alias("_expected"))
    key = [stats[c].eqNullSafe(counts[c]) for c in shared] or F.lit(True)
    joined = stats.join(counts, on=key, how="left")
    order = [stats[c] if c != "n_reference_segments" else F.col("_expected").alias(c)
             for c in stats.columns]
    filled = joined.select(*order)
    short = filled.filter(F.col("n_reference_segments") > F.col(N_SEGMENTS))
    short = short.select(*columns(group_cols), N_SEGMENTS, "n_reference_segments").distinct()
    count = short.count()
    if not count:
        return filled, []
    named = "; ".join(", ".join(f"{c}={r[c]}" for c in group_cols)
                      + f": {r[N_SEGMENTS]} of {r['n_reference_segments']}" for r in short.limit(3).collect())
    return filled, [f"{count:,} groups scored fewer segments than their reference set holds "
                    f"(e.g. {named}); their coverage is in the scores table"]


# --- scoring ------------------------------------------------------------------------------


def score_fields(stats_schema: T.StructType, sets: Sequence[Tuple[str, ...]],
                 measured: Sequence[metrics.Metric], resampling: Optional[Resampling]) -> List[T.StructField]:
    """The columns of a score row as the executors write it: the group columns of every set,
    the grouping, the shared and measured metrics' result fields (intervals and cluster fields
    when asked for), each statistic column (the dashboard's), sacrebleu's JSON fields."""
    groups = [stats_schema[c] for c in dict.fromkeys(c for s in sets for c in s)]
    own = {f for m in measured for f in m.result_fields()}
    every = set(metrics.result_types())
    optional = set(INTERVAL_FIELDS) if resampling and resampling.confidence else set()
    if resampling and resampling.clusters and any(SYSTEM in s for s in sets):
        optional |= set(clusters.FIELDS)
    kept = {c: t for c, t in SCORE_TYPES.items()
            if (c not in every or c in own)
            and (c not in (*INTERVAL_FIELDS, *clusters.FIELDS) or c in optional)}
    # BLEU's sys_len and ref_len are result fields and statistics alike, one column each
    stat_names = [n for n in metrics.stat_order(list(dict.fromkeys(
        c.name for m in measured for c in m.columns()))) if n not in kept]
    arrow = [pa.field(GROUPING, pa.string()), *(pa.field(c, t) for c, t in kept.items()),
             *(pa.field(n, metrics.stat_column(n).type) for n in stat_names),
             *(pa.field(c, pa.string()) for c in SACREBLEU.values()),
             pa.field(SET, pa.int32()), pa.field(ORDER, pa.int32()), pa.field(ERROR, pa.string())]
    return [*groups, *from_arrow_schema(pa.schema(arrow)).fields]


def _rows_table(rows: List[dict], schema: pa.Schema, set_index: int) -> pa.Table:
    """Score rows as a table of `schema` (fields a row lacks are null)."""
    columns = {}
    for field in schema:
        if field.name == SET:
            values = [set_index] * len(rows)
        elif field.name == ORDER:
            values = [metrics.order_of(r["metric"]) for r in rows]
        elif field.name in SACREBLEU.values():
            key = next(k for k, v in SACREBLEU.items() if v == field.name)
            values = [getattr(r, "sacrebleu", {}).get(key) for r in rows]
        elif metrics.is_stat_column(field.name) and field.name not in SCORE_TYPES:
            values = [getattr(r, "statistics", {}).get(field.name) for r in rows]
        else:
            values = [r.get(field.name) for r in rows]
        columns[field.name] = pa.array(values, field.type)
    return pa.table(columns, schema=schema)


def _error_table(exc: errors.BleuSparkError, schema: pa.Schema) -> pa.Table:
    row = {f.name: None for f in schema}
    row[ERROR] = f"{type(exc).__name__}:{exc}"
    return pa.Table.from_pylist([row], schema=schema)


def scored_frame(stats: DataFrame, sets: Sequence[Tuple[str, ...]], config, resampling: Resampling,
                 implicit: Sequence[str], measured, partitions: int) -> DataFrame:
    """Score rows of every grouping set, each comparison group scored in one task by
    `scoring.score_sets`: the same rows, intervals and clusters as on the driver; `partitions`
    tasks a set."""
    fields = score_fields(stats.schema, sets, measured, resampling)
    frames = []
    for index, grouping_set in enumerate(sets):
        schema = T.StructType(fields)
        arrow = to_arrow_schema(schema, timezone="UTC")
        comparison = [c for c in grouping_set if c != SYSTEM]
        frames.append(per_comparison(stats, comparison, partitions, _set_scorer(
            grouping_set, config, resampling, tuple(implicit), arrow, index), schema))
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union


CHUNK_ROWS = 20_000  # statistics rows a task scores at once (whole comparison groups, at least one)


def per_comparison(stats: DataFrame, comparison: Sequence[str], partitions: int, function,
                   schema: T.StructType) -> DataFrame:
    """`function(table)` over whole comparison groups (rows equal in `comparison`): the rows
    hashed by those columns into `partitions` tasks and sorted by them within each, so a task
    calls it on about CHUNK_ROWS rows at a time, cut where one comparison group ends. A task
    holds a chunk and the largest comparison group, whatever the number of groups; one call a
    chunk keeps the per-call costs of scoring off each small group."""
    if comparison:
        spread = stats.repartition(partitions, *columns(comparison)).sortWithinPartitions(*columns(comparison))
    else:
        spread = stats.coalesce(1)  # one comparison group: the whole table

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending, held = [], 0
        for batch in batches:
            pending.append(batch)
            held += batch.num_rows
            if held < CHUNK_ROWS:
                continue
            table = pa.Table.from_batches(pending)
            cut = _last_group_start(table, comparison)
            if cut:
                yield from function(table.slice(0, cut)).to_batches()
                pending, held = table.slice(cut).to_batches(), table.num_rows - cut
        if held:
            yield from function(pa.Table.from_batches(pending)).to_batches()

    return map_in_arrow(spread, run, schema)


def _last_group_start(table: pa.Table, comparison: Sequence[str]) -> int:
    """Where the last comparison group of rows sorted by `comparison` starts (0: one group)."""
    last = table.num_rows - 1
    same = pa.array([True] * table.num_rows)
    for name in comparison:
        values, value = table[name], table[name][last]
        equal = pc.is_null(values) if not value.is_valid else pc.fill_null(pc.equal(values, value), False)
        same = pc.and_(same, equal)
    other = np.flatnonzero(~same.to_numpy(zero_copy_only=False))
    return int(other[-1]) + 1 if len(other) else 0


def _set_scorer(grouping_set, config, resampling, implicit, schema: pa.Schema, index: int):
    def score(table: pa.Table) -> pa.Table:
        try:
            rows = scoring.score_sets(table, [grouping_set], config, resampling, None, implicit)
        except errors.BleuSparkError as exc:
            return _error_table(exc, schema)
        return _rows_table(rows, schema, index)

    return score


def paired_frame(stats: DataFrame, sets, config, resampling: Resampling, partitions: int) -> DataFrame:
    """The paired tests of every system against the baseline, each comparison group of the
    first set holding the system in one task (`scoring.paired_rows`), with the warnings of
    comparison groups without the baseline as rows of their own."""
    grouping_set = next((s for s in sets if SYSTEM in s), None)
    if grouping_set is None:
        raise errors.UsageError(f"paired tests compare systems: {SYSTEM} must be a group column")
    others = [c for c in grouping_set if c != SYSTEM]
    arrow = pa.schema([*(pa.field(c, to_arrow_schema(T.StructType([stats.schema[c]]), timezone="UTC")[0].type)
                         for c in others),
                       *(pa.field(c, t) for c, t in PAIRED_TYPES.items()), pa.field("method", pa.string()),
                       pa.field(WARNING, pa.string()), pa.field(ERROR, pa.string())])

    def test(table: pa.Table) -> pa.Table:
        try:
            rows, warnings = scoring.paired_rows(table, [grouping_set], config, resampling)
        except errors.BleuSparkError as exc:
            return _error_table(exc, arrow)
        rows = [{**r, "system": _text(r.get("system")), "baseline": _text(r.get("baseline"))}
                for r in rows] + [{WARNING: w} for w in warnings]
        return pa.Table.from_pylist(rows, schema=arrow)

    return per_comparison(stats, others, partitions, test, from_arrow_schema(arrow))


def _text(value):
    return value if value is None or isinstance(value, str) else str(value)


def raise_first_error(frame: DataFrame) -> None:
    """A scoring task's user error raised here, as the driver path would have raised it."""
    found = frame.filter(F.col(ERROR).isNotNull()).select(ERROR).limit(1).collect()
    if found:
        name, message = found[0][ERROR].split(":", 1)
        raise getattr(errors, name, errors.BleuSparkError)(message)


# --- what is written and shown ------------------------------------------------------------


def scores_table(scored: DataFrame, group_cols: Sequence[str]) -> DataFrame:
    """The scores table's columns: the group columns, the grouping, the score fields."""
    kept = [c for c in scored.columns if c in group_cols or c == GROUPING or c in SCORE_TYPES]
    return scored.select(*columns(kept))


def dashboard_table(scored: DataFrame, group_cols: Sequence[str], run_id: str,
                    run_time: str) -> DataFrame:
    """The dashboard table: group columns, grouping, metric, score, each statistic column, the
    counts, signature and interval fields, the run's id and time (`scoring.dashboard_table`)."""
    stats = [c for c in scored.columns if metrics.is_stat_column(c)]
    picked = [*columns(group_cols), column(GROUPING), column("metric"), column("score"),
              *columns(stats),
              *(column(c) if c in scored.columns else F.lit(None).cast(_spark_type(c)).alias(c)
                for c in DASHBOARD_SHARED),
              F.lit(run_id).alias("run_id"), F.lit(run_time).alias("run_time")]
    return scored.select(*picked)


def _spark_type(name: str) -> T.DataType:
    return from_arrow_schema(pa.schema([pa.field(name, SCORE_TYPES[name])]))[0].dataType


def in_order(scored: DataFrame, sets: Sequence[Tuple[str, ...]]) -> DataFrame:
    """Score rows in the driver's order: grouping sets in order, each by its own columns
    (nulls first), the metrics in their order."""
    # each set's rows by its own columns in its order: the other sets' keys are null in them
    own = [F.when(F.col(SET) == index, F.col(f"`{c}`")).asc_nulls_first()
           for index, grouping_set in enumerate(sets) for c in grouping_set]
    return scored.orderBy(SET, *own, ORDER)


def shown_rows(scored: DataFrame, sets: Sequence[Tuple[str, ...]], limit: int) -> List[dict]:
    """The first `limit` score rows in the driver's order, as score rows the console and the
    report read."""
    cols = list(dict.fromkeys(c for s in sets for c in s))
    return [as_score_row(r.asDict(), cols) for r in in_order(scored, sets).limit(limit).collect()]


def signature_rows(scored: DataFrame) -> List[dict]:
    """A score row of each distinct (metric, sacrebleu's name, signature): the console's
    signatures, whichever rows it shows."""
    picked = scored.select("metric", SACREBLEU["name"], "signature").distinct().collect()
    return [as_score_row(r.asDict(), ()) for r in picked]


def as_score_row(values: dict, group_cols: Sequence[str]) -> scoring.ScoreRow:
    """A score row as the driver makes it: its group columns, grouping, the shared fields and
    its own metric's result fields (not other metrics'), statistics and sacrebleu's fields."""
    every = set(metrics.result_types())
    own = set(metrics.declaration(values["metric"]).result_fields()) if values.get("metric") else every
    row = scoring.ScoreRow((k, utc_window(v) if k == WINDOW_START else v) for k, v in values.items()
                           if k in group_cols or k == GROUPING
                           or (k in SCORE_TYPES and (k not in every or k in own)))
    row.statistics = {k: v for k, v in values.items() if metrics.is_stat_column(k)}
    row.measured = _measured(values)
    row.sacrebleu = {k: values.get(v) for k, v in SACREBLEU.items() if values.get(v) is not None}
    return row


def utc_window(value):
    """A window's start as the driver path holds it (UTC): Spark gives a timestamp to Python as
    a naive time of the local zone."""
    if isinstance(value, datetime.datetime) and value.tzinfo is None:
        return value.astimezone(datetime.timezone.utc)
    return value


def _measured(values: dict):
    """The metric a report reads a row's title and direction from: a segment score's direction
    is in its signature (`better:lower`), every other kind's in its declaration."""
    name = values.get("metric")
    kind = metrics.declaration(name) if name else None
    if kind is not metrics.SegmentScore:
        return None
    return metrics.SegmentScore(name, "lower" if "better:lower" in (values.get("signature") or "") else "higher")


def json_lines(scored: DataFrame, sets: Sequence[Tuple[str, ...]]) -> List[dict]:
    """Every score row as `scores.json` holds it, in order (called only under its bound)."""
    cols = list(dict.fromkeys(c for s in sets for c in s))
    rows = [as_score_row(r.asDict(), cols) for r in in_order(scored, sets).collect()]
    return json_rows(rows, cols)
