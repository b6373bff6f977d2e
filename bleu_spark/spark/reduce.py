"""Spark's reduction of statistics, built from each `StatColumn`'s declared type and combine
(`metrics/combine.py` builds numpy's and pyarrow's): nothing here names a metric."""
from __future__ import annotations

from typing import List, Sequence

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..metrics.base import StatColumn
from .names import column

SPARK_TYPES = {pa.int64(): T.LongType(), pa.float64(): T.DoubleType()}
_FUNCTIONS = {"sum": F.sum, "min": F.min, "max": F.max}


def spark_fields(columns: Sequence[StatColumn]) -> List[T.StructField]:
    return [T.StructField(c.name, SPARK_TYPES[c.type]) for c in columns]


def aggregations(columns: Sequence[StatColumn]) -> List[Column]:
    """`groupBy(...).agg(...)`'s columns for these statistics, each combined as it declares."""
    return [_FUNCTIONS[c.combine](column(c.name)).alias(c.name) for c in columns]
