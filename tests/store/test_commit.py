"""The output folder's commit: refused overlaps and names, a commit killed at any step and
recovered, null and '' as two partitions, and failures found before anything is committed."""
import functools
import itertools
import multiprocessing
import os
import random
import shutil

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from bleu_spark import cli, errors, statstable, store
from bleu_spark.store import manifest as journal
from test_views import measured, save


def files_of(folder):
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, names in os.walk(folder) for f in names}


# --- options refused before anything is read or written --------------------------------------

@pytest.mark.parametrize("output_of", [lambda r: r, lambda r: r + "/stats", lambda r: r + "/sub",
                                       lambda r: os.path.dirname(r), "link"])
def test_aggregate_refuses_an_output_that_is_holds_or_lies_in_its_statistics(tmp_path, capsys, output_of):
    saved = save(tmp_path / "res", measured(random.Random(3), 5, system="A", langpair="en-de")[0])
    before = files_of(tmp_path)
    if output_of == "link":
        os.symlink(saved, tmp_path / "alias")
        target = str(tmp_path / "alias")
    else:
        target = output_of(saved)
    code = cli.main(["aggregate", "--stats", saved, "--output", target,
                     "--where", "langpair = 'en-de'"])
    err = capsys.readouterr().err
    assert code == 8 and err.startswith("bleu-spark: error: --output ") and "overlap" in err
    assert len(err.strip().splitlines()) == 1
    assert {k: v for k, v in files_of(tmp_path).items()} == before


@pytest.mark.parametrize("name", ["day=of", "a/b", "a\\b", "x%", ".x", "_x", "a\tb"])
def test_partition_columns_that_cannot_name_a_folder_are_refused(tmp_path, capsys, name):
    code = cli.main(["score", "--input", str(tmp_path / "in.parquet"), "--output",
                     str(tmp_path / "out"), "--partition-by", name])
    err = capsys.readouterr().err
    assert code == 2 and "cannot name a Hive partition folder" in err
    assert len(err.strip().splitlines()) == 1 and os.listdir(tmp_path) == []


# --- a commit killed at every step, then recovered ------------------------------------------

@functools.lru_cache(maxsize=None)
def stats_of(run, day):
    return measured(random.Random(f"{run}{day}"), 3, day=day, run=run)[0]


def write_run(folder, run, days, rejected_days, partition_by=("day",)):
    """A run's tables (every row names its run), committed as `score` commits them."""
    out = store.open_output(folder, partition_by, run)
    out.write_table("stats", pa.concat_tables([stats_of(run, d) for d in days]))
    for table in ("scores", "dashboard"):
        out.write_table(table, pa.table({"day": days, "run": [run] * len(days)}))
    if rejected_days:
        out.write_table("rejected", pa.table({"day": rejected_days, "run": [run] * len(rejected_days),
                                              "reason": ["empty candidate"] * len(rejected_days)}))
    out.write_json("scores.json", {"run": run})
    out.commit({"run_id": run, "run": run})


OLD = ("A", ["d1", "d2", "d3"], ["d2"])
NEW = ("B", ["d2", "d3", "d4"], ["d3"])  # d1 kept, d2 loses its rejected rows, d4 is new


def state(folder):
    """Every file of the folder but the lock and the commit log (which holds the same runs'
    entries in both, under other stamps)."""
    return {p: data for p, data in files_of(folder).items()
            if not p.startswith(("_commits/", ".lock"))}


def killer(at):
    steps = itertools.count(1)

    def hook(what):
        if next(steps) == at:
            os._exit(77)
    return hook


def in_child(target, *args, kill_at=None):
    """`target(*args)` in a forked process that dies (os._exit, as SIGKILL: no cleanup) at the
    kill_at-th file system step of a commit or recovery; its exit code."""
    def run():
        journal.commit_hook = killer(kill_at) if kill_at else None
        target(*args)
    process = multiprocessing.get_context("fork").Process(target=run)
    process.start()
    process.join(60)
    return process.exitcode


def count_steps(target, *args):
    steps = []
    journal.commit_hook = steps.append
    try:
        target(*args)
    finally:
        journal.commit_hook = None
    return len(steps)


