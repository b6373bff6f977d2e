"""The input contract: reference shapes, every reason code under both policies, coverage, safe output."""
import json
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark.metrics.bleu import BleuConfig
from bleu_spark.errors import InvalidRowsError, OutputError
from bleu_spark.metrics.bleu.oracle import sacrebleu_score
from bleu_spark import store
from bleu_spark.spark import inputs, runtime
from bleu_spark.spark.job import JobOptions, run_job, score_dataframe
from conftest import random_sentences
from matching import assert_matches_sacrebleu

pytestmark = pytest.mark.spark

SYSTEMS, LANGPAIRS, SEGMENTS = ("A", "B"), ("de-en", "en-zh"), 12
rng = random.Random(3)
REFS = {(lp, i): (rng.choice(["", None]) if i == 5 else s1, s2)
        for lp in LANGPAIRS for i, (s1, s2) in enumerate(zip(random_sentences(rng, SEGMENTS),
                                                             random_sentences(rng, SEGMENTS)))}
CANDIDATES = [{"system": s, "langpair": lp, "testset": "t", "seg_id": i,
               "candidate": random_sentences(rng, 1)[0]}
              for s in SYSTEMS for lp in LANGPAIRS for i in range(SEGMENTS)]


def write(path, rows, schema=None):
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return str(path)


def array_refs(tmp_path, refs=REFS):
    return write(tmp_path / "refs_array.parquet",
                 [{"testset": "t", "langpair": lp, "seg_id": i, "references": list(r)}
                  for (lp, i), r in refs.items()])


def long_refs(tmp_path):
    rows = [{"testset": "t", "langpair": lp, "seg_id": i, "ref_id": ref_id, "reference": ref}
            for (lp, i), r in REFS.items() for ref_id, ref in enumerate(r)]
    return write(tmp_path / "refs_long.parquet", rows[::-1])  # order comes from ref_id, not rows


def run(spark, tmp_path, candidates, name="out", schema=None, **options):
    path = write(tmp_path / f"{name}_candidates.parquet", candidates, schema)
    result = run_job(spark, JobOptions(input=path, output=str(tmp_path / name), **options))
    rows = result.run["rows"]
    assert rows["read"] == rows["scored"] + rows["rejected"] == len(candidates)
    assert sum(r["n_segments"] + r["n_rejected"] for r in result.scores) == len(candidates)
    return result


def by_group(result):
    return {(r["system"], r["langpair"]): r for r in result.scores}


JOIN = dict(join_on=("testset", "langpair", "seg_id"))


def test_wide_long_and_array_references_give_identical_scores(spark, tmp_path):
    joined_array = run(spark, tmp_path, CANDIDATES, "array", references=array_refs(tmp_path), **JOIN)
    joined_long = run(spark, tmp_path, CANDIDATES, "long", references=long_refs(tmp_path), **JOIN)
    three = [dict(c, ref_a=REFS[c["langpair"], c["seg_id"]][0], ref_b=REFS[c["langpair"], c["seg_id"]][1],
                  ref_c=None) for c in CANDIDATES]
    schema = pa.schema([(k, pa.int64() if k == "seg_id" else pa.string()) for k in three[0]])
    wide = run(spark, tmp_path, three, "wide", schema, references_cols=("ref_a", "ref_b", "ref_c"))
    inline = run(spark, tmp_path, [dict(c, references=list(REFS[c["langpair"], c["seg_id"]]))
                                   for c in CANDIDATES], "inline")
    assert by_group(joined_array) == by_group(joined_long)
    strip = lambda result: {k: {f: v for f, v in r.items() if f not in ("coverage", "n_reference_segments")}
                            for k, r in by_group(result).items()}
    assert strip(joined_array) == strip(wide) == strip(inline)
    for (system, langpair), row in by_group(joined_array).items():
        rows = [c for c in CANDIDATES if (c["system"], c["langpair"]) == (system, langpair)]
        theirs = sacrebleu_score([c["candidate"] for c in rows],
                                 [REFS[langpair, c["seg_id"]] for c in rows], BleuConfig(),
                                 langpair=langpair)
        assert_matches_sacrebleu(row, theirs)
        assert row["coverage"] == 1.0


