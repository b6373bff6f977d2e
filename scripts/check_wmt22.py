"""Score a WMT-style table with the job and with sacrebleu 2.6, group by group, and compare.

    python scripts/check_wmt22.py [--input ../shared/data/wmt22.parquet] [--workdir DIR]

Runs `bleu-spark score` as a whole process (auto tokenizer per language pair), then sacrebleu's
`corpus_score` on each (langpair, system) group's rows ordered by seg_id, and prints one line per
group; exits 1 if any score differs by more than 1e-9 or any count, total, length or signature
differs.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

import pyarrow.parquet as pq

from bleu_spark import BleuConfig
from bleu_spark.oracle import sacrebleu_score

TOLERANCE = 1e-9
EXACT_FIELDS = ("counts", "totals", "sys_len", "ref_len", "signature", "verbose")


def job_scores(input_path: str, workdir: str) -> dict:
    out = os.path.join(workdir, "scores")
    cmd = [sys.executable, "-m", "bleu_spark", "score", "--input", input_path, "--output", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "scores.json"), encoding="utf-8") as handle:
        return {(r["langpair"], r["system"]): r for r in json.load(handle)}


def oracle_scores(input_path: str) -> dict:
    rows = pq.read_table(input_path, columns=["langpair", "system", "seg_id", "candidate",
                                              "references"]).to_pylist()
    groups = defaultdict(list)
    for row in rows:
        groups[row["langpair"], row["system"]].append(row)
    config = BleuConfig()
    scores = {}
    for (langpair, system), group in sorted(groups.items()):
        group.sort(key=lambda r: r["seg_id"])
        scores[langpair, system] = sacrebleu_score([r["candidate"] for r in group],
                                                   [r["references"] for r in group],
                                                   config, langpair=langpair)
    return scores


def compare(job: dict, oracle: dict) -> list:
    problems = []
    if set(job) != set(oracle):
        problems.append(f"groups differ: {sorted(set(job) ^ set(oracle))}")
    for key in sorted(set(job) & set(oracle)):
        mine, ref = job[key], oracle[key]
        if abs(mine["score"] - ref["score"]) > TOLERANCE:
            problems.append(f"{key}: score {mine['score']!r} != {ref['score']!r}")
        problems += [f"{key}: {f} {mine[f]!r} != {ref[f]!r}" for f in EXACT_FIELDS if mine[f] != ref[f]]
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", default="../shared/data/wmt22.parquet")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="bleu-spark-check-")
    start = time.time()
    job = job_scores(args.input, workdir)
    job_s = time.time() - start
    oracle = oracle_scores(args.input)
    oracle_s = time.time() - start - job_s
    for key in sorted(oracle):
        mine = job.get(key, {})
        diff = abs(mine.get("score", float("nan")) - oracle[key]["score"])
        print(f"{key[0]}  {key[1]:<24} job {mine.get('score', float('nan')):9.4f}  "
              f"sacrebleu {oracle[key]['score']:9.4f}  |diff| {diff:.1e}  {oracle[key]['signature']}")
    problems = compare(job, oracle)
    max_diff = max(abs(job[k]["score"] - oracle[k]["score"]) for k in oracle if k in job)
    print(f"\n{len(oracle)} groups, {sum(r['n_segments'] for r in job.values())} rows; "
          f"max |score diff| {max_diff:.1e}; job {job_s:.1f} s, sacrebleu {oracle_s:.1f} s")
    for problem in problems:
        print("MISMATCH", problem)
    print("IDENTICAL" if not problems else f"{len(problems)} MISMATCHES")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
