"""The ranges numeric options must lie in, and their one check.

Later code relies on these bounds: the seed is written to Arrow int64 columns and into
signatures, sample counts size matrices held in memory, the n-gram order sets the statistics'
width, the progress interval is a thread's wait. Every options object (BleuConfig, Resampling,
JobOptions, AggregateOptions) checks its numbers here as it is built, so a value out of range is
one line and exit 2 before any work, whether it came from a flag, the YAML job file or the
Python API.
"""
from __future__ import annotations

import math
import threading
from typing import Optional, Sequence, Tuple

from .errors import UsageError

INT64_MAX = 2 ** 63 - 1

# option -> (integer?, lowest, highest); both ends allowed.
RANGES = {
    "--seed": (True, 0, INT64_MAX),
    "--n-bootstrap": (True, 1, 100_000),
    "--n-ar-trials": (True, 1, 100_000),
    # BLEU is defined up to 4 (NIST used 5); past 10 only segments of 10+ tokens have such
    # n-grams, while each order adds two statistics columns and a counting pass.
    "--max-ngram-order": (True, 1, 10),
    # chrF: sacrebleu has no bounds; each order costs three statistics columns and a pass.
    "--chrf-char-order": (True, 0, 10),
    "--chrf-word-order": (True, 0, 10),
    "--chrf-beta": (True, 0, 100),
    "--smooth-value": (False, 0, math.inf),
    "--progress-seconds": (False, 0, threading.TIMEOUT_MAX),
}


def _finite(value) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer past the largest float
        return False


def _within(value, integer: bool, low, high) -> bool:
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        return False
    return (integer or _finite(value)) and low <= value <= high


def check(option: str, value) -> None:
    """`value` is in the range of `option`, else one line naming both."""
    integer, low, high = RANGES[option]
    if not _within(value, integer, low, high):
        kind = "an integer" if integer else "a number"
        span = (f"of at least {low}" if high == math.inf
                else f"from {low} to {high if integer else int(high)}")
        raise UsageError(f"{option} must be {kind} {span}, got {value!r}")


def check_weights(weights: Optional[Sequence]) -> Optional[Tuple[float, ...]]:
    """N-gram weights as floats: each finite and non-negative, their sum 1 (the count must match
    the max n-gram order, known to BleuConfig or from the statistics)."""
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
