"""The plan of a scoring run, from the options and the input's columns alone: the grouping sets,
the finest grain measured, the columns checked, and what `--segments` writes."""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from pyspark.sql import types as T

from .. import metrics, scoring, segments
from ..metrics import parse_segment_scores
from ..resampling import POISSON
from ..tokenizers import AUTO
from ..errors import MissingColumnError, UsageError
from ..segments import SegmentsPlan
from ..time_windows import WINDOW_START
from . import inputs, io
from .stats import REASON, PartitionPlan

if TYPE_CHECKING:
    from .options import JobOptions

DEFAULT_GROUP_BY = ("system", "langpair")
SEGMENT_HASH = "_segment_hash"   # what a segment's bootstrap weights are drawn from


def group_columns(options: JobOptions, columns: Sequence[str]) -> Tuple[str, ...]:
    if options.group_by is not None:
        return tuple(options.group_by)
    for default in DEFAULT_GROUP_BY:
        # Column names are case-sensitive: `System` is not `system`, and leaving it out of the
        # default grouping would merge every system into one score without a word.
        near = [c for c in columns if c.lower() == default and c != default]
        if default not in columns and near:
            present = [c for c in DEFAULT_GROUP_BY if c in columns]
            suggested = ",".join([*present, *near] if default == "langpair" else [*near, *present])
            raise MissingColumnError(
                f"input has no column {default} (the default grouping) but has {near[0]}: column "
                f"names are case-sensitive; pass --group-by {suggested} (or rename the column)")
    # Windows are scored apart by default: (system, langpair, window_start).
    window = (WINDOW_START,) if options.windows else ()
    return tuple(c for c in DEFAULT_GROUP_BY if c in columns) + window


def grouping_sets(options: JobOptions, columns: Sequence[str]) -> List[scoring.GroupingSet]:
    """The grouping sets to score; each holds the partition columns, so a row is in one partition."""
    sets = options.grouping_sets if options.grouping_sets is not None else [group_columns(options, columns)]
    if options.resampling.clusters:
        scoring.check_clusters(sets)
    return scoring.distinct_sets([*s, *options.partition_by] for s in sets)


def measured_columns(options: JobOptions, columns: Sequence[str],
                     sets: Sequence[scoring.GroupingSet]) -> Tuple[str, ...]:
    """The finest grain: every grouping set's columns, and the language pair when it picks the
    tokenizer, so each statistics row has one tokenizer (coarser groups that would mix
    tokenizers are refused when they are summed)."""
    finest = [c for s in sets for c in s]
    if options.text.tokenize == AUTO and options.langpair_col in columns:
        finest.append(options.langpair_col)
    return tuple(dict.fromkeys(finest))


def plan_for(schema: T.StructType, options: JobOptions) -> PartitionPlan:
    """Checks the candidates table's columns against the options, all problems at once."""
    columns = schema.fieldNames()
    sets = grouping_sets(options, columns)
    group_cols = measured_columns(options, columns, sets)
    scoring.check_group_names(group_cols)
    if options.on_invalid == "quarantine" and REASON in columns:
        raise UsageError(f"input has a column named {REASON}, the column rejected rows get in "
                         f"DIR/rejected/ beside every input column; rename it in the input")
    per_segment_rows = segments_plan(options, columns)  # first: its column checks name the option
    auto = options.text.tokenize == AUTO and options.langpair_col in columns
    rules = [io.ColumnRule(options.candidate_col, "string", io.is_string, "--candidate-col")]
    if not options.references and (options.needs_references
                                   or set(options.references_cols) <= set(columns)):
        rules += inputs.reference_rules(options, columns)
    rules += metric_column_rules(options)
    rules += window_rules(options, columns)
    keys = dict.fromkeys([*(c for c in group_cols if not (options.windows and c == WINDOW_START)),
                          *options.join_on, *options.segment_key])
    rules += [io.ColumnRule(c, "an atomic type", io.is_atomic) for c in keys]
    if auto:
        rules.append(io.ColumnRule(options.langpair_col, "string", io.is_string))
    io.check_columns(schema, rules)
    resampling = options.resampling
    poisson = resampling.active and resampling.method == POISSON
    per_segment = (tuple(c for c in (*options.join_on, *options.segment_key) if c not in group_cols)
                   if resampling.active and not poisson else ())
    return PartitionPlan(text=options.text, group_cols=group_cols, sets=tuple(sets),
                         segments=per_segment_rows,
                         candidate_col=options.candidate_col, references_col=inputs.REFERENCES,
                         langpair_col=options.langpair_col if auto else None,
                         reason_col=inputs.ROW_REASON,
                         segment_hash_col=SEGMENT_HASH if poisson or options.segments else None,
                         replicates=resampling.replicates, trials=resampling.trials,
                         seed=resampling.seed, per_segment=tuple(dict.fromkeys(per_segment)),
                         metrics=options.measured, window=options.windows)


def window_rules(options: JobOptions, columns: Sequence[str]) -> list:
    """The time column's type; the derived group column's name free in the input."""
    if not options.windows:
        return []
    if WINDOW_START in columns:
        raise UsageError(f"input has a column named {WINDOW_START}, the group column --window "
                         f"makes; rename it in the input")
    return [io.ColumnRule(options.windows.column, "a timestamp or date (of milliseconds or "
                          "microseconds: Spark reads no nanoseconds; pyarrow writes them so with "
                          "coerce_timestamps='us')", io.is_time,
                          "--time-col")]


def metric_column_rules(options: JobOptions) -> list:
    """The columns the segment scores and checks read: numbers, and text."""
    numeric = {c for c, _ in parse_segment_scores(options.segment_scores)}
    read = dict.fromkeys(c for m in options.measured for c in m.reads if c != options.candidate_col)
    flags = {options.source_col: "--source-col", options.langpair_col: "--langpair-col"}
    return [io.ColumnRule(c, "a number", io.is_numeric, "--segment-scores") if c in numeric
            else io.ColumnRule(c, "string", io.is_string, flags.get(c, "")) for c in read]


def segments_plan(options: JobOptions, columns: Sequence[str]) -> Optional[SegmentsPlan]:
    """What `--segments` writes beside each segment's statistics: its key (the segment key, else
    its position in its file) and the columns asked for. Where: set when the output is open."""
    if not options.segments:
        return None
    key = tuple(dict.fromkeys([*options.join_on, *options.segment_key])) or segments.POSITION
    taken = [c for c in segments.POSITION if c in columns and key == segments.POSITION]
    if taken:
        raise UsageError(f"input has a column {taken[0]}, the name --segments gives a row's "
                         f"position in its file; pass --segment-key COLS (what names a segment) "
                         f"or rename the column")
    carried, missing = [], []
    for name in options.segments_columns:
        scored = name == segments.REFERENCES and (name not in columns or name in options.references_cols)
        if scored:  # the references as scored, a list whatever their shape (no second read)
            carried.append((name, inputs.REFERENCES))
        elif name in columns:
            carried.append((name, name))
        else:
            missing.append(name)
    if missing:
        raise MissingColumnError(f"--segments-columns: input has no column {', '.join(missing)}")
    reserved = [n for n, _ in carried if n in scoring.RESERVED or metrics.reserved_column(n)]
    if reserved:
        raise UsageError(f"--segments-columns: {', '.join(reserved)} has the name of a column of "
                         f"the segments table; rename it in the input")
    return SegmentsPlan(uri="", run_id="", partition_by=tuple(options.partition_by), key_cols=key,
                        carried=tuple(carried), resampling=options.resampling.label)
