"""Hostile inputs and interrupted runs (issue 12): one clear line every time, no lost files, no
wrong score."""
import pytest

from bleu_spark import cli
from bleu_spark.cli import build_parser, effective_settings, job_options, main
from bleu_spark.errors import ConfigFileError, OutputError


# --- the job file: values of the wrong type ------------------------------------------------

@pytest.mark.parametrize("line,expected", [
    ("group_by: 5", "group_by is integer 5, expected string or list of strings"),
    ("group_by: [[system], langpair]", "group_by is list [['system'], 'langpair'], expected string or list of strings"),
    ("references_col: 7", "references_col is integer 7, expected string or list of strings"),
    ("input: [a, b]", "input is list ['a', 'b'], expected string"),
    ("output: 12345", "output is integer 12345, expected string"),
    ("max_ngram_order: true", "max_ngram_order is boolean True, expected integer"),
    ("progress_seconds: soon", "progress_seconds is string 'soon', expected number"),
    ('lowercase: "no"', "lowercase is string 'no', expected boolean"),
    ("report: 1", "report is integer 1, expected boolean"),
    ("weights: [0.5, x]", "weights is list [0.5, 'x'], expected string or list of numbers"),
    ("grouping_sets: [[system, 3]]", "expected string or list of (string or list of strings)"),
    ("smooth_value: {a: 1}", "smooth_value is mapping {'a': 1}, expected number"),
    ("scan: 3", "scan is integer 3, expected string"),
])
def test_job_file_values_of_the_wrong_type_are_exit_9_naming_key_and_type(tmp_path, capsys, line, expected):
    job = tmp_path / "job.yaml"
    job.write_text(f"input: in.parquet\noutput: {tmp_path / 'out'}\n{line}\n" if not line.startswith(("input", "output"))
                   else f"{line}\n")
    assert main(["score", "--config", str(job)]) == ConfigFileError.exit_code == 9
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bleu-spark: error: job file ")
    assert expected in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_an_unknown_scan_in_the_job_file_is_exit_2(tmp_path, capsys):
    job = tmp_path / "job.yaml"
    job.write_text(f"input: in.parquet\noutput: {tmp_path / 'out'}\nscan: arrow\n")
    assert main(["score", "--config", str(job)]) == 2
    assert capsys.readouterr().err == "bleu-spark: error: unknown --scan 'arrow'; choose one of: auto, spark\n"


