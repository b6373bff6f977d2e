"""The one place that knows whether a run's session is classic Spark (a SparkContext and its JVM
in this process) or Spark Connect (a gRPC client of a server elsewhere: no SparkContext, RDDs,
accumulators or JVM handles). The rest of the package asks it for what a run needs: the
cluster's parallelism, counters, running a list of Python tasks, the stages in flight, shipping
a file to the workers, tagging the run's jobs, input sizes, and the task metrics and versions
of run.json; on Connect, what cannot be reached without the JVM is said to be unavailable.
"""
from __future__ import annotations

import os
import sys
import weakref
from typing import Callable, Iterator, List, Optional, Tuple

from . import connect
from .connected import CONNECT, ConnectRuntime, TaskCounter
from .protocol import TASK_FIELDS, UNAVAILABLE, Runtime

CLASSIC = "classic"
__all__ = ["CLASSIC", "CONNECT", "TASK_FIELDS", "UNAVAILABLE", "Runtime", "TaskCounter"]


def mode(spark) -> str:
    """`connect` for a Spark Connect session, else `classic` (the session wrapper of
    `classic.py` included)."""
    return CONNECT if type(spark).__module__.startswith("pyspark.sql.connect") else CLASSIC


def is_connect(spark) -> bool:
    return mode(spark) == CONNECT


def connect_settings() -> Optional[dict]:
    """The settings of a Spark Connect session when one is asked for, else None: `SPARK_REMOTE`,
    `SPARK_API_MODE=connect`, `SPARK_CONNECT_MODE_ENABLED` (pyspark's mark of a Connect session
    in this process), or `spark.remote` / `spark.api.mode connect` in spark-defaults.conf, which
    pyspark's builder would read only from a JVM this process does not start."""
    from .classic import spark_defaults

    submitted = _submitted_for_connect()
    if submitted is not None:
        return submitted
    defaults = spark_defaults()
    settings = {k: defaults[k] for k in ("spark.remote", "spark.api.mode") if k in defaults}
    if "SPARK_REMOTE" in os.environ:  # the variable wins over spark-defaults, as for pyspark
        settings.pop("spark.remote", None)
    api_mode = os.environ.get("SPARK_API_MODE", settings.get("spark.api.mode", "")).lower()
    remote = "SPARK_REMOTE" in os.environ or "spark.remote" in settings
    if api_mode == "connect" and not remote:  # pyspark starts a server here, on this master
        settings["spark.master"] = os.environ.get("MASTER") or defaults.get("spark.master", "local[*]")
    if remote or "SPARK_CONNECT_MODE_ENABLED" in os.environ or api_mode == "connect":
        return settings
    return None


def _submitted_for_connect() -> Optional[dict]:
    """Under spark-submit started for Spark Connect (`--remote`, or `--conf spark.api.mode=connect`),
    whose driver JVM is a Connect client's and can run no classic Spark: the server to connect to,
    from the settings spark-submit hands pyspark (`PYSPARK_REMOTE_INIT_CONF_*`); None when
    spark-submit did not start for Connect."""
    import json

    given = {}
    for i in range(int(os.environ.get("PYSPARK_REMOTE_INIT_CONF_LEN", "0"))):
        given.update(json.loads(os.environ[f"PYSPARK_REMOTE_INIT_CONF_{i}"]))
    if not given:
        return None
    remote = os.environ.get("SPARK_REMOTE", given.get("spark.remote", ""))
    if remote.startswith("sc://"):
        return {"spark.remote": remote}
    if remote:  # an address pyspark cannot read, said in the address check's words
        connect.address(remote)
    from ...errors import UsageError

    # Tried with pyspark 4.3's wheel: the driver JVM spark-submit starts for connect mode holds
    # no Connect server (SparkConnectPlugin is not on its class path) and no classic Spark SQL.
    raise UsageError("spark-submit started for Spark Connect without a server to connect to "
                     "(spark.api.mode=connect and no sc:// address): give spark-submit "
                     "--remote sc://HOST:PORT, or run bleu-spark with SPARK_REMOTE=sc://HOST:PORT, "
                     "or leave spark.api.mode out for classic Spark")


def settings_before_start() -> dict:
    """Spark's settings known before a session starts, without starting a JVM (`classic.py`)."""
    from .classic import settings_before_start as known

    return known()


def start():
    """The run's session: Spark Connect when the user or platform asks for it
    (`connect_settings`), whose client starts no JVM; else classic Spark (`classic.py`). A
    Connect server's address, the server and its Python workers are checked first
    (`connect.py`), each failure one line."""
    from . import classic

    remote = connect_settings()
    if remote is None:
        return _started(classic.spark_session(), classic.ClassicRuntime)
    url = remote.get("spark.remote", os.environ.get("SPARK_REMOTE"))
    server = url is not None and not connect.is_local_master(url)
    # gRPC's C core logs a failed TLS handshake on stderr unless told before it loads.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    try:
        if server:
            connect.check_server(url)
        spark = _connect_session(remote)
    except ImportError as exc:  # the client's packages (grpcio, ...) are not installed
        from ...errors import UsageError

        raise UsageError(f"Spark Connect was asked for (SPARK_REMOTE, spark.remote or "
                         f"spark.api.mode) but its client cannot load ({exc}); install it with "
                         f"pip install 'bleu-spark[connect]'") from None
    if server:  # a server pyspark starts here runs its workers with this interpreter
        try:
            connect.check_workers(spark)
        except Exception:
            spark.stop()  # the session is released on the server, not left to time out
            raise
    return _started(spark, ConnectRuntime)


