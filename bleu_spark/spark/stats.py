"""The Arrow partition function: per-segment statistics, summed per group within a partition.

It receives Arrow batches of (group columns, candidate, references) and yields one row per
(group, tokenizer, metric, reason) with summed statistics: a few rows per partition, whatever
its size. Each batch is read once and every metric of the plan computes its statistics from it
(`bleu_spark.metrics`: each metric's columns, null in the rows of the others). Rejected rows are
counted here too (in each metric's rows), so one pass over the input does all accounting.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, Iterator, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql import types as T

from .. import metrics, statstable
from ..metrics import combine
from ..languages import TextSettings
from ..resampling import ar_swaps, poisson_weights, replicate_sums
from ..segments import SegmentsPlan, SegmentsWriter, rows_table
from ..rows import present_references, rejection_reasons
from ..tokenizers import LineTokenizer, build_tokenizer
from ..time_windows import WINDOW_START, WINDOW_TYPE, TimeWindow
from .reduce import spark_fields

TOKENIZE = "tokenize"
METRIC = "metric"
REASON = "reason"
N_SEGMENTS = "n_segments"
MIN_REFS = "min_refs"
MAX_REFS = "max_refs"
FINGERPRINT = "segment_fingerprint"
REPLICATE_SUMS, TRIAL_SUMS = statstable.SAMPLES  # B x width sums per row, null when not kept


@dataclass(frozen=True)
class PartitionPlan:
    text: TextSettings             # how rows are tokenized
    group_cols: Tuple[str, ...]
    candidate_col: str
    references_col: str            # array<string>, already normalized by the reader
    langpair_col: Optional[str]    # read only for automatic tokenizer choice
    # The grouping sets scored from the statistics (by the driver; the tasks use `group_cols`).
    sets: Tuple[Tuple[str, ...], ...] = ()
    reason_col: Optional[str] = None  # reasons found across rows (joins, duplicates), or null
    # Resampling: the segment hash column, and how many hashed replicate / trial sums to keep.
    segment_hash_col: Optional[str] = None
    replicates: int = 0
    trials: int = 0
    seed: int = 0
    # sacrebleu's own resampling needs every segment's statistics: rows kept per segment key.
    per_segment: Tuple[str, ...] = ()
    # The metrics measured, with their options; () for the default ones.
    metrics: Tuple[metrics.Metric, ...] = ()
    # Every scored segment written by its task (`--segments`), or None.
    segments: Optional[SegmentsPlan] = None
    # Time windows (`--time-col`, `--window`): `window_start`, a group column, is derived from
    # the time column in each batch the partition function gets, never read from the input.
    window: Optional[TimeWindow] = None
    # Every measured metric's statistic columns, each once, in registry order: set when the plan
    # is made (on the driver), so the tasks reduce them as declared without the registry.
    declared: Tuple[metrics.StatColumn, ...] = field(init=False, default=())

    def __post_init__(self):
        own = {c.name: c for m in self.measured for c in m.columns()}
        object.__setattr__(self, "declared", tuple(own[n] for n in metrics.stat_order(list(own))))
        if self.replicates or self.trials:
            for metric in self.measured:
                combine.check_resampled(metric.columns(), metric.name)

    @property
    def measured(self) -> Tuple[metrics.Metric, ...]:
        return self.metrics or metrics.configured(metrics.DEFAULT, {}, None)

    @property
    def stat_columns(self) -> list:
        return [c.name for c in self.declared]

    @property
    def read_columns(self) -> Tuple[str, ...]:
        """The columns the partition function reads, in the order it gets them."""
        kept = (*self.segments.key_cols, *(c for _, c in self.segments.carried)) if self.segments else ()
        return tuple(dict.fromkeys([*self.input_group_cols, *self.per_segment, *kept, self.candidate_col,
                                    self.references_col, *(c for m in self.measured for c in m.reads),
                                    *([self.langpair_col] if self.langpair_col else []),
                                    *([self.segment_hash_col] if self.segment_hash_col else []),
                                    self.reason_col]))

    @property
    def input_group_cols(self) -> Tuple[str, ...]:
        """The group columns as the input holds them: a window's start is its time column."""
        if not self.window:
            return self.group_cols
        return tuple(dict.fromkeys(self.window.column if c == WINDOW_START else c
                                   for c in self.group_cols))

    def with_window(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The batch as the partition function measures it: with its window starts, if any."""
        return self.window.added(batch) if self.window else batch

    @property
    def needs_references(self) -> bool:
        """Whether a measured metric reads the references (not when only segment scores and
        checks are measured: the input need not have any)."""
        return any(m.needs_references for m in self.measured)

    @property
    def keys(self) -> Tuple[str, ...]:
        return (*self.group_cols, *self.per_segment, TOKENIZE, METRIC, REASON)

    def tokenizer_for(self, langpair: Optional[str]) -> str:
        return self.text.tokenizer_for(langpair)


def output_schema(plan: PartitionPlan, input_schema: T.StructType) -> T.StructType:
    window = {WINDOW_START: T.StructField(WINDOW_START, T.TimestampType())} if plan.window else {}
    fields = [window.get(c) or input_schema[c] for c in (*plan.group_cols, *plan.per_segment)]
    fields += [T.StructField(TOKENIZE, T.StringType()), T.StructField(METRIC, T.StringType()),
               T.StructField(REASON, T.StringType()),
               T.StructField(N_SEGMENTS, T.LongType()), T.StructField(MIN_REFS, T.IntegerType()),
               T.StructField(MAX_REFS, T.IntegerType()), T.StructField(FINGERPRINT, T.LongType())]
    fields += spark_fields(plan.declared)
    fields += [T.StructField(name, T.ArrayType(T.LongType())) for name in statstable.SAMPLES]
    return T.StructType(fields)


def partial_columns(plan: PartitionPlan) -> list:
    """The partition function's columns, in `output_schema`'s order (Spark takes them by position)."""
    return [*plan.keys, N_SEGMENTS, MIN_REFS, MAX_REFS, FINGERPRINT,
            *plan.stat_columns, *statstable.SAMPLES]


def _local_model(path: Optional[str]) -> Optional[str]:
    """The SentencePiece model on this executor: the path itself, or the copy Spark shipped."""
    if not path or os.path.isfile(path):
        return path
    from .runtime import worker_file

    return worker_file(path)


def _reasons(batch: pa.RecordBatch, plan: PartitionPlan) -> pa.Array:
    """Why each row cannot be scored, or null: across rows (the reason column), the text and
    references, and the columns a metric reads (a null segment score). A row is scored by every
    measured metric or by none, so a run's metrics cover the same segments."""
    found = batch.column(plan.reason_col) if plan.reason_col else None
    reasons = rejection_reasons(batch.column(plan.candidate_col),
                                batch.column(plan.references_col), found, plan.needs_references)
    for metric in plan.measured:
        own = metric.rejections({c: batch.column(c) for c in metric.reads})
        if own is not None:
            reasons = pc.coalesce(reasons, own)
    if plan.window:  # a row of no window is in no group
        reasons = pc.coalesce(reasons, plan.window.rejections(batch.column(plan.window.column)))
    return reasons


def _tokenizer_names(batch: pa.RecordBatch, plan: PartitionPlan) -> pa.Array:
    """The tokenizer of each row: one per distinct language pair of the batch."""
    if not plan.langpair_col:
        return pa.array([plan.tokenizer_for(None)] * batch.num_rows, pa.string())
    langpairs = batch.column(plan.langpair_col).dictionary_encode(null_encoding="encode")
    names = pa.array([plan.tokenizer_for(lp) for lp in langpairs.dictionary.to_pylist()], pa.string())
    return names.take(langpairs.indices)


def merged_sums(tables, plan: PartitionPlan) -> pa.Table:
    """Partial sums of several partitions as one table of the same columns: rows of equal keys
    added up (`statstable.add_up`: counts, statistics and replicate sums summed, the least and
    most references kept)."""
    table = pa.concat_tables(tables)
    return statstable.add_up(table, plan.keys, plan.declared).select(table.column_names)


class _PartitionSums:
    """Partial sums of one partition: batches in, one small table out."""

    MERGE_EVERY = 64  # batches: keeps what is held bounded by the number of groups

    def __init__(self, plan: PartitionPlan):
        self.plan = plan
        self.keys = plan.keys
        self.tokenizers: Dict[str, LineTokenizer] = {}
        self.references_tokenized = 0
        self.pending = []
        self.samples = _SampleSums(plan) if plan.replicates or plan.trials else None
        self.segments = _Segments(plan) if plan.segments else None

    def tokenizer(self, name: str) -> LineTokenizer:
        if name not in self.tokenizers:
            text = self.plan.text
            self.tokenizers[name] = LineTokenizer(name, text.lowercase, _local_model(text.spm_model))
        return self.tokenizers[name]

    def add(self, batch: pa.RecordBatch) -> None:
        plan = self.plan
        reasons, names = _reasons(batch, plan), _tokenizer_names(batch, plan)
        scored = pc.is_null(reasons)
        scored_rows = np.flatnonzero(scored.to_numpy(zero_copy_only=False))
        n_refs = _reference_counts(batch.column(plan.references_col), scored_rows)
        groups = [batch.column(c) for c in (*plan.group_cols, *plan.per_segment)]
        counts = [pa.array(np.ones(batch.num_rows, np.int64)), pa.array(n_refs), pa.array(n_refs),
                  self._fingerprints(batch)]
        tables = []
        for metric in plan.measured:
            stats = self._statistics(metric, batch, scored, scored_rows, names)
            tokenize = names if metric.uses_tokenizer else pa.nulls(batch.num_rows, pa.string())
            if self.samples:
                self.samples.add(batch, scored, tokenize, stats, metric.name)
            if self.segments:
                self.segments.add(batch, scored_rows, metric, stats, tokenize, n_refs)
            label = pa.repeat(pa.scalar(metric.name, pa.string()), batch.num_rows)
            columns = [*groups, tokenize, label, reasons, *counts]
            columns += combine.arrow_columns(plan.declared, dict(zip(metric.names, stats.T)),
                                             batch.num_rows)
            tables.append(pa.table(columns, names=[*self.keys, N_SEGMENTS, MIN_REFS, MAX_REFS,
                                                   FINGERPRINT, *plan.stat_columns]))
        self.pending.append(statstable.add_up(pa.concat_tables(tables), self.keys, plan.declared))
        if self.segments:
            self.segments.flush()
        if len(self.pending) >= self.MERGE_EVERY:
            self.pending = [self._merged()]

    def _statistics(self, metric, batch, scored, scored_rows, names) -> np.ndarray:
        """One metric's statistics of the batch's scored rows (zeros in the others): by
        tokenizer for a metric that follows it, else all at once."""
        plan = self.plan
        stats = np.zeros((batch.num_rows, metric.width), combine.matrix_type(metric.columns()))
        candidates, references = batch.column(plan.candidate_col), batch.column(plan.references_col)
        if metric.reads:
            if len(scored_rows):
                take = pa.array(scored_rows)
                stats[scored_rows] = metric.row_statistics({c: batch.column(c).take(take)
                                                            for c in metric.reads})
            return stats
        if not metric.uses_tokenizer:
            if len(scored_rows):
                stats[scored_rows] = metric.segment_statistics(candidates.take(scored_rows),
                                                               references.take(scored_rows))
            return stats
        for name in pc.unique(names.filter(scored)).to_pylist():
            rows = np.flatnonzero(pc.and_(scored, pc.equal(names, name)).to_numpy(zero_copy_only=False))
            stats[rows], tokenized = metric.measure(candidates.take(rows), references.take(rows),
                                                    self.tokenizer(name))
            self.references_tokenized += tokenized
        return stats

    def _fingerprints(self, batch: pa.RecordBatch) -> pa.Array:
        """Each row's segment hash, low 32 bits (summed: the fingerprint of a group's segment
        set); null without segment hashes."""
        if not self.plan.segment_hash_col:
            return pa.nulls(batch.num_rows, pa.int64())
        hashes = batch.column(self.plan.segment_hash_col).to_numpy(zero_copy_only=False)
        return pa.array(hashes.astype(np.int64) & statstable.FINGERPRINT_MASK)

    def _merged(self) -> pa.Table:
        return merged_sums(self.pending, self.plan)

    def result(self) -> pa.Table:
        plain = self._merged()
        for name in statstable.SAMPLES:
            sums = self.samples.sums[name] if self.samples else {}
            plain = plain.append_column(name, _sample_lists(plain, self.plan, sums))
        return plain.select(partial_columns(self.plan))


class _Segments:
    """The scored segments of a partition, written as they are measured (`--segments`)."""

    def __init__(self, plan: PartitionPlan):
        task = TaskContext.get()
        self.plan = plan
        self.writer = SegmentsWriter(plan.segments, task.partitionId() if task else 0,
                                     task.attemptNumber() if task else 0)
        self.signatures: Dict[str, str] = {}
        self.pending = []

    def add(self, batch: pa.RecordBatch, rows: np.ndarray, metric, stats: np.ndarray,
            tokenize: pa.Array, n_refs: np.ndarray) -> None:
        if not len(rows):
            return
        plan, segments = self.plan, self.plan.segments
        take = pa.array(rows)
        columns = {c: batch.column(c).take(take) for c in (*plan.group_cols, *segments.key_cols)}
        columns.update({name: batch.column(source).take(take) for name, source in segments.carried})
        names = tokenize.take(take)
        settings = metric.measurement()
        distinct = pc.unique(names)
        signatures = pa.array([self._signature(t) for t in distinct.to_pylist()], pa.string())
        measurement = statstable.measurement_columns(
            len(rows), names, signatures.take(pc.index_in(names, distinct)),
            settings[statstable.METRIC_OPTIONS], segments.resampling, metric.name)
        own = stats[rows]
        arrays = combine.arrow_columns(plan.declared, dict(zip(metric.names, own.T)), len(rows))
        statistics = dict(zip(plan.stat_columns, arrays))
        hashes = batch.column(plan.segment_hash_col).to_numpy(zero_copy_only=False)[rows]
        self.pending.append(rows_table(columns, measurement, n_refs[rows], hashes, statistics,
                                       metric.sentence_scores(own)))

    def _signature(self, name: Optional[str]) -> Optional[str]:
        if name is None:
            return None
        if name not in self.signatures:
            self.signatures[name] = build_tokenizer(name, _local_model(self.plan.text.spm_model)).signature()
        return self.signatures[name]

    def flush(self) -> None:
        """A batch's segments of every metric, as one row group."""
        if self.pending:
            self.writer.write(pa.concat_tables(self.pending))
            self.pending = []

    def close(self) -> None:
        self.writer.close()


class _SampleSums:
    """Per group of a partition, the replicate sums (statistics weighted by each segment's
    hashed Poisson(1) weights) and the trial sums (statistics of the segments each trial swaps).
    Both are linear, so partitions, days and slices add up like the plain sums."""

    def __init__(self, plan: PartitionPlan):
        self.plan = plan
        self.sums: Dict[str, Dict[tuple, np.ndarray]] = {REPLICATE_SUMS: {}, TRIAL_SUMS: {}}

    def add(self, batch: pa.RecordBatch, scored: pa.Array, names: pa.Array, stats: np.ndarray,
            metric: str) -> None:
        plan = self.plan
        rows = np.flatnonzero(scored.to_numpy(zero_copy_only=False))
        if not len(rows):
            return
        hashes = batch.column(plan.segment_hash_col).to_numpy(zero_copy_only=False)[rows]
        keys = pa.table({**{c: batch.column(c).take(rows) for c in plan.group_cols},
                         TOKENIZE: names.take(rows), "_row": np.arange(len(rows))})
        groups = keys.group_by([*plan.group_cols, TOKENIZE], use_threads=False).aggregate([("_row", "list")])
        groups = groups.append_column(METRIC, pa.repeat(pa.scalar(metric, pa.string()), groups.num_rows))
        scored_stats = stats[rows]
        for group in groups.to_pylist():
            index = np.asarray(group.pop("_row_list"))
            key = tuple(group[c] for c in (*plan.group_cols, TOKENIZE, METRIC))
            if plan.replicates:
                weights = poisson_weights(hashes[index], plan.seed, plan.replicates)
                _add_into(self.sums[REPLICATE_SUMS], key, replicate_sums(scored_stats[index], weights))
            if plan.trials:
                swaps = ar_swaps(hashes[index], plan.seed, plan.trials).view(np.uint8)
                _add_into(self.sums[TRIAL_SUMS], key, replicate_sums(scored_stats[index], swaps))


def _add_into(sums: Dict[tuple, np.ndarray], key: tuple, values: np.ndarray) -> None:
    if key in sums:
        sums[key] += values
    else:
        sums[key] = values.astype(np.int64)


def _sample_lists(plain: pa.Table, plan: PartitionPlan, sums: Dict[tuple, np.ndarray]) -> pa.ChunkedArray:
    """The sums of each plain row's group as one packed list (replicate-major), null for rows
    of rejected rows or when none are kept."""
    if not sums:  # none kept: no row's key looked up (a Python tuple a row, for many groups)
        return pa.chunked_array([pa.nulls(plain.num_rows, pa.list_(pa.int64()))])
    keys = zip(*(plain[c].to_pylist() for c in (*plan.group_cols, TOKENIZE, METRIC)))
    reasons = plain[REASON].is_null().to_numpy(zero_copy_only=False)
    found = [sums.get(key) if scored else None for key, scored in zip(keys, reasons)]
    return statstable.ragged_list_column([None if f is None else f.reshape(-1) for f in found])


def _reference_counts(references: pa.Array, rows: np.ndarray) -> np.ndarray:
    """The non-null references of each row (0 for rows not scored)."""
    n_refs = np.zeros(len(references), np.int32)
    if len(rows):
        _, row = present_references(references.take(rows))
        n_refs[rows] = np.bincount(row, minlength=len(rows))
    return n_refs


def partial_sums(plan: PartitionPlan, rows_done=None, references_tokenized=None):
    """The function given to `DataFrame.mapInArrow`. The optional accumulators count rows done
    (for progress) and distinct references tokenized (rows sharing references share the work)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        sums = _PartitionSums(plan)
        for batch in batches:
            if batch.num_rows:
                sums.add(plan.with_window(batch))
            if rows_done is not None:
                rows_done.add(batch.num_rows)
        if sums.segments:
            sums.segments.close()
        if references_tokenized is not None:
            references_tokenized.add(sums.references_tokenized)
        if sums.pending:
            yield from sums.result().to_batches()  # Arrow's sum, min, max keep the types

    return run


def merging(plan: PartitionPlan):
    """A `mapInArrow` function adding up the partial sums it gets, rows of equal keys as one."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if tables:
            yield from merged_sums(tables, plan).to_batches()

    return run


def rejected_rows(plan: PartitionPlan):
    """A `mapInArrow` function keeping only the rows that cannot be scored, with their reason."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            reasons = _reasons(batch, plan)
            rejected = pc.is_valid(reasons)
            kept = batch.filter(rejected).drop_columns(_internal(plan))
            yield kept.append_column(REASON, reasons.filter(rejected))

    return run


def _internal(plan: PartitionPlan) -> list:
    """The columns the reader adds for scoring, never written with rejected rows."""
    return [plan.references_col, *([plan.reason_col] if plan.reason_col else [])]


def rejected_schema(plan: PartitionPlan, input_schema: T.StructType) -> T.StructType:
    fields = [f for f in input_schema.fields if f.name not in _internal(plan)]
    return T.StructType(fields + [T.StructField(REASON, T.StringType())])


def statistics_table(partials: pa.Table, plan: PartitionPlan, resampling: str = "") -> pa.Table:
    """The reduced partial sums (one row per group, tokenizer and reason) as a statistics table:
    one row per group, scored and rejected rows counted apart."""
    text = plan.text
    rejected = pc.is_valid(partials[REASON])
    n = partials[N_SEGMENTS]
    zero, none = pa.scalar(0, pa.int64()), pa.scalar(None, pa.int32())
    counts = {"n_segments": pc.if_else(rejected, zero, n), "n_rejected": pc.if_else(rejected, n, zero),
              "n_reference_segments": pa.nulls(len(partials), pa.int64()),
              # rejected rows have no references to count: null keeps them out of min and max
              MIN_REFS: pc.if_else(rejected, none, partials[MIN_REFS]),
              MAX_REFS: pc.if_else(rejected, none, partials[MAX_REFS]),
              FINGERPRINT: pc.if_else(rejected, pa.scalar(None, pa.int64()), partials[FINGERPRINT])}
    # Per row from the few distinct values (a Python list a row would cost a group a row dearly).
    names = partials[TOKENIZE]
    distinct = pc.unique(names)
    signatures = pa.array([build_tokenizer(name, text.spm_model).signature() if name is not None
                           else None for name in distinct.to_pylist()], pa.string())
    metric_names = pa.array([m.name for m in plan.measured], pa.string())
    options = pa.array([m.measurement()[statstable.METRIC_OPTIONS] for m in plan.measured], pa.string())
    labels = partials[METRIC]
    measurement = statstable.measurement_columns(
        len(partials), names, signatures.take(pc.index_in(names, value_set=distinct)),
        options.take(pc.index_in(labels, value_set=metric_names)), resampling, labels)
    stats = {name: partials[name] for name in plan.stat_columns}
    samples = {c: partials[c] for c in statstable.SAMPLES}
    groups = {c: partials[c] for c in plan.group_cols}
    if plan.window:  # Spark hands timestamps over in its session's zone: the instant, named UTC
        groups[WINDOW_START] = partials[WINDOW_START].cast(WINDOW_TYPE)
    table = statstable.build(groups, measurement, counts, stats, samples)
    if not pc.any(rejected).as_py():  # a row a key already: adding up would change nothing
        return table
    return statstable.summed(table, [*plan.group_cols, *statstable.MEASUREMENT])
