"""Groups scored on the executors (`--groups-scored-on executors`, what `auto` does for a result
of many groups) equal groups scored on the driver: every score, interval, cluster and paired
test, the tables and scores.json, on generated inputs of 10, 10,000 and 100,000 groups and on
the bundled sample scored per segment; and the driver shows a bounded part of them."""
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark.resampling import Resampling
from bleu_spark.spark.apart import CONSOLE_ROWS, JSON_ROWS
from bleu_spark.spark.job import JobOptions, run_job
from conftest import SAMPLE, random_sentences

pytestmark = pytest.mark.spark
SYSTEMS = ("A", "B", "C")


def generated(path, groups: int, segments: int, seed: int = 5) -> str:
    """`groups` documents of `segments` segments each, translated by three systems: a
    comparison group a document."""
    rng = random.Random(seed)
    rows = []
    for doc in range(groups):
        for seg in range(segments):
            reference = random_sentences(rng, 1)[0]
            for system in SYSTEMS:
                words = reference.split()
                kept = [w for w in words if rng.random() > 0.1 * (1 + SYSTEMS.index(system))]
                rows.append({"doc": doc, "seg_id": seg, "system": system,
                             "langpair": "en-de" if doc % 2 else "de-en",
                             "candidate": " ".join(kept), "references": [reference]})
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=50_000)
    return str(path)


def run_both(spark, tmp_path, **options):
    """The same run with groups scored on the driver and on the executors."""
    results = {}
    for where in ("driver", "executors"):
        out = tmp_path / where
        results[where] = (run_job(spark, JobOptions(output=str(out), groups_scored_on=where,
                                                    progress_seconds=0, **options)), out)
    return results


def rows_of(folder, table):
    """A table's rows, each as sorted JSON text, sorted: equal tables give equal lists."""
    read = pq.read_table(folder / table).drop_columns(
        [c for c in ("run_id", "run_time") if c in pq.read_schema(next((folder / table).rglob("*.parquet"))).names])
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in read.to_pylist())


def assert_same(results, tables=("scores", "dashboard", "stats")):
    (driver, driver_out), (apart, apart_out) = results["driver"], results["executors"]
    assert apart.run["groups"] == driver.run["groups"]
    # every row, or (many groups, scored a chunk at a time) the first rows alone
    assert len(driver.scores) in (driver.run["groups"], CONSOLE_ROWS)
    assert apart.run["rows"] == driver.run["rows"]
    for table in tables:
        assert rows_of(apart_out, table) == rows_of(driver_out, table), table
    return driver, apart


@pytest.mark.parametrize("groups", [10, 10_000])
def test_groups_with_intervals_clusters_and_paired_tests_equal_the_driver(spark, tmp_path, groups):
    path = generated(tmp_path / "in.parquet", groups, 2)
    drawn = Resampling(confidence=True, clusters=True, paired_bs=True, paired_ar=True,
                       baseline="A", n_bootstrap=20, n_ar_trials=20)
    results = run_both(spark, tmp_path, input=path, resampling=drawn,
                       grouping_sets=(("doc", "system"), ("langpair", "system")))
    driver, apart = assert_same(results, ("scores", "dashboard", "stats", "paired"))
    assert any(r["ci_low"] is not None for r in driver.scores)
    assert any(r["cluster"] is not None for r in driver.scores)
    for name, count in (("scores.json", apart.run["groups"]), ("paired.json", apart.run["paired_tests"])):
        if count > JSON_ROWS:  # bounded: every row is in the table
            assert not (results["executors"][1] / name).exists() and name in apart.run["left_out"]
            continue
        assert (json.loads((results["executors"][1] / name).read_text())
                == json.loads((results["driver"][1] / name).read_text()))
    # the driver holds the first rows alone, in the driver's order
    assert apart.scores == driver.scores[:len(apart.scores)]


