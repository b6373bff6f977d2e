"""Who writes a staging folder (host, process, start), and whether that run is gone."""
from __future__ import annotations

import json
import os
from typing import Optional

from .layout import OWNER

STALE_AFTER_S = 24 * 3600  # a staging folder this old is a leftover, whoever owned it


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
