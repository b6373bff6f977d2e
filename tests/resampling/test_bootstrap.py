"""Bootstrap intervals and paired tests: the sacrebleu replay against sacrebleu 2.6 itself, and
the poisson method against direct per-segment computations."""
import random
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.metrics.bleu import BLEU
from sacrebleu.significance import PairedTest, _bootstrap_resample

from bleu_spark import resampling
from bleu_spark.resampling import (MAX_SACREBLEU_SEGMENTS, ar_swaps, bootstrap_signature, poisson,
                                   poisson_interval, poisson_paired_ar, poisson_paired_bs,
                                   poisson_weights, replicate_sums, sacrebleu_interval,
                                   sacrebleu_paired_ar, sacrebleu_paired_bs, scores_of_sums,
                                   with_bootstrap_fields)
from bleu_spark.languages import TextSettings
from bleu_spark.metrics.bleu import Bleu, BleuConfig
from bleu_spark.errors import UsageError
from bleu_spark.oracle import reference_streams
from bleu_spark.metrics.bleu import bleu_from_statistics
from bleu_spark.metrics.bleu.signature import bleu_signature
from bleu_spark.metrics.bleu.stats import segment_statistics
from bleu_spark.tokenizers import LineTokenizer
from conftest import SAMPLE, random_sentences

TOLERANCE = 1e-9


def our_statistics(candidates, references, config, tokenize="13a"):
    tokenizer = LineTokenizer(tokenize, config.lowercase)
    return segment_statistics(pa.array(candidates, pa.string()),
                              pa.array(references, pa.list_(pa.string())), tokenizer,
                              config.max_ngram_order).stats


def sacrebleu_metric(config, tokenize="13a"):
    return BLEU(tokenize=tokenize, smooth_method=config.smooth_method,
                smooth_value=config.smooth_value, max_ngram_order=config.max_ngram_order,
                effective_order=config.effective_order)


def generated_corpus(seed, n_segments, n_systems=2):
    rng = random.Random(seed)
    references = [[r] for r in random_sentences(rng, n_segments)]
    systems = []
    for _ in range(n_systems):
        # Candidates that share words with their reference, so scores are far from 0.
        systems.append([" ".join(ref[0].split()[:rng.randint(1, 30)]) + " " + noise
                        for ref, noise in zip(references, random_sentences(rng, n_segments))])
    return systems, references


def sacrebleu_bounds(hypotheses, references, config, n_samples, tokenize="13a"):
    """Percentile bounds of sacrebleu's own resample scores (seed from SACREBLEU_SEED)."""
    metric = sacrebleu_metric(config, tokenize)
    stats = metric._extract_corpus_statistics(hypotheses, reference_streams(references))
    _, scores = _bootstrap_resample(stats, metric, n_samples)
    return resampling.percentile_bounds(np.array([s.score for s in scores]))


def assert_interval_matches_sacrebleu(hypotheses, references, config, n_samples, seed,
                                      monkeypatch, tokenize="13a"):
    monkeypatch.setenv("SACREBLEU_SEED", str(seed))
    stats = our_statistics(hypotheses, references, config, tokenize)
    ours = sacrebleu_interval(stats, Bleu(config), n_samples=n_samples, seed=seed)
    theirs = sacrebleu_metric(config, tokenize).corpus_score(
        hypotheses, reference_streams(references), n_bootstrap=n_samples)
    assert ours.score == pytest.approx(theirs.score, abs=TOLERANCE)
    assert ours.mean == pytest.approx(theirs._mean, abs=TOLERANCE)
    assert ours.halfwidth == pytest.approx(theirs._ci, abs=TOLERANCE)
    low, high = sacrebleu_bounds(hypotheses, references, config, n_samples, tokenize)
    assert (ours.low, ours.high) == pytest.approx((low, high), abs=TOLERANCE)
    return ours


def sacrebleu_paired(baseline, system, references, config, test_type, n_samples,
                     tokenize="13a"):
    """sacrebleu's PairedTest result for `system` against `baseline`."""
    metric = sacrebleu_metric(config, tokenize)
    test = PairedTest([("baseline", baseline), ("system", system)], {"BLEU": metric},
                      reference_streams(references), test_type=test_type, n_samples=n_samples)
    signatures, results = test()
    return signatures["BLEU"], results["BLEU"][0], results["BLEU"][1]


