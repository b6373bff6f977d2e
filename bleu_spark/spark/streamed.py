"""What a run shows and writes when its statistics are on the driver but its groups are many
(more statistics rows than `scores.json` holds): scored a chunk of comparison groups at a time
(`scoring.stream`), each chunk's scores, dashboard and paired rows handed to the sink as made,
and for people the bounded parts the executors' path keeps (`apart`): the first rows in the
console, a report of the first rows of its grouping, `scores.json` left out.

The driver holds the statistics (Arrow, a few hundred bytes a group, at most
`measure.DRIVER_BYTES` of them) and one chunk of score rows: not a Python row per group.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from .. import record, statstable
from ..languages import target_warnings, tokenizer_warnings, tokenizers_by_pair
from ..scoring.stream import (CONSOLE_ROWS, JSON_ROWS, PAIRED_SHOWN, REPORT_ROWS, WARNINGS_SHOWN,
                              Streamed, stream)
from ..scoring.write import report_set, without_trials
from .apart import bounded_report
from .measure import Measurement
from .options import JobOptions


@dataclass
class ShownStreamed:
    """What a person is shown of a result scored a chunk at a time."""
    scores: List[dict]              # the first CONSOLE_ROWS score rows, in order
    paired: Optional[List[dict]]    # the first PAIRED_SHOWN paired tests
    tokenizers: dict
    groups: int                     # score rows of every grouping set
    signed: List[dict]              # a score row of each distinct signature
    paired_count: int
    run_time: str                   # the dashboard rows' run_time, run.json's too
    kept: Streamed
    report_index: int               # the grouping set the report draws


def applies(sink, measurement: Measurement) -> bool:
    """Scored a chunk at a time: a result written somewhere (the Python API without an output
    returns every row), with more statistics rows than scores.json holds, and no segment's
    statistics needed (sacrebleu's replayed draws)."""
    return (sink is not None and measurement.stats.num_rows > JSON_ROWS
            and measurement.segment_stats is None)


def show(options: JobOptions, measurement: Measurement, sink, run_id: str) -> ShownStreamed:
    """Every group scored and its tables written to `sink` a chunk at a time; the tokenizer and
    paired tests' warnings added to the measurement's."""
    stats, sets, resampling = measurement.stats, measurement.sets, options.resampling
    tokenizers = tokenizers_by_pair(stats, options.langpair_col, options.text)
    measurement.warnings += tokenizer_warnings(stats, options.langpair_col, options.text,
                                               options.measured, tokenizers)
    measurement.warnings += target_warnings(stats, options.langpair_col, options.measured)
    paired = resampling.paired_bs or resampling.paired_ar
    if paired:  # before anything is written
        resampling.check_baseline(statstable.scored_values(stats, "system"))
    chosen = report_set(sets, options.partition_by)
    report_index = next((i for i, s in enumerate(sets)
                         if tuple(c for c in s if c not in options.partition_by) == chosen), -1)
    run_time = record.started(run_id, "score")["run_time"]
    kept = stream(stats, sets, options.choices, resampling, options.partition_by,
                  sink.write_table, run_id, run_time, CONSOLE_ROWS,
                  report_index if options.report else -1, REPORT_ROWS, paired, JSON_ROWS + 1,
                  WARNINGS_SHOWN)
    if kept.missing_baselines > len(kept.warnings):
        kept.warnings.append(f"and {kept.missing_baselines - len(kept.warnings):,} more "
                             f"comparison groups without the baseline")
    measurement.warnings += kept.warnings
    return ShownStreamed(kept.first, kept.paired[:PAIRED_SHOWN] if paired else None, tokenizers,
                         kept.groups, list(kept.signed.values()), kept.paired_count, run_time,
                         kept, report_index)


def write(sink, options: JobOptions, measurement: Measurement, shown: ShownStreamed, run: dict,
          drilldown: Optional[dict]) -> None:
    """The statistics table and the bounded files; the scores, dashboard and paired tables were
    written as they were scored."""
    sink.write_table("stats", without_trials(measurement.stats))
    run["left_out"] = {"scores.json": f"{shown.groups:,} score rows, more than {JSON_ROWS:,}: "
                                      f"every row is in the scores table"}
    if shown.paired is not None:
        if shown.paired_count <= JSON_ROWS:
            sink.write_file("paired.json", shown.kept.paired)
        else:
            run["left_out"]["paired.json"] = (f"{shown.paired_count:,} paired tests: every one "
                                              f"is in the paired table")
    if options.report:
        chosen = report_set(measurement.sets, options.partition_by)
        total = shown.kept.per_set[shown.report_index]
        sink.write_file("report.html", bounded_report(shown.kept.report, total, chosen, options,
                                                      run, shown.paired, drilldown))
