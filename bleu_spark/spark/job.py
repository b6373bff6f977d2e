"""The scoring job: measure (read, validate, map partitions to partial sums, reduce per group into
a statistics table), then show (scores, dashboard, report: `bleu_spark.scoring`), then write."""
from __future__ import annotations

import functools
import time
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field, fields, replace
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import compiled, notices, scoring, segments, settings, statstable, store
from ..languages import TextSettings, tokenizer_warnings, tokenizers_by_pair
from ..errors import EmptyInputError, InvalidRowsError, UsageError
from ..metrics import DEFAULT as DEFAULT_METRICS, configured, parse_names
from ..resampling import POISSON, SACREBLEU, Resampling
from ..rows import HINTS
from ..shown import shown
from ..tablenames import check_database_name
from . import drilldown, inputs, io, reduce, runtime
from .names import column, columns, map_in_arrow
from .failures import lost_worker_failure, memory_failure
from .files import write_frame
from .plan import plan_for
from .progress import Progress, say as say_progress
from .record import run_record
from .scan import ArrowScan, arrow_scan
from .stats import (FINGERPRINT, MAX_REFS, MIN_REFS, METRIC, N_SEGMENTS, REASON, TOKENIZE, PartitionPlan,
                    merging, output_schema, partial_sums, rejected_rows, rejected_schema,
                    statistics_table)

ON_INVALID = settings.option("on_invalid").choices
SCANS = settings.option("scan").choices
EXAMPLES_SHOWN = 5
# sacrebleu's own resampling brings every segment's statistics to the driver: test-set sizes.
MAX_SACREBLEU_ROWS = 2_000_000


@dataclass(frozen=True)
class JobOptions:
    input: str
    output: Optional[str] = None
    catalog: Optional[str] = None                   # a database of Spark's catalog, for the tables
    group_by: Optional[Tuple[str, ...]] = None      # None: those of DEFAULT_GROUP_BY present
    grouping_sets: Optional[Tuple[Tuple[str, ...], ...]] = None  # several groupings, one pass
    partition_by: Tuple[str, ...] = ()              # Hive partitions of the output, e.g. run_date
    report: bool = False                            # also write DIR/report.html
    candidate_col: str = settings.default("candidate_col")
    references_cols: Tuple[str, ...] = tuple(settings.default("references_col"))  # an array, or strings
    langpair_col: str = settings.default("langpair_col")
    references: Optional[str] = None                    # a separate references table
    join_on: Tuple[str, ...] = ()
    segment_key: Tuple[str, ...] = ()                   # inline references: what names a segment
    on_invalid: str = settings.default("on_invalid")
    colocate_references: str = settings.default("colocate_references")  # shuffle rows sharing references?
    scan: str = settings.default("scan")                # auto: Python workers read local files
    progress_seconds: float = settings.default("progress_seconds")  # 0: no progress lines
    tokenize: str = settings.default("tokenize")       # the text settings every metric reads
    spm_model: Optional[str] = settings.default("spm_model")
    resampling: Resampling = field(default_factory=Resampling)
    metrics: Tuple[str, ...] = DEFAULT_METRICS          # measured in one pass, by registry name
    metric_settings: Tuple[Tuple[str, Any], ...] = ()   # metrics' options, e.g. lowercase, chrf_beta
    segments: bool = False                              # also write DIR/segments/, a row a segment
    segments_columns: Tuple[str, ...] = ()              # input columns the segments table carries
    allow_empty_input: bool = False                     # no input row: exit 15 unless allowed
    warnings: Tuple[str, ...] = ()                      # about the options, for run.json
    # The metrics with their options, and how the rows' text is tokenized: made (and checked)
    # once, from the fields above.
    measured: Tuple[Any, ...] = field(init=False, compare=False, repr=False, default=())
    text: Optional[TextSettings] = field(init=False, compare=False, repr=False, default=None)

    def __post_init__(self):
        object.__setattr__(self, "metrics", parse_names(self.metrics))
        measured = configured(self.metrics, self.choices, None)
        object.__setattr__(self, "measured", measured)
        object.__setattr__(self, "text", TextSettings(
            self.tokenize, self.spm_model,
            any(m.lowercase_tokens for m in measured if m.uses_tokenizer)))
        if (self.resampling.method == SACREBLEU and self.resampling.active
                and not (self.segment_key or self.join_on)):
            raise UsageError("--bootstrap-method sacrebleu needs --segment-key or --join-on: "
                             "the segment order sacrebleu resamples in")
        if self.on_invalid not in ON_INVALID:
            raise UsageError(f"unknown --on-invalid policy {self.on_invalid!r}; "
                             f"choose one of: {', '.join(ON_INVALID)}")
        if self.scan not in SCANS:
            raise UsageError(f"unknown --scan {self.scan!r}; choose one of: {', '.join(SCANS)}")
        settings.check("--progress-seconds", self.progress_seconds)
        if not self.references_cols:
            raise UsageError("--references-col needs at least one column")
        if self.group_by is not None and self.grouping_sets is not None:
            raise UsageError("give --group-by or --grouping-sets, not both")
        inputs.check_reference_options(self)
        store.check_partition_names(self.partition_by)
        if self.segments_columns and not self.segments:
            raise UsageError("--segments-columns is only used with --segments")
        if self.segments and not self.output:
            raise UsageError("--segments needs --output DIR: the segments table is written there")
        if self.report and self.catalog and not self.output:
            raise UsageError("--report needs --output DIR: the page is a file there")

    @property
    def choices(self) -> dict:
        """The run's option values every metric reads its own from (those not given take their
        declared defaults): the text settings and the metrics' options."""
        return {**dict(self.metric_settings), "tokenize": self.tokenize, "spm_model": self.spm_model}


