"""bleu-spark: sacrebleu-exact corpus BLEU from summed sufficient statistics.

In-process API (no Spark):

    >>> from bleu_spark import corpus_bleu
    >>> corpus_bleu(["the cat sat"], [["the cat sat", None]]).score
    0.0

`corpus_score` gives any metric's corpus score the same way (`metric="chrf"`, ...);
`score_dataframe` scores a Spark DataFrame per group (imports pyspark on first use).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import BleuSparkError, InvalidRowsError, UsageError
from .languages import TextSettings
from .metrics.bleu import BleuConfig, BleuResult, GroupTotals, segment_statistics
from .rows import REASONS, present_references, rejection_reasons
from .tokenizers import LineTokenizer

__version__ = "0.1.0"

BATCH_ROWS = 10_000  # segments counted at once: memory stays bounded for any corpus size

__all__ = ["BleuConfig", "BleuResult", "BleuSparkError", "corpus_bleu", "corpus_score",
           "score_dataframe", "__version__"]


def _checked_rows(candidates, references) -> tuple:
    """The rows as Arrow arrays; one line naming the first unscorable row, if any."""
    if len(candidates) != len(references):
        raise UsageError(f"{len(candidates)} candidates but {len(references)} reference lists")
    candidates = pa.array(candidates, pa.string())
    references = pa.array([None if refs is None else list(refs) for refs in references],
                          pa.list_(pa.string()))
    reasons = rejection_reasons(candidates, references)
    if reasons.null_count < len(reasons):
        i = pc.index(pc.is_valid(reasons), True).as_py()
        raise InvalidRowsError(f"segment {i}: {REASONS[reasons[i].as_py()]} ({reasons[i].as_py()})")
    return candidates, references


def corpus_score(candidates: Sequence[Optional[str]],
                 references: Sequence[Sequence[Optional[str]]], metric: str = "bleu",
                 langpair: Optional[str] = None, **options) -> dict:
    """The corpus score of any registered metric (`bleu`, `chrf`, `chrf++`, `ter`): its result
    fields (score, signature, verbose and the metric's own), as the job's score rows hold them.

    Options are the job's option keys (docs/options.md, dashes as underscores): `tokenize`,
    `lowercase`, `chrf_beta`, `ter_normalized`, ... The metric is measured, then scored from its
    summed statistics and measurement, as the job does it.
    """
    from . import metrics, settings

    unknown = sorted(set(options) - set(settings.metric_options()) - {"tokenize", "spm_model"})
    if unknown:
        raise UsageError(f"unknown options for corpus_score: {', '.join(unknown)}")
    values = {**settings.defaults(), **options}
    measured = metrics.get(metric).from_settings(values)
    text = TextSettings.of(values, measured.lowercase_tokens)
    candidates, references = _checked_rows(candidates, references)
    tokenize = text.tokenizer_for(langpair) if measured.uses_tokenizer else None
    tokenizer = LineTokenizer(tokenize, text.lowercase, text.spm_model) if tokenize else None
    stats = [measured.segment_statistics(candidates.slice(start, BATCH_ROWS),
                                         references.slice(start, BATCH_ROWS), tokenizer)
             for start in range(0, len(candidates), BATCH_ROWS)]
    counts = np.bincount(present_references(references)[1], minlength=len(references))
    row = {**measured.measurement(), "n_segments": len(candidates), "tokenize": tokenize,
           "min_refs": int(counts.min()) if len(counts) else 0,
           "max_refs": int(counts.max(initial=0)),
           "tokenizer_signature": tokenizer.signature() if tokenizer else None}
    shown = type(measured).from_measurement(row, values)
    sums = measured.combined(np.concatenate(stats) if stats else np.zeros((0, measured.width), np.int64))
    return shown.result(sums, row)


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
    candidates, references = _checked_rows(candidates, references)
    tokenize = config.tokenizer_for(langpair)
    tokenizer = LineTokenizer(tokenize, config.lowercase, config.spm_model)
    totals = GroupTotals(config.max_ngram_order)
    for start in range(0, len(candidates), BATCH_ROWS):
        totals.add(segment_statistics(candidates.slice(start, BATCH_ROWS),
                                      references.slice(start, BATCH_ROWS), tokenizer,
                                      config.max_ngram_order))
    return totals.result(config, tokenize, tokenizer.signature())


def score_dataframe(df, **kwargs):
    """Score a Spark DataFrame per group; see `bleu_spark.spark.job.score_dataframe`."""
    from .spark.job import score_dataframe as _score_dataframe

    return _score_dataframe(df, **kwargs)
