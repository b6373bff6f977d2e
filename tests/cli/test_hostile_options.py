"""Hostile input, one topic: the job file: values, ranges, names and keys: one line and its exit
code, before any work."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import cli
from bleu_spark.cli import build_parser, effective_settings, job_options, main
from bleu_spark.errors import ConfigFileError
from hostile_common import score_in_process


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
    from bleu_spark.languages import TextSettings

    assert TextSettings(tokenize="flores200", spm_model=spm_model).spm_model == spm_model


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
