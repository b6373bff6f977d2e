"""Column names holding a dot or a backtick (`g.h`, ``seg`id``): Spark parses a name given as a
string (a dot reaches into a struct, a backtick starts a quoted part), so each is a name of its
own in every step that refers to it: grouping, partitions, segment keys, the join with a
references table, carried and unnamed columns in the segments and rejected tables, the report's
drill-down, and `aggregate` on Spark, whose scores equal the local engine's on the same folder."""
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import SAMPLE

pytestmark = pytest.mark.spark

GROUP, KEY, PART, UNNAMED, CARRIED = "g.h", "seg`id", "p`q.r", "un`named.x", "c.`d"


def named_input(folder) -> dict:
    """Rows of the sample under such names, one of them not scorable; and its references."""
    table = pq.read_table(SAMPLE).slice(0, 400)
    n = table.num_rows
    rows = pa.table({
        "system": table["system"], "langpair": table["langpair"],
        "candidate": pa.concat_arrays([table["candidate"].combine_chunks().slice(0, n - 1),
                                       pa.array([None], pa.string())]),
        "references": table["references"],
        GROUP: pa.array([f"g{i % 3}" for i in range(n)]),
        KEY: pa.array([f"{s}" for s in table["seg_id"].to_pylist()]),
        PART: pa.array([f"day`{i % 2}" for i in range(n)]),
        UNNAMED: pa.array(range(n)), CARRIED: pa.array([f"c{i}" for i in range(n)])})
    paths = {"input": os.path.join(folder, "in.parquet"), "refs": os.path.join(folder, "refs.parquet")}
    pq.write_table(rows, paths["input"])
    first = {}
    for row in rows.select(["langpair", KEY, "references"]).to_pylist():
        first.setdefault((row["langpair"], row[KEY]), row)
    refs = pa.Table.from_pylist(list(first.values()), rows.select(["langpair", KEY, "references"]).schema)
    pq.write_table(refs, paths["refs"])
    return paths


@pytest.mark.parametrize("scan", ["spark", "auto"])
def test_dotted_and_backticked_names_score_write_and_aggregate(spark, tmp_path, scan):
    from bleu_spark.aggregate import AggregateOptions, run_aggregate
    from bleu_spark.spark.job import JobOptions, run_job

    paths = named_input(str(tmp_path))
    out = str(tmp_path / "out")
    run = run_job(spark, JobOptions(
        input=paths["input"], output=out, group_by=("system", "langpair", GROUP),
        partition_by=(PART,), segment_key=(KEY,), on_invalid="quarantine", segments=True,
        segments_columns=(CARRIED,), report=True, scan=scan, progress_seconds=0)).run
    assert run["rows"]["rejected"] == 1
    rejected = pq.read_table(f"{out}/rejected")
    assert rejected.num_rows == 1 and rejected[UNNAMED].to_pylist() == [399]
    segments = pq.read_table(f"{out}/segments")
    assert {GROUP, CARRIED} <= set(segments.column_names) and segments.num_rows > 0
    scores = {}
    for engine in ("spark", "local"):
        result = run_aggregate(AggregateOptions(stats=out, group_by=(GROUP, PART), engine=engine),
                               spark if engine == "spark" else None)
        scores[engine] = {(r[GROUP], r[PART], r["metric"]): r["score"] for r in result.scores}
    assert scores["spark"] == scores["local"] and len(scores["local"]) == 6  # 3 groups x 2 days


def test_a_references_table_joined_on_such_names(spark, tmp_path):
    from bleu_spark.spark.job import JobOptions, run_job

    paths = named_input(str(tmp_path))
    joined = run_job(spark, JobOptions(
        input=paths["input"], references=paths["refs"], join_on=("langpair", KEY),
        group_by=(GROUP,), on_invalid="quarantine", output=str(tmp_path / "joined"),
        progress_seconds=0))
    inline = run_job(spark, JobOptions(
        input=paths["input"], segment_key=("langpair", KEY), group_by=(GROUP,),
        on_invalid="quarantine", output=str(tmp_path / "inline"), progress_seconds=0))
    score = lambda result: {r[GROUP]: r["score"] for r in result.scores}
    assert score(joined) == score(inline) and len(score(inline)) == 3


def test_the_failure_message_names_such_columns_values(spark, tmp_path):
    """Under `--on-invalid fail` (the default) the message shows the rejected row's group and
    segment key by those names."""
    from bleu_spark.errors import InvalidRowsError
    from bleu_spark.spark.job import JobOptions, run_job

    paths = named_input(str(tmp_path))
    with pytest.raises(InvalidRowsError, match=rf"e\.g\. g\.h='g\d', langpair='cs-en', {KEY}='\d+': "
                                               rf"null_candidate;") as raised:
        run_job(spark, JobOptions(input=paths["input"], group_by=(GROUP,), segment_key=(KEY,),
                                  output=str(tmp_path / "out"), progress_seconds=0))
    assert "1 rows cannot be scored" in str(raised.value)