@dataclass
class JobResult:
    scores: List[dict]                 # one row per group of every grouping set
    run: dict                          # what run.json holds
    stats: Optional[pa.Table] = None   # the statistics table the scores come from
    paired: Optional[List[dict]] = None  # paired tests against the baseline, when asked for


def partial_sums_frame(df: DataFrame, plan: PartitionPlan, *accumulators) -> DataFrame:
    """One row per (group, tokenizer, metric, reason) over the whole input: the only wide step."""
    narrow = df.select(*columns(plan.read_columns))
    schema = output_schema(plan, narrow.schema)
    partials = map_in_arrow(narrow, partial_sums(plan, *accumulators), schema)
    if plan.replicates or plan.trials:
        # Replicate sums are lists Spark SQL cannot add element-wise: rows of a key meet in one
        # task, where the partition function's own merge adds them up.
        return map_in_arrow(partials.repartition(*columns(plan.keys)), merging(plan), schema)
    no_samples = [F.lit(None).cast("array<bigint>").alias(c) for c in statstable.SAMPLES]
    return partials.groupBy(*columns(plan.keys)).agg(
        F.sum(N_SEGMENTS).alias(N_SEGMENTS), F.min(MIN_REFS).alias(MIN_REFS),
        F.max(MAX_REFS).alias(MAX_REFS), F.sum(FINGERPRINT).alias(FINGERPRINT),
        *reduce.aggregations(plan.declared), *no_samples)


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
    options = JobOptions(input="<DataFrame>", group_by=tuple(group_by) if group_by is not None else None,
                         metric_settings=tuple((k, v) for k, v in options.items() if k in metric_keys),
                         **job)
    table = io.InputTable(df.sparkSession, options.input, df)
    measurement = Measurement(df.sparkSession, table, options, plan_for(table.schema, options))
    return scoring.score_sets(measurement.stats, measurement.sets, options.choices,
                              options.resampling, measurement.segments)


def _rejection_summary(rejected: Counter) -> str:
    counts = ", ".join(f"{reason}: {n}" for reason, n in sorted(rejected.items()))
    return f"{sum(rejected.values())} rows cannot be scored ({counts})"


