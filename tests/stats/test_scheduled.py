"""Scheduled runs on Spark: days scored into partitions, aggregated later, grouping sets, reruns,
and the dashboard's SQL on DuckDB and Spark SQL."""
import os
import random
import re

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from bleu_spark.aggregate import AggregateOptions, run_aggregate
from bleu_spark.spark.job import JobOptions, run_job
from bleu_spark.metrics.bleu.oracle import sacrebleu_score
from bleu_spark import store
from bleu_spark.metrics.bleu import BleuConfig
from conftest import ROOT, SAMPLE, random_sentences
from matching import assert_matches_sacrebleu

pytestmark = pytest.mark.spark

EXACT = ("score", "counts", "totals", "precisions", "bp", "sys_len", "ref_len", "n_segments",
         "signature", "verbose", "tokenize")


def keyed(scores, cols):
    return {tuple(r[c] for c in cols): r for r in scores}


def assert_identical(ours, fresh, cols):
    """Same groups, and in each the same score bits, counts, totals, lengths and signature."""
    ours, fresh = keyed(ours, cols), keyed(fresh, cols)
    assert ours.keys() == fresh.keys()
    for key in fresh:
        assert {f: ours[key][f] for f in EXACT} == {f: fresh[key][f] for f in EXACT}, key


def generated_week(rng: random.Random, days=7):
    """A week of logs: systems x language pairs (one of them zh) x segments, a run_date each."""
    rows = []
    for day in range(days):
        for lp in ("de-en", "en-zh"):
            for seg in range(15):
                refs = random_sentences(rng, rng.randint(1, 3))
                refs = [None if rng.random() < 0.15 and i else r for i, r in enumerate(refs)]
                for system in ("A", "B", "C"):
                    rows.append({"run_date": f"2026-01-0{day + 1}", "langpair": lp, "system": system,
                                 "seg_id": seg, "candidate": random_sentences(rng, 1)[0],
                                 "references": refs})
    return pa.Table.from_pylist(rows)


def sample_week():
    table = pq.read_table(SAMPLE)
    dates = pa.array([f"2026-01-0{1 + seg % 7}" for seg in table["seg_id"].to_pylist()])
    return table.append_column("run_date", dates)


def score_days(spark, table, tmp_path, out):
    """Each day's rows written and scored separately, into the same partitioned folder."""
    for date in sorted(set(table["run_date"].to_pylist())):
        path = str(tmp_path / f"day-{date}.parquet")
        pq.write_table(table.filter(pc.equal(table["run_date"], date)), path)
        run_job(spark, JobOptions(input=path, output=str(out), partition_by=("run_date",),
                                  progress_seconds=0))


@pytest.mark.parametrize("week", ["generated", "sample"])
def test_days_scored_apart_then_aggregated_equal_the_week_at_once(spark, tmp_path, week):
    table = generated_week(random.Random(11)) if week == "generated" else sample_week()
    out = tmp_path / "daily"
    score_days(spark, table, tmp_path, out)
    assert sorted(os.listdir(out / "scores")) == sorted(
        f"run_date={d}" for d in set(table["run_date"].to_pylist()))
    whole = str(tmp_path / "week.parquet")
    pq.write_table(table, whole)
    fresh = run_job(spark, JobOptions(input=whole, group_by=("langpair", "system"),
                                      progress_seconds=0)).scores
    local = run_aggregate(AggregateOptions(stats=str(out), group_by=("langpair", "system"),
                                           output=str(tmp_path / "agg"))).scores
    assert_identical(local, fresh, ("langpair", "system"))
    on_spark = run_aggregate(AggregateOptions(stats=str(out), group_by=("langpair", "system"),
                                              engine="spark"), spark).scores
    assert_identical(on_spark, fresh, ("langpair", "system"))
    if week == "generated":  # and both equal sacrebleu itself
        rows = table.to_pylist()
        for (lp, system), row in keyed(local, ("langpair", "system")).items():
            group = [r for r in rows if (r["langpair"], r["system"]) == (lp, system)]
            assert_matches_sacrebleu(row, sacrebleu_score(
                [r["candidate"] for r in group], [r["references"] for r in group], BleuConfig(),
                langpair=lp))


