"""The input read by the Python workers (`spark.scan`): the same statistics as Spark's scan, on
partitioned folders, wide references, resampling hashes and rejected rows; and Spark's own
xxhash64 of reference lists, computed in Python."""
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from bleu_spark.metrics.bleu import BleuConfig
from bleu_spark.resampling import POISSON, Resampling, bootstrap_signature, with_bootstrap_fields
from bleu_spark.hashes import reference_hashes
from bleu_spark.metrics.bleu.oracle import sacrebleu_score
from bleu_spark.spark.inputs import SPLIT_BYTES, scoring_tasks
from bleu_spark.spark import io
from bleu_spark.spark.io import InputTable, footer_schema
from bleu_spark.spark.job import JobOptions, run_job
from bleu_spark.spark.plan import plan_for
from bleu_spark.spark.scan import ArrowScan, arrow_scan
from bleu_spark.spark.runtime.classic import OnDemandSession
from conftest import SAMPLE, random_sentences
from matching import assert_matches_sacrebleu

pytestmark = pytest.mark.spark


def random_references(rng: random.Random, count: int):
    """Reference lists with null lists, null and empty elements, long and non-ASCII strings."""
    pieces = ["a", "é", "中", "😀", " ", "\u00a0", "x" * 7, "the cat"]
    def one():
        if rng.random() < 0.1:
            return None
        return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
    return [None if rng.random() < 0.05 else [one() for _ in range(rng.randint(0, 4))]
            for _ in range(count)]


def test_reference_hashes_are_sparks_xxhash64(spark):
    refs = random_references(random.Random(1), 3000)
    frame = spark.createDataFrame([(i, r) for i, r in enumerate(refs)], "i long, refs array<string>")
    spark_hashes = [r[0] for r in frame.orderBy("i").select(F.xxhash64("refs")).collect()]
    array = pa.array(refs, pa.list_(pa.string()))
    assert reference_hashes(array).tolist() == spark_hashes
    assert reference_hashes(array.slice(100, 500)).tolist() == spark_hashes[100:600]
    large = pa.array(refs, pa.large_list(pa.large_string()))
    assert reference_hashes(large).tolist() == spark_hashes


def run(spark, path, out, **options):
    result = run_job(spark, JobOptions(input=str(path), output=str(out), progress_seconds=0, **options))
    rows = result.run["rows"]
    assert rows["read"] == rows["scored"] + rows["rejected"]
    return result


def sorted_stats(result):
    table = result.stats
    return table.sort_by([(c, "ascending") for c in table.column_names
                          if c not in ("signature",) and not pa.types.is_list(table.schema.field(c).type)])


def both_scans(spark, path, tmp_path, **options):
    """The job with the Python workers reading, then with Spark's scan: the same statistics."""
    ours = run(spark, path, tmp_path / "arrow", **options)
    sparks = run(spark, path, tmp_path / "spark", scan="spark", **options)
    assert ours.run["layout"]["scan"] == "arrow" and sparks.run["layout"]["scan"] == "spark"
    assert ours.stats.schema == sparks.stats.schema
    assert sorted_stats(ours).equals(sorted_stats(sparks))
    assert ours.run["rows"] == sparks.run["rows"]
    return ours