@pytest.mark.parametrize("scan", ["auto", "spark"])
def test_a_string_column_is_one_reference_a_row(spark, tmp_path, scan):
    """The usual log layout: one string column `reference`; equal to the same references as
    one-element lists; a null reference is a row without one (rejected, with its reason)."""
    first = lambda c: REFS[c["langpair"], c["seg_id"]][0]
    one = run(spark, tmp_path, [dict(c, reference=first(c)) for c in CANDIDATES], f"one-{scan}",
              references_cols=("reference",), on_invalid="quarantine", scan=scan)
    listed = run(spark, tmp_path, [dict(c, references=[first(c)]) for c in CANDIDATES],
                 f"listed-{scan}", on_invalid="quarantine", scan=scan)
    assert by_group(one) == by_group(listed)
    assert one.run["rows"]["rejected_by_reason"] == {"no_reference": 2}  # the two null refs
    for (system, langpair), row in by_group(one).items():
        rows = [c for c in CANDIDATES if (c["system"], c["langpair"]) == (system, langpair)
                and first(c) is not None]
        theirs = sacrebleu_score([c["candidate"] for c in rows], [[first(c)] for c in rows],
                                 BleuConfig(), langpair=langpair)
        assert_matches_sacrebleu(row, theirs)


def broken_inputs():
    """Candidates with one of each reason, and a references table missing a segment."""
    rows = [dict(c) for c in CANDIDATES]
    rows[0]["candidate"] = None                                   # null_candidate
    rows.append(dict(rows[3]))                                    # duplicate_segment (x2)
    rows.append(dict(rows[4], seg_id=99))                         # no_reference_row
    refs = dict(REFS)
    refs["de-en", 7] = (None, None)                               # no_reference (A and B)
    refs["en-zh", 50] = ("an unused reference", None)             # unmatched, reported only
    return rows, refs


EXPECTED = {"null_candidate": 1, "duplicate_segment": 2, "no_reference_row": 1, "no_reference": 2}


def test_every_reason_fails_the_run_by_default_and_says_how_many(spark, tmp_path):
    rows, refs = broken_inputs()
    with pytest.raises(InvalidRowsError) as failure:
        run(spark, tmp_path, rows, references=array_refs(tmp_path, refs), **JOIN)
    message = str(failure.value)
    assert message.startswith("6 rows cannot be scored (duplicate_segment: 2, no_reference: 2, "
                              "no_reference_row: 1, null_candidate: 1); e.g. system=")
    assert not (tmp_path / "out").exists()


def test_quarantine_scores_the_rest_and_writes_every_rejected_row(spark, tmp_path):
    rows, refs = broken_inputs()
    result = run(spark, tmp_path, rows, references=array_refs(tmp_path, refs),
                 on_invalid="quarantine", **JOIN)
    assert result.run["rows"]["rejected_by_reason"] == EXPECTED
    assert result.run["unmatched_reference_segments"] == 1
    rejected = pq.read_table(tmp_path / "out" / "rejected").to_pylist()
    assert sorted(r["reason"] for r in rejected) == sorted(k for k, n in EXPECTED.items() for _ in range(n))
    assert {(r["seg_id"], r["reason"]) for r in rejected if r["reason"] != "no_reference"} == \
        {(0, "null_candidate"), (3, "duplicate_segment"), (99, "no_reference_row")}
    groups = by_group(result)
    assert groups["A", "de-en"]["n_rejected"] == 5 and groups["B", "de-en"]["n_rejected"] == 1
    written = json.loads((tmp_path / "out" / "run.json").read_text())
    assert written["rows"]["rejected"] == 6


