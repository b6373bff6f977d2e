"""Row-level checks: why a row cannot be scored, as a stable reason code, for whole arrays."""
from __future__ import annotations

import ast
import json
import re
from typing import Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidRowsError, UsageError

NULL_CANDIDATE = "null_candidate"
NO_REFERENCE = "no_reference"              # the references are null, empty, or all null
NO_REFERENCE_ROW = "no_reference_row"      # joined references: no row matches the candidate
AMBIGUOUS_REFERENCE = "ambiguous_reference"  # the join key matches several array-form rows
DUPLICATE_SEGMENT = "duplicate_segment"    # a (group, segment key) seen more than once
INVALID_UTF8 = "invalid_utf8"              # the candidate or a reference is not valid UTF-8
UNMATCHED_REFERENCE = "unmatched_reference"  # a reference row no candidate uses (reported only)
JSON_LIST_REFERENCE = "json_list_reference"  # a reference string that is a JSON list of strings
TEXT_LIST_REFERENCE = "text_list_reference"  # a reference string that is a list written otherwise
NULL_SEGMENT_SCORE = "null_segment_score"  # a --segment-scores column is null in the row
INVALID_SEGMENT_SCORE = "invalid_segment_score"  # ... NaN, infinite or too large
NULL_TIME = "null_time"                    # the --time-col value of the row is null
LARGEST_SEGMENT_SCORE = 10 ** 6            # |value| a segment score may have (metrics/means.py)

BATCH_ROWS = 10_000  # segments counted at once by the in-process API

REASONS = {
    NULL_CANDIDATE: "the candidate is null",
    NO_REFERENCE: "the segment has no non-null reference",
    NO_REFERENCE_ROW: "no row of the references table matches the candidate's join key",
    AMBIGUOUS_REFERENCE: "the join key matches several rows of the references table",
    DUPLICATE_SEGMENT: "the same (group, segment key) appears more than once (every copy is rejected)",
    INVALID_UTF8: "the candidate or one of its references holds bytes that are not valid UTF-8",
    UNMATCHED_REFERENCE: "a references-table row that no candidate matched (not an error)",
    JSON_LIST_REFERENCE: "a reference is a JSON list of strings held in a string",
    TEXT_LIST_REFERENCE: "a reference is a list of strings written as text (Python's or numpy's "
                         "repr, nested, double-encoded or object JSON, or joined with ' ||| ')",
    NULL_SEGMENT_SCORE: "a segment score (--segment-scores) of the row is null",
    INVALID_SEGMENT_SCORE: f"a segment score of the row is NaN, infinite or of magnitude above "
                           f"{LARGEST_SEGMENT_SCORE:,}",
    NULL_TIME: "the row's time (--time-col) is null: it falls in no window",
}
# What to do about a reason, said once in the message that stops a run.
HINTS = {
    JSON_LIST_REFERENCE: "references held as JSON text ('[\"Die Katze ...\"]') are not lists: "
                         "scored as they are, the brackets and quotes would count as words; write "
                         "them as an array<string> column (Spark: from_json(reference, "
                         "'array<string>'); pyarrow: pa.array([json.loads(v) for v in column])) "
                         "and pass it as --references-col",
    TEXT_LIST_REFERENCE: "references held as a list's text (\"['a', 'b']\", \"['a' 'b']\", "
                         "'a ||| b', ...) are not lists: parse them into an array<string> column "
                         "(Python: ast.literal_eval; ' ||| ': pyspark F.split('reference', r' \\|\\|\\| ')) "
                         "and pass it as --references-col",
}
# A string that may be a JSON list (confirmed by json.loads): brackets around, and inside
# nothing, or a first element that is a string or null.
_JSON_LIST = r'(?s)^\s*\[\s*(\]|"|null)(.*\])?\s*$'
# A string that may hold a list as other text (confirmed in Python): after a byte-order mark,
# in brackets, braces, parentheses (a tuple's repr), quotes or numpy's `array(...)`; or references joined with ` ||| ` (the
# Moses and fairseq separator, never in a sentence).
_TEXT_LIST = r"""(?s)^[\s\x{feff}]*(\[.*\]|\{.*\}|\(.*\)|".*"|'.*'|array\(\[.*\))\s*$| \|\|\| """
_JOINED = " ||| "
_LONGEST_LITERAL = 1 << 20  # the Python parser is not fed megabytes of one string


