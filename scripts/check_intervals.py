"""The job's hashed Poisson intervals and paired bootstrap against sacrebleu 2.6's own, per system.

    python scripts/check_intervals.py [--input ../shared/data/wmt22.parquet] [--baseline Online-B]

Runs `bleu-spark score --confidence --paired-bs` (poisson, B = 1000) as a whole process, then
sacrebleu itself on each (langpair, system) group's rows in seg_id order: `corpus_score` with
`n_bootstrap=1000` and its resample scores for the percentile bounds, and `PairedTest` (bs) per
language pair against the baseline. Prints one line per system and a summary; exits 1 unless
every bound is within 0.5 BLEU of sacrebleu's and every p-value is on sacrebleu's side of 0.05
where sacrebleu's p lies outside [0.01, 0.2].
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

import numpy as np
import pyarrow.parquet as pq
from sacrebleu.metrics.bleu import BLEU
from sacrebleu.significance import PairedTest, _bootstrap_resample

from bleu_spark.languages import TextSettings
from bleu_spark.resampling import percentile_bounds
from bleu_spark.oracle import reference_streams

BOUND_TOLERANCE = 0.5
UNSURE = (0.01, 0.2)


def job_results(input_path: str, workdir: str, baseline: str):
    out = os.path.join(workdir, "out")
    cmd = [sys.executable, "-m", "bleu_spark", "score", "--input", input_path, "--output", out,
           "--confidence", "--paired-bs", "--baseline", baseline,
           "--segment-key", "testset,langpair,seg_id", "--progress-seconds", "0"]
    started = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    elapsed = time.time() - started
    scores = json.load(open(os.path.join(out, "scores.json"), encoding="utf-8"))
    paired = json.load(open(os.path.join(out, "paired.json"), encoding="utf-8"))
    return ({(r["langpair"], r["system"]): r for r in scores},
            {(r["langpair"], r["system"]): r for r in paired}, elapsed)


def sacrebleu_results(input_path: str, baseline: str):
    """Per group, sacrebleu's percentile bounds; per (langpair, system), its paired-bs p-value."""
    rows = pq.read_table(input_path, columns=["langpair", "system", "seg_id", "candidate",
                                              "references"]).to_pylist()
    by_pair = defaultdict(lambda: defaultdict(list))
    for row in sorted(rows, key=lambda r: r["seg_id"]):
        by_pair[row["langpair"]][row["system"]].append(row)
    bounds, p_values = {}, {}
    for langpair, systems in sorted(by_pair.items()):
        metric = BLEU(tokenize=TextSettings().tokenizer_for(langpair))
        streams = reference_streams([r["references"] for r in systems[baseline]])
        for system, group in systems.items():
            stats = metric._extract_corpus_statistics([r["candidate"] for r in group], streams)
            _, resampled = _bootstrap_resample(stats, metric, 1000)
            bounds[langpair, system] = percentile_bounds(np.array([s.score for s in resampled]))
        named = [(baseline, [r["candidate"] for r in systems[baseline]])]
        named += [(s, [r["candidate"] for r in g]) for s, g in sorted(systems.items()) if s != baseline]
        _, results = PairedTest(named, {"BLEU": metric}, streams, test_type="bs", n_samples=1000)()
        for (system, _), result in zip(named[1:], results["BLEU"][1:]):
            p_values[langpair, system] = result.p_value
    return bounds, p_values


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default=os.path.join(here, "..", "..", "shared", "data", "wmt22.parquet"))
    parser.add_argument("--baseline", default="Online-B")
    args = parser.parse_args()
    os.environ.setdefault("SACREBLEU_SEED", "12345")
    with tempfile.TemporaryDirectory() as workdir:
        scores, paired, elapsed = job_results(args.input, workdir, args.baseline)
    started = time.time()
    bounds, p_values = sacrebleu_results(args.input, args.baseline)
    sacrebleu_s = time.time() - started

    print(f"{'langpair':8} {'system':24} {'sacrebleu 95% CI':>17} {'poisson 95% CI':>17} "
          f"{'max |d|':>7} {'p sacrebleu':>11} {'p poisson':>9}")
    worst, disagree, decided = 0.0, [], 0
    for key in sorted(bounds):
        low, high = bounds[key]
        ours = scores[key]
        gap = max(abs(ours["ci_low"] - low), abs(ours["ci_high"] - high))
        worst = max(worst, gap)
        p_theirs = p_values.get(key)
        p_ours = paired[key]["p_value"] if key in paired else None
        if p_theirs is not None and not UNSURE[0] <= p_theirs <= UNSURE[1]:
            decided += 1
            if (p_ours < 0.05) != (p_theirs < 0.05):
                disagree.append(key)
        p_text = f"{p_theirs:11.4f} {p_ours:9.4f}" if p_theirs is not None else f"{'baseline':>11} {'':9}"
        print(f"{key[0]:8} {key[1]:24} {low:8.2f}-{high:<8.2f} {ours['ci_low']:8.2f}-{ours['ci_high']:<8.2f} "
              f"{gap:7.3f} {p_text}")
    print(f"\n{len(bounds)} groups: largest bound difference {worst:.3f} BLEU (limit {BOUND_TOLERANCE}); "
          f"{decided} comparisons with sacrebleu's p outside [{UNSURE[0]}, {UNSURE[1]}], "
          f"{len(disagree)} on the other side of 0.05: {disagree or 'none'}")
    print(f"job (score + intervals + paired, whole process): {elapsed:.1f} s; "
          f"sacrebleu (bootstrap + paired, one process): {sacrebleu_s:.1f} s")
    return 0 if worst <= BOUND_TOLERANCE and not disagree else 1


if __name__ == "__main__":
    sys.exit(main())
