"""Parsing a `--where` text into the tree of allowed forms, within bounds, before any data is
read; anything else is refused with one line."""
from __future__ import annotations

import datetime
import re

from ..errors import UsageError
from .like import plain_escapes
from .tree import Between, Col, Compare, In, IsNull, Like, Lit, Logic, Not, Predicate, refuse

_COMPARISONS = {"EQ": "=", "NEQ": "<>", "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">="}  # sqlglot's
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?(Z|[+-]\d{2}:\d{2})?")

# What a filter may hold. The parser and the tree walks recurse once per nesting level and per
# AND/OR term, and pyarrow evaluates an expression tree recursively in C++: past these a filter
# (which a dashboard back end may build from user input) would end in a RecursionError or crash
# the process. Each is far past what a person writes.
MAX_NESTING = 16        # parentheses open at once; NOTs in a row
MAX_TERMS = 200         # conditions joined by AND / OR
MAX_IN_VALUES = 10_000  # values of one IN list


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
        raise refuse("it nests too deeply (parentheses and NOTs together; write it with "
                     "fewer levels)") from None
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
    if isinstance(pattern.value, str) and not plain_escapes(pattern.value):
        raise refuse("in a LIKE pattern a backslash escapes only %, _ or a backslash")
    return pattern


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
        return Lit(date_literal(node.this.this))   # DATE 'YYYY-MM-DD' (CAST( and :: never get here)
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


def date_literal(text: str) -> datetime.date:
    try:
        if _DATE.fullmatch(text):
            return datetime.date.fromisoformat(text)
    except ValueError:
        pass
    raise refuse("a date literal is not a YYYY-MM-DD date")


def timestamp_literal(text: str) -> datetime.datetime:
    """'YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]' with an optional 'Z' or +HH:MM, compared with a
    timestamp column (`window_start`): the instant, in UTC; a time without a zone is UTC."""
    try:
        if _TIMESTAMP.fullmatch(text):
            value = datetime.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
            zone = value.tzinfo or datetime.timezone.utc
            return value.replace(tzinfo=zone).astimezone(datetime.timezone.utc)
    except ValueError:
        pass
    raise refuse("a timestamp literal is not 'YYYY-MM-DD HH:MM:SS' (UTC unless it ends in Z or "
                 "+HH:MM)")


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
