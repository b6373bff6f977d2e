"""`bleu-spark gate`: does a slice of saved statistics score worse than a baseline slice, by more
than an allowed drop and with significance? An exit code a scheduler acts on.

Both slices are read from the same statistics (`--stats`, as `aggregate` reads them: local or
object-store folders in this process with pyarrow, no JVM), each through its own filter
(`--where`, `--baseline-where`), and summed per group (`--group-by`) and metric. A group and
metric in both slices is compared:

    delta = score(slice) - score(baseline)      (sign flipped where lower is better: TER, ...)
    drop  = -delta

Significance comes from the replicate sums `score --confidence` keeps (poisson method): the
replicate scores of each slice are a bootstrap of its segments. The two slices hold other
segments (other days), so their resamples must be independent draws: replicate r of the slice
is set beside replicate (r + 1) mod B of the baseline. A segment's Poisson weights are a hash of
(seed, segment hash, replicate index), so two replicate indices are independent draws even for
a segment both slices hold. p is the share of those B replicate pairs whose drop is at most
`--max-drop`; a group and metric FAILS when its observed drop is more than `--max-drop` and
p < `--alpha`. Groups in one slice only are listed, never failed.
"""
from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from . import console, metrics, predicate, record, segments, settings, statstable, store
from .aggregate import check_output_apart
from .errors import (EmptySelectionError, GateFailedError, IncompatibleStatisticsError,
                     MissingColumnError, UsageError)
from .metrics.base import differing_options
from .resampling import scores_of_sums
from .scoring.groups import check_one_measurement, summed
from .scoring.rows import measured_by
from .scoring.replicates import MIN_INTERVAL_SEGMENTS
from .shown import shown
from .store.remote import is_remote

CURRENT, BASELINE = "--where", "--baseline-where"
PASS, FAIL = "PASS", "FAIL"
# The fields of a compared row beside its group columns (the table `--output` writes).
FIELDS = {"metric": pa.string(), "current": pa.float64(), "baseline": pa.float64(),
          "delta": pa.float64(), "p_value": pa.float64(), "verdict": pa.string(),
          "higher_is_better": pa.bool_(), "n_segments_current": pa.int64(),
          "n_segments_baseline": pa.int64()}
TABLE = "gate"


@dataclass(frozen=True)
class GateOptions:
    stats: Optional[str] = None
    where: Optional[str] = None                      # the slice under test
    baseline_where: Optional[str] = None             # the baseline slice
    group_by: Optional[Tuple[str, ...]] = None       # required: the groups compared
    max_drop: float = settings.default("max_drop")
    alpha: float = settings.default("alpha")
    metrics: Optional[Tuple[str, ...]] = None        # None: every metric the slices hold
    output: Optional[str] = None                     # also write the rows and run.json there
    parsed: Tuple[predicate.Predicate, ...] = field(init=False, default=(), compare=False,
                                                    repr=False)

    def __post_init__(self):
        needed = (("--stats PATH", self.stats), (f"{CURRENT} PREDICATE", self.where),
                  (f"{BASELINE} PREDICATE", self.baseline_where), ("--group-by COLS", self.group_by))
        missing = [flag for flag, value in needed if value is None]
        if missing:
            raise UsageError(f"gate needs {', '.join(missing)} ('' for --group-by compares each "
                             f"slice whole)")
        object.__setattr__(self, "group_by", tuple(dict.fromkeys(self.group_by)))
        taken = [c for c in self.group_by if c in FIELDS]
        if taken:  # a row holds its group's values beside these
            raise UsageError(f"--group-by {', '.join(taken)}: gate's rows have a field of that "
                             f"name ({', '.join(FIELDS)}); rename the column")
        settings.check("--max-drop", self.max_drop)
        settings.check("--alpha", self.alpha)
        if not (_is_local(self.stats) or is_remote(self.stats)):
            raise UsageError(f"gate reads statistics on a local disk or an object store (s3://, "
                             f"gs://, abfs://) in this process, not {self.stats}: copy them there, "
                             f"or compare with aggregate on Spark")
        with _flag(BASELINE):  # a filter's syntax before any reading
            baseline = predicate.parse(self.baseline_where)
        object.__setattr__(self, "parsed", (predicate.parse(self.where), baseline))
        if self.output:
            check_output_apart(self.stats, self.output)

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> "GateOptions":
        return cls(**settings.fields_from(cls, values))


