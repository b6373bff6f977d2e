"""The one place that knows whether a run's session is classic Spark (a SparkContext and its JVM
in this process) or Spark Connect (a gRPC client of a server elsewhere: no SparkContext, RDDs,
accumulators or JVM handles). The rest of the package asks it for what a run needs: the
cluster's parallelism, counters, running a list of Python tasks, the stages in flight, shipping
a file to the workers, tagging the run's jobs, input sizes, and the task metrics and versions
of run.json; on Connect, what cannot be reached without the JVM is said to be unavailable.
"""
from __future__ import annotations

import os
import pickle
import sys
import threading
from collections import Counter as Tally
from typing import Callable, Iterator, List, Optional, Tuple

import pyarrow as pa

from . import connect

CLASSIC, CONNECT = "classic", "connect"
UNAVAILABLE = "unavailable"  # a run.json field Spark Connect does not expose to its clients


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
    """Spark's settings known before a session starts, without starting a JVM: spark-defaults,
    and under spark-submit (whose JVM is up already) its `--conf` settings too."""
    from .classic import spark_defaults

    given = spark_defaults()
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        try:
            from pyspark import SparkConf

            given.update(SparkConf().getAll())
        except Exception:  # the run's own conf gives them once Spark is up
            pass
    return given


def start():
    """The run's session: Spark Connect when the user or platform asks for it
    (`connect_settings`), whose client starts no JVM; else classic Spark (`classic.py`). A
    Connect server's address, the server and its Python workers are checked first
    (`connect.py`), each failure one line."""
    from . import classic

    remote = connect_settings()
    if remote is None:
        return classic.spark_session()
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
    return spark


def _connect_session(remote: dict):
    from pyspark.sql import SparkSession

    # A local server pyspark starts for `spark.api.mode=connect` runs its Python workers with
    # this interpreter unless the platform names one (as classic Spark in classic.py).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # No console settings: a client's are the server's, and its progress bar is off by default.
    return SparkSession.builder.config(map=remote).getOrCreate()


_parallelism: dict = {}


def parallelism(spark) -> int:
    """The cores the cluster offers a stage (SparkContext.defaultParallelism). Through Connect,
    the partitions of `spark.range` without a count, which Spark gives that many (one small
    job, asked once a session)."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    if spark.session_id not in _parallelism:
        from pyspark.sql import functions as F

        ids = spark.range(0, 100_000).select(F.spark_partition_id().alias("partition"))
        last = ids.agg(F.max("partition")).first()[0]
        _parallelism[spark.session_id] = int(last) + 1
    return _parallelism[spark.session_id]


def session_settings(spark) -> dict:
    """The session's Spark settings (`spark.hadoop.fs.s3a.*` among them): the SparkContext's
    whole conf on classic Spark; through Connect, this side's spark-defaults under what the
    server's conf shows its clients."""
    if not is_connect(spark):
        return dict(spark.sparkContext.getConf().getAll())
    given = settings_before_start()
    try:
        given.update(spark.conf.getAll)
    except Exception:  # a server that shows none: this side's settings stand
        pass
    return given


class TaskCounter:
    """A counter tasks add to, read on the driver once their results are in: Spark Connect has
    no accumulators, so `run_tasks` carries each task's count back with its result. Counts
    nothing where a pass does not go through `run_tasks` (`counted` stays False)."""

    def __init__(self):
        self.value = 0
        self.counted = False

    def add(self, n: int) -> None:
        self.value += n


def counter(spark):
    """An accumulator on classic Spark; a TaskCounter through Connect."""
    return TaskCounter() if is_connect(spark) else spark.sparkContext.accumulator(0)


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
    if is_connect(spark):
        merged = _connect_tasks(spark, count, task, merge, counters)
        return merged if split is None else [merged] if merged is not None else []
    results = spark.sparkContext.parallelize(range(count), count).mapPartitions(task)
    if split is None:  # a few rows a group: merged in a tree, on the executors then on the driver
        return results.treeReduce(merge)
    merged = results.flatMap(split).reduceByKey(merge, numPartitions=count)
    return [part for _, part in merged.toLocalIterator(prefetchPartitions=True)]


_PAYLOAD = "struct<result: binary, counts: array<bigint>>"


