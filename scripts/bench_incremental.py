"""Incremental runs against plain runs: `bleu-spark score --incremental` over a log folder that
grows by a few files, against a plain run over the new files alone, and a run with nothing new
against Spark's floor.

    python scripts/bench_incremental.py --markdown --job-root DIR   # DIR: a copy of one commit
    python scripts/bench_incremental.py --before 4 --added 1 --repeats 1 --parts added   # a quick look

The rows come from WMT22 (`--source`, 218,628 rows) cut into `--files` (20) files of equal rows,
file i holding rows i, i + 20, i + 40, ... (every hour of a log holds every language pair and
system), written as `hour-NN.parquet`. Every run is one process,

    python -m bleu_spark score --input FOLDER --output OUT --group-by langpair,system
        --progress-seconds 0 [--incremental]

measured as scripts/bench.py measures its paths (`scripts/bench/measure.py`: wall time, CPU
seconds of the whole process tree, peak RSS of the driver, the JVM and the tree), with
run.json's seconds and incremental counts and the machine's load before and after.

Parts (`--parts`):

- added: for each N of `--before` (4, 10, 16), an incremental run over a folder of the first N
  files (not counted: it makes the folder N files measured, kept as a copy); then for each k of
  `--added` (1, 4), the next k files dropped into the folder, and `--repeats` (3) rounds of
  the incremental run (the output folder put back to its N files measured before each) beside
  a plain run over a folder of the k new files alone, alternated;
- noop: at the largest N, an incremental run with no new file (nothing to measure or write)
  beside Spark's floor (path s of scripts/bench.py: the SparkContext as the job starts it, one
  no-op Python task per core, stop), alternated `--repeats` times;
- generated: the added part once more, one configuration (`--generated-before`, 10, and
  `--generated-added`, 1), on the corpus scripts/bench.py generates (`--generated-rows`,
  200,000 rows, its default language pairs and systems) cut the same way.

A plain run over one file, not counted, goes first: the job root's kernels compiled and cached,
the input in the file cache. The job's code is this checkout's, or `--job-root`'s (a copy of one
commit, so edits in progress in a shared checkout are not measured). Prints a table per part
(Markdown with `--markdown`) and writes every run to `--json`.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any, Dict, List, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))

from bench.corpus import corpus_params, ensure_corpus  # noqa: E402
from bench.environment import REPO, git_describe, machine_info  # noqa: E402
from bench.job_runs import add_output_options, code_environment, peak_mib, run_json, floor_command  # noqa: E402
from bench.measure import run_measured  # noqa: E402

GROUP_BY = "langpair,system"
RUN_TIMEOUT_S = 1800


def cut_into_files(table: pa.Table, folder: Path, files: int) -> List[Path]:
    """The table as `files` files of equal rows (within one), file i holding every files-th row
    from row i: each file a slice of every language pair and system, as an hour of a log is.
    Made once per folder."""
    paths = [folder / f"hour-{i:02d}.parquet" for i in range(files)]
    if all(p.exists() for p in paths):
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    for i, path in enumerate(paths):
        tmp = path.with_suffix(".tmp")
        pq.write_table(table.take(np.arange(i, table.num_rows, files)), tmp)
        tmp.rename(path)
    return paths


def fill(folder: Path, files: Sequence[Path]) -> None:
    """The folder holding exactly these files (copies): a log folder as a run finds it."""
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {f.name for f in files}
    for old in folder.iterdir():
        if old.name not in wanted:
            old.unlink()
    for f in files:
        if not (folder / f.name).exists():
            shutil.copy(f, folder / f.name)


def put_back(snapshot: Path, out: Path) -> None:
    """The output folder as the copy holds it: N files measured, nothing after."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(snapshot, out)


def score(args, folder: Path, out: Path, incremental: bool, label: str) -> Dict[str, Any]:
    """One `bleu-spark score` as a whole process: its measurement and run.json's figures."""
    cmd = [sys.executable, "-m", "bleu_spark", "score", "--input", str(folder), "--output", str(out),
           "--group-by", GROUP_BY, "--progress-seconds", "0"] + (["--incremental"] if incremental else [])
    run = measured(args, cmd, label)
    recorded = run_json(out)
    run.update(incremental=incremental, rows=recorded.get("rows", {}).get("read"),
               new_files=recorded.get("incremental", {}).get("new_files"),
               files_measured=recorded.get("incremental", {}).get("files_measured"),
               timings=recorded.get("timings", {}))
    return run


