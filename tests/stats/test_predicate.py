"""`aggregate --where` is a filter, not SQL: hostile predicates are refused on both engines with
one line that echoes nothing of the machine, and the allowed forms select the same rows on
pyarrow and on Spark."""
import datetime
import json
import re

import pyarrow as pa
import pytest

from bleu_spark import predicate, statstable, store
from bleu_spark.aggregate import AggregateOptions, run_aggregate
from bleu_spark.cli import main
from bleu_spark.errors import EmptySelectionError, UsageError
from bleu_spark.metrics.bleu.stats import stats_names
from bleu_spark.tokenizers import LineTokenizer

SYSTEMS = ["A", "B", "a%b", "a\\b", "axb", "a_b", "a\nb", "ab", "%", "_", "\\", "", None, "日本", "a\\%b"]


def stats_table(n: int = len(SYSTEMS)) -> pa.Table:
    """n statistics rows of one segment each (every n-gram matched), with group columns of
    every kind --where compares: strings (with LIKE's special characters and a null), integers,
    dates and booleans (a null each too)."""
    def column(values, kind):
        return pa.array([values[i % len(values)] for i in range(n)], kind)

    groups = {"id": pa.array(range(n), pa.int32()),
              "system": column(SYSTEMS, pa.string()),
              "langpair": column(["en-de", "de-en", "en-zh"], pa.string()),
              "day": column([1, 2, 3, None], pa.int32()),
              "run_date": column([datetime.date(2026, 1, d) for d in (1, 2, 3)], pa.date32()),
              "flag": column([True, False, None], pa.bool_())}
    one = lambda value, kind=pa.int64(): pa.array([value] * n, kind)
    measurement = statstable.measurement_columns(
        n, one("13a", pa.string()), one(LineTokenizer("13a", False).signature(), pa.string()),
        "case:mixed|order:4")
    counts = {"n_segments": one(1), "n_rejected": one(0), "n_reference_segments": one(None),
              "min_refs": one(1), "max_refs": one(1)}
    sums = {"sys_len": one(4), "ref_len": one(4)}
    sums.update({f"{kind}_{order}": one(5 - order) for kind in ("correct", "total") for order in range(1, 5)})
    return statstable.build(groups, measurement, counts, {name: sums[name] for name in stats_names(4)})


def save(folder, table, partition_by=()):
    out = store.open_output(str(folder), partition_by)
    out.write_table("stats", table)
    out.commit({"run_id": out.run_id})
    return str(folder)


def spark_ids(spark, table, text):
    from bleu_spark.spark.aggregate import row_filter

    frame = spark.createDataFrame(table)
    return sorted(r.id for r in frame.where(row_filter(predicate.parse(text), frame.schema)).select("id").collect())


def local_ids(table, text):
    return sorted(statstable.filtered(table, predicate.parse(text))["id"].to_pylist())


# --- hostile predicates -------------------------------------------------------------------

HOSTILE = [
    "CAST((SELECT content FROM read_text('/etc/passwd')) AS INTEGER) = 1",
    "(SELECT content FROM read_text('/etc/passwd')) LIKE 'root:%'",
    "glob('/root/*')",
    "system IN (SELECT content FROM read_text('/etc/passwd'))",
    "(SELECT count(*) FROM text.`/etc/passwd`) > 5",
    "java_method('java.lang.System','getProperty','user.home') = '/root'",
    "CAST(system AS INT) = 1",
    "system::int = 1",
    "system = 'A'; SELECT * FROM read_text('/etc/passwd')",
    "system = 'A' -- ' OR system LIKE '/root%'",
    "system = 'A' /* OR 1 = 1 */",
    "EXISTS (SELECT 1)",
    "day + 1 = 2",
    "system = concat('/ro', 'ot')",
    "system ILIKE 'a'",
]
# Valid syntax, refused once the columns are known.
REFUSED_BY_COLUMNS = [
    ('langpair = "en-de"', "en-de is not a column"),
    ("replicate < 10", "replicate is not a column"),
    ("replicate_sums IS NULL", "replicate_sums may not be filtered on"),
    ("segment_fingerprint = 1", "segment_fingerprint may not be filtered on"),
    ("n_segments > 0", "n_segments may not be filtered on"),
    ("correct_1 > 0", "correct_1 may not be filtered on"),
    ("customer = 'x'", "customer is not a column"),
    ("system = 1", "system is a string column, compared with a number"),
    ("day = '1'", "day is an integer column, compared with a string"),
    ("flag = 'yes'", "flag is a boolean column, compared with a string"),
    ("run_date = 20260101", "run_date is a date column, compared with a number"),
    ("run_date = '2026-1-2'", "a date literal is not a YYYY-MM-DD date"),
    ("day LIKE '1%'", "day is an integer column, compared with a LIKE pattern"),
    ("system", "system is not a boolean column"),
    ("system = langpair", "comparing two columns is not allowed"),
]


