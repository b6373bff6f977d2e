"""Segment scores and checks through the whole job on Spark: group means equal numpy's over the
same rows, check counts equal the checks run over the whole table at once, nulls are rejected
with their reason, references are optional, and `aggregate` of a slice equals a fresh run."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from bleu_spark.aggregate import AggregateOptions, run_aggregate
from bleu_spark.errors import InvalidRowsError, MissingColumnError, ColumnTypeError
from bleu_spark.metrics.checks import CHECKS
from bleu_spark.resampling import Resampling
from bleu_spark.spark.job import JobOptions, run_job
from conftest import SAMPLE

pytestmark = pytest.mark.spark
GROUPS = ("langpair", "system")


@pytest.fixture(scope="module")
def scored_sample(tmp_path_factory):
    """The sample with a segment score column and, every 97th row, a null one."""
    table = pq.read_table(SAMPLE)
    values = np.random.default_rng(3).normal(0.6, 0.2, table.num_rows)
    table = table.append_column("comet", pa.array(values))
    folder = tmp_path_factory.mktemp("segment_scores")
    path = str(folder / "scored.parquet")
    pq.write_table(table, path)
    nulls = table.set_column(table.schema.get_field_index("comet"), "comet",
                             pa.array([None if i % 97 == 0 else v for i, v in enumerate(values)]))
    with_nulls = str(folder / "nulls.parquet")
    pq.write_table(nulls, with_nulls)
    no_refs = str(folder / "no_references.parquet")
    pq.write_table(table.drop_columns(["references"]), no_refs)
    return table, path, with_nulls, no_refs


def _by_group(scores, metric):
    return {(r["langpair"], r["system"]): r for r in scores if r["metric"] == metric}


def test_group_means_and_checks_equal_numpy_and_the_checks_over_the_whole_table(spark, scored_sample):
    table, _, _, no_refs = scored_sample
    checks = tuple(CHECKS)
    result = run_job(spark, JobOptions(input=no_refs, group_by=GROUPS, segment_scores=("comet",),
                                       checks=checks, progress_seconds=0))
    assert {r["metric"] for r in result.scores} == {"comet", *checks}  # no BLEU: no references
    keys = list(zip(table["langpair"].to_pylist(), table["system"].to_pylist()))
    comet = table["comet"].to_numpy()
    for key, row in _by_group(result.scores, "comet").items():
        mine = np.array([k == key for k in keys])
        assert row["n_segments"] == mine.sum()
        assert abs(row["score"] - comet[mine].mean()) < 1e-6
    for name in checks:
        check = CHECKS[name]()
        stats = check.row_statistics({c: table[c] for c in check.reads})
        for key, row in _by_group(result.scores, name).items():
            mine = np.array([k == key for k in keys])
            assert row.statistics == dict(zip(check.names, stats[mine].sum(axis=0).tolist()))
            assert row["score"] == pytest.approx(100 * stats[mine, 0].sum() / mine.sum())


def test_null_segment_scores_are_rejected_with_their_reason(spark, scored_sample, tmp_path):
    table, _, with_nulls, _ = scored_sample
    with pytest.raises(InvalidRowsError, match="null_segment_score"):
        run_job(spark, JobOptions(input=with_nulls, segment_scores=("comet",), progress_seconds=0))
    out = tmp_path / "out"
    result = run_job(spark, JobOptions(input=with_nulls, output=str(out), group_by=GROUPS,
                                       metrics=("bleu",), segment_scores=("comet",),
                                       on_invalid="quarantine", progress_seconds=0))
    rejected = pq.read_table(out / "rejected")
    expected = -(-table.num_rows // 97)
    assert rejected.num_rows == expected
    assert set(rejected["reason"].to_pylist()) == {"null_segment_score"}
    # every metric of the run covers the same rows
    for metric in ("bleu", "comet"):
        assert sum(r["n_segments"] for r in result.scores if r["metric"] == metric) == table.num_rows - expected


def test_a_reference_metric_without_references_and_a_text_score_column_are_one_line(spark, scored_sample):
    _, path, _, no_refs = scored_sample
    with pytest.raises(MissingColumnError, match="references"):
        run_job(spark, JobOptions(input=no_refs, metrics=("bleu",), segment_scores=("comet",),
                                  progress_seconds=0))
    with pytest.raises(ColumnTypeError, match="system"):
        run_job(spark, JobOptions(input=path, segment_scores=("system",), progress_seconds=0))


def test_aggregate_of_a_slice_equals_a_fresh_run_of_it_with_intervals_and_clusters(spark, scored_sample, tmp_path):
    table, path, _, _ = scored_sample
    options = dict(group_by=GROUPS, segment_scores=("comet:lower",), checks=("empty", "copy"),
                   progress_seconds=0)
    out = tmp_path / "all"
    drawn = Resampling(confidence=True, clusters=True)
    run_job(spark, JobOptions(input=path, output=str(out), resampling=drawn, **options))
    sliced = run_aggregate(AggregateOptions(stats=str(out), group_by=GROUPS, confidence=True,
                                            clusters=True, where="langpair = 'ja-en'",
                                            output=str(tmp_path / "agg"))).scores
    part = str(tmp_path / "ja-en.parquet")
    pq.write_table(table.filter(pc.equal(table["langpair"], "ja-en")), part)
    fresh = run_job(spark, JobOptions(input=part, resampling=drawn, **options)).scores
    fields = ("score", "n_segments", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "cluster")
    for metric in ("comet", "empty", "copy"):
        mine, theirs = _by_group(sliced, metric), _by_group(fresh, metric)
        assert mine.keys() == theirs.keys() and mine
        for key in mine:
            assert {f: mine[key][f] for f in fields} == {f: theirs[key][f] for f in fields}
    # lower is better: the best-ranked system has the lowest mean
    ranked = sorted(_by_group(fresh, "comet").values(), key=lambda r: r["rank"])
    assert ranked[0]["score"] == min(r["score"] for r in ranked)


def test_paired_tests_of_a_segment_score_compare_its_means(spark, scored_sample):
    _, path, _, _ = scored_sample
    tests = Resampling(paired_bs=True, paired_ar=True, baseline="Online-A", n_ar_trials=1000)
    result = run_job(spark, JobOptions(input=path, group_by=GROUPS, segment_scores=("comet",),
                                       resampling=tests, progress_seconds=0))
    means = {(r["langpair"], r["system"]): r["score"] for r in result.scores}
    paired = [p for p in result.paired if p["metric"] == "comet"]
    assert {p["test"] for p in paired} == {"paired-bs", "paired-ar"}
    assert len(paired) == 2 * sum(1 for lp, s in means if s != "Online-A" and (lp, "Online-A") in means)
    for p in paired:
        assert abs(p["delta"] - (means[p["langpair"], p["system"]] - means[p["langpair"], "Online-A"])) < 1e-9
        assert 0 <= p["p_value"] <= 1
