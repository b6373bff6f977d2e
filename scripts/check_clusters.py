"""Clusters (`--clusters`) beside the paired tests' verdicts against a baseline, on WMT22, with the
poisson and the sacrebleu bootstrap methods.

    python scripts/check_clusters.py [--input ../shared/data/wmt22.parquet] [--baseline Online-B]

Runs `bleu-spark score --clusters --paired-bs --baseline B` (B = 1000, seed 12345, segments in
testset, langpair, seg_id order) per method and metric (BLEU, chrF, TER) as a whole process, then
sets each system's cluster beside its paired test against the baseline: "split" where the
system's cluster is not the baseline's, "tied" where it is; "significant" where p < 0.05. Prints
where the two readings disagree, and where the two methods put a system in another cluster.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter

SIGNIFICANCE = 0.05
METRICS = ("bleu", "chrf", "ter")


def run(input_path: str, out: str, method: str, baseline: str, reuse: bool = False):
    """One run per metric: the sacrebleu method brings every segment's statistics to the driver,
    and three metrics' at once of the whole table are more than Spark's default result size."""
    scores, paired, elapsed = {}, {}, 0.0
    for metric in METRICS:
        folder = f"{out}-{metric}"
        cmd = [sys.executable, "-m", "bleu_spark", "score", "--input", input_path, "--output", folder,
               "--clusters", "--paired-bs", "--baseline", baseline, "--bootstrap-method", method,
               "--metrics", metric, "--segment-key", "testset,langpair,seg_id",
               "--progress-seconds", "0"]
        if reuse and os.path.exists(os.path.join(folder, "scores.json")):
            elapsed = float("nan")  # an earlier run's output, read again
        else:
            started = time.time()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            elapsed += time.time() - started
        for row in json.load(open(os.path.join(folder, "scores.json"), encoding="utf-8")):
            scores[row["langpair"], row["metric"], row["system"]] = row
        for row in json.load(open(os.path.join(folder, "paired.json"), encoding="utf-8")):
            paired[row["langpair"], row["metric"], row["system"]] = row
    return scores, paired, elapsed


def compare(scores: dict, paired: dict, baseline: str):
    """Per comparison against the baseline: (key, split, significant, row, test)."""
    out = []
    for key, test in sorted(paired.items()):
        langpair, metric, _ = key
        base = scores[langpair, metric, baseline]
        row = scores[key]
        out.append((key, row["cluster"] != base["cluster"], test["p_value"] < SIGNIFICANCE, row, base, test))
    return out


def describe(key, row, base, test) -> str:
    langpair, metric, system = key
    return (f"  {langpair} {metric:5s} {system:20s} {row['score']:7.2f} rank {row['rank']:2d} "
            f"({row['rank_low']}-{row['rank_high']}) cluster {row['cluster']}   baseline "
            f"{base['score']:7.2f} rank {base['rank']:2d} ({base['rank_low']}-{base['rank_high']}) "
            f"cluster {base['cluster']}   p = {test['p_value']:.4f} delta CI "
            f"[{test['delta_ci_low']:+.2f}, {test['delta_ci_high']:+.2f}]")


def layout(scores: dict, group, ranged) -> str:
    """A comparison group's systems best first, `|` where a cluster starts."""
    rows = sorted((r for k, r in scores.items() if k[:2] == group), key=lambda r: (r["rank"], r["system"]))
    text = []
    for i, r in enumerate(rows):
        if i and r["cluster"] != rows[i - 1]["cluster"]:
            text.append("|")
        differs = (group[0], group[1], r["system"]) in ranged
        text.append(r["system"] + (f"({r['rank_low']}-{r['rank_high']})" if differs else ""))
    return " ".join(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default=os.path.join("..", "shared", "data", "wmt22.parquet"))
    parser.add_argument("--baseline", default="Online-B")
    parser.add_argument("--workdir", help="keep the outputs here (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true",
                        help="read the outputs an earlier run left in --workdir again")
    args = parser.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="check-clusters-")
    results = {m: run(args.input, os.path.join(workdir, m), m, args.baseline, args.reuse)
               for m in ("poisson", "sacrebleu")}
    for method, (scores, paired, elapsed) in results.items():
        rows = compare(scores, paired, args.baseline)
        counts = Counter((split, significant) for _, split, significant, *_ in rows)
        groups = Counter((k[0], k[1]) for k in scores)
        n_clusters = Counter((k[0], k[1], r["cluster"]) for k, r in scores.items())
        print(f"== {method}: {len(scores)} groups, {len(groups)} comparison groups "
              f"(language pair x metric), {len(n_clusters)} clusters; {len(rows)} comparisons with "
              f"{args.baseline}; whole processes {elapsed:.1f} s")
        for metric in METRICS:
            mine = [r for r in rows if r[0][1] == metric]
            c = Counter((split, significant) for _, split, significant, *_ in mine)
            print(f"  {metric:5s}: split & p<0.05 {c[True, True]:3d}   tied & p>=0.05 "
                  f"{c[False, False]:3d}   tied & p<0.05 {c[False, True]:3d}   split & p>=0.05 "
                  f"{c[True, False]:3d}")
        print(f"  all  : split & p<0.05 {counts[True, True]:3d}   tied & p>=0.05 "
              f"{counts[False, False]:3d}   tied & p<0.05 {counts[False, True]:3d}   split & p>=0.05 "
              f"{counts[True, False]:3d}")
        for title, wanted in (("split but p >= 0.05", (True, False)),
                              ("tied but p < 0.05", (False, True))):
            print(f"  {title}:")
            for key, split, significant, row, base, test in rows:
                if (split, significant) == wanted:
                    print(describe(key, row, base, test))
    poisson, sacrebleu = results["poisson"][0], results["sacrebleu"][0]
    moved = [k for k in poisson if poisson[k]["cluster"] != sacrebleu[k]["cluster"]]
    ranged = [k for k in poisson if (poisson[k]["rank_low"], poisson[k]["rank_high"])
              != (sacrebleu[k]["rank_low"], sacrebleu[k]["rank_high"])]
    print(f"== methods: {len(moved)} of {len(poisson)} systems in another cluster, "
          f"{len(ranged)} with another rank range")
    print("  comparison groups whose clusters differ (systems best first, '|' between clusters; "
          "rank ranges of the systems whose range differs):")
    for group in sorted({k[:2] for k in moved}):
        print(f"  {group[0]} {group[1]}")
        for name, method in (("poisson", poisson), ("sacrebleu", sacrebleu)):
            print(f"    {name:9s} {layout(method, group, ranged)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
