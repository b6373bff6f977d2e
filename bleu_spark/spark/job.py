"""The scoring job: read, validate, map partitions to partial sums, reduce per group, score, write."""
from __future__ import annotations

import platform
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyspark
import sacrebleu
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import __version__
from ..accumulate import GroupTotals
from ..config import AUTO, BleuConfig
from ..errors import InvalidRowsError, MixedTokenizerGroupError, UsageError
from ..rows import REASONS
from ..stats import stats_names
from ..tokenizers import build_tokenizer
from . import io
from .stats import (MAX_REFS, MIN_REFS, N_SEGMENTS, REASON, TOKENIZE, PartitionPlan,
                    output_schema, partial_sums)

DEFAULT_GROUP_BY = ("system", "langpair")
ON_INVALID = ("fail", "quarantine")
EXAMPLES_SHOWN = 5


@dataclass(frozen=True)
class JobOptions:
    input: str
    output: Optional[str] = None
    group_by: Optional[Tuple[str, ...]] = None      # None: those of DEFAULT_GROUP_BY present
    candidate_col: str = "candidate"
    references_col: str = "references"
    langpair_col: str = "langpair"
    on_invalid: str = "fail"
    config: BleuConfig = field(default_factory=BleuConfig)

    def __post_init__(self):
        if self.on_invalid not in ON_INVALID:
            raise UsageError(f"unknown --on-invalid policy {self.on_invalid!r}; "
                             f"choose one of: {', '.join(ON_INVALID)}")


@dataclass
class JobResult:
    scores: List[dict]                 # one row per group, sorted by the group columns
    run: dict                          # what run.json holds


def group_columns(options: JobOptions, columns: Sequence[str]) -> Tuple[str, ...]:
    if options.group_by is not None:
        return tuple(options.group_by)
    return tuple(c for c in DEFAULT_GROUP_BY if c in columns)


def plan_for(schema: T.StructType, options: JobOptions) -> PartitionPlan:
    """Checks the input's columns against the options, all problems at once."""
    columns = schema.fieldNames()
    group_cols = group_columns(options, columns)
    config = options.config
    auto = config.tokenize == AUTO and options.langpair_col in columns
    rules = [io.ColumnRule(options.candidate_col, "string", io.is_string),
             io.ColumnRule(options.references_col, "array<string>", io.is_string_array)]
    rules += [io.ColumnRule(c, "an atomic type", io.is_atomic) for c in group_cols]
    if auto:
        rules.append(io.ColumnRule(options.langpair_col, "string", io.is_string))
    io.check_columns(schema, rules)
    if auto and options.langpair_col not in group_cols:
        raise MixedTokenizerGroupError(
            f"--tokenize auto picks a tokenizer per {options.langpair_col}, so "
            f"{options.langpair_col} must be one of the --group-by columns "
            f"(or give a fixed --tokenize)")
    return PartitionPlan(config=config, group_cols=group_cols,
                         candidate_col=options.candidate_col,
                         references_col=options.references_col,
                         langpair_col=options.langpair_col if auto else None)


def partial_sums_frame(df: DataFrame, plan: PartitionPlan) -> DataFrame:
    """One row per (group, tokenizer, reason) over the whole input: the only wide step."""
    needed = list(dict.fromkeys([*plan.group_cols, plan.candidate_col, plan.references_col,
                                 *([plan.langpair_col] if plan.langpair_col else [])]))
    narrow = df.select(*needed)
    partials = narrow.mapInArrow(partial_sums(plan), output_schema(plan, narrow.schema))
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
        if len(by_tokenizer) > 1:
            raise MixedTokenizerGroupError(
                f"group {dict(zip(group_cols, key))} needs tokenizers "
                f"{', '.join(sorted(by_tokenizer))}; group by the language pair or fix --tokenize")
        row = dict(zip(group_cols, key))
        if by_tokenizer:
            (tokenize, group_totals), = by_tokenizer.items()
            if tokenize not in signatures:
                signatures[tokenize] = build_tokenizer(tokenize, config.spm_model).signature()
            row.update(group_totals.result(config, tokenize, signatures[tokenize]).to_dict())
        else:  # every row of the group was rejected: report it, with no score
            row.update(dict.fromkeys(("score", "counts", "totals", "precisions", "bp", "ratio",
                                      "sys_len", "ref_len", "tokenize", "signature", "verbose")),
                       n_segments=0)
        row["n_rejected"] = rejected_by_group.get(key, 0)
        scores.append(row)
    scores.sort(key=lambda r: _sort_key(r, group_cols))
    return scores, rejected_by_reason


def score_dataframe(df: DataFrame, config: Optional[BleuConfig] = None,
                    group_by: Optional[Sequence[str]] = None, candidate_col: str = "candidate",
                    references_col: str = "references", langpair_col: str = "langpair",
                    **bleu_options) -> List[dict]:
    """Scores per group of a DataFrame (no files written). Unscorable rows raise."""
    options = JobOptions(input="<DataFrame>", group_by=tuple(group_by) if group_by is not None else None,
                         candidate_col=candidate_col, references_col=references_col,
                         langpair_col=langpair_col, config=config or BleuConfig(**bleu_options))
    plan = plan_for(df.schema, options)
    sums = [r.asDict() for r in partial_sums_frame(df, plan).collect()]
    scores, rejected = score_groups(sums, plan)
    if rejected:
        raise InvalidRowsError(_rejection_summary(rejected))
    return scores


