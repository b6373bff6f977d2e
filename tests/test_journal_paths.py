"""Whoever can write an output folder cannot make a reader or writer of it touch anything outside
it (a reader touches nothing at all): every path a commit journal or marker names is confined to DIR, a journal or marker of
another shape is refused in one line naming the file, and nothing is moved or removed."""
import json
import os

import pytest

from bleu_spark import store
from bleu_spark.store import layout
from bleu_spark.cli import main
from bleu_spark.errors import ForeignFileError
from test_predicate import save, stats_table

DEAD = {"host": "elsewhere", "pid": 1, "started": 0}   # a run long gone: its commit is replayed
RUN = "20260101T000000Z-0000dead"


@pytest.fixture
def victim(tmp_path):
    folder = tmp_path / "victim"
    (folder / "run_date=2026-01-01").mkdir(parents=True)
    (folder / "precious.txt").write_text("keep me")
    (folder / "run_date=2026-01-01" / "data.txt").write_text("keep me too")
    # a victim that looks like a result, as a retired DIR would
    (folder / layout.MARKER).write_text(json.dumps({"format": layout.OUTPUT_FORMAT}))
    return folder


def snapshot(folder):
    return sorted((str(p.relative_to(folder)), p.read_bytes() if p.is_file() else None)
                  for p in folder.rglob("*"))


@pytest.fixture
def partitioned(tmp_path):
    return save(tmp_path / "out" / "daily", stats_table(6), ("run_date",))


@pytest.fixture
def whole(tmp_path):
    return save(tmp_path / "out" / "res", stats_table(6))


def plant(folder, journal):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, layout.JOURNAL), "w") as handle:
        handle.write(journal if isinstance(journal, str) else json.dumps(journal))


def refused_everywhere(dir_, tmp_path, capsys, name_in_message, journal=True):
    """A reader (aggregate, on its own engine) and `recover` (which every writer calls first):
    one line naming the file, exit 16, nothing created."""
    code = main(["aggregate", "--stats", dir_, "--output", str(tmp_path / "agg")])
    err = capsys.readouterr().err
    assert code == ForeignFileError.exit_code == 16, err
    assert err.startswith("bleu-spark: error: ") and len(err.strip().splitlines()) == 1, err
    assert name_in_message in err and "Traceback" not in err
    assert not (tmp_path / "agg").exists()
    if journal:
        with pytest.raises(ForeignFileError):
            store.recover(dir_)
    return err


PARTITIONED_ESCAPES = [
    {"swaps": [["stats", "../../../victim", False]], "files": []},
    {"swaps": [["stats", "run_date=2026-01-01/../../../../victim", False]], "files": []},
    {"swaps": [["stats", "", False]], "files": []},
    {"swaps": [["../victim", "run_date=x", False]], "files": []},
    {"swaps": [], "files": ["../../victim/precious.txt"]},
    {"swaps": [], "files": ["/etc/passwd"]},
    {"swaps": [["stats", "run_date=x", "yes"]], "files": []},
    {"swaps": {"stats": "run_date=x"}, "files": []},
    {"swaps": [["stats"]], "files": []},
    {"files": []},
]


@pytest.mark.parametrize("journal", PARTITIONED_ESCAPES)
def test_a_partitioned_journal_naming_a_path_outside_dir_is_refused(partitioned, victim, tmp_path,
                                                                     capsys, journal):
    staging = f"{partitioned}/.staging-{RUN}"
    plant(staging, {"run_id": RUN, "owner": DEAD, **journal})
    before = snapshot(victim), snapshot(tmp_path / "out")
    refused_everywhere(partitioned, tmp_path, capsys, f"{staging}/{layout.JOURNAL}")
    assert (snapshot(victim), snapshot(tmp_path / "out")) == before


