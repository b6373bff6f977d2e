"""Hostile inputs and interrupted runs (issue 12): one clear line every time, no lost files, no
wrong score."""
import pytest

from bleu_spark import cli
from bleu_spark.cli import build_parser, effective_settings, job_options, main
from bleu_spark.errors import ConfigFileError


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


def test_job_file_booleans_and_nulls_are_taken_as_meant(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("input: in.parquet\noutput: out\nlowercase: false\neffective_order: yes\n"
                   "max_ngram_order: null\nsmooth_value: null\nweights: '0.25,0.25,0.25,0.25'\n"
                   "group_by: []\nprogress_seconds: 5\n")
    options = job_options(effective_settings(build_parser().parse_args(["score", "--config", str(job)])))
    assert options.config.lowercase is False and options.config.effective_order is True
    assert options.config.max_ngram_order == 4 and options.group_by == ()
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
    assert f"max n-gram order must be an integer from 1 to 10, got {order}" in err


def test_max_ngram_order_10_is_sacrebleus_score():
    import sacrebleu
    from bleu_spark import corpus_bleu

    cands = ["a b c d e f g h i j k l", "a b c d e f g h i j k m n"]
    refs = [["a b c d e f g h i j k l"], ["a b c d e f g h i j k m x"]]
    ours = corpus_bleu(cands, refs, max_ngram_order=10, tokenize="13a")
    theirs = sacrebleu.BLEU(max_ngram_order=10).corpus_score(cands, [[r[0] for r in refs]])
    assert ours.score == theirs.score and ours.counts == theirs.counts


def test_effective_order_with_all_weight_on_absent_orders_scores_0():
    from bleu_spark import corpus_bleu

    short = dict(candidates=["a b", "c d"], references=[["a b"], ["c d"]])
    weighted = corpus_bleu(**short, effective_order=True, weights=(0, 0, 0, 1))
    assert weighted.score == 0.0 and weighted.totals == [4, 2, 0, 0]
    # ... which is what the same weights give without effective order
    assert corpus_bleu(**short, weights=(0, 0, 0, 1)).score == weighted.score


def test_effective_order_with_weights_on_present_orders_equals_sacrebleu():
    import sacrebleu
    from bleu_spark import corpus_bleu

    cands, refs = ["a b", "c e"], ["a b", "c d"]
    ours = corpus_bleu(cands, [[r] for r in refs], effective_order=True, weights=(0.5, 0.5, 0, 0))
    theirs = sacrebleu.BLEU(max_ngram_order=2, effective_order=True).corpus_score(cands, [refs])
    assert ours.score == pytest.approx(theirs.score, rel=1e-12) and ours.score > 0
