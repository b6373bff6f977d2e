"""`bleu-spark score` and `bleu-spark aggregate`: arguments, the optional YAML job file, exit
codes, the console table."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import List, Optional

from . import __version__
from .config import AUTO, SMOOTH_DEFAULTS, TOKENIZERS, BleuConfig
from .errors import BleuSparkError, ConfigFileError, Interrupted, UsageError
from .shown import shown

PROG = "bleu-spark"
_IMPORTED = time.time()

# Job-file keys and their defaults; a flag given on the command line wins over the file.
DEFAULTS = {
    "input": None, "output": None, "group_by": None, "tokenize": AUTO, "lowercase": False,
    "smooth_method": "exp", "smooth_value": None, "max_ngram_order": 4,
    "effective_order": False, "weights": None, "spm_model": None,
    "candidate_col": "candidate", "references_col": ["references"], "langpair_col": "langpair",
    "references": None, "join_on": None, "segment_key": None, "on_invalid": "fail",
    "progress_seconds": 30.0, "grouping_sets": None, "partition_by": None, "report": False,
    "confidence": False, "bootstrap_method": "poisson", "n_bootstrap": 1000, "seed": 12345,
    "paired_bs": False, "paired_ar": False, "baseline": None, "n_ar_trials": 10000,
    "clusters": False, "colocate_references": "auto", "scan": "auto",
    "metrics": "bleu", "chrf_char_order": 6, "chrf_word_order": 0, "chrf_beta": 2,
    "chrf_whitespace": False, "chrf_lowercase": False, "chrf_eps_smoothing": False,
    "ter_case_sensitive": False, "ter_normalized": False, "ter_no_punct": False,
    "ter_asian_support": False, "segments": False, "segments_columns": None,
    "allow_empty_input": False,
}


# What each job-file key holds, checked when the file is loaded (YAML gives any type): a kind
# names the check and the words the error uses. Null means "not set" (the default applies).
STRING, BOOLEAN, INTEGER, NUMBER = "string", "boolean", "integer", "number"
COLUMNS = "string or list of strings"
NUMBERS = "string or list of numbers"
SETS = "string or list of (string or list of strings)"
JOB_FILE_KINDS = {
    "input": STRING, "output": STRING, "group_by": COLUMNS, "tokenize": STRING,
    "lowercase": BOOLEAN, "smooth_method": STRING, "smooth_value": NUMBER,
    "max_ngram_order": INTEGER, "effective_order": BOOLEAN, "weights": NUMBERS,
    "spm_model": STRING, "candidate_col": STRING, "references_col": COLUMNS,
    "langpair_col": STRING, "references": STRING, "join_on": COLUMNS, "segment_key": COLUMNS,
    "on_invalid": STRING, "progress_seconds": NUMBER, "grouping_sets": SETS,
    "partition_by": COLUMNS, "report": BOOLEAN,
    "confidence": BOOLEAN, "bootstrap_method": STRING, "n_bootstrap": INTEGER, "seed": INTEGER,
    "paired_bs": BOOLEAN, "paired_ar": BOOLEAN, "baseline": STRING, "n_ar_trials": INTEGER,
    "clusters": BOOLEAN, "colocate_references": STRING, "scan": STRING,
    "metrics": COLUMNS, "chrf_char_order": INTEGER, "chrf_word_order": INTEGER,
    "chrf_beta": INTEGER, "chrf_whitespace": BOOLEAN, "chrf_lowercase": BOOLEAN,
    "chrf_eps_smoothing": BOOLEAN, "ter_case_sensitive": BOOLEAN, "ter_normalized": BOOLEAN,
    "ter_no_punct": BOOLEAN, "ter_asian_support": BOOLEAN, "segments": BOOLEAN,
    "segments_columns": COLUMNS, "allow_empty_input": BOOLEAN,
}


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_columns(value) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


_KIND_CHECKS = {
    STRING: lambda v: isinstance(v, str),
    BOOLEAN: lambda v: isinstance(v, bool),  # a real YAML boolean: "no" is a string, not False
    INTEGER: lambda v: isinstance(v, int) and not isinstance(v, bool),
    NUMBER: _is_number,
    COLUMNS: _is_columns,
    NUMBERS: lambda v: isinstance(v, str) or (isinstance(v, list) and all(map(_is_number, v))),
    SETS: lambda v: isinstance(v, str) or (isinstance(v, list) and all(map(_is_columns, v))),
}


def _yaml_type(value) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list",
             dict: "mapping"}
    return names.get(type(value), type(value).__name__)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, not argparse's usage dump
        raise UsageError(message)

    def parse_args(self, args=None, namespace=None):
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            from .metrics import REGISTRY

            if getattr(parsed, "metrics", None) and all(e.lower() in REGISTRY for e in extra):
                # sacrebleu's habit: `-m bleu chrf`
                raise UsageError(f"--metrics takes one comma-separated list, not names apart: "
                                 f"write --metrics {','.join([parsed.metrics, *extra])}")
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed


def _csv(text: str) -> List[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_grouping_sets(value) -> Optional[tuple]:
    """`"testset,langpair,system;langpair;()"` (or a YAML list of lists) -> tuples of columns;
    `()` is the whole table as one group."""
    if value is None:
        return None
    parts = value.split(";") if isinstance(value, str) else list(value)
    sets = []
    for part in parts:
        if isinstance(part, str):
            part = part.strip()
            if not part:
                continue
            part = [] if part == "()" else _csv(part)
        sets.append(tuple(part))
    if not sets:
        raise UsageError("--grouping-sets needs at least one set, e.g. 'langpair,system;langpair'")
    return tuple(sets)


def _add_showing(parser) -> None:
    """The options of the scoring step, shared by `score` and `aggregate`."""
    show = parser.add_argument_group("groups and output")
    show.add_argument("--output", help="output directory (required); docs/outputs.md lists what it holds")
    show.add_argument("--group-by", help="comma-separated group columns "
                      "(score: system,langpair, those present; aggregate: the table's own; '' for one corpus)")
    show.add_argument("--grouping-sets", metavar="SETS", help="several groupings in one pass, "
                      "';'-separated, e.g. 'testset,langpair,system;langpair,system;langpair'")
    show.add_argument("--report", action=argparse.BooleanOptionalAction, default=None,
                      help="also write DIR/report.html, a page to look at")
    bleu = parser.add_argument_group("BLEU scoring (as sacrebleu's options)")
    bleu.add_argument("--smooth-method", metavar="NAME",
                      help=f"one of {', '.join(SMOOTH_DEFAULTS)} (default: exp)")
    bleu.add_argument("--smooth-value", type=float, help="value for floor (0.1) or add-k (1)")
    bleu.add_argument("--effective-order", action=argparse.BooleanOptionalAction, default=None,
                      help="leave out orders with no n-grams (off for corpus BLEU)")
    bleu.add_argument("--weights", help="comma-separated n-gram weights w1,...,wN (default: uniform)")
    stats = parser.add_argument_group("confidence intervals and paired tests")
    stats.add_argument("--confidence", action=argparse.BooleanOptionalAction, default=None,
                       help="a bootstrap confidence interval per group")
    stats.add_argument("--paired-bs", action=argparse.BooleanOptionalAction, default=None,
                       help="paired bootstrap test of every system against --baseline")
    stats.add_argument("--baseline", metavar="SYSTEM", help="the system paired tests compare against")
    stats.add_argument("--clusters", action=argparse.BooleanOptionalAction, default=None,
                       help="rank ranges and significance clusters of the systems of each "
                            "comparison group, on the bootstrap's draws")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="sacrebleu-exact corpus BLEU per group, on Spark.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    score = commands.add_parser("score", help="score a Parquet table of candidates and references",
                                description="Score a Parquet table: one corpus BLEU per group.")
    io = score.add_argument_group("input and output")
    io.add_argument("--input", help="Parquet file, folder or glob of candidates (required)")
    io.add_argument("--config", help="YAML job file; flags given here override its keys")
    io.add_argument("--candidate-col", help="candidate column (default: candidate)")
    io.add_argument("--references-col", help="array<string> references column (default: "
                    "references), or comma-separated string columns, one reference each")
    io.add_argument("--references", metavar="PATH", help="separate Parquet references table: one "
                    "row per segment (array column named by --references-col) or one row per "
                    "reference (ref_id, reference)")
    io.add_argument("--join-on", metavar="COLS", help="with --references: the comma-separated "
                    "columns both tables share, e.g. testset,langpair,seg_id")
    io.add_argument("--segment-key", metavar="COLS", help="with inline references: the columns "
                    "naming a segment (e.g. testset,langpair,seg_id), for duplicate and coverage checks")
    io.add_argument("--langpair-col", help="language pair column, e.g. en-de (default: langpair)")
    io.add_argument("--on-invalid", choices=["fail", "quarantine"],
                    help="unscorable rows: stop (fail, default) or write them to DIR/rejected/")
    io.add_argument("--progress-seconds", type=float, metavar="S",
                    help="progress lines on stderr as scoring starts and ends, and every S seconds "
                         "between (default 30; 0: none)")
    io.add_argument("--colocate-references", choices=["auto", "always", "never"],
                    help="always: bring rows sharing references together first (a shuffle of "
                         "the text) so each reference is tokenized once; auto (default) and never "
                         "score rows where they lie (the shuffle did not pay where measured)")
    io.add_argument("--scan", choices=["auto", "spark"],
                    help="who reads the input: auto (default) lets the Python workers read local "
                         "Parquet files themselves when rows are scored where they lie; spark: "
                         "always Spark's Parquet scan")
    io.add_argument("--segments", action=argparse.BooleanOptionalAction, default=None,
                    help="also write DIR/segments/: a row per scored row and metric, with its "
                         "sentence score and statistics (docs/segments.md)")
    io.add_argument("--segments-columns", metavar="COLS", help="input columns the segments "
                    "table carries along, e.g. source,candidate,references,doc_id")
    io.add_argument("--allow-empty-input", action=argparse.BooleanOptionalAction, default=None,
                    help="an input with no rows is a result with no groups (exit 0), not exit 15")
    io.add_argument("--partition-by", metavar="COLS", help="write the output's tables as Hive "
                    "partitions of these input columns (e.g. run_date); a run replaces only its own")
    _add_showing(score)
    bleu = score.add_argument_group("BLEU measurement (as sacrebleu's options)")
    bleu.add_argument("--tokenize", metavar="NAME",
                      help=f"auto (default: by target language) or one of {', '.join(TOKENIZERS)}")
    bleu.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                      help="lowercase candidates and references")
    bleu.add_argument("--max-ngram-order", type=int, help="highest n-gram order (default: 4)")
    bleu.add_argument("--spm-model", help="local SentencePiece model for flores101, flores200, spBLEU-1K")
    measured = score.add_argument_group("metrics (chrF's and TER's options as sacrebleu's)")
    measured.add_argument("--metrics", metavar="NAMES",
                          help="comma-separated metrics measured in one pass: bleu, chrf, chrf++, "
                               "ter (default: bleu)")
    measured.add_argument("--chrf-char-order", type=int, metavar="N",
                          help="chrF character n-gram order (default: 6)")
    measured.add_argument("--chrf-word-order", type=int, metavar="N",
                          help="chrF word n-gram order (default: 0; chrf++ is 2)")
    measured.add_argument("--chrf-beta", type=int, metavar="B",
                          help="chrF: recall weighs beta times precision (default: 2)")
    measured.add_argument("--chrf-whitespace", action=argparse.BooleanOptionalAction, default=None,
                          help="chrF: keep whitespace in character n-grams")
    measured.add_argument("--chrf-lowercase", action=argparse.BooleanOptionalAction, default=None,
                          help="chrF: lowercase candidates and references")
    measured.add_argument("--chrf-eps-smoothing", action=argparse.BooleanOptionalAction, default=None,
                          help="chrF: mean of per-order F with eps smoothing (chrF++.py's)")
    measured.add_argument("--ter-case-sensitive", action=argparse.BooleanOptionalAction, default=None,
                          help="TER: keep case (default: lowercase, as tercom)")
    measured.add_argument("--ter-normalized", action=argparse.BooleanOptionalAction, default=None,
                          help="TER: tercom's normalization of the text")
    measured.add_argument("--ter-no-punct", action=argparse.BooleanOptionalAction, default=None,
                          help="TER: delete punctuation")
    measured.add_argument("--ter-asian-support", action=argparse.BooleanOptionalAction, default=None,
                          help="TER: split Asian scripts (with --ter-normalized or --ter-no-punct)")
    resample = score.add_argument_group("resampling (with --confidence, --paired-bs, --paired-ar)")
    resample.add_argument("--paired-ar", action=argparse.BooleanOptionalAction, default=None,
                          help="paired approximate randomization test against --baseline")
    resample.add_argument("--bootstrap-method", metavar="M", help="poisson (default: hashed weights, "
                          "any scale) or sacrebleu (its own draws replayed; test-set sizes)")
    resample.add_argument("--n-bootstrap", type=int, metavar="B", help="bootstrap resamples (default: 1000)")
    resample.add_argument("--seed", type=int, help="resampling seed (default: 12345, sacrebleu's)")
    resample.add_argument("--n-ar-trials", type=int, metavar="T",
                          help="approximate randomization trials (default: 10000)")
    aggregate = commands.add_parser(
        "aggregate", help="score any grouping or slice of saved statistics, without the text",
        description="Score saved statistics (DIR/stats of a score run) at any coarser grouping "
                    "or slice; equal to a fresh run on the same rows.")
    aggregate.add_argument("--stats", required=True, metavar="PATH",
                           help="a result folder of bleu-spark, its stats/ folder, or statistics Parquet")
    aggregate.add_argument("--where", metavar="PREDICATE",
                           help="a filter over group and measurement columns, not SQL: comparisons "
                                "with literals, AND, OR, NOT, IN, BETWEEN, IS NULL, LIKE; "
                                "e.g. \"langpair = 'en-de'\"")
    aggregate.add_argument("--engine", choices=["auto", "local", "spark"], default="auto",
                           help="auto (default): local tables in-process without a JVM, others on Spark")
    _add_showing(aggregate)
    return parser


def load_job_file(path: str) -> dict:
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            values = yaml.load(handle, Loader=_unique_key_loader()) or {}
    except OSError as exc:
        raise ConfigFileError(f"cannot read job file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigFileError(f"job file {path} is not valid YAML: {exc}".replace("\n", " ")) from None
    if not isinstance(values, dict):
        raise ConfigFileError(f"job file {path} must be a mapping of option: value")
    spelled = [key.replace("-", "_") if isinstance(key, str) else key for key in values]
    twice = sorted({str(k) for k in spelled if spelled.count(k) > 1})
    if twice:  # `group-by` and `group_by` both: which one was meant?
        raise ConfigFileError(f"job file {path} sets {', '.join(twice)} more than once")
    values = dict(zip(spelled, values.values()))
    unknown = sorted(set(values) - set(DEFAULTS), key=str)
    if unknown:
        raise ConfigFileError(f"job file {path} has unknown keys: {', '.join(map(str, unknown))}")
    wrong = [f"{key} is {_yaml_type(value)} {value!r}, expected {JOB_FILE_KINDS[key]}"
             for key, value in values.items()
             if value is not None and not _KIND_CHECKS[JOB_FILE_KINDS[key]](value)]
    if wrong:
        raise ConfigFileError(f"job file {path}: {'; '.join(wrong)}")
    return {key: value for key, value in values.items() if value is not None}


def _unique_key_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        """YAML's safe loader, refusing a key given twice (plain YAML keeps the last silently)."""

        def construct_mapping(self, node, deep=False):
            # YAML merge keys (`<<: *defaults`) may be overridden by design: only the keys
            # written in this mapping itself count.
            keys = [self.construct_object(key, deep=deep) for key, _ in node.value
                    if key.tag != "tag:yaml.org,2002:merge"]
            twice = sorted({str(k) for k in keys if keys.count(k) > 1})
            if twice:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {', '.join(twice)} given more than once", node.start_mark)
            return super().construct_mapping(node, deep=deep)

    return Loader


