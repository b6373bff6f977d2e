"""`bleu_spark.corpus_score`: every metric in process, equal to sacrebleu on real text."""
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from sacrebleu.metrics import BLEU, CHRF, TER

from bleu_spark import corpus_bleu, corpus_score
from bleu_spark.errors import InvalidRowsError, UsageError

from conftest import SAMPLE

CASES = [
    ("bleu", {}, lambda: BLEU(trg_lang="ja"), "en-ja"),
    ("bleu", {"lowercase": True, "smooth_method": "floor"},
     lambda: BLEU(lowercase=True, smooth_method="floor"), "cs-en"),
    ("chrf", {}, lambda: CHRF(), "cs-en"),
    ("chrf", {"chrf_beta": 1, "chrf_whitespace": True}, lambda: CHRF(beta=1, whitespace=True), "en-de"),
    ("chrf++", {}, lambda: CHRF(word_order=2), "en-de"),
    ("ter", {}, lambda: TER(), "cs-en"),
    ("ter", {"ter_normalized": True, "ter_case_sensitive": True},
     lambda: TER(normalized=True, case_sensitive=True), "en-de"),
]


def _rows(langpair):
    table = pq.read_table(SAMPLE)
    table = table.filter(pc.equal(table["langpair"], langpair))
    system = table["system"][0]
    table = table.filter(pc.equal(table["system"], system))
    return table["candidate"].to_pylist(), table["references"].to_pylist()


@pytest.mark.parametrize("metric, options, sacrebleu_metric, langpair", CASES)
def test_corpus_score_is_sacrebleus(metric, options, sacrebleu_metric, langpair):
    candidates, references = _rows(langpair)
    expected_metric = sacrebleu_metric()
    expected = expected_metric.corpus_score(candidates, [list(r) for r in zip(*references)])
    got = corpus_score(candidates, references, metric=metric, langpair=langpair, **options)
    assert got["score"] == pytest.approx(expected.score, abs=1e-9)
    assert got["signature"] == str(expected_metric.get_signature())
    assert got["n_segments"] == len(candidates)


def test_corpus_score_of_bleu_is_corpus_bleu():
    candidates, references = _rows("en-de")
    assert corpus_score(candidates, references, langpair="en-de") == \
        corpus_bleu(candidates, references, langpair="en-de").to_dict()


def test_corpus_score_refuses_what_it_cannot_score():
    with pytest.raises(UsageError, match="unknown options for corpus_score: chrf_bta"):
        corpus_score(["a"], [["a"]], metric="chrf", chrf_bta=1)
    with pytest.raises(UsageError, match="unknown metric 'bleurt'"):
        corpus_score(["a"], [["a"]], metric="bleurt")
    with pytest.raises(UsageError, match="--chrf-beta must be an integer from 0 to 100"):
        corpus_score(["a"], [["a"]], metric="chrf", chrf_beta=-1)
    with pytest.raises(InvalidRowsError, match="segment 1"):
        corpus_score(["a", None], [["a"], ["b"]], metric="ter")


def test_corpus_score_counts_references_as_sacrebleu_does():
    """A missing reference (None) makes the count of references vary: `nrefs:var`."""
    candidates, references = ["the cat sat", "a dog"], [["the cat sat", None], ["a dog", "one dog"]]
    assert corpus_score(candidates, references) == corpus_bleu(candidates, references).to_dict()
    assert corpus_score(candidates, references, metric="chrf")["signature"].startswith("nrefs:var|")
