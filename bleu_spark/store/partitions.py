"""Hive-style partitions: a value's folder name (`col=value`, as Spark writes it), the columns that
can be partition keys, and the rows of a table per partition."""
from __future__ import annotations

import urllib.parse
from typing import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UsageError

# Partition values become folder names: types whose text form is unambiguous.
PARTITION_TYPES = {"string": pa.string(), "large_string": pa.string(), "int8": pa.int8(),
                   "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
                   "date32[day]": pa.date32(), "bool": pa.bool_()}
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# The characters Spark escapes in partition folder names, so both name a value alike.
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(0x20)}


def partition_folder(column: str, value) -> str:
    """`col=value` as Spark and Hive name it (null: `__HIVE_DEFAULT_PARTITION__`). The text
    `__HIVE_DEFAULT_PARTITION__` itself is written `%5F_HIVE_DEFAULT_PARTITION__`, so it is not
    read back as null (readers compare the folder's name before decoding it)."""
    if value is None:
        return f"{column}={NULL_PARTITION}"
    text = str(value).lower() if isinstance(value, bool) else str(value)
    escaped = "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)
    return f"{column}=" + ("%5F" + escaped[1:] if escaped == NULL_PARTITION else escaped)


def partition_value(folder: str):
    """The value a folder `col=...` names, as `partition_folder` wrote it (`col=` is '')."""
    text = folder.split("=", 1)[1]
    return None if text == NULL_PARTITION else urllib.parse.unquote(text)


def files_dataset(files: Sequence[str], base: str, fs, schema: pa.Schema,
                  partition_by: Sequence[str]):
    """Files of a partitioned table under `base`, each with the values its folders name as
    `partition_value` reads them. pyarrow's own Hive reading decodes a folder's name before it
    compares it with `__HIVE_DEFAULT_PARTITION__`, so it would read the text as null."""
    import pyarrow.dataset as ds

    def known(file: str) -> pc.Expression:
        folders = file[len(base) + 1:].split("/")[:-1]
        expression = pc.scalar(True)
        for column, folder in zip(partition_by, folders):
            value = partition_value(folder)
            expression &= (pc.field(column).is_null() if value is None else
                           pc.field(column) == pa.scalar(value).cast(schema.field(column).type))
        return expression
    return ds.FileSystemDataset.from_paths(list(files), schema=schema, format=ds.ParquetFileFormat(),
                                           filesystem=fs, partitions=[known(f) for f in files])


def partition_path(partition_by: Sequence[str], values: Sequence) -> str:
    return "/".join(partition_folder(c, v) for c, v in zip(partition_by, values))


def check_partition_names(partition_by: Sequence[str]) -> None:
    """A partition column is a folder key (`col=value`): a name readers would split, decode or
    skip differently (`day=of` read back as nulls; `_x`, `.x` are hidden files) is refused."""
    for column in partition_by:
        bad = (not column or column[0] in "._" or any(c in "=/\\%" for c in column)
               or any(ord(c) < 0x20 or ord(c) == 0x7f for c in column))
        if bad:
            raise UsageError(f"--partition-by column {column!r} cannot name a Hive partition "
                             f"folder (no '=', '/', '\\', '%', control characters, leading '.' or "
                             f"'_', or empty name); rename the column")


def check_partition_columns(schema: pa.Schema, partition_by: Sequence[str]) -> None:
    for column in partition_by:
        kind = str(schema.field(column).type)
        if kind not in PARTITION_TYPES:
            raise UsageError(f"--partition-by column {column} is {kind}; partition by a string, "
                             f"integer, date or boolean column")


def partition_values(table: pa.Table, columns: Sequence[str]) -> list:
    rows = table.select(list(columns)).group_by(list(columns), use_threads=False).aggregate([])
    return [tuple(r[c] for c in columns) for r in rows.to_pylist()]


def rows_of(table: pa.Table, columns: Sequence[str], values: Sequence) -> pa.Array:
    mask = pa.array([True] * table.num_rows)
    for column, value in zip(columns, values):
        match = pc.is_null(table[column]) if value is None else pc.equal(table[column], value)
        mask = pc.and_(mask, pc.fill_null(match, False))
    return mask


def rows_outside(table: pa.Table, partition_by: Sequence[str], partitions: Sequence[str]) -> pa.Table:
    """The rows of `table` whose partition folder (`col=v/...`) is not one of `partitions`."""
    dropped = set(partitions)
    kept = [table.filter(rows_of(table, partition_by, values))
            for values in partition_values(table, partition_by)
            if partition_path(partition_by, values) not in dropped]
    return pa.concat_tables(kept) if kept else table.slice(0, 0)
