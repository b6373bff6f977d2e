"""The Arrow partition function: per-segment statistics, summed per group within a partition.

It receives Arrow batches of (group columns, candidate, references) and yields one row per
(group, tokenizer, reason) with summed integer statistics: a few rows per partition, whatever
its size. Rejected rows are counted here too, so one pass over the input does all accounting.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Iterator, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from .. import bootstrap, statstable
from ..config import BleuConfig
from ..rows import rejection_reasons
from ..stats import segment_statistics, stats_names, stats_width
from ..tokenizers import LineTokenizer, build_tokenizer

TOKENIZE = "tokenize"
REASON = "reason"
N_SEGMENTS = "n_segments"
MIN_REFS = "min_refs"
MAX_REFS = "max_refs"
REPLICATE, TRIAL = statstable.SAMPLES  # which replicate or trial sum a row is; null: plain sums


@dataclass(frozen=True)
class PartitionPlan:
    config: BleuConfig
    group_cols: Tuple[str, ...]
    candidate_col: str
    references_col: str            # array<string>, already normalized by the reader
    langpair_col: Optional[str]    # read only for automatic tokenizer choice
    reason_col: Optional[str] = None  # reasons found across rows (joins, duplicates), or null
    # Resampling: the segment hash column, and how many hashed replicate / trial sums to keep.
    segment_hash_col: Optional[str] = None
    replicates: int = 0
    trials: int = 0
    seed: int = 0
    # sacrebleu's own resampling needs every segment's statistics: rows kept per segment key.
    per_segment: Tuple[str, ...] = ()

    @property
    def read_columns(self) -> Tuple[str, ...]:
        """The columns the partition function reads, in the order it gets them."""
        return tuple(dict.fromkeys([*self.group_cols, *self.per_segment, self.candidate_col,
                                    self.references_col,
                                    *([self.langpair_col] if self.langpair_col else []),
                                    *([self.segment_hash_col] if self.segment_hash_col else []),
                                    self.reason_col]))

    @property
    def keys(self) -> Tuple[str, ...]:
        return (*self.group_cols, *self.per_segment, TOKENIZE, REASON)

    def tokenizer_for(self, langpair: Optional[str]) -> str:
        return self.config.tokenizer_for(langpair)


def output_schema(plan: PartitionPlan, input_schema: T.StructType) -> T.StructType:
    fields = [input_schema[c] for c in (*plan.group_cols, *plan.per_segment)]
    fields += [T.StructField(TOKENIZE, T.StringType()), T.StructField(REASON, T.StringType()),
               T.StructField(REPLICATE, T.IntegerType()), T.StructField(TRIAL, T.IntegerType()),
               T.StructField(N_SEGMENTS, T.LongType()), T.StructField(MIN_REFS, T.IntegerType()),
               T.StructField(MAX_REFS, T.IntegerType())]
    fields += [T.StructField(name, T.LongType()) for name in stats_names(plan.config.max_ngram_order)]
    return T.StructType(fields)


def _local_model(path: Optional[str]) -> Optional[str]:
    """The SentencePiece model on this executor: the path itself, or the copy Spark shipped."""
    if not path or os.path.isfile(path):
        return path
    from pyspark import SparkFiles

    return SparkFiles.get(os.path.basename(path))


def _reasons(batch: pa.RecordBatch, plan: PartitionPlan) -> pa.Array:
    found = batch.column(plan.reason_col) if plan.reason_col else None
    return rejection_reasons(batch.column(plan.candidate_col), batch.column(plan.references_col), found)


def _tokenizer_names(batch: pa.RecordBatch, plan: PartitionPlan) -> pa.Array:
    """The tokenizer of each row: one per distinct language pair of the batch."""
    if not plan.langpair_col:
        return pa.array([plan.tokenizer_for(None)] * batch.num_rows, pa.string())
    langpairs = batch.column(plan.langpair_col).dictionary_encode(null_encoding="encode")
    names = pa.array([plan.tokenizer_for(lp) for lp in langpairs.dictionary.to_pylist()], pa.string())
    return names.take(langpairs.indices)


def _sums_by_key(table: pa.Table, keys) -> pa.Table:
    """Rows of partial sums with equal keys merged into one (a few rows per batch)."""
    keys = [*keys, *(c for c in (REPLICATE, TRIAL) if c in table.column_names)]
    ops = {name: "sum" for name in table.column_names if name not in keys}
    ops.update({MIN_REFS: "min", MAX_REFS: "max"})
    merged = table.group_by(list(keys), use_threads=False).aggregate(list(ops.items()))
    return pa.table([merged[c] for c in keys] + [merged[f"{c}_{op}"] for c, op in ops.items()],
                    names=[*keys, *ops])


def merged_sums(tables, plan: PartitionPlan) -> pa.Table:
    """Partial sums of several partitions as one table of the same columns: rows of equal keys
    summed (their counts and statistics; the least and most references kept)."""
    table = pa.concat_tables(tables)
    return _sums_by_key(table, plan.keys).select(table.column_names)


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

    def tokenizer(self, name: str) -> LineTokenizer:
        if name not in self.tokenizers:
            config = self.plan.config
            self.tokenizers[name] = LineTokenizer(name, config.lowercase, _local_model(config.spm_model))
        return self.tokenizers[name]

    def add(self, batch: pa.RecordBatch) -> None:
        plan, order = self.plan, self.plan.config.max_ngram_order
        reasons, names = _reasons(batch, plan), _tokenizer_names(batch, plan)
        stats = np.zeros((batch.num_rows, stats_width(order)), np.int64)
        n_refs = np.zeros(batch.num_rows, np.int32)
        scored = pc.is_null(reasons)
        for name in pc.unique(names.filter(scored)).to_pylist():
            rows = np.flatnonzero(pc.and_(scored, pc.equal(names, name)).to_numpy(zero_copy_only=False))
            segments = segment_statistics(batch.column(plan.candidate_col).take(rows),
                                          batch.column(plan.references_col).take(rows),
                                          self.tokenizer(name), order)
            stats[rows], n_refs[rows] = segments.stats, segments.n_refs
            self.references_tokenized += segments.references_tokenized
        if self.samples:
            self.samples.add(batch, scored, names, stats)
        columns = [batch.column(c) for c in (*plan.group_cols, *plan.per_segment)] + [names, reasons]
        columns += [pa.array(np.ones(batch.num_rows, np.int64)), pa.array(n_refs), pa.array(n_refs)]
        columns += [pa.array(stats[:, i]) for i in range(stats.shape[1])]
        table = pa.table(columns, names=[*self.keys, N_SEGMENTS, MIN_REFS, MAX_REFS, *stats_names(order)])
        self.pending.append(_sums_by_key(table, self.keys))
        if len(self.pending) >= self.MERGE_EVERY:
            self.pending = [self._merged()]

    def _merged(self) -> pa.Table:
        return merged_sums(self.pending, self.plan)

    def result(self) -> pa.Table:
        plain = self._merged()
        plain = plain.append_column(REPLICATE, pa.nulls(len(plain), pa.int32())) \
                     .append_column(TRIAL, pa.nulls(len(plain), pa.int32()))
        # in output_schema's order: Spark takes the columns by position
        plain = plain.select([*self.keys, REPLICATE, TRIAL, N_SEGMENTS, MIN_REFS, MAX_REFS,
                              *stats_names(self.plan.config.max_ngram_order)])
        if not self.samples:
            return plain
        return pa.concat_tables([plain, self.samples.table(plain.schema)])


class _SampleSums:
    """Per group of a partition, the replicate sums (statistics weighted by each segment's
    hashed Poisson(1) weights) and the trial sums (statistics of the segments each trial swaps).
    Both are linear, so partitions, days and slices add up like the plain sums."""

    def __init__(self, plan: PartitionPlan):
        self.plan = plan
        self.replicates: Dict[tuple, np.ndarray] = {}
        self.trials: Dict[tuple, np.ndarray] = {}

    def add(self, batch: pa.RecordBatch, scored: pa.Array, names: pa.Array, stats: np.ndarray) -> None:
        plan = self.plan
        rows = np.flatnonzero(scored.to_numpy(zero_copy_only=False))
        if not len(rows):
            return
        hashes = batch.column(plan.segment_hash_col).to_numpy(zero_copy_only=False)[rows]
        keys = pa.table({**{c: batch.column(c).take(rows) for c in plan.group_cols},
                         TOKENIZE: names.take(rows), "_row": np.arange(len(rows))})
        groups = keys.group_by([*plan.group_cols, TOKENIZE], use_threads=False).aggregate([("_row", "list")])
        scored_stats = stats[rows]
        for group in groups.to_pylist():
            index = np.asarray(group.pop("_row_list"))
            key = tuple(group[c] for c in (*plan.group_cols, TOKENIZE))
            if plan.replicates:
                weights = bootstrap.poisson_weights(hashes[index], plan.seed, plan.replicates)
                _add_into(self.replicates, key, bootstrap.replicate_sums(scored_stats[index], weights))
            if plan.trials:
                swaps = bootstrap.ar_swaps(hashes[index], plan.seed, plan.trials).view(np.uint8)
                _add_into(self.trials, key, bootstrap.replicate_sums(scored_stats[index], swaps))

    def table(self, schema: pa.Schema) -> pa.Table:
        """One row per (group, replicate) and (group, trial), in the plain rows' schema."""
        parts = [self._rows(sums, schema, kind) for kind, sums in
                 ((REPLICATE, self.replicates), (TRIAL, self.trials)) if sums]
        return pa.concat_tables(parts) if parts else schema.empty_table()

    def _rows(self, sums: Dict[tuple, np.ndarray], schema: pa.Schema, kind: str) -> pa.Table:
        plan = self.plan
        keys = list(sums)
        count = len(next(iter(sums.values())))
        repeat = np.repeat(np.arange(len(keys)), count)
        matrix = np.concatenate([sums[k] for k in keys])
        columns = {}
        for i, name in enumerate((*plan.group_cols, TOKENIZE)):
            columns[name] = pa.array([k[i] for k in keys], schema.field(name).type).take(repeat)
        n = len(repeat)
        columns.update({c: pa.nulls(n, schema.field(c).type) for c in (*plan.per_segment, REASON)})
        columns.update({N_SEGMENTS: pa.array(np.zeros(n, np.int64)), MIN_REFS: pa.nulls(n, pa.int32()),
                        MAX_REFS: pa.nulls(n, pa.int32())})
        for i, name in enumerate(stats_names(plan.config.max_ngram_order)):
            columns[name] = pa.array(matrix[:, i])
        index = pa.array(np.tile(np.arange(count, dtype=np.int32), len(keys)))
        columns[REPLICATE] = index if kind == REPLICATE else pa.nulls(n, pa.int32())
        columns[TRIAL] = index if kind == TRIAL else pa.nulls(n, pa.int32())
        return pa.table({f.name: columns[f.name].cast(f.type) for f in schema})


