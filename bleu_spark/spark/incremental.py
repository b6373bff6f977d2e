"""`score --incremental`: a run measures only the input files its output folder has not measured
(`store.ledger`), adds their statistics to the folder's, and scores every group from all of its
statistics, so the result equals one plain run over every file measured so far.

The tables with a row per input row (`rejected`, `segments`) and the ledger keep the earlier
runs' files as committed and add this run's; `stats`, `scores`, `dashboard`, `paired` and the
files a person reads are made again from the summed statistics (with `--partition-by`, in the
partitions that received rows alone). A run's cost is its new rows plus a pass over the
statistics table (a row per group), not the rows measured before.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Dict, List

from pyspark.sql import SparkSession

from .. import settings, statstable, store
from ..errors import InputNotFoundError, UsageError
from ..store import ledger
from .files import read_files
from .io import InputTable
from .measure import Measurement
from .options import JobOptions
from .stats import PartitionPlan


@dataclass
class Increment:
    """What an incremental run found in its output folder and input."""
    output: object                # the output folder (`store.commit._Output`)
    ledger: ledger.Ledger
    new: Dict[str, int]           # input files not measured yet -> bytes
    changed: List[str]            # files measured before whose size has changed since

    @property
    def warnings(self) -> List[str]:
        if not self.changed:
            return []
        return [f"{len(self.changed)} input files measured by an earlier run have another size "
                f"now (e.g. {self.changed[0]}): not measured again (an incremental run measures "
                f"each file once; rewrite logs as new files)"]


def definition(options: JobOptions, plan: PartitionPlan) -> dict:
    """The options that fix what a statistic of the folder means: a run with others is refused."""
    return {"metrics": [{"metric": m.name, **m.measurement()} for m in options.measured],
            "config": settings.config_record(options.choices),
            "group_columns": list(plan.group_cols), "grouping_sets": [list(s) for s in plan.sets],
            "resampling": options.resampling.label,
            "partition_by": list(options.partition_by), "segments": options.segments,
            "segments_columns": list(options.segments_columns),
            "columns": {"candidate": options.candidate_col, "references": list(options.references_cols),
                        "langpair": options.langpair_col, "source": options.source_col},
            # window_start's meaning (a key only with --window: folders made before keep theirs)
            **({"windows": {"time_col": options.windows.column, "seconds": options.windows.seconds}}
               if options.windows else {})}


def opened(sink, options: JobOptions, plan: PartitionPlan, table: InputTable) -> Increment:
    """The folder's ledger read (after its last interrupted commit was finished or undone, as
    the sink opened it), this run's options checked against it, and the input's new files."""
    output = store.folder_of(sink)
    held = ledger.read(output)
    held.check_definition(definition(options, plan), options.output)
    output.based_on = held.based_on
    new, changed = held.new_files(table.file_sizes())
    if new:
        table.restrict(new)
    return Increment(output, held, new, changed)


def unchanged(options: JobOptions, increment: Increment, started: float) -> dict:
    """run.json's like of a run with nothing new: what the console says; nothing is written."""
    return {"unchanged": True, "input": options.input,
            "incremental": {"new_files": 0, "files_measured": len(increment.ledger.measured)},
            "warnings": increment.warnings, "timings": {"total_s": time.time() - started}}


def add_earlier(increment: Increment, measurement: Measurement, options: JobOptions) -> None:
    """The run's statistics summed with the folder's committed ones (those of the partitions it
    touches, with --partition-by), per group at the run's finest grain."""
    try:
        earlier = statstable.read(options.output)
    except InputNotFoundError:  # the first run: no statistics yet
        earlier = None
    plan = measurement.plan
    both = ledger.with_earlier(measurement.stats, earlier, options.partition_by)
    summed = statstable.summed(both, [*plan.group_cols, *statstable.MEASUREMENT])
    measurement.own_stats = measurement.stats
    measurement.stats = summed.select(measurement.stats.column_names).cast(measurement.stats.schema)


def write(spark: SparkSession, sink, increment: Increment, options: JobOptions, plan: PartitionPlan,
          run_id: str, run: dict) -> None:
    """The ledger's rows of this run and its definition, the earlier runs' rows of the tables
    added to kept, and a catalog's copies of those tables made from all of their files."""
    output = increment.output
    run["incremental"] = {"new_files": len(increment.new),
                          "files_measured": len(increment.ledger.measured) + len(increment.new)}
    output.write_table(ledger.TABLE, ledger.rows(increment.new, run_id))
    output.write_file(ledger.DEFINITION, definition(options, plan))
    for table, files in increment.ledger.carried.items():
        output.carry(table, files)
    catalog = store.catalog_of(sink)
    if catalog is None:
        return
    for table in ("rejected", "segments"):
        kept = [f"{output.path}/{f}" for f in increment.ledger.carried[table]]
        files = kept + output.written_by_tasks(table)
        where = output.task_files(table)
        catalog.write_table(table, lambda w=where, f=files: read_files(
            spark, w, f, output.partition_types or None))


def check_scan(read_scan, reason) -> None:
    """An incremental run reads the input's files itself (the Python workers), file by file."""
    if read_scan is None:
        raise UsageError(f"--incremental measures the input's files through the Python workers, "
                         f"but Spark's scan reads this input ({reason})")
