"""`aggregate --where`: a row filter over the statistics table, not SQL.

The text is parsed by sqlglot into a small tree of allowed forms (columns, literals, comparisons,
AND/OR/NOT, IN, BETWEEN, IS NULL, LIKE); anything else is refused with one line before any data
is read. Handing the text to an engine would run whatever it holds (file reads, Java methods,
subqueries) and echo the engine's messages, which may quote the files it read. Both engines
evaluate the same tree through `evaluate` with SQL's three-valued logic: a row whose predicate
is null is dropped, as by a WHERE clause.
"""
from __future__ import annotations

import datetime
import math
import operator
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .errors import UsageError

GRAMMAR = ("columns, literals ('text', 12, 1.5, TRUE, FALSE, NULL, DATE 'YYYY-MM-DD'), "
           "= <> != < <= > >=, AND, OR, NOT, IN (...), BETWEEN, IS [NOT] NULL, [NOT] LIKE")
_COMPARISONS = {"EQ": "=", "NEQ": "<>", "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">="}  # sqlglot's
# Expressions and Spark Columns both overload these.
OPERATORS = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le,
             ">": operator.gt, ">=": operator.ge}
_FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

# What a filter may hold. The parser and the tree walks recurse once per nesting level and per
# AND/OR term, and pyarrow evaluates an expression tree recursively in C++: past these a filter
# (which a dashboard back end may build from user input) would end in a RecursionError or crash
# the process. Each is far past what a person writes.
MAX_NESTING = 16        # parentheses open at once; NOTs in a row
MAX_TERMS = 200         # conditions joined by AND / OR
MAX_IN_VALUES = 10_000  # values of one IN list
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


# The tree. Operands of comparisons are columns or literals; NOT x IN / BETWEEN / LIKE / IS NULL
# are Not(...) of the positive form, which is what SQL defines them to be.
@dataclass(frozen=True)
class Col:
    name: str


@dataclass(frozen=True)
class Lit:
    value: Any          # None, bool, int, float, str or datetime.date


@dataclass(frozen=True)
class Compare:
    op: str
    left: Any
    right: Any


@dataclass(frozen=True)
class Logic:
    op: str             # "and" or "or"
    left: Any
    right: Any


@dataclass(frozen=True)
class Not:
    operand: Any


@dataclass(frozen=True)
class In:
    operand: Any
    values: Tuple[Lit, ...]


@dataclass(frozen=True)
class Between:
    operand: Any
    low: Any
    high: Any


@dataclass(frozen=True)
class IsNull:
    operand: Any


@dataclass(frozen=True)
class Like:
    operand: Any
    pattern: Lit


@dataclass(frozen=True)
class Predicate:
    text: str
    tree: Any

    def columns(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(_columns(self.tree)))


def refuse(what: str) -> UsageError:
    return UsageError(f"bad --where predicate: {what}; it may use {GRAMMAR}")


# ---- parsing -------------------------------------------------------------------------------

def parse(text: str) -> Predicate:
    """The allowed tree of `text`, or a one-line UsageError naming what is not allowed."""
    import sqlglot   # here, not at the top: a third of a second, paid only with --where
    from sqlglot.errors import ParseError, TokenError

    if not text.strip():
        raise refuse("it is empty")
    dialect = sqlglot.Dialect.get_or_raise(None)   # standard SQL: "name" is a column
    try:
        tokens = dialect.tokenize(text)
        _check_tokens(tokens)
        _check_bounds(tokens)
        statements = dialect.parser().parse(tokens, text)
    except RecursionError:   # a backstop: the bounds above keep well inside Python's stack
        # Parentheses and NOTs each within their bound can still nest too deep together.
        raise refuse(f"it nests too deeply (parentheses and NOTs together; write it with "
                     f"fewer levels)") from None
    except (ParseError, TokenError) as exc:
        # sqlglot's own message quotes the text around the error: give the place alone.
        first = (getattr(exc, "errors", None) or [{}])[0]
        at = f" (line {first.get('line', '?')}, column {first.get('col', '?')})" if first else ""
        raise refuse(f"it does not parse{at}") from None
    if len(statements) != 1 or statements[0] is None:
        raise refuse("it is not one expression")
    return Predicate(text, _condition(statements[0]))


def _check_tokens(tokens) -> None:
    """Refusals that read better from the tokens than from whatever sqlglot makes of them."""
    from sqlglot.tokens import TokenType

    for token, following in zip(tokens, [*tokens[1:], None]):
        if token.comments:
            raise refuse("comments are not allowed")
        if token.token_type == TokenType.SEMICOLON:
            raise refuse("several statements are not allowed")
        if token.token_type == TokenType.SELECT:
            raise refuse("subqueries are not allowed")
        if token.token_type == TokenType.DCOLON:
            raise refuse("casts are not allowed")
        if (token.token_type == TokenType.VAR and following is not None
                and following.token_type == TokenType.L_PAREN):
            name = token.text.lower()
            raise refuse("casts are not allowed" if name in ("cast", "try_cast", "safe_cast")
                         else f"function calls are not allowed ({name})")


