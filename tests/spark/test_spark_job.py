"""The Spark layer on one shared local[2] session: exactness, partition invariance, accounting."""
import json
from collections import defaultdict
from dataclasses import asdict

import pyarrow.parquet as pq
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from bleu_spark.languages import TextSettings
from bleu_spark.metrics.bleu import BleuConfig
from bleu_spark.languages import TextSettings
from bleu_spark.errors import (ColumnTypeError, InputNotFoundError, InvalidRowsError,
                               MissingColumnError, MixedTokenizerGroupError)
from bleu_spark.metrics.bleu.oracle import sacrebleu_score
from bleu_spark.spark.inputs import scoring_input
from bleu_spark.spark.io import InputTable
from bleu_spark.spark.job import JobOptions, partial_sums_frame, run_job, score_dataframe
from bleu_spark.spark.plan import plan_for
from bleu_spark.scoring.tables import json_rows
from conftest import SAMPLE
from matching import assert_matches_sacrebleu

pytestmark = pytest.mark.spark


def oracle_by_group(rows, config=BleuConfig(), keys=("langpair", "system"), text=TextSettings()):
    groups = defaultdict(list)
    for row in rows:
        groups[tuple(row[k] for k in keys)].append(row)
    return {key: sacrebleu_score([r["candidate"] for r in g], [r["references"] for r in g],
                                 config, langpair=g[0].get("langpair"), text=text)
            for key, g in groups.items()}


@pytest.fixture(scope="module")
def sample(spark):
    return spark.read.parquet(SAMPLE)


def test_job_equals_sacrebleu_on_every_group_of_the_sample(spark, tmp_path):
    result = run_job(spark, JobOptions(input=SAMPLE, output=str(tmp_path / "out")))
    oracle = oracle_by_group(pq.read_table(SAMPLE).to_pylist())
    assert len(result.scores) == len(oracle) == 112
    for row in result.scores:
        assert_matches_sacrebleu(row, oracle[row["langpair"], row["system"]])
    assert {r["tokenize"] for r in result.scores if r["langpair"] == "en-ja"} == {"ja-mecab"}
    assert {r["tokenize"] for r in result.scores if r["langpair"] == "en-zh"} == {"zh"}
    written = json.loads((tmp_path / "out" / "scores.json").read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(json_rows(result.scores, ["system", "langpair"])))
    table = pq.read_table(tmp_path / "out" / "scores").to_pylist()
    assert [(r["system"], r["langpair"], r["score"]) for r in table] == \
        [(r["system"], r["langpair"], r["score"]) for r in result.scores]
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["rows"] == {"read": 17470, "scored": 17470, "rejected": 0, "rejected_by_reason": {}}
    assert run["versions"]["sacrebleu"] == "2.6.0" and run["versions"]["java"]


@pytest.mark.parametrize("cfg,tokenize", [(BleuConfig(lowercase=True, smooth_method="floor"), "13a"),
                                          (BleuConfig(max_ngram_order=2, effective_order=True), "intl"),
                                          (BleuConfig(smooth_method="add-k", smooth_value=2), "char")])
def test_options_reach_the_executors(sample, cfg, tokenize):
    small = sample.where("seg_id < 40 and langpair in ('de-en', 'en-zh')")
    scores = score_dataframe(small, **asdict(cfg), tokenize=tokenize)
    oracle = oracle_by_group([r.asDict(recursive=True) for r in small.collect()], cfg,
                             text=TextSettings(tokenize))
    for row in scores:
        assert_matches_sacrebleu(row, oracle[row["langpair"], row["system"]])


def test_sentencepiece_model_is_shipped_to_executors(sample, spm_model):
    small = sample.where("seg_id < 30 and langpair = 'de-en'")
    text = TextSettings(tokenize="flores200", spm_model=spm_model)
    oracle = oracle_by_group([r.asDict(recursive=True) for r in small.collect()], text=text)
    for row in score_dataframe(small, tokenize=text.tokenize, spm_model=text.spm_model):
        assert_matches_sacrebleu(row, oracle[row["langpair"], row["system"]])


@pytest.mark.parametrize("colocate", ["never", "always"])
def test_statistics_do_not_depend_on_partitioning(spark, sample, colocate):
    options = JobOptions(input=SAMPLE, colocate_references=colocate)
    plan = plan_for(sample.schema, options)

    def sums(partitions):
        table = InputTable(spark, SAMPLE, sample.repartition(partitions))
        scored = scoring_input(spark, table, options, plan.group_cols,
                               plan.langpair_col, rows=17470)
        assert scored.layout["colocated"] == (colocate == "always")
        return partial_sums_frame(scored.frame, plan)

    frames = [sums(n) for n in (1, 3, 7)]
    for frame in frames[1:]:
        assert_df_equality(frames[0], frame, ignore_row_order=True, ignore_nullable=True)
    assert frames[0].where(F.col("reason").isNull()).count() == 112


