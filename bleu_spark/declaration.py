"""What an option's declaration holds: the `Option` type, the kinds of value a job file may hold,
the commands and help groups, and the range checks. The ground floor of the options: the run's
are declared in `settings.py`, each metric's in its own module."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .errors import UsageError

# What the YAML job file may hold for a key; the words are those its errors use.
STRING, BOOLEAN, INTEGER, NUMBER = "string", "boolean", "integer", "number"
COLUMNS = "string or list of strings"
NUMBERS = "string or list of numbers"
SETS = "string or list of (string or list of strings)"

SCORE, AGGREGATE, GATE = "score", "aggregate", "gate"
BOTH = (SCORE, AGGREGATE)

# Help groups, in the order the help lists them.
INPUT = "input and output"
SHOWING = "groups and output"
BLEU_SCORING = "BLEU scoring (as sacrebleu's options)"
RESAMPLING = "confidence intervals and paired tests"
BLEU_MEASUREMENT = "BLEU measurement (as sacrebleu's options)"
METRICS = "metrics (chrF's and TER's options as sacrebleu's)"
MORE_RESAMPLING = "resampling (with --confidence, --paired-bs, --paired-ar)"
GROUPS = (INPUT, SHOWING, BLEU_SCORING, RESAMPLING, BLEU_MEASUREMENT, METRICS, MORE_RESAMPLING)

INT64_MAX = 2 ** 63 - 1


@dataclass(frozen=True)
class Option:
    key: str                                   # the job file's key, the parsed value's name
    kind: str                                  # what the job file may hold (STRING, ...)
    default: Any = None
    help: str = ""
    group: str = INPUT
    commands: Tuple[str, ...] = (SCORE,)
    metavar: Optional[str] = None
    choices: Optional[Tuple[str, ...]] = None
    # (integer?, lowest, highest), both ends allowed: later code relies on these bounds (a
    # seed goes into int64 columns, sample counts size matrices, an order sets a width).
    bounds: Optional[Tuple[bool, float, float]] = None
    field: Optional[str] = None                # a metric's option: its field in the metric's options
    job_file: bool = True                      # False: command line only (--config, --where)
    required: bool = False                     # on the command line (a job-file key is checked later)
    # A metric option its metric reads only when another option of the run has one of these
    # values (--ter-asian-support: with --ter-normalized or --ter-no-punct): (key, values), any.
    read_with: Tuple[Tuple[str, Tuple[Any, ...]], ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.key.replace("_", "-")

    @property
    def metric_field(self) -> str:
        return self.field or self.key

    def check(self, value) -> None:
        """`value` is in the option's range, else one line naming both."""
        integer, low, high = self.bounds
        if not _within(value, integer, low, high):
            kind = "an integer" if integer else "a number"
            span = (f"of at least {low}" if high == math.inf
                    else f"from {low} to {high if integer else int(high)}")
            raise UsageError(f"{self.flag} must be {kind} {span}, got {value!r}")


def _finite(value) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer past the largest float
        return False


def _within(value, integer: bool, low, high) -> bool:
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        return False
    return (integer or _finite(value)) and low <= value <= high


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_columns(value) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


# A job-file value of each kind (YAML gives any type): "no" is a string, not False.
KIND_CHECKS: Dict[str, Callable[[Any], bool]] = {
    STRING: lambda v: isinstance(v, str),
    BOOLEAN: lambda v: isinstance(v, bool),
    INTEGER: lambda v: isinstance(v, int) and not isinstance(v, bool),
    NUMBER: _is_number,
    COLUMNS: _is_columns,
    NUMBERS: lambda v: isinstance(v, str) or (isinstance(v, list) and all(map(_is_number, v))),
    SETS: lambda v: isinstance(v, str) or (isinstance(v, list) and all(map(_is_columns, v))),
}


def split_list(text: str) -> List[str]:
    """`"a, b,,c"` -> `["a", "b", "c"]`: a comma-separated value of the command line or job file."""
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_grouping_sets(value) -> Optional[tuple]:
    """`"testset,langpair,system;langpair;()"` (or a YAML list of lists) -> tuples of columns;
    `()` is the whole table as one group."""
    if value is None:
        return None
    parts = value.split(";") if isinstance(value, str) else list(value)
    sets = []
    for part in parts:
        if isinstance(part, str):
            part = part.strip()
            if not part:
                continue
            part = [] if part == "()" else split_list(part)
        sets.append(tuple(part))
    if not sets:
        raise UsageError("--grouping-sets needs at least one set, e.g. 'langpair,system;langpair'")
    return tuple(sets)


def _listed(value) -> tuple:
    return tuple(split_list(value) if isinstance(value, str) else value)


# A given value (a flag's text, a job file's YAML) as the options objects hold it: each kind's
# conversion, done once for every command. Not given (None) stays None.
CONVERSIONS: Dict[str, Callable[[Any], Any]] = {
    BOOLEAN: bool, COLUMNS: _listed, NUMBERS: _listed, SETS: parse_grouping_sets,
}


def convert(kind: str, value):
    """`value` of an option of `kind` as the options objects hold it (None: not given)."""
    return value if value is None else CONVERSIONS.get(kind, lambda v: v)(value)


def check_weights(weights: Optional[Sequence]) -> Optional[Tuple[float, ...]]:
    """N-gram weights as floats: each finite and non-negative, their sum 1 (the count must match
    the max n-gram order, known to BLEU's options or from the statistics)."""
    if weights is None:
        return None
    try:
        values = tuple(float(w) for w in weights)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"--weights must be comma-separated numbers, got {weights!r}") from None
    if any(not math.isfinite(w) or w < 0 for w in values) or abs(sum(values) - 1) > 1e-6:
        shown = ",".join(map(str, values)) or "none"
        raise UsageError(f"--weights must be non-negative and sum to 1, got {shown}")
    return values
