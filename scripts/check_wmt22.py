"""Score a WMT-style table with the job and with sacrebleu 2.6, group by group, and compare.

    python scripts/check_wmt22.py [--input ../shared/data/wmt22.parquet] [--workdir DIR]
                                  [--metrics bleu,chrf,chrf++,ter] [--processes N] [--segments]

Runs `bleu-spark score --metrics ...` as a whole process (auto tokenizer per language pair),
then sacrebleu's `corpus_score` of each metric on each (langpair, system) group's rows ordered
by seg_id (with `--processes N`, groups spread over N processes), and prints one line per group
and metric, and the time of each side (the job's wall time as a whole process, sacrebleu's CPU
time per metric). It compares each group's score (to 1e-9), signature (for BLEU also its counts,
totals, lengths and text line), and its summed statistics in the job's `stats/` table with the
sum of sacrebleu's segment statistics (`_extract_corpus_statistics`, the list its
`corpus_score` sums): BLEU's lengths, counts and totals, chrF's per-order counts, TER's edits
and reference length. With `--segments`, the job also writes its segments table, and each
row's `sentence_score` of each metric is compared (to 1e-9) with sacrebleu's `sentence_score`
of that row (BLEU with effective order; for TER, whose sentence score is its corpus steps on one
segment, `_aggregate_and_compute` of that segment's statistics, which the corpus check has
already extracted). Exits 1 if anything differs.
"""
import argparse
import contextlib
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from functools import partial

import pyarrow.parquet as pq

from bleu_spark.languages import TextSettings
from bleu_spark.metrics import stat_order
from bleu_spark.oracle import reference_streams, sacrebleu_sums

TOLERANCE = 1e-9
EXACT_FIELDS = ("counts", "totals", "sys_len", "ref_len", "signature", "verbose")


def job_scores(input_path: str, workdir: str, metrics: str, segments: bool = False) -> tuple:
    """The job's score rows and its summed statistics, per (langpair, system, metric)."""
    out = os.path.join(workdir, "scores")
    cmd = [sys.executable, "-m", "bleu_spark", "score", "--input", input_path, "--output", out,
           "--metrics", metrics, *(["--segments"] if segments else [])]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "scores.json"), encoding="utf-8") as handle:
        scores = {(r["langpair"], r["system"], r.get("metric", "bleu")): r for r in json.load(handle)}
    return scores, job_statistics(os.path.join(out, "stats"))


def job_statistics(stats_dir: str) -> dict:
    """Each statistics row's metric columns (the non-null ones, in the metric's own order)."""
    rows = pq.read_table(stats_dir).to_pylist()
    columns = stat_order(rows[0]) if rows else []
    sums = {}
    for row in rows:
        key = (row["langpair"], row["system"], row["metric"])
        if key in sums:  # a second row would mean the table is finer than the groups compared
            raise SystemExit(f"two statistics rows for {key}")
        sums[key] = [row[c] for c in columns if row[c] is not None]
    return sums


def _sacrebleu_metric(name: str, langpair: str):
    from sacrebleu.metrics import BLEU, CHRF, TER

    if name == "bleu":  # the job's defaults: its tokenizer by target language, as `-l` picks it
        return BLEU(tokenize=TextSettings().tokenizer_for(langpair))
    return {"chrf": CHRF(), "chrf++": CHRF(word_order=2), "ter": TER()}[name]


def job_sentences(workdir: str) -> dict:
    """Each segment's sentence score, per (row of the input file, metric)."""
    table = pq.read_table(os.path.join(workdir, "scores", "segments"),
                          columns=["input_row", "metric", "sentence_score"])
    return {(r["input_row"], r["metric"]): r["sentence_score"] for r in table.to_pylist()}


