"""The fixed cost of a run, as `bench.py --start-up` measures it (docs/benchmarks.md, "Fast from
the first row"). Each part runs in environments made for it under --workdir, from a clean clone
of --job-root at HEAD, installed with `pip install CLONE` as a new user would: `built` (the
kernels compiled when the wheel is built, the default) and `jit` (the same wheel built with
BLEU_SPARK_SKIP_KERNELS=1: the kernels compile at first use, as before they were built).

1. cold and warm: the first run after the install (`bleu-spark score`, --start-rows rows,
   `--metrics bleu,chrf,chrf++,ter`), then --repeats more; cold minus the warm median.
2. a small run against Spark's floor: --start-small rows, BLEU, against `bench.py
   _spark_floor` (the session as `bleu-spark score` starts it, a no-op Python task per core,
   stop), alternating, --repeats each.
3. `imports`: the CPU seconds of importing what the driver of `bleu-spark score` imports.
4. an executor's first task on a standalone cluster (master and one worker of one core on
   127.0.0.1, from the installed pyspark): once the executor has registered, a no-op Python
   task (the Python worker's start), then three jobs of one task each, each the four metrics'
   statistics of --start-rows rows, in an executor whose numba cache folder is new (as a new
   YARN or Kubernetes container's is); the first job's time against the second's, and each
   task's own time inside its Python worker.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

METRICS = "bleu,chrf,chrf++,ter"


def _log(msg: str) -> None:
    print(f"[start-up] {msg}", flush=True)


def _run(cmd, env=None, cwd=None) -> float:
    """Wall seconds of `cmd` as a whole process; fails loudly if it fails."""
    start = time.perf_counter()
    done = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(map(str, cmd))}\n{done.stderr[-3000:]}")
    return took


def make_env(workdir: Path, root: Path, variant: str, reuse: bool = False) -> Path:
    """A new venv holding `pip install CLONE` of a clean clone of `root` at HEAD (`reuse`: the
    one a previous invocation made, for the parts that do not measure a first run)."""
    # A clone per environment: each builds in its clone's build/ folder, as a user's would.
    clone, venv = workdir / f"clone-{variant}", workdir / f"venv-{variant}"
    if reuse and (venv / "bin" / "bleu-spark").exists():
        return venv
    if not clone.exists():
        subprocess.run(["git", "clone", "--quiet", str(root), str(clone)], check=True)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if variant == "jit":
        env["BLEU_SPARK_SKIP_KERNELS"] = "1"
    took = _run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", str(clone)], env=env)
    _log(f"{variant}: pip install of a clean clone: {took:.1f} s")
    return venv


def small_input(source: Path, rows: int, out: Path) -> Path:
    import pyarrow.parquet as pq

    table = pq.read_table(source)
    if "langpair" in table.column_names:  # one language pair, as a small scheduled run has
        import pyarrow.compute as pc
        first = table["langpair"][0]
        table = table.filter(pc.equal(table["langpair"], first))
    pq.write_table(table.slice(0, rows), out)
    return out


def clean_env(venv: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK", "NUMBA"))}
    env.pop("PYTHONPATH", None)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def cold_warm(venv: Path, data: Path, out: Path, repeats: int) -> dict:
    cmd = [venv / "bin" / "bleu-spark", "score", "--input", data, "--output", out,
           "--metrics", METRICS]
    env = clean_env(venv)
    cold = _run(cmd, env)
    warm = [_run(cmd, env) for _ in range(repeats)]
    return {"cold_s": cold, "warm_s": warm, "cold_minus_warm_s": cold - statistics.median(warm)}


def floor_vs_small(venv: Path, data: Path, out: Path, repeats: int) -> dict:
    env = clean_env(venv)
    bench = Path(__file__).with_name("bench.py")
    small, floor = [], []
    for _ in range(repeats):  # alternating, so a drift of the machine falls on both
        floor.append(_run([venv / "bin" / "python", bench, "_spark_floor"], env))
        small.append(_run([venv / "bin" / "bleu-spark", "score", "--input", data, "--output", out], env))
    return {"floor_s": floor, "small_s": small,
            "small_minus_floor_s": statistics.median(small) - statistics.median(floor)}


def driver_imports(venv: Path, repeats: int) -> dict:
    """CPU seconds of a process that imports what the driver of `bleu-spark score` imports."""
    import resource

    env = clean_env(venv)
    cpu = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        _run([venv / "bin" / "python", "-c", "import bleu_spark.cli, bleu_spark.spark.job"], env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return {"cpu_s": cpu, "median_cpu_s": statistics.median(cpu)}


# --- the standalone cluster ---------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(path: Path, text: str, timeout: float = 60) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise SystemExit(f"no {text!r} in {path} after {timeout:.0f} s")


DRIVER = r"""
import json, sys, time
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

