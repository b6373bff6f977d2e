"""Paths b to e (the job), s (Spark alone) and g (aggregate): their commands and environment,
and the job's results read back."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .environment import BENCH_SCRIPT, git_describe
from .paths import GROUP_KEYS, JOB_PATHS


def code_environment(root: Optional[Path] = None) -> Dict[str, str]:
    """The environment a measured run gets: this interpreter as Spark's Python, no
    PYSPARK_SUBMIT_ARGS, and `root`'s code (a checkout of the job) first on PYTHONPATH."""
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(root)] + (
            [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def add_output_options(ap) -> None:
    """What every measured script of a run's output takes: the code that runs, where the runs
    go as JSON, and markdown tables."""
    from .environment import REPO

    ap.add_argument("--job-root", default=str(REPO),
                    help="the checkout whose code runs (default this one; a copy of a commit, "
                         "say `git archive HEAD | tar -x -C DIR`, keeps others' edits out)")
    ap.add_argument("--json", default=None, help="every run, as JSON (default WORKDIR/runs.json)")
    ap.add_argument("--markdown", action="store_true")


def run_json(out: Path) -> Dict[str, Any]:
    """A run's run.json as its output folder holds it; {} when it wrote none."""
    try:
        return json.loads((out / "run.json").read_text())
    except (OSError, ValueError):
        return {}


def peak_mib(run: Dict[str, Any], kind: str) -> float:
    """A measured run's peak RSS of one kind of process (py_driver, jvm, ...), MiB."""
    return run.get("peak_rss_mib", {}).get(kind, 0.0)


def job_environment(args, paths: Sequence[str], info: Dict[str, Any]) -> Tuple[Dict[str, str], Path]:
    """The environment every path runs in, and the job script of paths b to d: the --job-root
    checkout goes first on PYTHONPATH when a path runs its code (and is recorded in info)."""
    job_root = Path(args.job_root).resolve()
    job_script = job_root / "jobs" / "score_bleu.py"
    runs_code = any(p in paths for p in (*JOB_PATHS, "s", "g"))
    env = code_environment(job_root if runs_code else None)
    if runs_code:
        info["job_root"] = str(job_root)
        info["job_commit"] = git_describe(job_root)
        print(f"job: {job_script} (commit {info['job_commit']})")
    return env, job_script


def job_command(path: str, args, spark_submit: str, job_script: Path, input_path: Path,
                out_dir: Path) -> List[str]:
    """Path b, c, d or e scoring input_path into out_dir."""
    if path == "e":
        cmd = [sys.executable, "-m", "bleu_spark", "score"]
    else:
        master = args.master_b if path == "b" else args.master_c
        cmd = [spark_submit, "--master", master]
        for c in args.conf:
            cmd += ["--conf", c]
        cmd += [str(job_script)]
    cmd += ["--input", str(input_path), "--output", str(out_dir),
            "--group-by", ",".join(GROUP_KEYS)]
    if args.tokenize != "auto":
        cmd += ["--tokenize", args.tokenize]
    cmd += args.job_arg
    if path == "d":
        cmd += ["--confidence", "--n-bootstrap", str(args.n_bootstrap)]
    return cmd


def aggregate_command(stats_table: Path, out_dir: Path) -> List[str]:
    """Path g: `bleu-spark aggregate` of a statistics table, no JVM."""
    return [sys.executable, "-m", "bleu_spark", "aggregate", "--stats", str(stats_table),
            "--output", str(out_dir), "--group-by", "langpair,system"]


def floor_command() -> List[str]:
    """Path s, as a child process: `bench.py _spark_floor`."""
    return [sys.executable, str(BENCH_SCRIPT), "_spark_floor"]


def spark_floor() -> None:
    """Path s: the SparkContext as `bleu-spark score` starts it (its JVM options, local[*]),
    one Python task per core that does nothing, stop."""
    from bleu_spark.spark.runtime.classic import spark_session

    spark = spark_session()
    cores = spark.sparkContext.defaultParallelism
    spark.sparkContext.parallelize(range(cores), cores).mapPartitions(lambda rows: [sum(1 for _ in rows)]).collect()
    spark.stop()


def load_job_results(out_dir: Path) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    scores_json = out_dir / "scores.json"
    if scores_json.exists():
        rows = json.loads(scores_json.read_text())
    else:
        import pyarrow.parquet as pq

        rows = pq.read_table(out_dir / "scores").to_pylist()
    run = {}
    if (out_dir / "run.json").exists():
        run = json.loads((out_dir / "run.json").read_text())
    return rows, run