def floor(args, label: str) -> Dict[str, Any]:
    return measured(args, floor_command(), label)


def measured(args, cmd: List[str], label: str) -> Dict[str, Any]:
    log = Path(args.workdir) / "logs" / f"{label}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    root = Path(args.job_root).resolve()
    run = run_measured(cmd, code_environment(root), log, timeout=RUN_TIMEOUT_S, cwd=root)
    run["label"] = label
    print(f"-- {label}: rc {run['returncode']}, {run['wall_s']:.1f} s, CPU "
          f"{run.get('cpu_total_s', 0):.1f} s, driver {peak_mib(run, 'py_driver'):.0f} MiB, tree "
          f"{run.get('peak_rss_total_mib', 0):.0f} MiB, load {run['load_before'][0]}->"
          f"{run['load_after'][0]}", flush=True)
    return run


def part_added(args, name: str, files: List[Path], befores: List[int], addeds: List[int]) -> List[Dict[str, Any]]:
    """Per N and k: the incremental run adding k files to N measured, beside a plain run over
    the k files alone, alternated; the setting-up run over N files is recorded, not compared."""
    work = Path(args.workdir) / name
    runs = []
    for n in befores:
        inbox, out, snapshot = work / f"inbox-{n}", work / f"out-{n}", work / f"measured-{n}"
        fill(inbox, files[:n])
        shutil.rmtree(out, ignore_errors=True)
        first = score(args, inbox, out, True, f"{name}-first-N{n}")
        runs.append(dict(first, role="first", before=n, added=0))
        shutil.rmtree(snapshot, ignore_errors=True)
        shutil.copytree(out, snapshot)
        for k in addeds:
            new = files[n:n + k]
            if len(new) < k:
                print(f"-- {name} N{n} k{k} left out: {len(files)} files", flush=True)
                continue
            fill(inbox, files[:n + k])
            alone = work / f"new-{n}-{k}"
            fill(alone, new)
            for repeat in range(args.repeats):
                put_back(snapshot, out)
                run = score(args, inbox, out, True, f"{name}-incremental-N{n}-k{k}-{repeat}")
                runs.append(dict(run, role="incremental", before=n, added=k))
                plain_out = work / f"plain-{n}-{k}"
                shutil.rmtree(plain_out, ignore_errors=True)
                run = score(args, alone, plain_out, False, f"{name}-plain-N{n}-k{k}-{repeat}")
                runs.append(dict(run, role="plain", before=n, added=k))
        fill(inbox, files[:n])
        put_back(snapshot, out)
    return runs


def part_noop(args, files: List[Path], n: int) -> List[Dict[str, Any]]:
    """An incremental run that finds nothing new in a folder of N files measured, beside
    Spark's floor, alternated."""
    work = Path(args.workdir) / "wmt"
    inbox, out, snapshot = work / f"inbox-{n}", work / f"out-{n}", work / f"measured-{n}"
    if not snapshot.exists():  # the added part did not run at this N
        fill(inbox, files[:n])
        shutil.rmtree(out, ignore_errors=True)
        score(args, inbox, out, True, f"noop-first-N{n}")
        shutil.copytree(out, snapshot)
    fill(inbox, files[:n])
    runs = []
    for repeat in range(args.repeats):
        put_back(snapshot, out)
        run = score(args, inbox, out, True, f"noop-N{n}-{repeat}")
        # such a run writes nothing, run.json included: its console line says it
        run["unchanged"] = "nothing new in" in Path(run["log"]).read_text(errors="replace")
        runs.append(dict(run, role="noop", before=n))
        runs.append(dict(floor(args, f"floor-{repeat}"), role="floor", before=n))
    return runs


def wmt_files(args) -> List[Path]:
    folder = Path(args.workdir) / f"wmt22-{args.files}-files"
    return cut_into_files(pq.read_table(args.source), folder, args.files)