def scored_segments(hypotheses, references):
    """(hypotheses, references, flat present references, their rows, references per row) of a
    batch a metric scores: one chunk each, a hypothesis and a present reference in every row."""
    combined = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in (hypotheses, references)]
    hypotheses, references = combined
    n = len(hypotheses)
    if len(references) != n:
        raise ValueError(f"{n} hypotheses but {len(references)} reference lists")
    if hypotheses.null_count:
        raise ValueError("a hypothesis in every row is needed: the hypotheses hold nulls")
    flat, row = present_references(references)
    n_refs = np.bincount(row, minlength=n)
    if n and n_refs.min() == 0:
        raise ValueError(f"a reference in every row is needed: row {int(np.argmin(n_refs))} has none")
    return hypotheses, references, flat, row, n_refs


def present_references(references: pa.Array) -> Tuple[pa.Array, np.ndarray]:
    """The references as sacrebleu uses them (null ones dropped, empty ones kept), flat and in
    order, with the row each belongs to. `references`: a list<string> array."""
    # flatten() skips null rows whatever values back them; their lengths count as 0 to match.
    lengths = pc.fill_null(pc.list_value_length(references), 0).to_numpy()
    flat = references.flatten()
    row = np.repeat(np.arange(len(references)), lengths)
    present = pc.is_valid(flat)
    return flat.filter(present), row[present.to_numpy(zero_copy_only=False)]


def invalid_utf8(strings: pa.Array) -> Optional[np.ndarray]:
    """Per element, True where a string's bytes are not valid UTF-8 (Parquet and Spark do not
    check them); None when every element is valid, the usual case, found by one pass in C++."""
    try:
        strings.validate(full=True)
        return None
    except pa.ArrowInvalid:
        pass
    def bad(value: Optional[bytes]) -> bool:
        try:
            value is None or value.decode("utf-8")
            return False
        except UnicodeDecodeError:
            return True
    return np.array([bad(v) for v in strings.cast(pa.binary()).to_pylist()], bool)


def json_lists(strings: pa.Array) -> np.ndarray:
    """Per element, True where a string is a JSON list of strings (or nulls): references logged
    as JSON text. Confirmed by json.loads on the few that look like one."""
    found = np.zeros(len(strings), bool)
    looks = pc.fill_null(pc.match_substring_regex(strings, _JSON_LIST), False)
    for at in np.flatnonzero(looks.to_numpy(zero_copy_only=False)):
        try:
            value = json.loads(strings[int(at)].as_py())
        except (ValueError, RecursionError):  # RecursionError: brackets nested deeper than the stack
            continue
        found[at] = isinstance(value, list) and all(v is None or isinstance(v, str) for v in value)
    return found


def text_lists(strings: pa.Array) -> np.ndarray:
    """Per element, True where a string holds a list of strings as text other than a plain JSON
    list (Python's repr of a list or tuple as a pandas CSV writes it, numpy's, nested or double-encoded JSON, a
    JSON object of them, a BOM before the JSON, ` ||| `-joined). Only text that parses whole as
    such a value counts: `[Applause] ...`, `"Hi," she said`, `'Tis` are references."""
    found = np.zeros(len(strings), bool)
    looks = pc.fill_null(pc.match_substring_regex(strings, _TEXT_LIST), False)
    for at in np.flatnonzero(looks.to_numpy(zero_copy_only=False)):
        found[at] = _held_list(strings[int(at)].as_py())
    return found


def _held_list(text: str, depth: int = 0) -> bool:
    text = text.strip().lstrip("\ufeff").strip()
    if _JOINED in text:
        return True
    if text.startswith("array(") and text.endswith(")"):  # numpy's repr: array([...], dtype=...)
        text = re.sub(r",\s*dtype=[^\]]*$", "", text[len("array("):-1])
    value = _literal(text)
    if isinstance(value, str):  # encoded once more: a list's text inside quotes
        return depth < 2 and _held_list(value, depth + 1)
    if isinstance(value, dict):
        return bool(value) and all(_strings(v) for v in value.values())
    return isinstance(value, (list, tuple)) and all(_strings(v) for v in value)


def _strings(value) -> bool:
    """A string, a null, or a flat list of them (a segment's references nested once)."""
    if isinstance(value, list):
        return all(v is None or isinstance(v, str) for v in value)
    return value is None or isinstance(value, str)