def test_job_file_booleans_and_nulls_are_taken_as_meant(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("input: in.parquet\noutput: out\nlowercase: false\neffective_order: yes\n"
                   "max_ngram_order: null\nsmooth_value: null\nweights: '0.25,0.25,0.25,0.25'\n"
                   "group_by: []\nprogress_seconds: 5\n")
    options = job_options(effective_settings(build_parser().parse_args(["score", "--config", str(job)])))
    (bleu,) = options.measured
    assert bleu.config.lowercase is False and bleu.config.effective_order is True
    assert bleu.config.max_ngram_order == 4 and options.group_by == ()
    assert options.progress_seconds == 5


def test_every_job_file_key_has_a_kind():
    assert set(cli.JOB_FILE_KINDS) == set(cli.DEFAULTS)


# --- n-gram orders and weights ---------------------------------------------------------------

@pytest.mark.parametrize("order", ["20000", "11", "0", "-1"])
def test_max_ngram_order_out_of_range_is_exit_2(tmp_path, capsys, order):
    code = main(["score", "--input", "in.parquet", "--output", str(tmp_path / "out"),
                 "--max-ngram-order", order])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"--max-ngram-order must be an integer from 1 to 10, got {order}" in err


# --- every option's range, checked before any work ----------------------------------------------

TOO_BIG_SEED = "1180591620717411303424"  # 2**70: no int64 column or signature holds it


@pytest.mark.parametrize("args,message", [
    (["--confidence", "--seed", TOO_BIG_SEED],
     f"--seed must be an integer from 0 to 9223372036854775807, got {TOO_BIG_SEED}"),
    (["--confidence", "--seed", "-1"], "--seed must be an integer from 0 to 9223372036854775807, got -1"),
    (["--confidence", "--n-bootstrap", "0"], "--n-bootstrap must be an integer from 1 to 100000, got 0"),
    (["--paired-ar", "--baseline", "A", "--n-ar-trials", "100001"], "--n-ar-trials must be an integer"),
    (["--progress-seconds", "nan"], "--progress-seconds must be a number from 0 to 9223372036, got nan"),
    (["--progress-seconds", "-1"], "--progress-seconds must be a number from 0"),
    (["--smooth-method", "floor", "--smooth-value", "inf"], "--smooth-value must be a number of at least 0"),
    (["--weights", "0.5,0.5,0.5,-0.5"], "--weights must be non-negative and sum to 1, got 0.5,0.5,0.5,-0.5"),
    (["--weights", "a,b,c,d"], "--weights must be comma-separated numbers"),
    (["--baseline", "A"], "--baseline is only used with --paired-bs or --paired-ar"),
])
def test_an_option_out_of_range_is_exit_2_before_any_work(tmp_path, capsys, monkeypatch, args, message):
    from bleu_spark.spark import job

    monkeypatch.setattr(job, "preflight", lambda options: pytest.fail("work began"))
    code = main(["score", "--input", "in.parquet", "--output", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("line,message", [
    (f"seed: {TOO_BIG_SEED}", "--seed must be an integer from 0 to 9223372036854775807"),
    ("n_bootstrap: 0", "--n-bootstrap must be an integer from 1 to 100000, got 0"),
    ("progress_seconds: .inf", "--progress-seconds must be a number from 0 to 9223372036, got inf"),
    ("weights: [0.5, 0.5, 0.5, 0.5]", "--weights must be non-negative and sum to 1"),
    ("max_ngram_order: 11", "--max-ngram-order must be an integer from 1 to 10, got 11"),
])
def test_a_job_file_value_out_of_range_is_the_same_exit_2(tmp_path, capsys, line, message):
    job = tmp_path / "job.yaml"
    job.write_text(f"input: in.parquet\noutput: {tmp_path / 'out'}\nconfidence: true\n{line}\n")
    assert main(["score", "--config", str(job)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args,message", [
    (["--weights", "0.5,0.5,0.5,0.5"], "--weights must be non-negative and sum to 1"),
    (["--weights", ""], "--weights must be non-negative and sum to 1, got none"),
    (["--baseline", "A"], "--baseline is only used with --paired-bs or --paired-ar"),
    (["--confidence", "--baseline", "A"], "--baseline is only used with --paired-bs or --paired-ar"),
    (["--paired-bs"], "--paired-bs and --paired-ar need --baseline SYSTEM"),
    (["--smooth-value", "-1"], "--smooth-value must be a number of at least 0"),
])
def test_aggregate_checks_its_options_before_reading(tmp_path, capsys, monkeypatch, args, message):
    from bleu_spark import aggregate

    monkeypatch.setattr(aggregate, "run_aggregate", lambda *a: pytest.fail("work began"))
    code = main(["aggregate", "--stats", str(tmp_path / "stats"), "--output", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


def test_max_ngram_order_10_is_sacrebleus_score():
    import sacrebleu
    from bleu_spark import corpus_bleu

    cands = ["a b c d e f g h i j k l", "a b c d e f g h i j k m n"]
    refs = [["a b c d e f g h i j k l", "a b c d e f g h i j k m x"]]  # one stream, as sacrebleu's
    ours = corpus_bleu(cands, refs, max_ngram_order=10, tokenize="13a")
    theirs = sacrebleu.BLEU(max_ngram_order=10).corpus_score(cands, refs)
    assert ours.score == theirs.score and ours.counts == theirs.counts


def test_effective_order_with_all_weight_on_absent_orders_scores_0():
    from bleu_spark import corpus_bleu

    short = dict(hypotheses=["a b", "c d"], references=[["a b", "c d"]])
    weighted = corpus_bleu(**short, effective_order=True, weights=(0, 0, 0, 1))
    assert weighted.score == 0.0 and weighted.totals == [4, 2, 0, 0]
    # ... which is what the same weights give without effective order
    assert corpus_bleu(**short, weights=(0, 0, 0, 1)).score == weighted.score


def test_effective_order_with_weights_on_present_orders_equals_sacrebleu():
    import sacrebleu
    from bleu_spark import corpus_bleu

    cands, refs = ["a b", "c e"], ["a b", "c d"]
    ours = corpus_bleu(cands, [refs], effective_order=True, weights=(0.5, 0.5, 0, 0))
    theirs = sacrebleu.BLEU(max_ngram_order=2, effective_order=True).corpus_score(cands, [refs])
    assert ours.score == pytest.approx(theirs.score, rel=1e-12) and ours.score > 0


# --- invalid UTF-8 in text columns -----------------------------------------------------------

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from conftest import ROOT


def unchecked_strings(values):
    """A string array holding bytes as given, valid UTF-8 or not (as a foreign writer may)."""
    data = b"".join(v or b"" for v in values)
    offsets = np.cumsum([0] + [len(v or b"") for v in values]).astype(np.int32)
    validity = pa.array([v is not None for v in values]).buffers()[1]
    return pa.Array.from_buffers(pa.string(), len(values), [validity, pa.py_buffer(offsets.tobytes()),
                                                            pa.py_buffer(data)])


UTF8_ROWS = [  # candidate, references (bytes); the third and fifth rows are not UTF-8
    (b"the cat sat on the mat", [b"the cat sat on a mat"]),
    (b"a dog was big", [b"a big dog", b"the dog was big"]),
    (b"bad \xff bytes here", [b"bad bytes here"]),
    (b"caf\xc3\xa9 is open", [b"the caf\xc3\xa9 is open"]),
    (b"the storm was massive", [b"fine", b"the storm was \xe2\x82 massive"]),
]


def utf8_table(path):
    refs = [r for _, rs in UTF8_ROWS for r in rs]
    offsets = pa.array(np.cumsum([0] + [len(rs) for _, rs in UTF8_ROWS]).astype(np.int32))
    table = pa.table({"system": ["A"] * len(UTF8_ROWS), "seg_id": list(range(len(UTF8_ROWS))),
                      "candidate": unchecked_strings([c for c, _ in UTF8_ROWS]),
                      "references": pa.ListArray.from_arrays(offsets, unchecked_strings(refs))})
    pq.write_table(table, path)
    return str(path)


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


def test_invalid_utf8_reason_for_whole_arrays():
    from bleu_spark.rows import rejection_reasons

    refs = [r for _, rs in UTF8_ROWS for r in rs]
    offsets = pa.array(np.cumsum([0] + [len(rs) for _, rs in UTF8_ROWS]).astype(np.int32))
    reasons = rejection_reasons(unchecked_strings([c for c, _ in UTF8_ROWS]),
                                pa.ListArray.from_arrays(offsets, unchecked_strings(refs)))
    assert reasons.to_pylist() == [None, None, "invalid_utf8", None, "invalid_utf8"]


@pytest.mark.spark
@pytest.mark.parametrize("tokenize", ["13a", "intl"])
def test_invalid_utf8_rows_are_quarantined_and_the_rest_scored_as_sacrebleu(spark, tmp_path, tokenize):
    import sacrebleu
    from bleu_spark.spark.job import JobOptions, run_job

    path = utf8_table(tmp_path / "in.parquet")
    result = run_job(spark, JobOptions(input=path, output=str(tmp_path / "out"), on_invalid="quarantine",
                                       tokenize=tokenize))
    assert result.run["rows"]["rejected_by_reason"] == {"invalid_utf8": 2}
    good = [(c.decode(), [r.decode() for r in rs]) for i, (c, rs) in enumerate(UTF8_ROWS) if i not in (2, 4)]
    theirs = sacrebleu.BLEU(tokenize=tokenize).corpus_score(
        [c for c, _ in good], [[rs[0] for _, rs in good], [rs[1] if len(rs) > 1 else None for _, rs in good]])
    [row] = result.scores
    assert row["score"] == theirs.score and row["n_segments"] == 3 and row["n_rejected"] == 2
    rejected = pq.read_table(tmp_path / "out" / "rejected")
    assert rejected["reason"].to_pylist() == ["invalid_utf8"] * 2
    assert sorted(rejected["seg_id"].to_pylist()) == [2, 4]


@pytest.mark.e2e
def test_invalid_utf8_with_fail_is_exit_7_one_line(tmp_path):
    path = utf8_table(tmp_path / "in.parquet")
    result = run_cli("--input", path, "--output", str(tmp_path / "out"), "--tokenize", "intl",
                     "--progress-seconds", "0")
    assert result.returncode == 7, result.stderr[-3000:]
    lines = [l for l in result.stderr.splitlines() if l.startswith("bleu-spark:")]
    assert len(lines) == 1 and "2 rows cannot be scored (invalid_utf8: 2)" in lines[0]
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()
    # nothing of Spark's logging around the line: only the JVM's own notice of its modules
    others = [l for l in result.stderr.splitlines() if not l.startswith("bleu-spark:")]
    assert all(l.startswith("WARNING: Using incubator modules") for l in others), others


# --- group keys come out as they went in -----------------------------------------------------

@pytest.mark.e2e
def test_group_keys_keep_value_and_type_whatever_the_time_zone_and_json_stays_json(tmp_path):
    import datetime
    import decimal

    day = datetime.datetime(2024, 1, 1, 23, 0, tzinfo=datetime.timezone.utc)
    schema = pa.schema([("system", pa.string()), ("day", pa.timestamp("us", tz="UTC")),
                        ("price", pa.decimal128(10, 2)), ("rating", pa.float64()),
                        ("candidate", pa.string()), ("references", pa.list_(pa.string()))])
    rows = [{"system": "A", "day": day, "price": decimal.Decimal("12.50"),
             "rating": float("nan") if i < 2 else 1.0, "candidate": None if i == 1 else "the cat sat",
             "references": ["the cat sat on"]} for i in range(4)]
    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    out = tmp_path / "out"
    result = run_cli("--input", str(path), "--output", str(out), "--group-by", "system,day,price,rating",
                     "--on-invalid", "quarantine", "--progress-seconds", "0", env={"TZ": "Asia/Kolkata"})
    assert result.returncode == 0, result.stderr[-3000:]
    scores = pq.read_table(out / "scores")
    assert scores.schema.field("day").type == pa.timestamp("us", tz="UTC")
    assert scores.schema.field("price").type == pa.decimal128(10, 2)
    assert scores["day"].cast(pa.int64()).to_pylist() == [int(day.timestamp() * 1e6)] * 2
    assert scores["price"].to_pylist() == [decimal.Decimal("12.50")] * 2

    def no_constants(name):
        raise AssertionError(f"scores.json holds a bare {name}")
    rows = json.loads((out / "scores.json").read_text(), parse_constant=no_constants)
    by_rating = {r["rating"]: r for r in rows}
    assert set(by_rating) == {1.0, "NaN"}  # one NaN group, written as a string
    assert (by_rating["NaN"]["n_segments"], by_rating["NaN"]["n_rejected"]) == (1, 1)
    assert by_rating["NaN"]["day"] == "2024-01-01 23:00:00+00:00"


# --- default grouping and case ------------------------------------------------------------------

def test_a_System_column_with_the_default_grouping_is_refused_with_the_right_name(tmp_path, capsys):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"System": ["A", "B"], "langpair": ["de-en"] * 2, "candidate": ["a b", "c"],
                             "references": [["a b"], ["c"]]}), path)
    code = main(["score", "--input", str(path), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 4 and err.count("\n") == 1
    assert "input has no column system (the default grouping) but has System" in err
    assert "--group-by System,langpair" in err
    assert not (tmp_path / "out").exists()


# --- SentencePiece model files ----------------------------------------------------------------------

@pytest.mark.parametrize("content", [b"not a model\n", bytes(range(256)) * 8])
def test_a_file_that_is_not_a_sentencepiece_model_is_exit_6_before_spark(tmp_path, capsys, content):
    model = tmp_path / "model.spm"
    model.write_bytes(content)
    code = main(["score", "--input", "in.parquet", "--output", str(tmp_path / "out"),
                 "--tokenize", "flores200", "--spm-model", str(model)])
    err = capsys.readouterr().err
    assert code == 6 and err.count("\n") == 1
    assert f"cannot load SentencePiece model {model}" in err and "Traceback" not in err


def test_a_real_sentencepiece_model_still_loads(spm_model):
    from bleu_spark.metrics.bleu import BleuConfig

    assert BleuConfig(tokenize="flores200", spm_model=spm_model).spm_model == spm_model


# --- rejected rows keep the input's columns; unused columns of odd types ----------------------

EXTRA_TYPES = {"u64": pa.uint64(), "u32": pa.uint32(), "tns": pa.timestamp("ns")}


def table_with_extras(rows):
    table = pa.Table.from_pylist(rows)
    for name, kind in EXTRA_TYPES.items():
        table = table.append_column(name, pa.array(list(range(len(rows))), pa.int64()).cast(kind))
    return table


@pytest.mark.spark
@pytest.mark.parametrize("shape", ["inline", "wide", "joined"])
def test_rejected_rows_keep_every_input_column_as_it_was(spark, tmp_path, shape):
    from bleu_spark.spark.job import JobOptions, run_job

    base = [{"system": "A", "langpair": "de-en", "testset": "t", "seg_id": i, "source": f"src {i}",
             "candidate": None if i == 1 else "the cat sat"} for i in range(4)]
    refs = [["the cat sat"], ["the cat"], [None], ["a cat sat"]]  # rows 1 and 2 are rejected
    options = {}
    if shape == "inline":
        rows = [dict(r, references=ref) for r, ref in zip(base, refs)]
    elif shape == "wide":
        rows = [dict(r, ref_a=ref[0], ref_b="a cat" if i == 0 else None)
                for i, (r, ref) in enumerate(zip(base, refs))]
        options = dict(references_cols=("ref_a", "ref_b"))
    else:
        rows = base
        ref_path = tmp_path / "refs.parquet"
        pq.write_table(pa.Table.from_pylist([{"testset": "t", "langpair": "de-en", "seg_id": i,
                                              "references": ref} for i, ref in enumerate(refs)]), ref_path)
        options = dict(references=str(ref_path), join_on=("testset", "langpair", "seg_id"))
    table = table_with_extras(rows)
    path = tmp_path / "in.parquet"
    pq.write_table(table, path)
    result = run_job(spark, JobOptions(input=str(path), output=str(tmp_path / "out"),
                                       on_invalid="quarantine", **options))
    assert result.run["rows"]["rejected_by_reason"] == {"null_candidate": 1, "no_reference": 1}
    rejected = pq.read_table(tmp_path / "out" / "rejected")
    readable = [c for c in table.column_names if c != "tns"]  # Spark cannot read ns timestamps
    assert rejected.column_names == [*readable, "reason"]
    got = sorted(rejected.to_pylist(), key=lambda r: r["seg_id"])
    want = [dict({c: r[c] for c in readable}, reason=reason)
            for r, reason in zip(table.to_pylist()[1:3], ["null_candidate", "no_reference"])]
    for row in got + want:
        row["u64"], row["u32"] = int(row["u64"]), int(row["u32"])  # as Spark reads unsigned
    assert got == want


@pytest.mark.e2e
def test_unused_columns_of_types_spark_arrow_lacks_do_not_fail_the_job(tmp_path):
    rows = [{"system": "A", "langpair": "de-en", "candidate": "the cat sat on the mat", "references": ["the cat sat on the mat"]}]
    path = tmp_path / "in.parquet"
    pq.write_table(table_with_extras(rows), path)
    result = run_cli("--input", str(path), "--output", str(tmp_path / "out"), "--progress-seconds", "0")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "out" / "scores.json").read_text())[0]["score"] == pytest.approx(100.0)
    # ... and a needed column of such a type is one line, exit 5
    result = run_cli("--input", str(path), "--output", str(tmp_path / "out2"), "--group-by", "system,tns")
    assert result.returncode == 5 and "input column tns is timestamp[ns], expected an atomic type" in result.stderr
    assert "Traceback" not in result.stderr


# --- interrupted runs and leftovers ------------------------------------------------------------

import glob
import signal
import time

from conftest import SAMPLE, console_session


def _start_and_signal(tmp_path, signum, to_group):
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "bleu_spark", "score", "--input", SAMPLE,
                                "--output", str(out), "--progress-seconds", "0"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    pending = str(out / "_commits" / "p-*.json")
    # Inside the Spark pass; through Connect (the Python workers are the server's), once the
    # run's pending record is written.
    started = ((lambda: glob.glob(pending)) if "SPARK_REMOTE" in os.environ
               else (lambda: _workers_in_a_task(process.pid)))
    deadline = time.time() + 120
    while not started() and time.time() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    assert glob.glob(pending) and process.poll() is None
    if to_group:  # as Ctrl-C in a terminal: the whole foreground group, JVM and workers too
        os.killpg(process.pid, signum)
    else:         # as a scheduler stopping the task
        process.send_signal(signum)
    _, stderr = process.communicate(timeout=120)
    return process.returncode, stderr


@pytest.mark.e2e
@pytest.mark.parametrize("signum,code,to_group", [(signal.SIGTERM, 143, False),
                                                  (signal.SIGINT, 130, True)])
def test_a_stop_signal_removes_the_runs_files_and_exits_with_its_code(tmp_path, signum, code, to_group):
    returncode, stderr = _start_and_signal(tmp_path, signum, to_group)
    assert returncode == code, stderr[-3000:]
    ours = [l for l in stderr.splitlines() if l.startswith("bleu-spark:")]
    assert ours == [f"bleu-spark: error: interrupted by {signal.Signals(signum).name} (exit code {code}); "
                    f"the run's files are removed"]
    assert "Traceback" not in stderr and "\tat org.apache" not in stderr, stderr[-3000:]
    assert os.listdir(tmp_path) == []


def test_a_stop_signal_after_the_output_is_written_says_so(monkeypatch, capsys):
    from bleu_spark import cli

    monkeypatch.setattr(cli, "_received", [])
    monkeypatch.setattr(cli, "_written", [])

    def scored_then_stopped(args):  # the output committed, then Ctrl-C while Spark stops
        cli._written.append(args.output)
        cli._on_stop_signal(signal.SIGINT, None)

    monkeypatch.setattr(cli, "run_score", scored_then_stopped)
    assert cli.main(["score", "--input", "in", "--output", "out/x"]) == 130
    assert capsys.readouterr().err == ("bleu-spark: error: interrupted by SIGINT (exit code 130); "
                                       "out/x was written in full before it came\n")


def _output(tmp_path, partition_by=(), run_id=None):
    from bleu_spark import store

    return store.open_output(str(tmp_path / "out"), partition_by, run_id)


@pytest.mark.parametrize("partition_by", [(), ("run_date",)])
def test_files_of_runs_that_are_gone_are_removed_live_ones_kept(tmp_path, partition_by):
    """A run's pending record says who writes (host, process, start): the next run removes the
    files of runs that are gone (their process on this host ended, or a day old), never a live
    run's."""
    import socket

    import pyarrow as pa

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    here = socket.gethostname()
    owners = {"gone": {"host": here, "pid": dead.pid, "started": time.time()},
              "old": {"host": "elsewhere", "pid": 1, "started": time.time() - 2 * 86400},
              "live": {"host": here, "pid": os.getpid(), "started": time.time()},
              "remote": {"host": "elsewhere", "pid": dead.pid, "started": time.time()}}
    table = pa.table({"run_date": ["2026-01-01"], "value": [1]})
    for run, owner in owners.items():
        out = _output(tmp_path, partition_by, run)
        out.write_table("stats", table if partition_by else table.drop_columns(["run_date"]))
        with open(tmp_path / "out" / "_commits" / f"p-{run}.json", "w") as handle:
            json.dump(owner, handle)
    second = _output(tmp_path, partition_by)  # opening an output cleans up after dead runs
    files = {f for _, _, names in os.walk(tmp_path / "out" / "stats") for f in names}
    assert {f.split("-")[1] for f in files} == {"live", "remote"}
    assert sorted(os.listdir(tmp_path / "out" / "_commits")) == \
        sorted(["p-live.json", "p-remote.json", f"p-{second.run_id}.json"])
    second.abort()


@pytest.mark.spark
def test_a_result_holds_no_pending_record(spark, tmp_path):
    from bleu_spark.spark.job import JobOptions, run_job

    run_job(spark, JobOptions(input=SAMPLE, output=str(tmp_path / "out"), progress_seconds=0))
    assert all(p.startswith("c-") for p in os.listdir(tmp_path / "out" / "_commits"))
    assert os.listdir(tmp_path) == ["out"]


# --- how the input is named: Hive layouts, globs, Spark-written folders ---------------------------

def write_hive(root):
    for langpair in ("de-en", "en-zh"):
        folder = root / f"langpair={langpair}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"system": ["A", "B"], "candidate": ["猫 犬 东京 北京", "the cat sat on the mat"],
                                 "references": [["猫 犬 东京 北京"], ["the cat sat on a mat"]]}),
                       folder / "part-0.parquet")