@dataclass
class Slice:
    """One side, summed per group and measurement: the rows (Python values, no packed sums),
    the sums (with the replicate sums, read per group), its draw and the rows it stands for."""
    flag: str
    rows: List[dict]
    sums: pa.Table
    draw: str
    segments: int

    def by_key(self, group_by: Sequence[str]) -> Dict[tuple, int]:
        return {(*(r[c] for c in group_by), r["metric"]): i for i, r in enumerate(self.rows)}


@dataclass
class GateResult:
    rows: List[dict]          # every compared group and metric, failing first
    only_current: List[tuple]
    only_baseline: List[tuple]
    untested: List[tuple]     # in both, without enough scored segments on a side
    run: dict
    schema: pa.Schema

    @property
    def failed(self) -> List[dict]:
        return [r for r in self.rows if r["verdict"] == FAIL]


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


@contextlib.contextmanager
def _flag(flag: str):
    """The predicate's messages name `--where`; the baseline's name its own flag."""
    try:
        yield
    except UsageError as exc:
        text = str(exc)
        if flag == CURRENT or not text.startswith(f"bad {CURRENT} predicate"):
            raise
        raise UsageError(text.replace(CURRENT, flag, 1)) from None


def run_gate(options: GateOptions) -> GateResult:
    """read both slices -> compare -> write (with --output) -> the verdict."""
    started = time.time()
    run_id = store.new_run_id()
    sink = store.open_sink(options, run_id, "gate")
    try:
        current, baseline = (read_slice(options, where, flag) for where, flag
                             in zip(options.parsed, (CURRENT, BASELINE)))
        check_draws(current, baseline)
        result = compare(options, current, baseline, run_id)
        if sink:
            sink.write_table(TABLE, rows_table(result.rows, result.schema))
            result.run["timings"] = {"total_s": time.time() - started}
            sink.commit(result.run)
        return result
    except BaseException:
        if sink:
            sink.abort()
        raise


def read_slice(options: GateOptions, where: predicate.Predicate, flag: str) -> Slice:
    """One slice's statistics read through its filter and summed per group and measurement (a
    segments table's replicate sums drawn from its hashes first)."""
    with _flag(flag):
        stats = statstable.read(options.stats, where)
    if stats.num_rows == 0:
        raise EmptySelectionError(f"{flag} selects no rows of {options.stats} (columns it names: "
                                  f"{', '.join(where.columns())})")
    statstable.check_measurement(stats)
    known = statstable.group_columns_of(stats)
    absent = [c for c in options.group_by if c not in known]
    if absent:
        raise MissingColumnError(f"statistics have no group column {', '.join(absent)} "
                                 f"(group columns: {', '.join(known) or 'none'})")
    keys = [*options.group_by, *statstable.MEASUREMENT]
    if segments.is_segments_table(stats):
        stats = segments.summed(stats, keys, True)
    draw = draw_of(stats, flag)
    sums, plain = summed(stats, keys)
    rows = plain.to_pylist()
    check_one_measurement(rows, tuple(options.group_by))
    return Slice(flag, rows, sums, draw, statstable.counted_once(stats, "n_segments"))


