"""The one comparison every oracle test makes: our result against sacrebleu's, field by field."""
import math

TOLERANCE = 1e-9


def assert_matches_sacrebleu(ours, theirs: dict) -> None:
    ours = ours if isinstance(ours, dict) else ours.to_dict()
    assert math.isclose(ours["score"], theirs["score"], rel_tol=0, abs_tol=TOLERANCE), \
        (ours["score"], theirs["score"])
    for field in ("counts", "totals", "sys_len", "ref_len", "signature", "verbose"):
        assert ours[field] == theirs[field], (field, ours[field], theirs[field])
    assert all(math.isclose(a, b, abs_tol=TOLERANCE) for a, b in zip(ours["precisions"], theirs["precisions"]))
