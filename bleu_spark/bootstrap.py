"""Confidence intervals and paired significance tests of any metric, from segment statistics.

Two methods:

- **sacrebleu** (exact replay, for groups that fit in memory): sacrebleu 2.6's own resampling,
  replayed on per-segment statistics with the same seed and segment order. The resample indices
  come from the same `numpy.random.default_rng(seed)` calls, statistics are cast to float32 as
  sacrebleu casts them, and every resample is scored by sacrebleu's own
  `_compute_score_from_stats` of its metric, so the numbers are sacrebleu's by construction. float32
  arithmetic promotes differently under numpy 1 and numpy 2 (NEP 50: a Python float times a
  float32 stays float32 in numpy 2), so a replay equals sacrebleu run under the same numpy
  version; callers record `numpy.__version__` next to the results.
- **poisson** (any scale): each (segment, replicate) gets a Poisson(1) weight from a
  counter-based hash of (seed, segment hash, replicate index), never from an RNG stream, so the
  weights do not depend on partitioning, row order or task retries. Replicate sums
  `weights.T @ stats` are linear: they add up across partitions like the plain sums, and the
  scores of the replicates come from the summed vectors alone. Paired approximate randomization
  uses the same hashing (another domain constant) for its swap decisions.

Percentile positions, p-value formulas and signature fields follow sacrebleu 2.6
(`sacrebleu/significance.py`, `sacrebleu/metrics/base.py`).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Collection, Optional, Tuple

import numpy as np

from . import ranges
from .errors import BaselineNotFoundError, UsageError
from .metrics import as_metric

SACREBLEU = "sacrebleu"
POISSON = "poisson"
METHODS = (SACREBLEU, POISSON)

# sacrebleu's defaults: `--confidence-n` / `--paired-bs-n` and `--paired-ar-n`.
DEFAULT_BOOTSTRAP_SAMPLES = 1000
DEFAULT_AR_TRIALS = 10000
DEFAULT_SEED = 12345  # SACREBLEU_SEED's default

# The exact replay holds sacrebleu's resampling matrices whole, because numpy's generator gives
# a different stream when they are drawn in pieces: B x N int64 indices for the bootstrap
# (8 bytes a cell) and T x N booleans for approximate randomization (1 byte a cell). Resample
# sums are formed one resample at a time (sacrebleu itself materializes B x N x width float32
# values, 40 bytes a cell at order 4). With the defaults (B = 1000, T = 10000) this limit keeps
# either matrix near 2 GB; larger groups use the poisson method.
MEMORY_BUDGET_BYTES = 2 * 1024 ** 3
MAX_SACREBLEU_SEGMENTS = 200_000


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


def bootstrap_signature(method: str, n_samples: int, seed: int, kind: str = "bs") -> str:
    """The resampling fields of the signature: `bs:1000|seed:12345` as sacrebleu writes them
    (`ar:10000|seed:12345` for approximate randomization, `kind="ar"`), plus `|bsm:poisson` for
    the poisson method, which sacrebleu does not have.

    sacrebleu puts these fields right after `nrefs:` (`nrefs:1|bs:1000|seed:12345|case:mixed|...`);
    `with_bootstrap_fields` places them there.
    """
    if method not in METHODS:
        raise UsageError(f"unknown bootstrap method {method!r}; choose one of: {', '.join(METHODS)}")
    fields = f"{kind}:{n_samples}|seed:{seed}"
    return fields + "|bsm:poisson" if method == POISSON else fields


def with_bootstrap_fields(signature: str, fields: str) -> str:
    """Insert `fields` after the `nrefs:` field of a signature, where sacrebleu puts them."""
    head, sep, rest = signature.partition("|")
    return f"{head}|{fields}{sep}{rest}" if sep else f"{head}|{fields}"


def percentile_positions(n: int) -> Tuple[int, int]:
    """sacrebleu's 95% bounds among n sorted replicates: positions B//40 and B - B//40 - 1."""
    return n // 40, n - n // 40 - 1


def percentile_bounds(scores: np.ndarray):
    """sacrebleu's 95% bounds of the scores, as floats."""
    ordered = np.sort(np.asarray(scores, dtype=np.float64))
    low, high = percentile_positions(len(ordered))
    return float(ordered[low]), float(ordered[high])


