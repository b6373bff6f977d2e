"""Checks that need no reference (`--checks`): each a metric whose score is the percent of the
group's rows it flags (lower is better), counted per row, so it sums like any statistic.

- `empty`: the candidate has no text once whitespace is removed (Python's `str.split()`);
- `copy`: the candidate is not empty and equals the source once runs of whitespace are one
  space and the ends trimmed;
- `untranslated`: the candidate's detected language is the pair's source language;
- `off_target`: the candidate's detected language is not the pair's target language.

Statistics: `check_flagged`, `check_rows` and `check_unjudged`, the rows the check could not
judge: `copy` without a source (null), the language checks on a candidate of fewer than 10
letters, a language pair whose source (untranslated) or target (off_target) cannot be read or
is none of the model's languages (`langid.py`), or one translating a language into itself. An
unjudged row is counted in `check_rows` and never flagged. Languages are read from the
language-pair column as the tokenizer's are (`languages.py`).
"""
from __future__ import annotations

import functools
from typing import Any, ClassVar, Dict, Mapping, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import langid
from ..errors import IncompatibleStatisticsError, UsageError
from ..languages import source_language, target_language
from ..version import __version__
from .base import StatColumn
from .means import MeanMetric

FLAGGED, ROWS, UNJUDGED = "check_flagged", "check_rows", "check_unjudged"
KIND = "kind:check"


class Check(MeanMetric):
    """A check over the candidate (and the source or language pair it names)."""

    SUM, COUNT = FLAGGED, ROWS
    higher_is_better = False
    uses_source: ClassVar[bool] = False
    uses_languages: ClassVar[bool] = False

    def __init__(self, candidate_col: str = "candidate", source_col: str = "source",
                 langpair_col: str = "langpair", recorded: Optional[str] = None):
        self.candidate_col, self.source_col, self.langpair_col = candidate_col, source_col, langpair_col
        self.recorded = recorded  # the options text of saved statistics (their model, say)
        self.reads = (candidate_col, *((source_col,) if self.uses_source else ()),
                      *((langpair_col,) if self.uses_languages else ()))

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], choices: Any = None) -> "Check":
        return cls(settings.get("candidate_col") or "candidate",
                   settings.get("source_col") or "source",
                   settings.get("langpair_col") or "langpair")

    @classmethod
    def owns_column(cls, name: str) -> bool:
        return name in (FLAGGED, ROWS, UNJUDGED)

    @classmethod
    def column_order(cls, name: str) -> tuple:
        return ((FLAGGED, ROWS, UNJUDGED).index(name),)

    @classmethod
    def column_comment(cls, name: str) -> str:
        return {FLAGGED: "check: rows flagged", ROWS: "check: rows checked",
                UNJUDGED: "check: rows it could not judge (never flagged)"}[name]

    def columns(self):
        return [StatColumn(FLAGGED), StatColumn(ROWS), StatColumn(UNJUDGED)]

    def measurement(self) -> dict:
        return {"metric_options": self.recorded or self.options_text()}

    def options_text(self) -> str:
        """What the check's statistics depend on (the language model, for the language checks)."""
        return KIND

    @classmethod
    def from_measurement(cls, row: Mapping[str, Any], choices: Any = None) -> "Check":
        recorded = row.get("metric_options") or ""
        if recorded.split("|")[0] != KIND:
            raise IncompatibleStatisticsError(f"statistics of check {row['metric']} with "
                                              f"unreadable options {recorded!r}")
        return cls(recorded=recorded)

    def factor(self) -> float:
        return 100.0

    def signature(self, nrefs=None) -> str:
        settings = self.measurement()["metric_options"].split("|")[1:]
        return "|".join([f"check:{self.name}", *settings, f"version:bleu-spark-{__version__}"])

    def result(self, sums, row) -> dict:
        result = super().result(sums, row)
        result["verbose"] = (f"{self.name} = {result['score']:.2f}% ({int(sums[0])} of "
                             f"{int(sums[1])} rows; {int(sums[2])} not judged)")
        return result

    def row_statistics(self, columns: Dict[str, pa.Array]) -> np.ndarray:
        columns = {c: a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
                   for c, a in columns.items()}
        flagged, unjudged = self.flags(columns)
        n = len(flagged)
        return np.column_stack([flagged.astype(np.int64), np.ones(n, np.int64),
                                unjudged.astype(np.int64)])

    def flags(self, columns: Dict[str, pa.Array]) -> Tuple[np.ndarray, np.ndarray]:
        """Per row: flagged, and not judged."""
        raise NotImplementedError


class Empty(Check):
    name = title = "empty"

    def flags(self, columns):
        return _empty(columns[self.candidate_col]), np.zeros(len(columns[self.candidate_col]), bool)


