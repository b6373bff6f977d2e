"""The scoring job: read, validate, map partitions to partial sums, reduce per group, score, write."""
from __future__ import annotations

import os
import platform
import sys
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyspark
from pyspark import SparkConf
from pyspark.errors import PySparkRuntimeError
import sacrebleu
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import __version__
from ..accumulate import GroupTotals
from ..config import AUTO, BleuConfig
from ..errors import InvalidRowsError, MixedTokenizerGroupError, UsageError
from ..stats import stats_names
from ..tokenizers import build_tokenizer
from . import inputs, io
from .progress import Progress
from .stats import (MAX_REFS, MIN_REFS, N_SEGMENTS, REASON, TOKENIZE, PartitionPlan,
                    output_schema, partial_sums, rejected_rows, rejected_schema)

DEFAULT_GROUP_BY = ("system", "langpair")
ON_INVALID = ("fail", "quarantine")
EXAMPLES_SHOWN = 5


@dataclass(frozen=True)
class JobOptions:
    input: str
    output: Optional[str] = None
    group_by: Optional[Tuple[str, ...]] = None      # None: those of DEFAULT_GROUP_BY present
    candidate_col: str = "candidate"
    references_cols: Tuple[str, ...] = ("references",)  # one array column, or string columns
    langpair_col: str = "langpair"
    references: Optional[str] = None                    # a separate references table
    join_on: Tuple[str, ...] = ()
    segment_key: Tuple[str, ...] = ()                   # inline references: what names a segment
    on_invalid: str = "fail"
    progress_seconds: float = 30.0                      # 0: no progress lines
    config: BleuConfig = field(default_factory=BleuConfig)

    def __post_init__(self):
        if self.on_invalid not in ON_INVALID:
            raise UsageError(f"unknown --on-invalid policy {self.on_invalid!r}; "
                             f"choose one of: {', '.join(ON_INVALID)}")
        if not self.references_cols:
            raise UsageError("--references-col needs at least one column")
        inputs.check_reference_options(self)


@dataclass
class JobResult:
    scores: List[dict]                 # one row per group, sorted by the group columns
    run: dict                          # what run.json holds


def group_columns(options: JobOptions, columns: Sequence[str]) -> Tuple[str, ...]:
    if options.group_by is not None:
        return tuple(options.group_by)
    return tuple(c for c in DEFAULT_GROUP_BY if c in columns)


def plan_for(schema: T.StructType, options: JobOptions) -> PartitionPlan:
    """Checks the candidates table's columns against the options, all problems at once."""
    columns = schema.fieldNames()
    group_cols = group_columns(options, columns)
    config = options.config
    auto = config.tokenize == AUTO and options.langpair_col in columns
    rules = [io.ColumnRule(options.candidate_col, "string", io.is_string)]
    if not options.references:
        rules += inputs.reference_rules(options, columns)
    keys = dict.fromkeys([*group_cols, *options.join_on, *options.segment_key])
    rules += [io.ColumnRule(c, "an atomic type", io.is_atomic) for c in keys]
    if auto:
        rules.append(io.ColumnRule(options.langpair_col, "string", io.is_string))
    io.check_columns(schema, rules)
    if auto and options.langpair_col not in group_cols:
        raise MixedTokenizerGroupError(
            f"--tokenize auto picks a tokenizer per {options.langpair_col}, so "
            f"{options.langpair_col} must be one of the --group-by columns "
            f"(or give a fixed --tokenize)")
    return PartitionPlan(config=config, group_cols=group_cols,
                         candidate_col=options.candidate_col, references_col=inputs.REFERENCES,
                         langpair_col=options.langpair_col if auto else None,
                         reason_col=inputs.ROW_REASON)


def partial_sums_frame(df: DataFrame, plan: PartitionPlan, *accumulators) -> DataFrame:
    """One row per (group, tokenizer, reason) over the whole input: the only wide step."""
    needed = list(dict.fromkeys([*plan.group_cols, plan.candidate_col, plan.references_col,
                                 *([plan.langpair_col] if plan.langpair_col else []),
                                 plan.reason_col]))
    narrow = df.select(*needed)
    partials = narrow.mapInArrow(partial_sums(plan, *accumulators), output_schema(plan, narrow.schema))
    stats = stats_names(plan.config.max_ngram_order)
    return partials.groupBy(*plan.group_cols, TOKENIZE, REASON).agg(
        F.sum(N_SEGMENTS).alias(N_SEGMENTS), F.min(MIN_REFS).alias(MIN_REFS),
        F.max(MAX_REFS).alias(MAX_REFS), *[F.sum(s).alias(s) for s in stats])