def committed(folder, run, days, rejected_days, partition_by):
    """The run with its commit killed at the hook's step (the hook is set for the commit only)."""
    hook, journal.commit_hook = journal.commit_hook, None
    original = store.PartitionedOutput.commit if partition_by else store.WholeOutput.commit

    def commit(self, *args, **kwargs):
        journal.commit_hook = hook
        return original(self, *args, **kwargs)
    setattr(store.PartitionedOutput if partition_by else store.WholeOutput, "commit", commit)
    write_run(folder, run, days, rejected_days, partition_by)


def read_back(folder):
    rows = statstable.read(folder).select(["day", "run"]).to_pylist()
    return {(r["day"], r["run"]) for r in rows}


def reopen(folder, partition_by):
    store.open_output(folder, partition_by).abort()


@pytest.mark.parametrize("partition_by", [("day",), ()], ids=["partitioned", "whole"])
def test_a_commit_killed_at_any_step_is_read_through_its_log_and_finished_or_undone_by_the_next_run(tmp_path, partition_by):
    old, new = str(tmp_path / "old" / "out"), str(tmp_path / "new" / "out")
    write_run(old, *OLD, partition_by)
    shutil.copytree(tmp_path / "old", tmp_path / "new")
    steps = count_steps(write_run, new, *NEW, partition_by)
    assert steps >= (15 if partition_by else 10)
    expected = {"old": state(old), "new": state(new)}
    data = {"old": read_back(old), "new": read_back(new)}
    assert expected["old"] != expected["new"] and data["old"] != data["new"]
    seen = set()
    for k in range(1, steps + 1):
        place = tmp_path / f"k{k}"
        shutil.copytree(tmp_path / "old", place)
        folder = str(place / "out")
        assert in_child(committed, folder, *NEW, partition_by, kill_at=k) == 77, k
        before = files_of(folder)
        got = read_back(folder)  # a reader reads what the log names and changes nothing
        assert files_of(folder) == before, k
        # the next writer's recovery killed too, at one of its first steps, then run again
        in_child(reopen, folder, partition_by, kill_at=k % 3 + 1)
        reopen(folder, partition_by)
        now = state(folder)
        which = [name for name, files in expected.items() if files == now]
        assert which, (k, sorted(set(now) ^ set(expected["new"])))
        assert got == data[which[0]], k
        seen.add(which[0])
        leftovers = os.listdir(os.path.join(folder, "_commits"))
        assert all(p.startswith("c-") for p in leftovers), (k, leftovers)
        assert os.listdir(place) == ["out"], k
        shutil.rmtree(place)
    assert seen == {"old", "new"}  # killed before its entry: undone; after: finished


# --- everything that can fail is checked before the commit ----------------------------------

def day_rows(date, batch=None, rows=4, null_candidate=False):
    rng = random.Random(date)
    table = [{"run_date": date, "batch": batch, "system": s, "langpair": "de-en",
              "candidate": None if null_candidate and (s, i) == ("A", 0) else " ".join(rng.choice("aAbBcC") for _ in range(6)),
              "references": [" ".join(rng.choice("aAbBcC") for _ in range(6))]}
             for s in ("A", "B") for i in range(rows)]
    return pa.Table.from_pylist(table, pa.schema([
        ("run_date", pa.string()), ("batch", pa.string()), ("system", pa.string()),
        ("langpair", pa.string()), ("candidate", pa.string()), ("references", pa.list_(pa.string()))]))


def score(spark, tmp_path, table, name, out, *args):
    from hostile_common import score_in_process

    path = str(tmp_path / f"{name}.parquet")
    pq.write_table(table, path)
    return score_in_process(spark, "--input", path, "--output", str(out), "--progress-seconds", "0",
                            "--group-by", "system", *args)


