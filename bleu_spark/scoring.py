"""Corpus BLEU from summed statistics: the formula, the result record and sacrebleu's text line
live with the metric (`bleu_spark.metrics.bleu`); this module keeps their import path."""
from .metrics.bleu import (LOG_ZERO, BleuResult, bleu_from_statistics, bleu_line,  # noqa: F401
                           brevity_penalty, build_result, precisions_and_order)
