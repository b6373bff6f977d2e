"""Paired tests of every system against the baseline, per comparison group."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from .. import metrics, statstable
from ..metrics import combine
from ..resampling import PAIRED_AR, PAIRED_BS, POISSON, Paired, Resampling, poisson_paired_ar, poisson_paired_bs, sacrebleu_paired_ar, sacrebleu_paired_bs
from ..errors import UsageError
from ..shown import shown
from .coverage import check_same_segments
from .groups import check_one_measurement, metric_of, summed
from .replicates import sample_matrix, segment_matrix
from .sets import GroupingSet


def paired_rows(stats: pa.Table, sets: Sequence[GroupingSet], config: metrics.Choices,
                resampling: Resampling, segment_stats: Optional[pa.Table] = None,
                system_col: str = "system") -> Tuple[List[dict], List[str]]:
    """Paired tests of every system against the baseline, within each group of the other columns
    of the first grouping set holding `system_col` (e.g. each testset x langpair), and warnings
    for comparison groups the baseline is missing from."""
    grouping_set = next((s for s in sets if system_col in s), None)
    if grouping_set is None:
        raise UsageError(f"paired tests compare systems: {system_col} must be a group column")
    others = [c for c in grouping_set if c != system_col]
    keys = [*grouping_set, *statstable.MEASUREMENT]
    sums, plain = summed(stats, keys)
    groups = plain.to_pylist()
    check_one_measurement(groups, grouping_set)
    by_comparison: dict = {}
    for index, row in enumerate(groups):
        if row["n_segments"]:
            row["_index"] = index
            key = (*(row[c] for c in others), row["metric"])
            by_comparison.setdefault(key, {})[row[system_col]] = row
    results, warnings = [], []
    ordered = sorted(by_comparison.items(), key=lambda kv: (str(kv[0][:-1]), metrics.order_of(kv[0][-1])))
    for (*comparison, metric), systems in ordered:
        where = dict(zip(others, comparison))
        baseline = resampling.baseline_of(systems)
        base = systems.get(baseline) if baseline is not None else None
        if base is None:
            warnings.append(f"no baseline {resampling.baseline!r} in "
                            f"{', '.join(f'{k}={v}' for k, v in where.items()) or 'the table'}: "
                            f"no paired tests there")
            continue
        check_same_segments(systems, _where(where, metric), "paired tests",
                            reference=baseline)
        for system, row in sorted(systems.items(), key=lambda kv: str(kv[0])):
            if system == baseline:
                continue
            tests = _paired(base, row, sums, config, resampling, segment_stats, grouping_set)
            results += [{**where, "metric": metric, "system": system,
                         "baseline": resampling.baseline, **t} for t in tests]
    return results, warnings


def _where(where: dict, metric: str) -> str:
    named = ", ".join(f"{k}={shown(v)}" for k, v in where.items()) or "the table"
    return f"{named} ({metric})"


def _paired(base: dict, row: dict, sums: pa.Table, config, resampling, segment_stats,
            grouping_set) -> List[dict]:
    measured = metric_of(row, config)
    poisson = resampling.method == POISSON
    asked = [t for t, wanted in ((PAIRED_BS, resampling.paired_bs),
                                 (PAIRED_AR, resampling.paired_ar)) if wanted]
    done = []
    for test in asked:
        if poisson:
            result = _poisson_paired(test, base, row, sums, measured, grouping_set)
        else:
            result = _sacrebleu_paired(test, base, row, segment_stats, measured, resampling,
                                       grouping_set)
        done.append({**result.to_dict(), "test": test})
    return [dict(t, method=resampling.method) for t in done]


def _poisson_paired(test: str, base: dict, row: dict, sums: pa.Table, measured: metrics.Metric,
                    grouping_set) -> Paired:
    """A paired test from both systems' sums and their replicate (bootstrap) or trial
    (approximate randomization) sums."""
    vector = lambda r: np.array([r[n] for n in measured.names], combine.matrix_type(measured.columns()))
    samples = lambda r, column: sample_matrix(sums, column, r["_index"], r, grouping_set,
                                               measured.width)
    if test == PAIRED_BS:
        return poisson_paired_bs(
            vector(base), samples(base, statstable.REPLICATE_SUMS), vector(row),
            samples(row, statstable.REPLICATE_SUMS), measured)
    return poisson_paired_ar(
        vector(base), vector(row), samples(base, statstable.TRIAL_SUMS),
        samples(row, statstable.TRIAL_SUMS), measured)


def _sacrebleu_paired(test: str, base: dict, row: dict, segment_stats: pa.Table,
                      measured: metrics.Metric, resampling, grouping_set) -> Paired:
    """A paired test replaying sacrebleu's draws over both systems' segments."""
    matrices = [segment_matrix(segment_stats, grouping_set, r, measured) for r in (base, row)]
    if test == PAIRED_BS:
        return sacrebleu_paired_bs(*matrices, measured, resampling.n_bootstrap,
                                             resampling.seed)
    return sacrebleu_paired_ar(*matrices, measured, resampling.n_ar_trials,
                                         resampling.seed)
