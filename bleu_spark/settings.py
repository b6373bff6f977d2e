"""Every option of the job, declared once, and the one place that knows both the run's options and
the metric registry.

An `Option` (`declaration.py`) is the whole of what the product knows of a setting: its job-file
key (the flag is the key with dashes), what the YAML job file may hold, its default, its bounds,
its help line, where the help lists it and which commands take it. The command-line parser, the
job file's keys and type checks, the defaults, the range checks, the warnings about options no
measured metric reads and the docs check are all made from these declarations.

The run's own options are declared here; each metric declares its options in its own module
(`Metric.options_declared`), and `declared()` gathers both in help order.
"""
from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any, Dict, Mapping, Sequence, Tuple

from .declaration import (AGGREGATE, BOOLEAN, BOTH, BLEU_MEASUREMENT, COLUMNS, GATE, GROUPS, INT64_MAX,
                          INTEGER, METRICS, MORE_RESAMPLING, NUMBER, RESAMPLING, SCORE, SETS,
                          SHOWING, STRING, Option, convert)
from .errors import UsageError
from .metrics import CHECKS, REGISTRY, parse_names
from .tablenames import check_database_name
from .tokenizers import AUTO, TOKENIZERS


# The run's options (the metrics' own are declared with each metric).
RUN_OPTIONS = (
    Option("input", STRING, help="Parquet file, folder or glob of candidates (required)"),
    Option("config", STRING, help="YAML job file; flags given here override its keys", job_file=False),
    Option("candidate_col", STRING, "candidate", help="candidate column (default: candidate)"),
    Option("references_col", COLUMNS, ["references"],
           help="array<string> references column (default: references), or comma-separated "
                "string columns, one reference each"),
    Option("references", STRING, metavar="PATH",
           help="separate Parquet references table: one row per segment (array column named by "
                "--references-col) or one row per reference (ref_id, reference)"),
    Option("join_on", COLUMNS, metavar="COLS",
           help="with --references: the comma-separated columns both tables share, e.g. "
                "testset,langpair,seg_id"),
    Option("segment_key", COLUMNS, metavar="COLS",
           help="with inline references: the columns naming a segment (e.g. "
                "testset,langpair,seg_id), for duplicate and coverage checks"),
    Option("langpair_col", STRING, "langpair", help="language pair column, e.g. en-de (default: langpair)"),
    Option("on_invalid", STRING, "fail", choices=("fail", "quarantine"),
           help="unscorable rows: stop (fail, default) or write them to DIR/rejected/"),
    Option("progress_seconds", NUMBER, 30.0, metavar="S", bounds=(False, 0, threading.TIMEOUT_MAX),
           commands=BOTH,
           help="progress lines on stderr as scoring starts and ends, and every S seconds "
                "between; aggregate: as Spark starts and reads (default 30; 0: none)"),
    Option("colocate_references", STRING, "auto", choices=("auto", "always", "never"),
           help="always: bring rows sharing references together first (a shuffle of the text) "
                "so each reference is tokenized once; auto (default) and never score rows where "
                "they lie (the shuffle did not pay where measured)"),
    Option("scan", STRING, "auto", choices=("auto", "spark"),
           help="who reads the input: auto (default) lets the Python workers read local Parquet "
                "files themselves when rows are scored where they lie; spark: always Spark's "
                "Parquet scan"),
    Option("segments", BOOLEAN, False,
           help="also write DIR/segments/: a row per scored row and metric, with its sentence "
                "score and statistics (docs/segments.md)"),
    Option("segments_columns", COLUMNS, metavar="COLS",
           help="input columns the segments table carries along, e.g. "
                "source,candidate,references,doc_id"),
    Option("allow_empty_input", BOOLEAN, False,
           help="an input with no rows is a result with no groups (exit 0), not exit 15"),
    Option("incremental", BOOLEAN, False,
           help="measure only the input files no earlier --incremental run into --output "
                "measured, add their statistics to the folder's, and score every group from all "
                "of them (docs/incremental.md)"),
    Option("partition_by", COLUMNS, metavar="COLS",
           help="write the output's tables as Hive partitions of these input columns (e.g. "
                "run_date); a run replaces only its own"),
    Option("time_col", STRING, metavar="COL",
           help="with --window: a timestamp or date column whose windows become the group "
                "column window_start (naive times are taken as UTC)"),
    Option("window", STRING, metavar="SPEC",
           help="with --time-col: the window's length, e.g. 15m, 1h, 1d (aligned to the Unix "
                "epoch, as Spark's window())"),
    Option("output", STRING, group=SHOWING, commands=(*BOTH, GATE),
           help="output directory (this or --catalog, or both; gate: optional); docs/outputs.md "
                "lists what it holds"),
    Option("catalog", STRING, group=SHOWING, commands=BOTH, metavar="DB",
           help="also (or instead of --output) write the tables into Spark's catalog as "
                "DB.scores, DB.dashboard, DB.stats, ...: created on first use, partitioned by "
                "--partition-by, a run replacing its own partitions (docs/cluster.md)"),
    Option("group_by", COLUMNS, group=SHOWING, commands=(*BOTH, GATE),
           help="comma-separated group columns (score: system,langpair, those present; "
                "aggregate: the table's own; gate: required, the groups compared; '' for one "
                "corpus)"),
    Option("grouping_sets", SETS, group=SHOWING, commands=BOTH, metavar="SETS",
           help="several groupings in one pass, ';'-separated, e.g. "
                "'testset,langpair,system;langpair,system;langpair'"),
    Option("groups_scored_on", STRING, "auto", group=SHOWING, choices=("auto", "driver", "executors"),
           commands=BOTH,
           help="where groups are scored: auto (default) on the driver when the statistics "
                "table fits in 64 MB (many groups a chunk at a time), else on the executors, "
                "whose tasks write the tables (the console and scores.json then show the first "
                "rows: docs/outputs.md); aggregate: on Spark only (executors is not for "
                "--engine local)"),
    Option("report", BOOLEAN, False, group=SHOWING, commands=BOTH,
           help="also write DIR/report.html, a page to look at"),
    Option("confidence", BOOLEAN, False, group=RESAMPLING, commands=BOTH,
           help="a bootstrap confidence interval per group"),
    Option("paired_bs", BOOLEAN, False, group=RESAMPLING, commands=BOTH,
           help="paired bootstrap test of every system against --baseline"),
    Option("baseline", STRING, group=RESAMPLING, commands=BOTH, metavar="SYSTEM",
           help="the system paired tests compare against"),
    Option("clusters", BOOLEAN, False, group=RESAMPLING, commands=BOTH,
           help="rank ranges and significance clusters of the systems of each comparison "
                "group, on the bootstrap's draws"),
    Option("tokenize", STRING, AUTO, group=BLEU_MEASUREMENT, metavar="NAME",
           help=f"auto (default: by target language) or one of {', '.join(TOKENIZERS)}"),
    Option("spm_model", STRING, group=BLEU_MEASUREMENT,
           help="local SentencePiece model for flores101, flores200, spBLEU-1K"),
    Option("metrics", COLUMNS, group=METRICS, metavar="NAMES", commands=(SCORE, GATE),
           help=f"comma-separated metrics measured in one pass: {', '.join(REGISTRY)} "
                "(default: bleu; none when --segment-scores or --checks is given); gate: the "
                "metrics compared, as the statistics name them (default: all they hold)"),
    Option("segment_scores", COLUMNS, group=METRICS, metavar="COLS",
           help="numeric columns of segment scores computed elsewhere (COMET, MetricX, ...): "
                "each a metric of its name, the mean over a group's rows; COL:lower where lower "
                "is better (docs/metrics.md)"),
    Option("checks", COLUMNS, group=METRICS, metavar="NAMES",
           help=f"reference-free checks, each scored as the percent of rows it flags: "
                f"{', '.join(CHECKS)} (untranslated and off_target need bleu-spark[checks])"),
    Option("source_col", STRING, "source", group=METRICS,
           help="source text column, read by the copy check (default: source)"),
    Option("paired_ar", BOOLEAN, False, group=MORE_RESAMPLING,
           help="paired approximate randomization test against --baseline"),
    Option("bootstrap_method", STRING, "poisson", group=MORE_RESAMPLING, metavar="M",
           help="poisson (default: hashed weights, any scale) or sacrebleu (its own draws "
                "replayed; test-set sizes)"),
    Option("n_bootstrap", INTEGER, 1000, group=MORE_RESAMPLING, metavar="B", bounds=(True, 1, 100_000),
           help="bootstrap resamples (default: 1000)"),
    Option("seed", INTEGER, 12345, group=MORE_RESAMPLING, bounds=(True, 0, INT64_MAX),
           help="resampling seed (default: 12345, sacrebleu's)"),
    Option("n_ar_trials", INTEGER, 10000, group=MORE_RESAMPLING, metavar="T", bounds=(True, 1, 100_000),
           help="approximate randomization trials (default: 10000)"),
    Option("stats", STRING, commands=(AGGREGATE, GATE), metavar="PATH", job_file=False,
           help="a result folder of bleu-spark, its stats/ folder, or statistics Parquet "
                "(aggregate: this or --stats-table)"),
    Option("stats_table", STRING, commands=(AGGREGATE,), metavar="DB.TABLE", job_file=False,
           help="statistics from a table of Spark's catalog (score --catalog DB writes "
                "DB.stats), read on Spark"),
    Option("where", STRING, commands=(AGGREGATE, GATE), metavar="PREDICATE", job_file=False,
           help="a filter over group and measurement columns, not SQL: comparisons with "
                "literals, AND, OR, NOT, IN, BETWEEN, IS NULL, LIKE; e.g. \"langpair = 'en-de'\" "
                "(gate: the slice under test)"),
    Option("baseline_where", STRING, commands=(GATE,), metavar="PREDICATE", job_file=False,
           help="gate: the baseline slice, a filter as --where (e.g. the last seven days)"),
    Option("max_drop", NUMBER, 1.0, group=RESAMPLING, commands=(GATE,), metavar="X",
           job_file=False, bounds=(False, 0, float("inf")),
           help="gate: the largest drop allowed, in each metric's score points (default 1.0)"),
    Option("alpha", NUMBER, 0.05, group=RESAMPLING, commands=(GATE,), metavar="A",
           job_file=False, bounds=(False, 0, 1),
           help="gate: a larger drop fails when fewer than this share of the bootstrap's "
                "replicate pairs drop by at most --max-drop (default 0.05)"),
    Option("engine", STRING, "auto", commands=(AGGREGATE,), choices=("auto", "local", "spark"),
           job_file=False,
           help="auto (default): local and object-store (s3, gs, abfs) tables in-process "
                "without a JVM, others on Spark"),
)


