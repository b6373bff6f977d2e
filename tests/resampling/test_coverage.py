"""What `aggregate` says of what its statistics cover, without a JVM: systems compared on other
segments (paired tests and clusters, one rule), metrics measured over other nights, and rows
counted once whatever the number of metrics."""
import json
import random

import numpy as np
import pyarrow as pa
import pytest

from bleu_spark import metrics, segments, statstable, store
from bleu_spark.cli import main
from bleu_spark.tokenizers import LineTokenizer
from conftest import random_sentences

TOKENIZE = "13a"


def segment_rows(system, seg_ids, names=("bleu",), day=1, seed=0, right=0.0) -> pa.Table:
    """A segments table (one row per segment and metric) of `system` on the segments `seg_ids`
    of one test set: the same references for every system, its own candidates (the first
    `right` share of them equal to their reference)."""
    rng = random.Random(f"{system}-{seed}")
    refs_rng = random.Random(seed)
    all_refs = [[r] for r in random_sentences(refs_rng, max(seg_ids) + 1)]
    mine = random_sentences(rng, len(seg_ids))
    candidates = pa.array([all_refs[i][0] if k < right * len(seg_ids) else mine[k]
                           for k, i in enumerate(seg_ids)])
    references = pa.array([all_refs[i] for i in seg_ids], pa.list_(pa.string()))
    tokenizer = LineTokenizer(TOKENIZE, False, None)
    n = len(seg_ids)
    tables = []
    for metric in metrics.configured(list(names), {}, None):
        stats = metric.segment_statistics(candidates, references,
                                          tokenizer if metric.uses_tokenizer else None)
        setting = metric.measurement()
        tok = pa.array([TOKENIZE if metric.uses_tokenizer else None] * n, pa.string())
        signature = pa.array([tokenizer.signature() if metric.uses_tokenizer else None] * n,
                             pa.string())
        measurement = statstable.measurement_columns(
            n, tok, signature, setting["metric_options"], "", metric.name)
        groups = {"system": pa.array([system] * n), "day": pa.array([day] * n, pa.int32()),
                  "seg_id": pa.array(seg_ids, pa.int64())}
        hashes = np.array(seg_ids, np.int64) * 2654435761 + 17  # a segment's hash: its id's
        tables.append(segments.rows_table(
            groups, measurement, np.ones(n, np.int64), hashes,
            {name: pa.array(column) for name, column in zip(metric.names, stats.T)},
            metric.sentence_scores(stats)))
    return pa.concat_tables(tables, promote_options="default")


def save(folder, *tables) -> str:
    out = store.open_output(str(folder))
    out.write_table("segments", pa.concat_tables(tables, promote_options="default"))
    out.commit({"run_id": out.run_id})
    return str(folder / "segments")


