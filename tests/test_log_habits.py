"""What real logs and sacrebleu habits send: references held as JSON text, a `reference` column,
metric options given without their metric, `--metrics bleu chrf`. Never a silent wrong number:
refused in one line that says what to write, or scored with a warning recorded in run.json."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sacrebleu.metrics import BLEU

from bleu_spark import cli
from bleu_spark.cli import main
from bleu_spark.errors import InvalidRowsError, MissingColumnError
from bleu_spark.rows import JSON_LIST_REFERENCE, json_lists, rejection_reasons


@pytest.fixture(autouse=True)
def shared_session(monkeypatch):
    """`main` stops the Spark it ran on: here that is the tests' shared session, kept."""
    monkeypatch.setattr(cli, "_stop_spark", lambda spark: None)


# --- references held as JSON text -------------------------------------------------------------

JSON_TEXT = ['["Die Katze sitzt."]', '["a", "b"]', '[]', ' [ "x" ] ', '["a", null]',
             '["Ein \\"Zitat\\" und \\u00fc"]', '[\n  "zwei\\nZeilen"\n]', '["日本語"]', '[null]']
NOT_JSON_LISTS = ["[Applause]", "[1, 2]", '["a", 1]', '{"a": "b"}', '"text"', '["a"', "[",
                  "Die [Katze] sitzt.", "[x] [y]", '["a"] and more', "", "plain text",
                  '[["nested"]]', "[true]"]


def test_json_lists_of_strings_are_told_from_text_in_brackets():
    found = json_lists(pa.array(JSON_TEXT + NOT_JSON_LISTS))
    assert found.tolist() == [True] * len(JSON_TEXT) + [False] * len(NOT_JSON_LISTS)


def test_a_row_with_a_json_list_reference_is_rejected_with_its_reason():
    candidates = pa.array(["a"] * 4)
    references = pa.array([['["a"]'], ["[Applause]"], ["fine", '["b", "c"]'], [b"\xff".decode("latin-1")]])
    reasons = rejection_reasons(candidates, references).to_pylist()
    assert reasons == [JSON_LIST_REFERENCE, None, JSON_LIST_REFERENCE, None]


def json_table(path, n=6):
    references = [f"Die Katze sitzt auf der Matte {i}." for i in range(n)]
    candidates = [f"Die Katze sitzt auf Matte {i}." for i in range(n)]
    pq.write_table(pa.table({"system": ["A"] * n, "langpair": ["en-de"] * n, "candidate": candidates,
                             "reference": [json.dumps([r]) if i % 2 else r
                                           for i, r in enumerate(references)]}), path)
    return candidates, references


@pytest.mark.spark
def test_json_text_references_are_refused_in_one_line_saying_how_to_read_them(spark, tmp_path, capsys):
    json_table(tmp_path / "in.parquet")
    code = main(["score", "--input", str(tmp_path / "in.parquet"), "--output", str(tmp_path / "out"),
                 "--references-col", "reference", "--progress-seconds", "0"])
    err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert code == InvalidRowsError.exit_code == 7
    assert len(err) == 1 and err[0].startswith("bleu-spark: error: 3 rows cannot be scored")
    assert JSON_LIST_REFERENCE in err[0] and "from_json(reference, 'array<string>')" in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.spark
def test_json_text_references_are_never_scored_with_their_brackets(spark, tmp_path):
    candidates, references = json_table(tmp_path / "in.parquet")
    code = main(["score", "--input", str(tmp_path / "in.parquet"), "--output", str(tmp_path / "out"),
                 "--references-col", "reference", "--on-invalid", "quarantine", "--progress-seconds", "0"])
    assert code == 0
    [row] = json.loads((tmp_path / "out" / "scores.json").read_text())
    plain = [i for i in range(len(candidates)) if i % 2 == 0]
    expected = BLEU().corpus_score([candidates[i] for i in plain], [[references[i] for i in plain]])
    assert row["score"] == expected.score and row["n_rejected"] == 3
    rejected = pq.read_table(tmp_path / "out" / "rejected")
    assert set(rejected["reason"].to_pylist()) == {JSON_LIST_REFERENCE}


