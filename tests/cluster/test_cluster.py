"""The job on a real Spark standalone cluster on 127.0.0.1 (scripts/cluster.sh: one master, two
one-core workers), submitted the way users submit it: dist/score_bleu.py with the venv-pack
archive from scripts/package.sh shipped by --archives, executors running the archive's Python.

- test_cluster_matches_local: scores identical to a local-mode run of the same job and data.
- test_killed_executor_matches_local: the same while one worker's executor JVM is SIGKILLed after
  its first tasks finished; Spark reruns the lost tasks on the other executor or a replacement,
  and since the statistics are integer sums the scores are identical again; run.json's
  tasks.failed records the lost attempts.

The module-scoped `cluster` fixture always stops the cluster (also when a test or the start-up
fails) and then checks that no process of it is left: the recorded PIDs, their children, and
anything whose working directory or command line is in the cluster's state dir.

Knobs: BLEU_SPARK_CLUSTER_ROWS (default 200000), BLEU_SPARK_REBUILD=1 to rebuild the archive
even if it is newer than the sources.
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = ROOT / "dist" / "bleu_spark_env.tar.gz"
ENTRY = ROOT / "dist" / "score_bleu.py"
PYTHON = sys.executable
ROWS = int(os.environ.get("BLEU_SPARK_CLUSTER_ROWS", "200000"))
FILES = 8                  # input Parquet files
PARTITIONS = 32            # input and shuffle partitions asked for on the cluster
SUBMIT_TIMEOUT = 420       # seconds for one spark-submit before it is killed
GROUP_COLS = ("system", "langpair")


# ----------------------------------------------------------------------------- processes

@dataclass
class Proc:
    pid: int
    ppid: int
    argv: List[str]
    cwd: str


def process_table() -> Dict[int, Proc]:
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                cwd = ""
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        table[pid] = Proc(pid, ppid, argv, cwd)
    return table


def descendants(root: int, table: Dict[int, Proc]) -> List[Proc]:
    children: Dict[int, List[int]] = {}
    for p in table.values():
        children.setdefault(p.ppid, []).append(p.pid)
    out, queue = [], list(children.get(root, []))
    while queue:
        pid = queue.pop(0)
        out.append(table[pid])
        queue.extend(children.get(pid, []))
    return out


def ours_and_ancestors() -> set:
    keep, pid, table = set(), os.getpid(), process_table()
    while pid in table and pid > 1:
        keep.add(pid)
        pid = table[pid].ppid
    return keep


def cluster_processes(state: Path) -> List[Proc]:
    """Live processes that belong to the cluster in `state`: daemons, executors, Python workers."""
    keep, prefix = ours_and_ancestors(), str(state)
    found = []
    for p in process_table().values():
        if p.pid in keep or not p.argv:
            continue
        if p.cwd == prefix or p.cwd.startswith(prefix + os.sep) or any(prefix in a for a in p.argv):
            found.append(p)
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> str:
    import pyspark
    return os.path.dirname(os.path.realpath(pyspark.__file__))


# ----------------------------------------------------------------------------- data

EN = ("the a cat dog sat on mat is was big small storm rover Mars fighting massive dust of and "
      "to in it for with as at by report city council said new plan year market water river "
      "school road children music film game team player won lost , . ? ! U.S. 3.5 don't").split()
JA = ("今日 は 良い 天気 です 。 東京 の 会議 で 新しい 計画 が 発表 され まし た 子供 たち "
      "学校 に 行き ます 川 水 市場 映画 音楽 チーム 選手 勝ち 負け 昨日 雨 降り 、 「 」").split()


def _perturb(rng: random.Random, tokens: List[str], vocab: List[str]) -> List[str]:
    return [t if rng.random() > 0.2 else rng.choice(vocab) for t in tokens if rng.random() > 0.1]


def write_dataset(folder: Path, rows: int, files: int, seed: int = 20260) -> int:
    """Short synthetic segments, two systems, en-de (13a) and en-ja (ja-mecab: Japanese written
    without spaces, so MeCab has to segment it). Returns the total size in bytes."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    seg = 0
    for f in range(files):
        n = rows // files + (1 if f < rows % files else 0)
        cols: Dict[str, list] = {"system": [], "langpair": [], "seg_id": [], "candidate": [],
                                 "references": []}
        for _ in range(n):
            ja = rng.random() < 0.5
            vocab, joiner = (JA, "") if ja else (EN, " ")
            tokens = [rng.choice(vocab) for _ in range(rng.randint(3, 14))]
            refs = [joiner.join(tokens)]
            if rng.random() < 0.5:
                refs.append(joiner.join(_perturb(rng, tokens, vocab)))
            cols["system"].append(rng.choice(("sys-A", "sys-B")))
            cols["langpair"].append("en-ja" if ja else "en-de")
            cols["seg_id"].append(seg)
            cols["candidate"].append(joiner.join(_perturb(rng, tokens, vocab)))
            cols["references"].append(refs)
            seg += 1
        table = pa.table({"system": pa.array(cols["system"], pa.string()),
                          "langpair": pa.array(cols["langpair"], pa.string()),
                          "seg_id": pa.array(cols["seg_id"], pa.int64()),
                          "candidate": pa.array(cols["candidate"], pa.string()),
                          "references": pa.array(cols["references"], pa.list_(pa.string()))})
        # Several row groups per file, so Spark can split each file into several partitions.
        pq.write_table(table, folder / f"part-{f:03d}.parquet", row_group_size=max(1, n // 8))
    return sum(p.stat().st_size for p in folder.glob("*.parquet"))


def read_scores(out: Path) -> List[dict]:
    rows = pq.read_table(out / "scores").to_pylist()
    return sorted(rows, key=lambda r: tuple(r[c] for c in GROUP_COLS))


def read_run(out: Path) -> dict:
    return json.loads((out / "run.json").read_text())


# ----------------------------------------------------------------------------- submitting

@dataclass
class Submission:
    returncode: int
    seconds: float
    out: Path
    log: Path
    watched: dict = field(default_factory=dict)

    def log_tail(self, lines: int = 60) -> str:
        text = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        return "\n".join(text[-lines:])


def submit_env(conf_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "SPARK_CONF_DIR",
                        "PYSPARK_SUBMIT_ARGS", "SPARK_MASTER")}
    env.update(SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_CONF_DIR=str(conf_dir),  # empty: no stray spark-defaults.conf
               PYTHONUNBUFFERED="1")
    return env


def run_submit(argv: List[str], env: dict, out: Path, log: Path,
               watch: Optional[Callable[[], None]] = None) -> Submission:
    """Runs spark-submit in its own process group, polling `watch` while it runs."""
    started = time.monotonic()
    with open(log, "wb") as sink:
        proc = subprocess.Popen(argv, env=env, cwd=str(out.parent), stdin=subprocess.DEVNULL,
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            while proc.poll() is None:
                if time.monotonic() - started > SUBMIT_TIMEOUT:
                    tail = Submission(-1, SUBMIT_TIMEOUT, out, log).log_tail(200)
                    raise TimeoutError(f"spark-submit ran over {SUBMIT_TIMEOUT}s; its log ends:\n{tail}")
                if watch:
                    watch()
                time.sleep(0.25)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)  # the driver JVM and its Python child
                proc.wait()
    return Submission(proc.returncode, time.monotonic() - started, out, log)


# ----------------------------------------------------------------------------- fixtures

@dataclass
class Cluster:
    url: str
    state: Path
    worker_pids: List[int]


def _archive_is_fresh() -> bool:
    if os.environ.get("BLEU_SPARK_REBUILD") == "1" or not (ARCHIVE.exists() and ENTRY.exists()):
        return False
    built = min(ARCHIVE.stat().st_mtime, ENTRY.stat().st_mtime)
    sources = [ROOT / "pyproject.toml", ROOT / "jobs" / "score_bleu.py",
               ROOT / "scripts" / "package.sh", *(ROOT / "bleu_spark").rglob("*.py")]
    return all(p.stat().st_mtime < built for p in sources if p.exists())


@pytest.fixture(scope="module")
def archive(wall_times) -> Path:
    """dist/bleu_spark_env.tar.gz + dist/score_bleu.py, rebuilt unless newer than the sources."""
    if not _archive_is_fresh():
        started = time.monotonic()
        done = subprocess.run(["bash", str(ROOT / "scripts" / "package.sh")], cwd=str(ROOT),
                              env={**os.environ, "PYTHON": PYTHON}, capture_output=True,
                              text=True, timeout=900)
        assert done.returncode == 0, f"package.sh failed:\n{done.stdout}\n{done.stderr[-4000:]}"
        wall_times.lines.append(f"package.sh: {time.monotonic() - started:.1f} s")
        print(done.stdout)
    return ARCHIVE


def _cluster_cmd(action: str, state: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(ROOT / "scripts" / "cluster.sh"), action], cwd=str(ROOT),
                          env={**os.environ, "PYTHON": PYTHON, "CLUSTER_DIR": str(state)},
                          capture_output=True, text=True, timeout=timeout)