def assert_one_clean_line(text):
    assert len(text.strip().splitlines()) == 1, text
    assert "root:" not in text and "/root" not in text and "Traceback" not in text


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    return save(tmp_path_factory.mktemp("where") / "saved", stats_table())


@pytest.mark.parametrize("engine", ["local", "spark"])
@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_predicates_are_refused_before_any_reading_or_spark(saved, tmp_path, capsys, monkeypatch,
                                                                     engine, text):
    import bleu_spark.spark.runtime.classic as session

    monkeypatch.setattr(session, "spark_session", lambda *a, **k: pytest.fail("Spark was started"))
    monkeypatch.setattr(statstable, "read", lambda *a, **k: pytest.fail("the table was read"))
    code = main(["aggregate", "--stats", saved, "--output", str(tmp_path / "out"), "--engine", engine,
                 "--where", text])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.startswith("bleu-spark: error: bad --where predicate: ")
    assert_one_clean_line(captured.err + captured.out)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text,message", REFUSED_BY_COLUMNS)
def test_predicates_on_columns_it_may_not_name_or_of_the_wrong_type_are_refused_locally(
        saved, tmp_path, capsys, text, message):
    code = main(["aggregate", "--stats", saved, "--output", str(tmp_path / "out"), "--where", text])
    captured = capsys.readouterr()
    assert code == 2 and message in captured.err
    assert_one_clean_line(captured.err + captured.out)
    assert not (tmp_path / "out").exists()


def test_an_unknown_column_lists_the_columns_it_may_name(saved, tmp_path, capsys):
    main(["aggregate", "--stats", saved, "--output", str(tmp_path / "out"), "--where", "replicate < 10"])
    allowed = capsys.readouterr().err.split("columns it may name: ")[1].strip().split(", ")
    assert allowed == ["id", "system", "langpair", "day", "run_date", "flag",
                       *statstable.MEASUREMENT, statstable.RESAMPLING]


@pytest.mark.parametrize("text,kind", [
    ("java_method('a') = 1", "function calls are not allowed (java_method)"),
    ("(SELECT 1) = 1", "subqueries are not allowed"),
    ("CAST(day AS STRING) = '1'", "casts are not allowed"),
    ("day = 1; day = 2", "several statements are not allowed"),
    ("day = 1 -- x", "comments are not allowed"),
    ("day * 2 = 2", "arithmetic is not allowed"),
    ("day IS TRUE", "IS is allowed only as IS NULL or IS NOT NULL"),
    ("x.day = 1", "qualified column names"),
    ("system LIKE 'a\\b'", "a backslash escapes only %, _ or a backslash"),
    ("system LIKE 'a\\'", "a backslash escapes only %, _ or a backslash"),
    ("day = 'a' OR", "it does not parse"),
    ("  ", "it is empty"),
    ("day = TIMESTAMP '2026-01-01 00:00:00'", "casts are not allowed"),
    ("day = 99999999999999999999", "out of range"),
])
def test_refusals_name_the_construct(text, kind):
    with pytest.raises(UsageError, match=re.escape(kind)):
        AggregateOptions(stats="unused", where=text)


@pytest.mark.spark
@pytest.mark.parametrize("text", [*HOSTILE, *(t for t, _ in REFUSED_BY_COLUMNS)])
def test_every_refusal_holds_on_spark_too(spark, saved, text):
    with pytest.raises(UsageError) as refused:
        run_aggregate(AggregateOptions(stats=saved, where=text, engine="spark"), spark)
    assert_one_clean_line(str(refused.value))


# --- the allowed forms: the same rows on both engines --------------------------------------

ALLOWED = [
    ("system = 'A'", [0, 15]),
    ("'A' = system", [0, 15]),
    ("system <> 'A'", None),
    ("system != 'A'", None),
    ("NOT (system = 'A')", None),
    ("system IS NULL", [12, 27]),
    ("system IS NOT NULL", None),
    ("system IN ('A', 'B')", [0, 1, 15, 16]),
    ("system IN ('A', NULL)", [0, 15]),
    ("system NOT IN ('A', NULL)", []),      # never true: A is excluded, the rest unknown
    ("system NOT IN ('A', 'B')", None),
    ("system = NULL", []),
    ("day BETWEEN 2 AND 3", None),
    ("day NOT BETWEEN 2 AND 3", None),
    ("day < 2.5 AND day >= -1", None),
    ("day IN (1, 2.0)", None),
    ("day IS NULL OR flag", None),
    ("flag", None),
    ("NOT flag", None),
    ("flag = FALSE OR flag IS NULL", None),
    ('"day" = 1 AND "langpair" = \'en-de\'', None),   # double quotes name columns
    ("langpair LIKE 'en-%'", None),
    ("langpair NOT LIKE '%-en'", None),
    ("run_date = '2026-01-02'", None),
    ("run_date >= DATE '2026-01-02'", None),
    ("run_date BETWEEN '2026-01-01' AND '2026-01-02'", None),
    ("run_date > '2026-01-01' AND (system < 'b' OR system > 'z')", None),
    ("tokenize = '13a' AND metric_options = 'case:mixed|order:4'", list(range(30))),
    ("sacrebleu_version LIKE '2.6%'", list(range(30))),
    ("(day = 1 OR day = 2) AND NOT (langpair = 'en-zh' OR flag IS NULL)", None),
]


