"""A result of many groups scored from its statistics a chunk at a time: each chunk of whole
comparison groups scored by `score_sets` and `paired_rows` (the same rows, intervals, clusters
and paired tests as a whole scoring), its tables handed on as they are made, and only what a
person reads kept: the first rows in the result's order, a row of each signature, the counts.

The statistics are held (Arrow: a few hundred bytes a group); score rows as Python objects
(about 10 KB a group) never are, beyond a chunk: memory grows with CHUNK_ROWS, not with the
number of groups. No I/O: the caller says where each table goes (`write(name, table)`).
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Callable, Iterator, List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import metrics, statstable
from ..resampling import Resampling
from .paired import paired_rows
from . import columnar
from .rows import measured_by, score_sets
from .sets import GroupingSet
from .tables import (INTERVAL_FIELDS, OPTIONAL_FIELDS, SCORE_TYPES, GROUPING,
                     dashboard_table, paired_table, scores_table)
from ..resampling import clusters

CHUNK_ROWS = 1_000  # summed rows scored at once: whole comparison groups, at least one
SYSTEM = "system"
# What a person is shown of a result of many groups (scored a chunk at a time, or on the
# executors): the console's rows, paired tests and warnings; scores.json and paired.json are
# written up to JSON_ROWS rows; the report draws REPORT_ROWS groups.
CONSOLE_ROWS, PAIRED_SHOWN, WARNINGS_SHOWN = 60, 20, 10
JSON_ROWS = 10_000
REPORT_ROWS = 2_000


@dataclass
class Streamed:
    """What is kept of a result scored a chunk at a time."""
    first: List[dict] = field(default_factory=list)     # the first rows, in the result's order
    signed: dict = field(default_factory=dict)          # (metric, name, signature) -> a row
    report: List[dict] = field(default_factory=list)    # the report set's first rows
    groups: int = 0                                     # score rows of every grouping set
    per_set: List[int] = field(default_factory=list)    # score rows of each grouping set
    paired: List[dict] = field(default_factory=list)    # the first paired tests, in order
    paired_count: int = 0
    warnings: List[str] = field(default_factory=list)   # comparison groups without the baseline
    missing_baselines: int = 0


def stream(stats: pa.Table, sets: Sequence[GroupingSet], config: metrics.Choices,
           resampling: Optional[Resampling], implicit: Sequence[str], write: Callable,
           run_id: str, run_time: str, keep: int, report_index: int, report_rows: int,
           paired: bool, paired_kept: int, warnings_kept: int) -> Streamed:
    """Every grouping set scored in chunks, each chunk's scores and dashboard rows (and paired
    tests) handed to `write`; kept: the first `keep` rows, the first `report_rows` of set
    `report_index`, the first `paired_kept` paired tests and `warnings_kept` warnings."""
    fields = [stats.schema.field(c) for c in dict.fromkeys(c for s in sets for c in s)]
    schema = scores_schema(fields, stats, resampling)
    paired_set = next((s for s in sets if SYSTEM in s), None) if paired else None
    kept = Streamed()
    order = itertools.count()
    metric_for = measured_by(config)
    by_columns = resampling is None or not resampling.bootstrapped
    for index, grouping_set in enumerate(sets):
        kept.per_set.append(0)
        for chunk in comparison_chunks(stats, grouping_set):
            made = by_columns and columnar.scored(chunk, grouping_set, fields, metric_for,
                                                  implicit, run_id, run_time)
            if made:
                scores, dashboard = made.scores, made.dashboard
                picked = _read_by_people(made, grouping_set, index, kept, keep,
                                         report_rows if index == report_index else 0)
                rows = _rows(made.ordered.take(picked), grouping_set, fields, config,
                             resampling, implicit)
            else:
                rows = _rows(chunk, grouping_set, fields, config, resampling, implicit)
                scores, dashboard = (scores_table(rows, fields),
                                     dashboard_table(rows, fields, run_id, run_time))
            write("scores", conformed(scores, schema))
            write("dashboard", dashboard)
            kept.groups += scores.num_rows
            kept.per_set[index] += scores.num_rows
            for row in rows:
                kept.signed.setdefault((row["metric"], getattr(row, "sacrebleu", {}).get("name"),
                                        row.get("signature")), row)
            keyed = [((index, *_key(r, grouping_set)), next(order), r) for r in rows]
            kept.first = _smallest(kept.first, keyed, keep)
            if index == report_index:
                kept.report = _smallest(kept.report, keyed, report_rows)
            if grouping_set == paired_set:
                _add_paired(kept, chunk, grouping_set, config, resampling, fields, write,
                            paired_kept, warnings_kept)
    kept.first = [r for _, _, r in kept.first]
    kept.report = [r for _, _, r in kept.report]
    return kept


def _rows(stats: pa.Table, grouping_set: GroupingSet, fields, config, resampling,
          implicit) -> List[dict]:
    """The set's score rows of `stats`, with every field of any set (None where not grouped)."""
    rows = score_sets(stats, [grouping_set], config, resampling, None, implicit)
    for row in rows:
        for name in fields:
            row.setdefault(name.name, None)
    return rows


def _read_by_people(made: "columnar.Scored", grouping_set: GroupingSet, index: int,
                    kept: Streamed, keep: int, report_rows: int) -> pa.Array:
    """Which rows of a chunk scored by columns are made as score rows (by the row path itself):
    those that may be among the first `keep` or the report's first `report_rows`, and the first
    of each signature not seen yet."""
    wanted = max(_may_be_kept(made.ordered, grouping_set, index, kept.first, keep),
                 _may_be_kept(made.ordered, grouping_set, index, kept.report, report_rows))
    firsts = _first_of_each(made, kept.signed)
    return pa.array(sorted({*range(wanted), *firsts}), pa.int64())


