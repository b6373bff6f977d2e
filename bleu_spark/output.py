"""The output folder: written in a staging folder, then swapped in whole, or partition by partition.

- Whole (no `--partition-by`): everything goes into `.DIR.staging-*` beside DIR, which is swapped
  in as DIR when every file is written: a reader sees the previous result or the new one.
- Partitioned (`--partition-by run_date`): DIR stays; its tables (`stats/`, `scores/`,
  `dashboard/`, `rejected/`) are Hive-style partitioned (`scores/run_date=2026-01-03/`). A run
  stages its partitions inside DIR and swaps in exactly the partitions it produced, under a lock
  (local file systems), so runs writing other partitions are untouched and two runs writing the
  same partition leave one of them whole, never a mix.

Both commit the same way: everything staged, then a journal (`_commit.json` in the staging
folder, written whole or not at all) of every move, then the moves, each skipped once done. A
commit killed at any step is finished by `recover`, which every run (`open`) and reader
(`statstable.read`, `spark.aggregate.read_stats`) calls first: each partition ends whole, in
every table, and DIR is never left missing.

Every result holds `_bleu_spark.json` (what wrote it, and how it is partitioned): only such a
folder, or an empty one, is ever replaced.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import threading
import urllib.parse
import uuid
from typing import Dict, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .errors import ForeignFileError, OutputError, UsageError

MARKER = "_bleu_spark.json"
SUCCESS = "_SUCCESS"
RUN_FILE = "run.json"
OWNER = "_staging_owner.json"  # in a staging folder: the host and process writing it
# In a staging folder: every step of its commit, written (atomically) before the first move. A
# staging folder with one is a commit begun: finished by whoever finds it dead, never deleted.
JOURNAL = "_commit.json"
STALE_AFTER_S = 24 * 3600      # a staging folder this old is a leftover, whoever owned it
RUNS = "runs"
TABLES = ("stats", "scores", "dashboard", "paired", "rejected", "segments")
# A run id as `new_run_id` makes it (tests name theirs too): never a '/' or a '.'.
RUN_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]*")
OUTPUT_FORMAT = "bleu-spark output"
# Partition values become folder names: types whose text form is unambiguous.
PARTITION_TYPES = {"string": pa.string(), "large_string": pa.string(), "int8": pa.int8(),
                   "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
                   "date32[day]": pa.date32(), "bool": pa.bool_()}
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# The characters Spark escapes in partition folder names, so both name a value alike.
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(0x20)}


# Tests: called with a step's name before every file system step of a commit or its recovery
# (a test ends the process there, to prove that a commit killed at any step is recovered).
commit_hook = None


def _step(what: str) -> None:
    if commit_hook is not None:
        commit_hook(what)


def filesystem(uri: str):
    if "://" in uri and not uri.startswith("file://"):
        try:
            return pafs.FileSystem.from_uri(uri)
        except (pa.ArrowInvalid, OSError) as exc:
            raise OutputError(f"output {uri}: no file system for its scheme here "
                              f"({str(exc).splitlines()[0]})") from None
    path = uri[len("file://"):] if uri.startswith("file://") else uri
    return pafs.LocalFileSystem(), os.path.abspath(path)


def partition_folder(column: str, value) -> str:
    """`col=value` as Spark and Hive name it (null: `__HIVE_DEFAULT_PARTITION__`)."""
    if value is None:
        return f"{column}={NULL_PARTITION}"
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return f"{column}=" + "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def partition_value(folder: str):
    """The value a folder `col=...` names, as `partition_folder` wrote it (`col=` is '')."""
    text = folder.split("=", 1)[1]
    return None if text == NULL_PARTITION else urllib.parse.unquote(text)


def partition_path(partition_by: Sequence[str], values: Sequence) -> str:
    return "/".join(partition_folder(c, v) for c, v in zip(partition_by, values))


def check_partition_names(partition_by: Sequence[str]) -> None:
    """A partition column is a folder key (`col=value`): a name readers would split, decode or
    skip differently (`day=of` read back as nulls; `_x`, `.x` are hidden files) is refused."""
    for column in partition_by:
        bad = (not column or column[0] in "._" or any(c in "=/\\%" for c in column)
               or any(ord(c) < 0x20 or ord(c) == 0x7f for c in column))
        if bad:
            raise UsageError(f"--partition-by column {column!r} cannot name a Hive partition "
                             f"folder (no '=', '/', '\\', '%', control characters, leading '.' or "
                             f"'_', or empty name); rename the column")


def check_partition_columns(schema: pa.Schema, partition_by: Sequence[str]) -> None:
    for column in partition_by:
        kind = str(schema.field(column).type)
        if kind not in PARTITION_TYPES:
            raise UsageError(f"--partition-by column {column} is {kind}; partition by a string, "
                             f"integer, date or boolean column")


def _finite(value):
    """JSON has no NaN or infinity: a non-finite float (a double group key, say) is written as the
    string "NaN", "Infinity" or "-Infinity", so the file stays JSON and null keeps its meaning."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def json_bytes(value) -> bytes:
    """What every JSON file of a result holds: strict JSON (no bare NaN), dates as text."""
    return json.dumps(_finite(value), indent=2, ensure_ascii=False, default=str,
                      allow_nan=False).encode() + b"\n"


