"""What intervals and paired tests give, whichever the method: `Interval`, `Paired`, the paired
tests' names, and sacrebleu's p-value (`sacrebleu/significance.py`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np


@dataclass(frozen=True)
class Interval:
    """A bootstrap confidence interval; `score` is the point estimate on the full data."""
    score: float
    mean: float
    low: float
    high: float
    halfwidth: float
    n_samples: int
    seed: int
    method: str

    def to_dict(self) -> dict:
        return {"bs_mean": self.mean, "ci_low": self.low, "ci_high": self.high,
                "ci_halfwidth": self.halfwidth, "n_bootstrap": self.n_samples,
                "seed": self.seed, "bootstrap_method": self.method}


# Paired test names, as `Paired.test` spells them.
PAIRED_BS = "paired-bs"
PAIRED_AR = "paired-ar"
PAIRED_BS_POISSON = "paired-bs-poisson"
PAIRED_AR_HASHED = "paired-ar-hashed"


@dataclass(frozen=True)
class Paired:
    """A paired test of a system against a baseline; delta = system - baseline on the full data."""
    delta: float
    p_value: float
    delta_ci_low: Optional[float]
    delta_ci_high: Optional[float]
    test: str

    def to_dict(self) -> dict:
        return {"delta": self.delta, "p_value": self.p_value, "delta_ci_low": self.delta_ci_low,
                "delta_ci_high": self.delta_ci_high, "test": self.test}


def sacrebleu_p_value(sample_statistics: np.ndarray, real_difference: float) -> float:
    """sacrebleu's `_compute_p_value`: (count(stat > real) + 1) / (n + 1); `>` is strict so a
    system compared with itself is not significant."""
    count = int(np.sum(np.asarray(sample_statistics) > real_difference))
    return (count + 1) / (len(sample_statistics) + 1)