def _add_into(sums: Dict[tuple, np.ndarray], key: tuple, values: np.ndarray) -> None:
    if key in sums:
        sums[key] += values
    else:
        sums[key] = values.astype(np.int64)


def partial_sums(plan: PartitionPlan, rows_done=None, references_tokenized=None):
    """The function given to `DataFrame.mapInArrow`. The optional accumulators count rows done
    (for progress) and distinct references tokenized (rows sharing references share the work)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        sums = _PartitionSums(plan)
        for batch in batches:
            if batch.num_rows:
                sums.add(batch)
            if rows_done is not None:
                rows_done.add(batch.num_rows)
        if references_tokenized is not None:
            references_tokenized.add(sums.references_tokenized)
        if sums.pending:
            yield from sums.result().to_batches()  # Arrow's sum, min, max keep the types

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
    config = plan.config
    rejected = pc.is_valid(partials[REASON])
    n = partials[N_SEGMENTS]
    zero, none = pa.scalar(0, pa.int64()), pa.scalar(None, pa.int32())
    counts = {"n_segments": pc.if_else(rejected, zero, n), "n_rejected": pc.if_else(rejected, n, zero),
              "n_reference_segments": pa.nulls(len(partials), pa.int64()),
              # rejected rows have no references to count: null keeps them out of min and max
              MIN_REFS: pc.if_else(rejected, none, partials[MIN_REFS]),
              MAX_REFS: pc.if_else(rejected, none, partials[MAX_REFS])}
    names = partials[TOKENIZE]
    signatures = {name: build_tokenizer(name, config.spm_model).signature()
                  for name in pc.unique(names).to_pylist()}
    measurement = statstable.measurement_columns(
        len(partials), names, pa.array([signatures[t] for t in names.to_pylist()], pa.string()),
        config.lowercase, config.max_ngram_order, resampling)
    stats = {name: partials[name] for name in stats_names(config.max_ngram_order)}
    samples = {c: partials[c] for c in statstable.SAMPLES}
    table = statstable.build({c: partials[c] for c in plan.group_cols}, measurement, counts, stats,
                             samples)
    return statstable.summed(table, [*plan.group_cols, *statstable.MEASUREMENT])
