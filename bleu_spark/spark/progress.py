"""Progress lines: the pass's start and end, and between them, on long runs, rows scored so
far, the share done, and the time left.

Rows are counted by an accumulator the partition function adds to as it finishes each batch
(Spark applies a task's updates when the task ends); the share done comes from the row count
of the input, which Parquet footers give before the scoring pass starts.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Optional


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"


def say(what: str, interval: float, stream=sys.stderr) -> None:
    """A progress line for a step before the scoring pass that can take seconds (starting
    Spark, reading footers), so a run is never silent while it waits; none when `interval` is
    0."""
    if interval > 0:
        print(f"bleu-spark: progress: {what}", file=stream, flush=True)


class Progress:
    """Prints `bleu-spark: progress: ...` to stderr: a line as the pass starts, one every
    `interval` seconds while it runs, and one when it is done (so a short run shows its start
    and its end too); nothing when `interval` is 0."""

    def __init__(self, spark, total_rows: int, interval: float, stream=sys.stderr,
                 after: str = "adding up the partial sums per group"):
        self.rows = spark.sparkContext.accumulator(0)
        self.total_rows = total_rows
        self.after = after  # what the stages after scoring do, said once every row is scored
        self.interval = interval
        self.stream = stream
        self._tracker = spark.sparkContext.statusTracker()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._started = time.time()

    def __enter__(self) -> "Progress":
        if self.interval > 0:
            self._say(f"bleu-spark: progress: scoring {self.total_rows:,} rows, a line every "
                      f"{self.interval:g} s")
            self._thread = threading.Thread(target=self._run, name="bleu-spark-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, failure, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
            if failure is None:
                self._say(self.end_line())

    def end_line(self) -> str:
        return (f"bleu-spark: progress: done: {self.rows.value:,} of {self.total_rows:,} rows "
                f"scored and summed per group in {_duration(time.time() - self._started)}")

    def _say(self, line: str) -> None:
        print(line, file=self.stream, flush=True)

    def line(self) -> str:
        done, elapsed = self.rows.value, time.time() - self._started
        stages = [self._tracker.getStageInfo(s) for s in self._tracker.getActiveStageIds()]
        tasks = ", ".join(f"stage {s.stageId}: {s.numCompletedTasks}/{s.numTasks} tasks"
                          for s in stages if s)
        share = done / self.total_rows if self.total_rows else 0.0
        if done == 0 and not any(s.numCompletedTasks for s in stages if s):
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
