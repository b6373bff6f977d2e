"""Per-segment sufficient statistics of BLEU and their sum.

A segment's statistics are the integers

    [sys_len, ref_len, correct_1 .. correct_N, total_1 .. total_N]

exactly as sacrebleu 2.6 computes them (tokens are `str.split()` tokens of the tokenized line;
`correct_n` clips each n-gram's count to its largest count in any one reference; `ref_len` is the
reference length closest to the candidate's, a tie going to the shorter). Integers sum the same
in any order, so any partitioning of the rows gives the same corpus totals.
"""
from __future__ import annotations

from collections import _count_elements
from functools import lru_cache
from typing import List, Optional, Sequence, Tuple

from .config import BleuConfig
from .tokenizers import build_tokenizer

# Reference statistics kept per scorer, keyed by the segment's reference strings: rows of many
# systems that share a segment's references tokenize them once. Bounded, so memory stays flat.
REFERENCE_CACHE_SIZE = 4096

NgramCounts = List[dict]  # one {ngram: count} per order; order 1 keys are tokens, others tuples


def stats_width(max_order: int) -> int:
    return 2 + 2 * max_order


def stats_names(max_order: int) -> List[str]:
    orders = range(1, max_order + 1)
    return ["sys_len", "ref_len"] + [f"correct_{n}" for n in orders] + [f"total_{n}" for n in orders]


def ngram_counts(tokens: List[str], max_order: int) -> NgramCounts:
    counts = []
    for n in range(1, max_order + 1):
        grams = tokens if n == 1 else zip(*[tokens[i:] for i in range(n)])
        # Counter's own C counting loop, without Counter's per-call Python set-up (a third of
        # the counting time for sentence-length lists); a plain dict of counts is all we need.
        counted: dict = {}
        _count_elements(counted, grams)
        counts.append(counted)
    return counts


def reference_statistics(ref_token_lists: Sequence[List[str]],
                         max_order: int) -> Tuple[Tuple[int, ...], NgramCounts]:
    """Lengths of the references and, per n-gram, its largest count in any one of them."""
    lengths = tuple(len(tokens) for tokens in ref_token_lists)
    merged = ngram_counts(ref_token_lists[0], max_order)
    for tokens in ref_token_lists[1:]:
        for best, counts in zip(merged, ngram_counts(tokens, max_order)):
            for ngram, count in counts.items():
                if count > best.get(ngram, 0):
                    best[ngram] = count
    return lengths, merged


def closest_ref_len(sys_len: int, ref_lens: Sequence[int]) -> int:
    return min(ref_lens, key=lambda ref_len: (abs(sys_len - ref_len), ref_len))


def segment_statistics(sys_tokens: List[str], ref_lens: Sequence[int], ref_counts: NgramCounts,
                       max_order: int) -> List[int]:
    sys_len = len(sys_tokens)
    correct = []
    for sys_counts, best in zip(ngram_counts(sys_tokens, max_order), ref_counts):
        # Sum of min(count in candidate, largest count in a reference) over shared n-grams,
        # iterated in C (map over builtins) rather than a Python loop per n-gram.
        shared = sys_counts.keys() & best.keys()
        correct.append(sum(map(min, map(sys_counts.__getitem__, shared),
                               map(best.__getitem__, shared))))
    totals = [max(0, sys_len - n) for n in range(max_order)]
    return [sys_len, closest_ref_len(sys_len, ref_lens)] + correct + totals


class SegmentScorer:
    """Statistics of one segment with one tokenizer: built once per partition, reused per row."""

    def __init__(self, config: BleuConfig, tokenizer_name: str, spm_model: Optional[str] = None):
        self.max_order = config.max_ngram_order
        self.lowercase = config.lowercase
        self.tokenizer = build_tokenizer(tokenizer_name, spm_model or config.spm_model)
        self._references = lru_cache(maxsize=REFERENCE_CACHE_SIZE)(self._reference_statistics)

    def tokens(self, line: str) -> List[str]:
        # sacrebleu's preprocessing order: lowercase, strip trailing whitespace, tokenize, split.
        if self.lowercase:
            line = line.lower()
        return self.tokenizer(line.rstrip()).split()

    def _reference_statistics(self, references: Tuple[str, ...]):
        return reference_statistics([self.tokens(ref) for ref in references], self.max_order)

    def statistics(self, candidate: str, references: Tuple[str, ...]) -> List[int]:
        """`references` holds the segment's non-null references (at least one)."""
        ref_lens, ref_counts = self._references(references)
        return segment_statistics(self.tokens(candidate), ref_lens, ref_counts, self.max_order)

    def signature(self) -> str:
        return self.tokenizer.signature()

    @property
    def references_tokenized(self) -> int:
        """Reference sets tokenized so far: each cache miss is one."""
        return self._references.cache_info().misses

