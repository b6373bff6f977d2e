"""Metrics whose group score is a mean over the group's rows, measured from columns of the row
rather than from its references: a segment score computed elsewhere (`SegmentScore`: COMET,
xCOMET, MetricX, any number a row carries) and the reference-free checks (`checks.py`: the percent
of rows a check flags).

A mean decomposes through a sum and a count, so any grouping, partitioning, replicate or
`aggregate` of saved statistics gives the same value, as long as the sum is exact in any order.
A float sum is not (its last bit depends on the order of the additions), so a segment score is
summed as an integer of micro-units: each row's value rounded to the nearest 1e-6 (half to even),
which also lets the Poisson bootstrap's integer replicate sums hold it. The mean is
`(sum / count) / 10**6`; a value's rounding moves it by at most 5e-7. A row's value must be a
finite number of magnitude at most 10**6 (else the row is rejected, `invalid_segment_score`), so
a sum overflows int64 only past 9.2e12 in the score's units (a billion rows averaging 9,200).
"""
from __future__ import annotations

import re
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import IncompatibleStatisticsError, UsageError
from ..rows import INVALID_SEGMENT_SCORE, LARGEST_SEGMENT_SCORE, NULL_SEGMENT_SCORE
from ..version import __version__
from .base import Metric, StatColumn

MICRO = 10 ** 6                 # a segment score is summed in millionths
HIGHER, LOWER = "higher", "lower"
SCORE_SUM, SCORE_COUNT = "segment_score_sum", "segment_score_count"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.+-]*$")


class MeanMetric(Metric):
    """A group score that is `factor * sum / count` of two integer statistic columns."""

    SUM: ClassVar[str]
    COUNT: ClassVar[str]
    needs_references = False
    result_types = {"score": pa.float64(), "n_segments": pa.int64(), "tokenize": pa.string(),
                    "signature": pa.string(), "verbose": pa.string()}

    @classmethod
    def owns_column(cls, name: str) -> bool:
        return name in (cls.SUM, cls.COUNT)

    @classmethod
    def column_order(cls, name: str) -> tuple:
        return ((cls.SUM, cls.COUNT).index(name),)

    def columns(self) -> List[StatColumn]:
        return [StatColumn(self.SUM), StatColumn(self.COUNT)]

    def segment_statistics(self, candidates, references, tokenizer=None) -> np.ndarray:
        raise TypeError(f"{self.name} is measured from the row's columns (`row_statistics`)")

    def score(self, sums: Sequence) -> float:
        return float(self.scores(np.asarray([sums], np.int64))[0])

    def scores(self, sums: np.ndarray) -> np.ndarray:
        """The mean of each row of sums; NaN for a row of no rows (a replicate that drew none)."""
        sums = np.asarray(sums, np.int64).reshape(-1, self.width)
        counts = sums[:, 1].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            means = sums[:, 0] / counts
        return np.where(counts > 0, means * self.factor(), np.nan)

    def factor(self) -> float:
        raise NotImplementedError

    def result(self, sums: Sequence, row: Mapping[str, Any]) -> dict:
        score = self.score(sums)
        return {"score": score, "n_segments": row["n_segments"], "tokenize": None,
                "signature": self.signature(None), "verbose": f"{self.title} = {score:.4f}"}

    def signature_fields(self) -> tuple:
        return ()

    def sacrebleu_metric(self):
        """What sacrebleu's replayed draws score resamples with: the same mean of the summed
        statistics (sacrebleu has no such metric; its draws and float32 sums are replayed)."""
        return _MeanOfSums(self)


class _MeanOfSums:
    """The two methods of a sacrebleu metric the exact replay calls (`resampling/replay.py`)."""

    class _Score:
        def __init__(self, score: float):
            self.score = score

    def __init__(self, metric: MeanMetric):
        self.metric = metric

    def _compute_score_from_stats(self, sums) -> "_MeanOfSums._Score":
        sums = np.asarray(sums, np.float64)
        return self._Score(float(sums[0] / sums[1] * self.metric.factor()) if sums[1] else np.nan)

    def _aggregate_and_compute(self, stats: list) -> "_MeanOfSums._Score":
        return self._Score(self.metric.score(np.asarray(stats, np.int64).sum(axis=0)))