def test_a_partitioned_journal_through_a_symbolic_link_is_refused(partitioned, victim, tmp_path, capsys):
    os.symlink(victim / "run_date=2026-01-01", f"{partitioned}/stats/run_date=2026-01-09")
    staging = f"{partitioned}/.staging-{RUN}"
    plant(staging, {"run_id": RUN, "owner": DEAD, "swaps": [["stats", "run_date=2026-01-09", False]],
                    "files": []})
    before = snapshot(victim)
    err = refused_everywhere(partitioned, tmp_path, capsys, "symbolic link")
    assert "run_date=2026-01-09" in err and snapshot(victim) == before


def test_a_staging_folder_that_is_a_symbolic_link_is_refused(partitioned, victim, tmp_path, capsys):
    plant(victim, {"run_id": RUN, "owner": DEAD, "swaps": [], "files": []})
    os.symlink(victim, f"{partitioned}/.staging-{RUN}")
    before = snapshot(victim)
    refused_everywhere(partitioned, tmp_path, capsys, "is a symbolic link")
    assert snapshot(victim) == before


def test_a_lock_file_that_is_a_symbolic_link_is_refused(partitioned, tmp_path, capsys):
    target = tmp_path / "elsewhere.lock"
    os.remove(f"{partitioned}/.lock") if os.path.lexists(f"{partitioned}/.lock") else None
    os.symlink(target, f"{partitioned}/.lock")
    plant(f"{partitioned}/.staging-{RUN}", {"run_id": RUN, "owner": DEAD, "swaps": [], "files": []})
    # a reader takes no lock: it says the commit is left for the next writer, which refuses
    code = main(["aggregate", "--stats", partitioned, "--output", str(tmp_path / "agg")])
    err = capsys.readouterr().err
    assert code == 3 and "left half done" in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(ForeignFileError, match=".lock is a symbolic link"):
        store.recover(partitioned)
    assert not target.exists()


WHOLE_ESCAPES = [
    lambda dir_, victim: {"run_id": RUN, "owner": DEAD, "retired": str(victim)},
    lambda dir_, victim: {"run_id": RUN, "owner": DEAD, "retired": f"{dir_}/../victim"},
    lambda dir_, victim: {"run_id": "../../victim", "owner": DEAD,
                          "retired": f"{os.path.dirname(dir_)}/.res.old-../../victim"},
    lambda dir_, victim: {"run_id": RUN, "owner": DEAD},
    lambda dir_, victim: {"run_id": RUN, "owner": [], "retired": f"{os.path.dirname(dir_)}/.res.old-{RUN}"},
    lambda dir_, victim: [RUN, str(victim)],
    lambda dir_, victim: "{not json",
]


@pytest.mark.parametrize("where", ["staging", "dir"])
@pytest.mark.parametrize("make", WHOLE_ESCAPES)
def test_a_whole_commit_journal_naming_another_folder_or_of_another_shape_is_refused(
        whole, victim, tmp_path, capsys, make, where):
    folder = f"{os.path.dirname(whole)}/.res.staging-{RUN}" if where == "staging" else whole
    plant(folder, make(whole, victim))
    before = snapshot(victim), snapshot(tmp_path / "out")
    refused_everywhere(whole, tmp_path, capsys, f"{folder}/{layout.JOURNAL}")
    assert (snapshot(victim), snapshot(tmp_path / "out")) == before


def test_a_retired_folder_that_is_a_symbolic_link_is_refused(whole, victim, tmp_path, capsys):
    os.symlink(victim, f"{os.path.dirname(whole)}/.res.old-{RUN}")
    before = snapshot(victim)
    refused_everywhere(whole, tmp_path, capsys, "is a symbolic link")
    assert snapshot(victim) == before


@pytest.mark.parametrize("marker", [
    {"partition_by": ["../../victim"]},
    {"partition_by": "run_date"},
    {"partition_by": ["run_date"], "partition_types": ["int64"]},
    {"partition_by": ["run_date"], "partition_types": {"run_date": []}},
    {"partition_by": [".hidden"]},
])
def test_a_marker_naming_partition_folders_outside_or_of_another_shape_is_refused(
        partitioned, tmp_path, capsys, marker):
    path = f"{partitioned}/{layout.MARKER}"
    with open(path, "w") as handle:
        json.dump({"format": layout.OUTPUT_FORMAT, "format_version": 1, **marker}, handle)
    refused_everywhere(partitioned, tmp_path, capsys, path, journal=False)
    with pytest.raises(ForeignFileError):
        store.open_output(partitioned, ("run_date",))


