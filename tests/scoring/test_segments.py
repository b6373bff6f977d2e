"""The segments table (`--segments`): sentence scores as sacrebleu's, summed equal to the
statistics table, any slice scored by `aggregate` as a fresh run grouped that way (intervals
included), written by the tasks on both scans, partitions replaced alone."""
import os
import random
import re

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from bleu_spark import statstable
from bleu_spark.aggregate import AggregateOptions, run_aggregate
from bleu_spark.resampling import Resampling
from bleu_spark.errors import MissingColumnError, UsageError
from bleu_spark.spark.job import JobOptions, run_job
from conftest import SAMPLE
from matching import sacrebleu_metric

METRICS = ("bleu", "chrf", "chrf++", "ter")
# sacrebleu's sentence scores: BLEU's with effective order, as `sentence_bleu`.
SENTENCE = {"bleu": {"effective_order": True}}
DOMAINS = ("news", "social", "ecommerce")
SPLIT = "spark.sql.files.maxPartitionBytes"
RESAMPLING = Resampling(confidence=True, n_bootstrap=200, seed=5)


def domain_table() -> pa.Table:
    """Two language pairs of the sample (one tokenized by zh), with a domain per segment."""
    table = pq.read_table(SAMPLE)
    table = table.filter(pc.is_in(table["langpair"], pa.array(["de-en", "en-zh"])))
    domains = [DOMAINS[seg % 3] for seg in table["seg_id"].to_pylist()]
    return table.append_column("domain", pa.array(domains))


@pytest.fixture(scope="module")
def scored(spark, tmp_path_factory):
    """One run writing segments (row groups of 500 rows: several tasks), with intervals."""
    folder = tmp_path_factory.mktemp("segments")
    path = str(folder / "in.parquet")
    table = domain_table()
    pq.write_table(table, path, row_group_size=500)
    options = JobOptions(input=path, output=str(folder / "out"), metrics=METRICS, segments=True,
                         segments_columns=("domain", "candidate", "references", "source"),
                         resampling=RESAMPLING, progress_seconds=0)
    result = run_job(spark, options)
    return folder, table, result


def test_each_row_and_metric_has_its_sentence_score_as_sacrebleu(scored):
    folder, table, _ = scored
    segments = pq.read_table(folder / "out" / "segments")
    assert segments.num_rows == table.num_rows * len(METRICS)
    rows = segments.to_pylist()
    by_metric = {m: {r["input_row"]: r for r in rows if r["metric"] == m} for m in METRICS}
    picked = random.Random(3).sample(range(table.num_rows), 150)
    originals = table.to_pylist()
    for metric in METRICS:
        assert sorted(by_metric[metric]) == list(range(table.num_rows))
        theirs = sacrebleu_metric(metric, **SENTENCE.get(metric, {}))
        for i in picked:
            row, original = by_metric[metric][i], originals[i]
            assert (row["candidate"], row["references"], row["domain"]) == \
                (original["candidate"], original["references"], original["domain"])
            if metric == "bleu":  # the row's own tokenizer, as sacrebleu's for its target
                theirs = sacrebleu_metric("bleu", **SENTENCE["bleu"], tokenize=row["tokenize"])
            expected = theirs.sentence_score(original["candidate"], original["references"]).score
            assert row["sentence_score"] == pytest.approx(expected, abs=1e-9), (metric, i)


def test_segments_summed_per_group_equal_the_statistics_table(scored):
    folder, _, _ = scored
    segments = pq.read_table(folder / "out" / "segments")
    stats = statstable.read(str(folder / "out"))
    keys = ["system", "langpair", *statstable.MEASUREMENT]
    summed = statstable.add_up(segments, keys)
    names = [c for c in statstable.value_columns(stats) if c not in statstable.SAMPLES
             and c != "n_reference_segments"]
    order = [(k, "ascending") for k in keys]
    mine = summed.sort_by(order).select(keys + names)
    theirs = stats.sort_by(order).select(keys + names)
    assert mine.num_rows == theirs.num_rows > 0
    assert mine.to_pylist() == theirs.to_pylist()


