"""bleu-spark: sacrebleu-exact corpus BLEU from summed sufficient statistics.

In-process API (no Spark):

    >>> from bleu_spark import corpus_bleu
    >>> corpus_bleu(["the cat sat"], [["the cat sat", None]]).score
    0.0

`score_dataframe` scores a Spark DataFrame per group (imports pyspark on first use).
"""
from __future__ import annotations

from typing import Optional, Sequence

from .accumulate import GroupTotals
from .config import BleuConfig
from .errors import BleuSparkError, InvalidRowsError, UsageError
from .rows import REASONS, present_references, rejection_reason
from .scoring import BleuResult
from .stats import SegmentScorer

__version__ = "0.1.0"

__all__ = ["BleuConfig", "BleuResult", "BleuSparkError", "corpus_bleu", "score_dataframe",
           "__version__"]


def corpus_bleu(candidates: Sequence[Optional[str]],
                references: Sequence[Sequence[Optional[str]]],
                langpair: Optional[str] = None,
                config: Optional[BleuConfig] = None, **options) -> BleuResult:
    """Corpus BLEU of `candidates[i]` against `references[i]` (a list per segment).

    A None reference is a missing one, '' an empty one, as in sacrebleu. Options are
    BleuConfig's fields (tokenize, lowercase, smooth_method, ...). Unlike sacrebleu's API, lists
    of different lengths and unscorable rows raise instead of being dropped.
    """
    config = config or BleuConfig(**options)
    if len(candidates) != len(references):
        raise UsageError(f"{len(candidates)} candidates but {len(references)} reference lists")
    tokenize = config.tokenizer_for(langpair)
    scorer = SegmentScorer(config, tokenize)
    totals = GroupTotals(config.max_ngram_order)
    for i, (candidate, refs) in enumerate(zip(candidates, references)):
        refs = present_references(refs)
        reason = rejection_reason(candidate, refs)
        if reason:
            raise InvalidRowsError(f"segment {i}: {REASONS[reason]} ({reason})")
        totals.add(scorer.statistics(candidate, refs), len(refs))
    return totals.result(config, tokenize, scorer.signature())


def score_dataframe(df, **kwargs):
    """Score a Spark DataFrame per group; see `bleu_spark.spark.job.score_dataframe`."""
    from .spark.job import score_dataframe as _score_dataframe

    return _score_dataframe(df, **kwargs)
