"""What a metric declares, once, for every part of the product that measures or shows it.

A metric that decomposes through summed per-segment statistics is a class with its options set
(frozen, sacrebleu's names and defaults, validated when built). The Spark layer, the statistics
table, `aggregate`, the views, the intervals and paired tests, the dashboard, the report and the
console table work from these declarations alone:

- `name`: the registry name, also the statistics table's `metric` value (`bleu`, `chrf`, ...);
- `columns()`: its statistic columns (name, Arrow type, how rows combine them);
- `owns_column(name)`: whether a column of a statistics table is one of its statistics;
- `measurement()`: the settings its statistics depend on, as the table's measurement columns,
  and `from_measurement(row, choices)`: the metric of one statistics row, with the scoring
  choices of the run (settings that do not change the statistics);
- `segment_statistics(...)`: every segment of an Arrow batch at once, (n, width) of
  `combine.matrix_type` (int64 unless a column is a float);
- `score(sums)` and `scores(matrix)`: ONE formula from summed statistics, scalar and
  vectorized over many rows of sums (bootstrap replicates, randomization trials);
- `signature_fields()`: its fields of the `Signature` (the shared `nrefs` and `version` around
  them), sacrebleu's order;
- `result(...)`: its result fields, signature and text line, and `sacrebleu_json(...)` the
  fields sacrebleu's JSON adds (`name`, `verbose_score`);
- `sentence_scores(stats)`: each segment's sentence-level score, from its own statistics;
- `sentence_score(...)`, `higher_is_better`, `title`, `bands` and `bands_source` (how a person
  reads a score, and on whose authority).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa

from ..errors import IncompatibleStatisticsError
from ..declaration import Option
from . import combine
from .combine import MAX, MIN, SUM, StatColumn  # noqa: F401  (declared there, used by every metric)


# The run's scoring choices, as each metric reads them in `from_measurement` (the run's option
# values; BLEU also takes its own options object).
Choices = Any

# A band: (lowest score, whether the lowest score itself belongs to it, name, bar colour).
Band = Tuple[float, bool, str, str]
VARIABLE_REFS = "var"


def sacrebleu_version() -> str:
    """The installed sacrebleu's version, which the metrics equal. sacrebleu is imported when
    this is asked, not before: a Python worker that only measures statistics never imports it
    (a tenth of a second of an executor's first task)."""
    import sacrebleu

    return sacrebleu.__version__


def differing_options(first: str, second: str) -> Dict[str, str]:
    """The settings two options texts write differently, each as `first vs second`: a mixed
    group's message names the setting (`case: mixed vs lc`), not the whole texts."""
    read = lambda text: dict(part.split(":", 1) for part in (text or "").split("|") if ":" in part)
    one, two = read(first), read(second)
    return {key: f"{one.get(key)} vs {two.get(key)}" for key in dict.fromkeys([*one, *two])
            if one.get(key) != two.get(key)}


@dataclass(frozen=True)
class OptionsText:
    """How a metric writes its options into the statistics table's `metric_options` text
    (`case:mixed|nc:6|nw:0|beta:2|...`) and reads them back. Each field is (key in the text, field of the
    metric's options, kind): `int`, `yes` (a flag written yes/no), `no` (a flag written no/yes),
    `lc` (lowercasing written lc/mixed, as the signatures' `case`) or `mixed` (mixed/lc)."""
    title: str
    fields: Tuple[Tuple[str, str, str], ...]

    def text(self, options) -> str:
        written = {"int": str, "yes": lambda v: "yes" if v else "no", "no": lambda v: "no" if v else "yes",
                   "lc": lambda v: "lc" if v else "mixed", "mixed": lambda v: "mixed" if v else "lc"}
        return "|".join(f"{key}:{written[kind](getattr(options, field))}" for key, field, kind in self.fields)

    def values(self, text: str) -> dict:
        """The options' fields written in `text`; text it cannot read is one line naming it."""
        read = {"int": int, "yes": lambda v: v == "yes", "no": lambda v: v == "no",
                "lc": lambda v: v == "lc", "mixed": lambda v: v == "mixed"}
        try:
            written = dict(part.split(":", 1) for part in text.split("|"))
            return {field: read[kind](written[key]) for key, field, kind in self.fields}
        except (KeyError, ValueError):
            raise IncompatibleStatisticsError(f"{self.title} statistics with unreadable options "
                                              f"{text!r}") from None


def nrefs_label(min_refs: int, max_refs: int) -> Union[int, str]:
    """sacrebleu prints the number of references when every segment has the same, else `var`."""
    return min_refs if min_refs == max_refs else VARIABLE_REFS


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


@dataclass(frozen=True)
class Signature:
    """A metric's signature as sacrebleu writes it (`nrefs:1|case:mixed|...|version:2.6.0`): the
    shared fields `nrefs` first and `version` last, the metric's own in its order between."""
    nrefs: Union[int, str]
    fields: Tuple[Tuple[str, Any], ...]
    version: Optional[str] = None  # of the sacrebleu that measured the statistics; None: installed

    def __str__(self) -> str:
        every = [("nrefs", self.nrefs), *self.fields, ("version", self.version or sacrebleu_version())]
        return "|".join(f"{name}:{value}" for name, value in every)


class Metric(ABC):
    """A metric with every option set."""

    name: ClassVar[str]                      # registry name and the table's `metric` value
    title: ClassVar[str]                     # how a score is titled (axis, console)
    higher_is_better: ClassVar[bool] = True
    uses_tokenizer: ClassVar[bool] = False   # statistics follow the row's tokenizer (--tokenize)
    # With `uses_tokenizer`: the statistic column counting reference tokens, from which a run
    # sees text without spaces tokenized as if it had them (`languages.spaceless_warning`).
    reference_tokens: ClassVar[Optional[str]] = None
    bands: ClassVar[Tuple[Band, ...]] = ()   # interpretation bands, highest first; () for none
    # The modules of the compiled kernels its statistics run, built into the wheel (build_kernels.py).
    kernel_modules: ClassVar[Tuple[str, ...]] = ()
    # Where the bands come from, as (text, address): a reader weighs a band by its source.
    bands_source: ClassVar[Tuple[str, str]] = ("", "")
    # The fields `result` gives (each a score row's field), with their Arrow types.
    result_types: ClassVar[Mapping[str, pa.DataType]] = {}
    # Group columns may not start with these (statistic columns of the metric have them).
    column_prefixes: ClassVar[Tuple[str, ...]] = ()
    # Its options (`bleu_spark.settings`): the command line, the job file and the checks come
    # from these declarations.
    options_declared: ClassVar[Tuple[Option, ...]] = ()
    # Whether its statistics come from the references (`segment_statistics`); a metric measured
    # from other columns of the row instead names them in `reads` and gives `row_statistics`.
    needs_references: ClassVar[bool] = True
    reads: Tuple[str, ...] = ()

    # --- measuring -------------------------------------------------------------------------

    @classmethod
    @abstractmethod
    def from_settings(cls, settings: Mapping[str, Any], choices: Any) -> "Metric":
        """The metric as a run's options set it (`settings`: the job's flat option values)."""

    @property
    def lowercase_tokens(self) -> bool:
        """Whether the row's tokenizer lowercases first for it (with `uses_tokenizer`)."""
        return False

    @classmethod
    def checked_choices(cls, choices: Mapping[str, Any],
                        measurements: Optional[Sequence[Mapping]] = None) -> dict:
        """The run's scoring choices checked against the measurement rows of the statistics to
        score (`aggregate`; None: before any is read), with what they imply added."""
        return dict(choices)

    @classmethod
    def settings_record(cls, choices: Mapping[str, Any]) -> dict:
        """Its options as run.json's `config` records them ({} where `metrics` says it all)."""
        return {}

    @classmethod
    def option_values(cls, settings: Mapping[str, Any]) -> dict:
        """Its options' values among a run's settings, by field of its options, those set."""
        return {o.metric_field: settings[o.key] for o in cls.options_declared
                if settings.get(o.key) is not None}

    @classmethod
    @abstractmethod
    def owns_column(cls, name: str) -> bool:
        """Whether `name` is a statistic column of this metric (of any options)."""

    @classmethod
    def stat_column(cls, name: str) -> StatColumn:
        """The declaration of one of its statistic columns (`owns_column(name)`)."""
        return StatColumn(name)

    @classmethod
    def column_order(cls, name: str) -> tuple:
        """Where a statistic column of this metric goes among its others."""
        return (name,)

    @classmethod
    def column_comment(cls, name: str) -> str:
        """What one of its statistic columns holds, for people (the catalog's column comments)."""
        return f"{cls.title}: a summed statistic"

    @abstractmethod
    def columns(self) -> List[StatColumn]:
        """The statistic columns, in the order of a segment's statistics vector."""

    @classmethod
    def result_fields(cls) -> Tuple[str, ...]:
        return tuple(cls.result_types)

    def combined(self, stats: np.ndarray) -> list:
        """One group's statistics from its segments' (n, width): each column as it declares."""
        return combine.combined(self.columns(), stats)

    @property
    def names(self) -> List[str]:
        return [c.name for c in self.columns()]

    @property
    def width(self) -> int:
        return len(self.columns())

    @abstractmethod
    def measurement(self) -> dict:
        """Values of the statistics table's measurement columns this metric sets: the same for
        every metric, `metric_options` (its settings as an `OptionsText`, lowercasing included)."""

    @abstractmethod
    def segment_statistics(self, candidates: pa.Array, references: pa.Array,
                           tokenizer=None) -> np.ndarray:
        """(n, width) of `combine.matrix_type(columns())`: each segment's statistics.
        `candidates`: strings without nulls; `references`: lists of strings, each with a
        non-null one at least; `tokenizer`: the rows' tokenizer when `uses_tokenizer`."""

    def target_warnings(self, targets: Sequence[str]) -> List[str]:
        """Lines about scoring text of these target languages with these options (none here)."""
        return []

    def row_statistics(self, columns: Mapping[str, pa.Array]) -> np.ndarray:
        """(n, width): each row's statistics from the columns it `reads` (by name)."""
        raise TypeError(f"{self.name} is measured from candidates and references")

    def rejections(self, columns: Mapping[str, pa.Array]) -> Optional[pa.Array]:
        """Per row, why the columns it `reads` cannot be measured, or null; None: never."""
        return None

    def measure(self, candidates: pa.Array, references: pa.Array,
                tokenizer=None) -> Tuple[np.ndarray, int]:
        """`segment_statistics`, and how many distinct references were tokenized for them (the
        work a run reports; 0 for a metric without a tokenizer)."""
        return self.segment_statistics(candidates, references, tokenizer), 0

    # --- showing ---------------------------------------------------------------------------

    @classmethod
    @abstractmethod
    def from_measurement(cls, row: Mapping[str, Any], choices: Any) -> "Metric":
        """The metric of one statistics row (its measurement columns) with the run's scoring
        choices."""

    @abstractmethod
    def score(self, sums: Sequence) -> float:
        """The score of one summed statistics vector."""

    @abstractmethod
    def scores(self, sums: np.ndarray) -> np.ndarray:
        """`score` of every row of a (rows, width) matrix of sums, float64."""

    # The sacrebleu that measured saved statistics (their row's `sacrebleu_version`); None:
    # the installed one.
    version: Optional[str] = None

    @abstractmethod
    def signature_fields(self) -> Tuple[Tuple[str, Any], ...]:
        """Its own fields of the signature, in sacrebleu's order (`Signature`)."""

    def signature(self, nrefs: Union[int, str]) -> str:
        made = self.__dict__.setdefault("_signatures", {})  # a metric scores many groups
        if nrefs not in made:
            made[nrefs] = str(Signature(nrefs, self.signature_fields(), self.version))
        return made[nrefs]

    @abstractmethod
    def result(self, sums: Sequence, row: Mapping[str, Any]) -> dict:
        """The result fields of a group (score, signature, verbose and the metric's own), from
        its sums and its statistics row (n_segments, min_refs, max_refs, tokenize, ...)."""

    def result_columns(self, stats: pa.Table) -> Optional[dict]:
        """`result` of every row of `stats` (rows of this measurement) as a list per field, for
        a metric that makes them without a dict per row; None: it does not (rows are scored
        one at a time)."""
        return None

    @property
    def sacrebleu_name(self) -> str:
        """The metric's name as sacrebleu prints it (its JSON's `name`)."""
        return self.title

    def sacrebleu_json(self, result: Mapping[str, Any]) -> dict:
        """The fields of sacrebleu's JSON output that a group's result fields do not hold under
        the same name: `name`, and `verbose_score` where sacrebleu's text line has more than
        the score (BLEU's)."""
        return {"name": self.sacrebleu_name}

    def sacrebleu_statistics(self, stats: np.ndarray) -> np.ndarray:
        """Segment statistics as sacrebleu's own metric holds them (for the exact replay)."""
        return stats

    def sacrebleu_metric(self):
        """sacrebleu's own metric with these options, for the exact bootstrap replay."""
        raise NotImplementedError(f"{self.name}: no sacrebleu replay")

    def sentence_scores(self, stats: np.ndarray) -> np.ndarray:
        """Each segment's sentence-level score (sacrebleu's `sentence_score`) from its own
        statistics: float64, one per row of (n, width)."""
        return self.scores(stats)

    def sentence_score(self, candidate: str, references: Sequence[Optional[str]],
                       tokenizer=None) -> float:
        """The sentence-level score of one segment, as sacrebleu's `sentence_score`."""
        stats = self.segment_statistics(pa.array([candidate], pa.string()),
                                        pa.array([list(references)], pa.list_(pa.string())),
                                        tokenizer)
        return float(self.sentence_scores(stats)[0])

    def interpretation(self, score: Optional[float]) -> Optional[str]:
        band = self.band(score)
        return band[2] if band else None

    def band(self, score: Optional[float]) -> Optional[Band]:
        if score is None or not self.bands:
            return None
        for band in self.bands:
            low, inclusive = band[0], band[1]
            if score > low or (inclusive and score == low):
                return band
        return self.bands[-1]  # NaN compares false with everything