def test_inline_references_reasons_under_both_policies(spark, tmp_path):
    rows = [dict(c, references=list(REFS[c["langpair"], c["seg_id"]])) for c in CANDIDATES]
    rows[1]["references"] = [None, None]
    rows[2]["references"] = None
    rows[6]["candidate"] = None
    rows.append(dict(rows[8]))
    options = dict(segment_key=("testset", "langpair", "seg_id"))
    with pytest.raises(InvalidRowsError, match=r"^5 rows cannot be scored \(duplicate_segment: 2, "
                                               r"no_reference: 2, null_candidate: 1\)"):
        run(spark, tmp_path, rows, **options)
    result = run(spark, tmp_path, rows, on_invalid="quarantine", **options)
    assert result.run["rows"]["rejected_by_reason"] == {"duplicate_segment": 2, "no_reference": 2,
                                                        "null_candidate": 1}
    assert pq.read_table(tmp_path / "out" / "rejected").num_rows == 5


def test_a_system_missing_ten_percent_is_flagged_with_its_coverage(spark, tmp_path):
    segments = 20
    refs = {("de-en", i): (f"reference number {i} .", None) for i in range(segments)}
    rows = [{"system": s, "langpair": "de-en", "testset": "t", "seg_id": i, "candidate": f"number {i} ."}
            for s in ("full", "partial") for i in range(segments) if not (s == "partial" and i % 10 == 0)]
    result = run(spark, tmp_path, rows, references=array_refs(tmp_path, refs), **JOIN)
    groups = by_group(result)
    assert groups["full", "de-en"]["coverage"] == 1.0
    assert groups["partial", "de-en"]["coverage"] == pytest.approx(0.9)
    assert result.run["warnings"] == ["system=partial, langpair=de-en: 18 of 20 segments scored "
                                      "(coverage 90.0%)"]


