"""A parsed `--where` filter checked against a table: the columns it may name, each literal of
its column's kind, and decimals against integer columns turned into integer comparisons."""
from __future__ import annotations

import datetime
import math
from dataclasses import replace
from typing import Mapping, Sequence

from ..errors import UsageError
from .grammar import date_literal, timestamp_literal
from .tree import Between, Col, Compare, In, IsNull, Like, Lit, Logic, Not, Predicate, refuse

_FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


def bind(predicate: Predicate, kinds: Mapping[str, str], allowed: Sequence[str]) -> Predicate:
    """The predicate checked against a table: every column one it may name (`allowed`), every
    literal of its column's kind (`kinds`: column -> string, integer, boolean, date or other);
    'YYYY-MM-DD' strings compared with a date column become dates."""
    for name in predicate.columns():
        if name not in allowed:
            why = ("is not a column of the statistics" if name not in kinds else
                   "may not be filtered on (cutting a group's counts, sums or replicates would "
                   "change its counts and intervals)")
            raise UsageError(f"bad --where predicate: {name} {why}; columns it may name: "
                             f"{', '.join(allowed) or 'none'}")
    return replace(predicate, tree=_bound(predicate.tree, kinds))


def _bound(tree, kinds):
    if isinstance(tree, Logic):
        return Logic(tree.op, _bound(tree.left, kinds), _bound(tree.right, kinds))
    if isinstance(tree, Not):
        return Not(_bound(tree.operand, kinds))
    if isinstance(tree, Col):
        if kinds[tree.name] != "boolean":
            raise UsageError(f"bad --where predicate: {tree.name} is not a boolean column; "
                             f"compare it with a value")
        return tree
    if isinstance(tree, IsNull):
        return IsNull(_needs_column(tree.operand, "IS NULL"))
    if isinstance(tree, Compare):
        if isinstance(tree.left, Lit):   # column on the left: 'x' = c is c = 'x'
            tree = Compare(_FLIPPED[tree.op], tree.right, tree.left)
        if not isinstance(tree.left, Col):
            raise refuse("a comparison needs a column on one side")
        return _integral(replace(tree, right=_typed(tree.left, tree.right, kinds)))
    if isinstance(tree, Between):
        operand = _needs_column(tree.operand, "BETWEEN")
        low, high = _typed(operand, tree.low, kinds), _typed(operand, tree.high, kinds)
        if isinstance(low.value, float) or isinstance(high.value, float):   # as x >= a AND x <= b
            return Logic("and", _integral(Compare(">=", operand, low)),
                         _integral(Compare("<=", operand, high)))
        return Between(operand, low, high)
    if isinstance(tree, In):
        operand = _needs_column(tree.operand, "IN")
        return _integral_in(In(operand, tuple(_typed(operand, v, kinds) for v in tree.values)))
    if isinstance(tree, Like):
        operand = _needs_column(tree.operand, "LIKE")
        if kinds[operand.name] != "string":
            raise _mismatch(operand, kinds, "a LIKE pattern")
        return tree
    raise AssertionError(tree)


def _integral(compare: Compare):
    """An integer column compared with a decimal literal (`batch > 1.5`, `batch = 1.0`) as the
    same comparison with integers, SQL's meaning: both engines then compare integers with
    integers (pyarrow's dataset filter cannot cast 1.5 to an integer column; Spark would compare
    in doubles), and a null row stays null."""
    value = compare.right.value
    if not isinstance(value, float):
        return compare
    column, op = compare.left, compare.op
    if value > INT64_MAX or value < INT64_MIN:   # past every value of the column
        above = value > 0
        always = op in (("<", "<=", "<>") if above else (">", ">=", "<>"))
        return _true_unless_null(column) if always else _false_unless_null(column)
    floor, ceil = math.floor(value), math.ceil(value)
    if floor == ceil:
        return Compare(op, column, Lit(floor))
    if op in ("=", "<>"):   # no integer equals 1.5
        return _false_unless_null(column) if op == "=" else _true_unless_null(column)
    bound = {">": floor, ">=": ceil, "<": ceil, "<=": floor}[op]
    return Compare(op, column, Lit(bound))


def _false_unless_null(column: Col):
    """False for every value of an integer column, null for a null: `x > 0 AND x < 0`."""
    return Logic("and", Compare(">", column, Lit(0)), Compare("<", column, Lit(0)))


def _true_unless_null(column: Col):
    return Not(_false_unless_null(column))


def _integral_in(tree: In):
    """`x IN (1.0, 1.5)` on an integer column: 1.0 is 1, and 1.5 matches nothing."""
    if not any(isinstance(v.value, float) for v in tree.values):
        return tree
    kept = [Lit(int(v.value)) if isinstance(v.value, float) else v for v in tree.values
            if not isinstance(v.value, float) or (v.value.is_integer()
                                                  and INT64_MIN <= v.value <= INT64_MAX)]
    return In(tree.operand, tuple(kept)) if kept else _false_unless_null(tree.operand)


def _needs_column(operand, form: str) -> Col:
    if not isinstance(operand, Col):
        raise refuse(f"{form} needs a column on its left")
    return operand


# The column kind each literal compares with (a decimal with an integer column, as in SQL).
_LITERAL_KINDS = {bool: "boolean", int: "integer", float: "integer", str: "string",
                  datetime.date: "date", datetime.datetime: "timestamp"}


def _typed(column: Col, literal, kinds) -> Lit:
    if not isinstance(literal, Lit):
        raise refuse("comparing two columns is not allowed: compare a column with literals")
    kind = kinds[column.name]
    if literal.value is None:
        return literal
    if kind == "date" and isinstance(literal.value, str):
        return Lit(date_literal(literal.value))
    if kind == "timestamp" and isinstance(literal.value, str):
        return Lit(timestamp_literal(literal.value))
    if _LITERAL_KINDS[type(literal.value)] != kind:
        raise _mismatch(column, kinds, _describe(literal.value))
    return literal


def _describe(value) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            datetime.date: "a date", datetime.datetime: "a timestamp"}[type(value)]


def _mismatch(column: Col, kinds, what: str) -> UsageError:
    kind = kinds[column.name]
    if kind == "other":
        return UsageError(f"bad --where predicate: {column.name} has a type --where does not "
                          f"compare (string, integer, boolean, date and timestamp columns do; IS NULL "
                          f"takes any)")
    article = "an" if kind[0] in "aeiou" else "a"
    return UsageError(f"bad --where predicate: {column.name} is {article} {kind} column, "
                      f"compared with {what}")
