"""One pass of Spark over the candidates (`measure`, to a `Measurement`): their statistics table,
the rows rejected and why, each scored segment's statistics and the coverage of each group's
references."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import scoring, segments, statstable
from ..errors import InvalidRowsError
from ..rows import HINTS
from ..shown import shown
from . import distributed, inputs, io, reduce, runtime
from .names import column, columns, map_in_arrow
from .options import JobOptions
from .scan import ArrowScan
from .stats import (FINGERPRINT, MAX_REFS, MIN_REFS, METRIC, N_SEGMENTS, REASON, TOKENIZE, PartitionPlan,
                    merged_sums, merging, output_schema, partial_sums, rejected_rows,
                    rejected_schema, statistics_table)

EXAMPLES_SHOWN = 5
# Where groups are scored (`--groups-scored-on`): auto scores on the driver an input of at most
# DRIVER_ROWS rows, or whose statistics table fits in DRIVER_BYTES (estimated, or once counted);
# on the executors the rest. The driver holds the statistics as Arrow and scores many groups a
# chunk at a time (`streamed`), so its memory is that of the statistics, not of score rows.
AUTO, DRIVER, EXECUTORS = "auto", "driver", "executors"
DRIVER_ROWS = 50_000
DRIVER_BYTES = 64 << 20  # of statistics rows the driver holds under auto
ROW_BYTES = 400          # a statistics row without replicate sums, generously


def scan_frame(scored: inputs.ScoringInput, plan: PartitionPlan) -> DataFrame:
    """What the partition function reads of Spark's scan: its columns, segment hashes added."""
    return _with_segment_hash(scored, plan).select(*columns(plan.read_columns))


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


def rejection_summary(rejected: Counter) -> str:
    counts = ", ".join(f"{reason}: {n}" for reason, n in sorted(rejected.items()))
    return f"{sum(rejected.values())} rows cannot be scored ({counts})"


@dataclass
class Measurement:
    """What one pass over the candidates found (`measure`): the statistics table, the rows
    rejected and why, each scored segment's statistics (for sacrebleu's replayed draws), the
    warnings about the references' coverage."""
    plan: PartitionPlan
    input: inputs.ScoringInput
    stats: pa.Table
    rejected: Counter
    segment_stats: Optional[pa.Table]     # None unless sacrebleu's draws are replayed
    warnings: List[str]
    references_tokenized: Any             # the accumulator that counted them
    # Scored on the executors (`distributed`): the statistics table left there, `stats` None.
    stats_frame: Optional[DataFrame] = None
    tasks: int = 1                        # the tasks that scored the rows, and sum and score groups
    # An incremental run's own statistics, once `stats` holds them added to the folder's.
    own_stats: Optional[pa.Table] = None

    @property
    def on_executors(self) -> bool:
        return self.stats_frame is not None

    @property
    def sets(self):
        return self.plan.sets

    def rejected_frame(self, whole: bool = True) -> DataFrame:
        """The rejected rows with every input column as read (not the internal ones), and `reason`;
        `whole=False`: with the columns the job reads only (enough to show examples)."""
        frame = self.input.whole if whole and self.input.whole is not None else self.input.frame
        return map_in_arrow(frame, rejected_rows(self.plan), rejected_schema(self.plan, frame.schema))

    def unmatched_references(self) -> Optional[int]:
        unmatched = self.input.unmatched_references
        return unmatched.count() if unmatched is not None else None


def measure(spark: SparkSession, table: io.InputTable, options: JobOptions, plan: PartitionPlan,
            rows_done=None, rows: Optional[int] = None,
            scan: Optional[ArrowScan] = None) -> Measurement:
    """One pass of Spark over the candidates to their `Measurement`; rejected rows raise unless
    `--on-invalid quarantine`."""
    references_tokenized = runtime.counter(spark)
    present = table.schema.fieldNames()
    read = [c for c in plan.read_columns if c in present]  # carried segment columns too
    position = bool(plan.segments) and plan.segments.key_cols == segments.POSITION
    rows = table.frame.count() if rows is None else rows
    scored = inputs.scoring_input(spark, table, options, plan.input_group_cols, plan.langpair_col,
                                  rows, scan, read, position)
    accumulators = (rows_done, references_tokenized)
    if where_scored(options, plan, rows, scored.scan) != DRIVER:
        measurement = _measured_apart(spark, scored, options, plan, rows, accumulators,
                                      references_tokenized)
        if measurement.rejected and options.on_invalid == "fail":
            raise InvalidRowsError(_failure_message(measurement))
        return measurement
    if scored.scan is not None:
        partials = scored.scan.partial_sums(spark, plan, *accumulators)
    else:
        frame = _with_segment_hash(scored, plan)
        partials = partial_sums_frame(frame, plan, *accumulators).toArrow()
    stats = statistics_table(partials, plan, options.resampling.label)
    stats, warnings = _with_coverage(stats, scored, plan)
    measurement = Measurement(plan, scored, stats, _rejected(partials, plan),
                              _segment_stats(partials, plan) if plan.per_segment else None,
                              warnings, references_tokenized)
    if measurement.rejected and options.on_invalid == "fail":
        raise InvalidRowsError(_failure_message(measurement))
    return measurement


