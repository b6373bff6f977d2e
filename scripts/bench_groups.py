"""Groups against time and memory: `bleu-spark score` over the same rows of real text cut into
more and more groups, where groups are scored on the driver and on the executors.

    python scripts/bench_groups.py --parts scale,confidence,ratio [--markdown]
    python scripts/bench_groups.py --parts scale --groups 100,10000 --rows 100000   # a quick look

The rows come from WMT22 (`--source`, 218,628 rows): `--rows` (1,000,000) are the table
repeated with its systems renamed per copy (`scripts/derive_input.py --copies`), cut there,
and `--ratio-rows` (100,000) are evenly spaced over it (`scripts/derive_input.py --rows`), each
in row groups of 100,000, with a column `gN` per number of groups N that cuts the rows in
table order into N runs of rows/N rows: 100 "systems" of 10,000 rows, 10,000 documents of 100,
100,000 documents of 10, a group a row. Every run is one process,

    python -m bleu_spark score --input IN --output OUT --group-by gN --progress-seconds 0
        --tokenize 13a [--groups-scored-on driver|executors] [--confidence]

(`--tokenize 13a`: a cut spans language pairs, and the job refuses a group of rows tokenized
apart; the ratio part groups by language pair and keeps `--tokenize auto`)

measured as scripts/bench.py measures its paths (`scripts/bench/measure.py`: wall time, and
peak RSS of the driver, the root Python process; of the JVM; of the whole process tree, Python
workers included), with run.json's `groups` and the machine's load before and after.

Parts (`--parts`):

- scale: every `--groups` count over the `--rows` rows, once per `--modes` (auto, driver);
  the driver path is left out where the driver runs measured so far, extended in a straight
  line, say it would pass `--driver-limit-mib` (6,000): it holds a row per group;
- confidence: `--confidence-groups` (100, 10,000) over the same rows with `--confidence`
  (B = 1000), once per `--confidence-modes` (auto, which keeps on the driver a statistics
  table of at most 64 MB, and executors); and the issue's case, `--ratio-rows` (100,000) rows in
  documents of 10 segments (10,000 groups). More groups are not run with intervals: each group's
  replicate sums are B x 9 int64, 72 KB at B = 1000, 7.2 GB at 100,000 groups;
- ratio: `--ratio-rows` rows grouped by testset,langpair,system,seg_id (a group a row) against
  the same rows by langpair,system (a few hundred groups), alternated `--repeats` (3) times for
  each of `--modes`; the median wall times and their ratio.

The job's code is this checkout's, or `--job-root`'s (a copy of one commit, so edits in
progress in a shared checkout are not measured). Prints a table per part (Markdown with
`--markdown`) and writes every run to `--json`.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))

from bench.environment import REPO, git_describe, machine_info  # noqa: E402
from bench.job_runs import add_output_options, code_environment, peak_mib, run_json  # noqa: E402
from bench.measure import run_measured  # noqa: E402
from derive_input import derive  # noqa: E402

ONE_ROW_GROUPS = "testset,langpair,system,seg_id"
FEW_GROUPS = "langpair,system"
RUN_TIMEOUT_S = 3600
# groups cut out of the rows in table order span language pairs whose target languages
# sacrebleu tokenizes apart (zh, ja, ko): those runs score every row with 13a
CUT_TOKENIZE = "13a"


def group_column(rows: int, groups: int) -> pa.Array:
    """Rows in table order cut into `groups` runs of equal length (the last ones one row
    shorter when rows do not divide)."""
    return pa.array((np.arange(rows, dtype=np.int64) * groups) // rows)


def make_input(source: Path, target: Path, rows: int, counts: List[int]) -> Path:
    """`rows` rows of the source (evenly spaced when there are fewer than it has, else its
    first rows repeated), with a column gN per group count N; made once per (rows, counts)."""
    if target.exists():
        return target
    table = pq.read_table(source)
    if rows <= table.num_rows:  # evenly spaced over the whole table
        table = derive(table, rows=rows)
    else:
        table = derive(table, copies=-(-rows // table.num_rows)).slice(0, rows)
    for n in counts:
        table = table.append_column(f"g{n}", group_column(rows, n))
    tmp = target.with_suffix(".tmp")
    pq.write_table(table, tmp, row_group_size=100_000)
    tmp.rename(target)
    return target


def score_once(args, input_path: Path, rows: int, group_by: str, mode: str,
               confidence: bool, label: str) -> Dict[str, Any]:
    """One `bleu-spark score` as a whole process: its measurement and run.json's groups."""
    out = Path(args.workdir) / "out" / label
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "bleu_spark", "score", "--input", str(input_path),
           "--output", str(out), "--group-by", group_by, "--progress-seconds", "0"]
    if group_by.startswith("g"):  # a cut of the rows spans language pairs: one tokenizer
        cmd += ["--tokenize", CUT_TOKENIZE]
    cmd += [] if mode == "auto" else ["--groups-scored-on", mode]
    cmd += ["--confidence"] if confidence else []
    log = Path(args.workdir) / "logs" / f"{label}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"-- {label}: {' '.join(cmd[1:])}", flush=True)
    root = Path(args.job_root).resolve()
    run = run_measured(cmd, code_environment(root), log, timeout=RUN_TIMEOUT_S, cwd=root)
    run.update(label=label, rows=rows, group_by=group_by, mode=mode, confidence=confidence)
    recorded = run_json(out)
    run["groups"] = recorded.get("groups")
    run["timings"] = recorded.get("timings", {})  # the job's own: scored, written, total
    shutil.rmtree(out, ignore_errors=True)
    print(f"   rc {run['returncode']}, {run['wall_s']:.1f} s, driver "
          f"{peak_mib(run, 'py_driver'):.0f} MiB, JVM {peak_mib(run, 'jvm'):.0f} MiB, tree "
          f"{run.get('peak_rss_total_mib', 0):.0f} MiB, groups {run['groups']}, load "
          f"{run['load_before'][0]}->{run['load_after'][0]}", flush=True)
    return run