class Copy(Check):
    name = title = "copy"
    uses_source = True

    def flags(self, columns):
        candidates, sources = columns[self.candidate_col], columns[self.source_col]
        unjudged = sources.is_null().to_numpy(zero_copy_only=False)
        return _copied(candidates, sources) & ~unjudged, unjudged


class _LanguageCheck(Check):
    uses_languages = True
    side: ClassVar[str]   # the pair's language the detected one is held against

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.recorded is None:  # to measure: the model must be there (one line if not)
            langid.identity()

    def options_text(self) -> str:
        return f"{KIND}|lid:{langid.identity()}|min_letters:{langid.MIN_LETTERS}"

    def flags(self, columns):
        candidates, pairs = columns[self.candidate_col], columns[self.langpair_col]
        expected = _pair_languages(pairs, self.side)
        judged = langid.judged(candidates) & expected.is_valid().to_numpy(zero_copy_only=False)
        found = langid.detected(candidates, np.flatnonzero(judged))
        flagged = pc.fill_null(self.flagged(found, expected), False).to_numpy(zero_copy_only=False)
        return flagged & judged, ~judged

    def flagged(self, detected: pa.Array, expected: pa.Array) -> pa.Array:
        """Per row, whether the detected language is a failure (null where either is null)."""
        raise NotImplementedError


class Untranslated(_LanguageCheck):
    name = title = "untranslated"
    side = "source"

    def flagged(self, detected, expected):
        return pc.equal(detected, expected)


class OffTarget(_LanguageCheck):
    name = title = "off_target"
    side = "target"

    def flagged(self, detected, expected):
        return pc.not_equal(detected, expected)


CHECKS = {c.name: c for c in (Empty, Copy, Untranslated, OffTarget)}


def _empty(candidates: pa.Array) -> np.ndarray:
    """Per row, whether the text is null or whitespace only (nothing left by `str.split()`)."""
    if not _arrow_whitespace_is_pythons():
        return np.array([not (c or "").split() for c in candidates.to_pylist()], bool)
    blank = pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(candidates)), 0)
    return pc.fill_null(blank, True).to_numpy(zero_copy_only=False)


def _copied(candidates: pa.Array, sources: pa.Array) -> np.ndarray:
    """Per row, whether the candidate is not empty and equals the source once both are
    `" ".join(text.split())` (false where either is null)."""
    if not _arrow_whitespace_is_pythons():
        normal = lambda texts: [None if t is None else " ".join(t.split()) for t in texts.to_pylist()]
        return np.array([c == s and bool(c) for c, s in zip(normal(candidates), normal(sources))], bool)
    normal = lambda texts: pc.binary_join(pc.utf8_split_whitespace(pc.utf8_trim_whitespace(texts)), " ")
    candidate = normal(candidates)
    same = pc.and_(pc.equal(candidate, normal(sources)), pc.not_equal(candidate, ""))
    return pc.fill_null(same, False).to_numpy(zero_copy_only=False)


# Every character that is whitespace to Python's `str.isspace` or to Arrow (ASCII's, Unicode's
# separators Zs, Zl, Zp) lies below U+3001
_WHITESPACE_BELOW = 0x3001


@functools.lru_cache(maxsize=1)
def _arrow_whitespace_is_pythons() -> bool:
    """Whether Arrow's whitespace (`utf8_trim_whitespace`, `utf8_split_whitespace`) is the
    whitespace of `str.split()` character for character, so `empty` and `copy` are computed
    on whole arrays with the same verdicts (true of pyarrow 26; checked once a process, not
    assumed: a per-row loop otherwise)."""
    characters = [chr(code) for code in range(_WHITESPACE_BELOW)]
    arrow = pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(pa.array(characters))), 0)
    return arrow.to_pylist() == [character.isspace() for character in characters]


def _pair_languages(pairs: pa.Array, side: str) -> pa.Array:
    """Per row, the pair's language on `side` as the model names it, or null when it cannot be
    judged there (unread, unknown to the model, or a pair of one language)."""
    encoded = pairs.dictionary_encode()
    known = langid.known_languages()
    values = []
    for pair in encoded.dictionary.to_pylist():
        source, target = source_language(pair), target_language(pair)
        language = source if side == "source" else target
        values.append(language if language in known and source != target else None)
    return pa.array(values, pa.string()).take(encoded.indices)


def parse_checks(value) -> Tuple[str, ...]:
    """`empty,copy` (or a list) -> check names, in order, each once."""
    if value is None:
        return ()
    parts = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(dict.fromkeys(str(p).strip().lower() for p in parts if str(p).strip()))
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise UsageError(f"unknown check {unknown[0]!r}; choose from: {', '.join(CHECKS)}")
    return names
