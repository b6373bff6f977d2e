"""Rank ranges and clusters (`--clusters`): the numpy ranking against a plain replica of the
definition, and the job's figures against that replica over sacrebleu's own statistics and
seeded draws (every system of two WMT22 language pairs of the sample, BLEU, chrF and TER)."""
import random

import numpy as np
import pyarrow.parquet as pq
import pytest
from sacrebleu.significance import _bootstrap_resample
from sacrebleu.utils import sum_of_lists

from bleu_spark.aggregate import AggregateOptions, run_aggregate
from bleu_spark.oracle import reference_streams
from bleu_spark.resampling import (DEFAULT_BOOTSTRAP_SAMPLES, DEFAULT_SEED, SACREBLEU, Resampling,
                                   clusters, scores_of_sums)
from conftest import SAMPLE
from matching import sacrebleu_metric
from test_bootstrap import sample_systems

SEGMENT_KEY = ("testset", "langpair", "seg_id")
LANGPAIRS = ("en-de", "zh-en")
REPLAYED = 200
# Which metrics sacrebleu's draws are replayed for, per language pair: not TER on zh-en, whose
# statistics alone take sacrebleu about 100 s of one core (against 3 s for en-de's).
REPLAYS = {"en-de": ("bleu", "chrf", "ter"), "zh-en": ("bleu", "chrf")}