@pytest.fixture(scope="module")
def by_domain(spark, scored):
    """A fresh run of the same rows grouped by a column the segments carry."""
    folder, _, _ = scored
    return run_job(spark, JobOptions(input=str(folder / "in.parquet"), metrics=METRICS,
                                     group_by=("domain", "langpair"), resampling=RESAMPLING,
                                     progress_seconds=0)).scores


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_aggregate_by_a_carried_column_equals_a_fresh_run(spark, scored, by_domain, engine):
    folder, table, _ = scored
    fresh = by_domain
    aggregated = run_aggregate(AggregateOptions(
        stats=str(folder / "out" / "segments"), group_by=("domain", "langpair"), confidence=True,
        engine=engine, output=str(folder / f"agg-{engine}")), spark).scores
    key = lambda r: (r["domain"], r["langpair"], r["metric"])
    fresh, aggregated = {key(r): r for r in fresh}, {key(r): r for r in aggregated}
    assert fresh.keys() == aggregated.keys() and len(fresh) == len(DOMAINS) * 2 * len(METRICS)
    for k, row in fresh.items():
        for field in ("score", "signature", "verbose", "n_segments", "ci_low", "ci_high", "bs_mean"):
            assert aggregated[k][field] == row[field], (k, field)


def test_where_selects_segments_and_a_slice_without_intervals(scored):
    folder, table, _ = scored
    result = run_aggregate(AggregateOptions(stats=str(folder / "out" / "segments"),
                                            group_by=("system",), where="langpair = 'de-en' AND "
                                            "domain IN ('news', 'social')"))
    expected = table.filter(pc.and_(pc.equal(table["langpair"], "de-en"),
                                    pc.is_in(table["domain"], pa.array(["news", "social"]))))
    counts = {r["system"]: r["n_segments"] for r in result.scores if r["metric"] == "bleu"}
    systems = expected["system"].to_pylist()
    assert counts == {s: systems.count(s) for s in set(systems)}