url, data, numba_cache = sys.argv[1:4]
rows = pq.read_table(data).to_pylist()
spark = (SparkSession.builder.master(url).appName("bleu-spark first task")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.executorEnv.NUMBA_CACHE_DIR", numba_cache).getOrCreate())

def statistics(partition):
    import os, time
    start = time.perf_counter()
    for _ in partition:  # read to its end, or Spark does not reuse the Python worker
        pass
    import pyarrow as pa
    from bleu_spark import build_kernels, metrics
    from bleu_spark.metrics.bleu import BleuConfig
    from bleu_spark.tokenizers import LineTokenizer
    candidates = pa.array([r["candidate"] for r in rows], pa.string())
    references = pa.array([r["references"] for r in rows], pa.list_(pa.string()))
    total = 0
    for metric in metrics.configured(["bleu", "chrf", "chrf++", "ter"], {}, BleuConfig()):
        tokenizer = LineTokenizer("13a", False, None) if metric.uses_tokenizer else None
        total += int(metric.measure(candidates, references, tokenizer)[0].sum())
    # inside the task: its seconds, its Python worker, the kernels it compiled (none if built)
    return [(time.perf_counter() - start, os.getpid(), len(build_kernels.compiled_now()))]

sc = spark.sparkContext
# Timed from when the executor has registered (its JVM's start is the cluster's, not a task's)
deadline = time.time() + 120
while sc._jsc.sc().getExecutorMemoryStatus().size() < 2 and time.time() < deadline:
    time.sleep(0.1)
# A no-op Python task first: what starting the executor's Python worker costs, with no job code
start = time.perf_counter()
sc.parallelize([0], 1).mapPartitions(lambda rows: [sum(1 for _ in rows)]).collect()
noop = time.perf_counter() - start
times, inside = [], []
for _ in range(3):
    start = time.perf_counter()
    inside += sc.parallelize([0], 1).mapPartitions(statistics).collect()
    times.append(time.perf_counter() - start)
spark.stop()
print(json.dumps([noop, times, inside]))
"""


def first_task(venv: Path, data: Path, workdir: Path) -> dict:
    """Three one-task jobs on a new standalone cluster; an executor whose numba cache is new."""
    import glob

    pyspark_home = Path(glob.glob(str(venv / "lib" / "python3*" / "site-packages" / "pyspark"))[0])
    env = clean_env(venv)
    env.update(SPARK_HOME=str(pyspark_home), SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=str(venv / "bin" / "python"),
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")
    run_dir = workdir / f"cluster-{venv.name}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    # A new container has no numba cache: none next to the installed sources (what the earlier
    # parts' runs compiled there), and a new, empty cache folder for the worker and executors.
    for cached in glob.glob(str(pyspark_home.parent / "bleu_spark" / "**" / "__pycache__" / "*.nb[ic]"),
                            recursive=True):
        os.remove(cached)  # (the built kernels, in bleu_spark/_kernels, stay: they are the wheel's)
    cache = run_dir / "numba-cache"
    cache.mkdir()
    env["NUMBA_CACHE_DIR"] = str(cache)
    port = _free_port()
    spark_class = pyspark_home / "bin" / "spark-class"
    master_log, worker_log = run_dir / "master.log", run_dir / "worker.log"
    procs = []
    try:
        with open(master_log, "w") as log:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(_free_port())],
                env=env, stdout=log, stderr=subprocess.STDOUT))
        _wait_for(master_log, "I have been elected leader")
        url = f"spark://127.0.0.1:{port}"
        with open(worker_log, "w") as log:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--cores", "1", "--memory", "2g", "--webui-port", str(_free_port()),
                 "--work-dir", str(run_dir / "work")],
                env=env, stdout=log, stderr=subprocess.STDOUT))
        _wait_for(worker_log, "Successfully registered with master")
        done = subprocess.run([venv / "bin" / "python", "-c", DRIVER, url, str(data), str(cache)],
                              env=env, capture_output=True, text=True, timeout=900)
        if done.returncode:
            raise SystemExit(f"the cluster driver failed:\n{done.stderr[-3000:]}")
        noop, times, inside = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        for proc in reversed(procs):  # the worker first, then the master; by PID
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return {"noop_s": noop, "jobs_s": times, "first_minus_second_s": times[0] - times[1],
            "in_task_s": [t for t, _, _ in inside], "worker_pids": [p for _, p, _ in inside],
            "compiled_in_task": [c for _, _, c in inside]}


def run(args) -> int:
    root = Path(args.job_root).resolve()
    workdir = Path(args.workdir) / "start-up"
    workdir.mkdir(parents=True, exist_ok=True)
    source = Path(args.input) if args.input else Path(root) / "samples" / "wmt22_sample.parquet"
    rows = small_input(source, args.start_rows, workdir / "rows.parquet")
    few = small_input(source, args.start_small, workdir / "few.parquet")
    results = {}
    for variant in args.start_variants.split(","):
        venv = make_env(workdir, root, variant, reuse="cold" not in args.start_parts)
        result = results[variant] = {}
        if "cold" in args.start_parts:
            result["cold_warm"] = cold_warm(venv, rows, workdir / "out", args.repeats)
            _log(f"{variant}: {args.start_rows} rows, {METRICS}: cold "
                 f"{result['cold_warm']['cold_s']:.1f} s, warm "
                 f"{', '.join(f'{t:.1f}' for t in result['cold_warm']['warm_s'])} s: cold minus "
                 f"warm median {result['cold_warm']['cold_minus_warm_s']:.1f} s")
        if "floor" in args.start_parts:
            result["floor"] = floor_vs_small(venv, few, workdir / "out-small", args.repeats)
            _log(f"{variant}: Spark's floor {', '.join(f'{t:.1f}' for t in result['floor']['floor_s'])} s; "
                 f"{args.start_small} rows, BLEU: {', '.join(f'{t:.1f}' for t in result['floor']['small_s'])} s; "
                 f"median difference {result['floor']['small_minus_floor_s']:.1f} s")
        if "imports" in args.start_parts:
            result["imports"] = driver_imports(venv, max(args.repeats, 5))
            _log(f"{variant}: the driver's imports: CPU "
                 f"{', '.join(f'{t:.2f}' for t in result['imports']['cpu_s'])} s")
        if "cluster" in args.start_parts:
            result["cluster"] = first_task(venv, rows, workdir)
            _log(f"{variant}: standalone cluster, a no-op Python task "
                 f"{result['cluster']['noop_s']:.2f} s, then one-task jobs "
                 f"{', '.join(f'{t:.2f}' for t in result['cluster']['jobs_s'])} s: first minus "
                 f"second {result['cluster']['first_minus_second_s']:.2f} s; inside the tasks "
                 f"{', '.join(f'{t:.2f}' for t in result['cluster']['in_task_s'])} s, kernels "
                 f"compiled {result['cluster']['compiled_in_task']}, Python workers "
                 f"{result['cluster']['worker_pids']}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    return 0
