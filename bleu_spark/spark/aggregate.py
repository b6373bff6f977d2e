"""Saved statistics too large or too far away for one process: filtered and summed on Spark.

The sum keeps every group column and measurement column as a key, so what reaches the driver
is already small and `bleu_spark.views` makes the same checks and scores as for a local table.
"""
from __future__ import annotations

import os
from urllib.parse import unquote

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import output as out, statstable
from ..errors import InputNotFoundError, UsageError
from . import io

FILE = "_bleu_spark_file"  # each row's file, while its partition values are joined on


def read_stats(spark: SparkSession, path: str, where=None) -> pa.Table:
    out.recover_before_reading(path)  # never a half-committed folder
    fs, root = out.filesystem(path)
    marker = out.read_marker(fs, root)
    stats_path = path.rstrip("/") + "/stats" if marker else path
    if marker is None and os.path.basename(root) == "stats":
        marker = out.read_marker(fs, os.path.dirname(root))
    if marker and marker.get("partition_by"):
        frame = _partitioned(spark, stats_path, marker)
    else:
        frame = io.read_parquet(spark, stats_path, what="statistics", merge_schema=True)
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


def _partitioned(spark: SparkSession, stats_path: str, marker: dict) -> DataFrame:
    """A partitioned folder's statistics with their partition columns decoded as the job encoded
    them. Spark's own discovery refuses a folder `col=` (how pyarrow, DuckDB and this job name
    ''), so it is off: each file's values come from its path, joined on (a row per file)."""
    columns = marker["partition_by"]
    frame = io.read_parquet(spark, stats_path, what="statistics", merge_schema=True,
                            discover_partitions=False).withColumn(FILE, F.col("_metadata.file_path"))
    files = [r[0] for r in frame.select(FILE).distinct().collect()]
    # Spark gives each path as a URI (a folder `v=%25` as `v=%2525`): decoded once here, and once
    # more by `partition_value`, as the writer escaped it.
    values = [[out.partition_value(p) for p in unquote(f).split("/")[-1 - len(columns):-1]]
              for f in files]
    schema = T.StructType([T.StructField(c, T.StringType()) for c in [FILE, *columns]])
    found = spark.createDataFrame([[f, *v] for f, v in zip(files, values)], schema)
    frame = frame.join(F.broadcast(found), FILE).drop(FILE)
    types = marker.get("partition_types", {})
    for column in columns:  # read back with the types the writing run recorded
        arrow_type = out.PARTITION_TYPES.get(types.get(column), pa.string())
        frame = frame.withColumn(column, F.col(column).cast(_spark_type(arrow_type)))
    return frame


def _spark_type(arrow_type: pa.DataType) -> str:
    return {pa.string(): "string", pa.int8(): "tinyint", pa.int16(): "smallint",
            pa.int32(): "int", pa.int64(): "bigint", pa.date32(): "date",
            pa.bool_(): "boolean"}[arrow_type]
