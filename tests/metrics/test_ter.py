"""TER segment statistics against sacrebleu 2.6's TER, run on the same inputs: per segment the
same edit count and the same mean reference length, bit for bit, and the same pairs stopped by
the 1,000-candidate cap. Over ten thousand generated pairs across the corners of sacrebleu's
search (short pairs with every kind of edit, swapped 10-word blocks, repetitive pairs that reach
the cap, length pairs whose beam rows differ in integer and floating-point arithmetic, length
ratios above 50, paragraphs of 300 words, several references, empty lines), every tokenizer
option on text with case, punctuation and CJK variants, and the lowercasing of every code point.

sacrebleu is instrumented while it runs (its own functions wrapped, not changed) to count the
pairs it stops at the cap, how far its candidate counter goes and the applied shifts whose
target falls inside the moved span, so the tests can prove they reach those corners."""
import math
import random
from contextlib import contextmanager
from functools import lru_cache
from itertools import product

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sacrebleu.metrics.lib_ter as lib_ter
import sacrebleu.metrics.ter as sacrebleu_ter
from sacrebleu.metrics import TER

from bleu_spark.kernels import python_lower
from bleu_spark.metrics.ter_kernel import (TerOptions, _beam, ter_score, ter_statistics,
                                           ter_statistics_detail)
from conftest import SAMPLE, WORDS

VOCABULARY = list(WORDS) + [f"w{k}" for k in range(80)]
OPTION_NAMES = ("case_sensitive", "normalized", "no_punct", "asian_support")


@contextmanager
def watched_sacrebleu(log):
    """sacrebleu's TER with its search watched: `log["capped"]` gets one flag per pair (1 when the
    candidate cap stopped it), `log["inside"]` counts applied shifts whose target falls inside
    the moved span (start < target <= start + length, sacrebleu's third branch), `log["most"]`
    is the highest value its candidate counter reached."""
    shift, perform_shift, edit_rate = lib_ter._shift, lib_ter._perform_shift, sacrebleu_ter.translation_edit_rate
    inside = {}

    def watched_perform_shift(words, start, length, target):
        shifted = perform_shift(words, start, length, target)
        if start < target <= start + length:
            inside[id(shifted)] = shifted  # kept alive: its id stays its own
        return shifted

    def watched_shift(words_h, words_r, cached_ed, checked_candidates):
        inside.clear()
        score, shifted, checked = shift(words_h, words_r, cached_ed, checked_candidates)
        log["most"] = max(log["most"], checked)
        if checked >= lib_ter._MAX_SHIFT_CANDIDATES:
            log["capped"][-1] = 1
        elif score > 0 and inside.get(id(shifted)) is shifted:
            log["inside"] += 1
        inside.clear()
        return score, shifted, checked

    def watched_edit_rate(words_hyp, words_ref):
        log["capped"].append(0)
        return edit_rate(words_hyp, words_ref)

    lib_ter._shift, lib_ter._perform_shift = watched_shift, watched_perform_shift
    sacrebleu_ter.translation_edit_rate = watched_edit_rate
    try:
        yield
    finally:
        lib_ter._shift, lib_ter._perform_shift = shift, perform_shift
        sacrebleu_ter.translation_edit_rate = edit_rate


def sacrebleu_statistics(hyps, refs, options):
    """sacrebleu's per-segment `[edits, avg_ref_len]`, per segment how many of its pairs the cap
    stopped, and the log of its search (`watched_sacrebleu`)."""
    streams = [[r[k] if k < len(r) else None for r in refs] for k in range(max(map(len, refs)))]
    log = {"capped": [], "inside": 0, "most": 0}
    with watched_sacrebleu(log):
        stats = TER(**options)._extract_corpus_statistics(hyps, streams)
    n_pairs = [sum(ref is not None for ref in r) for r in refs]
    first = np.concatenate([[0], np.cumsum(n_pairs)])
    capped = [sum(log["capped"][first[i]:first[i + 1]]) for i in range(len(refs))]
    return stats, capped, log


