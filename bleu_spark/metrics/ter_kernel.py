"""TER's per-segment statistics, `[best_num_edits, avg_ref_len]`, exactly as sacrebleu 2.6's
`TER` computes them, for a whole Arrow batch of segments at once.

Preprocessing is sacrebleu's TercomTokenizer: by default the words of a line are its lowercased
`str.split()` words, found for the whole batch by Arrow and one compiled split (`split_tokens`),
lowered as Python lowers them (`kernels.python_lower`: by Arrow where a line is ASCII).
With `normalized` or `no_punct` sacrebleu's tokenizer runs once per distinct line, and once
more on a reference's result, as sacrebleu preprocesses references twice.

Each (hypothesis, reference) pair then runs sacrebleu's greedy search, decision for decision, as
one compiled loop over word ids (`_segment_edits`):

- the edit distance is beam-limited: `ratio = n_ref / n_hyp` (a double), beam width 25, or
  `ceil(ratio / 2 + 25)` when `ratio / 2 > 25`; row i spans `floor(i * ratio) +- width`
  (floating point), the last row the whole reference. Cells start infinite; the diagonal, then
  deletion, then insertion replace a cell's value only when strictly cheaper.
- a round aligns the current hypothesis with the reference from that distance's trace, tries
  every shift candidate (spans matching in both, at most 50 apart, 1 to 10 words, in
  sacrebleu's order and with its skip rules) and keeps the best by
  `(gain, length, -hyp_start, -target)`, replaced only when strictly greater. The best shift is
  applied when it gains; the search stops when none does, or when the pair's candidate counter
  (kept across rounds, checked after each span's targets) reaches 1,000, that round's best shift
  then not applied. The pair's edits are the shifts plus the final edit distance.

sacrebleu memoizes the rows of the distance matrix by hypothesis prefix; here a candidate's
distance starts from the current hypothesis' rows at the first position the shift changes,
which computes the same rows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Tuple

import numpy as np
import pyarrow as pa

from ..compiled import compiled
from ..kernels import python_lower
from ..rows import scored_segments
from ..tokenizers import split_tokens


@dataclass(frozen=True)
class TerOptions:
    """sacrebleu's `TER(...)` options, with its names and defaults."""
    case_sensitive: bool = False
    normalized: bool = False
    no_punct: bool = False
    asian_support: bool = False


@dataclass
class TerDetail:
    """Per segment: `edits` (int64, the fewest edits over its references), `ref_lengths`
    (float64, the mean length of its references) and `capped` (int64, how many of its
    (hypothesis, reference) pairs stopped their search at the 1,000-candidate cap)."""
    edits: np.ndarray
    ref_lengths: np.ndarray
    capped: np.ndarray


def ter_statistics(hypotheses: pa.Array, references: pa.Array,
                   options: TerOptions = TerOptions()) -> Tuple[np.ndarray, np.ndarray]:
    """sacrebleu's TER segment statistics `(edits, ref_lengths)` of each segment, as int64
    and float64 arrays. `hypotheses`: strings without nulls; `references`: a list of strings per
    segment, null references dropped (as sacrebleu drops None), at least one left per segment."""
    detail = ter_statistics_detail(hypotheses, references, options)
    return detail.edits, detail.ref_lengths


def ter_statistics_detail(hypotheses: pa.Array, references: pa.Array,
                          options: TerOptions = TerOptions()) -> TerDetail:
    """`ter_statistics`, with how many pairs of each segment reached the candidate cap."""
    hypotheses, references, flat, row, n_refs = scored_segments(hypotheses, references)
    n = len(hypotheses)
    encoded = flat.dictionary_encode()
    tokens = split_tokens(pa.concat_arrays([
        preprocess(hypotheses.cast(pa.large_string()), options),
        preprocess(encoded.dictionary.cast(pa.large_string()), options, reference=True)]))
    line_start = np.zeros(tokens.n_lines + 1, np.int64)
    np.cumsum(tokens.lengths(), out=line_start[1:])
    ref_start = np.zeros(n + 1, np.int64)
    np.cumsum(n_refs, out=ref_start[1:])
    ref_lines = n + encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    edits, ref_lengths, capped = _segment_edits(tokens.ids, line_start, ref_start, ref_lines)
    return TerDetail(edits, ref_lengths, capped)


