"""Corpus BLEU from summed statistics, the result record, and sacrebleu's text line."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import List, Sequence, Tuple

from .config import BleuConfig

# sacrebleu's floor for log(0), so a zero precision gives a score of (almost exactly) 0.
LOG_ZERO = -9999999999


def _log(value: float) -> float:
    return LOG_ZERO if value == 0.0 else math.log(value)


@dataclass(frozen=True)
class BleuResult:
    score: float
    counts: List[int]
    totals: List[int]
    precisions: List[float]
    bp: float
    ratio: float
    sys_len: int
    ref_len: int
    n_segments: int
    tokenize: str
    signature: str
    verbose: str

    def to_dict(self) -> dict:
        return asdict(self)


def brevity_penalty(sys_len: int, ref_len: int) -> float:
    if sys_len >= ref_len:
        return 1.0
    return math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0


def precisions_and_order(correct: Sequence[int], totals: Sequence[int],
                         config: BleuConfig) -> Tuple[List[float], int]:
    """Percent precisions per order with sacrebleu's smoothing, and the orders to average.

    Follows sacrebleu's `compute_bleu` step by step, on local values: its own version adds the
    add-k constant into the caller's lists.
    """
    order = config.max_ngram_order
    k = config.effective_smooth_value
    precisions = [0.0] * order
    eff_order = order
    smooth_mteval = 1.0
    for n in range(order):
        c, t = correct[n], totals[n]
        if config.smooth_method == "add-k" and n > 0:
            c, t = c + k, t + k
        if t == 0:
            break
        if config.effective_order:
            eff_order = n + 1
        if c == 0:
            if config.smooth_method == "exp":
                smooth_mteval *= 2
                precisions[n] = 100.0 / (smooth_mteval * t)
            elif config.smooth_method == "floor":
                precisions[n] = 100.0 * k / t
        else:
            precisions[n] = 100.0 * c / t
    return precisions, eff_order


def bleu_from_statistics(stats: Sequence[int], config: BleuConfig) -> Tuple[float, List[float], float]:
    """(score, precisions, bp) from one summed statistics vector."""
    order = config.max_ngram_order
    sys_len, ref_len = int(stats[0]), int(stats[1])
    correct, totals = stats[2:2 + order], stats[2 + order:2 + 2 * order]
    bp = brevity_penalty(sys_len, ref_len)
    if not any(correct):
        return 0.0, [0.0] * order, bp
    precisions, eff_order = precisions_and_order(correct, totals, config)
    logs = [_log(p) for p in precisions[:eff_order]]
    if config.weights is None:
        mean_log = sum(logs) / eff_order  # sacrebleu's exact arithmetic
    else:
        weights = config.weights[:eff_order]
        if sum(weights) == 0:
            # Effective order left out every order that carries weight (segments too short for
            # them): those orders have no n-grams, a precision of 0, as without effective order.
            return 0.0, precisions, bp
        mean_log = sum(w * lp for w, lp in zip(weights, logs)) / sum(weights)
    return bp * math.exp(mean_log), precisions, bp


def bleu_line(score: float, precisions: Sequence[float], bp: float, ratio: float,
              sys_len: int, ref_len: int) -> str:
    """sacrebleu's `str(BLEUScore)`, formatted by Python (round half to even, as sacrebleu)."""
    prec = "/".join(f"{p:.1f}" for p in precisions)
    return (f"BLEU = {score:.2f} {prec} (BP = {bp:.3f} ratio = {ratio:.3f} "
            f"hyp_len = {sys_len:d} ref_len = {ref_len:d})")


def build_result(stats: Sequence[int], config: BleuConfig, n_segments: int, tokenize: str,
                 signature: str) -> BleuResult:
    order = config.max_ngram_order
    score, precisions, bp = bleu_from_statistics(stats, config)
    sys_len, ref_len = int(stats[0]), int(stats[1])
    ratio = sys_len / ref_len if ref_len else 0.0
    return BleuResult(
        score=score,
        counts=[int(c) for c in stats[2:2 + order]],
        totals=[int(t) for t in stats[2 + order:2 + 2 * order]],
        precisions=precisions, bp=bp, ratio=ratio, sys_len=sys_len, ref_len=ref_len,
        n_segments=n_segments, tokenize=tokenize, signature=signature,
        verbose=bleu_line(score, precisions, bp, ratio, sys_len, ref_len))
