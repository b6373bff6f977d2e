"""--metric-costs: per-segment statistics of the metrics besides BLEU, this project's batch
kernels against sacrebleu's own extraction, on the same rows."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Dict, List


def _metric_kernels():
    import numpy as np
    from sacrebleu.metrics import CHRF, TER

    from bleu_spark.metrics.chrf_kernel import ChrfOptions, chrf_statistics
    from bleu_spark.metrics.ter_kernel import TerOptions, ter_statistics

    return {"chrf": (lambda h, r: chrf_statistics(h, r, ChrfOptions()), CHRF()),
            "chrf++": (lambda h, r: chrf_statistics(h, r, ChrfOptions(word_order=2)), CHRF(word_order=2)),
            "ter": (lambda h, r: np.column_stack(ter_statistics(h, r, TerOptions())), TER())}


def metric_costs(input_path: Path, rows_per_langpair: int, repeats: int) -> List[Dict[str, Any]]:
    """Per language pair and metric: µs a row of this project's statistics (best of `repeats`)
    and of sacrebleu's `_extract_corpus_statistics` (once: it is the slow side), on evenly
    spaced rows of each pair, and whether the statistics are identical."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from bleu_spark.oracle import reference_streams

    table = pq.read_table(input_path, columns=["langpair", "candidate", "references"])
    out = []
    for langpair in sorted(set(table["langpair"].to_pylist())):
        rows = table.filter(pc.equal(table["langpair"], langpair))
        rows = rows.take(np.linspace(0, rows.num_rows - 1, min(rows_per_langpair, rows.num_rows)).astype(int))
        hyps, refs = rows["candidate"].combine_chunks(), rows["references"].combine_chunks()
        hyp_list, streams = hyps.to_pylist(), reference_streams(refs.to_pylist())
        for name, (ours, theirs) in _metric_kernels().items():
            ours(hyps, refs)  # compiled code loaded once, as a long-running worker has it
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                mine = ours(hyps, refs)
                times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            expected = np.array(theirs._extract_corpus_statistics(hyp_list, streams), dtype=float)
            sacre = time.perf_counter() - t0
            n = rows.num_rows
            out.append({"langpair": langpair, "metric": name, "rows": n,
                        "ours_us": 1e6 * min(times) / n, "sacrebleu_us": 1e6 * sacre / n,
                        "identical": bool(np.array_equal(np.asarray(mine, dtype=float), expected))})
            print(f"  {langpair} {name:7} {out[-1]['ours_us']:9.1f} µs/row  sacrebleu "
                  f"{out[-1]['sacrebleu_us']:9.1f}  x{out[-1]['sacrebleu_us'] / out[-1]['ours_us']:7.1f}  "
                  f"{'identical' if out[-1]['identical'] else 'DIFFERENT'}", flush=True)
    return out


def run_metric_costs(args, input_path: Path, info: Dict[str, Any]) -> int:
    print(f"per-row cost of chrF, chrF++ and TER statistics in one process, {args.cost_rows:,} rows "
          f"a language pair, best of {args.repeats} (sacrebleu: one run)", flush=True)
    table = metric_costs(input_path, args.cost_rows, args.repeats)
    print(f"{'metric':8} {'rows':>7} {'ours µs/row':>12} {'sacrebleu µs/row':>17} {'ratio':>7}")
    for name in _metric_kernels():
        mine = [r for r in table if r["metric"] == name]
        rows = sum(r["rows"] for r in mine)
        ours = sum(r["ours_us"] * r["rows"] for r in mine) / rows
        theirs = sum(r["sacrebleu_us"] * r["rows"] for r in mine) / rows
        print(f"{name:8} {rows:>7,} {ours:>12.1f} {theirs:>17.1f} {theirs / ours:>7.1f}")
    identical = all(r["identical"] for r in table)
    print("statistics: " + ("identical to sacrebleu's on every row" if identical else "DIFFERENT"))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"machine": info, "input": str(input_path),
                                                   "metric_costs": table}, indent=1))
    return 0 if identical else 1