def metric_options() -> Dict[str, Tuple[str, ...]]:
    """Each metric option's key -> the metrics that read it, in registry order."""
    readers: Dict[str, Tuple[str, ...]] = {}
    for metric in REGISTRY.values():
        for option in metric.options_declared:
            readers[option.key] = readers.get(option.key, ()) + (metric.name,)
    return readers


def unused_option_warnings(values: Dict[str, Any], measured: Sequence[str],
                           measured_as: str) -> list:
    """A line for each metric option set (from its default) that changes no score: no metric
    measured reads it (`--ter-normalized` with `--metrics bleu`), or its metric reads it only
    with another option's value the run does not have (`--ter-asian-support` alone). Made from
    the declarations, so it covers every metric option. `measured_as`: how the line names what
    is measured (`--metrics is bleu`, `the statistics hold chrf`)."""
    lines = []
    for key, readers in metric_options().items():
        option = next(o for o in declared() if o.key == key)
        if values.get(key, option.default) == option.default:
            continue
        reads = "reads" if len(readers) == 1 else "read"
        if not set(measured) & set(readers):
            lines.append(f"{option.flag} is set but only {' or '.join(readers)} {reads} it, and "
                         f"{measured_as}: it changes nothing")
        elif option.read_with and not any(values.get(k, default(k)) in wanted
                                          for k, wanted in option.read_with):
            lines.append(f"{option.flag} is set but {' and '.join(readers)} {reads} it only with "
                         f"{_conditions(option.read_with)}: it changes no score")
    return lines