class Measurement:
    """One pass over the candidates: their statistics table, and what it found."""

    def __init__(self, spark: SparkSession, table: io.InputTable, options: JobOptions,
                 plan: PartitionPlan, rows_done=None, rows: Optional[int] = None,
                 scan: Optional[ArrowScan] = None):
        self.options = options
        self.references_tokenized = runtime.counter(spark)
        self.plan = plan
        self.sets = plan.sets
        present = table.schema.fieldNames()
        read = [c for c in self.plan.read_columns if c in present]  # carried segment columns too
        position = bool(self.plan.segments) and self.plan.segments.key_cols == segments.POSITION
        self.input = inputs.scoring_input(spark, table, options, self.plan.group_cols,
                                          self.plan.langpair_col,
                                          table.frame.count() if rows is None else rows, scan,
                                          read, position)
        accumulators = (rows_done, self.references_tokenized)
        if self.input.scan is not None:
            partials = self.input.scan.partial_sums(spark, self.plan, *accumulators)
        else:
            frame = self._with_segment_hash(self.input.frame)
            partials = partial_sums_frame(frame, self.plan, *accumulators).toArrow()
        self.rejected = Counter()
        # Each metric's rows count the rejected rows: those of the first are the input's.
        first = pc.equal(partials[METRIC], self.plan.measured[0].name)
        rejected = partials.filter(pc.and_(partials[REASON].is_valid(), first))
        for row in rejected.select([REASON, N_SEGMENTS]).to_pylist():
            self.rejected[row[REASON]] += row[N_SEGMENTS]
        self.stats = statistics_table(partials, self.plan, options.resampling.label)
        self.segments = self._segments(partials) if self.plan.per_segment else None
        self.warnings = self._add_coverage()
        if self.rejected and options.on_invalid == "fail":
            raise InvalidRowsError(self._failure_message())

    def _with_segment_hash(self, frame: DataFrame) -> DataFrame:
        """The hash a segment's weights come from: of its key, the same for every system that
        translated it (so tests are paired); of its references when segments have no key."""
        if not self.plan.segment_hash_col:
            return frame
        key = self.input.segment_key or (inputs.REFERENCES,)
        return frame.withColumn(self.plan.segment_hash_col, F.xxhash64(*columns(key)))

    def _segments(self, partials: pa.Table) -> pa.Table:
        """Every scored segment's statistics with its rank in segment-key order (sacrebleu)."""
        scored = partials.filter(pc.is_null(partials[REASON]))
        order = pc.sort_indices(scored, [(c, "ascending") for c in self.plan.per_segment])
        rank = np.empty(len(order), np.int64)
        rank[order.to_numpy()] = np.arange(len(order))
        columns = [*self.plan.group_cols, TOKENIZE, METRIC, *self.plan.stat_columns]
        return scored.select(columns).append_column(scoring.SEGMENT_ORDER, pa.array(rank))

    def rejected_frame(self, whole: bool = True) -> DataFrame:
        """The rejected rows with every input column as read (not the internal ones), and `reason`;
        `whole=False`: with the columns the job reads only (enough to show examples)."""
        frame = self.input.whole if whole and self.input.whole is not None else self.input.frame
        return map_in_arrow(frame, rejected_rows(self.plan), rejected_schema(self.plan, frame.schema))

    def _failure_message(self) -> str:
        shown = [*self.plan.group_cols, *self.input.segment_key]
        frame = self.rejected_frame(whole=False)
        # Text columns come back as bytes, decoded here: a value that is not UTF-8 cannot be
        # taken as a string through Spark Connect's Arrow results.
        text = {f.name for f in frame.schema.fields if isinstance(f.dataType, T.StringType)}
        frame = frame.select([column(c).cast("binary").alias(c) if c in text else column(c)
                              for c in [*shown, REASON]])
        examples = [{c: v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else v
                     for c, v in r.asDict().items()} for r in frame.limit(EXAMPLES_SHOWN).collect()]
        cases = [", ".join(f"{c}={r[c]!r}" for c in shown) + f": {r[REASON]}" for r in examples]
        hints = "".join(f"; {HINTS[reason]}" for reason in sorted(self.rejected) if reason in HINTS)
        return (_rejection_summary(self.rejected) + "; e.g. " + "; ".join(cases) + hints
                + "; use --on-invalid quarantine to score the rest and write these to DIR/rejected/")

    def _add_coverage(self) -> List[str]:
        """Segments in each group's reference set, when segments have keys (the reference
        segments that agree with the group on the group columns that are part of the key)."""
        if self.input.reference_keys is None:
            return []
        shared = [c for c in self.plan.group_cols if c in self.input.segment_key]
        counts = {tuple(r[c] for c in shared): r["count"]
                  for r in self.input.reference_keys.groupBy(*columns(shared)).count().collect()}
        rows = self.stats.select([*self.plan.group_cols, "n_segments"]).to_pylist()
        expected = [counts.get(tuple(r[c] for c in shared)) for r in rows]
        index = self.stats.schema.get_field_index("n_reference_segments")
        self.stats = self.stats.set_column(index, "n_reference_segments", pa.array(expected, pa.int64()))
        warnings = []
        for row, n in zip(rows, expected):
            if n and row["n_segments"] < n:
                group = ", ".join(f"{c}={shown(row[c])}" for c in self.plan.group_cols)
                warnings.append(f"{group}: {row['n_segments']} of {n} segments scored "
                                f"(coverage {100 * row['n_segments'] / n:.1f}%)")
        return list(dict.fromkeys(warnings))  # a group's metrics cover the same segments

    def unmatched_references(self) -> Optional[int]:
        unmatched = self.input.unmatched_references
        return unmatched.count() if unmatched is not None else None


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
    if options.catalog:
        check_database_name(options.catalog)
    if options.output:
        io.check_output_outside_input(options.input, options.output)
        if options.references:
            io.check_output_outside_input(options.references, options.output, what="references")
        store.check_output(options.output, options.partition_by)