def effective_settings(args: argparse.Namespace) -> dict:
    settings = dict(DEFAULTS)
    if args.config:
        settings.update(load_job_file(args.config))
    settings.update({k: v for k, v in vars(args).items() if k in DEFAULTS and v is not None})
    for key in ("group_by", "weights", "references_col", "join_on", "segment_key", "partition_by",
                "metrics", "segments_columns"):
        if isinstance(settings[key], str):
            settings[key] = _csv(settings[key])
    settings["grouping_sets"] = parse_grouping_sets(settings["grouping_sets"])
    for key in ("input", "output"):
        if not settings[key]:
            raise UsageError(f"--{key} is required (on the command line or in the job file)")
    return settings


# Options that only some metrics read, and which: given without one of them, they change nothing.
BLEU_ONLY = ("lowercase", "smooth_method", "smooth_value", "effective_order", "weights",
             "max_ngram_order")
READERS = {**{key: ("bleu",) for key in BLEU_ONLY},
           **{key: ("chrf", "chrf++") for key in DEFAULTS if key.startswith("chrf_")},
           "chrf_word_order": ("chrf",),   # chrf++'s is always 2
           **{key: ("ter",) for key in DEFAULTS if key.startswith("ter_")}}


def unused_option_warnings(settings: dict) -> List[str]:
    """A warning for each metric option set (from its default) while no metric that reads it is
    measured: `--ter-normalized` with `--metrics bleu`, `--lowercase` with `--metrics ter`."""
    from .metrics import parse_names

    measured = set(parse_names(settings["metrics"]))
    return [f"--{key.replace('_', '-')} is set but only {' or '.join(readers)} read"
            f"{'s' if len(readers) == 1 else ''} it, and --metrics is {','.join(sorted(measured))}: "
            f"it changes nothing"
            for key, readers in READERS.items()
            if settings[key] != DEFAULTS[key] and not measured & set(readers)]