def _conditions(read_with) -> str:
    """`--ter-normalized or --ter-no-punct`, `--smooth-method floor or add-k`."""
    return " or ".join(option(k).flag if tuple(wanted) == (True,)
                       else f"{option(k).flag} {' or '.join(map(str, wanted))}"
                       for k, wanted in read_with)


@functools.lru_cache(maxsize=None)
def declared() -> Tuple[Option, ...]:
    """Every option: the run's and each metric's (a metric's shared by another once), in help
    group order. Made once: the registry does not change in a process."""
    options = {o.key: o for o in RUN_OPTIONS}
    for metric in REGISTRY.values():
        options.update({o.key: o for o in metric.options_declared if o.key not in options})
    return tuple(sorted(options.values(), key=lambda o: GROUPS.index(o.group)))


def option(key: str) -> Option:
    """The declaration of one option, by key or flag."""
    key = key.lstrip("-").replace("-", "_")
    found = [o for o in declared() if o.key == key]
    if not found:
        raise KeyError(key)
    return found[0]


def default(key: str):
    """An option's declared default (the Python API's options objects take theirs from here)."""
    return option(key).default


def check(flag: str, value) -> None:
    """`value` is in the declared range of the option `flag` (`--seed`, ...)."""
    option(flag).check(value)


def job_file_keys() -> Dict[str, Option]:
    return {o.key: o for o in declared() if o.job_file and SCORE in o.commands}