def assert_paired_matches_sacrebleu(baseline, system, references, config, monkeypatch,
                                    n_samples=1000, n_trials=1000, seed=12345, tokenize="13a"):
    monkeypatch.setenv("SACREBLEU_SEED", str(seed))
    bl_stats = our_statistics(baseline, references, config, tokenize)
    sys_stats = our_statistics(system, references, config, tokenize)

    ours = sacrebleu_paired_bs(bl_stats, sys_stats, Bleu(config), n_samples=n_samples, seed=seed)
    _, bl_result, sys_result = sacrebleu_paired(baseline, system, references, config, "bs",
                                                n_samples, tokenize)
    assert ours.delta == pytest.approx(sys_result.score - bl_result.score, abs=TOLERANCE)
    assert ours.p_value == pytest.approx(sys_result.p_value, abs=TOLERANCE)
    # The delta interval from sacrebleu's own resampling of each system with the same seed.
    metric = sacrebleu_metric(config, tokenize)
    streams = reference_streams(references)
    resampled = [np.array([s.score for s in _bootstrap_resample(
        metric._extract_corpus_statistics(hyps, streams), metric, n_samples)[1]])
        for hyps in (baseline, system)]
    low, high = resampling.percentile_bounds(resampled[1] - resampled[0])
    assert (ours.delta_ci_low, ours.delta_ci_high) == pytest.approx((low, high), abs=TOLERANCE)

    ours = sacrebleu_paired_ar(bl_stats, sys_stats, Bleu(config), n_trials=n_trials, seed=seed)
    _, bl_result, sys_result = sacrebleu_paired(baseline, system, references, config, "ar",
                                                n_trials, tokenize)
    assert ours.delta == pytest.approx(sys_result.score - bl_result.score, abs=TOLERANCE)
    assert ours.p_value == pytest.approx(sys_result.p_value, abs=TOLERANCE)
    assert ours.delta_ci_low is None and ours.test == resampling.PAIRED_AR


# --- sacrebleu replay on generated text ----------------------------------------------------------

CONFIGS = [BleuConfig(), BleuConfig(smooth_method="floor", smooth_value=0.5),
           BleuConfig(smooth_method="add-k"), BleuConfig(smooth_method="none"),
           BleuConfig(effective_order=True, max_ngram_order=3)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.smooth_method}-{c.max_ngram_order}")
def test_interval_replays_sacrebleu_on_generated_text(config, monkeypatch):
    systems, references = generated_corpus(1, 60)
    assert_interval_matches_sacrebleu(systems[0], references, config, 1000, 12345, monkeypatch)


@pytest.mark.parametrize("seed,n_samples", [(7, 200), (2024, 1000), (1, 41)])
def test_interval_follows_seed_and_sample_count(seed, n_samples, monkeypatch):
    systems, references = generated_corpus(seed, 40)
    assert_interval_matches_sacrebleu(systems[0], references, BleuConfig(), n_samples, seed,
                                      monkeypatch)


def test_short_segments_with_zero_counts(monkeypatch):
    """Candidates of one to four words: many resamples have no 4-gram (or 3-gram) matches."""
    rng = random.Random(3)
    references = [[r] for r in random_sentences(rng, 30)]
    hypotheses = [" ".join(ref[0].split()[:rng.randint(1, 4)]) for ref in references]
    for config in (BleuConfig(), BleuConfig(smooth_method="floor"), BleuConfig(effective_order=True),
                   BleuConfig(smooth_method="none")):
        interval = assert_interval_matches_sacrebleu(hypotheses, references, config, 300, 12345,
                                                     monkeypatch)
        assert interval.high > 0


@pytest.mark.parametrize("config", [BleuConfig(), BleuConfig(smooth_method="add-k", smooth_value=2)],
                         ids=["exp", "add-k"])
def test_paired_tests_replay_sacrebleu_on_generated_text(config, monkeypatch):
    (baseline, system), references = generated_corpus(5, 80)
    assert_paired_matches_sacrebleu(baseline, system, references, config, monkeypatch)


def test_paired_ar_with_default_trials(monkeypatch):
    (baseline, system), references = generated_corpus(9, 50)
    monkeypatch.setenv("SACREBLEU_SEED", "12345")
    ours = sacrebleu_paired_ar(our_statistics(baseline, references, BleuConfig()),
                               our_statistics(system, references, BleuConfig()), Bleu(BleuConfig()))
    _, _, sys_result = sacrebleu_paired(baseline, system, references, BleuConfig(), "ar", 0)
    assert ours.p_value == pytest.approx(sys_result.p_value, abs=TOLERANCE)


