"""An output folder's layout: the names of what it holds, its marker, and JSON as every file of a
result holds it."""
from __future__ import annotations

import json
import math
import os
import re
from typing import Optional

import pyarrow.fs as pafs

from ..errors import ForeignFileError, UsageError
from .partitions import check_partition_names

MARKER = "_bleu_spark.json"
SUCCESS = "_SUCCESS"
RUN_FILE = "run.json"
# An older version's staging folder held these: its owner, and the journal of its folder moves.
OWNER = "_staging_owner.json"
JOURNAL = "_commit.json"
RUNS = "runs"
TABLES = ("stats", "scores", "dashboard", "paired", "rejected", "segments")
# A run id as `new_run_id` makes it (tests name theirs too): never a '/' or a '.'.
RUN_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]*")
OUTPUT_FORMAT = "bleu-spark output"
# 1: the tables' files are whatever their folders hold (an older version's swaps); 2: the files
# the commit log (`_commits/`) names.
FORMAT_VERSION = 2


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


def _exists(fs, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def _not_a_link(fs, path: str) -> str:
    """A folder this job makes beside or in DIR (staging, retired): a symbolic link there is
    someone else's, and deleting through it would delete where it points."""
    if isinstance(fs, pafs.LocalFileSystem) and os.path.islink(path):
        raise _foreign(path, "is a symbolic link", "remove the link (not what it points to) "
                                                   "and run again")
    return path


def _listing(fs, folder: str, prefix: str) -> list:
    try:
        entries = fs.get_file_info(pafs.FileSelector(folder))
    except OSError:
        return []
    return [e.path for e in entries if e.base_name.startswith(prefix)]
