"""The tree of a `--where` filter: the forms it may hold, and the refusal that names them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Tuple

from ..errors import UsageError

GRAMMAR = ("columns, literals ('text', 12, 1.5, TRUE, FALSE, NULL, DATE 'YYYY-MM-DD'), "
           "= <> != < <= > >=, AND, OR, NOT, IN (...), BETWEEN, IS [NOT] NULL, [NOT] LIKE")


# Operands of comparisons are columns or literals; NOT x IN / BETWEEN / LIKE / IS NULL are
# Not(...) of the positive form, which is what SQL defines them to be.
@dataclass(frozen=True)
class Col:
    name: str


@dataclass(frozen=True)
class Lit:
    value: Any          # None, bool, int, float, str or datetime.date


@dataclass(frozen=True)
class _Binary:
    op: str
    left: Any
    right: Any


class Compare(_Binary):
    """`op` is one of = <> < <= > >=."""


class Logic(_Binary):
    """`op` is "and" or "or"."""


# The forms on one operand: each its own class (the tree walks tell them apart by type), alike
# in fields.
@dataclass(frozen=True)
class _OnOperand:
    operand: Any


class Not(_OnOperand):
    pass


class IsNull(_OnOperand):
    pass


@dataclass(frozen=True)
class In(_OnOperand):
    values: Tuple[Lit, ...]


@dataclass(frozen=True)
class Between(_OnOperand):
    low: Any
    high: Any


@dataclass(frozen=True)
class Like(_OnOperand):
    pattern: Lit


@dataclass(frozen=True)
class Predicate:
    text: str
    tree: Any

    def columns(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(_columns(self.tree)))


def refuse(what: str) -> UsageError:
    return UsageError(f"bad --where predicate: {what}; it may use {GRAMMAR}")


def _columns(tree):
    if isinstance(tree, Col):
        yield tree.name
    elif not isinstance(tree, Lit):
        for value in vars(tree).values():
            for item in value if isinstance(value, tuple) else (value,):
                if not isinstance(item, str):
                    yield from _columns(item)
