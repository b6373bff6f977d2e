#!/usr/bin/env python3
"""Time the poisson bootstrap's per-segment steps: `poisson_weights` and `replicate_sums`.

Prints the best of `--repeats` runs in µs per segment, for `--segments` segments at
`--replicates` replicates (statistics of max order 4: 10 columns, 5-60 token segments).

    python scripts/bench_bootstrap.py --segments 20000 --replicates 1000
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bleu_spark.resampling import ar_swaps, poisson_weights, replicate_sums  # noqa: E402


def best_of(repeats, function):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=20000)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n, b = args.segments, args.replicates
    hashes = rng.integers(-2 ** 63, 2 ** 63 - 1, size=n, dtype=np.int64)
    lengths = rng.integers(5, 61, size=n)
    stats = np.column_stack([lengths, lengths] + [lengths // 2] * 4
                            + [np.maximum(0, lengths - k) for k in range(4)]).astype(np.int64)
    weights = poisson_weights(hashes, 12345, b)
    swaps = ar_swaps(hashes, 12345, 10000)
    timings = {
        f"poisson_weights (B={b})": best_of(args.repeats, lambda: poisson_weights(hashes, 12345, b)),
        f"replicate_sums (B={b}, width 10)": best_of(args.repeats, lambda: replicate_sums(stats, weights)),
        "ar_swaps (T=10000)": best_of(args.repeats, lambda: ar_swaps(hashes, 12345, 10000)),
        "replicate_sums of swaps (T=10000)": best_of(args.repeats, lambda: replicate_sums(stats, swaps)),
    }
    print(f"numpy {np.__version__}, {n} segments, best of {args.repeats}")
    for name, seconds in timings.items():
        print(f"{name:40s} {seconds / n * 1e6:8.2f} µs/segment")


if __name__ == "__main__":
    main()
