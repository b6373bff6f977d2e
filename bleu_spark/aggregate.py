"""`bleu-spark aggregate`: scores of any grouping or slice of saved statistics, without the text.

A local statistics table is read, filtered and summed in this process with pyarrow: no JVM, a
second or two for a dashboard back end. A remote or very large one is filtered and summed
on Spark first (`bleu_spark.spark.aggregate`); both end in `bleu_spark.scoring`, as `score` does,
so the scores equal a fresh run on the same rows. A sum too large for the driver
(`--groups-scored-on`) stays on Spark: its checks are small results of Spark, its groups are
scored and written by the executors' tasks, as `score` scores many groups.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa

from . import metrics, predicate, record, scoring, segments, settings, statstable, store
from .declaration import AGGREGATE
from .errors import EmptySelectionError, MissingColumnError, OutputError, UsageError
from .resampling import Resampling
from .scoring import stream
from .scoring.groups import metric_of
from .scoring.write import report_set, without_trials
from .shown import shown
from .store.remote import is_remote
from .tablenames import check_table_name

ENGINES = settings.option("engine").choices
EXECUTORS = "executors"  # --groups-scored-on: the summed statistics left on Spark


@dataclass(frozen=True)
class AggregateOptions:
    stats: Optional[str] = None                      # a folder or Parquet path; or:
    output: Optional[str] = None
    stats_table: Optional[str] = None                # DB.TABLE of Spark's catalog
    catalog: Optional[str] = None                    # also write the tables into DB (Spark)
    group_by: Optional[Tuple[str, ...]] = None       # None: the table's own group columns
    grouping_sets: Optional[Tuple[Tuple[str, ...], ...]] = None
    where: Optional[str] = None                      # a filter (bleu_spark.predicate), not SQL
    report: bool = False
    engine: str = settings.default("engine")         # auto: on Spark only what pyarrow cannot read
    # The metrics' scoring options, e.g. (("smooth_method", "floor"), ("weights", (0.5, 0.5))):
    # those that change no statistic (docs/options.md); the others come with the statistics.
    choices: Tuple[Tuple[str, Any], ...] = ()
    confidence: bool = False                         # intervals from the saved replicate sums
    paired_bs: bool = False                          # paired bootstrap against `baseline`
    baseline: Optional[str] = None
    clusters: bool = False                           # rank ranges and clusters per comparison
    progress_seconds: float = settings.default("progress_seconds")  # 0: no progress lines
    groups_scored_on: str = settings.default("groups_scored_on")     # Spark's: auto, driver, executors
    parsed_where: Optional[predicate.Predicate] = field(init=False, default=None, compare=False, repr=False)

    def __post_init__(self):
        # The syntax is checked here, before any reading or Spark; the columns once the
        # table's schema is known.
        if self.where is not None:
            object.__setattr__(self, "parsed_where", predicate.parse(self.where))
        if self.engine not in ENGINES:
            raise UsageError(f"unknown --engine {self.engine!r}; choose one of: {', '.join(ENGINES)}")
        self._check_scored_on()
        self._check_catalog()
        settings.check_grouping(self.group_by, self.grouping_sets)
        # Checked now, before any reading, as far as they can be without the statistics (each
        # metric checks its own); the pairing rules are score's (Resampling's).
        taken = {o.key for o in settings.declared() if AGGREGATE in o.commands}
        others = sorted(set(dict(self.choices)) - taken)
        if others:  # measuring options are the statistics' own: changing them needs a new score run
            raise UsageError(f"aggregate does not take {', '.join(others)}: the statistics were "
                             f"measured with theirs")
        metrics.checked_choices(dict(self.choices))
        settings.check("--progress-seconds", self.progress_seconds)
        Resampling(confidence=self.confidence, paired_bs=self.paired_bs, baseline=self.baseline)
        if self.output and self.stats:
            check_output_apart(self.stats, self.output)

    def _check_scored_on(self) -> None:
        """Groups are scored on the executors of Spark: never by the local engine."""
        choices = settings.option("groups_scored_on").choices
        if self.groups_scored_on not in choices:
            raise UsageError(f"unknown --groups-scored-on {self.groups_scored_on!r}; choose one "
                             f"of: {', '.join(choices)}")
        if self.engine == "local" and self.groups_scored_on == EXECUTORS:
            raise UsageError("--groups-scored-on executors scores on Spark's executors: use "
                             "--engine spark (or auto), not --engine local")

    def _check_catalog(self) -> None:
        """Where the statistics come from and the result goes: Spark's catalog is Spark's."""
        if (self.stats is None) == (self.stats_table is None):
            raise UsageError("give --stats PATH or --stats-table DB.TABLE (one of them)")
        if self.engine == "local" and (self.stats_table or self.catalog):
            flag = "--stats-table" if self.stats_table else "--catalog"
            raise UsageError(f"{flag} reads or writes Spark's catalog: use --engine spark (or "
                             f"auto), not --engine local")
        if self.stats_table:
            database, _ = check_table_name(self.stats_table)
            if self.catalog and database.lower() == self.catalog.lower():  # catalogs ignore case
                raise OutputError(f"--catalog {self.catalog} holds --stats-table {self.stats_table}: "
                                  f"the result would replace the statistics it reads; write it "
                                  f"to another database")
        settings.check_destination(self.output, self.catalog, self.report)

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> "AggregateOptions":
        """An aggregate's options from its option values (`settings.converted`, those given):
        each field the declared key it names, and the metrics' options given."""
        return cls(**settings.fields_from(cls, values), choices=settings.metric_choices(values))

    @property
    def source(self) -> str:
        """The statistics read, as the messages and run.json name them."""
        return self.stats if self.stats is not None else self.stats_table

    @property
    def resamples(self) -> bool:
        return self.confidence or self.paired_bs or self.clusters

    @property
    def kept_columns(self) -> Optional[Tuple[str, ...]]:
        """The group columns asked for; None: the table's own."""
        sets = (self.grouping_sets if self.grouping_sets is not None
                else [self.group_by] if self.group_by is not None else None)
        return None if sets is None else tuple(dict.fromkeys(c for s in sets for c in s))

    @property
    def on_spark(self) -> bool:
        return self.engine == "spark" or (self.engine == "auto" and (
            self.stats_table is not None or self.catalog is not None
            or self.groups_scored_on == EXECUTORS
            or not (_is_local(self.stats) or is_remote(self.stats))))


