"""A run's staging folder: made with a record of its owner, written into (files, and each table's
Parquet files, by partition), stale ones of dead runs removed, aborted."""
from __future__ import annotations

import contextlib
import os
from typing import Dict, Optional, Sequence

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..errors import OutputError
from .journal import _read_journal
from .layout import OUTPUT_FORMAT, OWNER, _not_a_link, filesystem, json_bytes
from .owner import _is_stale, owner_record
from .partitions import (check_partition_columns, partition_folder, partition_path,
                         partition_values, rows_of)
from .recovery import recover


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



