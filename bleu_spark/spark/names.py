"""Column names from the data as Spark references. A name given as a string is parsed by Spark
(`a.b` is field `b` of struct `a`, a backtick starts a quoted part), so every name the input or
the options bring is quoted here: a dot or a backtick in it stays part of the name."""
from __future__ import annotations

from typing import Callable, Iterable, Iterator, List

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T


def identifier(name: str) -> str:
    """`name` as one quoted SQL identifier (a backtick inside doubled)."""
    return "`" + name.replace("`", "``") + "`"


def column(name: str) -> Column:
    return F.col(identifier(name))


def columns(names: Iterable[str]) -> List[Column]:
    return [column(n) for n in names]


def map_in_arrow(frame: DataFrame, function: Callable[[Iterator[pa.RecordBatch]], Iterator],
                 schema: T.StructType) -> DataFrame:
    """`frame.mapInArrow(function, schema)` whatever its column names: pyspark refers to each
    input column by its bare name (`frame[name]`), which a backtick or dot breaks, so the frame
    goes in under positional names and `function` sees its batches under the real ones."""
    names = frame.columns
    plain = frame.toDF(*[f"_{i}" for i in range(len(names))])
    return plain.mapInArrow(_renamed(function, names), schema)


def _renamed(function, names: List[str]):
    def run(batches):
        return function(b.rename_columns(names) for b in batches)

    return run
