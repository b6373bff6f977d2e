"""What a result folder gets from its statistics and scores: the tables, `scores.json`, the
paired tests and the report page (the grouping set it draws, over one run or every partition)."""
from __future__ import annotations

from typing import List, Optional, Sequence

import pyarrow as pa

from .. import metrics, statstable
from ..resampling import Resampling
from .rows import score_sets
from .sets import GroupingSet
from .tables import dashboard_table, group_fields, json_rows, paired_table, scores_table


def report_set(sets: Sequence[GroupingSet], partition_by: Sequence[str] = ()) -> GroupingSet:
    """The grouping the report draws: the first set with language pair and system, else the
    first set; without the partition columns, which become the report's time axis."""
    chosen = next((s for s in sets if {"langpair", "system"} <= set(s)), sets[0] if sets else ())
    return tuple(c for c in chosen if c not in partition_by)


def report_html(stats: pa.Table, sets: Sequence[GroupingSet], config: metrics.Choices,
                partition_by: Sequence[str] = (), run: Optional[dict] = None,
                title: str = "bleu-spark report", resampling: Optional[Resampling] = None,
                segments: Optional[pa.Table] = None, paired: Optional[List[dict]] = None,
                drilldown: Optional[dict] = None) -> str:
    """The report page of a statistics table: the report set over all of it (with intervals
    when they were measured), and when the table is partitioned, the same set per value of the
    first partition column (a line over time). `drilldown`: the run's worst segments, losses
    and score pairs (`spark.drilldown.highlights`), when it wrote segments."""
    from ..report import render_report

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
                config: metrics.Choices, run: dict, report: bool,
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


def without_trials(stats: pa.Table) -> pa.Table:
    """The statistics as saved: the trial sums of approximate randomization serve this run's
    paired tests only (a saved slice is re-tested with the bootstrap's replicate sums)."""
    trials = stats.schema.get_field_index(statstable.TRIAL_SUMS)
    return stats.set_column(trials, statstable.TRIAL_SUMS, pa.nulls(stats.num_rows, stats[trials].type))


def stats_after_commit(output, stats: pa.Table) -> pa.Table:
    """The statistics a partitioned folder will hold once `output` is committed: those of the
    partitions it keeps, and this run's (which replace theirs wherever this run staged)."""
    from .. import store
    from ..errors import InputNotFoundError

    stats = without_trials(stats)
    try:
        held = statstable.read(output.uri)
    except InputNotFoundError:  # nothing committed yet
        return stats
    kept = store.rows_outside(held, output.partition_by, output.staged_partitions())
    kept = _typed_like(kept, stats, output.partition_by)  # as recorded -> as this run's input
    return pa.concat_tables([kept, stats], promote_options="permissive")


def _typed_like(table: pa.Table, stats: pa.Table, columns: Sequence[str]) -> pa.Table:
    for column in columns:
        index = table.schema.get_field_index(column)
        table = table.set_column(index, column, table[column].cast(stats.schema.field(column).type))
    return table


def write_partitioned_report(output, stats: pa.Table, sets: Sequence[GroupingSet],
                             config: metrics.Choices, run: dict,
                             resampling: Optional[Resampling] = None,
                             drilldown: Optional[dict] = None) -> None:
    """The report over every partition the folder will hold, staged with the run's files: called
    by the commit before its entry, so a group it cannot score (two tokenizers, say) fails the
    run with DIR untouched."""
    page = report_html(stats_after_commit(output, stats), sets, config, output.partition_by, run,
                       resampling=resampling, drilldown=drilldown)
    output.write_bytes("report.html", page.encode())
