"""Every option of the job, declared once.

An `Option` is the whole of what the product knows of a setting: its job-file key (the flag is
the key with dashes), what the YAML job file may hold, its default, its bounds, its help line,
where the help lists it and which commands take it. The command-line parser, the job file's
keys and type checks, the defaults, the range checks, the warnings about options no measured
metric reads and the docs check are all made from these declarations.

The run's own options are declared here; each metric declares its options in its own module
(`Metric.options_declared`), and `declared()` gathers both in help order.
"""
from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from .errors import UsageError

# What the YAML job file may hold for a key; the words are those its errors use.
STRING, BOOLEAN, INTEGER, NUMBER = "string", "boolean", "integer", "number"
COLUMNS = "string or list of strings"
NUMBERS = "string or list of numbers"
SETS = "string or list of (string or list of strings)"

SCORE, AGGREGATE = "score", "aggregate"
BOTH = (SCORE, AGGREGATE)

# Help groups, in the order the help lists them.
INPUT = "input and output"
SHOWING = "groups and output"
BLEU_SCORING = "BLEU scoring (as sacrebleu's options)"
RESAMPLING = "confidence intervals and paired tests"
BLEU_MEASUREMENT = "BLEU measurement (as sacrebleu's options)"
METRICS = "metrics (chrF's and TER's options as sacrebleu's)"
MORE_RESAMPLING = "resampling (with --confidence, --paired-bs, --paired-ar)"
GROUPS = (INPUT, SHOWING, BLEU_SCORING, RESAMPLING, BLEU_MEASUREMENT, METRICS, MORE_RESAMPLING)

INT64_MAX = 2 ** 63 - 1


@dataclass(frozen=True)
class Option:
    key: str                                   # the job file's key, the parsed value's name
    kind: str                                  # what the job file may hold (STRING, ...)
    default: Any = None
    help: str = ""
    group: str = INPUT
    commands: Tuple[str, ...] = (SCORE,)
    metavar: Optional[str] = None
    choices: Optional[Tuple[str, ...]] = None
    # (integer?, lowest, highest), both ends allowed: later code relies on these bounds (a
    # seed goes into int64 columns, sample counts size matrices, an order sets a width).
    bounds: Optional[Tuple[bool, float, float]] = None
    field: Optional[str] = None                # a metric's option: its field in the metric's options
    job_file: bool = True                      # False: command line only (--config, --where)
    required: bool = False                     # on the command line (a job-file key is checked later)
    # A metric option its metric reads only when another option of the run has one of these
    # values (--ter-asian-support: with --ter-normalized or --ter-no-punct): (key, values), any.
    read_with: Tuple[Tuple[str, Tuple[Any, ...]], ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.key.replace("_", "-")

    @property
    def metric_field(self) -> str:
        return self.field or self.key

    def check(self, value) -> None:
        """`value` is in the option's range, else one line naming both."""
        integer, low, high = self.bounds
        if not _within(value, integer, low, high):
            kind = "an integer" if integer else "a number"
            span = (f"of at least {low}" if high == math.inf
                    else f"from {low} to {high if integer else int(high)}")
            raise UsageError(f"{self.flag} must be {kind} {span}, got {value!r}")


def _finite(value) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer past the largest float
        return False


def _within(value, integer: bool, low, high) -> bool:
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        return False
    return (integer or _finite(value)) and low <= value <= high


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_columns(value) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


# A job-file value of each kind (YAML gives any type): "no" is a string, not False.
KIND_CHECKS: Dict[str, Callable[[Any], bool]] = {
    STRING: lambda v: isinstance(v, str),
    BOOLEAN: lambda v: isinstance(v, bool),
    INTEGER: lambda v: isinstance(v, int) and not isinstance(v, bool),
    NUMBER: _is_number,
    COLUMNS: _is_columns,
    NUMBERS: lambda v: isinstance(v, str) or (isinstance(v, list) and all(map(_is_number, v))),
    SETS: lambda v: isinstance(v, str) or (isinstance(v, list) and all(map(_is_columns, v))),
}


# `--tokenize`: sacrebleu 2.6's tokenizer names, and `auto` (by each row's target language).
TOKENIZERS = ("13a", "intl", "zh", "char", "none", "ja-mecab", "ko-mecab",
              "flores101", "flores200", "spBLEU-1K")
SPM_TOKENIZERS = ("flores101", "flores200", "spBLEU-1K")   # these need --spm-model
AUTO = "auto"


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
    Option("partition_by", COLUMNS, metavar="COLS",
           help="write the output's tables as Hive partitions of these input columns (e.g. "
                "run_date); a run replaces only its own"),
    Option("output", STRING, group=SHOWING, commands=BOTH,
           help="output directory (this or --catalog, or both); docs/outputs.md lists what it "
                "holds"),
    Option("catalog", STRING, group=SHOWING, commands=BOTH, metavar="DB",
           help="also (or instead of --output) write the tables into Spark's catalog as "
                "DB.scores, DB.dashboard, DB.stats, ...: created on first use, partitioned by "
                "--partition-by, a run replacing its own partitions (docs/cluster.md)"),
    Option("group_by", COLUMNS, group=SHOWING, commands=BOTH,
           help="comma-separated group columns (score: system,langpair, those present; "
                "aggregate: the table's own; '' for one corpus)"),
    Option("grouping_sets", SETS, group=SHOWING, commands=BOTH, metavar="SETS",
           help="several groupings in one pass, ';'-separated, e.g. "
                "'testset,langpair,system;langpair,system;langpair'"),
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
    Option("metrics", COLUMNS, "bleu", group=METRICS, metavar="NAMES",
           help="comma-separated metrics measured in one pass: bleu, chrf, chrf++, ter "
                "(default: bleu)"),
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
    Option("stats", STRING, commands=(AGGREGATE,), metavar="PATH", job_file=False,
           help="a result folder of bleu-spark, its stats/ folder, or statistics Parquet (this "
                "or --stats-table)"),
    Option("stats_table", STRING, commands=(AGGREGATE,), metavar="DB.TABLE", job_file=False,
           help="statistics from a table of Spark's catalog (score --catalog DB writes "
                "DB.stats), read on Spark"),
    Option("where", STRING, commands=(AGGREGATE,), metavar="PREDICATE", job_file=False,
           help="a filter over group and measurement columns, not SQL: comparisons with "
                "literals, AND, OR, NOT, IN, BETWEEN, IS NULL, LIKE; e.g. \"langpair = 'en-de'\""),
    Option("engine", STRING, "auto", commands=(AGGREGATE,), choices=("auto", "local", "spark"),
           job_file=False,
           help="auto (default): local tables in-process without a JVM, others on Spark"),
)


def metric_options() -> Dict[str, Tuple[str, ...]]:
    """Each metric option's key -> the metrics that read it, in registry order."""
    from .metrics import REGISTRY

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
    from .metrics import REGISTRY

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


def check_weights(weights: Optional[Sequence]) -> Optional[Tuple[float, ...]]:
    """N-gram weights as floats: each finite and non-negative, their sum 1 (the count must match
    the max n-gram order, known to BLEU's options or from the statistics)."""
    if weights is None:
        return None
    try:
        values = tuple(float(w) for w in weights)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"--weights must be comma-separated numbers, got {weights!r}") from None
    if any(not math.isfinite(w) or w < 0 for w in values) or abs(sum(values) - 1) > 1e-6:
        shown = ",".join(map(str, values)) or "none"
        raise UsageError(f"--weights must be non-negative and sum to 1, got {shown}")
    return values
