"""BLEU, whole: its options (`options.py`), its per-segment statistics (`stats.py`, compiled
kernels), the metric with its one formula from sums (`metric.py`), sacrebleu's signature
(`signature.py`) and one group's running sums with `corpus_bleu` and `bleu_of_rows`, the in-process API (`accumulate.py`)."""
from .accumulate import GroupTotals, bleu_of_rows, corpus_bleu
from .metric import Bleu, BleuResult, bleu_from_statistics, build_result
from .options import OPTIONS, BleuConfig
from .stats import segment_statistics, stats_names

__all__ = ["Bleu", "BleuConfig", "BleuResult", "GroupTotals", "OPTIONS", "bleu_from_statistics", "bleu_of_rows",
           "build_result", "corpus_bleu", "segment_statistics", "stats_names"]
