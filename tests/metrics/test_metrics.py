"""The metric as the unit: every metric of the registry through every output; chrF and chrF++
end to end against sacrebleu 2.6's CHRF on every (language pair, system) group of the sample,
and TER against its TER on a slice of it; each non-default chrF and TER option on every 40th row."""
import json
import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from bleu_spark import cli, metrics, scoring, statstable
from bleu_spark.metrics.bleu import BleuConfig
from bleu_spark.console import format_table
from bleu_spark.aggregate import AggregateOptions, run_aggregate
from bleu_spark.errors import UsageError
from bleu_spark.oracle import reference_streams
from bleu_spark.scoring.tables import SCORE_TYPES, dashboard_table, group_fields, scores_table
from conftest import SAMPLE
from matching import sacrebleu_by_group, sacrebleu_metric

TOLERANCE = 1e-9
ALL = tuple(metrics.REGISTRY)


def default_metric(name):
    return metrics.configured([name], cli.DEFAULTS, BleuConfig())[0]


def statistics_row(metric, **values):
    """A statistics row of `metric` (its measurement columns) as the views read one."""
    return {"metric": metric.name, "tokenizer_signature": "13a", "tokenize": "13a",
            "sacrebleu_version": "2.6.0", "min_refs": 1, "max_refs": 1, "n_segments": 3,
            **metric.measurement(), **values}


# --- the declarations, without a JVM -------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_every_metric_declares_what_the_outputs_need(name):
    metric = default_metric(name)
    assert metric.name == name and metrics.get(name) is type(metric)
    names = metric.names
    assert len(names) == len(set(names)) == metric.width > 0
    for column in names:  # its columns are its own, statistics to every layer, and reserved
        owners = [m for m in metrics.REGISTRY.values() if m.owns_column(column)]
        assert type(metric) in owners and metrics.is_stat_column(column)
        assert metrics.reserved_column(column)
        assert all(issubclass(type(metric), o) or issubclass(o, type(metric)) for o in owners)
    assert metrics.stat_order(list(reversed(names))) == names
    assert set(metric.measurement()) == {statstable.METRIC_OPTIONS}
    again = metrics.of_row(statistics_row(metric), BleuConfig())
    assert type(again) is type(metric) and again.names == names
    assert set(metric.result_fields()) <= set(SCORE_TYPES)
    assert {"score", "n_segments", "signature", "verbose"} <= set(metric.result_fields())


@pytest.mark.parametrize("name", ALL)
def test_every_signature_is_one_type_with_the_shared_fields_around_its_own(name):
    metric = metrics.of_row(statistics_row(default_metric(name), sacrebleu_version="2.5.1"), BleuConfig())
    fields = metric.signature("var").split("|")
    assert fields[0] == "nrefs:var" and fields[-1] == "version:2.5.1"
    assert fields[1:-1] == [f"{k}:{v}" for k, v in metric.signature_fields()]


@pytest.mark.parametrize("name", ALL)
def test_one_formula_scalar_and_vectorized(name):
    """The vectorized score of many rows of sums is the scalar score of each, within 1e-12."""
    metric = default_metric(name)
    rng = np.random.default_rng(3)
    sums = rng.integers(0, 60, size=(400, metric.width))
    sums[::7] = 0  # rows with nothing
    sums[1::9, ::2] = 0
    vectorized = metric.scores(sums)
    scalar = np.array([metric.score(row.tolist()) for row in sums])
    assert np.allclose(vectorized, scalar, rtol=0, atol=1e-12)
    from bleu_spark.resampling import scores_of_sums
    assert np.array_equal(scores_of_sums(sums, metric), vectorized)