def _recorded_pids(state: Path) -> List[int]:
    return [int(p.read_text()) for p in sorted(state.glob("*.pid")) if p.read_text().strip()]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, archive, wall_times) -> Cluster:
    state = tmp_path_factory.mktemp("cluster-state")
    try:
        started = time.monotonic()
        up = _cluster_cmd("up", state, timeout=180)
        wall_times.lines.append(f"cluster.sh up: {time.monotonic() - started:.1f} s")
        assert up.returncode == 0, f"cluster.sh up failed:\n{up.stdout}\n{up.stderr}"
        url = up.stdout.strip().splitlines()[-1]
        assert re.fullmatch(r"spark://127\.0\.0\.1:\d+", url), url
        workers = [int((state / f"worker-{i}.pid").read_text()) for i in (1, 2)]
        yield Cluster(url=url, state=state, worker_pids=workers)
    finally:
        _teardown(state)


def _teardown(state: Path) -> None:
    table = process_table()
    pids = _recorded_pids(state)
    tree = {pid for root in pids for pid in [root, *(p.pid for p in descendants(root, table))]}
    try:
        down = _cluster_cmd("down", state, timeout=180)
    except subprocess.TimeoutExpired as exc:
        down = subprocess.CompletedProcess(exc.cmd, -1, exc.stdout or "", "timed out")
    time.sleep(0.5)
    left = {p.pid: p for p in cluster_processes(state)}
    table = process_table()
    left.update({pid: table[pid] for pid in tree if pid in table and table[pid].argv})
    for pid in left:  # still there: kill them so nothing outlives the tests, then fail
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for unpacked in state.glob("work-*/app-*/*/environment"):  # ~540 MB per executor
        shutil.rmtree(unpacked, ignore_errors=True)
    assert down.returncode == 0, f"cluster.sh down failed:\n{down.stdout}\n{down.stderr}"
    assert not left, "processes of the cluster were still running after cluster.sh down: " + \
        "; ".join(f"{p.pid} {' '.join(p.argv)[:160]}" for p in left.values())


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cluster-data") / "input"
    size = write_dataset(folder, ROWS, FILES)
    return folder, size


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cluster-runs")
    (path / "spark-conf").mkdir()
    return path


