"""Partial sums as they are added up and handed between merges: the ways taken for tables of
many groups give what the general ones give."""
import pickle

import numpy as np
import pyarrow as pa
import pytest

from bleu_spark import statstable
from bleu_spark.spark.scan import _compact

SCHEMA = pa.schema([("g", pa.string()), ("n_segments", pa.int64()), ("min_refs", pa.int32()),
                    ("replicate_sums", pa.list_(pa.int64()))])


@pytest.mark.parametrize("keys", [["a", "b", "c", "d"], ["a", "b", "a", None, "b", "a"]])
def test_sums_without_replicate_sums_are_those_of_the_general_way(keys):
    """Every replicate sum null (a run without resampling): the groups' rows are not listed,
    and the table added up is the one the listing gives, a row a group or several."""
    table = pa.Table.from_pylist([{"g": g, "n_segments": i, "min_refs": i % 3 + 1,
                                   "replicate_sums": None} for i, g in enumerate(keys)], SCHEMA)
    listed = pa.concat_tables([table, pa.Table.from_pylist(
        [{"g": "other", "n_segments": 1, "min_refs": 1, "replicate_sums": [1, 2]}], SCHEMA)])
    summed = statstable.add_up(table, ["g"])
    expected = statstable.add_up(listed, ["g"]).slice(0, summed.num_rows)
    assert summed.num_rows == len(set(keys))
    assert summed.to_pylist() == expected.to_pylist()
    assert summed.schema == expected.schema


def test_a_merged_table_pickles_its_own_rows_only():
    """A table of slices (a group-by's chunks) is pickled to the next merge in buffers of its
    own size, its values and chunks unchanged."""
    whole = pa.table({"g": [f"key {i}" for i in range(10_000)], "n": np.arange(10_000)})
    sliced = pa.concat_tables([whole.slice(0, 10), whole.slice(5_000, 10)])
    compact = _compact(sliced)
    assert compact.equals(sliced) and compact.schema == sliced.schema
    assert [c.num_chunks for c in compact.columns] == [c.num_chunks for c in sliced.columns]
    assert len(pickle.dumps(compact)) < len(pickle.dumps(sliced)) // 10