@pytest.mark.parametrize("name", ALL)
def test_every_metric_through_every_output(name, tmp_path):
    """A statistics table of the metric's rows: scores, scores table, dashboard, intervals from
    replicate sums, paired tests, the report and the console table, with no metric named by them."""
    metric = default_metric(name)
    rng = np.random.default_rng(5)
    rows = []
    for system in ("A", "B"):
        stats = rng.integers(1, 40, size=(metric.width,))
        replicates = rng.integers(1, 40, size=(50, metric.width))
        rows.append({"system": system, **statistics_row(metric),
                     "format_version": statstable.FORMAT_VERSION, "resampling": "poisson:50:1",
                     "n_rejected": 0, "n_reference_segments": None,
                     "segment_fingerprint": 7, **dict(zip(metric.names, stats.tolist())),
                     "replicate_sums": replicates.reshape(-1).tolist(), "trial_sums": None})
    table = pa.Table.from_pylist(rows)
    for column in ("trial_sums", "n_reference_segments", "metric_options"):
        wanted = {"trial_sums": pa.list_(pa.int64()), "n_reference_segments": pa.int64(),
                  "metric_options": pa.string()}[column]
        index = table.schema.get_field_index(column)
        table = table.set_column(index, column, table[column].cast(wanted))
    from bleu_spark.resampling import Resampling
    resampling = Resampling(confidence=True, n_bootstrap=50, seed=1, paired_bs=True,
                            baseline="A")
    scores = scoring.score_sets(table, [("system",)], BleuConfig(), resampling)
    assert [r["metric"] for r in scores] == [name, name]
    for row, source in zip(scores, rows):
        sums = [source[n] for n in metric.names]
        assert row["score"] == metric.score(sums)
        assert row["ci_low"] <= row["ci_high"] and row["n_bootstrap"] == 50
        assert row["signature"].startswith("nrefs:1|bs:50|seed:1|bsm:poisson|")
    fields = group_fields(table, [("system",)])
    assert scores_table(scores, fields)["metric"].to_pylist() == [name, name]
    dashboard = dashboard_table(scores, fields, "run", "time")
    assert dashboard["metric"].to_pylist() == [name, name]
    assert [c for c in dashboard.column_names if metrics.is_stat_column(c)] == metric.names
    assert dashboard[metric.names[0]].to_pylist() == [r[metric.names[0]] for r in rows]
    paired, warnings = scoring.paired_rows(table, [("system",)], BleuConfig(), resampling)
    assert [(p["metric"], p["system"]) for p in paired] == [(name, "B")] and not warnings
    page = scoring.report_html(table, [("system",)], BleuConfig(), resampling=resampling)
    assert f"{metric.title}</th>" in page
    console = format_table(scores, ["system"])
    assert console.splitlines()[0].split()[:2] == ["system", "metric"]
    assert console.splitlines()[1].split()[1] == metric.sacrebleu_name


def test_options_are_checked_once_with_sacrebleus_names():
    assert metrics.parse_names("BLEU, chrf++,chrf") == ("bleu", "chrf++", "chrf")
    with pytest.raises(UsageError, match="unknown metric 'meteor'"):
        metrics.parse_names("bleu,meteor")
    with pytest.raises(UsageError, match="--chrf-char-order"):
        metrics.configured(["chrf"], {"chrf_char_order": 11}, BleuConfig())
    with pytest.raises(UsageError, match="at least 1"):
        metrics.configured(["chrf"], {"chrf_char_order": 0}, BleuConfig())
    plus = metrics.configured(["chrf++"], {"chrf_word_order": 0}, BleuConfig())[0]
    assert plus.options.word_order == 2  # chrF++ is chrF with word order 2, whatever chrf's is


def test_sentence_scores_are_sacrebleus():
    rng = random.Random(2)
    words = ["the", "cat", "sat", "on", "mat", "(a)", "dog,", "Über"]
    for name in ("chrf", "chrf++", "ter"):
        metric = default_metric(name)
        theirs = sacrebleu_metric(name)
        for _ in range(30):
            hyp = " ".join(rng.choices(words, k=rng.randint(0, 8)))
            refs = [" ".join(rng.choices(words, k=rng.randint(1, 8))) for _ in range(rng.randint(1, 2))]
            assert metric.sentence_score(hyp, refs) == pytest.approx(
                theirs.sentence_score(hyp, refs).score, abs=TOLERANCE)


