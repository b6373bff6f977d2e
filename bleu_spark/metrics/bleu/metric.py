"""BLEU as a metric: sacrebleu 2.6's corpus BLEU from summed statistics.

Segment statistics `[sys_len, ref_len, correct_1 .. correct_N, total_1 .. total_N]` come from
`bleu_spark.stats` (tokenized by the row's tokenizer); the score from sums is ONE formula, here
twice only in form: `bleu_from_statistics` on one vector (sacrebleu's exact arithmetic, for every
shown score) and `scores_of_sums` over many rows (bootstrap replicates, randomization trials),
equal to it within 1e-12. The result record, sacrebleu's text line and signature, and the
interpretation bands a person reads a BLEU score by are BLEU's alone.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ...declaration import check_weights
from ...errors import UsageError
from ..base import Metric, OptionsText, StatColumn, nrefs_label
from .options import OPTIONS, BleuConfig
from .signature import bleu_fields
from .stats import segment_statistics, stats_names

# sacrebleu's floor for log(0), so a zero precision gives a score of (almost exactly) 0.
LOG_ZERO = -9999999999


def _log(value: float) -> float:
    return LOG_ZERO if value == 0.0 else math.log(value)


@dataclass(frozen=True)
class BleuResult:
    score: float
    counts: List[int]
    totals: List[int]
    precisions: List[float]
    bp: float
    ratio: float
    sys_len: int
    ref_len: int
    n_segments: int
    tokenize: str
    signature: str
    verbose: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)  # its fields, in order; the lists are this result's own


def brevity_penalty(sys_len: int, ref_len: int) -> float:
    if sys_len >= ref_len:
        return 1.0
    return math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0


def precisions_and_order(correct: Sequence[int], totals: Sequence[int],
                         config: BleuConfig) -> Tuple[List[float], int]:
    """Percent precisions per order with sacrebleu's smoothing, and the orders to average.

    Follows sacrebleu's `compute_bleu` step by step, on local values: its own version adds the
    add-k constant into the caller's lists.
    """
    order = config.max_ngram_order
    k = config.effective_smooth_value
    precisions = [0.0] * order
    eff_order = order
    smooth_mteval = 1.0
    for n in range(order):
        c, t = correct[n], totals[n]
        if config.smooth_method == "add-k" and n > 0:
            c, t = c + k, t + k
        if t == 0:
            break
        if config.effective_order:
            eff_order = n + 1
        if c == 0:
            if config.smooth_method == "exp":
                smooth_mteval *= 2
                precisions[n] = 100.0 / (smooth_mteval * t)
            elif config.smooth_method == "floor":
                precisions[n] = 100.0 * k / t
        else:
            precisions[n] = 100.0 * c / t
    return precisions, eff_order


def bleu_from_statistics(stats: Sequence[int], config: BleuConfig) -> Tuple[float, List[float], float]:
    """(score, precisions, bp) from one summed statistics vector."""
    order = config.max_ngram_order
    sys_len, ref_len = int(stats[0]), int(stats[1])
    correct, totals = stats[2:2 + order], stats[2 + order:2 + 2 * order]
    bp = brevity_penalty(sys_len, ref_len)
    if not any(correct):
        return 0.0, [0.0] * order, bp
    precisions, eff_order = precisions_and_order(correct, totals, config)
    logs = [_log(p) for p in precisions[:eff_order]]
    if config.weights is None:
        mean_log = sum(logs) / eff_order  # sacrebleu's exact arithmetic
    else:
        weights = config.weights[:eff_order]
        if sum(weights) == 0:
            # Effective order left out every order that carries weight (segments too short for
            # them): those orders have no n-grams, a precision of 0, as without effective order.
            return 0.0, precisions, bp
        mean_log = sum(w * lp for w, lp in zip(weights, logs)) / sum(weights)
    return bp * math.exp(mean_log), precisions, bp


def bleu_details(precisions: Sequence[float], bp: float, ratio: float, sys_len: int,
                 ref_len: int) -> str:
    """sacrebleu's text after the score (its JSON's `verbose_score`), formatted by Python."""
    prec = "/".join(f"{p:.1f}" for p in precisions)
    return f"{prec} (BP = {bp:.3f} ratio = {ratio:.3f} hyp_len = {sys_len:d} ref_len = {ref_len:d})"


def bleu_line(score: float, precisions: Sequence[float], bp: float, ratio: float,
              sys_len: int, ref_len: int) -> str:
    """sacrebleu's `str(BLEUScore)`, formatted by Python (round half to even, as sacrebleu)."""
    return f"BLEU = {score:.2f} {bleu_details(precisions, bp, ratio, sys_len, ref_len)}"