def ter_score(edits, ref_length):
    """sacrebleu's TER score from summed statistics: `100 * (edits / ref_length)`, the division
    first (`100 * edits / ref_length` differs in the last bit, 1 / 3 for one); with no
    reference words, 100 when there are edits, else 0. Scalars give a float, arrays an array.

    sacrebleu sums the segments' statistics one by one in segment order (`sum_of_lists`): the
    float `ref_length` equals its sum when added in that order (`np.cumsum(...)[-1]`, not
    `np.sum`, which adds in pairs)."""
    if np.ndim(edits) == 0 and np.ndim(ref_length) == 0:
        if ref_length > 0:
            fraction = edits / ref_length
        elif edits > 0:
            fraction = 1.0
        else:
            fraction = 0.0
        return 100 * fraction
    edits = np.asarray(edits, np.float64)
    ref_length = np.asarray(ref_length, np.float64)
    edits, ref_length = np.broadcast_arrays(edits, ref_length)
    fraction = np.where(edits > 0, 1.0, 0.0)
    np.divide(edits, ref_length, out=fraction, where=ref_length > 0)
    return 100 * fraction


# -- preprocessing -------------------------------------------------------------------------------

def preprocess(lines: pa.Array, options: TerOptions, reference: bool = False) -> pa.Array:
    """Each line as sacrebleu's TER leaves it, up to whitespace: what `split_tokens` splits is
    the words sacrebleu splits. sacrebleu preprocesses a reference twice (`_cache_references`
    preprocesses the lines it passes to `_extract_reference_info`, which preprocesses them
    again), a hypothesis once. `lines`: strings without nulls."""
    if options.normalized or options.no_punct:
        return _tercom_distinct_lines(lines, options, 2 if reference else 1)
    # rstrip and the final whitespace joining change no str.split() word; neither does lowering
    # the line before its split (no code point lowercases to whitespace or from it), nor
    # lowering it again (str.lower() of a lowered line is itself: the tests check every code
    # point), so one pass is both of sacrebleu's.
    return lines if options.case_sensitive else python_lower(lines)


def _tercom_distinct_lines(lines: pa.Array, options: TerOptions, passes: int) -> pa.Array:
    """sacrebleu's `TercomTokenizer(...)(line.rstrip())` (which lowercases unless
    case-sensitive), `passes` times over, once per distinct line: with `normalized` a second
    pass can split more (`x's（` gives `x's （`, whose `'s` the next pass splits off)."""
    from sacrebleu.tokenizers.tokenizer_ter import TercomTokenizer

    tokenizer = TercomTokenizer(normalized=options.normalized, no_punct=options.no_punct,
                                asian_support=options.asian_support,
                                case_sensitive=options.case_sensitive)
    encoded = lines.dictionary_encode()
    texts = encoded.dictionary.to_pylist()
    for _ in range(passes):
        texts = [tokenizer(text.rstrip()) for text in texts]
    return pa.array(texts, pa.large_string()).take(encoded.indices)


# -- the edit search -----------------------------------------------------------------------------

_INFINITY = 10 ** 16           # sacrebleu's value of a cell outside the beam
_NOP, _SUB, _INS, _DEL, _UNDEFINED = 0, 1, 2, 3, 4  # a cell's operation, as sacrebleu's trace
_BEAM_WIDTH = 25
_MAX_SHIFT_SIZE = 10
_MAX_SHIFT_DIST = 50
_MAX_SHIFT_CANDIDATES = 1000


@compiled
def _segment_edits(ids, line_start, ref_start, ref_lines):  # pragma: no cover (compiled)
    """Per segment i (line i is its hypothesis; its references are lines
    `ref_lines[ref_start[i]:ref_start[i + 1]]`): the fewest edits over its references (the first
    wins ties), the mean of their lengths (their integer sum over their count, one division),
    and how many pairs reached the candidate cap."""
    n = len(ref_start) - 1
    edits = np.empty(n, np.int64)
    ref_lengths = np.empty(n, np.float64)
    capped = np.zeros(n, np.int64)
    for i in range(n):
        hyp = ids[line_start[i]:line_start[i + 1]]
        best = np.int64(_INFINITY)
        total = np.int64(0)
        for k in range(ref_start[i], ref_start[i + 1]):
            line = ref_lines[k]
            ref = ids[line_start[line]:line_start[line + 1]]
            pair_edits, pair_capped = _pair_edits(hyp, ref)
            total += len(ref)
            capped[i] += pair_capped
            if pair_edits < best:
                best = pair_edits
        edits[i] = best
        ref_lengths[i] = np.float64(total) / np.float64(ref_start[i + 1] - ref_start[i])
    return edits, ref_lengths, capped