def generated_files(args) -> List[Path]:
    params = corpus_params(args.generated_rows, 10, "de-en:2,cs-en:1", "system", 20240601)
    corpus = ensure_corpus(Path(args.workdir), params)
    folder = Path(args.workdir) / f"generated-{params['rows']}-{args.files}-files"
    return cut_into_files(pq.read_table(corpus), folder, args.files)


def warm_up(args, files: List[Path]) -> None:
    """Not counted: the job root's kernels compiled and cached, the input in the file cache."""
    folder = Path(args.workdir) / "warm-up"
    fill(folder, files[:1])
    out = Path(args.workdir) / "warm-up-out"
    shutil.rmtree(out, ignore_errors=True)
    score(args, folder, out, False, "warm-up")


def summary(runs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Per (N, k): medians of the incremental and the plain runs, and their ratio."""
    rows = []
    for key in sorted({(r["before"], r["added"]) for r in runs if r["role"] == "incremental"}):
        inc, plain = (_passed(runs, role, key) for role in ("incremental", "plain"))
        if not inc or not plain:
            continue
        first = [r for r in runs if r["role"] == "first" and r["before"] == key[0]]
        rows.append({"before": key[0], "added": key[1], "new_rows": inc[0]["rows"],
                     "new_files": [r["new_files"] for r in inc],
                     "first_wall_s": first[0]["wall_s"] if first else None,
                     "first_rows": first[0]["rows"] if first else None,
                     **_medians("incremental", inc), **_medians("plain", plain),
                     "ratio": _median(inc, "wall_s") / _median(plain, "wall_s"),
                     "load": [r["load_before"][0] for r in inc + plain]})
    return rows


def _passed(runs: List[Dict[str, Any]], role: str, key) -> List[Dict[str, Any]]:
    """The runs of one role at one (N, k) that exited 0."""
    return [r for r in runs if r["role"] == role and (r["before"], r["added"]) == key
            and r["returncode"] == 0]


def _median(runs: List[Dict[str, Any]], field: str) -> float:
    return statistics.median(r.get(field, 0.0) for r in runs)


def _medians(role: str, runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {f"{role}_walls": [r["wall_s"] for r in runs], f"{role}_wall_s": _median(runs, "wall_s"),
            f"{role}_cpu_s": _median(runs, "cpu_total_s"),
            # the job's own seconds (run.json): from its start to the commit, Spark's start-up
            # and stop left out
            f"{role}_job_s": statistics.median(r["timings"].get("total_s", 0.0) for r in runs),
            f"{role}_driver_mib": max(peak_mib(r, "py_driver") for r in runs),
            f"{role}_tree_mib": max(r.get("peak_rss_total_mib", 0) for r in runs)}


def print_added(title: str, rows: List[Dict[str, Any]], markdown: bool) -> None:
    head = ["N measured", "k added", "new rows", "incremental: wall s (median)", "plain, new files alone: wall s (median)",
            "ratio", "run.json total s, incremental / plain", "CPU s, incremental / plain", "driver MiB, incremental / plain", "tree MiB, incremental / plain",
            "first run over N files", "load 1 min"]
    _title(title, head, markdown)
    for r in rows:
        _print_row([str(r["before"]), str(r["added"]), f"{r['new_rows']:,}" if r["new_rows"] else "-",
                    f"{_walls(r['incremental_walls'])} ({r['incremental_wall_s']:.1f})",
                    f"{_walls(r['plain_walls'])} ({r['plain_wall_s']:.1f})", f"{r['ratio']:.2f}x",
                    f"{r['incremental_job_s']:.1f} / {r['plain_job_s']:.1f}",
                    f"{r['incremental_cpu_s']:.1f} / {r['plain_cpu_s']:.1f}",
                    f"{r['incremental_driver_mib']:.0f} / {r['plain_driver_mib']:.0f}",
                    f"{r['incremental_tree_mib']:,.0f} / {r['plain_tree_mib']:,.0f}",
                    _first(r), f"{min(r['load']):.1f}-{max(r['load']):.1f}"], markdown)


def _first(r: Dict[str, Any]) -> str:
    if r["first_wall_s"] is None:
        return "-"
    rows = f"{r['first_rows']:,} rows, " if r["first_rows"] else ""
    return f"{rows}{r['first_wall_s']:.1f} s"


def print_noop(runs: List[Dict[str, Any]], markdown: bool) -> None:
    head = ["run", "wall s (median)", "CPU s (median)", "driver MiB", "tree MiB", "load 1 min"]
    _title("nothing new against Spark's floor", head, markdown)
    for role, name in (("noop", f"incremental, nothing new (N = {runs[0]['before']})"),
                       ("floor", "Spark's floor (path s)")):
        mine = [r for r in runs if r["role"] == role and r["returncode"] == 0]
        if not mine:
            continue
        _print_row([name, f"{_walls([r['wall_s'] for r in mine])} ({_median(mine, 'wall_s'):.1f})",
                    f"{_median(mine, 'cpu_total_s'):.1f}", f"{max(peak_mib(r, 'py_driver') for r in mine):.0f}",
                    f"{max(r.get('peak_rss_total_mib', 0) for r in mine):,.0f}",
                    f"{min(r['load_before'][0] for r in mine):.1f}-{max(r['load_before'][0] for r in mine):.1f}"],
                   markdown)
    unchanged = [r["unchanged"] for r in runs if r["role"] == "noop"]
    print(f"\nthe no-op runs said 'nothing new': {unchanged}")


def _walls(walls: List[float]) -> str:
    return ", ".join(f"{w:.1f}" for w in walls)


def _title(title: str, head: List[str], markdown: bool) -> None:
    print()
    print(f"### {title}" if markdown else f"== {title}")
    _print_row(head, markdown)
    if markdown:
        print("|" + "---|" * len(head))


def _print_row(cells: List[str], markdown: bool) -> None:
    print("| " + " | ".join(cells) + " |" if markdown else "  ".join(f"{c:>14}" for c in cells))


def parse_args(argv=None):
    ints = lambda v: [int(x) for x in v.split(",")]  # noqa: E731
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", type=lambda v: v.split(","), default=["added", "noop", "generated"])
    ap.add_argument("--source", default=str(REPO.parent / "shared" / "data" / "wmt22.parquet"))
    ap.add_argument("--workdir", default="/tmp/bench-incremental")
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--before", type=ints, default=[4, 10, 16])
    ap.add_argument("--added", type=ints, default=[1, 4])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--generated-rows", type=int, default=200_000)
    ap.add_argument("--generated-before", type=int, default=10)
    ap.add_argument("--generated-added", type=int, default=1)
    ap.add_argument("--no-warm-up", dest="warm_up", action="store_false")
    add_output_options(ap)
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    files = wmt_files(args)
    if args.warm_up:
        warm_up(args, files)
    found: Dict[str, List[Dict[str, Any]]] = {}
    if "added" in args.parts:
        found["added"] = part_added(args, "wmt", files, args.before, args.added)
    if "noop" in args.parts:
        found["noop"] = part_noop(args, files, max(args.before))
    if "generated" in args.parts:
        found["generated"] = part_added(args, "generated", generated_files(args),
                                        [args.generated_before], [args.generated_added])
    info = {"machine": machine_info(), "job_root": args.job_root, "commit": git_describe(Path(args.job_root))}
    Path(args.json or work / "runs.json").write_text(json.dumps({"info": info, "parts": found}, indent=1))
    print(f"\njob root {args.job_root} (commit {info['commit']}), {args.files} files")
    if "added" in found:
        print_added("k files added to N measured (WMT22)", summary(found["added"]), args.markdown)
    if "noop" in found:
        print_noop(found["noop"], args.markdown)
    if "generated" in found:
        print_added("k files added to N measured (generated corpus)", summary(found["generated"]),
                    args.markdown)
    failed = [r["label"] for runs in found.values() for r in runs if r["returncode"] != 0]
    wrong = [r["label"] for runs in found.values() for r in runs
             if (r.get("role") == "incremental" and r["new_files"] != r["added"])
             or (r.get("role") == "noop" and not r["unchanged"])]
    if failed:
        print(f"failed: {', '.join(failed)}")
    if wrong:  # a run that did not measure exactly the k new files (none for a no-op) is no figure
        print(f"measured another number of new files than added: {', '.join(wrong)}")
    return 2 if failed or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
