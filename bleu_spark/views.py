"""Everything shown, from summed statistics alone: scores per grouping set, the dashboard table,
the report page. `score` and `aggregate` both call this module, so no two views can disagree.
"""
from __future__ import annotations

import dataclasses
from typing import List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from . import statstable
from .config import AUTO, BleuConfig
from .errors import IncompatibleStatisticsError, MixedTokenizerGroupError, UsageError
from .scoring import build_result
from .signature import bleu_signature, nrefs_label
from .stats import stats_names

GroupingSet = Tuple[str, ...]

GROUPING = "grouping"   # names the grouping set of a row, e.g. "langpair,system"
RESULT_FIELDS = ("score", "counts", "totals", "precisions", "bp", "ratio", "sys_len", "ref_len",
                 "n_segments", "tokenize", "signature", "verbose")
SCORE_TYPES = {"score": pa.float64(), "counts": pa.list_(pa.int64()),
               "totals": pa.list_(pa.int64()), "precisions": pa.list_(pa.float64()),
               "bp": pa.float64(), "ratio": pa.float64(), "sys_len": pa.int64(),
               "ref_len": pa.int64(), "n_segments": pa.int64(), "tokenize": pa.string(),
               "signature": pa.string(), "verbose": pa.string(), "n_rejected": pa.int64(),
               "n_reference_segments": pa.int64(), "coverage": pa.float64()}
DASHBOARD_FIELDS = ("metric", "score", "n_segments", "n_rejected", "n_reference_segments",
                    "coverage", "signature", "tokenize", "run_id", "run_time")
# Names the job writes next to group columns: a group column may not be called one of them.
RESERVED = frozenset([GROUPING, *SCORE_TYPES, *DASHBOARD_FIELDS, *statstable.MEASUREMENT,
                      *statstable.COUNTS, *statstable.REFS, "reason"])


def label(grouping_set: GroupingSet) -> str:
    return ",".join(grouping_set)


def check_group_names(columns: Sequence[str]) -> None:
    """Group columns must not collide with what the job writes beside them."""
    clashes = [c for c in columns if c in RESERVED or c.startswith(("correct_", "total_"))]
    if clashes:
        raise UsageError(f"group column {', '.join(clashes)} has the name of an output field; "
                         f"rename it in the input (reserved: score, counts, tokenize, signature, "
                         f"n_segments, sys_len, correct_N, total_N, grouping, ...)")


def scoring_config(config: BleuConfig) -> BleuConfig:
    """The scoring choices alone; the measurement settings come from each statistics row."""
    return dataclasses.replace(config, tokenize=AUTO, spm_model=None)


def score_sets(stats: pa.Table, sets: Sequence[GroupingSet], config: BleuConfig) -> List[dict]:
    """One score row per group of every grouping set, in set order, each set sorted by its
    columns. Every column of any set is in every row (None where a set does not group by it)."""
    all_cols = list(dict.fromkeys(c for s in sets for c in s))
    rows = []
    for grouping_set in sets:
        sums = statstable.summed(stats, [*grouping_set, *statstable.MEASUREMENT])
        _check_one_measurement(sums, grouping_set)
        scored = [_score_row(r, grouping_set, all_cols, config) for r in sums.to_pylist()]
        scored.sort(key=lambda r: tuple((r[c] is not None, r[c]) for c in grouping_set))
        rows.extend(scored)
    return rows


def _check_one_measurement(sums: pa.Table, grouping_set: GroupingSet) -> None:
    """Statistics measured differently (another tokenizer, case, max order, version) never add up."""
    keys = list(grouping_set)
    per_group = sums.group_by(keys, use_threads=False).aggregate([(keys[0] if keys else "metric", "count")])
    counts = per_group.column(per_group.num_columns - 1) if keys else pa.array([sums.num_rows])
    if sums.num_rows == 0 or pc.max(counts).as_py() <= 1:
        return
    mixed_at = pc.index(pc.greater(counts, 1), True).as_py()
    key = {k: per_group[k][mixed_at].as_py() for k in keys}
    mask = pa.array([True] * sums.num_rows)
    for k, v in key.items():
        mask = pc.and_(mask, pc.is_null(sums[k]) if v is None else pc.equal(sums[k], v))
    rows = sums.filter(mask).to_pylist()
    differing = {m: sorted({str(r[m]) for r in rows}) for m in statstable.MEASUREMENT
                 if len({r[m] for r in rows}) > 1}
    where = ", ".join(f"{k}={v}" for k, v in key.items()) or "the whole table"
    what = "; ".join(f"{m}: {' vs '.join(v)}" for m, v in differing.items())
    if set(differing) <= {"tokenize", "tokenizer_signature"}:
        raise MixedTokenizerGroupError(
            f"group {where} would mix statistics of different tokenizers ({what}); group by "
            f"the language pair too, or score with one --tokenize")
    raise IncompatibleStatisticsError(
        f"group {where} would sum statistics measured with different settings ({what}); "
        f"aggregate them separately")


