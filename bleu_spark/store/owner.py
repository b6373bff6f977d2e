"""Who writes into an output (host, process, start), whether that run is gone, and the lock that
keeps two commits of one folder on a local disk apart."""
from __future__ import annotations

import contextlib
import os
import threading
from typing import Optional

import pyarrow.fs as pafs

from .layout import _foreign

STALE_AFTER_S = 24 * 3600  # a pending run this old is a leftover, whoever owned it


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


# DIR -> depth, per thread: a reader called under this thread's lock (the report drawn at the
# commit) goes on; another thread, like another process, waits for the lock.
_held = threading.local()


@contextlib.contextmanager
def _locked(fs, path: str):
    """An exclusive lock on DIR for the commit and the cleanup (local file systems; elsewhere, none): yields
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
    except OSError:
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
