"""Evaluating a bound tree on an engine: one walk for pyarrow and Spark, SQL's three-valued
logic (a row whose predicate is null is dropped, as by a WHERE clause)."""
from __future__ import annotations

import operator

from .tree import Between, Col, Compare, In, IsNull, Like, Lit, Logic, Not

# Expressions and Spark Columns both overload these.
OPERATORS = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le,
             ">": operator.gt, ">=": operator.ge}


def evaluate(tree, engine):
    """The tree as the engine's expression; `engine` gives the primitives (ArrowEngine, or
    Spark's in bleu_spark.spark.aggregate), so both engines walk one tree the same way."""
    if isinstance(tree, Logic):
        both = evaluate(tree.left, engine), evaluate(tree.right, engine)
        return engine.and_(*both) if tree.op == "and" else engine.or_(*both)
    if isinstance(tree, Not):
        return engine.not_(evaluate(tree.operand, engine))
    if isinstance(tree, Col):
        return engine.column(tree.name)
    if isinstance(tree, IsNull):
        return engine.is_null(engine.column(tree.operand.name))
    if isinstance(tree, Compare):
        return _compare(tree.op, tree.left, tree.right, engine)
    if isinstance(tree, Between):
        return engine.and_(_compare(">=", tree.operand, tree.low, engine),
                           _compare("<=", tree.operand, tree.high, engine))
    if isinstance(tree, In):
        return _in_list(tree, engine)
    if isinstance(tree, Like):
        if tree.pattern.value is None:
            return engine.unknown()
        return engine.like(engine.column(tree.operand.name), tree.pattern.value)
    raise AssertionError(tree)


def _compare(op: str, column: Col, literal: Lit, engine):
    if literal.value is None:   # anything compared with NULL is null
        return engine.unknown()
    return engine.compare(op, engine.column(column.name), engine.literal(literal.value))


def _in_list(tree: In, engine):
    """x IN (a, NULL) is true on a match and null otherwise, as in SQL."""
    known = [v.value for v in tree.values if v.value is not None]
    found = engine.isin(engine.column(tree.operand.name), known) if known else engine.unknown()
    return engine.or_(found, engine.unknown()) if len(known) < len(tree.values) else found
