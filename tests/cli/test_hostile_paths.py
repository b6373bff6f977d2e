"""Hostile input, one topic: how the input is named and what its files hold: Hive layouts, globs,
names that look like patterns, damaged files, file systems Spark lacks."""
import glob
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import cli
from bleu_spark.cli import main
from bleu_spark.errors import OutputError
from conftest import console_session
from hostile_common import run_cli, score_in_process


# --- how the input is named: Hive layouts, globs, Spark-written folders ---------------------------

def write_hive(root):
    for langpair in ("de-en", "en-zh"):
        folder = root / f"langpair={langpair}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"system": ["A", "B"], "candidate": ["猫 犬 东京 北京", "the cat sat on the mat"],
                                 "references": [["猫 犬 东京 北京"], ["the cat sat on a mat"]]}),
                       folder / "part-0.parquet")


def test_hive_base_of_paths():
    from bleu_spark.spark.io import hive_base

    assert hive_base("in/langpair=*/*.parquet") == "in"
    assert hive_base("/d/in/year=2024/month=*/part-0.parquet") == "/d/in"
    assert hive_base("in/langpair=de-en") == "in" and hive_base("in/langpair=de-en/") == "in"
    assert hive_base("in/*.parquet") is None and hive_base("/data/run=1/exp/in.parquet") is None
    with pytest.raises(Exception, match="below a glob"):
        hive_base("in/*/langpair=*/x.parquet")


@pytest.mark.spark
@pytest.mark.parametrize("name", ["in/langpair=*/*.parquet", "in/langpair=*", "in", "in/langpair=en-zh/part-0.parquet"])
def test_hive_partition_columns_are_kept_however_the_input_is_named(spark, tmp_path, name):
    import sacrebleu

    write_hive(tmp_path / "in")
    score_in_process(spark, "--input", str(tmp_path / name), "--output", str(tmp_path / "out"), "--progress-seconds", "0")
    rows = {(r["system"], r["langpair"]): r for r in json.loads((tmp_path / "out" / "scores.json").read_text())}
    expected = {"en-zh"} if "en-zh" in name else {"de-en", "en-zh"}
    assert {lp for _, lp in rows} == expected
    zh = rows["A", "en-zh"]
    assert zh["tokenize"] == "zh"
    assert zh["score"] == sacrebleu.BLEU(tokenize="zh").corpus_score(["猫 犬 东京 北京"], [["猫 犬 东京 北京"]]).score


@pytest.mark.spark
@pytest.mark.parametrize("pattern", ["in/*", "in/*/*"])
def test_globs_over_folders_and_spark_written_files_are_read(spark, tmp_path, pattern):
    for name in ("a", "b"):  # as Spark writes a folder: part files, _SUCCESS and checksums
        folder = tmp_path / "in" / name
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"system": [name], "langpair": ["de-en"], "candidate": ["the cat sat on the mat"],
                                 "references": [["the cat sat on the mat"]]}), folder / "part-00000.parquet")
        (folder / "_SUCCESS").write_bytes(b"")
        (folder / "._SUCCESS.crc").write_bytes(b"crc\x00\x00\x02\x00")
    (tmp_path / "in" / "_SUCCESS").write_bytes(b"")
    score_in_process(spark, "--input", str(tmp_path / pattern), "--output", str(tmp_path / "out"), "--progress-seconds", "0")
    assert sorted(r["system"] for r in json.loads((tmp_path / "out" / "scores.json").read_text())) == ["a", "b"]


@pytest.mark.parametrize("input_name,output_name", [("in", "in/out"), ("in/*", "in/out"), ("in", "in"),
                                                    ("in/*/", "in/x/y")])
def test_an_output_the_input_would_read_is_refused(tmp_path, capsys, input_name, output_name):
    write_hive(tmp_path / "in")
    code = main(["score", "--input", str(tmp_path / input_name), "--output", str(tmp_path / output_name)])
    err = capsys.readouterr().err
    assert code == 8 and err.count("\n") == 1 and "would be read as input by the next run" in err
    assert not (tmp_path / "in" / "out").exists()


