"""`score --incremental`: files dropped in steps with a run after each equal one plain run over
all of them (scores with intervals and clusters, statistics, rejected rows, segments); a run with
nothing new changes nothing; a run killed at any point and run again counts every row once; a
run measured otherwise is refused; with --partition-by only the partitions that got rows are
written again."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import statstable
from bleu_spark.errors import IncompatibleStatisticsError, OutputError, UsageError
from bleu_spark.resampling import Resampling
from bleu_spark.spark.job import JobOptions, run_job
from conftest import SAMPLE

pytestmark = pytest.mark.spark
STEPS = 3
KEYS = ["langpair", "system", "metric"]


def _files(folder):
    """The sample cut into STEPS files, a few segments of each with no candidate (rejected)."""
    table = pq.read_table(SAMPLE)
    # Whole segments rejected (every system's row), so systems still cover the same segments.
    candidates = [None if int(seg) % 37 == 0 else c
                  for seg, c in zip(table["seg_id"].to_pylist(), table["candidate"].to_pylist())]
    table = table.set_column(table.schema.get_field_index("candidate"), "candidate",
                             pa.array(candidates, pa.string()))
    os.makedirs(folder, exist_ok=True)
    # Each file whole segments (every system's row of them), as hours of a log of one test set.
    hour = pa.array([int(seg) % STEPS for seg in table["seg_id"].to_pylist()])
    paths = []
    for i in range(STEPS):
        paths.append(os.path.join(folder, f"hour={i:02d}.parquet"))
        pq.write_table(table.filter(pa.compute.equal(hour, i)), paths[-1])
    return paths


@pytest.fixture(scope="module")
def pieces(tmp_path_factory):
    return _files(str(tmp_path_factory.mktemp("pieces")))


def _options(input_path, output, **more):
    values = dict(input=input_path, output=output, on_invalid="quarantine", segments=True,
                  resampling=Resampling(confidence=True, clusters=True, n_bootstrap=200),
                  metrics=("bleu", "chrf"), progress_seconds=0)
    values.update(more)
    return JobOptions(**values)


def _table(folder, name):
    files = statstable.store.live_files(statstable.store.filesystem(folder)[0], folder, name)
    return pa.concat_tables([pq.read_table(f) for f in files], promote_options="permissive") if files else None


def _sorted(table, keys):
    return table.sort_by([(k, "ascending") for k in keys])


def _drop_in(inbox, paths):
    for path in paths:
        shutil.copy(path, os.path.join(inbox, os.path.basename(path)))


def _assert_same_result(incremental, plain):
    mine, theirs = (json.load(open(os.path.join(f, "scores.json"))) for f in (incremental, plain))
    assert mine == theirs
    # intervals and clusters are part of what is equal
    assert all(r["ci_low"] is not None and r["cluster"] is not None for r in mine)
    columns = [c for c in _table(plain, "stats").column_names]
    assert _sorted(_table(incremental, "stats").select(columns), KEYS).equals(
        _sorted(_table(plain, "stats"), KEYS))
    for name, keys in (("rejected", ["seg_id", "system", "langpair"]),
                       ("segments", ["input_file", "input_row", "metric"])):
        a, b = _table(incremental, name), _table(plain, name)
        assert a.num_rows == b.num_rows > 0
        assert _sorted(a.select(b.column_names), keys).equals(_sorted(b, keys))


def test_files_dropped_in_steps_equal_one_plain_run_and_nothing_new_changes_nothing(spark, pieces, tmp_path):
    inbox, out, plain = str(tmp_path / "inbox"), str(tmp_path / "out"), str(tmp_path / "plain")
    os.makedirs(inbox)
    for step, path in enumerate(pieces):
        _drop_in(inbox, [path])
        result = run_job(spark, _options(inbox, out, incremental=True))
        assert result.run["incremental"] == {"new_files": 1, "files_measured": step + 1}
        assert result.run["rows"]["read"] == pq.read_metadata(path).num_rows
    stats_before = {p: hashlib.sha256(open(os.path.join(out, "stats", p), "rb").read()).hexdigest()
                    for p in os.listdir(os.path.join(out, "stats"))}
    listing = sorted(os.path.relpath(os.path.join(r, f), out) for r, _, fs in os.walk(out) for f in fs)
    again = run_job(spark, _options(inbox, out, incremental=True))
    assert again.run["unchanged"] and again.run["incremental"]["files_measured"] == STEPS
    assert {p: hashlib.sha256(open(os.path.join(out, "stats", p), "rb").read()).hexdigest()
            for p in os.listdir(os.path.join(out, "stats"))} == stats_before
    assert sorted(os.path.relpath(os.path.join(r, f), out)
                  for r, _, fs in os.walk(out) for f in fs) == listing
    run_job(spark, _options(inbox, plain))
    _assert_same_result(out, plain)


def test_a_changed_measurement_or_a_plain_result_is_refused(spark, pieces, tmp_path):
    inbox, out = str(tmp_path / "inbox"), str(tmp_path / "out")
    os.makedirs(inbox)
    _drop_in(inbox, pieces[:1])
    run_job(spark, _options(inbox, out, incremental=True))
    _drop_in(inbox, pieces[1:2])
    with pytest.raises(IncompatibleStatisticsError, match="metrics: .*chrf.* there"):
        run_job(spark, _options(inbox, out, incremental=True, metrics=("bleu",)))
    with pytest.raises(IncompatibleStatisticsError, match="grouping_sets"):
        run_job(spark, _options(inbox, out, incremental=True, group_by=("system",)))
    with pytest.raises(IncompatibleStatisticsError, match="resampling"):
        run_job(spark, _options(inbox, out, incremental=True, resampling=Resampling()))
    plain = str(tmp_path / "plain")
    run_job(spark, _options(inbox, plain))
    with pytest.raises(OutputError, match="without --incremental"):
        run_job(spark, _options(inbox, plain, incremental=True))
    with pytest.raises(UsageError, match="--incremental needs --output"):
        JobOptions(input=inbox, incremental=True, catalog="db")
    with pytest.raises(UsageError, match="does not take --scan spark"):
        JobOptions(input=inbox, output=out, incremental=True, scan="spark")


def test_only_the_partitions_that_received_rows_are_written_again(spark, tmp_path):
    table = pq.read_table(SAMPLE)
    inbox, out, plain = str(tmp_path / "inbox"), str(tmp_path / "out"), str(tmp_path / "plain")
    os.makedirs(inbox)
    pairs = sorted(set(table["langpair"].to_pylist()))
    first, later = pairs[: len(pairs) // 2], pairs[len(pairs) // 2:]
    in_pairs = lambda ps: table.filter(pa.compute.is_in(table["langpair"], pa.array(ps)))
    pq.write_table(in_pairs(first), os.path.join(inbox, "a.parquet"))
    options = lambda path, folder, **more: JobOptions(
        input=path, output=folder, partition_by=("langpair",), progress_seconds=0,
        resampling=Resampling(confidence=True, n_bootstrap=200), **more)
    run_job(spark, options(inbox, out, incremental=True))
    kept = {p: sorted(os.listdir(os.path.join(out, "scores", p)))
            for p in os.listdir(os.path.join(out, "scores"))}
    # The second file: the later pairs, and one pair of the first again (its rows added).
    again = table.filter(pa.compute.is_in(table["langpair"], pa.array([*later, first[0]])))
    pq.write_table(again.slice(0, again.num_rows // 2), os.path.join(inbox, "b.parquet"))
    result = run_job(spark, options(inbox, out, incremental=True))
    touched = {f"langpair={p}" for p in pq.read_table(os.path.join(inbox, "b.parquet"))["langpair"].to_pylist()}
    assert {p for p in result.run["partitions_written"] if p} == touched
    for partition, files in kept.items():
        if partition not in touched:
            assert sorted(os.listdir(os.path.join(out, "scores", partition))) == files
    run_job(spark, options(inbox, plain))
    mine, theirs = (json.load(open(os.path.join(f, "scores.json"))) for f in (out, plain))
    assert mine == theirs


KILLER = textwrap.dedent("""
    import os, signal, sys
    from bleu_spark import cli
    from bleu_spark.store import manifest
    from bleu_spark.spark import incremental, job

    where, at = sys.argv[1], int(sys.argv[2])
    die = lambda: os.kill(os.getpid(), signal.SIGKILL)
    if where == "commit":  # at the at-th file system step of the commit and its cleanup
        steps = iter(range(1, 10_000))
        manifest.commit_hook = lambda what: die() if next(steps) == at else None
    else:  # as the function named starts: measured, nothing written; or written, not committed
        module, name = {"write": (job, "_write"), "ledger": (incremental, "write")}[where]
        setattr(module, name, lambda *args, **kwargs: die())
    sys.exit(cli.main(sys.argv[3:]))
