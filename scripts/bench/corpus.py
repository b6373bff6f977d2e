"""The corpora the benchmark reads: generated (cached under --workdir by their parameters)
or given, and the statistics table path g aggregates."""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

from .sentences import CAND_ODDITIES, REF_ODDITIES, base_sentences, edit, oddities, render, row_offsets
from .vocabulary import Vocabulary

GENERATOR_VERSION = 1


def parse_langpairs(spec: str) -> List[Tuple[str, int, int]]:
    """'de-en:2,cs-en:1,ru-en:1-2' -> [(langpair, min_refs, max_refs)]."""
    out = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        lp, _, refs = item.partition(":")
        refs = refs or "1"
        lo, _, hi = refs.partition("-")
        lo_i, hi_i = int(lo), int(hi or lo)
        if not (1 <= lo_i <= hi_i <= 4) or "-" not in lp:
            raise argparse.ArgumentTypeError(f"bad langpair spec {item!r}")
        out.append((lp, lo_i, hi_i))
    if not out:
        raise argparse.ArgumentTypeError("no langpairs")
    return out


def corpus_params(rows: int, systems: int, langpairs: str, layout: str, seed: int) -> Dict[str, Any]:
    lps = parse_langpairs(langpairs)
    segs = max(1, math.ceil(rows / (systems * len(lps))))
    return {"generator": GENERATOR_VERSION, "segments_per_langpair": segs, "systems": systems,
            "langpairs": langpairs, "layout": layout, "seed": seed,
            "rows": segs * systems * len(lps)}


def corpus_path(workdir: Path, params: Dict[str, Any]) -> Path:
    key = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]
    return workdir / "corpus" / f"rows{params['rows']}-s{params['systems']}-{key}.parquet"


