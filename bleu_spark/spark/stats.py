"""The Arrow partition function: per-segment statistics, summed per group within a partition.

It receives Arrow batches of (group columns, candidate, references) and yields one row per
(group, tokenizer, reason) with summed integer statistics: a few rows per partition, whatever
its size. Rejected rows are counted here too, so one pass over the input does all accounting.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Dict, Iterator, Optional, Tuple

import pyarrow as pa
from pyspark.sql import types as T

from ..accumulate import GroupTotals
from ..config import BleuConfig
from ..rows import present_references, rejection_reason
from ..stats import SegmentScorer, stats_names

TOKENIZE = "tokenize"
REASON = "reason"
N_SEGMENTS = "n_segments"
MIN_REFS = "min_refs"
MAX_REFS = "max_refs"


@dataclass(frozen=True)
class PartitionPlan:
    config: BleuConfig
    group_cols: Tuple[str, ...]
    candidate_col: str
    references_col: str            # array<string>, already normalized by the reader
    langpair_col: Optional[str]    # read only for automatic tokenizer choice
    reason_col: Optional[str] = None  # reasons found across rows (joins, duplicates), or null

    def tokenizer_for(self, langpair: Optional[str]) -> str:
        return self.config.tokenizer_for(langpair)


def output_schema(plan: PartitionPlan, input_schema: T.StructType) -> T.StructType:
    fields = [input_schema[c] for c in plan.group_cols]
    fields += [T.StructField(TOKENIZE, T.StringType()), T.StructField(REASON, T.StringType()),
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


def _rows(batch: pa.RecordBatch, plan: PartitionPlan):
    """(group key, tokenizer, candidate, present references, reason or None) per row."""
    n = batch.num_rows

    def column(name):
        return batch.column(name).to_pylist() if name else [None] * n

    keys = (list(zip(*(batch.column(c).to_pylist() for c in plan.group_cols)))
            if plan.group_cols else [()] * n)
    for key, candidate, refs, langpair, found in zip(
            keys, column(plan.candidate_col), column(plan.references_col),
            column(plan.langpair_col), column(plan.reason_col)):
        refs = present_references(refs)
        yield key, plan.tokenizer_for(langpair), candidate, refs, rejection_reason(candidate, refs, found)


def partial_sums(plan: PartitionPlan, rows_done=None, references_tokenized=None):
    """The function given to `DataFrame.mapInArrow`. The optional accumulators count rows done
    (for progress) and reference sets tokenized (rows sharing references share the work)."""
    order = plan.config.max_ngram_order

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        scorers: Dict[str, SegmentScorer] = {}
        scored: Dict[tuple, GroupTotals] = {}
        rejected: Counter = Counter()
        group_types = None

        def scorer(name: str) -> SegmentScorer:
            if name not in scorers:
                scorers[name] = SegmentScorer(plan.config, name, _local_model(plan.config.spm_model))
            return scorers[name]

        for batch in batches:
            if group_types is None:
                group_types = [batch.schema.field(c).type for c in plan.group_cols]
            for key, tokenize, candidate, refs, reason in _rows(batch, plan):
                if reason:
                    rejected[key, tokenize, reason] += 1
                    continue
                totals = scored.get((key, tokenize))
                if totals is None:
                    totals = scored[key, tokenize] = GroupTotals(order)
                totals.add(scorer(tokenize).statistics(candidate, refs), len(refs))
            if rows_done is not None:
                rows_done.add(batch.num_rows)

        if references_tokenized is not None:
            references_tokenized.add(sum(s.references_tokenized for s in scorers.values()))
        if group_types is not None:
            yield _to_batch(plan, group_types, scored, rejected)

    return run


def rejected_rows(plan: PartitionPlan):
    """A `mapInArrow` function keeping only the rows that cannot be scored, with their reason."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            reasons = [row[4] for row in _rows(batch, plan)]
            kept = batch.filter(pa.array([r is not None for r in reasons]))
            if plan.reason_col:
                kept = kept.drop_columns([plan.reason_col])
            yield kept.append_column(REASON, pa.array([r for r in reasons if r], pa.string()))

    return run


def rejected_schema(plan: PartitionPlan, input_schema: T.StructType) -> T.StructType:
    fields = [f for f in input_schema.fields if f.name != plan.reason_col]
    return T.StructType(fields + [T.StructField(REASON, T.StringType())])


def _to_batch(plan: PartitionPlan, group_types, scored, rejected) -> pa.RecordBatch:
    rows = [(key, tokenize, None, t.n_segments, t.min_refs, t.max_refs, t.stats)
            for (key, tokenize), t in scored.items()]
    zeros = [0] * (2 + 2 * plan.config.max_ngram_order)
    rows += [(key, tokenize, reason, count, 0, 0, zeros)
             for (key, tokenize, reason), count in rejected.items()]
    columns = [pa.array([r[0][i] for r in rows], type=t) for i, t in enumerate(group_types)]
    columns += [pa.array([r[1] for r in rows], pa.string()), pa.array([r[2] for r in rows], pa.string()),
                pa.array([r[3] for r in rows], pa.int64()), pa.array([r[4] for r in rows], pa.int32()),
                pa.array([r[5] for r in rows], pa.int32())]
    columns += [pa.array([r[6][i] for r in rows], pa.int64()) for i in range(len(zeros))]
    names = list(plan.group_cols) + [TOKENIZE, REASON, N_SEGMENTS, MIN_REFS, MAX_REFS]
    names += stats_names(plan.config.max_ngram_order)
    return pa.RecordBatch.from_arrays(columns, names=names)
