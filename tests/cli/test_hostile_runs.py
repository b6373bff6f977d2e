"""Hostile input, one topic: runs interrupted or losing a worker: one line, nothing lost, the output
as it was."""
import glob
import json
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from bleu_spark import cli
from bleu_spark.cli import main
from conftest import ROOT, SAMPLE
from hostile_common import run_cli


# --- interrupted runs and leftovers ------------------------------------------------------------

def _start_and_signal(tmp_path, signum, to_group):
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "bleu_spark", "score", "--input", SAMPLE,
                                "--output", str(out), "--progress-seconds", "0"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    pending = str(out / "_commits" / "p-*.json")
    # Inside the Spark pass; through Connect (the Python workers are the server's), once the
    # run's pending record is written.
    started = ((lambda: glob.glob(pending)) if "SPARK_REMOTE" in os.environ
               else (lambda: _workers_in_a_task(process.pid)))
    deadline = time.time() + 120
    while not started() and time.time() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    assert glob.glob(pending) and process.poll() is None
    if to_group:  # as Ctrl-C in a terminal: the whole foreground group, JVM and workers too
        os.killpg(process.pid, signum)
    else:         # as a scheduler stopping the task
        process.send_signal(signum)
    _, stderr = process.communicate(timeout=120)
    return process.returncode, stderr


@pytest.mark.e2e
@pytest.mark.parametrize("signum,code,to_group", [(signal.SIGTERM, 143, False),
                                                  (signal.SIGINT, 130, True)])
def test_a_stop_signal_removes_the_runs_files_and_exits_with_its_code(tmp_path, signum, code, to_group):
    returncode, stderr = _start_and_signal(tmp_path, signum, to_group)
    assert returncode == code, stderr[-3000:]
    ours = [l for l in stderr.splitlines() if l.startswith("bleu-spark:")]
    assert ours == [f"bleu-spark: error: interrupted by {signal.Signals(signum).name} (exit code {code}); "
                    f"the run's files are removed"]
    assert "Traceback" not in stderr and "\tat org.apache" not in stderr, stderr[-3000:]
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("earlier", [False, True], ids=["new folder", "earlier result"])
def test_a_stop_signal_as_the_output_is_opened_leaves_nothing_of_the_run(monkeypatch, tmp_path, earlier):
    """The signal lands once the run's pending record is there, before its sink is the caller's
    (when the test through Spark Connect sends it): the output as it was, a folder it made gone."""
    from bleu_spark import errors, store
    from bleu_spark.store import commit

    if earlier:
        _output(tmp_path).commit({"rows": 1})
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    monkeypatch.setattr(cli, "_received", [])
    read_marker = commit.read_marker

    def signalled(fs, path):  # the marker is read under the lock, after the pending record
        if glob.glob(str(tmp_path / "out" / "_commits" / "p-*.json")):
            cli._on_stop_signal(signal.SIGTERM, None)
        return read_marker(fs, path)
    monkeypatch.setattr(commit, "read_marker", signalled)
    with pytest.raises(errors.Interrupted):
        store.open_output(str(tmp_path / "out"))
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before


def test_a_stop_signal_after_the_output_is_written_says_so(monkeypatch, capsys):
    from bleu_spark import cli

    monkeypatch.setattr(cli, "_received", [])
    monkeypatch.setattr(cli, "_written", [])

    def scored_then_stopped(args):  # the output committed, then Ctrl-C while Spark stops
        cli._written.append(args.output)
        cli._on_stop_signal(signal.SIGINT, None)

    monkeypatch.setattr(cli, "run_score", scored_then_stopped)
    assert cli.main(["score", "--input", "in", "--output", "out/x"]) == 130
    assert capsys.readouterr().err == ("bleu-spark: error: interrupted by SIGINT (exit code 130); "
                                       "out/x was written in full before it came\n")


def _output(tmp_path, partition_by=(), run_id=None):
    from bleu_spark import store

    return store.open_output(str(tmp_path / "out"), partition_by, run_id)