def test_an_output_beside_the_input_glob_is_fine():
    from bleu_spark.spark.io import check_output_outside_input

    check_output_outside_input("in/*.parquet", "in/out")
    check_output_outside_input("in", "in2/out")
    check_output_outside_input("in/a.parquet", "in/out")


# --- a path that exists is that path, whatever its name holds ---------------------------------------

def write_named(root):
    """Files whose names hold glob characters, beside the files their names match as patterns."""
    def one(name, system):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"system": [system], "langpair": ["de-en"], "candidate": ["the cat sat on the mat"],
                                 "references": [["the cat sat on a mat"]]}), path)

    one("a[1].parquet", "bracket")
    one("a1.parquet", "a1")
    one("b{x}.parquet", "brace")
    one("bx.parquet", "bx")
    one("d[1]/langpair=de-en/part-0.parquet", "hive")


def test_local_files_take_a_name_that_exists_as_itself(tmp_path):
    from bleu_spark.spark.io import check_output_outside_input, hive_base, local_files

    write_named(tmp_path)
    assert local_files(str(tmp_path / "a[1].parquet")) == [str(tmp_path / "a[1].parquet")]
    assert local_files("file://" + str(tmp_path / "b{x}.parquet")) == [str(tmp_path / "b{x}.parquet")]
    assert local_files(str(tmp_path / "a[1]*.parquet")) == [str(tmp_path / "a1.parquet")]  # no such file: a glob
    assert hive_base(str(tmp_path / "d[1]/langpair=de-en")) == str(tmp_path / "d[1]")
    with pytest.raises(OutputError, match="lies inside the input"):
        check_output_outside_input(str(tmp_path / "d[1]"), str(tmp_path / "d[1]/out"))
    check_output_outside_input(str(tmp_path / "d[1]"), str(tmp_path / "d1"))


@pytest.mark.spark
@pytest.mark.parametrize("scan", ["auto", "spark"])  # read by the Python workers, or by Spark
@pytest.mark.parametrize("name,systems", [("a[1].parquet", ["bracket"]), ("b{x}.parquet", ["brace"]),
                                          ("a[1]*.parquet", ["a1"]), ("d[1]/langpair=de-en", ["hive"])])
def test_a_path_with_glob_characters_that_exists_is_read_as_itself(spark, tmp_path, scan, name, systems):
    from bleu_spark.spark.job import JobOptions, run_job

    write_named(tmp_path / "in")
    result = run_job(console_session(spark), JobOptions(input=str(tmp_path / "in" / name), scan=scan, progress_seconds=0))
    assert [(r["system"], r["langpair"]) for r in result.scores] == [(s, "de-en") for s in systems]
    assert result.run["layout"]["scan"] == ("arrow" if scan == "auto" else "spark")


# --- folders whose files disagree or are damaged ---------------------------------------------------

def _part(folder, name, candidate=("the cat sat on the mat",)):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    pq.write_table(pa.table({"system": ["A"] * len(candidate), "langpair": ["de-en"] * len(candidate),
                             "candidate": list(candidate),
                             "references": [["the cat sat on the mat"]] * len(candidate)}), path)
    return path