def files_of(folder):
    return {p: (open(p, "rb").read(), os.stat(p).st_mtime_ns)
            for p in (os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs)}


def test_a_rerun_replaces_its_day_only_and_a_failed_rerun_keeps_it(spark, tmp_path, monkeypatch):
    table = generated_week(random.Random(5), days=4)
    out = tmp_path / "daily"
    score_days(spark, table, tmp_path, out)
    other_days = {t: files_of(out / t / "run_date=2026-01-01") for t in ("stats", "scores", "dashboard")}
    other_days.update({t + "4": files_of(out / t / "run_date=2026-01-04") for t in ("stats", "scores")})
    day3 = str(tmp_path / "day-2026-01-03.parquet")
    before = pq.read_table(out / "scores" / "run_date=2026-01-03").to_pylist()

    first = run_job(spark, JobOptions(input=day3, output=str(out), partition_by=("run_date",)))
    assert first.run["partitions_written"] == ["run_date=2026-01-03"]
    assert {t: files_of(out / t / "run_date=2026-01-01") for t in ("stats", "scores", "dashboard")} \
        == {t: other_days[t] for t in ("stats", "scores", "dashboard")}
    assert {t + "4": files_of(out / t / "run_date=2026-01-04") for t in ("stats", "scores")} \
        == {t: other_days[t] for t in ("stats4", "scores4")}
    rerun = pq.read_table(out / "scores" / "run_date=2026-01-03").to_pylist()
    assert rerun == before  # same input, same rows
    assert len(os.listdir(out / "scores" / "run_date=2026-01-03")) == 1
    assert sorted(os.listdir(out / "runs")) == sorted(f"{r}.json" for r in _run_ids(out))

    day3_files = files_of(out / "scores" / "run_date=2026-01-03")

    def broken(self, name, table):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.PartitionedOutput, "write_table", broken)
    with pytest.raises(OSError):
        run_job(spark, JobOptions(input=day3, output=str(out), partition_by=("run_date",)))
    assert files_of(out / "scores" / "run_date=2026-01-03") == day3_files
    assert not [p for p in os.listdir(out / "_commits") if p.startswith(("p-", "f-"))]  # nothing of the failed run


def _run_ids(out):
    import json

    return [json.loads((out / "runs" / f).read_text())["run_id"] for f in os.listdir(out / "runs")]


def test_grouping_sets_equal_separate_runs_per_set(spark, tmp_path):
    table = pq.read_table(SAMPLE)  # pairs of one tokenizer (13a), so () is one corpus too
    table = table.filter(pc.and_(pc.less(table["seg_id"], 120),
                                 pc.is_in(table["langpair"], pa.array(["cs-en", "de-en", "en-de"]))))
    path = str(tmp_path / "in.parquet")
    pq.write_table(table, path)
    sets = (("testset", "langpair", "system"), ("langpair", "system"), ("langpair",), ())
    # a set given again in another order is the same set: scored once, under one label
    together = run_job(spark, JobOptions(input=path, grouping_sets=(*sets, ("system", "langpair")),
                                         progress_seconds=0)).scores
    labels = [r["grouping"] for r in together]
    assert set(labels) == {"langpair,system,testset", "langpair,system", "langpair", ""}
    assert labels.count("langpair,system") == len({(r["langpair"], r["system"]) for r in together
                                                    if r["grouping"] == "langpair,system"})
    for grouping_set in sets:
        alone = run_job(spark, JobOptions(input=path, group_by=grouping_set, progress_seconds=0)).scores
        mine = [r for r in together if r["grouping"] == ",".join(sorted(grouping_set))]
        assert all(r[c] is None for r in mine for c in {"testset", "langpair", "system"} - set(grouping_set))
        assert_identical(mine, alone, grouping_set)


DOC = os.path.join(ROOT, "docs", "dashboard.md")


def dashboard_sql(metric: str = "BLEU") -> str:
    text = open(DOC, encoding="utf-8").read()
    return re.search(rf"```sql\n(-- {metric} of a slice.*?)```", text, re.S).group(1)


