"""The statistics table: summed statistics per group and metric, the pivot between measuring and
showing.

One row per group and metric at the finest grain a run measured, with everything needed to score
it again and to refuse mixing it with rows measured differently:

    group columns | metric, format_version, sacrebleu_version, tokenize, tokenizer_signature,
                    metric_options
                                                           (the measurement: must agree to be summed)
                  | resampling                             (the replicate sums' draw, '' for none)
                  | n_segments, n_rejected, n_reference_segments, segment_fingerprint,
                    min_refs, max_refs
                  | each metric's statistic columns        (summed; null in other metrics' rows)
                    BLEU: sys_len, ref_len, correct_1..N, total_1..N; chrF: chrf_c1_hyp, ...
                  | replicate_sums, trial_sums             (list<int64>: B x width sums, or null)

Which columns are statistics, and the width of a row's replicate sums, are its metric's
(`bleu_spark.metrics`): this module names no metric. The measurement settings a metric has
beyond the tokenizer are in `metric_options`, the same column for every metric, lowercasing
included (`case:mixed|order:4` for BLEU; `case:mixed|nc:6|nw:0|beta:2|space:no|eps:no` for chrF).

The replicate sums of a group are one list in its row (replicate-major: replicate 0's
statistics, then replicate 1's, ...), not a row per replicate: memory and files grow with
groups x B x statistics as packed integers, never with Python objects or keys per replicate.

Smoothing, effective order and weights are not here: they are choices of the scoring step, so
saved statistics can be scored under any of them without reading the text again.
"""
from __future__ import annotations

from typing import Dict, Mapping, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from . import metrics, predicate, store
from .errors import IncompatibleStatisticsError, InputNotFoundError, UsageError
from .metrics import combine
from .metrics.base import SUM, sacrebleu_version
from .predicate import Predicate

FORMAT_VERSION = 3  # 3: lowercase and max_ngram_order in metric_options, not columns of their own
METRIC = metrics.DEFAULT[0]  # the metric of rows saved before the table had several
METRIC_OPTIONS = "metric_options"

# Rows may be summed only when all of these agree.
MEASUREMENT = ("metric", "format_version", "sacrebleu_version", "tokenize", "tokenizer_signature",
               METRIC_OPTIONS)
# The draw of the replicate sums (`poisson:1000:12345`, '' when none were kept). Rows of
# different draws add up for their plain statistics, but their replicate sums do not: the sum
# is labelled MIXED and its replicate sums are null, so only intervals are refused there.
RESAMPLING = "resampling"
MIXED = "mixed"
# Summed when rows are added up; min_refs / max_refs are a min and a max. The fingerprint is the
# sum of the scored segments' hashes (low 32 bits): two groups over the same segments have the
# same one, so paired tests can check that a system and its baseline cover the same segments.
COUNTS = ("n_segments", "n_rejected", "n_reference_segments", "segment_fingerprint")
REFS = ("min_refs", "max_refs")
# Per group, the sums weighted by each bootstrap replicate's hashed weights, and the sums over
# the segments each approximate-randomization trial swaps (poisson method): B x width integers.
REPLICATE_SUMS, TRIAL_SUMS = SAMPLES = ("replicate_sums", "trial_sums")

_TYPES = {"metric": pa.string(), "format_version": pa.int32(), "sacrebleu_version": pa.string(),
          "tokenize": pa.string(), "tokenizer_signature": pa.string(), METRIC_OPTIONS: pa.string(),
          RESAMPLING: pa.string(),
          REPLICATE_SUMS: pa.list_(pa.int64()), TRIAL_SUMS: pa.list_(pa.int64()),
          "n_segments": pa.int64(), "n_rejected": pa.int64(), "n_reference_segments": pa.int64(),
          "segment_fingerprint": pa.int64(), "min_refs": pa.int32(), "max_refs": pa.int32()}
FINGERPRINT_MASK = 0xFFFFFFFF
# A segments table (`--segments`: `bleu_spark.segments`) is this table at the finest grain, a
# row per segment and metric, with the segment's own values: its sentence-level score and the
# hash its bootstrap weights are drawn from. Neither is a group column.
SENTENCE_SCORE, SEGMENT_HASH = SEGMENT_VALUES = ("sentence_score", "segment_hash")
# The tables of an output folder that hold statistics rows, readable by `aggregate` by their path.
STATISTICS_FOLDERS = ("stats", "segments")


