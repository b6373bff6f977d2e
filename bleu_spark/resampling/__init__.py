"""Confidence intervals, paired significance tests and rank clusters of any metric, from segment
statistics, by one of two methods:

- **sacrebleu** (`replay`): sacrebleu 2.6's own resampling replayed exactly, for groups that
  fit in memory;
- **poisson** (`poisson`): hashed Poisson weights whose replicate sums add up across
  partitions, at any scale.

Percentile positions, p-value formulas and signature fields follow sacrebleu 2.6
(`sacrebleu/significance.py`, `sacrebleu/metrics/base.py`).
"""
from .options import (DEFAULT_AR_TRIALS, DEFAULT_BOOTSTRAP_SAMPLES, DEFAULT_SEED, METHODS, POISSON,
                      SACREBLEU, Resampling, bootstrap_signature, with_bootstrap_fields)
from .percentiles import percentile_bounds, percentile_positions
from .poisson import (ar_swaps, poisson_interval, poisson_paired_ar, poisson_paired_bs,
                      poisson_weights, replicate_sums, scores_of_sums)
from .replay import (MAX_SACREBLEU_SEGMENTS, sacrebleu_interval, sacrebleu_interval_of,
                     sacrebleu_paired_ar, sacrebleu_paired_bs, sacrebleu_resample_scores)
from .results import (PAIRED_AR, PAIRED_AR_HASHED, PAIRED_BS, PAIRED_BS_POISSON, Interval, Paired)

__all__ = [
    "DEFAULT_AR_TRIALS", "DEFAULT_BOOTSTRAP_SAMPLES", "DEFAULT_SEED", "METHODS", "POISSON",
    "SACREBLEU", "Resampling", "bootstrap_signature", "with_bootstrap_fields",
    "percentile_bounds", "percentile_positions",
    "ar_swaps", "poisson_interval", "poisson_paired_ar", "poisson_paired_bs", "poisson_weights",
    "replicate_sums", "scores_of_sums",
    "MAX_SACREBLEU_SEGMENTS", "sacrebleu_interval", "sacrebleu_interval_of", "sacrebleu_paired_ar",
    "sacrebleu_paired_bs", "sacrebleu_resample_scores",
    "PAIRED_AR", "PAIRED_AR_HASHED", "PAIRED_BS", "PAIRED_BS_POISSON", "Interval", "Paired",
]
