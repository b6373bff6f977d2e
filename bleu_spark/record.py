"""The fields of run.json that `score` and `aggregate` both write, and write the same way: which
run, when and of which command; its grouping sets; the versions its figures depend on. Each
command places them among its own (`bleu_spark.spark.record`, `aggregate.run_record`)."""
from __future__ import annotations

import platform
import time
from typing import Sequence

import numpy as np
import pyarrow as pa

from .version import __version__
from .metrics.base import sacrebleu_version
from .scoring import GroupingSet, label

# The order run.json lists versions in: the core's, and those of the engine that measured.
VERSIONS = ("bleu_spark", "sacrebleu", "pyspark", "pyarrow", "numpy", "numba", "python", "java")


def started(run_id: str, command: str) -> dict:
    """The fields run.json opens with: the run's id, its time (UTC) and its command."""
    return {"run_id": run_id, "run_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": command}


def grouping(group_by: Sequence[str], sets: Sequence[GroupingSet],
             partition_by: Sequence[str] = ()) -> dict:
    """The columns grouped by, each grouping set's name (without the partition columns, which
    every set of a partitioned run holds), and the partition columns."""
    return {"group_by": list(group_by), "grouping_sets": [label(s, partition_by) for s in sets],
            "partition_by": list(partition_by)}


def versions(**engine: str) -> dict:
    """The versions the figures depend on: the core's, with `engine`'s (on Spark: pyspark,
    numba, java)."""
    found = {"bleu_spark": __version__, "sacrebleu": sacrebleu_version(),
             "pyarrow": pa.__version__, "numpy": np.__version__,
             "python": platform.python_version(), **engine}
    return {name: found[name] for name in dict.fromkeys([*VERSIONS, *found]) if name in found}
