"""The command line: the options, and which mode they pick (the paths, --start-up,
--scale-groups, --segments, --tokenizer-costs, --metric-costs, --check-costs), or a child
process's internal form (`_score`, `_spark_floor`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from .bleu_costs import run_costs
from .check_costs import DEFAULT_VARIANTS, run_check_costs
from .check_costs import reprint as reprint_check_costs
from .chrf_ter_costs import run_metric_costs
from .corpus import prepare_input
from .environment import REPO, machine_info
from .job_runs import spark_floor
from .paths import ALL_PATHS, PATH_TITLES
from .run import run_paths
from .sacrebleu_runs import run_score_path
from .sweeps import run_scale, run_segments


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "_score":
        run_score_path(*argv[1:])
        return 0
    if argv and argv[0] == "_spark_floor":
        spark_floor()
        return 0
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.check_report:
        return reprint_check_costs(args.check_report)
    if args.start_up:
        return _start_up(args)
    if args.scale_groups:
        return run_scale(args, main)
    if args.segments:
        return run_segments(args, main)
    return _on_input(args, _selected_paths(args, ap))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="bench.py",
        description="Time bleu-spark against sacrebleu 2.6 and bleuscore, each path as a whole "
                    "process, after checking that the exact paths give identical scores.",
        epilog="Paths: " + "; ".join(f"{k} = {v}" for k, v in PATH_TITLES.items())
               + ". Exit 0 ok, 1 results differ, 2 a path failed.")
    for add_options in (_input_options, _path_options, _cost_options, _sweep_options,
                        _start_up_options):
        add_options(ap)
    return ap


def _input_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--input", help="Parquet file or folder to score (default: generated corpus)")
    ap.add_argument("--rows", type=int, default=100_000,
                    help="rows of the generated corpus (rounded up to whole segments x systems x "
                         "langpairs; default 100000)")
    ap.add_argument("--systems", type=int, default=10, help="systems per segment (default 10)")
    ap.add_argument("--langpairs", default="de-en:2,cs-en:1",
                    help="langpairs with their reference count, e.g. de-en:2,cs-en:1,ru-en:1-2 "
                         "(a range gives a variable count per segment; default de-en:2,cs-en:1)")
    ap.add_argument("--layout", choices=["system", "segment"], default="system",
                    help="row order of the generated corpus: 'system' = per langpair, each system's "
                         "rows in seg_id order (blocks of 50k segments), as submissions arrive; "
                         "'segment' = all systems of a segment side by side (default system)")
    ap.add_argument("--seed", type=int, default=20240601, help="generator seed")
    ap.add_argument("--workdir", default="/tmp/bleu-spark-bench",
                    help="cache of generated corpora and run outputs (default /tmp/bleu-spark-bench)")


def _path_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--paths", default=",".join(ALL_PATHS),
                    help=f"comma list of paths to run, of {','.join(ALL_PATHS)} (default all)")
    ap.add_argument("--tokenize", default="auto", help="tokenizer for every path (default auto)")
    ap.add_argument("--master-b", default="local[1]", help="Spark master of path b (default local[1])")
    ap.add_argument("--master-c", default="local[2]", help="Spark master of path c (default local[2])")
    ap.add_argument("--spark-submit", default=None,
                    help="spark-submit to use (default: the one next to this Python, else PATH)")
    ap.add_argument("--job-root", default=str(REPO),
                    help="checkout whose jobs/score_bleu.py and bleu_spark/ paths b to e run "
                         "(put first on PYTHONPATH; default: this checkout). Lets a fixed "
                         "snapshot (git archive C | tar -x -C DIR; echo C > DIR/COMMIT) be timed")
    ap.add_argument("--job-arg", action="append", default=[], metavar="ARG",
                    help="an argument for the job's paths (b to e), e.g. "
                         "--job-arg=--colocate-references=never (repeatable)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark --conf for paths b, c and d (repeatable; default none)")
    ap.add_argument("--profile", metavar="DIR", default=None,
                    help="also record path b's Python workers with py-spy into DIR "
                         "(adds sampling overhead to b's timing)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds allowed per path")
    ap.add_argument("--json", dest="json_out", default=None, help="write all results to this file")
    ap.add_argument("--n-bootstrap", type=int, default=1000, help="replicates of path d (default 1000)")
    ap.add_argument("--stats-rows", type=int, default=100_000,
                    help="rows of path g's generated statistics table (default 100000)")


def _cost_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--tokenizer-costs", action="store_true",
                    help="instead of the paths: microseconds per row of the statistics of each "
                         "langpair (and of their tokenizer) in one process, for this checkout "
                         "and, side by side, the --job-root checkout; exit 1 if their "
                         "statistics differ")
    ap.add_argument("--batch-rows", type=int, default=10_000,
                    help="rows per batch for --tokenizer-costs (default 10000)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="--tokenizer-costs: rounds, alternating the checkouts; the best counts; "
                         "--check-costs: rounds of every variant, the median counts (default 3)")
    ap.add_argument("--cost-order", choices=["file", "segment"], default="file",
                    help="--tokenizer-costs: rows in file order, or each segment's rows side by "
                         "side as when references are brought together (default file)")
    ap.add_argument("--cost-langpairs", default=None,
                    help="--tokenizer-costs: comma list of langpairs (default all)")
    ap.add_argument("--metric-costs", action="store_true",
                    help="per-row cost of chrF, chrF++ and TER statistics against sacrebleu's, one process")
    ap.add_argument("--cost-rows", type=int, default=1000,
                    help="rows a language pair for --metric-costs (default 1000)")
    ap.add_argument("--check-costs", action="store_true",
                    help="CPU per row of the whole process for the reference-free checks and a "
                         "segment score against BLEU alone and sacrebleu, --repeats alternated "
                         "rounds (scripts/bench/check_costs.py); exit 1 if scores differ")
    ap.add_argument("--check-variants", default=DEFAULT_VARIANTS,
                    help=f"--check-costs: the runs of a round (default {DEFAULT_VARIANTS}); "
                         f"NAME@base runs a job variant from --check-base-root")
    ap.add_argument("--check-report", metavar="JSON", default=None,
                    help="print the --check-costs summary of a saved --json report again")
    ap.add_argument("--check-base-root", default=None,
                    help="--check-costs: another checkout (a snapshot, as --job-root) that "
                         "NAME@base variants run, to compare two versions of the checks")


def _sweep_options(ap: argparse.ArgumentParser) -> None:
    """The corpus's row groups, the modes that compare several runs, and --smoke."""
    ap.add_argument("--row-groups", type=int, default=None,
                    help="rewrite the generated corpus in this many row groups")
    ap.add_argument("--scale-groups", type=lambda v: [int(x) for x in v.split(",")], default=None,
                    metavar="G1,G2,...", help="c and d per number of groups (see above)")
    ap.add_argument("--segments", action="store_true",
                    help="a2 and c, then c with --segments: its extra cost and bytes per row")
    ap.add_argument("--segments-columns", default="candidate,references",
                    help="with --segments: the columns the segments table carries ('' for none)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny corpus (2,000 rows), identity guard only, no speed table")