@pytest.mark.parametrize("partition_by", [(), ("run_date",)])
def test_files_of_runs_that_are_gone_are_removed_live_ones_kept(tmp_path, partition_by):
    """A run's pending record says who writes (host, process, start): the next run removes the
    files of runs that are gone (their process on this host ended, or a day old), never a live
    run's."""
    import socket

    import pyarrow as pa

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    here = socket.gethostname()
    owners = {"gone": {"host": here, "pid": dead.pid, "started": time.time()},
              "old": {"host": "elsewhere", "pid": 1, "started": time.time() - 2 * 86400},
              "live": {"host": here, "pid": os.getpid(), "started": time.time()},
              "remote": {"host": "elsewhere", "pid": dead.pid, "started": time.time()}}
    table = pa.table({"run_date": ["2026-01-01"], "value": [1]})
    for run, owner in owners.items():
        out = _output(tmp_path, partition_by, run)
        out.write_table("stats", table if partition_by else table.drop_columns(["run_date"]))
        with open(tmp_path / "out" / "_commits" / f"p-{run}.json", "w") as handle:
            json.dump(owner, handle)
    second = _output(tmp_path, partition_by)  # opening an output cleans up after dead runs
    files = {f for _, _, names in os.walk(tmp_path / "out" / "stats") for f in names}
    assert {f.split("-")[1] for f in files} == {"live", "remote"}
    assert sorted(os.listdir(tmp_path / "out" / "_commits")) == \
        sorted(["p-live.json", "p-remote.json", f"p-{second.run_id}.json"])
    second.abort()


@pytest.mark.spark
def test_a_result_holds_no_pending_record(spark, tmp_path):
    from bleu_spark.spark.job import JobOptions, run_job

    run_job(spark, JobOptions(input=SAMPLE, output=str(tmp_path / "out"), progress_seconds=0))
    assert all(p.startswith("c-") for p in os.listdir(tmp_path / "out" / "_commits"))
    assert os.listdir(tmp_path) == ["out"]


# --- a Python worker lost mid-stage ---------------------------------------------------------------

