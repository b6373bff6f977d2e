"""chrF and chrF++ statistics and scores against sacrebleu 2.6's CHRF, run on the same inputs:
segment statistics integer for integer (`_extract_corpus_statistics`), corpus scores from the
summed statistics against `corpus_score`, sentence scores against `sentence_score`; on generated
text around every fact that decides equality and on every row of the sample (sacrebleu's own
test cases run from its files: test_sacrebleu_cases.py)."""
import random
from dataclasses import asdict, replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sacrebleu.metrics.chrf import CHRF

from bleu_spark.metrics.chrf_kernel import ChrfOptions, chrf_score, chrf_scores, chrf_statistics
from conftest import SAMPLE

CHRF_PLUS_PLUS = ChrfOptions(word_order=2)
# Every option away from its default, alone or with chrF++.
OPTIONS = [
    ChrfOptions(char_order=1), ChrfOptions(char_order=3), ChrfOptions(word_order=1),
    ChrfOptions(char_order=4, word_order=2), ChrfOptions(beta=1), ChrfOptions(beta=3, word_order=2),
    ChrfOptions(lowercase=True), ChrfOptions(lowercase=True, word_order=2), ChrfOptions(whitespace=True),
    ChrfOptions(whitespace=True, word_order=2), ChrfOptions(eps_smoothing=True),
    ChrfOptions(eps_smoothing=True, word_order=2, beta=1), ChrfOptions(char_order=0, word_order=2),
]


def sacrebleu_metric(options: ChrfOptions) -> CHRF:
    return CHRF(**asdict(options))


def reference_streams(references):
    """Per-segment reference lists as sacrebleu's streams, None past a segment's last."""
    width = max(len(refs) for refs in references)
    return [[refs[k] if k < len(refs) else None for refs in references] for k in range(width)]


def sacrebleu_statistics(hypotheses, references, options) -> np.ndarray:
    stats = sacrebleu_metric(options)._extract_corpus_statistics(hypotheses, reference_streams(references))
    return np.array(stats, np.int64).reshape(len(hypotheses), 3 * options.order)


def our_statistics(hypotheses, references, options) -> np.ndarray:
    return chrf_statistics(pa.array(hypotheses, pa.string()), pa.array(references, pa.list_(pa.string())),
                           options)


def assert_same_statistics(ours, theirs, hypotheses, references):
    assert ours.dtype == np.int64 and ours.shape == theirs.shape
    wrong = np.flatnonzero((ours != theirs).any(axis=1))
    assert not len(wrong), [(hypotheses[i], references[i], ours[i].tolist(), theirs[i].tolist())
                            for i in wrong[:3]]


def assert_all_equal_sacrebleu(hypotheses, references, options, sentences=True):
    """Statistics, corpus score, and each segment's score (from its statistics and, if asked,
    against `sentence_score`), all exactly sacrebleu's."""
    ours = our_statistics(hypotheses, references, options)
    theirs = sacrebleu_statistics(hypotheses, references, options)
    assert_same_statistics(ours, theirs, hypotheses, references)
    metric = sacrebleu_metric(options)
    corpus = metric.corpus_score(hypotheses, reference_streams(references))
    assert chrf_score(ours.sum(axis=0), options) == corpus.score
    per_row = chrf_scores(ours, options)
    assert per_row.tolist() == [metric._compute_f_score(row) for row in ours.tolist()]
    if sentences:
        for hypothesis, refs, score in zip(hypotheses, references, per_row.tolist()):
            present = [ref for ref in refs if ref is not None]
            assert score == metric.sentence_score(hypothesis, present).score, (hypothesis, present)


# ---------------------------------------------------------------------------------------------
# Generated text

