"""What an incremental run (`score --incremental`) reads of its output folder before measuring:
which input files the folder's statistics already hold, what those statistics mean, and the
committed rows it adds to.

The ledger is two things committed by the same entry as the statistics they describe:

- the `input_files` table: a row per input file measured (its path, bytes, and the run that
  measured it), each run adding a file of its own rows beside the earlier runs' files;
- `incremental.json`: the options that fix what a statistic means (metrics and their
  measuring options, tokenizer, group columns, resampling draw, ...).

A run killed before its entry is written leaves nothing of itself (`commit.py`), so its new
files are new again for the next run; once the entry is written, they are in the ledger with
their statistics. Each file's rows are therefore counted once, whenever a run is killed. Of two
runs racing into one folder, the later to commit fails: each checks at its commit that no entry
came after the one it read (`_Output.based_on`), under the commit's lock on a local disk (an
object store has none: the check narrows the race there, it does not close it).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import IncompatibleStatisticsError, OutputError
from .layout import json_bytes
from .manifest import state

TABLE = "input_files"
DEFINITION = "incremental.json"
# The tables whose rows an incremental run adds to (a row per input row: the earlier runs'
# files are kept as they are); the others are made again from all the statistics.
ADDED_TO = (TABLE, "rejected", "segments")
SCHEMA = pa.schema([("path", pa.string()), ("bytes", pa.int64()), ("run_id", pa.string())])


@dataclass
class Ledger:
    """An output folder as an incremental run finds it (after any interrupted commit is
    finished or undone)."""
    measured: Dict[str, int]                 # input file -> its bytes when measured
    based_on: str                            # the last commit entry's run id ('' for none)
    definition: Optional[dict]               # incremental.json; None before the first run
    carried: Dict[str, List[str]] = field(default_factory=dict)  # ADDED_TO's committed files

    def new_files(self, listed: Mapping[str, int]) -> Tuple[Dict[str, int], List[str]]:
        """The input's files not measured yet, and those measured whose size has changed since
        (never measured twice: said in a warning)."""
        new = {f: n for f, n in listed.items() if f not in self.measured}
        changed = sorted(f for f, n in listed.items() if f in self.measured and self.measured[f] != n)
        return new, changed

    def check_definition(self, current: dict, uri: str) -> None:
        """Statistics measured otherwise cannot be added to these: refused in one line naming
        each option that differs, with the value recorded and the one given."""
        if self.definition is None:
            return
        now = json.loads(json_bytes(current))  # as the file holds it: lists, not tuples
        differ = [k for k in sorted({*now, *self.definition}) if now.get(k) != self.definition.get(k)]
        if differ:
            shown = "; ".join(f"{k}: {_text(self.definition.get(k))} there, {_text(now.get(k))} now"
                              for k in differ)
            raise IncompatibleStatisticsError(
                f"{uri} holds statistics measured with other settings ({shown}); an incremental "
                f"run adds to them only with the same ones: give the same options, or write to "
                f"another --output")


def _text(value) -> str:
    return "none" if value is None else json.dumps(value, ensure_ascii=False)


def read(output) -> Ledger:
    """The ledger of an opened output folder (`commit._Output`). A folder holding a result of a
    run without --incremental is refused: its input files are not known, so they would be
    measured again and counted twice."""
    held = state(output.fs, output.path)
    based_on = held.entries[-1]["run_id"] if held.entries else ""
    definition = _definition(output) if DEFINITION in held.files else None
    if held.entries and definition is None:
        raise OutputError(f"{output.uri} holds the result of a run without --incremental (which "
                          f"input files it measured is not recorded); write incremental runs to "
                          f"another --output")
    carried = {t: held.live(t) for t in ADDED_TO}
    measured: Dict[str, int] = {}
    for relative in carried[TABLE]:
        rows = pq.read_table(f"{output.path}/{relative}", filesystem=output.fs).to_pylist()
        measured.update((r["path"], r["bytes"]) for r in rows)
    return Ledger(measured, based_on, definition, carried)


def _definition(output) -> dict:
    with output.fs.open_input_stream(f"{output.path}/{DEFINITION}") as stream:
        return json.loads(stream.read())


def rows(files: Mapping[str, int], run_id: str) -> pa.Table:
    """This run's rows of the `input_files` table."""
    names = sorted(files)
    return pa.table([names, [files[f] for f in names], [run_id] * len(names)], schema=SCHEMA)


def with_earlier(new: pa.Table, earlier: Optional[pa.Table],
                 partition_by: Sequence[str] = ()) -> pa.Table:
    """`new` statistics rows with the committed ones (`earlier`) they add to, as one table of the
    same columns (to be summed per group by the caller). With `partition_by`, the earlier rows of
    the partitions `new` touches alone: the others stay as committed."""
    if earlier is None or earlier.num_rows == 0:
        return new
    if partition_by:
        values = lambda table: zip(*(table[c].to_pylist() for c in partition_by))
        touched = set(values(new))  # a row per group: small
        earlier = earlier.filter(pa.array([v in touched for v in values(earlier)], pa.bool_()))
    earlier = earlier.select(new.column_names).cast(new.schema)
    return pa.concat_tables([earlier, new]).combine_chunks()

