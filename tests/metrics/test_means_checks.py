"""Segment scores and checks as metrics, without a JVM: their statistics, scores, intervals and
clusters against a numpy replica of the same draws, and every check against a plain loop over
the same rows with the same detector."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import langid, metrics
from bleu_spark.errors import IncompatibleStatisticsError, ModelFileError, UsageError
from bleu_spark.languages import source_language, target_language
from bleu_spark.metrics.checks import CHECKS, parse_checks
from bleu_spark.metrics.means import MICRO, SegmentScore, parse_segment_scores
from bleu_spark.resampling import (percentile_bounds, poisson_interval, poisson_weights,
                                   replicate_sums, sacrebleu_interval)
from bleu_spark.resampling.clusters import add_clusters
from bleu_spark.rows import INVALID_SEGMENT_SCORE, NULL_SEGMENT_SCORE

SAMPLE = "samples/wmt22_sample.parquet"


def _values(n, seed=0):
    return np.random.default_rng(seed).normal(0.5, 0.2, n)


def test_segment_score_mean_is_the_mean_of_the_values():
    metric = SegmentScore("comet")
    values = _values(1000)
    stats = metric.row_statistics({"comet": pa.array(values)})
    assert stats.shape == (1000, 2) and (stats[:, 1] == 1).all()
    assert abs(metric.score(stats.sum(axis=0)) - values.mean()) < 1e-6
    # integer scores are exact
    ints = metric.row_statistics({"comet": pa.array([3, 4, 8], pa.int32())})
    assert metric.score(ints.sum(axis=0)) == 5.0


def test_segment_score_sums_are_the_same_in_any_order_and_partitioning():
    metric = SegmentScore("comet")
    stats = metric.row_statistics({"comet": pa.array(_values(5000, 1))})
    whole = stats.sum(axis=0)
    rng = np.random.default_rng(2)
    for _ in range(5):
        order = rng.permutation(len(stats))
        parts = np.array_split(stats[order], rng.integers(2, 40))
        assert (np.sum([p.sum(axis=0) for p in parts], axis=0) == whole).all()


def test_segment_score_rejects_null_nan_infinite_and_huge_values():
    metric = SegmentScore("comet")
    column = pa.array([0.5, None, float("nan"), float("inf"), -float("inf"), 2e6, -1e6])
    reasons = metric.rejections({"comet": column}).to_pylist()
    assert reasons == [None, NULL_SEGMENT_SCORE, INVALID_SEGMENT_SCORE, INVALID_SEGMENT_SCORE,
                       INVALID_SEGMENT_SCORE, INVALID_SEGMENT_SCORE, None]


def test_segment_score_options_and_names():
    assert parse_segment_scores("comet, metricx:lower") == (("comet", "higher"), ("metricx", "lower"))
    assert parse_segment_scores(["a:higher"]) == (("a", "higher"),)
    with pytest.raises(UsageError, match="twice"):
        parse_segment_scores("comet,comet:lower")
    with pytest.raises(UsageError, match="name of a metric"):
        metrics.extra_metrics((("bleu", "higher"),), (), {})
    with pytest.raises(UsageError, match="letters"):
        SegmentScore("bad name")
    lower = SegmentScore("metricx", "lower")
    assert not lower.higher_is_better
    row = {"metric": "metricx", **lower.measurement()}
    again = metrics.of_row(row, None)
    assert again.name == "metricx" and not again.higher_is_better
    assert again.signature() == lower.signature() and "better:lower" in lower.signature()
    with pytest.raises(IncompatibleStatisticsError):
        metrics.of_row({"metric": "mystery", "metric_options": "case:mixed"}, None)


def _poisson_replica(values, hashes, seed, n):
    """Each replicate's weighted mean, from the same hashed weights, in floats."""
    weights = poisson_weights(hashes, seed, n).astype(np.float64)  # (segments, n)
    return (values @ weights) / weights.sum(axis=0)


def test_poisson_interval_of_a_mean_equals_a_numpy_replica_of_the_same_draws():
    metric = SegmentScore("comet")
    values = _values(400, 3)
    hashes = np.random.default_rng(4).integers(-2 ** 63, 2 ** 63 - 1, 400)
    stats = metric.row_statistics({"comet": pa.array(values)})
    sums = replicate_sums(stats, poisson_weights(hashes, 12345, 1000))
    ours = metric.scores(sums)
    replica = _poisson_replica(values, hashes, 12345, 1000)
    assert np.abs(ours - replica).max() < 1e-6
    interval = poisson_interval(metric.score(stats.sum(axis=0)), ours, 12345)
    low, high = percentile_bounds(replica)
    assert abs(interval.low - low) < 1e-6 and abs(interval.high - high) < 1e-6
    assert abs(interval.mean - replica.mean()) < 1e-6


