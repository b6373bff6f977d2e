"""Assembling what the partition function scores, from the three shapes references come in.

- inline: an array<string> column of the candidates table (`--references-col references`);
- wide: several string columns of the candidates table (`--references-col ref_a,ref_b`);
- joined: a separate table (`--references PATH --join-on testset,langpair,seg_id`), either one
  row per segment with an array column, or one row per reference (`ref_id`, `reference`),
  gathered in ref_id order.

Checks that need more than one row (no matching reference row, a key matching several rows,
duplicate segments) are made here in Spark SQL and travel as a reason column; the partition
function adds the one-row checks and counts every rejected row, so nothing is dropped unsaid.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Optional, Sequence, Tuple

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..errors import UsageError
from ..rows import AMBIGUOUS_REFERENCE, DUPLICATE_SEGMENT, NO_REFERENCE_ROW
from ..segments import POSITION
from . import io, runtime
from .names import column, columns

REFERENCES = "_references"   # the normalized array<string> the partition function reads
ROW_REASON = "_row_reason"   # reason found by the checks above, null when the row is fine
REF_ID, REFERENCE = "ref_id", "reference"
_MATCHED, _REF_ROWS = "_matched", "_ref_rows"
_WINDOW_KEY = "_window_key"  # a row's window start, for the duplicate check alone


COLOCATE = ("auto", "always", "never")
ROWS_PER_TASK = 10_000      # fewer rows a task: overheads dominate
TASKS_PER_CORE = 4          # enough that cores stay busy to the end and progress moves
SPLIT_BYTES = "spark.sql.files.maxPartitionBytes"   # the most bytes of a file one scan task reads
SPARK_SPLIT_BYTES = 128 * 2**20                     # its default


@dataclass(frozen=True)
class ScoringInput:
    # (frame, whole), made when first used: frame has the group cols, candidate, REFERENCES,
    # [langpair], ROW_REASON; whole has every input column as read, plus REFERENCES and
    # ROW_REASON, what rejected rows are written from (read again only when rows were
    # rejected; the scoring pass moves only what it needs).
    frames: Callable[[], Tuple[DataFrame, Optional[DataFrame]]]
    segment_key: Tuple[str, ...]            # identifies a segment; () when unknown
    reference_keys: Optional[DataFrame]     # one row per segment of the reference set
    unmatched_references: Optional[DataFrame]  # reference rows no candidate matched
    layout: dict = None                     # how rows were brought together, for run.json
    scan: Optional[object] = None           # an ArrowScan when the Python workers read the rows

    @cached_property
    def _frames(self) -> Tuple[DataFrame, Optional[DataFrame]]:
        return self.frames()

    @property
    def frame(self) -> DataFrame:
        return self._frames[0]

    @property
    def whole(self) -> Optional[DataFrame]:
        return self._frames[1]


def scoring_tasks(rows: int, parallelism: int) -> int:
    """Tasks of the scoring stage: a few per core, more for big inputs (at most a few hundred
    thousand rows a task), never a task per few rows."""
    wanted = max(TASKS_PER_CORE * parallelism, -(-rows // 200_000))
    return max(1, min(wanted, -(-rows // ROWS_PER_TASK)))


def user_split_bytes(spark: SparkSession) -> Optional[int]:
    """`spark.sql.files.maxPartitionBytes` when the user or platform set it, in bytes."""
    value = spark.conf.get(SPLIT_BYTES, None)
    if value is None:
        return None
    return max(1, runtime.byte_size(spark, value))


@contextmanager
def splits_sized(spark: SparkSession, rows: int, input_bytes: Optional[int]):
    """Within it, Parquet scans split the input into `scoring_tasks` tasks, so the scoring stage
    keeps every core busy to the end and its progress moves even when rows are scored where they
    lie. Spark's default makes one split per core (two tasks on two cores: one slow task holds
    the stage, and progress reads 0% until it ends). A split size the user set is kept."""
    if user_split_bytes(spark) is not None or not input_bytes:
        yield
        return
    tasks = scoring_tasks(rows, runtime.parallelism(spark))
    spark.conf.set(SPLIT_BYTES, str(min(SPARK_SPLIT_BYTES, -(-input_bytes // tasks))))
    try:
        yield
    finally:
        spark.conf.unset(SPLIT_BYTES)


def reference_rules(options, columns) -> list:
    """Column rules for the candidates table's own references (inline or wide)."""
    names = options.references_cols
    if len(names) == 1:  # a list of references, or the one reference of the row
        return [io.ColumnRule(names[0], "array<string> or string", io.is_string_or_string_array,
                              "--references-col")]
    return [io.ColumnRule(name, "string", io.is_string) for name in names]