def job_options(settings: dict):
    from .spark.job import JobOptions

    config = BleuConfig(
        tokenize=settings["tokenize"], lowercase=bool(settings["lowercase"]),
        smooth_method=settings["smooth_method"], smooth_value=settings["smooth_value"],
        max_ngram_order=settings["max_ngram_order"], effective_order=bool(settings["effective_order"]),
        weights=settings["weights"], spm_model=settings["spm_model"])
    group_by = settings["group_by"]
    return JobOptions(
        input=settings["input"], output=settings["output"],
        group_by=tuple(group_by) if group_by is not None else None,
        candidate_col=settings["candidate_col"], references_cols=tuple(settings["references_col"]),
        langpair_col=settings["langpair_col"], references=settings["references"],
        join_on=tuple(settings["join_on"] or ()), segment_key=tuple(settings["segment_key"] or ()),
        on_invalid=settings["on_invalid"], progress_seconds=settings["progress_seconds"],
        colocate_references=settings["colocate_references"], scan=settings["scan"],
        grouping_sets=settings["grouping_sets"], partition_by=tuple(settings["partition_by"] or ()),
        report=bool(settings["report"]), config=config, resampling=resampling_options(settings),
        metrics=tuple(settings["metrics"]), segments=bool(settings["segments"]),
        segments_columns=tuple(settings["segments_columns"] or ()),
        allow_empty_input=bool(settings["allow_empty_input"]),
        warnings=tuple(unused_option_warnings(settings)),
        metric_settings=tuple((k, settings[k]) for k in DEFAULTS if k.startswith(("chrf_", "ter_"))))


