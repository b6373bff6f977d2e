"""Row-level checks: why a row cannot be scored, as a stable reason code."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

NULL_CANDIDATE = "null_candidate"
NO_REFERENCE = "no_reference"              # the references are null, empty, or all null
NO_REFERENCE_ROW = "no_reference_row"      # joined references: no row matches the candidate
AMBIGUOUS_REFERENCE = "ambiguous_reference"  # the join key matches several array-form rows
DUPLICATE_SEGMENT = "duplicate_segment"    # a (group, segment key) seen more than once
UNMATCHED_REFERENCE = "unmatched_reference"  # a reference row no candidate uses (reported only)

REASONS = {
    NULL_CANDIDATE: "the candidate is null",
    NO_REFERENCE: "the segment has no non-null reference",
    NO_REFERENCE_ROW: "no row of the references table matches the candidate's join key",
    AMBIGUOUS_REFERENCE: "the join key matches several rows of the references table",
    DUPLICATE_SEGMENT: "the same (group, segment key) appears more than once (every copy is rejected)",
    UNMATCHED_REFERENCE: "a references-table row that no candidate matched (not an error)",
}


def present_references(references: Optional[Sequence[Optional[str]]]) -> Tuple[str, ...]:
    """The segment's references as sacrebleu uses them: null ones dropped, empty ones kept."""
    if references is None:
        return ()
    return tuple(ref for ref in references if ref is not None)


def rejection_reason(candidate, references: Tuple[str, ...],
                     found: Optional[str] = None) -> Optional[str]:
    """`found`: a reason already found by checks across rows (joins, duplicates); it wins."""
    if found:
        return found
    if candidate is None:
        return NULL_CANDIDATE
    if not references:
        return NO_REFERENCE
    return None
