"""Statistics combine as each metric declares them, in every engine and on any partitioning.

No metric of the product has a min, a max or a float statistic, so the tests register one of
their own: `probe`, with an integer sum, an integer min, an integer max and a float sum, each
segment's from its candidate's length. The floats are quarters: every partial sum is exact, so
any order of the sum gives the same double and equality can be asserted.
"""
import sys
from typing import List

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import metrics, statstable
from bleu_spark.aggregate import AggregateOptions, run_aggregate
from bleu_spark.metrics.base import MAX, MIN, SUM, Metric, StatColumn
from bleu_spark.metrics.combine import arrow_aggregations, combined, matrix_type

COLUMNS = (StatColumn("probe_chars"), StatColumn("probe_least", combine=MIN),
           StatColumn("probe_most", combine=MAX), StatColumn("probe_quarters", pa.float64(), SUM))


class Probe(Metric):
    name = "probe"
    title = "Probe"
    result_types = {"score": pa.float64(), "n_segments": pa.int64(), "tokenize": pa.string(),
                    "signature": pa.string(), "verbose": pa.string()}
    column_prefixes = ("probe_",)

    @classmethod
    def from_settings(cls, settings, choices=None):
        return cls()

    @classmethod
    def owns_column(cls, name):
        return name in {c.name for c in COLUMNS}

    @classmethod
    def stat_column(cls, name):
        return next(c for c in COLUMNS if c.name == name)

    @classmethod
    def column_order(cls, name):
        return ([c.name for c in COLUMNS].index(name),)

    def columns(self) -> List[StatColumn]:
        return list(COLUMNS)

    def measurement(self):
        return {"metric_options": ""}

    def segment_statistics(self, candidates, references, tokenizer=None):
        chars = np.asarray([len(c) for c in candidates.to_pylist()], np.float64)
        return np.column_stack([chars, chars, chars, chars / 4]).reshape(-1, 4)

    @classmethod
    def from_measurement(cls, row, choices=None):
        return cls()

    def score(self, sums):
        return float(sums[3])

    def scores(self, sums):
        return np.asarray(sums, np.float64).reshape(-1, 4)[:, 3]

    def signature_fields(self):
        return (("probe", "yes"),)

    def result(self, sums, row):
        return {"score": self.score(sums), "n_segments": row["n_segments"], "tokenize": None,
                "signature": self.signature(1), "verbose": f"Probe = {self.score(sums)}"}


@pytest.fixture
def probe(monkeypatch):
    """`probe` in the registry of this process; its class travels to Spark's Python workers by
    value (they cannot import the tests)."""
    monkeypatch.setitem(metrics.REGISTRY, Probe.name, Probe)
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield Probe()
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


ROWS = [{"system": f"s{i % 3}", "day": f"d{i % 4}", "candidate": "x" * ((i * 7) % 23 + 1),
         "references": ["r"]} for i in range(60)]


def expected(rows, key):
    """A plain Python reduction of the probe's statistics per `key`."""
    groups = {}
    for row in rows:
        groups.setdefault(row[key], []).append(len(row["candidate"]))
    return {k: {"probe_chars": sum(v), "probe_least": min(v), "probe_most": max(v),
                "probe_quarters": sum(n / 4 for n in v)} for k, v in groups.items()}


def statistics(table: pa.Table, key: str) -> dict:
    names = [c.name for c in COLUMNS]
    return {r[key]: {n: r[n] for n in names} for r in table.select([key, *names]).to_pylist()}


def test_the_declarations_build_the_numpy_and_arrow_reductions():
    stats = np.array([[3, 3, 3, 0.75], [5, 5, 5, 1.25], [1, 1, 1, 0.25]])
    assert matrix_type(COLUMNS) is np.float64 and matrix_type(COLUMNS[:3]) is np.int64
    assert combined(COLUMNS, stats) == [9, 1, 5, 2.25]
    assert [type(v) for v in combined(COLUMNS, stats)] == [int, int, int, float]
    assert arrow_aggregations(COLUMNS) == [("probe_chars", "sum"), ("probe_least", "min"),
                                           ("probe_most", "max"), ("probe_quarters", "sum")]
    with pytest.raises(TypeError, match="int64 or double; sum, min or max"):
        StatColumn("odd", combine="mean")


def test_a_metric_combines_its_segments_as_declared(probe):
    chars = np.array([[4, 4, 4, 1.0], [9, 9, 9, 2.25]])
    assert probe.combined(chars) == [13, 4, 9, 3.25]


@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_measured_sums_do_not_depend_on_partitioning(spark, probe, partitions):
    table = measured(spark, ROWS, partitions)
    assert statistics(table, "system") == expected(ROWS, "system")
    assert table.schema.field("probe_quarters").type == pa.float64()
    assert table.schema.field("probe_least").type == pa.int64()


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_aggregate_combines_saved_rows_as_declared(spark, probe, tmp_path, engine):
    days = [measured(spark, [r for r in ROWS if r["day"] == day], 3, ("system", "day"))
            for day in ("d0", "d1", "d2", "d3")]
    path = tmp_path / "stats.parquet"
    pq.write_table(pa.concat_tables(days), path)
    for key in ("system", "day"):
        summed = run_aggregate(AggregateOptions(stats=str(path), group_by=(key,), engine=engine),
                               spark).stats
        assert statistics(summed, key) == expected(ROWS, key)
    assert statistics(statstable.summed(pa.concat_tables(days), ["system"]), "system") == \
        expected(ROWS, "system")


def measured(spark, rows, partitions, group_by=("system",)) -> pa.Table:
    """The statistics table of `rows` measured by the scoring pass on `partitions` partitions."""
    from bleu_spark.spark.io import InputTable
    from bleu_spark.spark.job import JobOptions, measure
    from bleu_spark.spark.plan import plan_for

    frame = spark.createDataFrame(rows, "system string, day string, candidate string, "
                                        "references array<string>").repartition(partitions)
    options = JobOptions(input="<DataFrame>", metrics=("probe",), group_by=group_by)
    table = InputTable(spark, options.input, frame)
    return measure(spark, table, options, plan_for(table.schema, options)).stats