def _parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _descendants(pid):
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        children.setdefault(_parent(int(entry)), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _workers_in_a_task(pid):
    """The Python workers forked by a daemon the job's JVM started: running a task."""
    workers = [p for p in _descendants(pid) if "pyspark.daemon" in _cmdline(p) or "pyspark.worker" in _cmdline(p)]
    return [p for p in workers if _parent(p) in workers]


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _score_killing_a_worker(out):
    """The job on the sample, its first Python worker seen killed: (killed, exit code, stderr)."""
    process = subprocess.Popen([sys.executable, "-m", "bleu_spark", "score", "--input", SAMPLE,
                                "--output", str(out), "--progress-seconds", "0"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed, deadline = [], time.time() + 120
    while not killed and time.time() < deadline and process.poll() is None:
        for pid in _workers_in_a_task(process.pid):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    _, stderr = process.communicate(timeout=300)
    return killed, process.returncode, stderr


@pytest.mark.e2e
@pytest.mark.classic  # kills a Python worker under this process
def test_a_python_worker_killed_mid_stage_is_one_line_and_keeps_the_earlier_result(tmp_path):
    out = tmp_path / "out"
    first = run_cli("--input", SAMPLE, "--output", str(out), "--group-by", "langpair", "--progress-seconds", "0")
    assert first.returncode == 0, first.stderr[-3000:]
    before = (out / "scores.json").read_text()
    # A reused worker lives on between tasks: a kill that lands there fails nothing, and the run
    # (which replaced the output) is tried again with the earlier result back in place.
    for _ in range(3):
        killed, code, stderr = _score_killing_a_worker(out)
        assert killed, "no worker was seen running"
        if code != 0:
            break
        assert run_cli("--input", SAMPLE, "--output", str(out), "--group-by", "langpair",
                       "--progress-seconds", "0").returncode == 0
    assert code == 12, stderr[-3000:]
    ours = [l for l in stderr.splitlines() if l.startswith("bleu-spark:")]
    # killed in a task, or (when the kill lands as the daemon forks it) before taking one
    assert len(ours) == 1 and "the Spark job failed" in ours[0] and (
        "Python worker exited unexpectedly" in ours[0] or "a Python worker failed to start" in ours[0])
    assert "Traceback" not in stderr
    assert (out / "scores.json").read_text() == before


def test_a_worker_killed_before_it_took_its_task_is_a_lost_worker():
    from bleu_spark.spark.failures import lost_worker_failure

    trace = ("An error occurred while calling o123.toArrow.\n: org.apache.spark.SparkException: Job "
             "aborted due to stage failure: Task 0 in stage 9.0 failed 1 times, most recent failure: "
             "Lost task 0.0 in stage 9.0 (TID 8) (127.0.0.1 executor driver): java.io.EOFException\n"
             "\tat java.base/java.io.DataInputStream.readInt(DataInputStream.java:386)\n"
             "\tat org.apache.spark.api.python.PythonWorkerFactory.createWorker$1(PythonWorkerFactory.scala:220)\n")
    assert str(lost_worker_failure(RuntimeError(trace))) == (
        "the Spark job failed: Task 0 in stage 9.0 failed 1 times, last because: a Python worker "
        "failed to start (java.io.EOFException) (retries are the platform's spark.task.maxFailures); "
        "nothing was written")
    assert lost_worker_failure(RuntimeError(trace.replace("PythonWorkerFactory", "ArrowWriter"))) is None


def test_memory_that_ran_out_is_one_line_naming_where_and_the_setting_to_raise():
    from bleu_spark.spark.failures import memory_failure

    driver = "An error occurred while calling o88.toArrow.\n: java.lang.OutOfMemoryError: Java heap space\n\tat ..."
    executor = ("Job aborted due to stage failure: Task 3 in stage 2.0 failed 4 times, most recent failure: "
                "Lost task 3.3 in stage 2.0 (TID 9): java.lang.OutOfMemoryError: Java heap space")
    assert str(memory_failure(RuntimeError(driver))).startswith(
        "the Spark driver ran out of memory; raise spark.driver.memory (spark-submit --driver-memory)")
    assert str(memory_failure(RuntimeError(executor))).startswith(
        "the Spark executor ran out of memory; raise spark.executor.memory")
    assert "the Spark driver ran out of memory" in str(memory_failure(MemoryError()))
    assert memory_failure(RuntimeError("Job aborted due to stage failure: a bug")) is None


def test_after_a_stop_signal_a_spark_that_does_not_stop_is_not_waited_for(monkeypatch):
    """A Spark Connect session whose release hangs (its server busy with the job the signal cut
    short) holds the exit STOP_WAIT_S at most: the one line and the exit code still come."""
    import threading

    from bleu_spark import cli

    release = threading.Event()

    class Hanging:
        def stop(self):
            release.wait(60)

    monkeypatch.setattr(cli, "_received", [signal.SIGTERM])
    monkeypatch.setattr(cli, "_unstopped", [])
    monkeypatch.setattr(cli, "STOP_WAIT_S", 0.2)
    started = time.time()
    cli._stop_spark(Hanging())
    assert time.time() - started < 5
    release.set()


HANGING_AT_EXIT = """
import atexit, signal, sys, threading
from bleu_spark import cli

cli.STOP_WAIT_S = 0.2
never = threading.Event()


class Hanging:  # a Spark Connect session whose server is busy with the job the signal cut short
    def __init__(self):
        atexit.register(never.wait)  # as pyspark's exit-time calls to that server

    def stop(self):
        never.wait()


def stopped(args):
    try:
        cli._on_stop_signal(signal.SIGTERM, None)
    finally:
        cli._stop_spark(Hanging())


cli.run_score = stopped
sys.exit(cli.main(["score", "--input", "in", "--output", "out"]))
"""


def test_after_a_stop_signal_a_spark_that_does_not_stop_holds_no_exit_time_work(tmp_path):
    """pyspark's exit-time handlers of a Connect session that did not stop call its busy server
    without a deadline: the process leaves with the one line and the exit code, without them."""
    done = subprocess.run([sys.executable, "-c", HANGING_AT_EXIT], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 143, done.stderr[-3000:]
    assert done.stderr == ("bleu-spark: error: interrupted by SIGTERM (exit code 143); "
                           "the run's files are removed\n")