def aggregate(capsys, stats, out, *args):
    code = main(["aggregate", "--stats", stats, "--output", str(out), "--engine", "local", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- one coverage rule for paired tests and clusters ----------------------------------------

ALL = list(range(40))
COMPARED = [["--paired-bs", "--baseline", "A"], ["--clusters"],
            ["--clusters", "--paired-bs", "--baseline", "A"]]


@pytest.mark.parametrize("b_segments", [ALL[:20], ALL[20:] + list(range(40, 60)), ALL[1:]],
                         ids=["half", "as-many-other-ones", "one-missing"])
@pytest.mark.parametrize("asked", COMPARED, ids=["paired", "clusters", "both"])
def test_systems_of_other_segments_are_compared_by_neither_paired_tests_nor_clusters(
        tmp_path, capsys, b_segments, asked):
    """A system scored on other segments than the others (fewer, or as many but other ones) is
    refused by every comparison alike: one line, exit 2, naming both systems and their counts."""
    stats = save(tmp_path / "saved", segment_rows("A", ALL), segment_rows("B", b_segments),
                 segment_rows("C", ALL))
    code, out, err = aggregate(capsys, stats, tmp_path / "out", "--group-by", "system", *asked)
    assert code == 2, out + err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "covers other segments than" in err
    assert f"B covers other segments than A ({len(b_segments)} vs 40 segments)" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("asked", COMPARED, ids=["paired", "clusters", "both"])
def test_systems_of_the_same_segments_are_compared(tmp_path, capsys, asked):
    stats = save(tmp_path / "saved", segment_rows("A", ALL), segment_rows("B", ALL),
                 segment_rows("C", ALL))
    code, out, err = aggregate(capsys, stats, tmp_path / "out", "--group-by", "system", *asked)
    assert code == 0, err
    rows = json.loads((tmp_path / "out" / "scores.json").read_text(encoding="utf-8"))
    if "--clusters" in asked:
        assert all(r["rank"] is not None for r in rows)


# --- metrics measured over other nights ------------------------------------------------------

def nights(*plan):
    """Segment rows of systems A and B, a night per (day, seg_ids, metrics) of `plan`."""
    return [segment_rows(system, seg_ids, names, day=day)
            for day, seg_ids, names in plan for system in ("A", "B")]


def summed_stats(table: pa.Table) -> pa.Table:
    """The stats/ table a score run grouped by system and day would write for these segments."""
    return statstable.summed(table, ["system", "day", *statstable.MEASUREMENT])


def save_stats(folder, table) -> str:
    out = store.open_output(str(folder))
    out.write_table("stats", table)
    out.commit({"run_id": out.run_id})
    return str(folder)


@pytest.mark.parametrize("plan,lines", [
    # a metric added in the middle of the week: chrF over half of BLEU's segments
    ([(1, ALL, ("bleu",)), (2, list(range(40, 80)), ("bleu", "chrf"))],
     ["chrf covers other segments than bleu (80 vs 160 segments; first in system=A)"]),
    # as many segments, but other ones: the fingerprint tells them apart
    ([(1, ALL, ("bleu",)), (2, list(range(40, 80)), ("chrf",))],
     ["chrf covers other segments than bleu (80 vs 80 segments; first in system=A)"]),
    # two metrics short of the third, each on its own line
    ([(1, ALL, ("bleu", "chrf", "ter")), (2, list(range(40, 60)), ("bleu",))],
     ["chrf covers other segments than bleu (80 vs 120 segments; first in system=A)",
      "ter covers other segments than bleu (80 vs 120 segments; first in system=A)"]),
], ids=["added", "swapped", "two-short"])
@pytest.mark.parametrize("table", ["segments", "stats"])
def test_metrics_measured_over_other_nights_are_said_one_line_each(tmp_path, capsys, plan, lines,
                                                                   table):
    rows = pa.concat_tables(nights(*plan), promote_options="default")
    stats = (save(tmp_path / "saved", rows) if table == "segments"
             else save_stats(tmp_path / "saved", summed_stats(rows)))
    code, out, err = aggregate(capsys, stats, tmp_path / "out", "--group-by", "system")
    assert code == 0, err
    said = [line for line in err.splitlines() if line.startswith("bleu-spark: warning: ")]
    assert [w.split(": ", 2)[2].split("):")[0] + ")" for w in said] == lines
    run = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert [w.split("):")[0] + ")" for w in run["warnings"]] == lines


@pytest.mark.parametrize("table", ["segments", "stats"])
def test_metrics_of_the_same_nights_are_not_warned_about(tmp_path, capsys, table):
    rows = pa.concat_tables(nights((1, ALL, ("bleu", "chrf")), (2, list(range(40, 60)), ("bleu", "chrf"))),
                            promote_options="default")
    stats = (save(tmp_path / "saved", rows) if table == "segments"
             else save_stats(tmp_path / "saved", summed_stats(rows)))
    code, out, err = aggregate(capsys, stats, tmp_path / "out", "--group-by", "system")
    assert code == 0 and "warning" not in err, err


# --- rows counted once, whatever the number of metrics ---------------------------------------

@pytest.mark.parametrize("group_by", ["system", "", "system,day"])
@pytest.mark.parametrize("table", ["segments", "stats"])
def test_rows_are_counted_once_however_many_metrics_measured_them(tmp_path, capsys, table,
                                                                  group_by):
    """Two systems x (40 + 20) segments, measured by 4 metrics on the first night and 1 on the
    second: 120 rows, not 4 x 80 + 40."""
    rows = pa.concat_tables(nights((1, ALL, ("bleu", "chrf", "chrf++", "ter")),
                                   (2, list(range(40, 60)), ("bleu",))), promote_options="default")
    stats = (save(tmp_path / "saved", rows) if table == "segments"
             else save_stats(tmp_path / "saved", summed_stats(rows)))
    code, out, err = aggregate(capsys, stats, tmp_path / "out", "--group-by", group_by)
    assert code == 0, err
    assert "segments: scored 120, rejected 0" in out
    run = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert run["rows"] == {"scored": 120, "rejected": 0}


def test_rejected_rows_are_counted_once_too(tmp_path, capsys):
    rows = summed_stats(pa.concat_tables(nights((1, ALL, ("bleu", "chrf", "ter"))),
                                         promote_options="default"))
    rows = rows.set_column(rows.schema.get_field_index("n_rejected"), "n_rejected",
                           pa.array([3] * rows.num_rows, pa.int64()))
    code, out, err = aggregate(capsys, save_stats(tmp_path / "saved", rows), tmp_path / "out",
                               "--group-by", "system")
    assert code == 0, err
    assert "segments: scored 80, rejected 6" in out


def test_rows_of_a_segments_table_carrying_nested_columns_are_counted_once(tmp_path, capsys):
    """A segments table may carry the rows' references (a list column) beside their key."""
    rows = pa.concat_tables(nights((1, ALL, ("bleu", "chrf"))), promote_options="default")
    rows = rows.append_column("references", pa.array([["r"]] * rows.num_rows, pa.list_(pa.string())))
    code, out, err = aggregate(capsys, save(tmp_path / "saved", rows), tmp_path / "out",
                               "--group-by", "system")
    assert code == 0, err
    assert "segments: scored 80, rejected 0" in out
