"""What real logs and sacrebleu habits send: references held as JSON text, a `reference` column,
metric options given without their metric, `--metrics bleu chrf`. Never a silent wrong number:
refused in one line that says what to write, or scored with a warning recorded in run.json."""
import json

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from sacrebleu.metrics import BLEU

from bleu_spark import cli
from bleu_spark.cli import main
from bleu_spark.errors import InvalidRowsError, MissingColumnError
from bleu_spark.rows import (JSON_LIST_REFERENCE, TEXT_LIST_REFERENCE, json_lists, rejection_reasons,
                             text_lists)
from conftest import SAMPLE


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


# --- references held as a list's text other than a JSON list ----------------------------------

def list_texts(refs):
    """A segment's references as the tools logs come from write a list's text."""
    import io

    import numpy as np
    import pandas as pd

    csv = io.StringIO()
    pd.DataFrame({"references": [refs]}).to_csv(csv, index=False)   # a pandas CSV export
    csv.seek(0)
    return [pd.read_csv(csv)["references"][0], str(refs), str(tuple(refs)), str(np.array(refs)),
            repr(np.array(refs, dtype=object)), json.dumps([refs]), json.dumps(json.dumps(refs)),
            json.dumps(str(refs)), "\ufeff" + json.dumps(refs), json.dumps({"references": refs}),
            json.dumps({f"ref{i}": r for i, r in enumerate(refs)})] + [" ||| ".join(refs)] * (len(refs) > 1)


REAL_REFS = [["Die Katze sitzt auf der Matte.", "Eine Katze sitzt auf der Matte."],
             ["[Applaus] Danke, dass Sie gekommen sind.", "'Tis the season, sagte er."],
             ['"Ja", sagte sie, "es ist [nicht] so."', "It's fine."], ["日本語の文です。", "これは\n二行"]]
# real text that begins with a bracket, a brace or a quote, or holds pipes: one reference each
GENUINE = ["[Applause] Thank you.", '"Hi," she said.', "'Tis the season.", "[1, 2]", '"text"',
           "{}", "[x] [y]", '"[Applause]"', "'a' 'b'", '{"a": 1}', "a || b", "x|||y",
           "['a'] and more", "(laughs)", "('Hello.')", "(1, 2)", "'[Laughter]'", '"Der Vertrag", sagte er, "ist [nicht] gültig."',
           "{Musik} und [Lachen]", "[" * 100_000 + "]" * 100_000, '["a", ' + "[" * 100_000 + "]" * 100_000 + "]"]


def test_a_list_held_as_any_text_is_told_from_text_that_starts_like_one():
    spelled = [text for refs in REAL_REFS + [["one reference only"]] for text in list_texts(refs)]
    assert [t for t, f in zip(spelled, text_lists(pa.array(spelled))) if not f] == []
    assert text_lists(pa.array(GENUINE)).tolist() == [False] * len(GENUINE)
    assert not json_lists(pa.array(GENUINE)).any()
    table = pq.read_table(SAMPLE)  # real WMT22 text: not one reference, candidate or source is refused
    for column in (pc.list_flatten(table["references"]), table["candidate"], table["source"]):
        assert not text_lists(column.combine_chunks().drop_null()).any()


def test_a_row_with_a_list_text_reference_is_rejected_with_its_reason_in_process_too():
    from bleu_spark import corpus_score

    references = [[t] for t in list_texts(REAL_REFS[0])] + [[g] for g in GENUINE[:4]]
    reasons = rejection_reasons(pa.array(["a"] * len(references)), pa.array(references)).to_pylist()
    assert reasons == [TEXT_LIST_REFERENCE] * (len(references) - 4) + [None] * 4
    with pytest.raises(InvalidRowsError, match=TEXT_LIST_REFERENCE):
        corpus_score(["a b", "c d"], [["a b", str(["c d", "c e"])]])


@pytest.mark.spark
def test_list_text_references_are_refused_in_one_line_or_quarantined_never_scored(spark, tmp_path, capsys):
    n = len(list_texts(REAL_REFS[0]))
    candidates = [f"Die Katze sitzt auf Matte {i}." for i in range(2 * n)]
    references = [f"Die Katze sitzt auf der Matte {i}." for i in range(2 * n)]
    texts = [list_texts([r, r.replace("Katze", "Katz")]) for r in references[:n]]
    column = [texts[i][i] for i in range(n)] + references[n:]
    pq.write_table(pa.table({"system": ["A"] * 2 * n, "langpair": ["en-de"] * 2 * n,
                             "candidate": candidates, "reference": column}), tmp_path / "in.parquet")
    args = ["score", "--input", str(tmp_path / "in.parquet"), "--references-col", "reference",
            "--progress-seconds", "0"]
    assert main([*args, "--output", str(tmp_path / "refused")]) == InvalidRowsError.exit_code
    err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert len(err) == 1 and err[0].startswith(f"bleu-spark: error: {n} rows cannot be scored")
    assert TEXT_LIST_REFERENCE in err[0] and "ast.literal_eval" in err[0]
    assert main([*args, "--output", str(tmp_path / "out"), "--on-invalid", "quarantine"]) == 0
    [row] = json.loads((tmp_path / "out" / "scores.json").read_text())
    assert row["score"] == BLEU().corpus_score(candidates[n:], [references[n:]]).score
    rejected = pq.read_table(tmp_path / "out" / "rejected")
    assert sorted(rejected["reference"].to_pylist()) == sorted(column[:n])
    assert set(rejected["reason"].to_pylist()) == {TEXT_LIST_REFERENCE}


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