def resampling_options(settings: dict):
    from .resampling import Resampling

    return Resampling(confidence=bool(settings["confidence"]), method=settings["bootstrap_method"],
                      n_bootstrap=settings["n_bootstrap"], seed=settings["seed"],
                      paired_bs=bool(settings["paired_bs"]), paired_ar=bool(settings["paired_ar"]),
                      baseline=settings["baseline"], n_ar_trials=settings["n_ar_trials"],
                      clusters=bool(settings["clusters"]))


def aggregate_options(args: argparse.Namespace):
    from .aggregate import AggregateOptions

    if not args.output:
        raise UsageError("--output is required")
    config = BleuConfig(smooth_method=args.smooth_method or "exp", smooth_value=args.smooth_value,
                        effective_order=bool(args.effective_order))
    group_by = tuple(_csv(args.group_by)) if args.group_by is not None else None
    return AggregateOptions(stats=args.stats, output=args.output, group_by=group_by,
                            grouping_sets=parse_grouping_sets(args.grouping_sets),
                            where=args.where, report=bool(args.report), engine=args.engine,
                            config=config, weights=_csv(args.weights) if args.weights is not None else None,
                            confidence=bool(args.confidence), paired_bs=bool(args.paired_bs),
                            baseline=args.baseline, clusters=bool(args.clusters))