def _sort_key(row: dict, group_cols) -> tuple:
    return tuple((row[c] is not None, row[c]) for c in group_cols)


def score_groups(sums: List[dict], plan: PartitionPlan) -> Tuple[List[dict], Counter]:
    """Driver side: scores per group from the reduced sums; rejected counts by reason."""
    config, group_cols = plan.config, plan.group_cols
    stats = stats_names(config.max_ngram_order)
    totals: Dict[tuple, Dict[str, GroupTotals]] = defaultdict(dict)
    rejected_by_group: Counter = Counter()
    rejected_by_reason: Counter = Counter()
    for row in sums:
        key = tuple(row[c] for c in group_cols)
        if row[REASON] is not None:
            rejected_by_group[key] += row[N_SEGMENTS]
            rejected_by_reason[row[REASON]] += row[N_SEGMENTS]
            continue
        totals[key][row[TOKENIZE]] = GroupTotals(
            config.max_ngram_order, stats=[row[s] for s in stats], n_segments=row[N_SEGMENTS],
            min_refs=row[MIN_REFS], max_refs=row[MAX_REFS])

    signatures = {}
    scores = []
    for key in set(totals) | set(rejected_by_group):
        by_tokenizer = totals.get(key, {})
        row = dict(zip(group_cols, key))
        if by_tokenizer:
            # One tokenizer per group: plan_for puts the language pair among the group columns.
            (tokenize, group_totals), = by_tokenizer.items()
            if tokenize not in signatures:
                signatures[tokenize] = build_tokenizer(tokenize, config.spm_model).signature()
            row.update(group_totals.result(config, tokenize, signatures[tokenize]).to_dict())
        else:  # every row of the group was rejected: report it, with no score
            row.update(dict.fromkeys(("score", "counts", "totals", "precisions", "bp", "ratio",
                                      "sys_len", "ref_len", "tokenize", "signature", "verbose")),
                       n_segments=0)
        row["n_rejected"] = rejected_by_group.get(key, 0)
        row["coverage"] = None
        scores.append(row)
    scores.sort(key=lambda r: _sort_key(r, group_cols))
    return scores, rejected_by_reason


def score_dataframe(df: DataFrame, config: Optional[BleuConfig] = None,
                    group_by: Optional[Sequence[str]] = None, **options) -> List[dict]:
    """Scores per group of a DataFrame, no files written; unscorable rows raise.

    `options` are JobOptions fields (candidate_col, references_cols, references, join_on, ...)
    or BleuConfig fields (tokenize, lowercase, ...).
    """
    job_fields = set(JobOptions.__dataclass_fields__)
    bleu = {k: v for k, v in options.items() if k not in job_fields}
    job = {k: v for k, v in options.items() if k in job_fields}
    options = JobOptions(input="<DataFrame>", group_by=tuple(group_by) if group_by is not None else None,
                         config=config or BleuConfig(**bleu), **job)
    return Scoring(df.sparkSession, df, options).scores


def _rejection_summary(rejected: Counter) -> str:
    counts = ", ".join(f"{reason}: {n}" for reason, n in sorted(rejected.items()))
    return f"{sum(rejected.values())} rows cannot be scored ({counts})"