def stat_columns(table: pa.Table) -> list:
    """The summed statistics columns of a table, in order (the metrics' own columns)."""
    return [c for c in table.column_names if metrics.is_stat_column(c)]


def value_columns(table: pa.Table) -> list:
    """Every column that is not a group column."""
    return [*MEASUREMENT, RESAMPLING, *COUNTS, *REFS, *stat_columns(table), *SAMPLES,
            *(c for c in SEGMENT_VALUES if c in table.column_names)]


def group_columns_of(table: pa.Table) -> list:
    values = set(value_columns(table))
    return [c for c in table.column_names if c not in values]


def measurement_columns(n_rows: int, tokenize: pa.Array, tokenizer_signature: pa.Array,
                        metric_options, resampling: str = "", metric=METRIC) -> Dict[str, pa.Array]:
    """The measurement columns of rows measured by this installation. `resampling` names the
    hashed replicate sums kept (`poisson:1000:12345`), '' when none. `metric` and
    `metric_options` (the metric's `measurement()`): one value for every row, or a list of one
    per row (rows of several metrics), as a list or an Arrow array."""
    def column(name, value):
        if isinstance(value, (pa.Array, pa.ChunkedArray)):
            return value.cast(_TYPES[name])
        values = value if isinstance(value, (list, tuple)) else [value] * n_rows
        return pa.array(values, _TYPES[name])

    return {"metric": column("metric", metric),
            "format_version": column("format_version", FORMAT_VERSION),
            "sacrebleu_version": column("sacrebleu_version", sacrebleu_version()),
            "tokenize": tokenize.cast(pa.string()),
            "tokenizer_signature": tokenizer_signature.cast(pa.string()),
            METRIC_OPTIONS: column(METRIC_OPTIONS, metric_options),
            RESAMPLING: column(RESAMPLING, resampling)}


def build(groups: Mapping[str, pa.Array], measurement: Mapping[str, pa.Array],
          counts: Mapping[str, pa.Array], stats: Mapping[str, pa.Array],
          samples: Optional[Mapping[str, pa.Array]] = None) -> pa.Table:
    """A statistics table from its parts, in the documented column order and types."""
    columns = dict(groups)
    columns.update({name: measurement[name].cast(_TYPES[name]) for name in (*MEASUREMENT, RESAMPLING)})
    n = len(next(iter(measurement.values())))
    columns.update({name: counts.get(name, pa.nulls(n)).cast(_TYPES[name]) for name in (*COUNTS, *REFS)})
    columns.update({name: values.cast(metrics.stat_column(name).type) for name, values in stats.items()})
    columns.update({name: (samples or {}).get(name, pa.nulls(n)).cast(_TYPES[name]) for name in SAMPLES})
    return pa.table(columns)