def assert_same_as_sacrebleu(hyps, refs, **options):
    """Our statistics of every segment equal sacrebleu's; returns ours and the log of sacrebleu's
    search."""
    ours = ter_statistics_detail(pa.array(hyps, pa.string()), pa.array(refs, pa.list_(pa.string())),
                                 TerOptions(**options))
    theirs, capped, log = sacrebleu_statistics(hyps, refs, options)
    assert ours.edits.dtype == np.int64 and ours.ref_lengths.dtype == np.float64
    wrong = [(i, hyps[i], refs[i], (int(ours.edits[i]), float(ours.ref_lengths[i]), int(ours.capped[i])),
              (*theirs[i], capped[i]))
             for i in range(len(hyps))
             if (ours.edits[i], ours.ref_lengths[i], ours.capped[i]) != (theirs[i][0], theirs[i][1], capped[i])]
    assert not wrong, f"{len(wrong)} of {len(hyps)} segments differ: {wrong[:3]}"
    return ours, log


def perturbed(rng, words, vocabulary):
    """`words` with 0-2 blocks of 1-10 words moved, then words replaced, dropped, doubled with
    another after them, or uppercased."""
    words = list(words)
    for _ in range(rng.randint(0, 2)):
        if len(words) > 2:
            i = rng.randrange(len(words))
            block = words[i:i + rng.randint(1, min(10, len(words) - i))]
            del words[i:i + len(block)]
            j = rng.randint(0, len(words))
            words[j:j] = block
    out = []
    for word in words:
        x = rng.random()
        if x < 0.08:
            out.append(rng.choice(vocabulary))
        elif x < 0.13:
            continue
        elif x < 0.18:
            out += [word, rng.choice(vocabulary)]
        elif x < 0.25:
            out.append(word.upper() if rng.random() < 0.5 else word.capitalize())
        else:
            out.append(word)
    return out


def spaced(rng, words):
    """The words joined by spaces, at times with other whitespace or more of it."""
    line = " ".join(words)
    if rng.random() < 0.1:
        line = rng.choice(["  ", "\t", " \u3000", "\n"]).join(words) + rng.choice(["", " ", "\t\n", "\xa0"])
    return line


# -- the kinds of cases sacrebleu's tests have (its own run in test_sacrebleu_cases.py) --

CASES = [
    (["aaaa bbbb cccc dddd"], [["aaaa bbbb cccc dddd"]]),                  # a perfect match
    (["dddd eeee ffff"], [["aaaa bbbb cccc"]]),                            # no word in common
    ([""], [["a"]]),                                                       # an empty hypothesis
    (["a"], [[""]]),                                                       # an empty reference
    ([""], [[""]]),
    (["d e f g h a b c"], [["a b c d e f g h"]]),                          # one shift fixes it
    (["The Cat's hat &amp; the DOG's (big) bowl, 3.5 kg; costs 1,000.-- yes!",
      "東京は大きい。カタカナとひらがなの文、「引用」，全角！（括弧）"],
     [["the cat's hat & the dog's big bowl , 3.5 kg ; costs 1,000 -- yes !",
       "The Cat 's hat &amp;amp; the dog 's (big) bowl."],
      ["東京 は 大きい 。 カタカナ と ひらがな の 文 、 「 引用 」 ， 全角 ！ （ 括弧 ）"]]),
]


@pytest.mark.parametrize("flags", list(product([False, True], repeat=4)),
                         ids=lambda flags: "-".join(n for n, f in zip(OPTION_NAMES, flags) if f) or "default")
def test_sacrebleus_kinds_of_cases_and_their_corpus_scores(flags):
    options = dict(zip(OPTION_NAMES, flags))
    for hyps, refs in CASES:
        ours, _ = assert_same_as_sacrebleu(hyps, refs, **options)
        streams = [[r[k] if k < len(r) else None for r in refs] for k in range(max(map(len, refs)))]
        theirs = TER(**options).corpus_score(hyps, streams)
        # sacrebleu sums the mean reference lengths one by one, in segment order.
        score = ter_score(int(ours.edits.sum()), float(np.cumsum(ours.ref_lengths)[-1]))
        assert score == theirs.score and ours.edits.sum() == theirs.num_edits


# -- generated pairs, default options ------------------------------------------------------------

