"""Confidence intervals and paired tests through the job, on Spark: sacrebleu's own draws replayed
exactly, and hashed Poisson replicates that do not depend on partitioning, order or slicing."""
import random

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from bleu_spark.metrics.bleu import BleuConfig
from bleu_spark.aggregate import AggregateOptions, run_aggregate
from bleu_spark.resampling import POISSON, SACREBLEU, Resampling
from bleu_spark.spark.job import JobOptions, run_job, score_dataframe
from conftest import SAMPLE
from test_bootstrap import sacrebleu_bounds, sacrebleu_metric, sacrebleu_paired, sample_systems
from test_scheduled import generated_week
from bleu_spark.oracle import reference_streams

pytestmark = pytest.mark.spark

TOLERANCE = 1e-9
SEGMENT_KEY = ("testset", "langpair", "seg_id")
INTERVAL = ("bs_mean", "ci_low", "ci_high", "ci_halfwidth")


@pytest.mark.parametrize("langpair", ["en-de", "zh-en"])
def test_sacrebleu_method_equals_sacrebleu_for_every_system(spark, tmp_path, monkeypatch, langpair):
    systems = sample_systems(langpair)
    names = sorted(systems)
    baseline = names[0]
    path = str(tmp_path / "in.parquet")
    pq.write_table(pq.read_table(SAMPLE, filters=[("langpair", "=", langpair)]), path)
    resampling = Resampling(confidence=True, method=SACREBLEU, paired_bs=True,
                            paired_ar=True, baseline=baseline, n_ar_trials=1000)
    result = run_job(spark, JobOptions(input=path, segment_key=SEGMENT_KEY, resampling=resampling,
                                       progress_seconds=0))
    monkeypatch.setenv("SACREBLEU_SEED", "12345")
    metric = sacrebleu_metric(BleuConfig(), "13a")
    references = [row["references"] for row in systems[baseline]]
    paired = {(r["system"], r["test"]): r for r in result.paired}
    assert len(paired) == 2 * (len(names) - 1)
    for row in result.scores:
        hypotheses = [r["candidate"] for r in systems[row["system"]]]
        theirs = metric.corpus_score(hypotheses, reference_streams(references), n_bootstrap=1000)
        assert row["bs_mean"] == pytest.approx(theirs._mean, abs=TOLERANCE)
        assert row["ci_halfwidth"] == pytest.approx(theirs._ci, abs=TOLERANCE)
        low, high = sacrebleu_bounds(hypotheses, references, BleuConfig(), 1000)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), abs=TOLERANCE)
        assert row["signature"].startswith(f"nrefs:{theirs_nrefs(references)}|bs:1000|seed:12345|case")
        if row["system"] == baseline:
            continue
        base = [r["candidate"] for r in systems[baseline]]
        for test, trials in (("bs", 1000), ("ar", 1000)):
            _, bl, sys_result = sacrebleu_paired(base, hypotheses, references, BleuConfig(), test, trials)
            ours = paired[row["system"], f"paired-{test}"]
            assert ours["delta"] == pytest.approx(sys_result.score - bl.score, abs=TOLERANCE)
            assert ours["p_value"] == pytest.approx(sys_result.p_value, abs=TOLERANCE)


def theirs_nrefs(references):
    return len(references[0])


def poisson_scores(frame, **options):
    resampling = Resampling(confidence=True, paired_bs=True, baseline="Online-B", n_bootstrap=200)
    return score_dataframe(frame, segment_key=SEGMENT_KEY, resampling=resampling, **options)


def test_poisson_intervals_do_not_depend_on_partitions_or_row_order(spark):
    sample = spark.read.parquet(SAMPLE).where("seg_id < 60 and langpair in ('de-en', 'en-zh')")
    runs = [poisson_scores(sample.repartition(n)) for n in (1, 3, 7)]
    runs.append(poisson_scores(sample.orderBy(F.rand(seed=3)).repartition(5)))
    first = {(r["system"], r["langpair"]): r for r in runs[0]}
    assert all(first[k]["ci_low"] < first[k]["score"] < first[k]["ci_high"] for k in first)
    for other in runs[1:]:
        assert {(r["system"], r["langpair"]): tuple(r[f] for f in INTERVAL) for r in other} \
            == {k: tuple(r[f] for f in INTERVAL) for k, r in first.items()}


def test_aggregate_of_saved_replicates_gives_the_intervals_of_a_fresh_run(spark, tmp_path):
    table = generated_week(random.Random(8), days=3)
    out = tmp_path / "daily"
    resampling = Resampling(confidence=True, n_bootstrap=300, seed=7)
    for date in sorted(set(table["run_date"].to_pylist())):
        path = str(tmp_path / f"day-{date}.parquet")
        pq.write_table(table.filter(pc.equal(table["run_date"], date)), path)
        run_job(spark, JobOptions(input=path, output=str(out), partition_by=("run_date",),
                                  segment_key=("run_date", "langpair", "seg_id"),
                                  resampling=resampling, progress_seconds=0))
    whole = str(tmp_path / "all.parquet")
    pq.write_table(table, whole)
    fresh = run_job(spark, JobOptions(input=whole, group_by=("langpair", "system"),
                                      segment_key=("run_date", "langpair", "seg_id"),
                                      resampling=resampling, progress_seconds=0)).scores
    saved = run_aggregate(AggregateOptions(stats=str(out), group_by=("langpair", "system"),
                                           confidence=True)).scores
    key = lambda rows: {(r["langpair"], r["system"]): tuple(r[f] for f in (*INTERVAL, "signature"))
                        for r in rows}
    assert key(saved) == key(fresh)
    assert all("|bs:300|seed:7|bsm:poisson|" in r["signature"] for r in saved)


