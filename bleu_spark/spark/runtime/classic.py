"""Classic Spark as a run starts it (`runtime.start` chooses between it and Spark Connect): its
SparkContext at once, its SparkSession only when a step needs Spark SQL, and the options of the
JVM the console script starts itself."""
from __future__ import annotations

import os
import re
import sys
from collections import Counter as Tally
from functools import cached_property
from typing import List, Optional, Tuple

from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from . import jvm_archive
from .protocol import TASK_FIELDS

CLASSIC = "classic"

# One progress view, the job's: Spark's console bars would garble its lines on stderr.
SETTINGS = {"spark.ui.showConsoleProgress": "false"}


class OnDemandSession:
    """A SparkSession made when a step first needs Spark SQL (a DataFrame, a SQL setting to
    change), over a SparkContext made at once. A pass the Python workers read needs the context
    alone, and making the session cost the driver about 2 s (docs/benchmarks.md). Stands in for
    the SparkSession wherever one is taken."""

    def __init__(self, context: SparkContext, archive_to_make: Optional[str] = None):
        self.sparkContext = context
        self._archive_to_make = archive_to_make  # jvm_archive.py: made once this run stops

    @cached_property
    def session(self) -> SparkSession:
        return SparkSession.builder.config(map=SETTINGS).getOrCreate()  # over the running context

    @property
    def started(self) -> bool:
        return "session" in self.__dict__

    @property
    def conf(self):
        """The session's settings; before it starts, those it will start with (a setting
        changed starts it)."""
        return self.session.conf if self.started else _SettingsBeforeSession(self)

    def stop(self) -> None:
        (self.session if self.started else self.sparkContext).stop()
        if self._archive_to_make:
            jvm_archive.make_later(self._archive_to_make)
            self._archive_to_make = None

    def __getattr__(self, name):  # what a SparkSession has besides: read, createDataFrame, ...
        if name.startswith("_") or name == "session":  # copy's probes, or a failing session
            raise AttributeError(name)
        return getattr(self.session, name)


class _SettingsBeforeSession:
    def __init__(self, spark: OnDemandSession):
        self._spark = spark

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:
        return self._spark.sparkContext.getConf().get(key, default)

    def __getattr__(self, name):  # set, unset: on the session's own settings
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._spark.session.conf, name)


def spark_session() -> OnDemandSession:
    """Classic Spark (`runtime.start` chooses it): settings come from spark-submit, --conf and
    spark-defaults; local[*] only if none."""
    # Python workers run the driver's interpreter unless the platform names one
    # (spark.pyspark.python wins over this variable): the bare `python3` on PATH may lack pyarrow.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    archive_to_make = _console_jvm_start()
    try:
        return OnDemandSession(*_context(SparkConf().setAll(SETTINGS.items()), archive_to_make))
    except PySparkRuntimeError as exc:
        if exc.getCondition() not in ("MASTER_URL_NOT_SET", "APPLICATION_NAME_NOT_SET"):
            raise
    # The JVM is up now, so SparkConf sees what spark-submit and spark-defaults set.
    conf = SparkConf().setAll(SETTINGS.items())
    conf.setIfMissing("spark.master", "local[*]")
    conf.setIfMissing("spark.app.name", "bleu-spark")
    return OnDemandSession(_quiet(SparkContext.getOrCreate(conf)), archive_to_make)


def _context(conf: SparkConf, archive_to_make: Optional[str]):
    """(the SparkContext, where the class-data archive is to be made as the run stops). Where
    the JVM would not start with the archive (one damaged since it was made crashes it), it is
    started again without, the archive removed, and a new one is to be made."""
    try:
        return _quiet(SparkContext.getOrCreate(conf)), archive_to_make
    except PySparkRuntimeError as exc:
        removed = exc.getCondition() == "JAVA_GATEWAY_EXITED" and jvm_archive.set_aside()
        if not removed:
            raise
    return _quiet(SparkContext.getOrCreate(conf)), removed


def settings_before_start() -> dict:
    """Spark's settings known before a session starts, without starting a JVM: spark-defaults,
    and under spark-submit (whose JVM is up already) its `--conf` settings too."""
    given = spark_defaults()
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        try:
            given.update(SparkConf().getAll())
        except Exception:  # the run's own conf gives them once Spark is up
            pass
    return given


