"""The identity guard: per-group results of two paths compared, before any speed is printed."""
from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .paths import EXACT_PATHS, GROUP_KEYS

IDENTITY_TOL = 1e-9
COMPARED_INT_FIELDS = ("counts", "totals", "sys_len", "ref_len", "n_segments")


def _key(rec: Dict[str, Any]) -> Tuple[str, ...]:
    return tuple(str(rec[k]) for k in GROUP_KEYS)


def compare_results(expected: Iterable[Dict[str, Any]], actual: Iterable[Dict[str, Any]],
                    tol: float = IDENTITY_TOL) -> List[str]:
    """Differences between two per-group result lists; empty when identical.

    Score within tol (absolute, on the 0-100 scale); counts, totals, sys_len, ref_len and
    n_segments (when both have it) equal; the same set of groups."""
    exp = {}
    for r in expected:
        exp[_key(r)] = r
    act = {}
    problems: List[str] = []
    for r in actual:
        k = _key(r)
        if k in act:
            problems.append(f"group {k}: appears twice")
        act[k] = r
    for k in sorted(set(exp) - set(act)):
        problems.append(f"group {k}: missing")
    for k in sorted(set(act) - set(exp)):
        problems.append(f"group {k}: unexpected")
    for k in sorted(set(exp) & set(act)):
        e, a = exp[k], act[k]
        try:
            es, as_ = float(e["score"]), float(a["score"])
        except (KeyError, TypeError, ValueError):
            problems.append(f"group {k}: score missing")
            continue
        if not (math.isfinite(es) and math.isfinite(as_)) or abs(es - as_) > tol:
            problems.append(f"group {k}: score {as_!r} != {es!r}")
        for f in COMPARED_INT_FIELDS:
            if f not in e or f not in a:
                if f == "n_segments":
                    continue
                problems.append(f"group {k}: {f} missing")
                continue
            ev, av = e[f], a[f]
            ev = [int(x) for x in ev] if isinstance(ev, (list, tuple)) else int(ev)
            av = [int(x) for x in av] if isinstance(av, (list, tuple)) else int(av)
            if ev != av:
                problems.append(f"group {k}: {f} {av} != {ev}")
    return problems


def signature_differences(expected, actual) -> List[str]:
    exp = {_key(r): r.get("signature") for r in expected}
    out = []
    for r in actual:
        k = _key(r)
        if k in exp and r.get("signature") is not None and r.get("signature") != exp[k]:
            out.append(f"group {k}: signature {r.get('signature')!r} != {exp[k]!r}")
    return out


def check_identity(results: Dict[str, List[Dict[str, Any]]], failed: List[str]) -> Dict[str, Any]:
    """The exact paths' results against the first's, printed as they are compared. `passed` is
    None when fewer than two exact paths gave results, False when one differs or a path failed."""
    exact = [p for p in EXACT_PATHS if p in results]
    identity: Dict[str, Any] = {"paths": exact, "problems": {}, "signature_warnings": {}}
    if len(exact) < 2:
        identity["passed"] = None
        print("identity check: not run (needs two of a1, a2, b, c)")
        return identity
    ref_path = exact[0]
    print(f"identity check against {ref_path} ({len(results[ref_path])} groups):")
    ok = not failed
    for p in exact[1:]:
        same = _check_path(identity, p, results[p], ref_path, results[ref_path])
        ok = ok and same
    if "a3" in results:
        identity["a3_max_abs_score_diff"] = _max_score_difference(results[ref_path], results["a3"])
        print(f"  a3 (bleuscore, not checked): max |score - {ref_path}| = "
              f"{identity['a3_max_abs_score_diff']}")
    identity["passed"] = ok
    print("identity check: " + ("PASSED" if ok else "FAILED"))
    return identity


def _check_path(identity: Dict[str, Any], path: str, actual, ref_path: str, expected) -> bool:
    """One path against the reference path: its differences and signature warnings recorded in
    `identity` and printed; True when it has no differences."""
    problems = compare_results(expected, actual)
    identity["problems"][path] = problems
    signatures = signature_differences(expected, actual)
    if signatures:
        identity["signature_warnings"][path] = signatures[:20]
    status = "identical" if not problems else f"{len(problems)} DIFFERENCES"
    print(f"  {path} vs {ref_path}: {status}")
    for line in problems[:20]:
        print(f"    {line}")
    for line in signatures[:3]:
        print(f"    warning: {line}")
    return not problems


def _max_score_difference(expected, bleuscore) -> Optional[float]:
    base = {_key(x): x for x in expected}
    diffs = [abs(x["score"] - base[_key(x)]["score"]) for x in bleuscore if _key(x) in base]
    return max(diffs) if diffs else None