class Scoring:
    """One scoring pass over a candidates DataFrame, and what it found."""

    def __init__(self, spark: SparkSession, df: DataFrame, options: JobOptions, rows_done=None):
        self.options = options
        self.references_tokenized = spark.sparkContext.accumulator(0)
        self.plan = plan_for(df.schema, options)
        self.input = inputs.scoring_input(spark, df, options, self.plan.group_cols,
                                          self.plan.langpair_col)
        frame = partial_sums_frame(self.input.frame, self.plan, rows_done, self.references_tokenized)
        sums = [r.asDict() for r in frame.collect()]
        self.scores, self.rejected = score_groups(sums, self.plan)
        self.warnings = self._add_coverage()
        if self.rejected and options.on_invalid == "fail":
            raise InvalidRowsError(self._failure_message())

    def rejected_frame(self) -> DataFrame:
        frame = self.input.frame
        return frame.mapInArrow(rejected_rows(self.plan), rejected_schema(self.plan, frame.schema))

    def _failure_message(self) -> str:
        examples = self.rejected_frame().limit(EXAMPLES_SHOWN).collect()
        shown = [", ".join(f"{c}={r[c]!r}" for c in [*self.plan.group_cols, *self.input.segment_key])
                 + f": {r[REASON]}" for r in examples]
        return (_rejection_summary(self.rejected) + "; e.g. " + "; ".join(shown)
                + "; use --on-invalid quarantine to score the rest and write these to DIR/rejected/")

    def _add_coverage(self) -> List[str]:
        """Segments scored / segments in the reference set, per group, when segments have keys."""
        if self.input.reference_keys is None:
            return []
        shared = [c for c in self.plan.group_cols if c in self.input.segment_key]
        counts = {tuple(r[c] for c in shared): r["count"]
                  for r in self.input.reference_keys.groupBy(*shared).count().collect()}
        warnings = []
        for row in self.scores:
            expected = counts.get(tuple(row[c] for c in shared))
            row["coverage"] = row["n_segments"] / expected if expected else None
            if row["coverage"] is not None and row["coverage"] < 1:
                group = ", ".join(f"{c}={row[c]}" for c in self.plan.group_cols)
                warnings.append(f"{group}: {row['n_segments']} of {expected} segments scored "
                                f"(coverage {100 * row['coverage']:.1f}%)")
        return warnings

    def unmatched_references(self) -> Optional[int]:
        unmatched = self.input.unmatched_references
        return unmatched.count() if unmatched is not None else None


def preflight(options: JobOptions) -> None:
    """Every check that needs no JVM: a local input's path and columns, the output folder."""
    schema = io.local_schema(options.input)
    if schema is not None:
        plan_for(schema, options)
    if options.references:
        refs = io.local_schema(options.references, what="references")
        if refs is not None:
            io.check_columns(refs, inputs.references_table_rules(options, refs), table="references")
    if options.output:
        io.OutputDir(options.output).check_replaceable()


def run_job(spark: SparkSession, options: JobOptions) -> JobResult:
    started = time.time()
    df = io.read_parquet(spark, options.input)
    output = io.OutputDir(options.output).open() if options.output else None
    if options.config.spm_model:
        spark.sparkContext.addFile(options.config.spm_model)
    try:
        job_group = f"bleu-spark-{uuid.uuid4().hex[:8]}"
        spark.sparkContext.setJobGroup(job_group, "bleu-spark score")
        rows_read = df.count()  # from Parquet footers: cheap, and checked against the scoring pass
        with Progress(spark, rows_read, options.progress_seconds) as progress:
            scoring = Scoring(spark, df, options, progress.rows)
        timings = {"score_s": time.time() - started}
        run = run_record(spark, options, scoring, job_group, rows_read)
        if output:
            write_start = time.time()
            if scoring.rejected:
                scoring.rejected_frame().write.parquet(io.spark_path(output.staging_uri + "/rejected"))
            output.write_parquet("scores", scores_table(scoring.scores, scoring.plan.group_cols))
            output.write_json("scores.json", scoring.scores)
            timings["write_s"] = time.time() - write_start
        timings["total_s"] = time.time() - started
        run["timings"] = timings
        if output:
            output.write_json(io.RUN_FILE, run)
            output.commit()
        return JobResult(scores=scoring.scores, run=run)
    except BaseException:
        if output:
            output.abort()
        raise


def run_record(spark: SparkSession, options: JobOptions, scoring: Scoring, job_group: str,
               rows_read: int) -> dict:
    """What run.json holds: the effective configuration, the row accounting, versions, tasks."""
    n_scored = sum(r["n_segments"] for r in scoring.scores)
    n_rejected = sum(scoring.rejected.values())
    if rows_read != n_scored + n_rejected:  # counted apart from the scoring pass: a bug if unequal
        raise RuntimeError(f"row accounting broken: read {rows_read}, scored {n_scored}, "
                           f"rejected {n_rejected}")
    return {
        "input": options.input, "output": options.output, "references": options.references,
        "join_on": list(options.join_on), "segment_key": list(scoring.input.segment_key),
        "group_by": list(scoring.plan.group_cols),
        "columns": {"candidate": options.candidate_col, "references": list(options.references_cols),
                    "langpair": options.langpair_col},
        "on_invalid": options.on_invalid, "config": asdict(options.config),
        "rows": {"read": rows_read, "scored": n_scored, "rejected": n_rejected,
                 "rejected_by_reason": dict(sorted(scoring.rejected.items()))},
        "unmatched_reference_segments": scoring.unmatched_references(),
        # Reference sets tokenized by the partition function (task retries may add some): at or
        # near the number of segments, not segments x systems, when rows of a segment meet.
        "references_tokenized": scoring.references_tokenized.value,
        "groups": len(scoring.scores),
        "warnings": scoring.warnings,
        "tasks": task_summary(spark, job_group),
        "versions": versions(spark),
        "spark": {"master": spark.sparkContext.master, "app_id": spark.sparkContext.applicationId},
    }