def _first_of_each(made: "columnar.Scored", signed: dict) -> List[int]:
    """The first row of each (metric, signature) of a chunk that no row kept so far has."""
    seen = {(metric, signature) for metric, _, signature in signed}
    firsts = {}
    pairs = zip(made.scores["metric"].to_pylist(), made.scores["signature"].to_pylist())
    for index, pair in enumerate(pairs):
        if pair not in seen:
            firsts.setdefault(pair, index)
    return list(firsts.values())


def _key(row: dict, grouping_set: GroupingSet) -> tuple:
    """A row's place in its set: by the set's columns (nulls first), then its metric's order."""
    return _place([row[c] for c in grouping_set], row["metric"])


def _place(values: Sequence, metric: str) -> tuple:
    return (*((value is not None, value) for value in values), metrics.order_of(metric))


def _may_be_kept(ordered: pa.Table, grouping_set: GroupingSet, index: int, held: list,
                 n: int) -> int:
    """How many of the first rows of a chunk in its rows' order could enter `held`, the `n`
    smallest kept so far: all while it has fewer, else those placed before its last."""
    if n == 0:
        return 0
    if len(held) < n:
        return min(n, ordered.num_rows)
    last = held[-1][0]
    places = zip(zip(*(ordered[c].to_pylist() for c in grouping_set)),
                 ordered["metric"].to_pylist())
    return sum(1 for _ in itertools.takewhile(
        lambda item: (index, *_place(*item)) < last, places))


def _smallest(held: list, new: list, n: int) -> list:
    return heapq.nsmallest(n, [*held, *new], key=lambda item: item[:2])


def _add_paired(kept: Streamed, chunk: pa.Table, grouping_set: GroupingSet, config, resampling,
                fields, write, paired_kept: int, warnings_kept: int) -> None:
    tests, missing = paired_rows(chunk, [grouping_set], config, resampling)
    compared = [f for f in fields if f.name in grouping_set and f.name != SYSTEM]
    if tests:
        write("paired", paired_table(tests, compared))
    kept.paired += tests[: max(0, paired_kept - len(kept.paired))]
    kept.paired_count += len(tests)
    kept.warnings += missing[: max(0, warnings_kept - len(kept.warnings))]
    kept.missing_baselines += len(missing)


def comparison_chunks(stats: pa.Table, grouping_set: GroupingSet,
                      rows: Optional[int] = None) -> Iterator[pa.Table]:
    """The set's summed rows, sorted by its comparison columns (the set's other than system),
    in chunks of about `rows` (CHUNK_ROWS) that never cut a comparison group."""
    rows = rows or CHUNK_ROWS
    finest = set(grouping_set) == set(statstable.group_columns_of(stats))
    # A row a group and measurement already at the table's own grain: nothing to add up.
    sums = stats if finest else statstable.summed(stats, [*grouping_set, *statstable.MEASUREMENT])
    comparison = [c for c in grouping_set if c != SYSTEM]
    by = [*comparison, *([SYSTEM] if SYSTEM in grouping_set else [])]
    ordered = sums.sort_by([(c, "ascending", "at_start") for c in by]) if by else sums
    starts = group_starts(ordered, comparison)
    begin, n = 0, ordered.num_rows
    while begin < n:
        target = begin + rows
        after = n if target >= n else int(starts[np.searchsorted(starts, target)])
        yield ordered.slice(begin, after - begin)
        begin = after


def group_starts(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Where each run of rows equal in `columns` starts (two nulls are equal), and the end."""
    n = table.num_rows
    new = np.zeros(n + 1, bool)
    new[0] = new[n] = True
    if not columns:
        return np.flatnonzero(new)
    for name in columns:
        values = table[name].combine_chunks()
        before, after = values.slice(0, n - 1), values.slice(1)
        differs = pc.fill_null(pc.not_equal(before, after), True)
        both_null = pc.and_(pc.is_null(before), pc.is_null(after))
        new[1:n] |= pc.and_(differs, pc.invert(both_null)).to_numpy(zero_copy_only=False)
    return np.flatnonzero(new)


def scores_schema(fields: Sequence[pa.Field], stats: pa.Table,
                  resampling: Optional[Resampling]) -> pa.Schema:
    """The scores table's columns for every chunk alike: the group columns, the grouping, the
    result fields of the metrics the statistics hold, the interval and cluster fields asked for
    (a whole scoring keeps a field some row has; a chunk may have none)."""
    own = {f for name in pc.unique(stats["metric"]).to_pylist()
           for f in metrics.declaration(name).result_fields()}
    every = set(metrics.result_types())
    optional = set()
    if resampling is not None and resampling.confidence:
        optional |= set(INTERVAL_FIELDS)
    if resampling is not None and resampling.clusters:
        optional |= set(clusters.FIELDS)
    kept = [pa.field(c, t) for c, t in SCORE_TYPES.items()
            if (c not in OPTIONAL_FIELDS or c in optional) and (c not in every or c in own)]
    return pa.schema([*fields, pa.field(GROUPING, pa.string()), *kept])


def conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with the columns of `schema`, in its order (absent ones null)."""
    return pa.table([table[f.name].cast(f.type) if f.name in table.column_names
                     else pa.nulls(table.num_rows, f.type) for f in schema], schema=schema)

