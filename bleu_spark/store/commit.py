"""An output opened for a run: its pending record, its data files written in place under names of
its own, its top-level files staged, then the commit entry, then the cleanup (`recovery.finish`);
or everything of it removed (`abort`)."""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import uuid
from typing import Callable, Dict, List, Optional, Sequence

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..errors import OutputError
from .filesystems import filesystem, is_local, settings
from .layout import (FORMAT_VERSION, MARKER, OUTPUT_FORMAT, RUN_FILE, RUNS, SUCCESS, TABLES,
                     json_bytes, read_marker)
from .manifest import (COMMITS, ENTRY_FORMAT, PENDING, STAGED, UNLINKED, _step, data_prefix,
                       entries, listing, next_stamp, pending_name, staged_name, write_entry)
from .owner import _locked, owner_record
from .partitions import (check_partition_columns, check_partition_names, partition_path,
                         partition_values, rows_of)
from .recovery import _prune, finish, recover
from .tasks import TableFiles


# Tables of the output, not of its groups: never cut into partitions (an input file's rows may
# fall into several).
UNPARTITIONED = ("input_files",)


class _Output:
    """What both kinds of output share: writing a run's files, committing them, undoing them."""

    def __init__(self, uri: str, partition_by: Sequence[str], run_id: str,
                 frames: Optional[Callable] = None):
        check_partition_names(partition_by)
        self.frames = frames            # how the tasks write a Spark DataFrame (the Spark layer's)
        self.by_tasks: set = set()      # tables the tasks were told to write (`task_files`)
        self.uri = uri.rstrip("/") or "/"
        self.fs, self.path = filesystem(self.uri)
        if self.path in ("/", ""):
            raise OutputError("output cannot be the root folder; name a folder for the result")
        self.partition_by = tuple(partition_by)
        self.run_id = run_id
        self.partition_types: Dict[str, str] = {}
        self.files: list = []           # top-level files staged, copied in at commit
        self._numbers = itertools.count()
        self._created = False
        self.committed = False
        # An incremental run (`store/ledger.py`): the committed files it keeps in tables it adds
        # to (relative to DIR), and the last entry it read them from, checked again at commit.
        self.carried: Dict[str, List[str]] = {}
        self.based_on: Optional[str] = None  # None: not incremental

    # --- where things go ----------------------------------------------------------------------

    def table_uri(self, table: str) -> str:
        """Where the tasks write a table's files (segments, rejected rows): the output's own
        spelling, or its absolute path on a local disk (a task's folder is not this process's)."""
        return f"file://{self.path}/{table}" if is_local(self.fs) else f"{self.uri}/{table}"

    @property
    def fs_settings(self) -> dict:
        """What the tasks need to open the same file system as the driver."""
        return settings()

    def task_files(self, table: str) -> TableFiles:
        """Where and how the tasks write a table's files themselves."""
        self.by_tasks.add(table)
        return TableFiles(self.table_uri(table), self.run_id, self.partition_by,
                          tuple(sorted(self.fs_settings.items())))

    def written_by_tasks(self, table: str) -> List[str]:
        """The files of `table` this run wrote (full paths), by the tasks or this process."""
        return [f"{self.path}/{f}" for f in self.run_files().get(table, [])]

    def data_file(self, table: str, partition: str = "", suffix: Optional[str] = None) -> str:
        name = f"{data_prefix(self.run_id)}{suffix or next(self._numbers)}.parquet"
        return "/".join(p for p in (self.path, table, partition, name) if p)

    # --- writing ------------------------------------------------------------------------------

    def write_file(self, name: str, value) -> None:
        """A top-level file: bytes or text as they are, any other value as JSON."""
        if isinstance(value, str):
            value = value.encode()
        if isinstance(value, (bytes, bytearray)):
            self.write_bytes(name, bytes(value))
        else:
            self.write_json(name, value)

    def write_json(self, name: str, value) -> None:
        self.write_bytes(name, json_bytes(value))

    def write_bytes(self, name: str, data: bytes) -> None:
        target = f"{self.path}/{staged_name(self.run_id, name)}"
        self._parent(target)
        with self.fs.open_output_stream(target) as out:
            out.write(data)
        self.files.append(name)

    def write_table(self, name: str, table) -> None:
        """`name/part-<run>-<n>.parquet`, or one file per partition under `name/col=value/`; a
        Spark DataFrame (or a function making one) written by the tasks (`frames`), each its own
        files; a table the tasks already wrote this run (the segments, as they scored) is not
        written again."""
        if not isinstance(table, pa.Table):
            if name not in self.by_tasks:
                self.frames(table() if callable(table) else table, self.task_files(name))
            return
        if not self.partition_by or name in UNPARTITIONED:
            self._write_file(name, "", table)
            return
        check_partition_columns(table.schema, self.partition_by)
        self.partition_types = {c: str(table.schema.field(c).type) for c in self.partition_by}
        for values in partition_values(table, self.partition_by):
            part = table.filter(rows_of(table, self.partition_by, values))
            self._write_file(name, partition_path(self.partition_by, values),
                             part.drop_columns(list(self.partition_by)))

    def _write_file(self, table_name: str, partition: str, table: pa.Table) -> None:
        target = self.data_file(table_name, partition)
        try:
            self._parent(target)
            pq.write_table(table, target, filesystem=self.fs)
        except OSError as exc:  # e.g. a partition value too long for a folder name
            where = f"{table_name}/{partition}".rstrip("/")
            reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
            raise OutputError(f"cannot write {where[:120]}{'...' if len(where) > 120 else ''} "
                              f"in {self.uri}: {reason}") from None

    def _parent(self, target: str) -> None:
        if is_local(self.fs):  # object stores have no folders to make
            self.fs.create_dir(os.path.dirname(target), recursive=True)

    def run_files(self) -> Dict[str, List[str]]:
        """This run's data files per table, relative to DIR, wherever they were written (by this
        process or by the tasks)."""
        found: Dict[str, List[str]] = {}
        prefix = data_prefix(self.run_id)
        for table in TABLES:
            infos = listing(self.fs, f"{self.path}/{table}", recursive=True)
            files = sorted(i.path[len(self.path) + 1:] for i in infos
                           if i.type == pafs.FileType.File and i.base_name.startswith(prefix))
            if files:
                found[table] = files
        return found

    def staged_partitions(self) -> list:
        """Every partition folder path (`col=v/col2=w`) this run wrote for any table."""
        return sorted({_partition_of(f) for files in self.run_files().values() for f in files})

    def marker(self) -> dict:
        return {"format": OUTPUT_FORMAT, "format_version": FORMAT_VERSION,
                "partition_by": list(self.partition_by), "partition_types": self.partition_types}

    # --- the run's life -----------------------------------------------------------------------

    def check(self) -> None:
        raise NotImplementedError

    def open(self):
        """Checked, and this run's pending record written before any of its files. Stopped on
        the way (a failure, or a stop signal as the pending record lands), it undoes what it
        made itself: its caller holds no sink yet, so no one else would."""
        recover(self.uri)
        self.check()
        self._created = self.fs.get_file_info(self.path).type == pafs.FileType.NotFound
        try:
            self._write_pending()
        except BaseException as exc:
            with contextlib.suppress(OSError):  # what failed or stopped the run is what is said
                self.abort()
            if isinstance(exc, OSError):
                raise OutputError(f"cannot write output directory {self.uri}: {exc}") from None
            raise
        return self

    def _write_pending(self) -> None:
        self._parent(f"{self.path}/{pending_name(self.run_id)}")
        with self.fs.open_output_stream(f"{self.path}/{pending_name(self.run_id)}") as out:
            out.write(json_bytes(owner_record()))
        with _locked(self.fs, self.path):
            if read_marker(self.fs, self.path) is None:
                self._write_marker()

    def _write_marker(self) -> None:
        _step("write marker")
        with self.fs.open_output_stream(f"{self.path}/{MARKER}") as out:
            out.write(json_bytes(self.marker()))

    def commit(self, run: dict, prepare=None) -> None:
        """Under the lock (local disks): the checks, `prepare(self)` (what must read DIR as it will
        be, e.g. the report over all partitions: a failure there leaves DIR untouched), the
        top-level files, then the entry; then the folder cleaned up to the log."""
        try:
            with _locked(self.fs, self.path):
                self.check()
                self._check_based_on()
                if prepare is not None:
                    prepare(self)
                entry = self._entry(run)
                self._write_marker()
                write_entry(self.fs, self.path, entry)
                self.committed = True
                with contextlib.suppress(OSError):  # committed: the next run or reader redoes it
                    finish(self.fs, self.path, me=self.run_id)
        except OSError as exc:
            raise OutputError(f"cannot commit output to {self.uri}: {exc}") from None

    def carry(self, table: str, files: Sequence[str]) -> None:
        """Committed files of `table` (relative to DIR) kept beside this run's: an incremental
        run adds to the rows of earlier runs there rather than replace them."""
        self.carried[table] = list(files)

    def last_entry(self) -> str:
        """The run id of DIR's last commit entry; '' before its first."""
        log = entries(self.fs, self.path)
        return log[-1]["run_id"] if log else ""

    def _check_based_on(self) -> None:
        """An incremental run read DIR's files as of one entry: another run's commit since then
        may have measured the same input files, so this run's would count them twice."""
        if self.based_on is not None and self.last_entry() != self.based_on:
            raise OutputError(f"another run committed into {self.uri} while this incremental run "
                              f"measured: nothing of this run was committed; run it again")

    def _entry(self, run: dict) -> dict:
        files = self.run_files()
        # Kept only in partitions this run replaces: a partition it did not touch keeps its entry.
        written = {_partition_of(f) for v in files.values() for f in v}
        for table, kept in self.carried.items():
            kept = [f for f in kept if not self.partition_by or _partition_of(f) in written]
            files[table] = sorted({*files.get(table, []), *kept})
        partitions = [""] if not self.partition_by else sorted(
            {_partition_of(f) for v in files.values() for f in v})
        if self.partition_by:
            run["partitions_written"] = partitions  # the caller's record says so too
            self.write_json(f"{RUNS}/{self.run_id}.json", run)
        self.write_json(RUN_FILE, run)
        self.write_bytes(SUCCESS, b"")
        return {"format": ENTRY_FORMAT, "run_id": self.run_id,
                "stamp": next_stamp(entries(self.fs, self.path)), "whole": not self.partition_by,
                "partitions": partitions, "tables": files, "files": list(dict.fromkeys(self.files)),
                "dropped": [n for n in (*WHOLE_FOLDER_FILES, *ROW_FILES)
                            if self.partition_by and n not in self.files],
                "owner": owner_record()}

    def abort(self) -> None:
        """Everything of this run removed, unless its entry is written: then it is finished."""
        if self.committed or self._entry_written():
            with contextlib.suppress(OSError):
                finish(self.fs, self.path, me=self.run_id)
            return
        removed = []
        with contextlib.suppress(OSError):
            for files in self.run_files().values():
                for relative in files:
                    self.fs.delete_file(f"{self.path}/{relative}")
                    removed.append(f"{self.path}/{relative}")
            self.fs.delete_dir(f"{self.path}/{staged_name(self.run_id)}")
        with contextlib.suppress(OSError):
            self.fs.delete_file(f"{self.path}/{pending_name(self.run_id)}")
        if is_local(self.fs):
            _prune(self.path, removed)
            self._remove_if_made()

    def _entry_written(self) -> bool:
        return any(i.base_name.startswith("c-") and i.base_name.endswith(f"-{self.run_id}.json")
                   for i in listing(self.fs, f"{self.path}/{COMMITS}"))

    def _remove_if_made(self) -> None:
        """DIR, when this run made it and nothing but its marker and empty folders are left."""
        if not self._created:
            return
        with contextlib.suppress(OSError):
            for folder, _, _ in sorted(os.walk(self.path), key=lambda w: -w[0].count("/")):
                if folder != self.path:
                    os.rmdir(folder)
            left = set(os.listdir(self.path))
            if left <= {MARKER, ".lock"}:
                for name in left:
                    os.unlink(f"{self.path}/{name}")
                os.rmdir(self.path)


