"""`bleu-spark score`, `aggregate` and `gate`: arguments, the optional YAML job file, exit
codes, the console table."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from typing import List, Optional

from .version import __version__
from . import console, declaration, notices, settings, store
from .errors import BleuSparkError, ConfigFileError, Interrupted, UsageError
from .spark.runtime.jvm_archive import SWITCH as ARCHIVE_SWITCH

PROG = notices.PROG
_IMPORTED = time.time()
STOP_WAIT_S = 10  # for Spark to stop once a stop signal came

# Job-file keys, their defaults and kinds, from the declarations; a flag given on the command
# line wins over the file.
DEFAULTS = settings.defaults()
JOB_FILE_KINDS = {key: option.kind for key, option in settings.job_file_keys().items()}


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


def _add_options(parser, command: str) -> None:
    """The declared options a command takes, in their help groups."""
    groups = {}
    for option in settings.declared():
        if command not in option.commands:
            continue
        if option.group not in groups:
            groups[option.group] = parser.add_argument_group(option.group)
        groups[option.group].add_argument(option.flag, **_argument(option))


def _argument(option: declaration.Option) -> dict:
    """argparse's keywords for an option. An option the job file may hold has no argparse
    default (not given is None, so the file's value or the declared default applies)."""
    if option.kind == declaration.BOOLEAN:
        return {"action": argparse.BooleanOptionalAction, "default": None, "help": option.help}
    kind = {declaration.INTEGER: int, declaration.NUMBER: float}.get(option.kind)
    keywords = {"help": option.help, "metavar": option.metavar, "choices": option.choices}
    if kind:
        keywords["type"] = kind
    if not option.job_file:
        keywords["default"] = option.default
    if option.required:
        keywords["required"] = True
    return {k: v for k, v in keywords.items() if v is not None}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="sacrebleu-exact corpus BLEU per group, on Spark.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    score = commands.add_parser("score", help="score a Parquet table of candidates and references",
                                description="Score a Parquet table: one corpus BLEU per group.")
    _add_options(score, declaration.SCORE)
    aggregate = commands.add_parser(
        "aggregate", help="score any grouping or slice of saved statistics, without the text",
        description="Score saved statistics (DIR/stats of a score run) at any coarser grouping "
                    "or slice; equal to a fresh run on the same rows.")
    _add_options(aggregate, declaration.AGGREGATE)
    gate = commands.add_parser(
        "gate", help="exit 20 when a slice of saved statistics scores significantly worse than "
                     "a baseline slice",
        description="Compare a slice of saved statistics (--where) with a baseline slice "
                    "(--baseline-where) per group and metric, from their replicate sums: exit 20 "
                    "when a score drops by more than --max-drop with p < --alpha.")
    _add_options(gate, declaration.GATE)
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
             if value is not None and not declaration.KIND_CHECKS[JOB_FILE_KINDS[key]](value)]
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
    """`score`'s option values: the declared defaults, the job file's, the flags given; each
    converted by its kind, and the rules of the command line checked."""
    values = dict(DEFAULTS)
    if args.config:
        values.update(load_job_file(args.config))
    values.update({k: v for k, v in vars(args).items() if k in DEFAULTS and v is not None})
    values = settings.converted(values)
    if not values["input"]:
        raise UsageError("--input is required (on the command line or in the job file)")
    check_places(values, ("input", "references", "output"),
                 " (or both; on the command line or in the job file)")
    return values


def given_settings(args: argparse.Namespace) -> dict:
    """`aggregate`'s option values: the flags given, each converted by its kind, and the rules of
    the command line checked."""
    values = settings.converted({k: v for k, v in vars(args).items() if v is not None})
    check_places(values, ("stats", "output"), " (or both)")
    return values


def check_places(values: dict, paths, where: str) -> None:
    """Both commands: somewhere to write, and each path a whole URI or a local path."""
    if not values.get("output") and not values.get("catalog"):
        raise UsageError(f"--output DIR or --catalog DB is required{where}")
    for key in paths:
        if isinstance(values.get(key), str):
            store.check_uri(f"--{key}", values[key])


def job_options(values: dict):
    from .spark.options import JobOptions

    return JobOptions.from_values(values)


def aggregate_options(args: argparse.Namespace):
    from .aggregate import AggregateOptions

    return AggregateOptions.from_values(given_settings(args))


def run_score(args: argparse.Namespace) -> int:
    from .spark.job import preflight, run_job
    from .spark.progress import say as say_progress
    from .spark.runtime import start as spark_session

    options = job_options(effective_settings(args))
    _configure_storage()  # the output's S3 settings from spark-defaults, before any check of it
    preflight(options)
    say_progress("starting Spark", options.progress_seconds)
    spark = spark_session()
    install_signal_handlers()
    try:
        result = run_job(spark, options)
        _written.append(written_to(options))
    finally:
        _stop_spark(spark)
    if result.run.get("unchanged"):
        notices.print_warnings(result.run["warnings"])
        measured = result.run["incremental"]["files_measured"]
        print(f"nothing new in {options.input}: its {measured:,} file{'s' if measured != 1 else ''} "
              f"measured by earlier runs into {options.output}, left as it was")
        return 0
    rows = result.run["rows"]
    console.print_scores(result, f"rows: read {rows['read']}, scored {rows['scored']}, "
                          f"rejected {rows['rejected']}", options.output, options.catalog)
    if result.run.get("tokenizers"):  # --tokenize auto: the tokenizer each pair, as written, got
        print("tokenizers: " + ", ".join(f"{pair!r} {name}" for pair, name
                                         in result.run["tokenizers"].items()))
    notices.print_warnings(result.run["warnings"])
    if result.run["unmatched_reference_segments"]:
        print(f"{PROG}: note: {result.run['unmatched_reference_segments']} reference segments "
              f"matched no candidate", file=sys.stderr)
    print(wrote_line(written_to(options), result.run["timings"]["total_s"]))
    return 0