SPACES = [" ", "  ", "\t", "\n", "\xa0", "\u3000", "\u0085", "\u2009", "\x1c", " \t\xa0 "]
WORDS = ["a", "b", "ab", "ba", "abc", "cat", "Cat", "CAT", "dog", "the", "The", "I", "x", "\u200b",
         "a\u200bb", "\ufeffa", "猫", "犬", "東京", "北京", "사람", "😀", "😀😀", "ß", "ẞ", "İstanbul",
         "ΟΔΟΣ", "Σ", "ΣΑΣ", "Ǆ", "é", "e\u0301", "¿qué?", "«x»", "—", "...", "-", "--", "3.5", "1,000",
         "don't", "e-mail", "U.S.", "&amp;"]
PUNCTUATION = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["¿", "»", "。", "、"]


def random_word(rng: random.Random) -> str:
    word = rng.choice(WORDS)
    roll = rng.random()
    if roll < 0.15:
        word = word + rng.choice(PUNCTUATION)
    elif roll < 0.3:
        word = rng.choice(PUNCTUATION) + word
    elif roll < 0.4:
        word = rng.choice(PUNCTUATION) + word + rng.choice(PUNCTUATION)
    elif roll < 0.45:
        word = rng.choice(PUNCTUATION)
    return word


def random_line(rng: random.Random, most: int = 12) -> str:
    roll = rng.random()
    if roll < 0.04:
        return ""
    if roll < 0.07:
        return "".join(rng.choice(SPACES) for _ in range(rng.randint(1, 3)))
    words = [random_word(rng) for _ in range(rng.randint(1, most))]
    line = "".join(word + rng.choice(SPACES) for word in words[:-1]) + words[-1]
    if rng.random() < 0.2:
        line = rng.choice(SPACES) + line
    if rng.random() < 0.2:
        line = line + rng.choice(SPACES)
    return line


def random_references(rng: random.Random, hypothesis: str):
    """1-4 references: new lines, edits of the hypothesis, copies (ties), and None entries."""
    refs = []
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.35:
            refs.append(random_line(rng))
        elif roll < 0.6:
            words = hypothesis.split() or [""]
            rng.shuffle(words)
            refs.append(" ".join(words[:rng.randint(0, len(words))]))
        elif roll < 0.75 and refs:
            refs.append(rng.choice([r for r in refs if r is not None] or [""]))
        elif roll < 0.85:
            refs.append(hypothesis)
        else:
            refs.append(None)
    if all(ref is None for ref in refs):
        refs.append(random_line(rng))
    return refs


def generated(seed: int, count: int):
    rng = random.Random(seed)
    hypotheses = [random_line(rng) for _ in range(count)]
    return hypotheses, [random_references(rng, hypothesis) for hypothesis in hypotheses]


@pytest.mark.parametrize("options", [ChrfOptions(), CHRF_PLUS_PLUS] + OPTIONS, ids=repr)
def test_generated_text(options):
    hypotheses, references = generated(sum(map(ord, repr(options))), 600)
    assert_all_equal_sacrebleu(hypotheses, references, options, sentences=False)
    assert_all_equal_sacrebleu(hypotheses[:80], references[:80], options)


# Each case: a hypothesis and its references.
CASES = [
    ("", [""]), ("", ["a"]), ("a", [""]), (" \t\xa0", ["a"]), ("a", [" \u3000 "]),
    ("a b", ["ab"]), ("a\xa0b", ["a b"]), ("a\u3000b\u0085c", ["abc"]), ("a\u200bb", ["ab"]),
    ("a\u200bb", ["a\u200bb"]), ("\u200b", ["\u200b"]), ("a\tb\nc", ["a b c"]),
    ("(hi)", ["(hi )"]), ("(hi)", ["( hi)"]), ("hi.", ["hi ."]), (".hi", [". hi"]), ("..", [". ."]),
    (".", ["."]), ("a", ["a"]), ("a .", ["a."]), ("¿qué?", ["¿qué ?"]), ("«x»", ["« x »"]),
    ("猫が好き。", ["猫 が 好き 。"]), ("😀.", ["😀 ."]), ("'s", ["' s"]),
    ("the cat", ["the cat", "the cat"]), ("x", ["ab", "abc"]), ("x", ["abc", "ab"]),
    ("x y", ["a b", "a b c", "a"]), ("cat", ["dog", None, "cat"]), ("cat", [None, "dog", "act"]),
    ("ΟΔΟΣ ΣΑΣ", ["οδος σας"]), ("İstanbul", ["i̇stanbul"]), ("STRASSE ẞ", ["strasse ß"]),
]