def generate_corpus(path: Path, params: Dict[str, Any], chunk: int = 50000, log=print) -> Path:
    """Write the corpus described by params to path (atomically); returns path."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    vocab = Vocabulary(params["seed"])
    lps = parse_langpairs(params["langpairs"])
    n_segs, n_sys, layout = params["segments_per_langpair"], params["systems"], params["layout"]
    systems = [f"system-{i:02d}" for i in range(n_sys)]
    # system quality: substitution rate from good to poor
    sys_rng = np.random.default_rng([params["seed"], 1])
    quality = np.sort(sys_rng.uniform(0.12, 0.55, n_sys))
    schema = pa.schema([("testset", pa.string()), ("langpair", pa.string()),
                        ("system", pa.string()), ("seg_id", pa.int32()),
                        ("candidate", pa.string()), ("references", pa.list_(pa.string()))])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    written = 0
    with pq.ParquetWriter(tmp, schema, compression="snappy") as writer:
        for li, (lp, lo, hi) in enumerate(lps):
            rng = np.random.default_rng([params["seed"], 2, li])
            base_ids, base_rows = base_sentences(vocab, rng, n_segs)
            difficulty = np.clip(rng.lognormal(0.0, 0.35, n_segs), 0.3, 3.0)
            nrefs = rng.integers(lo, hi + 1, n_segs)
            ref_cols = [oddities(rng, render(vocab, base_ids, base_rows, n_segs), REF_ODDITIES)]
            for k in range(1, hi):
                # another translator: a paraphrase-like edit of the same sentence
                e_ids, e_rows = edit(vocab, rng, base_ids, base_rows, n_segs,
                                      0.25 * difficulty, 0.04, 0.04, 0.15)
                ref_cols.append(oddities(rng, render(vocab, e_ids, e_rows, n_segs), REF_ODDITIES))
            all_refs = pa.concat_arrays(ref_cols)
            if lo == hi:
                order = (np.arange(n_segs)[:, None] + np.arange(hi)[None, :] * n_segs).ravel()
                ref_offsets = np.arange(0, n_segs * hi + 1, hi)
            else:
                pieces = [np.arange(hi)[:nrefs[i]] * n_segs + i for i in range(n_segs)]
                order = np.concatenate(pieces)
                ref_offsets = np.concatenate([[0], np.cumsum(nrefs)])
            refs = pa.ListArray.from_arrays(pa.array(ref_offsets, pa.int32()),
                                            all_refs.take(pa.array(order)))
            base_offsets = row_offsets(base_rows, n_segs)
            for c0 in range(0, n_segs, chunk):
                c1 = min(n_segs, c0 + chunk)
                m = c1 - c0
                sel = slice(int(base_offsets[c0]), int(base_offsets[c1]))
                c_ids, c_rows = base_ids[sel], base_rows[sel] - c0
                cands = []
                for si in range(n_sys):
                    srng = np.random.default_rng([params["seed"], 3, li, c0, si])
                    q = quality[si] * difficulty[c0:c1]
                    e_ids, e_rows = edit(vocab, srng, c_ids, c_rows, m, q, q / 4, q / 3, q / 2)
                    cands.append(oddities(srng, render(vocab, e_ids, e_rows, m), CAND_ODDITIES))
                seg_ids = pa.array(np.arange(c0, c1, dtype=np.int32))
                chunk_refs = refs.slice(c0, m)
                if layout == "system":
                    batches = [(systems[si], seg_ids, cands[si], chunk_refs) for si in range(n_sys)]
                else:  # segment: all systems of a segment next to each other
                    perm = pa.array((np.arange(m)[:, None] + np.arange(n_sys)[None, :] * m).ravel())
                    seg_take = pa.array(np.repeat(np.arange(m), n_sys))
                    sys_col = pa.array(np.tile(np.array(systems, object), m), pa.string())
                    batches = [(sys_col, seg_ids.take(seg_take),
                                pa.concat_arrays(cands).take(perm), chunk_refs.take(seg_take))]
                for sys_name, sid, cand, rf in batches:
                    n = len(cand)
                    sys_arr = sys_name if isinstance(sys_name, pa.Array) else \
                        pa.array([sys_name] * n, pa.string())
                    tbl = pa.table([pa.array(["synthetic"] * n, pa.string()),
                                    pa.array([lp] * n, pa.string()), sys_arr, sid, cand, rf],
                                   schema=schema)
                    writer.write_table(tbl, row_group_size=65536)
                    written += n
            log(f"  generated {lp}: {n_segs} segments x {n_sys} systems "
                f"({written} rows, {time.perf_counter() - t0:.1f} s)")
    os.replace(tmp, path)
    meta = dict(params, seconds=round(time.perf_counter() - t0, 1), bytes=path.stat().st_size)
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    return path


def ensure_corpus(workdir: Path, params: Dict[str, Any], log=print) -> Path:
    path = corpus_path(workdir, params)
    if path.exists():
        log(f"corpus: {path} (cached)")
        return path
    log(f"corpus: generating {params['rows']} rows -> {path}")
    return generate_corpus(path, params, log=log)


def with_row_groups(path: Path, row_groups: int) -> Path:
    """The corpus rewritten in `row_groups` row groups of equal rows (cached beside it): the
    generator writes a row group per system and chunk, and the job's tasks follow row groups."""
    import pyarrow.parquet as pq

    out = path.with_name(f"{path.stem}-rg{row_groups}.parquet")
    if not out.exists():
        table = pq.read_table(path)
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        pq.write_table(table, tmp, row_group_size=-(-table.num_rows // row_groups))
        os.replace(tmp, out)
    return out


def ensure_stats_table(workdir: Path, n_rows: int, seed: int = 7) -> Path:
    """A statistics table as `bleu-spark score` writes it, of n_rows groups (customer x day x
    langpair x system) with generated integer statistics, cached under workdir."""
    folder = workdir / f"stats-{n_rows}-{seed}"
    if (folder / "_bleu_spark.json").exists():
        return folder
    import numpy as np
    import pyarrow as pa

    from bleu_spark import statstable, store
    from bleu_spark.metrics.bleu import Bleu, BleuConfig
    from bleu_spark.metrics.bleu.stats import stats_names

    rng = np.random.default_rng(seed)
    langpairs = np.array(["de-en", "cs-en", "en-de", "ru-en"])
    systems = np.array([f"system-{i:02d}" for i in range(25)])
    totals = rng.integers(2_000, 20_000, n_rows)
    stats = {"sys_len": totals, "ref_len": (totals * rng.uniform(0.9, 1.1, n_rows)).astype(np.int64)}
    for n in range(1, 5):
        stats[f"total_{n}"] = np.maximum(totals - 50 * (n - 1), 1)
        stats[f"correct_{n}"] = (stats[f"total_{n}"] * rng.uniform(0.2, 0.7, n_rows) / n).astype(np.int64)
    one = lambda value, kind: pa.array([value] * n_rows, kind)
    table = statstable.build(
        {"customer": pa.array(rng.integers(0, n_rows // 100 + 1, n_rows)),
         "run_date": pa.array([f"2026-01-{d:02d}" for d in rng.integers(1, 29, n_rows)]),
         "langpair": pa.array(langpairs[rng.integers(0, len(langpairs), n_rows)]),
         "system": pa.array(systems[rng.integers(0, len(systems), n_rows)])},
        statstable.measurement_columns(n_rows, one("13a", pa.string()), one("13a", pa.string()),
                                       Bleu(BleuConfig()).measurement()[statstable.METRIC_OPTIONS]),
        {"n_segments": pa.array(totals // 20), "n_rejected": one(0, pa.int64()),
         "n_reference_segments": pa.nulls(n_rows, pa.int64()), "min_refs": one(1, pa.int32()),
         "max_refs": one(1, pa.int32())},
        {name: pa.array(stats[name]) for name in stats_names(4)})
    out = store.open_output(str(folder))
    out.write_table("stats", table)
    out.commit({"generated": n_rows})
    return folder


def prepare_input(args, workdir: Path) -> Tuple[Path, Dict[str, Any]]:
    """The input to score (--input, else the generated corpus) and what the report says of it,
    its rows included."""
    if args.input:
        input_path = Path(args.input).resolve()
        corpus_meta: Dict[str, Any] = {"input": str(input_path)}
    else:
        params = corpus_params(args.rows, args.systems, args.langpairs, args.layout, args.seed)
        input_path = ensure_corpus(workdir, params)
        if args.row_groups:
            input_path = with_row_groups(input_path, args.row_groups)
        corpus_meta = dict(params, input=str(input_path), row_groups=args.row_groups)
    import pyarrow.parquet as pq

    corpus_meta["rows"] = pq.ParquetDataset(str(input_path)).read(columns=["seg_id"]).num_rows
    print(f"input: {input_path} ({corpus_meta['rows']:,} rows)")
    return input_path, corpus_meta
