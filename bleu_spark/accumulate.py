"""Summed statistics of one group, and its score: shared by the Python API and the Spark job."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Sequence

from .config import BleuConfig
from .scoring import BleuResult, build_result
from .signature import bleu_signature, nrefs_label
from .stats import stats_width


@dataclass
class GroupTotals:
    max_order: int
    stats: List[int] = field(default_factory=list)
    n_segments: int = 0
    min_refs: int = 0
    max_refs: int = 0

    def __post_init__(self):
        if not self.stats:
            self.stats = [0] * stats_width(self.max_order)

    def add(self, stats: Sequence[int], n_refs: int) -> None:
        for i, value in enumerate(stats):
            self.stats[i] += value
        self.min_refs = n_refs if self.n_segments == 0 else min(self.min_refs, n_refs)
        self.max_refs = max(self.max_refs, n_refs)
        self.n_segments += 1

    def result(self, config: BleuConfig, tokenize: str, tokenizer_signature: str) -> BleuResult:
        signature = bleu_signature(config, nrefs_label(self.min_refs, self.max_refs),
                                   tokenizer_signature)
        return build_result(self.stats, config, self.n_segments, tokenize, signature)