@pytest.mark.parametrize("options", [ChrfOptions(), CHRF_PLUS_PLUS] + OPTIONS, ids=repr)
def test_cases_one_segment_each_and_all_in_one_batch(options):
    hypotheses, references = [case[0] for case in CASES], [case[1] for case in CASES]
    assert_all_equal_sacrebleu(hypotheses, references, options)
    for hypothesis, refs in CASES:
        assert_same_statistics(our_statistics([hypothesis], [refs], options),
                               sacrebleu_statistics([hypothesis], [refs], options), [hypothesis], [refs])


def test_ties_go_to_the_first_reference_in_both_smoothing_modes():
    """Different statistics of equal sentence score: the first reference's are kept."""
    hypotheses, references = ["x", "x"], [["ab", "cd"], ["cd", "ab"]]
    for options in (ChrfOptions(), ChrfOptions(eps_smoothing=True)):
        ours = our_statistics(hypotheses, references, options)
        theirs = sacrebleu_statistics(hypotheses, references, options)
        assert_same_statistics(ours, theirs, hypotheses, references)
    # A zero score everywhere, the references' lengths differ: the first one still wins.
    ours = our_statistics(["x"], [["ab", "abc"]], ChrfOptions())
    assert ours[0, 4] == 1 and (ours == sacrebleu_statistics(["x"], [["ab", "abc"]], ChrfOptions())).all()


def test_lowercase_of_ascii_lines_alone_and_among_others():
    hypotheses = ["The CAT sat.", "A Dog", "ΟΔΟΣ"]
    references = [["the cat SAT ."], ["a DOG", "a dog"], ["οδος"]]
    options = ChrfOptions(lowercase=True, word_order=2)
    assert_all_equal_sacrebleu(hypotheses[:2], references[:2], options)
    assert_all_equal_sacrebleu(hypotheses, references, options)


def test_long_lines_grow_the_buffers():
    rng = random.Random(3)
    hypotheses = [random_line(rng, 5) for _ in range(20)] + [random_line(rng, 400) for _ in range(5)]
    hypotheses += [random_line(rng, 5) for _ in range(20)]
    references = [[random_line(rng, len(h.split()) * 2 + 1), h[::-1], random_line(rng, 3)]
                  for h in hypotheses]
    for options in (ChrfOptions(), CHRF_PLUS_PLUS):
        assert_all_equal_sacrebleu(hypotheses, references, options, sentences=False)


def test_slices_large_types_and_chunked_arrays_give_the_same_statistics():
    hypotheses, references = generated(11, 60)
    expected = sacrebleu_statistics(hypotheses[7:50], references[7:50], CHRF_PLUS_PLUS)
    hyp_array = pa.array(hypotheses, pa.string())
    ref_array = pa.array(references, pa.list_(pa.string()))
    variants = [
        (hyp_array.slice(7, 43), ref_array.slice(7, 43)),
        (hyp_array.cast(pa.large_string()).slice(7, 43),
         ref_array.cast(pa.large_list(pa.large_string())).slice(7, 43)),
        (pa.chunked_array([hyp_array.slice(7, 20), hyp_array.slice(27, 23)]),
         pa.chunked_array([ref_array.slice(7, 20), ref_array.slice(27, 23)])),
    ]
    for hyps, refs in variants:
        assert (chrf_statistics(hyps, refs, CHRF_PLUS_PLUS) == expected).all()


