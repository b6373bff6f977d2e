"""A partitioned folder's top-level files: `scores.json` holds the rows of every partition the
folder holds, as `scores/` does (each from the run that wrote it last), not the last run's alone;
`report.html` is there only as drawn over every partition the folder held then."""
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import store

from test_commit import day_rows, score

@pytest.mark.spark
def test_scores_json_of_a_partitioned_folder_holds_every_partition_as_scores_does(spark, tmp_path):
    out = tmp_path / "out"
    score(spark, tmp_path, day_rows("2026-01-01"), "d1", out, "--partition-by", "run_date")
    score(spark, tmp_path, day_rows("2026-01-02"), "d2", out, "--partition-by", "run_date")
    rerun = day_rows("2026-01-01", rows=2)  # the first day again, fewer rows: other scores
    score(spark, tmp_path, rerun, "d1-again", out, "--partition-by", "run_date")
    rows = json.loads((out / "scores.json").read_text())
    table = pq.read_table(out / "scores").to_pylist()
    key = lambda r: (str(r["run_date"]), r["system"], r["metric"])
    assert sorted((key(r), r["score"], r["n_segments"]) for r in rows) == \
        sorted((key(r), r["score"], r["n_segments"]) for r in table)
    assert {r["run_date"] for r in rows} == {"2026-01-01", "2026-01-02"}
    assert {r["n_segments"] for r in rows if r["run_date"] == "2026-01-01"} == {2}
    assert [r["run_date"] for r in rows] == sorted(r["run_date"] for r in rows)


def partitioned_run(folder, days, report):
    out = store.open_output(str(folder), ("day",))
    out.write_table("scores", pa.table({"day": days, "score": [1.0] * len(days)}))
    out.write_json("scores.json", [{"day": d, "score": 1.0} for d in days])
    if report:
        out.write_bytes("report.html", f"<p>{','.join(days)}</p>".encode())
    out.commit({"run_id": out.run_id})


def test_a_report_is_removed_by_a_partitioned_run_that_does_not_draw_it_again(tmp_path):
    """A report.html covers the partitions the folder held when it was drawn: a later run of other
    partitions without --report removes it rather than leave a page that misses them."""
    folder = tmp_path / "out"
    partitioned_run(folder, ["d1"], report=True)
    assert (folder / "report.html").read_text() == "<p>d1</p>"
    partitioned_run(folder, ["d2"], report=False)
    assert not os.path.exists(folder / "report.html")
    assert sorted(r["day"] for r in json.loads((folder / "scores.json").read_text())) == ["d1", "d2"]
    partitioned_run(folder, ["d3"], report=True)
    assert (folder / "report.html").read_text() == "<p>d3</p>"
    partitioned_run(folder, ["d3"], report=False)  # a rerun of its day: removed too
    assert not os.path.exists(folder / "report.html")
    assert sorted(r["day"] for r in json.loads((folder / "scores.json").read_text())) == ["d1", "d2", "d3"]
