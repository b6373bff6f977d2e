"""A chunk scored a column at a time (`scoring.columnar`) makes the very tables the row path
makes (`score_sets`, then `scores_table` and `dashboard_table`): value for value, type for type,
in the same order, over generated BLEU statistics of several measurements (lowercased or not,
max order 4 or 2, tokenizers), scoring choices, null keys, variable references, groups whose
every row was rejected and groups without a matching n-gram. No JVM."""
import numpy as np
import pyarrow as pa
import pytest

from bleu_spark import metrics, statstable
from bleu_spark.resampling import Resampling
from bleu_spark.scoring import columnar, score_sets
from bleu_spark.scoring.rows import measured_by
from bleu_spark.scoring.stream import conformed, scores_schema, stream
from bleu_spark.scoring.tables import dashboard_table, scores_table

SETS = [("langpair", "doc", "system"), ("system", "langpair"), ("langpair",)]


def _part(n: int, settings: dict, tokenize: str, langpair: str, rng, start: int) -> pa.Table:
    measured = metrics.configured(("bleu",), {"tokenize": tokenize, **settings}, None)[0]
    order = measured.config.max_ngram_order
    ref_len = rng.integers(0, 60, n)
    sys_len = (ref_len * rng.uniform(0.5, 1.5, n)).astype(np.int64)
    totals = [np.maximum(sys_len - k, 0) for k in range(order)]
    correct = [(t * rng.uniform(0, 0.9, n) * (rng.random(n) > 0.15)).astype(np.int64)
               for t in totals]
    segments = rng.integers(0, 4, n)  # 0: every row of the group rejected
    values = np.column_stack([sys_len, ref_len, *correct, *totals]) * (segments > 0)[:, None]
    docs = [None if (start + i) % 7 == 0 else f"d{(start + i) // 3 % 40:03d}" for i in range(n)]
    least = rng.integers(1, 3, n).astype(np.int32)
    counts = {"n_segments": pa.array(segments), "n_rejected": pa.array(rng.integers(0, 3, n)),
              "n_reference_segments": pa.array(segments + rng.integers(0, 2, n)),
              "min_refs": pa.array(least), "max_refs": pa.array(least + (rng.random(n) > 0.8))}
    measurement = statstable.measurement_columns(
        n, pa.array([tokenize] * n), pa.array([tokenize] * n),
        measured.measurement()["metric_options"])
    own = {name: pa.array(values[:, i]) for i, name in enumerate(measured.names)}
    every = ["sys_len", "ref_len", *(f"{kind}_{k}" for kind in ("correct", "total")
                                     for k in range(1, 5))]
    stats = {name: own.get(name, pa.nulls(n, pa.int64())) for name in every}
    groups = {"langpair": pa.array([langpair] * n), "doc": pa.array(docs, pa.string()),
              "system": pa.array([None if i % 11 == 5 else f"s{i % 3}" for i in range(n)])}
    return statstable.build(groups, measurement, counts, stats)


