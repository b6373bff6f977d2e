"""sacrebleu 2.6's BLEU signature string, e.g. `nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0`."""
from __future__ import annotations

from typing import Optional, Union

from ..base import sacrebleu_version
from .options import SMOOTH_DEFAULTS, BleuConfig


def bleu_signature(config: BleuConfig, nrefs: Union[int, str], tokenizer_signature: str,
                   version: Optional[str] = None) -> str:
    """`version`: of the sacrebleu that measured the statistics (saved ones may be older; by
    default the installed one)."""
    smooth = config.smooth_method
    if SMOOTH_DEFAULTS[smooth] is not None:  # only floor and add-k take a value
        smooth += f"[{config.effective_smooth_value:.2f}]"
    fields = [
        ("nrefs", nrefs),
        ("case", "lc" if config.lowercase else "mixed"),
        ("eff", "yes" if config.effective_order else "no"),
        ("tok", tokenizer_signature),
        ("smooth", smooth),
    ]
    if config.weights is not None:
        # Not a sacrebleu field: marks scores that are not standard (uniform-weight) BLEU.
        fields.append(("weights", ",".join(f"{w:g}" for w in config.weights)))
    fields.append(("version", version or sacrebleu_version()))
    return "|".join(f"{name}:{value}" for name, value in fields)