def as_written_by_an_older_version(folder):
    """The folder as the version that committed by folder moves left it: no commit log."""
    import shutil

    shutil.rmtree(f"{folder}/_commits")
    with open(f"{folder}/{layout.MARKER}") as handle:
        marker = json.load(handle)
    with open(f"{folder}/{layout.MARKER}", "w") as handle:
        json.dump({**marker, "format_version": 1}, handle)


def test_well_formed_journals_still_finish_a_dead_commit(partitioned, tmp_path):
    # the confinement refuses only what this job never writes: its own journal is replayed
    as_written_by_an_older_version(partitioned)
    staging = f"{partitioned}/.staging-{RUN}"
    os.makedirs(f"{staging}/stats/run_date=2026-01-09")
    with open(f"{staging}/stats/run_date=2026-01-09/part.txt", "w") as handle:
        handle.write("new")
    plant(staging, {"run_id": RUN, "owner": DEAD,
                    "swaps": [["stats", "run_date=2026-01-09", True]], "files": []})
    store.recover(partitioned)
    assert open(f"{partitioned}/stats/run_date=2026-01-09/part.txt").read() == "new"
    assert not os.path.exists(staging)


def test_a_dead_runs_journal_spelling_dir_by_another_path_is_still_replayed(
        whole, tmp_path, capsys):
    """The journal names the retired folder as the dead run spelled DIR (here through a link to
    its parent): the same folder, so a reader says the commit is left for the next writer, which
    finishes it instead of refusing."""
    import shutil

    os.symlink(tmp_path / "out", tmp_path / "link")
    staging = f"{os.path.dirname(whole)}/.res.staging-{RUN}"
    shutil.copytree(whole, staging)   # the dead run's whole result, then its journal
    plant(staging, {"run_id": RUN, "owner": DEAD, "retired": f"{tmp_path}/link/.res.old-{RUN}"})
    code = main(["aggregate", "--stats", whole, "--output", str(tmp_path / "agg")])
    assert code == 3 and "left half done" in capsys.readouterr().err
    assert os.path.exists(staging)                               # the reader changed nothing
    store.open_output(whole).abort()
    assert main(["aggregate", "--stats", whole, "--output", str(tmp_path / "agg")]) == 0
    assert not os.path.exists(staging) and not os.path.exists(f"{os.path.dirname(whole)}/.res.old-{RUN}")
    assert not os.path.exists(f"{whole}/{layout.JOURNAL}")   # the commit finished


def test_a_folder_an_older_version_committed_keeps_its_partitions_once_runs_write_into_it(partitioned, tmp_path):
    """Its files read whole as before; the first run of this version names them in an entry
    before its own, so its other days stay, and a plain reader still sees each row once."""
    import pyarrow.compute as pc

    from bleu_spark import statstable

    as_written_by_an_older_version(partitioned)
    before = statstable.read(partitioned)
    days = sorted(set(before["run_date"].to_pylist()))
    table = stats_table(6)
    rerun = table.filter(pc.equal(table["run_date"], days[0]))
    out = store.open_output(partitioned, ("run_date",))
    out.write_table("stats", rerun)
    out.commit({"run_id": out.run_id})
    after = statstable.read(partitioned)
    assert sorted(set(after["run_date"].to_pylist())) == days
    assert after.num_rows == before.num_rows
    on_disk = [f for d, _, names in os.walk(f"{partitioned}/stats") for f in names if f.endswith(".parquet")]
    assert len(on_disk) == len(store.live_files(*store.filesystem(partitioned), "stats"))