class WholeOutput(_Output):
    """DIR's tables and files replaced whole by the run's."""

    def __init__(self, uri: str, run_id: str, frames: Optional[Callable] = None):
        super().__init__(uri, (), run_id, frames)

    def check(self) -> None:
        _check_replaceable(self.fs, self.path, self.uri, partitioned=False)


# Top-level files that are tables in JSON form, a row per group with its partition values: a
# partitioned folder's holds every partition's rows, each from the run that wrote it last; a
# run that leaves it out (too many rows: `spark/apart.py`) removes it, rather than leave rows
# its partitions replaced.
ROW_FILES = ("scores.json",)
# Top-level files drawn over every partition the folder holds: a partitioned run that does not
# draw one again removes the earlier one (it would not cover this run's partitions).
WHOLE_FOLDER_FILES = ("report.html",)


class PartitionedOutput(_Output):
    """DIR kept; the partitions a run wrote replaced in every table (and row file)."""

    def write_json(self, name: str, value) -> None:
        if name in ROW_FILES and isinstance(value, list):
            value = self._with_kept_rows(name, value)
        super().write_json(name, value)

    def _with_kept_rows(self, name: str, rows: list) -> list:
        """The committed file's rows of the partitions this run does not replace, and this run's,
        in order of partition (each partition's rows in their run's order). Opening the output
        finished any commit left half done, so DIR's file is the committed one."""
        try:
            with self.fs.open_input_stream(f"{self.path}/{name}") as stream:
                held = json.loads(stream.read())
        except (OSError, ValueError):  # none yet
            held = []
        where = lambda row: partition_path(self.partition_by, [row.get(c) for c in self.partition_by])
        replaced = set(self.staged_partitions())
        kept = [r for r in held if isinstance(r, dict)] if isinstance(held, list) else []
        return sorted([r for r in kept if where(r) not in replaced] + rows, key=where)

    def check(self) -> None:
        marker = _check_replaceable(self.fs, self.path, self.uri, partitioned=True)
        if marker is not None and marker.get("partition_by") != list(self.partition_by):
            raise OutputError(f"output {self.uri} is partitioned by "
                              f"{','.join(marker.get('partition_by') or []) or 'nothing'}, not by "
                              f"{','.join(self.partition_by)}; write to another folder")


