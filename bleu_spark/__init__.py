"""bleu-spark: sacrebleu-exact corpus BLEU from summed sufficient statistics.

In-process API (no Spark), in sacrebleu's layout (a list of reference streams, each with a
reference per hypothesis):

    >>> from bleu_spark import corpus_bleu
    >>> corpus_bleu(["the cat sat on the mat", "a dog"],
    ...             [["the cat sat on the mat", "one dog"], [None, "a dog"]]).signature
    'nrefs:var|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0'

`corpus_score` gives any metric's corpus score the same way (`metric="chrf"`, ...);
`bleu_of_rows` and `score_of_rows` take the references as a list per segment instead (the
job's rows); `score_dataframe` scores a Spark DataFrame per group (imports pyspark on first use).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .errors import BleuSparkError, UsageError
from .languages import TextSettings
# BLEU's own in-process API (its options object lives in metrics/bleu/).
from .metrics.bleu import BleuResult, bleu_of_rows, corpus_bleu
from .rows import batches, checked_rows, present_references, rows_of_streams
from .tokenizers import LineTokenizer
from .version import __version__

__all__ = ["BleuResult", "BleuSparkError", "bleu_of_rows", "corpus_bleu", "corpus_score",
           "score_dataframe", "score_of_rows", "__version__"]


def corpus_score(hypotheses: Sequence[str], references: Sequence[Sequence[Optional[str]]],
                 metric: str = "bleu", langpair: Optional[str] = None, **options) -> dict:
    """The corpus score of any registered metric, in sacrebleu's layout as its metrics'
    `corpus_score` takes it: `references` a list of reference streams, each with a reference
    per hypothesis. Otherwise as `score_of_rows`."""
    return score_of_rows(*rows_of_streams("corpus_score", hypotheses, references, "score_of_rows"),
                         metric=metric, langpair=langpair, **options)


def score_of_rows(candidates: Sequence[Optional[str]],
                  references: Sequence[Sequence[Optional[str]]], metric: str = "bleu",
                  langpair: Optional[str] = None, **options) -> dict:
    """The corpus score of any registered metric (`bleu`, `chrf`, `chrf++`, `ter`) of
    `candidates[i]` against `references[i]` (a list per segment, as the job's rows hold them):
    its result fields (score, signature, verbose and the metric's own), as the job's score rows
    hold them.

    Options are the job's option keys (docs/options.md, dashes as underscores): `tokenize`,
    `lowercase`, `chrf_beta`, `ter_normalized`, ... The metric is measured, then scored from its
    summed statistics and measurement, as the job does it.
    """
    from . import metrics, settings

    unknown = sorted(set(options) - set(settings.metric_options()) - {"tokenize", "spm_model"})
    if unknown:
        raise UsageError(f"unknown options: {', '.join(unknown)}")
    values = {**settings.defaults(), **options}
    measured = metrics.get(metric).from_settings(values)
    text = TextSettings.of(values, measured.lowercase_tokens)
    candidates, references = checked_rows(candidates, references)
    tokenize = text.tokenizer_for(langpair) if measured.uses_tokenizer else None
    tokenizer = LineTokenizer(tokenize, text.lowercase, text.spm_model) if tokenize else None
    stats = [measured.segment_statistics(c, r, tokenizer) for c, r in batches(candidates, references)]
    counts = np.bincount(present_references(references)[1], minlength=len(references))
    row = {**measured.measurement(), "n_segments": len(candidates), "tokenize": tokenize,
           "min_refs": int(counts.min()) if len(counts) else 0,
           "max_refs": int(counts.max(initial=0)),
           "tokenizer_signature": tokenizer.signature() if tokenizer else None}
    shown = type(measured).from_measurement(row, values)
    sums = measured.combined(np.concatenate(stats) if stats else np.zeros((0, measured.width), np.int64))
    return shown.result(sums, row)


def score_dataframe(df, **kwargs):
    """Score a Spark DataFrame per group; see `bleu_spark.spark.job.score_dataframe`."""
    from .spark.job import score_dataframe as _score_dataframe

    return _score_dataframe(df, **kwargs)