def test_hive_base_of_paths():
    from bleu_spark.spark.io import hive_base

    assert hive_base("in/langpair=*/*.parquet") == "in"
    assert hive_base("/d/in/year=2024/month=*/part-0.parquet") == "/d/in"
    assert hive_base("in/langpair=de-en") == "in" and hive_base("in/langpair=de-en/") == "in"
    assert hive_base("in/*.parquet") is None and hive_base("/data/run=1/exp/in.parquet") is None
    with pytest.raises(Exception, match="below a glob"):
        hive_base("in/*/langpair=*/x.parquet")


@pytest.mark.spark
@pytest.mark.parametrize("name", ["in/langpair=*/*.parquet", "in/langpair=*", "in", "in/langpair=en-zh/part-0.parquet"])
def test_hive_partition_columns_are_kept_however_the_input_is_named(spark, tmp_path, name):
    import sacrebleu

    write_hive(tmp_path / "in")
    score_in_process(spark, "--input", str(tmp_path / name), "--output", str(tmp_path / "out"), "--progress-seconds", "0")
    rows = {(r["system"], r["langpair"]): r for r in json.loads((tmp_path / "out" / "scores.json").read_text())}
    expected = {"en-zh"} if "en-zh" in name else {"de-en", "en-zh"}
    assert {lp for _, lp in rows} == expected
    zh = rows["A", "en-zh"]
    assert zh["tokenize"] == "zh"
    assert zh["score"] == sacrebleu.BLEU(tokenize="zh").corpus_score(["猫 犬 东京 北京"], [["猫 犬 东京 北京"]]).score


