"""`python -m bleu_spark.archive_run FOLDER`: the small run the driver JVM's class-data archive
is made from. `spark/runtime/jvm_archive.py` starts it as a process of its own, told through
SPARK_SUBMIT_OPTS to write the archive as its JVM exits, so the runtime seam never imports the
command line that sits on top of it. A `score` of four rows as a user's run would be (the classes
it loads are those archived), then this process waits while its JVM exits and writes the
archive. The exit code is the JVM's (1 if there was none)."""
from __future__ import annotations

import os
import sys
from typing import List

import pyarrow as pa
import pyarrow.parquet as pq

from . import cli
from .spark.runtime import jvm_archive


def small_run(work: str) -> None:
    """`score` on four rows written into `work`, its output there too."""
    rows = pa.table({"system": ["A", "A", "B", "B"], "langpair": ["de-en"] * 4,
                     "candidate": ["the cat sat", "a dog", "the cat", "dogs"],
                     "references": [["the cat sat"], ["a dog ran"]] * 2})
    pq.write_table(rows, os.path.join(work, "input.parquet"))
    cli.main(["score", "--input", os.path.join(work, "input.parquet"),
              "--output", os.path.join(work, "out")])


def main(argv: List[str]) -> int:
    work, = argv
    small_run(work)
    code = jvm_archive.wait_for_jvm_exit()
    return 1 if code is None else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
