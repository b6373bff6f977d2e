"""sacrebleu's own resampling, replayed exactly on per-segment statistics (for groups that fit in
memory): intervals, and the paired bootstrap and approximate randomization.

The replay uses sacrebleu 2.6's seed and segment order. The resample indices come from the same
`numpy.random.default_rng(seed)` calls, statistics are cast to float32 as sacrebleu casts them,
and every resample is scored by sacrebleu's own `_compute_score_from_stats` of its metric, so the
numbers are sacrebleu's by construction. float32 arithmetic promotes differently under numpy 1
and numpy 2 (NEP 50: a Python float times a float32 stays float32 in numpy 2), so a replay
equals sacrebleu run under the same numpy version; callers record `numpy.__version__` next to
the results.
"""
from __future__ import annotations

import statistics

import numpy as np

from ..errors import UsageError
from .options import DEFAULT_AR_TRIALS, DEFAULT_BOOTSTRAP_SAMPLES, DEFAULT_SEED, SACREBLEU
from .percentiles import percentile_bounds, percentile_positions
from .results import PAIRED_AR, PAIRED_BS, Interval, Paired, sacrebleu_p_value

# The exact replay holds sacrebleu's resampling matrices whole, because numpy's generator gives
# a different stream when they are drawn in pieces: B x N int64 indices for the bootstrap
# (8 bytes a cell) and T x N booleans for approximate randomization (1 byte a cell). Resample
# sums are formed one resample at a time (sacrebleu itself materializes B x N x width float32
# values, 40 bytes a cell at order 4). With the defaults (B = 1000, T = 10000) this limit keeps
# either matrix near 2 GB; larger groups use the poisson method.
MEMORY_BUDGET_BYTES = 2 * 1024 ** 3
MAX_SACREBLEU_SEGMENTS = 200_000


def sacrebleu_metric(metric):
    """sacrebleu's own metric with the scoring settings of `metric`; it never tokenizes here."""
    return metric.sacrebleu_metric()


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


def sacrebleu_interval(stats, measured, n_samples: int = DEFAULT_BOOTSTRAP_SAMPLES,
                       seed: int = DEFAULT_SEED) -> Interval:
    """sacrebleu's `corpus_score(..., n_bootstrap=n_samples)` interval with SACREBLEU_SEED=seed:
    `mean` is its μ (`statistics.mean` of the resample scores), `halfwidth` its ±, and
    `low`/`high` the percentile bounds that ± is half the distance of. `measured`: the metric
    (`bleu_spark.metrics`) whose statistics `stats` are, with the run's scoring choices."""
    score, scores = sacrebleu_resample_scores(stats, measured, n_samples, seed)
    return sacrebleu_interval_of(score, scores, seed)


def sacrebleu_resample_scores(stats, measured, n_samples: int = DEFAULT_BOOTSTRAP_SAMPLES,
                              seed: int = DEFAULT_SEED):
    """sacrebleu's score of the whole data and its `n_samples` resample scores: the draws of
    `default_rng(seed)` depend only on the number of segments, so systems over the same
    segments are resampled alike (as its paired bootstrap does)."""
    stats = _segment_stats(stats)
    _check_replay_size(len(stats), n_samples, 8)
    metric = sacrebleu_metric(measured)
    stats = measured.sacrebleu_statistics(stats)
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


def sacrebleu_paired_bs(baseline, system, measured,
                        n_samples: int = DEFAULT_BOOTSTRAP_SAMPLES,
                        seed: int = DEFAULT_SEED) -> Paired:
    """sacrebleu's paired bootstrap (`_paired_bs_test`): one index matrix for both systems; the
    p-value counts resamples where |sys - bl| minus its mean exceeds the real |delta|.

    sacrebleu's `PairedTest` passes seed 0 on as None (unseeded), so seed 0 has no replay there.
    """
    baseline, system = _segment_stats(baseline), _segment_stats(system)
    _check_paired(baseline, system)
    _check_replay_size(len(baseline), n_samples, 8)
    metric = sacrebleu_metric(measured)
    baseline, system = map(measured.sacrebleu_statistics, (baseline, system))
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


def sacrebleu_paired_ar(baseline, system, measured,
                        n_trials: int = DEFAULT_AR_TRIALS, seed: int = DEFAULT_SEED) -> Paired:
    """sacrebleu's paired approximate randomization (`_paired_ar_test`): per trial and segment a
    swap decision from `rng.integers(2, size=(T, N), dtype=bool)`; p counts trials whose
    |score(a) - score(b)| exceeds the real |delta|. No interval (sacrebleu's optional AR
    confidence is a plain bootstrap of the system: `sacrebleu_interval`)."""
    baseline, system = _segment_stats(baseline), _segment_stats(system)
    _check_paired(baseline, system)
    _check_replay_size(len(baseline), n_trials, 1)
    metric = sacrebleu_metric(measured)
    baseline, system = map(measured.sacrebleu_statistics, (baseline, system))
    rng = np.random.default_rng(seed)
    keep_baseline = rng.integers(2, size=(n_trials, len(baseline)), dtype=bool)
    scores_a = _trial_scores(metric, keep_baseline, baseline, system)
    scores_b = _trial_scores(metric, keep_baseline, system, baseline)
    delta = _full_score(metric, system) - _full_score(metric, baseline)
    p_value = sacrebleu_p_value(np.abs(scores_a - scores_b), abs(delta))
    return Paired(delta=delta, p_value=p_value, delta_ci_low=None, delta_ci_high=None,
                  test=PAIRED_AR)

