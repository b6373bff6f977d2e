"""Per-segment sufficient statistics of chrF and chrF++, for a whole Arrow batch at once, and the
scores computed from summed statistics, exactly as sacrebleu 2.6's `CHRF` computes them.

A segment's statistics are, for each character order 1..char_order and then each word order
1..word_order, the three integers

    [hyp_count, ref_count, matches]

where hyp_count and ref_count are the numbers of n-grams of that order in the hypothesis and in
the reference, matches the sum over the hypothesis's distinct n-grams of min(its count in the
hypothesis, its count in the reference), and hyp_count is reported as 0 when the reference has
no n-gram of that order. With several references, the segment keeps the statistics of the
first reference whose sentence-level score (same smoothing mode) is the highest.

Characters are the code points of the line without any of `str.split()`'s whitespace (zero-width
space is not whitespace), or of the raw line with `whitespace=True`. Words are the `str.split()`
tokens, each of more than one character split once: its last character off if that is ASCII
punctuation, else its first character off if that is. Both are lowercased first with Python's
`str.lower` when asked.

Compiled loops (numba) decode the lines' UTF-8 bytes to code points, and split and number the
words on the code points (a pass of its own: splitting the punctuation off in the bytes and
then splitting the lines again with `split_tokens` cost three times as much). One compiled loop
over the segments counts the n-grams of each kind: per segment and order, an exact hash table
of the hypothesis's n-grams (an n-gram is the id of its first n-1 symbols' n-gram and its last symbol,
one int64), then each reference's n-grams looked up in it. A reference n-gram whose prefix is
not among the hypothesis's cannot be either, so it is dropped without a look-up.
"""
from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa

from ..compiled import compiled, utf8_parts
from ..kernels import python_lower
from ..rows import scored_segments
from ..tokenizers import _FNV_OFFSET, _FNV_PRIME, _SPACE, _rehashed, _slot

_EPS = 1e-16  # sacrebleu's stand-in for a missing precision or recall, and a missing F

# ASCII `string.punctuation`, by byte.
_PUNCTUATION = np.zeros(128, np.bool_)
_PUNCTUATION[[ord(c) for c in string.punctuation]] = True


@dataclass(frozen=True)
class ChrfOptions:
    """sacrebleu's `CHRF` arguments, its names and defaults (word_order=2 is chrF++)."""
    char_order: int = 6
    word_order: int = 0
    beta: int = 2
    lowercase: bool = False
    whitespace: bool = False
    eps_smoothing: bool = False

    @property
    def order(self) -> int:
        return self.char_order + self.word_order

    @property
    def width(self) -> int:
        """Columns of a segment's statistics."""
        return 3 * self.order


def chrf_statistics(hypotheses: pa.Array, references: pa.Array, options: ChrfOptions) -> np.ndarray:
    """int64 (n, 3 * (char_order + word_order)): each segment's statistics, sacrebleu's
    `CHRF(...)._extract_corpus_statistics` row for row. `hypotheses`: strings without nulls;
    `references`: lists of strings per segment, null entries dropped, each with one at least."""
    hypotheses, references, flat, row, n_refs = scored_segments(hypotheses, references)
    n = len(hypotheses)
    ref_start = np.zeros(n + 1, np.int64)
    np.cumsum(n_refs, out=ref_start[1:])
    lines = pa.concat_arrays([hypotheses.cast(pa.large_string()), flat.cast(pa.large_string())])
    if options.lowercase:
        lines = python_lower(lines)
    offsets, data = utf8_parts(lines)

    per_reference = np.zeros((len(flat), options.width), np.int64)
    if options.char_order > 0:
        chars, char_start = _code_points(offsets, data, _SPACE, options.whitespace)
        width = np.int64(chars.max(initial=0)) + 1
        _count_ngrams(chars, char_start, n, ref_start, options.char_order, width, per_reference, 0)
    if options.word_order > 0:
        if options.whitespace and options.char_order > 0:
            points, point_start = chars, char_start
        else:
            points, point_start = _code_points(offsets, data, _SPACE, True)
        words, word_start = _words(points, point_start, _SPACE, _PUNCTUATION)
        width = np.int64(words.max(initial=0)) + 1
        _count_ngrams(words, word_start, n, ref_start, options.word_order, width, per_reference,
                      3 * options.char_order)
    if len(flat) == n:  # one reference a segment
        return per_reference
    return per_reference[_best_references(chrf_scores(per_reference, options), row, ref_start)]


