"""What a run shows and writes when its groups are scored on the executors (`distributed`):
the tables as frames the sink writes from the tasks, and, for people, bounded parts of them:
the first score rows in the console, `scores.json` up to JSON_ROWS rows, a report of the first
REPORT_ROWS rows of its grouping that says what it leaves out and where the rest is."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import scoring, statstable
from ..languages import target_warnings, tokenizer_warnings, tokenizers_by_pair
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


def show(options: JobOptions, measurement: Measurement) -> ShownApart:
    """The score rows and paired tests as frames, checked for a user error of any task, counted,
    their first rows read; the warnings the tokenizers and paired tests raise added."""
    stats, sets = measurement.stats_frame, measurement.sets
    by_pair = _by_langpair(stats, options, measurement)
    tokenizers = tokenizers_by_pair(by_pair, options.langpair_col, options.text)
    measurement.warnings += tokenizer_warnings(by_pair, options.langpair_col, options.text,
                                               options.measured, tokenizers)
    measurement.warnings += target_warnings(by_pair, options.langpair_col, options.measured)
    scored = distributed.scored_frame(stats, sets, options.choices, options.resampling,
                                      options.partition_by, options.measured,
                                      measurement.tasks).persist()
    distributed.raise_first_error(scored)
    groups = scored.count()
    shown = distributed.shown_rows(scored, sets, CONSOLE_ROWS)
    signed = distributed.signature_rows(scored)
    resampling = options.resampling
    if not (resampling.paired_bs or resampling.paired_ar):
        return ShownApart(shown, None, tokenizers, groups, scored, None, signed, persisted=(scored,))
    paired = distributed.paired_frame(stats, sets, options.choices, resampling,
                                      measurement.tasks).persist()
    distributed.raise_first_error(paired)
    resampling.check_baseline(_scored_systems(stats))
    warned = paired.filter(F.col(distributed.WARNING).isNotNull())
    named = [r[distributed.WARNING] for r in warned.limit(WARNINGS_SHOWN).collect()]
    more = warned.count() - len(named)
    measurement.warnings += named + ([f"and {more:,} more comparison groups without the "
                                      f"baseline"] if more > 0 else [])
    tests = paired.filter(F.col(distributed.WARNING).isNull()).drop(distributed.WARNING,
                                                                     distributed.ERROR)
    first = [r.asDict() for r in tests.limit(PAIRED_SHOWN).collect()]
    return ShownApart(shown, first, tokenizers, groups, scored, tests, signed, tests.count(),
                      persisted=(scored, paired))


def _by_langpair(stats: DataFrame, options: JobOptions, measurement: Measurement) -> pa.Table:
    """The statistics summed per language pair and metric (a few rows): what the tokenizer
    choices and warnings read."""
    column = options.langpair_col
    counted = [m.reference_tokens for m in options.measured if m.uses_tokenizer and m.reference_tokens]
    keys = [c for c in (column, "metric") if c in stats.columns]
    sums = [F.sum(c).alias(c) for c in dict.fromkeys(["n_segments", *counted])]
    return stats.groupBy(*columns(keys)).agg(*sums).toArrow()


def _scored_systems(stats: DataFrame) -> set:
    rows = stats.filter(F.col("n_segments") > 0).select(F.col("system")).distinct().collect()
    return {r[0] for r in rows}


def release(shown: ShownApart, measurement: Measurement) -> None:
    """The frames a run persisted on the executors let go once it is written: a session that
    runs many jobs (a notebook, the Python API) does not keep every run's statistics."""
    for frame in (*shown.persisted, measurement.stats_frame):
        frame.unpersist()


def tables(shown: ShownApart, measurement: Measurement, options: JobOptions, run: dict):
    """The result's tables as frames, in the order written: (name, frame)."""
    cols = list(dict.fromkeys(c for s in measurement.sets for c in s))
    trials = statstable.TRIAL_SUMS
    stats = measurement.stats_frame
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
    written = []
    if shown.groups <= JSON_ROWS:
        written.append(("scores.json", distributed.json_lines(shown.scored, measurement.sets)))
    else:
        run["left_out"] = {"scores.json": f"{shown.groups:,} score rows, more than {JSON_ROWS:,}: "
                                          f"every row is in the scores table"}
    if shown.paired_frame is not None:
        if shown.paired_count <= JSON_ROWS:
            written.append(("paired.json", [r.asDict() for r in shown.paired_frame.collect()]))
        else:
            run.setdefault("left_out", {})["paired.json"] = (
                f"{shown.paired_count:,} paired tests: every one is in the paired table")
    if options.report:
        written.append(("report.html", _report(shown, measurement, options, run, drilldown)))
    return written


def _report(shown: ShownApart, measurement: Measurement, options: JobOptions, run: dict,
            drilldown: Optional[dict]) -> str:
    """The report of the report set's first REPORT_ROWS score rows, saying what it leaves out."""
    sets = measurement.sets
    chosen = report_set(sets, options.partition_by)
    index = next(i for i, s in enumerate(sets)
                 if tuple(c for c in s if c not in options.partition_by) == chosen)
    mine = shown.scored.filter(F.col(distributed.SET) == index)
    rows = distributed.shown_rows(mine, [sets[index]], REPORT_ROWS)
    return bounded_report(rows, mine.count(), chosen, options, run, shown.paired, drilldown)


def bounded_report(rows: List[dict], total: int, chosen, options: JobOptions, run: dict,
                   paired: Optional[List[dict]], drilldown: Optional[dict]) -> str:
    """The report of the first rows of its grouping (`chosen`) (`scoring.first_rows_report`)."""
    return scoring.first_rows_report(rows, total, chosen, run, paired, drilldown,
                                     options.output, options.partition_by)
