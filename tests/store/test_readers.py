"""Readers of an output folder change nothing: they read the files its commit log names (a dead
run's leftovers ignored), a read-only folder included, and a folder without this job's marker is
never cleaned, by a reader or a writer."""
import contextlib
import os
import random
import shutil
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import cli, errors, statstable, store
from test_commit import NEW, OLD, committed, files_of, in_child, read_back, write_run
from test_views import measured

DEAD_OWNER = b'{"host": "elsewhere", "pid": 1, "started": 0}\n'


def foreign_folder(folder):
    """A folder of someone else's files, with a `_commits/` of its own: no marker."""
    stats = measured(random.Random(5), 4, system="A", langpair="en-de")[0]
    for table in ("scores", "stats", "segments"):
        os.makedirs(folder / table / "day=1")
        pq.write_table(stats, folder / table / "day=1" / "mine.parquet")
        pq.write_table(stats, folder / table / f"part-20260101T000000Z-0000abcd-0.parquet")
    os.makedirs(folder / "_commits")
    (folder / "_commits" / "p-20260101T000000Z-0000abcd.json").write_bytes(DEAD_OWNER)
    (folder / "_commits" / "notes.txt").write_text("mine\n")
    return str(folder)


@pytest.mark.parametrize("where", ["", "/stats"])
def test_a_reader_of_a_folder_without_the_marker_deletes_nothing(tmp_path, capsys, where):
    folder = foreign_folder(tmp_path / "theirs")
    before = files_of(folder)
    code = cli.main(["aggregate", "--stats", folder + where, "--output", str(tmp_path / "sum")])
    err = capsys.readouterr().err
    assert files_of(folder) == before
    assert code == 0 or (err.startswith("bleu-spark: error: ") and len(err.splitlines()) == 1)


@pytest.mark.parametrize("partition_by", [(), ("day",)])
def test_a_writer_never_cleans_a_folder_without_the_marker(tmp_path, partition_by):
    folder = foreign_folder(tmp_path / "theirs")
    before = files_of(folder)
    with pytest.raises(errors.OutputError, match="holds no earlier bleu-spark result"):
        store.open_output(folder, partition_by)
    assert files_of(folder) == before


@contextlib.contextmanager
def read_only(folder):
    """Nothing in `folder` can be created, changed or removed: immutable for root (whom modes
    do not stop), else no write permission."""
    root = os.geteuid() == 0
    if root and subprocess.run(["chattr", "-R", "+i", folder], capture_output=True).returncode:
        pytest.skip("no chattr here to make a folder read-only for root")
    if not root:
        subprocess.run(["chmod", "-R", "a-w", folder], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-R", "-i", folder] if root else ["chmod", "-R", "u+w", folder],
                       check=True)


@pytest.mark.parametrize("kill_at,expected", [(3, "old"), ("after entry", "new")])
def test_a_read_only_folder_left_by_a_dead_run_is_read_through_its_log(tmp_path, kill_at, expected):
    """A run killed before its entry (its files left uncommitted) or after it (superseded files
    and its staged top-level files left): the reader reads the committed rows, changing nothing;
    the next writer cleans the folder."""
    folder = str(tmp_path / "out")
    write_run(folder, *OLD)
    want = {"old": read_back(folder)}
    shutil.copytree(folder, tmp_path / "finished")
    write_run(str(tmp_path / "finished"), *NEW)
    want["new"] = read_back(str(tmp_path / "finished"))
    if kill_at == "after entry":
        steps = []
        store.manifest.commit_hook = steps.append
        try:
            write_run(str(tmp_path / "count"), *NEW)
        finally:
            store.manifest.commit_hook = None
        kill_at = steps.index("write entry") + (3 if "link entry" in steps else 2)
    assert in_child(committed, folder, *NEW, ("day",), kill_at=kill_at) == 77
    before = files_of(folder)
    with read_only(folder):
        assert read_back(folder) == want[expected]
        code = cli.main(["aggregate", "--stats", folder, "--output", str(tmp_path / "sum")])
        assert code == 0
    assert files_of(folder) == before
    store.open_output(folder, ("day",)).abort()  # the next writer cleans up
    assert files_of(folder) != before and read_back(folder) == want[expected]


