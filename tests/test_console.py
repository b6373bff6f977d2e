"""What the console shows: progress lines that a short run shows too."""
import io
import re
from types import SimpleNamespace

import pytest

from bleu_spark.spark.progress import Progress


def fake_spark(value):
    tracker = SimpleNamespace(getActiveStageIds=lambda: [], getStageInfo=lambda s: None)
    context = SimpleNamespace(accumulator=lambda v: value, statusTracker=lambda: tracker)
    return SimpleNamespace(sparkContext=context)


def test_a_short_pass_shows_its_start_and_its_end():
    stream, rows = io.StringIO(), SimpleNamespace(value=0)
    with Progress(fake_spark(rows), 1234, 30, stream=stream):
        rows.value = 1234
    start, end = stream.getvalue().splitlines()
    assert start == "bleu-spark: progress: scoring 1,234 rows, a line every 30 s"
    assert re.fullmatch(r"bleu-spark: progress: done: 1,234 of 1,234 rows scored and summed per "
                        r"group in 0m0\ds", end)


def test_a_failed_pass_has_no_end_line_and_interval_0_no_line():
    stream = io.StringIO()
    with pytest.raises(RuntimeError):
        with Progress(fake_spark(SimpleNamespace(value=0)), 10, 30, stream=stream):
            raise RuntimeError("lost")
    assert stream.getvalue().count("\n") == 1 and "scoring 10 rows" in stream.getvalue()
    quiet = io.StringIO()
    with Progress(fake_spark(SimpleNamespace(value=0)), 10, 0, stream=quiet):
        pass
    assert quiet.getvalue() == ""