@pytest.mark.spark
@pytest.mark.parametrize("pattern", ["in/*", "in/*/*"])
def test_globs_over_folders_and_spark_written_files_are_read(spark, tmp_path, pattern):
    for name in ("a", "b"):  # as Spark writes a folder: part files, _SUCCESS and checksums
        folder = tmp_path / "in" / name
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"system": [name], "langpair": ["de-en"], "candidate": ["the cat sat on the mat"],
                                 "references": [["the cat sat on the mat"]]}), folder / "part-00000.parquet")
        (folder / "_SUCCESS").write_bytes(b"")
        (folder / "._SUCCESS.crc").write_bytes(b"crc\x00\x00\x02\x00")
    (tmp_path / "in" / "_SUCCESS").write_bytes(b"")
    score_in_process(spark, "--input", str(tmp_path / pattern), "--output", str(tmp_path / "out"), "--progress-seconds", "0")
    assert sorted(r["system"] for r in json.loads((tmp_path / "out" / "scores.json").read_text())) == ["a", "b"]


@pytest.mark.parametrize("input_name,output_name", [("in", "in/out"), ("in/*", "in/out"), ("in", "in"),
                                                    ("in/*/", "in/x/y")])
def test_an_output_the_input_would_read_is_refused(tmp_path, capsys, input_name, output_name):
    write_hive(tmp_path / "in")
    code = main(["score", "--input", str(tmp_path / input_name), "--output", str(tmp_path / output_name)])
    err = capsys.readouterr().err
    assert code == 8 and err.count("\n") == 1 and "would be read as input by the next run" in err
    assert not (tmp_path / "in" / "out").exists()