@compiled
def _pair_edits(hyp, ref):  # pragma: no cover (compiled)
    """sacrebleu's `translation_edit_rate` edits of one pair, and 1 if its search stopped at the
    candidate cap (else 0)."""
    n_h, n_r = len(hyp), len(ref)
    if n_r == 0:
        return np.int64(n_h), 0
    if n_h == 0:  # no word to shift: the distance is the reference's insertions
        return np.int64(n_r), 0
    lo, hi, column_0, size = _beam(n_h, n_r)
    # Cells outside the beam stay infinite and undefined: only cells of the beam are written.
    cost, ops = np.full(size, _INFINITY, np.int64), np.full(size, _UNDEFINED, np.uint8)
    scratch_cost, scratch_ops = cost.copy(), ops.copy()
    for j in range(n_r + 1):  # row 0: the reference's insertions
        cost[column_0[0] + j], ops[column_0[0] + j] = j, _INS
    words, shifted = hyp.copy(), np.empty(n_h, hyp.dtype)
    align = np.empty(n_r, np.int64)
    hyp_errors, ref_errors = np.zeros(n_h + 1, np.int64), np.zeros(n_r + 1, np.int64)
    shifts = checked = 0
    while True:
        distance = _rows(words, ref, lo, hi, column_0, cost, cost, ops, 0, _INFINITY)
        _alignment(n_h, n_r, column_0, ops, align, hyp_errors, ref_errors)
        found = False
        best_gain = best_length = best_start = best_target = 0
        stop = False
        for start_h in range(n_h):
            for start_r in range(max(0, start_h - _MAX_SHIFT_DIST), min(n_r, start_h + _MAX_SHIFT_DIST + 1)):
                length = 0
                while length < _MAX_SHIFT_SIZE and words[start_h + length] == ref[start_r + length]:
                    length += 1
                    # The span [start_h, +length) of the hypothesis equals [start_r, +length) of
                    # the reference; hyp_errors and ref_errors are cumulative counts.
                    if (hyp_errors[start_h + length] != hyp_errors[start_h]
                            and ref_errors[start_r + length] != ref_errors[start_r]
                            and not start_h <= align[start_r] < start_h + length):
                        previous = -1
                        for offset in range(-1, length):
                            target = 0 if start_r + offset == -1 else align[start_r + offset] + 1
                            if target == previous:
                                continue
                            previous = target
                            if target == start_h:  # the shift leaves the words as they are
                                gain = 0
                            else:
                                _shift(words, start_h, length, target, shifted)
                                # A distance above `distance - best_gain` cannot rank first: its
                                # rows are left as soon as they show it.
                                gain = distance - _rows(shifted, ref, lo, hi, column_0, cost, scratch_cost,
                                                        scratch_ops, min(start_h, target),
                                                        distance - best_gain if found else _INFINITY)
                            checked += 1
                            if (not found or gain > best_gain or (gain == best_gain and (
                                    length > best_length or (length == best_length and (
                                        start_h < best_start or (start_h == best_start
                                                                 and target < best_target)))))):
                                found = True
                                best_gain, best_length, best_start, best_target = gain, length, start_h, target
                        if checked >= _MAX_SHIFT_CANDIDATES:
                            stop = True
                            break
                    if start_h + length == n_h or start_r + length == n_r:
                        break
                if stop:
                    break
            if stop:
                break
        if checked >= _MAX_SHIFT_CANDIDATES:
            return np.int64(shifts + distance), 1
        if not found or best_gain <= 0:
            return np.int64(shifts + distance), 0
        _shift(words, best_start, best_length, best_target, shifted)
        words[:] = shifted
        shifts += 1


@compiled
def _beam(n_h, n_r):  # pragma: no cover (compiled)
    """The cells the distance computes: row i (0..n_h) spans columns [lo[i], hi[i]). Cell (i, j)
    is at `column_0[i] + j` of a flat array of `size` cells, where each row has room for the
    columns [lo[i] - 1, max(hi[i], hi[i + 1])): every cell a row's computation reads, in its row
    and the row above, is one of them, infinite when outside the beam."""
    ratio = n_r / n_h
    width = _BEAM_WIDTH
    if _BEAM_WIDTH < ratio / 2:
        width = np.int64(math.ceil(ratio / 2 + _BEAM_WIDTH))
    lo, hi = np.empty(n_h + 1, np.int64), np.empty(n_h + 1, np.int64)
    lo[0], hi[0] = 0, n_r + 1
    for i in range(1, n_h + 1):
        diagonal = np.int64(math.floor(i * ratio))
        lo[i] = max(0, diagonal - width)
        hi[i] = n_r + 1 if i == n_h else min(n_r + 1, diagonal + width)
    column_0 = np.empty(n_h + 1, np.int64)
    size = 0
    for i in range(n_h + 1):
        column_0[i] = size - (lo[i] - 1)
        size += max(hi[i], hi[min(i + 1, n_h)]) - (lo[i] - 1)
    return lo, hi, column_0, size


