"""Saved statistics too large or too far away for one process: filtered and summed on Spark.

The sum keeps every group column and measurement column as a key, so what reaches the driver
is already small and `bleu_spark.views` makes the same checks and scores as for a local table.
"""
from __future__ import annotations

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from .. import output as out, statstable
from ..errors import InputNotFoundError, UsageError
from . import io


def read_stats(spark: SparkSession, path: str, where=None) -> pa.Table:
    fs, root = out.filesystem(path)
    marker = out.read_marker(fs, root)
    stats_path = path.rstrip("/") + "/stats" if marker else path
    frame = io.read_parquet(spark, stats_path, what="statistics", merge_schema=True)
    if marker:  # partition values read back with the types the writing run recorded
        types = marker.get("partition_types", {})
        for column in marker.get("partition_by", []):
            arrow_type = out.PARTITION_TYPES.get(types.get(column), pa.string())
            frame = frame.withColumn(column, F.col(column).cast(_spark_type(arrow_type)))
    if where:
        try:
            frame = frame.where(where)
            frame.schema  # analysis happens here: a bad predicate is a user error
        except AnalysisException as exc:
            raise UsageError(f"bad --where predicate {where!r}: "
                             f"{str(exc).splitlines()[0]}") from None
    columns = frame.columns
    missing = [c for c in (*statstable.MEASUREMENT, statstable.RESAMPLING, *statstable.COUNTS)
               if c not in columns]
    if missing:
        raise InputNotFoundError(f"{path} is not a bleu-spark statistics table (no column "
                                 f"{', '.join(missing)})")
    values = {*statstable.MEASUREMENT, statstable.RESAMPLING, *statstable.COUNTS, *statstable.REFS,
              *statstable.SAMPLES}
    stats = [c for c in columns if c not in values and c.startswith(("sys_len", "ref_len", "correct_", "total_"))]
    keys = [c for c in columns if c not in values and c not in stats] + list(statstable.MEASUREMENT)
    # Rows of a key meet in one task and are added up there as `score` adds them (replicate sums
    # are lists Spark SQL cannot add element-wise): what reaches the driver is a row per group.
    summed = frame.repartition(*keys).mapInArrow(_adding_up(keys), frame.schema)
    return summed.toArrow()


def _adding_up(keys):
    def run(batches):
        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if tables:
            table = pa.concat_tables(tables)
            yield from statstable.add_up(table, keys).select(table.column_names).to_batches()

    return run


def _spark_type(arrow_type: pa.DataType) -> str:
    return {pa.string(): "string", pa.int8(): "tinyint", pa.int16(): "smallint",
            pa.int32(): "int", pa.int64(): "bigint", pa.date32(): "date",
            pa.bool_(): "boolean"}[arrow_type]