# Console columns aligned to the right: numbers.
NUMERIC = ("n_segments", "n_rejected", "score")


def format_table(scores: List[dict], group_cols) -> str:
    """A line per score row: its group, metric (as sacrebleu names it), the score, and the rest
    of sacrebleu's line where it has more (BLEU's precisions, BP, ratio and lengths)."""
    group_cols = list(dict.fromkeys(c for c in group_cols if any(r.get(c) is not None for r in scores)))
    several = len({r["grouping"] for r in scores}) > 1
    intervals = any(r.get("ci_low") is not None for r in scores)
    details = any(_details(r) for r in scores)
    ranked = any(r.get("cluster") is not None for r in scores)
    headers = [*group_cols, *(["grouping"] if several else []), "metric", "tokenize", "n_segments",
               "n_rejected", *(["95% CI"] if intervals else []),
               *(["rank (range)", "cluster"] if ranked else []), "score",
               *(["details"] if details else [])]
    rows = [[*(shown(r[c]) for c in group_cols),
             *([r["grouping"] or "()"] if several else []), _metric_name(r),
             str(r["tokenize"] or "-"), str(r["n_segments"]), str(r["n_rejected"]),
             *([_interval(r)] if intervals else []), *(_rank(r) if ranked else []),
             "-" if r["score"] is None else f"{r['score']:.2f}", *([_details(r)] if details else [])]
            for r in scores]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    align = [str.rjust if h in NUMERIC else str.ljust for h in headers]
    lines = ["  ".join(a(cell, w) for cell, w, a in zip(line, widths, align)).rstrip()
             for line in [headers, *rows]]
    return "\n".join(lines)