def test_sacrebleu_interval_of_a_mean_equals_a_numpy_replica_of_its_draws():
    metric = SegmentScore("comet")
    values = _values(300, 5)
    stats = metric.row_statistics({"comet": pa.array(values)})
    interval = sacrebleu_interval(stats, metric, 1000, 12345)
    draws = np.random.default_rng(12345).choice(300, size=(1000, 300), replace=True)
    replica = values[draws].mean(axis=1)
    low, high = np.sort(replica)[[1000 // 40, 1000 - 1000 // 40 - 1]]
    # sacrebleu sums its draws in float32: equal to the float64 replica within that precision
    assert abs(interval.low - low) < 1e-5 and abs(interval.high - high) < 1e-5
    assert abs(interval.score - values.mean()) < 1e-6


def test_clusters_of_means_equal_a_numpy_replica_and_follow_the_declared_direction():
    """Three systems over the same segments, two close and one far: ranks from the replica's
    own means agree, and a lower-is-better column ranks the lowest first."""
    rng = np.random.default_rng(6)
    base = rng.normal(0.5, 0.2, 300)
    systems = {"a": base + 0.30, "b": base + 0.001 * rng.normal(size=300), "c": base}
    hashes = rng.integers(-2 ** 63, 2 ** 63 - 1, 300)
    for better in ("higher", "lower"):
        metric = SegmentScore("comet", better)
        rows, replicates = [], []
        for name, values in systems.items():
            stats = metric.row_statistics({"comet": pa.array(values)})
            rows.append({"system": name, "metric": "comet", "score": metric.score(stats.sum(axis=0))})
            replicates.append(metric.scores(replicate_sums(stats, poisson_weights(hashes, 1, 1000))))
            assert np.abs(replicates[-1] - _poisson_replica(values, hashes, 1, 1000)).max() < 1e-6
        add_clusters(rows, replicates, key_of=lambda r: r["metric"], name_of=lambda r: r["system"],
                     higher_is_better_of=lambda r: metric.higher_is_better)
        ranks = {r["system"]: r["rank"] for r in rows}
        assert ranks["a"] == (1 if better == "higher" else 3)
        assert rows[0]["cluster"] != rows[1]["cluster"]


def test_pair_languages():
    assert (source_language("en-de"), target_language("en-de")) == ("en", "de")
    assert (source_language("ja-en"), target_language("ja-en")) == ("ja", "en")
    assert (source_language("en-ko-kr"), target_language("en-ko-kr")) == ("en", "ko")
    assert (source_language("zh-Hant-TW-en"), target_language("zh-Hant-TW-en")) == ("zh", "en")
    assert source_language(None) == "" and source_language("english") == ""


def test_unknown_checks_are_one_line():
    assert parse_checks("empty, COPY,empty") == ("empty", "copy")
    with pytest.raises(UsageError, match="unknown check 'spelling'"):
        parse_checks("empty,spelling")


def _sample(n=3000):
    table = pq.read_table(SAMPLE, columns=["langpair", "source", "candidate"])
    return table.take(np.random.default_rng(7).choice(table.num_rows, n, replace=False))


def _loop_flags(name, row):
    """A plain Python loop's verdict on one row: (flagged, judged)."""
    candidate, source, pair = row["candidate"], row["source"], row["langpair"]
    if name == "empty":
        return not candidate.split(), True
    if name == "copy":
        if source is None:
            return False, False
        return bool(candidate.split()) and candidate.split() == source.split(), True
    letters = sum(ch.isalpha() for ch in candidate)
    src, tgt = source_language(pair), target_language(pair)
    expected = src if name == "untranslated" else tgt
    if letters < langid.MIN_LETTERS or expected not in langid.known_languages() or src == tgt:
        return False, False
    found = langid.detect([candidate])[0]
    return (found == expected) if name == "untranslated" else (found != expected), True


@pytest.mark.parametrize("name", list(CHECKS))
def test_each_check_counts_what_a_plain_loop_counts(name):
    table = _sample()
    # constructed failures among real rows: empty, copied, and another language's text
    rows = table.to_pylist()
    for i in range(0, len(rows), 50):
        rows[i]["candidate"] = ["", "  \u3000 ", rows[i]["source"], " ".join(rows[i]["source"].split()) + " "][i // 50 % 4]
    table = pa.Table.from_pylist(rows, schema=table.schema)
    check = CHECKS[name]()
    stats = check.row_statistics({c: table[c].combine_chunks() for c in check.reads})
    expected = [_loop_flags(name, row) for row in rows]
    assert stats[:, 0].tolist() == [int(f) for f, _ in expected]
    assert stats[:, 2].tolist() == [int(not j) for _, j in expected]
    assert (stats[:, 1] == 1).all()
    assert check.score(stats.sum(axis=0)) == pytest.approx(100 * stats[:, 0].sum() / len(rows))


def test_constructed_systems_are_flagged_on_real_text():
    table = _sample(2000)
    pairs = table["langpair"]
    copied = {"candidate": table["source"], "source": table["source"], "langpair": pairs}
    emptied = {"candidate": pa.array([" "] * len(table)), "source": table["source"], "langpair": pairs}
    rate = lambda name, cols: CHECKS[name]().score(CHECKS[name]().row_statistics(cols).sum(axis=0))
    assert rate("copy", copied) == 100.0
    assert rate("empty", emptied) == 100.0
    judged = CHECKS["untranslated"]().row_statistics(copied)
    untranslated = judged[:, 0].sum() / (len(table) - judged[:, 2].sum())
    assert untranslated > 0.95  # the source left as it is: in the source language
    real = {"candidate": table["candidate"], "source": table["source"], "langpair": pairs}
    assert rate("copy", real) < 1 and rate("empty", real) < 1 and rate("untranslated", real) < 5


def test_a_missing_model_is_one_line(monkeypatch):
    langid._model_path.cache_clear()
    monkeypatch.setattr(langid.resources, "files", lambda _: (_ for _ in ()).throw(ModuleNotFoundError()))
    try:
        with pytest.raises(ModelFileError, match=r"bleu-spark\[checks\]"):
            langid.identity.__wrapped__()
    finally:
        langid._model_path.cache_clear()


def test_ter_on_asian_targets_warns_unless_asian_support_is_on():
    ter = metrics.get("ter").from_settings({})
    assert ter.target_warnings(["de", "en"]) == []
    [line] = ter.target_warnings(["de", "ja", "zh"])
    assert "ja, zh" in line and "--ter-asian-support" in line
    asian = metrics.get("ter").from_settings({"ter_asian_support": True, "ter_normalized": True})
    assert asian.target_warnings(["zh"]) == []
