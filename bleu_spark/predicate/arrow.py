"""The pyarrow side of `--where`: a table's column kinds, and the filter as a pyarrow compute
Expression (a dataset's row filter)."""
from __future__ import annotations

import datetime

import pyarrow as pa
import pyarrow.compute as pc

from .evaluation import OPERATORS, evaluate
from .tree import Predicate


def arrow_kinds(schema: pa.Schema) -> dict:
    return {f.name: _arrow_kind(f.type) for f in schema}


def _arrow_kind(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return _arrow_kind(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_integer(t):
        return "integer"
    # Floating columns stay out: NaN compares differently on pyarrow and Spark. A timestamp
    # with a zone is an instant, compared with literals read as UTC (one without is not).
    if pa.types.is_timestamp(t) and t.tz is not None:
        return "timestamp"
    return {pa.bool_(): "boolean", pa.date32(): "date", pa.date64(): "date"}.get(t, "other")


class ArrowEngine:
    """The primitives as pyarrow compute Expressions (Kleene logic for AND, OR)."""

    def column(self, name):
        return pc.field(name)

    def literal(self, value):
        return pc.scalar(value)

    def unknown(self):
        return pc.scalar(pa.scalar(None, pa.bool_()))

    def compare(self, op, left, right):
        return OPERATORS[op](left, right)

    def and_(self, left, right):
        return pc.and_kleene(left, right)

    def or_(self, left, right):
        return pc.or_kleene(left, right)

    def not_(self, operand):
        return pc.invert(operand)

    def is_null(self, operand):
        return pc.is_null(operand)

    def like(self, operand, pattern):
        return pc.match_like(operand, pattern=pattern)

    def isin(self, operand, values):
        # One set lookup: pyarrow simplifies a chain of 10,000 ORs (balanced or not) into a
        # crash. The column is cast to the literals' type (a widening: int64, string, date32,
        # bool), never the list to the column's. is_in gives false for a null x where SQL gives
        # null: `x <> x` is false for every value and null for a null.
        value_set = pa.array(values, _SET_TYPES[type(values[0])])
        found = pc.is_in(operand.cast(value_set.type), value_set=value_set)
        return self.or_(found, self.compare("<>", operand, operand))


# The type of an IN list's values on pyarrow, by the type of its (bound) literals.
_SET_TYPES = {int: pa.int64(), str: pa.string(), bool: pa.bool_(), datetime.date: pa.date32(),
              datetime.datetime: pa.timestamp("us", tz="UTC")}


def to_arrow(predicate: Predicate) -> pc.Expression:
    return evaluate(predicate.tree, ArrowEngine())
