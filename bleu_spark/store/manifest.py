"""The commit log of an output folder, `DIR/_commits/`: one small entry per committed run.

- `p-<run>.json`: a run's pending record (its owner: host, process, start), written before any
  of its files and removed once its commit is done or undone.
- `f-<run>/<name>`: the run's top-level files (`scores.json`, `run.json`, ...), staged.
- `c-<stamp>-<run>.json`: the entry that commits the run, written last, whole or not at all
  (created exclusively on a local disk, through a hard link of a finished file; one PUT on S3),
  and never written again. It names the partitions the run replaces and, per table, the data
  files that now hold them, the top-level files it staged, and (`dropped`) those of earlier
  entries it removes (a partitioned run's `report.html` drawn before it and not again).

The live files of a table are a fold of the entries in order of (stamp, run id): an entry
replaces the partitions it names in every table (a whole output's entry replaces everything);
a top-level file is the last entry's that names it. A run's stamp is its commit time in
nanoseconds, and at least one more than every stamp it read, so a rerun on a host whose clock is
behind still comes after what it replaces. Two runs racing to commit are ordered by their stamps
(then run ids): both entries stand, the later one holds every partition both wrote, and each
partition is one run's files, whole.
"""
from __future__ import annotations

import json
import os
import re
import time
from typing import Dict, List

import pyarrow.fs as pafs

from ..errors import InputNotFoundError, OutputError
from .filesystems import is_local
from .layout import RUNS, TABLES, _foreign, json_bytes

COMMITS = "_commits"
ENTRY_FORMAT = "bleu-spark commit"
ENTRY = re.compile(r"c-(\d{20})-([0-9A-Za-z][0-9A-Za-z_-]*)\.json")
PENDING = re.compile(r"p-([0-9A-Za-z][0-9A-Za-z_-]*)\.json")
STAGED = re.compile(r"f-([0-9A-Za-z][0-9A-Za-z_-]*)")
UNLINKED = re.compile(r"\.c-([0-9A-Za-z][0-9A-Za-z_-]*)\.json\.tmp")  # an entry not yet linked

# Tests: called with a step's name before every file system step of a commit or its recovery
# (a test ends the process there, to prove that a commit killed at any step is recovered).
commit_hook = None


def _step(what: str) -> None:
    if commit_hook is not None:
        commit_hook(what)


def pending_name(run_id: str) -> str:
    return f"{COMMITS}/p-{run_id}.json"


def staged_name(run_id: str, name: str = "") -> str:
    return f"{COMMITS}/f-{run_id}" + (f"/{name}" if name else "")


def data_prefix(run_id: str) -> str:
    """Every data file a run writes is named `part-<run>-...` (hidden while being written)."""
    return f"part-{run_id}-"


def listing(fs, folder: str, recursive: bool = False) -> list:
    """What a folder holds; nothing when it is not there or is a file. Any other failure (a
    denied or timed-out listing) raises: the cleanup deletes what no entry names, so it must
    never act on a listing that came back short."""
    try:
        return fs.get_file_info(pafs.FileSelector(folder, recursive=recursive, allow_not_found=True))
    except (FileNotFoundError, NotADirectoryError):
        return []


def read_json(fs, path: str):
    with fs.open_input_stream(path) as stream:
        return json.loads(stream.read())


def entries(fs, root: str) -> List[dict]:
    """Every commit entry of DIR, checked, in commit order."""
    found = []
    for info in listing(fs, f"{root}/{COMMITS}"):
        match = ENTRY.fullmatch(info.base_name)
        if match and info.type == pafs.FileType.File:
            found.append((int(match[1]), match[2], info.path))
    return [_checked(fs, path, root, stamp, run) for stamp, run, path in sorted(found)]


