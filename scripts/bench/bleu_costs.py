"""--tokenizer-costs: microseconds per row of the BLEU statistics (and of their tokenizer) of
each langpair in one process, this checkout and, side by side, the --job-root checkout."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .environment import REPO, git_describe
from .sacrebleu_runs import auto_tokenize, valid_rows


def _statistics_module(alias: str):
    """BLEU's statistics module of a checkout: where it lives now, or where older ones kept it."""
    import importlib

    try:
        return importlib.import_module(alias + ".metrics.bleu.stats")
    except ModuleNotFoundError:
        return importlib.import_module(alias + ".stats")


def load_checkout(root: Path, alias: str):
    """The bleu_spark package of checkout `root`, imported as `alias`, so that two checkouts run
    side by side in one process (the package imports itself only relatively)."""
    import importlib
    import importlib.util

    # numba caches compiled code next to the source, and the cache names the module that
    # compiled it: code cached under an alias is a miss where the package runs as `bleu_spark`
    # (the job's workers), and compiles again (bleu_spark/compiled.py). The alias caches in a
    # folder of its own where numba reads the setting in time; it is restored for what runs next.
    import numba

    previous = os.environ.get("NUMBA_CACHE_DIR")
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"{alias}-numba-")
    atexit.register(shutil.rmtree, os.environ["NUMBA_CACHE_DIR"], ignore_errors=True)
    numba.config.reload_config()
    try:
        init = root / "bleu_spark" / "__init__.py"
        spec = importlib.util.spec_from_file_location(alias, init,
                                                      submodule_search_locations=[str(init.parent)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[alias] = module
        spec.loader.exec_module(module)
        stats, tokenizers = (_statistics_module(alias), importlib.import_module(alias + ".tokenizers"))
    finally:
        if previous is None:
            os.environ.pop("NUMBA_CACHE_DIR")
        else:
            os.environ["NUMBA_CACHE_DIR"] = previous
        numba.config.reload_config()
    return stats, tokenizers


class _TimedTokenizer:
    """A LineTokenizer that adds up the time spent in it."""

    def __init__(self, tokenizer):
        self.tokenizer, self.seconds = tokenizer, 0.0

    def __call__(self, lines):
        start = time.perf_counter()
        tokens = self.tokenizer(lines)
        self.seconds += time.perf_counter() - start
        return tokens


def _cost_batches(input_path: Path, langpairs: Optional[List[str]], batch_rows: int, order: str):
    """(langpair, [(candidates, references) batches]) of the rows the job scores: `file` order,
    or `segment` order (the rows of a segment side by side, as when references are brought
    together)."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(str(input_path), columns=["langpair", "seg_id", "candidate", "references"])
    table = table.filter(valid_rows(table))
    for langpair in langpairs or sorted(pc.unique(table["langpair"]).to_pylist()):
        rows = table.filter(pc.equal(table["langpair"], langpair))
        if order == "segment":
            rows = rows.take(pc.sort_indices(rows, [("seg_id", "ascending")]))
        cands, refs = rows["candidate"].combine_chunks(), rows["references"].combine_chunks()
        starts = np.arange(0, rows.num_rows, batch_rows)
        yield langpair, [(cands.slice(i, batch_rows), refs.slice(i, batch_rows)) for i in starts]


def _time_batches(stats_mod, tokenizers_mod, name: str, batches) -> Tuple[float, float, list]:
    """Seconds in segment_statistics and in its tokenizer over all batches, and the statistics.
    A fresh tokenizer per batch, as the job builds one per partition."""
    total = tokenizing = 0.0
    results = []
    for cands, refs in batches:
        tok = _TimedTokenizer(tokenizers_mod.LineTokenizer(name))
        start = time.perf_counter()
        results.append(stats_mod.segment_statistics(cands, refs, tok, 4).stats)
        total += time.perf_counter() - start
        tokenizing += tok.seconds
    return total, tokenizing, results


def tokenizer_costs(input_path: Path, other_root: Optional[Path], langpairs, batch_rows: int,
                    repeats: int, order: str, tokenize: str = "auto") -> Tuple[List[Dict[str, Any]], bool]:
    """Per langpair, microseconds per row of segment_statistics (and of its tokenizer) for this
    checkout and `other_root`, both in this process, alternating, best of `repeats`. Checks the
    two give identical statistics."""
    import numpy as np

    checkouts = {"new": load_checkout(REPO, "bleu_spark_new")}
    if other_root is not None:
        checkouts["old"] = load_checkout(other_root, "bleu_spark_old")
    table, identical = [], True
    for langpair, batches in _cost_batches(input_path, langpairs, batch_rows, order):
        name = auto_tokenize(langpair, tokenize)
        n_rows = sum(len(c) for c, _ in batches)
        best: Dict[str, Tuple[float, float]] = {}
        outputs: Dict[str, list] = {}
        for _ in range(repeats):
            for label, (stats_mod, tok_mod) in checkouts.items():
                total, tokenizing, outputs[label] = _time_batches(stats_mod, tok_mod, name, batches)
                if label not in best or total < best[label][0]:
                    best[label] = (total, tokenizing)
        same = len(outputs) < 2 or all(np.array_equal(a, b) for a, b in zip(outputs["new"], outputs["old"]))
        identical = identical and same
        row = {"langpair": langpair, "tokenize": name, "rows": n_rows, "identical": same}
        for label, (total, tokenizing) in best.items():
            row[f"{label}_us_per_row"] = total / n_rows * 1e6
            row[f"{label}_tokenize_us_per_row"] = tokenizing / n_rows * 1e6
        table.append(row)
    return table, identical


def print_costs(table: List[Dict[str, Any]]) -> None:
    has_old = any("old_us_per_row" in r for r in table)
    hdr = f"{'langpair':<8} {'tokenizer':<9} {'rows':>7} {'new us/row':>10} {'(tokenize)':>10}"
    if has_old:
        hdr += f" {'old us/row':>10} {'(tokenize)':>10} {'old/new':>7} {'same stats':>10}"
    print(hdr)
    print("-" * len(hdr))
    for r in table:
        line = (f"{r['langpair']:<8} {r['tokenize']:<9} {r['rows']:>7,} {r['new_us_per_row']:>10.1f} "
                f"{r['new_tokenize_us_per_row']:>10.1f}")
        if has_old:
            line += (f" {r['old_us_per_row']:>10.1f} {r['old_tokenize_us_per_row']:>10.1f} "
                     f"{r['old_us_per_row'] / r['new_us_per_row']:>7.2f} {str(r['identical']):>10}")
        print(line)


def run_costs(args, input_path: Path, info: Dict[str, Any]) -> int:
    job_root = Path(args.job_root).resolve()
    other = None if job_root == REPO else job_root
    langpairs = [x for x in args.cost_langpairs.split(",") if x] if args.cost_langpairs else None
    print(f"per-row cost in one process, batches of {args.batch_rows:,} rows in {args.cost_order} "
          f"order, best of {args.repeats}; new = {REPO} ({git_describe(REPO)})"
          + (f", old = {other} ({git_describe(other) or 'commit unknown: no git, no COMMIT file'})"
             if other else ""), flush=True)
    table, identical = tokenizer_costs(input_path, other, langpairs, args.batch_rows, args.repeats,
                                       args.cost_order, args.tokenize)
    if not identical:
        print("statistics of the two checkouts DIFFER: " + ", ".join(
            r["langpair"] for r in table if not r["identical"]))
    print_costs(table)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"machine": info, "input": str(input_path),
                                                   "costs": table}, indent=1))
    return 0 if identical else 1