def references_table_rules(options, schema) -> list:
    keys = [io.ColumnRule(k, "an atomic type", io.is_atomic) for k in options.join_on]
    columns = schema.fieldNames()
    if options.references_cols[0] in columns or REF_ID not in columns:
        return keys + [io.ColumnRule(options.references_cols[0], "array<string>", io.is_string_array)]
    return keys + [io.ColumnRule(REF_ID, "an atomic type", io.is_atomic),
                   io.ColumnRule(REFERENCE, "string", io.is_string)]


def _one_row_per_segment(refs: DataFrame, options) -> DataFrame:
    """The references table as (join keys, REFERENCES, _ref_rows)."""
    keys = list(options.join_on)
    if options.references_cols[0] in refs.columns:
        return refs.groupBy(*columns(keys)).agg(F.first(column(options.references_cols[0])).alias(REFERENCES),
                                       F.count(F.lit(1)).alias(_REF_ROWS))
    ordered = F.array_sort(F.collect_list(F.struct(F.col(REF_ID).alias("i"),
                                                   F.col(REFERENCE).alias("r"))))
    # Several rows per segment are the point of this form: never ambiguous.
    return refs.groupBy(*columns(keys)).agg(F.transform(ordered, lambda e: e["r"]).alias(REFERENCES),
                                   F.lit(1).alias(_REF_ROWS))


def _duplicates_flagged(frame: DataFrame, group_cols, segment_key, windows=None) -> DataFrame:
    """Every copy of a (group, segment key) seen twice is rejected: no copy is more right.
    `windows`: the run's time windows, whose time column stands in `group_cols` for the group
    column `window_start`: copies are those of one window (as the partition function groups
    them), not of one instant."""
    if not segment_key:
        return frame
    keys = list(dict.fromkeys([*group_cols, *segment_key]))
    if windows is not None:
        keys = [_WINDOW_KEY if c == windows.column else c for c in keys]
        frame = frame.withColumn(_WINDOW_KEY, _window_start(frame, windows))
    window = Window.partitionBy(*columns(keys))
    duplicate = F.count(F.lit(1)).over(window) > 1
    if windows is not None:  # rows of no window are rejected as null_time, not as copies
        duplicate = duplicate & F.col(_WINDOW_KEY).isNotNull()
    flagged = frame.withColumn(ROW_REASON, F.coalesce(F.col(ROW_REASON),
                                                      F.when(duplicate, F.lit(DUPLICATE_SEGMENT))))
    return flagged.drop(_WINDOW_KEY) if windows is not None else flagged


def _window_start(frame: DataFrame, windows):
    """A row's window start in microseconds since the epoch, as the partition function floors it
    (a naive time and a date's midnight taken as UTC), null for a null time: a key only. Not
    Spark's window(), which drops the rows of null times."""
    time, kind = column(windows.column), frame.schema[windows.column].dataType
    if isinstance(kind, T.TimestampType):
        micros = F.unix_micros(time)
    else:  # counted from the epoch's wall time: no session zone involved
        naive = time.cast("timestamp_ntz") if isinstance(kind, T.DateType) else time
        micros = F.timestamp_diff("MICROSECOND", F.lit("1970-01-01 00:00:00").cast("timestamp_ntz"), naive)
    return micros - F.pmod(micros, F.lit(windows.seconds * 10 ** 6))


def scoring_input(spark: SparkSession, table: io.InputTable, options, group_cols, langpair_col,
                  rows: int, scan=None, carried: Sequence[str] = (),
                  position: bool = False) -> ScoringInput:
    """What the partition function scores. `scan`: an ArrowScan of the input, for rows scored
    where they lie (Spark reads them only to write the rejected ones). `carried`: more input
    columns it reads; `position`: each row's file and index in it (`segments.POSITION`)."""
    keep = list(dict.fromkeys([*group_cols, options.candidate_col,
                               *([langpair_col] if langpair_col else []), *carried]))
    if options.references:
        return _joined(spark, table.frame, options, group_cols, keep)
    segment_key = tuple(options.segment_key)

    def frames():
        df, names = table.frame, options.references_cols
        if not options.needs_references and not set(names) <= set(df.columns):
            references = F.lit(None).cast("array<string>")  # none read: only row columns are
        elif len(names) == 1 and io.is_string_array(df.schema[names[0]].dataType):
            references = column(names[0])
        else:
            references = F.array(*columns(names))
        added = [references.alias(REFERENCES), F.lit(None).cast("string").alias(ROW_REASON)]
        where = [F.col(f"_metadata.{name}").alias(alias)
                 for name, alias in zip(("file_path", "row_index"), POSITION)] if position else []
        frame = df.select(*columns([*keep, *(c for c in segment_key if c not in keep)]), *added, *where)
        return (_duplicates_flagged(frame, group_cols, segment_key, options.windows),
                _duplicates_flagged(df.select("*", *added), group_cols, segment_key, options.windows))

    if scan is not None:
        layout = {"colocate_references": options.colocate_references, "colocated": False,
                  "scoring_tasks": len(scan.tasks)}
        return ScoringInput(frames, segment_key, None, None, layout, scan)
    frame, whole = frames()
    reference_keys = table.frame.select(*columns(segment_key)).distinct() if segment_key else None
    frame, layout = _references_together(spark, frame, options.colocate_references, rows)
    return ScoringInput(lambda: (frame, whole), segment_key, reference_keys, None, layout)