def test_an_output_beside_the_input_glob_is_fine():
    from bleu_spark.spark.io import check_output_outside_input

    check_output_outside_input("in/*.parquet", "in/out")
    check_output_outside_input("in", "in2/out")
    check_output_outside_input("in/a.parquet", "in/out")


# --- a path that exists is that path, whatever its name holds ---------------------------------------

def write_named(root):
    """Files whose names hold glob characters, beside the files their names match as patterns."""
    def one(name, system):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"system": [system], "langpair": ["de-en"], "candidate": ["the cat sat on the mat"],
                                 "references": [["the cat sat on a mat"]]}), path)

    one("a[1].parquet", "bracket")
    one("a1.parquet", "a1")
    one("b{x}.parquet", "brace")
    one("bx.parquet", "bx")
    one("d[1]/langpair=de-en/part-0.parquet", "hive")


def test_local_files_take_a_name_that_exists_as_itself(tmp_path):
    from bleu_spark.spark.io import check_output_outside_input, hive_base, local_files

    write_named(tmp_path)
    assert local_files(str(tmp_path / "a[1].parquet")) == [str(tmp_path / "a[1].parquet")]
    assert local_files("file://" + str(tmp_path / "b{x}.parquet")) == [str(tmp_path / "b{x}.parquet")]
    assert local_files(str(tmp_path / "a[1]*.parquet")) == [str(tmp_path / "a1.parquet")]  # no such file: a glob
    assert hive_base(str(tmp_path / "d[1]/langpair=de-en")) == str(tmp_path / "d[1]")
    with pytest.raises(OutputError, match="lies inside the input"):
        check_output_outside_input(str(tmp_path / "d[1]"), str(tmp_path / "d[1]/out"))
    check_output_outside_input(str(tmp_path / "d[1]"), str(tmp_path / "d1"))


