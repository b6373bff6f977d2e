"""A chunk of summed rows scored a column at a time: the scores and dashboard tables that
`score_sets` with `scores_table` and `dashboard_table` make of it, made without a score row per
group (a result of a million groups spends most of its time building rows no one reads).

Only for metrics that give their results as columns (`Metric.result_columns`) and groups
without replicate sums; anything else (another metric, intervals and clusters, a group of two
measurements, which the row path refuses) is None, and its chunk is scored row by row. The rows
a person reads (the first ones, a row of each signature) are still made by `score_sets`.
"""
from __future__ import annotations

from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .. import metrics, statstable
from .sets import GroupingSet, label
from .tables import DASHBOARD_SHARED, GROUPING, SCORE_TYPES

ORDER = "__metric_order"


class Scored(NamedTuple):
    ordered: pa.Table       # the chunk's statistics rows in the score rows' order
    scores: pa.Table        # its scores table (the columns of its rows' metrics)
    dashboard: pa.Table


def scored(chunk: pa.Table, grouping_set: GroupingSet, fields: Sequence[pa.Field],
           metric_for: Callable, implicit: Sequence[str], run_id: str,
           run_time: str) -> Optional[Scored]:
    """The chunk's tables, or None where its rows must be scored one at a time. `chunk`: rows
    of the set's groups and their measurements."""
    ordered = in_set_order(chunk, grouping_set)
    # A group of two rows (two measurements, which the row path refuses, or rows a table at its
    # own grain repeats, which it adds up) is the row path's.
    if _two_measurements_in_a_group(ordered, grouping_set):
        return None
    by_measurement = _by_measurement(ordered, metric_for)
    results = _results(ordered, by_measurement)
    if results is None:
        return None
    n = ordered.num_rows
    expected = ordered["n_reference_segments"].to_pylist()
    coverage = [s / e if e else None for s, e in zip(results["n_segments"], expected)]
    grouping = pa.array([label(grouping_set, implicit)] * n, pa.string())
    groups = {f.name: ordered[f.name] if f.name in grouping_set else pa.nulls(n, f.type)
              for f in fields}
    shared = {"n_rejected": ordered["n_rejected"],
              "n_reference_segments": ordered["n_reference_segments"],
              "coverage": pa.array(coverage, pa.float64())}
    typed = {name: pa.array(values, SCORE_TYPES[name]) for name, values in results.items()}
    scores = pa.table({**groups, GROUPING: grouping, "metric": ordered["metric"], **typed,
                       **shared})
    dashboard = {**groups, GROUPING: grouping, "metric": ordered["metric"].cast(pa.string()),
                 "score": typed["score"], **_statistics(ordered, by_measurement)}
    for name in DASHBOARD_SHARED:
        made = typed.get(name, shared.get(name))
        dashboard[name] = pa.nulls(n, SCORE_TYPES[name]) if made is None else made.cast(
            SCORE_TYPES[name])
    dashboard["run_id"] = pa.array([run_id] * n, pa.string())
    dashboard["run_time"] = pa.array([run_time] * n, pa.string())
    return Scored(ordered, scores, pa.table(dashboard))


def in_set_order(stats: pa.Table, grouping_set: GroupingSet) -> pa.Table:
    """The rows in the order `score_sets` gives them: by the set's columns, nulls first, then
    by their metric's place among the kinds."""
    names = pc.unique(stats["metric"])
    places = pa.array([metrics.order_of(m) for m in names.to_pylist()], pa.int64())
    keyed = stats.append_column(ORDER, places.take(pc.index_in(stats["metric"], names)))
    by = [(c, "ascending", "at_start") for c in grouping_set] + [(ORDER, "ascending")]
    return keyed.sort_by(by).drop_columns([ORDER])


def _two_measurements_in_a_group(ordered: pa.Table, grouping_set: GroupingSet) -> bool:
    keys = [*grouping_set, "metric"]
    return ordered.select(keys).group_by(keys).aggregate([]).num_rows < ordered.num_rows


def _by_measurement(ordered: pa.Table, metric_for: Callable) -> List[Tuple[object, List[int]]]:
    """Each distinct measurement's metric and the rows it measured, in order of appearance."""
    rows = {}
    keys = zip(*(ordered[c].to_pylist() for c in statstable.MEASUREMENT))
    for index, key in enumerate(keys):
        rows.setdefault(key, []).append(index)
    return [(metric_for(dict(zip(statstable.MEASUREMENT, key))), indices)
            for key, indices in rows.items()]


def _results(ordered: pa.Table, by_measurement) -> Optional[dict]:
    """Each result field's values in row order (None where the row's metric has no such field),
    or None when a metric gives no columns."""
    if len(by_measurement) == 1:
        return by_measurement[0][0].result_columns(ordered)
    parts = []
    for metric, indices in by_measurement:
        columns = metric.result_columns(ordered.take(indices))
        if columns is None:
            return None
        parts.append((indices, columns))
    names = [n for n in SCORE_TYPES if any(n in columns for _, columns in parts)]
    results = {name: [None] * ordered.num_rows for name in names}
    for indices, columns in parts:
        for name, values in columns.items():
            merged = results[name]
            for index, value in zip(indices, values):
                merged[index] = value
    return results


def _statistics(ordered: pa.Table, by_measurement) -> dict:
    """The dashboard's statistics columns: a row's own metric's (null in other metrics' rows and
    in groups without scored segments), in the kinds' order."""
    names = metrics.stat_order(list(dict.fromkeys(
        name for metric, _ in by_measurement for name in metric.names)))
    counted = ordered["n_segments"].to_pylist()
    columns = {}
    for name in names:
        valid = [False] * ordered.num_rows
        for metric, indices in by_measurement:
            if name in metric.names:
                for index in indices:
                    valid[index] = bool(counted[index])
        kind = metrics.stat_column(name).type
        columns[name] = pc.if_else(pa.array(valid), ordered[name].cast(kind),
                                   pa.scalar(None, kind))
    return columns
