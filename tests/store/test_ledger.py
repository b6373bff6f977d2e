"""An incremental run's ledger (`store/ledger.py`) and what the commit does for it: the files
measured read back from the committed `input_files` table, the new and changed files, the
definition refused when it differs, earlier statistics of the touched partitions alone, the
kept files of the tables added to, and a commit refused when another run committed meanwhile.
No JVM."""
import pyarrow as pa
import pytest

from bleu_spark import store
from bleu_spark.errors import IncompatibleStatisticsError, OutputError
from bleu_spark.store import ledger


def commit_run(folder, run, files, definition=None, rejected=None, based_on=None, carried=None):
    """A run that measured `files` ({path: bytes}), committed as an incremental run commits."""
    out = store.open_output(str(folder), (), run)
    out.based_on = based_on
    out.write_table(ledger.TABLE, ledger.rows(files, run))
    out.write_table("stats", pa.table({"run": [run]}))
    if rejected is not None:
        out.write_table("rejected", pa.table({"row": rejected}))
    out.write_file(ledger.DEFINITION, definition or {"metrics": ["bleu"]})
    for table, kept in (carried or {}).items():
        out.carry(table, kept)
    out.commit({"run_id": run})
    return out


def test_the_files_measured_are_read_back_and_the_new_ones_found(tmp_path):
    commit_run(tmp_path / "out", "r1", {"/logs/a.parquet": 10, "/logs/b.parquet": 20})
    held = ledger.read(store.open_output(str(tmp_path / "out"), (), "r2"))
    assert held.measured == {"/logs/a.parquet": 10, "/logs/b.parquet": 20}
    assert held.based_on == "r1" and held.definition == {"metrics": ["bleu"]}
    new, changed = held.new_files({"/logs/a.parquet": 10, "/logs/b.parquet": 25, "/logs/c.parquet": 5})
    assert new == {"/logs/c.parquet": 5} and changed == ["/logs/b.parquet"]


def test_a_changed_definition_is_refused_naming_each_option(tmp_path):
    commit_run(tmp_path / "out", "r1", {"/a": 1}, definition={"metrics": ["bleu"], "tokenize": "13a"})
    held = ledger.read(store.open_output(str(tmp_path / "out"), (), "r2"))
    held.check_definition({"metrics": ("bleu",), "tokenize": "13a"}, "out")  # tuples as lists
    with pytest.raises(IncompatibleStatisticsError, match=r'metrics: \["bleu"\] there, \["bleu", "chrf"\] now'):
        held.check_definition({"metrics": ["bleu", "chrf"], "tokenize": "13a"}, "out")


def test_a_folder_of_a_plain_run_is_refused(tmp_path):
    out = store.open_output(str(tmp_path / "out"), (), "r1")
    out.write_table("stats", pa.table({"run": ["r1"]}))
    out.commit({"run_id": "r1"})
    with pytest.raises(OutputError, match="without --incremental"):
        ledger.read(store.open_output(str(tmp_path / "out"), (), "r2"))


def test_the_earlier_runs_rows_are_kept_and_the_ledger_grows(tmp_path):
    folder = tmp_path / "out"
    commit_run(folder, "r1", {"/a": 1}, rejected=[1, 2])
    held = ledger.read(store.open_output(str(folder), (), "r2"))
    commit_run(folder, "r2", {"/b": 2}, rejected=[3], based_on=held.based_on, carried=held.carried)
    again = ledger.read(store.open_output(str(folder), (), "r3"))
    assert again.measured == {"/a": 1, "/b": 2}
    rejected = store.live_files(store.filesystem(str(folder))[0], str(folder), "rejected")
    assert len(rejected) == 2
    stats = store.live_files(store.filesystem(str(folder))[0], str(folder), "stats")
    assert len(stats) == 1  # made again, not kept


def test_a_commit_after_another_runs_is_refused_and_leaves_the_folder_as_it_was(tmp_path):
    folder = tmp_path / "out"
    commit_run(folder, "r1", {"/a": 1})
    first = ledger.read(store.open_output(str(folder), (), "r2"))
    commit_run(folder, "r3", {"/b": 2}, based_on=first.based_on, carried=first.carried)
    with pytest.raises(OutputError, match="another run committed"):
        commit_run(folder, "r2", {"/b": 2}, based_on=first.based_on, carried=first.carried)
    assert ledger.read(store.open_output(str(folder), (), "r4")).measured == {"/a": 1, "/b": 2}


def test_earlier_statistics_of_the_touched_partitions_alone():
    new = pa.table({"day": ["d2", "d3"], "n": [1, 1]})
    earlier = pa.table({"n": [5, 6, 7], "day": ["d1", "d2", "d3"]})
    both = ledger.with_earlier(new, earlier, ("day",))
    assert sorted(zip(both["day"].to_pylist(), both["n"].to_pylist())) == [
        ("d2", 1), ("d2", 6), ("d3", 1), ("d3", 7)]
    assert ledger.with_earlier(new, None).equals(new)
