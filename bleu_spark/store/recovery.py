"""After a commit, and before a run writes an output: the folder made to hold exactly what its
commit log names. The latest entry's top-level files copied into place, files the log
no longer names (superseded, or of runs that died uncommitted) removed, entries that hold
nothing any more dropped. Files of a run still live are never touched.

Why it is safe without a lock (object stores): it lists the tables' files first, then reads the
pending records, then the entries. A file listed belongs to a run whose pending record was
written before it; if that record is gone by the second step, the run has committed (its entry
is there by the third step, and names the file if it is live) or has undone itself.

Readers never come here: they read the files the log names (`manifest.live_files`) and change
nothing, so a read-only folder or prefix can be read; a dead run's leftovers wait for the next
writer. Only a folder holding this job's marker is ever cleaned: anything else is not ours."""
from __future__ import annotations

import contextlib
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import pyarrow.fs as pafs

from ..errors import OutputError
from .filesystems import filesystem, is_local
from .layout import TABLES, read_marker
from .manifest import (COMMITS, PENDING, STAGED, UNLINKED, State, _step, data_prefix, entries, listing,
                       read_json, staged_name)
from .owner import _locked, _owner_gone


def recover(uri: str) -> None:
    """The output at `uri` made whole before a run writes it (`finish`). Live runs' files are left
    alone; a folder without this job's marker is left as it is (whatever its `_commits/` holds,
    the run's checks refuse it), and one of another format is refused (`read_marker`)."""
    fs, path = filesystem(uri.rstrip("/") or "/")
    try:
        if read_marker(fs, path) is not None and listing(fs, f"{path}/{COMMITS}"):
            with _locked(fs, path):
                finish(fs, path)
    except OSError as exc:
        raise OutputError(f"cannot finish an interrupted commit of {uri}: {exc}") from None


def finish(fs, path: str, me: Optional[str] = None) -> State:
    """The folder cleaned up to its log (see the module's docstring); `me`: the run calling it
    after its own commit, whose files are no longer protected by its pending record."""
    data = [i for i in listing(fs, path, recursive=True) if i.type == pafs.FileType.File
            and i.path[len(path) + 1:].split("/", 1)[0] in TABLES]
    commits = listing(fs, f"{path}/{COMMITS}")
    pending = {m[1]: i.path for i in commits if (m := PENDING.fullmatch(i.base_name))}
    owners = dict(zip(pending, _read_all(fs, list(pending.values()))))
    log = entries(fs, path)
    state = State(log)
    committed = {e["run_id"] for e in log}
    live = {run for run, owner in owners.items()
            if run != me and run not in committed and not _owner_gone(owner)}
    _copy_top_files(fs, path, state)
    _remove_superseded_top_files(fs, path, state)
    referenced = state.referenced()
    garbage = [i.path for i in data if i.path[len(path) + 1:] not in referenced
               and not any(i.base_name.lstrip(".").startswith(data_prefix(r)) for r in live)]

    def delete(file):  # one request each on an object store: several at once
        _step(f"delete {file[len(path) + 1:]}")
        return file if _removed(fs, file) else None
    with ThreadPoolExecutor(16) as pool:
        removed = [f for f in pool.map(delete, garbage) if f]
    for info in listing(fs, f"{path}/{COMMITS}"):
        staged = STAGED.fullmatch(info.base_name)
        other = PENDING.fullmatch(info.base_name) or UNLINKED.fullmatch(info.base_name)
        run = (staged or other)[1] if staged or other else None
        if run is None or run in live:
            continue
        _step(f"delete {info.base_name}")
        _removed(fs, info.path, folder=bool(staged))
    for entry in log[:-1]:
        if not state.needed(entry):
            _step(f"drop entry of {entry['run_id']}")
            _removed(fs, f"{path}/{COMMITS}/c-{entry['stamp']:020d}-{entry['run_id']}.json")
    if is_local(fs):
        _prune(path, removed)
    return state


def _read_all(fs, paths: list) -> list:
    def read(p):
        try:
            return read_json(fs, p)
        except (OSError, ValueError):
            return {}  # half written or gone: judged by its start time alone (none: now)
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(read, paths))


def _copy_top_files(fs, path: str, state: State) -> None:
    """Each top-level file from the entry that holds it, while its staged copy is there (gone:
    it was copied, and its folder removed)."""
    for name, entry in state.files.items():
        staged = f"{path}/{staged_name(entry['run_id'], name)}"
        if fs.get_file_info(staged).type != pafs.FileType.File:
            continue
        _step(f"copy {name}")
        with contextlib.suppress(FileNotFoundError):  # copied and removed by another run
            copy_in(fs, staged, f"{path}/{name}")


def copy_in(fs, source: str, target: str) -> None:
    """`target` replaced by a copy of `source` in one step: a rename on a local disk, one
    server-side copy on an object store."""
    if not is_local(fs):
        fs.copy_file(source, target)
        return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    temporary = f"{os.path.dirname(target)}/.{os.path.basename(target)}.tmp"
    fs.copy_file(source, temporary)
    os.replace(temporary, target)


def _remove_superseded_top_files(fs, path: str, state: State) -> None:
    """Top-level files an entry named that no entry holds now (a report.html after a run without
    --report, whole or partitioned)."""
    named = {n for e in state.entries for n in e["files"]} - set(state.files)
    for name in sorted(named):
        _step(f"delete top-level {name}")
        _removed(fs, f"{path}/{name}")


def _removed(fs, target: str, folder: bool = False) -> bool:
    try:
        fs.delete_dir(target) if folder else fs.delete_file(target)
        return True
    except OSError:  # gone already, or a reader without the right to delete: the next run does it
        return False


def _prune(root: str, removed: list) -> None:
    """Partition folders emptied by the removals, up to their table's folder."""
    for file in sorted(removed, key=lambda p: -p.count("/")):
        folder = os.path.dirname(file)
        while folder.count("/") > root.count("/") + 1:
            try:
                os.rmdir(folder)
            except OSError:
                break
            folder = os.path.dirname(folder)
