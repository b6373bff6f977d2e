"""A Spark Connect session as a run uses it (`runtime.of` chooses it for a Connect session): a
gRPC client of a server elsewhere, with no SparkContext, RDDs, accumulators or JVM handles, so
counters travel back with the tasks' results, the tasks run through `mapInArrow`, and what
cannot be reached without the JVM is said to be unavailable. Its start-up checks are in
`connect.py`."""
from __future__ import annotations

import os
import pickle
import re
import threading
from typing import Iterator, List, Optional, Tuple

import pyarrow as pa

from .protocol import TASK_FIELDS, UNAVAILABLE

CONNECT = "connect"
_PAYLOAD = "struct<result: binary, counts: array<bigint>>"


class TaskCounter:
    """A counter tasks add to, read on the driver once their results are in: Spark Connect has
    no accumulators, so `run_tasks` carries each task's count back with its result. Counts
    nothing where a pass does not go through `run_tasks` (`counted` stays False)."""

    def __init__(self):
        self.value = 0
        self.counted = False

    def add(self, n: int) -> None:
        self.value += n


class ConnectRuntime:
    mode = CONNECT

    def __init__(self, spark):
        self.spark = spark
        self._parallelism: Optional[int] = None

    def parallelism(self) -> int:
        """The partitions of `spark.range` without a count, which Spark gives as many as the
        cores a stage is offered (one small job, asked once a session)."""
        if self._parallelism is None:
            from pyspark.sql import functions as F

            ids = self.spark.range(0, 100_000).select(F.spark_partition_id().alias("partition"))
            self._parallelism = int(ids.agg(F.max("partition")).first()[0]) + 1
        return self._parallelism

    def session_settings(self) -> dict:
        """This side's spark-defaults under what the server's conf shows its clients."""
        from .classic import settings_before_start  # this side's files: no JVM started

        given = settings_before_start()
        try:
            given.update(self.spark.conf.getAll)
        except Exception:  # a server that shows none: this side's settings stand
            pass
        return given

    def counter(self) -> TaskCounter:
        return TaskCounter()

    def run_tasks(self, count: int, task, merge, counters: Tuple = (), split=None):
        """Merged here as they come, one task's result at a time, and returned as one part."""
        merged = self._tasks(count, task, merge, counters)
        return merged if split is None else [merged] if merged is not None else []

    def _tasks(self, count: int, task, merge, counters: Tuple):
        """A DataFrame of task numbers, one partition each (`spark.range` splits its rows
        evenly), through `mapInArrow`; each task's result travels pickled, as the RDD's does,
        with what it added to the counters, and the results are merged here as they come."""
        counters = tuple(c for c in counters if isinstance(c, TaskCounter))

        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            numbers = [n for batch in batches for n in batch.column(0).to_pylist()]
            before = [c.value for c in counters]
            results = list(task(iter(numbers)))
            added = [c.value - b for c, b in zip(counters, before)]
            yield pa.RecordBatch.from_pylist(
                [{"result": pickle.dumps(r), "counts": added} for r in results],
                schema=pa.schema([("result", pa.binary()), ("counts", pa.list_(pa.int64()))]))

        frame = self.spark.range(0, count, 1, numPartitions=count).mapInArrow(run, _PAYLOAD)
        total = None
        for row in frame.toLocalIterator():
            for c, added in zip(counters, row["counts"]):
                c.add(added)
                c.counted = True
            result = pickle.loads(row["result"])
            total = result if total is None else merge(total, result)
        return total

    def stages(self) -> "ReportedStages":
        return ReportedStages(self.spark)

    def ship_file(self, path: str) -> None:
        self.spark.addArtifacts(path, file=True)

    def tag_jobs(self, tag: str, description: str) -> None:
        self.spark.addTag(tag)

    def partitions(self, frame) -> Optional[int]:
        return None  # counting them would run a job

    def analyzed(self, frame):
        """Spark Connect analyzes lazily: a path that is not there should fail where it is read,
        as on classic Spark."""
        frame.schema
        return frame

    def server_path(self, path: str) -> str:
        """A relative local path made absolute here: the server reads it from its own folder."""
        if "://" not in path and not path.startswith("file:"):
            return os.path.abspath(path)
        return path

    def byte_size(self, value: str) -> int:
        match = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)b?\s*", value.lower())
        if not match:
            raise ValueError(f"not a size: {value!r}")
        return int(match[1]) * 1024 ** " kmgtp".index(match[2] or " ")

    def path_exists(self, path: str) -> bool:
        """Asked of pyarrow's file systems: the client has no Hadoop."""
        from pyarrow import fs

        try:
            filesystem, where = fs.FileSystem.from_uri(path if "://" in path else os.path.abspath(path))
            return filesystem.get_file_info(where).type != fs.FileType.NotFound
        except (pa.ArrowException, OSError, ValueError):
            return False

    def input_bytes(self, frame) -> Optional[int]:
        """The sizes of the frame's `inputFiles()` from pyarrow's file systems."""
        from pyarrow import fs

        try:
            total = 0
            for uri in frame.inputFiles():
                filesystem, where = fs.FileSystem.from_uri(uri)
                total += filesystem.get_file_info(where).size
            return total
        except Exception:  # a file system pyarrow lacks: never break a run
            return None

    def describe(self) -> dict:
        return {"spark_mode": CONNECT, "master": self.spark.conf.get("spark.master", UNAVAILABLE),
                "app_id": self.spark.conf.get("spark.app.id", UNAVAILABLE)}

    def runs_workers_here(self) -> bool:
        return False  # the server's workers: the server says what they run

    def java_version(self) -> str:
        return UNAVAILABLE  # the server's JVM is not the client's to ask

    def task_summary(self, tag: str) -> dict:
        return {k: UNAVAILABLE for k in TASK_FIELDS}  # Connect shows its clients no task metrics


class ReportedStages:
    """What Spark Connect reports of the running operation's stages, as they come."""

    def __init__(self, spark):
        self._spark = spark
        self._stages: List[Tuple[int, int, int]] = []
        self._lock = threading.Lock()
        spark.registerProgressHandler(self._reported)

    def _reported(self, stages, inflight_tasks, operation_id, done) -> None:
        with self._lock:
            self._stages = [] if done else [(s.stage_id, s.num_completed_tasks, s.num_tasks)
                                            for s in (stages or []) if not s.done]

    def active(self) -> List[Tuple[int, int, int]]:
        with self._lock:
            return list(self._stages)

    def close(self) -> None:
        self._spark.removeProgressHandler(self._reported)
