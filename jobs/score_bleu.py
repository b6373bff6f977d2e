"""spark-submit entry point: `spark-submit jobs/score_bleu.py score --input ... --output ...`.

The arguments are those of `bleu-spark`; the leading `score` may be left out.
"""
import sys

from bleu_spark.cli import main

if __name__ == "__main__":
    argv = sys.argv[1:]
    if not argv or argv[0] != "score" and argv[0] not in ("-h", "--help", "--version"):
        argv = ["score", *argv]
    sys.exit(main(argv))
