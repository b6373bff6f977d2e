"""The scoring job: measure (read, validate, map partitions to partial sums, reduce per group into
a statistics table), then show (scores, dashboard, report: `bleu_spark.scoring`), then write."""
from __future__ import annotations

import functools
import time
from contextlib import nullcontext
from dataclasses import dataclass, fields, replace
from typing import List, Optional, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from .. import compiled, notices, scoring, segments, settings, statstable, store
from ..languages import target_warnings, tokenizer_warnings, tokenizers_by_pair
from ..errors import EmptyInputError, UsageError
from ..resampling import POISSON, SACREBLEU, Resampling
from . import apart, drilldown, incremental, inputs, io, runtime, streamed
from .failures import lost_worker_failure, memory_failure, task_user_error
from .files import write_frame
from .measure import Measurement, measure, partial_sums_frame
from .options import JobOptions
from .plan import plan_for
from .progress import Progress, StageProgress, say as say_progress
from .record import run_record
from .scan import ArrowScan, arrow_scan
from .stats import PartitionPlan

__all__ = ["JobOptions", "JobResult", "Measurement", "measure", "partial_sums_frame", "preflight",
           "run_job", "score_dataframe"]

# sacrebleu's own resampling brings every segment's statistics to the driver: test-set sizes.
MAX_SACREBLEU_ROWS = 2_000_000


@dataclass
class JobResult:
    # One row per group of every grouping set; scored on the executors (`apart`), the first
    # rows alone (`run["groups"]` counts them all; every one is in the scores table).
    scores: List[dict]
    run: dict                          # what run.json holds
    stats: Optional[pa.Table] = None   # the statistics table the scores come from (on the driver)
    paired: Optional[List[dict]] = None  # paired tests against the baseline, when asked for
    signature_rows: Optional[List[dict]] = None  # a row of each signature, when not all are shown


def score_dataframe(df: DataFrame, group_by: Optional[Sequence[str]] = None,
                    **options) -> List[dict]:
    """Scores per group of a DataFrame, no files written; unscorable rows raise.

    `options` are JobOptions fields (candidate_col, references_cols, references, join_on,
    grouping_sets, tokenize, ...) or the metrics' options by their job-file keys (lowercase,
    smooth_method, chrf_beta, ...).
    """
    job_fields = {f.name for f in fields(JobOptions) if f.init}
    metric_keys = settings.metric_options()
    unknown = sorted(k for k in options if k not in job_fields and k not in metric_keys)
    if unknown:
        raise UsageError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
    job = {k: v for k, v in options.items() if k in job_fields}
    job["groups_scored_on"] = "driver"  # every row is returned: they come to the driver anyway
    options = JobOptions(input="<DataFrame>", group_by=tuple(group_by) if group_by is not None else None,
                         metric_settings=tuple((k, v) for k, v in options.items() if k in metric_keys),
                         **job)
    table = io.InputTable(df.sparkSession, options.input, df)
    measurement = measure(df.sparkSession, table, options, plan_for(table.schema, options))
    return scoring.score_sets(measurement.stats, measurement.sets, options.choices,
                              options.resampling, measurement.segment_stats)


def preflight(options: JobOptions) -> None:
    """Every check that needs no JVM: a local input's path and columns, the output folder."""
    schema = io.local_schema(options.input)
    if schema is not None:
        plan_for(schema, options)
        missing = [c for c in options.partition_by if c not in schema.fieldNames()]
        if not missing:
            from pyspark.sql.pandas.types import to_arrow_schema

            columns = T.StructType([schema[c] for c in options.partition_by])
            store.check_partition_columns(to_arrow_schema(columns, timezone="UTC"), options.partition_by)
    if options.references:
        refs = io.local_schema(options.references, what="references")
        if refs is not None:
            io.check_columns(refs, inputs.references_table_rules(options, refs), table="references")
    if options.output:
        io.check_output_outside_input(options.input, options.output)
        if options.references:
            io.check_output_outside_input(options.references, options.output, what="references")
        store.check_output(options.output, options.partition_by)


@dataclass
class InputRead:
    """What is known of the input before the scoring pass: its rows and bytes (from Parquet
    footers, read here or by a Spark job), who scans it, and the advice said before scoring."""
    rows: int
    bytes: int
    scan: Optional[ArrowScan]           # None: Spark's scan reads it
    spark_scan_reason: Optional[str]    # why, when Spark's scan reads it
    row_groups: Optional[int]           # counted when rows are scored where they lie
    in_place: bool
    advice: List[str]


