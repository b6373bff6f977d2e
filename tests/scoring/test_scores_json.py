"""scores.json holds sacrebleu's JSON fields where they mean what this job's do: `name` and
`verbose_score`, equal to what sacrebleu 2.6 itself writes with `-f json`."""
import json
import subprocess
import sys
from collections import defaultdict

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from bleu_spark.scoring.rows import ScoreRow
from bleu_spark.scoring.tables import json_rows
from conftest import SAMPLE
from matching import sacrebleu_metric

METRICS = ("bleu", "chrf", "chrf++", "ter")


def sacrebleu_json(name, candidates, references, tokenize, width=2):
    """sacrebleu's JSON of one corpus score, as its command line writes it."""
    metric = sacrebleu_metric(name, **({"tokenize": tokenize} if name == "bleu" else {}))
    score = metric.corpus_score(candidates, references)
    return json.loads(score.format(width, signature=str(metric.get_signature()), is_json=True))


@pytest.fixture(scope="module")
def scored(spark, tmp_path_factory):
    """Four metrics over three language pairs of the sample (13a, zh, ja-mecab), 60 segments."""
    from bleu_spark.spark.job import JobOptions, run_job

    folder = tmp_path_factory.mktemp("json")
    table = pq.read_table(SAMPLE)
    keep = pc.and_(pc.less(table["seg_id"], 60),
                   pc.is_in(table["langpair"], pa.array(["de-en", "en-zh", "en-ja"])))
    path = str(folder / "in.parquet")
    pq.write_table(table.filter(keep), path)
    run_job(spark, JobOptions(input=path, output=str(folder / "out"), metrics=METRICS))
    rows = json.loads((folder / "out" / "scores.json").read_text(encoding="utf-8"))
    return pq.read_table(path).to_pylist(), rows


@pytest.mark.spark
def test_name_and_verbose_score_equal_sacrebleus_json(scored):
    inputs, rows = scored
    groups = defaultdict(list)
    for row in inputs:
        groups[row["langpair"], row["system"]].append(row)
    assert len(rows) == 4 * len(groups)
    for ours in rows:
        group = groups[ours["langpair"], ours["system"]]
        width = max(len(r["references"]) for r in group)
        references = [[r["references"][i] for r in group] for i in range(width)]
        theirs = sacrebleu_json(ours["metric"], [r["candidate"] for r in group], references,
                                ours["tokenize"])
        assert ours["name"] == theirs["name"]
        assert ours.get("verbose_score") == theirs.get("verbose_score")
        assert ("verbose_score" in ours) == ("verbose_score" in theirs)
        assert ours["signature"] == theirs["signature"]
        assert float(f"{ours['score']:.2f}") == theirs["score"]
        if "verbose_score" in ours:
            assert ours["verbose"] == f"{theirs['name']} = {ours['score']:.2f} {theirs['verbose_score']}"
    assert list(rows[0])[:6] == ["system", "langpair", "grouping", "metric", "name", "score"]


@pytest.mark.spark
def test_one_group_equals_the_sacrebleu_command_lines_json(scored, tmp_path):
    """The shared fields of one group, against sacrebleu's own `-f json` (one decimal)."""
    inputs, rows = scored
    system = next(r["system"] for r in inputs if r["langpair"] == "en-ja")
    group = [r for r in inputs if r["langpair"] == "en-ja" and r["system"] == system]
    (tmp_path / "hyp").write_text("".join(r["candidate"] + "\n" for r in group), encoding="utf-8")
    (tmp_path / "ref").write_text("".join(r["references"][0] + "\n" for r in group), encoding="utf-8")
    command = [sys.executable, "-m", "sacrebleu", "ref", "-i", "hyp", "-f", "json", "-l", "en-ja"]
    theirs = []
    for metrics in (["-m", "bleu", "chrf", "ter"], ["-m", "chrf", "--chrf-word-order", "2"]):
        out = subprocess.run(command + metrics, cwd=tmp_path, capture_output=True, text=True,
                             check=True).stdout
        found = json.loads(out)
        theirs += found if isinstance(found, list) else [found]
    ours = [r for r in rows if (r["langpair"], r["system"]) == ("en-ja", system)]
    ours = {r["metric"]: r for r in ours}
    for name, json_row in zip(("bleu", "chrf", "ter", "chrf++"), theirs):
        mine = ours[name]
        for field in ("name", "signature", "verbose_score"):
            assert mine.get(field) == json_row.get(field), (name, field)
        assert float(f"{mine['score']:.1f}") == json_row["score"]


def test_a_group_column_keeps_its_name_over_sacrebleus_fields():
    row = ScoreRow(name="sys-A", grouping="name", metric="bleu", score=1.0, verbose="BLEU = 1.00 x")
    row.sacrebleu = {"name": "BLEU", "verbose_score": "x"}
    (written,) = json_rows([row], ["name"])
    assert written == {"name": "sys-A", "grouping": "name", "metric": "bleu", "score": 1.0,
                       "verbose": "BLEU = 1.00 x", "verbose_score": "x"}