def summed(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Rows with equal `keys` added up (`add_up`), in the documented column order."""
    merged = add_up(table, keys)
    order = [*keys, *[c for c in value_columns(table) if c not in keys]]
    return merged.select([c for c in order if c in merged.column_names])


def add_up(table: pa.Table, keys: Sequence[str],
           declared: Optional[Sequence[metrics.StatColumn]] = None) -> pa.Table:
    """Rows with equal `keys` as one row, keys first, the other columns in their order: counts
    summed, statistics combined as declared (null when every row is null), min_refs a min,
    max_refs a max, the resampling labels kept when they agree (else MIXED), replicate and trial
    sums added element-wise; other columns (group columns not in `keys`) left out. Null keys
    form their own group, as in SQL's GROUP BY. `declared`: the statistic columns (a task has
    them from its plan); None: the registry's declarations of the table's."""
    keys = list(keys)
    if declared is None:
        declared = [metrics.stat_column(c) for c in stat_columns(table)]
    statistics = [c for c in declared if c.name in table.column_names and c.name not in keys]
    known = {*_COMBINE, *COUNTS, *(c.name for c in statistics)}
    values = [c for c in table.column_names if c not in keys and c in known]
    kind = {**{c: _COMBINE.get(c, SUM) for c in values}, **dict(combine.arrow_aggregations(statistics))}
    ops = [(c, op) for c in values for op in
           (("min", "max") if kind[c] == "label" else () if kind[c] == "lists" else (kind[c],))]
    # Each group's rows are listed only for sums to add element-wise: a list a group costs a
    # table of many groups dearly, and without replicate sums (every list null) none is needed.
    lists = [c for c in values if kind[c] == "lists" and table[c].null_count < table.num_rows]
    if lists:
        table = table.append_column("_row", pa.array(np.arange(table.num_rows, dtype=np.int64)))
        ops.append(("_row", "list"))
    merged = table.group_by(keys, use_threads=False).aggregate(ops)
    columns = {k: merged[k] for k in keys}
    agree = pa.array(np.ones(merged.num_rows, bool))
    if RESAMPLING in kind:
        low, high = merged[f"{RESAMPLING}_min"], merged[f"{RESAMPLING}_max"]
        agree = pc.fill_null(pc.equal(low, high), True)
        columns[RESAMPLING] = pc.if_else(agree, low, pa.scalar(MIXED))
    groups = merged["_row_list"].combine_chunks() if lists else None
    for c in values:
        if c in lists:
            columns[c] = summed_lists(table[c], groups, agree)
        elif kind[c] == "lists":
            columns[c] = _null_lists(table[c], merged.num_rows)
        elif kind[c] != "label":
            columns[c] = merged[f"{c}_{kind[c]}"]
    return pa.table({c: columns[c] for c in [*keys, *values]})


def _options_of(table: pa.Table, name) -> list:
    """The distinct metric options texts of a metric's rows."""
    rows = table.filter(pc.fill_null(pc.equal(table["metric"], name), False))
    return pc.unique(rows[METRIC_OPTIONS]).to_pylist()


def check_measurement(table: pa.Table) -> None:
    """Saved statistics are of the metrics and format this installation scores: other ones (a
    metric it does not know, a newer layout) would be scored wrongly without a word, so they are
    refused, naming what was found and what is supported."""
    problems = []
    unknown = [name for name in pc.unique(table["metric"]).to_pylist()
               if not metrics.readable(name, _options_of(table, name))]
    if unknown:
        problems.append(f"metric {', '.join(sorted(map(str, unknown)))} (this installation reads "
                        f"metric {', '.join([*metrics.REGISTRY, *metrics.CHECKS])} and segment "
                        f"scores only)")
    found = [v for v in pc.unique(table["format_version"]).to_pylist() if v != FORMAT_VERSION]
    if found:
        problems.append(f"format_version {', '.join(sorted(map(str, found)))} (this installation "
                        f"reads format_version {FORMAT_VERSION} only)")
    if problems:
        again = any(p.startswith("format_version") for p in problems)
        raise IncompatibleStatisticsError(f"statistics of {'; '.join(problems)}"
                                          + ("; score the input again with this version" if again else ""))


def counted_once(table: pa.Table, column: str) -> int:
    """A count (`n_segments`, `n_rejected`) of the rows the statistics stand for, each row once
    however many metrics measured it: a run writes a statistics row per group and metric, each
    with the group's count, so per group (at the table's grain) the count of its metric that
    covers the most, summed over groups. Nested columns (a segments table's carried
    `references`) are no keys: they are a segment's, which its scalar key columns name."""
    keys = [c for c in group_columns_of(table) if not pa.types.is_nested(table.schema.field(c).type)]
    per_metric = table.group_by([*keys, "metric"], use_threads=False).aggregate([(column, "sum")])
    most = pc.fill_null(per_metric[f"{column}_sum"], 0)
    if not keys:
        return pc.max(most).as_py() or 0
    most = per_metric.select(keys).append_column("_n", most).group_by(
        keys, use_threads=False).aggregate([("_n", "max")])["_n_max"]
    return pc.sum(most).as_py() or 0


def scored_values(table: pa.Table, column: str) -> set:
    """The values of `column` in groups with scored segments (e.g. the systems a paired test
    can compare)."""
    scored = table.filter(pc.greater(table["n_segments"], 0))
    return set(scored[column].to_pylist())




_COMBINE = {"min_refs": "min", "max_refs": "max", RESAMPLING: "label",
            REPLICATE_SUMS: "lists", TRIAL_SUMS: "lists"}


