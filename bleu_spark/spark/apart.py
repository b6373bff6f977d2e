"""What a run shows and writes when its groups are scored on the executors (`distributed`):
the tables as frames the sink writes from the tasks, and, for people, bounded parts of them:
the first score rows in the console, `scores.json` up to JSON_ROWS rows, a report of the first
REPORT_ROWS rows of its grouping that says what it leaves out and where the rest is."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import metrics, scoring, statstable
from ..languages import target_warnings, tokenizer_warnings, tokenizers_by_pair
from ..resampling import PAIRED_AR, PAIRED_BS
from ..scoring.stream import CONSOLE_ROWS, JSON_ROWS, PAIRED_SHOWN, REPORT_ROWS, WARNINGS_SHOWN
from ..scoring.tables import PAIRED_TYPES
from ..scoring.write import report_set
from . import distributed
from .measure import Measurement
from .names import columns
from .options import JobOptions



@dataclass
class ShownApart:
    """What a person is shown of a result scored on the executors, and its frames."""
    scores: List[dict]                  # the first CONSOLE_ROWS score rows, in order
    paired: Optional[List[dict]]        # the first PAIRED_SHOWN paired tests
    tokenizers: Optional[dict]
    groups: int                         # score rows of every grouping set
    scored: DataFrame                   # every score row (`distributed.score_fields`)
    paired_frame: Optional[DataFrame]   # every paired test
    signed: List[dict]                  # a score row of each distinct signature
    paired_count: int = 0
    persisted: tuple = ()               # the frames held on the executors until written
    warnings: List[str] = field(default_factory=list)  # of the paired tests' comparison groups


def show(options: JobOptions, measurement: Measurement) -> ShownApart:
    """The score rows and paired tests as frames, checked for a user error of any task, counted,
    their first rows read; the warnings the tokenizers and paired tests raise added."""
    stats, sets = measurement.stats_frame, measurement.sets
    by_pair = _by_langpair(stats, options, measurement)
    tokenizers = tokenizers_by_pair(by_pair, options.langpair_col, options.text)
    measurement.warnings += tokenizer_warnings(by_pair, options.langpair_col, options.text,
                                               options.measured, tokenizers)
    measurement.warnings += target_warnings(by_pair, options.langpair_col, options.measured)
    resampling = options.resampling
    shown = scored_apart(stats, sets, options.choices, resampling, options.partition_by,
                         options.measured, measurement.tasks,
                         resampling.paired_bs or resampling.paired_ar)
    measurement.warnings += shown.warnings
    shown.tokenizers = tokenizers
    return shown


def scored_apart(stats: DataFrame, sets, config, resampling, implicit, measured, tasks: int,
                 paired: bool) -> ShownApart:
    """Every group of `stats` scored on the executors (`distributed`), and the paired tests
    when asked for: a task's user error raised, the rows counted, the first ones read, the
    baseline checked; `warnings`: the comparison groups without the baseline (a few named)."""
    scored = distributed.scored_frame(stats, sets, config, resampling, implicit, measured,
                                      tasks).persist()
    distributed.raise_first_error(scored)
    groups = scored.count()
    shown = distributed.shown_rows(scored, sets, CONSOLE_ROWS)
    signed = distributed.signature_rows(scored)
    if not paired:
        return ShownApart(shown, None, None, groups, scored, None, signed, persisted=(scored,))
    frame = distributed.paired_frame(stats, sets, config, resampling, tasks).persist()
    distributed.raise_first_error(frame)
    resampling.check_baseline(scored_systems(stats))
    warned = frame.filter(F.col(distributed.WARNING).isNotNull())
    named = [r[distributed.WARNING] for r in warned.limit(WARNINGS_SHOWN).collect()]
    more = warned.count() - len(named)
    warnings = named + ([f"and {more:,} more comparison groups without the baseline"]
                        if more > 0 else [])
    tests = frame.filter(F.col(distributed.WARNING).isNull()).drop(distributed.WARNING,
                                                                   distributed.ERROR)
    first = [r.asDict() for r in tests.limit(PAIRED_SHOWN).collect()]
    return ShownApart(shown, first, None, groups, scored, tests, signed, tests.count(),
                      persisted=(scored, frame), warnings=warnings)


def _by_langpair(stats: DataFrame, options: JobOptions, measurement: Measurement) -> pa.Table:
    """The statistics summed per language pair and metric (a few rows): what the tokenizer
    choices and warnings read."""
    column = options.langpair_col
    counted = [m.reference_tokens for m in options.measured if m.uses_tokenizer and m.reference_tokens]
    keys = [c for c in (column, "metric") if c in stats.columns]
    sums = [F.sum(c).alias(c) for c in dict.fromkeys(["n_segments", *counted])]
    return stats.groupBy(*columns(keys)).agg(*sums).toArrow()


def scored_systems(stats: DataFrame) -> set:
    """The systems of groups with scored segments: those a baseline may name."""
    rows = stats.filter(F.col("n_segments") > 0).select(F.col("system")).distinct().collect()
    return {r[0] for r in rows}


def release(shown: ShownApart, measurement: Measurement) -> None:
    """The frames a run persisted on the executors let go once it is written: a session that
    runs many jobs (a notebook, the Python API) does not keep every run's statistics."""
    for frame in (*shown.persisted, measurement.stats_frame):
        frame.unpersist()


