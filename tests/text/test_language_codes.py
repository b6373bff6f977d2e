"""Language pairs as real logs spell them pick the tokenizer sacrebleu's `-l` picks for the
language they name; a pair whose target cannot be told, with text that has no spaces, is warned
about, never silently scored with 13a."""
import json

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from sacrebleu.metrics import BLEU

from bleu_spark.languages import TextSettings, knows_target, target_language
from bleu_spark.spark.job import JobOptions, run_job
from conftest import SAMPLE

# spelling -> the target sacrebleu's -l would be given for it (None: cannot be told)
SPELLINGS = [
    ("en-ja", "ja"), ("EN-JA", "ja"), ("en_ja", "ja"), ("En_Ja", "ja"), ("en-JP", "ja"),
    ("eng-jpn", "ja"), ("en-US-ja-JP", "ja"), ("en_US-ja_JP", "ja"), ("en-US_ja-JP", "ja"),
    ("en-ja-JP", "ja"), ("english-japanese", "ja"), ("en-zh-CN", "zh"), ("en_zh_Hans", "zh"),
    ("EN-ZH", "zh"), ("eng-zho", "zh"), ("en-cmn", "zh"), ("en-KO", "ko"), ("eng-kor", "ko"),
    ("en-ko-KR", "ko"), (" en-ja ", "ja"), ("en_zh-Hans", "zh"),
    ("en-ja_JP", "ja"), ("en_US-ja", "ja"), ("en_ja-jp", "ja"),
    # the target is not Japanese / Chinese / Korean, however the source is spelled
    ("ja-en", "en"), ("JA-EN", "en"), ("ja-JP-en", "en"), ("zh-CN-en", "en"), ("jpn-eng", "eng"),
    ("en-de", "de"), ("en-kr", "kr"),   # kr is Kanuri, not Korea
    ("en-cn", "cn"),                     # cn names no language
    # a region (or script) after the target, in any case: ko, zh, ja are no region's code
    ("en-ko-kr", "ko"), ("EN-KO-KR", "ko"), ("en-ko_KR", "ko"), ("en-ko_kr", "ko"),
    ("eng-kor-KR", "ko"), ("eng-kor-kr", "ko"), ("en-US-ko-KR", "ko"), ("en-UK-ko-kr", "ko"),
    ("en-zh-Hant", "zh"), ("en-zh-tw", "zh"), ("en-zh-Hant-TW", "zh"), ("EN-ZH-HANT-TW", "zh"),
    ("en_GB-zh_Hans_CN", "zh"), ("en-ja-jp", "ja"), ("en-ko-", "ko"), ("en--ja", "ja"),
    ("de-en-us", "en"), ("en-gb-de", "de"), ("zh-cn-en", "en"), ("en-pt-BR", "pt"),
    ("en-es-419", "es"), ("zh-Hant-en", "en"), ("sr-Latn-RS-en-US", "en"),
    # no target to tell
    ("en-pt-br", None),   # Portuguese of Brazil or Breton of Portugal
    ("en-ko-KR-x", None), ("en/ko", None), ("en-x-ko", None),
    ("enja", None), ("ja", None), ("jpn", None), ("", None), (None, None), ("en-ja-x-y-z", None),
    ("en-xx", None),
]


@pytest.mark.parametrize("pair,target", SPELLINGS)
def test_each_spelling_picks_the_tokenizer_of_the_language_it_names(pair, target):
    # sacrebleu's own choice for the language the spelling names
    expected = BLEU._TOKENIZER_MAP.get(target, BLEU.TOKENIZER_DEFAULT)
    assert TextSettings().tokenizer_for(pair) == expected
    assert knows_target(pair) == (target is not None and target not in ("eng", "cn")), pair
    if target in ("ja", "zh", "ko", "de", "en", "kr", "pt", "es"):
        assert target_language(pair) == target


def sample_rows(langpair: str, n: int = 120) -> pa.Table:
    table = pq.read_table(SAMPLE)
    rows = table.filter(pc.equal(table["langpair"], langpair))
    first = rows["system"][0]
    return rows.filter(pc.equal(rows["system"], first)).slice(0, n)


def sacrebleu_corpus(rows: pa.Table, target: str):
    references = rows["references"].to_pylist()
    streams = [list(s) for s in zip(*references)]
    return BLEU(trg_lang=target).corpus_score(rows["candidate"].to_pylist(), streams)


def relabelled(tables_by_pair: dict, folder) -> str:
    """One Parquet file of the tables, each with its `langpair` written as the key says."""
    tables = [t.set_column(t.schema.get_field_index("langpair"), "langpair",
                           pa.array([pair] * t.num_rows)) for pair, t in tables_by_pair.items()]
    path = folder / "in.parquet"
    pq.write_table(pa.concat_tables(tables), path)
    return str(path)


@pytest.mark.spark
def test_pairs_spelled_many_ways_equal_sacrebleu_with_the_language_they_name(spark, tmp_path):
    ja, zh = sample_rows("en-ja"), sample_rows("en-zh")
    spelled = {"EN-JA": ja, "en_ja": ja, "en-JP": ja, "eng-jpn": ja, "en-zh-CN": zh, "EN_ZH": zh}
    path = relabelled(spelled, tmp_path)
    result = run_job(spark, JobOptions(input=str(path), output=str(tmp_path / "out"),
                                       group_by=("langpair",)))
    by_pair = {r["langpair"]: r for r in result.scores}
    for pair, rows in spelled.items():
        target = "ja" if rows is ja else "zh"
        expected = sacrebleu_corpus(rows, target)
        assert by_pair[pair]["score"] == expected.score, pair
        assert by_pair[pair]["tokenize"] == ("ja-mecab" if target == "ja" else "zh"), pair
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["tokenizers"] == {pair: ("ja-mecab" if rows is ja else "zh")
                                 for pair, rows in sorted(spelled.items())}
    assert not run["warnings"]