def test_signature_fields_are_sacrebleus(monkeypatch):
    monkeypatch.setenv("SACREBLEU_SEED", "777")
    systems, references = generated_corpus(2, 20)
    metric = sacrebleu_metric(BleuConfig())
    metric.corpus_score(systems[0], reference_streams(references), n_bootstrap=300)
    plain = bleu_signature(BleuConfig(), 1, metric.tokenizer_signature)
    fields = bootstrap_signature(resampling.SACREBLEU, 300, 777)
    assert with_bootstrap_fields(plain, fields) == str(metric.get_signature())
    for test_type, n in (("bs", 200), ("ar", 300)):
        signature, _, _ = sacrebleu_paired(systems[0], systems[1], references, BleuConfig(),
                                           test_type, n)
        fields = bootstrap_signature(resampling.SACREBLEU, n, 777, kind=test_type)
        assert with_bootstrap_fields(plain, fields) == str(signature)
    assert bootstrap_signature(resampling.POISSON, 1000, 5) == "bs:1000|seed:5|bsm:poisson"


def test_replay_refuses_what_it_cannot_replay():
    too_many = np.zeros((MAX_SACREBLEU_SEGMENTS + 1, 10), np.int64)
    with pytest.raises(UsageError, match="poisson"):
        sacrebleu_interval(too_many, Bleu(BleuConfig()))
    weighted = BleuConfig(weights=(0.4, 0.3, 0.2, 0.1))
    with pytest.raises(UsageError, match="weights"):
        sacrebleu_interval(np.ones((3, 10), np.int64), Bleu(weighted))
    with pytest.raises(UsageError, match="same segments"):
        sacrebleu_paired_bs(np.ones((3, 10), np.int64), np.ones((4, 10), np.int64), Bleu(BleuConfig()))


# --- sacrebleu replay on the bundled WMT22 sample -----------------------------------------------

def sample_systems(langpair):
    rows = pq.read_table(SAMPLE, filters=[("langpair", "=", langpair)]).to_pylist()
    systems = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["system"], r["seg_id"])):
        systems[row["system"]].append(row)
    return systems


@pytest.mark.parametrize("langpair", ["en-de", "zh-en"])
def test_sample_every_system_replays_sacrebleu(langpair, monkeypatch):
    config = BleuConfig()
    tokenize = TextSettings().tokenizer_for(langpair)
    systems = sample_systems(langpair)
    names = sorted(systems)
    references = [row["references"] for row in systems[names[0]]]
    baseline = [row["candidate"] for row in systems[names[0]]]
    for name in names:
        assert [row["references"] for row in systems[name]] == references
        hypotheses = [row["candidate"] for row in systems[name]]
        assert_interval_matches_sacrebleu(hypotheses, references, config, 1000, 12345,
                                          monkeypatch, tokenize)
        if name != names[0]:
            assert_paired_matches_sacrebleu(baseline, hypotheses, references, config,
                                            monkeypatch, n_trials=500, tokenize=tokenize)


# --- poisson method ---------------------------------------------------------------------------

HASHES = np.array([0, 1, 2, -1, 2 ** 62, -2 ** 63, 123456789], np.int64)


def test_weights_are_a_pure_function_of_seed_hash_and_replicate():
    weights = poisson_weights(HASHES, 42, 1000)
    assert weights.shape == (len(HASHES), 1000) and weights.dtype == np.uint8
    order = np.array([3, 0, 6, 1, 5, 2, 4])
    assert (poisson_weights(HASHES[order], 42, 1000) == weights[order]).all()
    assert (poisson_weights(HASHES[2:4], 42, 1000) == weights[2:4]).all()
    assert (poisson_weights(HASHES, 42, 37) == weights[:, :37]).all()
    many = np.arange(5000, dtype=np.int64)  # spans several internal chunks
    assert (poisson_weights(many, 42, 10)[1234] == poisson_weights(many[1234:1235], 42, 10)[0]).all()
    assert (poisson_weights(HASHES, 43, 1000) != weights).mean() > 0.5