def draw_of(stats: pa.Table, flag: str) -> str:
    """The one draw of a slice's replicate sums (`poisson:B:seed`), or a refusal (exit 11):
    rows without replicate sums, rows whose sums were of mixed draws, rows of several draws."""
    labels = set(stats[statstable.RESAMPLING].to_pylist())
    if labels & {"", None}:
        raise IncompatibleStatisticsError(
            f"the rows {flag} selects hold no replicate sums: gate tests from the bootstrap's "
            f"replicate sums, which score keeps with --confidence (poisson)")
    if statstable.MIXED in labels:
        raise IncompatibleStatisticsError(
            f"the rows {flag} selects hold replicate sums of mixed draws (resampling "
            f"'{statstable.MIXED}': summed from runs of other --n-bootstrap or --seed); select "
            f"statistics of one draw")
    if len(labels) > 1:
        raise IncompatibleStatisticsError(
            f"the rows {flag} selects hold replicate sums of different draws "
            f"({', '.join(sorted(labels))}); select rows of one draw")
    label = labels.pop()
    if int(label.split(":")[1]) < 2:
        raise IncompatibleStatisticsError(f"the rows {flag} selects hold one replicate ({label}): "
                                          f"gate needs two at least (--n-bootstrap)")
    return label


def check_draws(current: Slice, baseline: Slice) -> None:
    if current.draw != baseline.draw:
        raise IncompatibleStatisticsError(
            f"the slices' replicate sums are of different draws ({CURRENT}: {current.draw}, "
            f"{BASELINE}: {baseline.draw}); compare slices scored with the same --n-bootstrap "
            f"and --seed")


def compare(options: GateOptions, current: Slice, baseline: Slice, run_id: str) -> GateResult:
    """Every group and metric of both slices compared; the others listed."""
    group_by = list(options.group_by)
    mine, theirs = current.by_key(group_by), baseline.by_key(group_by)
    held = {key[-1] for key in (*mine, *theirs)}
    wanted = _wanted_metrics(options.metrics, held)
    mine = {k: i for k, i in mine.items() if k[-1] in wanted}
    theirs = {k: i for k, i in theirs.items() if k[-1] in wanted}
    both = sorted((k for k in mine if k in theirs), key=_order)
    if not both:
        raise EmptySelectionError(
            f"no group of --group-by {_columns(group_by)} is in both slices "
            f"({len(mine)} in {CURRENT}'s, {len(theirs)} in {BASELINE}'s): group by columns "
            f"both slices share, not the columns they are cut by")
    # The default scoring choices (BLEU's exp smoothing, ...), one metric per measurement.
    metric_for = measured_by(metrics.checked_choices({}, [*current.rows, *baseline.rows]))
    rows, untested = [], []
    for key in both:
        row = compared(options, key, current, mine[key], baseline, theirs[key], metric_for)
        (rows if row is not None else untested).append(row if row is not None else key)
    rows.sort(key=lambda r: r["verdict"] != FAIL)  # stable: failures first, then group order
    only_current = sorted((k for k in mine if k not in theirs), key=_order)
    only_baseline = sorted((k for k in theirs if k not in mine), key=_order)
    schema = pa.schema([*(current.sums.schema.field(c) for c in group_by),
                        *(pa.field(n, t) for n, t in FIELDS.items())])
    result = GateResult(rows, only_current, only_baseline, untested, {}, schema)
    result.run = run_record(options, current, baseline, result, run_id)
    return result


def _columns(group_by: Sequence[str]) -> str:
    return ",".join(group_by) or "''"


def _order(key: tuple) -> tuple:
    """Groups in their columns' order (nulls last), metrics in the registry's."""
    return (*((v is None, v) for v in key[:-1]), metrics.order_of(key[-1]), key[-1])


def _wanted_metrics(names: Optional[Sequence[str]], held: set) -> set:
    if names is None:
        return held
    unknown = [n for n in names if n not in held]
    if unknown:
        raise UsageError(f"--metrics names {', '.join(unknown)}, which the slices do not hold "
                         f"(they hold {', '.join(sorted(held, key=metrics.order_of))})")
    return set(names)


