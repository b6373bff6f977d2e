"""Everything shown, from summed statistics alone: scores per grouping set, the dashboard table,
the report page. `score` and `aggregate` both call this module, so no two views can disagree.

Each statistics row names its metric; what it means (statistic columns, score, result fields,
signature) is that metric's declaration (`bleu_spark.metrics`): no metric is named here.
`config` is the run's scoring choices, handed to each row's metric as they are.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import metrics, statstable
from .config import AUTO, BleuConfig
from .errors import IncompatibleStatisticsError, MixedTokenizerGroupError, UsageError
from .resampling import (PAIRED_AR, PAIRED_BS, POISSON, SACREBLEU, Resampling, bootstrap_signature,
                         clusters, poisson_interval, poisson_paired_ar, poisson_paired_bs,
                         sacrebleu_interval_of, sacrebleu_paired_ar, sacrebleu_paired_bs,
                         sacrebleu_resample_scores, scores_of_sums, with_bootstrap_fields)
from .shown import shown

GroupingSet = Tuple[str, ...]

GROUPING = "grouping"   # names the grouping set of a row, e.g. "langpair,system"
SEGMENT_ORDER = "segment_order"  # a segment's rank in segment-key order, in a segments table


class ScoreRow(dict):
    """A score row (its fields), carrying its group's summed statistics (`statistics`: name ->
    value, None without scored segments) for the dashboard, and sacrebleu's JSON fields of the
    group (`sacrebleu`: `name`, `verbose_score`) for `scores.json`; neither is a field of the row."""
    statistics: dict = {}
    sacrebleu: dict = {}


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
DASHBOARD_FIELDS = ("metric", "score", "n_segments", "n_rejected", "n_reference_segments",
                    "coverage", "signature", "tokenize", "ci_low", "ci_high", *clusters.FIELDS,
                    "run_id", "run_time")
# Names the job writes next to group columns: a group column may not be called one of them.
RESERVED = frozenset([GROUPING, *SCORE_TYPES, *DASHBOARD_FIELDS, *statstable.MEASUREMENT,
                      statstable.RESAMPLING, *statstable.COUNTS, *statstable.REFS,
                      *statstable.SAMPLES, *statstable.FORMAT_1_SAMPLES, SEGMENT_ORDER,
                      *statstable.SEGMENT_VALUES,
                      *(set(PAIRED_TYPES) - {"system"}), "method", "reason"])


def label(grouping_set: GroupingSet, implicit: Sequence[str] = ()) -> str:
    """A grouping set's name, the same whatever order its columns were given in: its columns
    sorted, without the `implicit` ones (the output's partition columns, which every set of a
    partitioned run holds: a dashboard query names the grouping it asked for)."""
    return ",".join(sorted(c for c in grouping_set if c not in implicit))


def distinct_sets(sets) -> List[GroupingSet]:
    """Grouping sets without repeats, a set given twice in two orders counted once."""
    sets = [tuple(dict.fromkeys(s)) for s in sets]
    return list({frozenset(s): s for s in reversed(sets)}.values())[::-1]


def check_group_names(columns: Sequence[str]) -> None:
    """Group columns must not collide with what the job writes beside them."""
    clashes = [c for c in columns if c in RESERVED or metrics.reserved_column(c)]
    if clashes:
        raise UsageError(f"group column {', '.join(clashes)} has the name of an output field; "
                         f"rename it in the input (reserved: score, counts, tokenize, signature, "
                         f"n_segments, sys_len, correct_N, total_N, grouping, ...)")


def scoring_config(config: BleuConfig) -> BleuConfig:
    """The scoring choices alone; the measurement settings come from each statistics row."""
    return dataclasses.replace(config, tokenize=AUTO, spm_model=None)


def metric_of(row: dict, config) -> metrics.Metric:
    """The metric of a statistics row, with its measurement and the run's scoring choices."""
    return metrics.of_row(row, config)


def _summed(stats: pa.Table, keys) -> Tuple[pa.Table, pa.Table]:
    """The sums per key, and the same without the replicate and trial sums: the rows read as
    Python values (the packed sums are read per group as matrices, never as Python lists)."""
    sums = statstable.summed(stats, keys)
    return sums, sums.drop_columns(list(statstable.SAMPLES))


