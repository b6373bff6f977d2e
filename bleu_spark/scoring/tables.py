"""The shapes of what a result holds: the fields of the scores, dashboard and paired tables as
Arrow tables, the rows of `scores.json`, and the names a group column may not take."""
from __future__ import annotations

from typing import List, Sequence

import pyarrow as pa

from .. import metrics, statstable
from ..resampling import clusters
from ..errors import UsageError
from .sets import GroupingSet

GROUPING = "grouping"   # names the grouping set of a row, e.g. "langpair,system"
SEGMENT_ORDER = "segment_order"  # a segment's rank in segment-key order, in a segments table

# sacrebleu's JSON fields in `scores.json`, each after the row's field it goes with.
SACREBLEU_JSON_AFTER = {"metric": "name", "verbose": "verbose_score"}

# The fields of a score row: the metric, every metric's result fields, then the shared ones.
SCORE_TYPES = {"metric": pa.string(), **metrics.result_types(), "n_rejected": pa.int64(),
               "n_reference_segments": pa.int64(), "coverage": pa.float64(),
               "bs_mean": pa.float64(), "ci_low": pa.float64(), "ci_high": pa.float64(),
               "ci_halfwidth": pa.float64(), "n_bootstrap": pa.int64(), "seed": pa.int64(),
               "bootstrap_method": pa.string(),
               **dict.fromkeys(clusters.FIELDS, pa.int64())}
INTERVAL_FIELDS = ("bs_mean", "ci_low", "ci_high", "ci_halfwidth", "n_bootstrap", "seed",
                   "bootstrap_method")
# Fields a table holds only when some row has them (a run with intervals, with clusters).
OPTIONAL_FIELDS = (*INTERVAL_FIELDS, *clusters.FIELDS)
PAIRED_TYPES = {"metric": pa.string(), "system": pa.string(), "baseline": pa.string(), "test": pa.string(),
                "delta": pa.float64(), "p_value": pa.float64(), "delta_ci_low": pa.float64(),
                "delta_ci_high": pa.float64()}
# A dashboard row: the metric and score, the statistics columns, these, the run.
DASHBOARD_SHARED = ("n_segments", "n_rejected", "n_reference_segments", "coverage", "signature",
                    "tokenize", "ci_low", "ci_high", *clusters.FIELDS)
DASHBOARD_FIELDS = ("metric", "score", *DASHBOARD_SHARED, "run_id", "run_time")
# Names the job writes next to group columns: a group column may not be called one of them.
RESERVED = frozenset([GROUPING, *SCORE_TYPES, *DASHBOARD_FIELDS, *statstable.MEASUREMENT,
                      statstable.RESAMPLING, *statstable.COUNTS, *statstable.REFS,
                      *statstable.SAMPLES, SEGMENT_ORDER,
                      *statstable.SEGMENT_VALUES,
                      *(set(PAIRED_TYPES) - {"system"}), "method", "reason"])


def check_group_names(columns: Sequence[str]) -> None:
    """Group columns must not collide with what the job writes beside them."""
    clashes = [c for c in columns if c in RESERVED or metrics.reserved_column(c)]
    if clashes:
        raise UsageError(f"group column {', '.join(clashes)} has the name of an output field; "
                         f"rename it in the input (reserved: score, counts, tokenize, signature, "
                         f"n_segments, sys_len, correct_N, total_N, grouping, ...)")


def paired_table(rows: List[dict], fields: Sequence[pa.Field]) -> pa.Table:
    columns = {f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in fields}
    # `system` and `baseline` are text whatever the system column's type (integer ids too)
    columns.update({c: pa.array([_as_text(r.get(c)) if t == pa.string() else r.get(c) for r in rows], t)
                    for c, t in PAIRED_TYPES.items()})
    columns["method"] = pa.array([r.get("method") for r in rows], pa.string())
    return pa.table(columns)


def _as_text(value):
    return value if value is None or isinstance(value, str) else str(value)


def group_fields(stats: pa.Table, sets: Sequence[GroupingSet]) -> List[pa.Field]:
    """The group columns of the score rows, typed as in the statistics table."""
    names = dict.fromkeys(c for s in sets for c in s)
    return [stats.schema.field(c) for c in names]


def _result_fields(rows: List[dict]) -> set:
    """The result fields of the rows' metrics (the default metric's when there are no rows)."""
    names = {r.get("metric") for r in rows} or set(metrics.DEFAULT)
    return {f for name in names if name is not None
            for f in metrics.declaration(name).result_fields()}


def scores_table(rows: List[dict], fields: Sequence[pa.Field]) -> pa.Table:
    """The score rows as a table: a column for each field of the rows' metrics, the shared
    fields, and the interval fields when intervals were computed."""
    columns = {f.name: pa.array([r[f.name] for r in rows], f.type) for f in fields}
    columns[GROUPING] = pa.array([r[GROUPING] for r in rows], pa.string())
    own, every = _result_fields(rows), set(metrics.result_types())
    columns.update({c: pa.array([r.get(c) for r in rows], t) for c, t in SCORE_TYPES.items()
                    if (c not in OPTIONAL_FIELDS or any(r.get(c) is not None for r in rows))
                    and (c not in every or c in own)})
    return pa.table(columns)


def dashboard_table(rows: List[dict], fields: Sequence[pa.Field], run_id: str,
                    run_time: str) -> pa.Table:
    """Tidy long format, one row per group and metric, with the raw summed statistics (each
    metric's own columns, null in other metrics' rows and in groups without scored segments), so
    a BI tool re-aggregates by summing statistics (never by averaging scores)."""
    stats_of = lambda r: getattr(r, "statistics", {})
    names = metrics.stat_order(list(dict.fromkeys(n for r in rows for n in stats_of(r))))
    columns = {f.name: pa.array([r[f.name] for r in rows], f.type) for f in fields}
    columns[GROUPING] = pa.array([r[GROUPING] for r in rows], pa.string())
    columns["metric"] = pa.array([r["metric"] for r in rows], pa.string())
    columns["score"] = pa.array([r["score"] for r in rows], pa.float64())
    for name in names:
        columns[name] = pa.array([stats_of(r).get(name) for r in rows], metrics.stat_column(name).type)
    for name in DASHBOARD_SHARED:
        columns[name] = pa.array([r.get(name) for r in rows], SCORE_TYPES[name])
    columns["run_id"] = pa.array([run_id] * len(rows), pa.string())
    columns["run_time"] = pa.array([run_time] * len(rows), pa.string())
    return pa.table(columns)


def json_rows(rows: List[dict], group_cols: Sequence[str]) -> List[dict]:
    """The score rows as `scores.json` holds them: sacrebleu's JSON fields added (`name` after
    `metric`, `verbose_score` after `verbose`), except where a group column has that name."""
    return [_with_sacrebleu_fields(row, set(group_cols)) for row in rows]


def _with_sacrebleu_fields(row: dict, group_cols: set) -> dict:
    extra = {k: v for k, v in getattr(row, "sacrebleu", {}).items() if k not in group_cols}
    out = {}
    for key, value in row.items():
        out[key] = value
        added = SACREBLEU_JSON_AFTER.get(key)
        if added in extra:
            out[added] = extra[added]
    return out
