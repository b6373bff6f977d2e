"""The batch tokenizers against sacrebleu 2.6's classes, token for token: every code point of
the zh ranges and of the intl classes, generated text around every range boundary and of every
kind of character, every line of the sample."""
import sys
from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sacrebleu.tokenizers.tokenizer_zh import _UCODE_RANGES, TokenizerZh

from bleu_spark.kernels import PYTHON_WHITESPACE, intl_classes, pad_zh_chars, zh_code_points
from bleu_spark.tokenizers import split_tokens
from conftest import SAMPLE
from matching import assert_tokens_are_sacrebleus

# Every code point a str can hold in a valid UTF-8 Arrow array (no surrogates).
ALL_CHARS = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]


def test_python_whitespace_is_every_code_point_python_calls_space():
    assert PYTHON_WHITESPACE == "".join(c for c in ALL_CHARS if c.isspace())


def test_the_split_is_str_split_around_every_code_point():
    lines = [f"a{c}b{c}{c}" for c in ALL_CHARS] + ["", " ", "\u3000a\u3000\u3000b\u0085", "\x1c\x1f", "\u200bx\ufeff"]
    tokens = split_tokens(pa.array(lines))
    words = tokens.vocabulary.take(pa.array(tokens.ids)).to_pylist()
    ours = [[] for _ in lines]
    for line, word in zip(tokens.line.tolist(), words):
        ours[line].append(word)
    wrong = [line for line, mine in zip(lines, ours) if mine != line.split()]
    assert not wrong, [hex(ord(w[1])) for w in wrong[:20]]


def test_zh_pads_exactly_the_characters_sacrebleu_pads():
    """Every code point, one per line, through the padding step against sacrebleu's test."""
    padded = pad_zh_chars(pa.array(ALL_CHARS)).to_pylist()
    expected = [f" {c} " if TokenizerZh._is_chinese_char(c) else c for c in ALL_CHARS]
    wrong = [hex(ord(c)) for c, ours, its in zip(ALL_CHARS, padded, expected) if ours != its]
    assert not wrong, wrong[:20]


def test_zh_padding_of_a_slice_and_of_empty_lines():
    lines = pa.array(["猫", "a猫b\u2001", "", "猫猫", "\U00020000猫", ""])
    assert pad_zh_chars(lines.slice(1, 4)).to_pylist() == ["a 猫 b \u2001 ", "", " 猫  猫 ", "\U00020000 猫 "]
    assert pad_zh_chars(lines.slice(2, 1)).to_pylist() == [""]
    assert pad_zh_chars(pa.array([], pa.string())).to_pylist() == []
    assert pad_zh_chars(lines.cast(pa.large_string())).to_pylist()[:2] == [" 猫 ", "a 猫 b \u2001 "]


def test_zh_keeps_sacrebleus_range_quirk():
    """Its bounds u'\\u20000' and u'\\u2a6d6' are two characters each: U+2001..U+2A6D is padded,
    CJK Extension B (U+20000..U+2A6D6) is not; likewise U+2F81..U+2FA1, not U+2F800..U+2FA1D."""
    assert (0x2001, 0x2A6D) in zh_code_points()
    covered = lambda c: any(a <= c <= b for a, b in zh_code_points())  # noqa: E731
    assert not covered(0x2000) and covered(0x2001) and covered(0x2A6D) and not covered(0x2A6E)
    assert not any(covered(c) for c in (0x20000, 0x2A6D6, 0x2F800, 0x2FA1D))
    assert_tokens_are_sacrebleus("zh", ["a\u2001b\u2a6dc\U00020000d\U0002f800e"])


def _neighbours(code_points):
    return [chr(c) for p in code_points for c in (p - 1, p, p + 1)
            if 0 <= c <= sys.maxunicode and not 0xD800 <= c <= 0xDFFF]


# The first and last code point of each of sacrebleu's ranges, read both as it compares them
# (first character of each bound) and as the bounds were meant (five hex digits), with the
# neighbours just outside; then ASCII, digits and every kind of whitespace.
_BOUNDS = [ord(s[0]) for r in _UCODE_RANGES for s in r]
_MEANT = [0x20000, 0x2A6D6, 0x2F800, 0x2FA1D]
ZH_ALPHABET = st.one_of(  # each kind equally likely, however many characters it has
    st.sampled_from(_neighbours(_BOUNDS + _MEANT + [a for a, _ in zh_code_points()]
                                + [b for _, b in zh_code_points()])),
    st.sampled_from(list(" !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~aZéİ猫") + ["&amp;", "<skipped>"]),
    st.sampled_from(list("0123456789.,-") + ["1.5", "3,000", "-\n"]),
    st.sampled_from(list(PYTHON_WHITESPACE) + ["\u200b", "\ufeff"]))
# Whitespace at the start matters: sacrebleu strips it before the regular expressions, where
# it would precede a period or comma.
zh_line = st.tuples(st.sampled_from(["", " ", "\u3000", "\t", "\u2001"]),
                    st.lists(ZH_ALPHABET, max_size=40).map("".join) | st.text(max_size=40)).map("".join)


@settings(max_examples=3000, deadline=None)
@given(st.lists(zh_line, max_size=8), st.booleans())
@example([" .5", "\u3000,5 ", "\u2001.1", "猫.5", "5.猫", "\n.5", "a\n.5"], False)
def test_arrow_zh_tokenizer_is_sacrebleus_token_for_token(lines, lowercase):
    assert_tokens_are_sacrebleus("zh", lines, lowercase)