@pytest.fixture(scope="module")
def local_scores(dataset, workdir, wall_times) -> List[dict]:
    """The same job in local mode (driver and workers: this test's python and the source tree)."""
    data, _ = dataset
    out = workdir / "local"
    argv = [os.path.join(spark_home(), "bin", "spark-submit"), "--master", "local[2]",
            "--conf", f"spark.pyspark.python={PYTHON}",
            "--conf", f"spark.pyspark.driver.python={PYTHON}",
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.ui.enabled=false",
            str(ROOT / "jobs" / "score_bleu.py"), "--input", str(data), "--output", str(out)]
    run = run_submit(argv, submit_env(workdir / "spark-conf"), out, workdir / "local.log")
    assert run.returncode == 0, f"local run failed:\n{run.log_tail()}"
    wall_times.lines.append(f"local[2] run: {run.seconds:.1f} s ({ROWS} rows, exit {run.returncode})")
    scores = read_scores(out)
    assert {(r["langpair"], r["tokenize"]) for r in scores} == {("en-de", "13a"),
                                                                ("en-ja", "ja-mecab")}
    assert sum(r["n_segments"] for r in scores) == ROWS
    return scores


def cluster_argv(cluster: Cluster, data: Path, size: int, out: Path, ui_port: int) -> List[str]:
    return [os.path.join(spark_home(), "bin", "spark-submit"),
            "--master", cluster.url, "--deploy-mode", "client",
            "--archives", f"{ARCHIVE}#environment",
            "--conf", "spark.pyspark.python=./environment/bin/python",
            "--conf", f"spark.pyspark.driver.python={PYTHON}",
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.ui.enabled=true", "--conf", f"spark.ui.port={ui_port}",
            # many short tasks in every stage, so an executor can be lost mid-stage: input
            # splits, and the shuffle that brings rows sharing references together (without
            # adaptive coalescing, which merges it into as few tasks as there are cores)
            "--conf", f"spark.sql.files.maxPartitionBytes={size // PARTITIONS + 1}",
            "--conf", f"spark.sql.shuffle.partitions={PARTITIONS}",
            "--conf", "spark.sql.adaptive.coalescePartitions.enabled=false",
            str(ENTRY), "--input", str(data), "--output", str(out)]


