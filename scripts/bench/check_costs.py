"""`--check-costs`: the CPU a row costs the whole process tree (driver, JVM, Python workers) of
`bleu-spark score` for the reference-free checks and a segment score column, against BLEU
alone and against sacrebleu's BLEU (path a2) on the same rows, run alternated in rounds.

Every variant is one whole process (`python -m bleu_spark score`, as path e starts it), measured
by `measure.run_measured`. The input is the given or generated one with two columns added when
absent (cached under --workdir, row groups kept): `source` (the generated corpus has none; there
it is the segment's first reference, so `copy` reads a text of the same language) and
`bench_score`, a seeded uniform draw (float64), the column `--segment-scores` averages. A first
run of `bleu+checks` from each checkout and of `sacrebleu` is a warm-up (kernels compiled and
cached, the file cache) and is not counted; each round then starts one variant later. Path s
(Spark alone: context, one no-op task per core, stop) is a variant too: its CPU is the floor
under every job variant, and the table gives each job variant's CPU per row with and without it.

Before any figure, the scores are checked: each check alone equals its score in the run of all
four, every round gives the same scores, and a variant run from `--check-base-root` (another
checkout, `NAME@base`) gives the same scores as from this one. Exit 1 if not.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .job_runs import code_environment, floor_command, load_job_results
from .measure import run_measured
from .sacrebleu_runs import score_command

ALL_CHECKS = "empty,copy,untranslated,off_target"
SCORE_COLUMN = "bench_score"
# variant -> the `score` arguments it adds (None: not a job run)
VARIANTS: Dict[str, Optional[List[str]]] = {
    "bleu": ["--metrics", "bleu"],
    "checks": ["--checks", ALL_CHECKS],
    "bleu+checks": ["--metrics", "bleu", "--checks", ALL_CHECKS],
    "empty": ["--checks", "empty"],
    "copy": ["--checks", "copy"],
    "untranslated": ["--checks", "untranslated"],
    "off_target": ["--checks", "off_target"],
    "segment_score": ["--segment-scores", SCORE_COLUMN],
    "sacrebleu": None,   # path a2: sacrebleu with each pair's references cached
    "floor": None,       # path s: Spark alone
}
DEFAULT_VARIANTS = "bleu,checks,bleu+checks,empty,copy,untranslated,off_target,segment_score,sacrebleu,floor"
BASE = "@base"


def run_check_costs(args, input_path: Path, info: Dict[str, Any]) -> int:
    """Exit 0 ok, 1 scores differ between runs that must agree, 2 a run failed."""
    variants = _variants(args.check_variants, args.check_base_root)
    table = with_bench_columns(input_path, Path(args.workdir))
    rows = _rows(table)
    run_dir = Path(args.workdir) / "check-costs"
    run_dir.mkdir(parents=True, exist_ok=True)
    print(f"check costs: {rows:,} rows of {table}; variants {', '.join(variants)}; "
          f"{args.repeats} rounds after a warm-up", flush=True)
    # not counted: the first run of each checkout (its kernels compiled and cached, the input
    # in the file cache) and sacrebleu's first
    for warm in ("bleu+checks", *(["bleu+checks" + BASE] if args.check_base_root else []),
                 *(["sacrebleu"] if "sacrebleu" in variants else [])):
        _run(warm, args, table, run_dir, "warm-up")
    runs: Dict[str, List[Dict[str, Any]]] = {v: [] for v in variants}
    scores: Dict[str, List[Dict[Tuple, float]]] = {v: [] for v in variants}
    for round_no in range(args.repeats):
        # each round starts one variant later: no variant always runs first after a quiet spell
        order = variants[round_no % len(variants):] + variants[:round_no % len(variants)]
        for variant in order:
            measured, found = _run(variant, args, table, run_dir, f"round {round_no + 1}")
            if measured["returncode"] != 0:
                print(f"  {variant} FAILED (exit {measured['returncode']}); log: {measured['log']}")
                return 2
            runs[variant].append(measured)
            scores[variant].append(found)
    problems = agreement(scores)
    for line in problems:
        print(f"  scores differ: {line}")
    report = summarize(runs, rows)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"machine": info, "input": str(table), "rows": rows,
                                                   "summary": report, "runs": runs}, indent=1))
    if problems:
        return 1
    print_summary(report, rows, args.repeats)
    print_round_ratios(runs)
    return 0


def _variants(spec: str, base_root: Optional[str]) -> List[str]:
    names = [v.strip() for v in spec.split(",") if v.strip()]
    bad = [v for v in names if v.split("@")[0] not in VARIANTS or
           (v.endswith(BASE) and (VARIANTS[v[:-len(BASE)]] is None or not base_root))]
    if bad:
        raise SystemExit(f"bench.py: unknown variant(s) {bad} (choose from {', '.join(VARIANTS)}; "
                         f"NAME{BASE} runs a job variant from --check-base-root)")
    return names


def with_bench_columns(input_path: Path, workdir: Path) -> Path:
    """The input with `source` (when absent: the first reference) and `bench_score` added, one
    row group for each of the input's (the job's tasks follow row groups), cached."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    stat = input_path.stat()
    out = workdir / "check-costs" / f"{input_path.stem}-{stat.st_size}-{int(stat.st_mtime)}.parquet"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    source = pq.ParquetFile(input_path)
    rng = np.random.default_rng(46)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    writer = None
    for group in range(source.num_row_groups):
        part = source.read_row_group(group)
        if "source" not in part.column_names:
            part = part.append_column("source", pc.list_element(part["references"], 0))
        part = part.append_column(SCORE_COLUMN, pa.array(rng.uniform(0, 1, part.num_rows)))
        writer = writer or pq.ParquetWriter(tmp, part.schema, compression="snappy")
        writer.write_table(part, row_group_size=max(1, part.num_rows))
    writer.close()
    os.replace(tmp, out)
    return out