def compared(options: GateOptions, key: tuple, current: Slice, mine: int, baseline: Slice,
             theirs: int, metric_for) -> Optional[dict]:
    """One group and metric of both slices: scores, delta, p and verdict; None when a side has
    fewer scored segments than a bootstrap needs (as for intervals)."""
    now, then = current.rows[mine], baseline.rows[theirs]
    check_same_measurement(now, then, key, options.group_by)
    if min(now["n_segments"] or 0, then["n_segments"] or 0) < MIN_INTERVAL_SEGMENTS:
        return None
    metric = metric_for(now)
    score_now = metric.result([now[n] for n in metric.names], now)["score"]
    score_then = metric.result([then[n] for n in metric.names], then)["score"]
    sign = 1.0 if metric.higher_is_better else -1.0
    delta = sign * (score_now - score_then)
    drops = replicate_drops(metric, replicates(current, mine, key, metric.width, options.group_by),
                            replicates(baseline, theirs, key, metric.width, options.group_by))
    p_value = p_value_of(drops, options.max_drop)
    failed = -delta > options.max_drop and p_value is not None and p_value < options.alpha
    return {**dict(zip(options.group_by, key[:-1])), "metric": key[-1], "current": score_now,
            "baseline": score_then, "delta": delta, "p_value": p_value,
            "verdict": FAIL if failed else PASS, "higher_is_better": metric.higher_is_better,
            "n_segments_current": now["n_segments"], "n_segments_baseline": then["n_segments"]}


def check_same_measurement(now: dict, then: dict, key: tuple, group_by: Sequence[str]) -> None:
    """Scores of one metric measured otherwise (tokenizer, case, max order, version) are not of
    one scale: comparing them is refused, as summing them is (exit 11)."""
    differing = {m: f"{now[m]} vs {then[m]}" for m in statstable.MEASUREMENT
                 if now[m] != then[m] and m != statstable.METRIC_OPTIONS}
    differing.update(differing_options(now[statstable.METRIC_OPTIONS] or "",
                                       then[statstable.METRIC_OPTIONS] or ""))
    if differing:
        where = ", ".join(f"{c}={shown(v)}" for c, v in zip(group_by, key)) or "the whole table"
        what = "; ".join(f"{m}: {v}" for m, v in differing.items())
        raise IncompatibleStatisticsError(
            f"group {where} ({key[-1]}) was measured with different settings in the two slices "
            f"({what}); compare slices measured alike")


def replicates(side: Slice, index: int, key: tuple, width: int, group_by) -> np.ndarray:
    """A group's replicate sums in one slice, (B, width)."""
    matrix = statstable.sample_matrix(side.sums, statstable.REPLICATE_SUMS, index, width)
    if matrix is None:
        where = ", ".join(f"{c}={shown(v)}" for c, v in zip(group_by, key)) or "the whole table"
        raise IncompatibleStatisticsError(f"group {where} ({key[-1]}) of {side.flag} holds no "
                                          f"replicate sums: score it with --confidence")
    return matrix


def replicate_drops(metric: metrics.Metric, current_sums: np.ndarray,
                    baseline_sums: np.ndarray) -> np.ndarray:
    """The drop of each replicate pair, (B,): replicate r of the slice against replicate
    (r + 1) mod B of the baseline, so the two resamples are independent draws even where both
    slices hold a segment (its weights at two replicate indices are two hashes)."""
    sign = 1.0 if metric.higher_is_better else -1.0
    shifted = np.roll(baseline_sums, -1, axis=0)  # row r: the baseline's replicate r + 1
    return -sign * (scores_of_sums(current_sums, metric) - scores_of_sums(shifted, metric))


def p_value_of(drops: np.ndarray, max_drop: float) -> Optional[float]:
    """The share of replicate pairs dropping by at most `max_drop`, among those with a score on
    both sides (a replicate that drew none of a side's segments has none: a mean of nothing)."""
    finite = drops[np.isfinite(drops)]
    return float(np.mean(finite <= max_drop)) if len(finite) else None


def rows_table(rows: List[dict], schema: pa.Schema) -> pa.Table:
    return pa.table({f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in schema})


