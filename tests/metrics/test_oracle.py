"""The core against sacrebleu 2.6 itself, on generated inputs and on the real WMT22 sample."""
from collections import defaultdict

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bleu_spark import bleu_of_rows
from bleu_spark.languages import TextSettings
from bleu_spark.metrics.bleu import BleuConfig
from bleu_spark.tokenizers import SPM_TOKENIZERS, TOKENIZERS
from bleu_spark.metrics.bleu.oracle import sacrebleu_score
from conftest import SAMPLE, WORDS
from matching import assert_matches_sacrebleu, assert_tokens_are_sacrebleus

# Whitespace that str.split() splits on (and sacrebleu with it), a zero-width space that it does
# not, a byte-order mark, and a tab.
ODD_CHARS = ["\u00a0", "\u3000", "\u2028", "\u001c", "\u0085", "\u200b", "\ufeff", "\t", "  "]

token = st.one_of(st.sampled_from(WORDS), st.sampled_from(ODD_CHARS),
                  st.text(alphabet="abcAB.,-'!", min_size=1, max_size=4))
sentence = st.lists(token, min_size=0, max_size=25).map(" ".join)
reference = st.one_of(sentence, st.just(""), st.none())
segment = st.tuples(sentence, st.lists(reference, min_size=1, max_size=4)).filter(
    lambda seg: any(r is not None for r in seg[1]))
corpus = st.lists(segment, min_size=1, max_size=12)

text_settings = st.builds(TextSettings, tokenize=st.sampled_from([t for t in TOKENIZERS
                                                                   if t not in SPM_TOKENIZERS]))
config = st.builds(
    BleuConfig,
    lowercase=st.booleans(),
    smooth_method=st.sampled_from(["exp", "floor", "add-k", "none"]),
    smooth_value=st.one_of(st.none(), st.sampled_from([0.0, 0.01, 0.5, 1, 2.5])),
    max_ngram_order=st.integers(1, 6),
    effective_order=st.booleans())


def check(segments, cfg, langpair=None, text=TextSettings()):
    candidates = [c for c, _ in segments]
    references = [r for _, r in segments]
    ours = bleu_of_rows(candidates, references, langpair=langpair, config=cfg, text=text)
    assert_matches_sacrebleu(ours, sacrebleu_score(candidates, references, cfg, langpair, text))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus, config, text_settings)
def test_generated_corpora_match_sacrebleu(segments, cfg, text):
    check(segments, cfg, text=text)


@pytest.mark.parametrize("name", SPM_TOKENIZERS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segments=corpus, smooth=st.sampled_from(["exp", "floor", "add-k", "none"]))
def test_sentencepiece_tokenizers_match_sacrebleu(spm_model, name, segments, smooth):
    check(segments, BleuConfig(smooth_method=smooth), text=TextSettings(name, spm_model))


@pytest.mark.parametrize("langpair,tokenizer", [("en-zh", "zh"), ("en-ja", "ja-mecab"),
                                                ("en-ko", "ko-mecab"), ("de-en", "13a"),
                                                (None, "13a")])
def test_auto_tokenizer_follows_target_language(langpair, tokenizer):
    segments = [("東京 は 大きい です。 사람", ["東京は大きいです。", "사람 이"]),
                ("北京 猫", ["北京的猫", None])]
    result = bleu_of_rows([c for c, _ in segments], [r for _, r in segments], langpair=langpair)
    assert result.tokenize == tokenizer
    check(segments, BleuConfig(), langpair=langpair)


@pytest.mark.parametrize("cfg,text", [(BleuConfig(), TextSettings()),
                                      (BleuConfig(lowercase=True, smooth_method="add-k"), TextSettings()),
                                      (BleuConfig(max_ngram_order=6), TextSettings("char"))])
def test_segments_of_ten_thousand_tokens(cfg, text):
    long_ref = " ".join(WORDS[i % len(WORDS)] for i in range(12000))
    long_hyp = " ".join(WORDS[(i * 7) % len(WORDS)] for i in range(10500))
    check([(long_hyp, [long_ref, None]), ("", [""]), (long_ref, [long_hyp])], cfg, text=text)


@pytest.mark.parametrize("text", ["\ufeffThe cat sat.", "The\u00a0cat\u3000sat\u2028on\u001cthe mat",
                                  "the\tcat  sat ", "zero\u200bwidth space", ""])
def test_unicode_whitespace_bom_tabs_and_empty(text):
    for tokenize in ("13a", "none", "intl"):
        check([(text, [text.replace("\u00a0", " "), "The cat sat on the mat"])], BleuConfig(),
              text=TextSettings(tokenize))


def test_every_group_of_the_real_sample_matches_sacrebleu():
    rows = pq.read_table(SAMPLE, columns=["langpair", "system", "seg_id", "candidate",
                                          "references"]).to_pylist()
    groups = defaultdict(list)
    for row in rows:
        groups[row["langpair"], row["system"]].append(row)
    assert len(groups) == 112
    for (langpair, _), group in groups.items():
        check([(r["candidate"], r["references"]) for r in group], BleuConfig(), langpair=langpair)


def test_weights_change_the_signature_and_uniform_ones_do_not():
    segments = [("the cat sat on the mat", ["the cat sat on a mat"])]
    uniform = bleu_of_rows(*zip(*segments), weights=(0.25,) * 4)
    skewed = bleu_of_rows(*zip(*segments), weights=(0.4, 0.3, 0.2, 0.1))
    check(segments, BleuConfig())
    assert uniform.signature == sacrebleu_score(*zip(*segments), BleuConfig())["signature"]
    assert "|weights:0.4,0.3,0.2,0.1|" in skewed.signature
    assert skewed.score != uniform.score


ALPHABET = st.sampled_from(list(" !\"#$%&'()*+,-./0123456789:;<=>?@[\\]^_`{|}~aZé猫\n\t") + ODD_CHARS
                           + ["&amp;", "&quot;", "&lt;", "&gt;", "<skipped>", "-\n"])


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.lists(ALPHABET, max_size=40).map("".join) | st.text(max_size=40), max_size=8),
       st.booleans())
def test_arrow_13a_tokenizer_is_sacrebleus_token_for_token(lines, lowercase):
    assert_tokens_are_sacrebleus("13a", lines, lowercase)


def test_arrow_13a_tokenizer_on_every_line_of_the_sample():
    table = pq.read_table(SAMPLE, columns=["candidate", "references"])
    lines = table["candidate"].to_pylist() + [r for refs in table["references"].to_pylist() for r in refs]
    assert_tokens_are_sacrebleus("13a", lines)


@pytest.mark.parametrize("name", [t for t in TOKENIZERS if t not in SPM_TOKENIZERS])
@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.lists(ALPHABET, max_size=30).map("".join) | st.text(max_size=30), max_size=6))
def test_every_tokenizer_splits_like_str_split(name, lines):
    assert_tokens_are_sacrebleus(name, lines)
