"""What run.json holds of a scoring run: its options, the row accounting, the Spark tasks
and versions; the fields every command writes come from `bleu_spark.record`."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from importlib import metadata
from typing import TYPE_CHECKING, List, Optional

import pyarrow.compute as pc
import pyspark
from pyspark.sql import SparkSession

from .. import record

if TYPE_CHECKING:
    from .job import JobOptions, Measurement


def run_record(spark: SparkSession, options: JobOptions, measurement: Measurement,
               scores: List[dict], job_group: str, rows_read: int, run_id: str,
               input_bytes: Optional[int] = None) -> dict:
    """What run.json holds: the effective configuration, the row accounting, versions, tasks."""
    stats = measurement.stats  # each metric's rows count every row: those of the first
    first = stats.filter(pc.equal(stats["metric"], measurement.plan.measured[0].name))
    n_scored = pc.sum(first["n_segments"]).as_py() or 0
    n_rejected = sum(measurement.rejected.values())
    if rows_read != n_scored + n_rejected:  # counted apart from the scoring pass: a bug if unequal
        raise RuntimeError(f"row accounting broken: read {rows_read}, scored {n_scored}, "
                           f"rejected {n_rejected}")
    return {
        **record.started(run_id, "score"),
        "input": options.input, "output": options.output, "catalog": options.catalog,
        "references": options.references,
        "join_on": list(options.join_on), "segment_key": list(measurement.input.segment_key),
        **record.grouping(measurement.plan.group_cols, measurement.sets, options.partition_by),
        "columns": {"candidate": options.candidate_col, "references": list(options.references_cols),
                    "langpair": options.langpair_col},
        "on_invalid": options.on_invalid, "config": asdict(options.config),
        "metrics": [{"metric": m.name, **m.measurement()} for m in measurement.plan.measured],
        "resampling": asdict(options.resampling) if options.resampling.active else None,
        "rows": {"read": rows_read, "scored": n_scored, "rejected": n_rejected,
                 "rejected_by_reason": dict(sorted(measurement.rejected.items()))},
        "unmatched_reference_segments": measurement.unmatched_references(),
        # Reference sets tokenized by the partition function (task retries may add some): at or
        # near the number of segments, not segments x systems, when rows of a segment meet.
        "references_tokenized": measurement.references_tokenized.value,
        "layout": measurement.input.layout,
        "groups": len(scores),
        "warnings": measurement.warnings,
        "tasks": task_summary(spark, job_group),
        "input_bytes": input_bytes,
        "versions": versions(spark),
        "spark": {"master": spark.sparkContext.master, "app_id": spark.sparkContext.applicationId},
    }


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
                summary.update(_stage_metrics(sc, stage_id, stage.numFailedTasks))
    return {k: summary.get(k, 0) for k in ("stages", "stage_retries", "completed", "failed",
                                           "shuffle_write_bytes", "shuffle_read_bytes")}


def _stage_metrics(sc, stage_id: int, last_attempt_failed: int) -> Counter:
    """Failed tasks and bytes shuffled over every attempt of a stage. The public tracker
    shows only the last attempt, and a stage rerun after a lost executor starts at zero
    failures, so this asks the driver's status store (what the UI's REST API serves); the
    tracker's failures alone if it cannot."""
    try:
        no_quantiles = sc._gateway.new_array(sc._gateway.jvm.double, 0)
        attempts = sc._jsc.sc().statusStore().stageData(stage_id, False, None, False, no_quantiles)
        metrics = Counter()
        for stage in (attempts.apply(i) for i in range(attempts.length())):
            metrics.update(failed=stage.numFailedTasks(),
                           shuffle_write_bytes=stage.shuffleWriteBytes(),
                           shuffle_read_bytes=stage.shuffleReadBytes())
        return metrics
    except Exception:  # an internal interface: never let reporting break a finished run
        return Counter(failed=last_attempt_failed)


def versions(spark: SparkSession) -> dict:
    jvm = spark.sparkContext._jvm  # the documented gateway to the driver JVM
    numba = metadata.version("numba")  # from its metadata: the driver imports no numba
    return record.versions(pyspark=pyspark.__version__, numba=numba,
                           java=jvm.java.lang.System.getProperty("java.version"))
