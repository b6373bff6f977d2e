"""Commits a dead run left half done, finished before anything reads or writes the output; and the
lock on DIR that keeps two partitioned commits apart."""
from __future__ import annotations

import contextlib
import os
import threading

import pyarrow.fs as pafs

from ..errors import OutputError
from .journal import (_checked_swaps, _read_journal, _replay_partitioned, _replay_whole, _retired,
                      _step)
from .layout import _exists, _foreign, _listing, _not_a_link, filesystem, read_marker
from .owner import _owner_gone


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
