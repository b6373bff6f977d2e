"""The commit: a staging folder swapped in as DIR whole, or its partitions swapped into DIR one at
a time under the lock; and opening an output, checked, for a run."""
from __future__ import annotations

import contextlib
import os
import uuid
from typing import Optional, Sequence

import pyarrow.fs as pafs

from ..errors import OutputError
from .journal import (_checked_swaps, _replay_partitioned, _replay_whole, _retired,
                      _write_journal)
from .layout import (JOURNAL, MARKER, RUN_FILE, RUNS, SUCCESS, TABLES, _exists, filesystem,
                     read_marker)
from .owner import owner_record
from .partitions import check_partition_names
from .recovery import _locked, _recover_partitioned, recover
from .staging import _Output


class WholeOutput(_Output):
    """DIR replaced whole by a staging folder beside it."""

    def __init__(self, uri: str, run_id: str):
        fs, path = filesystem(uri.rstrip("/") or "/")
        if path in ("/", ""):
            raise OutputError("output cannot be the root folder; name a folder for the result")
        parent, name = os.path.split(path)
        super().__init__(uri, (), run_id, f"{parent}/.{name}.staging-{run_id}")
        self.retired = f"{parent}/.{name}.old-{run_id}"

    def check(self) -> None:
        _check_replaceable(self.fs, self.path, self.uri, partitioned=False)

    def commit(self, run: dict, prepare=None) -> None:
        """DIR -> .DIR.old-<run>, staging -> DIR, after a journal that lets a later run or reader
        finish the swap if this process dies between the moves (DIR is never left missing)."""
        if prepare is not None:
            prepare(self)
        self.write_json(RUN_FILE, run)
        self.write_json(MARKER, self.marker())
        self.write_bytes(SUCCESS, b"")
        recover(self.uri)  # a run that died in its swap since this one opened: finished first
        self.check()  # again: a file saved into DIR while the run worked is never lost
        journal = {"run_id": self.run_id, "owner": owner_record(), "retired": self.retired}
        try:
            _write_journal(self.fs, self.staging, journal)
        except OSError as exc:
            raise OutputError(f"cannot commit output to {self.uri}: {exc}") from None
        try:
            _replay_whole(self.fs, self.path, self.staging, self.retired)
        except OSError as exc:
            self._undo()
            raise OutputError(f"cannot commit output to {self.uri}: {exc}") from None

    def _finish(self, journal: dict) -> None:
        _replay_whole(self.fs, self.path, self.staging, _retired(self.path, journal, self.staging))

    def _undo(self) -> None:
        """A move that failed in this live process: the previous DIR put back, the journal
        dropped, so `abort` removes the staging folder."""
        with contextlib.suppress(OSError):
            if not _exists(self.fs, self.path) and _exists(self.fs, self.retired):
                self.fs.move(self.retired, self.path)
            self.fs.delete_file(f"{self.staging}/{JOURNAL}")


class PartitionedOutput(_Output):
    """DIR kept; the partitions a run produced swapped in, one at a time, under a lock."""

    def __init__(self, uri: str, partition_by: Sequence[str], run_id: str):
        check_partition_names(partition_by)
        fs, path = filesystem(uri.rstrip("/") or "/")
        super().__init__(uri, partition_by, run_id, f"{path}/.staging-{run_id}")

    def check(self) -> None:
        marker = _check_replaceable(self.fs, self.path, self.uri, partitioned=True)
        if marker is not None and marker.get("partition_by") != list(self.partition_by):
            raise OutputError(f"output {self.uri} is partitioned by "
                              f"{','.join(marker.get('partition_by') or []) or 'nothing'}, not by "
                              f"{','.join(self.partition_by)}; write to another folder")

    def staged_partitions(self) -> list:
        """Every partition folder path (`col=v/col2=w`) staged for any table."""
        found = set()
        depth = len(self.partition_by)
        for table in TABLES:
            root = f"{self.staging}/{table}"
            if self.fs.get_file_info(root).type != pafs.FileType.Directory:
                continue
            for info in self.fs.get_file_info(pafs.FileSelector(root, recursive=True)):
                relative = info.path[len(root) + 1:].split("/")
                if info.type == pafs.FileType.Directory and len(relative) == depth:
                    found.add("/".join(relative))
        return sorted(found)

    def commit(self, run: dict, prepare=None) -> None:
        """Under the lock: a dead run's half-done commit finished, the checks, `prepare(self)`
        (what must read DIR as it will be, e.g. the report over all partitions: a failure there
        leaves DIR untouched), then a journal of every step, then the steps."""
        partitions = self.staged_partitions()
        run["partitions_written"] = partitions  # the caller's record says so too
        try:
            with _locked(self.fs, self.path) as held:
                _recover_partitioned(self.fs, self.path, held)
                self.check()
                if prepare is not None:
                    prepare(self)
                journal = self._journal(run, partitions)
                _write_journal(self.fs, self.staging, journal)
                _replay_partitioned(self.fs, self.path, self.staging, journal)
        except OSError as exc:
            raise OutputError(f"cannot commit output to {self.uri}: {exc}") from None

    def _finish(self, journal: dict) -> None:
        with _locked(self.fs, self.path):
            _replay_partitioned(self.fs, self.path, self.staging,
                                _checked_swaps(self.fs, self.path, self.staging, journal))

    def _journal(self, run: dict, partitions: Sequence[str]) -> dict:
        """Every (table, partition) to swap, whether this run staged it (if not, the old one is
        only removed), and the top-level files, staged now and moved last (_SUCCESS last)."""
        self.write_json(f"{RUNS}/{self.run_id}.json", run)
        self.write_json(RUN_FILE, run)
        self.write_json(MARKER, self.marker())
        self.write_bytes(SUCCESS, b"")
        swaps = [[table, partition, _exists(self.fs, f"{self.staging}/{table}/{partition}")]
                 for partition in partitions for table in TABLES]
        return {"run_id": self.run_id, "owner": owner_record(), "swaps": swaps,
                "files": list(dict.fromkeys(self.files))}


def _check_replaceable(fs, path: str, uri: str, partitioned: bool) -> Optional[dict]:
    """Only an empty folder or an earlier result of this job is ever written over."""
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        return None
    if info.type != pafs.FileType.Directory:
        raise OutputError(f"output {uri} exists and is not a directory")
    entries = [e for e in fs.get_file_info(pafs.FileSelector(path))
               if not (partitioned and e.base_name.startswith((".staging-", ".lock")))]
    if not entries:
        return None
    marker = read_marker(fs, path)
    if marker is None:
        raise OutputError(f"output directory {uri} is not empty and holds no earlier bleu-spark "
                          f"result ({MARKER}); refusing to replace it")
    if not partitioned and marker.get("partition_by"):
        raise OutputError(f"output {uri} is partitioned by {','.join(marker['partition_by'])}; "
                          f"pass --partition-by {','.join(marker['partition_by'])} or write to "
                          f"another folder")
    return marker


def open_output(uri: str, partition_by: Sequence[str] = (), run_id: Optional[str] = None):
    run_id = run_id or new_run_id()
    if partition_by:
        return PartitionedOutput(uri, partition_by, run_id).open()
    return WholeOutput(uri, run_id).open()


def check_output(uri: str, partition_by: Sequence[str] = ()) -> None:
    """The checks `open_output` makes, without creating anything (preflight)."""
    output = PartitionedOutput(uri, partition_by, "check") if partition_by else WholeOutput(uri, "check")
    output.check()


def new_run_id() -> str:
    import time

    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]