def _check_bounds(tokens) -> None:
    """Nesting and AND/OR terms bounded before sqlglot parses (its parser recurses on both)."""
    from sqlglot.tokens import TokenType

    depth = deepest = nots = most_nots = joins = betweens = 0
    for token in tokens:
        kind = token.token_type
        depth += (kind == TokenType.L_PAREN) - (kind == TokenType.R_PAREN)
        deepest = max(deepest, depth)
        nots = nots + 1 if kind == TokenType.NOT else 0
        most_nots = max(most_nots, nots)
        joins += kind in (TokenType.AND, TokenType.OR)
        betweens += kind == TokenType.BETWEEN
    if deepest > MAX_NESTING:
        raise refuse(f"it nests parentheses {deepest} deep (at most {MAX_NESTING})")
    if most_nots > MAX_NESTING:
        raise refuse(f"it has {most_nots} NOTs in a row (at most {MAX_NESTING})")
    terms = joins - betweens + 1   # BETWEEN's AND joins no conditions
    if terms > MAX_TERMS:
        raise refuse(f"it joins {terms} conditions with AND / OR (at most {MAX_TERMS}; "
                     f"IN (...) takes many values of one column)")


def _condition(node):
    """A node that yields true, false or null for a row."""
    from sqlglot import exp

    comparisons = {getattr(exp, name): op for name, op in _COMPARISONS.items()}
    if isinstance(node, exp.Paren):
        return _condition(node.this)
    if isinstance(node, (exp.And, exp.Or)):
        op = "and" if isinstance(node, exp.And) else "or"
        return Logic(op, _condition(node.this), _condition(node.expression))
    if isinstance(node, exp.Not):
        return Not(_condition(node.this))
    if type(node) in comparisons:
        return Compare(comparisons[type(node)], _operand(node.this), _operand(node.expression))
    if isinstance(node, exp.In):
        return _in(node)
    if isinstance(node, exp.Between):
        return Between(_operand(node.this), _operand(node.args["low"]), _operand(node.args["high"]))
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            raise refuse("IS is allowed only as IS NULL or IS NOT NULL")
        return IsNull(_operand(node.this))
    if isinstance(node, exp.Like):
        like = Like(_operand(node.this), _like_pattern(node.expression))
        return Not(like) if node.args.get("negate") else like
    if isinstance(node, exp.Column):
        return _column(node)      # a boolean column on its own
    raise _not_allowed(node)


def _in(node) -> In:
    from sqlglot import exp

    if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
        raise refuse("subqueries are not allowed" if node.args.get("query")
                     else "IN takes a list of literals")
    values = node.expressions
    if not values:
        raise refuse("IN needs at least one value")
    if len(values) > MAX_IN_VALUES:
        raise refuse(f"an IN list has {len(values)} values (at most {MAX_IN_VALUES})")
    return In(_operand(node.this),
              tuple(_literal(v.this if isinstance(v, exp.Paren) else v) for v in values))


def _like_pattern(node) -> Lit:
    pattern = _literal(node)
    if pattern.value is not None and not isinstance(pattern.value, str):
        raise refuse("LIKE takes a string pattern in single quotes")
    if isinstance(pattern.value, str) and not _plain_escapes(pattern.value):
        raise refuse("in a LIKE pattern a backslash escapes only %, _ or a backslash")
    return pattern


def _plain_escapes(pattern: str) -> bool:
    """Whether each backslash escapes %, _ or a backslash: the escapes that mean the same on
    pyarrow (which lets a backslash escape any character) and Spark (which refuses the rest)."""
    at = pattern.find("\\")
    while at >= 0:
        if pattern[at + 1:at + 2] not in ("%", "_", "\\"):
            return False
        at = pattern.find("\\", at + 2)
    return True


def _operand(node):
    from sqlglot import exp

    if isinstance(node, exp.Paren):
        return _operand(node.this)
    if isinstance(node, exp.Column):
        return _column(node)
    return _literal(node)


def _column(node) -> Col:
    if node.args.get("table") or node.args.get("db") or node.args.get("catalog"):
        raise refuse("qualified column names (table.column) are not allowed")
    return Col(node.name)


def _literal(node) -> Lit:
    from sqlglot import exp

    if isinstance(node, exp.Null):
        return Lit(None)
    if isinstance(node, exp.Boolean):
        return Lit(bool(node.this))
    if isinstance(node, exp.Literal):
        return Lit(node.this if node.is_string else _number(node.this))
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return Lit(-_number(node.this.this))
    if (isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string
            and node.to.is_type(exp.DataType.Type.DATE)):
        return Lit(_date(node.this.this))   # DATE 'YYYY-MM-DD' (CAST( and :: never get here)
    if isinstance(node, exp.Column):
        raise refuse("comparing two columns is not allowed: compare a column with literals")
    raise _not_allowed(node)