def _best_references(scores: np.ndarray, row: np.ndarray, ref_start: np.ndarray) -> np.ndarray:
    """Per segment, the index of its first reference of the highest score (sacrebleu starts
    from -1.0 and replaces only on a strictly greater score; scores are never negative)."""
    best = np.maximum.reduceat(scores, ref_start[:-1])
    candidates = np.flatnonzero(scores == best[row])
    first = np.ones(len(candidates), np.bool_)
    first[1:] = row[candidates[1:]] != row[candidates[:-1]]
    return candidates[first]


@compiled
def _code_points(offsets, data, space, keep_space):  # pragma: no cover (compiled)
    """The code points of each line (valid UTF-8), without `str.split()`'s whitespace unless
    `keep_space`: (code points, int32; start of each line's, one more than there are lines)."""
    n_lines = len(offsets) - 1
    out = np.empty(offsets[-1] - offsets[0], np.int32)  # a code point is a byte at least
    start = np.empty(n_lines + 1, np.int64)
    p = 0
    for line in range(n_lines):
        start[line] = p
        i, end = offsets[line], offsets[line + 1]
        while i < end:
            b = np.int32(data[i])
            if b < 0x80:
                c, i = b, i + 1
            elif b < 0xE0:
                c, i = (b & 0x1F) << 6 | (np.int32(data[i + 1]) & 0x3F), i + 2
            elif b < 0xF0:
                c = (b & 0x0F) << 12 | (np.int32(data[i + 1]) & 0x3F) << 6 | (np.int32(data[i + 2]) & 0x3F)
                i += 3
            else:
                c = ((b & 0x07) << 18 | (np.int32(data[i + 1]) & 0x3F) << 12
                     | (np.int32(data[i + 2]) & 0x3F) << 6 | (np.int32(data[i + 3]) & 0x3F))
                i += 4
            if not keep_space and c <= 0x3000 and space[c]:
                continue
            out[p] = c
            p += 1
    start[n_lines] = p
    return out[:p], start


@compiled
def _words(points, line_start, space, punctuation):  # pragma: no cover (compiled)
    """The words of each line, numbered: its `str.split()` tokens, a token of more than one
    character split in two when its last character, else its first, is ASCII punctuation.
    Line l is `points[line_start[l]:line_start[l + 1]]` (code points, whitespace kept).
    (ids, int64, equal words equal ids; start of each line's, one more than there are lines).

    Each word's code points are hashed (FNV-1a) into an open addressing table of word ids,
    equal hashes confirmed point for point; the table doubles as words come."""
    n_lines = len(line_start) - 1
    # A word is a code point at least, and a token gives two words only if it is two long.
    most = len(points)
    ids, word_start = np.empty(most, np.int64), np.empty(n_lines + 1, np.int64)
    hashes, spans = np.empty(most, np.uint64), np.empty((most, 2), np.int64)
    size = 1024
    table = np.full(size, -1, np.int64)
    t = n_words = 0
    for line in range(n_lines):
        word_start[line] = t
        i, end = line_start[line], line_start[line + 1]
        while i < end:
            c = points[i]
            if c <= 0x3000 and space[c]:
                i += 1
                continue
            start = i
            while i < end and not (points[i] <= 0x3000 and space[points[i]]):
                i += 1
            cut = i  # the token is the words [start, cut) and [cut, i)
            if i - start > 1:
                if points[i - 1] < 128 and punctuation[points[i - 1]]:
                    cut = i - 1
                elif points[start] < 128 and punctuation[points[start]]:
                    cut = start + 1
            for a, b in ((start, cut), (cut, i)):
                if a == b:
                    continue
                h = _FNV_OFFSET
                for k in range(a, b):
                    h = (h ^ np.uint64(points[k])) * _FNV_PRIME
                slot = _slot(h, size)
                while True:
                    word = table[slot]
                    if word < 0:
                        word = table[slot] = n_words
                        hashes[word], spans[word, 0], spans[word, 1] = h, a, b
                        n_words += 1
                        if 2 * n_words > size:
                            size *= 2
                            table = _rehashed(hashes[:n_words], size)
                        break
                    if hashes[word] == h and _same_points(points, a, b, spans[word, 0], spans[word, 1]):
                        break
                    slot = (slot + 1) & (size - 1)
                ids[t] = word
                t += 1
    word_start[n_lines] = t
    return ids[:t], word_start


