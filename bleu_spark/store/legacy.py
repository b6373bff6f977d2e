"""Folders an older version of this job left half committed: its journal (`_commit.json` in a
staging folder, naming every folder move of the commit) checked when read (every path it names
stays inside DIR) and replayed from wherever that commit stopped, on a local disk (the only
place where those commits could run). Nothing here writes a journal any more."""
from __future__ import annotations

import contextlib
import json
import os
from typing import Optional

import pyarrow.fs as pafs

from ..errors import ForeignFileError
from .layout import (JOURNAL, OWNER, RUN_ID, TABLES, _exists, _foreign, _listing, _not_a_link,
                     read_marker)
from .manifest import _step
from .owner import _locked, _owner_gone

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


def recover_journals(fs, path: str) -> None:
    """A dead run's journaled commit finished, and a DIR its swap left missing put back."""
    if not isinstance(fs, pafs.LocalFileSystem):
        return
    _recover_whole(fs, path)
    if read_marker(fs, path) is not None and _journaled_stagings(fs, path):
        with _locked(fs, path) as held:
            _recover_partitioned(fs, path, held)


def interrupted(fs, path: str) -> str:
    """What `recover_journals` would replay at `path` ('' for nothing), found without changing
    anything, and checked as the replay checks it (a journal or folder of another shape, or
    naming paths outside DIR, is refused here too): a journal beside DIR or in it, a staging
    folder's inside it, or DIR retired beside itself with no DIR left."""
    if not isinstance(fs, pafs.LocalFileSystem):
        return ""
    found = []
    for staging in _beside(fs, path, "staging"):
        journal = _read_journal(fs, staging)
        if journal is not None:
            _retired(path, journal, staging)
            found.append(staging)
    moved_in = _read_journal(fs, path)
    if moved_in is not None:
        _retired(path, moved_in, path)
        found.append(f"{path}/{JOURNAL}")
    if read_marker(fs, path) is not None:
        found += [_checked_swaps(fs, path, p, j) and p for p, j in _journaled_stagings(fs, path)]
    found += [p for p in _beside(fs, path, "old") if not _exists(fs, path) and _was_result(fs, p)]
    return found[0] if found else ""


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
        live = (_read_journal(fs, f"{parent}/.{name}.staging-{run_id}") is not None
                or (moved_in or {}).get("retired") == retired)  # between its moves, or cleaning up
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