def _connect_tasks(spark, count: int, task, merge, counters: Tuple):
    """Through Connect: a DataFrame of task numbers, one partition each (`spark.range` splits
    its rows evenly), through `mapInArrow`; each task's result travels pickled, as the RDD's
    does, with what it added to the counters, and the results are merged here as they come."""
    counters = tuple(c for c in counters if isinstance(c, TaskCounter))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        numbers = [n for batch in batches for n in batch.column(0).to_pylist()]
        before = [c.value for c in counters]
        results = list(task(iter(numbers)))
        added = [c.value - b for c, b in zip(counters, before)]
        yield pa.RecordBatch.from_pylist(
            [{"result": pickle.dumps(r), "counts": added} for r in results],
            schema=pa.schema([("result", pa.binary()), ("counts", pa.list_(pa.int64()))]))

    frame = spark.range(0, count, 1, numPartitions=count).mapInArrow(run, _PAYLOAD)
    total = None
    for row in frame.toLocalIterator():
        for c, added in zip(counters, row["counts"]):
            c.add(added)
            c.counted = True
        result = pickle.loads(row["result"])
        total = result if total is None else merge(total, result)
    return total


class StageWatch:
    """The stages of this run in flight, as (stage id, tasks completed, tasks): classic Spark's
    status tracker, or what Spark Connect reports of the running operation."""

    def __init__(self, spark):
        self._spark = spark
        self._connect = is_connect(spark)
        self._stages: List[Tuple[int, int, int]] = []
        self._lock = threading.Lock()
        if self._connect:
            spark.registerProgressHandler(self._reported)

    def _reported(self, stages, inflight_tasks, operation_id, done) -> None:
        with self._lock:
            self._stages = [] if done else [(s.stage_id, s.num_completed_tasks, s.num_tasks)
                                            for s in (stages or []) if not s.done]

    def active(self) -> List[Tuple[int, int, int]]:
        if self._connect:
            with self._lock:
                return list(self._stages)
        tracker = self._spark.sparkContext.statusTracker()
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        return [(s.stageId, s.numCompletedTasks, s.numTasks) for s in stages if s]

    def close(self) -> None:
        if self._connect:
            self._spark.removeProgressHandler(self._reported)


def ship_file(spark, path: str) -> None:
    """A local file every worker reads by its name (`worker_file`): the SentencePiece model."""
    if is_connect(spark):
        spark.addArtifacts(path, file=True)
    else:
        spark.sparkContext.addFile(path)


def worker_file(path: str) -> str:
    """In a Python worker: a file `ship_file` shipped, by the name it was given. Spark Connect
    gives each session's files the same place, so one call serves both."""
    from pyspark import SparkFiles

    return SparkFiles.get(os.path.basename(path))


def tag_jobs(spark, tag: str, description: str) -> None:
    """The run's Spark jobs marked, to find their tasks and to cancel them together."""
    if is_connect(spark):
        spark.addTag(tag)
    else:
        spark.sparkContext.setJobGroup(tag, description)


def partitions(frame) -> Optional[int]:
    """A DataFrame's partitions; None through Connect, which would run a job to count them."""
    return None if is_connect(frame.sparkSession) else frame.rdd.getNumPartitions()


def analyzed(frame):
    """A DataFrame checked by the analyzer now: Spark Connect analyzes lazily, and a path that
    is not there should fail where it is read, as on classic Spark."""
    if is_connect(frame.sparkSession):
        frame.schema
    return frame


def server_path(spark, path: str) -> str:
    """A path as the session's Spark should read it: as given on classic Spark, which reads a
    relative one from this process's folder; through Connect, a relative local path made
    absolute here, since the server reads it from its own folder."""
    if is_connect(spark) and "://" not in path and not path.startswith("file:"):
        return os.path.abspath(path)
    return path


def byte_size(spark, value: str) -> int:
    """A size setting (`128m`, `1g`, bytes without a unit) in bytes, as Spark reads it."""
    if not is_connect(spark):
        return int(spark.sparkContext._jvm.org.apache.spark.network.util.JavaUtils
                   .byteStringAsBytes(value))
    import re

    match = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)b?\s*", value.lower())
    if not match:
        raise ValueError(f"not a size: {value!r}")
    return int(match[1]) * 1024 ** " kmgtp".index(match[2] or " ")