def sacrebleu_p_value(sample_statistics: np.ndarray, real_difference: float) -> float:
    """sacrebleu's `_compute_p_value`: (count(stat > real) + 1) / (n + 1); `>` is strict so a
    system compared with itself is not significant."""
    count = int(np.sum(np.asarray(sample_statistics) > real_difference))
    return (count + 1) / (len(sample_statistics) + 1)


# --- sacrebleu method: exact replay -------------------------------------------------------------

def sacrebleu_metric(config):
    """sacrebleu's own metric with the scoring settings of `config` (a metric, or BLEU's
    `BleuConfig`); it never tokenizes here."""
    return as_metric(config).sacrebleu_metric()


def _check_replay_size(n_segments: int, n_draws: int, bytes_per_cell: int) -> None:
    size = n_segments * n_draws * bytes_per_cell
    if n_segments > MAX_SACREBLEU_SEGMENTS or size > MEMORY_BUDGET_BYTES:
        raise UsageError(f"{n_segments} segments x {n_draws} resamples is too large for the "
                         f"sacrebleu bootstrap (at most {MAX_SACREBLEU_SEGMENTS} segments and "
                         f"{MEMORY_BUDGET_BYTES // 2 ** 20} MiB); use the poisson method")


def _segment_stats(stats) -> np.ndarray:
    stats = np.asarray(stats, dtype=np.int64)
    if stats.ndim != 2 or len(stats) == 0:
        raise UsageError("segment statistics must be a non-empty (n_segments, width) array")
    return stats


def _full_score(metric, stats: np.ndarray) -> float:
    """sacrebleu's score of the whole data: its `_aggregate_and_compute` on Python int lists."""
    return metric._aggregate_and_compute(stats.tolist()).score


def _resample_indices(n_segments: int, n_samples: int, seed: int) -> np.ndarray:
    """sacrebleu's `rng.choice(N, size=(B, N), replace=True)` on `default_rng(seed)`."""
    rng = np.random.default_rng(seed)
    return rng.choice(n_segments, size=(n_samples, n_segments), replace=True)


def _resample_scores(metric, stats: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Scores of the float32 resample sums, one resample at a time. Each `(N, width)` slice has
    the layout of sacrebleu's `stats_np[idxs][b]`, so `.sum(0)` adds in the same order. The
    array keeps the scores' own type: chrF's and TER's are float32 (their arithmetic on float32
    sums stays float32), BLEU's Python floats."""
    stats32 = np.array(stats, dtype="float32")
    return np.array([metric._compute_score_from_stats(stats32[row].sum(0)).score
                     for row in indices])


def sacrebleu_interval(stats, config, n_samples: int = DEFAULT_BOOTSTRAP_SAMPLES,
                       seed: int = DEFAULT_SEED) -> Interval:
    """sacrebleu's `corpus_score(..., n_bootstrap=n_samples)` interval with SACREBLEU_SEED=seed:
    `mean` is its μ (`statistics.mean` of the resample scores), `halfwidth` its ±, and
    `low`/`high` the percentile bounds that ± is half the distance of."""
    score, scores = sacrebleu_resample_scores(stats, config, n_samples, seed)
    return sacrebleu_interval_of(score, scores, seed)


def sacrebleu_resample_scores(stats, config, n_samples: int = DEFAULT_BOOTSTRAP_SAMPLES,
                              seed: int = DEFAULT_SEED):
    """sacrebleu's score of the whole data and its `n_samples` resample scores: the draws of
    `default_rng(seed)` depend only on the number of segments, so systems over the same
    segments are resampled alike (as its paired bootstrap does)."""
    stats = _segment_stats(stats)
    _check_replay_size(len(stats), n_samples, 8)
    metric = sacrebleu_metric(config)
    stats = as_metric(config).sacrebleu_statistics(stats)
    scores = _resample_scores(metric, stats, _resample_indices(len(stats), n_samples, seed))
    return _full_score(metric, stats), scores


def sacrebleu_interval_of(score: float, scores: np.ndarray, seed: int) -> Interval:
    """The interval sacrebleu prints from its resample scores: its `estimate_ci` on the scores
    as they are (for float32 ones, chrF and TER, `statistics.mean` rounds the mean to float32,
    and the ± is a float32 difference halved)."""
    ordered = np.sort(scores)
    low, high = (ordered[i] for i in percentile_positions(len(ordered)))
    return Interval(score=score, mean=float(statistics.mean(list(scores))), low=float(low),
                    high=float(high), halfwidth=float(0.5 * (high - low)), n_samples=len(scores),
                    seed=seed, method=SACREBLEU)


