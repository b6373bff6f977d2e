"""Reading and validating the input, and committing the output directory whole."""
from __future__ import annotations

import glob
import json
import os
import uuid
from dataclasses import dataclass
from typing import Optional, Sequence

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from ..errors import ColumnTypeError, InputNotFoundError, MissingColumnError, OutputError

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


def read_parquet(spark: SparkSession, path: str, what: str = "input") -> DataFrame:
    """A file, a folder or a glob; a path that matches nothing is a user error, not a trace."""
    try:
        return spark.read.parquet(path)
    except AnalysisException as exc:
        condition = exc.getCondition() or ""
        if condition.startswith("PATH_NOT_FOUND"):
            raise InputNotFoundError(f"{what} path not found: {path}") from None
        if condition.startswith("UNABLE_TO_INFER_SCHEMA"):
            raise InputNotFoundError(f"{what} path holds no Parquet files: {path}") from None
        raise


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


# --- output ---------------------------------------------------------------------------------


def _filesystem(uri: str):
    if "://" in uri:
        return pafs.FileSystem.from_uri(uri)
    return pafs.LocalFileSystem(), os.path.abspath(uri)


def spark_path(uri: str) -> str:
    return uri if "://" in uri else "file://" + os.path.abspath(uri)


RUN_FILE = "run.json"


class OutputDir:
    """Writes a run's files into a staging folder beside DIR, then swaps it in as DIR.

    A reader sees the previous result or the new one, never a half-written mix; a failed run
    leaves DIR as it was (the staging folder is removed).
    """

    def __init__(self, uri: str):
        self.uri = uri.rstrip("/")
        self.fs, self.path = _filesystem(self.uri)
        parent, name = os.path.split(self.path)
        token = uuid.uuid4().hex[:12]
        self.staging = f"{parent}/.{name}.staging-{token}"
        self.retired = f"{parent}/.{name}.old-{token}"
        self.staging_uri = (self.uri.rsplit("/", 1)[0] + f"/.{name}.staging-{token}"
                            if "://" in self.uri else self.staging)

    def open(self) -> "OutputDir":
        self.check_replaceable()
        try:
            self.fs.create_dir(os.path.dirname(self.staging), recursive=True)
            self.fs.create_dir(self.staging)
        except OSError as exc:
            raise OutputError(f"cannot write output directory {self.uri}: {exc}") from None
        return self

    def write_json(self, name: str, value) -> None:
        data = json.dumps(value, indent=2, ensure_ascii=False, default=str).encode() + b"\n"
        with self.fs.open_output_stream(f"{self.staging}/{name}") as out:
            out.write(data)

    def write_parquet(self, name: str, table: pa.Table) -> None:
        self.fs.create_dir(f"{self.staging}/{name}")
        pq.write_table(table, f"{self.staging}/{name}/part-00000.parquet", filesystem=self.fs)

    def check_replaceable(self) -> None:
        """Only an empty folder or an earlier result (it has run.json) is ever replaced."""
        info = self.fs.get_file_info(self.path)
        if info.type == pafs.FileType.NotFound:
            return
        if info.type != pafs.FileType.Directory:
            raise OutputError(f"output {self.uri} exists and is not a directory")
        entries = self.fs.get_file_info(pafs.FileSelector(self.path))
        if entries and not any(e.base_name == RUN_FILE for e in entries):
            raise OutputError(f"output directory {self.uri} is not empty and holds no earlier "
                              f"result ({RUN_FILE}); refusing to replace it")

    def commit(self) -> None:
        exists = self.fs.get_file_info(self.path).type != pafs.FileType.NotFound
        try:
            if exists:
                self.fs.move(self.path, self.retired)
            try:
                self.fs.move(self.staging, self.path)
            except OSError:
                if exists:
                    self.fs.move(self.retired, self.path)
                raise
            if exists:
                self.fs.delete_dir(self.retired)
        except OSError as exc:
            raise OutputError(f"cannot commit output to {self.uri}: {exc}") from None

    def abort(self) -> None:
        try:
            self.fs.delete_dir(self.staging)
        except OSError:
            pass
