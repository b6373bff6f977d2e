"""The output on S3, through a real S3 API: moto's server on 127.0.0.1, started once for these
tests and stopped by its PID. `score` writes `s3a://` (endpoint and path style from
spark-defaults' `spark.hadoop.fs.s3a.*`, credentials from the AWS variables), `aggregate`
reads it, a commit killed at any step leaves S3 readable (readers change nothing, and need no right to)
and the next run finishes or undoes it,
and a finished folder holds exactly the committed Parquet files (rejected rows and segments,
written by the tasks, included)."""
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from conftest import ROOT, S3_CREDENTIALS, SAMPLE, free_port

pytestmark = pytest.mark.s3



@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """moto's S3 server and a bucket; the AWS variables set for this process and its children
    (the endpoint only in a spark-defaults file, as a platform gives it)."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in [*S3_CREDENTIALS, "AWS_ENDPOINT_URL"]}
    try:
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.time() < deadline and server.poll() is None, "moto did not start"
                time.sleep(0.2)
        os.environ.update(S3_CREDENTIALS, AWS_ENDPOINT_URL=endpoint)  # the subprocesses get spark-defaults'
        fs = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http",
                               allow_bucket_creation=True)
        fs.create_dir("bucket")
        conf = tmp_path_factory.mktemp("spark-conf")
        (conf / "spark-defaults.conf").write_text(
            f"spark.hadoop.fs.s3a.endpoint {endpoint}\nspark.hadoop.fs.s3a.path.style.access true\n")
        yield {"fs": fs, "endpoint": endpoint, "conf": str(conf)}
    finally:
        os.kill(server.pid, 15)
        server.wait(30)
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


def cli(s3, *args):
    env = {**os.environ, **S3_CREDENTIALS, "SPARK_CONF_DIR": s3["conf"], "PYTHONPATH": ROOT}
    env.pop("AWS_ENDPOINT_URL", None)
    quiet = ["--progress-seconds", "0"] if args[0] == "score" else []
    return subprocess.run([sys.executable, "-m", "bleu_spark", *args, *quiet],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def parquet_files(fs, folder):
    return sorted(i.path[len(folder) + 1:] for i in fs.get_file_info(pafs.FileSelector(folder, recursive=True))
                  if i.type == pafs.FileType.File and i.base_name.endswith(".parquet"))


def committed_files(folder):
    from bleu_spark import store

    fs, root = store.filesystem(folder)
    return sorted(f[len(root) + 1:] for t in ("stats", "scores", "dashboard", "segments", "rejected", "paired")
                  for f in store.live_files(fs, root, t))


def scores_of(fs, path):
    with fs.open_input_stream(path) as stream:
        rows = json.loads(stream.read())
    return {(r["system"], r["langpair"], r["metric"]): r["score"] for r in rows}


def test_score_and_aggregate_on_s3a_equal_the_local_run(s3, spark, tmp_path):
    from bleu_spark.spark.job import JobOptions, run_job

    fs = s3["fs"]
    local = {(r["system"], r["langpair"], r["metric"]): r["score"]
             for r in run_job(spark, JobOptions(input=SAMPLE, progress_seconds=0)).scores}
    whole = cli(s3, "score", "--input", SAMPLE, "--output", "s3a://bucket/run", "--segments", "--report")
    assert whole.returncode == 0, whole.stderr[-3000:]
    assert scores_of(fs, "bucket/run/scores.json") == local
    assert parquet_files(fs, "bucket/run") == committed_files("s3a://bucket/run")
    with fs.open_input_stream("bucket/run/report.html") as page:
        assert b'class="segments worst"' in page.read()  # the drill-down, read back through pyarrow

    table = pq.read_table(SAMPLE)
    for day, parity in (("2026-01-01", 0), ("2026-01-02", 1)):
        rows = table.filter(pc.equal(pc.bit_wise_and(table["seg_id"], 1), parity))
        rows = rows.append_column("run_date", pa.repeat(pa.scalar(day), rows.num_rows))
        if parity:  # one more row, without a candidate: quarantined by the tasks, not scored
            bad = rows.slice(0, 1)
            bad = bad.set_column(bad.schema.get_field_index("candidate"), "candidate",
                                 pa.nulls(1, pa.string()))
            rows = pa.concat_tables([rows.cast(bad.schema), bad])
        pq.write_table(rows, tmp_path / f"{day}.parquet")
        daily = cli(s3, "score", "--input", str(tmp_path / f"{day}.parquet"), "--output",
                    "s3n://bucket/daily", "--partition-by", "run_date", "--on-invalid", "quarantine",
                    "--report")
        assert daily.returncode == 0, daily.stderr[-3000:]
    with fs.open_input_stream("bucket/daily/report.html") as page:  # of every partition it holds
        html = page.read()
    assert b"2026-01-01" in html and b"2026-01-02" in html
    assert parquet_files(fs, "bucket/daily") == committed_files("s3://bucket/daily")
    assert {p.split("/")[1] for p in committed_files("s3://bucket/daily")} == \
        {"run_date=2026-01-01", "run_date=2026-01-02"}
    rejected = [p for p in committed_files("s3://bucket/daily") if p.startswith("rejected/")]
    assert len(rejected) == 1 and rejected[0].startswith("rejected/run_date=2026-01-02/")
    with fs.open_input_file(f"bucket/daily/{rejected[0]}") as handle:
        assert pq.read_table(handle)["candidate"].to_pylist() == [None]
    summed = cli(s3, "aggregate", "--stats", "s3a://bucket/daily", "--output", "s3a://bucket/week",
                 "--group-by", "system,langpair")  # read with pyarrow, no JVM (tests/store/test_s3_input.py)
    assert summed.returncode == 0, summed.stderr[-3000:]
    assert scores_of(fs, "bucket/week/scores.json") == local


# --- a commit on S3 killed at any step ----------------------------------------------------------

def _commit_killed_at(folder, run, days, rejected_days, step):
    """In a fresh interpreter (the S3 client does not survive a fork): the run's commit, ended
    at its step-th file system step as by SIGKILL."""
    import itertools

    import test_commit
    from bleu_spark import store
    from bleu_spark.store import manifest

    steps = itertools.count(1)
    original = store.PartitionedOutput.commit

    def commit(self, *args, **kwargs):
        manifest.commit_hook = lambda what: os._exit(77) if next(steps) == step else None
        return original(self, *args, **kwargs)
    store.PartitionedOutput.commit = commit
    test_commit.write_run(folder, run, days, rejected_days)


def s3_state(fs, folder):
    out = {}
    for info in fs.get_file_info(pafs.FileSelector(folder, recursive=True)):
        relative = info.path[len(folder) + 1:]
        if info.type == pafs.FileType.File and not relative.startswith("_commits/"):
            with fs.open_input_stream(info.path) as stream:
                out[relative] = stream.read()
    return out


def test_a_commit_on_s3_killed_before_after_and_in_its_cleanup_is_finished_or_undone(s3):
    from test_commit import NEW, OLD, read_back, write_run
    from bleu_spark import store
    from bleu_spark.store import manifest

    fs = s3["fs"]
    write_run("s3://bucket/kill/old", *OLD)
    write_run("s3://bucket/kill/new", *OLD)
    names = []
    manifest.commit_hook = names.append
    try:
        write_run("s3://bucket/kill/new", *NEW)
    finally:
        manifest.commit_hook = None
    entry = names.index("write entry") + 1
    # each kill starts an interpreter: the first step, around the entry, the cleanup, the last
    chosen = sorted({1, entry - 1, entry, entry + 1, (entry + len(names)) // 2, len(names)})
    expected = {"old": s3_state(fs, "bucket/kill/old"), "new": s3_state(fs, "bucket/kill/new")}
    data = {"old": read_back("s3://bucket/kill/old"), "new": read_back("s3://bucket/kill/new")}
    seen = set()
    for k in chosen:
        folder = f"s3://bucket/kill/k{k}"
        write_run(folder, *OLD)
        process = multiprocessing.get_context("spawn").Process(
            target=_commit_killed_at, args=(folder, *NEW, k))
        process.start()
        process.join(120)
        assert process.exitcode == 77, k
        before = s3_state(fs, f"bucket/kill/k{k}")
        got = read_back(folder)  # read through the log, nothing changed
        assert s3_state(fs, f"bucket/kill/k{k}") == before, k
        store.open_output(folder, ("day",)).abort()  # the next writer finishes or undoes it
        now = s3_state(fs, f"bucket/kill/k{k}")
        which = [name for name, files in expected.items() if files == now]
        assert which and got == data[which[0]], (k, sorted(set(now) ^ set(expected["new"])))
        assert parquet_files(fs, f"bucket/kill/k{k}") == committed_files(folder)
        seen.add(which[0])
    assert seen == {"old", "new"}


# --- readers change nothing ---------------------------------------------------------------------

class _ReadOnly(pafs.FileSystemHandler):
    """S3 with reading allowed and every write or delete denied, as a read-only prefix is."""

    def __init__(self, fs):
        self.fs = fs

    def _denied(self, *args, **kwargs):
        raise PermissionError(13, "AccessDenied: read-only prefix")

    get_type_name = lambda self: "read-only-s3"
    normalize_path = lambda self, path: path
    equals = lambda self, other: other is self
    get_file_info = lambda self, paths: self.fs.get_file_info(paths)
    get_file_info_selector = lambda self, selector: self.fs.get_file_info(selector)
    open_input_stream = lambda self, p: self.fs.open_input_stream(p)
    open_input_file = lambda self, p: self.fs.open_input_file(p)
    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = _denied
    delete_file = move = copy_file = open_output_stream = open_append_stream = _denied


def _all_objects(fs, folder):
    out = {}
    for info in fs.get_file_info(pafs.FileSelector(folder, recursive=True)):
        if info.type == pafs.FileType.File:
            with fs.open_input_stream(info.path) as stream:
                out[info.path] = stream.read()
    return out


def test_readers_of_s3_change_nothing_and_need_no_write_access(s3, spark, monkeypatch):
    """A prefix without the marker (a `_commits/` and table folders of someone else's), and a
    result a dead run left files in: read, nothing deleted or written; and read with every
    write denied."""
    from test_commit import OLD, read_back, stats_of, write_run
    from test_readers import DEAD_OWNER
    from bleu_spark import errors, statstable
    from bleu_spark.spark.aggregate import read_stats

    fs, dead = s3["fs"], "part-20260101T000000Z-0000abcd-0.parquet"
    for table in ("scores", "stats", "segments"):
        with fs.open_output_stream(f"bucket/theirs/{table}/{dead}") as out:
            pq.write_table(stats_of("Z", "d1"), out)
    with fs.open_output_stream("bucket/theirs/_commits/p-20260101T000000Z-0000abcd.json") as out:
        out.write(DEAD_OWNER)
    write_run("s3://bucket/left/out", *OLD)
    expected = read_back("s3://bucket/left/out")
    with fs.open_output_stream(f"bucket/left/out/stats/day=d9/{dead}") as out:
        pq.write_table(stats_of("Z", "d9"), out)  # its run died before its entry
    with fs.open_output_stream("bucket/left/out/_commits/p-20260101T000000Z-0000abcd.json") as out:
        out.write(DEAD_OWNER)
    before = _all_objects(fs, "bucket/theirs") | _all_objects(fs, "bucket/left")

    def read_all():
        try:  # someone else's tables read as they are, or refused: either way kept
            statstable.read("s3://bucket/theirs")
        except errors.BleuSparkError:
            pass
        assert read_back("s3a://bucket/left/out") == expected
        summed = read_stats(spark, "s3a://bucket/left/out/stats").select(["day", "run"]).to_pylist()
        assert {(r["day"], r["run"]) for r in summed} == expected
    read_all()
    assert _all_objects(fs, "bucket/theirs") | _all_objects(fs, "bucket/left") == before
    real = pafs.S3FileSystem
    monkeypatch.setattr(pafs, "S3FileSystem", lambda **kw: pafs.PyFileSystem(_ReadOnly(real(**kw))))
    read_all()


def test_a_task_without_the_aws_variables_writes_where_the_driver_does(s3):
    """The endpoint and keys only in the driver's AWS variables (as a Spark Connect client has
    them): a task in a process without them writes its file to the same S3, from its settings."""
    from bleu_spark import store

    store.configure({})
    given = tuple(sorted(store.settings().items()))
    task = ("import sys, pyarrow as pa\n"
            "from bleu_spark import store\n"
            f"writer = store.TaskWriter(store.TableFiles('s3a://bucket/tasks/segments', 'r1', (), {given!r}), 3, 0)\n"
            "writer.write(pa.table({'x': [1, 2]}))\n"
            "writer.close()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    done = subprocess.run([sys.executable, "-c", task], env={**env, "PYTHONPATH": ROOT}, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with s3["fs"].open_input_file("bucket/tasks/segments/part-r1-t00003.parquet") as handle:
        assert pq.read_table(handle)["x"].to_pylist() == [1, 2]


def test_groups_scored_on_the_executors_write_their_tables_to_s3(s3, spark):
    """The executors' tasks write the tables straight to S3, committed as the driver's are."""
    from bleu_spark.spark.job import JobOptions, run_job

    fs = s3["fs"]
    local = {(r["system"], r["langpair"], r["metric"]): r["score"]
             for r in run_job(spark, JobOptions(input=SAMPLE, progress_seconds=0)).scores}
    run = cli(s3, "score", "--input", SAMPLE, "--output", "s3://bucket/apart",
              "--groups-scored-on", "executors")
    assert run.returncode == 0, run.stderr[-3000:]
    assert scores_of(fs, "bucket/apart/scores.json") == local
    assert parquet_files(fs, "bucket/apart") == committed_files("s3://bucket/apart")
    scores = pq.read_table("bucket/apart/scores", filesystem=fs).to_pylist()
    assert {(r["system"], r["langpair"], r["metric"]): r["score"] for r in scores} == local