def run_record(options: GateOptions, current: Slice, baseline: Slice, result: GateResult,
               run_id: str) -> dict:
    failed = len(result.failed)
    return {
        **record.started(run_id, "gate"), "stats": options.stats, "output": options.output,
        "where": options.where, "baseline_where": options.baseline_where,
        "group_by": list(options.group_by), "metrics": sorted({r["metric"] for r in result.rows}),
        "max_drop": options.max_drop, "alpha": options.alpha, "resampling": current.draw,
        "segments": {"current": current.segments, "baseline": baseline.segments},
        "compared": len(result.rows), "failed": failed,
        "only_current": len(result.only_current), "only_baseline": len(result.only_baseline),
        "untested": len(result.untested),
        "verdict": FAIL if failed else PASS,
        "exit_code": GateFailedError.exit_code if failed else 0,
        "versions": record.versions(),
    }


# --- the console -----------------------------------------------------------------------------

def lines(result: GateResult, options: GateOptions) -> List[str]:
    """A header, a line per compared group and metric (failures first, at most the console's
    rows), a line on the rows left out, and the summary."""
    group_by = list(options.group_by)
    headers = [*group_by, "metric", "current", "baseline", "delta", "p", "verdict"]
    kept = result.rows[:console.SHOWN_ROWS]
    cells = [[*(shown(r[c]) for c in group_by), r["metric"], f"{r['current']:.2f}",
              f"{r['baseline']:.2f}", f"{r['delta']:+.2f}", _p(r["p_value"]), r["verdict"]]
             for r in kept]
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(headers)]
    numeric = {"current", "baseline", "delta", "p"}
    table = ["  ".join(cell.rjust(w) if h in numeric else cell.ljust(w)
                       for cell, w, h in zip(line, widths, headers)).rstrip()
             for line in [headers, *cells]]
    out = [f"gate: {CURRENT} {options.where!r} against {BASELINE} {options.baseline_where!r}; "
           f"a drop of more than {options.max_drop:g} with p < {options.alpha:g} fails "
           f"({_pairs(result.run['resampling'])})", *table]
    if len(result.rows) > len(kept):
        hidden = len(result.rows) - len(kept)
        hidden_failed = max(0, len(result.failed) - len(kept))
        where = (f"all in {options.output}/{TABLE}/" if options.output
                 else "--output DIR writes them all")
        out.append(f"... {hidden} more rows not shown ({hidden_failed} of them FAIL); {where}")
    out.append(summary(result, group_by))
    return out


def _pairs(draw: str) -> str:
    _, n_bootstrap, seed = draw.split(":")
    return f"{n_bootstrap} replicate pairs of the saved draw, seed {seed}"


def _p(value: Optional[float]) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"


def summary(result: GateResult, group_by: Sequence[str], named: int = 3) -> str:
    """One line: the verdict's counts, and the groups not compared (a few named)."""
    def listed(keys: List[tuple]) -> str:
        names = ["/".join([*(f"{c}={shown(v)}" for c, v in zip(group_by, k[:-1])), k[-1]])
                 for k in keys[:named]]
        more = f", ... ({len(keys)} in all)" if len(keys) > named else ""
        return f" ({', '.join(names)}{more})" if keys else ""

    failed = len(result.failed)
    return (f"compared {len(result.rows)} groups and metrics: {failed} FAIL, "
            f"{len(result.rows) - failed} PASS; not compared: {len(result.only_current)} only in "
            f"{CURRENT}'s slice{listed(result.only_current)}, {len(result.only_baseline)} only in "
            f"{BASELINE}'s{listed(result.only_baseline)}, {len(result.untested)} with fewer than "
            f"{MIN_INTERVAL_SEGMENTS} scored segments on a side{listed(result.untested)}")


def failure_message(result: GateResult, options: GateOptions, named: int = 3) -> str:
    """The one line of a failed gate (exit 20), naming the first failing groups."""
    failed = result.failed
    names = ["/".join([*(f"{c}={shown(r[c])}" for c in options.group_by), r["metric"]])
             + f" ({r['delta']:+.2f})" for r in failed[:named]]
    more = f", ... ({len(failed)} in all)" if len(failed) > named else ""
    return (f"gate failed: {len(failed)} of {len(result.rows)} groups and metrics dropped by "
            f"more than {options.max_drop:g} with p < {options.alpha:g}: "
            f"{', '.join(names)}{more}")
