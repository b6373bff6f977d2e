"""Reading and validating the input."""
from __future__ import annotations

import fnmatch
import glob
import os
import re
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Dict, Optional, Sequence

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from .. import store
from ..errors import ColumnTypeError, InputNotFoundError, MissingColumnError, OutputError
from ..store import remote
from . import runtime

ATOMIC_TYPES = (T.StringType, T.IntegerType, T.LongType, T.ShortType, T.ByteType, T.BooleanType,
                T.DateType, T.TimestampType, T.TimestampNTZType, T.DecimalType, T.DoubleType,
                T.FloatType)


def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def exists_as_given(path: str) -> bool:
    """A local path that exists is read as that path, whatever its name holds (brackets, `*`,
    `?`, braces): only a path that does not exist as given is read as a glob."""
    return is_local(path) and os.path.exists(_local(path))


# The characters Hadoop's glob reads as a pattern (Spark's `isGlobPath`); a backslash before
# one makes it stand for itself.
_HADOOP_GLOB = re.compile(r"([{}\[\]*?\\])")


def spark_path(spark: SparkSession, path: str) -> str:
    """`path` as Spark's reader is to be given it: when it exists as given (asked of Hadoop's
    file system, so a remote path too), its glob characters are escaped so that Spark reads
    that path and not the files its name would match as a pattern."""
    scheme, rest = re.match(r"([A-Za-z][\w+.-]*://[^/]*)?(.*)", path).groups()
    if not _HADOOP_GLOB.search(rest) or not runtime.path_exists(spark, path):
        return path
    return (scheme or "") + _HADOOP_GLOB.sub(r"\\\1", rest)


def _hidden(name: str) -> bool:
    """Files and folders Spark does not read as data (`store.remote.hidden`, for remote inputs too)."""
    return remote.hidden(name)


def _summary(name: str) -> bool:
    """Parquet's summary files, which Spark lists with the data files (and pyarrow cannot read
    as data: their row groups lie in the other files)."""
    return name.startswith(("_metadata", "_common_metadata"))


def _partition_like(part: str) -> bool:
    key = part.split("=", 1)[0]
    return "=" in part and bool(key) and not glob.has_magic(key)


def hive_base(path: str, literal: Optional[bool] = None) -> Optional[str]:
    """The folder a Hive layout starts at, when the path names files or folders inside one
    (`in/langpair=*/*.parquet`, `in/langpair=de-en`): Spark keeps the partition columns of a
    path below its `basePath` only. None when the path has no `key=value` folders at its end.
    `literal`: whether the path exists as given (is no glob); by default asked of a local path."""
    literal = exists_as_given(path) if literal is None else literal
    parts = path.rstrip("/").split("/")
    end = len(parts) if _partition_like(parts[-1]) else len(parts) - 1
    start = end
    while start > 0 and _partition_like(parts[start - 1]):
        start -= 1
    if start == end:
        return None
    base = "/".join(parts[:start]) or "/"
    if glob.has_magic(base) and not literal:
        raise InputNotFoundError(f"input {path} names partition folders ({parts[start]}) below a "
                                 f"glob ({base}): Spark cannot keep their columns; name the folder "
                                 f"the partitions start in")
    return base


def local_files(path: str, what: str = "input", summaries: bool = False) -> list:
    """The data files a local file, folder or glob names, as Spark reads them: folders matched
    are read whole, files Spark does not read as data are left out. With `summaries`, the
    Parquet summary files Spark lists beside them instead."""
    local = _local(path)
    if os.path.exists(local):  # itself, whatever characters its name holds
        matches = [local]
    else:
        matches = sorted(glob.glob(local)) if glob.has_magic(local) else []
    if not matches:
        raise InputNotFoundError(f"{what} path not found: {path}")
    wanted = _summary if summaries else (lambda name: not _hidden(name))
    files = []
    for match in matches:
        if os.path.isdir(match):
            for root, folders, names in os.walk(match):
                folders[:] = sorted(f for f in folders if not _hidden(f))
                files += [os.path.join(root, n) for n in sorted(names) if wanted(n)]
        elif wanted(os.path.basename(match)):
            files.append(match)
    return files