@dataclass
class AggregateResult:
    scores: List[dict]                  # every score row, or the first ones of many (`stream`)
    run: dict
    stats: Optional[pa.Table]           # None: the groups were scored on the executors
    paired: Optional[List[dict]] = None
    signature_rows: Optional[List[dict]] = None  # a row of each signature, when not all are shown


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def grouping_sets(options: AggregateOptions, stats: pa.Table) -> List[scoring.GroupingSet]:
    if options.kept_columns is None and segments.is_segments_table(stats):
        raise UsageError("a segments table holds a row per segment: say which columns to score "
                         "it by with --group-by (e.g. system,langpair) or --grouping-sets")
    sets = (options.grouping_sets if options.grouping_sets is not None
            else [options.group_by if options.group_by is not None
                  else tuple(statstable.group_columns_of(stats))])
    sets = scoring.distinct_sets(sets)
    known = statstable.group_columns_of(stats)
    missing = sorted({c for s in sets for c in s if c not in known})
    if missing:
        raise MissingColumnError(f"statistics have no group column {', '.join(missing)} "
                                 f"(group columns: {', '.join(known) or 'none'})")
    return sets


def check_output_apart(stats: str, output: str) -> None:
    """The output replaces its folder whole: if it is the statistics read, holds them or lies in
    them, the run would destroy (or be read back as) its own input. Compared as resolved paths,
    so a symlink or `..` does not hide it."""
    resolve = lambda p: (os.path.realpath(p[len("file://"):] if p.startswith("file://") else p)
                         if _is_local(p) else _same_scheme(p.rstrip("/")))
    source, target = resolve(stats), resolve(output)
    inside = lambda a, b: a == b or a.startswith(b.rstrip("/") + "/")
    if inside(target, source) or inside(source, target):
        raise OutputError(f"--output {output} and --stats {stats} overlap: the result would "
                          f"replace the statistics it reads; write it to another folder")


def _same_scheme(uri: str) -> str:
    """`s3a://` and `s3n://` name what `s3://` names."""
    return "s3://" + uri.split("://", 1)[1] if store.is_s3(uri) else uri