def _metric_name(row: dict) -> str:
    """sacrebleu's name of the row's metric (`BLEU`, `chrF2`, `chrF2++`, `TER`)."""
    return getattr(row, "sacrebleu", {}).get("name") or str(row.get("metric") or "-")


def _details(row: dict) -> str:
    if row["score"] is None:
        return "(no scored rows)"
    return getattr(row, "sacrebleu", {}).get("verbose_score") or ""


def _interval(row: dict) -> str:
    if row.get("ci_low") is None:
        return "-"
    return f"{row['ci_low']:.2f}-{row['ci_high']:.2f} (μ = {row['bs_mean']:.2f} ± {row['ci_halfwidth']:.2f})"


def _rank(row: dict) -> List[str]:
    if row.get("cluster") is None:
        return ["-", "-"]
    return [f"{row['rank']} ({row['rank_low']}-{row['rank_high']})", str(row["cluster"])]


def format_paired(paired: List[dict]) -> str:
    """One line per comparison, starred below 0.05 as the report does."""
    lines = []
    for row in paired:
        where = ", ".join(f"{k}={shown(v)}" for k, v in row.items()
                          if k not in views_paired_fields())
        star = "*" if row["p_value"] < 0.05 else " "
        interval = (f"  [{row['delta_ci_low']:+.2f}, {row['delta_ci_high']:+.2f}]"
                    if row.get("delta_ci_low") is not None else "")
        metric = f"{row['metric']} " if row.get("metric") else ""
        lines.append(f"{row['test']:9s} {where}  {metric}{shown(row['system'])} vs {shown(row['baseline'])}: "
                     f"delta {row['delta']:+.2f}  p = {row['p_value']:.4f}{star}{interval}")
    return "\n".join(lines)


def views_paired_fields():
    from .views import PAIRED_TYPES

    return {*PAIRED_TYPES, "method"}


def run_score(args: argparse.Namespace) -> int:
    from .spark.job import preflight, run_job
    from .spark.progress import say as say_progress
    from .spark.session import spark_session

    options = job_options(effective_settings(args))
    preflight(options)
    say_progress("starting Spark", options.progress_seconds)
    spark = spark_session()
    install_signal_handlers()
    try:
        result = run_job(spark, options)
        _written.append(options.output)
    finally:
        _stop_spark(spark)
    rows = result.run["rows"]
    _print_scores(result, f"rows: read {rows['read']}, scored {rows['scored']}, "
                          f"rejected {rows['rejected']}")
    if result.run.get("tokenizers"):  # --tokenize auto: the tokenizer each pair, as written, got
        print("tokenizers: " + ", ".join(f"{pair!r} {name}" for pair, name
                                         in result.run["tokenizers"].items()))
    _print_warnings(result.run["warnings"])
    if result.run["unmatched_reference_segments"]:
        print(f"{PROG}: note: {result.run['unmatched_reference_segments']} reference segments "
              f"matched no candidate", file=sys.stderr)
    print(wrote_line(options.output, result.run["timings"]["total_s"]))
    return 0


