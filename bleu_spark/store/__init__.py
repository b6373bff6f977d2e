"""The sink every table of a run goes through: today the folder commit; later a catalog or an
object-store manifest.

The output folder is written in a staging folder, then swapped in whole, or partition by partition.

- Whole (no `--partition-by`): everything goes into `.DIR.staging-*` beside DIR, which is swapped
  in as DIR when every file is written: a reader sees the previous result or the new one.
- Partitioned (`--partition-by run_date`): DIR stays; its tables (`stats/`, `scores/`,
  `dashboard/`, `rejected/`) are Hive-style partitioned (`scores/run_date=2026-01-03/`). A run
  stages its partitions inside DIR and swaps in exactly the partitions it produced, under a lock
  (local file systems), so runs writing other partitions are untouched and two runs writing the
  same partition leave one of them whole, never a mix.

Both commit the same way: everything staged, then a journal (`_commit.json` in the staging
folder, written whole or not at all) of every move, then the moves, each skipped once done. A
commit killed at any step is finished by `recover`, which every run (`open`) and reader
(`statstable.read`, `spark.aggregate.read_stats`) calls first: each partition ends whole, in
every table, and DIR is never left missing.

Every result holds `_bleu_spark.json` (what wrote it, and how it is partitioned): only such a
folder, or an empty one, is ever replaced.
"""
from .commit import PartitionedOutput, WholeOutput, check_output, new_run_id, open_output
from .layout import filesystem, read_marker
from .partitions import (PARTITION_TYPES, check_partition_columns, check_partition_names,
                         partition_path, partition_value, partition_values, rows_of, rows_outside)
from .recovery import recover, recover_before_reading

__all__ = ["PARTITION_TYPES", "PartitionedOutput", "WholeOutput", "check_output",
           "check_partition_columns", "check_partition_names", "filesystem", "new_run_id",
           "open_output", "partition_path", "partition_value", "partition_values", "read_marker",
           "recover", "recover_before_reading", "rows_of", "rows_outside"]