def check_output_outside_input(input_path: str, output: str, what: str = "input") -> None:
    """An output folder the input names (the folder itself, below it, or matched by its glob)
    would be read as input by the next run: refused (local paths; elsewhere not checked)."""
    if not (is_local(input_path) and is_local(output)):
        return
    pattern = os.path.abspath(_local(input_path))
    if exists_as_given(input_path):  # its name is itself, not a pattern
        pattern = glob.escape(pattern)
    pattern, out = pattern.split("/"), os.path.abspath(_local(output)).split("/")
    # out, or a folder above it, is the input or one of its glob's matches (component by component)
    if len(pattern) <= len(out) and all(fnmatch.fnmatchcase(o, p) for o, p in zip(out, pattern)):
        raise OutputError(f"output {output} lies inside the {what} {input_path}: its files would "
                          f"be read as input by the next run; write the result elsewhere")


def _check_footers(files: Sequence[str], what: str, schema_of=None) -> None:
    """Every file's footer read (cheap: no data): a file that is not Parquet (truncated, say) is
    exit 3 naming it, and files that disagree on a column's type are exit 5 naming both.
    `schema_of`: a file's schema from its footer read already (a remote input's)."""
    import pyarrow.parquet as pq

    seen = {}  # column -> (type, first file with it)
    clashes = []
    for path in files:
        try:
            schema = schema_of(path) if schema_of else pq.read_schema(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputNotFoundError(f"{what} file {path} is not readable Parquet: {exc}") from None
        for field in schema:
            kind = field.type
            first = seen.setdefault(field.name, (kind, path))
            if first[0] != kind and not (pa.types.is_dictionary(kind) or pa.types.is_dictionary(first[0])):
                clashes.append(f"{field.name} is {first[0]} in {first[1]} but {kind} in {path}")
                seen[field.name] = (kind, path)
    if clashes:
        raise ColumnTypeError(f"{what} files disagree on column types: {'; '.join(clashes[:5])}"
                              + (f" (and {len(clashes) - 5} more)" if len(clashes) > 5 else ""))


def read_failure(exc: BaseException):
    """A Spark task that could not read an input file, as one line (exit 3), else None."""
    import re

    text = str(exc)
    found = re.search(r"\[FAILED_READ_FILE[.\w]*\] Encountered error while reading file (\S+?)\.?\s", text)
    if not found:
        return None
    cause = re.search(r"Caused by: ([^\n]+)", text[found.end():])
    reason = cause.group(1).strip() if cause else "unreadable"
    return InputNotFoundError(f"file {found.group(1)} cannot be read: {reason[:300]}")


def local_schema(path: str, what: str = "input") -> Optional[T.StructType]:
    """The schema of a local file, folder or glob, from Parquet footers (no JVM needed), so bad
    paths and columns fail in a second with one line; of a remote one pyarrow reads too
    (`remote_schema`); None for other remote URIs (Spark checks those)."""
    if remote.is_remote(path):
        return remote_schema(path, what)
    if not is_local(path):
        return None
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    local = _local(path)
    files = local_files(path, what)
    base = hive_base(local) or (local if os.path.isdir(local) else None)
    if not files:
        raise InputNotFoundError(f"{what} path holds no Parquet files: {path}")
    _check_footers(files, what)
    try:
        dataset = ds.dataset(files, format="parquet", partitioning="hive", partition_base_dir=base)
        return spark_schema(dataset.schema, int96_columns(pq.read_metadata(files[0]).schema))
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputNotFoundError(f"{what} is not readable Parquet: {path}: {exc}") from None


def remote_files(path: str, what: str = "input") -> remote.Remote:
    """A remote input's files (`store.remote.listed`), listed once a run for the settings in
    force (the preflight's listing serves the run; `forget_remote_inputs` at its end), with the
    folder its partition folders start in."""
    return _remote_files(path, what, tuple(sorted(store.settings().items())))


@lru_cache(maxsize=8)
def _remote_files(path: str, what: str, _settings) -> remote.Remote:
    listed = remote.listed(path, what)
    literal = not remote.has_magic(path)
    folder = literal and listed.files != (remote.fs_path(path),)
    base = hive_base(path, literal=literal) or (path if folder else None)
    return replace(listed, base=base and remote.fs_path(base))


@lru_cache(maxsize=8)
def remote_footers(files: remote.Remote, what: str = "input") -> dict:
    return remote.footers(files, what)


def forget_remote_inputs() -> None:
    """The remote inputs listed and their footers, dropped at a run's end: a prefix's files
    change between runs."""
    _remote_files.cache_clear()
    remote_footers.cache_clear()


def remote_schema(path: str, what: str = "input") -> Optional[T.StructType]:
    """The schema Spark reads a remote input with, from its footers and folder names: None when
    its files differ in columns, or Spark may type a partition folder otherwise than
    `store.remote.folder_type` (Spark's scan reads it then)."""
    files = remote_files(path, what)
    schemas = {f: m.schema.to_arrow_schema() for f, m in remote_footers(files, what).items()}
    _check_footers([files.uri_of(f) for f in files.files], what,
                   lambda uri: schemas[remote.fs_path(uri)])
    if len({tuple(s.names) for s in schemas.values()}) > 1:
        return None
    names = partition_names(files.files, files.base)
    if names is None:
        return None
    values = folder_values(files.files, files.base, names, files.filesystem())
    types = [(n, remote.folder_type([v[n] for v in values.values()])) for n in names]
    if any(t is None for _, t in types):
        return None
    first = remote_footers(files, what)[files.files[0]]
    file_fields = spark_schema(schemas[files.files[0]], int96_columns(first.schema)).fields
    return T.StructType([*file_fields, *(T.StructField(n, _spark_type(t)) for n, t in types)])


def partition_names(files: Sequence[str], base: Optional[str]) -> Optional[list]:
    """The partition columns the folders below `base` name (`key=value`), the same for every
    file; None when they differ (Spark refuses such a layout in its own words)."""
    if base is None:
        return []
    names = {tuple(p.split("=", 1)[0] for p in f[len(base.rstrip("/")) + 1:].split("/")[:-1] if "=" in p)
             for f in files}
    return list(names.pop()) if len(names) == 1 else None


def folder_values(files: Sequence[str], base: Optional[str], names: Sequence[str],
                  filesystem=None) -> dict:
    """Each file's partition folder values (`key=value` below `base`, decoded as Spark
    decodes them), as strings; null for Hive's default partition."""
    import pyarrow.dataset as ds

    if not names:
        return {f: {} for f in files}
    folders = pa.schema([(n, pa.string()) for n in names])
    flavor = ds.partitioning(folders, flavor="hive")
    dataset = ds.dataset(list(files), schema=folders, format="parquet", partitioning=flavor,
                         partition_base_dir=base, filesystem=filesystem)
    return {fragment.path: ds.get_partition_keys(fragment.partition_expression)
            for fragment in dataset.get_fragments()}


class UnreadableType(T.DataType):
    """A Parquet column type Spark cannot read (nanosecond timestamps) or pyspark cannot name:
    fine in a column the job never uses, a type error in one it needs."""

    def __init__(self, arrow_type: pa.DataType):
        self.arrow_type = arrow_type

    def simpleString(self) -> str:
        return str(self.arrow_type)


# Unsigned integers as Spark's Parquet reader reads them (pyspark's Arrow conversion lacks them).
_UNSIGNED = {pa.uint8(): T.ShortType(), pa.uint16(): T.IntegerType(), pa.uint32(): T.LongType(),
             pa.uint64(): T.DecimalType(20, 0)}


def _spark_type(arrow_type: pa.DataType) -> T.DataType:
    from pyspark.sql.pandas.types import from_arrow_type

    if pa.types.is_timestamp(arrow_type) and arrow_type.unit == "ns":
        return UnreadableType(arrow_type)
    if arrow_type in _UNSIGNED:
        return _UNSIGNED[arrow_type]
    try:
        return from_arrow_type(arrow_type)
    except (TypeError, ValueError):  # pyspark's PySparkTypeError is a TypeError
        return UnreadableType(arrow_type)


def spark_schema(arrow_schema: pa.Schema, int96: Sequence[str] = ()) -> T.StructType:
    """The Spark schema of Parquet footers, each column as Spark reads it; a column Spark cannot
    read has an `UnreadableType`, so only a rule that needs it fails. `int96`: the columns stored
    as INT96 (Spark's own default for timestamps), which pyarrow names nanoseconds and Spark
    reads as timestamps."""
    typed = lambda f: T.TimestampType() if f.name in int96 else _spark_type(f.type)
    return T.StructType([T.StructField(f.name, typed(f), f.nullable) for f in arrow_schema])


def int96_columns(parquet_schema) -> set:
    """The top-level columns of a Parquet footer's schema stored as INT96 timestamps."""
    columns = (parquet_schema.column(i) for i in range(len(parquet_schema)))
    return {c.path for c in columns if c.physical_type == "INT96" and "." not in c.path}


def readable_schema(schema: Optional[T.StructType]) -> Optional[T.StructType]:
    """The schema to read with when some columns are unreadable (Spark's own inference would
    fail on them although they are never used): every other column. None: let Spark infer."""
    if schema is None or not any(isinstance(f.dataType, UnreadableType) for f in schema.fields):
        return None
    return T.StructType([f for f in schema.fields if not isinstance(f.dataType, UnreadableType)])


def read_parquet(spark: SparkSession, path: str, what: str = "input",
                 merge_schema: bool = False, schema: Optional[T.StructType] = None,
                 discover_partitions: bool = True) -> DataFrame:
    """A file, a folder or a glob; a path that matches nothing is a user error, not a trace.
    `merge_schema`: files may hold different columns (statistics of several max orders).
    `schema`: read only these columns (see `readable_schema`). `discover_partitions=False`:
    every file below the folder, with no columns from folder names."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    try:
        reader = spark.read.option("mergeSchema", str(merge_schema).lower())
        if not discover_partitions:
            reader = reader.option("recursiveFileLookup", "true")
        escaped = spark_path(spark, path)
        base = hive_base(path, literal=escaped != path) if discover_partitions else None
        # Through Connect, relative local paths made absolute: the server's folder is its own.
        given, base = runtime.server_path(spark, escaped), base and runtime.server_path(spark, base)
        if base is not None:  # a folder's own name: Spark does not glob it
            reader = reader.option("basePath", base)
        return runtime.analyzed((reader.schema(schema) if schema is not None else reader).parquet(given))
    except AnalysisException as exc:
        condition = exc.getCondition() or ""
        if "UnsupportedFileSystemException" in str(exc) or "No FileSystem for scheme" in str(exc):
            raise InputNotFoundError(_no_filesystem(what, path, str(exc))) from None
        if condition.startswith("PARQUET_TYPE_ILLEGAL"):
            raise ColumnTypeError(f"{what} has a column Spark cannot read: "
                                  f"{str(exc).splitlines()[0]}") from None
        if condition.startswith("PATH_NOT_FOUND"):
            raise InputNotFoundError(f"{what} path not found: {path}") from None
        if condition.startswith("UNABLE_TO_INFER_SCHEMA"):
            raise InputNotFoundError(f"{what} path holds no Parquet files: {path}") from None
        raise
    except (Py4JJavaError, PySparkException) as exc:  # the JVM's error, or a Connect server's
        text = str(exc)
        if "ClassNotFoundException" in text and "FileSystem" in text or "No FileSystem for scheme" in text:
            raise InputNotFoundError(_no_filesystem(what, path, text)) from None
        raise


def read_parquet_files(spark: SparkSession, files: Sequence[str], base: Optional[str],
                       schema: Optional[T.StructType] = None) -> DataFrame:
    """Some local files of an input, with the partition folders below `base` as columns."""
    reader = spark.read if base is None else spark.read.option("basePath", runtime.server_path(spark, base))
    reader = reader if schema is None else reader.schema(schema)
    return runtime.analyzed(reader.parquet(*(runtime.server_path(spark, f) for f in files)))


def footer_schema(path: str) -> Optional[T.StructType]:
    """The schema Spark reads a local input with (its columns of types Spark reads: see
    `readable_schema`), from its footers alone: when every file has the same columns
    (`local_schema` refused types that disagree), and there are no partition folders (Spark
    types their values itself) and no summary files (whether Spark's listing equals ours is then
    checked against Spark's). None otherwise."""
    import pyarrow.parquet as pq

    schema = local_schema(path)
    if schema is None:
        return None
    if remote.is_remote(path):  # its folders typed already, its files alike (`remote_schema`)
        return T.StructType([T.StructField(f.name, f.dataType) for f in schema.fields
                             if not isinstance(f.dataType, UnreadableType)])
    names = set(schema.fieldNames())
    if (any(set(pq.read_schema(f).names) != names for f in local_files(path))
            or local_files(path, summaries=True)):
        return None
    # Top-level fields nullable, as Spark reads files (nested types keep the footers' nullability).
    return T.StructType([T.StructField(f.name, f.dataType) for f in schema.fields
                         if not isinstance(f.dataType, UnreadableType)])


class InputTable:
    """The input: its schema, and the DataFrame Spark reads it as, made when first used. Where a
    local input's schema is known from its footers, a pass read by the Python workers never
    starts Spark's SQL engine, whose first use costs the driver about 2 s (docs/benchmarks.md)."""

    def __init__(self, spark: SparkSession, path: str, frame: Optional[DataFrame] = None):
        self.spark, self.path = spark, path
        self.only: Optional[frozenset] = None  # the files read, when not all (`restrict`)
        if frame is not None:
            self.frame = frame
        self._schema = footer_schema(path) if frame is None else None

    def restrict(self, files) -> None:
        """Only these of the input's files read (an incremental run's new ones: paths as
        `file_sizes` names them), by Spark's scan as by the Python workers."""
        self.only = frozenset(files)
        if self.read_by_spark:
            del self.frame  # made again over these files

    @cached_property
    def frame(self) -> DataFrame:
        if self._schema is not None and remote.is_remote(self.path):
            from .files import read_remote_input

            files = self.remote_files()
            names = partition_names(files.files, files.base) or []
            folders = folder_values(files.files, files.base, names, files.filesystem())
            return read_remote_input(self.spark, files, names, folders, self._schema)
        schema = readable_schema(local_schema(self.path))
        if self.only is None:
            return read_parquet(self.spark, self.path, schema=schema)
        return read_parquet_files(self.spark, sorted(self.only), self.base(), schema)

    def remote_files(self) -> remote.Remote:
        """The remote input's files listed, those of `restrict` alone."""
        listed = remote_files(self.path)
        if self.only is None:
            return listed
        kept = [(f, n) for f, n in zip(listed.files, listed.sizes) if f in self.only]
        return replace(listed, files=tuple(f for f, _ in kept), sizes=tuple(n for _, n in kept))

    def local_files(self) -> list:
        """The local input's files as absolute paths, those of `restrict` alone."""
        files = [os.path.abspath(f) for f in local_files(self.path)]
        return files if self.only is None else [f for f in files if f in self.only]

    def file_sizes(self) -> Dict[str, int]:
        """Every file of the input (absolute paths; `bucket/key` on an object store) and its
        bytes: what an incremental run's ledger names."""
        if remote.is_remote(self.path):
            listed = remote_files(self.path)
            return dict(zip(listed.files, listed.sizes))
        return {f: os.path.getsize(f) for f in map(os.path.abspath, local_files(self.path))}

    def base(self) -> Optional[str]:
        """The local folder its partition folders start in (None: none)."""
        local = _local(self.path)
        base = hive_base(local) or (local if os.path.isdir(local) else None)
        return base and os.path.abspath(base)

    @property
    def schema(self) -> T.StructType:
        return self._schema or self.frame.schema

    @property
    def read_by_spark(self) -> bool:
        return "frame" in self.__dict__


def _no_filesystem(what: str, path: str, text: str) -> str:
    import re

    scheme = path.split("://", 1)[0] if "://" in path else "file"
    missing = re.search(r"Class (\S+) not found", text)
    return (f"{what} {path}: this Spark has no file system for {scheme}:// "
            f"({missing.group(1) + ' not found' if missing else 'no FileSystem for the scheme'}); "
            f"add its connector to the job (e.g. hadoop-aws for s3a)")


def row_groups(path: str) -> Optional[int]:
    """The Parquet row groups of a local input, from its footers; None for remote URIs. A scan
    task reads whole row groups, so there are never more tasks with rows than row groups."""
    if not is_local(path):
        return None
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(f).num_row_groups for f in local_files(path))


def input_bytes(df: DataFrame) -> Optional[int]:
    """The size of the files a DataFrame reads, as Spark's planner knows it (from the file
    listing; the task metrics of Parquet scans count only part of what they read)."""
    return runtime.input_bytes(df)


@dataclass(frozen=True)
class ColumnRule:
    name: str
    expected: str                      # as shown to the user, e.g. "string" or "array<string>"
    accepts: callable                  # DataType -> bool
    option: str = ""                   # the flag that names the column, e.g. --references-col


def is_string(dtype) -> bool:
    return isinstance(dtype, T.StringType)


def is_string_array(dtype) -> bool:
    return isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, T.StringType)


