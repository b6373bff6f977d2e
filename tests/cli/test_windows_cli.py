"""`--time-col` and `--window` as a user meets them before any JVM starts: each mistake is one
line with its exit code, nothing written; the job file's keys."""
import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark.cli import build_parser, effective_settings, job_options, main
from bleu_spark.errors import ConfigFileError

ONE_ROW = {"system": ["a"], "langpair": ["en-de"], "candidate": ["x"], "references": [["x"]]}


@pytest.fixture
def inputs(tmp_path):
    """An input with a time column of each kind the errors are about."""
    made = {}
    columns = {"t": pa.array([dt.datetime(2026, 1, 7, 9, 20)], pa.timestamp("ms", tz="Europe/Paris")),
               "t_ns": pa.array([dt.datetime(2026, 1, 7, 9, 20)], pa.timestamp("ns")),
               "served": pa.array(["2026-01-07 09:20"])}
    made["input"] = str(tmp_path / "in.parquet")
    pq.write_table(pa.table({**ONE_ROW, **columns}), made["input"])
    made["taken"] = str(tmp_path / "taken.parquet")
    pq.write_table(pa.table({**ONE_ROW, **columns, "window_start": pa.array([1])}), made["taken"])
    return made


@pytest.mark.parametrize("args,code,message", [
    (["--window", "15m"], 2, "--window needs --time-col COL"),
    (["--time-col", "t"], 2, "--time-col needs --window SPEC"),
    (["--time-col", "t", "--window", "15"], 2, "--window '15' is not a window"),
    (["--time-col", "t", "--window", "0h"], 2, "--window '0h' is not a window"),
    (["--time-col", "t", "--window", "1w"], 2, "--window '1w' is not a window"),
    (["--time-col", "t", "--window", "15m", "--group-by", "system,langpair"], 2,
     "--window makes the group column window_start, which --group-by does not name"),
    (["--time-col", "t", "--window", "15m", "--grouping-sets", "system;langpair"], 2,
     "which --grouping-sets does not name"),
    (["--time-col", "t", "--window", "15m", "--partition-by", "window_start"], 2,
     "--partition-by window_start: a timestamp is not a partition folder key"),
    (["--time-col", "when", "--window", "15m"], 4, "input has no column when"),
    (["--time-col", "served", "--window", "15m"], 5, "input column served is string, expected a timestamp or date"),
    (["--time-col", "t_ns", "--window", "15m"], 5, "Spark reads no nanoseconds"),
])
def test_window_mistakes_are_one_line_with_their_exit_code(inputs, tmp_path, capsys, args, code, message):
    out = tmp_path / "out"
    assert main(["score", "--input", inputs["input"], "--output", str(out), *args]) == code
    err = capsys.readouterr().err
    lines = [l for l in err.strip().splitlines() if not l.startswith("bleu-spark: progress: ")]
    assert len(lines) == 1 and lines[0].startswith("bleu-spark: error: ") and message in lines[0], err
    assert not out.exists()


def test_an_input_column_named_window_start_is_refused(inputs, tmp_path, capsys):
    code = main(["score", "--input", inputs["taken"], "--output", str(tmp_path / "out"),
                 "--time-col", "t", "--window", "1h"])
    assert code == 2
    assert "input has a column named window_start" in capsys.readouterr().err


def test_the_job_file_takes_time_col_and_window(tmp_path, capsys):
    job = tmp_path / "job.yaml"
    job.write_text("input: in.parquet\noutput: out\ntime_col: served_at\nwindow: 15min\n"
                   "group_by: [langpair, window_start]\n")
    options = job_options(effective_settings(build_parser().parse_args(["score", "--config", str(job)])))
    assert (options.time_col, options.window, options.windows.seconds) == ("served_at", "15min", 900)
    job.write_text("input: in.parquet\ntime_col: served_at\nwindow: 15\n")
    assert main(["score", "--config", str(job)]) == ConfigFileError.exit_code
    assert "window" in capsys.readouterr().err