def _rows(table: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(table).metadata.num_rows


def _run(variant: str, args, table: Path, run_dir: Path, label: str) -> Tuple[Dict[str, Any], Dict[Tuple, float]]:
    """One whole-process run of a variant: its measurement, and its scores by (langpair, system,
    metric)."""
    name, _, root = variant.partition("@")
    job_root = Path(args.check_base_root if root else args.job_root).resolve()
    env = code_environment(job_root)
    out = run_dir / f"out-{variant}"
    if out.exists():
        shutil.rmtree(out)
    if name == "sacrebleu":
        cmd = score_command("a2", table, out.with_suffix(".json"), args.tokenize)
    elif name == "floor":
        cmd = floor_command()
    else:
        cmd = [sys.executable, "-m", "bleu_spark", "score", "--input", str(table), "--output", str(out),
               "--group-by", "langpair,system", "--progress-seconds", "0", *VARIANTS[name]]
    measured = run_measured(cmd, env, run_dir / f"{variant}.log", timeout=args.timeout, cwd=run_dir)
    measured["variant"], measured["label"] = variant, label
    found = _scores(name, out) if measured["returncode"] == 0 else {}
    print(f"  {label:<9} {variant:<20} wall {measured['wall_s']:6.1f} s, CPU "
          f"{measured.get('cpu_total_s', float('nan')):6.1f} s, load {measured['load_before'][0]:.2f}",
          flush=True)
    return measured, found




def _scores(name: str, out: Path) -> Dict[Tuple, float]:
    if name == "floor":
        return {}
    if name == "sacrebleu":
        found = json.loads(out.with_suffix(".json").read_text())["results"]
        return {(r["langpair"], r["system"], "bleu"): r["score"] for r in found}
    found, _ = load_job_results(out)
    return {(r["langpair"], r["system"], r["metric"]): r["score"] for r in found}


def agreement(scores: Dict[str, List[Dict[Tuple, float]]]) -> List[str]:
    """What differs between runs that must give the same scores: the rounds of a variant, a
    variant from the base checkout and from this one, a check alone and in the run of all four,
    BLEU alone and with the checks (to 1e-9: sacrebleu's BLEU too)."""
    problems = []
    first = {v: rounds[0] for v, rounds in scores.items() if rounds}
    for variant, rounds in scores.items():
        problems += [f"{variant}: round {i + 1} against round 1" for i, found in enumerate(rounds[1:], 1)
                     if found != rounds[0]]
    for variant, found in first.items():
        name, _, base = variant.partition("@")
        if base and name in first and first[name] != found:
            problems.append(f"{variant} against {name}")
        for whole in ("checks", "bleu+checks", "bleu"):
            if whole in first and whole != variant:
                problems += [f"{variant} against {whole}: {key}" for key, score in found.items()
                             if key in first[whole] and abs(first[whole][key] - score) > 1e-9]
    return problems


def summarize(runs: Dict[str, List[Dict[str, Any]]], rows: int) -> Dict[str, Dict[str, Any]]:
    """Per variant: CPU seconds (median, least, most), microseconds per row with and without
    the floor's CPU, wall seconds, load, and the CPU by kind of process (medians)."""
    floor = statistics.median(r["cpu_total_s"] for r in runs["floor"]) if runs.get("floor") else None
    report = {}
    for variant, measured in runs.items():
        cpu = [r["cpu_total_s"] for r in measured]
        kinds = sorted({k for r in measured for k in r.get("cpu_s", {})})
        report[variant] = {
            "cpu_s": cpu, "cpu_median_s": statistics.median(cpu),
            "us_per_row": 1e6 * statistics.median(cpu) / rows,
            "us_per_row_range": [1e6 * min(cpu) / rows, 1e6 * max(cpu) / rows],
            "net_us_per_row": (None if floor is None or variant in ("floor", "sacrebleu")
                               else 1e6 * (statistics.median(cpu) - floor) / rows),
            "wall_median_s": statistics.median(r["wall_s"] for r in measured),
            "load": [r["load_before"][0] for r in measured],
            "other_cpu_s": [r.get("other_cpu_s") for r in measured],
            "cpu_by_kind_median_s": {k: statistics.median(r.get("cpu_s", {}).get(k, 0.0) for r in measured)
                                     for k in kinds}}
    return report


def print_summary(report: Dict[str, Dict[str, Any]], rows: int, repeats: int) -> None:
    bleu, sacre = report.get("bleu"), report.get("sacrebleu")
    print()
    print(f"{rows:,} rows; {repeats} rounds; CPU of the whole process tree; median (least-most); "
          f"'net': less the median CPU of 'floor' (Spark alone); load: the 1-minute load average "
          f"before each run; other CPU: what other processes used meanwhile (median)")
    head = (f"{'variant':<20} {'CPU s':>7} {'us/row':>7} {'least-most':>13} {'net us/row':>10} "
            f"{'/bleu':>6} {'net/bleu':>8} {'/sacrebleu':>10} {'wall s':>7} {'load':>11} {'other CPU s':>11}")
    print(head)
    print("-" * len(head))
    for variant, r in report.items():
        net = r["net_us_per_row"]
        ratio = lambda a, b: f"{a / b:.2f}" if a is not None and b else "-"
        low, high = r["us_per_row_range"]
        load = r["load"]
        print(f"{variant:<20} {r['cpu_median_s']:>7.1f} {r['us_per_row']:>7.1f} "
              f"{f'{low:.1f}-{high:.1f}':>13} {'-' if net is None else f'{net:.1f}':>10} "
              f"{ratio(r['us_per_row'], bleu and bleu['us_per_row']):>6} "
              f"{ratio(net, bleu and bleu['net_us_per_row']):>8} "
              f"{ratio(r['us_per_row'], sacre and sacre['us_per_row']):>10} "
              f"{r['wall_median_s']:>7.1f} {f'{min(load):.1f}-{max(load):.1f}':>11} "
              f"{statistics.median(o or 0.0 for o in r['other_cpu_s']):>11.1f}")
    if bleu and "checks" in report:
        checks = report["checks"]
        goal = lambda a, b: "met" if a <= 1.5 * b else "not met"
        print(f"the four checks / BLEU alone: {checks['us_per_row'] / bleu['us_per_row']:.2f}x of the "
              f"whole process's CPU per row ({goal(checks['us_per_row'], bleu['us_per_row'])}), "
              + (f"{checks['net_us_per_row'] / bleu['net_us_per_row']:.2f}x net of Spark alone "
                 f"({goal(checks['net_us_per_row'], bleu['net_us_per_row'])})"
                 if bleu["net_us_per_row"] else "no floor measured")
              + "; goal: within 1.5x")


def print_round_ratios(runs: Dict[str, List[Dict[str, Any]]]) -> None:
    """Each variant against BLEU alone within each round (the runs closest in time), whole and
    less that round's Spark alone: the spread of the ratios, not of the loads."""
    if not runs.get("bleu"):
        return
    print("per round, against BLEU alone of the same round (whole process; less Spark alone):")
    floors = [r["cpu_total_s"] for r in runs.get("floor", [])]
    for variant, measured in runs.items():
        if variant in ("bleu", "floor"):
            continue
        pairs = list(zip(measured, runs["bleu"]))
        whole = ", ".join(f"{r['cpu_total_s'] / b['cpu_total_s']:.2f}" for r, b in pairs)
        net = ", ".join(f"{(r['cpu_total_s'] - f) / (b['cpu_total_s'] - f):.2f}"
                        for (r, b), f in zip(pairs, floors)) if floors and variant != "sacrebleu" else "-"
        print(f"  {variant:<20} {whole:<22} {net}")


def reprint(path: str) -> int:
    """The summary of a saved `--json` report, again (`--check-report`)."""
    saved = json.loads(Path(path).read_text())
    runs = saved["runs"]
    print(f"{saved['input']}; machine: {saved['machine'].get('cpu')}, {saved['machine'].get('nproc')} cores")
    print_summary(summarize(runs, saved["rows"]), saved["rows"], len(next(iter(runs.values()))))
    print_round_ratios(runs)
    return 0
