"""sacrebleu's 95% bounds among sorted replicates (`sacrebleu/significance.py`), for intervals,
paired deltas and rank ranges alike."""
from __future__ import annotations

from typing import Tuple

import numpy as np


def percentile_positions(n: int) -> Tuple[int, int]:
    """sacrebleu's 95% bounds among n sorted replicates: positions B//40 and B - B//40 - 1."""
    return n // 40, n - n // 40 - 1


def percentile_bounds(scores: np.ndarray):
    """sacrebleu's 95% bounds of the scores, as floats."""
    ordered = np.sort(np.asarray(scores, dtype=np.float64))
    low, high = percentile_positions(len(ordered))
    return float(ordered[low]), float(ordered[high])

