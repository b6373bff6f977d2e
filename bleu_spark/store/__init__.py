"""The one way out and back in. Every table and file of a run goes through one sink (`sink.py`:
open, write a table or a file, commit, abort), built from the options in one place
(`open_sink`): the output folder, Spark's catalog (`catalog.py`, the only module here that
imports pyspark, imported only for a run that names a catalog), or both through a fan-out.
Every reader of an output folder finds its files through `locate` (`reading.py`).

The folder: on a local disk or an object store (S3: `s3://`, `s3a://`, `s3n://`), committed
without renaming folders.

- A run writes each data file once, in place, under a name of its own:
  `DIR/<table>/part-<run>-<n>.parquet`, or inside the Hive partition folder with
  `--partition-by` (`DIR/scores/run_date=2026-01-03/part-<run>-0.parquet`); the tasks write the
  segments and rejected rows the same way (`part-<run>-t<task>.parquet`). Its top-level files
  (`scores.json`, `run.json`, `report.html`, ...) are staged in `DIR/_commits/f-<run>/`. Before
  any of that, its pending record `DIR/_commits/p-<run>.json` says who writes (host, process).
- One small object written last commits the run: `DIR/_commits/c-<stamp>-<run>.json`, the
  entry naming the partitions it replaces and, per table, the files that hold them now, and its
  top-level files (`manifest.py` says how entries are ordered when two runs race). A whole
  output's entry replaces everything; a partitioned one, exactly the partitions it wrote.
- Readers (`statstable.read`, `spark.aggregate.read_stats`, the partitioned report) find
  through `locate` the files the entries name (`live_files`), never a folder listing, and
  change nothing: a read-only folder or prefix is read as well as any.
- Then the folder is cleaned up to the log (`recovery.finish`): the top-level files copied in,
  files no entry names any more (superseded, or of runs that died uncommitted) removed, never
  files of a run still live. Every run writing DIR does it first (`recover`), so a commit
  killed at any step is finished (entry written) or undone (not written): each partition of
  every table whole, old or new; a reader before then reads the same files through the log.
  Once a run has ended, the folder's Parquet files are exactly the committed ones: a plain
  reader (`read_parquet('DIR/dashboard/**/*.parquet')`) sees each row once.

On a local disk the commit and the cleanup hold a lock (`DIR/.lock`); on object stores there is
none and the protocol does not need one. A folder of another format (a marker of another
`format_version`: a development-era one committed by folder moves) is neither read nor written:
readers and writers refuse it in one line.

Every result holds `_bleu_spark.json` (what wrote it, and how it is partitioned): only such a
folder, or an empty one, is ever written into or cleaned.
"""
from .commit import PartitionedOutput, WholeOutput, check_output, new_run_id, open_output
from .filesystems import check_uri, configure, filesystem, is_s3, settings
from .layout import read_marker
from .manifest import live_files
from .partitions import (PARTITION_TYPES, check_partition_columns, check_partition_names,
                         files_dataset, partition_path, partition_value, partition_values,
                         rows_of, rows_outside)
from .reading import Located, locate, partition_columns
from .recovery import recover
from .sink import FanOut, Sink, catalog_of, folder_of, open_sink
from .tasks import TableFiles, TaskWriter

__all__ = ["check_output", "check_partition_columns", "check_partition_names", "check_uri",
           "configure", "FanOut", "files_dataset", "filesystem", "is_s3", "live_files", "locate",
           "Located", "new_run_id", "open_output", "open_sink", "partition_columns",
           "partition_path", "PARTITION_TYPES", "partition_value", "partition_values",
           "PartitionedOutput", "read_marker", "recover", "rows_of", "rows_outside", "settings",
           "Sink", "TableFiles", "TaskWriter", "WholeOutput"]
