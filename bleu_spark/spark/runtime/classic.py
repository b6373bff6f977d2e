"""Classic Spark as a run starts it (`runtime.start` chooses between it and Spark Connect): its
SparkContext at once, its SparkSession only when a step needs Spark SQL, and the options of the
JVM the console script starts itself."""
from __future__ import annotations

import os
import re
import sys
from functools import cached_property
from typing import List, Optional

from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from . import jvm_archive

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