def written_to(options) -> str:
    """Where a run's result went: its folder, its catalog database, or both."""
    places = [options.output] if options.output else []
    if options.catalog:
        places.append(f"catalog database {options.catalog}")
    return " and ".join(places)


def run_aggregate(args: argparse.Namespace) -> int:
    from .aggregate import run_aggregate as aggregate

    options = aggregate_options(args)
    if any(store.is_s3(p or "") for p in (options.stats, options.output)):
        _configure_storage()
    spark = None
    if options.on_spark:
        from .spark.progress import say as say_progress
        from .spark.runtime import start as spark_session

        say_progress("starting Spark", options.progress_seconds)
        spark = spark_session()
        install_signal_handlers()
    try:
        result = aggregate(options, spark)
    finally:
        if spark is not None:
            _stop_spark(spark)
    rows = result.run["rows"]
    console.print_scores(result, f"segments: scored {rows['scored']}, rejected {rows['rejected']}",
                         options.output, options.catalog)
    notices.print_warnings(result.run["warnings"])
    print(wrote_line(written_to(options), result.run["timings"]["total_s"]))
    return 0


def run_gate(args: argparse.Namespace) -> int:
    """The compared rows printed (bounded), then exit 20 when a group failed (one line)."""
    from .errors import GateFailedError
    from .gate import GateOptions, failure_message, lines, run_gate as gate

    values = settings.converted({k: v for k, v in vars(args).items() if v is not None})
    for key in ("stats", "output"):
        if isinstance(values.get(key), str):
            store.check_uri(f"--{key}", values[key])
    options = GateOptions.from_values(values)
    if any(store.is_s3(p or "") for p in (options.stats, options.output)):
        _configure_storage()
    result = gate(options)
    print("\n".join(lines(result, options)))
    if options.output:
        print(wrote_line(options.output, result.run["timings"]["total_s"]))
    if result.failed:
        raise GateFailedError(failure_message(result, options))
    return 0


def command(name: str):
    """The function running a command, looked up as it is called."""
    return {"score": run_score, "aggregate": run_aggregate, "gate": run_gate}[name]


def _configure_storage() -> None:
    """The `spark.hadoop.fs.s3a.*` settings known before Spark starts, for this process's S3
    client (`score` then takes them again from its session's whole conf)."""
    from .spark.runtime import settings_before_start

    store.configure(settings_before_start())


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


_received: List[int] = []  # the stop signals received, first first
_written: List[str] = []   # the output folder, once the run has written it whole
_unstopped: List[object] = []  # a Spark that had not stopped STOP_WAIT_S after a stop signal


def _on_stop_signal(signum, frame):
    first = not _received
    _received.append(signum)
    os.environ[ARCHIVE_SWITCH] = "0"  # a run told to stop starts nothing that outlives it
    if first:  # later ones only wait for the cleanup the first one started
        raise Interrupted(signum)


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM stop the run the same way: the exception unwinds the job, which removes
    its files, and `main` exits with 128 + the signal number. Installed again once the
    SparkContext is up, as pyspark puts its own SIGINT handler in place."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_stop_signal)


def _stop_spark(spark) -> None:
    if not _received:
        spark.stop()
        return
    # Stopped by a signal, the JVM may be going down with it, or a Spark Connect server still
    # busy with the job the signal cut short (its session's release then waits for it): stopping
    # is best effort, and the exit waits STOP_WAIT_S for it at most.
    stopper = threading.Thread(target=_stop_quietly, args=(spark,), daemon=True)
    stopper.start()
    stopper.join(STOP_WAIT_S)
    if stopper.is_alive():
        _unstopped.append(spark)


def _stop_quietly(spark) -> None:
    try:
        spark.stop()
    except Exception:
        pass


def main(argv: Optional[List[str]] = None) -> int:
    install_signal_handlers()
    try:
        args = build_parser().parse_args(argv)
        return command(args.command)(args)
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
            else "the run's files are removed")
    print(f"{PROG}: error: interrupted by {stopped.name} (exit code {stopped.exit_code}); {done}",
          file=sys.stderr)
    if _unstopped:
        _leave_now(stopped.exit_code)
    return stopped.exit_code


def _leave_now(code: int) -> None:
    """The exit without the interpreter's exit-time work: a Spark Connect client that did not stop
    has its own there (pyspark's atexit calls to clean its ML cache and release the session, its
    release threads, which the interpreter joins), each a call with no deadline to a server still
    busy with the job the signal cut short. The run's files are removed by now."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