def where_scored(options: JobOptions, plan: PartitionPlan, rows: int, scan=None) -> str:
    """Where groups are scored: as asked, else (auto) on the driver for sacrebleu's replayed
    draws (every segment on the driver), for an incremental run (its statistics are added to the
    folder's there), for inputs too small to have many groups, and for
    inputs the Python workers read whose groups, estimated from a sample of them, fit the
    driver (`ArrowScan.estimated_groups`: that path starts no SQL engine, a few seconds a run);
    otherwise decided once the groups are counted (`_measured_apart`)."""
    if plan.per_segment or options.groups_scored_on == DRIVER or options.incremental:
        return DRIVER
    if options.groups_scored_on == EXECUTORS:
        return EXECUTORS
    if rows <= DRIVER_ROWS:
        return DRIVER
    if scan is not None:
        groups = scan.estimated_groups(plan.group_cols, plan.window)
        if groups * len(plan.measured) <= _rows_within(DRIVER_BYTES, plan):  # a row a metric
            return DRIVER
    return AUTO


def _measured_apart(spark, scored, options: JobOptions, plan: PartitionPlan, rows: int,
                    accumulators, references_tokenized) -> Measurement:
    """The statistics table left on the executors. Under auto, brought to the driver (and
    scored there, as for a small input) when it is small: the partial sums themselves when they
    are (the usual few groups of many rows: no step more than the driver path), else the
    statistics table when its rows fit in DRIVER_BYTES."""
    read = None if scored.scan is not None else scan_frame(scored, plan)
    partials = distributed.partials_frame(spark, scored.scan, read, plan, *accumulators).persist()
    held = partials.count()  # the scoring pass runs here
    auto = options.groups_scored_on == AUTO
    fits = _rows_within(DRIVER_BYTES, plan)  # statistics rows
    if auto and held <= fits:  # a group has a partial row at least
        table = merged_sums([partials.toArrow()], plan)
        partials.unpersist()
        return _measured_here(table, scored, options, plan, references_tokenized)
    # As many tasks as scored the rows: a task's groups are at most its rows.
    tasks = inputs.scoring_tasks(rows, runtime.parallelism(spark))
    stats = distributed.stats_frame(partials, plan, options.resampling.label, tasks).persist()
    groups = stats.count()
    rejected = distributed.rejected_counts(partials, plan)
    partials.unpersist()
    if auto and groups <= fits:
        table, warnings = _with_coverage(stats.toArrow(), scored, plan)
        stats.unpersist()
        return Measurement(plan, scored, table, rejected, None, warnings, references_tokenized)
    warnings = []
    if scored.reference_keys is not None:
        filled, warnings = distributed.with_coverage(stats, scored.reference_keys, plan.group_cols,
                                                     scored.segment_key)
        filled.persist().count()  # held in its place: the one frame the run lets go at its end
        stats.unpersist()
        stats = filled
    return Measurement(plan, scored, None, rejected, None, warnings, references_tokenized,
                       stats_frame=stats, tasks=tasks)


def _rows_within(budget: int, plan: PartitionPlan) -> int:
    """Statistics rows that fit in `budget` bytes of the driver: a row's values, and its
    replicate and trial sums (B x its statistics each)."""
    samples = (plan.replicates + plan.trials) * len(plan.declared)
    return budget // (ROW_BYTES + 8 * samples)


