"""A table's files written by the tasks of a run (segments, rejected rows), not by the driver:
each task one file per partition, `part-<run>-t<task>.parquet`, written whole under a hidden name
and then given its own (on an object store the upload itself appears whole, at its end). A
retried task writes the same names again, so it replaces its own files, never adds a second.
The commit finds them by their run's name (`commit.run_files`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

from .filesystems import filesystem, is_local
from .manifest import data_prefix
from .partitions import partition_path, partition_values, rows_of


@dataclass(frozen=True)
class TableFiles:
    """Where the tasks write a table: its folder's URI, the run, how it is partitioned, and the
    driver's file system settings (executors have no Spark conf to read them from)."""
    uri: str
    run_id: str
    partition_by: Tuple[str, ...] = ()
    fs_settings: Tuple[Tuple[str, str], ...] = ()


class TaskWriter:
    """One task's files of one table: a Parquet writer per partition, each row group a batch."""

    def __init__(self, where: TableFiles, task: int, attempt: int):
        self.where = where
        self.fs, self.root = filesystem(where.uri, dict(where.fs_settings))
        self.name = f"{data_prefix(where.run_id)}t{task:05d}.parquet"
        self.attempt = attempt
        self.writers: Dict[str, pq.ParquetWriter] = {}

    def write(self, table: pa.Table) -> None:
        """Rows split by partition (partition columns left out: the folders hold them)."""
        partition_by = self.where.partition_by
        if not partition_by:
            return self._writer("", table.schema).write_table(table)
        for values in partition_values(table, partition_by):
            part = table.filter(rows_of(table, partition_by, values)).drop_columns(list(partition_by))
            self._writer(partition_path(partition_by, values), part.schema).write_table(part)

    def _writer(self, folder: str, schema: pa.Schema) -> pq.ParquetWriter:
        if folder not in self.writers:
            path = f"{self.root}/{folder}".rstrip("/")
            if is_local(self.fs):
                self.fs.create_dir(path, recursive=True)
            self.writers[folder] = pq.ParquetWriter(self._where_written(path), schema, filesystem=self.fs)
        return self.writers[folder]

    def _where_written(self, folder: str) -> str:
        if not is_local(self.fs):
            return f"{folder}/{self.name}"
        return f"{folder}/.{self.name}.{self.attempt}"  # hidden: readers skip it

    def close(self) -> int:
        for folder, writer in self.writers.items():
            writer.close()
            path = f"{self.root}/{folder}".rstrip("/")
            if is_local(self.fs):
                self.fs.move(self._where_written(path), f"{path}/{self.name}")
        return len(self.writers)