# --- a partition value that is the text Hive names null by ------------------------------------

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def null_and_its_name(folder):
    """A folder partitioned by `batch`: 3 segments where it is null, 5 where it is the text."""
    tables = [measured(random.Random(n), n, system="A", batch=value)[0] for n, value in ((3, None), (5, HIVE_NULL))]
    tables = [t.set_column(t.schema.get_field_index("batch"), "batch", t["batch"].cast(pa.string()))
              for t in tables]
    out = store.open_output(str(folder), ("batch",))
    out.write_table("stats", pa.concat_tables(tables))
    out.write_table("dashboard", pa.concat_tables(tables))
    out.commit({"run_id": out.run_id})
    return str(folder)


def segments_per_batch(table):
    return {r["batch"]: r["n_segments"] for r in table.select(["batch", "n_segments"]).to_pylist()}


def test_the_text_hive_names_null_by_is_its_own_partition(tmp_path, capsys):
    import duckdb

    folder = null_and_its_name(tmp_path / "out")
    assert sorted(os.listdir(os.path.join(folder, "stats"))) == [
        "batch=%5F_HIVE_DEFAULT_PARTITION__", f"batch={HIVE_NULL}"]
    assert segments_per_batch(statstable.read(folder)) == {None: 3, HIVE_NULL: 5}
    assert cli.main(["aggregate", "--stats", folder, "--output", str(tmp_path / "sum"),
                     "--group-by", "batch"]) == 0
    scored = pq.read_table(tmp_path / "sum" / "scores").to_pylist()
    assert {r["batch"]: r["n_segments"] for r in scored} == {None: 3, HIVE_NULL: 5}
    assert cli.main(["aggregate", "--stats", folder, "--output", str(tmp_path / "one"),
                     "--group-by", "batch", "--where", f"batch = '{HIVE_NULL}'"]) == 0
    scored = pq.read_table(tmp_path / "one" / "scores").to_pylist()
    assert {r["batch"]: r["n_segments"] for r in scored} == {HIVE_NULL: 5}
    with duckdb.connect() as con:  # a plain reader of the folder
        rows = con.execute(f"SELECT batch, sum(n_segments) FROM read_parquet('{folder}/dashboard/"
                           f"**/*.parquet', hive_partitioning = true) GROUP BY batch").fetchall()
    assert dict(rows) == {None: 3, HIVE_NULL: 5}


@pytest.mark.spark
def test_the_text_hive_names_null_by_is_its_own_partition_on_spark(spark, tmp_path):
    from bleu_spark.spark.aggregate import read_stats

    folder = null_and_its_name(tmp_path / "out")
    assert segments_per_batch(read_stats(spark, folder)) == {None: 3, HIVE_NULL: 5}
    plain = spark.read.parquet(f"{folder}/dashboard").groupBy("batch").sum("n_segments").collect()
    assert {r[0]: r[1] for r in plain} == {None: 3, HIVE_NULL: 5}  # Spark's own discovery


@pytest.mark.parametrize("names", [["notes.txt"], ["c-00000000000000000001-x.json"],
                                   ["p-20260101T000000Z-0000abcd.json", "mine"]])
def test_a_folder_holding_only_a_commits_folder_of_someone_elses_is_not_written(tmp_path, names):
    folder = tmp_path / "theirs"
    os.makedirs(folder / "_commits")
    for name in names:
        (folder / "_commits" / name).write_bytes(DEAD_OWNER)
    before = files_of(str(folder))
    with pytest.raises(errors.OutputError, match="holds no earlier bleu-spark result"):
        store.open_output(str(folder))
    assert files_of(str(folder)) == before


def test_what_a_first_run_that_died_before_its_marker_left_is_taken_over(tmp_path):
    folder = tmp_path / "out"
    os.makedirs(folder / "_commits" / "f-20260101T000000Z-0000abcd")
    (folder / "_commits" / "p-20260101T000000Z-0000abcd.json").write_bytes(DEAD_OWNER)
    out = store.open_output(str(folder))
    out.write_table("stats", measured(random.Random(1), 3, system="A")[0])
    out.commit({"run_id": out.run_id})
    assert statstable.read(str(folder)).num_rows == 1
    assert [n for n in os.listdir(folder / "_commits") if not n.startswith("c-")] == []