def owner_record() -> dict:
    import socket
    import time

    return {"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()}


def _process_gone(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError, TypeError, OverflowError):
        return False  # exists under another user, or not a pid we can judge
    return False


def _is_stale(fs, path: str, now: Optional[float] = None) -> bool:
    import time

    now = time.time() if now is None else now
    try:
        with fs.open_input_stream(f"{path}/{OWNER}") as stream:
            owner = json.loads(stream.read())
        float(owner["started"])
    except (OSError, ValueError, KeyError, TypeError):
        # No record (yet: a run writes it just after creating the folder): judge by age only.
        info = fs.get_file_info(path)
        owner = {"started": info.mtime.timestamp() if info.mtime is not None else now}
    return _owner_gone(owner, now)


def _owner_gone(owner: dict, now: Optional[float] = None) -> bool:
    """The run an owner record names has ended (its process on this host is gone), or is so old
    that it must have (whatever host it ran on)."""
    import socket
    import time

    now = time.time() if now is None else now
    try:
        started = float(owner["started"])
    except (KeyError, TypeError, ValueError):
        started = now
    if now - started > STALE_AFTER_S:
        return True
    return owner.get("host") == socket.gethostname() and _process_gone(owner.get("pid"))


def read_marker(fs, path: str) -> Optional[dict]:
    try:
        with fs.open_input_stream(f"{path}/{MARKER}") as stream:
            marker = json.loads(stream.read())
    except (OSError, ValueError):
        return None
    if not (isinstance(marker, dict) and marker.get("format") == OUTPUT_FORMAT):
        return None
    return _checked_marker(f"{path}/{MARKER}", marker)


def _checked_marker(file: str, marker: dict) -> dict:
    """A marker's partition columns name folders every reader and writer opens: they must be
    names this job writes (`check_partition_names`), their types a mapping of names."""
    columns, types = marker.get("partition_by") or [], marker.get("partition_types") or {}
    if not (isinstance(columns, list) and all(isinstance(c, str) for c in columns)
            and isinstance(types, dict) and all(isinstance(t, str) for t in types.values())):
        raise _foreign(file, "has partition_by or partition_types of another shape",
                       "restore the file or remove the folder")
    try:
        check_partition_names(columns)
    except UsageError:
        raise _foreign(file, f"names partition columns {columns!r} that cannot be folder keys",
                       "restore the file or remove the folder") from None
    return marker


def _foreign(file: str, what: str, todo: str) -> ForeignFileError:
    return ForeignFileError(f"{file} {what}: this job never writes it so, and moved or removed "
                            f"nothing on its word; {todo}")


class _Output:
    """What both kinds of output share: a staging folder, and writing files into it."""

    def __init__(self, uri: str, partition_by: Sequence[str], run_id: str, staging: str):
        self.uri = uri.rstrip("/") or "/"
        self.fs, self.path = filesystem(self.uri)
        self.partition_by = tuple(partition_by)
        self.run_id = run_id
        self.staging = staging
        self.partition_types: Dict[str, str] = {}
        self.files: list = []           # top-level files written, moved in at commit

    @property
    def staging_uri(self) -> str:
        """Where Spark writes (`rejected/`): a URI Spark's file systems understand."""
        if "://" in self.uri and not self.uri.startswith("file://"):
            scheme = self.uri.split("://", 1)[0]
            return f"{scheme}://{self.staging}" if not self.staging.startswith(f"{scheme}:") else self.staging
        return "file://" + self.staging

    def write_json(self, name: str, value) -> None:
        self.write_bytes(name, json_bytes(value))

    def write_bytes(self, name: str, data: bytes) -> None:
        if "/" in name:
            self.fs.create_dir(os.path.dirname(f"{self.staging}/{name}"), recursive=True)
        with self.fs.open_output_stream(f"{self.staging}/{name}") as out:
            out.write(data)
        self.files.append(name)

    def write_table(self, name: str, table: pa.Table) -> None:
        """`name/part-<run>.parquet`, or one file per partition under `name/col=value/`."""
        if not self.partition_by:
            self._write_file(f"{self.staging}/{name}", table)
            return
        check_partition_columns(table.schema, self.partition_by)
        self.partition_types = {c: str(table.schema.field(c).type) for c in self.partition_by}
        for values in partition_values(table, self.partition_by):
            part = table.filter(rows_of(table, self.partition_by, values))
            self._write_file(f"{self.staging}/{name}/{partition_path(self.partition_by, values)}",
                             part.drop_columns(list(self.partition_by)))

    def rename_partition_values(self, name: str, columns: Sequence[str], stand_in: str,
                                value: str) -> None:
        """Staged folders `col=<stand_in>` of table `name` renamed `col=<value>` (deepest first,
        so the paths of the ones still to rename do not change)."""
        names = {partition_folder(c, stand_in): partition_folder(c, value) for c in columns}
        infos = self.fs.get_file_info(pafs.FileSelector(f"{self.staging}/{name}", recursive=True,
                                                        allow_not_found=True))
        found = [i.path for i in infos if i.type == pafs.FileType.Directory and i.base_name in names]
        for path in sorted(found, key=lambda p: -p.count("/")):
            self.fs.move(path, f"{os.path.dirname(path)}/{names[os.path.basename(path)]}")

    def _write_file(self, folder: str, table: pa.Table) -> None:
        try:
            self.fs.create_dir(folder, recursive=True)
            pq.write_table(table, f"{folder}/part-{self.run_id}.parquet", filesystem=self.fs)
        except OSError as exc:  # e.g. a partition value too long for a folder name
            where = folder[len(self.staging) + 1:]
            reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
            raise OutputError(f"cannot write {where[:120]}{'...' if len(where) > 120 else ''} "
                              f"in {self.uri}: {reason}") from None

    def marker(self) -> dict:
        return {"format": OUTPUT_FORMAT, "format_version": 1, "partition_by": list(self.partition_by),
                "partition_types": self.partition_types}

    def check(self) -> None:
        raise NotImplementedError

    def open(self):
        """Checked, with its staging folder made: ready to write into. A commit a killed run
        left half done is finished first, so nothing is checked or written over a mix."""
        recover(self.uri)
        self.check()
        self._create_staging()
        return self

    def abort(self) -> None:
        journal = _read_journal(self.fs, self.staging)
        if journal is None:
            with contextlib.suppress(OSError):
                self.fs.delete_dir(self.staging)
            return
        # A commit begun, then cut short in this process (a stop signal): never undone halfway,
        # finished here if it can be, else by the next run or reader.
        with contextlib.suppress(OSError):
            self._finish(journal)

    def _finish(self, journal: dict) -> None:
        raise NotImplementedError

    def _create_staging(self) -> None:
        """The staging folder, with a record of its owner (host, process, start), so a later run
        can tell a live run's staging from one left by a killed run."""
        self.remove_stale_staging()
        try:
            self.fs.create_dir(self.staging, recursive=True)
            with self.fs.open_output_stream(f"{self.staging}/{OWNER}") as out:
                out.write(json_bytes(owner_record()))
        except OSError as exc:
            raise OutputError(f"cannot write output directory {self.uri}: {exc}") from None

    def _staging_folders(self) -> list:
        """Paths of every staging folder of this output (this run's among them)."""
        folder, prefix = self._staging_place()
        try:
            entries = self.fs.get_file_info(pafs.FileSelector(folder))
        except OSError:
            return []
        return [_not_a_link(self.fs, e.path) for e in entries
                if e.type == pafs.FileType.Directory and e.base_name.startswith(prefix)]

    def _staging_place(self):
        """The folder staging folders of this output are in, and the prefix of their names."""
        prefix = os.path.basename(self.staging)[:-len(self.run_id)]
        assert prefix.endswith("staging-"), self.staging
        return os.path.dirname(self.staging), prefix

    def remove_stale_staging(self, now: Optional[float] = None) -> list:
        """Staging folders of this output left by runs that are gone: their process on this host
        has ended, or they are older than STALE_AFTER_S. Another live run's is never touched."""
        removed = []
        for path in self._staging_folders():
            # One with a journal is a commit begun: `recover` finishes it, under the lock.
            if path != self.staging and _is_stale(self.fs, path, now) \
                    and _read_journal(self.fs, path) is None:
                with contextlib.suppress(OSError):
                    self.fs.delete_dir(path)
                    removed.append(path)
        return removed


def partition_values(table: pa.Table, columns: Sequence[str]) -> list:
    rows = table.select(list(columns)).group_by(list(columns), use_threads=False).aggregate([])
    return [tuple(r[c] for c in columns) for r in rows.to_pylist()]


def rows_of(table: pa.Table, columns: Sequence[str], values: Sequence) -> pa.Array:
    mask = pa.array([True] * table.num_rows)
    for column, value in zip(columns, values):
        match = pc.is_null(table[column]) if value is None else pc.equal(table[column], value)
        mask = pc.and_(mask, pc.fill_null(match, False))
    return mask


def rows_outside(table: pa.Table, partition_by: Sequence[str], partitions: Sequence[str]) -> pa.Table:
    """The rows of `table` whose partition folder (`col=v/...`) is not one of `partitions`."""
    dropped = set(partitions)
    kept = [table.filter(rows_of(table, partition_by, values))
            for values in partition_values(table, partition_by)
            if partition_path(partition_by, values) not in dropped]
    return pa.concat_tables(kept) if kept else table.slice(0, 0)


class WholeOutput(_Output):
    """DIR replaced whole by a staging folder beside it."""

    def __init__(self, uri: str, run_id: str):
        fs, path = filesystem(uri.rstrip("/") or "/")
        if path in ("/", ""):
            raise OutputError("output cannot be the root folder; name a folder for the result")
        parent, name = os.path.split(path)
        super().__init__(uri, (), run_id, f"{parent}/.{name}.staging-{run_id}")
        self.retired = f"{parent}/.{name}.old-{run_id}"

    def check(self) -> None:
        _check_replaceable(self.fs, self.path, self.uri, partitioned=False)

    def commit(self, run: dict, prepare=None) -> None:
        """DIR -> .DIR.old-<run>, staging -> DIR, after a journal that lets a later run or reader
        finish the swap if this process dies between the moves (DIR is never left missing)."""
        if prepare is not None:
            prepare(self)
        self.write_json(RUN_FILE, run)
        self.write_json(MARKER, self.marker())
        self.write_bytes(SUCCESS, b"")
        recover(self.uri)  # a run that died in its swap since this one opened: finished first
        self.check()  # again: a file saved into DIR while the run worked is never lost
        journal = {"run_id": self.run_id, "owner": owner_record(), "retired": self.retired}
        try:
            _write_journal(self.fs, self.staging, journal)
        except OSError as exc:
            raise OutputError(f"cannot commit output to {self.uri}: {exc}") from None
        try:
            _replay_whole(self.fs, self.path, self.staging, self.retired)
        except OSError as exc:
            self._undo()
            raise OutputError(f"cannot commit output to {self.uri}: {exc}") from None

    def _finish(self, journal: dict) -> None:
        _replay_whole(self.fs, self.path, self.staging, _retired(self.path, journal, self.staging))

    def _undo(self) -> None:
        """A move that failed in this live process: the previous DIR put back, the journal
        dropped, so `abort` removes the staging folder."""
        with contextlib.suppress(OSError):
            if not _exists(self.fs, self.path) and _exists(self.fs, self.retired):
                self.fs.move(self.retired, self.path)
            self.fs.delete_file(f"{self.staging}/{JOURNAL}")


class PartitionedOutput(_Output):
    """DIR kept; the partitions a run produced swapped in, one at a time, under a lock."""

    def __init__(self, uri: str, partition_by: Sequence[str], run_id: str):
        check_partition_names(partition_by)
        fs, path = filesystem(uri.rstrip("/") or "/")
        super().__init__(uri, partition_by, run_id, f"{path}/.staging-{run_id}")

    def check(self) -> None:
        marker = _check_replaceable(self.fs, self.path, self.uri, partitioned=True)
        if marker is not None and marker.get("partition_by") != list(self.partition_by):
            raise OutputError(f"output {self.uri} is partitioned by "
                              f"{','.join(marker.get('partition_by') or []) or 'nothing'}, not by "
                              f"{','.join(self.partition_by)}; write to another folder")

    def staged_partitions(self) -> list:
        """Every partition folder path (`col=v/col2=w`) staged for any table."""
        found = set()
        depth = len(self.partition_by)
        for table in TABLES:
            root = f"{self.staging}/{table}"
            if self.fs.get_file_info(root).type != pafs.FileType.Directory:
                continue
            for info in self.fs.get_file_info(pafs.FileSelector(root, recursive=True)):
                relative = info.path[len(root) + 1:].split("/")
                if info.type == pafs.FileType.Directory and len(relative) == depth:
                    found.add("/".join(relative))
        return sorted(found)

    def commit(self, run: dict, prepare=None) -> None:
        """Under the lock: a dead run's half-done commit finished, the checks, `prepare(self)`
        (what must read DIR as it will be, e.g. the report over all partitions: a failure there
        leaves DIR untouched), then a journal of every step, then the steps."""
        partitions = self.staged_partitions()
        run["partitions_written"] = partitions  # the caller's record says so too
        try:
            with _locked(self.fs, self.path) as held:
                _recover_partitioned(self.fs, self.path, held)
                self.check()
                if prepare is not None:
                    prepare(self)
                journal = self._journal(run, partitions)
                _write_journal(self.fs, self.staging, journal)
                _replay_partitioned(self.fs, self.path, self.staging, journal)
        except OSError as exc:
            raise OutputError(f"cannot commit output to {self.uri}: {exc}") from None

    def _finish(self, journal: dict) -> None:
        with _locked(self.fs, self.path):
            _replay_partitioned(self.fs, self.path, self.staging,
                                _checked_swaps(self.fs, self.path, self.staging, journal))

    def _journal(self, run: dict, partitions: Sequence[str]) -> dict:
        """Every (table, partition) to swap, whether this run staged it (if not, the old one is
        only removed), and the top-level files, staged now and moved last (_SUCCESS last)."""
        self.write_json(f"{RUNS}/{self.run_id}.json", run)
        self.write_json(RUN_FILE, run)
        self.write_json(MARKER, self.marker())
        self.write_bytes(SUCCESS, b"")
        swaps = [[table, partition, _exists(self.fs, f"{self.staging}/{table}/{partition}")]
                 for partition in partitions for table in TABLES]
        return {"run_id": self.run_id, "owner": owner_record(), "swaps": swaps,
                "files": list(dict.fromkeys(self.files))}


def _exists(fs, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def _read_journal(fs, folder: str) -> Optional[dict]:
    """The journal of a staging folder (or of DIR, for a whole commit between its moves), None
    when there is none. One of another shape is refused: every path it names would be moved or
    removed by whoever replays it."""
    file = f"{folder}/{JOURNAL}"
    try:
        with fs.open_input_stream(file) as stream:
            data = stream.read()
    except OSError:
        return None
    try:
        journal = json.loads(data)
    except ValueError:
        journal = None
    if not isinstance(journal, dict):
        raise _journal_refused(file, "is not a JSON mapping")
    run_id, owner = journal.get("run_id"), journal.get("owner")
    if not (isinstance(run_id, str) and RUN_ID.fullmatch(run_id) and isinstance(owner, dict)):
        raise _journal_refused(file, "has no run_id of this job's form or no owner mapping")
    return journal


def _journal_refused(file: str, what: str) -> ForeignFileError:
    return _foreign(file, what, f"if no run is writing the output, remove "
                                f"{os.path.dirname(file)}/{JOURNAL} by hand (its staging folder "
                                f"then goes as a leftover) and run again")


def _retired(path: str, journal: dict, folder: str) -> str:
    """Where a whole commit's journal retires DIR to: always `.DIR.old-<run_id>` beside it. The
    journal's own spelling of that path is checked by its name alone (DIR may be reached by
    another path now, a link or a mount), and never used."""
    parent, name = os.path.split(path)
    expected = f"{parent}/.{name}.old-{journal['run_id']}"
    retired = journal.get("retired")
    if not (isinstance(retired, str)
            and os.path.basename(retired) == os.path.basename(expected)):
        raise _journal_refused(f"{folder}/{JOURNAL}", f"names {journal.get('retired')!r} to move "
                                                      f"DIR to, not {expected}")
    return expected


def _checked_swaps(fs, root: str, staging: str, journal: dict) -> dict:
    """A partitioned commit's journal: every folder and file it names is inside DIR (and the
    staging folder), resolved with symbolic links followed on a local disk."""
    file = f"{staging}/{JOURNAL}"
    swaps, files = journal.get("swaps"), journal.get("files")
    if not (isinstance(swaps, list) and isinstance(files, list)
            and all(isinstance(s, list) and len(s) == 3 and s[0] in TABLES
                    and isinstance(s[1], str) and isinstance(s[2], bool) for s in swaps)
            and all(isinstance(f, str) for f in files)):
        raise _journal_refused(file, "has swaps or files of another shape")
    for table, partition, _ in swaps:
        for base, relative in ((root, f"{table}/{partition}"), (staging, f"{table}/{partition}"),
                               (staging, f".replaced/{table}/{partition}")):
            _confined(fs, base, relative, file)
    for name in files:
        _confined(fs, root, name, file)
        _confined(fs, staging, name, file)
    return journal


def _confined(fs, base: str, relative: str, file: str) -> None:
    parts = relative.split("/")
    if relative.startswith("/") or "\\" in relative or any(p in ("", ".", "..") for p in parts):
        raise _journal_refused(file, f"names {relative!r}, a path outside {base}")
    if isinstance(fs, pafs.LocalFileSystem):
        real_base = os.path.realpath(base)
        if not os.path.realpath(f"{base}/{relative}").startswith(real_base + os.sep):
            raise _journal_refused(file, f"names {relative!r}, which a symbolic link leads "
                                         f"outside {base}")


def _not_a_link(fs, path: str) -> str:
    """A folder this job makes beside or in DIR (staging, retired): a symbolic link there is
    someone else's, and deleting through it would delete where it points."""
    if isinstance(fs, pafs.LocalFileSystem) and os.path.islink(path):
        raise _foreign(path, "is a symbolic link", "remove the link (not what it points to) "
                                                   "and run again")
    return path


def _write_journal(fs, staging: str, journal: dict) -> None:
    """Written beside, then renamed: a journal is whole or absent."""
    _step("write journal")
    with fs.open_output_stream(f"{staging}/{JOURNAL}.tmp") as out:
        out.write(json_bytes(journal))
    _step("journal in place")
    fs.move(f"{staging}/{JOURNAL}.tmp", f"{staging}/{JOURNAL}")


def _replay_whole(fs, path: str, staging: str, retired: str) -> None:
    """The whole output's swap from wherever it stopped; each step is skipped once done. The
    staging folder still there means DIR is not new yet: a DIR present then is the old one."""
    if _exists(fs, staging):
        if _exists(fs, f"{staging}/{OWNER}"):  # the result is not a staging folder
            _step("drop owner record")
            fs.delete_file(f"{staging}/{OWNER}")
        if _exists(fs, path) and not _exists(fs, retired):
            _step("retire DIR")
            fs.move(path, retired)
        _step("staging to DIR")
        fs.move(staging, path)
    # Done: what is left is cleanup, and failing it loses nothing (recovery retries it).
    with contextlib.suppress(OSError):
        if _exists(fs, f"{path}/{JOURNAL}"):
            _step("drop journal")
            fs.delete_file(f"{path}/{JOURNAL}")
        if _exists(fs, retired):
            _step("delete retired DIR")
            fs.delete_dir(retired)


def _replay_partitioned(fs, root: str, staging: str, journal: dict) -> None:
    """A partitioned commit from wherever it stopped: every swap, the top-level files, then the
    journal and the staging folder (with the replaced partitions) removed."""
    for table, partition, staged in journal["swaps"]:
        _swap_in(fs, f"{root}/{table}/{partition}", f"{staging}/{table}/{partition}",
                 f"{staging}/.replaced/{table}/{partition}", staged)
    for name in journal["files"]:
        if _exists(fs, f"{staging}/{name}"):
            _step(f"mkdir for {name}")
            fs.create_dir(os.path.dirname(f"{root}/{name}"), recursive=True)
            _step(f"move {name}")
            fs.move(f"{staging}/{name}", f"{root}/{name}")  # replaces a file in one rename
    _step("drop journal")
    fs.delete_file(f"{staging}/{JOURNAL}")  # committed: the rest of the staging is garbage
    _step("delete staging")
    with contextlib.suppress(OSError):
        fs.delete_dir(staging)


def _swap_in(fs, target: str, new: str, retired: str, staged: bool) -> None:
    """One table's folder of one partition: the old moved aside (kept in the staging folder until
    the commit is done), the staged one moved in. A staged folder gone means this swap is done;
    while it is there, a target present is the old one."""
    if staged and not _exists(fs, new):
        return
    if _exists(fs, target):
        _step(f"mkdir for retired {target}")
        fs.create_dir(os.path.dirname(retired), recursive=True)
        _step(f"retire {target}")
        fs.move(target, retired)
    if staged:
        _step(f"mkdir for {target}")
        fs.create_dir(os.path.dirname(target), recursive=True)
        _step(f"move in {target}")
        fs.move(new, target)


def recover(uri: str) -> None:
    """Commits of the output at `uri` that a dead run left half done are finished (the journal
    replayed), and a DIR lost by a swap without a journal is put back; before anything reads or
    writes the output. Live runs' commits are left alone (a reader then waits for the lock)."""
    fs, path = filesystem(uri.rstrip("/") or "/")
    try:
        _recover_whole(fs, path)
        if _journaled_stagings(fs, path):
            with _locked(fs, path) as held:
                _recover_partitioned(fs, path, held)
    except OSError as exc:
        raise OutputError(f"cannot finish an interrupted commit of {uri}: {exc}") from None


def recover_before_reading(path: str) -> None:
    """`recover` for a reader given an output folder or its `stats/` folder."""
    path = path.rstrip("/") or "/"
    recover(path)
    if os.path.basename(path) == "stats":
        recover(os.path.dirname(path))


def _listing(fs, folder: str, prefix: str) -> list:
    try:
        entries = fs.get_file_info(pafs.FileSelector(folder))
    except OSError:
        return []
    return [e.path for e in entries if e.base_name.startswith(prefix)]


def _journaled_stagings(fs, path: str) -> list:
    return [(p, j) for p in _listing(fs, path, ".staging-")
            if (j := _read_journal(fs, _not_a_link(fs, p))) is not None]


def _recover_partitioned(fs, path: str, held: bool) -> None:
    """Under the lock no other commit is running, so every journal found is a dead run's; with no
    lock (object stores), only those whose owner is gone are replayed."""
    for staging, journal in _journaled_stagings(fs, path):
        if held or _owner_gone(journal["owner"]):
            _replay_partitioned(fs, path, staging, _checked_swaps(fs, path, staging, journal))


def _recover_whole(fs, path: str) -> None:
    """Swaps of DIR beside it: a dead run's journaled staging replayed, its cleanup finished, and
    a `.DIR.old-*` whose swap left no DIR and no journal (a run of an earlier version) put back."""
    parent, name = os.path.split(path)
    for staging in _beside(fs, path, "staging"):
        journal = _read_journal(fs, staging)
        if journal is not None and _owner_gone(journal["owner"]):
            _replay_whole(fs, path, staging, _retired(path, journal, staging))
    moved_in = _read_journal(fs, path)
    if moved_in is not None and _owner_gone(moved_in["owner"]):
        _replay_whole(fs, path, f"{parent}/.{name}.staging-{moved_in['run_id']}",
                      _retired(path, moved_in, path))
    for retired in _beside(fs, path, "old"):
        run_id = retired[len(f"{parent}/.{name}.old-"):]
        live = _read_journal(fs, f"{parent}/.{name}.staging-{run_id}") is not None \
            or (moved_in or {}).get("retired") == retired  # between its moves, or cleaning up
        if live or not _was_result(fs, retired):
            continue
        if not _exists(fs, path):
            _step("put retired DIR back")
            fs.move(retired, path)
        else:
            _step("delete retired DIR")
            with contextlib.suppress(OSError):
                fs.delete_dir(retired)


def _beside(fs, path: str, kind: str) -> list:
    """`.DIR.<kind>-<run_id>` folders beside DIR. A run id holds no '.', so those of an output
    named `DIR.staging-x` (say) are not taken for this one's."""
    parent, name = os.path.split(path)
    prefix = f".{name}.{kind}-"
    return [_not_a_link(fs, p) for p in _listing(fs, parent, prefix)
            if "." not in os.path.basename(p)[len(prefix):]]


def _was_result(fs, folder: str) -> bool:
    """What a swap retires: an earlier result (it has the marker) or an empty folder."""
    try:
        return read_marker(fs, folder) is not None or not fs.get_file_info(pafs.FileSelector(folder))
    except OSError:
        return False


# DIR -> depth, per thread: a reader called under this thread's lock (the report drawn at the
# commit) goes on; another thread, like another process, waits for the lock.
_held = threading.local()


@contextlib.contextmanager
def _locked(fs, path: str):
    """An exclusive lock on DIR for the swap (local file systems; elsewhere, none): yields
    whether it is held, i.e. whether no other commit of DIR can be running."""
    if not isinstance(fs, pafs.LocalFileSystem):
        yield False
        return
    held = _held.__dict__
    if held.get(path):
        held[path] += 1
        try:
            yield True
        finally:
            held[path] -= 1
        return
    import fcntl

    try:  # never through a link: opening one would create or touch a file where it points
        descriptor = os.open(os.path.join(path, ".lock"), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if os.path.islink(os.path.join(path, ".lock")):
            raise _foreign(os.path.join(path, ".lock"), "is a symbolic link",
                           "remove the link (not what it points to) and run again") from None
        raise
    with os.fdopen(descriptor, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        held[path] = 1
        try:
            yield True
        finally:
            held.pop(path, None)
            fcntl.flock(handle, fcntl.LOCK_UN)


def _check_replaceable(fs, path: str, uri: str, partitioned: bool) -> Optional[dict]:
    """Only an empty folder or an earlier result of this job is ever written over."""
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        return None
    if info.type != pafs.FileType.Directory:
        raise OutputError(f"output {uri} exists and is not a directory")
    entries = [e for e in fs.get_file_info(pafs.FileSelector(path))
               if not (partitioned and e.base_name.startswith((".staging-", ".lock")))]
    if not entries:
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


def open_output(uri: str, partition_by: Sequence[str] = (), run_id: Optional[str] = None):
    run_id = run_id or new_run_id()
    if partition_by:
        return PartitionedOutput(uri, partition_by, run_id).open()
    return WholeOutput(uri, run_id).open()


def check_output(uri: str, partition_by: Sequence[str] = ()) -> None:
    """The checks `open_output` makes, without creating anything (preflight)."""
    output = PartitionedOutput(uri, partition_by, "check") if partition_by else WholeOutput(uri, "check")
    output.check()


def new_run_id() -> str:
    import time

    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]