def test_the_dashboard_sql_of_the_docs_gives_the_jobs_score_on_duckdb_and_spark(spark, tmp_path):
    """As written, for BLEU and TER, on a result, on a partitioned folder (two days) and on an
    aggregate."""
    out = str(tmp_path / "out")
    metrics = ("bleu", "ter")
    run_job(spark, JobOptions(input=SAMPLE, output=out, progress_seconds=0, metrics=metrics))
    scored = run_aggregate(AggregateOptions(
        stats=out, group_by=("langpair",), where="system IN ('Online-A', 'Online-B')")).scores
    expected = {m: {r["langpair"]: r["score"] for r in scored if r["metric"] == m} for m in metrics}
    assert len(expected["bleu"]) >= 5 and expected["bleu"].keys() == expected["ter"].keys()
    daily = tmp_path / "daily"
    table = pq.read_table(SAMPLE)
    for day, parity in (("2026-01-01", 0), ("2026-01-02", 1)):
        rows = table.filter(pc.equal(pc.bit_wise_and(table["seg_id"], 1), parity))
        rows = rows.append_column("run_date", pa.repeat(pa.scalar(day), rows.num_rows))
        pq.write_table(rows, tmp_path / f"{day}.parquet")
        run_job(spark, JobOptions(input=str(tmp_path / f"{day}.parquet"), output=str(daily),
                                  partition_by=("run_date",), progress_seconds=0, metrics=metrics))
    aggregated = str(tmp_path / "aggregated")
    run_aggregate(AggregateOptions(stats=str(daily), output=aggregated, group_by=("system", "langpair")))
    for folder, metric in ((f, m) for f in (out, str(daily), aggregated) for m in metrics):
        query = dashboard_sql(metric.upper())
        with duckdb.connect() as con:
            con.execute(f"CREATE VIEW dashboard AS SELECT * FROM read_parquet("
                        f"'{folder}/dashboard/**/*.parquet', hive_partitioning = true)")
            on_duckdb = dict(con.execute(query).fetchall())
        spark.read.parquet(f"{folder}/dashboard").createOrReplaceTempView("dashboard")
        on_spark = {r["langpair"]: r[metric] for r in spark.sql(query).collect()}
        for engine in (on_duckdb, on_spark):
            assert engine.keys() == expected[metric].keys(), (folder, metric)
            for langpair, score in expected[metric].items():
                assert engine[langpair] == pytest.approx(score, abs=1e-9), (folder, metric, langpair)


@pytest.mark.browser
def test_the_report_of_a_partitioned_folder_has_a_line_per_system_over_its_days(spark, tmp_path):
    from playwright.sync_api import sync_playwright
    from test_report import CHROMIUM_ARGS_OF, load_screenshot_module

    table = generated_week(random.Random(2), days=3)
    out = tmp_path / "daily"
    score_days(spark, table.filter(pc.not_equal(table["run_date"], "2026-01-03")), tmp_path, out)
    last = str(tmp_path / "last.parquet")
    pq.write_table(table.filter(pc.equal(table["run_date"], "2026-01-03")), last)
    run_job(spark, JobOptions(input=last, output=str(out), partition_by=("run_date",), report=True,
                              progress_seconds=0))
    shot = load_screenshot_module()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shot.CHROMIUM, args=CHROMIUM_ARGS_OF(shot))
        page = browser.new_page()
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto("file://" + str(out / "report.html"), wait_until="load")
        assert page.eval_on_selector_all("section h2", "ns => ns.map(n => n.textContent.trim())") \
            == ["de-en", "en-zh"]
        for section in range(2):
            rows = page.eval_on_selector_all(f"#section-{section} table.scores tbody tr", "ns => ns.length")
            lines = page.eval_on_selector_all(
                f"#time-{section} .scatterlayer .trace path.js-line",
                "paths => paths.filter(p => p.getAttribute('d')).length")
            assert rows == lines == 3  # systems A, B, C: a row each, and a line over the 3 days
        # the header's run facts are the last run's; the scores cover the days kept and its own
        assert page.eval_on_selector_all(".partitions dd", "ns => ns.map(n => n.textContent)") == \
            ["2026-01-01, 2026-01-02, 2026-01-03 (3 partitions)"]
        browser.close()
    assert all(url.startswith(("file:", "data:", "blob:", "about:")) for url in requests)