def build_result(stats: Sequence[int], config: BleuConfig, n_segments: int, tokenize: str,
                 signature: str) -> BleuResult:
    values = _scored(stats, config)
    return BleuResult(*values, n_segments=n_segments, tokenize=tokenize, signature=signature,
                      verbose=_line(values))


def _scored(stats: Sequence[int], config: BleuConfig) -> tuple:
    """A result's values from one summed vector: score, counts, totals, precisions, bp, ratio,
    sys_len, ref_len (BleuResult's first fields, in its order)."""
    order = config.max_ngram_order
    score, precisions, bp = bleu_from_statistics(stats, config)
    sys_len, ref_len = int(stats[0]), int(stats[1])
    ratio = sys_len / ref_len if ref_len else 0.0
    return (score, [int(c) for c in stats[2:2 + order]],
            [int(t) for t in stats[2 + order:2 + 2 * order]], precisions, bp, ratio, sys_len,
            ref_len)


def _line(values: tuple) -> str:
    score, _, _, precisions, bp, ratio, sys_len, ref_len = values
    return bleu_line(score, precisions, bp, ratio, sys_len, ref_len)


# --- scores of many summed vectors at once -------------------------------------------------------

def _brevity_penalties(sys_len: np.ndarray, ref_len: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        short = np.exp(1 - ref_len / sys_len)
    return np.where(sys_len >= ref_len, 1.0, np.where(sys_len > 0, short, 0.0))


def _smoothed_precisions(correct: np.ndarray, totals: np.ndarray, config: BleuConfig):
    """(precisions, effective order) per row: `precisions_and_order` on every row at
    once; `alive` follows its loop, which stops at the first order with no n-grams."""
    rows, order = correct.shape
    k = config.effective_smooth_value
    precisions = np.zeros((rows, order))
    eff_order = np.full(rows, order)
    alive = np.ones(rows, bool)
    smooth_mteval = np.ones(rows)
    for n in range(order):
        c, t = correct[:, n].astype(np.float64), totals[:, n].astype(np.float64)
        if config.smooth_method == "add-k" and n > 0:
            c, t = c + k, t + k
        alive &= t != 0
        if config.effective_order:
            eff_order = np.where(alive, n + 1, eff_order)
        zero = alive & (c == 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            if config.smooth_method == "exp":
                smooth_mteval = np.where(zero, smooth_mteval * 2, smooth_mteval)
                precisions[:, n] = np.where(zero, 100.0 / (smooth_mteval * t), 0.0)
            elif config.smooth_method == "floor":
                precisions[:, n] = np.where(zero, 100.0 * k / t, 0.0)
            precisions[:, n] = np.where(alive & (c != 0), 100.0 * c / t, precisions[:, n])
    return precisions, eff_order


def scores_of_sums(sums: np.ndarray, config: BleuConfig) -> np.ndarray:
    """BLEU of each row of `sums` (B, width): `bleu_from_statistics` vectorized (equal to it
    within 1e-12; numpy's log and exp may differ from libm's in the last bit)."""
    sums = np.asarray(sums)
    order = config.max_ngram_order
    correct, totals = sums[:, 2:2 + order], sums[:, 2 + order:2 + 2 * order]
    bp = _brevity_penalties(sums[:, 0].astype(np.float64), sums[:, 1].astype(np.float64))
    precisions, eff_order = _smoothed_precisions(correct, totals, config)
    with np.errstate(divide="ignore"):
        logs = np.where(precisions == 0.0, float(LOG_ZERO), np.log(precisions))
    weights = np.ones(order) if config.weights is None else np.asarray(config.weights)
    # Added one order at a time, as Python's sum() adds them.
    weighted, weight_total = np.zeros(len(sums)), np.zeros(len(sums))
    for n in range(order):
        used = n < eff_order
        term = logs[:, n] if config.weights is None else weights[n] * logs[:, n]
        weighted = np.where(used, weighted + term, weighted)
        weight_total = np.where(used, weight_total + weights[n], weight_total)
    divisor = eff_order if config.weights is None else weight_total
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = bp * np.exp(weighted / divisor)
    return np.where(correct.any(axis=1), scores, 0.0)


# The commonly cited BLEU bands, highest first: (lowest score, whether the lowest score itself
# belongs to the band, name, bar colour). 60 is still "Very high quality"; only above 60 is
# "better than human", hence the one exclusive lower bound.
BANDS = (
    (60.0, False, "Quality often better than human", "#1a7f37"),
    (50.0, True, "Very high quality, adequate, and fluent translations", "#2f9e44"),
    (40.0, True, "High quality translations", "#66a80f"),
    (30.0, True, "Understandable to good translations", "#1c7ed6"),
    (20.0, True, "The gist is clear, but has significant grammatical errors", "#f08c00"),
    (10.0, True, "Hard to get the gist", "#e8590c"),
    (-math.inf, True, "Almost useless", "#c92a2a"),
)

# BLEU's measurement settings beside the tokenizer, in the statistics table's `metric_options`.
OPTIONS_TEXT = OptionsText("BLEU", (("case", "lowercase", "lc"), ("order", "max_ngram_order", "int")))
_COLUMN = re.compile(r"(sys_len|ref_len|correct_(\d+)|total_(\d+))$")
_KIND = {"sys_len": 0, "ref_len": 1, "correct": 2, "total": 3}
_COMMENTS = {"sys_len": "BLEU: summed candidate tokens", "ref_len": "BLEU: summed closest reference lengths",
             "correct": "BLEU: summed clipped n-gram matches of this order",
             "total": "BLEU: summed candidate n-grams of this order"}


@functools.lru_cache(maxsize=None)
def _columns(max_order: int) -> Tuple[StatColumn, ...]:
    """The statistic columns of this max order (made once: a score of every group reads them)."""
    return tuple(StatColumn(n) for n in stats_names(max_order))


def _options(choices) -> BleuConfig:
    """BLEU's options from the run's choices: its own options object, or the run's option values
    (`bleu_spark.settings`; those not given take `BleuConfig`'s, the declared defaults)."""
    if isinstance(choices, BleuConfig):
        return choices
    return BleuConfig.from_settings({**dataclasses.asdict(BleuConfig()), **(choices or {})})


class Bleu(Metric):
    """Corpus BLEU. Measured with a tokenizer per row (`--tokenize`, by target language under
    `auto`), `lowercase` and `max_ngram_order`; smoothing, effective order and weights are
    scoring choices (`choices`, a `BleuConfig`), applied to saved statistics at will."""

    name = "bleu"
    title = "BLEU"
    bands = BANDS
    bands_source = ("the rough guide of Google Cloud's AutoML Translation documentation, "
                    "\"Evaluating models\"", "https://cloud.google.com/translate/automl/docs/evaluate")
    uses_tokenizer = True
    reference_tokens = "ref_len"
    result_types = {"score": pa.float64(), "counts": pa.list_(pa.int64()),
                    "totals": pa.list_(pa.int64()), "precisions": pa.list_(pa.float64()),
                    "bp": pa.float64(), "ratio": pa.float64(), "sys_len": pa.int64(),
                    "ref_len": pa.int64(), "n_segments": pa.int64(), "tokenize": pa.string(),
                    "signature": pa.string(), "verbose": pa.string()}
    column_prefixes = ("correct_", "total_")
    options_declared = OPTIONS
    kernel_modules = ("bleu_spark.metrics.bleu.stats",)

    def __init__(self, config: BleuConfig, tokenizer_signature: Optional[str] = None,
                 version: Optional[str] = None):
        self.config = config
        self.tokenizer_signature = tokenizer_signature
        self.version = version

    @property
    def lowercase_tokens(self) -> bool:
        return self.config.lowercase

    @classmethod
    def checked_choices(cls, choices: Mapping[str, Any],
                        measurements: Optional[Sequence[Mapping]] = None) -> dict:
        """BLEU's scoring options checked; `--weights` given to `aggregate` must match the max
        n-gram order of the statistics, which must then be one."""
        if measurements is None or choices.get("weights") is None:
            _options({**choices, "weights": None})  # the number of weights: once read
            if choices.get("weights") is not None:
                return {**choices, "weights": check_weights(choices["weights"])}
            return dict(choices)
        orders = sorted({OPTIONS_TEXT.values(row["metric_options"])["max_ngram_order"]
                         for row in measurements if row["metric"] == cls.name})
        if len(orders) > 1:
            raise UsageError(f"--weights cannot apply to statistics of several max n-gram orders "
                             f"({', '.join(map(str, orders))}); select one with --where")
        checked = {**choices, "max_ngram_order": orders[0] if orders else 4}
        _options(checked)  # the weights' number and values, checked now
        return checked

    @classmethod
    def settings_record(cls, choices: Mapping[str, Any]) -> dict:
        return dataclasses.asdict(_options(choices))

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], choices: Any = None) -> "Bleu":
        return cls(_options(choices if choices is not None else settings))

    @classmethod
    def owns_column(cls, name: str) -> bool:
        return _COLUMN.match(name) is not None

    @classmethod
    def column_order(cls, name: str) -> tuple:
        kind, _, order = name.partition("_")
        return (_KIND.get(kind, _KIND.get(name, 0)), int(order) if order.isdigit() else 0)

    @classmethod
    def column_comment(cls, name: str) -> str:
        return _COMMENTS[name.partition("_")[0] if name[-1].isdigit() else name]

    def columns(self) -> List[StatColumn]:
        return list(_columns(self.config.max_ngram_order))

    def measurement(self) -> dict:
        return {"metric_options": OPTIONS_TEXT.text(self.config)}

    def segment_statistics(self, candidates, references, tokenizer=None) -> np.ndarray:
        return self.measure(candidates, references, tokenizer)[0]

    def measure(self, candidates, references, tokenizer=None):
        segments = segment_statistics(candidates, references, tokenizer, self.config.max_ngram_order)
        return segments.stats, segments.references_tokenized

    @classmethod
    def from_measurement(cls, row: Mapping[str, Any], choices: Any = None) -> "Bleu":
        measured = dataclasses.replace(_options(choices), **OPTIONS_TEXT.values(row["metric_options"]))
        return cls(measured, row.get("tokenizer_signature"), row.get("sacrebleu_version"))

    def score(self, sums: Sequence) -> float:
        return bleu_from_statistics(sums, self.config)[0]

    def scores(self, sums: np.ndarray) -> np.ndarray:
        return scores_of_sums(sums, self.config)

    def signature_fields(self) -> tuple:
        return bleu_fields(self.config, self.tokenizer_signature)

    def result(self, sums: Sequence, row: Mapping[str, Any]) -> dict:
        signature = self.signature(nrefs_label(row["min_refs"], row["max_refs"]))
        return build_result(sums, self.config, row["n_segments"], row["tokenize"],
                            signature).to_dict()

    def result_columns(self, stats: pa.Table) -> dict:
        """`result` of every row of `stats` (of this measurement), a list per field: the same
        values without a record per group (a result of a million groups). A row without scored
        segments has nulls and n_segments 0, as a score row says it."""
        fields = list(BleuResult.__dataclass_fields__)
        unscored = [0 if name == "n_segments" else None for name in fields]
        results = []
        vectors = zip(*(stats[name].to_pylist() for name in self.names))
        for vector, count, tokenize, least, most in zip(
                vectors, *(stats[c].to_pylist() for c in
                           ("n_segments", "tokenize", "min_refs", "max_refs"))):
            if not count:
                results.append(unscored)
                continue
            scored = _scored(vector, self.config)
            results.append((*scored, count, tokenize, self.signature(nrefs_label(least, most)),
                            _line(scored)))
        columns = list(zip(*results)) or [()] * len(fields)
        return {name: list(values) for name, values in zip(fields, columns)}

    def sacrebleu_json(self, result: Mapping[str, Any]) -> dict:
        details = None if result.get("score") is None else bleu_details(
            result["precisions"], result["bp"], result["ratio"], result["sys_len"], result["ref_len"])
        return {**super().sacrebleu_json(result), "verbose_score": details}

    def sacrebleu_metric(self):
        if self.config.weights is not None:
            raise UsageError("the sacrebleu bootstrap has no n-gram weights; use the poisson method")
        from sacrebleu.metrics.bleu import BLEU
        config = self.config
        return BLEU(tokenize="none", smooth_method=config.smooth_method,
                    smooth_value=config.smooth_value, max_ngram_order=config.max_ngram_order,
                    effective_order=config.effective_order)

    def sentence_scores(self, stats: np.ndarray) -> np.ndarray:
        """sacrebleu's `sentence_bleu`: the run's smoothing, with effective order on."""
        return scores_of_sums(stats, dataclasses.replace(self.config, effective_order=True))

    def sentence_score(self, candidate: str, references: Sequence[Optional[str]],
                       tokenizer=None) -> float:
        """`tokenizer`: a LineTokenizer, or its name (13a when none)."""
        from ...tokenizers import LineTokenizer

        if not isinstance(tokenizer, LineTokenizer):
            tokenizer = LineTokenizer(tokenizer or "13a", self.config.lowercase)
        return super().sentence_score(candidate, references, tokenizer)
