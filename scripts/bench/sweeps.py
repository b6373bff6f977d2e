"""Modes that run the benchmark several times and compare the runs: --scale-groups and
--segments."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, List

# the benchmark's main, run again with the arguments of each run a mode compares
Main = Callable[[List[str]], int]


def run_scale(args, main: Main) -> int:
    """c and d per number of groups: time and peak memory of intervals as groups grow."""
    table = []
    for groups in args.scale_groups:
        systems = min(groups, 100)
        langpairs = ",".join(f"x{i:03d}-en" for i in range(max(1, groups // systems)))
        out = Path(args.workdir) / f"scale-{groups}.json"
        argv = ["--rows", str(args.rows), "--systems", str(systems), "--langpairs", langpairs,
                "--paths", "c,d", "--row-groups", str(args.row_groups), "--json", str(out),
                "--workdir", args.workdir, "--n-bootstrap", str(args.n_bootstrap)]
        argv += [f"--conf={c}" for c in args.conf] + [f"--job-arg={a}" for a in args.job_arg]
        print(f"== {groups} groups: {systems} systems x {groups // systems} language pairs", flush=True)
        if main(argv) != 0:
            return 2
        runs = json.loads(out.read_text())["runs"]
        table.append((groups, runs["c"], runs["d"]))
    print()
    print(f"{args.rows:,} rows in {args.row_groups} row groups; B = {args.n_bootstrap}; "
          f"peak RSS of the whole process tree")
    print(f"{'groups':>7} {'c wall s':>9} {'d wall s':>9} {'d/c':>5} {'c MiB':>8} {'d MiB':>8} "
          f"{'d driver py MiB':>16} {'d 1 wrk MiB':>12}")
    for groups, c, d in table:
        print(f"{groups:>7} {c['wall_s']:>9.1f} {d['wall_s']:>9.1f} {d['wall_s'] / c['wall_s']:>5.2f} "
              f"{c['peak_rss_total_mib']:>8.0f} {d['peak_rss_total_mib']:>8.0f} "
              f"{d['peak_rss_mib'].get('py_driver', 0):>16.0f} "
              f"{d['peak_rss_one_mib'].get('py_worker', 0):>12.0f}")
    return 0


def run_segments(args, main: Main) -> int:
    """a2 and c, then c with `--segments`, on one input: the extra time and memory of writing
    the segments table, and its bytes per input row."""
    found = {}
    carried = f"--segments-columns={args.segments_columns}" if args.segments_columns else None
    with_a2 = "a2" in args.paths.split(",")  # --paths c: the job alone (at 10M rows, say)
    for label, paths, extra in (("plain", "a2,c" if with_a2 else "c", []),
                                ("segments", "c", ["--segments", *([carried] if carried else [])])):
        out = Path(args.workdir) / f"segments-{label}.json"
        argv = ["--paths", paths, "--json", str(out), "--workdir", args.workdir]
        argv += ["--input", args.input] if args.input else \
            ["--rows", str(args.rows), "--systems", str(args.systems), "--langpairs", args.langpairs]
        argv += ["--row-groups", str(args.row_groups)] if args.row_groups else []
        argv += [f"--conf={c}" for c in args.conf] + [f"--job-arg={a}" for a in [*args.job_arg, *extra]]
        print(f"== {label}", flush=True)
        if main(argv) != 0:
            return 2
        found[label] = json.loads(out.read_text())
    a2, plain = found["plain"]["runs"].get("a2"), found["plain"]["runs"]["c"]
    written = found["segments"]["runs"]["c"]
    folder = Path(written["cmd"][written["cmd"].index("--output") + 1]) / "segments"
    size = sum(f.stat().st_size for f in folder.rglob("*.parquet"))
    rows = found["segments"]["corpus"]["rows"]
    print()
    print(f"{rows:,} rows; segments table {size / 2**20:,.1f} MiB, {size / rows:,.0f} bytes per "
          f"input row ({carried or 'no carried columns'})")
    print(f"{'path':<14} {'wall s':>8} {'/ a2':>6} {'MiB all':>8} {'MiB driver py':>14} {'MiB JVM':>8}")
    shown = ((("a2 sacrebleu", a2),) if a2 else ()) + (("c", plain), ("c --segments", written))
    for name, run in shown:
        mib = run.get("peak_rss_mib", {})
        ratio = f"{run['wall_s'] / a2['wall_s']:>6.2f}" if a2 else f"{'-':>6}"
        print(f"{name:<14} {run['wall_s']:>8.1f} {ratio} "
              f"{run.get('peak_rss_total_mib', 0):>8.0f} {mib.get('py_driver', 0):>14.0f} "
              f"{mib.get('jvm', 0):>8.0f}")
    print(f"--segments costs {written['wall_s'] / plain['wall_s']:.2f}x the plain run's wall time")
    return 0
