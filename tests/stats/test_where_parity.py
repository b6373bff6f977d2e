"""`--where` means the same on both engines for every literal a back end may send, and what a
filter may hold is bounded: past a bound it is one line, never a RecursionError or a crash."""
import random
import subprocess
import sys
from fractions import Fraction

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from bleu_spark import predicate, statstable
from bleu_spark.cli import main
from bleu_spark.errors import UsageError
from test_predicate import local_ids, save, spark_ids, stats_table

DAYS = [1, 2, 3, None]   # stats_table's `day`, an int32 column, row i holds DAYS[i % 4]
N = 30


def sql(op, value, literal):
    """SQL's three-valued comparison of an integer with a decimal literal, exactly."""
    if value is None:
        return None
    a, b = Fraction(value), Fraction(literal)
    return {"=": a == b, "<>": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def expected_ids(op, literal, negate=False):
    kept = []
    for i in range(N):
        truth = sql(op, DAYS[i % 4], literal)
        if truth is not None and (not truth if negate else truth):
            kept.append(i)
    return kept


LITERALS = ["1.5", "1.0", "2.0", "0.5", "3.5", "-1.5", "2.9999", "1e3", "1e30", "-1e30",
            "9223372036854775807.0", "0.0"]
OPS = ["=", "<>", "<", "<=", ">", ">="]


def float_cases():
    for literal in LITERALS:
        for op in OPS:
            yield f"day {op} {literal}", expected_ids(op, float(literal))
            yield f"NOT (day {op} {literal})", expected_ids(op, float(literal), negate=True)


def test_decimal_literals_on_an_integer_column_compare_as_integers_after_binding():
    # Both engines get integers: pyarrow never casts 1.5 to the column's type, Spark never
    # compares in doubles.
    kinds = predicate.arrow_kinds(stats_table(N).schema)
    for text in ("day > 1.5", "day = 1.0", "day BETWEEN 0.5 AND 2.5", "day IN (1.0, 2.5)",
                 "day <= 1e30"):
        tree = predicate.bind(predicate.parse(text), kinds, ["day"]).tree
        literals = [v for v in _literals(tree) if v is not None]
        assert literals and all(type(v) is int for v in literals), (text, tree)


def _literals(tree):
    if isinstance(tree, predicate.Lit):
        yield tree.value
    elif not isinstance(tree, predicate.Col):
        for value in vars(tree).values():
            for item in value if isinstance(value, tuple) else (value,):
                if not isinstance(item, str):
                    yield from _literals(item)


def test_decimal_literals_keep_sqls_rows_in_memory_and_from_files(tmp_path):
    table = stats_table(N)
    saved = save(tmp_path / "saved", table)
    daily = save(tmp_path / "daily", table, ("day",))
    for text, ids in float_cases():
        assert local_ids(table, text) == ids, text
        for folder in (saved, daily):
            read = statstable.read(folder, predicate.parse(text))
            assert sorted(read["id"].to_pylist()) == ids, (folder, text)
    assert local_ids(table, "day BETWEEN 0.5 AND 2.5") == expected_ids("<", 3)
    assert local_ids(table, "day IN (1.0, 2.5, 3)") == [i for i in range(N) if DAYS[i % 4] in (1, 3)]
    assert local_ids(table, "day IN (1.5)") == [] == local_ids(table, "day IN (1.5, NULL)")
    assert local_ids(table, "day NOT IN (1.5)") == [i for i in range(N) if DAYS[i % 4] is not None]


def generated_filters(seed=31, count=120):
    """Random filters over every column kind, with decimal, out-of-range and null literals."""
    rng = random.Random(seed)
    atoms = ["day {op} {num}", "id {op} {num}", "day IN ({nums})", "day BETWEEN {num} AND {num}",
             "system {op} 'A'", "flag = {bool}", "day IS NULL", "langpair LIKE 'en-%'",
             "run_date {op} '2026-01-02'", "system IN ('A', NULL, 'b')", "day = NULL"]

    def num():
        return rng.choice(["1", "2", "1.5", "2.0", "-3", "0.25", "1e30", "-1e30", "29.5", "30"])

    def atom():
        return rng.choice(atoms).format(op=rng.choice(OPS), num=num(), bool=rng.choice(["TRUE", "FALSE"]),
                                        nums=", ".join(num() for _ in range(rng.randint(1, 4))))

    def expr(depth):
        if depth == 0 or rng.random() < 0.3:
            return atom()
        form = rng.choice(["and", "or", "not"])
        if form == "not":
            return f"NOT ({expr(depth - 1)})"
        return f"({expr(depth - 1)}) {form.upper()} ({expr(depth - 1)})"

    return [expr(3) for _ in range(count)]


@pytest.mark.spark
def test_generated_filters_keep_the_same_rows_on_pyarrow_and_spark(spark, tmp_path):
    table = stats_table(N)
    daily = save(tmp_path / "daily", table, ("day",))
    for text in [*(t for t, _ in float_cases()), *generated_filters()]:
        local = local_ids(table, text)
        assert spark_ids(spark, table, text) == local, text
        assert sorted(statstable.read(daily, predicate.parse(text))["id"].to_pylist()) == local, text


def test_a_filter_pyarrow_cannot_evaluate_is_named_as_the_filter(tmp_path, monkeypatch):
    saved = save(tmp_path / "saved", stats_table(N))
    monkeypatch.setattr(predicate, "to_arrow", lambda where: pc.field("system") > pc.scalar(1))
    with pytest.raises(UsageError, match=r"bad --where predicate 'day > 1'"):
        statstable.read(saved, predicate.parse("day > 1"))


# --- bounds ---------------------------------------------------------------------------------

def refusal(text):
    with pytest.raises(UsageError) as caught:
        predicate.parse(text)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_nesting_terms_and_list_length_are_bounded_with_one_line():
    depth, terms, values = predicate.MAX_NESTING, predicate.MAX_TERMS, predicate.MAX_IN_VALUES
    predicate.parse("(" * depth + "day = 1" + ")" * depth)
    predicate.parse("NOT " * depth + "day = 1")
    predicate.parse(" OR ".join(["day = 1"] * terms))
    predicate.parse(" AND ".join(["day BETWEEN 1 AND 2"] * terms))   # BETWEEN's AND joins nothing
    assert "nests parentheses 17 deep" in refusal("(" * (depth + 1) + "day = 1" + ")" * (depth + 1))
    assert "17 NOTs in a row" in refusal("NOT " * (depth + 1) + "day = 1")
    assert f"joins {terms + 1} conditions" in refusal(" OR ".join(["day = 1"] * (terms + 1)))
    assert f"joins {terms + 1} conditions" in refusal(" AND ".join(["day = 1"] * (terms + 1)))
    assert f"has {values + 1} values" in refusal("day IN (" + ", ".join(["1"] * (values + 1)) + ")")
    # what ended in a RecursionError or a crash before: every one refused in a line
    for text in ["(" * 49 + "day = 1" + ")" * 49, "NOT " * 109 + "day = 1",
                 " OR ".join(["day = 1"] * 1000), "(" * 500 + "NOT " * 500 + "day = 1" + ")" * 500]:
        refusal(text)


def test_the_worst_filter_within_the_bounds_parses_deep_in_the_stack():
    depth, terms = predicate.MAX_NESTING, predicate.MAX_TERMS
    chain = " OR ".join(["NOT day = 1"] * (terms - 1))
    text = "(" * (depth - 1) + "NOT " * depth + "(" + chain + ")" + ")" * (depth - 1)

    def nested(levels):   # a caller already 200 frames deep, as under a web framework
        return predicate.parse(text) if levels == 0 else nested(levels - 1)

    tree = nested(200)
    table = stats_table(N)
    kinds = predicate.arrow_kinds(table.schema)
    bound = predicate.bind(tree, kinds, ["day"])
    assert table.filter(predicate.to_arrow(bound)).num_rows >= 0


def test_an_in_list_of_the_bound_is_evaluated_locally_without_a_crash(tmp_path):
    # Run apart: a 10,000-deep pyarrow expression killed the process with SIGSEGV.
    saved = save(tmp_path / "saved", stats_table(N))
    values = ", ".join(str(v) for v in range(2, 2 + predicate.MAX_IN_VALUES))
    code = ("import sys; from bleu_spark.cli import main; "
            f"sys.exit(main(['aggregate', '--stats', {saved!r}, '--output', {str(tmp_path / 'out')!r}, "
            f"'--engine', 'local', '--group-by', 'day', '--where', 'day IN ({values})']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    table = statstable.read(str(tmp_path / "out"))
    assert sorted(table["day"].to_pylist()) == [2, 3]


@pytest.mark.spark
def test_an_in_list_of_the_bound_on_spark(spark):
    table = stats_table(N)
    values = ", ".join(str(v) for v in range(2, 2 + predicate.MAX_IN_VALUES))
    assert spark_ids(spark, table, f"day IN ({values})") == local_ids(table, "day IN (2, 3)")


def test_a_filter_past_a_bound_is_one_line_and_exit_2(tmp_path, capsys):
    saved = save(tmp_path / "saved", stats_table(N))
    code = main(["aggregate", "--stats", saved, "--output", str(tmp_path / "out"),
                 "--where", "(" * 60 + "day = 1" + ")" * 60])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("bleu-spark: error: bad --where predicate: it nests")
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


# --- LIKE on Spark without backtracking ----------------------------------------------------

def random_like_cases(seed=7, count=300):
    """Patterns and values over a small alphabet, so parts repeat and overlap (where a regex
    would backtrack and a leftmost search could go wrong)."""
    rng = random.Random(seed)
    pieces = ["a", "b", "ab", "%", "_", "\\%", "\\_", "\\\\", "日", "\n", "."]
    patterns = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 7))) for _ in range(count)]
    values = ["".join(rng.choice("ab%_\\日\n.") for _ in range(rng.randint(0, 9))) for _ in range(count)]
    return patterns, values