# --- end to end on Spark --------------------------------------------------------------------------

def chrf_statistics_of(stats, name):
    rows = stats.filter(pc.equal(stats["metric"], name)).to_pylist()
    metric = metrics.of_row(rows[0], None)
    return {(r["langpair"], r["system"]): [r[c] for c in metric.names] for r in rows}


@pytest.fixture(scope="module")
def three_metrics(spark, tmp_path_factory):
    from bleu_spark.spark.job import JobOptions, run_job

    out = tmp_path_factory.mktemp("metrics") / "out"
    return out, run_job(spark, JobOptions(input=SAMPLE, output=str(out), progress_seconds=0,
                                          metrics=("bleu", "chrf", "chrf++")))


@pytest.mark.spark
@pytest.mark.parametrize("name", ["chrf", "chrf++"])
def test_chrf_equals_sacrebleu_on_every_group_of_the_sample(three_metrics, name):
    out, result = three_metrics
    theirs = sacrebleu_by_group(pq.read_table(SAMPLE).to_pylist(), name)
    ours = {(r["langpair"], r["system"]): r for r in result.scores if r["metric"] == name}
    assert ours.keys() == theirs.keys() and len(ours) == 112
    summed = chrf_statistics_of(result.stats, name)
    for key, (score, sums, signature) in theirs.items():
        assert abs(ours[key]["score"] - score.score) <= TOLERANCE, key
        assert ours[key]["verbose"] == str(score)
        assert ours[key]["signature"] == signature, key
        assert summed[key] == sums, key
    dashboard = pq.read_table(out / "dashboard").to_pylist()
    assert sorted({r["metric"] for r in dashboard}) == ["bleu", "chrf", "chrf++"]
    mine = [r for r in dashboard if r["metric"] == name]
    assert len(mine) == 112 and all(r["chrf_c1_hyp"] is not None and r["sys_len"] is None for r in mine)
    written = json.loads((out / "scores.json").read_text())
    assert {r["metric"] for r in written} == {"bleu", "chrf", "chrf++"}


@pytest.mark.spark
def test_the_report_has_a_section_per_language_pair_and_metric(three_metrics):
    from bleu_spark.report import render_report

    _, result = three_metrics
    page = render_report(result.scores, group_cols=["langpair", "system"])
    for title in ("de-en · BLEU", "de-en · chrF", "de-en · chrF++"):
        assert f"<h2>{title}</h2>" in page
    assert page.count('<section class="langpair"') == 3 * 10  # the overview and the guide are no sections
    assert page.count('aria-label="interpretation bands"') == 1  # BLEU's, once


@pytest.mark.spark
def test_bleu_beside_other_metrics_is_bleu_alone(three_metrics, spark):
    from bleu_spark.spark.job import JobOptions, run_job

    _, result = three_metrics
    alone = run_job(spark, JobOptions(input=SAMPLE, progress_seconds=0)).scores
    together = [r for r in result.scores if r["metric"] == "bleu"]
    assert len(alone) == 112 and together == alone
    assert result.run["rows"]["scored"] == 17470 and result.run["groups"] == 3 * 112


@pytest.mark.spark
def test_non_default_chrf_options_on_a_slice(spark, tmp_path):
    from bleu_spark.spark.job import JobOptions, run_job

    table = pq.read_table(SAMPLE)
    table = table.filter(pc.is_in(table["langpair"], pa.array(["de-en", "en-zh"])))
    path = str(tmp_path / "slice.parquet")
    pq.write_table(table, path)
    settings = {"chrf_char_order": 4, "chrf_word_order": 1, "chrf_beta": 1, "chrf_lowercase": True,
                "chrf_whitespace": True, "chrf_eps_smoothing": True}
    result = run_job(spark, JobOptions(input=path, progress_seconds=0, metrics=("chrf",),
                                       metric_settings=tuple(settings.items())))
    options = {k[len("chrf_"):]: v for k, v in settings.items()}
    theirs = sacrebleu_by_group(table.to_pylist(), "chrf", **options)
    assert len(result.scores) == len(theirs)
    for row in result.scores:
        score, _, signature = theirs[row["langpair"], row["system"]]
        assert abs(row["score"] - score.score) <= TOLERANCE and row["signature"] == signature
        assert row["verbose"] == str(score) and row["tokenize"] is None