def _number(text: str):
    if re.fullmatch(r"\d+", text):
        value = int(text)
        if value >= 2 ** 63:
            raise refuse("an integer literal is out of range")
        return value
    return float(text)


def _date(text: str) -> datetime.date:
    try:
        if _DATE.fullmatch(text):
            return datetime.date.fromisoformat(text)
    except ValueError:
        pass
    raise refuse("a date literal is not a YYYY-MM-DD date")


def like_regex(pattern: str) -> str:
    """A LIKE pattern as a Java regex that cannot backtrack for long. Spark's own LIKE becomes
    `.*a.*a.*z`, whose backtracking takes O(n^k) on a value of n characters (`%a%a%a%a%z` on
    300 characters: minutes; one more `%a`, hours). Here each part between two `%` is found at
    its leftmost place and kept there (an atomic group), which is right because every part has a
    fixed length (`_` is one character); the last part must end the value."""
    parts, part, at = [], [], 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":   # escapes %, _ or itself (`_plain_escapes`)
            part.append(_regex_char(pattern[at + 1]))
            at += 2
            continue
        if char == "%":
            parts.append("".join(part))
            part = []
        else:
            part.append("." if char == "_" else _regex_char(char))
        at += 1
    parts.append("".join(part))
    if len(parts) == 1:
        return f"(?s)^{parts[0]}\\z"   # \z: Java's $ also matches before a final newline
    middle = "".join(f"(?>.*?{p})" for p in parts[1:-1] if p)
    return f"(?s)^{parts[0]}{middle}.*{parts[-1]}\\z"


def _regex_char(char: str) -> str:
    return char if char.isascii() and char.isalnum() else f"\\x{{{ord(char):x}}}"


def _not_allowed(node) -> UsageError:
    from sqlglot import exp

    if isinstance(node, (exp.Query, exp.Subquery, exp.Exists)):
        return refuse("subqueries are not allowed")
    if isinstance(node, exp.Cast):
        return refuse("casts are not allowed (DATE 'YYYY-MM-DD' is the one typed literal)")
    if isinstance(node, exp.Func):
        name = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
        return refuse(f"function calls are not allowed ({name.lower()})")
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv, exp.Neg,
                         exp.DPipe, exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor, exp.BitwiseNot)):
        return refuse("arithmetic is not allowed")
    return refuse(f"{_NAMES.get(type(node).__name__, type(node).__name__)} is not allowed")


_NAMES = {"ILike": "ILIKE", "Escape": "LIKE ... ESCAPE (a backslash is the escape)",
          "Placeholder": "a parameter", "Parameter": "a parameter", "National": "N'...'",
          "Boolean": "a literal alone", "Literal": "a literal alone", "Null": "a literal alone"}


def _columns(tree):
    if isinstance(tree, Col):
        yield tree.name
    elif not isinstance(tree, Lit):
        for value in vars(tree).values():
            for item in value if isinstance(value, tuple) else (value,):
                if not isinstance(item, str):
                    yield from _columns(item)


# ---- checking against a table --------------------------------------------------------------

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
                  datetime.date: "date"}


def _typed(column: Col, literal, kinds) -> Lit:
    if not isinstance(literal, Lit):
        raise refuse("comparing two columns is not allowed: compare a column with literals")
    kind = kinds[column.name]
    if literal.value is None:
        return literal
    if kind == "date" and isinstance(literal.value, str):
        return Lit(_date(literal.value))
    if _LITERAL_KINDS[type(literal.value)] != kind:
        raise _mismatch(column, kinds, _describe(literal.value))
    return literal


def _describe(value) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            datetime.date: "a date"}[type(value)]


def _mismatch(column: Col, kinds, what: str) -> UsageError:
    kind = kinds[column.name]
    if kind == "other":
        return UsageError(f"bad --where predicate: {column.name} has a type --where does not "
                          f"compare (string, integer, boolean and date columns do; IS NULL "
                          f"takes any)")
    article = "an" if kind[0] in "aeiou" else "a"
    return UsageError(f"bad --where predicate: {column.name} is {article} {kind} column, "
                      f"compared with {what}")


def arrow_kinds(schema: pa.Schema) -> dict:
    return {f.name: _arrow_kind(f.type) for f in schema}


def _arrow_kind(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return _arrow_kind(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_integer(t):
        return "integer"
    # Floating columns stay out: NaN compares differently on pyarrow and Spark.
    return {pa.bool_(): "boolean", pa.date32(): "date", pa.date64(): "date"}.get(t, "other")


# ---- evaluating ----------------------------------------------------------------------------

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
_SET_TYPES = {int: pa.int64(), str: pa.string(), bool: pa.bool_(), datetime.date: pa.date32()}


def to_arrow(predicate: Predicate) -> pc.Expression:
    return evaluate(predicate.tree, ArrowEngine())
