"""The scoring pass with the input read by the Python workers themselves.

Scored where they lie (no join, no segment-key check, no shuffle bringing rows together),
Spark's part of the pass was a Parquet scan whose rows went to the Python workers as Arrow
batches: the JVM decoded every string into its row format and then into Arrow again, and each
run paid for compiling that code and for planning SQL queries. Here each Spark task gets a run
of consecutive rows of the input's Parquet row groups and reads them with pyarrow, straight to
Arrow, in the Python worker. The tasks are about equal in rows whatever the row groups (a file
pyarrow or pandas wrote holds up to a million rows in one), plain RDD tasks (no SQL planning
or code generation), and their partial sums are merged in a tree (on the executors, then on
the driver); through Spark Connect, which has no RDDs, they are the tasks of a `mapInArrow`
over a DataFrame of task numbers (`runtime/`).
Spark schedules and retries the tasks and carries the counters. Its SQL engine lists and
types the input only where the footers cannot (partition folders, files with different columns
or types Spark reads its own way, Parquet summary files: `io.footer_schema`); otherwise it is
never started.

It applies to local inputs (paths every executor sees, as Spark's own reading of a local path
needs) whose files Spark lists the same way, to inputs on object stores pyarrow has a file
system for (`s3://`, `s3a://`, `gs://`, `abfs://`: `store/remote.py`, listed and typed without
Spark, the file system's settings handed to the tasks), and to columns whose values pyarrow
reads as Spark does (strings, integers, booleans, dates, and partition folders of strings,
integers and dates). Anything else (`hdfs://`, say) is read by Spark's scan.
"""
from __future__ import annotations

import bisect
import os
import uuid
from dataclasses import dataclass, replace
from typing import Iterator, List, Optional, Sequence, Tuple, Union
from urllib.parse import quote, unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema, to_arrow_type

from ..errors import InputNotFoundError
from ..hashes import reference_hashes
from ..segments import INPUT_FILE, INPUT_ROW, POSITION
from ..store import remote
from . import io, runtime
from .names import map_in_arrow
from .inputs import scoring_tasks, user_split_bytes
from ..time_windows import WINDOW_START
from .stats import merged_sums, output_schema, partial_sums as partition_function

# What pyarrow reads exactly as Spark does: data columns, and values of partition folders.
_READ_ALIKE = (T.StringType, T.IntegerType, T.LongType, T.ShortType, T.ByteType, T.BooleanType,
               T.DateType, T.DoubleType, T.FloatType)
_TIME_ALIKE = (T.TimestampType, T.TimestampNTZType)
_FOLDER_ALIKE = (T.StringType, T.IntegerType, T.LongType, T.DateType)
BATCH_ROWS = "spark.sql.execution.arrow.maxRecordsPerBatch"
REMOTE_BUFFER = 8 << 20   # a remote file's read size: one request per 8 MiB of a column's pages


@dataclass(frozen=True)
class Piece:
    """Rows of one file: its row groups `row_groups`, from the `skip`-th row of the first on,
    `rows` of them (every row of the groups when None), and the values of its partition
    folders. A piece that starts or ends inside a row group has that one group alone."""
    path: str
    row_groups: Tuple[int, ...]
    folders: Tuple[Tuple[str, object], ...]
    first_row: int = 0                     # its first row's index in the file
    skip: int = 0
    rows: Optional[int] = None