@dataclass
class Selection:
    """The statistics an aggregate reads (filtered, summed per the finest group asked for and
    measurement), and what they hold: the rows they stand for, the grouping sets, the draws of
    their replicate sums, the scoring options checked against them."""
    stats: Optional[pa.Table]   # None: left on the executors (`frame`)
    rows: dict                  # scored and rejected, each counted once
    sets: List[scoring.GroupingSet]
    finest: List[str]
    resampling: Optional[Resampling]
    config: dict
    frame: Any = None           # `spark.aggregate.SummedFrame`, of statistics too many for the driver
    measurements: Optional[pa.Table] = None  # of `frame`: each distinct measurement and draw


@dataclass
class Shown:
    """What the statistics show: the score rows, the paired tests, the warnings; of a result
    scored a chunk at a time (`chunks`), the first ones, the tables written as scored."""
    scores: List[dict]
    paired: Optional[List[dict]]
    warnings: List[str]
    chunks: Optional[stream.Streamed] = None
    run_time: Optional[str] = None
    apart: Any = None               # `spark.apart.ShownApart`: scored on the executors

    @property
    def groups(self) -> int:
        if self.apart is not None:
            return self.apart.groups
        return self.chunks.groups if self.chunks else len(self.scores)

    @property
    def paired_count(self) -> int:
        """The paired tests made, of which `paired` holds the first ones."""
        if self.apart is not None:
            return self.apart.paired_count
        return self.chunks.paired_count if self.chunks else len(self.paired or ())

    @property
    def signed(self) -> Optional[List[dict]]:
        """A score row of each signature, when `scores` holds the first rows alone."""
        if self.apart is not None:
            return self.apart.signed
        return list(self.chunks.signed.values()) if self.chunks else None


def run_aggregate(options: AggregateOptions, spark=None) -> AggregateResult:
    """read -> show -> write -> record, into one sink (or none)."""
    started = time.time()
    run_id = store.new_run_id()
    # One sink, whatever stores the options name (a catalog's checks before the folder is made).
    sink = store.open_sink(options, run_id, "aggregate", spark, frames=_frame_writer(spark))
    read = None
    try:
        read = _read(options, spark)
        apart = not isinstance(read, pa.Table)  # left on the executors
        selection = select_apart(options, read) if apart else selected(options, read)
        if apart:
            showing = show_apart(options, selection)
        elif sink is not None and selection.stats.num_rows > stream.JSON_ROWS:
            showing = show_chunks(options, selection, sink, run_id)
        else:
            showing = show(options, selection)
        run = run_record(options, selection.config, selection.rows, showing.groups, selection.sets,
                         run_id, showing.warnings)
        if showing.chunks:  # the dashboard rows written with it
            run["run_time"] = showing.run_time
        if showing.paired is not None:
            run["paired_tests"] = showing.paired_count
        if spark is not None:  # which Spark read the statistics: classic or Connect
            from .spark.runtime import describe

            run["spark"] = describe(spark)
        if sink:
            write_of = write_apart if apart else write_chunks if showing.chunks else write
            write_of(sink, options, selection, showing, run)
            run["timings"] = {"total_s": time.time() - started}
            sink.commit(run)
        if apart:
            read.release(showing.apart)
        return AggregateResult(showing.scores, run, selection.stats, showing.paired, showing.signed)
    except BaseException:
        if sink:
            sink.abort()
        if read is not None and not isinstance(read, pa.Table):
            read.release()
        raise


def _frame_writer(spark):
    """How the tasks write a frame into a folder (the Spark layer's), when Spark runs."""
    if spark is None:
        return None
    from .spark.files import write_frame

    return write_frame


def select(options: AggregateOptions, spark=None) -> Selection:
    """The statistics read and checked, summed per the finest group asked for (a segments table's
    replicate sums made from its hashes first), the scoring options checked against them."""
    read = _read(options, spark, "driver")
    return selected(options, read)


def selected(options: AggregateOptions, stats: pa.Table) -> Selection:
    """`select` of statistics read."""
    statstable.check_measurement(stats)
    rows = {"scored": statstable.counted_once(stats, "n_segments"),
            "rejected": statstable.counted_once(stats, "n_rejected")}
    sets = grouping_sets(options, stats)
    finest = _finest(options, sets)
    if segments.is_segments_table(stats):  # a row a segment: replicate sums from the hashes
        stats = segments.summed(stats, [*finest, *statstable.MEASUREMENT], options.resamples)
    resampling = saved_resampling(options, stats)  # of the rows as saved: before any sum
    stats = statstable.summed(stats, [*finest, *statstable.MEASUREMENT])
    return Selection(stats, rows, sets, finest, resampling, checked_config(options, stats))