def defaults() -> Dict[str, Any]:
    """Each job-file key and its default; a flag or the job file's value wins over it."""
    return {key: o.default for key, o in job_file_keys().items()}


def config_record(choices: Mapping[str, Any]) -> dict:
    """run.json's `config`: the text settings around each metric's record of its options."""
    values = {**defaults(), **choices}
    record = {"tokenize": values["tokenize"]}
    for metric in REGISTRY.values():
        record.update(metric.settings_record(values))
    return {**record, "spm_model": values["spm_model"]}


def converted(values: Mapping[str, Any]) -> Dict[str, Any]:
    """The run's option values (a flag's text, a job file's YAML) as the options objects hold
    them: each declared key's value converted once, by its kind (`declaration.convert`)."""
    kinds = {o.key: o.kind for o in declared()}
    return {key: convert(kinds[key], value) if key in kinds else value
            for key, value in values.items()}


def field_option(key: str, default: Any) -> Any:
    """A field of an options object holding the declared option `key` under another name
    (`references_cols` holds `references_col`)."""
    return dataclasses.field(default=default, metadata={"option": key})


def fields_from(options_class, values: Mapping[str, Any]) -> Dict[str, Any]:
    """The keywords of an options object (`JobOptions`, `AggregateOptions`, `Resampling`) from
    the run's converted option values: each field takes the declared key it names (its own name,
    or `field_option`'s), a value not given (None) leaving the field's default."""
    keys = {o.key for o in declared()}
    chosen = {}
    for field in dataclasses.fields(options_class):
        key = field.metadata.get("option", field.name)
        if field.init and key in keys and values.get(key) is not None:
            chosen[field.name] = values[key]
    return chosen


def metric_choices(values: Mapping[str, Any]) -> Tuple[Tuple[str, Any], ...]:
    """The metrics' options the values hold, as (key, value) pairs in registry order."""
    return tuple((key, values[key]) for key in metric_options() if key in values)


def reference_metrics(values: Mapping[str, Any]) -> tuple:
    """The reference metrics a score run measures: `--metrics`, which defaults to bleu unless
    only segment scores or checks are asked for."""
    if values.get("metrics") is None and (values.get("segment_scores") or values.get("checks")):
        return ()
    return parse_names(values.get("metrics"))


def metrics_asked_warnings(values: Mapping[str, Any]) -> list:
    """`score`: a warning for each metric option set that no metric of `--metrics` reads."""
    measured = reference_metrics(values)
    named = ','.join(sorted(measured)) if measured else "not given"
    return unused_option_warnings(values, measured, f"--metrics is {named}")


def check_grouping(group_by, grouping_sets) -> None:
    """Both commands: one way of naming the groups."""
    if group_by is not None and grouping_sets is not None:
        raise UsageError("give --group-by or --grouping-sets, not both")


def check_destination(output, catalog, report: bool) -> None:
    """Both commands: the catalog database's name, and the report's place (a file in DIR)."""
    if report and catalog and not output:
        raise UsageError("--report needs --output DIR: the page is a file there")
    if catalog:
        check_database_name(catalog)