def generated(seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    parts = [_part(150, {}, "13a", "de-en", rng, 0),
             _part(90, {"lowercase": True}, "13a", "en-de", rng, 150),
             _part(60, {"max_ngram_order": 2}, "zh", "en-zh", rng, 240)]
    return pa.concat_tables(parts)


def _per_set(stats: pa.Table, grouping_set) -> pa.Table:
    """The chunk `stream` hands over: one row per group of the set and measurement."""
    return statstable.summed(stats, [*grouping_set, *statstable.MEASUREMENT])


@pytest.mark.parametrize("config", [{}, {"smooth_method": "floor"}, {"effective_order": True},
                                    {"smooth_method": "add-k", "smooth_value": 2},
                                    {"smooth_method": "none"}])
@pytest.mark.parametrize("grouping_set", SETS)
def test_a_chunk_by_columns_has_the_row_paths_tables(config, grouping_set):
    stats = generated()
    chunk = _per_set(stats, grouping_set)
    fields = [stats.schema.field(c) for c in grouping_set]
    schema = scores_schema(fields, stats, None)
    made = columnar.scored(chunk, grouping_set, fields, measured_by(config), ("langpair",),
                           "run", "time")
    rows = score_sets(chunk, [grouping_set], config, None, None, ("langpair",))
    assert made is not None and made.scores.num_rows == len(rows) > 0
    assert conformed(made.scores, schema).equals(conformed(scores_table(rows, fields), schema))
    expected = dashboard_table(rows, fields, "run", "time")
    assert made.dashboard.schema == expected.schema
    assert made.dashboard.equals(expected)
    if grouping_set == SETS[0]:  # the cases are there to be compared
        assert any(r["n_segments"] == 0 for r in rows) and any(r["score"] == 0.0 for r in rows)
        assert {"nrefs:1", "nrefs:var"} <= {r["signature"].split("|")[0] for r in rows
                                           if r["signature"]}


def test_a_group_of_two_measurements_is_left_to_the_row_path_which_refuses_it():
    stats = generated()
    grouping_set = ("doc",)  # docs of de-en and en-de rows: 13a lowercased and not
    chunk = _per_set(stats, grouping_set)
    fields = [stats.schema.field("doc")]
    assert columnar.scored(chunk, grouping_set, fields, measured_by({}), (), "r", "t") is None
    with pytest.raises(Exception, match="different settings"):
        stream(stats.filter(pa.compute.not_equal(stats["langpair"], "en-zh")), [grouping_set],
               {}, None, (), lambda name, table: None, "r", "t", keep=5, report_index=-1,
               report_rows=0, paired=False, paired_kept=0, warnings_kept=0)


def test_a_metric_without_result_columns_is_scored_row_by_row(monkeypatch):
    stats = generated()
    grouping_set = ("langpair", "system")
    chunk = _per_set(stats, grouping_set)
    fields = [stats.schema.field(c) for c in grouping_set]
    assert columnar.scored(chunk, grouping_set, fields, measured_by({}), (), "r", "t") is not None
    monkeypatch.setattr(metrics.get("bleu"), "result_columns", lambda self, table: None)
    assert columnar.scored(chunk, grouping_set, fields, measured_by({}), (), "r", "t") is None


@pytest.mark.parametrize("chunk_rows", [1, 13, 1000])
def test_a_stream_by_columns_keeps_the_rows_a_person_reads(chunk_rows, monkeypatch):
    """Without replicate sums each chunk is scored by columns: the tables written are the whole
    scoring's, and the rows kept (the first ones, the report's, one of each signature) are the
    row path's own rows."""
    stats = generated(seed=3)
    sets = [("langpair", "doc", "system"), ("langpair", "system")]
    monkeypatch.setattr("bleu_spark.scoring.stream.CHUNK_ROWS", chunk_rows)
    written = {}
    kept = stream(stats, sets, {}, Resampling(), (), lambda name, table: written.setdefault(
        name, []).append(table), "run", "time", keep=25, report_index=1, report_rows=10,
        paired=False, paired_kept=0, warnings_kept=0)
    whole = score_sets(stats, sets, {}, None)
    fields = [stats.schema.field(c) for c in ("langpair", "doc", "system")]
    schema = scores_schema(fields, stats, None)
    for row in whole:
        row.setdefault("doc", None)
    key = lambda r: tuple(str(r[c]) for c in ("grouping", "langpair", "doc", "system"))
    mine = pa.concat_tables(written["scores"]).to_pylist()
    expected = conformed(scores_table(whole, fields), schema).to_pylist()
    assert sorted(mine, key=key) == sorted(expected, key=key)
    assert [dict(r) for r in kept.first] == [dict(r) for r in whole[:25]]
    assert [dict(r) for r in kept.report] == [dict(r) for r in whole
                                              if r["grouping"] == "langpair,system"][:10]
    signatures = {(r["metric"], r["signature"]) for r in whole}
    assert {(m, s) for m, _, s in kept.signed} == signatures and len(signatures) > 3
    assert kept.groups == len(whole) == sum(t.num_rows for t in written["dashboard"])