def test_weights_are_poisson_one():
    weights = poisson_weights(np.arange(4000, dtype=np.int64), 12345, 1000).astype(np.float64)
    assert abs(weights.mean() - 1) < 5e-3
    assert abs(weights.var() - 1) < 1e-2
    assert abs((weights == 0).mean() - np.exp(-1)) < 2e-3
    assert abs((weights == 2).mean() - np.exp(-1) / 2) < 2e-3
    # Replicates of one segment and neighbouring segments are uncorrelated.
    assert abs(np.corrcoef(weights[:, 0], weights[:, 1])[0, 1]) < 0.05
    assert abs(np.corrcoef(weights[:-1, 0], weights[1:, 0])[0, 1]) < 0.05


def test_swaps_are_fair_coins_independent_of_the_weights():
    hashes = np.arange(4000, dtype=np.int64)
    swaps = ar_swaps(hashes, 12345, 1000)
    assert swaps.shape == (4000, 1000) and swaps.dtype == bool
    assert abs(swaps.mean() - 0.5) < 5e-3
    assert (ar_swaps(hashes[10:20], 12345, 70) == swaps[10:20, :70]).all()
    weights = poisson_weights(hashes, 12345, 1000)
    assert abs(np.corrcoef(swaps[:, 0], weights[:, 0] > 0)[0, 1]) < 0.05
    assert abs(np.corrcoef(swaps[:, 0], swaps[:, 1])[0, 1]) < 0.05


@pytest.mark.parametrize("scale,n_chunks", [(1, 1), (10 ** 3, 150), (10 ** 7, None)])
def test_replicate_sums_are_exact_and_add_over_chunks(scale, n_chunks):
    """Scales that give one float32 chunk, many chunks, and rows too large for float32."""
    rng = np.random.default_rng(scale)
    stats = rng.integers(0, 60, size=(3000, 10)) * scale
    weights = poisson_weights(np.arange(3000, dtype=np.int64), 1, 200)
    chunks = poisson._exact_chunks(int(weights.max()) * stats.max(axis=1), 1 << 24)
    if n_chunks is None:
        assert chunks is None
    else:
        assert len(chunks) >= n_chunks and (n_chunks > 1 or len(chunks) == 1)
    whole = replicate_sums(stats, weights)
    assert whole.dtype == np.int64 and whole.shape == (200, 10)
    assert (whole == weights.T.astype(np.int64) @ stats).all()
    edges = [0, 1, 700, 701, 2500, 3000]
    parts = sum(replicate_sums(stats[a:b], weights[a:b]) for a, b in zip(edges, edges[1:]))
    assert (parts == whole).all()


@st.composite
def summed_rows_and_config(draw):
    order = draw(st.integers(1, 6))
    weights = draw(st.one_of(st.none(), st.lists(st.integers(1, 5), min_size=order,
                                                 max_size=order)))
    config = BleuConfig(
        smooth_method=draw(st.sampled_from(["exp", "floor", "add-k", "none"])),
        smooth_value=draw(st.one_of(st.none(), st.sampled_from([0.0, 0.01, 0.5, 1, 2.5]))),
        max_ngram_order=order, effective_order=draw(st.booleans()),
        weights=None if weights is None else tuple(w / sum(weights) for w in weights))
    counts = st.lists(st.integers(0, 40), min_size=order, max_size=order)
    rows = []
    for _ in range(draw(st.integers(1, 5))):
        correct, extra = draw(counts), draw(counts)
        lengths = draw(st.lists(st.integers(0, 200), min_size=2, max_size=2))
        # Totals at least the counts, as in real statistics; zero totals end the orders.
        rows.append(lengths + correct + [c + e for c, e in zip(correct, extra)])
    rows.append([0] * (2 + 2 * order))
    return np.array(rows, np.int64), config


@settings(max_examples=400, deadline=None)
@given(summed_rows_and_config())
def test_scores_of_sums_equal_the_scalar_score(rows_and_config):
    rows, config = rows_and_config
    for row, score in zip(rows, scores_of_sums(rows, Bleu(config))):
        assert score == pytest.approx(bleu_from_statistics(row.tolist(), config)[0], abs=1e-12)