def _literal(text: str):
    """The JSON or Python literal the text is whole (numpy's `['a' 'b']` reads as Python's
    adjacent strings), or None."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: brackets nested deeper than the stack
        pass
    if len(text) > _LONGEST_LITERAL:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def rejection_reasons(candidates: pa.Array, references: pa.Array,
                      found: Optional[pa.Array] = None, needs_references: bool = True) -> pa.Array:
    """Per row, the reason it cannot be scored, or null. `found`: reasons already found by
    checks across rows (joins, duplicates); they win. Without `needs_references` (only segment
    scores and checks are measured) the references are not read."""
    if not needs_references:
        reasons = pc.if_else(pc.is_null(candidates), pa.scalar(NULL_CANDIDATE),
                             pa.scalar(None, pa.string()))
        bad = invalid_utf8(candidates)
        if bad is not None:
            reasons = pc.coalesce(reasons, pc.if_else(pa.array(bad), pa.scalar(INVALID_UTF8),
                                                      pa.scalar(None, pa.string())))
        return reasons if found is None else pc.coalesce(found, reasons)
    flat, row = present_references(references)
    no_reference = pa.array(np.bincount(row, minlength=len(references)) == 0)
    none = pa.scalar(None, pa.string())
    invalid = np.zeros(len(candidates), bool)
    bad_candidates = invalid_utf8(candidates)
    if bad_candidates is not None:
        invalid |= bad_candidates
    bad_references = invalid_utf8(flat)
    json_list, text_list = np.zeros(len(candidates), bool), np.zeros(len(candidates), bool)
    rows, texts = row, flat
    if bad_references is not None:  # text that is not UTF-8 is not a list's text either
        invalid[row[bad_references]] = True
        rows, texts = row[~bad_references], flat.filter(pa.array(~bad_references))
    json_list[rows[json_lists(texts)]] = True
    text_list[rows[text_lists(texts)]] = True
    reasons = none
    for flagged, reason in ((text_list, TEXT_LIST_REFERENCE), (json_list, JSON_LIST_REFERENCE),
                            (invalid, INVALID_UTF8), (no_reference, NO_REFERENCE)):
        reasons = pc.if_else(pa.array(flagged), pa.scalar(reason), reasons)  # the last set wins
    reasons = pc.if_else(pc.is_null(candidates), pa.scalar(NULL_CANDIDATE), reasons)
    return reasons if found is None else pc.coalesce(found, reasons)


def checked_rows(candidates, references) -> tuple:
    """The rows as Arrow arrays; one line naming the first unscorable row, if any."""
    if len(candidates) != len(references):
        raise UsageError(f"{len(candidates)} candidates but {len(references)} reference lists")
    candidates = pa.array(candidates, pa.string())
    references = pa.array([None if refs is None else list(refs) for refs in references],
                          pa.list_(pa.string()))
    reasons = rejection_reasons(candidates, references)
    if reasons.null_count < len(reasons):
        i = pc.index(pc.is_valid(reasons), True).as_py()
        raise InvalidRowsError(f"segment {i}: {REASONS[reasons[i].as_py()]} ({reasons[i].as_py()})")
    return candidates, references


def rows_of_streams(function: str, hypotheses, references, per_row: str) -> Tuple[list, list]:
    """sacrebleu's layout (a list of reference streams, each with a reference per hypothesis) as
    the rows' (a list of references per segment); one line naming what does not fit it, so
    references given a list per segment are never read transposed when the lengths disagree."""
    layout = (f"{function} takes sacrebleu's layout, a list of reference streams with a "
              f"reference per hypothesis in each (references as a list per segment: {per_row})")
    if any(isinstance(v, (str, bytes)) or not hasattr(v, "__iter__") for v in (hypotheses, references)):
        raise UsageError(f"{function}: hypotheses and references are lists, not "
                         f"{type(hypotheses).__name__} and {type(references).__name__}; {layout}")
    hypotheses, streams = list(hypotheses), [_stream(function, s, layout) for s in references]
    for i, stream in enumerate(streams):
        if len(stream) != len(hypotheses):
            raise UsageError(f"{function}: reference stream {i} has {len(stream)} references for "
                             f"{len(hypotheses)} hypotheses; {layout}")
    for name, values in [("hypotheses", hypotheses)] + [(f"reference stream {i}", s) for i, s in enumerate(streams)]:
        wrong = next((v for v in values if not (v is None or isinstance(v, str))), None)
        if wrong is not None:
            raise UsageError(f"{function}: {name} holds a value of type {type(wrong).__name__}, "
                             f"not a string; {layout}")
    return hypotheses, [list(refs) for refs in zip(*streams)] if streams else [[] for _ in hypotheses]


def _stream(function: str, stream, layout: str) -> list:
    if isinstance(stream, (str, bytes)) or not hasattr(stream, "__iter__"):
        raise UsageError(f"{function}: a reference stream is of type {type(stream).__name__}, not a "
                         f"list of strings (one reference each: [references]); {layout}")
    return list(stream)


def batches(candidates: pa.Array, references: pa.Array):
    """The rows BATCH_ROWS at a time: memory stays bounded for any corpus size."""
    for start in range(0, len(candidates), BATCH_ROWS):
        yield candidates.slice(start, BATCH_ROWS), references.slice(start, BATCH_ROWS)
