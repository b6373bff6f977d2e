#!/usr/bin/env python3
"""Benchmark bleu-spark against sacrebleu 2.6 (and bleuscore), each run as a whole process.

One invocation:

1. takes a Parquet input (``--input``) or generates a synthetic corpus of realistic sentences
   (Zipf-distributed vocabulary, punctuation, numbers, capitalisation, 5-60 tokens a segment,
   several systems per segment that are noisy edits of the reference, 1-2 references) and caches
   it under ``--workdir`` keyed by its parameters;
2. runs and times each path as a separate process, from start to exit, polling the process tree
   with psutil for peak RSS (JVM, Python driver and Python workers reported separately):

   a1  sacrebleu, one ``BLEU(tokenize=...).corpus_score(hyps, refs)`` per (langpair, system)
   a2  sacrebleu, references pre-computed once per langpair with ``BLEU(references=...)``, then
       ``corpus_score(hyps, None)`` per system (what the sacrebleu CLI does for several systems)
   a3  bleuscore (Rust; not sacrebleu-exact: its rate is reported, its scores are not checked)
   b   the job, ``spark-submit --master local[1] jobs/score_bleu.py``
   c   the job, ``spark-submit --master local[2] jobs/score_bleu.py``
   d   as c, with ``--confidence`` (poisson bootstrap, B = ``--n-bootstrap``, default 1000)
   e   the job as the console script starts it, ``bleu-spark score`` (no master set: local[*],
       its own JVM options; ``--conf`` is not passed to it)
   s   Spark alone, started as e starts it: the SparkContext, one no-op Python task per core,
       stop. No rows: the floor under any job path's wall time on this machine
   g   ``bleu-spark aggregate --group-by langpair,system`` of a generated statistics table of
       ``--stats-rows`` rows (default 100,000), no JVM: what a dashboard back end calls

``--scale-groups 100,1000,10000`` runs c and d once per number of groups (100 systems, and as
many language pairs as make the groups; ``--rows`` rows in ``--row-groups`` row groups) and
prints, per number of groups, the wall time and peak memory of the process tree with and
without intervals: what intervals cost as groups grow.

``--start-up`` measures the fixed cost instead (``scripts/bench_startup.py``): cold and warm
start in new environments, a small run against path s, an executor's first task on a
standalone cluster.

``--segments`` runs a2 and c, then c with ``--segments`` (carrying ``--segments-columns``),
and prints the extra time and memory of writing the segments table and its bytes per input row.

``--check-costs`` times, as whole processes in alternated rounds (``--repeats``), what a row
costs in CPU for the reference-free checks (all four, each alone, with BLEU) and a segment score
column against BLEU alone, sacrebleu's a2 and Spark alone (``scripts/bench/check_costs.py``);
``--check-report REPORT.json`` prints a saved report's summary again.

3. checks that a1, a2, b, c, d and e give identical per-group results (score within 1e-9; counts,
   totals, sys_len, ref_len and n_segments equal) and exits 1 if they do not, before any speed
   is printed;
4. prints rows/s, wall time, CPU time, peak memory and the ratios b/a1, b/a2, c/a1, c/a2, c/b, e/a2.

Groups are (system, langpair); rows of a group are aligned by (testset, seg_id). The tokenizer
follows the target language as sacrebleu's ``-l`` does (zh, ja-mecab, ko-mecab, else 13a)
unless ``--tokenize`` names one.

Examples::

    python scripts/bench.py --rows 1000000
    python scripts/bench.py --rows 10000000 --paths a2,b,c --json /tmp/bench-10m.json
    python scripts/bench.py --input ../shared/data/wmt22.parquet
    python scripts/bench.py --smoke            # identity guard only, a few thousand rows
    python scripts/bench.py --scale-groups 100,1000,10000 --rows 500000 --row-groups 16
    python scripts/bench.py --segments --input ../shared/data/wmt22.parquet
    python scripts/bench.py --segments --rows 10000000 --paths c --row-groups 64
    python scripts/bench.py --input ../shared/data/wmt22.parquet --metric-costs --cost-rows 1000
    python scripts/bench.py --input ../shared/data/wmt22.parquet --check-costs --repeats 3
    python scripts/bench.py --input ../shared/data/wmt22.parquet --tokenizer-costs \
        --job-root /tmp/old                    # us per row per langpair, two checkouts, one process

Exit codes: 0 ok, 1 results differ, 2 a path failed to run.

The internal forms ``bench.py _score PATH INPUT OUT.json [TOKENIZE]`` (one sacrebleu or
bleuscore path) and ``bench.py _spark_floor`` (path s) are what the benchmark starts as
subprocesses.

The code is the package ``scripts/bench/``, one concern a module; this file is its command.
"""
import sys
from pathlib import Path

# the package beside this file, importable however this file is run or loaded
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