def _check_paired(baseline: np.ndarray, system: np.ndarray) -> None:
    if baseline.shape != system.shape:
        raise UsageError(f"baseline statistics {baseline.shape} and system statistics "
                         f"{system.shape} do not cover the same segments")


def sacrebleu_paired_bs(baseline, system, config,
                        n_samples: int = DEFAULT_BOOTSTRAP_SAMPLES,
                        seed: int = DEFAULT_SEED) -> Paired:
    """sacrebleu's paired bootstrap (`_paired_bs_test`): one index matrix for both systems; the
    p-value counts resamples where |sys - bl| minus its mean exceeds the real |delta|.

    sacrebleu's `PairedTest` passes seed 0 on as None (unseeded), so seed 0 has no replay there.
    """
    baseline, system = _segment_stats(baseline), _segment_stats(system)
    _check_paired(baseline, system)
    _check_replay_size(len(baseline), n_samples, 8)
    metric = sacrebleu_metric(config)
    baseline, system = map(as_metric(config).sacrebleu_statistics, (baseline, system))
    indices = _resample_indices(len(baseline), n_samples, seed)
    scores_bl = _resample_scores(metric, baseline, indices)
    scores_sys = _resample_scores(metric, system, indices)
    delta = _full_score(metric, system) - _full_score(metric, baseline)
    sample_diffs = np.abs(scores_sys - scores_bl)
    p_value = sacrebleu_p_value(sample_diffs - sample_diffs.mean(), abs(delta))
    low, high = percentile_bounds(scores_sys - scores_bl)
    return Paired(delta=delta, p_value=p_value, delta_ci_low=low, delta_ci_high=high,
                  test=PAIRED_BS)


# Trials whose scores are formed at once in the replay of approximate randomization; integer
# matmuls are exact, so chunking does not change them, and it bounds the int64 copy of the mask.
_AR_CHUNK = 32


def _trial_scores(metric, pick_first: np.ndarray, first: np.ndarray, second: np.ndarray):
    """Scores of the pseudo-systems `pick_first @ first + ~pick_first @ second`, as sacrebleu
    forms and scores them (int64 sums, `_aggregate_and_compute` on each (1, width) row)."""
    scores = []
    for start in range(0, len(pick_first), _AR_CHUNK):
        chunk = pick_first[start:start + _AR_CHUNK]
        sums = chunk @ first + ~chunk @ second
        scores.extend(metric._aggregate_and_compute(row).score for row in sums[:, None])
    return np.array(scores)


def sacrebleu_paired_ar(baseline, system, config,
                        n_trials: int = DEFAULT_AR_TRIALS, seed: int = DEFAULT_SEED) -> Paired:
    """sacrebleu's paired approximate randomization (`_paired_ar_test`): per trial and segment a
    swap decision from `rng.integers(2, size=(T, N), dtype=bool)`; p counts trials whose
    |score(a) - score(b)| exceeds the real |delta|. No interval (sacrebleu's optional AR
    confidence is a plain bootstrap of the system: `sacrebleu_interval`)."""
    baseline, system = _segment_stats(baseline), _segment_stats(system)
    _check_paired(baseline, system)
    _check_replay_size(len(baseline), n_trials, 1)
    metric = sacrebleu_metric(config)
    baseline, system = map(as_metric(config).sacrebleu_statistics, (baseline, system))
    rng = np.random.default_rng(seed)
    keep_baseline = rng.integers(2, size=(n_trials, len(baseline)), dtype=bool)
    scores_a = _trial_scores(metric, keep_baseline, baseline, system)
    scores_b = _trial_scores(metric, keep_baseline, system, baseline)
    delta = _full_score(metric, system) - _full_score(metric, baseline)
    p_value = sacrebleu_p_value(np.abs(scores_a - scores_b), abs(delta))
    return Paired(delta=delta, p_value=p_value, delta_ci_low=None, delta_ci_high=None,
                  test=PAIRED_AR)


# --- poisson method: hashed weights, replicate sums --------------------------------------------

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
    """The score of each row of `sums` (B, width), by the metric's vectorized formula (`metric`:
    a metric, or BLEU's `BleuConfig`), equal to its scalar score within 1e-12."""
    return as_metric(metric).scores(np.asarray(sums))


