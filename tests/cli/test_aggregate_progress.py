"""`aggregate --progress-seconds`, declared once with score's: its range, and its lines on the
Spark engine (Spark stood in for, so no JVM starts); none on the local engine."""
import pyarrow as pa
import pytest

from bleu_spark import cli
from test_coverage import ALL, save, segment_rows


@pytest.fixture()
def saved(tmp_path):
    return save(tmp_path / "saved", segment_rows("A", ALL), segment_rows("B", ALL))


class FakeSpark:
    def stop(self):
        pass


def fake_spark(monkeypatch, stats_table: pa.Table):
    import bleu_spark.spark.aggregate as on_spark
    import bleu_spark.spark.runtime as runtime

    monkeypatch.setattr(runtime, "start", lambda *a, **k: FakeSpark())
    monkeypatch.setattr(runtime, "describe", lambda spark: {"mode": "fake"})
    monkeypatch.setattr(on_spark, "read_stats", lambda *a, **k: stats_table)


def progress_lines(err):
    return [line for line in err.splitlines() if line.startswith("bleu-spark: progress: ")]


@pytest.mark.parametrize("seconds,said", [("5", 2), ("0", 0), (None, 2)])
def test_the_spark_engine_says_its_steps_unless_told_not_to(saved, tmp_path, capsys, monkeypatch,
                                                             seconds, said):
    from bleu_spark import statstable

    fake_spark(monkeypatch, statstable.read(saved))
    args = ["aggregate", "--stats", saved, "--output", str(tmp_path / "out"), "--engine", "spark",
            "--group-by", "system"]
    code = cli.main(args + (["--progress-seconds", seconds] if seconds is not None else []))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    lines = progress_lines(captured.err)
    assert len(lines) == said, captured.err
    if said:
        assert lines[0] == "bleu-spark: progress: starting Spark"
        assert "reading and summing the statistics of" in lines[1]


def test_the_local_engine_takes_the_option_and_says_nothing(saved, tmp_path, capsys):
    code = cli.main(["aggregate", "--stats", saved, "--output", str(tmp_path / "out"),
                     "--engine", "local", "--group-by", "system", "--progress-seconds", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert progress_lines(captured.err) == []


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "1e300"])
def test_a_progress_interval_out_of_range_is_refused_as_for_score(saved, tmp_path, capsys, value):
    code = cli.main(["aggregate", "--stats", saved, "--output", str(tmp_path / "out"),
                     "--progress-seconds", value])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("bleu-spark: error: --progress-seconds must be a number")
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