def _partition_of(relative: str) -> str:
    """`col=v/col2=w` of a table's file `table/col=v/col2=w/part-...` ('' outside partitions)."""
    return os.path.dirname(relative.split("/", 1)[1])


def _check_replaceable(fs, path: str, uri: str, partitioned: bool) -> Optional[dict]:
    """Only an empty folder or an earlier result of this job is ever written into."""
    try:
        info = fs.get_file_info(path)
    except OSError as exc:  # an unknown host, a refused connection, no credentials
        raise OutputError(f"cannot reach output {uri}: {str(exc).splitlines()[0]}") from None
    if info.type == pafs.FileType.NotFound:
        return None
    if info.type != pafs.FileType.Directory:
        raise OutputError(f"output {uri} exists and is not a directory")
    entries_ = [e for e in fs.get_file_info(pafs.FileSelector(path))
                if not e.base_name.startswith((".lock", COMMITS))]
    if not entries_ and _only_leftovers(fs, f"{path}/{COMMITS}"):
        return None
    marker = read_marker(fs, path)
    if marker is None:
        raise OutputError(f"output directory {uri} is not empty and holds no earlier bleu-spark "
                          f"result ({MARKER}); refusing to replace it")
    if not partitioned and marker.get("partition_by"):
        raise OutputError(f"output {uri} is partitioned by {','.join(marker['partition_by'])}; "
                          f"pass --partition-by {','.join(marker['partition_by'])} or write to "
                          f"another folder")
    return marker


def _only_leftovers(fs, commits: str) -> bool:
    """`_commits/` holds nothing but what a first run that died before its marker leaves (its
    pending record, staged files, an unlinked entry): anything else there is not this job's."""
    return all(PENDING.fullmatch(i.base_name) or STAGED.fullmatch(i.base_name)
               or UNLINKED.fullmatch(i.base_name) for i in listing(fs, commits))


def output_for(uri: str, partition_by: Sequence[str] = (), run_id: Optional[str] = None,
               frames: Optional[Callable] = None) -> _Output:
    """The folder sink of `uri`, not opened yet."""
    run_id = run_id or new_run_id()
    if partition_by:
        return PartitionedOutput(uri, partition_by, run_id, frames)
    return WholeOutput(uri, run_id, frames)


def open_output(uri: str, partition_by: Sequence[str] = (), run_id: Optional[str] = None):
    return output_for(uri, partition_by, run_id).open()


def check_output(uri: str, partition_by: Sequence[str] = ()) -> None:
    """The checks `open_output` makes, without creating anything (preflight)."""
    output = PartitionedOutput(uri, partition_by, "check") if partition_by else WholeOutput(uri, "check")
    output.check()


def new_run_id() -> str:
    import time

    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]