def sample_lines():
    table = pq.read_table(SAMPLE, columns=["candidate", "references"])
    return table["candidate"].to_pylist() + [r for refs in table["references"].to_pylist() for r in refs]


@pytest.mark.parametrize("lowercase", [False, True])
def test_arrow_zh_tokenizer_on_every_line_of_the_sample(lowercase):
    assert_tokens_are_sacrebleus("zh", sample_lines(), lowercase)


def sample_lines_of(langpair):
    table = pq.read_table(SAMPLE, columns=["langpair", "candidate", "references"]).to_pylist()
    rows = [r for r in table if r["langpair"] == langpair]
    return [r["candidate"] for r in rows] + [ref for r in rows for ref in r["references"]]


@pytest.mark.parametrize("lowercase", [False, True])
def test_ja_mecab_on_every_en_ja_line_of_the_sample(lowercase):
    lines = sample_lines_of("en-ja")
    assert len(lines) > 4000
    assert_tokens_are_sacrebleus("ja-mecab", lines, lowercase)


# Japanese and Korean text with what MeCab and the strips around it may treat differently:
# whitespace of every kind at the ends and inside, ASCII, full-width forms, and repeated lines.
MECAB_ALPHABET = st.one_of(
    st.sampled_from(["東京", "は", "大きい", "です", "。", "、", "猫", "カタカナ", "ｶﾀｶﾅ", "１２３", "ａｂｃ",
                     "사람", "이", "한국어", "입니다", "？", "！", "「", "」", "〜"]),
    st.sampled_from(list("abcXYZ0123456789.,-!?'\"()&<>/") + ["NASA", "e-mail", "3.5"]),
    st.sampled_from(list(PYTHON_WHITESPACE) + ["\u200b", "\ufeff"]))
mecab_line = st.lists(MECAB_ALPHABET, max_size=30).map("".join) | st.text(max_size=20)


@pytest.mark.parametrize("name", ["ja-mecab", "ko-mecab"])
@settings(max_examples=300, deadline=None)
@given(lines=st.lists(mecab_line, max_size=8).flatmap(
    lambda ls: st.permutations(ls + ls[:2])), lowercase=st.booleans())
def test_mecab_tokenizers_are_sacrebleus_token_for_token(name, lines, lowercase):
    assert_tokens_are_sacrebleus(name, lines, lowercase)


def test_intl_classes_are_the_regex_modules_on_every_code_point():
    """Spelled out for RE2, \\P{N}, \\p{P} and \\p{S} match what the `regex` module's match, one
    code point at a time (RE2's own tables would differ on hundreds)."""
    import regex

    lines = pa.array(ALL_CHARS)
    for name, prop in (("not_N", r"\P{N}"), ("P", r"\p{P}"), ("S", r"\p{S}")):
        ours = pc.match_substring_regex(lines, "^" + intl_classes()[name] + "$").to_pylist()
        theirs = [m is not None for m in map(regex.compile(prop).fullmatch, ALL_CHARS)]
        wrong = [hex(ord(c)) for c, a, b in zip(ALL_CHARS, ours, theirs) if a != b]
        assert not wrong, (name, wrong[:20])


def _regex_category(prop, limit=400):
    import regex

    return regex.findall(prop, "".join(ALL_CHARS))[:limit]


def _re2_disagrees():
    """Code points where RE2's own \\p{N}, \\p{P} or \\p{S} differ from the `regex` module's."""
    import regex

    lines = pa.array(ALL_CHARS)
    out = []
    for prop in (r"\p{N}", r"\p{P}", r"\p{S}"):
        re2 = pc.match_substring_regex(lines, "^" + prop + "$").to_pylist()
        pat = regex.compile(prop)
        out += [c for c, a in zip(ALL_CHARS, re2) if a != (pat.fullmatch(c) is not None)]
    return out


@lru_cache(maxsize=1)
def intl_alphabet():
    """Characters of every kind the intl steps tell apart, each kind equally likely: digits
    (ASCII and others), punctuation, symbols, the code points RE2's own tables get wrong,
    letters and marks of several scripts, and whitespace."""
    kinds = [_regex_category(r"\p{N}"), _regex_category(r"\p{P}"), _regex_category(r"\p{S}"),
             _re2_disagrees(), list("0123456789.,-'\"()$%&") + ["1.5", "3,000"],
             list("aZéßİ猫東ア한ñ") + _regex_category(r"\p{M}", 100) + _regex_category(r"\p{L}", 200),
             list(PYTHON_WHITESPACE) + ["\u200b", "\ufeff"]]
    return st.one_of(*[st.sampled_from(k) for k in kinds])


@settings(max_examples=1500, deadline=None)
@given(data=st.data(), lowercase=st.booleans())
def test_arrow_intl_tokenizer_is_sacrebleus_token_for_token(data, lowercase):
    line = st.lists(intl_alphabet(), max_size=40).map("".join) | st.text(max_size=40)
    assert_tokens_are_sacrebleus("intl", data.draw(st.lists(line, max_size=8)), lowercase)


def test_arrow_intl_tokenizer_on_every_line_of_the_sample():
    assert_tokens_are_sacrebleus("intl", sample_lines())
