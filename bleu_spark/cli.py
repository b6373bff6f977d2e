"""`bleu-spark score`: arguments, the optional YAML job file, exit codes, the console table."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from . import __version__
from .config import AUTO, SMOOTH_DEFAULTS, TOKENIZERS, BleuConfig
from .errors import BleuSparkError, ConfigFileError, UsageError

PROG = "bleu-spark"

# Job-file keys and their defaults; a flag given on the command line wins over the file.
DEFAULTS = {
    "input": None, "output": None, "group_by": None, "tokenize": AUTO, "lowercase": False,
    "smooth_method": "exp", "smooth_value": None, "max_ngram_order": 4,
    "effective_order": False, "weights": None, "spm_model": None,
    "candidate_col": "candidate", "references_col": ["references"], "langpair_col": "langpair",
    "references": None, "join_on": None, "segment_key": None, "on_invalid": "fail",
    "progress_seconds": 30.0,
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, not argparse's usage dump
        raise UsageError(message)


def _csv(text: str) -> List[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="sacrebleu-exact corpus BLEU per group, on Spark.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    score = commands.add_parser("score", help="score a Parquet table of candidates and references",
                                description="Score a Parquet table: one corpus BLEU per group.")
    io = score.add_argument_group("input and output")
    io.add_argument("--input", help="Parquet file, folder or glob of candidates (required)")
    io.add_argument("--output", help="output directory, replaced whole on success (required)")
    io.add_argument("--config", help="YAML job file; flags given here override its keys")
    io.add_argument("--group-by", help="comma-separated group columns "
                    "(default: system,langpair, those present; '' for one corpus)")
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
                    help="a progress line on stderr every S seconds (default 30; 0: none)")
    bleu = score.add_argument_group("BLEU (as sacrebleu's options)")
    bleu.add_argument("--tokenize", metavar="NAME",
                      help=f"auto (default: by target language) or one of {', '.join(TOKENIZERS)}")
    bleu.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                      help="lowercase candidates and references")
    bleu.add_argument("--smooth-method", metavar="NAME",
                      help=f"one of {', '.join(SMOOTH_DEFAULTS)} (default: exp)")
    bleu.add_argument("--smooth-value", type=float, help="value for floor (0.1) or add-k (1)")
    bleu.add_argument("--max-ngram-order", type=int, help="highest n-gram order (default: 4)")
    bleu.add_argument("--effective-order", action=argparse.BooleanOptionalAction, default=None,
                      help="leave out orders with no n-grams (off for corpus BLEU)")
    bleu.add_argument("--weights", help="comma-separated n-gram weights w1,...,wN (default: uniform)")
    bleu.add_argument("--spm-model", help="local SentencePiece model for flores101, flores200, spBLEU-1K")
    return parser


def load_job_file(path: str) -> dict:
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            values = yaml.safe_load(handle) or {}
    except OSError as exc:
        raise ConfigFileError(f"cannot read job file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigFileError(f"job file {path} is not valid YAML: {exc}".replace("\n", " ")) from None
    if not isinstance(values, dict):
        raise ConfigFileError(f"job file {path} must be a mapping of option: value")
    values = {key.replace("-", "_"): value for key, value in values.items()}
    unknown = sorted(set(values) - set(DEFAULTS))
    if unknown:
        raise ConfigFileError(f"job file {path} has unknown keys: {', '.join(unknown)}")
    return values


def effective_settings(args: argparse.Namespace) -> dict:
    settings = dict(DEFAULTS)
    if args.config:
        settings.update(load_job_file(args.config))
    settings.update({k: v for k, v in vars(args).items() if k in DEFAULTS and v is not None})
    for key in ("group_by", "weights", "references_col", "join_on", "segment_key"):
        if isinstance(settings[key], str):
            settings[key] = _csv(settings[key])
    for key in ("input", "output"):
        if not settings[key]:
            raise UsageError(f"--{key} is required (on the command line or in the job file)")
    return settings


def job_options(settings: dict):
    from .spark.job import JobOptions

    weights = settings["weights"]
    try:
        weights = tuple(float(w) for w in weights) if weights is not None else None
    except (TypeError, ValueError):
        raise UsageError(f"--weights must be comma-separated numbers, got {weights!r}") from None
    config = BleuConfig(
        tokenize=settings["tokenize"], lowercase=bool(settings["lowercase"]),
        smooth_method=settings["smooth_method"], smooth_value=settings["smooth_value"],
        max_ngram_order=settings["max_ngram_order"], effective_order=bool(settings["effective_order"]),
        weights=weights, spm_model=settings["spm_model"])
    group_by = settings["group_by"]
    return JobOptions(
        input=settings["input"], output=settings["output"],
        group_by=tuple(group_by) if group_by is not None else None,
        candidate_col=settings["candidate_col"], references_cols=tuple(settings["references_col"]),
        langpair_col=settings["langpair_col"], references=settings["references"],
        join_on=tuple(settings["join_on"] or ()), segment_key=tuple(settings["segment_key"] or ()),
        on_invalid=settings["on_invalid"], progress_seconds=settings["progress_seconds"],
        config=config)


def format_table(scores: List[dict], group_cols) -> str:
    headers = [*group_cols, "tokenize", "n_segments", "n_rejected", "BLEU"]
    rows = [[*("" if r[c] is None else str(r[c]) for c in group_cols), str(r["tokenize"] or "-"),
             str(r["n_segments"]), str(r["n_rejected"]), r["verbose"] or "(no scored rows)"]
            for r in scores]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip()
             for line in [headers, *rows]]
    return "\n".join(lines)


def run_score(args: argparse.Namespace) -> int:
    from .spark.job import preflight, run_job, spark_session

    options = job_options(effective_settings(args))
    preflight(options)
    spark = spark_session()
    try:
        result = run_job(spark, options)
    finally:
        spark.stop()
    print(format_table(result.scores, result.run["group_by"]))
    rows = result.run["rows"]
    print(f"\nrows: read {rows['read']}, scored {rows['scored']}, rejected {rows['rejected']}"
          f"  |  signature: {_signatures(result.scores)}")
    for warning in result.run["warnings"]:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    if result.run["unmatched_reference_segments"]:
        print(f"{PROG}: note: {result.run['unmatched_reference_segments']} reference segments "
              f"matched no candidate", file=sys.stderr)
    print(f"wrote {options.output} in {result.run['timings']['total_s']:.1f} s")
    return 0


def _signatures(scores: List[dict]) -> str:
    return "; ".join(sorted({r["signature"] for r in scores if r["signature"]}))


def main(argv: Optional[List[str]] = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return run_score(args)
    except BleuSparkError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
