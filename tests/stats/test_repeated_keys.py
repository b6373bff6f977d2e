"""A reference that repeats (the same sentence logged on several days) never pairs rows many to
many against a baseline: without a segment key, the report's "lost most" list and scatter, and
the regression SQL of docs/segments.md, pair the k-th row of a reference set with the
baseline's k-th, one to one."""
import collections

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark.segments import POSITION
from bleu_spark.spark.job import JobOptions, run_job
from test_segments import _on_both_engines, segments_sql

REPEATED = "Die Katze sitzt auf der Matte."
DAYS = ["Die Katze sitzt.", "Eine Katze liegt auf der Matte.", "Der Hund sitzt auf dem Sofa."]
UNIQUE = [("Guten Morgen!", "Guten Morgen!", "Morgen!"), ("Wie geht es dir?", "Wie geht's?", "Wie geht es dir?")]


def repeated_table() -> pa.Table:
    """Systems Online-B (the baseline) and A, a day per repeat of one reference, in input order."""
    rows = []
    for day, text in enumerate(DAYS):
        rows.append(("Online-B", REPEATED, REPEATED if day == 1 else text))
        rows.append(("A", REPEATED, DAYS[(day + 1) % 3]))
    for reference, baseline, mine in UNIQUE:
        rows += [("Online-B", reference, baseline), ("A", reference, mine)]
    system, references, candidates = zip(*rows)
    return pa.table({"system": list(system), "langpair": ["en-de"] * len(rows),
                     "candidate": list(candidates), "references": [[r] for r in references]})


@pytest.fixture(scope="module")
def scored(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("repeated")
    pq.write_table(repeated_table(), folder / "in.parquet")
    run_job(spark, JobOptions(input=str(folder / "in.parquet"), output=str(folder / "out"),
                              metrics=("bleu", "chrf"), segments=True,
                              segments_columns=("candidate",), progress_seconds=0))
    return folder


@pytest.mark.spark
def test_the_reports_pairs_are_one_to_one_in_input_order(spark, scored):
    from bleu_spark import store
    from bleu_spark.spark import drilldown

    fs, root = store.filesystem(str(scored / "out"))
    frame = drilldown.read(spark, store.TableFiles(str(scored / "out" / "segments"), ""),
                           store.live_files(fs, root, "segments"), {})
    found = drilldown.highlights(frame, ("system", "langpair"), POSITION, ("candidate",), "Online-B")
    per_group = collections.Counter((p["system"], p["metric"]) for p in found["points"])
    assert per_group == {("A", "bleu"): 5, ("A", "chrf"): 5}   # 5 rows of A, 5 pairs
    table = repeated_table().to_pylist()
    baseline = [r["candidate"] for r in table if r["system"] == "Online-B"]
    mine = [r["candidate"] for r in table if r["system"] == "A"]
    expected = set(zip(mine, baseline))   # row k of A with row k of the baseline
    assert found["losses"] and {(r["candidate"], r["baseline_candidate"]) for r in found["losses"]} <= expected


@pytest.mark.spark
def test_the_regression_sql_of_the_docs_pairs_one_to_one(spark, scored):
    for engine in _on_both_engines(spark, str(scored / "out"),
                                   segments_sql("regressions against a baseline")):
        assert len(engine) == 5   # the chrF rows of A, each once
        assert collections.Counter(r[2] for r in engine).most_common(1)[0][1] == 3   # the repeat