def run_aggregate(args: argparse.Namespace) -> int:
    from .aggregate import run_aggregate as aggregate

    options = aggregate_options(args)
    spark = None
    if options.on_spark:
        from .spark.session import spark_session

        spark = spark_session()
        install_signal_handlers()
    try:
        result = aggregate(options, spark)
    finally:
        if spark is not None:
            _stop_spark(spark)
    rows = result.run["rows"]
    _print_scores(result, f"segments: scored {rows['scored']}, rejected {rows['rejected']}")
    _print_warnings(result.run["warnings"])
    print(wrote_line(options.output, result.run["timings"]["total_s"]))
    return 0


def wrote_line(output: str, run_seconds: float) -> str:
    """Where the result went, the run's time and the whole process's (the JVM's start, reading
    the input's schema, stopping Spark: what a scheduler sees)."""
    return (f"wrote {output} in {run_seconds:.1f} s "
            f"({process_seconds():.1f} s since the process started)")


def process_seconds() -> float:
    """Seconds since this process started: from /proc where there is one, else since this
    module was imported."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22: start time
        with open("/proc/uptime", encoding="ascii") as uptime:
            return float(uptime.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.time() - _IMPORTED


def _print_scores(result, counts: str) -> None:
    """The scores table, the paired tests, a line of counts, and the signatures."""
    print(format_table(result.scores, _shown_columns(result.scores)))
    if result.paired:
        print("\n" + format_paired(result.paired))
    print(f"\n{counts}\n{format_signatures(result.scores)}")


def _print_warnings(warnings: List[str]) -> None:
    for warning in warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)


def _shown_columns(scores: List[dict]) -> List[str]:
    fields = set(views_fields())
    return [c for c in (scores[0] if scores else {}) if c not in fields]


def views_fields():
    from .views import GROUPING, SCORE_TYPES

    return [GROUPING, *SCORE_TYPES]


def format_signatures(scores: List[dict]) -> str:
    """Each distinct signature on a line of its own, after the metric's name, in metric order."""
    from .metrics import order_of

    named = sorted({(order_of(r.get("metric")), _metric_name(r), r["signature"])
                    for r in scores if r["signature"]})
    width = max((len(name) for _, name, _ in named), default=0)
    return "\n".join(["signatures:", *(f"  {name.ljust(width)}  {sig}" for _, name, sig in named)])


_received: List[int] = []  # the stop signals received, first first
_written: List[str] = []   # the output folder, once the run has written it whole


def _on_stop_signal(signum, frame):
    first = not _received
    _received.append(signum)
    if first:  # later ones only wait for the cleanup the first one started
        raise Interrupted(signum)


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM stop the run the same way: the exception unwinds the job, which removes
    its staging folder, and `main` exits with 128 + the signal number. Installed again once the
    SparkContext is up, as pyspark puts its own SIGINT handler in place."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_stop_signal)


def _stop_spark(spark) -> None:
    if _received:  # the JVM may be going down with the same signal: stopping it is best effort
        try:
            spark.stop()
        except Exception:
            pass
    else:
        spark.stop()


def main(argv: Optional[List[str]] = None) -> int:
    install_signal_handlers()
    try:
        args = build_parser().parse_args(argv)
        return run_aggregate(args) if args.command == "aggregate" else run_score(args)
    except BleuSparkError as exc:
        if not _received:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return exc.exit_code
        signum = _received[0]
    except Interrupted as exc:
        signum = exc.signum
    except (KeyboardInterrupt, Exception):
        # An interrupted Spark call fails in its own way (a cancelled job, a JVM gone): when a
        # stop signal came, that is the interruption, not a bug.
        if not _received:
            raise
        signum = _received[0]
    stopped = Interrupted(signum)
    done = (f"{_written[0]} was written in full before it came" if _written
            else "the run's staging folder is removed")
    print(f"{PROG}: error: interrupted by {stopped.name} (exit code {stopped.exit_code}); {done}",
          file=sys.stderr)
    return stopped.exit_code