@pytest.mark.spark
def test_a_pair_whose_target_cannot_be_told_with_text_without_spaces_is_warned(spark, tmp_path):
    ja, de = sample_rows("en-ja", 60), sample_rows("en-de", 60)
    labels = {"enja": ja, "en-xx": ja, "ende": de}
    path = relabelled(labels, tmp_path)
    result = run_job(spark, JobOptions(input=str(path), output=str(tmp_path / "out"),
                                       group_by=("langpair",)))
    warned = [w for w in result.run["warnings"] if "could not be told" in w]
    assert len(warned) == 2 and any("'enja'" in w for w in warned) and any("'en-xx'" in w for w in warned)
    assert all("--tokenize" in w for w in warned)
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["warnings"] == result.run["warnings"]
    assert run["tokenizers"] == {"en-xx": "13a", "ende": "13a", "enja": "13a"}
    # scored as sacrebleu scores them with 13a all the same: a warning, not a different number
    by_pair = {r["langpair"]: r for r in result.scores}
    assert by_pair["en-xx"]["score"] == BLEU().corpus_score(
        ja["candidate"].to_pylist(), [[r[0] for r in ja["references"].to_pylist()]]).score


@pytest.mark.spark
def test_an_input_without_a_pair_column_and_text_without_spaces_is_warned(spark, tmp_path):
    ja = sample_rows("en-ja", 60).drop_columns(["langpair"])
    path = tmp_path / "in.parquet"
    pq.write_table(ja, path)
    result = run_job(spark, JobOptions(input=str(path), output=str(tmp_path / "out"),
                                       group_by=("system",)))
    warned = [w for w in result.run["warnings"] if "could not be told" in w]
    assert len(warned) == 1 and "no 'langpair' column" in warned[0] and "--tokenize" in warned[0]
    # scored with 13a as sacrebleu would: the warning says so, the number is sacrebleu's
    expected = BLEU().corpus_score(ja["candidate"].to_pylist(),
                                   [[r[0] for r in ja["references"].to_pylist()]])
    assert result.scores[0]["score"] == expected.score


# Korean as logs hold it, with the spaces 13a would split at: its token count shows nothing.
KOREAN = [("나는 어제 학교에 갔습니다.", "나는 어제 학교에 갔다."),
          ("날씨가 정말 좋네요.", "오늘 날씨가 정말 좋습니다."),
          ("그는 책을 읽고 있었다.", "그는 책을 읽는 중이었다."),
          ("우리는 내일 서울로 떠납니다.", "우리는 내일 서울로 출발합니다."),
          ("이 문제는 해결하기 어렵다.", "이 문제를 풀기는 어렵습니다."),
          ("회의는 오후 세 시에 시작한다.", "회의는 오후 3시에 시작됩니다.")]


@pytest.mark.spark
def test_pairs_with_a_region_after_the_target_get_its_tokenizer_as_sacrebleu(spark, tmp_path):
    """`en-ko-kr` and its kind name Korean (ko is no region's code): ko-mecab as sacrebleu's
    `-l en-ko` gives, not 13a; a pair that names Korean but cannot be split is warned about."""
    korean = pa.table({"system": ["A"] * len(KOREAN), "langpair": ["en-ko"] * len(KOREAN),
                       "candidate": [c for c, _ in KOREAN], "references": [[r] for _, r in KOREAN]},
                      schema=sample_rows("en-zh", 1).select(["system", "langpair", "candidate",
                                                              "references"]).schema)
    zh = sample_rows("en-zh", 60)
    spelled = {"en-ko-kr": korean, "en-ko_KR": korean, "eng-kor-KR": korean, "EN-KO-KR": korean,
               "en-zh-Hant-TW": zh, "en-zh-tw": zh, "en-ko-KR-x": korean}
    path = relabelled({p: t.select(korean.column_names).cast(korean.schema)
                       for p, t in spelled.items()}, tmp_path)
    result = run_job(spark, JobOptions(input=str(path), output=str(tmp_path / "out"),
                                       group_by=("langpair",)))
    by_pair = {r["langpair"]: r for r in result.scores}
    for pair, rows in spelled.items():
        target = "zh" if rows is zh else "ko" if pair != "en-ko-KR-x" else "x"
        expected = sacrebleu_corpus(rows, target)
        assert by_pair[pair]["score"] == expected.score, pair
        assert by_pair[pair]["tokenize"] == BLEU._TOKENIZER_MAP.get(target, "13a"), pair
    assert by_pair["en-ko-kr"]["score"] != BLEU().corpus_score(
        korean["candidate"].to_pylist(), [[r[0] for r in korean["references"].to_pylist()]]).score
    warned = [w for w in result.run["warnings"] if "could not be told" in w]
    assert len(warned) == 1 and "'en-ko-KR-x'" in warned[0] and "ko-mecab" in warned[0], warned