@pytest.mark.spark
@pytest.mark.parametrize("scan", ["auto", "spark"])  # read by the Python workers, or by Spark
@pytest.mark.parametrize("name,systems", [("a[1].parquet", ["bracket"]), ("b{x}.parquet", ["brace"]),
                                          ("a[1]*.parquet", ["a1"]), ("d[1]/langpair=de-en", ["hive"])])
def test_a_path_with_glob_characters_that_exists_is_read_as_itself(spark, tmp_path, scan, name, systems):
    from bleu_spark.spark.job import JobOptions, run_job

    write_named(tmp_path / "in")
    result = run_job(console_session(spark), JobOptions(input=str(tmp_path / "in" / name), scan=scan, progress_seconds=0))
    assert [(r["system"], r["langpair"]) for r in result.scores] == [(s, "de-en") for s in systems]
    assert result.run["layout"]["scan"] == ("arrow" if scan == "auto" else "spark")


# --- folders whose files disagree or are damaged ---------------------------------------------------

def _part(folder, name, candidate=("the cat sat on the mat",)):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    pq.write_table(pa.table({"system": ["A"] * len(candidate), "langpair": ["de-en"] * len(candidate),
                             "candidate": list(candidate),
                             "references": [["the cat sat on the mat"]] * len(candidate)}), path)
    return path


