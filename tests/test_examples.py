"""The seed documents' worked examples, scored with --tokenize 13a --smooth-method none."""
import pytest

from bleu_spark import corpus_bleu
from bleu_spark.metrics.bleu.oracle import sacrebleu_score
from bleu_spark.languages import TextSettings
from bleu_spark.metrics.bleu import BleuConfig

REFERENCE = "The NASA Opportunity rover is battling a massive dust storm on Mars."
OPTIONS = dict(tokenize="13a", smooth_method="none")
TEXT = TextSettings("13a")


def fractions(result):
    return [(c, t) for c, t in zip(result.counts, result.totals)]


def test_nasa_rover_candidate():
    result = corpus_bleu(["A NASA rover is fighting a massive storm on Mars."], [[REFERENCE]], **OPTIONS)
    assert fractions(result) == [(9, 11), (5, 10), (2, 9), (1, 8)]
    assert round(result.bp, 2) == 0.83
    assert round(result.score / 100, 2) == 0.27
    assert f"{result.score:.1f}" == "27.2"


def test_opportunity_candidate_has_no_four_gram_match():
    result = corpus_bleu(["The Opportunity rover is combating a big sandstorm on Mars."],
                         [[REFERENCE]], **OPTIONS)
    assert fractions(result) == [(8, 11), (4, 10), (2, 9), (0, 8)]
    assert result.score == 0.0


def test_clipped_unigram_precision():
    result = corpus_bleu(["the the the cat mat"], [["the cat is on the mat"]], **OPTIONS)
    assert fractions(result)[0] == (4, 5)
    assert result.precisions[0] == pytest.approx(80.0)


@pytest.mark.parametrize("candidate", ["A NASA rover is fighting a massive storm on Mars.",
                                       "The Opportunity rover is combating a big sandstorm on Mars.",
                                       "the the the cat mat"])
def test_examples_agree_with_sacrebleu(candidate):
    ours = corpus_bleu([candidate], [[REFERENCE]], **OPTIONS)
    theirs = sacrebleu_score([candidate], [[REFERENCE]], BleuConfig(smooth_method="none"), text=TEXT)
    assert ours.score == pytest.approx(theirs["score"], abs=1e-9)
    assert (ours.counts, ours.totals, ours.verbose) == (theirs["counts"], theirs["totals"], theirs["verbose"])