def test_any_grouping_and_a_single_corpus(sample):
    small = sample.where("seg_id < 20 and langpair in ('de-en', 'cs-en')")
    rows = [r.asDict(recursive=True) for r in small.collect()]
    by_system = score_dataframe(small, group_by=["system"], tokenize="13a")
    oracle = oracle_by_group(rows, keys=("system",), text=TextSettings("13a"))
    for row in by_system:
        assert_matches_sacrebleu(row, oracle[(row["system"],)])
    (whole,) = score_dataframe(small, group_by=[], tokenize="13a")
    assert_matches_sacrebleu(whole, oracle_by_group(rows, keys=(), text=TextSettings("13a"))[()])


def test_auto_tokenizer_refuses_only_groups_that_mix_tokenizers(sample):
    with pytest.raises(MixedTokenizerGroupError, match="would mix statistics of different tokenizers"):
        score_dataframe(sample, group_by=["system"])
    # One target language per group: one tokenizer, so the language pair need not be a group column.
    small = sample.where("seg_id < 30 and langpair in ('en-zh', 'de-en', 'cs-en')")
    rows = [r.asDict(recursive=True) for r in small.collect()]
    zh_only = [r for r in rows if r["langpair"] == "en-zh"]
    (row,) = score_dataframe(small.where("langpair = 'en-zh'"), group_by=[])
    assert_matches_sacrebleu(row, oracle_by_group(zh_only, keys=())[()])
    to_english = [r for r in rows if r["langpair"] != "en-zh"]
    by_system = score_dataframe(small.where("langpair != 'en-zh'"), group_by=["system"])
    oracle = oracle_by_group(to_english, keys=("system",))
    for row in by_system:
        assert_matches_sacrebleu(row, oracle[(row["system"],)])


def test_unscorable_rows_are_counted_not_dropped(spark):
    df = spark.createDataFrame(
        [("s", "de-en", "a cat", ["a cat"]), ("s", "de-en", None, ["a cat"]),
         ("s", "de-en", "a dog", [None, None]), ("s", "de-en", "a dog", None),
         ("s", "de-en", "a dog", [])],
        "system string, langpair string, candidate string, references array<string>")
    with pytest.raises(InvalidRowsError, match=r"4 rows cannot be scored \(no_reference: 3, null_candidate: 1\)"):
        score_dataframe(df)


def test_schema_problems_are_reported_together(spark, tmp_path):
    path = str(tmp_path / "bad.parquet")
    spark.createDataFrame([("s", 1, "x")], "system string, candidate int, refs string") \
        .write.parquet(path)
    with pytest.raises(MissingColumnError, match="no column references.*candidate is int, expected string"):
        run_job(spark, JobOptions(input=path))
    with pytest.raises(ColumnTypeError, match="column candidate is int, expected array<string> or string"):
        run_job(spark, JobOptions(input=path, candidate_col="system", references_cols=("candidate",)))
    with pytest.raises(InputNotFoundError, match="not found"):
        run_job(spark, JobOptions(input=str(tmp_path / "missing" / "*.parquet")))


@pytest.mark.parametrize("replicates", [0, 20])
def test_a_long_partition_is_merged_on_the_way_without_changing_its_sums(replicates):
    """More batches than the partition function holds before merging them (10M-row inputs)."""
    import pyarrow as pa

    from bleu_spark.spark import stats as partition

    rows = [{"system": "A", "langpair": "de-en", "candidate": f"the cat {i}", "_references": [f"a cat {i}"],
             "_row_reason": None, "_segment_hash": i} for i in range(300)]
    table = pa.Table.from_pylist(rows).set_column(4, "_row_reason", pa.nulls(len(rows), pa.string()))
    batches = table.to_batches(max_chunksize=2)
    plan = partition.PartitionPlan(text=TextSettings("13a"), group_cols=("system", "langpair"),
                                   candidate_col="candidate", references_col="_references",
                                   langpair_col=None, reason_col="_row_reason",
                                   segment_hash_col="_segment_hash" if replicates else None,
                                   replicates=replicates, seed=1)
    merged = pa.Table.from_batches(list(partition.partial_sums(plan)(iter(batches))))
    whole = pa.Table.from_batches(list(partition.partial_sums(plan)(iter(table.to_batches()))))
    assert len(batches) > partition._PartitionSums.MERGE_EVERY
    assert merged.num_rows == 1
    assert len(merged["replicate_sums"][0].values or []) == replicates * 10
    assert merged.to_pylist() == whole.to_pylist()