# --- the log layout: one `reference` string column -------------------------------------------

def test_a_reference_column_under_the_default_name_is_named_in_the_refusal(tmp_path, capsys):
    pq.write_table(pa.table({"system": ["A"], "candidate": ["x"], "reference": ["x"]}), tmp_path / "in.parquet")
    code = main(["score", "--input", str(tmp_path / "in.parquet"), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == MissingColumnError.exit_code == 4 and len(err.strip().splitlines()) == 1
    assert "input has no column references (columns: system, candidate, reference); " \
           "pass --references-col reference" in err


def test_a_candidates_column_named_otherwise_is_named_too(tmp_path, capsys):
    pq.write_table(pa.table({"Candidates": ["x"], "references": [["x"]]}), tmp_path / "in.parquet")
    assert main(["score", "--input", str(tmp_path / "in.parquet"), "--output", str(tmp_path / "out")]) == 4
    assert "pass --candidate-col Candidates" in capsys.readouterr().err


# --- options that change nothing, and sacrebleu's `-m bleu chrf` ---------------------------------

def test_metrics_written_apart_say_what_to_write(capsys):
    assert main(["score", "--input", "x", "--output", "y", "--metrics", "bleu", "chrf"]) == 2
    assert capsys.readouterr().err == ("bleu-spark: error: --metrics takes one comma-separated list, "
                                       "not names apart: write --metrics bleu,chrf\n")
    assert main(["score", "--input", "x", "--output", "y", "--metrics", "bleu", "ter", "--report"]) == 2
    assert "write --metrics bleu,ter" in capsys.readouterr().err
    assert main(["score", "--input", "x", "--output", "y", "--metrics", "bleu", "meteor"]) == 2
    assert capsys.readouterr().err == "bleu-spark: error: unrecognized arguments: meteor\n"


@pytest.mark.parametrize("args,named", [
    (["--metrics", "ter", "--lowercase"], ["--lowercase"]),
    (["--metrics", "ter", "--smooth-method", "floor", "--smooth-value", "0.2"],
     ["--smooth-method", "--smooth-value"]),
    (["--metrics", "chrf", "--weights", "0.5,0.5,0,0", "--effective-order"], ["--weights", "--effective-order"]),
    (["--chrf-beta", "3", "--chrf-lowercase"], ["--chrf-beta", "--chrf-lowercase"]),
    (["--metrics", "bleu,chrf++", "--chrf-word-order", "1"], ["--chrf-word-order"]),
    (["--ter-normalized", "--ter-case-sensitive"], ["--ter-normalized", "--ter-case-sensitive"]),
    (["--metrics", "bleu,chrf,ter", "--chrf-beta", "3", "--ter-no-punct", "--lowercase"], []),
])
def test_options_without_their_metric_are_warned_about(args, named):
    settings = cli.effective_settings(cli.build_parser().parse_args(
        ["score", "--input", "x", "--output", "y", *args]))
    warnings = cli.job_options(settings).warnings
    assert sorted(w.split(" ", 1)[0] for w in warnings) == sorted(named)
    assert all("it changes nothing" in w for w in warnings)


def test_a_job_file_option_without_its_metric_is_warned_about_too(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("input: x\noutput: y\nmetrics: [ter]\nlowercase: true\n")
    settings = cli.effective_settings(cli.build_parser().parse_args(["score", "--config", str(job)]))
    assert [w.split(" ", 1)[0] for w in cli.job_options(settings).warnings] == ["--lowercase"]


@pytest.mark.spark
def test_the_warnings_reach_the_console_and_run_json(spark, tmp_path, capsys):
    pq.write_table(pa.table({"system": ["A"], "candidate": ["a b c"], "references": [["a b c"]]}),
                   tmp_path / "in.parquet")
    assert main(["score", "--input", str(tmp_path / "in.parquet"), "--output", str(tmp_path / "out"),
                 "--metrics", "ter", "--lowercase", "--progress-seconds", "0"]) == 0
    err = capsys.readouterr().err
    assert "bleu-spark: warning: --lowercase is set but only bleu reads it" in err
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert any(w.startswith("--lowercase is set") for w in run["warnings"])