def _connect_session(remote: dict):
    from pyspark.sql import SparkSession

    # A local server pyspark starts for `spark.api.mode=connect` runs its Python workers with
    # this interpreter unless the platform names one (as classic Spark in classic.py).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # No console settings: a client's are the server's, and its progress bar is off by default.
    return SparkSession.builder.config(map=remote).getOrCreate()


_RUNTIMES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _started(spark, kind):
    """A session `start` made, its runtime chosen as it starts."""
    _chosen(spark, kind)
    return spark


def _chosen(spark, kind) -> Runtime:
    """The session's runtime, chosen once: `start` chooses it, `of` for a session made
    elsewhere (a caller's own, to `score_dataframe`)."""
    runtime = kind(spark)
    try:
        _RUNTIMES[spark] = runtime
    except TypeError:  # a stand-in that cannot be referenced weakly (a test's): chosen each time
        pass
    return runtime


def of(spark) -> Runtime:
    """The runtime of a session (or of the session a DataFrame belongs to), chosen the first
    time it is asked for: the one place that asks which kind of Spark it is."""
    try:
        return _RUNTIMES[spark]
    except (KeyError, TypeError):
        from .classic import ClassicRuntime

        return _chosen(spark, ConnectRuntime if is_connect(spark) else ClassicRuntime)


# What the rest of the package asks, each answered by the session's runtime (`protocol.py`).
def parallelism(spark) -> int:
    """The cores the cluster offers a stage."""
    return of(spark).parallelism()


def session_settings(spark) -> dict:
    """The session's Spark settings (`spark.hadoop.fs.s3a.*` among them)."""
    return of(spark).session_settings()


def counter(spark):
    """An accumulator on classic Spark; a TaskCounter through Connect."""
    return of(spark).counter()


def counted(value) -> Optional[int]:
    """A counter's value; None where nothing could count it (a Connect pass outside
    `run_tasks`)."""
    if isinstance(value, TaskCounter) and not value.counted:
        return None
    return value.value


def run_tasks(spark, count: int, task: Callable[[Iterator[int]], Iterator], merge: Callable,
              counters: Tuple = (), split: Optional[Callable] = None):
    """`task` over task numbers 0..count-1, one Spark task each, its results merged with
    `merge`. With `split(result)`, giving (bucket, part) pairs, the parts are merged a bucket at
    a time and the merged buckets returned as a list, so no process holds more than one task's
    results and the whole (results with bootstrap replicates are large); through Connect they
    are merged here as they come, one task's result at a time, and returned as one part."""
    return of(spark).run_tasks(count, task, merge, counters, split)


class StageWatch:
    """The stages of this run in flight, as (stage id, tasks completed, tasks): classic Spark's
    status tracker, or what Spark Connect reports of the running operation."""

    def __init__(self, spark):
        self._stages = of(spark).stages()

    def active(self) -> List[Tuple[int, int, int]]:
        return self._stages.active()

    def close(self) -> None:
        self._stages.close()


def ship_file(spark, path: str) -> None:
    """A local file every worker reads by its name (`worker_file`): the SentencePiece model."""
    of(spark).ship_file(path)


def worker_file(path: str) -> str:
    """In a Python worker: a file `ship_file` shipped, by the name it was given. Spark Connect
    gives each session's files the same place, so one call serves both."""
    from pyspark import SparkFiles

    return SparkFiles.get(os.path.basename(path))


def tag_jobs(spark, tag: str, description: str) -> None:
    """The run's Spark jobs marked, to find their tasks and to cancel them together."""
    of(spark).tag_jobs(tag, description)


def partitions(frame) -> Optional[int]:
    """A DataFrame's partitions; None through Connect, which would run a job to count them."""
    return of(frame.sparkSession).partitions(frame)


def analyzed(frame):
    """A DataFrame checked by the analyzer now: Spark Connect analyzes lazily, and a path that
    is not there should fail where it is read, as on classic Spark."""
    return of(frame.sparkSession).analyzed(frame)


def server_path(spark, path: str) -> str:
    """A path as the session's Spark should read it: as given on classic Spark, which reads a
    relative one from this process's folder; through Connect, a relative local path made
    absolute here, since the server reads it from its own folder."""
    return of(spark).server_path(path)


def byte_size(spark, value: str) -> int:
    """A size setting (`128m`, `1g`, bytes without a unit) in bytes, as Spark reads it."""
    return of(spark).byte_size(value)


def path_exists(spark, path: str) -> bool:
    """Whether a path is there, asked of the file systems Spark reads it with (classic), or of
    pyarrow's (Connect, where the client has no Hadoop)."""
    return of(spark).path_exists(path)


def input_bytes(frame) -> Optional[int]:
    """The size of the files a DataFrame reads: as Spark's planner knows it (classic), or the
    sizes of its `inputFiles()` from pyarrow's file systems (Connect); None if unknown."""
    try:
        return of(frame.sparkSession).input_bytes(frame)
    except Exception:  # an internal interface, or a file system pyarrow lacks: never break a run
        return None


def describe(spark) -> dict:
    """run.json's `spark`: the mode that ran, the master, the application."""
    return of(spark).describe()


def runs_workers_here(spark) -> bool:
    """Whether the Python workers run the driver's own interpreter (so what its install holds,
    e.g. built kernels, is theirs): not where the platform names another (an archive's
    `./environment/bin/python`), nor through Connect, whose server says."""
    return of(spark).runs_workers_here()


def java_version(spark) -> str:
    return of(spark).java_version()


def task_summary(spark, tag: str) -> dict:
    """Tasks of this run's Spark jobs. `failed` counts task attempts that were lost (e.g. with
    an executor) and rerun; `stage_retries` counts stages Spark had to run again for lost
    output. Through Connect, which shows its clients no task metrics: each field unavailable."""
    return of(spark).task_summary(tag)