def replica(scores: dict, replicates: dict, higher_is_better: bool) -> dict:
    """The issue's definition, one system and one replicate at a time: name -> the 4 fields."""
    better = (lambda a, b: a > b) if higher_is_better else (lambda a, b: a < b)
    names = list(scores)
    n = len(next(iter(replicates.values())))

    def rank_of(name, values):
        return 1 + sum(1 for other in names if better(values[other], values[name]))

    fields = {}
    for name in names:
        per_replicate = sorted(rank_of(name, {s: replicates[s][b] for s in names}) for b in range(n))
        fields[name] = {"rank": rank_of(name, scores), "rank_low": per_replicate[n // 40],
                        "rank_high": per_replicate[n - n // 40 - 1]}
    order = sorted(names, key=lambda s: (-scores[s] if higher_is_better else scores[s], s))
    cluster = 1
    for i, name in enumerate(order):
        if i and min(fields[s]["rank_low"] for s in order[i:]) > \
                max(fields[s]["rank_high"] for s in order[:i]):
            cluster += 1
        fields[name]["cluster"] = cluster
    return fields


# --- the numpy ranking against the replica ---------------------------------------------------

def test_ranks_share_the_best_rank_of_a_tie():
    scores = np.array([[3.0, 5.0, 5.0, 1.0]])
    assert clusters.ranks(scores, True).tolist() == [[3, 1, 1, 4]]
    assert clusters.ranks(scores, False).tolist() == [[2, 3, 3, 1]]


@pytest.mark.parametrize("seed", range(20))
def test_rank_systems_equals_the_replica_on_random_scores(seed):
    rng = random.Random(seed)
    k, b = rng.randint(1, 12), rng.choice([1, 7, 40, 100])
    # Few distinct values, so ties in scores and in replicates are common.
    means = [rng.choice([10.0, 10.5, 11.0, 20.0, 30.0]) for _ in range(k)]
    replicates = {f"s{i}": [round(rng.gauss(m, 1.5)) / 2 for _ in range(b)] for i, m in enumerate(means)}
    scores = {f"s{i}": m for i, m in enumerate(means)}
    for higher in (True, False):
        expected = replica(scores, replicates, higher)
        names = list(scores)
        got = clusters.rank_systems([scores[s] for s in names],
                                    np.array([replicates[s] for s in names]).T, names, higher)
        for column, name in enumerate(names):
            assert {f: int(got[f][column]) for f in clusters.FIELDS} == expected[name]


def test_a_group_of_one_system_is_rank_1_range_1_1_cluster_1():
    got = clusters.rank_systems([42.0], np.array([[40.0], [44.0], [41.0]]), ["only"], True)
    assert {f: got[f].tolist() for f in clusters.FIELDS} == \
        {"rank": [1], "rank_low": [1], "rank_high": [1], "cluster": [1]}


def test_separated_systems_get_clusters_of_their_own_and_overlapping_ones_share():
    rng = np.random.default_rng(0)
    # a and b overlap; c is far below both.
    reps = np.column_stack([rng.normal(30, 1, 1000), rng.normal(30.2, 1, 1000),
                            rng.normal(10, 1, 1000)])
    got = clusters.rank_systems([30.0, 30.2, 10.0], reps, ["a", "b", "c"], True)
    assert got["rank"].tolist() == [2, 1, 3]
    assert got["cluster"].tolist() == [1, 1, 2]
    assert (got["rank_low"].tolist(), got["rank_high"].tolist()) == ([1, 1, 3], [2, 2, 3])


# --- through the job, against sacrebleu's own statistics and draws ---------------------------

def theirs(metric_name, langpair):
    if metric_name == "bleu":
        return sacrebleu_metric("bleu", tokenize="zh" if langpair.endswith("-zh") else "13a")
    return sacrebleu_metric(metric_name)


@pytest.mark.spark
def test_sacrebleu_method_clusters_equal_a_replica_over_sacrebleus_draws(spark, tmp_path,
                                                                         monkeypatch):
    from bleu_spark.spark.job import JobOptions, run_job

    path = str(tmp_path / "in.parquet")
    pq.write_table(pq.read_table(SAMPLE, filters=[("langpair", "in", LANGPAIRS)]), path)
    # 200 of sacrebleu's draws (not its 1,000): the same replay, at a fifth of the suite's time.
    resampling = Resampling(method=SACREBLEU, clusters=True, n_bootstrap=REPLAYED)
    result = run_job(spark, JobOptions(input=path, segment_key=SEGMENT_KEY, resampling=resampling,
                                       metrics=("bleu", "chrf", "ter"), progress_seconds=0))
    ours = {(r["langpair"], r["metric"], r["system"]): r for r in result.scores}
    monkeypatch.setenv("SACREBLEU_SEED", str(DEFAULT_SEED))
    checked = 0
    for langpair, metric_names in REPLAYS.items():
        systems = sample_systems(langpair)  # each system's rows in seg_id order
        for metric_name in metric_names:
            metric = theirs(metric_name, langpair)
            scores, replicates = {}, {}
            for name, rows in systems.items():
                hypotheses = [r["candidate"] for r in rows]
                references = reference_streams([r["references"] for r in rows])
                stats = metric._extract_corpus_statistics(hypotheses, references)
                # sacrebleu's corpus_score from the statistics it has just extracted (its own
                # steps, without extracting them twice: TER's take most of this test's time)
                scores[name] = metric._compute_score_from_stats(sum_of_lists(stats)).score
                _, resampled = _bootstrap_resample(stats, metric, REPLAYED)
                replicates[name] = [s.score for s in resampled]
            expected = replica(scores, replicates, metric_name != "ter")
            # The check means something: systems' rank ranges differ.
            assert len({(f["rank_low"], f["rank_high"]) for f in expected.values()}) > 1
            for name, fields in expected.items():
                row = ours[langpair, metric_name, name]
                assert {f: row[f] for f in clusters.FIELDS} == fields, (langpair, metric_name, name)
                checked += 1
    assert checked == sum(len(names) * len(sample_systems(lp)) for lp, names in REPLAYS.items())


@pytest.mark.spark
def test_aggregate_clusters_of_saved_statistics_equal_a_fresh_run_and_the_replica(spark, tmp_path):
    """Poisson: the clusters from saved replicate sums (of a slice) are a fresh run's, and equal
    the replica over the replicate scores of the statistics' own sums."""
    from bleu_spark import statstable
    from bleu_spark.scoring.groups import metric_of
    from bleu_spark.spark.job import JobOptions, run_job

    source = str(tmp_path / "in.parquet")
    pq.write_table(pq.read_table(SAMPLE, filters=[("langpair", "in", ("de-en", "en-ja"))]), source)
    resampling = Resampling(clusters=True)
    full = run_job(spark, JobOptions(input=source, output=str(tmp_path / "full"),
                                     segment_key=SEGMENT_KEY, resampling=resampling,
                                     group_by=("testset", "langpair", "system"), progress_seconds=0))
    sliced = run_aggregate(AggregateOptions(stats=str(tmp_path / "full"), output=str(tmp_path / "agg"),
                                            group_by=("langpair", "system"),
                                            where="langpair = 'de-en'", clusters=True))
    fresh = {r["system"]: r for r in full.scores if r["langpair"] == "de-en"}
    assert len(sliced.scores) == len(fresh)
    for row in sliced.scores:
        assert {f: row[f] for f in clusters.FIELDS} == {f: fresh[row["system"]][f] for f in clusters.FIELDS}
    # The replica over the replicate sums as saved.
    stats = statstable.summed(sliced.stats, ["langpair", "system", *statstable.MEASUREMENT])
    replicates, scores = {}, {}
    for index, group in enumerate(stats.drop_columns(list(statstable.SAMPLES)).to_pylist()):
        metric = metric_of(group, None)
        sums = statstable.sample_matrix(stats, statstable.REPLICATE_SUMS, index, metric.width)
        replicates[group["system"]] = scores_of_sums(sums, metric).tolist()
        scores[group["system"]] = fresh[group["system"]]["score"]
    expected = replica(scores, replicates, True)
    assert len({f["cluster"] for f in expected.values()}) > 1
    assert {r["system"]: {f: r[f] for f in clusters.FIELDS} for r in sliced.scores} == expected
    # Every table and file of the result holds the fields.
    import json

    written = {
        "scores": pq.read_table(str(tmp_path / "agg" / "scores")).to_pylist(),
        "dashboard": pq.read_table(str(tmp_path / "agg" / "dashboard")).to_pylist(),
        "scores.json": json.loads((tmp_path / "agg" / "scores.json").read_text(encoding="utf-8")),
    }
    for name, rows in written.items():
        assert {r["system"]: {f: r[f] for f in clusters.FIELDS} for r in rows} == expected, name


@pytest.mark.spark
def test_sacrebleu_method_clusters_refuse_systems_of_different_segments(spark, tmp_path):
    """sacrebleu's draws pick segments by position: a system missing a segment would be ranked
    on other draws than the rest, so the run says so in one line instead."""
    import pyarrow.compute as pc

    from bleu_spark.errors import UsageError
    from bleu_spark.spark.job import JobOptions, run_job

    table = pq.read_table(SAMPLE, filters=[("langpair", "=", "en-de")])
    first = table["system"][0].as_py()
    mine = pc.equal(table["system"], first)
    segment = SEGMENT_KEY[-1]
    dropped = pc.and_(mine, pc.equal(table[segment], pc.min(table.filter(mine)[segment])))
    path = str(tmp_path / "in.parquet")
    pq.write_table(table.filter(pc.invert(dropped)), path)
    with pytest.raises(UsageError, match="--clusters compare systems on the same segments.*covers other segments than"):
        run_job(spark, JobOptions(input=path, segment_key=SEGMENT_KEY, progress_seconds=0,
                                  resampling=Resampling(method=SACREBLEU, clusters=True)))


# --- the report, rendered by headless Chromium ---------------------------------------------

@pytest.mark.browser
def test_the_report_shows_clusters_in_every_ranking_and_the_overview(tmp_path):
    import importlib.util
    import os

    from playwright.sync_api import sync_playwright

    from bleu_spark.report import render_report

    path = os.path.join(os.path.dirname(SAMPLE), "..", "scripts", "report_screenshot.py")
    spec = importlib.util.spec_from_file_location("report_screenshot", path)
    shot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shot)
    scores = [dict(r, metric="bleu") for r in shot.sample_scores(langpairs=["de-en"])]
    scores = shot.add_sample_clusters(scores + shot.metric_scores("ter", langpairs=["de-en"]))
    page_file = tmp_path / "report.html"
    page_file.write_text(render_report(scores, group_cols=["langpair", "system"]), encoding="utf-8")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shot.CHROMIUM, args=shot.CHROMIUM_ARGS,
                                             headless=True)
        page = browser.new_page()
        page.goto("file://" + str(page_file), wait_until="load")
        texts = lambda selector: page.eval_on_selector_all(
            selector, "nodes => nodes.map(n => n.textContent.trim())")
        for number, metric in enumerate(["bleu", "ter"]):
            rows = sorted((r for r in scores if r["metric"] == metric),
                          key=lambda r: (r["rank"], r["system"]))
            table = f"#section-{number} table.scores tbody tr"
            assert texts(f"{table} td.cluster") == [str(r["cluster"]) for r in rows]
            ranges = [str(r["rank_low"]) if r["rank_low"] == r["rank_high"]
                      else f"{r['rank_low']}–{r['rank_high']}" for r in rows]
            assert texts(f"{table} td.rank-range") == ranges
            # A rule across the table where each cluster after the first starts.
            starts = page.eval_on_selector_all(f"{table}.cluster-start", "n => n.map(r => r.dataset.cluster)")
            assert starts == [str(c) for c in sorted({r["cluster"] for r in rows})[1:]]
            # Sorted by system name, the rules follow the rows: one wherever the cluster changes.
            page.click(f"#section-{number} table.scores thead th:nth-child(2)")
            shown = page.eval_on_selector_all(table, "n => n.map(r => r.dataset.cluster)")
            ruled = page.eval_on_selector_all(table, "n => n.map(r => r.classList.contains('cluster-start'))")
            assert shown != [str(r["cluster"]) for r in rows]  # the order did change
            assert ruled == [i > 0 and c != shown[i - 1] for i, c in enumerate(shown)]
            page.click(f"#section-{number} table.scores thead th:nth-child(1)")  # back to rank order
            labels = texts(f"#bars-{number} .annotation-text")
            assert sorted(labels) == sorted(f"{r['score']:.2f}  #{x}" for r, x in zip(rows, ranges))
            overview = texts(f"#matrix-{number} table.matrix tbody sup.cluster")
            assert sorted(overview) == sorted(str(r["cluster"]) for r in rows)
        assert len({r["cluster"] for r in scores}) > 1  # some band is drawn
        browser.close()


# --- options -----------------------------------------------------------------------------------

def run_cli(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "bleu_spark", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("args,message", [
    (["--group-by", "langpair"], "--clusters ranks systems: system must be a group column"),
    (["--bootstrap-method", "sacrebleu"], "--bootstrap-method sacrebleu needs --segment-key or --join-on: "
                                          "the segment order sacrebleu resamples in"),
])
def test_clusters_without_what_they_need_is_one_line_and_exit_2(tmp_path, args, message):
    result = run_cli("score", "--input", SAMPLE, "--output", str(tmp_path / "out"), "--clusters", *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [f"bleu-spark: error: {message}"]
    assert not (tmp_path / "out").exists()


def test_the_job_file_key_turns_clusters_and_their_bootstrap_on(tmp_path):
    from bleu_spark.cli import build_parser, effective_settings, job_options
    from bleu_spark.errors import ConfigFileError

    job = tmp_path / "job.yaml"
    job.write_text("input: in.parquet\noutput: out\nclusters: true\n")
    options = job_options(effective_settings(build_parser().parse_args(["score", "--config", str(job)])))
    assert options.resampling.clusters and not options.resampling.confidence
    assert options.resampling.replicates == DEFAULT_BOOTSTRAP_SAMPLES  # the draws it needs
    job.write_text("input: in.parquet\noutput: out\nclusters: 'yes'\n")
    with pytest.raises(ConfigFileError, match="clusters is string 'yes', expected boolean"):
        effective_settings(build_parser().parse_args(["score", "--config", str(job)]))


def test_a_section_of_several_comparison_groups_draws_no_cluster_bands():
    """Clusters are numbered per comparison group: a section holding two test sets' systems
    shows each row's cluster, but no bands or rules that would join rows of different groups."""
    from bleu_spark.report import render_report

    def row(testset, system, score, cluster):
        return dict(testset=testset, langpair="en-de", system=system, metric="bleu",
                    score=score, rank=cluster, rank_low=cluster, rank_high=cluster,
                    cluster=cluster, tokenize="13a", signature="s", n_segments=5, n_rejected=0,
                    grouping="testset,langpair,system", verbose="BLEU")

    rows = [row("t1", "A", 30.0, 1), row("t1", "B", 20.0, 2), row("t2", "A", 25.0, 1),
            row("t2", "B", 10.0, 2)]
    import re

    def banded(page):  # rows drawn in a band, rows opening with a rule
        rows = re.findall(r'<tr class="([^"]*)"\s*(data-cluster="\d+")?', page)
        return (sum(1 for _, data in rows if data),
                sum(1 for classes, _ in rows if "cluster-start" in classes.split()))

    several = render_report(rows, group_cols=["testset", "langpair", "system"])
    assert banded(several) == (0, 0)
    assert several.count('<td class="num cluster"') == 4
    one = render_report(rows[:2], group_cols=["testset", "langpair", "system"])
    assert banded(one) == (2, 1)