def test_short_pairs_several_references_and_empty_lines():
    """8,000 segments of up to 12 words (a quarter with 2-4 references, some null), every kind of
    edit and case change, empty and blank lines."""
    rng = random.Random(11)
    hyps, refs = [], []
    for _ in range(8000):
        ref = [rng.choice(VOCABULARY) for _ in range(rng.randint(0, 12))]
        hyp = perturbed(rng, ref, VOCABULARY)
        if rng.random() < 0.03:
            hyp = []
        segment_refs = [spaced(rng, ref)]
        if rng.random() < 0.25:
            for _ in range(rng.randint(1, 3)):
                segment_refs.append(None if rng.random() < 0.2 else spaced(rng, perturbed(rng, ref, VOCABULARY)))
            rng.shuffle(segment_refs)
            if all(r is None for r in segment_refs):
                segment_refs.append("")
        hyps.append(spaced(rng, hyp) if hyp or rng.random() < 0.5 else " \t")
        refs.append(segment_refs)
    ours, log = assert_same_as_sacrebleu(hyps, refs)
    assert log["inside"] > 0  # shifts whose target falls inside the moved span were applied
    assert (ours.ref_lengths != np.round(ours.ref_lengths)).any()  # means of several lengths


def test_swapped_blocks_of_ten_words():
    rng = random.Random(12)
    hyps, refs = [], []
    for k in range(16):
        blocks = [[f"b{b}x{i}" for i in range(10)] for b in range(2 if k < 12 else 3)]
        ref = [word for block in blocks for word in block]
        blocks = blocks[::-1] if k % 2 else blocks[1:] + blocks[:1]
        hyp = [word for block in blocks for word in block]
        if k % 4 == 3:
            hyp[rng.randrange(len(hyp))] = "noise"
        hyps.append(" ".join(hyp))
        refs.append([" ".join(ref)])
    ours, _ = assert_same_as_sacrebleu(hyps, refs)
    assert (ours.edits[:4] <= 2).all()  # a swap of two blocks is one or two shifts


def test_repetitive_pairs_reach_the_candidate_cap():
    """Pairs of 30-40 words over 2-3 words: the search stops at 1,000 candidates, and the best
    shift of that round is not applied (METRICS.md: 28 of 300 such pairs change if it were)."""
    rng = random.Random(13)
    hyps, refs = [], []
    for _ in range(10):
        vocabulary = ["a", "b", "c"][:rng.randint(2, 3)]
        n = rng.randint(30, 40)
        hyps.append(" ".join(rng.choice(vocabulary) for _ in range(n)))
        refs.append([" ".join(rng.choice(vocabulary) for _ in range(n + rng.randint(-5, 5)))])
    ours, _ = assert_same_as_sacrebleu(hyps, refs)
    assert ours.capped.sum() >= 3  # and sacrebleu's search stopped at the cap in the same pairs


def test_repetitive_pairs_long_enough_for_the_cap_each_round():
    """50-80 words over 2 words: the counter reaches 1,000 within the first rounds, and goes
    past it (the check comes after a span's targets)."""
    rng = random.Random(14)
    hyps, refs = [], []
    for n in (50, 65, 80):
        hyps.append(" ".join(rng.choice("ab") for _ in range(n)))
        refs.append([" ".join(rng.choice("ab") for _ in range(n - 2))])
    ours, log = assert_same_as_sacrebleu(hyps, refs)
    assert (ours.capped == 1).all() and log["most"] > 1000


