"""`bleu_spark.corpus_score` and `corpus_bleu`: every metric in process, in sacrebleu's layout,
equal to sacrebleu on real text; `score_of_rows` and `bleu_of_rows` the same with a list of
references per segment."""
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from sacrebleu.metrics import BLEU, CHRF, TER

from bleu_spark import bleu_of_rows, corpus_bleu, corpus_score, score_of_rows
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


def _rows(langpair, n=None):
    table = pq.read_table(SAMPLE)
    table = table.filter(pc.equal(table["langpair"], langpair))
    system = table["system"][0]
    table = table.filter(pc.equal(table["system"], system)).slice(0, n)
    return table["candidate"].to_pylist(), table["references"].to_pylist()


def _streams(references):
    """A list per segment -> sacrebleu's reference streams."""
    return [list(stream) for stream in zip(*references)]


@pytest.mark.parametrize("metric, options, sacrebleu_metric, langpair", CASES)
def test_corpus_score_is_sacrebleus(metric, options, sacrebleu_metric, langpair):
    candidates, references = _rows(langpair)
    expected_metric = sacrebleu_metric()
    expected = expected_metric.corpus_score(candidates, _streams(references))
    got = corpus_score(candidates, _streams(references), metric=metric, langpair=langpair, **options)
    assert got["score"] == pytest.approx(expected.score, abs=1e-9)
    assert got["signature"] == str(expected_metric.get_signature())
    assert got["n_segments"] == len(candidates)
    assert score_of_rows(candidates, references, metric=metric, langpair=langpair, **options) == got


def test_corpus_score_of_bleu_is_corpus_bleu():
    candidates, references = _rows("en-de")
    assert corpus_score(candidates, _streams(references), langpair="en-de") == \
        corpus_bleu(candidates, _streams(references), langpair="en-de").to_dict() == \
        bleu_of_rows(candidates, references, langpair="en-de").to_dict()


def test_corpus_score_refuses_what_it_cannot_score():
    with pytest.raises(UsageError, match="unknown options: chrf_bta"):
        corpus_score(["a"], [["a"]], metric="chrf", chrf_bta=1)
    with pytest.raises(UsageError, match="unknown metric 'bleurt'"):
        corpus_score(["a"], [["a"]], metric="bleurt")
    with pytest.raises(UsageError, match="--chrf-beta must be an integer from 0 to 100"):
        corpus_score(["a"], [["a"]], metric="chrf", chrf_beta=-1)
    with pytest.raises(InvalidRowsError, match="segment 1"):
        corpus_score(["a", None], [["a", "b"]], metric="ter")


def test_corpus_score_counts_references_as_sacrebleu_does():
    """A missing reference (None) makes the count of references vary: `nrefs:var`."""
    candidates, streams = ["the cat sat", "a dog"], [["the cat sat", "a dog"], [None, "one dog"]]
    assert corpus_score(candidates, streams) == corpus_bleu(candidates, streams).to_dict()
    assert corpus_score(candidates, streams, metric="chrf")["signature"].startswith("nrefs:var|")
    assert corpus_bleu(candidates, streams).signature.startswith("nrefs:var|")


@pytest.mark.parametrize("streams", [1, 2, 3])
def test_sacrebleus_layout_is_read_as_sacrebleu_reads_it_when_it_is_square(streams):
    """As many segments as reference streams: a table a transposed reading would also fit, and
    score differently. Read as sacrebleu reads it, for every metric."""
    candidates, references = _rows("en-de", 40)
    candidates = candidates[:streams]
    layout = [[references[(s * 7 + i) % 40][0] for i in range(streams)] for s in range(streams)]
    sacrebleu_metrics = {"bleu": BLEU(), "chrf": CHRF(), "chrf++": CHRF(word_order=2), "ter": TER()}
    for metric, theirs in sacrebleu_metrics.items():
        expected = theirs.corpus_score(candidates, layout).score
        assert corpus_score(candidates, layout, metric=metric)["score"] == pytest.approx(expected, abs=1e-9)
    assert corpus_bleu(candidates, layout).score == BLEU().corpus_score(candidates, layout).score


@pytest.mark.parametrize("function", [corpus_bleu, corpus_score])
def test_what_does_not_fit_sacrebleus_layout_is_refused_in_one_line(function):
    """References a list per segment (lengths that are not the hypotheses'), one string, a
    stream that is a string, lists inside a stream: refused, naming the per-segment function."""
    candidates, references = _rows("en-de", 5)
    per_row = {corpus_bleu: "bleu_of_rows", corpus_score: "score_of_rows"}[function]
    for hypotheses, refs, said in [
            (candidates, references, f"reference stream 0 has {len(references[0])} references for 5"),
            (candidates, [r[0] for r in references], "a reference stream is of type str"),
            (candidates, "a reference", "hypotheses and references are lists, not list and str"),
            (candidates[0], _streams(references), "not str and list"),
            (candidates, 5, "not list and int"),
            (candidates[:1], [references[:1]], "reference stream 0 holds a value of type list"),
            ([1, 2], [["a", "b"]], "hypotheses holds a value of type int")]:
        with pytest.raises(UsageError) as raised:
            function(hypotheses, refs)
        message = str(raised.value)
        assert said in message and per_row in message and "\n" not in message, message
