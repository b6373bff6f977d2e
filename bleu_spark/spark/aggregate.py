"""Saved statistics too large or too far away for one process: filtered and summed on Spark.

The sum keeps every group column and measurement column as a key, so what reaches the driver
is usually small and `bleu_spark.scoring` makes the same checks and scores as for a local table.
A sum too large for the driver (many groups, each with its replicate sums) stays on the
executors (`SummedFrame`): the checks are small results of Spark, the groups are scored and
written there (`distributed`, `apart`), as `score --groups-scored-on executors` does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from .. import metrics, predicate, segments, statstable, store
from ..errors import InputNotFoundError
from ..predicate import Predicate
from . import apart, distributed, io, measure, runtime
from ..store.catalog import read_table
from .files import read_files
from .names import column, columns, map_in_arrow

Summed = Union[pa.Table, "SummedFrame"]


def read_stats(spark: SparkSession, path: str, where: Optional[Predicate] = None,
               kept: Optional[Sequence[str]] = None, resample: bool = False,
               scored_on: str = measure.DRIVER) -> Summed:
    """Statistics summed per group (`kept`: the group columns asked for; None: all of the
    table's). A segments table's replicate sums are drawn here, per group, when `resample`.
    `scored_on` (`--groups-scored-on`): an Arrow table for the driver, a `SummedFrame` for the
    executors; auto: the one whose size fits (`where_summed`)."""
    found = store.locate(path, "stats", statstable.STATISTICS_FOLDERS)
    if found.in_output:  # the files the commit log names, read by the tasks through pyarrow
        frame = read_files(spark, found.task_files(), found.files, found.partition_types)
        if frame is None:
            raise InputNotFoundError(f"statistics path holds no Parquet files: {path}")
    else:  # a Parquet path of statistics rows, not an output's table
        frame = io.read_parquet(spark, path, what="statistics", merge_schema=True)
    return summed_stats(frame, path, where, kept, resample, scored_on)


def read_stats_table(spark: SparkSession, name: str, where: Optional[Predicate] = None,
                     kept: Optional[Sequence[str]] = None, resample: bool = False,
                     scored_on: str = measure.DRIVER) -> Summed:
    """Statistics of a table of Spark's catalog (`score --catalog DB` writes `DB.stats`), summed
    per group as `read_stats` sums a folder's; its partition columns are group columns."""
    return summed_stats(read_table(spark, name), name, where, kept, resample, scored_on)


def summed_stats(frame: DataFrame, path: str, where: Optional[Predicate] = None,
                 kept: Optional[Sequence[str]] = None, resample: bool = False,
                 scored_on: str = measure.DRIVER) -> Summed:
    """Statistics rows (`path` names where they are, for messages) filtered and summed."""
    present = frame.columns
    statstable.check_statistics_columns(path, present)
    if where is not None:
        frame = frame.where(row_filter(where, frame.schema))
    values = {*statstable.MEASUREMENT, statstable.RESAMPLING, *statstable.COUNTS, *statstable.REFS,
              *statstable.SAMPLES}
    stats = [c for c in present if c not in values and metrics.is_stat_column(c)]
    groups = [c for c in present if c not in values and c not in stats and c not in statstable.SEGMENT_VALUES]
    keys = [c for c in groups if kept is None or c in kept] + list(statstable.MEASUREMENT)
    draw = None
    if resample and statstable.SEGMENT_HASH in present:  # a segments table: drawn from the hashes
        draw = segments.draw_of([r[0] for r in frame.select(statstable.RESAMPLING).distinct().collect()])
    frame = frame.select(*columns([*keys, *(c for c in frame.columns if c not in keys and c not in groups)]))
    schema = _summed_schema(frame.schema)
    # Rows of a key meet in one task and are added up there as `score` adds them (replicate sums
    # are lists Spark SQL cannot add element-wise): what reaches the driver is a row per group.
    declared = [metrics.stat_column(c) for c in stats]  # the tasks have no registry to ask
    summed = map_in_arrow(frame.repartition(*columns(keys)), _adding_up(keys, schema, declared, draw),
                          schema)
    return summed.toArrow() if scored_on == measure.DRIVER else where_summed(summed, scored_on)


def _summed_schema(schema: T.StructType) -> T.StructType:
    """The columns of summed rows: a segment's own values left out, the packed sums in."""
    fields = [f for f in schema.fields if f.name not in statstable.SEGMENT_VALUES]
    names = {f.name for f in fields}
    return T.StructType(fields + [T.StructField(c, T.ArrayType(T.LongType()))
                                  for c in statstable.SAMPLES if c not in names])


def _adding_up(keys, schema: T.StructType, declared, draw=None):
    names = schema.fieldNames()

    def run(batches):
        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if not tables:
            return
        table = pa.concat_tables(tables)
        if draw is not None:
            added = segments.with_replicate_sums(table, keys, *draw, declared=declared)
        else:
            added = statstable.add_up(table, keys, declared)
        for name in names:
            if name not in added.column_names:
                added = added.append_column(name, pa.nulls(added.num_rows, pa.list_(pa.int64())))
        yield from added.select(names).to_batches()

    return run


def row_filter(where: Predicate, schema: T.StructType) -> Column:
    """`where` checked against the frame's columns and built as a Column from the same tree the
    local engine evaluates: no SQL text reaches Spark."""
    kinds = {f.name: _kind(f.dataType) for f in schema.fields}
    bound = predicate.bind(where, kinds, statstable.filter_columns(schema.names))
    return predicate.evaluate(bound.tree, SparkEngine())


def _kind(data_type: T.DataType) -> str:
    if isinstance(data_type, (T.StringType, T.VarcharType, T.CharType)):
        return "string"
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return "integer"
    return ("boolean" if isinstance(data_type, T.BooleanType) else
            "date" if isinstance(data_type, T.DateType) else
            "timestamp" if isinstance(data_type, T.TimestampType) else "other")


class SparkEngine:
    """The primitives of `predicate.evaluate` as Spark Columns (SQL's three-valued logic)."""

    def column(self, name):
        return column(name)

    def literal(self, value):
        return F.lit(value)

    def unknown(self):
        return F.lit(None).cast("boolean")

    def compare(self, op, left, right):
        return predicate.OPERATORS[op](left, right)

    def and_(self, left, right):
        return left & right

    def or_(self, left, right):
        return left | right

    def not_(self, operand):
        return ~operand

    def is_null(self, operand):
        return operand.isNull()

    def like(self, operand, pattern):
        return operand.rlike(predicate.like_regex(pattern))   # not Spark's LIKE: no backtracking

    def isin(self, operand, values):
        return operand.isin(values)


# --- a sum too large for the driver ------------------------------------------------------


def where_summed(summed: DataFrame, scored_on: str) -> Summed:
    """The summed rows held on the executors, and counted; brought to the driver under auto
    when their estimated size fits in DRIVER_BYTES (`measure`: score's bound), else left there
    as a `SummedFrame`."""
    summed = summed.persist()
    rows, size = _rows_and_bytes(summed)
    if scored_on == measure.AUTO and size <= measure.DRIVER_BYTES:
        table = summed.toArrow()
        summed.unpersist()
        return table
    return SummedFrame(summed, rows, size)


def _rows_and_bytes(summed: DataFrame) -> Tuple[int, int]:
    """The summed rows, and the bytes the driver would hold of them: a row's values
    (ROW_BYTES, generously) and its replicate and trial sums, 8 bytes each (one Spark job)."""
    held = [F.greatest(F.size(column(c)), F.lit(0)) for c in statstable.SAMPLES
            if c in summed.columns]
    integers = sum(held[1:], held[0]) if held else F.lit(0)
    row = summed.agg(F.count(F.lit(1)).alias("rows"),
                     F.sum(integers.cast("long")).alias("integers")).first()
    rows = row["rows"] or 0
    return rows, rows * measure.ROW_BYTES + 8 * (row["integers"] or 0)


@dataclass
class SummedFrame:
    """Summed statistics left on the executors: what an aggregate checks and shows of them,
    each a small result of Spark; their groups scored and written there."""
    frame: DataFrame
    rows: int            # summed rows
    size: int            # the bytes the driver would have held of them (estimated)
    held: Tuple[DataFrame, ...] = ()  # the persisted frame it is made from, when not `frame`

    @property
    def schema_table(self) -> pa.Table:
        """No rows, the frame's columns: what the checks of the columns read."""
        return _empty_table(self.frame)

    def measurements(self) -> pa.Table:
        """Each distinct measurement and draw of replicate sums (a few rows)."""
        kept = [c for c in (*statstable.MEASUREMENT, statstable.RESAMPLING) if c in self.frame.columns]
        return self.frame.select(*columns(kept)).distinct().toArrow()

    def counted_once(self) -> Dict[str, int]:
        """`statstable.counted_once` of n_segments and n_rejected, summed on Spark: per group,
        the count of the metric covering the most, summed over groups."""
        frame = self.frame
        keys = [c for c in statstable.group_columns_of(self.schema_table)
                if not isinstance(frame.schema[c].dataType, (T.ArrayType, T.MapType, T.StructType))]
        counts = ("n_segments", "n_rejected")
        per_metric = frame.groupBy(*columns([*keys, "metric"])).agg(
            *(F.coalesce(F.sum(c), F.lit(0)).alias(c) for c in counts))
        most = per_metric.groupBy(*columns(keys)).agg(*(F.max(c).alias(c) for c in counts))
        row = most.agg(*(F.sum(c).alias(c) for c in counts)).first()
        return {"scored": row["n_segments"] or 0, "rejected": row["n_rejected"] or 0}

    def segments_per_metric(self) -> Dict[str, int]:
        """The scored segments each metric's rows count."""
        rows = self.frame.groupBy("metric").agg(F.sum("n_segments").alias("n")).collect()
        return {r["metric"]: r["n"] or 0 for r in rows}

    def first_uncovered(self, finest: Sequence[str], names: Sequence[str],
                        most: str) -> Dict[str, Optional[tuple]]:
        """Per metric of `names`, the first group (of the `finest` columns, in their order) whose
        segments (count and fingerprint) differ from those of metric `most`; None: none does.
        A group without rows of a metric has none of its segments (as the driver counts them)."""
        sums = []
        for i, name in enumerate(names):
            mine = F.col("metric") == name
            sums += [F.coalesce(F.sum(F.when(mine, F.coalesce(column(c), F.lit(0)))), F.lit(0))
                     .alias(f"_{c}_{i}") for c in ("n_segments", "segment_fingerprint")]
        per_group = self.frame.groupBy(*columns(finest)).agg(*sums)
        key = F.struct(*columns(finest)) if finest else F.struct(F.lit(0).alias("_"))
        j = list(names).index(most)
        firsts = [F.min(F.when((F.col(f"_n_segments_{i}") != F.col(f"_n_segments_{j}"))
                               | (F.col(f"_segment_fingerprint_{i}") != F.col(f"_segment_fingerprint_{j}")),
                               key)).alias(f"_first_{i}") for i in range(len(names))]
        row = per_group.agg(*firsts).first()
        return {name: None if row[f"_first_{i}"] is None
                else tuple(distributed.utc_window(v) for v in row[f"_first_{i}"])[:len(finest)]
                for i, name in enumerate(names)}

    def scored_systems(self) -> set:
        return apart.scored_systems(self.frame)

    def shaped(self, keys: Sequence[str]) -> "SummedFrame":
        """The frame with the columns and types of the statistics the driver sums per `keys`
        (`statstable.summed`): the stats table written is the same either way."""
        shape = statstable.summed(self.schema_table, keys).schema
        spark_types = from_arrow_schema(shape)
        picked = [column(f.name).cast(f.dataType).alias(f.name) for f in spark_types.fields]
        return SummedFrame(self.frame.select(*picked), self.rows, self.size,
                           (*self.held, self.frame))

    def score(self, sets, config, resampling, measured, paired: bool) -> apart.ShownApart:
        """Every group scored on the executors, as `score` scores its groups there; as many
        tasks as the cluster offers a stage."""
        tasks = runtime.parallelism(self.frame.sparkSession)
        return apart.scored_apart(self.frame, sets, config, resampling, (), measured, tasks, paired)

    def tables(self, shown: apart.ShownApart, sets, run: dict) -> List[tuple]:
        """The stats, scores, dashboard (and paired) tables as frames the tasks write."""
        return apart.frames(shown, self.frame, sets, run)

    def files(self, shown: apart.ShownApart, sets, run: dict, report: bool,
              output: Optional[str]) -> List[tuple]:
        """scores.json and paired.json within their bound, the report of the first rows."""
        written = apart.json_files(shown, sets, run)
        if report:
            written.append(("report.html", apart.report(shown, sets, run, output)))
        return written

    def release(self, shown: Optional[apart.ShownApart] = None) -> None:
        """The frames held on the executors let go (a session may run many aggregates)."""
        for frame in (*(shown.persisted if shown else ()), *self.held, self.frame):
            frame.unpersist()


def _empty_table(frame: DataFrame) -> pa.Table:
    return to_arrow_schema(frame.schema, timezone="UTC").empty_table()