def is_string_or_string_array(dtype) -> bool:
    return is_string(dtype) or is_string_array(dtype)


def is_atomic(dtype) -> bool:
    return isinstance(dtype, ATOMIC_TYPES)


def is_time(dtype) -> bool:
    return isinstance(dtype, (T.TimestampType, T.TimestampNTZType, T.DateType))


def is_numeric(dtype) -> bool:
    return isinstance(dtype, T.NumericType)


def _near(name: str, fields) -> list:
    """Columns named like `name` but for case or a plural's s (`reference` for `references`)."""
    stem = name.lower().rstrip("s")
    return [f for f in fields if f != name and f.lower().rstrip("s") == stem]


def check_columns(schema: T.StructType, rules: Sequence[ColumnRule], table: str = "input") -> None:
    """Every missing column and every wrong type, reported at once in one message."""
    fields = {f.name: f.dataType for f in schema.fields}
    missing = [r.name for r in rules if r.name not in fields]
    wrong = [f"{r.name} is {fields[r.name].simpleString()}, expected {r.expected}"
             for r in rules if r.name in fields and not r.accepts(fields[r.name])]
    problems = []
    if missing:
        hints = [f"; pass {r.option} {near[0]}" for r in rules
                 if r.name not in fields and r.option and (near := _near(r.name, fields))]
        problems.append(f"{table} has no column {', '.join(missing)} "
                        f"(columns: {', '.join(fields) or 'none'}){''.join(hints)}")
    problems.extend(f"{table} column {w}" for w in wrong)
    if problems:
        error = MissingColumnError if missing else ColumnTypeError
        raise error("; ".join(problems))
