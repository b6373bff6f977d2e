"""BLEU's options, with sacrebleu 2.6's defaults, declared once (`OPTIONS`), and `BleuConfig`:
them, validated once. How the text is tokenized is the run's text settings
(`languages.TextSettings`), not BLEU's."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

from ...declaration import (BLEU_MEASUREMENT, BLEU_SCORING, BOOLEAN, BOTH, INTEGER, NUMBER, NUMBERS,
                           STRING, Option, check_weights)
from ...errors import UsageError

# Smoothing method -> default smoothing value (None: the method takes no value).
SMOOTH_DEFAULTS = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}

# BLEU's options. Measuring ones change the statistics; scoring ones only the score, so
# `aggregate` takes them too.
OPTIONS = (
    Option("lowercase", BOOLEAN, False, group=BLEU_MEASUREMENT,
           help="lowercase candidates and references"),
    Option("smooth_method", STRING, "exp", group=BLEU_SCORING, commands=BOTH, metavar="NAME",
           help=f"one of {', '.join(SMOOTH_DEFAULTS)} (default: exp)"),
    Option("smooth_value", NUMBER, group=BLEU_SCORING, commands=BOTH, bounds=(False, 0, math.inf),
           help="value for floor (0.1) or add-k (1)",
           read_with=(("smooth_method", tuple(m for m, v in SMOOTH_DEFAULTS.items() if v is not None)),)),
    Option("effective_order", BOOLEAN, False, group=BLEU_SCORING, commands=BOTH,
           help="leave out orders with no n-grams (off for corpus BLEU)"),
    Option("weights", NUMBERS, group=BLEU_SCORING, commands=BOTH,
           help="comma-separated n-gram weights w1,...,wN (default: uniform)"),
    # BLEU is defined up to 4 (NIST used 5); past 10 only segments of 10+ tokens have such
    # n-grams, while each order adds two statistics columns and a counting pass.
    Option("max_ngram_order", INTEGER, 4, group=BLEU_MEASUREMENT, bounds=(True, 1, 10),
           help="highest n-gram order (default: 4)"),
)
_OPTION = {o.key: o for o in OPTIONS}

# The highest n-gram order accepted (sacrebleu has no bound).


@dataclass(frozen=True)
class BleuConfig:
    """BLEU's options (`OPTIONS`, with their defaults)."""
    lowercase: bool = _OPTION["lowercase"].default
    smooth_method: str = _OPTION["smooth_method"].default
    smooth_value: Optional[float] = _OPTION["smooth_value"].default
    max_ngram_order: int = _OPTION["max_ngram_order"].default
    effective_order: bool = _OPTION["effective_order"].default
    # Non-uniform n-gram weights w_1..w_N; None means standard BLEU (uniform weights).
    weights: Optional[Tuple[float, ...]] = _OPTION["weights"].default

    def __post_init__(self):
        if self.smooth_method not in SMOOTH_DEFAULTS:
            raise UsageError(f"unknown smoothing method {self.smooth_method!r}; "
                             f"choose one of: {', '.join(SMOOTH_DEFAULTS)}")
        if self.smooth_value is not None:
            _OPTION["smooth_value"].check(self.smooth_value)
        _OPTION["max_ngram_order"].check(self.max_ngram_order)
        object.__setattr__(self, "weights", self._checked_weights())

    @classmethod
    def from_settings(cls, values: Mapping[str, Any]) -> "BleuConfig":
        """BLEU's options among a run's option values (`settings`)."""
        return cls(lowercase=bool(values["lowercase"]),
                   smooth_method=values["smooth_method"], smooth_value=values["smooth_value"],
                   max_ngram_order=values["max_ngram_order"],
                   effective_order=bool(values["effective_order"]), weights=values["weights"])

    def _checked_weights(self) -> Optional[Tuple[float, ...]]:
        if self.weights is None:
            return None
        weights = check_weights(self.weights)
        order = self.max_ngram_order
        if len(weights) != order:
            raise UsageError(f"{len(weights)} weights given for max n-gram order {order}; "
                             f"give exactly {order}")
        # Uniform weights are standard BLEU: keep sacrebleu's exact arithmetic and signature.
        if all(abs(w - 1 / order) < 1e-12 for w in weights):
            return None
        return weights

    @property
    def effective_smooth_value(self) -> Optional[float]:
        if self.smooth_value is None:
            return SMOOTH_DEFAULTS[self.smooth_method]
        return self.smooth_value