def score_sets(stats: pa.Table, sets: Sequence[GroupingSet], config: BleuConfig,
               resampling: Optional[Resampling] = None,
               segments: Optional[pa.Table] = None, implicit: Sequence[str] = ()) -> List[dict]:
    """One score row per group of every grouping set, in set order, each set sorted by its
    columns. Every column of any set is in every row (None where a set does not group by it).
    With `resampling.confidence`, each row also has its interval, and with `resampling.clusters`
    its rank, rank range and cluster among the systems of its comparison group: both from the
    same replicate scores, of the replicate sums in `stats` (poisson), or of sacrebleu's draws
    over `segments`, every segment's statistics (sacrebleu). `implicit`:
    the output's partition columns, left out of the grouping labels."""
    all_cols = list(dict.fromkeys(c for s in sets for c in s))
    rows = []
    for grouping_set in sets:
        sums, plain = _summed(stats, [*grouping_set, *statstable.MEASUREMENT])
        groups = plain.to_pylist()
        _check_one_measurement(groups, grouping_set)
        scored = [_score_row(r, grouping_set, all_cols, config, implicit) for r in groups]
        if resampling is not None and resampling.bootstrapped:
            replicates = [_replicate_scores(row, group, index, sums, segments, grouping_set,
                                            config, resampling)
                          for index, (row, group) in enumerate(zip(scored, groups))]
            if resampling.confidence:
                _add_intervals(scored, replicates, resampling)
            if resampling.clusters:
                _add_clusters(scored, replicates, grouping_set,
                              same_draws=resampling.method == SACREBLEU)
            _sign_bootstrap(scored, replicates, resampling)
        scored.sort(key=lambda r: (*((r[c] is not None, r[c]) for c in grouping_set),
                                   metrics.order_of(r["metric"])))
        rows.extend(scored)
    return rows


def measured_config(config, sums: dict) -> metrics.Metric:
    """The metric of one statistics row: its measurement settings with the scoring choices."""
    return metric_of(sums, config)


# A bootstrap over fewer segments says nothing of the corpus: with one segment, every resample
# is that segment scaled (the same score) or nothing (0), an interval of [0, score].
MIN_INTERVAL_SEGMENTS = 2


def _replicate_scores(row: dict, group: dict, index: int, sums: pa.Table, segments,
                      grouping_set, config: BleuConfig, resampling: Resampling):
    """A group's bootstrap replicate scores, (B,): from its replicate sums (poisson) or from
    sacrebleu's draws over its segments; None for a group without enough segments."""
    poisson = resampling.method == POISSON
    if not row["n_segments"] or (poisson and row["n_segments"] < MIN_INTERVAL_SEGMENTS):
        return None
    measured = measured_config(config, group)
    if poisson:
        replicates = _sample_matrix(sums, statstable.REPLICATE_SUMS, index, group, grouping_set,
                                    measured.width)
        return scores_of_sums(replicates, measured)
    _, scores = sacrebleu_resample_scores(
        segment_matrix(segments, grouping_set, group, measured), measured,
        resampling.n_bootstrap, resampling.seed)
    return scores


def _add_intervals(rows: List[dict], replicates: List, resampling: Resampling) -> None:
    for row, scores in zip(rows, replicates):
        if scores is None:
            row.update(dict.fromkeys(INTERVAL_FIELDS))
        elif resampling.method == POISSON:
            row.update(poisson_interval(row["score"], scores, resampling.seed).to_dict())
        else:
            row.update(sacrebleu_interval_of(row["score"], scores, resampling.seed).to_dict())


def _sign_bootstrap(rows: List[dict], replicates: List, resampling: Resampling) -> None:
    """A row whose figures come from resamples names the draws in its signature, as sacrebleu."""
    fields = bootstrap_signature(resampling.method, resampling.n_bootstrap,
                                 resampling.seed)
    for row, scores in zip(rows, replicates):
        if scores is not None:
            row["signature"] = with_bootstrap_fields(row["signature"], fields)


def check_clusters(sets: Sequence[GroupingSet], system_col: str = "system") -> None:
    """Clusters rank systems: some grouping set must hold the system column."""
    if not any(system_col in s for s in sets):
        raise UsageError(f"--clusters ranks systems: {system_col} must be a group column")


