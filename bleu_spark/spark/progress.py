"""Progress lines: the pass's start and end, and between them, on long runs, rows scored so
far, the share done, and the time left.

Rows are counted by a counter the partition function adds to as it finishes each batch
(Spark applies a task's updates when the task ends; `runtime/` gives one for the session's
mode); the share done comes from the row count of the input, which Parquet footers give before
the scoring pass starts. A task Spark runs again (its executor lost with the task's output)
counts its rows again: the lines never say more rows than the input has, and the end line says
how many were scored again. Through Spark Connect a pass Spark's scan reads counts no rows, and
its lines say the tasks done.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Optional

from . import runtime


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"


def say(what: str, interval: float, stream=None) -> None:
    """A progress line for a step before the scoring pass that can take seconds (starting
    Spark, reading footers), so a run is never silent while it waits; none when `interval` is
    0. To stderr as it is when said (not as it was when this module was imported)."""
    if interval > 0:
        print(f"bleu-spark: progress: {what}", file=stream or sys.stderr, flush=True)


class Progress:
    """Prints `bleu-spark: progress: ...` to stderr: a line as the pass starts, one every
    `interval` seconds while it runs, and one when it is done (so a short run shows its start
    and its end too); nothing when `interval` is 0."""

    def __init__(self, spark, total_rows: int, interval: float, stream=None,
                 after: str = "adding up the partial sums per group"):
        self.rows = runtime.counter(spark)
        self.total_rows = total_rows
        self.after = after  # what the stages after scoring do, said once every row is scored
        self.interval = interval
        self.stream = stream or sys.stderr
        self._spark = spark
        self._stages: Optional[runtime.StageWatch] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._started = time.time()

    def __enter__(self) -> "Progress":
        if self.interval > 0:
            self._stages = runtime.StageWatch(self._spark)
            self._say(f"bleu-spark: progress: scoring {self.total_rows:,} rows, a line every "
                      f"{self.interval:g} s")
            self._thread = threading.Thread(target=self._run, name="bleu-spark-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, failure, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
            self._stages.close()
            if failure is None:
                self._say(self.end_line())

    def end_line(self) -> str:
        took = _duration(time.time() - self._started)
        done = runtime.counted(self.rows)
        if done is None:
            return (f"bleu-spark: progress: done: the pass over {self.total_rows:,} rows scored "
                    f"and summed per group in {took}")
        if done > self.total_rows:
            return (f"bleu-spark: progress: done: all {self.total_rows:,} rows scored "
                    f"({done - self.total_rows:,} scored again, by tasks Spark ran again) and "
                    f"summed per group in {took}")
        return (f"bleu-spark: progress: done: {done:,} of {self.total_rows:,} rows "
                f"scored and summed per group in {took}")

    def _say(self, line: str) -> None:
        print(line, file=self.stream, flush=True)

    def line(self) -> str:
        done, elapsed = min(self.rows.value, self.total_rows), time.time() - self._started
        stages = (self._stages or runtime.StageWatch(self._spark)).active()
        # Spark counts a task run again as completed again: never more than the stage has.
        tasks = ", ".join(f"stage {stage}: {min(completed, total)}/{total} tasks"
                          for stage, completed, total in stages)
        if isinstance(self.rows, runtime.TaskCounter) and not self.rows.counted and stages:
            return (f"bleu-spark: progress: scoring {self.total_rows:,} rows, "
                    f"{_duration(elapsed)} elapsed [{tasks}]")
        share = done / self.total_rows if self.total_rows else 0.0
        if done == 0 and not any(completed for _, completed, _ in stages):
            # Before a task ends nothing is counted: say what the first tasks do meanwhile.
            return (f"bleu-spark: progress: 0 of {self.total_rows:,} rows scored, the first tasks "
                    f"starting (Python workers, imports, the compiled kernels), "
                    f"{_duration(elapsed)} elapsed" + (f" [{tasks}]" if tasks else ""))
        left = f", about {_duration(elapsed * (1 - share) / share)} left" if 0 < share < 1 else ""
        if share >= 1:  # the scoring tasks are done: say what the ones still running do
            return (f"bleu-spark: progress: all {self.total_rows:,} rows scored, {self.after}, "
                    f"{_duration(elapsed)} elapsed" + (f" [{tasks}]" if tasks else ""))
        return (f"bleu-spark: progress: {done:,} of {self.total_rows:,} rows scored "
                f"({100 * share:.0f}%), {_duration(elapsed)} elapsed{left}"
                + (f" [{tasks}]" if tasks else ""))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._say(self.line())


class StageProgress:
    """Progress lines for a step after the scoring pass that runs Spark stages of its own
    (groups scored on the executors, their tables written): what it does as it starts, then
    every `interval` seconds the time elapsed and the stages' tasks, so a long step is never
    silent; nothing when `interval` is 0."""

    def __init__(self, spark, what: str, interval: float, stream=None):
        self.what, self.interval = what, interval
        self.stream = stream or sys.stderr
        self._spark = spark
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._started = time.time()

    def __enter__(self) -> "StageProgress":
        if self.interval > 0:
            say(self.what, self.interval, self.stream)
            self._stages = runtime.StageWatch(self._spark)
            self._thread = threading.Thread(target=self._run, name="bleu-spark-stages", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
            self._stages.close()

    def line(self) -> str:
        tasks = ", ".join(f"stage {stage}: {min(done, total)}/{total} tasks"
                          for stage, done, total in self._stages.active())
        return (f"bleu-spark: progress: {self.what}, {_duration(time.time() - self._started)} "
                f"elapsed" + (f" [{tasks}]" if tasks else ""))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            print(self.line(), file=self.stream, flush=True)