@dataclass
class Shown:
    """What the statistics show: the score rows, the paired tests, the tokenizer of each pair."""
    scores: List[dict]
    paired: Optional[List[dict]]
    tokenizers: dict

    @property
    def groups(self) -> int:
        return len(self.scores)


def run_job(spark: SparkSession, options: JobOptions) -> JobResult:
    """plan -> measure -> show -> write -> record, into one sink (or none)."""
    started = time.time()
    run_id = store.new_run_id()
    store.configure(runtime.session_settings(spark))  # the output's S3 settings
    table = io.InputTable(spark, options.input)
    schema = table.schema  # a remote path that is not there fails here, before any output
    # One sink, whatever stores the options name (a catalog's checks before the folder is made).
    sink = store.open_sink(options, run_id, spark=spark, frames=write_frame)
    try:
        job_group = _start(spark, options, run_id)
        plan = _plan(options, schema, sink, run_id)
        increment = incremental.opened(sink, options, plan, table) if options.incremental else None
        if increment and not increment.new:
            sink.abort()
            return JobResult(scores=[], run=incremental.unchanged(options, increment, started))
        read = _read_footers(spark, table, options, plan)
        measurement = _measure(spark, table, options, plan, read)
        if increment:
            incremental.add_earlier(increment, measurement, options)
            measurement.warnings += increment.warnings
        chunked = not measurement.on_executors and streamed.applies(sink, measurement)
        if measurement.on_executors:
            with StageProgress(spark, "scoring the groups on the executors",
                               options.progress_seconds):
                showing = apart.show(options, measurement)
        elif chunked:
            say_progress(f"scoring {measurement.stats.num_rows:,} statistics rows a chunk at a "
                         f"time, writing each chunk's tables", options.progress_seconds)
            showing = streamed.show(options, measurement, sink, run_id)
        else:
            showing = show(options, measurement)
        timings = {"score_s": time.time() - started}
        run = run_record(spark, options, measurement, showing.groups, job_group, read.rows,
                         run_id, read.bytes)
        if chunked:  # the dashboard rows written with it
            run["run_time"] = showing.run_time
        run["tokenizers"] = showing.tokenizers
        if showing.paired is not None:
            run["paired_tests"] = getattr(showing, "paired_count", len(showing.paired))
        if sink and measurement.on_executors:
            with StageProgress(spark, "writing the tables from the executors",
                               options.progress_seconds):
                timings["write_s"], report = _write_apart(spark, sink, options, plan, schema,
                                                          measurement, showing, run), None
        elif sink and chunked:
            timings["write_s"], report = _write_streamed(spark, sink, options, plan, schema,
                                                         measurement, showing, run), None
        elif sink:
            timings["write_s"], report = _write(spark, sink, options, plan, schema, measurement,
                                                showing.scores, showing.paired, run)
        if increment:
            incremental.write(spark, sink, increment, options, plan, run_id, run)
        timings["total_s"] = time.time() - started
        run["timings"] = timings
        if sink:
            sink.commit(run, report)
        if measurement.on_executors:
            apart.release(showing, measurement)
        return JobResult(scores=showing.scores, run=run, stats=measurement.stats,
                         paired=showing.paired, signature_rows=getattr(showing, "signed", None))
    except BaseException as exc:
        if sink:
            sink.abort()
        unreadable = (io.read_failure(exc) or task_user_error(exc) or memory_failure(exc)
                      or lost_worker_failure(exc))
        if unreadable is not None:
            raise unreadable from None
        raise
    finally:
        io.forget_remote_inputs()  # listed once a run: the next run lists the prefix anew


def _start(spark: SparkSession, options: JobOptions, run_id: str) -> str:
    """The SentencePiece model shipped to the executors, the run's Spark jobs tagged; the tag."""
    if options.text.spm_model:
        runtime.ship_file(spark, options.text.spm_model)
    job_group = f"bleu-spark-{run_id}"
    runtime.tag_jobs(spark, job_group, "bleu-spark score")
    return job_group


def _plan(options: JobOptions, schema: T.StructType, sink, run_id: str) -> PartitionPlan:
    """The partition plan; with --segments, where its tasks write the segments table (into the
    output folder, committed with the rest)."""
    plan = plan_for(schema, options)
    if not plan.segments:
        return plan
    where = sink.task_files(segments.TABLE)
    return replace(plan, segments=replace(plan.segments, uri=where.uri, run_id=run_id,
                                          fs_settings=where.fs_settings))