@pytest.mark.spark
@pytest.mark.parametrize("day1,day2,error", [
    (["--tokenize", "intl"], ["--tokenize", "13a"], "MixedTokenizerGroupError"),
    ([], ["--lowercase"], "IncompatibleStatisticsError"),
])
def test_a_report_that_cannot_be_drawn_fails_the_run_before_its_commit(spark, tmp_path, day1, day2, error):
    from bleu_spark import errors

    out = tmp_path / "out"
    score(spark, tmp_path, day_rows("2026-01-01"), "d1", out, "--partition-by", "run_date", *day1)
    before = files_of(out)
    with pytest.raises(getattr(errors, error)) as raised:
        score(spark, tmp_path, day_rows("2026-01-02"), "d2", out, "--partition-by", "run_date",
              "--report", *day2)
    assert raised.value.exit_code == (10 if error.startswith("Mixed") else 11)
    assert files_of(out) == before  # no partition, run.json or runs/ entry of the failed run
    assert not [p for p in os.listdir(out / "_commits") if p.startswith(("p-", "f-"))]  # nothing of the failed run
    # and the report a run can draw covers the partitions kept plus its own
    score(spark, tmp_path, day_rows("2026-01-02"), "d2", out, "--partition-by", "run_date",
          "--report", *day1)
    page = (out / "report.html").read_text()
    assert "2026-01-01" in page and "2026-01-02" in page


# --- null and '' are two partitions -----------------------------------------------------------

@pytest.mark.spark
def test_null_and_empty_partition_values_are_two_partitions_in_every_table_and_reader(spark, tmp_path):
    import duckdb
    from bleu_spark.spark.aggregate import read_stats

    out = tmp_path / "out"
    score(spark, tmp_path, day_rows("2026-01-01", batch=None), "null", out, "--partition-by", "batch")
    null_folders = {t: files_of(out / t / "batch=__HIVE_DEFAULT_PARTITION__")
                    for t in ("stats", "scores", "dashboard")}
    score(spark, tmp_path, day_rows("2026-01-02", batch="", null_candidate=True), "empty", out,
          "--partition-by", "batch", "--on-invalid", "quarantine")
    assert {t: files_of(out / t / "batch=__HIVE_DEFAULT_PARTITION__") for t in null_folders} == null_folders
    assert sorted(os.listdir(out / "rejected")) == ["batch="]
    expected = {None: (8, 0), "": (7, 1)}  # batch: (scored, rejected)

    def counts(table):
        sums = {}
        for row in table.select(["batch", "n_segments", "n_rejected"]).to_pylist():
            scored, rejected = sums.get(row["batch"], (0, 0))
            sums[row["batch"]] = (scored + row["n_segments"], rejected + row["n_rejected"])
        return sums
    assert counts(statstable.read(str(out))) == expected
    assert counts(read_stats(spark, str(out))) == expected
    rejected = pq.read_table(out / "rejected" / "batch=")
    assert rejected.num_rows == 1 and rejected["candidate"].to_pylist() == [None]
    with duckdb.connect() as con:
        rows = con.execute(f"SELECT batch, sum(n_segments), sum(n_rejected) FROM read_parquet("
                           f"'{out}/dashboard/**/*.parquet', hive_partitioning = true) GROUP BY batch").fetchall()
    assert {b: (s, r) for b, s, r in rows} == expected


# --- commits cut short otherwise ----------------------------------------------------------------

def test_a_commit_cut_short_in_its_own_process_is_finished_by_its_abort(tmp_path, monkeypatch):
    folder = str(tmp_path / "out")
    write_run(folder, *OLD)
    expected = tmp_path / "expected"
    shutil.copytree(tmp_path / "out", expected)
    write_run(str(expected), *NEW)

    class Stop(BaseException):
        pass

    def stop(what):  # as SIGTERM's handler raising after the entry, in the middle of the cleanup
        if what.startswith("delete ") and "d3" in what:
            raise Stop
    out = store.open_output(folder, ("day",), "B")
    monkeypatch.setattr(store, "open_output", lambda *args: out)
    monkeypatch.setattr(journal, "commit_hook", stop)
    with pytest.raises(Stop):
        write_run(folder, *NEW)
    monkeypatch.setattr(journal, "commit_hook", None)
    assert state(folder) != state(str(expected))
    out.abort()
    assert state(folder) == state(str(expected))


def test_what_a_development_era_swap_left_beside_a_missing_output_is_never_touched(tmp_path):
    """Its retired and staging folders are not this version's: a reader finds no output, a writer
    writes a new one, and neither moves or removes them."""
    folder = save(tmp_path / "res", measured(random.Random(4), 5, system="A")[0])
    os.rename(folder, tmp_path / ".res.old-20260101T000000Z-0000abcd")
    os.makedirs(tmp_path / ".res.staging-20260101T000000Z-0000abcd")
    beside = {name: files_of(str(tmp_path / name)) for name in os.listdir(tmp_path)}
    with pytest.raises(errors.InputNotFoundError, match="not found"):
        statstable.read(folder)
    save(tmp_path / "res", measured(random.Random(5), 3, system="B")[0])
    assert statstable.read(folder)["system"].to_pylist() == ["B"]
    assert {name: files_of(str(tmp_path / name)) for name in beside} == beside