def test_files_that_disagree_on_a_column_type_are_exit_5_naming_both(tmp_path, capsys):
    _part(tmp_path / "in", "a.parquet")
    pq.write_table(pa.table({"system": ["B"], "langpair": ["de-en"], "candidate": [7],
                             "references": [["x"]]}), tmp_path / "in" / "b.parquet")
    code = main(["score", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 5 and err.count("\n") == 1
    assert f"candidate is string in {tmp_path / 'in' / 'a.parquet'} but int64 in {tmp_path / 'in' / 'b.parquet'}" in err


def test_a_truncated_file_is_exit_3_naming_it(tmp_path, capsys):
    _part(tmp_path / "in", "a.parquet")
    b = _part(tmp_path / "in", "b.parquet")
    b.write_bytes(b.read_bytes()[:-100])
    code = main(["score", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1 and f"input file {b} is not readable Parquet" in err


@pytest.mark.e2e
@pytest.mark.parametrize("scan", ["auto", "spark"])  # read by the Python workers, or by Spark
def test_a_file_with_a_valid_footer_and_garbage_pages_is_exit_3_one_line(tmp_path, scan):
    path = _part(tmp_path / "in", "a.parquet", [f"the cat sat {i}" for i in range(200)])
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    for i in range(8, len(data) - 16 - footer):
        data[i] = (data[i] * 7 + 13) % 256
    path.write_bytes(bytes(data))
    result = run_cli("--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--progress-seconds", "0",
                     "--scan", scan)
    assert result.returncode == 3, result.stderr[-3000:]
    ours = [l for l in result.stderr.splitlines() if l.startswith("bleu-spark:")]
    assert len(ours) == 1 and f"file file://{path} cannot be read" in ours[0]
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


# --- file systems this Spark lacks -----------------------------------------------------------------

@pytest.mark.e2e
def test_an_input_on_a_file_system_spark_lacks_is_exit_3_one_line(tmp_path):
    result = run_cli("--input", "s3a://no-such-bucket/in.parquet", "--output", str(tmp_path / "out"),
                     "--progress-seconds", "0")
    assert result.returncode == 3, result.stderr[-3000:]
    ours = [l for l in result.stderr.splitlines() if l.startswith("bleu-spark:")]
    assert len(ours) == 1 and "this Spark has no file system for s3a://" in ours[0]
    assert "org.apache.hadoop.fs.s3a.S3AFileSystem not found" in ours[0] and "Traceback" not in result.stderr


def test_an_output_on_a_file_system_pyarrow_lacks_is_exit_8(tmp_path, capsys):
    path = _part(tmp_path / "in", "a.parquet")
    code = main(["score", "--input", str(path), "--output", "ftp://example.invalid/out"])
    err = capsys.readouterr().err
    assert code == 8 and err.count("\n") == 1 and "output ftp://example.invalid/out: no file system" in err
    # s3a is S3, as Spark spells it: a bucket it cannot reach is one line too
    code = main(["score", "--input", str(path), "--output", "s3a://no-such-bucket/out"])
    err = capsys.readouterr().err
    assert code == 8 and err.count("\n") == 1 and "cannot reach output s3a://no-such-bucket/out" in err


def test_s3a_and_s3n_are_s3_with_the_runs_spark_s3a_settings_over_the_aws_variables(monkeypatch):
    import pyarrow.fs as pafs

    from bleu_spark.store import filesystems

    monkeypatch.setenv("AWS_REGION", "us-east-2")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://elsewhere.example")
    given = filesystems.s3a_settings({
        "spark.hadoop.fs.s3a.endpoint": "http://minio.local:9000",
        "spark.hadoop.fs.s3a.path.style.access": "false", "spark.hadoop.fs.s3a.access.key": "key",
        "spark.hadoop.fs.s3a.secret.key": "secret", "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
        "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem", "spark.master": "local"})
    assert filesystems.s3_options(given) == {
        "region": "eu-west-1", "endpoint_override": "minio.local:9000", "scheme": "http",
        "access_key": "key", "secret_key": "secret", "force_virtual_addressing": True}
    assert filesystems.s3_options({}) == {"region": "us-east-2", "endpoint_override": "elsewhere.example",
                                          "scheme": "https"}
    for uri in ("s3://bucket/out", "s3a://bucket/out", "s3n://bucket/out/"):
        fs, path = filesystems.filesystem(uri, given)
        assert isinstance(fs, pafs.S3FileSystem) and path == "bucket/out"


# --- a Python worker lost mid-stage ---------------------------------------------------------------

def _parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _descendants(pid):
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        children.setdefault(_parent(int(entry)), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _workers_in_a_task(pid):
    """The Python workers forked by a daemon the job's JVM started: running a task."""
    workers = [p for p in _descendants(pid) if "pyspark.daemon" in _cmdline(p) or "pyspark.worker" in _cmdline(p)]
    return [p for p in workers if _parent(p) in workers]


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _score_killing_a_worker(out):
    """The job on the sample, its first Python worker seen killed: (killed, exit code, stderr)."""
    process = subprocess.Popen([sys.executable, "-m", "bleu_spark", "score", "--input", SAMPLE,
                                "--output", str(out), "--progress-seconds", "0"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed, deadline = [], time.time() + 120
    while not killed and time.time() < deadline and process.poll() is None:
        for pid in _workers_in_a_task(process.pid):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    _, stderr = process.communicate(timeout=300)
    return killed, process.returncode, stderr


@pytest.mark.e2e
@pytest.mark.classic  # kills a Python worker under this process
def test_a_python_worker_killed_mid_stage_is_one_line_and_keeps_the_earlier_result(tmp_path):
    out = tmp_path / "out"
    first = run_cli("--input", SAMPLE, "--output", str(out), "--group-by", "langpair", "--progress-seconds", "0")
    assert first.returncode == 0, first.stderr[-3000:]
    before = (out / "scores.json").read_text()
    # A reused worker lives on between tasks: a kill that lands there fails nothing, and the run
    # (which replaced the output) is tried again with the earlier result back in place.
    for _ in range(3):
        killed, code, stderr = _score_killing_a_worker(out)
        assert killed, "no worker was seen running"
        if code != 0:
            break
        assert run_cli("--input", SAMPLE, "--output", str(out), "--group-by", "langpair",
                       "--progress-seconds", "0").returncode == 0
    assert code == 12, stderr[-3000:]
    ours = [l for l in stderr.splitlines() if l.startswith("bleu-spark:")]
    # killed in a task, or (when the kill lands as the daemon forks it) before taking one
    assert len(ours) == 1 and "the Spark job failed" in ours[0] and (
        "Python worker exited unexpectedly" in ours[0] or "a Python worker failed to start" in ours[0])
    assert "Traceback" not in stderr
    assert (out / "scores.json").read_text() == before


def test_a_worker_killed_before_it_took_its_task_is_a_lost_worker():
    from bleu_spark.spark.failures import lost_worker_failure

    trace = ("An error occurred while calling o123.toArrow.\n: org.apache.spark.SparkException: Job "
             "aborted due to stage failure: Task 0 in stage 9.0 failed 1 times, most recent failure: "
             "Lost task 0.0 in stage 9.0 (TID 8) (127.0.0.1 executor driver): java.io.EOFException\n"
             "\tat java.base/java.io.DataInputStream.readInt(DataInputStream.java:386)\n"
             "\tat org.apache.spark.api.python.PythonWorkerFactory.createWorker$1(PythonWorkerFactory.scala:220)\n")
    assert str(lost_worker_failure(RuntimeError(trace))) == (
        "the Spark job failed: Task 0 in stage 9.0 failed 1 times, last because: a Python worker "
        "failed to start (java.io.EOFException) (retries are the platform's spark.task.maxFailures); "
        "nothing was written")
    assert lost_worker_failure(RuntimeError(trace.replace("PythonWorkerFactory", "ArrowWriter"))) is None


def test_memory_that_ran_out_is_one_line_naming_where_and_the_setting_to_raise():
    from bleu_spark.spark.failures import memory_failure

    driver = "An error occurred while calling o88.toArrow.\n: java.lang.OutOfMemoryError: Java heap space\n\tat ..."
    executor = ("Job aborted due to stage failure: Task 3 in stage 2.0 failed 4 times, most recent failure: "
                "Lost task 3.3 in stage 2.0 (TID 9): java.lang.OutOfMemoryError: Java heap space")
    assert str(memory_failure(RuntimeError(driver))).startswith(
        "the Spark driver ran out of memory; raise spark.driver.memory (spark-submit --driver-memory)")
    assert str(memory_failure(RuntimeError(executor))).startswith(
        "the Spark executor ran out of memory; raise spark.executor.memory")
    assert "the Spark driver ran out of memory" in str(memory_failure(MemoryError()))
    assert memory_failure(RuntimeError("Job aborted due to stage failure: a bug")) is None


# --- output field names never collide with the input's columns ---------------------------------------

@pytest.mark.parametrize("columns,args,message", [
    (["score"], ["--group-by", "system,score"], "group column score has the name of an output field"),
    (["tokenize"], ["--group-by", "system,tokenize"], "group column tokenize has the name of an output field"),
    (["reason"], ["--on-invalid", "quarantine"], "input has a column named reason"),
])
def test_input_columns_named_like_output_fields_are_refused(tmp_path, capsys, columns, args, message):
    table = pa.table({"system": ["A"], "langpair": ["de-en"], "candidate": ["a b"], "references": [["a b"]],
                      **{c: ["x"] for c in columns}})
    pq.write_table(table, tmp_path / "in.parquet")
    code = main(["score", "--input", str(tmp_path / "in.parquet"), "--output", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err


@pytest.mark.spark
def test_group_by_system_on_one_language_pair_and_a_repeated_group_column_are_scored(spark, tmp_path):
    import sacrebleu

    rows = [{"system": s, "langpair": "en-zh", "candidate": c, "references": [r]}
            for s in ("A", "B") for c, r in [("猫 犬 东京 北京", "猫 犬 东京 北京"), ("我们 在 这里", "我们 在 那里")]]
    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    for name, group_by in [("one", "system"), ("twice", "system,system,langpair")]:
        score_in_process(spark, "--input", str(path), "--output", str(tmp_path / name), "--group-by", group_by,
                         "--progress-seconds", "0")
        scores = json.loads((tmp_path / name / "scores.json").read_text())
        expected = sacrebleu.BLEU(tokenize="zh").corpus_score([r["candidate"] for r in rows[:2]],
                                                              [[r["references"][0] for r in rows[:2]]])
        assert [r["system"] for r in scores] == ["A", "B"]
        assert all(r["tokenize"] == "zh" and r["score"] == expected.score for r in scores)


# --- a paired test against a system that is not there ---------------------------------------------

def test_a_missing_baseline_is_named_with_a_few_systems_that_exist():
    from bleu_spark.resampling import Resampling
    from bleu_spark.errors import BaselineNotFoundError

    resampling = Resampling(paired_bs=True, baseline="sysZ")
    resampling.check_baseline({"sysZ", "A"})
    with pytest.raises(BaselineNotFoundError, match=r"^--baseline 'sysZ' is in no comparison group; "
                                                    r"systems scored: s0, s1, s2, s3, s4, \.\.\. \(7 in all\)$"):
        resampling.check_baseline({f"s{i}" for i in range(7)})
    assert BaselineNotFoundError.exit_code == 14


@pytest.mark.spark
def test_a_baseline_in_no_comparison_group_is_exit_14_and_nothing_is_written(spark, tmp_path, capsys):
    from bleu_spark.errors import BaselineNotFoundError

    pairs = [("the cat sat", "the cat sat down"), ("a dog ran off", "a dog ran")]
    rows = [{"system": s, "langpair": lp, "candidate": c, "references": [r]}
            for lp, systems in (("de-en", "AB"), ("en-de", "AC")) for s in systems for c, r in pairs]
    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    common = ["--input", str(path), "--progress-seconds", "0", "--paired-bs", "--n-bootstrap", "50"]
    with pytest.raises(BaselineNotFoundError, match="'sysZ' is in no comparison group; systems scored: A, B, C$"):
        score_in_process(spark, *common, "--baseline", "sysZ", "--output", str(tmp_path / "none"))
    assert not (tmp_path / "none").exists()
    # B is in de-en only: de-en is tested, en-de has a warning, as before.
    result = score_in_process(spark, *common, "--baseline", "B", "--output", str(tmp_path / "out"))
    assert [(r["langpair"], r["system"]) for r in result.paired] == [("de-en", "A")]
    assert result.run["warnings"] == ["no baseline 'B' in langpair=en-de: no paired tests there"]

    aggregate = ["aggregate", "--stats", str(tmp_path / "out"), "--paired-bs", "--output", str(tmp_path / "agg")]
    assert main([*aggregate, "--baseline", "nobody"]) == 14
    assert capsys.readouterr().err == ("bleu-spark: error: --baseline 'nobody' is in no comparison group; "
                                       "systems scored: A, B, C\n")
    assert not (tmp_path / "agg").exists()
    assert main([*aggregate, "--baseline", "B"]) == 0
    assert capsys.readouterr().err == "bleu-spark: warning: no baseline 'B' in langpair=en-de: no paired tests there\n"


# --- a job-file key given twice --------------------------------------------------------------

@pytest.mark.parametrize("lines,named", [
    ("lowercase: true\nlowercase: false\n", "key lowercase given more than once"),
    ("group-by: system\ngroup_by: langpair\n", "sets group_by more than once"),
    ("metrics: bleu\nreport: true\nmetrics: ter\n", "key metrics given more than once"),
])
def test_a_job_file_key_given_twice_is_exit_9_not_the_last_one_silently(tmp_path, capsys, lines, named):
    job = tmp_path / "job.yaml"
    job.write_text(f"input: in.parquet\noutput: {tmp_path / 'out'}\n{lines}")
    assert main(["score", "--config", str(job)]) == ConfigFileError.exit_code == 9
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and named in err and not (tmp_path / "out").exists()


def test_a_job_file_with_a_yaml_merge_key_loads_and_its_own_keys_win(tmp_path):
    """`<<: *defaults` is YAML's way to share settings between job files: the merged keys load,
    and a key the mapping writes itself overrides them (not "given twice")."""
    from bleu_spark.cli import load_job_file

    job = tmp_path / "job.yaml"
    job.write_text("<<: {lowercase: true, metrics: bleu}\nlowercase: false\n")
    assert load_job_file(str(job)) == {"lowercase": False, "metrics": "bleu"}
