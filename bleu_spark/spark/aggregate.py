"""Saved statistics too large or too far away for one process: filtered and summed on Spark.

The sum keeps every group column and measurement column as a key, so what reaches the driver
is already small and `bleu_spark.scoring` makes the same checks and scores as for a local table.
"""
from __future__ import annotations

from typing import Optional, Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import metrics, predicate, segments, statstable, store
from ..errors import InputNotFoundError
from ..predicate import Predicate
from . import io
from ..store.catalog import read_table
from .files import read_files
from .names import column, columns, map_in_arrow

def read_stats(spark: SparkSession, path: str, where: Optional[Predicate] = None,
               kept: Optional[Sequence[str]] = None, resample: bool = False) -> pa.Table:
    """Statistics summed per group (`kept`: the group columns asked for; None: all of the
    table's). A segments table's replicate sums are drawn here, per group, when `resample`."""
    found = store.locate(path, "stats", statstable.STATISTICS_FOLDERS)
    if found.in_output:  # the files the commit log names, read by the tasks through pyarrow
        frame = read_files(spark, found.task_files(), found.files, found.partition_types)
        if frame is None:
            raise InputNotFoundError(f"statistics path holds no Parquet files: {path}")
    else:  # a Parquet path of statistics rows, not an output's table
        frame = io.read_parquet(spark, path, what="statistics", merge_schema=True)
    return summed_stats(frame, path, where, kept, resample)


def read_stats_table(spark: SparkSession, name: str, where: Optional[Predicate] = None,
                     kept: Optional[Sequence[str]] = None, resample: bool = False) -> pa.Table:
    """Statistics of a table of Spark's catalog (`score --catalog DB` writes `DB.stats`), summed
    per group as `read_stats` sums a folder's; its partition columns are group columns."""
    return summed_stats(read_table(spark, name), name, where, kept, resample)


def summed_stats(frame: DataFrame, path: str, where: Optional[Predicate] = None,
                 kept: Optional[Sequence[str]] = None, resample: bool = False) -> pa.Table:
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
    return summed.toArrow()


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
