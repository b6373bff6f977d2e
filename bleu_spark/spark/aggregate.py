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
    out.recover_before_reading(path)  # never a half-committed folder
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
    missing = [c for c in (*statstable.MEASUREMENT, *statstable.COUNTS) if c not in columns]
    if missing:
        raise InputNotFoundError(f"{path} is not a bleu-spark statistics table (no column "
                                 f"{', '.join(missing)})")
    stats = [c for c in columns if c.startswith(("sys_len", "ref_len", "correct_", "total_"))]
    values = {*statstable.MEASUREMENT, *statstable.COUNTS, *statstable.REFS, *stats}
    keys = [c for c in columns if c not in values] + list(statstable.MEASUREMENT)
    summed = frame.groupBy(*keys).agg(
        *[F.sum(c).alias(c) for c in (*statstable.COUNTS, *stats)],
        F.min("min_refs").alias("min_refs"), F.max("max_refs").alias("max_refs"))
    return summed.toArrow()


def _spark_type(arrow_type: pa.DataType) -> str:
    return {pa.string(): "string", pa.int8(): "tinyint", pa.int16(): "smallint",
            pa.int32(): "int", pa.int64(): "bigint", pa.date32(): "date",
            pa.bool_(): "boolean"}[arrow_type]
