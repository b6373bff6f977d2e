"""The poisson method, at any scale: hashed Poisson(1) weights, replicate sums, and the intervals
and paired tests computed from those sums.

Each (segment, replicate) gets a Poisson(1) weight from a counter-based hash of (seed, segment
hash, replicate index), never from an RNG stream, so the weights do not depend on partitioning,
row order or task retries. Replicate sums `weights.T @ stats` are linear: they add up across
partitions like the plain sums, and the scores of the replicates come from the summed vectors
alone. Paired approximate randomization uses the same hashing (another domain constant) for its
swap decisions. Bound positions and p-values are sacrebleu's.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import UsageError
from .options import POISSON
from .percentiles import percentile_bounds
from .results import PAIRED_AR_HASHED, PAIRED_BS_POISSON, Interval, Paired, sacrebleu_p_value

# Domain constants keep the bootstrap weights and the swap decisions independent streams
# (fractional parts of sqrt(2) and sqrt(3), as in SHA-2).
BOOTSTRAP_DOMAIN = 0x6A09E667F3BCC908
SWAP_DOMAIN = 0xBB67AE8584CAA73B

_MASK64 = (1 << 64) - 1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # splitmix64's counter increment
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
# numpy 1 promotes uint64 with a Python int to float64, so shifts take uint64 amounts.
_S27, _S30, _S31 = np.uint64(27), np.uint64(30), np.uint64(31)

# Rows hashed at once: keeps the hash block and the 16-bit draws in cache (about 2x faster
# than one pass over a large batch).
_HASH_CHUNK = 512


def _mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, in place on uint64 (multiplication wraps modulo 2**64)."""
    z ^= z >> _S30
    z *= _MIX1
    z ^= z >> _S27
    z *= _MIX2
    z ^= z >> _S31
    return z


def _mix64_int(value: int) -> int:
    z = value & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _hash_blocks(segment_hashes: np.ndarray, seed: int, domain: int, n_blocks: int) -> np.ndarray:
    """(n, n_blocks) uint64: block j of segment i is splitmix64 at counter j + 1 of a stream
    keyed by mix(segment hash ^ mix(seed ^ domain)): a pure function of (seed, hash, j)."""
    key = np.uint64(_mix64_int((int(seed) ^ domain) & _MASK64))
    hashes = np.ascontiguousarray(segment_hashes, dtype=np.int64).view(np.uint64)
    base = _mix64(hashes ^ key)
    counters = np.arange(1, n_blocks + 1, dtype=np.uint64) * _GOLDEN
    return _mix64(np.add.outer(base, counters))


def _little_endian(blocks: np.ndarray) -> np.ndarray:
    """The blocks' bytes in little-endian order on any machine, so draws are portable."""
    return blocks.astype("<u8", copy=False)


def _poisson_table(bits: int = 16) -> np.ndarray:
    """Inverse CDF of Poisson(1) on `bits`-bit uniforms: table[u] = the weight for draw u.

    Cumulative probabilities are rounded to multiples of 2**-16, so each P(w = k) is within
    2**-17 of the true value and weights stop at 8 (true P(w > 8) is 1.1e-6); mean and
    variance of the weights are within 1e-4 of 1.
    """
    size = 1 << bits
    cdf = np.cumsum([math.exp(-1) / math.factorial(k) for k in range(20)])
    steps = np.round(cdf * size).astype(np.int64)
    steps = steps[steps < size]
    return np.searchsorted(steps, np.arange(size), side="right").astype(np.uint8)


_POISSON_TABLE = _poisson_table()