def _add_clusters(rows: List[dict], replicates: List, grouping_set: GroupingSet,
                  same_draws: bool, system_col: str = "system") -> None:
    """Rank ranges and clusters within each comparison group (the paired tests' groups: every
    group column but the system, per metric); none in a grouping set without systems.
    `same_draws`: sacrebleu's draws pick segments by position, so they are the same draws for
    every system only where every system has the same segments (as its paired test asks)."""
    if system_col not in grouping_set:
        for row in rows:
            row.update(dict.fromkeys(clusters.FIELDS))
        return
    others = [c for c in grouping_set if c != system_col]
    key_of = lambda r: (*(r[c] for c in others), r["metric"])  # noqa: E731
    if same_draws:
        _check_same_draws(rows, replicates, key_of, system_col)
    clusters.add_clusters(
        rows, replicates, key_of=key_of,
        name_of=lambda r: r[system_col],
        higher_is_better_of=lambda r: metrics.REGISTRY[r["metric"]].higher_is_better)


def _check_same_draws(rows: List[dict], replicates: List, key_of, system_col: str) -> None:
    counts: Dict[tuple, dict] = {}
    for row, scores in zip(rows, replicates):
        if scores is not None:
            counts.setdefault(key_of(row), {})[shown(row[system_col])] = row["n_segments"]
    for key, by_system in counts.items():
        if len(set(by_system.values())) > 1:
            listed = ", ".join(f"{name} {n}" for name, n in sorted(by_system.items()))
            raise UsageError(f"--clusters with --bootstrap-method sacrebleu: the systems of "
                             f"{' · '.join(map(shown, key[:-1])) or 'the comparison'} ({key[-1]}) "
                             f"have different numbers of segments ({listed}), so sacrebleu's draws "
                             f"would not be the same for all; use --bootstrap-method poisson")


def _sample_matrix(sums: pa.Table, column: str, index: int, group: dict, grouping_set,
                   width: int) -> np.ndarray:
    """A group's replicate or trial sums as a (samples, width) matrix; a clear error when its
    rows hold none, or sums of different draws."""
    matrix = statstable.sample_matrix(sums, column, index, width)
    if matrix is None:
        where = ", ".join(f"{c}={group[c]}" for c in grouping_set) or "the whole table"
        raise UsageError(f"group {where} holds no {column.replace('_', ' ')} of one draw "
                         f"(resampling: {group[statstable.RESAMPLING] or 'none'}): score it with "
                         f"--confidence, or select rows of one draw with --where")
    return matrix


def segment_matrix(segments: pa.Table, grouping_set: GroupingSet, group: dict,
                   metric: Optional[metrics.Metric] = None) -> np.ndarray:
    """The statistics of a group's segments, in segment-key order (sacrebleu's line order)."""
    metric = metric or metric_of(group, None)
    mask = pa.array([True] * segments.num_rows)
    for column in [*grouping_set, "tokenize", "metric"]:
        value = group[column]
        mask = pc.and_(mask, pc.is_null(segments[column]) if value is None
                       else pc.fill_null(pc.equal(segments[column], value), False))
    rows = segments.filter(mask).sort_by([(SEGMENT_ORDER, "ascending")])
    names = metric.names
    return np.column_stack([rows[n].to_numpy() for n in names]).astype(np.int64)


def _check_one_measurement(sums: List[dict], grouping_set: GroupingSet) -> None:
    """Statistics measured differently (another tokenizer, case, max order, version) never add
    up: `sums` has a row per group and measurement, so a group with two rows is refused."""
    seen = {}
    for row in sums:
        key = (*(row[c] for c in grouping_set), row["metric"])
        if key not in seen:
            seen[key] = row
            continue
        differing = {m: f"{seen[key][m]} vs {row[m]}" for m in statstable.MEASUREMENT
                     if seen[key][m] != row[m]}
        where = ", ".join(f"{c}={v}" for c, v in zip(grouping_set, key)) or "the whole table"
        where += "" if row["metric"] == statstable.METRIC else f" ({row['metric']})"
        what = "; ".join(f"{m}: {v}" for m, v in differing.items())
        if set(differing) <= {"tokenize", "tokenizer_signature"}:
            raise MixedTokenizerGroupError(
                f"group {where} would mix statistics of different tokenizers ({what}); group "
                f"by the language pair too, or score with one --tokenize")
        raise IncompatibleStatisticsError(
            f"group {where} would sum statistics measured with different settings ({what}); "
            f"aggregate them separately")