def scores_table(scores: List[dict], group_cols) -> pa.Table:
    types = {"score": pa.float64(), "counts": pa.list_(pa.int64()), "totals": pa.list_(pa.int64()),
             "precisions": pa.list_(pa.float64()), "bp": pa.float64(), "ratio": pa.float64(),
             "sys_len": pa.int64(), "ref_len": pa.int64(), "n_segments": pa.int64(),
             "tokenize": pa.string(), "signature": pa.string(), "verbose": pa.string(),
             "n_rejected": pa.int64(), "coverage": pa.float64()}
    columns = {c: pa.array([r[c] for r in scores]) for c in group_cols}
    columns.update({c: pa.array([r.get(c) for r in scores], type=t) for c, t in types.items()})
    return pa.table(columns)


def task_summary(spark: SparkSession, job_group: str) -> dict:
    """Tasks of this run's Spark jobs. `failed` counts task attempts that were lost (e.g. with an
    executor) and rerun; `stage_retries` counts stages Spark had to run again for lost output."""
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    summary = Counter()
    for job_id in tracker.getJobIdsForGroup(job_group):
        job = tracker.getJobInfo(job_id)
        for stage_id in (job.stageIds if job else []):
            stage = tracker.getStageInfo(stage_id)
            if stage:
                summary["stages"] += 1
                summary["stage_retries"] += stage.currentAttemptId
                summary["completed"] += stage.numCompletedTasks
                summary["failed"] += _failed_attempts(sc, stage_id, stage.numFailedTasks)
    return {k: summary.get(k, 0) for k in ("stages", "stage_retries", "completed", "failed")}


def _failed_attempts(sc, stage_id: int, last_attempt_failed: int) -> int:
    """Failed tasks over every attempt of a stage. The public tracker shows only the last
    attempt, and a stage rerun after a lost executor starts at zero failures, so this asks the
    driver's status store (what the UI's REST API serves); the tracker's figure if it cannot."""
    try:
        no_quantiles = sc._gateway.new_array(sc._gateway.jvm.double, 0)
        attempts = sc._jsc.sc().statusStore().stageData(stage_id, False, None, False, no_quantiles)
        return sum(attempts.apply(i).numFailedTasks() for i in range(attempts.length()))
    except Exception:  # an internal interface: never let reporting break a finished run
        return last_attempt_failed


def versions(spark: SparkSession) -> dict:
    jvm = spark.sparkContext._jvm  # the documented gateway to the driver JVM
    return {"bleu_spark": __version__, "sacrebleu": sacrebleu.__version__,
            "pyspark": pyspark.__version__, "pyarrow": pa.__version__,
            "python": platform.python_version(),
            "java": jvm.java.lang.System.getProperty("java.version")}


def spark_session():
    """Spark settings come from spark-submit, --conf and spark-defaults; local[*] only if none."""
    # Python workers run the driver's interpreter unless the platform names one
    # (spark.pyspark.python wins over this variable): the bare `python3` on PATH may lack pyarrow.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        return SparkSession.builder.getOrCreate()
    except PySparkRuntimeError as exc:
        if exc.getCondition() not in ("MASTER_URL_NOT_SET", "APPLICATION_NAME_NOT_SET"):
            raise
    # The JVM is up now, so SparkConf sees what spark-submit and spark-defaults set.
    conf, builder = SparkConf(), SparkSession.builder
    if not conf.contains("spark.master"):
        builder = builder.master("local[*]")
    if not conf.contains("spark.app.name"):
        builder = builder.appName("bleu-spark")
    return builder.getOrCreate()