class ExecutorPythons:
    """Records the Python processes the workers' executors start (they must be the archive's)."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.seen: Dict[int, Proc] = {}

    def __call__(self) -> None:
        table = process_table()
        for worker in self.cluster.worker_pids:
            for p in descendants(worker, table):
                if p.argv and "python" in os.path.basename(p.argv[0]):
                    self.seen.setdefault(p.pid, p)

    def check(self) -> None:
        assert self.seen, "saw no Python worker process under the cluster's executors"
        wrong = {p.argv[0] for p in self.seen.values()} - {"./environment/bin/python"}
        assert not wrong, f"executors ran Python from outside the shipped archive: {wrong}"
        cwds = {p.cwd for p in self.seen.values()}
        assert all(c.startswith(str(self.cluster.state / "work-")) for c in cwds), cwds


def check_cluster_run(run: Submission, cluster: Cluster, expected: List[dict]) -> dict:
    assert run.returncode == 0, f"cluster run failed (exit {run.returncode}):\n{run.log_tail()}"
    info = read_run(run.out)
    assert info.get("spark", {}).get("master") == cluster.url, \
        f"the job did not run on the cluster: run.json spark = {info.get('spark')}"
    assert info["rows"]["read"] == ROWS
    assert read_scores(run.out) == expected
    return info


class WallTimes:
    """Prints the wall times at the end of the run, in their own section (also without -s)."""

    def __init__(self):
        self.lines: List[str] = []

    def pytest_terminal_summary(self, terminalreporter):
        if self.lines:
            terminalreporter.section("cluster wall times")
            for line in self.lines:
                terminalreporter.line(line)


@pytest.fixture(scope="module")
def wall_times(request) -> WallTimes:
    plugin = WallTimes()
    request.config.pluginmanager.register(plugin, "bleu-spark-cluster-wall-times")
    return plugin


# ----------------------------------------------------------------------------- tests

def test_cluster_matches_local(cluster, dataset, workdir, local_scores, wall_times):
    data, size = dataset
    out = workdir / "cluster"
    pythons = ExecutorPythons(cluster)
    run = run_submit(cluster_argv(cluster, data, size, out, free_port()),
                     submit_env(workdir / "spark-conf"), out, workdir / "cluster.log", pythons)
    print(f"cluster run: {run.seconds:.1f} s wall")
    wall_times.lines.append(f"cluster run: {run.seconds:.1f} s ({ROWS} rows, exit {run.returncode})")
    info = check_cluster_run(run, cluster, local_scores)
    pythons.check()
    assert info["tasks"]["failed"] == 0, info["tasks"]
    # The executors run the archive's Python, whose kernels were built: the driver's install
    # (the tests' own, perhaps an editable one without them) is not theirs to speak for.
    assert kernel_status_lines(run.log.read_text(errors="replace")) == [], run.log_tail()


# The line `compiled.status()` gives a run where its install has no built kernels; other
# progress lines may name the kernels too (the first tasks' line, at 30 s on a loaded machine).
KERNEL_STATUS = re.compile(r"bleu-spark: progress: (no kernels built for numba |numba is not loaded here)")


def kernel_status_lines(log: str) -> List[str]:
    return [line for line in log.splitlines() if KERNEL_STATUS.search(line)]


def test_the_kernel_status_matcher_catches_that_line_only(monkeypatch):
    import io

    from bleu_spark import compiled
    from bleu_spark.spark.progress import say

    stream = io.StringIO()
    monkeypatch.setattr(compiled, "built_here", lambda: False)
    monkeypatch.setattr(compiled, "_numba_version", lambda: "0.68.0")
    say(compiled.status(), 30, stream)  # no kernels built for this Python
    monkeypatch.setattr(compiled, "_numba_version", lambda: None)
    say(compiled.status(), 30, stream)  # no numba: plain Python
    status = stream.getvalue().splitlines()
    first_tasks = ("bleu-spark: progress: 0 of 200,000 rows scored, the first tasks starting (Python "
                   "workers, imports, the compiled kernels), 30 s elapsed [stage 0: 0/32 tasks]")
    log = "\n".join(["25/12/06 02:00:00 INFO SparkContext: Running Spark", first_tasks, *status])
    assert len(status) == 2 and kernel_status_lines(log) == status


class ExecutorKiller:
    """Once the scoring stage has finished some tasks, SIGKILLs the JVM of an executor that has
    finished tasks of that stage and is running one, found by PID among one worker's children
    (its command line names the application and the executor id)."""

    def __init__(self, cluster: Cluster, log: Path, ui_port: int):
        self.cluster, self.log, self.ui_port = cluster, log, ui_port
        self.app_id: Optional[str] = None
        self.ui_bound = False
        self.killed: Optional[dict] = None
        self.pythons = ExecutorPythons(cluster)

    def _api(self, path: str):
        if not self.ui_bound and self.log.exists():
            # the UI moves to the next port if the chosen one was taken meanwhile
            match = re.search(r"started service 'SparkUI' on port (\d+)",
                              self.log.read_text(errors="replace"))
            if match:
                self.ui_port, self.ui_bound = int(match.group(1)), True
        url = f"http://127.0.0.1:{self.ui_port}/api/v1/{path}"
        with urllib.request.urlopen(url, timeout=2) as r:
            return json.load(r)

    def __call__(self) -> None:
        self.pythons()
        if self.killed:
            return
        try:
            if not self.app_id:
                apps = self._api("applications")
                if not apps:
                    return
                self.app_id = apps[0]["id"]
            stages = self._api(f"applications/{self.app_id}/stages?status=active")
            busy = [s for s in stages if s["numTasks"] >= PARTITIONS // 2
                    and 1 <= s["numCompleteTasks"] <= s["numTasks"] - 4]
            if not busy:
                return
            stage = busy[0]
            tasks = self._api(f"applications/{self.app_id}/stages/{stage['stageId']}/"
                              f"{stage['attemptId']}/taskList?length=10000")
        except (OSError, ValueError, KeyError):
            return  # UI not up yet, or between stages
        finished = Counter(t["executorId"] for t in tasks if t.get("status") == "SUCCESS")
        running = Counter(t["executorId"] for t in tasks if t.get("status") == "RUNNING")
        candidates = [e for e in finished if running[e]]  # finished tasks here, running one
        table = process_table()
        for worker in self.cluster.worker_pids:
            for p in descendants(worker, table):
                argv = p.argv
                if not ("org.apache.spark.executor.CoarseGrainedExecutorBackend" in argv
                        and self.app_id in argv and "--executor-id" in argv[:-1]):
                    continue
                executor_id = argv[argv.index("--executor-id") + 1]
                if executor_id not in candidates:
                    continue
                # Only once its Python workers run: the scoring stage, not the row count before
                # it (a JVM-only stage of as many tasks).
                if not any("python" in os.path.basename(c.argv[0])
                           for c in descendants(p.pid, table) if c.argv):
                    continue
                os.kill(p.pid, signal.SIGKILL)
                self.killed = {"pid": p.pid, "worker_pid": worker, "executor_id": executor_id,
                               "tasks_finished_in_stage": finished[executor_id],
                               "stage": {k: stage.get(k) for k in
                                         ("stageId", "attemptId", "name", "numTasks",
                                          "numCompleteTasks")},
                               "at": time.monotonic()}
                return


def test_killed_executor_matches_local(cluster, dataset, workdir, local_scores, wall_times):
    data, size = dataset
    out = workdir / "cluster-killed"
    log = workdir / "cluster-killed.log"
    ui_port = free_port()
    killer = ExecutorKiller(cluster, log, ui_port)
    started = time.monotonic()
    run = run_submit(cluster_argv(cluster, data, size, out, ui_port),
                     submit_env(workdir / "spark-conf"), out, log, killer)
    print(f"killed-executor run: {run.seconds:.1f} s wall; killed {killer.killed} "
          f"{killer.killed['at'] - started:.1f} s in" if killer.killed else
          f"killed-executor run: {run.seconds:.1f} s wall; nothing killed")
    wall_times.lines.append(f"killed-executor run: {run.seconds:.1f} s ({ROWS} rows, exit {run.returncode})" + (
        f", executor {killer.killed['executor_id']} (PID {killer.killed['pid']}) killed "
        f"{killer.killed['at'] - started:.1f} s in" if killer.killed else ", nothing killed"))
    assert killer.killed, ("the job finished before an executor had finished tasks and was "
                           f"running one; raise BLEU_SPARK_CLUSTER_ROWS\n{run.log_tail()}")
    assert not os.path.exists(f"/proc/{killer.killed['pid']}/cmdline") or \
        not open(f"/proc/{killer.killed['pid']}/cmdline").read(), "the killed executor lives on"
    info = check_cluster_run(run, cluster, local_scores)
    killer.pythons.check()
    tasks = info.get("tasks")
    assert tasks is not None, "run.json has no 'tasks' key"
    # The lost executor's running tasks fail in the stage's attempt 0; the shuffle output it held
    # is gone too, so the next stage's reads fail and Spark reruns both as attempt 1. `failed`
    # must count the failed task attempts of every attempt of the run's stages.
    assert tasks["failed"] >= 1, f"run.json does not record the lost task attempts: {tasks}"
    # The rerun tasks count their rows again: progress never says more rows than the input has.
    text = log.read_text(errors="replace")
    said = [(int(a.replace(",", "")), int(b.replace(",", ""))) for a, b in re.findall(
        r"progress: (?:done: )?([\d,]+) of ([\d,]+) rows scored", text)]
    assert all(done <= total for done, total in said), said
    assert re.search(rf"progress: done: (all {ROWS:,}|[\d,]+ of {ROWS:,}) rows scored", text), text[-3000:]
