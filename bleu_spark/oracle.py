"""sacrebleu 2.6 itself on the same rows: the reference every score of this job is checked against
(each metric's own comparator beside it, e.g. `metrics/bleu/oracle.py`).

Used by the tests, `scripts/check_wmt22.py` and `scripts/bench.py`; never by the job.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Optional, Sequence

from sacrebleu.metrics.ter import TER
from sacrebleu.utils import sum_of_lists

from .metrics.ter import SCALE


def reference_streams(references: Sequence[Sequence[Optional[str]]]):
    """Per-segment reference lists -> sacrebleu's reference streams, padded with None."""
    width = max(len(refs) for refs in references)
    return [[refs[i] if i < len(refs) else None for refs in references] for i in range(width)]


def sacrebleu_sums(metric, stats: Sequence[Sequence]) -> list:
    """sacrebleu's segment statistics (`metric._extract_corpus_statistics`) summed as its
    `corpus_score` sums them, in the form of this job's statistics table. TER's mean reference
    length of a segment (a double) is taken times 2520 and rounded, as the table keeps it: exact
    for 1 to 10 references, so the sums compare exactly, not to within a float sum's rounding."""
    if isinstance(metric, TER):
        return [sum(s[0] for s in stats), sum(round(Fraction(s[1]) * SCALE) for s in stats)]
    return list(sum_of_lists(stats))
