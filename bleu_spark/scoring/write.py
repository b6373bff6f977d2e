"""What a result holds, from its statistics and scores: the tables, `scores.json`, the paired
tests and the report page (the grouping set it draws, over one run or every partition). No I/O:
values the command hands to its sink (`bleu_spark.store.Sink`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

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
                segment_stats: Optional[pa.Table] = None, paired: Optional[List[dict]] = None,
                drilldown: Optional[dict] = None) -> str:
    """The report page of a statistics table: the report set over all of it (with intervals
    when they were measured), and when the table is partitioned, the same set per value of the
    first partition column (a line over time). `drilldown`: the run's worst segments, losses
    and score pairs (`spark.drilldown.highlights`), when it wrote segments."""
    from ..report import render_report

    shown = report_set(sets, partition_by)
    scores = score_sets(stats, [shown], config, resampling, segment_stats)
    history, time_col = None, None
    if partition_by:
        time_col = partition_by[0]
        history = score_sets(stats, [(time_col, *shown)], config)
    # The header names the partitions the page covers: its run facts are the last run's alone.
    partitions = {c: stats[c].unique().to_pylist() for c in partition_by}
    return render_report(scores, group_cols=list(shown), title=title, run=run,
                         history=history, time_col=time_col, paired=paired, partitions=partitions,
                         drilldown=drilldown)


def first_rows_report(rows: List[dict], total: int, chosen: GroupingSet, run: dict,
                      paired: Optional[List[dict]] = None, drilldown: Optional[dict] = None,
                      output: Optional[str] = None, partition_by: Sequence[str] = ()) -> str:
    """The report of the first rows of its grouping (`chosen`) of a result too large to draw
    whole, saying under its title what it leaves out and where the rest is: a page a browser
    opens at any number of groups."""
    from ..report import render_report
    from .sets import label

    left_out = None
    if total > len(rows) or partition_by:
        left_out = (f"This page draws the first {len(rows):,} of {total:,} groups of "
                    f"{label(chosen) or 'the whole input'}"
                    + (" (this run's partitions alone, no history)" if partition_by else "")
                    + f"; every group is in {output or 'the output'}/scores (and the dashboard "
                      f"table).")
    return render_report(rows, group_cols=list(chosen), run=run, paired=paired,
                         drilldown=drilldown, left_out=left_out)


@dataclass
class Views:
    """What a result holds, from its statistics and scores, in the order written: its tables
    (name, pyarrow Table) and its top-level files (name, JSON value or page text)."""
    tables: List[Tuple[str, pa.Table]] = field(default_factory=list)
    files: List[Tuple[str, object]] = field(default_factory=list)

    def write(self, sink) -> None:
        """Every table and file handed to `sink` (`bleu_spark.store.Sink`)."""
        for name, table in self.tables:
            sink.write_table(name, table)
        for name, value in self.files:
            sink.write_file(name, value)


def result_views(stats: pa.Table, scores: List[dict], sets: Sequence[GroupingSet],
                 config: metrics.Choices, run: dict, report: bool,
                 resampling: Optional[Resampling] = None,
                 segment_stats: Optional[pa.Table] = None, paired: Optional[List[dict]] = None,
                 drilldown: Optional[dict] = None, partition_by: Sequence[str] = ()) -> Views:
    """The tables and files every result holds, from its statistics and their scores. A
    partitioned result's report is drawn at the commit (`partitioned_report`). The trial sums
    of approximate randomization are not kept: they serve this run's paired tests only."""
    fields = group_fields(stats, sets)
    views = Views()
    views.tables += [("stats", without_trials(stats)), ("scores", scores_table(scores, fields)),
                     ("dashboard", dashboard_table(scores, fields, run["run_id"], run["run_time"]))]
    views.files.append(("scores.json", json_rows(scores, [f.name for f in fields])))
    if paired is not None:
        compared = [f for f in fields if any(f.name in r for r in paired) and f.name != "system"]
        views.tables.append(("paired", paired_table(paired, compared)))
        views.files.append(("paired.json", paired))
    if report and not partition_by:
        views.files.append(("report.html", report_html(
            stats, sets, config, run=run, resampling=resampling, segment_stats=segment_stats,
            paired=paired, drilldown=drilldown)))
    return views


def without_trials(stats: pa.Table) -> pa.Table:
    """The statistics as saved: the trial sums of approximate randomization serve this run's
    paired tests only (a saved slice is re-tested with the bootstrap's replicate sums)."""
    trials = stats.schema.get_field_index(statstable.TRIAL_SUMS)
    return stats.set_column(trials, statstable.TRIAL_SUMS, pa.nulls(stats.num_rows, stats[trials].type))


def stats_after_commit(held: Optional[pa.Table], partition_by: Sequence[str],
                       replaced: Sequence[str], stats: pa.Table) -> pa.Table:
    """The statistics a partitioned result will hold once committed: `held` (those committed
    before, None if none) outside the partitions `replaced`, and this run's."""
    from ..store import rows_outside

    stats = without_trials(stats)
    if held is None:
        return stats
    kept = rows_outside(held, partition_by, replaced)
    kept = _typed_like(kept, stats, partition_by)  # as recorded -> as this run's input
    return pa.concat_tables([kept, stats], promote_options="permissive")


def _typed_like(table: pa.Table, stats: pa.Table, columns: Sequence[str]) -> pa.Table:
    for column in columns:
        index = table.schema.get_field_index(column)
        table = table.set_column(index, column, table[column].cast(stats.schema.field(column).type))
    return table


def partitioned_report(held: Optional[pa.Table], replaced: Sequence[str], stats: pa.Table,
                       sets: Sequence[GroupingSet], config: metrics.Choices, run: dict,
                       partition_by: Sequence[str], resampling: Optional[Resampling] = None,
                       drilldown: Optional[dict] = None) -> str:
    """The report over every partition the result will hold (`stats_after_commit`): drawn at
    the commit before its entry, so a group it cannot score (two tokenizers, say) fails the run
    with the result untouched."""
    return report_html(stats_after_commit(held, partition_by, replaced, stats), sets, config,
                       partition_by, run, resampling=resampling, drilldown=drilldown)
