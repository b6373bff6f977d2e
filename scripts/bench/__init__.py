"""The benchmark of bleu-spark against sacrebleu that `scripts/bench.py` runs (its docstring says
what it measures and how). What the tests call by name is named here."""
from .bleu_costs import tokenizer_costs
from .chrf_ter_costs import metric_costs
from .corpus import corpus_params, generate_corpus
from .guard import compare_results
from .sacrebleu_runs import run_score_path

__all__ = ["compare_results", "corpus_params", "generate_corpus", "metric_costs",
           "run_score_path", "tokenizer_costs"]