def _checked(fs, path: str, root: str, stamp: int, run: str) -> dict:
    """An entry of this job's shape: every file it names inside one of DIR's tables (it decides
    what every later run deletes); anything else is refused, naming the file."""
    try:
        entry = read_json(fs, path)
    except ValueError:  # not JSON: not an entry of this job
        entry = None
    except OSError as exc:  # not readable now: never taken for a foreign file to remove
        raise OutputError(f"cannot read the commit entry {path}: {exc}") from None
    refused = lambda what: _foreign(path, what, "if no run is writing the output, remove the file "
                                                "by hand and run again")
    if not (isinstance(entry, dict) and entry.get("format") == ENTRY_FORMAT
            and entry.get("run_id") == run and entry.get("stamp") == stamp):
        raise refused("is not a commit entry of this job")
    partitions, tables, files = entry.get("partitions"), entry.get("tables"), entry.get("files")
    dropped = entry.get("dropped", [])
    if not (isinstance(partitions, list) and all(isinstance(p, str) for p in partitions)
            and isinstance(dropped, list) and all(isinstance(f, str) for f in dropped)
            and isinstance(tables, dict) and set(tables) <= set(TABLES)
            and all(isinstance(v, list) and all(isinstance(f, str) for f in v) for v in tables.values())
            and isinstance(files, list) and all(isinstance(f, str) for f in files)
            and isinstance(entry.get("whole"), bool)):
        raise refused("has partitions, tables or files of another shape")
    for name in [*(f for v in tables.values() for f in v), *partitions, *files, *dropped]:
        if name and not _inside(fs, root, name):
            raise refused(f"names {name!r}, a path outside {root}")
    for table, names in tables.items():
        if not all(n.startswith(f"{table}/") and os.path.dirname(n[len(table) + 1:]) in partitions
                   for n in names):
            raise refused(f"names a {table} file outside the partitions it replaces")
    return entry


def _inside(fs, root: str, relative: str) -> bool:
    parts = relative.split("/")
    if relative.startswith("/") or "\\" in relative or any(p in ("", ".", "..") for p in parts):
        return False
    if is_local(fs):
        return os.path.realpath(f"{root}/{relative}").startswith(os.path.realpath(root) + os.sep)
    return True


class State:
    """The entries folded: each table's live files per partition, the entry holding each
    partition, and each top-level file's entry."""

    def __init__(self, folded: List[dict]):
        self.entries = folded
        self.tables: Dict[str, Dict[str, List[str]]] = {t: {} for t in TABLES}
        self.holders: Dict[str, dict] = {}
        self.files: Dict[str, dict] = {}
        for entry in folded:
            if entry["whole"]:
                self.tables, self.holders, self.files = {t: {} for t in TABLES}, {}, {}
            for partition in entry["partitions"]:
                self.holders[partition] = entry
                for table in TABLES:
                    self.tables[table][partition] = [
                        f for f in entry["tables"].get(table, [])
                        if os.path.dirname(f[len(table) + 1:]) == partition]
            for name in entry["files"]:
                self.files[name] = entry
            for name in entry.get("dropped", []):  # an older entry's, no longer true of DIR
                self.files.pop(name, None)

    def live(self, table: str) -> List[str]:
        return sorted(f for files in self.tables[table].values() for f in files)

    def referenced(self) -> set:
        return {f for table in TABLES for f in self.live(table)}

    def needed(self, entry: dict) -> bool:
        """Whether the entry still holds a partition or a top-level file: one that holds none is
        superseded whole, and the fold is the same without it. A run's own record
        (`runs/<run>.json`, a name no other run writes) does not keep it: once copied in, no
        entry needs to name it."""
        files = [e for name, e in self.files.items() if not name.startswith(f"{RUNS}/")]
        return any(e is entry for e in (*self.holders.values(), *files))


def state(fs, root: str) -> State:
    return State(entries(fs, root))


def next_stamp(seen: List[dict]) -> int:
    return max([time.time_ns(), *(e["stamp"] + 1 for e in seen)])


def write_entry(fs, root: str, entry: dict) -> str:
    """The entry, whole or absent: on a local disk written beside and hard-linked into place
    (the link fails if the name exists: never written twice); elsewhere one PUT."""
    name = f"{root}/{COMMITS}/c-{entry['stamp']:020d}-{entry['run_id']}.json"
    data = json_bytes(entry)
    if not is_local(fs):
        _step("write entry")
        with fs.open_output_stream(name) as out:
            out.write(data)
        return name
    temporary = f"{root}/{COMMITS}/.c-{entry['run_id']}.json.tmp"
    _step("write entry")
    with open(temporary, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    _step("link entry")
    os.link(temporary, name)
    _step("drop entry's temporary")
    os.unlink(temporary)
    return name


def live_files(fs, root: str, table: str) -> List[str]:
    """The committed files of a table of the output at `root` (full paths): none before its
    first commit."""
    try:
        return [f"{root}/{f}" for f in state(fs, root).live(table)]
    except OSError as exc:  # a denied or timed-out listing: never read as an empty log
        raise InputNotFoundError(f"cannot read the commit log of {root}: "
                                 f"{str(exc).splitlines()[0]}") from None
