"""Time and memory of `--clusters` against systems per comparison group and comparison groups.

    python scripts/bench_clusters.py [--configs 1x20,1x200,1x2000,50x20,5x200,1000x20] [--base DIR]

The show half alone, as `aggregate` runs it on saved statistics (poisson, B = 1000, BLEU): a
statistics table of G comparison groups (language pairs) x K systems is made from the bundled
sample's saved statistics (`score --clusters` of the sample, made once into --base), each row a
copy of a real (langpair, system) row with its replicate sums jittered (a correct n-gram count
less here and there, so systems differ in every replicate). Each configuration runs in a process
of its own, twice: `scoring.score_sets` with intervals (`--confidence`), and with intervals and
clusters; printed: seconds (the best of 3), the process's peak RSS once the table is built and
at the end (MiB), and the ranking alone
(`clusters.rank_systems` over each comparison's B x K matrix).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "samples", "wmt22_sample.parquet")
REPEATS = 3


def make_base(base: str) -> None:
    if os.path.exists(os.path.join(base, "stats")):
        return
    subprocess.run([sys.executable, "-m", "bleu_spark", "score", "--input", SAMPLE, "--output", base,
                    "--clusters", "--segment-key", "testset,langpair,seg_id", "--progress-seconds", "0"],
                   check=True, stdout=subprocess.DEVNULL)


def tiled(base: str, groups: int, systems: int, seed: int = 0):
    """G x K statistics rows, copies of the sample's rows with jittered replicate sums."""
    import pyarrow as pa

    from bleu_spark import statstable

    stats = statstable.read(os.path.join(base, "stats"))
    stats = stats.filter(pa.compute.equal(stats["metric"], "bleu"))
    n = stats.num_rows
    width = len(statstable.stat_columns(stats))
    replicates = np.stack([statstable.sample_matrix(stats, statstable.REPLICATE_SUMS, i, width).ravel()
                           for i in range(n)])
    pick = np.arange(groups * systems) % n
    table = stats.take(pa.array(pick))
    rng = np.random.default_rng(seed)
    matrix = replicates[pick].reshape(len(pick), -1, width)
    # correct_1..correct_4 (columns 2..5) lose 0 or 1 in each replicate: still valid statistics.
    matrix[:, :, 2:6] = np.maximum(matrix[:, :, 2:6] - rng.integers(0, 2, matrix[:, :, 2:6].shape), 0)
    matrix = matrix.reshape(len(pick), -1)
    table = table.set_column(table.schema.get_field_index("langpair"), "langpair",
                             pa.array([f"g{i // systems:04d}" for i in range(len(pick))]))
    table = table.set_column(table.schema.get_field_index("system"), "system",
                             pa.array([f"s{i % systems:04d}" for i in range(len(pick))]))
    # The systems of a comparison group cover the same segments (what --clusters requires):
    # each row takes its group's first row's count and fingerprint.
    first = pa.array(np.arange(len(pick)) // systems * systems)
    for name in ("n_segments", "segment_fingerprint"):
        table = table.set_column(table.schema.get_field_index(name), name, table[name].take(first))
    index = table.schema.get_field_index(statstable.REPLICATE_SUMS)
    return table.set_column(index, statstable.REPLICATE_SUMS,
                            statstable.ragged_list_column(list(matrix)))


def one(base: str, groups: int, systems: int, with_clusters: bool) -> dict:
    from bleu_spark import scoring
    from bleu_spark.metrics.bleu import BleuConfig
    from bleu_spark.resampling import Resampling, clusters

    stats = tiled(base, groups, systems)
    built = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    seconds = float("inf")
    for _ in range(REPEATS):  # the best of a few: the machine is shared
        started = time.perf_counter()
        rows = scoring.score_sets(stats, [("langpair", "system")], BleuConfig(),
                                  Resampling(confidence=True, clusters=with_clusters))
        seconds = min(seconds, time.perf_counter() - started)
    ranking = None
    if with_clusters:  # the ranking alone, on replicate scores of the same shape
        scores = np.random.default_rng(1).normal(30, 1, (1000, systems))
        started = time.perf_counter()
        for _ in range(groups):
            clusters.rank_systems(scores.mean(0), scores, [f"s{i}" for i in range(systems)], True)
        ranking = time.perf_counter() - started
        assert all(r["cluster"] is not None for r in rows)
    return {"seconds": seconds, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "table_mib": built, "ranking_s": ranking, "rows": len(rows)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="1x20,1x200,1x2000,50x20,5x200,1000x20",
                        help="GROUPSxSYSTEMS, comma-separated")
    parser.add_argument("--base", default=os.path.join(ROOT, "out", "bench-clusters-base"))
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        groups, systems, flag = args.one.split(":")
        print(json.dumps(one(args.base, int(groups), int(systems), flag == "1")))
        return 0
    make_base(args.base)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    print("| comparison groups x systems | groups | intervals, s | intervals + clusters, s | "
          "clusters' share, s | ranking alone, s | MiB with the table built | intervals MiB | "
          "intervals + clusters MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for config in args.configs.split(","):
        groups, systems = map(int, config.split("x"))
        runs = [json.loads(subprocess.run(
            [sys.executable, __file__, "--base", args.base, "--one", f"{groups}:{systems}:{flag}"],
            check=True, capture_output=True, text=True, env=env).stdout) for flag in (0, 1)]
        plain, ranked = runs
        print(f"| {groups:,} x {systems:,} | {groups * systems:,} | {plain['seconds']:.2f} | "
              f"{ranked['seconds']:.2f} | {ranked['seconds'] - plain['seconds']:.2f} | "
              f"{ranked['ranking_s']:.3f} | {plain['table_mib']:,.0f} | {plain['peak_mib']:,.0f} | "
              f"{ranked['peak_mib']:,.0f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
