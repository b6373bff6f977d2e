"""An input with no rows is its own exit code, not a green run with an empty result, unless the
user allows an empty input."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import cli
from bleu_spark.cli import main
from bleu_spark.errors import EmptyInputError

SCHEMA = pa.schema([("system", pa.string()), ("langpair", pa.string()),
                    ("candidate", pa.string()), ("references", pa.list_(pa.string()))])


@pytest.fixture(autouse=True)
def shared_session(monkeypatch):
    """`main` stops the Spark it ran on: here that is the tests' shared session, kept."""
    monkeypatch.setattr(cli, "_stop_spark", lambda spark: None)


@pytest.fixture
def empty(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(SCHEMA.empty_table(), path)
    return str(path)


@pytest.mark.spark
def test_an_input_with_no_rows_is_exit_15_and_writes_nothing(spark, empty, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["score", "--input", empty, "--output", str(out), "--progress-seconds", "0"])
    err = capsys.readouterr().err
    assert code == EmptyInputError.exit_code == 15
    lines = [l for l in err.strip().splitlines() if l.startswith("bleu-spark:")]
    assert lines == [l for l in err.strip().splitlines() if l.strip()] and len(lines) == 1
    assert lines[0].startswith("bleu-spark: error: input ") and "has no rows" in lines[0]
    assert "--allow-empty-input" in lines[0]
    assert not out.exists()


@pytest.mark.spark
def test_an_empty_input_allowed_is_an_empty_result(spark, empty, tmp_path):
    out = tmp_path / "out"
    job = tmp_path / "job.yaml"
    job.write_text(f"input: {empty}\noutput: {out}\nallow_empty_input: true\nprogress_seconds: 0\n")
    assert main(["score", "--config", str(job)]) == 0
    assert json.loads((out / "scores.json").read_text()) == []
    assert json.loads((out / "run.json").read_text())["rows"]["read"] == 0
    assert (out / "_SUCCESS").exists()
    assert main(["score", "--input", empty, "--output", str(tmp_path / "again"),
                 "--allow-empty-input", "--progress-seconds", "0"]) == 0