def test_partition_folders_wide_references_replicates_and_rejected_rows_as_spark_reads_them(spark, tmp_path):
    rng = random.Random(4)
    folders = [("2026-01-07", "3", "web site"), ("2026-01-08", "12", "100%"),
               ("2026-01-08", "3", "__HIVE_DEFAULT_PARTITION__")]
    rows_by_folder = {}
    for run_date, shard, site in folders:
        folder = tmp_path / "in" / f"run_date={run_date}" / f"shard={shard}" / f"site={site.replace('%', '%25')}"
        folder.mkdir(parents=True)
        n = rng.randint(20, 40)
        rows = [{"system": rng.choice("AB"), "candidate": c, "ref_a": a,
                 "ref_b": None if rng.random() < 0.3 else b}
                for c, a, b in zip(random_sentences(rng, n), random_sentences(rng, n), random_sentences(rng, n))]
        rows += [{"system": "A", "candidate": None, "ref_a": "a cat", "ref_b": None},   # null_candidate
                 {"system": "B", "candidate": "a dog", "ref_a": None, "ref_b": None}]   # no_reference
        pq.write_table(pa.Table.from_pylist(rows), folder / "part-0.parquet", row_group_size=7)
        rows_by_folder[run_date, shard, site] = rows[:-2]
    ours = both_scans(spark, tmp_path / "in", tmp_path, group_by=("run_date", "shard", "site", "system"),
                      references_cols=("ref_a", "ref_b"), on_invalid="quarantine",
                      resampling=Resampling(confidence=True, n_bootstrap=20))
    types = {f.name: str(f.type) for f in ours.stats.schema if f.name in ("run_date", "shard", "site")}
    assert types == {"run_date": "date32[day]", "shard": "int32", "site": "string"}
    assert ours.run["rows"]["rejected_by_reason"] == {"no_reference": 3, "null_candidate": 3}
    rejected = pq.read_table(tmp_path / "arrow" / "rejected").to_pylist()
    assert sorted(r["reason"] for r in rejected) == ["no_reference"] * 3 + ["null_candidate"] * 3
    for row in ours.scores:
        site = row["site"] if row["site"] is not None else "__HIVE_DEFAULT_PARTITION__"
        group = [r for r in rows_by_folder[str(row["run_date"]), str(row["shard"]), site]
                 if r["system"] == row["system"]]
        theirs = sacrebleu_score([r["candidate"] for r in group], [[r["ref_a"], r["ref_b"]] for r in group],
                                 BleuConfig())
        fields = bootstrap_signature(POISSON, 20, 12345)
        assert_matches_sacrebleu(row, dict(theirs, signature=with_bootstrap_fields(theirs["signature"], fields)))
        assert row["ci_low"] is not None and row["ci_low"] <= row["ci_high"]


@pytest.mark.classic  # the session made on demand is classic Spark's
def test_a_plain_input_is_typed_by_its_footers_and_read_by_spark_only_for_rejected_rows(
        spark, tmp_path, monkeypatch):
    """Without partition folders, the schema is the footers' (the types Spark gives them) and
    Spark reads the input only to write the rows it rejected: until then the run's session,
    made on demand, is never made."""
    rng = random.Random(5)
    n = 60
    schema = pa.schema([pa.field("system", pa.string(), nullable=False), ("candidate", pa.string()),
                        ("references", pa.list_(pa.string())), ("shard", pa.int16()),
                        ("day", pa.date32()), ("weight", pa.float64())])
    rows = pa.table({"system": [rng.choice("AB") for _ in range(n)],
                     "candidate": random_sentences(rng, n),
                     "references": [[r] for r in random_sentences(rng, n)],
                     "shard": [rng.randint(1, 3) for _ in range(n)],
                     "day": pa.array([rng.randint(20000, 20002) for _ in range(n)], pa.int32()).cast(pa.date32()),
                     "weight": [rng.random() for _ in range(n)]}, schema=schema)
    for name, table in (("clean", rows), ("rejecting", rows.set_column(1, "candidate", pa.array(
            [None if i % 7 == 0 else c for i, c in enumerate(rows["candidate"].to_pylist())])))):
        (tmp_path / name).mkdir()
        pq.write_table(table.slice(0, 25), tmp_path / name / "part-0.parquet")
        pq.write_table(table.slice(25), tmp_path / name / "part-1.parquet")
    clean, rejecting = str(tmp_path / "clean"), str(tmp_path / "rejecting")
    assert InputTable(spark, clean).schema == spark.read.parquet(clean).schema
    with_ns = str(tmp_path / "with_ns.parquet")  # a column Spark cannot read is left out as Spark's read leaves it
    pq.write_table(rows.append_column("at", pa.array(range(n), pa.int64()).cast(pa.timestamp("ns"))), with_ns)
    table = InputTable(spark, with_ns)
    assert table.schema.fieldNames() == schema.names and not table.read_by_spark
    assert table.schema == table.frame.schema
    parted = tmp_path / "parted" / "shard=1"
    parted.mkdir(parents=True)
    pq.write_table(rows.drop_columns(["shard"]), parted / "part-0.parquet")
    assert footer_schema(str(tmp_path / "parted")) is None  # Spark types the folders' values
    reads = []
    spark_reads = io.read_parquet
    monkeypatch.setattr(io, "read_parquet", lambda *a, **k: reads.append(a[1]) or spark_reads(*a, **k))
    group_by = ("system", "shard", "day")
    on_demand = OnDemandSession(spark.sparkContext)
    result = run(on_demand, clean, tmp_path / "out_clean", group_by=group_by)
    assert result.run["layout"]["scan"] == "arrow" and reads == [] and not on_demand.started
    assert result.run["input_bytes"] == io.input_bytes(spark.read.parquet(clean))
    ours = run(on_demand, rejecting, tmp_path / "arrow", group_by=group_by, on_invalid="quarantine")
    assert reads == [rejecting] and on_demand.started and on_demand.session is spark
    sparks = run(spark, rejecting, tmp_path / "spark", group_by=group_by, on_invalid="quarantine", scan="spark")
    assert sorted_stats(ours).equals(sorted_stats(sparks))
    written = [pq.read_table(tmp_path / d / "rejected").sort_by("weight") for d in ("arrow", "spark")]
    assert written[0].equals(written[1]) and written[0].num_rows == 9
    assert written[0].column_names == [*schema.names, "reason"]


