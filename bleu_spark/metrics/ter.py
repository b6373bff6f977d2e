"""TER as a metric, on the exact kernel (`ter_kernel`): sacrebleu 2.6's `TER`. Lower is better.

A segment's statistics are sacrebleu's `[best_num_edits, avg_ref_len]`: the fewest edits over
its references and the MEAN length of all of them (a float with several references). Summed as
floats, the reference length would depend on the order of the sum at the last bit, and
replicate sums (integer lists) could not hold it. So the table keeps it as an integer,
`ter_ref_len_scaled`, the mean times 2520 (the least common multiple of 1..10): for a segment of
1 to 10 references (or any number dividing 2520) that is the exact mean, so sums are exact in any
order and on any partitioning, and the score `100 * edits / (scaled / 2520)` equals sacrebleu's
sequential float sum to within its rounding (other numbers of references are rounded to
1/2520 of a word). Statistic columns: `ter_edits`, `ter_ref_len_scaled`.
"""
from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence

import numpy as np
import pyarrow as pa

from ..errors import UsageError
from ..declaration import BOOLEAN, METRICS, Option
from .base import Metric, StatColumn, nrefs_label, OptionsText, yes_no
from .ter_kernel import TerOptions, ter_score, ter_statistics

PREFIX = "ter_"
ASIAN_TARGETS = ("ja", "zh", "ko")
SCALE = 2520  # lcm(1..10): the mean of up to 10 reference lengths times this is an integer
COLUMNS = ("ter_edits", "ter_ref_len_scaled")
# sacrebleu's `TER(...)` options, as its command line names them with `--ter-`.
# Asian support is a step of the normalization and of the punctuation removal (sacrebleu's
# TercomTokenizer): read with one of them only.
_ASIAN_WITH = ((f"{PREFIX}normalized", (True,)), (f"{PREFIX}no_punct", (True,)))
OPTIONS = tuple(Option(f"{PREFIX}{field}", BOOLEAN, getattr(TerOptions(), field), help=help,
                       group=METRICS, field=field, read_with=read_with)
                for field, help, read_with in (
    ("case_sensitive", "TER: keep case (default: lowercase, as tercom)", ()),
    ("normalized", "TER: tercom's normalization of the text", ()),
    ("no_punct", "TER: delete punctuation", ()),
    ("asian_support", "TER: split Asian scripts (with --ter-normalized or --ter-no-punct)",
     _ASIAN_WITH)))


OPTIONS_TEXT = OptionsText("TER", (("case", "case_sensitive", "mixed"), ("norm", "normalized", "yes"),
                                   ("punct", "no_punct", "no"), ("asian", "asian_support", "yes")))


class Ter(Metric):
    """TER (sacrebleu's `TER()`): tercom's defaults, case-insensitive."""

    name = "ter"
    title = "TER"
    higher_is_better = False
    result_types = {"score": pa.float64(), "num_edits": pa.int64(), "ref_length": pa.float64(),
                    "n_segments": pa.int64(), "tokenize": pa.string(), "signature": pa.string(),
                    "verbose": pa.string()}
    column_prefixes = (PREFIX,)
    options_declared = OPTIONS
    kernel_modules = ("bleu_spark.metrics.ter_kernel",)

    def __init__(self, options: TerOptions = TerOptions(), version: Optional[str] = None):
        for option in OPTIONS:
            value = getattr(options, option.field)
            if not isinstance(value, bool):
                raise UsageError(f"TER's {option.field} must be true or false, not {value!r}")
        self.options = options
        self.version = version  # of the sacrebleu that measured saved statistics; None: installed

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], choices: Any = None) -> "Ter":
        return cls(TerOptions(**cls.option_values(settings)))

    @classmethod
    def owns_column(cls, name: str) -> bool:
        return name in COLUMNS

    @classmethod
    def column_order(cls, name: str) -> tuple:
        return (COLUMNS.index(name),)

    @classmethod
    def column_comment(cls, name: str) -> str:
        return {"ter_edits": "TER: summed edits",
                "ter_ref_len_scaled": "TER: summed mean reference lengths times 2520"}[name]

    def columns(self) -> List[StatColumn]:
        return [self.stat_column(name) for name in COLUMNS]

    def measurement(self) -> dict:
        return {"metric_options": OPTIONS_TEXT.text(self.options)}

    def segment_statistics(self, candidates, references, tokenizer=None) -> np.ndarray:
        edits, ref_lengths = ter_statistics(candidates, references, self.options)
        return np.column_stack([edits.astype(np.int64),
                                np.rint(ref_lengths * SCALE).astype(np.int64)]).reshape(-1, 2)

    @classmethod
    def from_measurement(cls, row: Mapping[str, Any], choices: Any = None) -> "Ter":
        options = TerOptions(**OPTIONS_TEXT.values(row["metric_options"]))
        return cls(options, row.get("sacrebleu_version"))

    def score(self, sums: Sequence) -> float:
        return float(ter_score(int(sums[0]), int(sums[1]) / SCALE))

    def scores(self, sums: np.ndarray) -> np.ndarray:
        sums = np.asarray(sums, np.int64).reshape(-1, 2)
        return np.asarray(ter_score(sums[:, 0], sums[:, 1] / SCALE), np.float64)

    def signature_fields(self) -> tuple:
        o = self.options
        return (("case", "mixed" if o.case_sensitive else "lc"), ("tok", "tercom"),
                ("norm", yes_no(o.normalized)), ("punct", yes_no(not o.no_punct)),
                ("asian", yes_no(o.asian_support)))

    def result(self, sums: Sequence, row: Mapping[str, Any]) -> dict:
        score = self.score(sums)
        return {"score": score, "num_edits": int(sums[0]), "ref_length": int(sums[1]) / SCALE,
                "n_segments": row["n_segments"], "tokenize": None,
                "signature": self.signature(nrefs_label(row["min_refs"], row["max_refs"])),
                "verbose": f"TER = {score:.2f}"}

    def target_warnings(self, targets: Sequence[str]) -> List[str]:
        """Without Asian support (and the normalization it comes with), tercom's tokenizer keeps
        a Japanese, Chinese or Korean sentence as a word or two: a TER of hundreds (897.92 on
        WMT22 en-zh), sacrebleu's number and meaningless to a reader."""
        asian = [t for t in targets if t in ASIAN_TARGETS]
        if not asian or (self.options.asian_support and (self.options.normalized or self.options.no_punct)):
            return []
        return [f"TER on {', '.join(asian)} text without --ter-asian-support (with "
                f"--ter-normalized): its text is a word or two a segment to tercom, so the "
                f"score is edits of whole sentences, hundreds where a reader expects 0-100"]

    def sacrebleu_statistics(self, stats: np.ndarray) -> np.ndarray:
        """sacrebleu's `[edits, mean reference length]`: the mean is the scaled integer / 2520,
        the same double as the mean of the lengths (both round the same rational)."""
        out = np.asarray(stats, np.float64).copy()
        out[:, 1] = np.asarray(stats)[:, 1] / SCALE
        return out

    def sacrebleu_metric(self):
        from sacrebleu.metrics.ter import TER
        o = self.options
        return TER(case_sensitive=o.case_sensitive, normalized=o.normalized, no_punct=o.no_punct,
                   asian_support=o.asian_support)
