"""Paths a1, a2 (sacrebleu) and a3 (bleuscore), each run as a child process of the benchmark
(`bench.py _score ...`)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from .environment import BENCH_SCRIPT


def auto_tokenize(langpair: str, tokenize: str) -> str:
    if tokenize != "auto":
        return tokenize
    trg = langpair.split("-")[-1] if "-" in langpair else ""
    return {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}.get(trg, "13a")


def _groups_of_langpair(table):
    """(system, rows of that system ordered by (testset, seg_id)) for each system."""
    import pyarrow.compute as pc

    for system in sorted(pc.unique(table["system"]).to_pylist()):
        g = table.filter(pc.equal(table["system"], system))
        g = g.take(pc.sort_indices(g, [("testset", "ascending"), ("seg_id", "ascending")]))
        yield system, g


def _transpose_refs(ref_lists: List[List[Optional[str]]]) -> List[List[Optional[str]]]:
    n = max((len(r) for r in ref_lists), default=0)
    if all(len(r) == n for r in ref_lists):
        return [list(s) for s in zip(*ref_lists)] if n else []
    return [[r[k] if k < len(r) else None for r in ref_lists] for k in range(n)]


def valid_rows(table):
    """Rows the job scores: a candidate and at least one non-null reference."""
    import numpy as np
    import pyarrow.compute as pc

    refs = table["references"].combine_chunks() if table.num_rows else None
    n = table.num_rows
    if not n:
        return np.zeros(0, bool)
    flat_valid = pc.is_valid(pc.list_flatten(refs)).to_numpy(zero_copy_only=False)
    parents = pc.list_parent_indices(refs).to_numpy()
    n_refs = np.bincount(parents[flat_valid], minlength=n)
    ok = (n_refs > 0) & pc.is_valid(refs).to_numpy(zero_copy_only=False)
    return ok & pc.is_valid(table["candidate"]).to_numpy(zero_copy_only=False)


def _score_record(system, langpair, res, n_segments, signature) -> Dict[str, Any]:
    return {"system": system, "langpair": langpair, "score": res.score,
            "counts": [int(x) for x in res.counts], "totals": [int(x) for x in res.totals],
            "precisions": list(res.precisions), "bp": res.bp, "ratio": res.ratio,
            "sys_len": int(res.sys_len), "ref_len": int(res.ref_len),
            "n_segments": n_segments, "signature": signature}


def run_score_path(path: str, input_path: str, out_path: str, tokenize: str = "auto") -> None:
    """One of a1/a2/a3 over the whole input; writes results and timings to out_path."""
    t_start = time.perf_counter()
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    if path == "a3":
        import bleuscore
    else:
        from sacrebleu.metrics import BLEU
    t_import = time.perf_counter()
    ds = pads.dataset(input_path, format="parquet")
    cols = ["testset", "langpair", "system", "seg_id", "candidate", "references"]
    langpairs = sorted(pc.unique(ds.to_table(columns=["langpair"])["langpair"]).to_pylist())
    results: List[Dict[str, Any]] = []
    t_read = t_score = 0.0
    rows = skipped = 0
    for lp in langpairs:
        t0 = time.perf_counter()
        table = ds.to_table(columns=cols, filter=pc.field("langpair") == lp)
        valid = valid_rows(table)
        skipped += len(table) - int(valid.sum())
        if not valid.all():
            table = table.filter(pa.array(valid))
        rows += len(table)
        tok = auto_tokenize(lp, tokenize)
        t_read += time.perf_counter() - t0
        cached: Dict[Any, Any] = {}
        groups = _groups_of_langpair(table)
        while True:
            t1 = time.perf_counter()
            item = next(groups, None)
            t2 = time.perf_counter()
            t_read += t2 - t1
            if item is None:
                break
            system, g = item
            hyps = g["candidate"].to_pylist()
            ref_lists = g["references"].to_pylist()
            if path == "a1":
                bleu = BLEU(tokenize=tok)
                res = bleu.corpus_score(hyps, _transpose_refs(ref_lists))
                results.append(_score_record(system, lp, res, len(hyps), bleu.get_signature().format()))
            elif path == "a2":
                # references are those of the segment keys; systems that cover the same keys
                # share one BLEU object whose reference n-grams were computed once
                key = hash((tuple(g["testset"].to_pylist()), tuple(g["seg_id"].to_pylist())))
                bleu = cached.get(key)
                if bleu is None:
                    bleu = BLEU(tokenize=tok, references=_transpose_refs(ref_lists))
                    cached[key] = bleu
                res = bleu.corpus_score(hyps, None)
                results.append(_score_record(system, lp, res, len(hyps), bleu.get_signature().format()))
            elif path == "a3":
                if tok != "13a":
                    continue
                refs = [[r for r in rl if r is not None] for rl in ref_lists]
                res = bleuscore.compute(references=refs, predictions=hyps, max_order=4,
                                        smooth=False, ref_len_method="sacrebleu")
                results.append({"system": system, "langpair": lp, "score": 100.0 * res["bleu"],
                                "sys_len": res["translation_length"],
                                "ref_len": res["reference_length"], "n_segments": len(hyps)})
            else:
                raise ValueError(path)
            t_score += time.perf_counter() - t2
            del g, hyps, ref_lists
        del table, cached
    out = {"path": path, "rows": rows, "rejected": skipped, "results": results,
           "timings": {"import_s": t_import - t_start, "read_group_s": t_read, "score_s": t_score,
                       "total_s": time.perf_counter() - t_start}}
    Path(out_path).write_text(json.dumps(out))


def score_command(path: str, input_path: Path, out_json: Path, tokenize: str) -> List[str]:
    """The child process that runs `path` (a1, a2 or a3) over input_path into out_json."""
    return [sys.executable, str(BENCH_SCRIPT), "_score", path, str(input_path), str(out_json), tokenize]