def test_poisson_agrees_with_sacrebleu_on_the_sample(spark, tmp_path):
    """The hashed bootstrap is another draw of the same distribution: bounds near sacrebleu's
    and the same significance verdict where sacrebleu's p is far from 0.05."""
    path = str(tmp_path / "in.parquet")
    pq.write_table(pq.read_table(SAMPLE, filters=[("langpair", "in", ["en-de", "de-en"])]), path)
    common = dict(input=path, segment_key=SEGMENT_KEY, progress_seconds=0)
    runs = {method: run_job(spark, JobOptions(resampling=Resampling(
        confidence=True, method=method, paired_bs=True, baseline="Online-B"), **common))
        for method in (POISSON, SACREBLEU)}
    ours = {(r["langpair"], r["system"]): r for r in runs[POISSON].scores}
    theirs = {(r["langpair"], r["system"]): r for r in runs[SACREBLEU].scores}
    for key, row in theirs.items():
        # ~160 segments per group: intervals ~8 BLEU wide, so resampling noise is ~0.5
        assert abs(ours[key]["ci_low"] - row["ci_low"]) < 1.5, key
        assert abs(ours[key]["ci_high"] - row["ci_high"]) < 1.5, key
    p_ours = {(r["langpair"], r["system"]): r["p_value"] for r in runs[POISSON].paired}
    p_theirs = {(r["langpair"], r["system"]): r["p_value"] for r in runs[SACREBLEU].paired}
    far = [k for k, p in p_theirs.items() if not 0.01 <= p <= 0.2]
    assert len(far) >= 5
    assert all((p_ours[k] < 0.05) == (p_theirs[k] < 0.05) for k in far)


def test_replicate_sums_of_other_draws(spark, tmp_path):
    """A day scored without --confidence adds up for scores, and is refused, by name, for
    intervals."""
    from bleu_spark.errors import UsageError

    table = generated_week(random.Random(9), days=3)
    out = tmp_path / "daily"
    for date in sorted(set(table["run_date"].to_pylist())):
        path = str(tmp_path / f"day-{date}.parquet")
        pq.write_table(table.filter(pc.equal(table["run_date"], date)), path)
        confidence = Resampling(confidence=True, n_bootstrap=50, seed=3) if date != "2026-01-03" else Resampling()
        run_job(spark, JobOptions(input=path, output=str(out), partition_by=("run_date",),
                                  resampling=confidence, progress_seconds=0))
    options = dict(stats=str(out), group_by=("langpair", "system"))
    two_days = dict(options, where="run_date < '2026-01-03'")
    saved = run_aggregate(AggregateOptions(**two_days, confidence=True))
    assert all(r["ci_low"] <= r["score"] <= r["ci_high"] for r in saved.scores)
    with pytest.raises(UsageError, match="different draws, or rows without any"):
        run_aggregate(AggregateOptions(**options, confidence=True))
    plain = run_aggregate(AggregateOptions(**options)).scores
    assert sum(r["n_segments"] for r in plain) == table.num_rows


def test_poisson_draws_no_interval_over_one_segment_and_pairs_only_equal_segments(spark, tmp_path):
    from bleu_spark.errors import UsageError

    sample = spark.read.parquet(SAMPLE).where("seg_id < 30 and langpair = 'de-en'")
    one = sample.where("seg_id = 0 or system = 'Online-B'")  # one segment for every other system
    scores = score_dataframe(one, segment_key=SEGMENT_KEY, resampling=Resampling(confidence=True))
    assert {r["n_segments"] for r in scores if r["system"] != "Online-B"} == {1}
    assert all(r["ci_low"] is None and r["bs_mean"] is None for r in scores if r["n_segments"] == 1)
    assert all(r["ci_low"] is not None for r in scores if r["n_segments"] > 1)
    paired = Resampling(paired_bs=True, paired_ar=True, baseline="Online-B", n_ar_trials=100)
    sample.write.parquet(str(tmp_path / "same"))
    sample.where("seg_id >= 10 or system = 'Online-B'").write.parquet(str(tmp_path / "fewer"))
    with pytest.raises(UsageError, match="paired tests compare systems on the same segments.*covers other segments than Online-B"):
        run_job(spark, JobOptions(input=str(tmp_path / "fewer"), resampling=paired, progress_seconds=0))
    same = run_job(spark, JobOptions(input=str(tmp_path / "same"), resampling=paired, progress_seconds=0))
    assert len(same.paired) == 2 * (len(same.scores) - 1)