@pytest.mark.spark
def test_days_scored_apart_then_aggregated_equal_the_week_with_chrf(spark, tmp_path):
    """Partitions of chrF and chrF++ statistics add up to the whole; intervals from the
    replicate sums go through the same code for every metric."""
    from bleu_spark.spark.job import JobOptions, run_job
    from bleu_spark.resampling import Resampling
    from test_scheduled import sample_week

    table = sample_week()
    table = table.filter(pc.equal(table["langpair"], "de-en"))
    resampling = Resampling(confidence=True, n_bootstrap=100, seed=3)
    options = dict(progress_seconds=0, metrics=("chrf", "chrf++", "bleu", "ter"), resampling=resampling)
    out = tmp_path / "daily"
    for date in sorted(set(table["run_date"].to_pylist())):
        path = str(tmp_path / f"day-{date}.parquet")
        pq.write_table(table.filter(pc.equal(table["run_date"], date)), path)
        run_job(spark, JobOptions(input=path, output=str(out), partition_by=("run_date",), **options))
    whole = str(tmp_path / "week.parquet")
    pq.write_table(table, whole)
    fresh = run_job(spark, JobOptions(input=whole, group_by=("langpair", "system"), **options)).scores
    aggregated = run_aggregate(AggregateOptions(stats=str(out), group_by=("langpair", "system"),
                                                output=str(tmp_path / "agg"), confidence=True)).scores
    on_spark = run_aggregate(AggregateOptions(stats=str(out), group_by=("langpair", "system"),
                                              output=str(tmp_path / "agg-spark"), confidence=True,
                                              engine="spark"), spark).scores
    assert on_spark == aggregated
    key = lambda r: (r["langpair"], r["system"], r["metric"])
    fresh, aggregated = {key(r): r for r in fresh}, {key(r): r for r in aggregated}
    systems = set(table["system"].to_pylist())
    assert fresh.keys() == aggregated.keys() and len(fresh) == 4 * len(systems) > 4
    for k, row in fresh.items():
        for field in ("score", "signature", "verbose", "n_segments", "ci_low", "ci_high", "bs_mean"):
            assert aggregated[k][field] == row[field], (k, field)
        assert row["ci_low"] <= row["score"] <= row["ci_high"] or row["metric"] in ("bleu", "ter")


@pytest.mark.parametrize("name", ["chrf", "chrf++", "ter"])
def test_sacrebleu_replay_of_a_chrf_interval(name, monkeypatch):
    """The exact replay takes the metric's own sacrebleu counterpart: sacrebleu's chrF interval."""
    from bleu_spark.resampling import sacrebleu_interval

    table = pq.read_table(SAMPLE)
    table = table.filter(pc.equal(table["langpair"], "de-en"))
    table = table.filter(pc.equal(table["system"], table["system"][0]))
    hyps, refs = table["candidate"].to_pylist(), table["references"].to_pylist()
    metric = default_metric(name)
    stats = metric.segment_statistics(table["candidate"], table["references"])
    monkeypatch.setenv("SACREBLEU_SEED", "7")
    ours = sacrebleu_interval(stats, metric, n_samples=200, seed=7)
    theirs = sacrebleu_metric(name).corpus_score(
        hyps, reference_streams(refs), n_bootstrap=200)
    assert ours.score == pytest.approx(theirs.score, abs=TOLERANCE)
    assert ours.mean == pytest.approx(theirs._mean, abs=1e-6)
    assert ours.halfwidth == pytest.approx(theirs._ci, abs=1e-6)


