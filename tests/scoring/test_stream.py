"""A result scored a chunk at a time (`scoring.stream`) equals the whole result scored at once
(`score_sets`, `paired_rows`): every row, interval, cluster and paired test, whatever the chunk
size; no chunk cuts a comparison group; the rows kept for people are the whole result's first
rows. Statistics are generated here as the statistics table holds them: no JVM."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from bleu_spark import metrics, statstable
from bleu_spark.resampling import Resampling
from bleu_spark.scoring import paired_rows, score_sets
from bleu_spark.scoring.stream import comparison_chunks, group_starts, scores_schema, stream

B, SEED = 50, 12345
ORDER = 4


def generated_stats(documents: int, systems: int, seed: int = 0) -> pa.Table:
    """BLEU statistics rows of `documents` x `systems` groups (langpair, doc, system), some docs
    null, with replicate sums of a poisson draw; each system of a doc over the same segments."""
    rng = np.random.default_rng(seed)
    n = documents * systems
    doc = [None if d % 17 == 0 else f"d{d:05d}" for d in range(documents) for _ in range(systems)]
    langpair = ["en-de" if d % 3 else "de-en" for d in range(documents) for _ in range(systems)]
    system = [f"s{s}" for _ in range(documents) for s in range(systems)]
    segments = np.repeat(rng.integers(2, 9, documents), systems)
    ref_len = np.repeat(rng.integers(20, 200, documents), systems)
    sys_len = (ref_len * rng.uniform(0.8, 1.2, n)).astype(np.int64)
    totals = [np.maximum(sys_len - k * segments, 0) for k in range(ORDER)]
    correct = [(t * rng.uniform(0.2, 0.8, n) / (k + 1)).astype(np.int64) for k, t in enumerate(totals)]
    values = np.column_stack([sys_len, ref_len, *correct, *totals])
    replicate = values[:, None, :] * rng.poisson(1.0, (n, B, 1))
    measured = metrics.configured(("bleu",), {"tokenize": "13a"}, None)[0]
    names = measured.names
    options = measured.measurement()["metric_options"]
    measurement = statstable.measurement_columns(
        n, pa.array(["13a"] * n), pa.array(["13a"] * n), options, f"poisson:{B}:{SEED}", "bleu")
    counts = {"n_segments": pa.array(segments), "n_rejected": pa.array(np.zeros(n, np.int64)),
              "segment_fingerprint": pa.array(np.repeat(np.arange(documents), systems)),
              "min_refs": pa.array(np.ones(n, np.int32)), "max_refs": pa.array(np.ones(n, np.int32))}
    stats = {name: pa.array(values[:, i]) for i, name in enumerate(names)}
    samples = {statstable.REPLICATE_SUMS: pa.array([r.reshape(-1).tolist() for r in replicate],
                                                  pa.list_(pa.int64()))}
    return statstable.build({"langpair": pa.array(langpair), "doc": pa.array(doc, pa.string()),
                             "system": pa.array(system)}, measurement, counts, stats, samples)


SETS = [("langpair", "doc", "system"), ("langpair", "system")]
RESAMPLING = Resampling(confidence=True, clusters=True, paired_bs=True, baseline="s0",
                        n_bootstrap=B, seed=SEED)


def _key(row):
    return tuple(str(row.get(c)) for c in ("grouping", "langpair", "doc", "system", "metric"))


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_chunks_score_as_the_whole_result(chunk, monkeypatch):
    stats = generated_stats(60, 3)
    config = {"tokenize": "13a"}
    monkeypatch.setattr("bleu_spark.scoring.stream.CHUNK_ROWS", chunk)
    written = {}
    kept = stream(stats, SETS, config, RESAMPLING, (), lambda name, table: written.setdefault(
        name, []).append(table), "run", "time", keep=25, report_index=1, report_rows=10,
        paired=True, paired_kept=1000, warnings_kept=5)
    whole = score_sets(stats, SETS, config, RESAMPLING)
    assert kept.groups == len(whole) == sum(kept.per_set)
    scores = pa.concat_tables(written["scores"]).to_pylist()
    expected = {_key(r): r for r in whole}
    assert len(scores) == len(expected)
    for row in scores:
        mine = expected[_key(row)]
        for name in ("score", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "cluster",
                     "verbose", "signature", "n_segments"):
            assert row[name] == mine[name], (name, row, mine)
    assert [_key(r) for r in kept.first] == [_key(r) for r in whole[:25]]
    assert [_key(r) for r in kept.report] == [_key(r) for r in whole if r["grouping"] == "langpair,system"][:10]
    dashboard = pa.concat_tables(written["dashboard"])
    assert dashboard.num_rows == len(whole) and set(dashboard["run_id"].to_pylist()) == {"run"}
    tests, missing = paired_rows(stats, SETS, config, RESAMPLING)
    mine = pa.concat_tables(written["paired"]).to_pylist()
    assert kept.paired_count == len(tests) == len(mine) > 0 and kept.missing_baselines == len(missing)
    by = lambda rows: sorted((str(r["langpair"]), str(r["doc"]), r["system"], r["test"], r["delta"],
                              r["p_value"]) for r in rows)
    assert by(mine) == by(tests)


def test_every_chunk_holds_whole_comparison_groups():
    stats = generated_stats(40, 4, seed=1)
    seen = []
    for chunk in comparison_chunks(stats, SETS[0], rows=5):
        keys = set(zip(chunk["langpair"].to_pylist(), chunk["doc"].to_pylist()))
        assert not keys & set(seen), "a comparison group in two chunks"
        seen += keys
        assert chunk.num_rows >= 4  # a group's four systems at least
    assert len(seen) == len(set(zip(stats["langpair"].to_pylist(), stats["doc"].to_pylist())))


def test_runs_of_equal_values_start_where_a_value_changes_nulls_equal_to_nulls():
    table = pa.table({"a": pa.array([None, None, "x", "x", "y", None], pa.string()),
                      "b": [1, 1, 1, 2, 2, 2]})
    assert group_starts(table, ["a"]).tolist() == [0, 2, 4, 5, 6]
    assert group_starts(table, ["a", "b"]).tolist() == [0, 2, 3, 4, 5, 6]
    assert group_starts(table, []).tolist() == [0, 6]


def test_every_chunk_has_the_same_columns_whatever_its_rows():
    stats = generated_stats(10, 2)
    fields = [stats.schema.field(c) for c in ("langpair", "doc", "system")]
    schema = scores_schema(fields, stats, RESAMPLING)
    assert {"ci_low", "cluster", "bp", "verbose"} <= set(schema.names)
    assert "ci_low" not in scores_schema(fields, stats, Resampling()).names
    assert pc.unique(stats["metric"]).to_pylist() == ["bleu"]


def test_aggregate_of_many_groups_writes_every_row_and_keeps_the_first(tmp_path, monkeypatch):
    """More statistics rows than scores.json holds: scored a chunk at a time into the folder;
    its tables equal the whole result's (aggregate without an output scores it at once)."""
    import json

    import pyarrow.parquet as pq

    from bleu_spark.aggregate import AggregateOptions, run_aggregate
    from bleu_spark.scoring import stream as stream_module

    monkeypatch.setattr(stream_module, "JSON_ROWS", 100)
    monkeypatch.setattr(stream_module, "REPORT_ROWS", 3)
    stats = generated_stats(80, 3, seed=2)
    pq.write_table(stats, tmp_path / "stats.parquet")
    options = dict(stats=str(tmp_path / "stats.parquet"), confidence=True, clusters=True,
                   paired_bs=True, baseline="s0", grouping_sets=tuple(SETS), report=True)
    whole = run_aggregate(AggregateOptions(**options))
    chunked = run_aggregate(AggregateOptions(output=str(tmp_path / "out"), **options))
    assert chunked.run["groups"] == whole.run["groups"] == len(whole.scores) > 100
    assert [_key(r) for r in chunked.scores] == [_key(r) for r in whole.scores[:60]]
    written = pq.read_table(tmp_path / "out" / "scores").to_pylist()
    expected = {_key(r): r for r in whole.scores}
    assert sorted(map(_key, written)) == sorted(expected)
    assert all(r["score"] == expected[_key(r)]["score"] and r["cluster"] == expected[_key(r)]["cluster"]
               and r["ci_low"] == expected[_key(r)]["ci_low"] for r in written)
    assert not (tmp_path / "out" / "scores.json").exists()
    assert "scores.json" in json.loads((tmp_path / "out" / "run.json").read_text())["left_out"]
    drawn = sum(r["grouping"] == "doc,langpair,system" for r in whole.scores)  # the report's set
    assert f"the first 3 of {drawn} groups of doc,langpair,system" in (
        tmp_path / "out" / "report.html").read_text()
    assert pq.read_table(tmp_path / "out" / "paired").num_rows == chunked.run.get(
        "paired_tests", len(whole.paired)) == len(whole.paired)
