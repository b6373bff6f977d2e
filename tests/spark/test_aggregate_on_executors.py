"""`aggregate --groups-scored-on executors` (what auto does for sums too large for the driver)
equals the driver: statistics saved by a real `score` run with replicate sums, aggregated both
ways over two grouping sets give the same scores, dashboard, paired and stats tables row for
row (every score, interval, rank, cluster and signature) and the same counts; auto picks the
executors past DRIVER_BYTES; a user error of a scoring task is the driver's one line."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import cli
from bleu_spark.aggregate import AggregateOptions, run_aggregate
from bleu_spark.errors import UsageError
from bleu_spark.resampling import Resampling
from bleu_spark.spark.job import JobOptions, run_job
from conftest import SAMPLE
from test_groups_on_executors import generated, rows_of

pytestmark = pytest.mark.spark
SETS = (("doc", "system"), ("langpair", "system"))
TABLES = ("scores", "dashboard", "paired", "stats")


@pytest.fixture(scope="module")
def saved(spark, tmp_path_factory):
    """Statistics of 150 documents of three systems, with replicate sums, by document."""
    folder = tmp_path_factory.mktemp("saved")
    path = generated(folder / "in.parquet", 150, 2)
    drawn = Resampling(confidence=True, clusters=True, paired_bs=True, baseline="A", n_bootstrap=100)
    run_job(spark, JobOptions(input=path, output=str(folder / "out"), resampling=drawn,
                              group_by=("doc", "langpair", "system"), progress_seconds=0))
    return str(folder / "out")


def aggregated(spark, saved, out, where, **options):
    options = {"grouping_sets": SETS, **options}
    return run_aggregate(AggregateOptions(
        stats=saved, output=str(out), engine="spark", groups_scored_on=where, confidence=True,
        clusters=True, paired_bs=True, baseline="A", progress_seconds=0, **options), spark)


@pytest.fixture(scope="module")
def both(spark, saved, tmp_path_factory):
    folder = tmp_path_factory.mktemp("aggregated")
    return {where: (aggregated(spark, saved, folder / where, where), folder / where)
            for where in ("driver", "executors")}


def test_the_tables_and_counts_equal_the_driver(both):
    (driver, driver_out), (apart, apart_out) = both["driver"], both["executors"]
    assert driver.stats is not None and apart.stats is None  # where each was scored
    for table in TABLES:
        assert rows_of(apart_out, table) == rows_of(driver_out, table), table
    for key in ("rows", "groups", "paired_tests", "grouping_sets", "config", "warnings"):
        assert apart.run[key] == driver.run[key], key
    assert driver.run["groups"] == 150 * 3 + 2 * 3  # (doc, system) and (langpair, system), bleu
    scores = pq.read_table(driver_out / "scores").to_pylist()
    assert all(r["ci_low"] is not None and r["cluster"] is not None for r in scores)
    assert json.loads((apart_out / "scores.json").read_text()) == \
        json.loads((driver_out / "scores.json").read_text())
    assert json.loads((apart_out / "paired.json").read_text()) == \
        json.loads((driver_out / "paired.json").read_text())
    # the first rows in the driver's order, and each signature
    assert apart.scores == driver.scores[:len(apart.scores)] and len(apart.scores) < len(driver.scores)
    assert {r["signature"] for r in apart.signature_rows} == {r["signature"] for r in driver.scores}


def test_scores_json_is_left_out_past_its_bound_with_the_reason(spark, saved, tmp_path, monkeypatch):
    from bleu_spark.spark import apart

    monkeypatch.setattr(apart, "JSON_ROWS", 100)
    monkeypatch.setattr(apart, "REPORT_ROWS", 2)  # the report's grouping has 6 rows
    result = aggregated(spark, saved, tmp_path / "out", "executors", report=True)
    assert not (tmp_path / "out" / "scores.json").exists()
    assert "scores.json" in result.run["left_out"] and "paired.json" in result.run["left_out"]
    recorded = json.loads((tmp_path / "out" / "run.json").read_text())
    assert recorded["left_out"] == result.run["left_out"]
    assert pq.read_table(tmp_path / "out" / "scores").num_rows == result.run["groups"]
    assert "every group is in" in (tmp_path / "out" / "report.html").read_text()  # of the 6


def test_auto_scores_on_the_executors_past_the_drivers_bytes(spark, saved, tmp_path, monkeypatch):
    from bleu_spark.spark import measure

    kept = aggregated(spark, saved, tmp_path / "kept", "auto", group_by=("system",), grouping_sets=None)
    assert kept.stats is not None  # 3 groups' sums fit
    monkeypatch.setattr(measure, "DRIVER_BYTES", 10 * measure.ROW_BYTES)
    apart = aggregated(spark, saved, tmp_path / "apart", "auto")
    assert apart.stats is None and apart.run["groups"] == 150 * 3 + 2 * 3


def test_executors_with_the_local_engine_is_one_line_exit_2(saved, tmp_path, capsys):
    code = cli.main(["aggregate", "--stats", saved, "--output", str(tmp_path / "out"),
                     "--engine", "local", "--groups-scored-on", "executors"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == UsageError.exit_code == 2 and len(err) == 1 and "--engine spark" in err[0], err


def test_a_user_error_in_a_scoring_task_is_one_line_with_its_code(spark, tmp_path, monkeypatch, capsys):
    """Statistics of en-de (13a) and en-ja (ja-mecab) summed per system: a group of two
    measurements, found by the task that scores it, said as the driver says it (exit 10)."""
    from bleu_spark.errors import MixedTokenizerGroupError
    from bleu_spark.spark import distributed
    import bleu_spark.spark.runtime as runtime

    raised = []

    def raise_first_error(frame):  # the error comes from a scoring task's rows
        try:
            first(frame)
        except MixedTokenizerGroupError as exc:
            raised.append(exc)
            raise

    first = distributed.raise_first_error
    monkeypatch.setattr(distributed, "raise_first_error", raise_first_error)

    table = pq.read_table(SAMPLE)
    path = tmp_path / "mixed.parquet"
    pq.write_table(table.filter(pa.compute.is_in(table["langpair"], pa.array(["en-de", "en-ja"]))), path)
    run_job(spark, JobOptions(input=str(path), output=str(tmp_path / "saved"),
                              group_by=("langpair", "system"), progress_seconds=0))
    monkeypatch.setattr(runtime, "start", lambda *a, **k: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)  # the tests' session outlives the command
    code = cli.main(["aggregate", "--stats", str(tmp_path / "saved"), "--output", str(tmp_path / "out"),
                     "--engine", "spark", "--groups-scored-on", "executors", "--group-by", "system",
                     "--progress-seconds", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == MixedTokenizerGroupError.exit_code, err
    assert len(err) == 1 and err[0].startswith("bleu-spark: error: ") and "tokenizers" in err[0], err
    assert not (tmp_path / "out").exists() and len(raised) == 1


def test_the_metrics_coverage_warnings_are_the_drivers(spark):
    """chrf without rows in one group, ter over other segments (fingerprint) in two: the same
    lines from Spark's sums as from the driver's rows, the first group named in both."""
    from bleu_spark.aggregate import coverage_warnings_apart, metric_coverage_warnings
    from bleu_spark.spark.aggregate import SummedFrame

    rows = []
    for doc in range(4):
        for system in ("A", "B"):
            for metric in ("bleu", "chrf", "ter"):
                if metric == "chrf" and (doc, system) == (2, "B"):
                    continue
                moved = metric == "ter" and doc in (1, 3) and system == "A"
                rows.append({"doc": doc, "system": system, "metric": metric, "n_segments": 5,
                             "segment_fingerprint": 100 + doc + (7 if moved else 0)})
    table = pa.Table.from_pylist(rows)
    summed = SummedFrame(spark.createDataFrame(table.to_pandas()), table.num_rows, 0)
    for finest in (["doc", "system"], []):
        driver = metric_coverage_warnings(table, finest)
        assert len(driver) == 2
        assert coverage_warnings_apart(summed, finest) == driver
        if finest:
            assert "first in doc=2, system=B" in driver[0] and "first in doc=1, system=A" in driver[1]


@pytest.mark.catalog
def test_the_catalog_takes_the_tables_the_tasks_made(spark, saved, tmp_path):
    spark.sql(f"CREATE DATABASE agg_apart LOCATION '{tmp_path}/agg_apart.db'")
    try:
        result = run_aggregate(AggregateOptions(
            stats=saved, catalog="agg_apart", engine="spark", groups_scored_on="executors",
            group_by=("doc", "system"), progress_seconds=0), spark)
        assert result.stats is None
        assert spark.table("agg_apart.scores").count() == result.run["groups"] == 150 * 3
        assert spark.table("agg_apart.stats").count() == 150 * 3
    finally:
        spark.sql("DROP DATABASE IF EXISTS agg_apart CASCADE")