def test_a_hundred_thousand_groups_equal_the_driver_and_scores_json_is_left_out(spark, tmp_path):
    path = generated(tmp_path / "in.parquet", 100_000 // 3, 1)
    results = run_both(spark, tmp_path, input=path, group_by=("doc", "system"))
    driver, apart = assert_same(results)
    assert driver.run["groups"] == 3 * (100_000 // 3)
    assert not (results["executors"][1] / "scores.json").exists()
    assert "scores.json" in apart.run["left_out"]
    assert len(apart.scores) <= 100


def test_the_sample_per_segment_equals_the_driver(spark, tmp_path):
    results = run_both(spark, tmp_path, input=SAMPLE, metrics=("bleu", "chrf"),
                       group_by=("testset", "langpair", "system", "seg_id"), report=True)
    assert_same(results)
    page = (results["executors"][1] / "report.html").read_text()
    assert "every group is in" in page


def test_a_user_error_in_a_scoring_task_is_the_drivers_one_line(spark, tmp_path):
    """Two tokenizers in one group: found by the task that scores it, raised as on the driver."""
    from bleu_spark.errors import MixedTokenizerGroupError

    with pytest.raises(MixedTokenizerGroupError, match="would mix statistics of different tokenizers"):
        run_job(spark, JobOptions(input=_mixed(tmp_path), group_by=("system",),
                                  groups_scored_on="executors", progress_seconds=0))


def _mixed(tmp_path) -> str:
    """Rows of one system in en-de (13a) and en-ja (ja-mecab): one group, two tokenizers."""
    table = pq.read_table(SAMPLE)
    path = tmp_path / "mixed.parquet"
    pq.write_table(table.filter(pa.compute.is_in(table["langpair"], pa.array(["en-de", "en-ja"]))), path)
    return str(path)


def test_a_partitioned_folder_loses_its_scores_json_when_a_run_leaves_it_out(spark, tmp_path, monkeypatch):
    """Rows of partitions a run replaced must not stay in scores.json: a run whose score rows
    are too many for it removes the file (every row is in the tables)."""
    from bleu_spark.spark import apart

    table = pq.read_table(generated(tmp_path / "in.parquet", 30, 1))
    table = table.append_column("day", pa.array(["d1"] * table.num_rows))
    path = tmp_path / "days.parquet"
    pq.write_table(table, path)
    out = tmp_path / "out"
    options = dict(input=str(path), output=str(out), partition_by=("day",), group_by=("doc", "system"),
                   progress_seconds=0)
    run_job(spark, JobOptions(groups_scored_on="driver", **options))
    assert len(json.loads((out / "scores.json").read_text())) == 90
    monkeypatch.setattr(apart, "JSON_ROWS", 10)
    result = run_job(spark, JobOptions(groups_scored_on="executors", **options))
    assert not (out / "scores.json").exists() and "scores.json" in result.run["left_out"]
    assert pq.read_table(out / "scores").num_rows == 90


def test_a_file_a_task_cannot_read_is_the_inputs_error(spark, tmp_path):
    """Raised in a task of the executors' path, said on the driver as itself (exit 3)."""
    from bleu_spark.errors import InputNotFoundError

    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "a.parquet"
    pq.write_table(pa.table({"candidate": [f"the cat sat {i}" for i in range(200)],
                             "references": [["the cat sat"]] * 200}), path)
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    for i in range(8, len(data) - 16 - footer):  # the pages garbled, the footer kept
        data[i] = (data[i] * 7 + 13) % 256
    path.write_bytes(bytes(data))
    with pytest.raises(InputNotFoundError, match=f"file file://{path} cannot be read"):
        run_job(spark, JobOptions(input=str(folder), output=str(tmp_path / "out"),
                                  groups_scored_on="executors", progress_seconds=0))
    assert not (tmp_path / "out").exists()


def test_auto_scores_few_groups_on_the_driver_and_many_on_the_executors(spark, tmp_path, monkeypatch):
    """The thresholds made small: auto keeps a result of few groups on the driver (its
    statistics table comes back) and scores one of many on the executors (it does not)."""
    from bleu_spark.spark import measure

    monkeypatch.setattr(measure, "DRIVER_ROWS", 100)
    monkeypatch.setattr(measure, "DRIVER_BYTES", 50 * measure.ROW_BYTES)  # 50 statistics rows
    path = generated(tmp_path / "in.parquet", 60, 2)
    few = run_job(spark, JobOptions(input=path, group_by=("system",), progress_seconds=0))
    many = run_job(spark, JobOptions(input=path, group_by=("doc", "system"), progress_seconds=0))
    assert few.stats is not None and few.run["groups"] == 3
    assert many.stats is None and many.run["groups"] == 180


def test_the_estimate_of_groups_reads_a_sample_of_the_input(tmp_path):
    """From the Parquet footers and a few batches, on the driver: no Spark."""
    from bleu_spark.spark.scan import ArrowScan, Piece
    from pyspark.sql import types as T

    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"doc": [i // 10 for i in range(50_000)], "candidate": ["a"] * 50_000}),
                   path, row_group_size=5_000)
    schema = T.StructType([T.StructField("doc", T.LongType()), T.StructField("candidate", T.StringType())])
    tasks = tuple((Piece(str(path), (group,), ()),) for group in range(10))
    scan = ArrowScan(tasks=tasks, rows=50_000, bytes=0, row_groups=10, scan_id="t", spark_schema=schema,
                     file_columns=("doc", "candidate"), references_cols=(), references="_references",
                     reason="_row_reason", segment_hash=None)
    assert scan.estimated_groups(("doc",)) == 5_000
    assert scan.estimated_groups(()) == 1


def test_progress_lines_go_on_through_the_scoring_on_the_executors(spark, tmp_path, capsys):
    path = generated(tmp_path / "in.parquet", 50, 2)
    run_job(spark, JobOptions(input=path, output=str(tmp_path / "out"), group_by=("doc", "system"),
                              groups_scored_on="executors", progress_seconds=0.2))
    err = capsys.readouterr().err
    assert "bleu-spark: progress: scoring the groups on the executors" in err
    assert "bleu-spark: progress: writing the tables from the executors" in err