def sacrebleu_sentences(metric: str, langpair: str, theirs, hyps, refs, stats) -> list:
    """sacrebleu's sentence score of each segment of a group."""
    from sacrebleu.metrics import BLEU

    if metric == "ter":  # TER.sentence_score: these steps on the one segment's statistics
        return [theirs._aggregate_and_compute([row]).score for row in stats]
    if metric == "bleu":
        theirs = BLEU(tokenize=TextSettings().tokenizer_for(langpair), effective_order=True)
    return [theirs.sentence_score(h, [r for r in rs if r is not None]).score for h, rs in zip(hyps, refs)]


def sacrebleu_group(task: tuple) -> tuple:
    """sacrebleu's score, signature and summed statistics of one group and metric (and with
    `rows`, each segment's sentence score by its row), and the CPU seconds they took."""
    metric, langpair, system, hyps, refs, rows = task
    start = time.process_time()
    theirs, streams = _sacrebleu_metric(metric, langpair), reference_streams(refs)
    # corpus_score's own steps, keeping the segment statistics it sums
    theirs._check_corpus_score_args(hyps, streams)
    stats = theirs._extract_corpus_statistics(hyps, streams)
    result = theirs._aggregate_and_compute(stats)
    entry = {"score": result.score, "signature": theirs.get_signature().format(),
             "statistics": sacrebleu_sums(theirs, stats)}
    if metric == "bleu":  # its default smoothing (exp) leaves the counts unsmoothed
        entry.update(counts=result.counts, totals=result.totals, sys_len=result.sys_len,
                     ref_len=result.ref_len, verbose=result.format())
    if rows is not None:
        scores = sacrebleu_sentences(metric, langpair, theirs, hyps, refs, stats)
        entry["sentences"] = dict(zip(rows, scores))
    return (langpair, system, metric), entry, time.process_time() - start


def oracle_scores(input_path: str, metrics, processes: int = 1, sentences: bool = False) -> tuple:
    """Per (langpair, system, metric): sacrebleu's score and summed statistics (and with
    `sentences`, its sentence scores by row); and sacrebleu's CPU seconds per metric (summed
    over the worker processes)."""
    rows = pq.read_table(input_path, columns=["langpair", "system", "seg_id", "candidate",
                                              "references"]).to_pylist()
    groups = defaultdict(list)
    for index, row in enumerate(rows):
        groups[row["langpair"], row["system"]].append(dict(row, row=index))
    tasks = []
    for metric in metrics:
        for (langpair, system), group in sorted(groups.items()):
            group.sort(key=lambda r: r["seg_id"])
            tasks.append((metric, langpair, system, [r["candidate"] for r in group],
                          [r["references"] for r in group],
                          [r["row"] for r in group] if sentences else None))
    scores, seconds = {}, dict.fromkeys(metrics, 0.0)
    # sacrebleu's TER takes most of an hour in one process: groups may go to several
    with multiprocessing.Pool(processes) if processes > 1 else contextlib.nullcontext() as pool:
        run = partial(pool.imap_unordered, chunksize=1) if pool else map
        for key, entry, cpu in run(sacrebleu_group, tasks):
            scores[key] = entry
            seconds[key[2]] += cpu
    return scores, seconds


def compare(job: dict, oracle: dict) -> list:
    problems = []
    if set(job) != set(oracle):
        problems.append(f"groups differ: {sorted(set(job) ^ set(oracle))}")
    for key in sorted(set(job) & set(oracle)):
        mine, ref = job[key], oracle[key]
        if abs(mine["score"] - ref["score"]) > TOLERANCE:
            problems.append(f"{key}: score {mine['score']!r} != {ref['score']!r}")
        fields = EXACT_FIELDS if key[2] == "bleu" else ("signature",)
        problems += [f"{key}: {f} {mine[f]!r} != {ref[f]!r}" for f in fields if mine[f] != ref[f]]
    return problems


