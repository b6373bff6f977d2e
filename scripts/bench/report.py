"""The speed table and the ratios between paths."""
from __future__ import annotations

import json
from typing import Any, Dict, Optional

from .paths import ALL_PATHS, JOB_PATHS, PATH_TITLES


def _fmt_rate(rows: int, seconds: Optional[float]) -> str:
    return f"{rows / seconds:,.0f}" if seconds else "-"


def _fmt_mib(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:,.0f}"


def print_table(runs: Dict[str, Dict[str, Any]], rows: int) -> None:
    hdr = (f"{'path':<4} {'what':<42} {'rows/s':>9} {'wall s':>8} {'cpu s':>7} {'rows/cpu-s':>10} "
           f"{'JVM MiB':>8} {'py drv':>7} {'py wrk':>7} {'1 wrk':>6} {'load':>5} {'other cpu':>9}")
    print(hdr)
    print("-" * len(hdr))
    for p in ALL_PATHS:
        r = runs.get(p)
        if not r or r.get("returncode") != 0 or "rows_per_s" not in r:  # g: no rows scored
            continue
        peak = r.get("peak_rss_mib", {})
        one = r.get("peak_rss_one_mib", {})
        print(f"{p:<4} {PATH_TITLES[p]:<42} {r['rows_per_s']:>9,.0f} {r['wall_s']:>8.1f} "
              f"{r.get('cpu_total_s', 0):>7.1f} {_fmt_rate(rows, r.get('cpu_total_s')):>10} "
              f"{_fmt_mib(peak.get('jvm')):>8} "
              f"{_fmt_mib(peak.get('py_driver')):>7} {_fmt_mib(peak.get('py_worker')):>7} "
              f"{_fmt_mib(one.get('py_worker')):>6} {r['load_before'][0]:>5.2f} "
              f"{r.get('other_cpu_s', float('nan')):>9.1f}")


def compute_ratios(runs: Dict[str, Dict[str, Any]]) -> Dict[str, float]:
    out = {}
    for num, den in (("b", "a1"), ("b", "a2"), ("c", "a1"), ("c", "a2"), ("c", "b"),
                     ("c", "a3"), ("a2", "a1"), ("e", "a2")):
        if num in runs and den in runs and runs[den].get("rows_per_s") and runs[num].get("rows_per_s"):
            out[f"{num}/{den}"] = round(runs[num]["rows_per_s"] / runs[den]["rows_per_s"], 3)
    return out


def print_speed(runs: Dict[str, Dict[str, Any]], n_rows: int, ratios: Dict[str, float], args) -> None:
    """The speed table, the ratios, and what the runs say of themselves."""
    print()
    print(f"{n_rows:,} rows; peak RSS in MiB (py wrk = all Python workers together, "
          f"1 wrk = the largest one); load = 1-min load average before the run; other cpu = "
          f"CPU seconds used meanwhile by processes outside the run")
    print_table(runs, n_rows)
    if ratios:
        print("ratios of rows/s: " + ", ".join(f"{k} = {v:.2f}" for k, v in ratios.items()))
    if "c" in runs and "d" in runs:
        print(f"d / c wall time (B = {args.n_bootstrap} intervals against the plain run): "
              f"{runs['d']['wall_s'] / runs['c']['wall_s']:.2f}")
    if "g" in runs:
        print(f"g: aggregate of {args.stats_rows:,} statistics rows: {runs['g']['wall_s']:.2f} s")
    if runs.get("s", {}).get("returncode") == 0:
        floor = runs["s"]["wall_s"]
        print(f"s: Spark alone {floor:.2f} s" + (
            f"; a2's wall time / s's = {runs['a2']['wall_s'] / floor:.2f}, the most a job path "
            f"could gain over a2 here" if "a2" in runs else ""))
    for p in JOB_PATHS:
        _print_job_run(p, runs.get(p, {}))


def _print_job_run(p: str, run: Dict[str, Any]) -> None:
    """A job path's CPU seconds by process, and what its run.json says of rows, timings, layout
    and tasks."""
    cpu = run.get("cpu_s")
    if cpu:
        print(f"{p} CPU seconds by process: " + ", ".join(
            f"{k} {v:.1f}" for k, v in sorted(cpu.items(), key=lambda kv: -kv[1]) if v >= 0.05))
    jr = run.get("job_run")
    if jr:
        keep = {k: jr[k] for k in ("rows", "timings", "layout", "tasks", "input_bytes")
                if k in jr}
        print(f"{p} run.json: " + json.dumps(keep)[:900])
        # Through Spark Connect the task metrics read "unavailable".
        if jr.get("input_bytes") and isinstance(jr.get("tasks", {}).get("shuffle_write_bytes"), int):
            print(f"{p} shuffle bytes written per input byte: "
                  f"{jr['tasks'].get('shuffle_write_bytes', 0) / jr['input_bytes']:.4f}")
