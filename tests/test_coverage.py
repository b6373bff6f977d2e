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


def segment_rows(system, seg_ids, names=("bleu",), day=1, seed=0) -> pa.Table:
    """A segments table (one row per segment and metric) of `system` on the segments `seg_ids`
    of one test set: the same references for every system, its own candidates."""
    rng = random.Random(f"{system}-{seed}")
    refs_rng = random.Random(seed)
    all_refs = [[r] for r in random_sentences(refs_rng, max(seg_ids) + 1)]
    candidates = pa.array(random_sentences(rng, len(seg_ids)))
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
            n, tok, signature, setting["lowercase"], setting["max_ngram_order"], "",
            metric.name, setting["metric_options"])
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
