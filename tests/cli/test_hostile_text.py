"""Hostile input, one topic: text and columns a log holds: invalid UTF-8, group keys as they went
in, rejected rows' columns."""
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import cli
from hostile_common import run_cli


# --- invalid UTF-8 in text columns -----------------------------------------------------------

def unchecked_strings(values):
    """A string array holding bytes as given, valid UTF-8 or not (as a foreign writer may)."""
    data = b"".join(v or b"" for v in values)
    offsets = np.cumsum([0] + [len(v or b"") for v in values]).astype(np.int32)
    validity = pa.array([v is not None for v in values]).buffers()[1]
    return pa.Array.from_buffers(pa.string(), len(values), [validity, pa.py_buffer(offsets.tobytes()),
                                                            pa.py_buffer(data)])


UTF8_ROWS = [  # candidate, references (bytes); the third and fifth rows are not UTF-8
    (b"the cat sat on the mat", [b"the cat sat on a mat"]),
    (b"a dog was big", [b"a big dog", b"the dog was big"]),
    (b"bad \xff bytes here", [b"bad bytes here"]),
    (b"caf\xc3\xa9 is open", [b"the caf\xc3\xa9 is open"]),
    (b"the storm was massive", [b"fine", b"the storm was \xe2\x82 massive"]),
]


def utf8_table(path):
    refs = [r for _, rs in UTF8_ROWS for r in rs]
    offsets = pa.array(np.cumsum([0] + [len(rs) for _, rs in UTF8_ROWS]).astype(np.int32))
    table = pa.table({"system": ["A"] * len(UTF8_ROWS), "seg_id": list(range(len(UTF8_ROWS))),
                      "candidate": unchecked_strings([c for c, _ in UTF8_ROWS]),
                      "references": pa.ListArray.from_arrays(offsets, unchecked_strings(refs))})
    pq.write_table(table, path)
    return str(path)


def test_invalid_utf8_reason_for_whole_arrays():
    from bleu_spark.rows import rejection_reasons

    refs = [r for _, rs in UTF8_ROWS for r in rs]
    offsets = pa.array(np.cumsum([0] + [len(rs) for _, rs in UTF8_ROWS]).astype(np.int32))
    reasons = rejection_reasons(unchecked_strings([c for c, _ in UTF8_ROWS]),
                                pa.ListArray.from_arrays(offsets, unchecked_strings(refs)))
    assert reasons.to_pylist() == [None, None, "invalid_utf8", None, "invalid_utf8"]


@pytest.mark.spark
@pytest.mark.parametrize("tokenize", ["13a", "intl"])
def test_invalid_utf8_rows_are_quarantined_and_the_rest_scored_as_sacrebleu(spark, tmp_path, tokenize):
    import sacrebleu
    from bleu_spark.spark.job import JobOptions, run_job

    path = utf8_table(tmp_path / "in.parquet")
    result = run_job(spark, JobOptions(input=path, output=str(tmp_path / "out"), on_invalid="quarantine",
                                       tokenize=tokenize))
    assert result.run["rows"]["rejected_by_reason"] == {"invalid_utf8": 2}
    good = [(c.decode(), [r.decode() for r in rs]) for i, (c, rs) in enumerate(UTF8_ROWS) if i not in (2, 4)]
    theirs = sacrebleu.BLEU(tokenize=tokenize).corpus_score(
        [c for c, _ in good], [[rs[0] for _, rs in good], [rs[1] if len(rs) > 1 else None for _, rs in good]])
    [row] = result.scores
    assert row["score"] == theirs.score and row["n_segments"] == 3 and row["n_rejected"] == 2
    rejected = pq.read_table(tmp_path / "out" / "rejected")
    assert rejected["reason"].to_pylist() == ["invalid_utf8"] * 2
    assert sorted(rejected["seg_id"].to_pylist()) == [2, 4]


@pytest.mark.e2e
def test_invalid_utf8_with_fail_is_exit_7_one_line(tmp_path):
    path = utf8_table(tmp_path / "in.parquet")
    result = run_cli("--input", path, "--output", str(tmp_path / "out"), "--tokenize", "intl",
                     "--progress-seconds", "0")
    assert result.returncode == 7, result.stderr[-3000:]
    lines = [l for l in result.stderr.splitlines() if l.startswith("bleu-spark:")]
    assert len(lines) == 1 and "2 rows cannot be scored (invalid_utf8: 2)" in lines[0]
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()
    # nothing of Spark's logging around the line: only the JVM's own notice of its modules
    others = [l for l in result.stderr.splitlines() if not l.startswith("bleu-spark:")]
    assert all(l.startswith("WARNING: Using incubator modules") for l in others), others


# --- group keys come out as they went in -----------------------------------------------------

