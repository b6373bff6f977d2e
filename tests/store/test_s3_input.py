"""The input on S3, read by the Python workers through pyarrow (no hadoop-aws anywhere), against
moto's server on 127.0.0.1 (`test_s3.s3`): a folder of several files, a Hive-partitioned
prefix and a glob score as the same files read locally and as sacrebleu; classic and through
Spark Connect, whose tasks get the endpoint from the client alone; `aggregate` of statistics
on S3 starts no JVM; a remote input's errors are one line, exit 3, before any JVM."""
import glob
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from bleu_spark.metrics.bleu import BleuConfig
from bleu_spark.metrics.bleu.oracle import sacrebleu_score
from conftest import ROOT, S3_CREDENTIALS, SAMPLE
from matching import assert_matches_sacrebleu
from test_s3 import _ReadOnly, cli, s3  # noqa: F401 (the fixture)

pytestmark = pytest.mark.s3
PAIRS = ["de-en", "en-de", "cs-en"]   # 13a pairs of the sample: sacrebleu's oracle stays quick


@pytest.fixture(scope="module")
def layouts(s3, tmp_path_factory):
    """The same rows as local files and on S3 in three shapes: {name: (local path, s3 uri)}."""
    table = pq.read_table(SAMPLE)
    table = table.filter(pc.is_in(table["langpair"], pa.array(PAIRS)))
    local, fs = tmp_path_factory.mktemp("inputs"), s3["fs"]

    def put(relative, rows, **write):
        path = local / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows, path, **write)
        with fs.open_output_stream(f"bucket/inputs/{relative}") as out:
            pq.write_table(rows, out, **write)

    n = table.num_rows
    for i in range(4):  # several files, small row groups: tasks cut inside them
        put(f"several/part-{i}.parquet", table.slice(i * n // 4, (i + 1) * n // 4 - i * n // 4),
            row_group_size=500)
    put("several/_SUCCESS", pa.table({"x": [1]}))  # not data, as Spark reads a folder
    for pair in PAIRS:
        rows = table.filter(pc.equal(table["langpair"], pair)).drop_columns(["langpair"])
        put(f"hive/langpair={pair}/part-0.parquet", rows)
    bad = table.slice(0, 3).drop_columns(["langpair"])
    bad = bad.set_column(bad.schema.get_field_index("candidate"), "candidate", pa.nulls(3, pa.string()))
    for pair in PAIRS[:2]:  # rows to reject, in a partition of their own and beside good ones
        rows = table.filter(pc.equal(table["langpair"], pair)).drop_columns(["langpair"])
        put(f"rejects/run_date=2026-01-0{len(pair)}/langpair={pair}/part-0.parquet",
            pa.concat_tables([rows.cast(bad.schema), bad]))
    put("rejects/run_date=2026-01-09/langpair=xx-yy/part-0.parquet", bad)
    return {"several": (str(local / "several"), "s3a://bucket/inputs/several"),
            "rejects": (str(local / "rejects"), "s3a://bucket/inputs/rejects"),
            "hive": (str(local / "hive"), "s3://bucket/inputs/hive"),
            "glob": (str(local / "several" / "part-[12].parquet"), "s3a://bucket/inputs/several/part-[12].parquet")}


def by_group(scores):
    return {(r["system"], r["langpair"], r["metric"]): r["score"] for r in scores}


@pytest.mark.spark
@pytest.mark.parametrize("name", ["several", "hive", "glob"])
def test_s3_inputs_score_as_the_same_files_read_locally_and_as_sacrebleu(s3, spark, layouts, name):
    from bleu_spark.spark.job import JobOptions, run_job

    local, remote = layouts[name]
    options = dict(progress_seconds=0, metrics=("bleu", "chrf", "ter"))
    on_s3 = run_job(spark, JobOptions(input=remote, **options))
    here = run_job(spark, JobOptions(input=local, **options))
    assert on_s3.run["layout"]["scan"] == "arrow", on_s3.run["layout"]
    assert by_group(on_s3.scores) == by_group(here.scores)
    assert on_s3.run["rows"] == here.run["rows"]
    rows = pq.read_table(local).to_pylist() if name != "glob" else [
        r for f in sorted(glob.glob(local)) for r in pq.read_table(f).to_pylist()]
    for row in (r for r in on_s3.scores if r["metric"] == "BLEU"):
        group = [r for r in rows if r["system"] == row["system"] and r["langpair"] == row["langpair"]]
        theirs = sacrebleu_score([r["candidate"] for r in group], [r["references"] for r in group],
                                 BleuConfig(), row["langpair"])
        assert_matches_sacrebleu(row, theirs)


@pytest.mark.spark
def test_rejected_rows_and_spark_side_passes_of_an_s3_input_need_no_connector(s3, spark, layouts, tmp_path):
    """Rows rejected (written back whole, partition columns typed as Spark types them) and a
    pass forced onto Spark's side (`--scan spark`): the rows read through pyarrow all the same."""
    from bleu_spark.spark.job import JobOptions, run_job

    local, remote = layouts["rejects"]
    results = {}
    for name, path in (("s3", remote), ("local", local)):
        for scan in ("auto", "spark"):
            out = tmp_path / f"{name}-{scan}"
            result = run_job(spark, JobOptions(input=path, output=str(out), progress_seconds=0,
                                               on_invalid="quarantine", scan=scan,
                                               group_by=("run_date", "system", "langpair")))
            rejected = pq.read_table(out / "rejected")
            results[name, scan] = (by_group_dated(result.scores), result.run["rows"],
                                   sorted(map(str, rejected.to_pylist())), rejected.schema)
    assert results["s3", "auto"] == results["local", "auto"] == results["s3", "spark"]
    assert results["s3", "auto"][1]["rejected_by_reason"] == {"null_candidate": 9}


def by_group_dated(scores):
    return {(str(r["run_date"]), r["system"], r["langpair"], r["metric"]): r["score"] for r in scores}


@pytest.mark.spark
def test_a_file_added_to_the_prefix_is_read_by_the_next_run_in_the_same_process(s3, spark):
    from bleu_spark.spark.job import JobOptions, run_job

    table = pq.read_table(SAMPLE).slice(0, 300)
    with s3["fs"].open_output_stream("bucket/growing/part-0.parquet") as out:
        pq.write_table(table, out)
    first = run_job(spark, JobOptions(input="s3a://bucket/growing", progress_seconds=0))
    with s3["fs"].open_output_stream("bucket/growing/part-1.parquet") as out:
        pq.write_table(table, out)
    second = run_job(spark, JobOptions(input="s3a://bucket/growing", progress_seconds=0))
    assert (first.run["rows"]["read"], second.run["rows"]["read"]) == (300, 600)


def test_no_hadoop_aws_jar_anywhere():
    import pyspark

    jars = os.listdir(os.path.join(os.path.dirname(pyspark.__file__), "jars"))
    assert not [j for j in jars if j.startswith(("hadoop-aws", "aws-java-sdk", "bundle-2"))], jars


def test_the_cli_reads_s3a_with_the_endpoint_from_spark_defaults_alone(s3, layouts, tmp_path):
    """Endpoint and path style only in spark-defaults' `spark.hadoop.fs.s3a.*`, the keys in the
    AWS variables: the driver lists and the tasks read with both."""
    local, remote = layouts["hive"]
    done = cli(s3, "score", "--input", remote, "--output", str(tmp_path / "out"), "--metrics", "bleu,chrf")
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["layout"]["scan"] == "arrow"
    scores = json.loads((tmp_path / "out" / "scores.json").read_text())
    here = cli(s3, "score", "--input", local, "--output", str(tmp_path / "here"), "--metrics", "bleu,chrf")
    assert here.returncode == 0, here.stderr[-3000:]
    assert by_group(scores) == by_group(json.loads((tmp_path / "here" / "scores.json").read_text()))


def _without_spark(argv, env):
    """The command run in a fresh interpreter that notes every process it starts: whether a
    JVM (spark-submit, java) was started, and whether pyspark was imported."""
    code = ("import subprocess, sys\n"
            "started = []\n"
            "class Noted(subprocess.Popen):\n"
            "    def __init__(self, args, *rest, **kw):\n"
            "        started.append(' '.join(map(str, args)) if isinstance(args, (list, tuple)) else str(args))\n"
            "        super().__init__(args, *rest, **kw)\n"
            "subprocess.Popen = Noted\n"
            "from bleu_spark.cli import main\n"
            f"code = main({argv!r})\n"
            "jvm = [c for c in started if 'spark-submit' in c or 'java' in c]\n"
            "print('jvm started' if jvm else 'no jvm')\n"
            "print('pyspark loaded' if any(m.split('.')[0] == 'pyspark' for m in sys.modules) else 'no pyspark')\n"
            "sys.exit(code)\n")
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_aggregate_of_statistics_on_s3_starts_no_jvm(s3, layouts, tmp_path):
    _, remote = layouts["several"]
    scored = cli(s3, "score", "--input", remote, "--output", "s3a://bucket/agg/run")
    assert scored.returncode == 0, scored.stderr[-3000:]
    env = {**os.environ, **S3_CREDENTIALS, "SPARK_CONF_DIR": s3["conf"], "PYTHONPATH": ROOT}
    env.pop("AWS_ENDPOINT_URL", None)
    done = _without_spark(["aggregate", "--stats", "s3a://bucket/agg/run", "--output",
                           str(tmp_path / "week")], env)
    assert done.returncode == 0, done.stderr[-3000:]
    # pyspark is imported (spark-defaults are read with its help), but no JVM is started
    assert done.stdout.strip().splitlines()[-2] == "no jvm", done.stdout[-2000:]
    with s3["fs"].open_input_stream("bucket/agg/run/scores.json") as stream:
        expected = json.loads(stream.read())
    assert by_group(json.loads((tmp_path / "week" / "scores.json").read_text())) == by_group(expected)


def _one_line_exit_3(done):
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3 and len(lines) == 1 and lines[0].startswith("bleu-spark: error: "), \
        (done.returncode, done.stderr[-3000:])
    assert "no jvm" in done.stdout.splitlines(), done.stdout  # found before any JVM
    return lines[0]


def test_remote_input_errors_are_one_line_exit_3_before_any_jvm(s3, tmp_path):
    with s3["fs"].open_output_stream("bucket/not-parquet/part-0.parquet") as out:
        out.write(b"not a parquet file at all" * 40)
    env = {**os.environ, **S3_CREDENTIALS, "SPARK_CONF_DIR": s3["conf"], "PYTHONPATH": ROOT}
    env.pop("AWS_ENDPOINT_URL", None)
    score = lambda path, e=env: _without_spark(
        ["score", "--input", path, "--output", str(tmp_path / "out"), "--progress-seconds", "0"], e)
    assert "there is no bucket no-such-bucket" in _one_line_exit_3(score("s3a://no-such-bucket/logs"))
    assert "path not found" in _one_line_exit_3(score("s3a://bucket/no/such/prefix"))
    line = _one_line_exit_3(score("s3a://bucket/not-parquet"))
    assert "s3a://bucket/not-parquet/part-0.parquet is not readable Parquet" in line
    closed = tmp_path / "closed-port"
    closed.mkdir()
    (closed / "spark-defaults.conf").write_text(
        "spark.hadoop.fs.s3a.endpoint http://127.0.0.1:9\nspark.hadoop.fs.s3a.path.style.access true\n")
    assert "cannot be listed" in _one_line_exit_3(score("s3a://bucket/inputs/several",
                                                        {**env, "SPARK_CONF_DIR": str(closed)}))


def test_a_denied_listing_or_read_is_one_line_exit_3(s3, monkeypatch):
    """S3 answering AccessDenied (as a prefix without the read right does)."""
    import pyarrow.fs as pafs

    from bleu_spark import errors
    from bleu_spark.spark import io
    from bleu_spark.store import remote

    class Denied(_ReadOnly):
        def _denied(self, *args, **kwargs):
            raise PermissionError(13, "AWS Error ACCESS_DENIED during ListObjectsV2 operation: Access Denied")
        get_file_info = get_file_info_selector = open_input_stream = open_input_file = _denied

    remote.input_filesystem.cache_clear()
    monkeypatch.setattr(remote, "input_filesystem", lambda *a: pafs.PyFileSystem(Denied(s3["fs"])))
    with pytest.raises(errors.InputNotFoundError, match=r"cannot be listed: ACCESS_DENIED: Access Denied$"):
        io.footer_schema("s3a://bucket/denied/logs")


@pytest.mark.connect
@pytest.mark.spark
def test_s3_input_through_spark_connect_reads_with_the_clients_settings(s3, layouts, tmp_path):
    """The server's processes have no AWS variables and no endpoint: the tasks read with what
    the client gave them. The client starts no JVM."""
    from connect_server import connect_server
    from test_connect import run_connect

    local, remote = layouts["hive"]
    blank = {"AWS_ENDPOINT_URL": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
    with connect_server(tmp_path, extra_env=blank) as url:
        run = run_connect(url, ["score", "--input", remote, "--metrics", "bleu,ter"], tmp_path / "connect")
    assert run["layout"]["scan"] == "arrow"
    here = cli(s3, "score", "--input", local, "--output", str(tmp_path / "here"), "--metrics", "bleu,ter")
    assert here.returncode == 0, here.stderr[-3000:]
    assert by_group(json.loads((tmp_path / "connect" / "scores.json").read_text())) == \
        by_group(json.loads((tmp_path / "here" / "scores.json").read_text()))


@pytest.mark.spark
def test_an_incremental_run_over_a_prefix_into_s3_equals_a_plain_run(s3, spark):
    from bleu_spark.spark.job import JobOptions, run_job

    table = pq.read_table(SAMPLE).slice(0, 3000)
    fs = s3["fs"]
    for step in range(3):
        with fs.open_output_stream(f"bucket/hourly/hour={step}/part-0.parquet") as out:
            pq.write_table(table.slice(step * 1000, 1000), out)
        result = run_job(spark, JobOptions(input="s3a://bucket/hourly", output="s3://bucket/inc",
                                           incremental=True, progress_seconds=0))
        assert result.run["rows"]["read"] == 1000
    again = run_job(spark, JobOptions(input="s3a://bucket/hourly", output="s3://bucket/inc",
                                      incremental=True, progress_seconds=0))
    assert again.run["unchanged"]
    run_job(spark, JobOptions(input="s3a://bucket/hourly", output="s3://bucket/plain",
                              progress_seconds=0))
    read = lambda key: json.loads(fs.open_input_stream(f"bucket/{key}/scores.json").read())
    assert read("inc") == read("plain") and len(read("plain")) > 1