def _start_up_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--start-up", action="store_true",
                    help="instead of the paths: the fixed cost, in new environments from a clean "
                         "clone (scripts/bench_startup.py): cold and warm start, a small run "
                         "against Spark's floor, an executor's first task on a standalone cluster")
    ap.add_argument("--start-rows", type=int, default=400,
                    help="--start-up: rows of the cold and warm runs and the cluster's tasks (default 400)")
    ap.add_argument("--start-small", type=int, default=4,
                    help="--start-up: rows of the small run against Spark's floor (default 4)")
    ap.add_argument("--start-variants", default="built,jit",
                    help="--start-up: built (kernels compiled into the wheel), jit (compiled at "
                         "first use) or both (default built,jit)")
    ap.add_argument("--start-parts", default="cold,floor,imports,cluster",
                    help="--start-up: which of cold, floor, imports, cluster (default all)")


def _start_up(args) -> int:
    import bench_startup

    return bench_startup.run(args)


def _selected_paths(args, ap: argparse.ArgumentParser) -> List[str]:
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    bad = [p for p in paths if p not in ALL_PATHS]
    if bad:
        ap.error(f"unknown path(s) {bad}; choose from {','.join(ALL_PATHS)}")
    return paths


def _on_input(args, paths: List[str]) -> int:
    """The modes that time something on one input: --tokenizer-costs, --metric-costs, else
    the paths."""
    if args.smoke:
        args.rows = 2000
        args.systems = min(args.systems, 5)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if "a3" in paths and not args.tokenizer_costs and not _has_bleuscore():
        print("bleuscore is not installed (pip install -e '.[bench]'): skipping a3")
        paths.remove("a3")
    if not args.tokenizer_costs and not _has_psutil():
        print("psutil is not installed (pip install -e '.[bench]'): peak memory not reported")
    info = machine_info()
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items()))
    input_path, corpus_meta = prepare_input(args, workdir)
    if args.tokenizer_costs:
        return run_costs(args, input_path, info)
    if args.metric_costs:
        return run_metric_costs(args, input_path, info)
    if args.check_costs:
        return run_check_costs(args, input_path, info)
    return run_paths(args, paths, input_path, corpus_meta, info)


def _has_bleuscore() -> bool:
    try:
        import bleuscore  # noqa: F401
    except ImportError:
        return False
    return True


def _has_psutil() -> bool:
    try:
        import psutil  # noqa: F401
    except ImportError:
        return False
    return True
