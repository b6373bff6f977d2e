"""BleuConfig: the metric's settings, with sacrebleu 2.6's defaults, validated once."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Tuple

from . import ranges
from .errors import ModelFileError, UsageError

# Tokenizer names as sacrebleu 2.6 spells them, plus `auto` (choose by target language).
TOKENIZERS = ("13a", "intl", "zh", "char", "none", "ja-mecab", "ko-mecab",
              "flores101", "flores200", "spBLEU-1K")
SPM_TOKENIZERS = ("flores101", "flores200", "spBLEU-1K")
AUTO = "auto"

# sacrebleu's per-target-language defaults (its `-l xx-yy` / `trg_lang` logic).
TOKENIZER_BY_TARGET_LANGUAGE = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}
DEFAULT_TOKENIZER = "13a"

# The highest n-gram order accepted (sacrebleu has no bound; why 10: `ranges`).
MAX_NGRAM_ORDER = ranges.RANGES["--max-ngram-order"][2]

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
        if self.smooth_value is not None:
            ranges.check("--smooth-value", self.smooth_value)
        ranges.check("--max-ngram-order", self.max_ngram_order)
        object.__setattr__(self, "weights", self._checked_weights())
        if self.tokenize in SPM_TOKENIZERS:
            self.require_spm_model(self.tokenize)

    def _checked_weights(self) -> Optional[Tuple[float, ...]]:
        if self.weights is None:
            return None
        weights = ranges.check_weights(self.weights)
        order = self.max_ngram_order
        if len(weights) != order:
            raise UsageError(f"{len(weights)} weights given for max n-gram order {order}; "
                             f"give exactly {order}")
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
