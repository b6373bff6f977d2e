"""An object-store input's listing and partition typing, without a store: the glob and hidden
file rules on a local pyarrow file system, and every partition type `folder_type` decides
equal to the one Spark infers from the same folders."""
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from bleu_spark.store import remote


def test_a_glob_matches_files_and_folders_read_whole_without_what_spark_hides(tmp_path):
    for name in ("logs/a/part-0.parquet", "logs/a/_SUCCESS", "logs/b/part-0.parquet",
                 "logs/b/.part-0.parquet.crc", "logs/_temporary/part-9.parquet", "logs/c.parquet"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    fs, root = pafs.LocalFileSystem(), str(tmp_path)
    found = lambda pattern: [i.path[len(root) + 1:] for i in remote._matches(fs, f"{root}/{pattern}")]
    assert found("logs/*") == ["logs/a/part-0.parquet", "logs/b/part-0.parquet", "logs/c.parquet"]
    assert found("logs/[ab]/part-?.parquet") == ["logs/a/part-0.parquet", "logs/b/part-0.parquet"]
    assert found("logs") == ["logs/a/part-0.parquet", "logs/b/part-0.parquet", "logs/c.parquet"]
    assert found("logs/nothing*") == []


# Typed here as Spark types them; and values left to Spark (it may read them otherwise).
DECIDED = [["de-en", "en-de"], ["3", "12"], ["-2147483648", "7"], ["2147483648"],
           ["2026-01-07", "2026-01-08"], ["wmt22", "wmt23"], ["web site", "a b"]]
LEFT_TO_SPARK = [["01", "2"], ["1.5"], ["2026-1-7"], ["NaN"], ["100%"], ["2026-01-07 12:00"]]


def test_values_spark_may_read_otherwise_are_left_to_it():
    assert [remote.folder_type(v) for v in LEFT_TO_SPARK] == [None] * len(LEFT_TO_SPARK)


@pytest.mark.spark
@pytest.mark.parametrize("values", DECIDED)
def test_every_partition_type_decided_is_the_one_spark_infers(spark, tmp_path, values):
    from bleu_spark.spark.io import _spark_type

    decided = remote.folder_type(values)
    for i, value in enumerate(values):
        folder = tmp_path / f"key={value}"
        folder.mkdir()
        pq.write_table(pa.table({"x": [i]}), folder / "part-0.parquet")
    assert decided is not None
    assert _spark_type(decided) == spark.read.parquet(str(tmp_path)).schema["key"].dataType, values
