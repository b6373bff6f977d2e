"""The default mode: each path timed as a whole process, the identity guard over their results,
then the speed table."""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .corpus import ensure_stats_table
from .environment import find_spark_submit
from .guard import check_identity
from .job_runs import aggregate_command, floor_command, job_command, job_environment, load_job_results
from .measure import PySpyAttacher, run_measured, summarize_collapsed
from .paths import PATH_TITLES
from .report import compute_ratios, print_speed
from .sacrebleu_runs import score_command

SACREBLEU_PATHS = ("a1", "a2", "a3")


@dataclass
class Run:
    """One benchmark run: what its paths share, and what they gave."""
    args: Any
    input_path: Path
    n_rows: int
    run_dir: Path
    env: Dict[str, str]
    job_script: Path
    spark_submit: str
    runs: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    results: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)
    failed: List[str] = field(default_factory=list)


def run_paths(args, paths: Sequence[str], input_path: Path, corpus_meta: Dict[str, Any],
              info: Dict[str, Any]) -> int:
    """Exit 0 ok, 1 results differ, 2 a path failed."""
    run = _start(args, paths, input_path, corpus_meta["rows"], info)
    for p in paths:
        _time_path(run, p)
    # identity guard, before any speed figure
    identity = check_identity(run.results, run.failed)
    report = {"machine": info, "corpus": corpus_meta, "paths": paths, "runs": run.runs,
              "identity": identity, "ratios": compute_ratios(run.runs), "smoke": args.smoke}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return _finish(run, identity, report["ratios"])


def _start(args, paths: Sequence[str], input_path: Path, n_rows: int, info: Dict[str, Any]) -> Run:
    env, job_script = job_environment(args, paths, info)
    spark_submit = args.spark_submit or find_spark_submit()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = Path(args.workdir) / "runs" / f"{stamp}-{n_rows}"
    run_dir.mkdir(parents=True, exist_ok=True)
    return Run(args, input_path, n_rows, run_dir, env, job_script, spark_submit)


def _time_path(run: Run, p: str) -> None:
    print(f"running {p}: {PATH_TITLES[p]} ...", flush=True)
    cmd, output, profile = _command(run, p)
    # cwd: Spark may create spark-warehouse/ and derby files in the working folder
    r = run_measured(cmd, run.env, run.run_dir / f"{p}.log", timeout=run.args.timeout,
                     on_new=profile, cwd=run.run_dir)
    run.runs[p] = r
    if r["returncode"] != 0:
        _print_failure(p, r)
        run.failed.append(p)
    elif p == "s":
        print(f"  s: Spark alone in {r['wall_s']:.2f} s as a whole process", flush=True)
    elif p == "g":
        r["stats_rows"] = run.args.stats_rows
        print(f"  g: aggregate of {run.args.stats_rows:,} statistics rows in {r['wall_s']:.2f} s "
              f"as a whole process", flush=True)
    else:
        _read_results(run, p, r, output)
        if profile is not None:
            _add_profile(profile, r)


def _command(run: Run, p: str) -> Tuple[List[str], Optional[Path], Optional[PySpyAttacher]]:
    """The command of path p, where it writes its results, and the profiler watching it."""
    args = run.args
    if p in SACREBLEU_PATHS:
        out_json = run.run_dir / f"{p}.json"
        return score_command(p, run.input_path, out_json, args.tokenize), out_json, None
    if p == "s":
        return floor_command(), None, None
    if p == "g":
        stats_table = ensure_stats_table(Path(args.workdir), args.stats_rows)
        return aggregate_command(stats_table, run.run_dir / "aggregate"), None, None
    out_dir = run.run_dir / f"job-{p}"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    cmd = job_command(p, args, run.spark_submit, run.job_script, run.input_path, out_dir)
    return cmd, out_dir, _profiler(args.profile) if p == "b" else None


def _profiler(folder: Optional[str]) -> Optional[PySpyAttacher]:
    if not folder:
        return None
    Path(folder).mkdir(parents=True, exist_ok=True)
    return PySpyAttacher(Path(folder) / "pyspy-b.txt")


def _print_failure(p: str, r: Dict[str, Any]) -> None:
    print(f"  {p} FAILED (exit {r['returncode']}); log: {r['log']}")
    try:
        print("  " + "\n  ".join(Path(r["log"]).read_text(errors="replace").splitlines()[-25:]))
    except OSError:
        pass


def _read_results(run: Run, p: str, r: Dict[str, Any], output: Path) -> None:
    if p in SACREBLEU_PATHS:
        data = json.loads(output.read_text())
        run.results[p] = data["results"]
        r["rows_scored"] = data["rows"]
        r["inner_timings"] = data["timings"]
    else:
        run.results[p], r["job_run"] = load_job_results(output)
    r["rows_per_s"] = run.n_rows / r["wall_s"]
    print(f"  {p}: {r['wall_s']:.1f} s, {r['rows_per_s']:,.0f} rows/s, "
          f"peak RSS {r['peak_rss_mib']}", flush=True)


def _add_profile(profile: PySpyAttacher, r: Dict[str, Any]) -> None:
    err = profile.finish()
    if err:
        print(f"  py-spy: {err}")
        return
    summ = summarize_collapsed(profile.out_raw)
    r["profile"] = summ
    print(f"  py-spy on b's Python workers ({summ['samples']} samples), top self time:")
    for fn, pct in summ["self_pct"][:15]:
        print(f"    {pct:5.1f}%  {fn}")


def _finish(run: Run, identity: Dict[str, Any], ratios: Dict[str, float]) -> int:
    if run.failed:
        print(f"failed paths: {', '.join(run.failed)}")
        return 2
    if identity["passed"] is False:
        return 1
    if run.args.smoke:
        print("smoke mode: timings not reported")
        return 0
    print_speed(run.runs, run.n_rows, ratios, run.args)
    return 0