# --- poisson method: intervals and paired tests ---------------------------------------------------

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
                      config) -> Paired:
    """Paired bootstrap on replicate sums built with the same per-segment weights for both
    systems; the p-value is sacrebleu's (|sys - bl| per replicate, minus its mean, > |delta|)."""
    baseline_reps, system_reps = np.asarray(baseline_reps), np.asarray(system_reps)
    if baseline_reps.shape != system_reps.shape:
        raise UsageError(f"baseline replicates {baseline_reps.shape} and system replicates "
                         f"{system_reps.shape} differ")
    metric = as_metric(config)
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
                      config) -> Paired:
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
    metric = as_metric(config)
    delta = _full_delta(baseline_sums, system_sums, metric)
    gaps = np.abs(scores_of_sums(trial_system, metric) - scores_of_sums(trial_baseline, metric))
    near = np.abs(gaps - abs(delta)) < 1e-9
    gaps[near] = _exact_gaps(trial_system[near], trial_baseline[near], metric)
    return Paired(delta=delta, p_value=sacrebleu_p_value(gaps, abs(delta)), delta_ci_low=None,
                  delta_ci_high=None, test=PAIRED_AR_HASHED)


# --- what a run asks for -----------------------------------------------------------------------

@dataclass(frozen=True)
class Resampling:
    """Confidence intervals and paired tests asked for, as the job's options."""
    confidence: bool = False
    method: str = POISSON
    n_bootstrap: int = DEFAULT_BOOTSTRAP_SAMPLES
    seed: int = DEFAULT_SEED
    paired_bs: bool = False
    paired_ar: bool = False
    baseline: Optional[str] = None
    n_ar_trials: int = DEFAULT_AR_TRIALS
    clusters: bool = False  # rank ranges and clusters per comparison group, on the bootstrap's draws

    def __post_init__(self):
        if self.method not in METHODS:
            raise UsageError(f"unknown --bootstrap-method {self.method!r}; choose one of: "
                             f"{', '.join(METHODS)}")
        ranges.check("--n-bootstrap", self.n_bootstrap)
        ranges.check("--n-ar-trials", self.n_ar_trials)
        ranges.check("--seed", self.seed)
        if (self.paired_bs or self.paired_ar) and not self.baseline:
            raise UsageError("--paired-bs and --paired-ar need --baseline SYSTEM")
        if self.baseline and not (self.paired_bs or self.paired_ar):
            raise UsageError("--baseline is only used with --paired-bs or --paired-ar")

    def check_baseline(self, systems: Collection, shown: int = 5) -> None:
        """The baseline is one of the systems scored, else a paired test asked for gives nothing:
        one line naming it and a few that exist, before anything is written."""
        if self.baseline is None or self.baseline_of(systems) is not None:
            return
        names = sorted(map(str, systems))
        more = f", ... ({len(names)} in all)" if len(names) > shown else ""
        raise BaselineNotFoundError(f"--baseline {self.baseline!r} is in no comparison group; "
                                    f"systems scored: {', '.join(names[:shown]) or 'none'}{more}")

    def baseline_of(self, systems: Collection):
        """The system value `--baseline` names: the string itself, or, in a column of integers
        (ids), the one value written so (`--baseline 3` names 3; `03` names none)."""
        if self.baseline in systems:
            return self.baseline
        typed = [s for s in systems if s is not None and not isinstance(s, str)
                 and str(s) == self.baseline]
        return typed[0] if len(typed) == 1 else None

    @property
    def active(self) -> bool:
        return self.confidence or self.paired_bs or self.paired_ar or self.clusters

    @property
    def bootstrapped(self) -> bool:
        """Whether each group's replicate scores are needed (intervals, clusters)."""
        return self.confidence or self.clusters

    @property
    def replicates(self) -> int:
        """Bootstrap replicate sums the measurement must keep (poisson)."""
        return self.n_bootstrap if self.method == POISSON and (self.bootstrapped or self.paired_bs) else 0

    @property
    def trials(self) -> int:
        """Approximate-randomization swap sums the measurement must keep (poisson)."""
        return self.n_ar_trials if self.method == POISSON and self.paired_ar else 0

    @property
    def label(self) -> str:
        """What the statistics table records: replicate sums of different draws never add up."""
        return f"{POISSON}:{self.n_bootstrap}:{self.seed}" if self.replicates else ""