def path_exists(spark, path: str) -> bool:
    """Whether a path is there, asked of the file systems Spark reads it with (classic), or of
    pyarrow's (Connect, where the client has no Hadoop)."""
    if is_connect(spark):
        return _arrow_exists(path)
    from py4j.protocol import Py4JError

    context = spark.sparkContext  # no SQL session needed (the console's starts on demand)
    try:
        hadoop_path = context._jvm.org.apache.hadoop.fs.Path(path)
        return bool(hadoop_path.getFileSystem(context._jsc.hadoopConfiguration()).exists(hadoop_path))
    except Py4JError:  # no file system for the scheme, say: the reader then says it in one line
        return False


def _arrow_exists(path: str) -> bool:
    from pyarrow import fs

    try:
        filesystem, where = fs.FileSystem.from_uri(path if "://" in path else os.path.abspath(path))
        return filesystem.get_file_info(where).type != fs.FileType.NotFound
    except (pa.ArrowException, OSError, ValueError):
        return False


def input_bytes(frame) -> Optional[int]:
    """The size of the files a DataFrame reads: as Spark's planner knows it (classic), or the
    sizes of its `inputFiles()` from pyarrow's file systems (Connect); None if unknown."""
    try:
        if not is_connect(frame.sparkSession):
            return int(str(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
        from pyarrow import fs

        total = 0
        for uri in frame.inputFiles():
            filesystem, where = fs.FileSystem.from_uri(uri)
            total += filesystem.get_file_info(where).size
        return total
    except Exception:  # an internal interface, or a file system pyarrow lacks: never break a run
        return None


def describe(spark) -> dict:
    """run.json's `spark`: the mode that ran, the master, the application."""
    if is_connect(spark):
        return {"spark_mode": CONNECT, "master": spark.conf.get("spark.master", UNAVAILABLE),
                "app_id": spark.conf.get("spark.app.id", UNAVAILABLE)}
    return {"spark_mode": CLASSIC, "master": spark.sparkContext.master,
            "app_id": spark.sparkContext.applicationId}


def runs_workers_here(spark) -> bool:
    """Whether the Python workers run the driver's own interpreter (so what its install holds,
    e.g. built kernels, is theirs): not where the platform names another (an archive's
    `./environment/bin/python`), nor through Connect, whose server says."""
    if is_connect(spark):
        return False
    context = spark.sparkContext
    return (context.getConf().get("spark.pyspark.python", None) or context.pythonExec) == sys.executable


def java_version(spark) -> str:
    if is_connect(spark):  # the server's JVM is not the client's to ask
        return UNAVAILABLE
    return spark.sparkContext._jvm.java.lang.System.getProperty("java.version")


TASK_FIELDS = ("stages", "stage_retries", "completed", "failed", "shuffle_write_bytes",
               "shuffle_read_bytes")


def task_summary(spark, tag: str) -> dict:
    """Tasks of this run's Spark jobs. `failed` counts task attempts that were lost (e.g. with
    an executor) and rerun; `stage_retries` counts stages Spark had to run again for lost
    output. Through Connect, which shows its clients no task metrics: each field unavailable."""
    if is_connect(spark):
        return {k: UNAVAILABLE for k in TASK_FIELDS}
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    summary = Tally()
    for job_id in tracker.getJobIdsForGroup(tag):
        job = tracker.getJobInfo(job_id)
        for stage_id in (job.stageIds if job else []):
            stage = tracker.getStageInfo(stage_id)
            if stage:
                summary["stages"] += 1
                summary["stage_retries"] += stage.currentAttemptId
                summary["completed"] += stage.numCompletedTasks
                summary.update(_stage_metrics(sc, stage_id, stage.numFailedTasks))
    return {k: summary.get(k, 0) for k in TASK_FIELDS}


def _stage_metrics(sc, stage_id: int, last_attempt_failed: int) -> Tally:
    """Failed tasks and bytes shuffled over every attempt of a stage. The public tracker
    shows only the last attempt, and a stage rerun after a lost executor starts at zero
    failures, so this asks the driver's status store (what the UI's REST API serves); the
    tracker's failures alone if it cannot."""
    try:
        no_quantiles = sc._gateway.new_array(sc._gateway.jvm.double, 0)
        attempts = sc._jsc.sc().statusStore().stageData(stage_id, False, None, False, no_quantiles)
        metrics = Tally()
        for stage in (attempts.apply(i) for i in range(attempts.length())):
            metrics.update(failed=stage.numFailedTasks(),
                           shuffle_write_bytes=stage.shuffleWriteBytes(),
                           shuffle_read_bytes=stage.shuffleReadBytes())
        return metrics
    except Exception:  # an internal interface: never let reporting break a finished run
        return Tally(failed=last_attempt_failed)
