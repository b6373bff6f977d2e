"""Saved statistics without a JVM: aggregate's checks and exit codes, the output folder's swaps."""
import json
import multiprocessing
import os
import random
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import statstable, store
from bleu_spark.languages import TextSettings
from bleu_spark.metrics.bleu import BleuConfig
from bleu_spark.errors import OutputError, UsageError
from bleu_spark.scoring import check_group_names
from bleu_spark.metrics.bleu.stats import segment_statistics, stats_names
from bleu_spark.tokenizers import LineTokenizer
from conftest import ROOT, random_sentences
from matching import assert_matches_sacrebleu
from bleu_spark.metrics.bleu.oracle import sacrebleu_score
from bleu_spark.metrics.bleu.metric import OPTIONS_TEXT as BLEU_OPTIONS


def measured(rng, n, tokenize="13a", lowercase=False, **groups):
    """One statistics row of n generated segments, measured as a run would measure them, and
    the segments themselves."""
    candidates = random_sentences(rng, n)
    references = [[r] for r in random_sentences(rng, n)]
    tokenizer = LineTokenizer(tokenize, lowercase)
    segments = segment_statistics(pa.array(candidates), pa.array(references), tokenizer, 4)
    sums = segments.stats.sum(axis=0)
    one = lambda v, t=None: pa.array([v], t)
    table = statstable.build(
        {k: one(v) for k, v in groups.items()},
        statstable.measurement_columns(1, one(tokenize), one(tokenizer.signature()),
                                       BLEU_OPTIONS.text(BleuConfig(lowercase=lowercase))),
        {"n_segments": one(n), "n_rejected": one(0), "n_reference_segments": one(None, pa.int64()),
         "min_refs": one(1), "max_refs": one(1)},
        {name: one(int(v)) for name, v in zip(stats_names(4), sums)})
    return table, candidates, references


def save(folder, *tables):
    out = store.open_output(str(folder))
    out.write_table("stats", pa.concat_tables(tables))
    out.commit({"run_id": out.run_id})
    return str(folder)


