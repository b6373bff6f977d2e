"""The one way out: what every store of a run's results does (`Sink`), the fan-out that writes
into several, and `open_sink`, the one place that builds a run's sink from its options.

A run opens its sink, writes its tables (an Arrow table, or a Spark DataFrame written by the
tasks) and its files (scores.json, paired.json, report.html), then commits it, or aborts it on
any failure. The stores: the output folder (`commit.py`: `WholeOutput`, `PartitionedOutput`)
and Spark's catalog (`catalog.py`, imported only when a run names a catalog: the core never
imports pyspark). A new store is a module implementing `Sink` and one line in `STORES`.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Protocol, Sequence, Tuple

from .tasks import TableFiles


class Sink(Protocol):
    """A store of a run's results."""
    partition_by: Tuple[str, ...]

    def open(self) -> "Sink":
        """Checked (an earlier result of another shape refused) before any scoring."""

    def write_table(self, name: str, table) -> None:
        """A table (`stats`, `scores`, `rejected`, ...): a pyarrow Table, a Spark DataFrame, or a
        function making one (called only by a store that takes it; None: no rows)."""

    def write_file(self, name: str, value) -> None:
        """A file: bytes or text as they are, any other value as JSON."""

    def task_files(self, name: str) -> Optional[TableFiles]:
        """Where the tasks write a table's files themselves (the segments), if this store holds
        files; None: it takes that table as a frame (`write_table`)."""

    def written_by_tasks(self, name: str) -> List[str]:
        """The files this run's tasks wrote of `name` (full paths): none where they write none."""

    def commit(self, run: dict, prepare: Optional[Callable] = None) -> None:
        """Everything written made visible together; `prepare(sink)` first, for what must see
        the store as it will be (a partitioned folder's report)."""

    def abort(self) -> None:
        """Everything of this run undone."""


class FanOut:
    """Several sinks as one: every table to each, every file to each that holds files. Opened
    last to first (a later sink's checks make nothing, so a refusal leaves nothing behind),
    committed first to last (the first is the run's record)."""

    def __init__(self, sinks: Sequence[Sink]):
        self.sinks = list(sinks)
        self.partition_by = self.sinks[0].partition_by

    def open(self) -> "FanOut":
        self.sinks = list(reversed([sink.open() for sink in reversed(self.sinks)]))
        return self

    def write_table(self, name: str, table) -> None:
        for sink in self.sinks:
            sink.write_table(name, table)

    def write_file(self, name: str, value) -> None:
        for sink in self.sinks:
            sink.write_file(name, value)

    def task_files(self, name: str) -> Optional[TableFiles]:
        return next((w for w in (s.task_files(name) for s in self.sinks) if w is not None), None)

    def written_by_tasks(self, name: str) -> List[str]:
        """The files this run's tasks wrote of `name` (full paths), in the sink that holds them."""
        return next((s.written_by_tasks(name) for s in self.sinks if s.task_files(name)), [])

    def commit(self, run: dict, prepare: Optional[Callable] = None) -> None:
        for sink in self.sinks:
            sink.commit(run, prepare)

    def abort(self) -> None:
        for sink in self.sinks:
            sink.abort()


def _stores(sink) -> list:
    return sink.sinks if isinstance(sink, FanOut) else [sink]


def folder_of(sink):
    """The output folder among a run's stores (`commit._Output`); None without one."""
    from .commit import _Output

    return next((s for s in _stores(sink) if isinstance(s, _Output)), None)


def catalog_of(sink):
    """Spark's catalog among a run's stores; None without it."""
    from .commit import _Output

    return next((s for s in _stores(sink) if not isinstance(s, _Output)), None)


def _folder(uri: str, partition_by, run_id: str, command: str, spark, frames) -> Sink:
    from .commit import output_for

    return output_for(uri, partition_by, run_id, frames)


def _catalog(database: str, partition_by, run_id: str, command: str, spark, frames) -> Sink:
    from .catalog import CatalogSink  # pyspark: only for a run that names a catalog

    return CatalogSink(spark, database, partition_by, run_id, command)


# The stores, by the option that names where a run's results go there; the first is the run's
# record (committed first). A new store: its module and a line here (and its option).
STORES = (("output", _folder), ("catalog", _catalog))


def open_sink(options, run_id: str, command: str = "score", spark=None,
              frames: Optional[Callable] = None) -> Optional[Sink]:
    """The run's sink, opened, from the command's options (`output`, `catalog`, `partition_by`):
    one store, a fan-out to several, or None when the run writes nothing. `frames(frame,
    TableFiles)`: how the tasks write a Spark DataFrame into a folder (the Spark layer's)."""
    partition_by = tuple(getattr(options, "partition_by", ()))
    sinks = [make(getattr(options, key), partition_by, run_id, command, spark, frames)
             for key, make in STORES if getattr(options, key, None)]
    if not sinks:
        return None
    return (sinks[0] if len(sinks) == 1 else FanOut(sinks)).open()
