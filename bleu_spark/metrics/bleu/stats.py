"""Per-segment sufficient statistics of BLEU, for a whole batch of segments at once.

A segment's statistics are the integers

    [sys_len, ref_len, correct_1 .. correct_N, total_1 .. total_N]

exactly as sacrebleu 2.6 computes them (tokens are `str.split()` tokens of the tokenized line;
`correct_n` clips each n-gram's count to its largest count in any one reference; `ref_len` is the
reference length closest to the candidate's, a tie going to the shorter). Integers sum the same
in any order, so any partitioning of the rows gives the same corpus totals.

The batch is tokenized with array operations (each distinct reference once, however many
systems' rows share it), and its n-grams are counted and clipped by one compiled loop over its
segments (numba): per segment and order, an exact hash table from n-gram to its count in each
line. Counting a whole batch with numpy sorts instead cost several times more (sorting is
O(n log n) over every token of the batch; a segment's table is O(its tokens)).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np
import pyarrow as pa

from ...compiled import compiled
from ...rows import present_references
from ...tokenizers import LineTokenizer


def stats_width(max_order: int) -> int:
    return 2 + 2 * max_order


def stats_names(max_order: int) -> List[str]:
    orders = range(1, max_order + 1)
    return ["sys_len", "ref_len"] + [f"correct_{n}" for n in orders] + [f"total_{n}" for n in orders]


@dataclass
class SegmentStatistics:
    stats: np.ndarray         # int64, one row per segment, columns as `stats_names`
    n_refs: np.ndarray        # references per segment
    references_tokenized: int  # distinct references tokenized for the batch


def segment_statistics(candidates: pa.Array, references: pa.Array, tokenizer: LineTokenizer,
                       max_order: int) -> SegmentStatistics:
    """Statistics of each segment. `candidates`: strings without nulls; `references`: lists of
    strings, each with at least one non-null reference."""
    n = len(candidates)
    distinct, slots, n_refs = _reference_slots(references)
    tokens = tokenizer(pa.concat_arrays([candidates, distinct.cast(candidates.type)]))
    lengths = tokens.lengths()  # lines 0..n-1 are the candidates, then the distinct references
    sys_len = lengths[:n]
    ref_lens = np.where(slots >= 0, lengths[n + slots], -1)
    stats = np.empty((n, stats_width(max_order)), np.int64)
    stats[:, 0] = sys_len
    stats[:, 1] = _closest_ref_len(sys_len, ref_lens)
    line_start = np.zeros(tokens.n_lines + 1, np.int64)
    np.cumsum(lengths, out=line_start[1:])
    stats[:, 2:2 + max_order] = _clipped_matches(tokens.ids, line_start, n, slots, max_order)
    stats[:, 2 + max_order:] = np.maximum(0, sys_len[:, None] - np.arange(max_order))
    return SegmentStatistics(stats, n_refs, len(distinct))


def _reference_slots(references: pa.Array):
    """The distinct references, and per segment the index of its k-th one (-1 past its last)."""
    flat, row = present_references(references)
    encoded = flat.dictionary_encode()
    n_refs = np.bincount(row, minlength=len(references))
    first = np.cumsum(n_refs) - n_refs
    slots = np.full((len(references), int(n_refs.max(initial=1))), -1, np.int64)
    slots[row, np.arange(len(row)) - first[row]] = encoded.indices.to_numpy()
    return encoded.dictionary, slots, n_refs


def _closest_ref_len(sys_len: np.ndarray, ref_lens: np.ndarray) -> np.ndarray:
    """sacrebleu's closest reference length; `ref_lens` is -1 past a segment's last reference."""
    present = ref_lens >= 0
    distance = np.where(present, np.abs(ref_lens - sys_len[:, None]), np.iinfo(np.int64).max)
    nearest = distance.min(axis=1)
    # A tie goes to the shorter reference.
    shorter = (present & (ref_lens == (sys_len - nearest)[:, None])).any(axis=1)
    return np.where(shorter, sys_len - nearest, sys_len + nearest)


_EMPTY = -1                                # a free slot of the hash table
_FIBONACCI = np.int64(-7046029254386353131)  # 2**64 / golden ratio, as int64: spreads the keys


@compiled
def _clipped_matches(ids, line_start, n_candidates, slots, max_order):  # pragma: no cover (compiled)
    """Per candidate and order, the sum over its distinct n-grams of min(its count, the n-gram's
    largest count in one of its segment's references). Line l's tokens are
    `ids[line_start[l]:line_start[l + 1]]`; candidates are lines 0..n_candidates-1, reference k of
    segment i is line `n_candidates + slots[i, k]` (-1 past its last).

    One segment at a time: its candidate's and references' tokens side by side, then per order
    an exact hash table from n-gram to a small id, counting each n-gram per line. An n-gram of
    order n is (the id of the (n-1)-gram at the same position, its last token): one int64 key,
    compared whole, so equal keys are equal n-grams and nothing collides."""
    n_slots = slots.shape[1]
    correct = np.zeros((n_candidates, max_order), np.int64)
    width = np.int64(ids.max() + 1) if len(ids) else np.int64(1)
    capacity = 0
    token = source = left = gram = keys = key_ids = counts = np.empty(0, np.int64)
    for i in range(n_candidates):
        candidate_length = line_start[i + 1] - line_start[i]
        if candidate_length == 0:
            continue
        n_lines, total = 1, candidate_length
        while n_lines <= n_slots and slots[i, n_lines - 1] >= 0:
            line = n_candidates + slots[i, n_lines - 1]
            total += line_start[line + 1] - line_start[line]
            n_lines += 1
        if total > capacity:  # buffers grow to the longest segment, once
            capacity = max(2 * capacity, total, 4)  # 4: the table of 16 slots at least
            token, source, left, gram = (np.empty(capacity, np.int64), np.empty(capacity, np.int64),
                                         np.empty(capacity, np.int64), np.empty(capacity, np.int64))
            keys, key_ids = np.empty(4 * capacity, np.int64), np.empty(4 * capacity, np.int64)
            counts = np.empty(capacity * (n_slots + 1), np.int64)
        p = 0
        for k in range(n_lines):  # the segment's tokens; left: tokens to the end of the line
            line = i if k == 0 else n_candidates + slots[i, k - 1]
            for j in range(line_start[line], line_start[line + 1]):
                token[p], source[p], left[p] = ids[j], k, line_start[line + 1] - j
                p += 1
        size = 16
        while size < 2 * total:
            size *= 2
        for order in range(1, min(max_order, candidate_length) + 1):
            keys[:size] = _EMPTY
            n_grams = 0
            for q in range(total):
                if left[q] < order:
                    continue
                key = token[q] if order == 1 else gram[q] * width + token[q + order - 1]
                h = (key * _FIBONACCI >> 32) & (size - 1)
                while keys[h] != key and keys[h] != _EMPTY:
                    h = (h + 1) & (size - 1)
                if keys[h] == _EMPTY:
                    keys[h], key_ids[h] = key, n_grams
                    counts[n_grams * n_lines:(n_grams + 1) * n_lines] = 0
                    n_grams += 1
                gram[q] = key_ids[h]
                counts[gram[q] * n_lines + source[q]] += 1
            matched = 0
            for g in range(n_grams):
                in_candidate = counts[g * n_lines]
                if in_candidate:
                    matched += min(in_candidate, counts[g * n_lines + 1:(g + 1) * n_lines].max()
                                   if n_lines > 1 else 0)
            correct[i, order - 1] = matched
    return correct