# Where a user or platform gives the driver JVM options before it starts, besides spark-defaults.
JAVA_OPTION_VARIABLES = ("SPARK_SUBMIT_OPTS", "PYSPARK_SUBMIT_ARGS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS")


def _spark_conf_dir() -> str:
    from pyspark.find_spark_home import _find_spark_home

    return os.environ.get("SPARK_CONF_DIR") or os.path.join(_find_spark_home(), "conf")


def spark_defaults() -> dict:
    """spark-defaults.conf's settings (a Java properties file: a key, then whitespace, `=` or
    `:`, then its value), comments left out."""
    path = os.path.join(_spark_conf_dir(), "spark-defaults.conf")
    if not os.path.isfile(path):
        return {}
    # A file Spark cannot read either is Spark's to report, not a traceback here.
    text = open(path, encoding="utf-8", errors="replace").read()
    lines = (line.strip() for line in text.splitlines())
    settings = (re.match(r"([^\s=:]+)\s*[\s=:]\s*(.*)", line) for line in lines
                if not line.startswith(("#", "!")))
    return {match[1]: match[2].strip() for match in settings if match}


def _driver_java_options_before_start() -> str:
    """The driver JVM's options that a user or platform gives before it starts, as one text."""
    return " ".join([spark_defaults().get("spark.driver.extraJavaOptions", ""),
                     *(os.environ.get(name, "") for name in JAVA_OPTION_VARIABLES)])


def user_log4j_config() -> bool:
    """Whether logging was configured by the user or platform: a log4j2 file in Spark's conf
    folder, or a log4j property among the driver JVM's options (those of the running JVM too,
    under spark-submit)."""
    conf_dir = _spark_conf_dir()
    if any(os.path.isfile(os.path.join(conf_dir, name))
           for name in ("log4j2.properties", "log4j2.xml", "log4j2.yaml", "log4j2.json")):
        return True
    running = SparkConf().get("spark.driver.extraJavaOptions", "")  # empty before the JVM starts
    return "log4j" in f"{running} {_driver_java_options_before_start()}"


QUIET_LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2-quiet.properties")
# The JIT's first tier only. The driver JVM of this job schedules tasks and merges small sums
# while the Python workers read and score; the second tier's compiling was half its CPU, and
# leaving it out made runs 4-18% faster on average (docs/benchmarks.md).
FIRST_TIER_JIT = "-XX:TieredStopAtLevel=1"
JIT_SETTINGS = ("Tiered", "CompilationMode", "-Xint", "-Xcomp")


def console_jvm_options(java_options: str, logging_configured: bool) -> List[str]:
    """The options the console script adds to the JVM it starts, each only where the user or
    platform set nothing of its kind."""
    options = []
    if not logging_configured:
        options.append(f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J}")
    if not any(setting in java_options for setting in JIT_SETTINGS):
        options.append(FIRST_TIER_JIT)
    return options


def _console_jvm_start() -> Optional[str]:
    """When this process starts the JVM itself (the console script, not spark-submit, whose JVM
    is up before the job), its options go in through SPARK_SUBMIT_OPTS: errors-only logging,
    since Spark's start-up warnings (loopback address, native Hadoop library) come before any
    setLogLevel could stop them, the JIT's first tier, and the class-data archive
    (`jvm_archive.py`). Returns where that archive is to be made, when there is none yet."""
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return None
    java_options = _driver_java_options_before_start()
    added = console_jvm_options(java_options, user_log4j_config())
    archive, to_make = jvm_archive.jvm_options(java_options)
    options = [os.environ.get("SPARK_SUBMIT_OPTS", ""), *added, *archive]
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(options).strip()
    return to_make


def _quiet(context: SparkContext) -> SparkContext:
    """Spark's WARN lines around the job's own one-line messages say nothing to the user: with
    Spark's default logging (no log4j2 file or property of the user's), this context logs errors
    only. A logging configuration of the user's or platform's is left as it is."""
    if not user_log4j_config():
        context.setLogLevel("ERROR")
    return context


