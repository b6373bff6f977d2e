"""Score rows: one per group of every grouping set, with intervals and clusters when asked."""
from __future__ import annotations

from typing import List, Optional, Sequence

import pyarrow as pa

from .. import metrics, statstable
from ..resampling import Resampling
from .groups import check_one_measurement, summed, metric_of
from .replicates import add_clusters, add_intervals, replicate_scores, sign_bootstrap
from .sets import GroupingSet, label
from .tables import GROUPING


class ScoreRow(dict):
    """A score row (its fields), carrying its group's summed statistics (`statistics`: name ->
    value, None without scored segments) for the dashboard, and sacrebleu's JSON fields of the
    group (`sacrebleu`: `name`, `verbose_score`) for `scores.json`, and the metric it was
    scored with (`measured`: the report's titles and directions); none is a field of the row."""
    statistics: dict = {}
    sacrebleu: dict = {}
    measured = None


def score_sets(stats: pa.Table, sets: Sequence[GroupingSet], config: metrics.Choices,
               resampling: Optional[Resampling] = None,
               segment_stats: Optional[pa.Table] = None,
               implicit: Sequence[str] = ()) -> List[dict]:
    """One score row per group of every grouping set, in set order, each set sorted by its
    columns. Every column of any set is in every row (None where a set does not group by it).
    With `resampling.confidence`, each row also has its interval, and with `resampling.clusters`
    its rank, rank range and cluster among the systems of its comparison group: both from the
    same replicate scores, of the replicate sums in `stats` (poisson), or of sacrebleu's draws
    over `segment_stats`, every segment's statistics (sacrebleu). `implicit`:
    the output's partition columns, left out of the grouping labels."""
    all_cols = list(dict.fromkeys(c for s in sets for c in s))
    metric_for = measured_by(config)
    rows = []
    for grouping_set in sets:
        sums, plain = summed(stats, [*grouping_set, *statstable.MEASUREMENT])
        groups = plain.to_pylist()
        check_one_measurement(groups, grouping_set)
        scored = [_score_row(r, grouping_set, all_cols, metric_for(r), implicit) for r in groups]
        if resampling is not None and resampling.bootstrapped:
            replicates = [replicate_scores(row, group, index, sums, segment_stats, grouping_set,
                                            config, resampling, row.measured)
                          for index, (row, group) in enumerate(zip(scored, groups))]
            if resampling.confidence:
                add_intervals(scored, replicates, resampling)
            if resampling.clusters:
                add_clusters(scored, replicates, groups, grouping_set)
            sign_bootstrap(scored, replicates, resampling)
        scored.sort(key=lambda r: (*((r[c] is not None, r[c]) for c in grouping_set),
                                   metrics.order_of(r["metric"])))
        rows.extend(scored)
    return rows


def measured_by(config: metrics.Choices):
    """`metric_of` for the rows of one scoring, made once per measurement (a group a row of
    a million groups would otherwise parse the same settings a million times)."""
    made = {}

    def metric_for(row: dict) -> metrics.Metric:
        key = tuple(row[m] for m in statstable.MEASUREMENT)
        if key not in made:
            made[key] = metric_of(row, config)
        return made[key]

    return metric_for


def _score_row(sums: dict, grouping_set: GroupingSet, all_cols, metric: metrics.Metric,
               implicit: Sequence[str] = ()) -> dict:
    row = ScoreRow((c, sums.get(c) if c in grouping_set else None) for c in all_cols)
    row[GROUPING] = label(grouping_set, implicit)
    row["metric"] = metric.name
    row.measured = metric
    statistics = [sums[name] for name in metric.names]
    if sums["n_segments"]:
        row.update(metric.result(statistics, sums))
        row.statistics = dict(zip(metric.names, statistics))
    else:  # every row of the group was rejected: listed, with no score
        row.update(dict.fromkeys(metric.result_fields()), n_segments=0)
        row.statistics = dict.fromkeys(metric.names)
    row.sacrebleu = metric.sacrebleu_json(row)
    row["n_rejected"] = sums["n_rejected"]
    row["n_reference_segments"] = expected = sums["n_reference_segments"]
    row["coverage"] = row["n_segments"] / expected if expected else None
    return row