def _score_row(sums: dict, grouping_set: GroupingSet, all_cols, config: BleuConfig) -> dict:
    row = {c: sums.get(c) if c in grouping_set else None for c in all_cols}
    row[GROUPING] = label(grouping_set)
    if sums["n_segments"]:
        order = sums["max_ngram_order"]
        measured = dataclasses.replace(scoring_config(config), lowercase=sums["lowercase"],
                                       max_ngram_order=order)
        signature = bleu_signature(measured, nrefs_label(sums["min_refs"], sums["max_refs"]),
                                   sums["tokenizer_signature"], sums["sacrebleu_version"])
        result = build_result([sums[s] for s in stats_names(order)], measured,
                              sums["n_segments"], sums["tokenize"], signature)
        row.update(result.to_dict())
    else:  # every row of the group was rejected: listed, with no score
        row.update(dict.fromkeys(RESULT_FIELDS), n_segments=0)
    row["n_rejected"] = sums["n_rejected"]
    row["n_reference_segments"] = expected = sums["n_reference_segments"]
    row["coverage"] = row["n_segments"] / expected if expected else None
    return row


def group_fields(stats: pa.Table, sets: Sequence[GroupingSet]) -> List[pa.Field]:
    """The group columns of the score rows, typed as in the statistics table."""
    names = dict.fromkeys(c for s in sets for c in s)
    return [stats.schema.field(c) for c in names]


def scores_table(rows: List[dict], fields: Sequence[pa.Field]) -> pa.Table:
    columns = {f.name: pa.array([r[f.name] for r in rows], f.type) for f in fields}
    columns[GROUPING] = pa.array([r[GROUPING] for r in rows], pa.string())
    columns.update({c: pa.array([r.get(c) for r in rows], t) for c, t in SCORE_TYPES.items()})
    return pa.table(columns)


def dashboard_table(rows: List[dict], fields: Sequence[pa.Field], run_id: str,
                    run_time: str) -> pa.Table:
    """Tidy long format, one row per group and metric, with the raw summed statistics, so a BI
    tool re-aggregates by summing statistics (never by averaging scores)."""
    order = max((len(r["counts"]) for r in rows if r["counts"]), default=4)
    columns = {f.name: pa.array([r[f.name] for r in rows], f.type) for f in fields}
    columns[GROUPING] = pa.array([r[GROUPING] for r in rows], pa.string())
    columns["metric"] = pa.array([statstable.METRIC] * len(rows), pa.string())
    columns["score"] = pa.array([r["score"] for r in rows], pa.float64())
    columns["sys_len"] = pa.array([r["sys_len"] for r in rows], pa.int64())
    columns["ref_len"] = pa.array([r["ref_len"] for r in rows], pa.int64())
    for kind, field in (("correct", "counts"), ("total", "totals")):
        for n in range(order):
            columns[f"{kind}_{n + 1}"] = pa.array(
                [r[field][n] if r[field] and n < len(r[field]) else None for r in rows], pa.int64())
    for name in ("n_segments", "n_rejected", "n_reference_segments", "coverage", "signature",
                 "tokenize"):
        columns[name] = pa.array([r[name] for r in rows], SCORE_TYPES[name])
    columns["run_id"] = pa.array([run_id] * len(rows), pa.string())
    columns["run_time"] = pa.array([run_time] * len(rows), pa.string())
    return pa.table(columns)


def report_set(sets: Sequence[GroupingSet], partition_by: Sequence[str] = ()) -> GroupingSet:
    """The grouping the report draws: the first set with language pair and system, else the
    first set; without the partition columns, which become the report's time axis."""
    chosen = next((s for s in sets if {"langpair", "system"} <= set(s)), sets[0] if sets else ())
    return tuple(c for c in chosen if c not in partition_by)


def report_html(stats: pa.Table, sets: Sequence[GroupingSet], config: BleuConfig,
                partition_by: Sequence[str] = (), run: Optional[dict] = None,
                title: str = "bleu-spark report") -> str:
    """The report page of a statistics table: the report set over all of it, and when the table
    is partitioned, the same set per value of the first partition column (a line over time)."""
    from .report import render_report

    shown = report_set(sets, partition_by)
    scores = score_sets(stats, [shown], config)
    history, time_col = None, None
    if partition_by:
        time_col = partition_by[0]
        history = score_sets(stats, [(time_col, *shown)], config)
    return render_report(scores, group_cols=list(shown), title=title, run=run,
                         history=history, time_col=time_col)


def write_views(output, stats: pa.Table, scores: List[dict], sets: Sequence[GroupingSet],
                config: BleuConfig, run: dict, report: bool) -> None:
    """The tables and files every result holds, from its statistics and their scores. A
    partitioned folder's report is drawn after the commit, over all its partitions."""
    fields = group_fields(stats, sets)
    output.write_table("stats", stats)
    output.write_table("scores", scores_table(scores, fields))
    output.write_table("dashboard", dashboard_table(scores, fields, run["run_id"], run["run_time"]))
    output.write_json("scores.json", scores)
    if report and not output.partition_by:
        output.write_bytes("report.html", report_html(stats, sets, config, run=run).encode())