def driver_estimate(driver_runs: List[Dict[str, Any]], groups: int) -> Optional[float]:
    """The driver path's driver RSS at `groups`, in a straight line through its last two
    runs; None before two runs."""
    if len(driver_runs) < 2:
        return None
    a, b = driver_runs[-2], driver_runs[-1]
    slope = (peak_mib(b, "py_driver") - peak_mib(a, "py_driver")) / (b["groups"] - a["groups"])
    return peak_mib(b, "py_driver") + slope * (groups - b["groups"])


def part_scale(args, big: Path) -> List[Dict[str, Any]]:
    runs, driver_runs = [], []
    for n in args.groups:
        for mode in args.modes:
            estimate = driver_estimate(driver_runs, n) if mode == "driver" else None
            if estimate is not None and estimate > args.driver_limit_mib:
                print(f"-- scale-{n}-driver left out: the driver would hold about "
                      f"{estimate:,.0f} MiB (limit {args.driver_limit_mib:,})", flush=True)
                runs.append({"label": f"scale-{n}-driver", "skipped": True, "groups": n,
                             "mode": mode, "confidence": False, "estimate_mib": round(estimate)})
                continue
            run = score_once(args, big, args.rows, f"g{n}", mode, False, f"scale-{n}-{mode}")
            runs.append(run)
            if mode == "driver" and run["returncode"] == 0 and run["groups"]:
                driver_runs.append(run)
    return runs


def part_confidence(args, big: Path, small: Path) -> List[Dict[str, Any]]:
    runs = []
    for n in args.confidence_groups:
        for mode in args.confidence_modes:
            runs.append(score_once(args, big, args.rows, f"g{n}", mode, True, f"conf-{n}-{mode}"))
    docs = args.ratio_rows // 10
    for mode in args.confidence_modes:
        runs.append(score_once(args, small, args.ratio_rows, f"g{docs}", mode, True,
                               f"conf-docs10-{mode}"))
    return runs


def part_ratio(args, small: Path) -> List[Dict[str, Any]]:
    runs = []
    for repeat in range(args.repeats):
        for mode in args.modes:
            for name, group_by in (("one-row", ONE_ROW_GROUPS), ("few", FEW_GROUPS)):
                runs.append(score_once(args, small, args.ratio_rows, group_by, mode, False,
                                       f"ratio-{name}-{mode}-{repeat}"))
    return runs


def print_runs(title: str, runs: List[Dict[str, Any]], markdown: bool) -> None:
    head = ["run", "rows", "group by", "--groups-scored-on", "groups (run.json)", "wall s",
            "scored / written s", "driver MiB", "JVM MiB", "tree MiB", "load 1 min"]
    print()
    print(f"### {title}" if markdown else f"== {title}")
    _print_row(head, markdown)
    if markdown:
        print("|" + "---|" * len(head))
    for run in runs:
        _print_row(_cells(run), markdown)


