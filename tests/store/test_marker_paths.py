"""Whoever can write an output folder cannot make a reader or writer of it touch anything outside
it (a reader touches nothing at all): a marker naming partition folders outside DIR or of another
shape, or of another format (a development-era folder, committed by folder moves), is refused in
one line naming the file, and nothing is read, moved or removed."""
import json
import os
import shutil

import pytest

from bleu_spark import store
from bleu_spark.store import layout
from bleu_spark.cli import main
from bleu_spark.errors import ForeignFileError
from test_predicate import save, stats_table

RUN = "20260101T000000Z-0000dead"
DEAD = {"host": "elsewhere", "pid": 1, "started": 0}   # a run long gone


def snapshot(folder):
    return sorted((str(p.relative_to(folder)), p.read_bytes() if p.is_file() else None)
                  for p in folder.rglob("*"))


@pytest.fixture
def partitioned(tmp_path):
    return save(tmp_path / "out" / "daily", stats_table(6), ("run_date",))


@pytest.fixture
def whole(tmp_path):
    return save(tmp_path / "out" / "res", stats_table(6))


def refused_everywhere(dir_, tmp_path, capsys, name_in_message, read=""):
    """A reader (aggregate, on its own engine, of DIR or of `DIR<read>`) and a writer: one line
    naming the file, exit 16, nothing created or changed."""
    before = snapshot(tmp_path / "out")
    code = main(["aggregate", "--stats", dir_ + read, "--output", str(tmp_path / "agg")])
    err = capsys.readouterr().err
    assert code == ForeignFileError.exit_code == 16, err
    assert err.startswith("bleu-spark: error: ") and len(err.strip().splitlines()) == 1, err
    assert name_in_message in err and "Traceback" not in err
    assert not (tmp_path / "agg").exists()
    with pytest.raises(ForeignFileError):
        store.recover(dir_)    # what every writer does first
    assert snapshot(tmp_path / "out") == before
    return err


def test_a_lock_file_that_is_a_symbolic_link_is_refused(partitioned, tmp_path, capsys):
    target = tmp_path / "elsewhere.lock"
    os.remove(f"{partitioned}/.lock") if os.path.lexists(f"{partitioned}/.lock") else None
    os.symlink(target, f"{partitioned}/.lock")
    # a reader takes no lock: it reads; a writer refuses
    assert main(["aggregate", "--stats", partitioned, "--output", str(tmp_path / "agg")]) == 0
    with pytest.raises(ForeignFileError, match=".lock is a symbolic link"):
        store.recover(partitioned)
    assert not target.exists()


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
        json.dump({"format": layout.OUTPUT_FORMAT, "format_version": layout.FORMAT_VERSION,
                   **marker}, handle)
    refused_everywhere(partitioned, tmp_path, capsys, path)
    with pytest.raises(ForeignFileError):
        store.open_output(partitioned, ("run_date",))


def as_written_by_a_development_era_version(folder, version):
    """The folder as the versions that committed by folder moves left it: no commit log, a marker
    of format_version 1 (or of none, before it had one), and a dead run's staging folder with its
    journal of folder moves."""
    shutil.rmtree(f"{folder}/_commits")
    with open(f"{folder}/{layout.MARKER}") as handle:
        marker = json.load(handle)
    marker.pop("format_version")
    with open(f"{folder}/{layout.MARKER}", "w") as handle:
        json.dump({**marker, **({"format_version": version} if version else {})}, handle)
    os.makedirs(f"{folder}/.staging-{RUN}/stats")
    with open(f"{folder}/.staging-{RUN}/_commit.json", "w") as handle:
        json.dump({"run_id": RUN, "owner": DEAD, "swaps": [], "files": []}, handle)


@pytest.mark.parametrize("read", ["", "/stats"])
@pytest.mark.parametrize("version,found", [(1, "has format_version 1"), (None, "has no format_version")])
@pytest.mark.parametrize("kind", ["whole", "partitioned"])
def test_a_folder_of_a_development_era_format_is_refused_by_readers_and_writers(
        request, tmp_path, capsys, kind, version, found, read):
    folder = request.getfixturevalue(kind)
    as_written_by_a_development_era_version(folder, version)
    err = refused_everywhere(folder, tmp_path, capsys, f"{folder}/{layout.MARKER} {found}", read)
    assert err.rstrip().endswith("score the input again with this version into another folder")
    before = snapshot(tmp_path / "out")
    with pytest.raises(ForeignFileError):
        store.open_output(folder, ("run_date",) if kind == "partitioned" else ())
    assert snapshot(tmp_path / "out") == before


@pytest.mark.spark
def test_a_folder_of_a_development_era_format_is_refused_on_spark(spark, partitioned):
    from bleu_spark.spark.aggregate import read_stats

    as_written_by_a_development_era_version(partitioned, 1)
    with pytest.raises(ForeignFileError, match="score the input again with this version"):
        read_stats(spark, partitioned)
