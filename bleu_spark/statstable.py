"""The statistics table: summed BLEU statistics per group, the pivot between measuring and showing.

One row per group at the finest grain a run measured, with everything needed to score it again
and to refuse mixing it with rows measured differently:

    group columns | metric, format_version, sacrebleu_version, tokenize, tokenizer_signature,
                    lowercase, max_ngram_order            (the measurement: must agree to be summed)
                  | n_segments, n_rejected, n_reference_segments, min_refs, max_refs
                  | sys_len, ref_len, correct_1..N, total_1..N   (summed integer statistics)

Smoothing, effective order and weights are not here: they are choices of the scoring step, so
saved statistics can be scored under any of them without reading the text again.
"""
from __future__ import annotations

import os
from typing import Dict, Mapping, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import sacrebleu

from . import output
from .errors import InputNotFoundError, UsageError
from .stats import stats_names

FORMAT_VERSION = 1
METRIC = "bleu"

# Rows may be summed only when all of these agree.
MEASUREMENT = ("metric", "format_version", "sacrebleu_version", "tokenize", "tokenizer_signature",
               "lowercase", "max_ngram_order", "resampling")
# Summed when rows are added up; min_refs / max_refs are a min and a max.
COUNTS = ("n_segments", "n_rejected", "n_reference_segments")
REFS = ("min_refs", "max_refs")
# Null on the plain sums; r on the sums weighted by bootstrap replicate r's hashed weights, t on
# the sums over the segments approximate-randomization trial t swaps (poisson method).
SAMPLES = ("replicate", "trial")

_TYPES = {"metric": pa.string(), "format_version": pa.int32(), "sacrebleu_version": pa.string(),
          "tokenize": pa.string(), "tokenizer_signature": pa.string(), "lowercase": pa.bool_(),
          "max_ngram_order": pa.int32(), "resampling": pa.string(),
          "replicate": pa.int32(), "trial": pa.int32(), "n_segments": pa.int64(), "n_rejected": pa.int64(),
          "n_reference_segments": pa.int64(), "min_refs": pa.int32(), "max_refs": pa.int32()}


def stat_columns(table: pa.Table) -> list:
    """The summed statistics columns of a table, in order (their number follows the max order)."""
    return [c for c in table.column_names if c in _all_stat_names(table)]


def _all_stat_names(table: pa.Table) -> set:
    orders = [int(c.split("_")[1]) for c in table.column_names if c.startswith("total_")]
    return set(stats_names(max(orders, default=0)))


def value_columns(table: pa.Table) -> list:
    """Every column that is not a group column."""
    return [*MEASUREMENT, *SAMPLES, *COUNTS, *REFS, *stat_columns(table)]


def group_columns_of(table: pa.Table) -> list:
    values = set(value_columns(table))
    return [c for c in table.column_names if c not in values]


def measurement_columns(n_rows: int, tokenize: pa.Array, tokenizer_signature: pa.Array,
                        lowercase: bool, max_ngram_order: int,
                        resampling: str = "") -> Dict[str, pa.Array]:
    """The measurement columns of rows measured by this installation. `resampling` names the
    hashed replicate sums kept (`poisson:1000:12345`), '' when none."""
    def constant(name, value):
        return pa.array([value] * n_rows, _TYPES[name])

    return {"metric": constant("metric", METRIC),
            "format_version": constant("format_version", FORMAT_VERSION),
            "sacrebleu_version": constant("sacrebleu_version", sacrebleu.__version__),
            "tokenize": tokenize.cast(pa.string()),
            "tokenizer_signature": tokenizer_signature.cast(pa.string()),
            "lowercase": constant("lowercase", lowercase),
            "max_ngram_order": constant("max_ngram_order", max_ngram_order),
            "resampling": constant("resampling", resampling)}