def _read_footers(spark: SparkSession, table: io.InputTable, options: JobOptions,
                  plan: PartitionPlan) -> InputRead:
    """The input's size and layout before scoring, and the checks it allows: no rows, too many
    for sacrebleu's draws, too few row groups (said now, before the scoring it is about)."""
    say_progress("reading the input's Parquet footers", options.progress_seconds)
    found = arrow_scan(spark, table, options, plan)
    scan = found if isinstance(found, ArrowScan) else None  # else why Spark's scan reads
    if scan is None and not io.is_local(options.input) and options.scan != "spark":
        say_progress(f"Spark's scan reads {options.input}: {found}", options.progress_seconds)
    # From Parquet footers (read here, or by a Spark job): checked against the scoring pass.
    if options.incremental:
        incremental.check_scan(scan, found)
    rows_read = scan.rows if scan else table.frame.count()
    # An incremental run's new files may hold no rows: recorded as measured all the same.
    if rows_read == 0 and not (options.allow_empty_input or options.incremental):
        raise EmptyInputError(f"input {options.input} has no rows: nothing to score (a feed "
                              f"that delivered nothing?); pass --allow-empty-input to write "
                              f"an empty result instead")
    resampling = options.resampling
    if resampling.active and resampling.method == SACREBLEU and rows_read > MAX_SACREBLEU_ROWS:
        raise UsageError(f"--bootstrap-method sacrebleu holds every segment on the driver: "
                         f"{rows_read} rows is more than {MAX_SACREBLEU_ROWS}; use poisson")
    input_bytes = scan.bytes if scan else io.input_bytes(table.frame)
    # Rows Spark's scan reads where they lie are scored by its tasks, one a row group: too few
    # row groups slow the scoring, said before it (from the footers), not after. An ArrowScan
    # cuts row groups into tasks.
    in_place = scan is not None or not (options.references
                                        or options.colocate_references == "always")
    row_groups = scan.row_groups if scan else io.row_groups(options.input) if in_place else None
    advice = [] if scan else inputs.few_row_groups(row_groups, rows_read, runtime.parallelism(spark))
    notices.say_warnings(advice)  # now, before the scoring they are about; not again at the end
    return InputRead(rows_read, input_bytes, scan, None if scan else found, row_groups, in_place,
                     advice)


def _measure(spark: SparkSession, table: io.InputTable, options: JobOptions, plan: PartitionPlan,
             read: InputRead) -> Measurement:
    """The scoring pass, with progress lines; its layout and warnings completed from `read`."""
    # Said of this install's kernels only where the Python workers run it.
    kernels = compiled.status() if runtime.runs_workers_here(spark) else None
    if kernels:
        say_progress(kernels, options.progress_seconds)
    # Spark's scan is split for balance here; an ArrowScan has its tasks already.
    splits = nullcontext() if read.scan else inputs.splits_sized(spark, read.rows, read.bytes)
    with splits, Progress(spark, read.rows, options.progress_seconds,
                          after=_after_scoring(options.resampling)) as progress:
        measurement = measure(spark, table, options, plan, progress.rows, read.rows, read.scan)
    layout = measurement.input.layout
    if read.scan:
        layout["scan"] = "arrow"
    else:
        layout.update(scan="spark", spark_scan_reason=read.spark_scan_reason)
    if read.in_place:
        layout["input_row_groups"] = read.row_groups
    measurement.warnings = [*options.warnings, *measurement.warnings, *read.advice]
    return measurement


def show(options: JobOptions, measurement: Measurement) -> Shown:
    """The scores of every group, the paired tests asked for, the tokenizer each pair got; the
    warnings they raise added to the measurement's."""
    resampling = options.resampling
    stats, sets, segment_stats = measurement.stats, measurement.sets, measurement.segment_stats
    tokenizers = tokenizers_by_pair(stats, options.langpair_col, options.text)
    measurement.warnings += tokenizer_warnings(stats, options.langpair_col, options.text,
                                               options.measured, tokenizers)
    measurement.warnings += target_warnings(stats, options.langpair_col, options.measured)
    scores = scoring.score_sets(stats, sets, options.choices, resampling, segment_stats,
                                options.partition_by)
    paired = None
    if resampling.paired_bs or resampling.paired_ar:
        paired, missing = scoring.paired_rows(stats, sets, options.choices, resampling,
                                              segment_stats)
        resampling.check_baseline(statstable.scored_values(stats, "system"))
        measurement.warnings += missing
    return Shown(scores, paired, tokenizers)