def test_files_that_disagree_on_a_column_type_are_exit_5_naming_both(tmp_path, capsys):
    _part(tmp_path / "in", "a.parquet")
    pq.write_table(pa.table({"system": ["B"], "langpair": ["de-en"], "candidate": [7],
                             "references": [["x"]]}), tmp_path / "in" / "b.parquet")
    code = main(["score", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 5 and err.count("\n") == 1
    assert f"candidate is string in {tmp_path / 'in' / 'a.parquet'} but int64 in {tmp_path / 'in' / 'b.parquet'}" in err


def test_a_truncated_file_is_exit_3_naming_it(tmp_path, capsys):
    _part(tmp_path / "in", "a.parquet")
    b = _part(tmp_path / "in", "b.parquet")
    b.write_bytes(b.read_bytes()[:-100])
    code = main(["score", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1 and f"input file {b} is not readable Parquet" in err


@pytest.mark.e2e
@pytest.mark.parametrize("scan", ["auto", "spark"])  # read by the Python workers, or by Spark
def test_a_file_with_a_valid_footer_and_garbage_pages_is_exit_3_one_line(tmp_path, scan):
    path = _part(tmp_path / "in", "a.parquet", [f"the cat sat {i}" for i in range(200)])
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    for i in range(8, len(data) - 16 - footer):
        data[i] = (data[i] * 7 + 13) % 256
    path.write_bytes(bytes(data))
    result = run_cli("--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--progress-seconds", "0",
                     "--scan", scan)
    assert result.returncode == 3, result.stderr[-3000:]
    ours = [l for l in result.stderr.splitlines() if l.startswith("bleu-spark:")]
    assert len(ours) == 1 and f"file file://{path} cannot be read" in ours[0]
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


# --- file systems this Spark lacks -----------------------------------------------------------------

@pytest.mark.e2e
def test_an_input_on_a_file_system_spark_lacks_is_exit_3_one_line(tmp_path):
    """A scheme neither pyarrow nor this Spark reads (s3a:// is pyarrow's now: tests/store)."""
    result = run_cli("--input", "oss://no-such-bucket/in.parquet", "--output", str(tmp_path / "out"),
                     "--progress-seconds", "0")
    assert result.returncode == 3, result.stderr[-3000:]
    ours = [l for l in result.stderr.splitlines() if l.startswith("bleu-spark:")]
    assert len(ours) == 1 and "this Spark has no file system for oss://" in ours[0]
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


def test_an_output_on_a_file_system_pyarrow_lacks_is_exit_8(tmp_path, capsys):
    path = _part(tmp_path / "in", "a.parquet")
    code = main(["score", "--input", str(path), "--output", "ftp://example.invalid/out"])
    err = capsys.readouterr().err
    assert code == 8 and err.count("\n") == 1 and "output ftp://example.invalid/out: no file system" in err
    # s3a is S3, as Spark spells it: a bucket it cannot reach is one line too
    code = main(["score", "--input", str(path), "--output", "s3a://no-such-bucket/out"])
    err = capsys.readouterr().err
    assert code == 8 and err.count("\n") == 1 and "cannot reach output s3a://no-such-bucket/out" in err


def test_s3a_and_s3n_are_s3_with_the_runs_spark_s3a_settings_over_the_aws_variables(monkeypatch):
    import pyarrow.fs as pafs

    from bleu_spark.store import filesystems

    monkeypatch.setenv("AWS_REGION", "us-east-2")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://elsewhere.example")
    given = filesystems.s3a_settings({
        "spark.hadoop.fs.s3a.endpoint": "http://minio.local:9000",
        "spark.hadoop.fs.s3a.path.style.access": "false", "spark.hadoop.fs.s3a.access.key": "key",
        "spark.hadoop.fs.s3a.secret.key": "secret", "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
        "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem", "spark.master": "local"})
    assert filesystems.s3_options(given) == {
        "region": "eu-west-1", "endpoint_override": "minio.local:9000", "scheme": "http",
        "access_key": "key", "secret_key": "secret", "force_virtual_addressing": True}
    assert filesystems.s3_options({}) == {"region": "us-east-2", "endpoint_override": "elsewhere.example",
                                          "scheme": "https"}
    for uri in ("s3://bucket/out", "s3a://bucket/out", "s3n://bucket/out/"):
        fs, path = filesystems.filesystem(uri, given)
        assert isinstance(fs, pafs.S3FileSystem) and path == "bucket/out"