def test_allowed_forms_select_the_expected_rows_locally():
    table = stats_table(30)
    for text, expected in ALLOWED:
        if expected is not None:
            assert local_ids(table, text) == expected, text
    # null makes a comparison unknown, and an unknown row is dropped by both forms of "not A"
    ids = local_ids(table, "system <> 'A'")
    assert 12 not in ids and 0 not in ids and len(ids) == 30 - 2 - 2
    assert local_ids(table, "NOT (system = 'A')") == ids


@pytest.mark.spark
def test_allowed_forms_select_the_same_rows_on_pyarrow_and_spark(spark):
    table = stats_table(30)
    for text, _ in ALLOWED:
        assert spark_ids(spark, table, text) == local_ids(table, text), text


# --- LIKE: % and _ and backslash escapes mean the same on both ---------------------------

PATTERNS = ["a\\%b", "a\\_b", "a_b", "a%", "%b", "a\\\\b", "a\\\\\\%b", "_", "%", "", "__", "\\%",
            "\\\\", "\\_", "a%b", "日_", "a_%", "%\\%%"]


def like_reference(pattern, value):
    """SQL's LIKE by hand: % any run, _ any one character, a backslash takes the next literally."""
    regex, at = [], 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            regex.append(re.escape(pattern[at + 1]))
            at += 2
            continue
        regex.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
        at += 1
    return re.fullmatch("".join(regex), value, re.DOTALL) is not None


def test_like_matches_sqls_meaning_locally():
    table = stats_table()
    for pattern in PATTERNS:
        text = "system LIKE '" + pattern.replace("'", "''") + "'"
        expected = [i for i, s in enumerate(SYSTEMS) if s is not None and like_reference(pattern, s)]
        assert local_ids(table, text) == expected, pattern


@pytest.mark.spark
def test_like_agrees_between_pyarrow_and_spark(spark):
    table = stats_table()
    for pattern in PATTERNS:
        for form in ("LIKE", "NOT LIKE"):
            text = f"system {form} '" + pattern.replace("'", "''") + "'"
            assert spark_ids(spark, table, text) == local_ids(table, text), text


# --- a date partition column, an empty selection, the whole command ------------------------

@pytest.fixture(scope="module")
def partitioned(tmp_path_factory):
    return save(tmp_path_factory.mktemp("where") / "daily", stats_table(30), ("run_date",))


DATE_CASES = [("run_date BETWEEN '2026-01-02' AND '2026-01-03'", 20),
              ("run_date >= DATE '2026-01-03'", 10),
              ("run_date = '2026-01-01' AND system = 'A'", 2),
              ("run_date IN ('2026-01-01', '2026-01-03') AND day IS NULL", 5)]


def segments(result):
    return sum(r["n_segments"] for r in result.scores)


def test_a_date_partition_column_is_filtered_with_date_strings_locally(partitioned):
    for text, n in DATE_CASES:
        result = run_aggregate(AggregateOptions(stats=partitioned, where=text, group_by=()))
        assert segments(result) == n, text


@pytest.mark.spark
def test_a_date_partition_column_is_filtered_alike_on_spark(spark, partitioned):
    for text, n in DATE_CASES:
        result = run_aggregate(AggregateOptions(stats=partitioned, where=text, group_by=(),
                                                engine="spark"), spark)
        assert segments(result) == n, text


def test_a_filter_that_selects_nothing_is_exit_13_not_an_empty_success(saved, tmp_path, capsys):
    code = main(["aggregate", "--stats", saved, "--output", str(tmp_path / "out"),
                 "--where", "system = 'nobody'"])
    captured = capsys.readouterr()
    assert code == EmptySelectionError.exit_code == 13
    assert "--where selects no rows" in captured.err and len(captured.err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.spark
def test_a_filter_that_selects_nothing_on_spark(spark, saved):
    with pytest.raises(EmptySelectionError):
        run_aggregate(AggregateOptions(stats=saved, where="system = 'nobody'", engine="spark"), spark)


def test_the_command_scores_the_rows_the_filter_keeps(saved, tmp_path, capsys):
    text = "system IN ('A', 'B') AND langpair LIKE 'en-%'"
    code = main(["aggregate", "--stats", saved, "--output", str(tmp_path / "out"), "--group-by", "system",
                 "--where", text])
    assert code == 0, capsys.readouterr().err
    scores = json.loads((tmp_path / "out" / "scores.json").read_text())
    assert [(r["system"], r["n_segments"]) for r in sorted(scores, key=lambda r: r["system"])] == [("A", 1)]
    assert json.loads((tmp_path / "out" / "run.json").read_text())["where"] == text