@pytest.mark.spark
@pytest.mark.parametrize("settings", [{}, {"ter_case_sensitive": True, "ter_no_punct": True}])
def test_ter_equals_sacrebleu_on_a_slice_of_the_sample(spark, tmp_path, settings):
    """TER on two language pairs of the sample (one with two references for some segments):
    score, edits, reference length and signature as sacrebleu's; lower ranks first."""
    from bleu_spark.spark.job import JobOptions, run_job

    table = pq.read_table(SAMPLE)
    table = table.filter(pc.is_in(table["langpair"], pa.array(["de-en", "en-zh"])))
    path = str(tmp_path / "slice.parquet")
    pq.write_table(table, path)
    result = run_job(spark, JobOptions(input=path, output=str(tmp_path / "out"), progress_seconds=0,
                                       metrics=("ter",), metric_settings=tuple(settings.items()),
                                       report=True))
    theirs = sacrebleu_by_group(table.to_pylist(), "ter", **{k[len("ter_"):]: v for k, v in settings.items()})
    assert len(result.scores) == len(theirs)
    assert any(r["signature"].startswith("nrefs:2") for r in result.scores)
    for row in result.scores:
        score, _, signature = theirs[row["langpair"], row["system"]]
        assert abs(row["score"] - score.score) <= TOLERANCE and row["signature"] == signature
        assert row["num_edits"] == score.num_edits
        assert abs(row["ref_length"] - score.ref_length) <= 1e-9
        assert row["verbose"] == str(score) and row["metric"] == "ter"
    dashboard = pq.read_table(tmp_path / "out" / "dashboard")
    assert set(dashboard["metric"].to_pylist()) == {"ter"}
    assert "ter_edits" in dashboard.column_names and "sys_len" not in dashboard.column_names


# Every --chrf-* and --ter-* option away from its default, one of each metric per run (a metric's
# options touch only its own statistics). TER's Asian support acts only with normalizing or
# punctuation removal, so it comes with each of them, and alone.
OPTION_RUNS = [
    ({"chrf_char_order": 3}, {"ter_case_sensitive": True}),
    ({"chrf_word_order": 1}, {"ter_normalized": True}),
    ({"chrf_beta": 1}, {"ter_no_punct": True}),
    ({"chrf_lowercase": True}, {"ter_asian_support": True, "ter_normalized": True}),
    ({"chrf_whitespace": True}, {"ter_asian_support": True, "ter_no_punct": True}),
    ({"chrf_eps_smoothing": True}, {"ter_asian_support": True}),
]


@pytest.mark.spark
@pytest.mark.parametrize("chrf_settings, ter_settings", OPTION_RUNS,
                         ids=lambda s: "+".join(f"{k}={v}" for k, v in s.items()))
def test_each_non_default_option_on_wmt22_rows(spark, tmp_path, chrf_settings, ter_settings):
    """The job on every 40th row of the sample (WMT22, every language pair), chrF and TER with
    non-default options: each group's score, text line, signature and summed statistics as
    sacrebleu's with the same options."""
    from bleu_spark.spark.job import JobOptions, run_job

    table = pq.read_table(SAMPLE)
    table = table.take(np.arange(0, table.num_rows, 40))
    path = str(tmp_path / "rows.parquet")
    pq.write_table(table, path)
    settings = {**chrf_settings, **ter_settings}
    result = run_job(spark, JobOptions(input=path, progress_seconds=0, metrics=("chrf", "ter"),
                                       metric_settings=tuple(settings.items())))
    options = {name: {k[len(name) + 1:]: v for k, v in s.items()}
               for name, s in (("chrf", chrf_settings), ("ter", ter_settings))}
    for name in ("chrf", "ter"):
        theirs = sacrebleu_by_group(table.to_pylist(), name, **options[name])
        ours = {(r["langpair"], r["system"]): r for r in result.scores if r["metric"] == name}
        rows = result.stats.filter(pc.equal(result.stats["metric"], name)).to_pylist()
        columns = metrics.of_row(rows[0], None).names
        summed = {(r["langpair"], r["system"]): [r[c] for c in columns] for r in rows}
        assert ours.keys() == theirs.keys() == summed.keys() and len(ours) == 112
        for key, (score, sums, signature) in theirs.items():
            assert abs(ours[key]["score"] - score.score) <= TOLERANCE, (name, key)
            assert (ours[key]["verbose"], ours[key]["signature"]) == (str(score), signature), key
            assert summed[key] == sums, (name, key)


