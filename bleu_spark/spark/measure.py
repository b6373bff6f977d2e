"""One pass of Spark over the candidates (`Measurement`): their statistics table, the rows
rejected and why, the segments' statistics and the coverage of each group's references."""
from __future__ import annotations

from collections import Counter
from typing import List, Optional

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
from . import inputs, io, reduce, runtime
from .names import column, columns, map_in_arrow
from .options import JobOptions
from .scan import ArrowScan
from .stats import (FINGERPRINT, MAX_REFS, MIN_REFS, METRIC, N_SEGMENTS, REASON, TOKENIZE, PartitionPlan,
                    merging, output_schema, partial_sums, rejected_rows, rejected_schema,
                    statistics_table)

EXAMPLES_SHOWN = 5


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
        return (rejection_summary(self.rejected) + "; e.g. " + "; ".join(cases) + hints
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