@compiled
def _same_points(points, start, end, other_start, other_end):  # pragma: no cover (compiled)
    if end - start != other_end - other_start:
        return False
    for k in range(end - start):
        if points[start + k] != points[other_start + k]:
            return False
    return True


_EMPTY = -1                                  # a free slot of the hash table
_FIBONACCI = np.int64(-7046029254386353131)  # 2**64 / golden ratio, as int64: spreads the keys


@compiled
def _count_ngrams(symbols, line_start, n_hyps, ref_start, max_order, width, out,
                  column):  # pragma: no cover (compiled)
    """Fills `out[j, column + 3 * (n - 1):column + 3 * n]` = [hyp_count, ref_count, matches] of
    order n = 1..max_order for every reference j. Line l is `symbols[line_start[l]:line_start[l + 1]]`
    (each symbol below `width`); lines 0..n_hyps-1 are the hypotheses, the references of
    hypothesis i are lines n_hyps + ref_start[i] .. n_hyps + ref_start[i + 1] - 1, and reference j
    is line n_hyps + j."""
    capacity = table_capacity = 0
    hyp_gram = ref_gram = hyp_count = ref_count = keys = key_ids = np.empty(0, np.int64)
    for i in range(n_hyps):
        h0 = line_start[i]
        hyp_length = line_start[i + 1] - h0
        first_ref, last_ref = n_hyps + ref_start[i], n_hyps + ref_start[i + 1]
        for j in range(ref_start[i], ref_start[i + 1]):
            ref_length = line_start[n_hyps + j + 1] - line_start[n_hyps + j]
            for n in range(1, max_order + 1):
                c = column + 3 * (n - 1)
                in_ref = max(0, ref_length - n + 1)
                out[j, c] = max(0, hyp_length - n + 1) if in_ref > 0 else 0
                out[j, c + 1] = in_ref
                out[j, c + 2] = 0
        if hyp_length == 0:
            continue
        refs_base = line_start[first_ref]
        refs_length = line_start[last_ref] - refs_base
        if hyp_length > capacity or refs_length > ref_gram.shape[0]:  # buffers grow, seldom
            capacity = max(2 * capacity, hyp_length)
            hyp_gram, hyp_count, ref_count = (np.empty(capacity, np.int64), np.empty(capacity, np.int64),
                                              np.empty(capacity, np.int64))
            ref_gram = np.empty(max(2 * ref_gram.shape[0], refs_length), np.int64)
        size = 16
        while size < 2 * hyp_length:
            size *= 2
        if size > table_capacity:
            table_capacity = size
            keys, key_ids = np.empty(size, np.int64), np.empty(size, np.int64)
        for n in range(1, min(max_order, hyp_length) + 1):
            keys[:size] = _EMPTY
            n_grams = 0
            for q in range(hyp_length - n + 1):
                key = symbols[h0 + q] if n == 1 else hyp_gram[q] * width + symbols[h0 + q + n - 1]
                h = (key * _FIBONACCI >> 32) & (size - 1)
                while keys[h] != key and keys[h] != _EMPTY:
                    h = (h + 1) & (size - 1)
                if keys[h] == _EMPTY:
                    keys[h], key_ids[h] = key, n_grams
                    hyp_count[n_grams] = 0
                    ref_count[n_grams] = 0
                    n_grams += 1
                hyp_gram[q] = key_ids[h]
                hyp_count[key_ids[h]] += 1
            found = 0
            for line in range(first_ref, last_ref):
                r0 = line_start[line]
                positions = line_start[line + 1] - r0 - n + 1
                base = r0 - refs_base
                matches = 0
                for q in range(positions):
                    if n == 1:
                        key = symbols[r0 + q]
                    else:
                        prefix = ref_gram[base + q]
                        if prefix < 0:  # already -1: its n-gram is not the hypothesis's either
                            continue
                        key = prefix * width + symbols[r0 + q + n - 1]
                    h = (key * _FIBONACCI >> 32) & (size - 1)
                    while keys[h] != key and keys[h] != _EMPTY:
                        h = (h + 1) & (size - 1)
                    if keys[h] == _EMPTY:
                        ref_gram[base + q] = -1
                        continue
                    g = key_ids[h]
                    ref_gram[base + q] = g
                    if ref_count[g] < hyp_count[g]:
                        matches += 1
                    ref_count[g] += 1
                    found += 1
                for q in range(positions):  # the counts back to 0 for the next reference
                    if ref_gram[base + q] >= 0:
                        ref_count[ref_gram[base + q]] = 0
                if positions > 0:
                    out[line - n_hyps, column + 3 * (n - 1) + 2] = matches
            if found == 0:  # no n-gram of this order matched: none of a higher order can
                break
    return out