@lru_cache(maxsize=None)
def band_lengths():
    """The (hypothesis, reference) lengths below 200 whose beam rows differ between
    `floor(i * (n_ref / n_hyp))` in floating point and `i * n_ref // n_hyp`."""
    pairs = []
    for n_hyp in range(1, 200):
        i = np.arange(1, n_hyp + 1)
        for n_ref in range(200):
            if (np.floor(i * (n_ref / n_hyp)).astype(np.int64) != i * n_ref // n_hyp).any():
                pairs.append((n_hyp, n_ref))
    return pairs


def test_beam_rows_are_sacrebleus_floating_point_ones():
    """Every length pair below 200 (and a few wider): each row's columns as sacrebleu computes
    them, in floating point (the integer form differs for 1,635 of these pairs)."""
    assert len(band_lengths()) == 1635
    for n_hyp in range(1, 200):
        for n_ref in [*range(200), 1000, 5000]:
            ratio = n_ref / n_hyp
            width = math.ceil(ratio / 2 + 25) if 25 < ratio / 2 else 25
            lo, hi, column_0, size = _beam(n_hyp, n_ref)
            for i in (range(1, n_hyp + 1) if n_ref in (61, 1000) or n_hyp < 3 else (1, n_hyp - 1, n_hyp)):
                diagonal = math.floor(i * ratio)
                assert lo[i] == max(0, diagonal - width), (n_hyp, n_ref, i)
                assert hi[i] == (n_ref + 1 if i == n_hyp else min(n_ref + 1, diagonal + width)), (n_hyp, n_ref, i)
            # each row's room: a cell left of its first, up to the next row's last
            room = np.diff(np.append(column_0 + lo - 1, size))
            assert (room == np.maximum(hi, np.append(hi[1:], hi[-1])) - lo + 1).all()


def test_lengths_where_the_beam_arithmetic_matters_and_ratios_above_50():
    """Pairs of the lengths where integer arithmetic would give other beam rows, their words
    common to both sides at displaced positions; and a hypothesis of 1-3 words against a
    reference 50-66 times longer (the widened beam)."""
    rng = random.Random(15)
    pairs = [p for p in band_lengths() if max(p) < 80]
    pairs += rng.sample([p for p in band_lengths() if 80 <= max(p) < 130], 6)
    pairs += [(n_hyp, rng.randint(50 * n_hyp + 1, 199)) for n_hyp in (1, 2, 3) for _ in range(20)]
    hyps, refs = [], []
    for n_hyp, n_ref in pairs:
        vocabulary = [f"v{k}" for k in range(max(4, n_hyp + n_ref))]
        ref = [rng.choice(vocabulary) for _ in range(n_ref)]
        picked = sorted(rng.sample(range(n_ref), min(n_ref, n_hyp)))
        hyp = [ref[j] if rng.random() < 0.7 else rng.choice(vocabulary) for j in picked]
        hyp += [rng.choice(vocabulary) for _ in range(n_hyp - len(hyp))]
        hyps.append(" ".join(hyp))
        refs.append([" ".join(ref)])
    assert_same_as_sacrebleu(hyps, refs)


def test_paragraphs_of_300_words():
    rng = random.Random(16)
    vocabulary = VOCABULARY + [f"p{k}" for k in range(3000)]
    hyps, refs = [], []
    for _ in range(3):
        ref = [rng.choice(vocabulary) for _ in range(rng.randint(300, 340))]
        hyps.append(" ".join(perturbed(rng, ref, vocabulary)))
        refs.append([" ".join(ref), " ".join(perturbed(rng, ref, vocabulary))])
    ours, _ = assert_same_as_sacrebleu(hyps, refs)
    assert (ours.ref_lengths >= 290).all()


# -- the options -----------------------------------------------------------------------------------

PIECES = ("The the THE cat's Cat's dog. dog , dog; (big) big) \"quoted\" don't U.S. 3.5 1,000 2,5.0 "
          "e-mail 5-3 a-b &quot;x&quot; &amp; &lt;tag&gt; -- ... ! ? : / ' 's x's ΣΟΦΙΑ Σοφία ΟΔΟΣ İstanbul "
          "東京 北京大学 猫が好き カタカナ ひらがな ｶﾀｶﾅ 東京。 北京、 「引用」 〈括弧〉 ，全角！ （括弧） ？ ＂ "
          "㈱ ㍻ ⺀ ㇀ ﹰ 한국어 사람").split()


@pytest.mark.parametrize("flags", list(product([False, True], repeat=4)),
                         ids=lambda flags: "-".join(n for n, f in zip(OPTION_NAMES, flags) if f) or "default")
def test_every_option_on_case_punctuation_and_cjk_variants(flags):
    rng = random.Random(17 + sum(f << k for k, f in enumerate(flags)))
    hyps, refs = [], []
    for _ in range(100):
        ref = [rng.choice(PIECES) for _ in range(rng.randint(0, 14))]
        hyp = perturbed(rng, ref, PIECES)
        # CJK text is often written without spaces; normalizing joins lines, and a line's "-" to
        # the line before
        joiner = rng.choice(["", "", "\n", " ", " ", " ", " "])
        hyps.append(joiner.join(hyp) + rng.choice(["", " ", "\n", "-\n"]))
        refs.append([joiner.join(ref), " ".join(perturbed(rng, ref, PIECES))][:rng.randint(1, 2)])
    assert_same_as_sacrebleu(hyps, refs, **dict(zip(OPTION_NAMES, flags)))


def test_lowercasing_is_pythons_for_every_code_point():
    """Every code point in blocks of 256 (so Σ sees neighbours), each alone, and Σ in the
    contexts Python's final-sigma rule reads. And lowering twice is lowering once (sacrebleu
    preprocesses a reference twice; by default it is lowered once here)."""
    import sys

    chars = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    lines = ["".join(chars[i:i + 256]) for i in range(0, len(chars), 256)]
    lines += chars[:0x3000] + ["ΟΔΟΣ", "ΟΔΟΣ ΟΔΟΣ", "Σ", "AΣ", "AΣ.", "A'Σ", "AΣB", "aΣ ", "İİ", "ꟋA", "\u1c89x"]
    lowered = python_lower(pa.array(lines, pa.string())).to_pylist()
    wrong = [line for line, ours in zip(lines, lowered) if ours != line.lower()]
    assert not wrong, wrong[:5]
    assert all(c.lower().lower() == c.lower() for c in chars)
    # Lowering makes no whitespace and leaves whitespace as it is: a line's words are the same
    # lowered before or after its split.
    assert all(any(x.isspace() for x in c.lower()) == c.isspace() for c in chars)
    assert all(c.lower() == c for c in chars if c.isspace())
    assert all(line.lower() == line for line in lowered)


def test_references_are_preprocessed_twice_as_sacrebleu_does():
    """sacrebleu tokenizes a reference, then tokenizes the result again; with `normalized`
    the second pass can split more, so a hypothesis equal to its reference has edits."""
    hyps = ["x's（括弧）", "ab's（", "the x's（y） z", "a b"]
    refs = [["x's（括弧）"], ["ab's（"], ["the x's（y） z", "the x's (y) z"], ["a b"]]
    ours, _ = assert_same_as_sacrebleu(hyps, refs, normalized=True, asian_support=True)
    assert ours.edits[0] > 0 and ours.edits[-1] == 0


def test_greek_turkish_and_new_letters_against_sacrebleu():
    hyps = ["ΟΔΟΣ ΣΟΦΙΑ", "İSTANBUL İs", "\ua7cb\ua7cc x", "ΟΔΟΣ", "Σ"]
    refs = [["οδος σοφια"], ["i̇stanbul i̇s"], ["\ua7cb\ua7cc x"], ["οδοσ"], ["σ", "ς"]]
    for case_sensitive in (False, True):
        assert_same_as_sacrebleu(hyps, refs, case_sensitive=case_sensitive)


# -- the score and the inputs -------------------------------------------------------------------

def test_ter_score_is_sacrebleus_bit_for_bit():
    rng = random.Random(18)
    edits = [0, 0, 3, 1, 7, 12345] + [rng.randint(0, 500) for _ in range(300)]
    lengths = [0.0, 1.5, 0.0, 3.0, 2.3333333333333335, 0.1] + [rng.randint(1, 900) / rng.choice([1, 2, 3, 7])
                                                               for _ in range(300)]
    theirs = [TER()._compute_score_from_stats([e, r]).score for e, r in zip(edits, lengths)]
    assert [ter_score(e, r) for e, r in zip(edits, lengths)] == theirs
    assert ter_score(np.array(edits), np.array(lengths)).tolist() == theirs
    assert ter_score(np.array(edits, np.int64)[2], np.float64(lengths[2])) == theirs[2] == 100.0
    assert ter_score(1, 3.0) == 100 * (1 / 3) != 100 * 1 / 3  # sacrebleu divides first


def test_inputs_large_chunked_null_references_and_empty_batches():
    hyps = pa.chunked_array([pa.array(["a b c", "x"], pa.large_string()), pa.array(["c b a"], pa.large_string())])
    refs = pa.array([["a b c d", None], [None, "x y", ""], ["a b c"]], pa.large_list(pa.large_string()))
    edits, ref_lengths = ter_statistics(hyps, refs)
    theirs, _, _ = sacrebleu_statistics(hyps.to_pylist(), refs.to_pylist(), {})
    assert edits.tolist() == [s[0] for s in theirs] and ref_lengths.tolist() == [s[1] for s in theirs]
    edits, ref_lengths = ter_statistics(pa.array([], pa.string()), pa.array([], pa.list_(pa.string())))
    assert len(edits) == len(ref_lengths) == 0
    with pytest.raises(ValueError, match="row 1 has none"):
        ter_statistics(pa.array(["a", "b"]), pa.array([["a"], [None]]))


def test_the_sample_against_sacrebleu():
    """Real WMT22 lines of every language pair, each hypothesis against its references."""
    table = pq.read_table(SAMPLE, columns=["candidate", "references"])
    table = table.take(np.arange(0, table.num_rows, table.num_rows // 300))
    hyps, refs = table.column("candidate").to_pylist(), table.column("references").to_pylist()
    assert_same_as_sacrebleu(hyps, refs)
