"""Reading and validating the input."""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import Optional, Sequence

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from ..errors import ColumnTypeError, InputNotFoundError, MissingColumnError

ATOMIC_TYPES = (T.StringType, T.IntegerType, T.LongType, T.ShortType, T.ByteType, T.BooleanType,
                T.DateType, T.TimestampType, T.TimestampNTZType, T.DecimalType, T.DoubleType,
                T.FloatType)


def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def local_schema(path: str, what: str = "input") -> Optional[T.StructType]:
    """The schema of a local file, folder or glob, from Parquet footers (no JVM needed), so bad
    paths and columns fail in a second with one line; None for remote URIs (Spark checks those)."""
    if not is_local(path):
        return None
    import pyarrow.dataset as ds
    from pyspark.sql.pandas.types import from_arrow_schema

    local = path[len("file://"):] if path.startswith("file://") else path
    matches = sorted(glob.glob(local)) if glob.has_magic(local) else [local] * os.path.exists(local)
    if not matches:
        raise InputNotFoundError(f"{what} path not found: {path}")
    try:
        dataset = ds.dataset(matches if len(matches) > 1 else matches[0], format="parquet",
                             partitioning="hive")
        if not dataset.files:
            raise InputNotFoundError(f"{what} path holds no Parquet files: {path}")
        return from_arrow_schema(dataset.schema)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputNotFoundError(f"{what} is not readable Parquet: {path}: {exc}") from None


def read_parquet(spark: SparkSession, path: str, what: str = "input",
                 merge_schema: bool = False) -> DataFrame:
    """A file, a folder or a glob; a path that matches nothing is a user error, not a trace.
    `merge_schema`: files may hold different columns (statistics of several max orders)."""
    try:
        return spark.read.option("mergeSchema", str(merge_schema).lower()).parquet(path)
    except AnalysisException as exc:
        condition = exc.getCondition() or ""
        if condition.startswith("PATH_NOT_FOUND"):
            raise InputNotFoundError(f"{what} path not found: {path}") from None
        if condition.startswith("UNABLE_TO_INFER_SCHEMA"):
            raise InputNotFoundError(f"{what} path holds no Parquet files: {path}") from None
        raise


def input_bytes(df: DataFrame) -> Optional[int]:
    """The size of the files a DataFrame reads, as Spark's planner knows it (from the file
    listing; the task metrics of Parquet scans count only part of what they read)."""
    try:
        return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # an internal interface: never let reporting break a run
        return None


@dataclass(frozen=True)
class ColumnRule:
    name: str
    expected: str                      # as shown to the user, e.g. "string" or "array<string>"
    accepts: callable                  # DataType -> bool


def is_string(dtype) -> bool:
    return isinstance(dtype, T.StringType)


def is_string_array(dtype) -> bool:
    return isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, T.StringType)


def is_atomic(dtype) -> bool:
    return isinstance(dtype, ATOMIC_TYPES)


def check_columns(schema: T.StructType, rules: Sequence[ColumnRule], table: str = "input") -> None:
    """Every missing column and every wrong type, reported at once in one message."""
    fields = {f.name: f.dataType for f in schema.fields}
    missing = [r.name for r in rules if r.name not in fields]
    wrong = [f"{r.name} is {fields[r.name].simpleString()}, expected {r.expected}"
             for r in rules if r.name in fields and not r.accepts(fields[r.name])]
    problems = []
    if missing:
        problems.append(f"{table} has no column {', '.join(missing)} "
                        f"(columns: {', '.join(fields) or 'none'})")
    problems.extend(f"{table} column {w}" for w in wrong)
    if problems:
        error = MissingColumnError if missing else ColumnTypeError
        raise error("; ".join(problems))