def _finest(options: AggregateOptions, sets) -> List[str]:
    """The group columns of every set (the statistics are summed per them), the sets checked."""
    if options.clusters:
        scoring.check_clusters(sets)
    return list(dict.fromkeys(c for s in sets for c in s))


def checked_config(options: AggregateOptions, stats: pa.Table) -> dict:
    """The scoring options checked against each distinct measurement, not each group."""
    measured = [c for c in statstable.MEASUREMENT if c in stats.column_names]
    return metrics.checked_choices(
        dict(options.choices), stats.select(measured).group_by(measured).aggregate([]).to_pylist())


def select_apart(options: AggregateOptions, summed) -> Selection:
    """As `select`, of sums left on the executors (`spark.aggregate.SummedFrame`): the same
    checks, made of what Spark returns small (the distinct measurements and draws, the counts),
    the frame shaped as the driver's sum per the finest group (already its grain)."""
    measurements = summed.measurements()
    statstable.check_measurement(measurements)
    rows = summed.counted_once()
    sets = grouping_sets(options, summed.schema_table)
    finest = _finest(options, sets)
    resampling = saved_resampling(options, measurements)
    shaped = summed.shaped([*finest, *statstable.MEASUREMENT])
    return Selection(None, rows, sets, finest, resampling, checked_config(options, measurements),
                     frame=shaped, measurements=measurements)


def show(options: AggregateOptions, selection: Selection) -> Shown:
    """The scores of every group, the paired tests asked for, the warnings about the options
    and the metrics' coverage."""
    stats, sets, config, resampling = (selection.stats, selection.sets, selection.config,
                                       selection.resampling)
    scores = scoring.score_sets(stats, sets, config, resampling)
    paired = None
    warnings = [*option_warnings(options, stats),
                *metric_coverage_warnings(stats, selection.finest)]
    if options.paired_bs:
        paired, missing = scoring.paired_rows(stats, sets, config, resampling)
        resampling.check_baseline(statstable.scored_values(stats, "system"))
        warnings += missing
    return Shown(scores, paired, warnings)


def show_apart(options: AggregateOptions, selection: Selection) -> Shown:
    """As `show`, scored on the executors: the first rows, the paired tests' first ones, the
    warnings (of the comparison groups without the baseline, a few named)."""
    from .spark.progress import say  # imports no pyspark

    summed, sets, config = selection.frame, selection.sets, selection.config
    warnings = [*option_warnings(options, selection.measurements),
                *coverage_warnings_apart(summed, selection.finest)]
    measured = [metric_of(r, config) for r in selection.measurements.to_pylist()]
    say(f"scoring the groups of {summed.rows:,} summed statistics rows on the executors",
        options.progress_seconds)
    shown = summed.score(sets, config, selection.resampling, measured, options.paired_bs)
    return Shown(shown.scores, shown.paired, warnings + shown.warnings, apart=shown)


def write_apart(sink, options: AggregateOptions, selection: Selection, showing: Shown,
                run: dict) -> None:
    """As `write`, of groups scored on the executors: the tables are frames their tasks write,
    the files bounded (scores.json left out past its bound, the report of the first rows)."""
    summed, sets = selection.frame, selection.sets
    for name, frame in summed.tables(showing.apart, sets, run):
        sink.write_table(name, frame)
    for name, value in summed.files(showing.apart, sets, run, options.report, options.output):
        sink.write_file(name, value)


def write(sink, options: AggregateOptions, selection: Selection, showing: Shown, run: dict) -> None:
    """The result's tables and files handed to the sink (its commit is the record's)."""
    stats, sets, config = selection.stats, selection.sets, selection.config
    scoring.result_views(stats, showing.scores, sets, config, run, False, selection.resampling,
                         paired=showing.paired).write(sink)
    if options.report:
        kept = (tuple(c for c in store.partition_columns(options.stats) if c in selection.finest)
                if options.stats else ())
        sink.write_file("report.html", scoring.report_html(
            stats, sets, config, kept, run, resampling=selection.resampling, paired=showing.paired))