def parse_segment_scores(value) -> Tuple[Tuple[str, str], ...]:
    """`--segment-scores comet,metricx:lower` -> ((column, higher|lower), ...): higher is better
    unless the column is followed by `:lower`."""
    if value is None:
        return ()
    parts = value.split(",") if isinstance(value, str) else list(value)
    specs = []
    for part in (str(p).strip() for p in parts):
        if not part:
            continue
        column, _, better = part.rpartition(":") if part.endswith((f":{HIGHER}", f":{LOWER}")) \
            else (part, "", HIGHER)
        specs.append((column, better))
    columns = [c for c, _ in specs]
    if len(set(columns)) != len(columns):
        raise UsageError(f"--segment-scores names a column twice: {','.join(columns)}")
    return tuple(specs)


class SegmentScore(MeanMetric):
    """The mean of a numeric column of the rows (a learned metric's segment scores computed
    elsewhere): its name is the column's, higher is better unless declared lower."""

    name = "segment_score"   # the family; each instance is named by its column
    title = "segment score"
    SUM, COUNT = SCORE_SUM, SCORE_COUNT

    def __init__(self, column: str, better: str = HIGHER):
        if not _NAME.match(column or ""):
            raise UsageError(f"--segment-scores column {column!r}: a name of letters, digits and "
                             f"_ . + - (starting with a letter or _)")
        if better not in (HIGHER, LOWER):
            raise UsageError(f"--segment-scores {column}: higher or lower, not {better!r}")
        self.name = column
        self.title = column
        self.better = better
        self.higher_is_better = better == HIGHER
        self.reads = (column,)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], choices: Any = None):
        raise TypeError("segment scores are made from --segment-scores (`SegmentScore(column)`)")

    @classmethod
    def column_comment(cls, name: str) -> str:
        return {SCORE_SUM: "segment score: summed values in millionths",
                SCORE_COUNT: "segment score: rows summed"}[name]

    def measurement(self) -> dict:
        return {"metric_options": f"kind:segment_score|better:{self.better}|unit:1e-6"}

    @staticmethod
    def recorded(options_text: Optional[str]) -> Optional[dict]:
        """A segment score's settings as its statistics record them; None for other text."""
        read = dict(part.split(":", 1) for part in (options_text or "").split("|") if ":" in part)
        return read if read.get("kind") == "segment_score" and read.get("unit") == "1e-6" else None

    @classmethod
    def from_measurement(cls, row: Mapping[str, Any], choices: Any = None) -> "SegmentScore":
        read = cls.recorded(row.get("metric_options"))
        if read is None:
            raise IncompatibleStatisticsError(f"statistics of metric {row['metric']} (this "
                                              f"installation reads bleu, chrf, chrf++, ter, the "
                                              f"checks and segment scores)")
        return cls(row["metric"], read.get("better", HIGHER))

    def factor(self) -> float:
        return 1.0 / MICRO

    def signature(self, nrefs=None) -> str:
        return f"mean:{self.name}|better:{self.better}|unit:1e-6|version:bleu-spark-{__version__}"

    def rejections(self, columns: Dict[str, pa.Array]) -> pa.Array:
        """Per row, why its value cannot be summed, or null."""
        values = columns[self.name].cast(pa.float64())
        bad = pc.or_(pc.invert(pc.is_finite(values)), pc.greater(pc.abs(values), LARGEST_SEGMENT_SCORE))
        reasons = pc.if_else(pc.fill_null(bad, False), pa.scalar(INVALID_SEGMENT_SCORE),
                             pa.scalar(None, pa.string()))
        return pc.if_else(pc.is_null(values), pa.scalar(NULL_SEGMENT_SCORE), reasons)

    def row_statistics(self, columns: Dict[str, pa.Array]) -> np.ndarray:
        """Each row's value in micro-units (rounded half to even) and a count of 1."""
        values = columns[self.name]
        if pa.types.is_integer(values.type):
            micro = values.cast(pa.int64()).to_numpy(zero_copy_only=False) * MICRO
        else:
            micro = np.rint(values.cast(pa.float64()).to_numpy(zero_copy_only=False) * MICRO)
        return np.column_stack([micro.astype(np.int64), np.ones(len(values), np.int64)])