@pytest.mark.e2e
def test_group_keys_keep_value_and_type_whatever_the_time_zone_and_json_stays_json(tmp_path):
    import datetime
    import decimal

    day = datetime.datetime(2024, 1, 1, 23, 0, tzinfo=datetime.timezone.utc)
    schema = pa.schema([("system", pa.string()), ("day", pa.timestamp("us", tz="UTC")),
                        ("price", pa.decimal128(10, 2)), ("rating", pa.float64()),
                        ("candidate", pa.string()), ("references", pa.list_(pa.string()))])
    rows = [{"system": "A", "day": day, "price": decimal.Decimal("12.50"),
             "rating": float("nan") if i < 2 else 1.0, "candidate": None if i == 1 else "the cat sat",
             "references": ["the cat sat on"]} for i in range(4)]
    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    out = tmp_path / "out"
    result = run_cli("--input", str(path), "--output", str(out), "--group-by", "system,day,price,rating",
                     "--on-invalid", "quarantine", "--progress-seconds", "0", env={"TZ": "Asia/Kolkata"})
    assert result.returncode == 0, result.stderr[-3000:]
    scores = pq.read_table(out / "scores")
    assert scores.schema.field("day").type == pa.timestamp("us", tz="UTC")
    assert scores.schema.field("price").type == pa.decimal128(10, 2)
    assert scores["day"].cast(pa.int64()).to_pylist() == [int(day.timestamp() * 1e6)] * 2
    assert scores["price"].to_pylist() == [decimal.Decimal("12.50")] * 2

    def no_constants(name):
        raise AssertionError(f"scores.json holds a bare {name}")
    rows = json.loads((out / "scores.json").read_text(), parse_constant=no_constants)
    by_rating = {r["rating"]: r for r in rows}
    assert set(by_rating) == {1.0, "NaN"}  # one NaN group, written as a string
    assert (by_rating["NaN"]["n_segments"], by_rating["NaN"]["n_rejected"]) == (1, 1)
    assert by_rating["NaN"]["day"] == "2024-01-01 23:00:00+00:00"


# --- rejected rows keep the input's columns; unused columns of odd types ----------------------

EXTRA_TYPES = {"u64": pa.uint64(), "u32": pa.uint32(), "tns": pa.timestamp("ns")}


def table_with_extras(rows):
    table = pa.Table.from_pylist(rows)
    for name, kind in EXTRA_TYPES.items():
        table = table.append_column(name, pa.array(list(range(len(rows))), pa.int64()).cast(kind))
    return table


@pytest.mark.spark
@pytest.mark.parametrize("shape", ["inline", "wide", "joined"])
def test_rejected_rows_keep_every_input_column_as_it_was(spark, tmp_path, shape):
    from bleu_spark.spark.job import JobOptions, run_job

    base = [{"system": "A", "langpair": "de-en", "testset": "t", "seg_id": i, "source": f"src {i}",
             "candidate": None if i == 1 else "the cat sat"} for i in range(4)]
    refs = [["the cat sat"], ["the cat"], [None], ["a cat sat"]]  # rows 1 and 2 are rejected
    options = {}
    if shape == "inline":
        rows = [dict(r, references=ref) for r, ref in zip(base, refs)]
    elif shape == "wide":
        rows = [dict(r, ref_a=ref[0], ref_b="a cat" if i == 0 else None)
                for i, (r, ref) in enumerate(zip(base, refs))]
        options = dict(references_cols=("ref_a", "ref_b"))
    else:
        rows = base
        ref_path = tmp_path / "refs.parquet"
        pq.write_table(pa.Table.from_pylist([{"testset": "t", "langpair": "de-en", "seg_id": i,
                                              "references": ref} for i, ref in enumerate(refs)]), ref_path)
        options = dict(references=str(ref_path), join_on=("testset", "langpair", "seg_id"))
    table = table_with_extras(rows)
    path = tmp_path / "in.parquet"
    pq.write_table(table, path)
    result = run_job(spark, JobOptions(input=str(path), output=str(tmp_path / "out"),
                                       on_invalid="quarantine", **options))
    assert result.run["rows"]["rejected_by_reason"] == {"null_candidate": 1, "no_reference": 1}
    rejected = pq.read_table(tmp_path / "out" / "rejected")
    readable = [c for c in table.column_names if c != "tns"]  # Spark cannot read ns timestamps
    assert rejected.column_names == [*readable, "reason"]
    got = sorted(rejected.to_pylist(), key=lambda r: r["seg_id"])
    want = [dict({c: r[c] for c in readable}, reason=reason)
            for r, reason in zip(table.to_pylist()[1:3], ["null_candidate", "no_reference"])]
    for row in got + want:
        row["u64"], row["u32"] = int(row["u64"]), int(row["u32"])  # as Spark reads unsigned
    assert got == want


@pytest.mark.e2e
def test_unused_columns_of_types_spark_arrow_lacks_do_not_fail_the_job(tmp_path):
    rows = [{"system": "A", "langpair": "de-en", "candidate": "the cat sat on the mat", "references": ["the cat sat on the mat"]}]
    path = tmp_path / "in.parquet"
    pq.write_table(table_with_extras(rows), path)
    result = run_cli("--input", str(path), "--output", str(tmp_path / "out"), "--progress-seconds", "0")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "out" / "scores.json").read_text())[0]["score"] == pytest.approx(100.0)
    # ... and a needed column of such a type is one line, exit 5
    result = run_cli("--input", str(path), "--output", str(tmp_path / "out2"), "--group-by", "system,tns")
    assert result.returncode == 5 and "input column tns is timestamp[ns], expected an atomic type" in result.stderr
    assert "Traceback" not in result.stderr
