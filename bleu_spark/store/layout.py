"""An output folder's layout: the names of what it holds, its marker, and JSON as every file of a
result holds it."""
from __future__ import annotations

import json
import math
from typing import Optional

from ..errors import ForeignFileError, UsageError
from .partitions import check_partition_names

MARKER = "_bleu_spark.json"
SUCCESS = "_SUCCESS"
RUN_FILE = "run.json"
RUNS = "runs"
TABLES = ("stats", "scores", "dashboard", "paired", "rejected", "segments", "input_files")
OUTPUT_FORMAT = "bleu-spark output"
# The tables' files are those the commit log (`_commits/`) names. A marker of any other version
# (1: a development-era folder committed by folder moves) is refused, by readers and writers.
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
    """A marker of this format (another one's folder would be read or written wrongly), whose
    partition columns name folders every reader and writer opens: they must be names this job
    writes (`check_partition_names`), their types a mapping of names."""
    version = marker.get("format_version")
    if version != FORMAT_VERSION:
        found = "no format_version" if version is None else f"format_version {version!r}"
        raise ForeignFileError(f"{file} has {found}: a folder of another bleu-spark format, which "
                               f"this version neither reads nor writes (format_version "
                               f"{FORMAT_VERSION} only); score the input again with this version "
                               f"into another folder")
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