def _measured_here(partials: pa.Table, scored, options: JobOptions, plan: PartitionPlan,
                   references_tokenized) -> Measurement:
    """The measurement of partial sums brought to the driver, as the driver path makes it."""
    stats = statistics_table(partials, plan, options.resampling.label)
    stats, warnings = _with_coverage(stats, scored, plan)
    return Measurement(plan, scored, stats, _rejected(partials, plan), None, warnings,
                       references_tokenized)


def _rejected(partials: pa.Table, plan: PartitionPlan) -> Counter:
    """The rows rejected, by reason: each metric's rows count them, those of the first are the
    input's."""
    rejected = Counter()
    first = pc.equal(partials[METRIC], plan.measured[0].name)
    rows = partials.filter(pc.and_(partials[REASON].is_valid(), first))
    for row in rows.select([REASON, N_SEGMENTS]).to_pylist():
        rejected[row[REASON]] += row[N_SEGMENTS]
    return rejected


def _with_segment_hash(scored: inputs.ScoringInput, plan: PartitionPlan) -> DataFrame:
    """The hash a segment's weights come from: of its key, the same for every system that
    translated it (so tests are paired); of its references when segments have no key."""
    if not plan.segment_hash_col:
        return scored.frame
    key = scored.segment_key or (inputs.REFERENCES,)
    return scored.frame.withColumn(plan.segment_hash_col, F.xxhash64(*columns(key)))


def _segment_stats(partials: pa.Table, plan: PartitionPlan) -> pa.Table:
    """Every scored segment's statistics with its rank in segment-key order (sacrebleu)."""
    scored = partials.filter(pc.is_null(partials[REASON]))
    order = pc.sort_indices(scored, [(c, "ascending") for c in plan.per_segment])
    rank = np.empty(len(order), np.int64)
    rank[order.to_numpy()] = np.arange(len(order))
    kept = [*plan.group_cols, TOKENIZE, METRIC, *plan.stat_columns]
    return scored.select(kept).append_column(scoring.SEGMENT_ORDER, pa.array(rank))


def _failure_message(measurement: Measurement) -> str:
    plan = measurement.plan
    shown = list(dict.fromkeys([*plan.input_group_cols, *measurement.input.segment_key]))
    frame = measurement.rejected_frame(whole=False)
    # Text columns come back as bytes, decoded here: a value that is not UTF-8 cannot be
    # taken as a string through Spark Connect's Arrow results.
    text = {f.name for f in frame.schema.fields if isinstance(f.dataType, T.StringType)}
    frame = frame.select([column(c).cast("binary").alias(c) if c in text else column(c)
                          for c in [*shown, REASON]])
    examples = [{c: v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else v
                 for c, v in r.asDict().items()} for r in frame.limit(EXAMPLES_SHOWN).collect()]
    cases = [", ".join(f"{c}={r[c]!r}" for c in shown) + f": {r[REASON]}" for r in examples]
    rejected = measurement.rejected
    hints = "".join(f"; {HINTS[reason]}" for reason in sorted(rejected) if reason in HINTS)
    return (rejection_summary(rejected) + "; e.g. " + "; ".join(cases) + hints
            + "; use --on-invalid quarantine to score the rest and write these to DIR/rejected/")


def _with_coverage(stats: pa.Table, scored: inputs.ScoringInput,
                   plan: PartitionPlan) -> Tuple[pa.Table, List[str]]:
    """Segments in each group's reference set, when segments have keys (the reference
    segments that agree with the group on the group columns that are part of the key): the
    statistics with `n_reference_segments` filled, and a warning per group short of it."""
    if scored.reference_keys is None:
        return stats, []
    shared = [c for c in plan.group_cols if c in scored.segment_key]
    counts = {tuple(r[c] for c in shared): r["count"]
              for r in scored.reference_keys.groupBy(*columns(shared)).count().collect()}
    rows = stats.select([*plan.group_cols, "n_segments"]).to_pylist()
    expected = [counts.get(tuple(r[c] for c in shared)) for r in rows]
    index = stats.schema.get_field_index("n_reference_segments")
    stats = stats.set_column(index, "n_reference_segments", pa.array(expected, pa.int64()))
    warnings = []
    for row, n in zip(rows, expected):
        if n and row["n_segments"] < n:
            group = ", ".join(f"{c}={shown(row[c])}" for c in plan.group_cols)
            warnings.append(f"{group}: {row['n_segments']} of {n} segments scored "
                            f"(coverage {100 * row['n_segments'] / n:.1f}%)")
    return stats, list(dict.fromkeys(warnings))  # a group's metrics cover the same segments
