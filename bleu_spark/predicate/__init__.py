"""`aggregate --where`: a row filter over the statistics table, not SQL.

The text is parsed by sqlglot into a small tree of allowed forms (columns, literals, comparisons,
AND/OR/NOT, IN, BETWEEN, IS NULL, LIKE); anything else is refused with one line before any data
is read. Handing the text to an engine would run whatever it holds (file reads, Java methods,
subqueries) and echo the engine's messages, which may quote the files it read. Both engines
evaluate the same tree through `evaluate` with SQL's three-valued logic: a row whose predicate
is null is dropped, as by a WHERE clause.
"""
from .arrow import arrow_kinds, to_arrow
from .binding import bind
from .evaluation import OPERATORS, evaluate
from .grammar import MAX_IN_VALUES, MAX_NESTING, MAX_TERMS, parse
from .like import like_regex
from .tree import Col, Lit, Predicate

__all__ = ["Predicate", "Col", "Lit", "parse", "bind", "evaluate", "OPERATORS", "like_regex",
           "arrow_kinds", "to_arrow", "MAX_NESTING", "MAX_TERMS", "MAX_IN_VALUES"]
