"""An output's tables written and read by the tasks through pyarrow, never through a Spark file
system connector: the files to read are the ones the commit log names, and a cluster without a
connector for the output's scheme (`s3://` on most, `s3a://` without hadoop-aws) works the same.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession

from .. import store
from ..errors import InputNotFoundError
from ..time_windows import WINDOW_START, WINDOW_TYPE
from . import runtime
from .names import map_in_arrow


def write_frame(frame: DataFrame, where: store.TableFiles) -> int:
    """The frame's rows as the table `where` names, each task writing its own files; the number
    of files written."""
    def write(batches):
        task = TaskContext.get()
        writer = store.TaskWriter(where, task.partitionId(), task.attemptNumber())
        for batch in batches:
            if batch.num_rows:
                writer.write(_window_in_utc(pa.Table.from_batches([batch])))
        yield pa.RecordBatch.from_pydict({"files": pa.array([writer.close()], pa.int64())})

    return sum(r[0] for r in map_in_arrow(frame, write, "files long").collect())


def _window_in_utc(table: pa.Table) -> pa.Table:
    """`window_start` as the driver writes it, timestamp[us, tz=UTC]: Spark hands a timestamp
    over named by its session's zone (the same instant)."""
    if WINDOW_START not in table.column_names:
        return table
    at = table.schema.get_field_index(WINDOW_START)
    return table.set_column(at, WINDOW_START, table[WINDOW_START].cast(WINDOW_TYPE))


def read_files(spark: SparkSession, where: store.TableFiles, files: List[str],
               partition_types: Optional[dict] = None) -> Optional[DataFrame]:
    """The rows of `files` (paths below `where.uri`'s folder), their partition columns taken
    from their folder names with the types the writing run recorded. None when there are none."""
    from pyspark.sql.pandas.types import from_arrow_schema

    if not files:
        return None
    settings = dict(where.fs_settings)
    fs, root = store.filesystem(where.uri, settings)
    try:
        with ThreadPoolExecutor(8) as pool:  # footers only; files of other runs may have more columns
            schema = pa.unify_schemas(list(pool.map(lambda f: pq.read_schema(f, filesystem=fs), files)))
    except (pa.ArrowInvalid, OSError) as exc:  # named by the commit log, yet gone or damaged
        raise InputNotFoundError(f"{where.uri}: a committed file is not readable Parquet: {exc}") from None
    types = partition_types or {}
    keys = [pa.field(c, store.PARTITION_TYPES.get(types.get(c), pa.string()))
            for c in where.partition_by]
    full = pa.schema([*schema, *keys])

    def read(batches):
        task_fs, _ = store.filesystem(where.uri, settings)
        for batch in batches:
            for path in batch.column(0).to_pylist():
                table = pq.read_table(path, filesystem=task_fs, schema=schema)
                folders = path[len(root) + 1:].split("/")[:-1]
                for key, folder in zip(keys, folders):
                    value = pa.array([store.partition_value(folder)], pa.string()).cast(key.type)
                    table = table.append_column(key, pa.repeat(value[0], table.num_rows))
                yield from table.select(full.names).to_batches()

    paths = spark.createDataFrame([(f,) for f in files], "path string")
    paths = paths.repartition(min(len(files), runtime.parallelism(spark)))
    return paths.mapInArrow(read, from_arrow_schema(full))


def read_remote_input(spark: SparkSession, files, names: List[str], folders: dict,
                      schema) -> DataFrame:
    """A remote input pyarrow reads as a DataFrame its tasks read through pyarrow too: `files`
    its listing (`io.remote_files`), `names` its partition folders' columns and `folders` each
    file's values of them, typed as `schema` says. What the rows Spark handles (rejected ones
    written back whole, a pass forced onto Spark's side) are read from, with no Spark connector
    for the scheme (no hadoop-aws for `s3a://`)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = _nullable(schema)
    arrow = to_arrow_schema(schema, timezone="UTC")
    columns = [n for n in arrow.names if n not in names]

    def read(batches):
        fs = files.filesystem()
        for batch in batches:
            for file in batch.column(0).to_pylist():
                table = pq.read_table(file, filesystem=fs, columns=columns)
                for name in names:
                    value = pa.scalar(folders[file].get(name)).cast(arrow.field(name).type)
                    table = table.append_column(name, pa.repeat(value, table.num_rows))
                yield from table.select(arrow.names).cast(arrow).to_batches()

    paths = spark.createDataFrame([(f,) for f in files.files], "path string")
    return paths.repartition(min(len(files.files), runtime.parallelism(spark))).mapInArrow(read, schema)


def _nullable(dtype):
    """A type as Spark reads it from Parquet: every field, element and value nullable."""
    from pyspark.sql import types as T

    if isinstance(dtype, T.StructType):
        return T.StructType([T.StructField(f.name, _nullable(f.dataType)) for f in dtype.fields])
    if isinstance(dtype, T.ArrayType):
        return T.ArrayType(_nullable(dtype.elementType))
    if isinstance(dtype, T.MapType):
        return T.MapType(_nullable(dtype.keyType), _nullable(dtype.valueType))
    return dtype
