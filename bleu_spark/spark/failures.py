"""Spark failures that are the platform's (lost workers, memory run out), said in one line
naming the cause and the setting to change."""
from __future__ import annotations

import re
from typing import Optional

from ..errors import SparkJobFailedError

# Causes of a task failure that are the platform's, not the data's or the code's.
LOST_WORKER = ("Python worker exited unexpectedly", "ExecutorLostFailure", "Executor heartbeat timed out",
               "Container killed", "worker lost")
# In the trace when a worker was killed (or could not start) before it took the task.
WORKER_NOT_STARTED = "PythonWorkerFactory.create"


# What to raise when a JVM's memory runs out, by where it ran out.
MEMORY_SETTINGS = {"driver": "spark.driver.memory (spark-submit --driver-memory)",
                   "executor": "spark.executor.memory (in local mode the driver's: --driver-memory)"}
# A Python worker killed from outside (as the system kills a process when memory runs out).
WORKER_MEMORY_HINT = ("; if memory ran out, give each Python worker more (fewer cores per "
                      "executor: spark.executor.cores) or score fewer groups or replicates at once")


def memory_failure(exc: BaseException) -> Optional[SparkJobFailedError]:
    """Memory that ran out, as one line naming where and the setting to raise. Memory grows
    with groups x replicates x statistics (intervals), never with rows: see docs/intervals.md."""
    text = str(exc)
    if isinstance(exc, MemoryError):
        where = "driver"
    elif "java.lang.OutOfMemoryError" in text:
        where = "executor" if "Lost task" in text or "ExecutorLostFailure" in text else "driver"
    else:
        return None
    return SparkJobFailedError(f"the Spark {where} ran out of memory; raise {MEMORY_SETTINGS[where]}, "
                               f"or score fewer groups or replicates at once; nothing was written")


def lost_worker_failure(exc: BaseException) -> Optional[SparkJobFailedError]:
    """A job Spark aborted after losing a worker or executor, as one line."""
    text = str(exc)
    aborted = re.search(r"Job aborted due to stage failure: ([^\n]*)", text)
    cause = next((c for c in LOST_WORKER if c in text), None)
    if cause is None and WORKER_NOT_STARTED in text:
        error = re.search(r"most recent failure: Lost task [^:]*\): (.+)", aborted.group(1) if aborted else "")
        cause = "a Python worker failed to start" + (f" ({error.group(1).strip()[:200]})" if error else "")
    if not aborted or cause is None:
        return None
    where = re.search(r"Task \S+ in stage \S+ failed \d+ times?", aborted.group(1))
    hint = WORKER_MEMORY_HINT if cause == LOST_WORKER[0] else ""
    return SparkJobFailedError(f"the Spark job failed: {where.group(0) if where else 'a task failed'}, "
                               f"last because: {cause} (retries are the platform's "
                               f"spark.task.maxFailures){hint}; nothing was written")


# The last line of a Python worker's trace when the project raised a user error in a task.
_TASK_ERROR = re.compile(r"bleu_spark\.errors\.(\w+): (.*)")


def task_user_error(exc: BaseException) -> Optional[Exception]:
    """A user error (`bleu_spark.errors`) a task raised (a file it cannot read, say), raised
    again on the driver as itself: one line and its exit code, not Spark's trace."""
    from .. import errors

    found = _TASK_ERROR.findall(str(exc))
    if not found:
        return None
    name, message = found[-1]
    kind = getattr(errors, name, None)
    return kind(message) if isinstance(kind, type) and issubclass(kind, errors.BleuSparkError) else None
