"""A path that starts like a URI (`word:`) and is not a whole one is refused in one line, exit 2,
for every scheme and every path option, before anything is read or written: never a local folder
named `s3a:` that the console reports as if it were S3, never a traceback."""
import os

import pytest

from bleu_spark import cli, errors, store

BAD = ["s3a:/bucket/x", "s3:bucket/x", "s3a://", "s3a:b", "s3:///x", "S3N:/b", "gs:/b/x",
       "gcs://", "abfss:container/x", "abfs:///x", "hdfs:/x", "hdfs:x", "http:/host/x",
       "https://", "file:x", "file:/x", "file://host/x", "file://", "wasbs:/c/x", "x+y.z-1:/q"]
GOOD = ["s3a://bucket/x", "s3://bucket", "gs://b/x", "hdfs:///apps/x", "hdfs://nn:8020/x",
        "file:///tmp/x", "viewfs:///x", "./s3a:", "out/s3a:/x", "plain", "/abs/a:b"]


@pytest.mark.parametrize("path", BAD)
def test_a_path_starting_like_a_uri_that_is_not_one_is_refused(path):
    with pytest.raises(errors.UsageError, match="starts like a URI but is not one"):
        store.check_uri("--output", path)
    with pytest.raises(errors.UsageError):
        store.filesystem(path)


@pytest.mark.parametrize("path", GOOD)
def test_whole_uris_and_local_paths_pass(path):
    store.check_uri("--output", path)


@pytest.mark.parametrize("args", [
    ["score", "--input", "{bad}", "--output", "out"],
    ["score", "--input", "in.parquet", "--output", "{bad}"],
    ["score", "--input", "in.parquet", "--references", "{bad}", "--output", "out"],
    ["aggregate", "--stats", "{bad}", "--output", "out"],
    ["aggregate", "--stats", "saved", "--output", "{bad}"],
], ids=["input", "output", "references", "stats", "aggregate-output"])
@pytest.mark.parametrize("bad", ["s3a:/bucket/x", "s3:///x", "gs:b", "file:/x"])
def test_every_path_option_refuses_it_in_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys,
                                                                     args, bad):
    monkeypatch.chdir(tmp_path)
    code = cli.main([a.format(bad=bad) for a in args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("bleu-spark: error: --") and len(err.strip().splitlines()) == 1, err
    assert bad in err and os.listdir(tmp_path) == []
