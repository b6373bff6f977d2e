"""sacrebleu 2.6's BLEU signature string, e.g. `nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0`."""
from __future__ import annotations

from typing import Optional, Union

from ..base import Signature
from .options import SMOOTH_DEFAULTS, BleuConfig


def bleu_fields(config: BleuConfig, tokenizer_signature: str) -> tuple:
    """BLEU's own fields of its `Signature`, in sacrebleu's order."""
    smooth = config.smooth_method
    if SMOOTH_DEFAULTS[smooth] is not None:  # only floor and add-k take a value
        smooth += f"[{config.effective_smooth_value:.2f}]"
    fields = (("case", "lc" if config.lowercase else "mixed"),
              ("eff", "yes" if config.effective_order else "no"),
              ("tok", tokenizer_signature), ("smooth", smooth))
    if config.weights is not None:
        # Not a sacrebleu field: marks scores that are not standard (uniform-weight) BLEU.
        fields += (("weights", ",".join(f"{w:g}" for w in config.weights)),)
    return fields


def bleu_signature(config: BleuConfig, nrefs: Union[int, str], tokenizer_signature: str,
                   version: Optional[str] = None) -> str:
    """`version`: of the sacrebleu that measured the statistics (saved ones may be older; by
    default the installed one)."""
    return str(Signature(nrefs, bleu_fields(config, tokenizer_signature), version))
