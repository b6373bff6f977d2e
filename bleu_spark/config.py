"""BleuConfig: the metric's settings, with sacrebleu 2.6's defaults, validated once."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Optional, Tuple

from .errors import ModelFileError, UsageError

# Tokenizer names as sacrebleu 2.6 spells them, plus `auto` (choose by target language).
TOKENIZERS = ("13a", "intl", "zh", "char", "none", "ja-mecab", "ko-mecab",
              "flores101", "flores200", "spBLEU-1K")
SPM_TOKENIZERS = ("flores101", "flores200", "spBLEU-1K")
AUTO = "auto"

# sacrebleu's per-target-language defaults (its `-l xx-yy` / `trg_lang` logic).
TOKENIZER_BY_TARGET_LANGUAGE = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}
DEFAULT_TOKENIZER = "13a"

# The highest n-gram order accepted. sacrebleu has no bound, but BLEU is defined up to 4 (NIST
# used 5) and orders past 10 say nothing more: only segments of 10+ tokens have any such n-gram,
# and each order adds two columns to every statistics row and one counting pass per batch.
MAX_NGRAM_ORDER = 10

# Smoothing method -> default smoothing value (None: the method takes no value).
SMOOTH_DEFAULTS = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}


def target_language(langpair: Optional[str]) -> str:
    """`en-ja` -> `ja`; anything without a dash (or null) has no known target language."""
    if not langpair or "-" not in langpair:
        return ""
    return langpair.split("-", 1)[1]


@dataclass(frozen=True)
class BleuConfig:
    tokenize: str = AUTO
    lowercase: bool = False
    smooth_method: str = "exp"
    smooth_value: Optional[float] = None
    max_ngram_order: int = 4
    effective_order: bool = False
    # Non-uniform n-gram weights w_1..w_N; None means standard BLEU (uniform weights).
    weights: Optional[Tuple[float, ...]] = None
    # Local SentencePiece model for flores101 / flores200 / spBLEU-1K.
    spm_model: Optional[str] = None

    def __post_init__(self):
        if self.tokenize != AUTO and self.tokenize not in TOKENIZERS:
            raise UsageError(f"unknown tokenizer {self.tokenize!r}; "
                             f"choose one of: auto, {', '.join(TOKENIZERS)}")
        if self.smooth_method not in SMOOTH_DEFAULTS:
            raise UsageError(f"unknown smoothing method {self.smooth_method!r}; "
                             f"choose one of: {', '.join(SMOOTH_DEFAULTS)}")
        if self.smooth_value is not None and not (
                isinstance(self.smooth_value, (int, float)) and math.isfinite(self.smooth_value)
                and self.smooth_value >= 0):
            raise UsageError(f"smooth value must be a non-negative number, got {self.smooth_value!r}")
        if (not isinstance(self.max_ngram_order, int) or isinstance(self.max_ngram_order, bool)
                or not 1 <= self.max_ngram_order <= MAX_NGRAM_ORDER):
            raise UsageError(f"max n-gram order must be an integer from 1 to {MAX_NGRAM_ORDER}, "
                             f"got {self.max_ngram_order!r}")
        object.__setattr__(self, "weights", self._checked_weights())
        if self.tokenize in SPM_TOKENIZERS:
            self.require_spm_model(self.tokenize)

    def _checked_weights(self) -> Optional[Tuple[float, ...]]:
        if self.weights is None:
            return None
        weights = tuple(float(w) for w in self.weights)
        order = self.max_ngram_order
        if len(weights) != order:
            raise UsageError(f"{len(weights)} weights given for max n-gram order {order}; "
                             f"give exactly {order}")
        if any(not math.isfinite(w) or w < 0 for w in weights) or abs(sum(weights) - 1) > 1e-6:
            raise UsageError(f"weights must be non-negative and sum to 1, got {','.join(map(str, weights))}")
        # Uniform weights are standard BLEU: keep sacrebleu's exact arithmetic and signature.
        if all(abs(w - 1 / order) < 1e-12 for w in weights):
            return None
        return weights

    def require_spm_model(self, tokenizer: str) -> str:
        if not self.spm_model:
            raise ModelFileError(f"tokenizer {tokenizer} needs a SentencePiece model file: "
                                 f"pass --spm-model PATH (executors cannot download it)")
        if not os.path.isfile(self.spm_model):
            raise ModelFileError(f"SentencePiece model file not found: {self.spm_model}")
        # Loaded once here, on the driver: a file that is not a model fails now with one line,
        # not on every executor as a traceback.
        from .tokenizers import build_tokenizer

        build_tokenizer(tokenizer, self.spm_model)
        return self.spm_model

    def tokenizer_for(self, langpair: Optional[str]) -> str:
        """The tokenizer for rows of this language pair, as sacrebleu's `-l` would pick it."""
        if self.tokenize != AUTO:
            return self.tokenize
        return TOKENIZER_BY_TARGET_LANGUAGE.get(target_language(langpair), DEFAULT_TOKENIZER)

    @property
    def effective_smooth_value(self) -> Optional[float]:
        if self.smooth_value is None:
            return SMOOTH_DEFAULTS[self.smooth_method]
        return self.smooth_value