def show_chunks(options: AggregateOptions, selection: Selection, sink, run_id: str) -> Shown:
    """As `show`, for a result of many groups: scored a chunk at a time, its scores, dashboard
    and paired tables written to `sink` as made (`scoring.stream`), the first rows kept."""
    stats, sets, resampling = selection.stats, selection.sets, selection.resampling
    warnings = [*option_warnings(options, stats), *metric_coverage_warnings(stats, selection.finest)]
    if options.paired_bs:  # before anything is written
        resampling.check_baseline(statstable.scored_values(stats, "system"))
    run_time = record.started(run_id, "aggregate")["run_time"]
    chosen = report_set(sets)
    kept = stream.stream(stats, sets, selection.config, resampling, (), sink.write_table, run_id,
                         run_time, stream.CONSOLE_ROWS, sets.index(chosen) if options.report else -1,
                         stream.REPORT_ROWS, options.paired_bs, stream.JSON_ROWS + 1,
                         stream.WARNINGS_SHOWN)
    warnings += kept.warnings
    if kept.missing_baselines > len(kept.warnings):
        warnings.append(f"and {kept.missing_baselines - len(kept.warnings):,} more comparison "
                        f"groups without the baseline")
    paired = kept.paired[:stream.PAIRED_SHOWN] if options.paired_bs else None
    return Shown(kept.first, paired, warnings, kept, run_time)


def write_chunks(sink, options: AggregateOptions, selection: Selection, showing: Shown,
                 run: dict) -> None:
    """As `write`, for a result scored a chunk at a time: the statistics and bounded files."""
    kept = showing.chunks
    sink.write_table("stats", without_trials(selection.stats))
    run["left_out"] = {"scores.json": f"{kept.groups:,} score rows, more than "
                                      f"{stream.JSON_ROWS:,}: every row is in the scores table"}
    if showing.paired is not None:
        if kept.paired_count <= stream.JSON_ROWS:
            sink.write_file("paired.json", kept.paired)
        else:
            run["left_out"]["paired.json"] = (f"{kept.paired_count:,} paired tests: every one is "
                                              f"in the paired table")
    if options.report:
        chosen = report_set(selection.sets)
        sink.write_file("report.html", scoring.first_rows_report(
            kept.report, kept.per_set[selection.sets.index(chosen)], chosen, run, showing.paired,
            output=options.output))


def saved_resampling(options: AggregateOptions, stats: pa.Table) -> Optional[Resampling]:
    """Intervals and paired tests from the replicate sums the statistics hold (poisson)."""
    if not options.resamples:
        return None
    labels = set(stats[statstable.RESAMPLING].to_pylist())
    if not labels - {"", statstable.MIXED}:
        raise UsageError("these statistics hold no replicate sums: score with --confidence "
                         "(poisson) to keep them")
    if len(labels) > 1:
        shown = ", ".join(sorted(label or "none" for label in labels))
        raise UsageError(f"the statistics hold replicate sums of different draws, or rows without "
                         f"any ({shown}); select rows of one draw with --where (the partitions "
                         f"scored with the same --confidence options)")
    _, n_bootstrap, seed = labels.pop().split(":")
    return Resampling(confidence=options.confidence, n_bootstrap=int(n_bootstrap),
                      seed=int(seed), paired_bs=options.paired_bs, baseline=options.baseline,
                      clusters=options.clusters)


def _read(options: AggregateOptions, spark, scored_on: Optional[str] = None):
    """The statistics as an Arrow table, or (Spark, too many for the driver) a
    `spark.aggregate.SummedFrame`."""
    stats = _read_on_spark(options, spark, scored_on) if options.on_spark else statstable.read(
        options.stats, options.parsed_where)
    rows = stats.num_rows if isinstance(stats, pa.Table) else stats.rows
    if options.parsed_where is not None and rows == 0:
        if not isinstance(stats, pa.Table):
            stats.release()
        raise EmptySelectionError(f"--where selects no rows of {options.source} (columns it "
                                  f"names: {', '.join(options.parsed_where.columns())})")
    return stats


