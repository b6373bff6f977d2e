"""The segments table (`--segments`): the statistics table at the finest grain.

One row per scored input row and metric, written by the task that scored it (never through
the driver), in the statistics table's layout, so `aggregate` scores any slice of it:

    group columns | the segment key (`--segment-key` / `--join-on` columns, else `input_file`
                    and `input_row`: the row's position in its file) | carried columns
                    (`--segments-columns`) | the measurement | counts (n_segments = 1) |
                    the metric's statistics | sentence_score | segment_hash

`sentence_score` is sacrebleu's `sentence_score` of the segment (BLEU with effective order);
`segment_hash` is what the segment's bootstrap weights are drawn from, so `aggregate` adds up
replicate sums of any slice, equal to a run grouped that way.

Each task writes one file per partition (`part-<run>-t<task>.parquet`, `store.TaskWriter`): a
retried task replaces its own file, never adds a second.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Sequence, Tuple

import numpy as np
import pyarrow as pa

from . import metrics, statstable, store
from .metrics import combine
from .errors import UsageError
from .resampling import DEFAULT_BOOTSTRAP_SAMPLES, DEFAULT_SEED, Resampling, poisson_weights, replicate_sums

TABLE = "segments"
SENTENCE_SCORE, SEGMENT_HASH = statstable.SEGMENT_VALUES
INPUT_FILE, INPUT_ROW = "input_file", "input_row"  # a row's position, when segments have no key
POSITION = (INPUT_FILE, INPUT_ROW)
# Carried as the row's references, normalized to a list, when no input column has the name.
REFERENCES = "references"
CHUNK_ROWS = 10_000


@dataclass(frozen=True)
class SegmentsPlan:
    """What the tasks write: where, how partitioned, and which columns beside the group's."""
    uri: str                        # the table's folder in the output folder
    run_id: str
    partition_by: Tuple[str, ...] = ()
    key_cols: Tuple[str, ...] = ()  # the segment key, or POSITION
    carried: Tuple[Tuple[str, str], ...] = ()  # (name in the table, column of the batch)
    resampling: str = ""            # the run's replicate draw, '' when none
    fs_settings: Tuple[Tuple[str, str], ...] = ()  # the driver's S3 settings, for the tasks


def is_segments_table(table: pa.Table) -> bool:
    return SEGMENT_HASH in table.column_names


class SegmentsWriter(store.TaskWriter):
    """One task's segments, one file per partition (`store.TaskWriter`)."""

    def __init__(self, plan: SegmentsPlan, task: int, attempt: int):
        super().__init__(store.TableFiles(plan.uri, plan.run_id, plan.partition_by, plan.fs_settings),
                         task, attempt)


def rows_table(groups: Dict[str, pa.Array], measurement: Dict[str, pa.Array], n_refs: np.ndarray,
               hashes: np.ndarray, stats: Dict[str, pa.Array], scores: np.ndarray) -> pa.Table:
    """Segments of one metric as statistics rows (one segment each), with their own values."""
    n = len(scores)
    fingerprints = hashes.astype(np.int64) & statstable.FINGERPRINT_MASK
    refs = pa.array(n_refs.astype(np.int32))
    counts = {"n_segments": pa.array(np.ones(n, np.int64)), "n_rejected": pa.array(np.zeros(n, np.int64)),
              "segment_fingerprint": pa.array(fingerprints), "min_refs": refs, "max_refs": refs}
    table = statstable.build(groups, measurement, counts, stats)
    table = table.drop_columns(list(statstable.SAMPLES))  # derived from the hash when needed
    return (table.append_column(SENTENCE_SCORE, pa.array(scores, pa.float64()))
            .append_column(SEGMENT_HASH, pa.array(hashes.astype(np.int64))))


def summed(table: pa.Table, keys: Sequence[str], resample: bool) -> pa.Table:
    """Segment rows added up per `keys`, with replicate sums drawn from the segments' hashes
    when `resample` (the draw the run that wrote them recorded, else sacrebleu's defaults)."""
    if not resample:
        return statstable.add_up(table, keys)
    n_replicates, seed = draw_of(table[statstable.RESAMPLING].unique().to_pylist())
    return with_replicate_sums(table, keys, n_replicates, seed)


def draw_of(labels: Sequence[str]) -> Tuple[int, int]:
    """(replicates, seed) of the segments' replicate sums: any draw can be made from their
    hashes; the one the writing run made when it made one."""
    drawn = sorted(set(labels) - {"", None})
    if len(drawn) > 1:
        raise UsageError(f"the segments were written by runs of different draws ({', '.join(drawn)}); "
                         f"select the rows of one with --where")
    if not drawn:
        return DEFAULT_BOOTSTRAP_SAMPLES, DEFAULT_SEED
    _, n_replicates, seed = drawn[0].split(":")
    return int(n_replicates), int(seed)


def with_replicate_sums(table: pa.Table, keys: Sequence[str], n_replicates: int,
                        seed: int, declared=None) -> pa.Table:
    """Segment rows added up per `keys` (`statstable.add_up`), each sum with the replicate sums
    the scoring pass would keep for it: every segment weighted by the Poisson(1) weights drawn
    from its hash. Equal to a run grouped by `keys`, whatever slice the rows are. `declared`:
    the statistic columns (`statstable.add_up`)."""
    keys = list(keys)
    groups = (table.select(keys).append_column("_row", pa.array(np.arange(table.num_rows)))
              .group_by(keys, use_threads=False).aggregate([("_row", "list")]))
    members = groups["_row_list"].to_pylist()
    group_of = np.empty(table.num_rows, np.int64)
    for g, rows in enumerate(members):
        group_of[rows] = g
    summed = statstable.add_up(table.append_column("_group", pa.array(group_of)), [*keys, "_group"],
                               declared)
    hashes = table[SEGMENT_HASH].to_numpy(zero_copy_only=False)
    packed: list = [None] * len(members)
    for row in summed.select(["_group", *statstable.MEASUREMENT]).to_pylist():
        metric = metrics.of_row(row, None)
        combine.check_resampled(metric.columns(), metric.name)
        names = metric.names
        rows = np.asarray(members[row["_group"]])
        sums = np.zeros((n_replicates, len(names)), np.int64)
        for start in range(0, len(rows), CHUNK_ROWS):  # weights: chunk x B at a time
            part = rows[start:start + CHUNK_ROWS]
            stats = np.column_stack([table[n].take(part).to_numpy() for n in names])
            sums += replicate_sums(stats, poisson_weights(hashes[part], seed, n_replicates))
        packed[row["_group"]] = sums.reshape(-1)
    in_order = [packed[g] for g in summed["_group"].to_numpy()]
    label = pa.repeat(pa.scalar(Resampling(confidence=True, n_bootstrap=n_replicates,
                                           seed=seed).label), summed.num_rows)
    summed = _replaced(summed.drop_columns(["_group"]), statstable.RESAMPLING, label)
    return _replaced(summed, statstable.REPLICATE_SUMS, statstable.ragged_list_column(in_order))


def _replaced(table: pa.Table, name: str, column) -> pa.Table:
    if name in table.column_names:
        return table.set_column(table.schema.get_field_index(name), name, column)
    return table.append_column(name, column)