@pytest.mark.spark
def test_like_on_spark_keeps_sqls_meaning_on_generated_patterns(spark):
    from test_predicate import like_reference
    from bleu_spark.spark.aggregate import SparkEngine
    from pyspark.sql import functions as F

    patterns, values = random_like_cases()
    frame = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "id int, v string")
    engine = SparkEngine()
    # one query: a column per pattern, each the pattern's regex against every value
    found = frame.select("id", *[engine.like(F.col("v"), p).alias(f"p{j}") for j, p in enumerate(patterns)])
    rows = sorted(found.collect(), key=lambda r: r.id)
    for j, pattern in enumerate(patterns):
        assert [r[f"p{j}"] for r in rows] == [like_reference(pattern, v) for v in values], pattern


@pytest.mark.spark
def test_a_like_pattern_that_backtracks_in_spark_sql_is_answered(spark):
    # Spark's own LIKE spends minutes on this (and hours with one more `%a`): a filter a back
    # end sends must not hold the engine. The answer is SQL's on both engines.
    from test_predicate import spark_ids

    table = stats_table(N)
    long = "a" * 2000
    table = table.set_column(table.schema.get_field_index("system"), "system",
                             pa.array([long if i % 2 else long + "z" for i in range(N)]))
    text = "system LIKE '%a%a%a%a%a%a%a%z'"
    assert spark_ids(spark, table, text) == local_ids(table, text) == list(range(0, N, 2))