""")


@pytest.mark.e2e
def test_a_run_killed_at_any_point_and_run_again_counts_every_row_once(pieces, tmp_path):
    inbox, out, plain = str(tmp_path / "inbox"), str(tmp_path / "out"), str(tmp_path / "plain")
    os.makedirs(inbox)
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    args = ["score", "--input", inbox, "--output", out, "--incremental", "--on-invalid",
            "quarantine", "--segments", "--confidence", "--clusters", "--n-bootstrap", "200", "--metrics",
            "bleu,chrf", "--progress-seconds", "0"]
    run = lambda *more: subprocess.run([sys.executable, str(script), *more, *args],
                                       capture_output=True, text=True, timeout=600)
    # Per step, kills before the commit entry first, one after it last (its rerun then finds
    # nothing new and finishes the interrupted cleanup).
    kills = [[("write", 0), ("commit", 1), ("commit", 5)],
             [("ledger", 0), ("commit", 2), ("commit", 4)],
             [("commit", 3), ("commit", 8)]]
    for path, points in zip(pieces, kills):
        _drop_in(inbox, [path])
        for where, at in points:
            killed = run(where, str(at))
            assert killed.returncode == -9, (where, at, killed.stderr[-2000:])
        done = run("commit", "0")  # never reached: the run goes through
        assert done.returncode == 0, done.stderr[-3000:]
    done = run("commit", "0")
    assert done.returncode == 0 and "nothing new" in done.stdout, done.stderr[-2000:]
    plain_args = [plain if a == out else a for a in args if a != "--incremental"]
    made = subprocess.run([sys.executable, "-m", "bleu_spark", *plain_args], capture_output=True,
                          text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-2000:]
    _assert_same_result(out, plain)