def chrf_score(stats: Sequence[int], options: ChrfOptions) -> float:
    """The chrF score of summed statistics (one segment's, or a corpus's), in sacrebleu's
    arithmetic and order, as a Python float."""
    stats = [int(value) for value in stats]
    factor = options.beta ** 2
    if options.eps_smoothing:  # the mean over every order of its F, a missing part eps
        total = 0.0
        for k in range(options.order):
            hyp, ref, matches = stats[3 * k:3 * k + 3]
            precision = matches / hyp if hyp > 0 else _EPS
            recall = matches / ref if ref > 0 else _EPS
            denominator = factor * precision + recall
            total += (1 + factor) * precision * recall / denominator if denominator > 0 else _EPS
        return 100 * total / options.order
    # F of the precision and recall averaged over the orders both sides have n-grams of.
    precision = recall = 0.0
    counted = 0
    for k in range(options.order):
        hyp, ref, matches = stats[3 * k:3 * k + 3]
        if hyp > 0 and ref > 0:
            precision += matches / hyp
            recall += matches / ref
            counted += 1
    if counted == 0:
        return 0.0
    precision /= counted
    recall /= counted
    if precision + recall == 0:
        return 0.0
    return 100 * ((1 + factor) * precision * recall / (factor * precision + recall))


def chrf_scores(stats: np.ndarray, options: ChrfOptions) -> np.ndarray:
    """`chrf_score` of each row of `stats` (summed statistics), float64, the same operations in
    the same order elementwise."""
    stats = np.asarray(stats, np.int64).reshape(-1, options.width)
    factor = options.beta ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        if options.eps_smoothing:
            total = np.zeros(len(stats))
            for k in range(options.order):
                hyp, ref, matches = stats[:, 3 * k], stats[:, 3 * k + 1], stats[:, 3 * k + 2]
                precision = np.where(hyp > 0, matches / hyp, _EPS)
                recall = np.where(ref > 0, matches / ref, _EPS)
                denominator = factor * precision + recall
                f = (1 + factor) * precision * recall / denominator
                total = total + np.where(denominator > 0, f, _EPS)
            return 100 * total / options.order
        precision, recall = np.zeros(len(stats)), np.zeros(len(stats))
        counted = np.zeros(len(stats), np.int64)
        for k in range(options.order):
            hyp, ref, matches = stats[:, 3 * k], stats[:, 3 * k + 1], stats[:, 3 * k + 2]
            both = (hyp > 0) & (ref > 0)
            precision = precision + np.where(both, matches / hyp, 0.0)
            recall = recall + np.where(both, matches / ref, 0.0)
            counted += both
        precision = np.where(counted > 0, precision / counted, 0.0)
        recall = np.where(counted > 0, recall / counted, 0.0)
        score = 100 * ((1 + factor) * precision * recall / (factor * precision + recall))
        return np.where(precision + recall != 0, score, 0.0)
