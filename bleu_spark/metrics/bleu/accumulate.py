"""Summed statistics of one group, and its score: shared by the Python API (`corpus_bleu`, `bleu_of_rows`) and
the Spark job."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...errors import UsageError
from ...languages import TextSettings
from ...rows import batches, checked_rows, rows_of_streams
from ...tokenizers import LineTokenizer
from .metric import BleuResult, build_result
from .options import BleuConfig
from ..base import nrefs_label
from .signature import bleu_signature
from .stats import SegmentStatistics, segment_statistics, stats_width


@dataclass
class GroupTotals:
    max_order: int
    stats: List[int] = field(default_factory=list)
    n_segments: int = 0
    min_refs: int = 0
    max_refs: int = 0

    def __post_init__(self):
        if not self.stats:
            self.stats = [0] * stats_width(self.max_order)

    def add(self, segments: SegmentStatistics) -> None:
        self.stats = [a + int(b) for a, b in zip(self.stats, segments.stats.sum(axis=0))]
        low, high = int(segments.n_refs.min()), int(segments.n_refs.max())
        self.min_refs = low if self.n_segments == 0 else min(self.min_refs, low)
        self.max_refs = max(self.max_refs, high)
        self.n_segments += len(segments.n_refs)

    def result(self, config: BleuConfig, tokenize: str, tokenizer_signature: str) -> BleuResult:
        signature = bleu_signature(config, nrefs_label(self.min_refs, self.max_refs),
                                   tokenizer_signature)
        return build_result(self.stats, config, self.n_segments, tokenize, signature)


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[Optional[str]]],
                langpair: Optional[str] = None, config: Optional[BleuConfig] = None,
                text: Optional[TextSettings] = None, **options) -> BleuResult:
    """Corpus BLEU in sacrebleu's layout: `references` is a list of reference streams, each with
    one reference per hypothesis (`[[ref_1 of each], [ref_2 of each]]`), as
    `sacrebleu.corpus_bleu` and `BLEU.corpus_score` take them. References as one list per
    segment (the job's rows): `bleu_of_rows`.

    A None reference is a missing one, '' an empty one, as in sacrebleu. Options are the text
    settings (tokenize, spm_model; or `text`, a `TextSettings`) and BleuConfig's fields
    (lowercase, smooth_method, ...; or `config`). Unlike sacrebleu's API, a
    stream of another length and unscorable rows raise instead of being dropped.
    """
    return bleu_of_rows(*rows_of_streams("corpus_bleu", hypotheses, references, "bleu_of_rows"),
                        langpair=langpair, config=config, text=text, **options)


def bleu_of_rows(candidates: Sequence[Optional[str]],
                 references: Sequence[Sequence[Optional[str]]],
                 langpair: Optional[str] = None, config: Optional[BleuConfig] = None,
                 text: Optional[TextSettings] = None, **options) -> BleuResult:
    """Corpus BLEU of `candidates[i]` against `references[i]` (a list per segment, as the
    job's rows hold them); otherwise as `corpus_bleu`."""
    config, text = bleu_settings(config, text, options)
    candidates, references = checked_rows(candidates, references)
    tokenize = text.tokenizer_for(langpair)
    tokenizer = LineTokenizer(tokenize, config.lowercase, text.spm_model)
    totals = GroupTotals(config.max_ngram_order)
    for batch in batches(candidates, references):
        totals.add(segment_statistics(*batch, tokenizer, config.max_ngram_order))
    return totals.result(config, tokenize, tokenizer.signature())


def bleu_settings(config: Optional[BleuConfig], text: Optional[TextSettings],
                  options: Dict[str, Any]) -> Tuple[BleuConfig, TextSettings]:
    """BLEU's options and the text settings of an in-process call: the objects given, or made
    from its keywords (`tokenize` and `spm_model` are the text layer's, the rest BLEU's)."""
    text_keys = ("tokenize", "spm_model")
    text_options = {k: v for k, v in options.items() if k in text_keys}
    if text is not None and text_options:
        raise UsageError(f"give the text settings once: text= or {', '.join(text_options)}=")
    bleu_options = {k: v for k, v in options.items() if k not in text_keys}
    return config or BleuConfig(**bleu_options), text or TextSettings(**text_options)