def test_the_workers_read_the_files_spark_reads_as_data(spark, tmp_path):
    """Copies in progress, hidden files and markers are left out as Spark leaves them out; `_k=v`
    folders are partitions; with a Parquet summary file Spark's own scan reads."""
    rng = random.Random(9)
    rows = pa.table({"system": [rng.choice("AB") for _ in range(40)], "candidate": random_sentences(rng, 40),
                     "references": [[r] for r in random_sentences(rng, 40)]})
    flat = tmp_path / "flat"
    flat.mkdir()
    pq.write_table(rows.slice(0, 20), flat / "part-0.parquet")
    pq.write_table(rows.slice(20), flat / "part-1.parquet")
    pq.write_table(rows, flat / "part-2.parquet._COPYING_")
    pq.write_table(rows, flat / ".hidden.parquet")
    (flat / "_SUCCESS").write_text("")
    assert both_scans(spark, flat, tmp_path / "f").run["rows"]["read"] == 40
    parted = tmp_path / "parted"
    for day, piece in ((1, rows.slice(0, 15)), (2, rows.slice(15))):
        (parted / f"_day={day}").mkdir(parents=True)
        pq.write_table(piece, parted / f"_day={day}" / "part-0.parquet")
    ours = both_scans(spark, parted, tmp_path / "p", group_by=("system", "_day"))
    assert ours.run["rows"]["read"] == 40 and sorted(set(ours.stats["_day"].to_pylist())) == [1, 2]
    pq.write_metadata(rows.schema, flat / "_common_metadata")
    assert footer_schema(str(flat)) is None
    result = run(spark, flat, tmp_path / "summary")
    assert result.run["layout"]["scan"] == "spark" and result.run["rows"]["read"] == 40


def test_the_sample_in_any_row_groups_gives_the_same_statistics(spark, tmp_path):
    table = pq.read_table(SAMPLE)
    first = None
    for size in (len(table), 700):
        path = tmp_path / f"sample_{size}.parquet"
        pq.write_table(table, path, row_group_size=size)
        result = run(spark, path, tmp_path / f"out_{size}")
        assert result.run["layout"]["scan"] == "arrow"
        assert result.run["layout"]["input_row_groups"] == -(-len(table) // size)
        # one row group or many, the rows are cut into tasks of about equal rows
        assert result.run["layout"]["scoring_tasks"] == scoring_tasks(len(table), 2) == 2
        first = first or sorted_stats(result)
        assert sorted_stats(result).equals(first)
    assert len(first) == 112
    spark.conf.set(SPLIT_BYTES, str(os.path.getsize(path) // 5 + 1))  # a split size of the user's
    try:
        result = run(spark, path, tmp_path / "out_split")
    finally:
        spark.conf.unset(SPLIT_BYTES)
    assert result.run["layout"]["scoring_tasks"] == 5 and sorted_stats(result).equals(first)


def test_inputs_the_workers_do_not_read_say_why(spark, tmp_path):
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"system": ["A"], "langpair": ["de-en"], "candidate": ["a"],
                             "references": [["a"]],
                             "score_day": pa.array([1], pa.timestamp("us", tz="UTC"))}), path)
    table = InputTable(spark, path)

    def scan(**options):
        options = JobOptions(input=path, **options)
        return arrow_scan(spark, table, options, plan_for(table.schema, options))

    assert isinstance(scan(), ArrowScan) and scan().rows == 1
    assert "score_day" in scan(group_by=("score_day",))
    assert "across rows" in scan(segment_key=("system",))
    assert "brought together" in scan(colocate_references="always")
    assert scan(scan="spark") == "--scan spark"