def few_row_groups(groups: Optional[int], rows: int, parallelism: int) -> list:
    """A warning when rows Spark's scan reads where they lie sit in fewer row groups than there
    are cores (a pyarrow or pandas file of up to a million rows is one row group): the other
    cores idle."""
    wanted = scoring_tasks(rows, parallelism)
    if groups is None or groups >= min(parallelism, wanted // TASKS_PER_CORE):
        return []  # small inputs (under a few tasks a core) are not worth a word
    return [f"the input's {rows:,} rows are in {groups} Parquet row group(s), and one task reads "
            f"a row group: only {groups} task(s) can score them; write it with row groups of at "
            f"most {-(-rows // wanted):,} rows (pyarrow: row_group_size) to use every core"]


def _references_together(spark, frame: DataFrame, mode: str, rows: int):
    """Under `always`, rows that share references are brought together in one partition first,
    so each reference set is tokenized once for every system that translated the segment. That
    is a shuffle of all the text, and it does not pay: measured on real and generated corpora of
    13 and 10 systems a segment (13a and ja-mecab), moving the rows cost the JVM more than
    tokenizing the references again costs the Python workers (docs/benchmarks.md). So `auto`
    (and `never`) score rows where they lie; each batch still tokenizes its distinct references
    once."""
    layout = {"colocate_references": mode, "colocated": mode == "always"}
    if not layout["colocated"]:
        layout["scoring_tasks"] = runtime.partitions(frame)
        return frame, layout
    layout["scoring_tasks"] = scoring_tasks(rows, runtime.parallelism(spark))
    key = F.xxhash64(REFERENCES)
    return frame.repartition(layout["scoring_tasks"], key).sortWithinPartitions(key), layout


def _joined(spark, df, options, group_cols, keep) -> ScoringInput:
    keys = list(options.join_on)
    refs = io.read_parquet(spark, options.references, what="references")
    io.check_columns(refs.schema, references_table_rules(options, refs.schema), table="references")
    segments = _one_row_per_segment(refs, options).withColumn(_MATCHED, F.lit(True))
    reason = (F.when(F.col(_MATCHED).isNull(), F.lit(NO_REFERENCE_ROW))
              .when(F.col(_REF_ROWS) > 1, F.lit(AMBIGUOUS_REFERENCE)))

    def joined(picked):
        together = df.select(*columns(picked)).join(segments, on=keys, how="left")
        # the input's columns in its order (a join puts its keys first), then what is added
        frame = together.select(*columns(picked), REFERENCES, reason.alias(ROW_REASON))
        return _duplicates_flagged(frame, group_cols, tuple(keys), options.windows)

    frame = joined(list(dict.fromkeys([*keep, *keys])))
    unmatched = segments.join(df.select(*columns(keys)).distinct(), on=keys, how="left_anti")
    # The join brings a segment's rows together already.
    layout = {"colocate_references": "join", "colocated": True}
    whole = joined(df.columns)
    return ScoringInput(lambda: (frame, whole), tuple(keys), segments.select(*columns(keys)), unmatched, layout)


def check_reference_options(options) -> None:
    if options.colocate_references not in COLOCATE:
        raise UsageError(f"unknown --colocate-references {options.colocate_references!r}; "
                         f"choose one of: {', '.join(COLOCATE)}")
    if options.references and not options.join_on:
        raise UsageError("--references needs --join-on COLS (the columns both tables share, "
                         "e.g. testset,langpair,seg_id)")
    if options.join_on and not options.references:
        raise UsageError("--join-on is only used with --references PATH")
    if options.references and len(options.references_cols) > 1:
        raise UsageError("several --references-col columns are for references inside the "
                         "candidates table, not with --references")