def test_poisson_interval_is_near_sacrebleus():
    config = BleuConfig()
    (hypotheses, _), references = generated_corpus(11, 500)
    stats = our_statistics(hypotheses, references, config)
    replay = sacrebleu_interval(stats, Bleu(config))
    weights = poisson_weights(np.arange(len(stats), dtype=np.int64) * 7919, 12345, 1000)
    replicate_scores = scores_of_sums(replicate_sums(stats, weights), Bleu(config))
    interval = poisson_interval(replay.score, replicate_scores, 12345)
    assert abs(interval.low - replay.low) < 1.0 and abs(interval.high - replay.high) < 1.0
    assert abs(interval.mean - replay.mean) < 0.5
    assert interval.to_dict() == {"bs_mean": interval.mean, "ci_low": interval.low,
                                  "ci_high": interval.high, "ci_halfwidth": interval.halfwidth,
                                  "n_bootstrap": 1000, "seed": 12345, "bootstrap_method": "poisson"}


def paired_stats(n_segments=200, identical_share=0.0, seed=13):
    config = BleuConfig()
    (baseline, system), references = generated_corpus(seed, n_segments)
    keep = random.Random(seed).sample(range(n_segments), int(identical_share * n_segments))
    for i in keep:
        system[i] = baseline[i]
    return (our_statistics(baseline, references, config),
            our_statistics(system, references, config), config)


def test_poisson_paired_bs_equals_direct_weighted_sums():
    baseline, system, config = paired_stats()
    weights = poisson_weights(np.arange(len(baseline), dtype=np.int64), 3, 300)
    paired = poisson_paired_bs(baseline.sum(0), replicate_sums(baseline, weights),
                               system.sum(0), replicate_sums(system, weights), Bleu(config))

    def score(stats):
        return bleu_from_statistics(stats.tolist(), config)[0]

    differences = np.array([score((weights[:, b, None] * system).sum(0))
                            - score((weights[:, b, None] * baseline).sum(0)) for b in range(300)])
    delta = score(system.sum(0)) - score(baseline.sum(0))
    gaps = np.abs(differences)
    count = sum(gap - gaps.mean() > abs(delta) for gap in gaps)
    assert paired.delta == delta
    assert paired.p_value == (count + 1) / 301
    assert (paired.delta_ci_low, paired.delta_ci_high) == pytest.approx(
        resampling.percentile_bounds(differences), abs=1e-12)
    assert paired.to_dict()["test"] == resampling.PAIRED_BS_POISSON


@pytest.mark.parametrize("identical_share", [0.0, 0.97])
def test_poisson_paired_ar_equals_direct_swaps(identical_share):
    """With most segments identical, many trials tie |delta| exactly and must not count."""
    baseline, system, config = paired_stats(identical_share=identical_share)
    swaps = ar_swaps(np.arange(len(baseline), dtype=np.int64), 8, 400)
    paired = poisson_paired_ar(baseline.sum(0), system.sum(0), replicate_sums(baseline, swaps),
                               replicate_sums(system, swaps), Bleu(config))

    def score(stats):
        return bleu_from_statistics(stats.tolist(), config)[0]

    delta = score(system.sum(0)) - score(baseline.sum(0))
    count = 0
    for t in range(400):
        swapped = swaps[:, t, None]
        trial_system = np.where(swapped, baseline, system).sum(0)
        trial_baseline = np.where(swapped, system, baseline).sum(0)
        count += abs(score(trial_system) - score(trial_baseline)) > abs(delta)
    assert paired.delta == delta
    assert paired.p_value == (count + 1) / 401


def test_poisson_paired_ar_ties_survive_last_bit_differences(monkeypatch):
    """Vectorized scores a last bit off must not turn exact ties with |delta| into counts."""
    baseline, system, config = paired_stats(identical_share=0.97)
    swaps = ar_swaps(np.arange(len(baseline), dtype=np.int64), 8, 400)
    args = (baseline.sum(0), system.sum(0), replicate_sums(baseline, swaps),
            replicate_sums(system, swaps), Bleu(config))
    exact = poisson_paired_ar(*args)
    vectorized = poisson.scores_of_sums
    calls = []

    def off_by_last_bits(sums, metric):
        calls.append(len(calls))
        return vectorized(sums, metric) * (1 + 4e-16 * (-1) ** len(calls))

    monkeypatch.setattr(poisson, "scores_of_sums", off_by_last_bits)
    assert poisson_paired_ar(*args).p_value == exact.p_value
    assert calls  # the patched scorer was the one used


def test_bootstrap_module_does_not_import_pyspark():
    code = "import sys, bleu_spark.resampling; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