def test_metrics_and_their_options_from_flags_and_the_job_file(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("input: in.parquet\noutput: out\nmetrics: [chrf++, ter]\nchrf_beta: 3\n"
                   "ter-case-sensitive: true\n")
    args = cli.build_parser().parse_args(["score", "--config", str(job), "--chrf-char-order", "4"])
    options = cli.job_options(cli.effective_settings(args))
    assert options.metrics == ("chrf++", "ter")
    measured = options.measured
    assert (measured[0].options.char_order, measured[0].options.beta, measured[0].options.word_order) == (4, 3, 2)
    assert measured[1].options.case_sensitive
    args = cli.build_parser().parse_args(["score", "--input", "x", "--output", "y", "--metrics", "bleu,chrf"])
    assert cli.job_options(cli.effective_settings(args)).metrics == ("bleu", "chrf")
    with pytest.raises(UsageError, match="unknown metric"):
        cli.job_options(cli.effective_settings(cli.build_parser().parse_args(
            ["score", "--input", "x", "--output", "y", "--metrics", "bleu,comet"])))


@pytest.mark.parametrize("langpair", ["de-en", "en-de"])
@pytest.mark.parametrize("name", ["chrf", "chrf++", "ter"])
def test_sacrebleu_replay_of_paired_tests_of_a_metric(name, langpair, monkeypatch):
    """The exact replay's paired bootstrap and approximate randomization of chrF, chrF++ and TER
    equal sacrebleu's own PairedTest of that metric, every system of a language pair against
    the first."""
    from sacrebleu.significance import PairedTest

    from bleu_spark.resampling import sacrebleu_paired_ar, sacrebleu_paired_bs

    table = pq.read_table(SAMPLE)
    table = table.filter(pc.equal(table["langpair"], langpair)).sort_by([("system", "ascending"),
                                                                        ("seg_id", "ascending")])
    systems = sorted(set(table["system"].to_pylist()))
    rows = {s: table.filter(pc.equal(table["system"], s)) for s in systems}
    refs = rows[systems[0]]["references"].to_pylist()
    metric = default_metric(name)
    stats = {s: metric.segment_statistics(r["candidate"], r["references"]) for s, r in rows.items()}
    monkeypatch.setenv("SACREBLEU_SEED", "7")
    for test, draws in (("bs", 100), ("ar", 100)):
        theirs_metric = sacrebleu_metric(name)
        named = [(s, rows[s]["candidate"].to_pylist()) for s in systems]
        _, results = PairedTest(named, {name: theirs_metric}, reference_streams(refs),
                                test_type=test, n_samples=draws)()
        results = [v for k, v in results.items() if k != "System"][0]  # keyed by sacrebleu's name
        for system, theirs in zip(systems[1:], results[1:]):
            replay = sacrebleu_paired_bs if test == "bs" else sacrebleu_paired_ar
            ours = replay(stats[systems[0]], stats[system], metric, draws, 7)
            assert ours.delta == pytest.approx(theirs.score - results[0].score, abs=1e-9)
            assert ours.p_value == pytest.approx(theirs.p_value, abs=1e-9), (name, test, system)


@pytest.mark.spark
@pytest.mark.browser
def test_the_report_in_chromium_ranks_each_metric_in_its_direction(spark, tmp_path):
    """Opened as a person opens it: BLEU's sections rank the highest score first, TER's (lower
    is better) the lowest first."""
    from playwright.sync_api import sync_playwright

    from bleu_spark.spark.job import JobOptions, run_job
    from test_report import CHROMIUM_ARGS_OF, load_screenshot_module

    table = pq.read_table(SAMPLE)
    path = str(tmp_path / "in.parquet")
    pq.write_table(table.filter(pc.is_in(table["langpair"], pa.array(["de-en", "en-de"]))), path)
    out = tmp_path / "out"
    run_job(spark, JobOptions(input=path, output=str(out), report=True, progress_seconds=0,
                              metrics=("bleu", "ter")))
    shot = load_screenshot_module()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shot.CHROMIUM, args=CHROMIUM_ARGS_OF(shot))
        page = browser.new_page()
        page.goto("file://" + str(out / "report.html"), wait_until="load")
        titles = page.eval_on_selector_all("section h2", "ns => ns.map(n => n.textContent.trim())")
        assert sorted(titles) == ["de-en · BLEU", "de-en · TER", "en-de · BLEU", "en-de · TER"]
        for index, title in enumerate(titles):
            scores = page.eval_on_selector_all(
                f"#section-{index} table.scores tbody td.score",
                "cells => cells.map(c => parseFloat(c.dataset.value))")
            assert len(scores) > 5
            assert scores == sorted(scores, reverse=title.endswith("BLEU")), title
        browser.close()