def test_a_failure_while_writing_leaves_the_previous_result_whole(spark, tmp_path, monkeypatch):
    rows = [dict(c, references=list(REFS[c["langpair"], c["seg_id"]])) for c in CANDIDATES]
    first = run(spark, tmp_path, rows)
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir() if p.is_file()}

    def disk_full(self, name, value):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.WholeOutput, "write_json", disk_full)
    with pytest.raises(OSError):
        run(spark, tmp_path, rows, group_by=("langpair",))
    after = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir() if p.is_file()}
    assert after == before and len(json.loads(after["scores.json"])) == len(first.scores)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_unwritable_output_is_a_user_error(spark, tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(OutputError):
        run_job(spark, JobOptions(input=write(tmp_path / "c.parquet", CANDIDATES[:1]),
                                  output=str(tmp_path / "file" / "out")))


# Every reference of the test data is a different sentence: tokenized once, not once per system.
PRESENT_REFERENCES = sum(ref is not None for refs in REFS.values() for ref in refs)


@pytest.mark.classic  # counted by an accumulator: unavailable through Connect
def test_joined_references_are_tokenized_once_not_once_per_system(spark, tmp_path):
    result = run(spark, tmp_path, CANDIDATES, references=array_refs(tmp_path), **JOIN)
    assert result.run["rows"]["scored"] == len(SYSTEMS) * len(LANGPAIRS) * SEGMENTS
    assert result.run["references_tokenized"] == PRESENT_REFERENCES


def test_inline_references_are_tokenized_once_whatever_the_layout(spark, tmp_path):
    rows = [dict(c, references=list(REFS[c["langpair"], c["seg_id"]])) for c in CANDIDATES]
    by_system = sorted(rows, key=lambda r: (r["system"], r["langpair"], r["seg_id"]))
    result = run(spark, tmp_path, by_system)
    assert result.run["references_tokenized"] == PRESENT_REFERENCES


def test_a_join_key_matching_two_array_rows_is_ambiguous_under_both_policies(spark, tmp_path):
    refs = array_refs(tmp_path)
    doubled = write(tmp_path / "refs_doubled.parquet",
                    pq.read_table(refs).to_pylist()
                    + [{"testset": "t", "langpair": "de-en", "seg_id": 2, "references": ["other"]}])
    with pytest.raises(InvalidRowsError, match=r"^2 rows cannot be scored \(ambiguous_reference: 2\)"):
        run(spark, tmp_path, CANDIDATES, references=doubled, **JOIN)
    result = run(spark, tmp_path, CANDIDATES, references=doubled, on_invalid="quarantine", **JOIN)
    assert result.run["rows"]["rejected_by_reason"] == {"ambiguous_reference": 2}
    assert {(r["system"], r["seg_id"]) for r in pq.read_table(tmp_path / "out" / "rejected").to_pylist()} \
        == {("A", 2), ("B", 2)}


def test_rows_are_scored_where_they_lie_unless_asked_to_be_brought_together(spark, tmp_path):
    shared = [dict(c, references=list(REFS[c["langpair"], c["seg_id"]])) for c in CANDIDATES]
    apart = run(spark, tmp_path, shared, "apart")   # auto: the shuffle does not pay
    assert not apart.run["layout"]["colocated"] and apart.run["layout"]["scan"] == "arrow"
    forced = run(spark, tmp_path, shared, "forced", colocate_references="always")
    assert forced.run["layout"]["colocated"] and forced.run["layout"]["scan"] == "spark"
    assert "input_row_groups" not in forced.run["layout"]  # the shuffle sets its own tasks
    if runtime.is_connect(spark):  # Spark Connect shows its clients no task metrics
        assert forced.run["tasks"]["shuffle_write_bytes"] == runtime.UNAVAILABLE
    else:
        assert forced.run["tasks"]["shuffle_write_bytes"] > apart.run["tasks"]["shuffle_write_bytes"]
    assert by_group(forced) == by_group(apart)
    for key, row in by_group(apart).items():
        group = [r for r in shared if (r["system"], r["langpair"]) == key]
        assert_matches_sacrebleu(row, sacrebleu_score([r["candidate"] for r in group],
                                                      [r["references"] for r in group],
                                                      BleuConfig(), langpair=key[1]))


@pytest.mark.classic  # counts rows per RDD partition
def test_scans_split_into_a_few_tasks_per_core_each_with_rows(spark, tmp_path):
    rows = 40_000
    path = str(tmp_path / "logs.parquet")
    pq.write_table(pa.table({"candidate": random_sentences(random.Random(5), rows)}), path,
                   row_group_size=2_000)
    rows_per_task = lambda: (spark.read.parquet(path).rdd
                             .mapPartitions(lambda part: [sum(1 for _ in part)]).collect())
    assert len(rows_per_task()) <= 2            # Spark's default: at most one split per core
    with inputs.splits_sized(spark, rows, os.path.getsize(path)):
        sized = rows_per_task()
    assert len(sized) == inputs.scoring_tasks(rows, 2) == 4 and min(sized) > 0 and sum(sized) == rows
    assert spark.conf.get(inputs.SPLIT_BYTES, None) is None       # as it was before
    spark.conf.set(inputs.SPLIT_BYTES, "64MB")  # the user's own setting is kept
    try:
        with inputs.splits_sized(spark, rows, os.path.getsize(path)):
            assert len(rows_per_task()) == 1
    finally:
        spark.conf.unset(inputs.SPLIT_BYTES)


@pytest.mark.parametrize("scan", ["auto", "spark"])
def test_an_input_in_fewer_row_groups_than_cores_is_warned_of_or_cut(spark, tmp_path, monkeypatch, capsys, scan):
    """Spark's scan reads a row group in one task: fewer row groups than cores idle the others,
    said before scoring. The workers' own scan cuts the row group into tasks."""
    from bleu_spark.spark import job

    monkeypatch.setattr(inputs, "ROWS_PER_TASK", 1_000)      # 8,000 rows: 8 tasks on 2 cores
    logs = [{"system": "A", "langpair": "de-en", "candidate": f"the cat {i}", "references": [f"a cat {i}"]}
            for i in range(8_000)]
    said_before_scoring = []
    measure = job.measure

    def measuring(*args, **kwargs):
        said_before_scoring.append(capsys.readouterr().err)
        return measure(*args, **kwargs)

    monkeypatch.setattr(job, "measure", measuring)
    result = run(spark, tmp_path, logs, "one_row_group", scan=scan)  # pyarrow's default: one row group
    assert result.run["layout"]["input_row_groups"] == 1 and not result.run["layout"]["colocated"]
    assert result.run["layout"]["scan"] == {"auto": "arrow", "spark": "spark"}[scan]
    warned = [w for w in result.run["warnings"] if "in 1 Parquet row group(s)" in w]
    if scan == "spark":
        assert "bleu-spark: warning: the input's 8,000 rows are in 1 Parquet row group(s)" in said_before_scoring[0]
        assert len(warned) == 1 and "at most 1,000 rows" in warned[0], result.run["warnings"]
    else:
        assert "row group" not in said_before_scoring[0] and not warned
        completed = result.run["tasks"]["completed"]  # tasks Spark ran, where Spark says (not to Connect's clients)
        assert result.run["layout"]["scoring_tasks"] == 8 and (completed == runtime.UNAVAILABLE or completed >= 8)
    # a DataFrame has no files to count row groups of: scored the same, without the warning
    frame = spark.read.parquet(str(tmp_path / "one_row_group_candidates.parquet"))
    assert [r["score"] for r in score_dataframe(frame)] == [r["score"] for r in result.scores]
    assert inputs.few_row_groups(2, 8_000, 2) == []          # one a core
    assert inputs.few_row_groups(1, 3_000, 2) == []          # too small to matter
    assert inputs.few_row_groups(None, 8_000, 2) == []       # not known (remote files)


LIST_TYPES = {"large_list": pa.large_list(pa.string()), "fixed_size_list": pa.list_(pa.string(), 2),
              "list_of_large_string": pa.list_(pa.large_string()),
              "large_list_of_large_string": pa.large_list(pa.large_string())}


@pytest.mark.parametrize("scan", ["auto", "spark"])
@pytest.mark.parametrize("kind", sorted(LIST_TYPES))
def test_references_in_any_arrow_list_type_are_read_as_lists(spark, tmp_path, scan, kind):
    """pyarrow writes its own list types into the footer (large lists, fixed-size lists,
    large strings): each is read as the list it is, by either scan, with a large_string
    candidate too, and scored as sacrebleu scores the same lists."""
    rows = [c for c in CANDIDATES if c["system"] == "A" and c["langpair"] == "de-en"]
    references = [list(REFS[("de-en", c["seg_id"])]) for c in rows]
    references[0] = None  # a null list: no_reference, counted and kept for rejected/
    schema = pa.schema([("system", pa.string()), ("langpair", pa.string()),
                        ("candidate", pa.large_string()), ("references", LIST_TYPES[kind])])
    logs = [{**c, "references": r} for c, r in zip(rows, references)]
    result = run(spark, tmp_path, logs, kind, schema=schema, group_by=("system", "langpair"),
                 on_invalid="quarantine", scan=scan)
    assert result.run["layout"]["scan"] == {"auto": "arrow", "spark": "spark"}[scan]
    assert result.run["rows"]["rejected"] == 1
    expected = sacrebleu_score([c["candidate"] for c in rows[1:]], references[1:], BleuConfig(), "de-en")
    assert_matches_sacrebleu(result.scores[0], expected)
    rejected = pq.read_table(tmp_path / kind / "rejected")
    assert rejected["reason"].to_pylist() == ["no_reference"]