def _null_lists(column, n: int) -> pa.ChunkedArray:
    """`summed_lists` of a column of nulls alone: `n` nulls, typed as it types them (the
    column's own type when each row is its own group, else `ragged_list_column`'s)."""
    kind = column.type if n == len(column) else pa.list_(pa.int64())
    return pa.chunked_array([pa.nulls(n, kind)])


def summed_lists(column, groups: pa.ListArray, agree: pa.Array) -> pa.ChunkedArray:
    """Element-wise sums of the integer lists of each group's rows (`groups`: row indices per
    group); null where no row has one, or where the rows' draws differ (`agree` false). Rows of
    different metrics have lists of different lengths; within a group they must agree."""
    lists = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(groups) == len(lists):  # a row a group (rows already summed): reordered, not copied thrice
        order = pc.list_flatten(groups).to_numpy()
        kept = lists if np.array_equal(order, np.arange(len(order))) else lists.take(order)
        if not pc.all(agree).as_py():
            kept = pc.if_else(agree, kept, pa.nulls(len(kept), kept.type))
        return kept if isinstance(kept, pa.ChunkedArray) else pa.chunked_array([kept])
    present = lists.is_valid().to_numpy(zero_copy_only=False)
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy()
    order = pc.list_flatten(groups).to_numpy()
    sizes = np.diff(groups.offsets.to_numpy())
    group_of = np.empty(len(lists), np.int64)
    group_of[order] = np.repeat(np.arange(len(groups)), sizes)
    widths = np.zeros(len(groups), np.int64)
    for width in set(lengths[present].tolist()):
        members = np.unique(group_of[present & (lengths == width)])
        if (widths[members] != 0).any():
            raise IncompatibleStatisticsError(
                f"replicate sums of different lengths ({', '.join(map(str, sorted(set(lengths[present].tolist()))))}) "
                f"in one group: rows of other max n-gram orders or draws; select one with --where")
        widths[members] = width
    sums: list = [None] * len(groups)
    offsets = lists.offsets.to_numpy()
    values = pc.list_flatten(lists).to_numpy(zero_copy_only=False)  # from offsets[0] on
    for row in np.flatnonzero(present):
        g, width = group_of[row], lengths[row]
        start = int(offsets[row] - offsets[0])
        part = values[start:start + width]
        sums[g] = part.astype(np.int64) if sums[g] is None else sums[g] + part
    keep = agree.to_numpy(zero_copy_only=False)
    return ragged_list_column([v if k else None for v, k in zip(sums, keep)])


def ragged_list_column(rows: Sequence[Optional[np.ndarray]]) -> pa.ChunkedArray:
    """Each array as a list (null for None), in chunks whose values fit the 32-bit offsets of a
    list array (Spark reads lists, not large lists)."""
    chunks, start = [], 0
    limit = 2 ** 31 - 1
    while start < len(rows) or not chunks:
        stop, size = start, 0
        while stop < len(rows) and (stop == start or size + _size(rows[stop]) <= limit):
            size += _size(rows[stop])
            stop += 1
        part = rows[start:stop]
        kept = np.array([r is not None for r in part], bool)
        offsets = np.concatenate([[0], np.cumsum([_size(r) for r in part])]).astype(np.int32)
        flat = (np.concatenate([np.asarray(r, np.int64).reshape(-1) for r in part if r is not None])
                if kept.any() else np.zeros(0, np.int64))
        chunks.append(pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(flat, pa.int64()),
                                               mask=pa.array(~kept)))
        start = stop
    return pa.chunked_array(chunks, pa.list_(pa.int64()))


def _size(row) -> int:
    return 0 if row is None else int(np.asarray(row).size)


def sample_matrix(table: pa.Table, column: str, row: int, width: int) -> Optional[np.ndarray]:
    """Row `row`'s replicate or trial sums as a (samples, width) int64 matrix, or None."""
    value = table[column][row]
    if not value.is_valid:
        return None
    return value.values.to_numpy(zero_copy_only=False).reshape(-1, width)