@pytest.mark.spark
def test_grouping_sets_of_every_metric_equal_separate_runs(spark, tmp_path):
    from bleu_spark.spark.job import JobOptions, run_job

    table = pq.read_table(SAMPLE)
    path = str(tmp_path / "in.parquet")
    pq.write_table(table.filter(pc.is_in(table["langpair"], pa.array(["de-en", "cs-en"]))), path)
    common = dict(input=path, progress_seconds=0, metrics=("bleu", "chrf", "ter"))
    together = run_job(spark, JobOptions(grouping_sets=(("langpair", "system"), ("langpair",)),
                                         **common)).scores
    key = lambda r: (r["metric"], r["langpair"], r.get("system"))
    for grouping_set in (("langpair", "system"), ("langpair",)):
        alone = {key(r): r for r in run_job(spark, JobOptions(group_by=grouping_set, **common)).scores}
        mine = {key(r): r for r in together if r["grouping"] == ",".join(sorted(grouping_set))}
        assert mine.keys() == alone.keys() and {k[0] for k in mine} == {"bleu", "chrf", "ter"}
        for k, row in mine.items():
            assert (row["score"], row["signature"]) == (alone[k]["score"], alone[k]["signature"]), k


@pytest.mark.parametrize("name", ["chrf", "chrf++", "ter"])
@pytest.mark.parametrize("seed,n_samples,rows", [(7, 200, 300), (12345, 1000, 120), (3, 41, 57)])
def test_sacrebleu_replay_of_chrf_and_ter_intervals_is_exact(name, seed, n_samples, rows, monkeypatch):
    """sacrebleu keeps chrF's and TER's resample scores in float32, its mean and ± included: the
    replay's μ, ± and bounds equal sacrebleu's exactly, not to 1e-6."""
    from bleu_spark.resampling import sacrebleu_interval

    table = pq.read_table(SAMPLE)
    table = table.filter(pc.equal(table["langpair"], "en-de"))
    table = table.filter(pc.equal(table["system"], table["system"][1])).slice(0, rows)
    hyps, refs = table["candidate"].to_pylist(), table["references"].to_pylist()
    metric = default_metric(name)
    stats = metric.segment_statistics(table["candidate"], table["references"])
    monkeypatch.setenv("SACREBLEU_SEED", str(seed))
    ours = sacrebleu_interval(stats, metric, n_samples=n_samples, seed=seed)
    theirs = sacrebleu_metric(name).corpus_score(
        hyps, reference_streams(refs), n_bootstrap=n_samples)
    assert ours.score == theirs.score
    assert ours.mean == float(theirs._mean) and ours.halfwidth == float(theirs._ci)