def test_once_runs_have_ended_a_plain_reader_sees_each_committed_row_once(tmp_path):
    """DuckDB over the folder's Parquet files, as a dashboard reads it: after a run killed before
    its entry, a rerun of a day and a new day, each row of the committed runs once."""
    import duckdb

    folder = str(tmp_path / "out")
    write_run(folder, *OLD)                                      # d1 d2 d3 by A
    assert in_child(committed, folder, "X", ["d1", "d9"], [], ("day",), kill_at=3) == 77
    assert os.listdir(os.path.join(folder, "stats", "day=d9"))  # its files, never committed
    write_run(folder, "B", ["d3"], [])                          # d3 again, by B
    write_run(folder, "C", ["d4"], ["d4"])                      # a new day
    expected = {("d1", "A"), ("d2", "A"), ("d3", "B"), ("d4", "C")}
    with duckdb.connect() as con:
        for table in ("dashboard", "stats"):
            rows = con.execute(f"SELECT day, run, count(*) FROM read_parquet('{folder}/{table}/**/*.parquet', "
                               f"hive_partitioning = true) GROUP BY day, run").fetchall()
            assert sorted(rows) == sorted((d, r, 1) for d, r in expected), table
        rejected = con.execute(f"SELECT day, run FROM read_parquet('{folder}/rejected/**/*.parquet', "
                               f"hive_partitioning = true)").fetchall()
    assert sorted(rejected) == [("d2", "A"), ("d4", "C")]
    assert read_back(folder) == expected


class _ListingFails(pafs.FileSystemHandler):
    """The local file system, but a listing of `_commits/` fails (a denied or timed-out LIST)."""

    def __init__(self):
        self.local = pafs.LocalFileSystem()

    def get_file_info_selector(self, selector):
        if selector.base_dir.endswith("/_commits"):
            raise PermissionError(13, "listing denied", selector.base_dir)
        return self.local.get_file_info(selector)

    get_type_name = lambda self: "listing-fails"
    normalize_path = lambda self, path: path
    equals = lambda self, other: other is self
    get_file_info = lambda self, paths: self.local.get_file_info(paths)
    create_dir = lambda self, *a: self.local.create_dir(*a)
    delete_dir = lambda self, p: self.local.delete_dir(p)
    delete_dir_contents = lambda self, p, missing_dir_ok=False: self.local.delete_dir_contents(p, missing_dir_ok)
    delete_root_dir_contents = lambda self: None
    delete_file = lambda self, p: self.local.delete_file(p)
    move = lambda self, a, b: self.local.move(a, b)
    copy_file = lambda self, a, b: self.local.copy_file(a, b)
    open_input_stream = lambda self, p: self.local.open_input_stream(p)
    open_input_file = lambda self, p: self.local.open_input_file(p)
    open_output_stream = lambda self, p, metadata=None: self.local.open_output_stream(p)
    open_append_stream = lambda self, p, metadata=None: self.local.open_append_stream(p)


def test_a_cleanup_whose_listing_fails_deletes_nothing(tmp_path):
    """The cleanup deletes the table files no entry names: a listing of the log that fails must
    stop it, never read as an empty log (which would name no file at all)."""
    from bleu_spark.store import recovery

    folder = str(tmp_path / "out")
    for run in ("A", "B"):  # B's entry supersedes A's partition
        out = store.open_output(folder, ("day",), run)
        out.write_table("scores", pa.table({"day": ["d1"], "score": [1.0]}))
        out.commit({"run_id": run})
    out = store.open_output(folder, ("day",), "C")
    out.write_table("scores", pa.table({"day": ["d2"], "score": [2.0]}))
    out.commit({"run_id": "C"})
    before = files_of(folder)
    with pytest.raises(OSError, match="listing denied"):
        recovery.finish(pafs.PyFileSystem(_ListingFails()), folder)
    assert files_of(folder) == before  # B's and C's committed files, and the log, all kept
