"""What run.json holds of a scoring run: its options, the row accounting, the Spark tasks
and versions; the fields every command writes come from `bleu_spark.record`."""
from __future__ import annotations

from dataclasses import asdict
from importlib import metadata
from typing import TYPE_CHECKING, Optional

import pyarrow.compute as pc
import pyspark
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from .. import record, settings
from . import runtime

if TYPE_CHECKING:
    from .measure import Measurement
    from .options import JobOptions


def run_record(spark: SparkSession, options: JobOptions, measurement: Measurement,
               groups: int, job_group: str, rows_read: int, run_id: str,
               input_bytes: Optional[int] = None) -> dict:
    """What run.json holds: the effective configuration, the row accounting, versions, tasks.
    `groups`: the score rows of every grouping set."""
    n_scored = _scored_rows(measurement)
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
        "windows": ({"time_col": options.time_col, "window": options.window,
                     "seconds": options.windows.seconds} if options.windows else None),
        "columns": {"candidate": options.candidate_col, "references": list(options.references_cols),
                    "langpair": options.langpair_col},
        "on_invalid": options.on_invalid, "config": settings.config_record(options.choices),
        "metrics": [{"metric": m.name, **m.measurement()} for m in measurement.plan.measured],
        "resampling": asdict(options.resampling) if options.resampling.active else None,
        "rows": {"read": rows_read, "scored": n_scored, "rejected": n_rejected,
                 "rejected_by_reason": dict(sorted(measurement.rejected.items()))},
        "unmatched_reference_segments": measurement.unmatched_references(),
        # Reference sets tokenized by the partition function (task retries may add some): at or
        # near the number of segments, not segments x systems, when rows of a segment meet.
        # None through Spark Connect when Spark's scan read the rows (no accumulators there).
        "references_tokenized": runtime.counted(measurement.references_tokenized),
        "layout": measurement.input.layout,
        "groups": groups,
        "warnings": measurement.warnings,
        "tasks": runtime.task_summary(spark, job_group),
        "input_bytes": input_bytes,
        "versions": versions(spark),
        "spark": runtime.describe(spark),
    }


def _scored_rows(measurement: Measurement) -> int:
    """Rows scored: each metric's rows count every row, so those of the first metric."""
    first = measurement.plan.measured[0].name
    if measurement.on_executors:
        frame = measurement.stats_frame
        return frame.filter(F.col("metric") == first).agg(F.sum("n_segments")).first()[0] or 0
    stats = measurement.stats if measurement.own_stats is None else measurement.own_stats
    return pc.sum(stats.filter(pc.equal(stats["metric"], first))["n_segments"]).as_py() or 0


def versions(spark: SparkSession) -> dict:
    numba = metadata.version("numba")  # from its metadata: the driver imports no numba
    return record.versions(pyspark=pyspark.__version__, numba=numba, java=runtime.java_version(spark))
