"""What the hostile-input tests share: the console script as a process, and in this process."""
import os
import subprocess
import sys

from bleu_spark.cli import build_parser, effective_settings, job_options
from conftest import ROOT


def run_cli(*args, env=None, **kwargs):
    return subprocess.run([sys.executable, "-m", "bleu_spark", "score", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **(env or {})), **kwargs)


def score_in_process(spark, *args):
    """`bleu-spark score ARGS` as the console script runs it (its settings, preflight, the job), in
    this process on the tests' session: for what does not depend on the process around it."""
    from bleu_spark.spark.job import preflight, run_job

    options = job_options(effective_settings(build_parser().parse_args(["score", *args])))
    preflight(options)
    return run_job(spark, options)