def aggregate_cli(*args):
    return subprocess.run([sys.executable, "-m", "bleu_spark", "aggregate", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_aggregate_sums_rows_and_equals_sacrebleu_on_their_segments(tmp_path):
    rng = random.Random(1)
    parts = [measured(rng, 20, system="A", day=d) for d in range(3)]
    folder = save(tmp_path / "saved", *(p[0] for p in parts))
    result = aggregate_cli("--stats", folder, "--output", str(tmp_path / "out"), "--group-by", "system",
                           "--smooth-method", "floor")
    assert result.returncode == 0, result.stderr
    (row,) = json.loads((tmp_path / "out" / "scores.json").read_text())
    candidates = [c for p in parts for c in p[1]]
    references = [r for p in parts for r in p[2]]
    assert_matches_sacrebleu(row, sacrebleu_score(candidates, references,
                                                  BleuConfig(smooth_method="floor"), text=TextSettings("13a")))
    assert "JavaGateway" not in result.stderr and "SparkContext" not in result.stderr


@pytest.mark.parametrize("other,code,message", [
    (dict(tokenize="intl"), 10, "would mix statistics of different tokenizers (tokenize: 13a vs intl"),
    (dict(lowercase=True), 11, "measured with different settings (case: mixed vs lc)"),
])
def test_aggregate_refuses_to_sum_different_measurements(tmp_path, other, code, message):
    rng = random.Random(2)
    folder = save(tmp_path / "saved", measured(rng, 5, system="A", day=1)[0],
                  measured(rng, 5, system="A", day=2, **other)[0])
    result = aggregate_cli("--stats", folder, "--output", str(tmp_path / "out"), "--group-by", "system")
    assert result.returncode == code, result.stderr
    assert result.stderr.startswith("bleu-spark: error: group system=A") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    # apart, each group is one measurement: fine
    apart = aggregate_cli("--stats", folder, "--output", str(tmp_path / "out"), "--group-by", "system,day")
    assert apart.returncode == 0, apart.stderr




@pytest.mark.parametrize("column,value,message", [
    ("metric", "comet", "statistics of metric comet (this installation reads metric bleu, chrf, chrf++, ter, "
                        "empty, copy, untranslated, off_target and segment scores only)"),
    ("format_version", 4, "statistics of format_version 4 (this installation reads format_version 3 only); "
                       "score the input again with this version"),
])
def test_statistics_of_another_metric_or_format_are_exit_11(tmp_path, capsys, column, value, message):
    from bleu_spark.cli import main

    rng = random.Random(4)
    other = measured(rng, 5, system="B")[0]
    other = other.set_column(other.schema.get_field_index(column), column,
                             pa.array([value], other.schema.field(column).type))
    folder = save(tmp_path / "saved", measured(rng, 5, system="A")[0], other)
    assert main(["aggregate", "--stats", folder, "--output", str(tmp_path / "out")]) == 11
    assert capsys.readouterr().err == f"bleu-spark: error: {message}\n"
    assert not (tmp_path / "out").exists()
    # A slice of this installation's statistics alone is scored.
    assert main(["aggregate", "--stats", folder, "--output", str(tmp_path / "out"), "--where", "system = 'A'"]) == 0


# Statistics as development-era versions wrote them: format 1 (a row per replicate and per trial,
# no fingerprint, no packed sums) and format 2 before metric_options.
OLDER_FORMATS = {
    "format-1": (1, ["segment_fingerprint", "metric_options", "replicate_sums", "trial_sums"],
                 ["replicate", "trial"]),
    "no-metric-options": (2, ["metric_options"], []),
}


def of_older_format(tmp_path, version, dropped, added):
    table = measured(random.Random(4), 5, system="A")[0].drop_columns(dropped)
    table = table.set_column(table.schema.get_field_index("format_version"), "format_version",
                             pa.array([version] * table.num_rows, pa.int32()))
    for name in added:
        table = table.append_column(name, pa.nulls(table.num_rows, pa.int32()))
    pq.write_table(table, tmp_path / "old.parquet")
    return str(tmp_path / "old.parquet")


@pytest.mark.parametrize("version,dropped,added", OLDER_FORMATS.values(), ids=list(OLDER_FORMATS))
def test_statistics_of_a_development_era_format_are_refused_in_one_line(tmp_path, capsys, version,
                                                                         dropped, added):
    from bleu_spark.cli import main

    path = of_older_format(tmp_path, version, dropped, added)
    assert main(["aggregate", "--stats", path, "--output", str(tmp_path / "out")]) == 11
    err = capsys.readouterr().err
    assert err.startswith(f"bleu-spark: error: {path} holds statistics of another format (no column "), err
    assert err.endswith("reads format_version 3 only: score the input again with this version\n")
    assert all(f"a column {c}" in err for c in added) and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.spark
@pytest.mark.parametrize("version,dropped,added", OLDER_FORMATS.values(), ids=list(OLDER_FORMATS))
def test_statistics_of_a_development_era_format_are_refused_on_spark(spark, tmp_path, version,
                                                                      dropped, added):
    from bleu_spark.errors import IncompatibleStatisticsError
    from bleu_spark.spark.aggregate import read_stats

    path = of_older_format(tmp_path, version, dropped, added)
    with pytest.raises(IncompatibleStatisticsError, match="score the input again with this version"):
        read_stats(spark, path)
@pytest.mark.parametrize("args,code,message", [
    (["--where", "no_such_column = 1"], 2, "bad --where predicate"),
    (["--group-by", "customer"], 4, "statistics have no group column customer"),
    (["--engine", "jvm"], 2, "invalid choice: 'jvm'"),
    (["--weights", "0.5,0.5"], 2, "2 weights given for max n-gram order 4"),
])
def test_aggregate_user_errors_are_one_line(tmp_path, args, code, message):
    folder = save(tmp_path / "saved", measured(random.Random(3), 5, system="A")[0])
    result = aggregate_cli("--stats", folder, "--output", str(tmp_path / "out"), *args)
    assert result.returncode == code, result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_aggregate_of_a_missing_or_foreign_path(tmp_path):
    missing = aggregate_cli("--stats", str(tmp_path / "nothing"), "--output", str(tmp_path / "out"))
    assert missing.returncode == 3 and "statistics path not found" in missing.stderr
    pq.write_table(pa.table({"x": [1]}), tmp_path / "other.parquet")
    foreign = aggregate_cli("--stats", str(tmp_path / "other.parquet"), "--output", str(tmp_path / "out"))
    assert foreign.returncode == 3 and "not a bleu-spark statistics table" in foreign.stderr


def test_an_output_with_a_run_json_of_another_tool_is_not_replaced(tmp_path):
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "run.json").write_text("{}")
    (tmp_path / "experiment" / "model.bin").write_bytes(b"weights")
    folder = save(tmp_path / "saved", measured(random.Random(4), 5, system="A")[0])
    result = aggregate_cli("--stats", folder, "--output", str(tmp_path / "experiment"))
    assert result.returncode == 8 and "holds no earlier bleu-spark result" in result.stderr
    assert (tmp_path / "experiment" / "model.bin").read_bytes() == b"weights"


def test_a_file_saved_into_the_output_while_the_run_works_is_kept(tmp_path):
    out = store.open_output(str(tmp_path / "out"))
    (tmp_path / "out" / "notes.txt").write_text("mine")  # the run writes in place: DIR is there
    out.write_table("stats", pa.table({"value": [1]}))
    out.commit({})  # a whole commit removes only what earlier commits wrote
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"
    assert (tmp_path / "out" / "run.json").exists()


def _write_partition(folder, day, marker_value, barrier):
    """One run's commit of a partition, started with the others at the barrier."""
    table = pa.table({"day": pa.array([day], pa.string()), "value": pa.array([marker_value])})
    out = store.open_output(folder, ("day",))
    for name in ("stats", "scores", "dashboard"):
        out.write_table(name, table)
    barrier.wait()
    out.commit({"run_id": out.run_id, "value": marker_value})


def test_concurrent_runs_keep_other_partitions_and_one_whole_winner_of_the_same(tmp_path):
    folder = str(tmp_path / "out")
    barrier = multiprocessing.Barrier(4)
    runs = [("d1", 1), ("d2", 2), ("d3", 3), ("d3", 4)]
    processes = [multiprocessing.Process(target=_write_partition, args=(folder, d, v, barrier))
                 for d, v in runs]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    for day, values in (("d1", {1}), ("d2", {2}), ("d3", {3, 4})):
        seen = {pq.read_table(os.path.join(folder, name, f"day={day}"))["value"].to_pylist()[0]
                for name in ("stats", "scores", "dashboard")}
        assert len(seen) == 1 and seen <= values  # one run's rows in every table: never a mix
        files = {len(os.listdir(os.path.join(folder, name, f"day={day}"))) for name in ("stats", "scores")}
        assert files == {1}
    assert len(os.listdir(os.path.join(folder, "runs"))) == 4
    assert all(p.startswith("c-") for p in os.listdir(os.path.join(folder, "_commits")))


def test_group_columns_named_like_output_fields_are_refused():
    for name in ("score", "tokenize", "grouping", "correct_2", "n_segments", "replicate_sums", "p_value"):
        with pytest.raises(UsageError, match=f"group column {name} has the name of an output field"):
            check_group_names(["system", name])


def test_a_partition_value_too_long_for_a_folder_name_is_one_line(tmp_path):
    out = store.open_output(str(tmp_path / "out"), ("text",))
    with pytest.raises(OutputError, match="cannot write stats/text=x{100}.*File name too long"):
        out.write_table("stats", pa.table({"text": ["x" * 300], "value": [1]}))
    out.abort()
    assert not os.path.exists(tmp_path / "out")  # made by the run, removed with it


def test_the_progress_line_says_what_runs_once_every_row_is_scored():
    from types import SimpleNamespace

    from bleu_spark.resampling import Resampling
    from bleu_spark.spark.job import _after_scoring
    from bleu_spark.spark.progress import Progress

    stage = SimpleNamespace(stageId=1, numCompletedTasks=0, numTasks=2)
    tracker = SimpleNamespace(getActiveStageIds=lambda: [1], getStageInfo=lambda s: stage)
    counter = SimpleNamespace(value=0)
    context = SimpleNamespace(accumulator=lambda v: counter, statusTracker=lambda: tracker)
    after = _after_scoring(Resampling(confidence=True, n_bootstrap=1000))
    progress = Progress(SimpleNamespace(sparkContext=context), 400, 0, after=after)
    counter.value = 100
    assert "100 of 400 rows scored (25%)" in progress.line()
    counter.value = 400
    line = progress.line()
    assert line.startswith("bleu-spark: progress: all 400 rows scored, adding up the partial sums "
                           "per group and their 1000 replicate sums, ")
    assert line.endswith("[stage 1: 0/2 tasks]") and "100%" not in line


def test_packed_replicate_sums_add_up_element_wise_per_group():
    """`add_up` of packed sums equals numpy's sum of each group's rows: several rows a group
    (the general path), a row a group (reordered), rows without sums, rows of another draw."""
    import random

    import numpy as np
    import pyarrow as pa

    from bleu_spark import statstable

    rng = random.Random(4)
    rows = [{"g": rng.choice(["a", "b", "c", None]), "resampling": rng.choice(["p:1", "p:1", "p:1", "q:2"]),
             "n_segments": rng.randint(0, 9),
             "replicate_sums": None if rng.random() < 0.2 else [rng.randint(0, 99) for _ in range(6)]}
            for _ in range(200)]
    table = pa.Table.from_pylist(rows, pa.schema([("g", pa.string()), ("resampling", pa.string()),
                                                  ("n_segments", pa.int64()),
                                                  ("replicate_sums", pa.list_(pa.int64()))]))
    summed = {r["g"]: r for r in statstable.add_up(table, ["g"]).to_pylist()}
    for group in {r["g"] for r in rows}:
        mine = [r for r in rows if r["g"] == group]
        labels = {r["resampling"] for r in mine}
        lists = [r["replicate_sums"] for r in mine if r["replicate_sums"] is not None]
        expected = np.sum(lists, axis=0).tolist() if lists and len(labels) == 1 else None
        assert summed[group]["replicate_sums"] == expected
        assert summed[group]["resampling"] == (labels.pop() if len(labels) == 1 else statstable.MIXED)
        assert summed[group]["n_segments"] == sum(r["n_segments"] for r in mine)
    once = statstable.add_up(table, ["g", "resampling"])
    assert statstable.add_up(once, ["g", "resampling"]).to_pylist() == once.to_pylist()


def test_local_aggregate_writes_through_its_sink_without_pyspark(tmp_path):
    """`aggregate --engine local` reads through `store.locate` and writes through the one sink
    `store.open_sink` builds: the catalog sink (pyspark's) is never imported."""
    rng = random.Random(5)
    folder = save(tmp_path / "saved", measured(rng, 10, system="A")[0])
    code = ("import sys; from bleu_spark import cli; "
            f"code = cli.main(['aggregate', '--stats', {folder!r}, '--output', "
            f"{str(tmp_path / 'out')!r}, '--engine', 'local', '--progress-seconds', '0']); "
            "sys.exit(code or 10 * any(m.split('.')[0] == 'pyspark' or m == 'bleu_spark.store.catalog' "
            "for m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert pq.read_table(str(tmp_path / "out" / "scores")).num_rows == 1


class Recording:
    """A store that records what it is asked, in order, into a shared list."""

    def __init__(self, name, said, files=True):
        self.name, self.said, self.files, self.partition_by = name, said, files, ()

    def open(self):
        self.said.append((self.name, "open"))
        return self

    def write_table(self, table_name, table):
        self.said.append((self.name, "table", table_name))

    def write_file(self, file_name, value):
        if self.files:
            self.said.append((self.name, "file", file_name))

    def task_files(self, table_name):
        return f"{self.name}/{table_name}" if self.files else None

    def written_by_tasks(self, table_name):
        return [f"{self.name}/{table_name}/part-0.parquet"] if self.files else []

    def commit(self, run, prepare=None):
        self.said.append((self.name, "commit"))

    def abort(self):
        self.said.append((self.name, "abort"))


def test_a_fan_out_opens_last_first_commits_first_first_and_writes_everything_to_each():
    said = []
    both = store.FanOut([Recording("folder", said), Recording("catalog", said, files=False)]).open()
    both.write_table("stats", pa.table({"x": [1]}))
    both.write_file("scores.json", [])
    assert both.task_files("segments") == "folder/segments"
    assert both.written_by_tasks("segments") == ["folder/segments/part-0.parquet"]
    both.commit({})
    both.abort()
    assert said == [("catalog", "open"), ("folder", "open"), ("folder", "table", "stats"),
                    ("catalog", "table", "stats"), ("folder", "file", "scores.json"),
                    ("folder", "commit"), ("catalog", "commit"), ("folder", "abort"),
                    ("catalog", "abort")]
    from types import SimpleNamespace

    assert store.open_sink(SimpleNamespace(output=None, catalog=None), "run") is None


def test_statistics_of_format_2_are_refused_in_one_line(tmp_path, capsys):
    """Format 2 had `lowercase` and `max_ngram_order` columns of their own (now in
    `metric_options`): its tables are refused, naming what to do."""
    from bleu_spark.cli import main

    table = measured(random.Random(4), 5, system="A")[0]
    table = table.set_column(table.schema.get_field_index("format_version"), "format_version",
                             pa.array([2], pa.int32()))
    table = table.append_column("lowercase", pa.array([False])).append_column(
        "max_ngram_order", pa.array([4], pa.int32())).set_column(
        table.schema.get_field_index("metric_options"), "metric_options", pa.array([""]))
    folder = save(tmp_path / "saved", table)
    assert main(["aggregate", "--stats", folder, "--output", str(tmp_path / "out")]) == 11
    assert capsys.readouterr().err == ("bleu-spark: error: statistics of format_version 2 (this "
                                       "installation reads format_version 3 only); score the input "
                                       "again with this version\n")
    assert not (tmp_path / "out").exists()
