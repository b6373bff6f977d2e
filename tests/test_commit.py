"""The output folder's commit: refused overlaps and names, a commit killed at any step and
recovered, null and '' as two partitions, and failures found before anything is committed."""
import os
import random

import pyarrow as pa
import pytest

from bleu_spark import cli, output, statstable
from test_views import measured, save


def files_of(folder):
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, names in os.walk(folder) for f in names}


# --- options refused before anything is read or written --------------------------------------

@pytest.mark.parametrize("output_of", [lambda r: r, lambda r: r + "/stats", lambda r: r + "/sub",
                                       lambda r: os.path.dirname(r), "link"])
def test_aggregate_refuses_an_output_that_is_holds_or_lies_in_its_statistics(tmp_path, capsys, output_of):
    saved = save(tmp_path / "res", measured(random.Random(3), 5, system="A", langpair="en-de")[0])
    before = files_of(tmp_path)
    if output_of == "link":
        os.symlink(saved, tmp_path / "alias")
        target = str(tmp_path / "alias")
    else:
        target = output_of(saved)
    code = cli.main(["aggregate", "--stats", saved, "--output", target,
                     "--where", "langpair = 'en-de'"])
    err = capsys.readouterr().err
    assert code == 8 and err.startswith("bleu-spark: error: --output ") and "overlap" in err
    assert len(err.strip().splitlines()) == 1
    assert {k: v for k, v in files_of(tmp_path).items()} == before


@pytest.mark.parametrize("name", ["day=of", "a/b", "a\\b", "x%", ".x", "_x", "a\tb"])
def test_partition_columns_that_cannot_name_a_folder_are_refused(tmp_path, capsys, name):
    code = cli.main(["score", "--input", str(tmp_path / "in.parquet"), "--output",
                     str(tmp_path / "out"), "--partition-by", name])
    err = capsys.readouterr().err
    assert code == 2 and "cannot name a Hive partition folder" in err
    assert len(err.strip().splitlines()) == 1 and os.listdir(tmp_path) == []