def _score_row(sums: dict, grouping_set: GroupingSet, all_cols, config: BleuConfig,
               implicit: Sequence[str] = ()) -> dict:
    row = ScoreRow((c, sums.get(c) if c in grouping_set else None) for c in all_cols)
    row[GROUPING] = label(grouping_set, implicit)
    metric = metric_of(sums, config)
    row["metric"] = metric.name
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


def paired_rows(stats: pa.Table, sets: Sequence[GroupingSet], config: BleuConfig,
                resampling: Resampling, segments: Optional[pa.Table] = None,
                system_col: str = "system") -> Tuple[List[dict], List[str]]:
    """Paired tests of every system against the baseline, within each group of the other columns
    of the first grouping set holding `system_col` (e.g. each testset x langpair), and warnings
    for comparison groups the baseline is missing from."""
    grouping_set = next((s for s in sets if system_col in s), None)
    if grouping_set is None:
        raise UsageError(f"paired tests compare systems: {system_col} must be a group column")
    others = [c for c in grouping_set if c != system_col]
    keys = [*grouping_set, *statstable.MEASUREMENT]
    sums, plain = _summed(stats, keys)
    groups = plain.to_pylist()
    _check_one_measurement(groups, grouping_set)
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
        for system, row in sorted(systems.items(), key=lambda kv: str(kv[0])):
            if system == baseline:
                continue
            tests = _paired(base, row, sums, config, resampling, segments, grouping_set)
            results += [{**where, "metric": metric, "system": system,
                         "baseline": resampling.baseline, **t} for t in tests]
    return results, warnings


def _check_same_segments(base: dict, row: dict, grouping_set) -> None:
    """Paired tests compare two systems on the same segments: replicate sums of different
    segment sets would compare different test sets (the fingerprint sums the segments' hashes)."""
    same = (base["n_segments"] == row["n_segments"]
            and base["segment_fingerprint"] == row["segment_fingerprint"])
    if not same:
        where = ", ".join(f"{c}={row[c]}" for c in grouping_set)
        raise UsageError(f"{where} covers other segments than its baseline ({row['n_segments']} "
                         f"vs {base['n_segments']} segments): paired tests need the same segments; "
                         f"select the shared ones, or score with --segment-key")


def _paired(base: dict, row: dict, sums: pa.Table, config, resampling, segments,
            grouping_set) -> List[dict]:
    measured = measured_config(config, row)
    names = measured.names
    vector = lambda r: np.array([r[n] for n in names], np.int64)
    samples = lambda r, column: _sample_matrix(sums, column, r["_index"], r, grouping_set,
                                               measured.width)
    poisson = resampling.method == POISSON
    if poisson:
        _check_same_segments(base, row, grouping_set)
    done = []
    if resampling.paired_bs:
        if poisson:
            result = poisson_paired_bs(
                vector(base), samples(base, statstable.REPLICATE_SUMS), vector(row),
                samples(row, statstable.REPLICATE_SUMS), measured)
        else:
            result = sacrebleu_paired_bs(
                segment_matrix(segments, grouping_set, base, measured),
                segment_matrix(segments, grouping_set, row, measured),
                measured, resampling.n_bootstrap, resampling.seed)
        done.append({**result.to_dict(), "test": PAIRED_BS})
    if resampling.paired_ar:
        if poisson:
            result = poisson_paired_ar(
                vector(base), vector(row), samples(base, statstable.TRIAL_SUMS),
                samples(row, statstable.TRIAL_SUMS), measured)
        else:
            result = sacrebleu_paired_ar(
                segment_matrix(segments, grouping_set, base, measured),
                segment_matrix(segments, grouping_set, row, measured),
                measured, resampling.n_ar_trials, resampling.seed)
        done.append({**result.to_dict(), "test": PAIRED_AR})
    return [dict(t, method=resampling.method) for t in done]


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
    return {f for name in names if name in metrics.REGISTRY
            for f in metrics.REGISTRY[name].result_fields()}


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
        columns[name] = pa.array([stats_of(r).get(name) for r in rows], pa.int64())
    for name in ("n_segments", "n_rejected", "n_reference_segments", "coverage", "signature",
                 "tokenize", "ci_low", "ci_high", *clusters.FIELDS):
        columns[name] = pa.array([r.get(name) for r in rows], SCORE_TYPES[name])
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
                title: str = "bleu-spark report", resampling: Optional[Resampling] = None,
                segments: Optional[pa.Table] = None, paired: Optional[List[dict]] = None,
                drilldown: Optional[dict] = None) -> str:
    """The report page of a statistics table: the report set over all of it (with intervals
    when they were measured), and when the table is partitioned, the same set per value of the
    first partition column (a line over time). `drilldown`: the run's worst segments, losses
    and score pairs (`spark.drilldown.highlights`), when it wrote segments."""
    from .report import render_report

    shown = report_set(sets, partition_by)
    scores = score_sets(stats, [shown], config, resampling, segments)
    history, time_col = None, None
    if partition_by:
        time_col = partition_by[0]
        history = score_sets(stats, [(time_col, *shown)], config)
    # The header names the partitions the page covers: its run facts are the last run's alone.
    partitions = {c: stats[c].unique().to_pylist() for c in partition_by}
    return render_report(scores, group_cols=list(shown), title=title, run=run,
                         history=history, time_col=time_col, paired=paired, partitions=partitions,
                         drilldown=drilldown)


