"""Options that change no score are said in one line each, from the declarations: a metric
option without its metric, and one its metric reads only with another option's value."""
import pytest

from bleu_spark import cli, declaration, settings
from test_coverage import ALL, save, segment_rows


def other_value(option):
    """A value of `option` other than its default, within its bounds."""
    if option.kind == declaration.BOOLEAN:
        return not option.default
    if option.choices or option.key == "smooth_method":
        return "floor"
    if option.kind == declaration.INTEGER:
        return option.default + 1
    if option.kind == declaration.NUMBER:
        return 0.5
    return [0.25, 0.25, 0.25, 0.25]  # weights


METRIC_OPTIONS = [o for o in settings.declared() if o.key in settings.metric_options()]


def test_there_are_options_read_only_with_another():
    assert {o.key for o in METRIC_OPTIONS if o.read_with} >= {"ter_asian_support", "smooth_value"}


@pytest.mark.parametrize("option", METRIC_OPTIONS, ids=lambda o: o.key)
def test_every_metric_option_without_its_metric_is_one_warning(option):
    readers = set(settings.metric_options()[option.key])
    others = [m for m in ("bleu", "chrf", "chrf++", "ter") if m not in readers]
    values = {**settings.defaults(), option.key: other_value(option)}
    said = settings.unused_option_warnings(values, others, "--metrics is x")
    assert said == [f"{option.flag} is set but only {' or '.join(settings.metric_options()[option.key])} "
                    f"read{'s' if len(readers) == 1 else ''} it, and --metrics is x: it changes nothing"]
    if not option.read_with:  # measured, it is read (the others: the next test)
        assert settings.unused_option_warnings(values, sorted(readers), "--metrics is x") == []


@pytest.mark.parametrize("option", [o for o in METRIC_OPTIONS if o.read_with], ids=lambda o: o.key)
def test_an_option_read_only_with_another_is_one_warning_alone_and_none_with_it(option):
    readers = sorted(settings.metric_options()[option.key])
    alone = {**settings.defaults(), option.key: other_value(option)}
    said = settings.unused_option_warnings(alone, readers, "--metrics is x")
    assert len(said) == 1 and said[0].startswith(f"{option.flag} is set but ")
    assert "only with" in said[0] and said[0].endswith("it changes no score")
    for key, wanted in option.read_with:
        for value in wanted:
            assert settings.unused_option_warnings({**alone, key: value}, readers, "x") == []


def score_warnings(*args):
    values = cli.effective_settings(cli.build_parser().parse_args(
        ["score", "--input", "in.parquet", "--output", "out", *args]))
    return settings.metrics_asked_warnings(values)


@pytest.mark.parametrize("args,said", [
    (["--metrics", "ter", "--ter-asian-support"],
     ["--ter-asian-support is set but ter reads it only with --ter-normalized or --ter-no-punct: "
      "it changes no score"]),
    (["--metrics", "ter", "--ter-asian-support", "--ter-no-punct"], []),
    (["--metrics", "ter", "--ter-asian-support", "--ter-normalized"], []),
    (["--ter-asian-support"],
     ["--ter-asian-support is set but only ter reads it, and --metrics is bleu: it changes nothing"]),
    (["--smooth-value", "0.3"],
     ["--smooth-value is set but bleu reads it only with --smooth-method floor or add-k: it "
      "changes no score"]),
    (["--smooth-value", "0.3", "--smooth-method", "add-k"], []),
])
def test_score_says_each_option_that_changes_no_score(args, said):
    assert score_warnings(*args) == said


def test_the_job_file_is_read_the_same(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.yaml").write_text("metrics: ter\nter_asian_support: true\n", encoding="utf-8")
    assert score_warnings("--config", "job.yaml") == [
        "--ter-asian-support is set but ter reads it only with --ter-normalized or --ter-no-punct: "
        "it changes no score"]


@pytest.mark.parametrize("names,args,said", [
    (("bleu",), ["--smooth-value", "0.3"],
     "--smooth-value is set but bleu reads it only with --smooth-method floor or add-k"),
    (("bleu",), ["--smooth-value", "0.3", "--smooth-method", "floor"], None),
    (("chrf",), ["--smooth-method", "floor"],
     "--smooth-method is set but only bleu reads it, and the statistics hold chrf: it changes nothing"),
])
def test_aggregate_says_each_scoring_option_that_changes_no_score(tmp_path, capsys, names, args, said):
    stats = save(tmp_path / "saved", segment_rows("A", ALL, names))
    code = cli.main(["aggregate", "--stats", stats, "--output", str(tmp_path / "out"),
                     "--engine", "local", "--group-by", "system", *args])
    err = capsys.readouterr().err
    assert code == 0, err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert warnings == ([] if said is None else [line for line in warnings if said in line])
    assert len(warnings) == (0 if said is None else 1)