def tables(shown: ShownApart, measurement: Measurement, options: JobOptions, run: dict):
    """The result's tables as frames, in the order written: (name, frame)."""
    return frames(shown, measurement.stats_frame, measurement.sets, run)


def frames(shown: ShownApart, stats: DataFrame, sets, run: dict):
    """The statistics, scores, dashboard (and paired) tables as frames: (name, frame)."""
    cols = list(dict.fromkeys(c for s in sets for c in s))
    trials = statstable.TRIAL_SUMS
    written = [("stats", stats.withColumn(trials, F.lit(None).cast(stats.schema[trials].dataType))),
               ("scores", distributed.scores_table(shown.scored, cols)),
               ("dashboard", distributed.dashboard_table(shown.scored, cols, run["run_id"],
                                                         run["run_time"]))]
    if shown.paired_frame is not None:
        compared = [c for c in shown.paired_frame.columns
                    if c not in PAIRED_TYPES and c != "method"]
        written.append(("paired", shown.paired_frame.select(
            *columns([*compared, *PAIRED_TYPES, "method"]))))
    return written


def files(shown: ShownApart, measurement: Measurement, options: JobOptions, run: dict,
          drilldown: Optional[dict]):
    """The result's top-level files, bounded: (name, value); what is left out said in run."""
    written = json_files(shown, measurement.sets, run)
    if options.report:
        written.append(("report.html", report(shown, measurement.sets, run, options.output,
                                              options.partition_by, drilldown)))
    return written


def json_files(shown: ShownApart, sets, run: dict):
    """`scores.json` and `paired.json` up to JSON_ROWS rows each: (name, value); those left
    out, and why, in run's `left_out`."""
    written = []
    if shown.groups <= JSON_ROWS:
        written.append(("scores.json", distributed.json_lines(shown.scored, sets)))
    else:
        run["left_out"] = {"scores.json": f"{shown.groups:,} score rows, more than {JSON_ROWS:,}: "
                                          f"every row is in the scores table"}
    if shown.paired_frame is not None:
        if shown.paired_count <= JSON_ROWS:
            written.append(("paired.json", in_driver_order(
                [r.asDict() for r in shown.paired_frame.collect()], shown.paired_frame.columns)))
        else:
            run.setdefault("left_out", {})["paired.json"] = (
                f"{shown.paired_count:,} paired tests: every one is in the paired table")
    return written


def in_driver_order(tests: List[dict], names: List[str]) -> List[dict]:
    """Paired tests in the order `scoring.paired_rows` makes them: by comparison group (as its
    text), metric, system (as text), test."""
    others = [c for c in names if c not in PAIRED_TYPES and c not in ("method", "metric")]
    tested = (PAIRED_BS, PAIRED_AR)
    return sorted(tests, key=lambda t: (str(tuple(t[c] for c in others)),
                                        metrics.order_of(t["metric"]), str(t["system"]),
                                        tested.index(t["test"]) if t["test"] in tested else 2))


def report(shown: ShownApart, sets, run: dict, output: Optional[str], partition_by=(),
           drilldown: Optional[dict] = None) -> str:
    """The report of the report set's first REPORT_ROWS score rows, saying what it leaves out
    (`scoring.first_rows_report`)."""
    chosen = report_set(sets, partition_by)
    index = next(i for i, s in enumerate(sets)
                 if tuple(c for c in s if c not in partition_by) == chosen)
    mine = shown.scored.filter(F.col(distributed.SET) == index)
    rows = distributed.shown_rows(mine, [sets[index]], REPORT_ROWS)
    return scoring.first_rows_report(rows, mine.count(), chosen, run, shown.paired, drilldown,
                                     output, partition_by)


def bounded_report(rows: List[dict], total: int, chosen, options: JobOptions, run: dict,
                   paired: Optional[List[dict]], drilldown: Optional[dict]) -> str:
    """The report of the first rows of its grouping (`chosen`) (`scoring.first_rows_report`)."""
    return scoring.first_rows_report(rows, total, chosen, run, paired, drilldown,
                                     options.output, options.partition_by)