def compare_statistics(job_stats: dict, oracle: dict) -> list:
    """Each group's summed statistics against sacrebleu's, value for value."""
    problems = []
    if set(job_stats) != set(oracle):
        problems.append(f"statistics rows differ: {sorted(set(job_stats) ^ set(oracle))}")
    for key in sorted(set(job_stats) & set(oracle)):
        if job_stats[key] != oracle[key]["statistics"]:
            problems.append(f"{key}: statistics {job_stats[key]} != {oracle[key]['statistics']}")
    return problems


def compare_sentences(job: dict, oracle: dict) -> tuple:
    """Each (row, metric)'s sentence score against sacrebleu's: the mismatches, the pairs
    compared and the largest difference."""
    theirs = {(row, key[2]): score for key, entry in oracle.items()
              for row, score in entry.get("sentences", {}).items()}
    problems = [f"sentence scores of {len(set(job) ^ set(theirs))} (row, metric) pairs on one side only"] \
        if set(job) != set(theirs) else []
    diffs = {k: abs(job[k] - theirs[k]) for k in set(job) & set(theirs)}
    problems += [f"row {k[0]} {k[1]}: sentence score {job[k]!r} != {theirs[k]!r}"
                 for k, d in sorted(diffs.items()) if d > TOLERANCE]
    return problems, len(diffs), max(diffs.values(), default=0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", default="../shared/data/wmt22.parquet")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--metrics", default="bleu", help="as the job's --metrics (default bleu)")
    parser.add_argument("--processes", type=int, default=1,
                        help="processes running sacrebleu, a group and metric each (default 1)")
    parser.add_argument("--segments", action="store_true",
                        help="also every row's sentence score of every metric (the segments table)")
    args = parser.parse_args()
    metrics = [m for m in args.metrics.split(",") if m]
    workdir = args.workdir or tempfile.mkdtemp(prefix="bleu-spark-check-")
    start = time.time()
    job, job_stats = job_scores(args.input, workdir, args.metrics, args.segments)
    job_s = time.time() - start
    oracle, seconds = oracle_scores(args.input, metrics, args.processes, args.segments)
    for key in sorted(oracle):
        mine = job.get(key, {})
        diff = abs(mine.get("score", float("nan")) - oracle[key]["score"])
        print(f"{key[0]}  {key[1]:<24} {key[2]:<6} job {mine.get('score', float('nan')):9.4f}  "
              f"sacrebleu {oracle[key]['score']:9.4f}  |diff| {diff:.1e}  {oracle[key]['signature']}")
    problems = compare(job, oracle)
    stat_problems = compare_statistics(job_stats, oracle)
    problems += stat_problems
    max_diff = max(abs(job[k]["score"] - oracle[k]["score"]) for k in oracle if k in job)
    rows = sum(r["n_segments"] for k, r in job.items() if k[2] == metrics[0])
    oracle_s = sum(seconds.values())
    print(f"\n{len(oracle)} groups x metrics, {rows} rows; max |score diff| {max_diff:.1e}; "
          f"job {job_s:.1f} s as a whole process, sacrebleu {oracle_s:.1f} CPU s ("
          + ", ".join(f"{m} {s:.1f} s" for m, s in seconds.items())
          + f"): {oracle_s / job_s:.1f}x")
    for metric in metrics:
        keys = [k for k in oracle if k[2] == metric]
        same = sum(1 for k in keys if job_stats.get(k) == oracle[k]["statistics"])
        print(f"{metric}: summed statistics identical to sacrebleu's for {same} of {len(keys)} groups")
    if args.segments:
        sentence_problems, compared, largest = compare_sentences(job_sentences(workdir), oracle)
        print(f"sentence scores: {compared - len(sentence_problems)} of {compared} (row, metric) "
              f"pairs equal sacrebleu's to {TOLERANCE}; max |diff| {largest:.1e}")
        problems += sentence_problems
    for problem in problems[:50]:
        print("MISMATCH", problem)
    print("IDENTICAL" if not problems else f"{len(problems)} MISMATCHES")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