@compiled
def _rows(words, ref, lo, hi, column_0, base_cost, cost, ops, first, limit):  # pragma: no cover (compiled)
    """The beam-limited distance of `words` to `ref`: rows first+1.. into cost/ops, rows up to
    `first` read from base_cost (those of a hypothesis with the same first `first` words).
    Each cell starts infinite; the diagonal, then deletion, then insertion replace it only when
    strictly cheaper.

    A cell is at least the least cell of the row above (each comes from one of those, or from
    the cell to its left, at a cost of 0 or 1), so the distance is at least the least cell of
    any row: once a row's least cell exceeds `limit`, that value is returned, more than `limit`
    like the distance."""
    n_h, n_r = len(words), len(ref)
    for i in range(first + 1, n_h + 1):
        above = base_cost if i - 1 <= first else cost
        up, here = column_0[i - 1], column_0[i]
        word = words[i - 1]
        j = lo[i]
        least = _INFINITY
        if j == 0:  # then row i - 1 starts at column 0 too
            least = cost[here] = above[up] + 1
            ops[here] = _DEL
            j = 1
        for j in range(j, hi[i]):
            value, op = _INFINITY, _UNDEFINED
            diagonal = above[up + j - 1]
            if word == ref[j - 1]:
                if value > diagonal:
                    value, op = diagonal, _NOP
            elif value > diagonal + 1:
                value, op = diagonal + 1, _SUB
            deletion = above[up + j] + 1
            if value > deletion:
                value, op = deletion, _DEL
            insertion = cost[here + j - 1] + 1
            if value > insertion:
                value, op = insertion, _INS
            cost[here + j], ops[here + j] = value, op
            least = min(least, value)
        if least > limit:
            return least
    return cost[column_0[n_h] + n_r]


@compiled
def _alignment(n_h, n_r, column_0, ops, align, hyp_errors, ref_errors):  # pragma: no cover (compiled)
    """From the trace of the distance (ops): per reference word, the hypothesis position it is
    aligned with (-1 before the first); the cumulative count of hypothesis words and reference
    words in error (substituted, inserted or deleted)."""
    hyp_errors[:] = 0
    ref_errors[:] = 0
    i, j = n_h, n_r
    while i > 0 or j > 0:
        op = ops[column_0[i] + j]
        if op == _NOP or op == _SUB:
            align[j - 1] = i - 1
            if op == _SUB:
                hyp_errors[i] = ref_errors[j] = 1  # shifted by one: made cumulative below
            i -= 1
            j -= 1
        elif op == _INS:  # a reference word the hypothesis lacks
            align[j - 1] = i - 1
            ref_errors[j] = 1
            j -= 1
        elif op == _DEL:  # a hypothesis word the reference lacks
            hyp_errors[i] = 1
            i -= 1
        else:
            raise ValueError("the trace of the edit distance left the beam")
    for p in range(1, n_h + 1):
        hyp_errors[p] += hyp_errors[p - 1]
    for p in range(1, n_r + 1):
        ref_errors[p] += ref_errors[p - 1]


@compiled
def _shift(words, start, length, target, out):  # pragma: no cover (compiled)
    """sacrebleu's `_perform_shift` of words[start:start + length] to `target`, into `out`, with
    Python's slicing (a slice's end past the list stops at its end)."""
    n = len(words)
    if target < start:
        pieces = ((0, target), (start, start + length), (target, start), (start + length, n))
    elif target > start + length:
        pieces = ((0, start), (start + length, target), (start, start + length), (target, n))
    else:  # the target falls inside the moved span
        end = min(length + target, n)
        pieces = ((0, start), (start + length, end), (start, start + length), (end, n))
    p = 0
    for a, b in pieces:
        for q in range(a, b):
            out[p] = words[q]
            p += 1