def run_job(spark: SparkSession, options: JobOptions) -> JobResult:
    started = time.time()
    run_id = store.new_run_id()
    store.configure(runtime.session_settings(spark))  # the output's S3 settings
    table = io.InputTable(spark, options.input)
    schema = table.schema  # a remote path that is not there fails here, before any output
    # One sink, whatever stores the options name (a catalog's checks before the folder is made).
    sink = store.open_sink(options, run_id, spark=spark, frames=write_frame)
    try:
        if options.text.spm_model:
            runtime.ship_file(spark, options.text.spm_model)
        job_group = f"bleu-spark-{run_id}"
        runtime.tag_jobs(spark, job_group, "bleu-spark score")
        plan = plan_for(schema, options)
        if plan.segments:  # written by the tasks, into the output folder, committed with the rest
            where = sink.task_files(segments.TABLE)
            plan = replace(plan, segments=replace(plan.segments, uri=where.uri, run_id=run_id,
                                                  fs_settings=where.fs_settings))
        say_progress("reading the input's Parquet footers", options.progress_seconds)
        found = arrow_scan(spark, table, options, plan)
        scan = found if isinstance(found, ArrowScan) else None  # else why Spark's scan reads
        # From Parquet footers (read here, or by a Spark job): checked against the scoring pass.
        rows_read = scan.rows if scan else table.frame.count()
        if rows_read == 0 and not options.allow_empty_input:
            raise EmptyInputError(f"input {options.input} has no rows: nothing to score (a feed "
                                  f"that delivered nothing?); pass --allow-empty-input to write "
                                  f"an empty result instead")
        resampling = options.resampling
        if resampling.active and resampling.method == SACREBLEU and rows_read > MAX_SACREBLEU_ROWS:
            raise UsageError(f"--bootstrap-method sacrebleu holds every segment on the driver: "
                             f"{rows_read} rows is more than {MAX_SACREBLEU_ROWS}; use poisson")
        input_bytes = scan.bytes if scan else io.input_bytes(table.frame)
        # Spark's scan is split for balance here; an ArrowScan has its tasks already.
        splits = nullcontext() if scan else inputs.splits_sized(spark, rows_read, input_bytes)
        # Rows Spark's scan reads where they lie are scored by its tasks, one a row group: too few
        # row groups slow the scoring, said before it (from the footers), not after. An ArrowScan
        # cuts row groups into tasks.
        in_place = scan is not None or not (options.references
                                            or options.colocate_references == "always")
        row_groups = scan.row_groups if scan else io.row_groups(options.input) if in_place else None
        advice = [] if scan else inputs.few_row_groups(row_groups, rows_read, runtime.parallelism(spark))
        notices.say_warnings(advice)  # now, before the scoring they are about; not again at the end
        # Said of this install's kernels only where the Python workers run it.
        kernels = compiled.status() if runtime.runs_workers_here(spark) else None
        if kernels:
            say_progress(kernels, options.progress_seconds)
        with splits, Progress(spark, rows_read, options.progress_seconds,
                              after=_after_scoring(resampling)) as progress:
            measurement = Measurement(spark, table, options, plan, progress.rows, rows_read, scan)
        layout = measurement.input.layout
        if scan:
            layout["scan"] = "arrow"
        else:
            layout.update(scan="spark", spark_scan_reason=found)
        if in_place:
            layout["input_row_groups"] = row_groups
        measurement.warnings = [*options.warnings, *measurement.warnings, *advice]
        tokenizers = tokenizers_by_pair(measurement.stats, options.langpair_col, options.text)
        measurement.warnings += tokenizer_warnings(measurement.stats, options.langpair_col,
                                                   options.text, options.measured, tokenizers)
        scores = scoring.score_sets(measurement.stats, measurement.sets, options.choices,
                                    resampling, measurement.segments, options.partition_by)
        paired = None
        if resampling.paired_bs or resampling.paired_ar:
            paired, missing = scoring.paired_rows(measurement.stats, measurement.sets, options.choices,
                                                  resampling, measurement.segments)
            resampling.check_baseline(statstable.scored_values(measurement.stats, "system"))
            measurement.warnings += missing
        timings = {"score_s": time.time() - started}
        run = run_record(spark, options, measurement, scores, job_group, rows_read, run_id,
                         input_bytes)
        run["tokenizers"] = tokenizers
        if sink:
            timings["write_s"], report = _write(spark, sink, options, plan, schema, measurement,
                                                scores, paired, run)
        timings["total_s"] = time.time() - started
        run["timings"] = timings
        if sink:
            sink.commit(run, report)
        return JobResult(scores=scores, run=run, stats=measurement.stats, paired=paired)
    except BaseException as exc:
        if sink:
            sink.abort()
        unreadable = io.read_failure(exc) or memory_failure(exc) or lost_worker_failure(exc)
        if unreadable is not None:
            raise unreadable from None
        raise