def read(path: str, where: Optional[Predicate] = None) -> pa.Table:
    """A saved statistics table, without a JVM: an output folder, its `stats/` folder, or any
    Parquet file or folder of statistics rows (Hive partitions read back as columns, with the
    types the writing run recorded). `where`: a parsed `--where` filter, checked against the
    columns before any row is read and given to the scan (partitions it excludes are skipped)."""
    import pyarrow.dataset as ds

    found = store.locate(path, "stats", STATISTICS_FOLDERS)
    fs, root, files = found.fs, found.root, found.files
    if files is None and fs.get_file_info(root).type == pafs.FileType.NotFound:
        raise InputNotFoundError(f"statistics path not found: {path}")
    partitioning = (ds.partitioning(found.partition_schema(), flavor="hive")
                    if found.partition_by else "hive")
    try:
        # The files the output's commit log names (a Parquet path of no output: all it holds).
        source, base = (root, None) if files is None else (files, root)
        dataset = ds.dataset(source, filesystem=fs, format="parquet", partitioning=partitioning,
                             partition_base_dir=base)
        if not dataset.files:
            raise InputNotFoundError(f"statistics path holds no Parquet files: {path}")
        # Files of other runs may measure more n-gram orders: read every file's columns.
        schema = pa.unify_schemas([dataset.schema, *(f.physical_schema for f in dataset.get_fragments())])
        check_statistics_columns(path, schema.names)
        rows = None if where is None else predicate.to_arrow(bound(where, schema))
        if files is not None and partitioning != "hive":  # values as the folders name them
            dataset = store.files_dataset(files, root, fs, schema, found.partition_by)
        else:
            dataset = ds.dataset(source, schema=schema, filesystem=fs, format="parquet",
                                 partitioning=partitioning, partition_base_dir=base)
        table = _scanner(dataset, rows, where).to_table()
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputNotFoundError(f"statistics at {path} are not readable Parquet: {exc}") from None
    return with_samples(table)


def _scanner(dataset, rows, where: Optional[Predicate]):
    """The scan of `dataset` through the filter. pyarrow binds the filter to the columns here,
    before reading: a filter it cannot evaluate is said to be the filter, not the files."""
    try:
        return dataset.scanner(filter=rows)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        if rows is None:
            raise
        raise UsageError(f"bad --where predicate {where.text!r}: pyarrow cannot evaluate it on "
                         f"these statistics ({exc}); --engine spark evaluates the same filter"
                         .replace("\n", " ")) from None


# Every statistics table has these (a segments table leaves out the packed sums).
REQUIRED = (*MEASUREMENT, RESAMPLING, *COUNTS, *REFS)
# Columns of a development-era format (a row per replicate and per trial), never written now.
OLDER_COLUMNS = ("replicate", "trial")


def check_statistics_columns(path: str, names: Sequence[str]) -> None:
    """Columns of this format's statistics: a table with a format_version but another layout is
    of another format, refused (exit 11) rather than read as if it were this one."""
    missing = [c for c in REQUIRED if c not in names]
    older = [c for c in OLDER_COLUMNS if c in names]
    if "format_version" in names and (missing or older):
        found = [*(f"no column {c}" for c in missing), *(f"a column {c}" for c in older)]
        raise IncompatibleStatisticsError(
            f"{path} holds statistics of another format ({', '.join(found)}); this installation "
            f"reads format_version {FORMAT_VERSION} only: score the input again with this version")
    if missing:
        raise InputNotFoundError(f"{path} is not a bleu-spark statistics table (no column "
                                 f"{', '.join(missing)})")


def filter_columns(names: Sequence[str]) -> list:
    """The columns `--where` may name: group columns and the measurement. Never the replicate or
    trial sums, the counts or the statistics: a filter on those would keep part of a group's
    statistics and change what its counts and intervals mean."""
    hidden = {*SAMPLES, *COUNTS, *REFS}
    return [c for c in names if c not in hidden and not metrics.is_stat_column(c)]


def with_samples(table: pa.Table) -> pa.Table:
    """The packed sums a segments table leaves out (drawn from its hashes when needed), null."""
    for name in SAMPLES:
        if name not in table.column_names:
            table = table.append_column(name, pa.nulls(table.num_rows, _TYPES[name]))
    return table


def bound(where: Predicate, schema: pa.Schema) -> Predicate:
    """`where` checked against the columns and types of a statistics table."""
    return predicate.bind(where, predicate.arrow_kinds(schema), filter_columns(schema.names))


def filtered(table: pa.Table, where: Predicate) -> pa.Table:
    """The rows of `table` for which `where` is true (false and null drop a row)."""
    return table.filter(predicate.to_arrow(bound(where, table.schema)))
