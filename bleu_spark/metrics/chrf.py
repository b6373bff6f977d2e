"""chrF and chrF++ as metrics, on the exact kernel (`chrf_kernel`): sacrebleu 2.6's `CHRF`.

A segment's statistics are, per character order 1..nc then word order 1..nw, the integers
`[hyp_count, ref_count, matches]`, in the statistics table as `chrf_c{n}_hyp`, `chrf_c{n}_ref`,
`chrf_c{n}_match` and `chrf_w{n}_...` (chrF and chrF++ share their character columns). Every
option changes the statistics (with several references, the kept one is the one of best
sentence-level F, which beta and eps smoothing decide), so all of them are measurement settings:
all in `metric_options`, e.g. `case:mixed|nc:6|nw:0|beta:2|space:no|eps:no`.
"""
from __future__ import annotations

import re
from typing import Any, List, Mapping, Optional, Sequence

import numpy as np
import pyarrow as pa

from ..errors import UsageError
from ..declaration import BOOLEAN, INTEGER, METRICS, Option
from .base import Metric, StatColumn, nrefs_label, OptionsText, yes_no
from .chrf_kernel import ChrfOptions, chrf_score, chrf_scores, chrf_statistics

PREFIX = "chrf_"
_COLUMN = re.compile(r"chrf_([cw])(\d+)_(hyp|ref|match)$")
_PARTS = ("hyp", "ref", "match")

def _option(field: str, kind: str, help: str, bounds=None, metavar=None) -> Option:
    """A chrF option: sacrebleu's command-line name with `--chrf-`, its `CHRF(...)` default."""
    return Option(f"{PREFIX}{field}", kind, getattr(ChrfOptions(), field), help=help,
                  group=METRICS, bounds=bounds, metavar=metavar, field=field)


# sacrebleu has no bounds; each order costs three statistics columns and a pass.
OPTIONS = (
    _option("char_order", INTEGER, "chrF character n-gram order (default: 6)", (True, 0, 10), "N"),
    _option("word_order", INTEGER, "chrF word n-gram order (default: 0; chrf++ is 2)", (True, 0, 10), "N"),
    _option("beta", INTEGER, "chrF: recall weighs beta times precision (default: 2)", (True, 0, 100), "B"),
    _option("whitespace", BOOLEAN, "chrF: keep whitespace in character n-grams"),
    _option("lowercase", BOOLEAN, "chrF: lowercase candidates and references"),
    _option("eps_smoothing", BOOLEAN, "chrF: mean of per-order F with eps smoothing (chrF++.py's)"),
)


def checked(options: ChrfOptions) -> ChrfOptions:
    """The options, validated once: orders and beta are integers in their ranges."""
    for option in OPTIONS:
        value = getattr(options, option.field)
        if option.kind == INTEGER:
            if isinstance(value, bool) or not isinstance(value, int):
                raise UsageError(f"{option.flag} must be an integer, not {value!r}")
            option.check(value)
        elif not isinstance(value, bool):
            raise UsageError(f"{option.flag} must be true or false, not {value!r}")
    if options.order == 0:
        raise UsageError("chrF needs a character or word order of at least 1")
    return options


OPTIONS_TEXT = OptionsText("chrF", (("case", "lowercase", "lc"), ("nc", "char_order", "int"),
                                    ("nw", "word_order", "int"), ("beta", "beta", "int"),
                                    ("space", "whitespace", "yes"), ("eps", "eps_smoothing", "yes")))


class Chrf(Metric):
    """chrF (sacrebleu's `CHRF()`); `chrf++` is the same with word order 2."""

    name = "chrf"
    title = "chrF"
    default_word_order = 0
    result_types = {"score": pa.float64(), "char_order": pa.int64(), "word_order": pa.int64(),
                    "beta": pa.int64(), "n_segments": pa.int64(), "tokenize": pa.string(),
                    "signature": pa.string(), "verbose": pa.string()}
    column_prefixes = (PREFIX,)
    options_declared = OPTIONS
    kernel_modules = ("bleu_spark.metrics.chrf_kernel",)

    def __init__(self, options: ChrfOptions, version: Optional[str] = None):
        self.options = checked(options)
        self.version = version  # of the sacrebleu that measured saved statistics; None: installed

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], choices: Any = None) -> "Chrf":
        values = cls.option_values(settings)
        if cls.default_word_order:  # chrF++: its word order is its name's
            values["word_order"] = cls.default_word_order
        return cls(ChrfOptions(**values))

    @classmethod
    def owns_column(cls, name: str) -> bool:
        return _COLUMN.match(name) is not None

    @classmethod
    def column_order(cls, name: str) -> tuple:
        kind, order, part = _COLUMN.match(name).groups()
        return (kind == "w", int(order), _PARTS.index(part))

    @classmethod
    def column_comment(cls, name: str) -> str:
        return "chrF: summed n-grams of this character (c) or word (w) order"

    def columns(self) -> List[StatColumn]:
        orders = [("c", n) for n in range(1, self.options.char_order + 1)]
        orders += [("w", n) for n in range(1, self.options.word_order + 1)]
        return [self.stat_column(f"{PREFIX}{kind}{n}_{part}") for kind, n in orders for part in _PARTS]

    def measurement(self) -> dict:
        return {"metric_options": OPTIONS_TEXT.text(self.options)}

    def segment_statistics(self, candidates, references, tokenizer=None) -> np.ndarray:
        return chrf_statistics(candidates, references, self.options)

    @classmethod
    def from_measurement(cls, row: Mapping[str, Any], choices: Any = None) -> "Chrf":
        options = ChrfOptions(**OPTIONS_TEXT.values(row["metric_options"]))
        return cls(options, row.get("sacrebleu_version"))

    def score(self, sums: Sequence) -> float:
        return chrf_score([int(v) for v in sums], self.options)

    def scores(self, sums: np.ndarray) -> np.ndarray:
        return chrf_scores(np.asarray(sums, np.int64), self.options)

    @property
    def score_name(self) -> str:
        """sacrebleu's `chrF2`, `chrF2++`."""
        return f"chrF{self.options.beta}" + "+" * self.options.word_order

    @property
    def sacrebleu_name(self) -> str:
        return self.score_name

    def signature_fields(self) -> tuple:
        o = self.options
        return (("case", "lc" if o.lowercase else "mixed"), ("eff", yes_no(not o.eps_smoothing)),
                ("nc", o.char_order), ("nw", o.word_order), ("space", yes_no(o.whitespace)))

    def result(self, sums: Sequence, row: Mapping[str, Any]) -> dict:
        score = self.score(sums)
        return {"score": score, "n_segments": row["n_segments"], "tokenize": None,
                "char_order": self.options.char_order, "word_order": self.options.word_order,
                "beta": self.options.beta,
                "signature": self.signature(nrefs_label(row["min_refs"], row["max_refs"])),
                "verbose": f"{self.score_name} = {score:.2f}"}

    def sacrebleu_metric(self):
        from sacrebleu.metrics.chrf import CHRF
        o = self.options
        return CHRF(char_order=o.char_order, word_order=o.word_order, beta=o.beta,
                    lowercase=o.lowercase, whitespace=o.whitespace, eps_smoothing=o.eps_smoothing)


class ChrfPlusPlus(Chrf):
    """chrF++: chrF with word n-grams up to 2 (sacrebleu's `CHRF(word_order=2)`)."""

    name = "chrf++"
    title = "chrF++"
    default_word_order = 2
    options_declared = tuple(o for o in OPTIONS if o.field != "word_order")   # its word order is 2
