"""What a run asks of its Spark, whichever kind the session is: `Runtime`, implemented once for
classic Spark (`classic.ClassicRuntime`: the SparkContext, RDDs, accumulators and the JVM) and
once for Spark Connect (`connected.ConnectRuntime`: a gRPC client, none of those). The runtime
package chooses one for a session when it starts (`runtime.of`), and the rest of the package
calls its methods through the package's functions, never asking which kind it has."""
from __future__ import annotations

from typing import Callable, Iterator, List, Optional, Protocol, Tuple

UNAVAILABLE = "unavailable"  # a run.json field Spark Connect does not expose to its clients
TASK_FIELDS = ("stages", "stage_retries", "completed", "failed", "shuffle_write_bytes",
               "shuffle_read_bytes")


class Stages(Protocol):
    def active(self) -> List[Tuple[int, int, int]]:
        """The stages of this run in flight, as (stage id, tasks completed, tasks)."""

    def close(self) -> None:
        """Stops watching."""


class Runtime(Protocol):
    mode: str  # `classic` or `connect`, as run.json's `spark_mode` says it

    def parallelism(self) -> int:
        """The cores the cluster offers a stage."""

    def session_settings(self) -> dict:
        """The session's Spark settings (`spark.hadoop.fs.s3a.*` among them)."""

    def counter(self):
        """A counter tasks add to, read on the driver once their results are in."""

    def run_tasks(self, count: int, task: Callable[[Iterator[int]], Iterator], merge: Callable,
                  counters: Tuple = (), split: Optional[Callable] = None):
        """`task` over task numbers 0..count-1, one Spark task each, results merged (`runtime.run_tasks`)."""

    def stages(self) -> Stages:
        """A watch of the stages in flight."""

    def ship_file(self, path: str) -> None:
        """A local file every worker reads by its name."""

    def tag_jobs(self, tag: str, description: str) -> None:
        """The run's Spark jobs marked, to find their tasks and to cancel them together."""

    def partitions(self, frame) -> Optional[int]:
        """A DataFrame's partitions, where knowing them runs no job."""

    def analyzed(self, frame):
        """A DataFrame checked by the analyzer now."""

    def server_path(self, path: str) -> str:
        """A path as the session's Spark should read it."""

    def byte_size(self, value: str) -> int:
        """A size setting (`128m`, `1g`, bytes without a unit) in bytes, as Spark reads it."""

    def path_exists(self, path: str) -> bool:
        """Whether a path is there."""

    def input_bytes(self, frame) -> Optional[int]:
        """The size of the files a DataFrame reads (None if unknown)."""

    def describe(self) -> dict:
        """run.json's `spark`: the mode that ran, the master, the application."""

    def runs_workers_here(self) -> bool:
        """Whether the Python workers run the driver's own interpreter."""

    def java_version(self) -> str:
        """The driver JVM's Java version, or unavailable."""

    def task_summary(self, tag: str) -> dict:
        """Tasks of this run's Spark jobs (`TASK_FIELDS`)."""