def _write(spark: SparkSession, sink, options: JobOptions, plan: PartitionPlan,
           schema: T.StructType, measurement: Measurement, scores: List[dict],
           paired: Optional[List[dict]], run: dict):
    """Every table and file of the result handed to the sink; the seconds it took, and what the
    commit draws first (a partitioned folder's report, over every partition it will hold: under
    the commit's lock, before the entry, so a group it cannot score leaves DIR as it was)."""
    started = time.time()
    resampling = options.resampling
    drill = _row_tables(spark, sink, options, plan, schema, measurement)
    scoring.result_views(measurement.stats, scores, measurement.sets, options.choices, run,
                         options.report, resampling, measurement.segment_stats, paired, drill,
                         options.partition_by).write(sink)
    if not (options.report and options.partition_by):
        return time.time() - started, None
    hashed = resampling if resampling.method == POISSON else None
    report = lambda staged: staged.write_file("report.html", scoring.partitioned_report(
        _committed_stats(staged), staged.staged_partitions(), measurement.stats, measurement.sets,
        options.choices, run, options.partition_by, hashed, drill))
    return time.time() - started, report


def _write_apart(spark: SparkSession, sink, options: JobOptions, plan: PartitionPlan,
                 schema: T.StructType, measurement: Measurement, shown: apart.ShownApart,
                 run: dict) -> float:
    """As `_write`, for groups scored on the executors: the tables are frames their tasks
    write; the files a person reads are bounded (`apart`). The seconds it took."""
    started = time.time()
    drill = _row_tables(spark, sink, options, plan, schema, measurement)
    for name, frame in apart.tables(shown, measurement, options, run):
        sink.write_table(name, frame)
    for name, value in apart.files(shown, measurement, options, run, drill):
        sink.write_file(name, value)
    return time.time() - started


def _write_streamed(spark: SparkSession, sink, options: JobOptions, plan: PartitionPlan,
                    schema: T.StructType, measurement: Measurement,
                    shown: streamed.ShownStreamed, run: dict) -> float:
    """As `_write`, for groups scored a chunk at a time (their scores, dashboard and paired
    tables are written): the statistics and the bounded files. The seconds it took."""
    started = time.time()
    drill = _row_tables(spark, sink, options, plan, schema, measurement)
    streamed.write(sink, options, measurement, shown, run, drill)
    return time.time() - started


def _row_tables(spark: SparkSession, sink, options: JobOptions, plan: PartitionPlan,
                schema: T.StructType, measurement: Measurement) -> Optional[dict]:
    """The tables of a row per input row handed to the sink (the rejected rows, the segments
    the tasks wrote, committed where they lie); what the report shows of the segments."""
    # Read back (footers) only when a store or the report takes the segments the tasks wrote.
    written = functools.cache(lambda: _run_segments(spark, plan, schema, sink) if plan.segments
                              else None)
    drill = _drilldown(plan, options.resampling, written()) if options.report else None
    if measurement.rejected:
        sink.write_table("rejected", measurement.rejected_frame())
    if plan.segments:
        sink.write_table(segments.TABLE, written)
    return drill


def _run_segments(spark: SparkSession, plan: PartitionPlan, schema: T.StructType,
                  sink) -> Optional[DataFrame]:
    """This run's rows of the segments table, read back through pyarrow from the files its tasks
    wrote (never a Spark file system connector); None when there are none."""
    where = plan.segments
    return drilldown.read(spark, where, sink.written_by_tasks(segments.TABLE),
                          _partition_types(schema, where.partition_by))


def _drilldown(plan: PartitionPlan, resampling: Resampling,
               frame: Optional[DataFrame]) -> Optional[dict]:
    """What the report shows of this run's segments (`--segments`); None without them."""
    if frame is None:
        return None
    where = plan.segments
    return drilldown.highlights(frame, plan.group_cols, where.key_cols,
                                [name for name, _ in where.carried], resampling.baseline)


def _committed_stats(output) -> Optional[pa.Table]:
    """The statistics a partitioned folder holds before this run's commit; None before its
    first."""
    from ..errors import InputNotFoundError

    try:
        return statstable.read(output.uri)
    except InputNotFoundError:
        return None


def _partition_types(schema: T.StructType, partition_by: Sequence[str]) -> dict:
    from pyspark.sql.pandas.types import to_arrow_type

    return {c: str(to_arrow_type(schema[c].dataType)) for c in partition_by}


def _after_scoring(resampling: Resampling) -> str:
    """What the progress line says once every row is scored: the stages left add up sums."""
    kept = [f"{n} {what} sums" for n, what in ((resampling.replicates, "replicate"),
                                               (resampling.trials, "trial")) if n]
    return "adding up the partial sums per group" + (f" and their {' and '.join(kept)}" if kept else "")