def _rejection_summary(rejected: Counter) -> str:
    counts = ", ".join(f"{reason}: {n}" for reason, n in sorted(rejected.items()))
    return f"{sum(rejected.values())} rows cannot be scored ({counts})"


def preflight(options: JobOptions) -> None:
    """Every check that needs no JVM: a local input's path and columns, the output folder."""
    schema = io.local_schema(options.input)
    if schema is not None:
        plan_for(schema, options)
    if options.output:
        io.OutputDir(options.output).check_replaceable()


def run_job(spark: SparkSession, options: JobOptions) -> JobResult:
    started = time.time()
    timings = {}
    df = io.read_parquet(spark, options.input)
    plan = plan_for(df.schema, options)
    output = io.OutputDir(options.output).open() if options.output else None
    if options.config.spm_model:
        spark.sparkContext.addFile(options.config.spm_model)
    timings["validate_s"] = time.time() - started

    try:
        job_group = f"bleu-spark-{uuid.uuid4().hex[:8]}"
        spark.sparkContext.setJobGroup(job_group, "bleu-spark score")
        sums = [r.asDict() for r in partial_sums_frame(df, plan).collect()]
        scores, rejected = score_groups(sums, plan)
        timings["compute_s"] = time.time() - started - timings["validate_s"]
        if rejected and options.on_invalid == "fail":
            raise InvalidRowsError(_rejection_summary(rejected) + "; use --on-invalid quarantine "
                                   "to score the rest and write these to DIR/rejected/")
        n_scored = sum(r["n_segments"] for r in scores)
        n_rejected = sum(rejected.values())
        run = {
            "input": options.input, "output": options.output, "group_by": list(plan.group_cols),
            "columns": {"candidate": options.candidate_col, "references": options.references_col,
                        "langpair": options.langpair_col},
            "on_invalid": options.on_invalid, "config": asdict(options.config),
            "rows": {"read": n_scored + n_rejected, "scored": n_scored, "rejected": n_rejected,
                     "rejected_by_reason": dict(sorted(rejected.items()))},
            "groups": len(scores),
            "tasks": task_summary(spark, job_group),
            "versions": versions(spark),
            "spark": {"master": spark.sparkContext.master, "app_id": spark.sparkContext.applicationId},
        }
        if output:
            write_start = time.time()
            output.write_parquet("scores", scores_table(scores, plan.group_cols))
            output.write_json("scores.json", scores)
            timings["write_s"] = time.time() - write_start
            timings["total_s"] = time.time() - started
            run["timings"] = timings
            output.write_json(io.RUN_FILE, run)
            output.commit()
        else:
            timings["total_s"] = time.time() - started
            run["timings"] = timings
        return JobResult(scores=scores, run=run)
    except BaseException:
        if output:
            output.abort()
        raise


def scores_table(scores: List[dict], group_cols) -> pa.Table:
    types = {"score": pa.float64(), "counts": pa.list_(pa.int64()), "totals": pa.list_(pa.int64()),
             "precisions": pa.list_(pa.float64()), "bp": pa.float64(), "ratio": pa.float64(),
             "sys_len": pa.int64(), "ref_len": pa.int64(), "n_segments": pa.int64(),
             "tokenize": pa.string(), "signature": pa.string(), "verbose": pa.string(),
             "n_rejected": pa.int64()}
    columns = {c: pa.array([r[c] for r in scores]) for c in group_cols}
    columns.update({c: pa.array([r[c] for r in scores], type=t) for c, t in types.items()})
    return pa.table(columns)


def task_summary(spark: SparkSession, job_group: str) -> dict:
    """Tasks of this run's Spark jobs; `failed` counts attempts that were lost and retried."""
    tracker = spark.sparkContext.statusTracker()
    summary = Counter()
    for job_id in tracker.getJobIdsForGroup(job_group):
        job = tracker.getJobInfo(job_id)
        for stage_id in (job.stageIds if job else []):
            stage = tracker.getStageInfo(stage_id)
            if stage:
                summary["stages"] += 1
                summary["completed"] += stage.numCompletedTasks
                summary["failed"] += stage.numFailedTasks
    return {k: summary.get(k, 0) for k in ("stages", "completed", "failed")}


def versions(spark: SparkSession) -> dict:
    jvm = spark.sparkContext._jvm  # the documented gateway to the driver JVM
    return {"bleu_spark": __version__, "sacrebleu": sacrebleu.__version__,
            "pyspark": pyspark.__version__, "pyarrow": pa.__version__,
            "python": platform.python_version(),
            "java": jvm.java.lang.System.getProperty("java.version")}