def run_record(options: AggregateOptions, config: dict, rows: dict, groups: int, sets,
               run_id: str, warnings: Sequence[str] = ()) -> dict:
    """`rows`: the rows the statistics stand for, scored and rejected, each counted once."""
    return {
        **record.started(run_id, "aggregate"), "stats": options.source, "output": options.output,
        "catalog": options.catalog,
        "where": options.where, "engine": "spark" if options.on_spark else "local",
        **record.grouping(dict.fromkeys(c for s in sets for c in s), sets),
        "config": settings.config_record(config),
        "rows": dict(rows),
        "groups": groups,
        "warnings": list(warnings),
        "versions": record.versions(),
    }


def _read_on_spark(options: AggregateOptions, spark, scored_on: Optional[str] = None):
    """Statistics read, filtered and summed on Spark: the step of an aggregate that takes
    seconds, said in a progress line (the local engine's second or two says nothing). Left
    there (a `SummedFrame`) when the groups are to be scored on the executors."""
    from .spark.progress import say  # imports no pyspark

    say(f"reading and summing the statistics of {options.source} on Spark", options.progress_seconds)
    where = scored_on or options.groups_scored_on
    if options.stats_table:
        from .spark.aggregate import read_stats_table

        return read_stats_table(spark, options.stats_table, options.parsed_where,
                                options.kept_columns, options.resamples, scored_on=where)
    from .spark.aggregate import read_stats

    return read_stats(spark, options.stats, options.parsed_where, options.kept_columns,
                      options.resamples, scored_on=where)


def option_warnings(options: AggregateOptions, stats: pa.Table) -> List[str]:
    """Scoring options given that change no score of these statistics (`settings`)."""
    held = sorted(set(stats["metric"].to_pylist()), key=metrics.order_of)
    return settings.unused_option_warnings({**settings.defaults(), **dict(options.choices)}, held,
                                           f"the statistics hold {','.join(held)}")


def metric_coverage_warnings(stats: pa.Table, finest: Sequence[str]) -> List[str]:
    """A line per metric whose statistics cover other segments (count or fingerprint) than the
    metric covering the most, in some group: nights scored with other --metrics, summed. Each
    metric's scores stay exact for the rows it has, so they are shown, said once per metric.
    `stats`: summed per the finest group and measurement."""
    per_group: dict = {}
    for row in stats.select([*finest, "metric", "n_segments", "segment_fingerprint"]).to_pylist():
        counts = per_group.setdefault(tuple(row[c] for c in finest), {})
        n, fingerprint = counts.get(row["metric"], (0, 0))
        counts[row["metric"]] = (n + (row["n_segments"] or 0),
                                 fingerprint + (row["segment_fingerprint"] or 0))
    names = sorted({m for counts in per_group.values() for m in counts}, key=metrics.order_of)
    totals = {m: sum(c.get(m, (0, 0))[0] for c in per_group.values()) for m in names}
    most = _most_covering(totals)
    firsts = {name: next((k for k, c in per_group.items()
                          if c.get(name, (0, 0)) != c.get(most, (0, 0))), None) for name in names}
    return _coverage_lines(finest, totals, most, firsts)


def coverage_warnings_apart(summed, finest: Sequence[str]) -> List[str]:
    """`metric_coverage_warnings` of sums left on the executors: the totals per metric, then
    the first group (in the order of its columns) each metric differs in, from Spark."""
    totals = summed.segments_per_metric()
    most = _most_covering(totals)
    if most is None or len(totals) == 1:  # one metric covers what it covers
        return []
    names = sorted(totals, key=metrics.order_of)
    return _coverage_lines(finest, totals, most, summed.first_uncovered(finest, names, most))


def _most_covering(totals: dict) -> Optional[str]:
    return max(totals, key=lambda m: (totals[m], -metrics.order_of(m)), default=None)


def _coverage_lines(finest: Sequence[str], totals: dict, most: Optional[str],
                    firsts: dict) -> List[str]:
    """A line per metric of `totals` (in their order) that differs from `most` in a group
    (`firsts`: the first such group's values, None where none)."""
    lines = []
    for name in sorted(totals, key=metrics.order_of):
        if firsts.get(name) is not None:
            where = ", ".join(f"{c}={shown(v)}" for c, v in zip(finest, firsts[name])) or "the table"
            lines.append(f"{name} covers other segments than {most} ({totals[name]} vs "
                         f"{totals[most]} segments; first in {where}): the statistics summed were "
                         f"measured with other --metrics, so their scores are not of the same "
                         f"rows; select rows scored with the same --metrics with --where to "
                         f"compare them")
    return lines
