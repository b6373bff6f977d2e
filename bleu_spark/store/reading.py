"""The one way back in: where a table of a result is, as every reader finds it (`locate`). An
output folder's table is the files its commit log names (never a folder listing), with the
partition columns and types its marker records; any other Parquet path is read as it is.
Readers change nothing: a read-only folder or prefix is read as well as any."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from .filesystems import filesystem, settings
from .layout import read_marker
from .manifest import live_files
from .partitions import PARTITION_TYPES
from .tasks import TableFiles


@dataclass(frozen=True)
class Located:
    """A table found: `uri` and `root` name its folder (or the Parquet path given), `files` its
    committed files (full paths in `fs`; None: not an output's table, every file `root` holds)."""
    uri: str
    fs: object
    root: str
    files: Optional[List[str]] = None
    partition_by: Tuple[str, ...] = ()
    partition_types: Dict[str, str] = field(default_factory=dict)

    @property
    def in_output(self) -> bool:
        return self.files is not None

    def partition_schema(self) -> pa.Schema:
        """The partition columns with the types the writing run recorded (string if none)."""
        return pa.schema([(c, PARTITION_TYPES.get(self.partition_types.get(c), pa.string()))
                          for c in self.partition_by])

    def task_files(self) -> TableFiles:
        """What the tasks need to read the files: the folder, its partitions, the driver's file
        system settings."""
        return TableFiles(self.uri, "", self.partition_by, tuple(sorted(settings().items())))


def locate(path: str, table: str = "stats", tables: Sequence[str] = ("stats",)) -> Located:
    """`path`: an output folder (its table `table`), one of an output's table folders named in
    `tables`, or any other Parquet file or folder."""
    fs, root = filesystem(path)
    marker, folder, name, uri = read_marker(fs, root), root, table, f"{path.rstrip('/')}/{table}"
    if marker is None and os.path.basename(root) in tables:
        folder, name = os.path.split(root)
        marker, uri = read_marker(fs, folder), path
    if marker is None:
        return Located(path, fs, root)
    return Located(uri, fs, f"{folder}/{name}", live_files(fs, folder, name),
                   tuple(marker.get("partition_by") or ()), dict(marker.get("partition_types") or {}))


def partition_columns(path: str) -> Tuple[str, ...]:
    """The partition columns an output folder was written with (none for any other path)."""
    fs, root = filesystem(path)
    marker = read_marker(fs, root)
    return tuple(marker.get("partition_by") or ()) if marker else ()