def poisson_weights(segment_hashes: np.ndarray, seed: int, n_replicates: int) -> np.ndarray:
    """(n, n_replicates) uint8 Poisson(1) bootstrap weights, a pure function of
    (seed, segment hash, replicate index): independent of partitioning, order and retries.

    One 64-bit hash gives four replicates (16 bits each, see `_poisson_table` for the
    precision). About 2 µs per segment at 1000 replicates (1.8-2.1 µs: numpy 2.4, one core
    of a shared 2-core machine, 20,000 and 100,000 segments; `scripts/bench_bootstrap.py`).
    """
    hashes = np.asarray(segment_hashes, dtype=np.int64).reshape(-1)
    n_blocks = -(-n_replicates // 4)
    weights = np.empty((len(hashes), n_replicates), np.uint8)
    for start in range(0, len(hashes), _HASH_CHUNK):
        blocks = _hash_blocks(hashes[start:start + _HASH_CHUNK], seed, BOOTSTRAP_DOMAIN, n_blocks)
        draws = _little_endian(blocks).view("<u2")[:, :n_replicates]
        weights[start:start + _HASH_CHUNK] = _POISSON_TABLE[draws]
    return weights


def ar_swaps(segment_hashes: np.ndarray, seed: int, n_trials: int) -> np.ndarray:
    """(n, n_trials) bool: whether trial t swaps segment i between system and baseline, with
    probability 1/2, one bit of the same hashing as `poisson_weights` (another domain)."""
    hashes = np.asarray(segment_hashes, dtype=np.int64).reshape(-1)
    n_blocks = -(-n_trials // 64)
    swaps = np.empty((len(hashes), n_trials), bool)
    for start in range(0, len(hashes), _HASH_CHUNK):
        blocks = _hash_blocks(hashes[start:start + _HASH_CHUNK], seed, SWAP_DOMAIN, n_blocks)
        bits = np.unpackbits(_little_endian(blocks).view(np.uint8), axis=1, bitorder="little")
        swaps[start:start + _HASH_CHUNK] = bits[:, :n_trials]
    return swaps


# float32 holds every integer below 2**24 exactly; a matmul whose every partial sum stays below
# it is exact in any summation order (with or without fused multiply-add).
_FLOAT32_EXACT = 1 << 24


def _exact_chunks(row_bounds: np.ndarray, limit: int):
    """Row ranges whose bounds add up to less than `limit`, or None when a row alone is too
    large. Rows below limit/2 each: a chunk is the rows whose running total (before them) lies
    in one window [k, k + 1) x limit/2, so it adds up to less than limit/2 + limit/2."""
    half = limit // 2
    if len(row_bounds) and int(row_bounds.max()) >= half:
        return None
    before = np.cumsum(row_bounds) - row_bounds
    windows = np.arange(1, int(before[-1]) // half + 1) * half
    edges = np.searchsorted(before, windows).tolist()
    return [(start, stop) for start, stop in zip([0] + edges, edges + [len(row_bounds)])
            if stop > start]


def replicate_sums(stats: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(B, width) int64 = weights.T @ stats, exactly.

    Linear in the segments, so the replicate sums of partitions add up to those of the whole.
    Computed as float32 matmuls over row chunks in which every partial sum is an integer
    below 2**24 (bounded by the sum over the chunk of max|weight| x max|statistic| per row),
    hence exact; each chunk's result is converted to int64 and the chunks are added as int64.
    About 1.1-1.4 µs per segment at B = 1000, order 4, with single-threaded BLAS
    (`OPENBLAS_NUM_THREADS=1`, faster than two threads on the shared 2-core machine;
    `scripts/bench_bootstrap.py`); numpy's int64 matmul, which has no BLAS, takes about 45 µs.
    A row too large for float32 falls back to int64.
    """
    stats = np.asarray(stats, dtype=np.int64)
    weights = np.asarray(weights)
    if len(stats) != len(weights):
        raise UsageError(f"{len(stats)} segments of statistics but {len(weights)} rows of weights")
    total = np.zeros((weights.shape[1], stats.shape[1]), np.int64)
    if len(stats) == 0:
        return total
    weight_max = max(abs(int(weights.min())), abs(int(weights.max())))
    row_bounds = weight_max * np.abs(stats).max(axis=1)
    chunks = _exact_chunks(row_bounds, _FLOAT32_EXACT)
    if chunks is None:
        return weights.T.astype(np.int64) @ stats
    for start, stop in chunks:
        part = weights[start:stop].T.astype(np.float32) @ stats[start:stop].astype(np.float32)
        total += part.astype(np.int64)
    return total


# --- scores of many summed vectors at once -------------------------------------------------------

def scores_of_sums(sums: np.ndarray, metric) -> np.ndarray:
    """The score of each row of `sums` (B, width), by the metric's vectorized formula, equal to
    its scalar score within 1e-12."""
    return metric.scores(np.asarray(sums))


# --- intervals and paired tests ---------------------------------------------------------------

def poisson_interval(point_score: float, replicate_scores: np.ndarray, seed: int) -> Interval:
    """Interval from the scores of the replicate sums: mean of the replicates, bounds at
    sacrebleu's percentile positions, halfwidth (high - low) / 2."""
    scores = np.asarray(replicate_scores, dtype=np.float64)
    low, high = percentile_bounds(scores)
    return Interval(score=float(point_score), mean=float(scores.mean()), low=low, high=high,
                    halfwidth=0.5 * (high - low), n_samples=len(scores), seed=seed,
                    method=POISSON)


def _full_delta(baseline_sums, system_sums, metric) -> float:
    return (metric.score(np.asarray(system_sums).tolist())
            - metric.score(np.asarray(baseline_sums).tolist()))


def poisson_paired_bs(baseline_sums, baseline_reps, system_sums, system_reps,
                      metric) -> Paired:
    """Paired bootstrap on replicate sums built with the same per-segment weights for both
    systems; the p-value is sacrebleu's (|sys - bl| per replicate, minus its mean, > |delta|)."""
    baseline_reps, system_reps = np.asarray(baseline_reps), np.asarray(system_reps)
    if baseline_reps.shape != system_reps.shape:
        raise UsageError(f"baseline replicates {baseline_reps.shape} and system replicates "
                         f"{system_reps.shape} differ")
    delta = _full_delta(baseline_sums, system_sums, metric)
    differences = scores_of_sums(system_reps, metric) - scores_of_sums(baseline_reps, metric)
    sample_diffs = np.abs(differences)
    p_value = sacrebleu_p_value(sample_diffs - sample_diffs.mean(), abs(delta))
    low, high = percentile_bounds(differences)
    return Paired(delta=delta, p_value=p_value, delta_ci_low=low, delta_ci_high=high,
                  test=PAIRED_BS_POISSON)


def _exact_gaps(first: np.ndarray, second: np.ndarray, metric) -> np.ndarray:
    return np.array([abs(metric.score(a.tolist()) - metric.score(b.tolist()))
                     for a, b in zip(first, second)])


def poisson_paired_ar(baseline_sums, system_sums, baseline_swapped, system_swapped,
                      metric) -> Paired:
    """Paired approximate randomization from sums: `*_swapped[t]` is the sum of that system's
    statistics over the segments trial t swaps (`replicate_sums(stats, ar_swaps(...))`).

    Trials that swap only segments both systems agree on reproduce |delta| exactly; the
    vectorized scores could put such a tie a last bit above it, so trials within 1e-9 of |delta|
    are rescored exactly (`bleu_from_statistics`) before the strict comparison, as in sacrebleu.
    """
    baseline_sums, system_sums = np.asarray(baseline_sums), np.asarray(system_sums)
    baseline_swapped, system_swapped = np.asarray(baseline_swapped), np.asarray(system_swapped)
    trial_system = system_sums - system_swapped + baseline_swapped
    trial_baseline = baseline_sums - baseline_swapped + system_swapped
    delta = _full_delta(baseline_sums, system_sums, metric)
    gaps = np.abs(scores_of_sums(trial_system, metric) - scores_of_sums(trial_baseline, metric))
    near = np.abs(gaps - abs(delta)) < 1e-9
    gaps[near] = _exact_gaps(trial_system[near], trial_baseline[near], metric)
    return Paired(delta=delta, p_value=sacrebleu_p_value(gaps, abs(delta)), delta_ci_low=None,
                  delta_ci_high=None, test=PAIRED_AR_HASHED)