@dataclass(frozen=True)
class ArrowScan:
    tasks: Tuple[Tuple[Piece, ...], ...]   # the pieces each task reads
    rows: int                              # every row of the input, from the footers
    bytes: int                             # the input files' size
    row_groups: int                        # the input's Parquet row groups
    scan_id: str                           # this scan's, so a worker's open reader serves it alone
    spark_schema: T.StructType             # the batches' columns
    file_columns: Tuple[str, ...]          # the columns read from the files
    references_cols: Tuple[str, ...]       # one list column, or string columns of one reference each
    references: str                        # the list column the batches carry
    reason: str                            # the column of reasons found across rows: all null here
    segment_hash: Optional[str]            # Spark's xxhash64 of the references, when resampling
    batch_rows: int = 10_000
    position: bool = False                 # each row's file and index in it (segments.POSITION)
    source: Optional[remote.Remote] = None  # a remote input's files: how the tasks open them

    def file_uri(self, path: str) -> str:
        """A file as Spark's `_metadata.file_path` names it."""
        return self.source.uri_of(path) if self.source else spark_file_uri(path)

    def shown_uri(self, path: str) -> str:
        """A file as a message names it: its URI (`file:///dir/name.parquet` for a local one)."""
        return self.source.uri_of(path) if self.source else f"file://{path}"

    @property
    def schema(self) -> pa.Schema:
        return to_arrow_schema(self.spark_schema, timezone="UTC")

    def partial_sums(self, spark: SparkSession, plan, *counters) -> pa.Table:
        """The partition function's sums over every task, merged: one row per key. A file that
        cannot be read is exit 3, one line (found in a task, carried to the driver as its
        result: retrying cannot help, and a failed task would fill the log with its trace)."""
        function = partition_function(plan, *counters)
        schema = to_arrow_schema(output_schema(plan, self.spark_schema), timezone="UTC")

        def task(indices: Iterator[int]) -> Iterator[Union[pa.Table, UnreadableFile]]:
            try:
                batches = list(function(self.batches(indices)))
            except UnreadableFile as failure:
                yield failure
                return
            yield pa.Table.from_batches(batches).cast(schema) if batches else schema.empty_table()

        def merge(a, b):
            failed = [t for t in (a, b) if isinstance(t, UnreadableFile)]
            return failed[0] if failed else _compact(merged_sums([a, b], plan))

        if not self.tasks:
            return schema.empty_table()
        if plan.replicates or plan.trials:
            sums = (_merged_by_bucket(spark, task, merge, plan, len(self.tasks), counters)
                    or schema.empty_table())
        else:
            sums = runtime.run_tasks(spark, len(self.tasks), task, merge, counters)
        if isinstance(sums, UnreadableFile):
            raise InputNotFoundError(f"file {self.shown_uri(sums.args[0])} cannot be read: {sums.args[1]}")
        return sums

    def partials_frame(self, spark: SparkSession, plan, *counters) -> DataFrame:
        """Each task's partial sums as a DataFrame, left on the executors (`distributed`): a
        task a partition of task numbers. A file that cannot be read stops the task; the
        driver says so in one line (`io.read_failure`)."""
        function = partition_function(plan, *counters)
        schema = output_schema(plan, self.spark_schema)

        def run(numbers: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            tasks = [n for batch in numbers for n in batch.column(0).to_pylist() if n < len(self.tasks)]
            try:
                yield from function(self.batches(iter(tasks)))
            except UnreadableFile as failure:
                raise InputNotFoundError(f"file {self.shown_uri(failure.args[0])} cannot be read: "
                                         f"{failure.args[1]}") from None

        count = max(1, len(self.tasks))
        return map_in_arrow(spark.range(0, count, 1, numPartitions=count), run, schema)

    def estimated_groups(self, group_cols: Sequence[str], window=None,
                         sample_rows: int = 100_000) -> int:
        """The input's groups, estimated on the driver from the first batch of up to 16 tasks
        spread over it (at most `sample_rows` rows): their distinct keys per row read, times the
        rows. Exact for an input of one batch; rows sorted by group err towards fewer groups.
        `window`: the run's time windows (`window_start` made from its time column)."""
        if not group_cols:
            return 1
        step = max(1, len(self.tasks) // 16)
        keys, read = [], 0
        for task in range(0, len(self.tasks), step):
            if not self.tasks[task]:
                continue
            sample = self._group_keys(self.tasks[task][0], group_cols, window)
            if sample is None:
                continue
            keys.append(sample)
            read += sample.num_rows
            if read >= sample_rows:
                break
        if not read:
            return 0
        distinct = pa.concat_tables(keys).group_by(list(group_cols), use_threads=False).aggregate([]).num_rows
        return min(self.rows, -(-distinct * self.rows // read))

    def _group_keys(self, piece: Piece, group_cols: Sequence[str], window=None) -> Optional[pa.Table]:
        """The group columns of a piece's first batch: read from the file (no text), and its
        partition folders' values."""
        folders = dict(piece.folders)
        read = [window.column if window and c == WINDOW_START else c for c in group_cols]
        in_file = list(dict.fromkeys(c for c in read if c not in folders))
        batch = next(iter(_read(piece, in_file, self.batch_rows, f"{self.scan_id}-sample", self.source)), None)
        if batch is None:
            return None
        table = pa.Table.from_batches([batch])
        for name in dict.fromkeys(read):
            if name in folders:
                table = table.append_column(name, pa.repeat(pa.scalar(folders[name]), batch.num_rows))
        return (window.added(table) if window else table).select(list(group_cols))

    def batches(self, indices: Iterator[int]) -> Iterator[pa.RecordBatch]:
        """The batches of these tasks, with the scan's columns."""
        schema = self.schema
        for task in indices:
            for piece in self.tasks[task]:
                row = piece.first_row
                for batch in _read(piece, self.file_columns, self.batch_rows, self.scan_id, self.source):
                    yield self._shaped(batch, piece, schema, row)
                    row += batch.num_rows

    def _shaped(self, batch: pa.RecordBatch, piece: Piece, schema: pa.Schema, row: int) -> pa.RecordBatch:
        n, folders = batch.num_rows, dict(piece.folders)
        arrays = []
        references = self._references(batch)
        position = {INPUT_FILE: pa.repeat(self.file_uri(piece.path), n),
                    INPUT_ROW: pa.array(np.arange(row, row + n))} if self.position else {}
        for field in schema:
            if field.name in position:
                array = position[field.name]
            elif field.name == self.references:
                array = references
            elif field.name == self.reason:
                array = pa.nulls(n, field.type)
            elif field.name == self.segment_hash:
                array = pa.array(reference_hashes(references))
            elif field.name in folders:
                array = pa.repeat(pa.scalar(folders[field.name], field.type), n)
            else:
                array = batch.column(field.name)
            arrays.append(array.cast(field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def _references(self, batch: pa.RecordBatch) -> pa.Array:
        """The references as one list per row; string columns of one reference each (one such
        column too) become a list of all of them, null where a row has none (as Spark's
        `array(...)`); all null when no metric reads them and the files have none."""
        if not self.references_cols:
            return pa.nulls(batch.num_rows, pa.list_(pa.string()))
        first = batch.column(self.references_cols[0])
        if len(self.references_cols) == 1 and _is_list(first.type):
            # pyarrow keeps its large and fixed-size lists in the footer; Spark reads them all
            # as array<string>, and so do the kernels: one list type from here on.
            return first.cast(pa.list_(pa.string()))
        n, k = batch.num_rows, len(self.references_cols)
        flat = pa.concat_arrays([batch.column(c).cast(pa.string()) for c in self.references_cols])
        values = flat.take(pa.array((np.arange(k) * n + np.arange(n)[:, None]).ravel()))
        return pa.ListArray.from_arrays(pa.array(np.arange(0, n * k + 1, k, dtype=np.int32)), values)


def _compact(table: pa.Table) -> pa.Table:
    """A merged table in buffers of its own size, as it is pickled to the next merge: a group-by
    gives chunks that are slices of buffers made for all of its rows, and a slice pickles the
    whole of them (twice the bytes for a table of two chunks, of many groups)."""
    return pa.table([pa.chunked_array([pa.concat_arrays([c]) for c in column.chunks], column.type)
                     for column in table.columns], schema=table.schema)


def _merged_by_bucket(spark, task, merge, plan, buckets: int, counters):
    """Partial sums that carry replicate sums (groups x B x statistics each): split by a hash
    of the group key, each bucket merged by one task, the buckets brought to the driver one at a
    time. No process ever holds more than one task's partial sums and the result (a tree of
    merges would bring several whole ones together in the driver's JVM)."""
    def split(result):
        if isinstance(result, UnreadableFile):
            yield 0, result
            return
        bucket = pa.array(_buckets(result, plan.keys, buckets))
        for number in range(buckets):
            part = result.filter(pc.equal(bucket, number))
            if part.num_rows:
                yield number, part

    tables = runtime.run_tasks(spark, buckets, task, merge, counters, split)
    failed = [t for t in tables if isinstance(t, UnreadableFile)]
    return failed[0] if failed else pa.concat_tables(tables) if tables else None


def _buckets(table: pa.Table, keys, buckets: int) -> np.ndarray:
    """A bucket per row from its key's values, the same in every process (Python's own string
    hash is salted per process)."""
    import zlib

    rows = zip(*(table[k].to_pylist() for k in keys))
    return np.array([zlib.crc32(repr(row).encode()) % buckets for row in rows], np.int64)


def _is_list(dtype: pa.DataType) -> bool:
    return pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype)


class UnreadableFile(Exception):
    """A file whose footer was read but whose pages cannot be: (path, reason)."""


def _read(piece: Piece, columns: List[str], batch_rows: int, scan_id: str,
          source: Optional[remote.Remote] = None) -> Iterator[pa.RecordBatch]:
    try:
        if piece.skip == 0 and piece.rows is None:
            with _opened(piece.path, source) as parquet:
                yield from parquet.iter_batches(batch_rows, piece.row_groups, columns, use_threads=False)
        else:
            reader = _group_reader(piece, columns, batch_rows, scan_id, source)
            yield from reader.rows(piece.skip, piece.rows)
            if reader.position == reader.group_rows:  # read to its end: no task reads on from it
                _GroupReader.drop()
    except (OSError, pa.ArrowException) as exc:
        _GroupReader.drop()
        raise UnreadableFile(piece.path, remote.short(exc)) from None


def _opened(path: str, source: Optional[remote.Remote] = None) -> pq.ParquetFile:
    """A Parquet file read a page at a time: pyarrow's default reads a row group's column
    chunks whole first (a row group of a million rows held twice in memory, and slower). A
    remote file's reads are bigger (a request each). INT96 timestamps (Spark's own) are read
    as microseconds, as Spark reads them, not as pyarrow's nanoseconds."""
    if source is None:
        return pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20,
                              coerce_int96_timestamp_unit="us")
    return pq.ParquetFile(source.filesystem().open_input_file(path), pre_buffer=False,
                          buffer_size=REMOTE_BUFFER, coerce_int96_timestamp_unit="us")


def _group_reader(piece: Piece, columns: List[str], batch_rows: int, scan_id: str,
                  source: Optional[remote.Remote] = None) -> "_GroupReader":
    """This worker's reader of the piece's row group: the one its last task left open when it
    has not yet passed the piece's first row, else a new one."""
    key = (scan_id, piece.path, piece.row_groups[0], tuple(columns), batch_rows)
    kept = _GroupReader.kept
    if kept is not None and kept.key == key and kept.position <= piece.skip:
        return kept
    _GroupReader.drop()
    _GroupReader.kept = _GroupReader(key, piece.path, piece.row_groups[0], columns, batch_rows, source)
    return _GroupReader.kept


class _GroupReader:
    """One row group read batch by batch from its first row, kept open in the worker between
    tasks until read to its end. Parquet cannot start reading inside a row group: a piece that starts at its k-th row
    decodes the k rows before. A row group bigger than a task is cut into consecutive pieces
    of consecutive tasks, and a worker runs its tasks in order, so the worker that read one
    piece reads on to its next one of the group from where it stopped: each worker decodes a
    row group at most once, however many pieces it is cut into."""
    kept: Optional["_GroupReader"] = None   # the worker's one reader kept open

    def __init__(self, key: tuple, path: str, group: int, columns: List[str], batch_rows: int,
                 source: Optional[remote.Remote] = None):
        self.key = key
        self._file = _opened(path, source)
        self._batches = self._file.iter_batches(batch_rows, [group], columns, use_threads=False)
        self.group_rows = self._file.metadata.row_group(group).num_rows
        self.position = 0                   # the row of the group that comes next
        self._held: Optional[pa.RecordBatch] = None   # a batch's rows not yet given, from `position`

    def rows(self, skip: int, count: int) -> Iterator[pa.RecordBatch]:
        """`count` rows from the group's `skip`-th row on (not before `position`)."""
        end = skip + count
        while self.position < end:
            batch = self._held if self._held is not None else next(self._batches, None)
            self._held = None
            if batch is None:
                raise OSError(f"row group {self.key[2]} ended at row {self.position}, before row {end}")
            start = self.position
            first, stop = max(skip - start, 0), min(end - start, batch.num_rows)
            if stop < batch.num_rows:
                self._held = batch.slice(stop)
            self.position = start + stop
            if stop > first:
                yield batch.slice(first, stop - first)

    @classmethod
    def drop(cls) -> None:
        if cls.kept is not None:
            cls.kept._file.close()
            cls.kept = None


def spark_file_uri(path: str) -> str:
    """A local file as Spark's `_metadata.file_path` names it (`file:/dir/name.parquet`)."""
    return "file:" + quote(os.path.abspath(path), safe="/=:@&+$,;!*'()~")


def _local_path(uri: str) -> str:
    return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


def _typed(value: Optional[str], spark_type: T.DataType):
    """A folder's value as the Python value of Spark's inferred type."""
    return None if value is None else pa.array([value]).cast(to_arrow_type(spark_type))[0].as_py()


def _remote_input(table: io.InputTable):
    """(files, footers, sizes, base, source) of an input on an object store, listed and read
    by pyarrow (`io.remote_files`); else why Spark's scan reads it."""
    if table.read_by_spark:
        return "Spark types the remote input's partition folders (their values may read as numbers or times)"
    source = table.remote_files()
    return list(source.files), io.remote_footers(source), source.sizes, source.base, source


def _local_input(table: io.InputTable):
    """(files, footers, sizes, base, None) of a local input; else why Spark's scan reads it."""
    # Absolute: the Python workers' working folder is not the driver's (a cluster's executors,
    # a Spark Connect server).
    files = table.local_files()
    if table.read_by_spark and (sorted(files)
                                != sorted(_local_path(f) for f in table.frame.inputFiles())):
        return "Spark lists other files than the footers were read from"
    footers = {f: pq.read_metadata(f) for f in files}
    return files, footers, list(map(os.path.getsize, files)), table.base(), None


def arrow_scan(spark: SparkSession, table: io.InputTable, options, plan) -> Union[ArrowScan, str]:
    """An ArrowScan of the columns the partition function reads, over the input's files; else
    why Spark's scan reads them."""
    if options.scan == "spark":
        return "--scan spark"
    if options.references or options.segment_key:
        return "rows are joined or checked across rows in Spark SQL"
    if options.colocate_references == "always":
        return "rows sharing references are brought together first (--colocate-references always)"
    found = _remote_input(table) if remote.is_remote(options.input) else (
        _local_input(table) if io.is_local(options.input)
        else remote.spark_only(options.input))
    if isinstance(found, str):
        return found
    files, footers, sizes, base, source = found
    in_files = set.intersection(*(set(m.schema.to_arrow_schema().names) for m in footers.values()))
    added = {plan.references_col: T.ArrayType(T.StringType()), plan.reason_col: T.StringType(),
             plan.segment_hash_col: T.LongType()}
    position = bool(plan.segments) and plan.segments.key_cols == POSITION
    if position:
        added.update({INPUT_FILE: T.StringType(), INPUT_ROW: T.LongType()})
    fields = [T.StructField(c, added[c]) if c in added else table.schema[c] for c in plan.read_columns]
    read = [f for f in fields if f.name in in_files]
    folders = [f for f in fields if f.name not in added and f.name not in in_files]
    # Without a metric that reads them, references the files lack are none (null lists).
    references_cols = tuple(c for c in options.references_cols
                            if plan.needs_references or c in in_files)
    # A timestamp is read alike where only its instant counts: the time column of windows.
    time = (plan.window.column,) if plan.window else ()
    unlike = ([f.name for f in read if not (isinstance(f.dataType, _READ_ALIKE)
                                            or f.name in time and isinstance(f.dataType, _TIME_ALIKE))]
              + [f.name for f in folders if not isinstance(f.dataType, _FOLDER_ALIKE)]
              + [c for c in references_cols if c not in in_files])
    if unlike:
        return (f"column(s) {', '.join(unlike)} read by Spark's scan only "
                f"(a type pyarrow reads otherwise, or not in every file)")
    groups = _pieces(files, footers, folders, base, source and source.filesystem())
    rows = sum(g.rows for g in groups)
    split = user_split_bytes(spark)  # the user's split size is kept, as for Spark's scan
    size = sum(sizes)
    tasks = -(-size // split) if split else scoring_tasks(rows, runtime.parallelism(spark))
    batch_rows = int(spark.conf.get(BATCH_ROWS, "10000"))
    return ArrowScan(tasks=_cut(groups, tasks), rows=rows, bytes=size,
                     row_groups=sum(m.num_row_groups for m in footers.values()), scan_id=uuid.uuid4().hex,
                     spark_schema=T.StructType(fields),
                     file_columns=tuple(dict.fromkeys([f.name for f in read] + list(references_cols))),
                     references_cols=references_cols, references=plan.references_col,
                     reason=plan.reason_col, segment_hash=plan.segment_hash_col,
                     batch_rows=batch_rows if batch_rows > 0 else 10_000, position=position,
                     source=source)


def _pieces(files, footers, folders, base, filesystem=None) -> List[Piece]:
    """Every row group of every file as a piece, with its partition folders' values typed as
    Spark types them; empty row groups left out."""
    values = io.folder_values(files, base, [f.name for f in folders], filesystem)
    pieces = []
    for f in files:
        typed = tuple((d.name, _typed(values[f].get(d.name), d.dataType)) for d in folders)
        first = 0
        for g in range(footers[f].num_row_groups):
            rows = footers[f].row_group(g).num_rows
            if rows:
                pieces.append(Piece(f, (g,), typed, first, 0, rows))
            first += rows
    return pieces


def _cut(groups: List[Piece], tasks: int) -> Tuple[Tuple[Piece, ...], ...]:
    """The row groups' rows, in order, cut into at most `tasks` tasks of consecutive rows, as
    equal as rows go (a row group bigger than a task is cut into pieces, one file's whole row
    groups in a task are one piece)."""
    total = sum(g.rows for g in groups)
    bounds = [t * total // tasks for t in range(tasks + 1)]
    cut: List[List[Piece]] = [[] for _ in range(tasks)]
    start = 0
    for group in groups:
        at, end = start, start + group.rows
        while at < end:
            task = bisect.bisect_right(bounds, at) - 1
            stop = min(end, bounds[task + 1])
            skip = at - start
            whole = stop - at == group.rows
            _add(cut[task], replace(group, first_row=group.first_row + skip, skip=skip,
                                    rows=None if whole else stop - at))
            at = stop
        start = end
    return tuple(tuple(pieces) for pieces in cut if pieces)


def _add(pieces: List[Piece], piece: Piece) -> None:
    """A piece appended, joined to the one before when both are whole row groups of one file,
    one after the other (read by one reader)."""
    last = pieces[-1] if pieces else None
    if (last and last.rows is None and piece.rows is None and last.path == piece.path
            and last.row_groups[-1] + 1 == piece.row_groups[0]):
        pieces[-1] = replace(last, row_groups=last.row_groups + piece.row_groups)
    else:
        pieces.append(piece)