def test_both_scans_write_the_same_segments(spark, tmp_path):
    table = domain_table().slice(0, 400)
    path = str(tmp_path / "in.parquet")
    pq.write_table(table, path, row_group_size=150)
    written, scans = {}, {}
    spark.conf.set(SPLIT, str(os.path.getsize(path) // 3))  # several tasks, a file each
    try:
        for scan in ("auto", "spark"):
            result = run_job(spark, JobOptions(
                input=path, output=str(tmp_path / scan), metrics=("bleu", "ter"), segments=True,
                segments_columns=("seg_id", "references"), scan=scan, progress_seconds=0))
            scans[scan] = result.run["layout"]["scan"]
    finally:
        spark.conf.unset(SPLIT)
    for scan in ("auto", "spark"):
        files = os.listdir(tmp_path / scan / "segments")
        assert len([f for f in files if f.endswith(".parquet")]) > 1, scan
        rows = pq.read_table(tmp_path / scan / "segments").to_pylist()
        written[scan] = sorted(rows, key=lambda r: (r["input_row"], r["metric"]))
    assert scans == {"auto": "arrow", "spark": "spark"}  # carrying the references: no second read
    assert written["auto"] == written["spark"] and len(written["auto"]) == 2 * table.num_rows
    assert {r["input_file"] for r in written["auto"]} == {"file:" + os.path.abspath(path)}


def test_a_segment_key_names_the_segments_and_a_rerun_replaces_its_day_alone(spark, tmp_path):
    table = domain_table()
    table = table.append_column("run_date", pa.array(
        [f"2026-01-0{1 + s % 2}" for s in table["seg_id"].to_pylist()]))
    out = str(tmp_path / "daily")
    for date in ("2026-01-01", "2026-01-02"):
        path = str(tmp_path / f"{date}.parquet")
        pq.write_table(table.filter(pc.equal(table["run_date"], date)), path)
        run_job(spark, JobOptions(input=path, output=out, partition_by=("run_date",), segments=True,
                                  segment_key=("testset", "langpair", "seg_id"), progress_seconds=0))
    first = pq.read_table(os.path.join(out, "segments", "run_date=2026-01-01"))
    assert "seg_id" in first.column_names and "input_row" not in first.column_names
    day2 = os.path.join(out, "segments", "run_date=2026-01-02")
    before = sorted(os.listdir(day2))
    smaller = table.filter(pc.and_(pc.equal(table["run_date"], "2026-01-02"),
                                   pc.equal(table["langpair"], "de-en")))
    path = str(tmp_path / "rerun.parquet")
    pq.write_table(smaller, path)
    run_job(spark, JobOptions(input=path, output=out, partition_by=("run_date",), segments=True,
                              segment_key=("testset", "langpair", "seg_id"), progress_seconds=0))
    assert pq.read_table(os.path.join(out, "segments", "run_date=2026-01-01")).equals(first)
    assert sorted(os.listdir(day2)) != before
    assert pq.read_table(day2).num_rows == smaller.num_rows


def test_a_segments_table_is_aggregated_by_the_columns_asked_for(scored):
    folder, _, _ = scored
    with pytest.raises(UsageError, match="--group-by"):
        run_aggregate(AggregateOptions(stats=str(folder / "out" / "segments")))


def test_segments_options_are_checked_before_any_work(tmp_path):
    path = str(tmp_path / "in.parquet")
    pq.write_table(domain_table().slice(0, 10), path)
    with pytest.raises(UsageError, match="--segments needs --output"):
        JobOptions(input=path, segments=True)
    with pytest.raises(UsageError, match="only used with --segments"):
        JobOptions(input=path, output=str(tmp_path / "o"), segments_columns=("domain",))
    from bleu_spark.spark.job import preflight

    with pytest.raises(MissingColumnError, match="no column nope"):
        preflight(JobOptions(input=path, output=str(tmp_path / "o"), segments=True,
                             segments_columns=("nope",)))
    clash = domain_table().slice(0, 10)
    clash = clash.append_column("input_row", pa.array(np.arange(10)))
    pq.write_table(clash, path)
    with pytest.raises(UsageError, match="input_row"):
        preflight(JobOptions(input=path, output=str(tmp_path / "o"), segments=True))


DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "segments.md")


def segments_sql(title: str) -> str:
    text = open(DOC, encoding="utf-8").read()
    return re.search(rf"```sql\n(-- {title}.*?)```", text, re.S).group(1)


def _on_both_engines(spark, folder: str, query: str):
    with duckdb.connect() as con:
        con.execute(f"CREATE VIEW segments AS SELECT * FROM read_parquet("
                    f"'{folder}/segments/**/*.parquet', hive_partitioning = true)")
        on_duckdb = [tuple(r) for r in con.execute(query).fetchall()]
    spark.read.parquet(f"{folder}/segments").createOrReplaceTempView("segments")
    on_spark = [tuple(r) for r in spark.sql(query).collect()]
    return on_duckdb, on_spark


def test_the_sql_of_the_docs_answers_on_duckdb_and_spark(spark, scored):
    """Each query of docs/segments.md, as written, against the same answer made in Python."""
    from bleu_spark import metrics
    from bleu_spark.metrics.bleu import BleuConfig

    folder, _, _ = scored
    out = str(folder / "out")
    rows = pq.read_table(os.path.join(out, "segments")).to_pylist()
    assert "Online-B" in {r["system"] for r in rows}
    chrf = [r for r in rows if r["metric"] == "chrf"]

    worst = []
    for key in sorted({(r["system"], r["langpair"]) for r in chrf}):
        mine = sorted((r for r in chrf if (r["system"], r["langpair"]) == key),
                      key=lambda r: (r["sentence_score"], r["segment_hash"]))[:5]
        worst += [(r["system"], r["langpair"], r["input_row"], r["sentence_score"], r["candidate"])
                  for r in mine]
    for engine in _on_both_engines(spark, out, segments_sql("worst segments per system")):
        assert engine == worst

    baseline = {(r["langpair"], r["segment_hash"]): r["sentence_score"] for r in chrf
                if r["system"] == "Online-B"}
    losses = sorted(((r["system"], r["langpair"], r["segment_hash"],
                      baseline[(r["langpair"], r["segment_hash"])] - r["sentence_score"])
                     for r in chrf if r["system"] != "Online-B"
                     and (r["langpair"], r["segment_hash"]) in baseline),
                    key=lambda r: (-r[3], r[0], r[2]))[:20]
    for engine in _on_both_engines(spark, out, segments_sql("regressions against a baseline")):
        assert [r[:3] for r in engine] == [r[:3] for r in losses]
        assert [r[3] for r in engine] == pytest.approx([r[3] for r in losses], abs=1e-12)

    bleu = metrics.configured(["bleu"], {}, BleuConfig())[0]
    bucket = lambda n: "short" if n < 15 else "medium" if n < 40 else "long"
    sums = {}
    for r in rows:
        if r["metric"] == "bleu" and r["system"] == "Online-B":
            key = (r["langpair"], bucket(r["sys_len"]))
            sums[key] = sums.get(key, np.zeros(bleu.width, np.int64)) + [r[n] for n in bleu.names]
    expected = {k: bleu.score(v) for k, v in sums.items()}
    for engine in _on_both_engines(spark, out, segments_sql("BLEU by length bucket")):
        assert {(r[0], r[1]) for r in engine} == set(expected) and len(expected) >= 4
        for langpair, name, score in engine:
            assert score == pytest.approx(expected[(langpair, name)], abs=1e-9)


def test_the_reports_drilldown_is_bounded_and_right(spark, scored, monkeypatch):
    """Per group and metric: the worst segments (TER's highest), the largest losses against
    the baseline on the same segment, and at most POINTS score pairs, as Python finds them."""
    from bleu_spark.spark import drilldown

    monkeypatch.setattr(drilldown, "POINTS", 50)  # fewer than a group's segments: the bound holds

    folder, _, _ = scored
    path = str(folder / "out" / "segments")
    from bleu_spark import store

    fs, root = store.filesystem(str(folder / "out"))
    frame = drilldown.read(spark, store.TableFiles(path, ""), store.live_files(fs, root, "segments"), {})
    found = drilldown.highlights(frame, ("system", "langpair"), ("input_file", "input_row"),
                                 ("candidate", "references"), "Online-B")
    rows = pq.read_table(path).to_pylist()
    worse = lambda r: r["sentence_score"] if r["metric"] == "ter" else -r["sentence_score"]
    groups = sorted({(r["system"], r["langpair"], r["metric"]) for r in rows})
    expected = []
    for key in groups:
        mine = [r for r in rows if (r["system"], r["langpair"], r["metric"]) == key]
        expected += sorted(mine, key=lambda r: (-worse(r), r["segment_hash"]))[:drilldown.WORST]
    shown = lambda r: (r["system"], r["langpair"], r["metric"], r["input_row"], r["candidate"])
    assert sorted(map(shown, found["worst"])) == sorted(map(shown, expected))
    base = {(r["langpair"], r["metric"], r["segment_hash"]): r for r in rows if r["system"] == "Online-B"}
    for loss in found["losses"]:
        other = base[(loss["langpair"], loss["metric"], loss["segment_hash"])]
        assert loss["baseline_score"] == other["sentence_score"] and loss["loss"] > 0
        assert loss["loss"] == pytest.approx(worse(loss) - worse(other))
    per_group = {}
    for point in found["points"]:
        key = (point["system"], point["langpair"], point["metric"])
        per_group[key] = per_group.get(key, 0) + 1
    paired = {}
    for r in rows:
        if r["system"] != "Online-B" and (r["langpair"], r["metric"], r["segment_hash"]) in base:
            key = (r["system"], r["langpair"], r["metric"])
            paired[key] = paired.get(key, 0) + 1
    assert per_group == {k: min(n, drilldown.POINTS) for k, n in paired.items()} and len(paired) > 4


HOSTILE = "</script><script>window.pwned = 1</script><b>bold</b>"


@pytest.mark.browser
def test_the_report_shows_segments_as_text_and_their_scatter(spark, tmp_path):
    """Opened in Chromium: each system's worst segments and losses against the baseline, a
    scatter of its segment scores against the baseline's, and a hostile segment as text."""
    from playwright.sync_api import sync_playwright
    from test_report import load_screenshot_module

    table = domain_table()
    table = table.filter(pc.equal(table["langpair"], "de-en"))
    candidates = table["candidate"].to_pylist()
    first = table["system"].to_pylist().index("Online-A")
    candidates[first] = HOSTILE  # scores about 0: among Online-A's worst, and a loss
    table = table.set_column(table.schema.get_field_index("candidate"), "candidate", pa.array(candidates))
    path = str(tmp_path / "in.parquet")
    pq.write_table(table, path)
    out = tmp_path / "out"
    run_job(spark, JobOptions(input=path, output=str(out), metrics=("bleu", "ter"), segments=True,
                              segments_columns=("source", "candidate", "references"), report=True,
                              resampling=Resampling(paired_bs=True, baseline="Online-B", n_bootstrap=50),
                              progress_seconds=0))
    shot = load_screenshot_module()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shot.CHROMIUM, args=shot.CHROMIUM_ARGS)
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto("file://" + str(out / "report.html"), wait_until="load")
        systems = set(table["system"].to_pylist())
        for section in ("#section-0", "#section-1"):  # de-en BLEU, de-en TER
            summaries = page.eval_on_selector_all(f"{section} details.segments > summary",
                                                  "ns => ns.map(n => n.textContent.trim())")
            assert set(summaries) == systems
            points = page.eval_on_selector_all(f"{section} .chart.scatter .scatterlayer path.point",
                                               "ns => ns.length")
            assert points > 100
        cells = page.eval_on_selector_all("table.segments td", "ns => ns.map(n => n.textContent)")
        assert HOSTILE in cells
        assert page.evaluate("window.pwned") is None and errors == []
        assert page.eval_on_selector_all("table.segments td b", "ns => ns.length") == 0
        headings = page.eval_on_selector_all("#section-1 details.segments h4", "ns => ns.map(n => n.textContent)")
        assert "Highest TER" in headings and "Lost most against Online-B" in headings
        browser.close()