def build(groups: Mapping[str, pa.Array], measurement: Mapping[str, pa.Array],
          counts: Mapping[str, pa.Array], stats: Mapping[str, pa.Array],
          samples: Optional[Mapping[str, pa.Array]] = None) -> pa.Table:
    """A statistics table from its parts, in the documented column order and types."""
    columns = dict(groups)
    columns.update({name: measurement[name].cast(_TYPES[name]) for name in MEASUREMENT})
    n = len(next(iter(measurement.values())))
    columns.update({name: (samples or {}).get(name, pa.nulls(n, _TYPES[name])).cast(_TYPES[name])
                    for name in SAMPLES})
    columns.update({name: counts[name].cast(_TYPES[name]) for name in (*COUNTS, *REFS)})
    columns.update({name: values.cast(pa.int64()) for name, values in stats.items()})
    return pa.table(columns)


def summed(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Rows with equal `keys` added up: counts and statistics summed, min_refs a min, max_refs a
    max. Null keys form their own group, as in SQL's GROUP BY."""
    keys = [*keys, *(c for c in SAMPLES if c not in keys)]
    ops = [(c, "sum") for c in (*COUNTS, *stat_columns(table))]
    ops += [("min_refs", "min"), ("max_refs", "max")]
    # n_reference_segments is null when segments had no keys: keep it null, not 0.
    merged = table.group_by(list(keys), use_threads=False).aggregate(
        ops + [("n_reference_segments", "count")])
    columns = {k: merged[k] for k in keys}
    for name, op in ops:
        columns[name] = merged[f"{name}_{op}"]
    known = pc.greater(merged["n_reference_segments_count"], 0)
    columns["n_reference_segments"] = pc.if_else(known, columns["n_reference_segments"],
                                                 pa.scalar(None, pa.int64()))
    order = [*keys, *[c for c in value_columns(table) if c not in keys]]
    return pa.table({c: columns[c] for c in order})



def read(path: str, where: Optional[str] = None) -> pa.Table:
    """A saved statistics table, without a JVM: an output folder, its `stats/` folder, or any
    Parquet file or folder of statistics rows (Hive partitions read back as columns, with the
    types the writing run recorded). `where`: a SQL predicate over its columns (DuckDB)."""
    import pyarrow.dataset as ds

    output.recover_before_reading(path)  # never a half-committed folder
    fs, root = output.filesystem(path)
    marker = output.read_marker(fs, root)
    if marker is not None:
        root = f"{root}/stats"
    elif os.path.basename(root) == "stats":
        marker = output.read_marker(fs, os.path.dirname(root))
    info = fs.get_file_info(root)
    if info.type == output.pafs.FileType.NotFound:
        raise InputNotFoundError(f"statistics path not found: {path}")
    if marker and marker.get("partition_by"):
        types = marker.get("partition_types", {})
        partitioning = ds.partitioning(pa.schema(
            [(c, output.PARTITION_TYPES.get(types.get(c), pa.string())) for c in marker["partition_by"]]),
            flavor="hive")
    else:
        partitioning = "hive"
    try:
        dataset = ds.dataset(root, filesystem=fs, format="parquet", partitioning=partitioning)
        if not dataset.files:
            raise InputNotFoundError(f"statistics path holds no Parquet files: {path}")
        # Files of other runs may measure more n-gram orders: read every file's columns.
        schema = pa.unify_schemas([dataset.schema, *(f.physical_schema for f in dataset.get_fragments())])
        table = ds.dataset(root, schema=schema, filesystem=fs, format="parquet",
                           partitioning=partitioning).to_table()
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputNotFoundError(f"statistics at {path} are not readable Parquet: {exc}") from None
    missing = [c for c in (*MEASUREMENT, *SAMPLES, *COUNTS, *REFS) if c not in table.column_names]
    if missing:
        raise InputNotFoundError(f"{path} is not a bleu-spark statistics table (no column "
                                 f"{', '.join(missing)})")
    return filtered(table, where) if where else table


def filtered(table: pa.Table, where: str) -> pa.Table:
    """The rows of `table` for which the SQL predicate holds, evaluated by DuckDB in-process."""
    import duckdb

    try:
        with duckdb.connect() as connection:
            return connection.from_arrow(table).filter(where).arrow().read_all().cast(table.schema)
    except duckdb.Error as exc:
        message = str(exc).splitlines()[0]
        raise UsageError(f"bad --where predicate {where!r}: {message}") from None