def write_views(output, stats: pa.Table, scores: List[dict], sets: Sequence[GroupingSet],
                config: BleuConfig, run: dict, report: bool,
                resampling: Optional[Resampling] = None,
                segments: Optional[pa.Table] = None, paired: Optional[List[dict]] = None,
                drilldown: Optional[dict] = None) -> None:
    """The tables and files every result holds, from its statistics and their scores. A
    partitioned folder's report is drawn at the commit (`write_partitioned_report`). The trial
    sums of approximate randomization are not kept: they serve this run's paired tests only."""
    fields = group_fields(stats, sets)
    output.write_table("stats", without_trials(stats))
    output.write_table("scores", scores_table(scores, fields))
    output.write_table("dashboard", dashboard_table(scores, fields, run["run_id"], run["run_time"]))
    output.write_json("scores.json", json_rows(scores, [f.name for f in fields]))
    if paired is not None:
        compared = [f for f in fields if any(f.name in r for r in paired) and f.name != "system"]
        output.write_table("paired", paired_table(paired, compared))
        output.write_json("paired.json", paired)
    if report and not output.partition_by:
        page = report_html(stats, sets, config, run=run, resampling=resampling,
                           segments=segments, paired=paired, drilldown=drilldown)
        output.write_bytes("report.html", page.encode())


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


def without_trials(stats: pa.Table) -> pa.Table:
    """The statistics as saved: the trial sums of approximate randomization serve this run's
    paired tests only (a saved slice is re-tested with the bootstrap's replicate sums)."""
    trials = stats.schema.get_field_index(statstable.TRIAL_SUMS)
    return stats.set_column(trials, statstable.TRIAL_SUMS, pa.nulls(stats.num_rows, stats[trials].type))


def stats_after_commit(output, stats: pa.Table) -> pa.Table:
    """The statistics a partitioned folder will hold once `output` is committed: those of the
    partitions it keeps, and this run's (which replace theirs wherever this run staged)."""
    from . import output as out
    from .errors import InputNotFoundError

    stats = without_trials(stats)
    try:
        held = statstable.read(output.uri)
    except InputNotFoundError:  # nothing committed yet
        return stats
    kept = out.rows_outside(held, output.partition_by, output.staged_partitions())
    kept = _typed_like(kept, stats, output.partition_by)  # as recorded -> as this run's input
    return pa.concat_tables([kept, stats], promote_options="permissive")


def _typed_like(table: pa.Table, stats: pa.Table, columns: Sequence[str]) -> pa.Table:
    for column in columns:
        index = table.schema.get_field_index(column)
        table = table.set_column(index, column, table[column].cast(stats.schema.field(column).type))
    return table


def write_partitioned_report(output, stats: pa.Table, sets: Sequence[GroupingSet],
                             config: BleuConfig, run: dict,
                             resampling: Optional[Resampling] = None,
                             drilldown: Optional[dict] = None) -> None:
    """The report over every partition the folder will hold, into the staging folder: called
    by the commit before any move, so a group it cannot score (two tokenizers, say) fails the
    run with DIR untouched."""
    page = report_html(stats_after_commit(output, stats), sets, config, output.partition_by, run,
                       resampling=resampling, drilldown=drilldown)
    output.write_bytes("report.html", page.encode())