def _cells(run: Dict[str, Any]) -> List[str]:
    if run.get("skipped"):
        return [run["label"], "", "", "driver", f"{run['groups']:,}",
                f"left out (about {run['estimate_mib']:,} MiB)", "", "", "", "", ""]
    mode = run["mode"]  # where auto put the groups changes with the code: read the driver's MiB
    failed = "" if run["returncode"] == 0 else f" (rc {run['returncode']})"
    groups = f"{run['groups']:,}" if run["groups"] is not None else "-"
    return [run["label"], f"{run['rows']:,}", run["group_by"], mode, groups,
            f"{run['wall_s']:.1f}{failed}", _timings(run.get("timings", {})),
            f"{peak_mib(run, 'py_driver'):,.0f}",
            f"{peak_mib(run, 'jvm'):,.0f}", f"{run.get('peak_rss_total_mib', 0):,.0f}",
            f"{run['load_before'][0]:.1f} / {run['load_after'][0]:.1f}"]


def _timings(timings: Dict[str, float]) -> str:
    """run.json's seconds to the end of scoring (plan, read, score, first rows) and writing."""
    if "score_s" not in timings:
        return "-"
    return f"{timings['score_s']:.1f} / {timings.get('write_s', 0):.1f}"


def _print_row(cells: List[str], markdown: bool) -> None:
    print("| " + " | ".join(cells) + " |" if markdown else "  ".join(f"{c:>14}" for c in cells))


def print_ratio(runs: List[Dict[str, Any]], modes: List[str]) -> None:
    """Median wall time of one-row groups against a few groups, per mode: the 1.5x goal."""
    print()
    for mode in modes:
        walls = {name: [r["wall_s"] for r in runs if r["mode"] == mode and r["returncode"] == 0
                        and r["label"].startswith(f"ratio-{name}-")] for name in ("one-row", "few")}
        if not walls["one-row"] or not walls["few"]:
            continue
        one, few = statistics.median(walls["one-row"]), statistics.median(walls["few"])
        print(f"{mode}: one-row groups {one:.1f} s (runs {walls['one-row']}), a few groups "
              f"{few:.1f} s (runs {walls['few']}): {one / few:.2f}x")


def parse_args(argv=None):
    ints = lambda v: [int(x) for x in v.split(",")]  # noqa: E731
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", type=lambda v: v.split(","), default=["scale", "confidence", "ratio"])
    ap.add_argument("--source", default=str(REPO.parent / "shared" / "data" / "wmt22.parquet"))
    ap.add_argument("--workdir", default="/tmp/bench-groups")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--groups", type=ints, default=[100, 10_000, 100_000, 1_000_000])
    ap.add_argument("--confidence-groups", type=ints, default=[100, 10_000])
    ap.add_argument("--ratio-rows", type=int, default=100_000)
    ap.add_argument("--modes", type=lambda v: v.split(","), default=["auto", "driver"])
    # with intervals auto keeps 100 groups on the driver (64 MB of statistics): executors for the other
    ap.add_argument("--confidence-modes", type=lambda v: v.split(","), default=["auto", "executors"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--driver-limit-mib", type=int, default=6_000)
    add_output_options(ap)
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    counts = sorted(set(args.groups) | set(args.confidence_groups))
    big = make_input(Path(args.source), work / f"rows-{args.rows}-{'-'.join(map(str, counts))}.parquet",
                     args.rows, counts)
    small = make_input(Path(args.source), work / f"rows-{args.ratio_rows}-docs10.parquet",
                       args.ratio_rows, [args.ratio_rows // 10])
    found: Dict[str, List[Dict[str, Any]]] = {}
    if "scale" in args.parts:
        found["scale"] = part_scale(args, big)
    if "confidence" in args.parts:
        found["confidence"] = part_confidence(args, big, small)
    if "ratio" in args.parts:
        found["ratio"] = part_ratio(args, small)
    info = {"machine": machine_info(), "job_root": args.job_root, "commit": git_describe(REPO)}
    Path(args.json or work / "runs.json").write_text(json.dumps({"info": info, "parts": found}, indent=1))
    for part, runs in found.items():
        print_runs(part, runs, args.markdown)
    if "ratio" in found:
        print_ratio(found["ratio"], args.modes)
    failed = [r["label"] for runs in found.values() for r in runs
              if not r.get("skipped") and r["returncode"] != 0]
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