class ClassicRuntime:
    """Classic Spark as a run uses it (`runtime.of` chooses it): the SparkContext, RDDs,
    accumulators and the driver JVM."""
    mode = CLASSIC

    def __init__(self, spark):
        self.spark = spark

    @property
    def context(self) -> SparkContext:  # no SQL session needed (the console's starts on demand)
        return self.spark.sparkContext

    def parallelism(self) -> int:
        return self.context.defaultParallelism

    def session_settings(self) -> dict:
        return dict(self.context.getConf().getAll())

    def counter(self):
        return self.context.accumulator(0)

    def run_tasks(self, count: int, task, merge, counters: Tuple = (), split=None):
        results = self.context.parallelize(range(count), count).mapPartitions(task)
        if split is None:  # a few rows a group: merged in a tree, on the executors then on the driver
            return results.treeReduce(merge)
        merged = results.flatMap(split).reduceByKey(merge, numPartitions=count)
        return [part for _, part in merged.toLocalIterator(prefetchPartitions=True)]

    def stages(self) -> "TrackedStages":
        return TrackedStages(self.context)

    def ship_file(self, path: str) -> None:
        self.context.addFile(path)

    def tag_jobs(self, tag: str, description: str) -> None:
        self.context.setJobGroup(tag, description)

    def partitions(self, frame) -> Optional[int]:
        return frame.rdd.getNumPartitions()

    def analyzed(self, frame):
        return frame  # analyzed as it is made

    def server_path(self, path: str) -> str:
        return path  # a relative one read from this process's folder

    def byte_size(self, value: str) -> int:
        return int(self.context._jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes(value))

    def path_exists(self, path: str) -> bool:
        """Asked of the file systems Spark reads the path with."""
        from py4j.protocol import Py4JError

        try:
            hadoop_path = self.context._jvm.org.apache.hadoop.fs.Path(path)
            return bool(hadoop_path.getFileSystem(self.context._jsc.hadoopConfiguration()).exists(hadoop_path))
        except Py4JError:  # no file system for the scheme, say: the reader then says it in one line
            return False

    def input_bytes(self, frame) -> Optional[int]:
        """As Spark's planner knows it."""
        try:
            return int(str(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
        except Exception:  # an internal interface: never break a run
            return None

    def describe(self) -> dict:
        return {"spark_mode": CLASSIC, "master": self.context.master, "app_id": self.context.applicationId}

    def runs_workers_here(self) -> bool:
        """Not where the platform names another interpreter (an archive's `./environment/bin/python`)."""
        named = self.context.getConf().get("spark.pyspark.python", None)
        return (named or self.context.pythonExec) == sys.executable

    def java_version(self) -> str:
        return self.context._jvm.java.lang.System.getProperty("java.version")

    def task_summary(self, tag: str) -> dict:
        """`failed` counts task attempts that were lost (e.g. with an executor) and rerun;
        `stage_retries` counts stages Spark had to run again for lost output."""
        tracker = self.context.statusTracker()
        summary = Tally()
        for job_id in tracker.getJobIdsForGroup(tag):
            job = tracker.getJobInfo(job_id)
            for stage_id in (job.stageIds if job else []):
                stage = tracker.getStageInfo(stage_id)
                if stage:
                    summary["stages"] += 1
                    summary["stage_retries"] += stage.currentAttemptId
                    summary["completed"] += stage.numCompletedTasks
                    summary.update(self._stage_metrics(stage_id, stage.numFailedTasks))
        return {k: summary.get(k, 0) for k in TASK_FIELDS}

    def _stage_metrics(self, stage_id: int, last_attempt_failed: int) -> Tally:
        """Failed tasks and bytes shuffled over every attempt of a stage. The public tracker
        shows only the last attempt, and a stage rerun after a lost executor starts at zero
        failures, so this asks the driver's status store (what the UI's REST API serves); the
        tracker's failures alone if it cannot."""
        sc = self.context
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


class TrackedStages:
    """Classic Spark's status tracker's stages in flight."""

    def __init__(self, context: SparkContext):
        self._tracker = context.statusTracker()

    def active(self) -> List[Tuple[int, int, int]]:
        stages = [self._tracker.getStageInfo(s) for s in self._tracker.getActiveStageIds()]
        return [(s.stageId, s.numCompletedTasks, s.numTasks) for s in stages if s]

    def close(self) -> None:
        pass