def test_an_empty_batch():
    stats = chrf_statistics(pa.array([], pa.string()), pa.array([], pa.list_(pa.string())), CHRF_PLUS_PLUS)
    assert stats.shape == (0, 24) and stats.dtype == np.int64


def test_a_null_hypothesis_or_a_segment_without_references_is_refused():
    with pytest.raises(ValueError):
        chrf_statistics(pa.array(["a", None]), pa.array([["a"], ["b"]]), ChrfOptions())
    for refs in ([["a"], [None]], [["a"], []], [["a"], None]):
        with pytest.raises(ValueError):
            chrf_statistics(pa.array(["a", "b"]), pa.array(refs, pa.list_(pa.string())), ChrfOptions())


# ---------------------------------------------------------------------------------------------
# Scores from summed statistics

@pytest.mark.parametrize("eps_smoothing", [False, True])
@pytest.mark.parametrize("beta", [1, 2, 3])
def test_scores_per_row_are_the_scalar_score_and_sacrebleus(eps_smoothing, beta):
    rng = np.random.default_rng(beta)
    options = ChrfOptions(word_order=2, beta=beta, eps_smoothing=eps_smoothing)
    sums = rng.integers(0, 6, (3000, options.width))
    sums[rng.random(sums.shape) < 0.3] = 0
    sums[:, 2::3] = np.minimum(sums[:, 2::3], np.minimum(sums[:, 0::3], sums[:, 1::3]))  # matches <= both
    sums[:5] = 0
    sums[5:8] *= 10 ** 12
    vectorized = chrf_scores(sums, options)
    scalar = [chrf_score(row, options) for row in sums]
    assert np.max(np.abs(vectorized - scalar)) <= 1e-12
    assert vectorized.tolist() == scalar
    assert scalar == [sacrebleu_metric(options)._compute_f_score(row) for row in sums.tolist()]
    assert all(type(score) is float for score in scalar)


# ---------------------------------------------------------------------------------------------
# The sample

@pytest.fixture(scope="module")
def sample():
    table = pq.read_table(SAMPLE, columns=["candidate", "references"])
    return (table.column("candidate").combine_chunks(), table.column("references").combine_chunks(),
            table.column("candidate").to_pylist(), table.column("references").to_pylist())


@pytest.mark.parametrize("options", [ChrfOptions(), CHRF_PLUS_PLUS], ids=["chrF", "chrF++"])
def test_every_row_of_the_sample(sample, options):
    hyp_array, ref_array, hypotheses, references = sample
    ours = chrf_statistics(hyp_array, ref_array, options)
    metric = sacrebleu_metric(options)
    # sacrebleu's _extract_corpus_statistics, its per-row loop, with each distinct reference list
    # cached once for the systems that share it (a third of the time).
    distinct = {}
    keys = [distinct.setdefault(tuple(refs), len(distinct)) for refs in references]
    cache = metric._cache_references(reference_streams(list(distinct)))
    theirs = [metric._compute_segment_statistics(metric._preprocess_segment(hypothesis), cache[key])
              for hypothesis, key in zip(hypotheses, keys)]
    assert_same_statistics(ours, np.array(theirs, np.int64), hypotheses, references)
    # corpus_score is _extract_corpus_statistics and then _aggregate_and_compute of its result.
    assert chrf_score(ours.sum(axis=0), options) == metric._aggregate_and_compute(theirs).score
    assert chrf_scores(ours, options).tolist() == [metric._compute_f_score(row) for row in theirs]


@pytest.mark.parametrize("options", OPTIONS, ids=repr)
def test_each_option_on_part_of_the_sample(sample, options):
    _, _, hypotheses, references = sample
    odd = {i for i, line in enumerate(hypotheses) if any(c in line for c in "\xa0\u3000\u200b\t") or not line}
    rows = sorted(odd | set(range(0, len(hypotheses), 29)))
    hypotheses, references = [hypotheses[i] for i in rows], [references[i] for i in rows]
    assert_all_equal_sacrebleu(hypotheses, references, options, sentences=False)