def _write(spark: SparkSession, sink, options: JobOptions, plan: PartitionPlan,
           schema: T.StructType, measurement: Measurement, scores: List[dict],
           paired: Optional[List[dict]], run: dict):
    """Every table and file of the result handed to the sink; the seconds it took, and what the
    commit draws first (a partitioned folder's report, over every partition it will hold: under
    the commit's lock, before the entry, so a group it cannot score leaves DIR as it was)."""
    started = time.time()
    resampling = options.resampling
    # Read back (footers) only when a store or the report takes the segments the tasks wrote.
    written = functools.cache(lambda: _run_segments(spark, plan, schema, sink) if plan.segments
                              else None)
    drill = _drilldown(plan, resampling, written()) if options.report else None
    if measurement.rejected:
        sink.write_table("rejected", measurement.rejected_frame())
    if plan.segments:  # the files this run's tasks wrote, committed where they lie
        sink.write_table(segments.TABLE, written)
    scoring.result_views(measurement.stats, scores, measurement.sets, options.choices, run,
                         options.report, resampling, measurement.segments, paired, drill,
                         options.partition_by).write(sink)
    if not (options.report and options.partition_by):
        return time.time() - started, None
    hashed = resampling if resampling.method == POISSON else None
    report = lambda staged: staged.write_file("report.html", scoring.partitioned_report(
        _committed_stats(staged), staged.staged_partitions(), measurement.stats, measurement.sets,
        options.choices, run, options.partition_by, hashed, drill))
    return time.time() - started, report


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
