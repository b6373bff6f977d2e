"""Per-segment sufficient statistics of BLEU, for a whole batch of segments at once.

A segment's statistics are the integers

    [sys_len, ref_len, correct_1 .. correct_N, total_1 .. total_N]

exactly as sacrebleu 2.6 computes them (tokens are `str.split()` tokens of the tokenized line;
`correct_n` clips each n-gram's count to its largest count in any one reference; `ref_len` is the
reference length closest to the candidate's, a tie going to the shorter). Integers sum the same
in any order, so any partitioning of the rows gives the same corpus totals.

The batch is counted with array operations, not a Python loop per segment: n-grams get dense
integer ids (each order's id built from the previous order's and the next token's), counts
come from sorting (line, n-gram) keys, and clipping looks each candidate n-gram up among the
counts of its segment's references. Each distinct reference of the batch is tokenized once,
however many systems' rows share it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np
import pyarrow as pa

from .rows import present_references
from .tokenizers import LineTokenizer, Tokens


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
    stats[:, 2:2 + max_order] = _clipped_matches(tokens, n, slots, max_order)
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


def _clipped_matches(tokens: Tokens, n_candidates: int, slots: np.ndarray,
                     max_order: int) -> np.ndarray:
    """Per candidate and order, the sum over its n-grams of min(its count, the n-gram's largest
    count in one of the segment's references). Candidates are the first `n_candidates` lines of
    `tokens`, reference k of segment i is line `n_candidates + slots[i, k]`."""
    correct = np.zeros((n_candidates, max_order), np.int64)
    ids, line = tokens.ids, tokens.line
    start = np.arange(len(ids))       # where each n-gram of the current order starts
    grams = ids                       # its dense id
    n_grams = int(ids.max(initial=0)) + 1
    for order in range(1, max_order + 1):
        if order > 1:  # extend every n-gram that has a next token on its own line
            end = start + order - 1
            inside = end < len(ids)
            inside[inside] = line[end[inside]] == line[start[inside]]
            start, end = start[inside], end[inside]
            if not len(start):
                break
            # Both parts are below len(ids), so the pair is below len(ids)**2: int64 holds it.
            _, grams = np.unique(grams[inside] * len(ids) + ids[end], return_inverse=True)
            n_grams = int(grams.max()) + 1
        keys, counts = np.unique(line[start] * n_grams + grams, return_counts=True)
        first_ref = np.searchsorted(keys, n_candidates * n_grams)
        cand_line, cand_gram = np.divmod(keys[:first_ref], n_grams)
        best = _largest_reference_counts(keys[first_ref:], counts[first_ref:], n_grams,
                                         cand_gram, slots[cand_line], n_candidates)
        clipped = np.minimum(counts[:first_ref], best)
        correct[:, order - 1] = np.bincount(cand_line, weights=clipped, minlength=n_candidates)
    return correct


def _largest_reference_counts(ref_keys, ref_counts, n_grams, grams, slots,
                              first_ref_line) -> np.ndarray:
    """For each n-gram `grams[i]`, its largest count among the references `slots[i]` (line
    `first_ref_line + slot`; -1 past the segment's last). `ref_keys` (line * n_grams + n-gram)
    are sorted and so, mostly, are the queries, as rows sharing references are adjacent: the
    binary searches stay in cache."""
    best = np.zeros(len(grams), np.int64)
    in_a_reference = np.zeros(n_grams, bool)
    in_a_reference[ref_keys % n_grams] = True
    asked = np.flatnonzero(in_a_reference[grams])  # the others cannot match: no search
    ref_keys = np.append(ref_keys, np.iinfo(np.int64).max)  # every query finds a place
    ref_counts = np.append(ref_counts, 0)
    for slot in slots.T:  # one reference of each segment at a time
        ask = asked[slot[asked] >= 0]
        queries = (first_ref_line + slot[ask]) * n_grams + grams[ask]
        index = np.searchsorted(ref_keys, queries)
        best[ask] = np.maximum(best[ask], np.where(ref_keys[index] == queries, ref_counts[index], 0))
    return best
