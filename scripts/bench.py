#!/usr/bin/env python3
"""Benchmark bleu-spark against sacrebleu 2.6 (and bleuscore), each run as a whole process.

One invocation:

1. takes a Parquet input (``--input``) or generates a synthetic corpus of realistic sentences
   (Zipf-distributed vocabulary, punctuation, numbers, capitalisation, 5-60 tokens a segment,
   several systems per segment that are noisy edits of the reference, 1-2 references) and caches
   it under ``--workdir`` keyed by its parameters;
2. runs and times each path as a separate process, from start to exit, polling the process tree
   with psutil for peak RSS (JVM, Python driver and Python workers reported separately):

   a1  sacrebleu, one ``BLEU(tokenize=...).corpus_score(hyps, refs)`` per (langpair, system)
   a2  sacrebleu, references pre-computed once per langpair with ``BLEU(references=...)``, then
       ``corpus_score(hyps, None)`` per system (what the sacrebleu CLI does for several systems)
   a3  bleuscore (Rust; not sacrebleu-exact: its rate is reported, its scores are not checked)
   b   the job, ``spark-submit --master local[1] jobs/score_bleu.py``
   c   the job, ``spark-submit --master local[2] jobs/score_bleu.py``
   d   as c, with ``--confidence`` (poisson bootstrap, B = ``--n-bootstrap``, default 1000)
   e   the job as the console script starts it, ``bleu-spark score`` (no master set: local[*],
       its own JVM options; ``--conf`` is not passed to it)
   s   Spark alone, started as e starts it: the SparkContext, one no-op Python task per core,
       stop. No rows: the floor under any job path's wall time on this machine
   g   ``bleu-spark aggregate --group-by langpair,system`` of a generated statistics table of
       ``--stats-rows`` rows (default 100,000), no JVM: what a dashboard back end calls

``--scale-groups 100,1000,10000`` runs c and d once per number of groups (100 systems, and as
many language pairs as make the groups; ``--rows`` rows in ``--row-groups`` row groups) and
prints, per number of groups, the wall time and peak memory of the process tree with and
without intervals: what intervals cost as groups grow.

``--start-up`` measures the fixed cost instead (``scripts/bench_startup.py``): cold and warm
start in new environments, a small run against path s, an executor's first task on a
standalone cluster.

``--segments`` runs a2 and c, then c with ``--segments`` (carrying ``--segments-columns``),
and prints the extra time and memory of writing the segments table and its bytes per input row.

3. checks that a1, a2, b, c, d and e give identical per-group results (score within 1e-9; counts,
   totals, sys_len, ref_len and n_segments equal) and exits 1 if they do not, before any speed
   is printed;
4. prints rows/s, wall time, CPU time, peak memory and the ratios b/a1, b/a2, c/a1, c/a2, c/b, e/a2.

Groups are (system, langpair); rows of a group are aligned by (testset, seg_id). The tokenizer
follows the target language as sacrebleu's ``-l`` does (zh, ja-mecab, ko-mecab, else 13a)
unless ``--tokenize`` names one.

Examples::

    python scripts/bench.py --rows 1000000
    python scripts/bench.py --rows 10000000 --paths a2,b,c --json /tmp/bench-10m.json
    python scripts/bench.py --input ../shared/data/wmt22.parquet
    python scripts/bench.py --smoke            # identity guard only, a few thousand rows
    python scripts/bench.py --scale-groups 100,1000,10000 --rows 500000 --row-groups 16
    python scripts/bench.py --segments --input ../shared/data/wmt22.parquet
    python scripts/bench.py --segments --rows 10000000 --paths c --row-groups 64
    python scripts/bench.py --input ../shared/data/wmt22.parquet --metric-costs --cost-rows 1000
    python scripts/bench.py --input ../shared/data/wmt22.parquet --tokenizer-costs \
        --job-root /tmp/old                    # us per row per langpair, two checkouts, one process

Exit codes: 0 ok, 1 results differ, 2 a path failed to run.

The internal forms ``bench.py _score PATH INPUT OUT.json [TOKENIZE]`` (one sacrebleu or
bleuscore path) and ``bench.py _spark_floor`` (path s) are what the benchmark starts as
subprocesses.
"""
from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
GENERATOR_VERSION = 1
IDENTITY_TOL = 1e-9
EXACT_PATHS = ("a1", "a2", "b", "c", "d", "e")
ALL_PATHS = ("a1", "a2", "a3", "b", "c", "d", "e", "s", "g")
JOB_PATHS = ("b", "c", "d", "e")
PATH_TITLES = {
    "a1": "sacrebleu, BLEU().corpus_score per group",
    "a2": "sacrebleu, references cached per langpair",
    "a3": "bleuscore (Rust, not exact)",
    "b": "bleu-spark local[1]",
    "c": "bleu-spark local[2]",
    "d": "bleu-spark local[2] --confidence",
    "e": "bleu-spark score, the console script (local[*])",
    "s": "Spark alone: context, a no-op Python task per core, stop",
    "g": "bleu-spark aggregate of a statistics table",
}
GROUP_KEYS = ("system", "langpair")
COMPARED_INT_FIELDS = ("counts", "totals", "sys_len", "ref_len", "n_segments")


# --------------------------------------------------------------------------------------------
# Synthetic corpus
# --------------------------------------------------------------------------------------------

_ONSETS = ["", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
           "st", "tr", "br", "ch", "sh", "th", "pl", "gr", "sp", "cl", "fr", "j", "z"]
_VOWELS = ["a", "e", "i", "o", "u", "ea", "ou", "ai", "ie", "y", "ee", "oo"]
_CODAS = ["", "", "", "", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "m", "ck", "rt", "x"]
_ACCENTS = {"a": "á", "e": "é", "i": "í", "o": "ö", "u": "ü"}
# (text, attaches to the previous piece, next piece attaches to it, ends a sentence)
_PUNCT = {
    "comma": (",", True, False, False),
    "period": (".", True, False, True),
    "question": ("?", True, False, True),
    "exclaim": ("!", True, False, True),
    "colon": (":", True, False, False),
    "semicolon": (";", True, False, False),
    "percent": ("%", True, False, False),
    "poss": ("'s", True, False, False),
    "oquote": ('"', False, True, False),
    "cquote": ('"', True, False, False),
    "oparen": ("(", False, True, False),
    "cparen": (")", True, False, False),
}
_SPECIALS = ["&amp;", "&quot;", "AT&T", "e.g.", "U.S.", "i.e.", "-", "--", "—", "/", "n't",
             "’s", "…", "$", "€", "#1", "3D", "COVID-19", "www.example.com", "<tag>"]


class Vocabulary:
    """Pieces of text with their spacing behaviour and four rendered forms each."""

    def __init__(self, seed: int, n_words: int = 24000, n_numbers: int = 3000):
        import numpy as np
        import pyarrow as pa

        rng = np.random.default_rng([seed, 7])
        words: List[str] = []
        seen = set()
        rank = 0
        while len(words) < n_words:
            # frequent words are short, as in real text
            n_syl = 1 + min(3, int(rng.poisson(0.05 + 1.1 * math.log10(2 + rank) / 4.4)))
            w = "".join(str(rng.choice(_ONSETS)) + str(rng.choice(_VOWELS)) + str(rng.choice(_CODAS))
                        for _ in range(n_syl))
            if not w or w in seen:
                continue
            r = rng.random()
            if rank > 200 and r < 0.04:  # accented
                for v, acc in _ACCENTS.items():
                    if v in w:
                        w = w.replace(v, acc, 1)
                        break
            elif rank > 100 and r < 0.07:  # hyphenated compound
                w = w + "-" + str(words[int(rng.integers(0, len(words)))])
            elif rank > 50 and r < 0.09:  # contraction
                w = w + "'" + str(rng.choice(["t", "s", "re", "ll", "d"]))
            seen.add(w)
            rank += 1
            if rank > 300 and rng.random() < 0.10:  # proper noun, always capitalised
                w = w[0].upper() + w[1:]
            words.append(w)
        numbers: List[str] = []
        for i in range(n_numbers):
            r = rng.random()
            if r < 0.35:
                numbers.append(str(int(rng.integers(0, 100))))
            elif r < 0.55:
                numbers.append(str(int(rng.integers(1900, 2031))))
            elif r < 0.75:
                numbers.append(f"{int(rng.integers(1, 1000))},{int(rng.integers(0, 1000)):03d}")
            elif r < 0.9:
                numbers.append(f"{int(rng.integers(0, 100))}.{int(rng.integers(0, 10))}")
            else:
                numbers.append(f"{int(rng.integers(1, 31))}-{int(rng.integers(1, 13))}")

        texts: List[str] = []
        attach_left: List[bool] = []
        attach_right: List[bool] = []
        ends: List[bool] = []

        def add(text, al=False, ar=False, end=False):
            texts.append(text)
            attach_left.append(al)
            attach_right.append(ar)
            ends.append(end)
            return len(texts) - 1

        self.punct = {name: add(*spec) for name, spec in _PUNCT.items()}
        self.word0 = len(texts)
        for w in words:
            add(w)
        self.number0 = len(texts)
        for n in numbers:
            add(n)
        self.special0 = len(texts)
        for s in _SPECIALS:
            add(s)
        self.size = len(texts)
        self.n_words, self.n_numbers, self.n_specials = n_words, n_numbers, len(_SPECIALS)
        self.attach_left = np.array(attach_left)
        self.attach_right = np.array(attach_right)
        self.ends = np.array(ends)
        self.is_number = np.zeros(self.size, bool)
        self.is_number[self.number0:self.special0] = True
        # rendered forms: index 4*id + 2*capitalised + space_before
        forms = []
        for t in texts:
            cap = t[:1].upper() + t[1:]
            forms.extend([t, " " + t, cap, " " + cap])
        self.forms = pa.array(forms, pa.string())
        # Zipf-Mandelbrot over words, numbers and specials separately
        self.word_p = _zipf(n_words)
        self.number_p = _zipf(n_numbers)
        self.special_p = _zipf(len(_SPECIALS))

    def sample_content(self, rng, n):
        """n content pieces: mostly words, some numbers and specials."""
        import numpy as np

        kind = rng.random(n)
        out = self.word0 + _choice(rng, self.word_p, n)
        num = kind < 0.035
        out[num] = self.number0 + _choice(rng, self.number_p, int(num.sum()))
        spec = (kind >= 0.035) & (kind < 0.042)
        out[spec] = self.special0 + _choice(rng, self.special_p, int(spec.sum()))
        return out.astype(np.int32)


def _zipf(n, s=1.07, q=2.7):
    import numpy as np

    w = 1.0 / np.power(np.arange(n) + q, s)
    return np.cumsum(w / w.sum())


def _choice(rng, cdf, n):
    import numpy as np

    return np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), len(cdf) - 1)


def _insert(ids, rows, pre, post):
    """Insert piece pre[i] before and post[i] after token i where they are >= 0."""
    import numpy as np

    has_pre = pre >= 0
    has_post = post >= 0
    counts = 1 + has_pre.astype(np.int64) + has_post.astype(np.int64)
    ends = np.cumsum(counts)
    starts = ends - counts
    out = np.empty(int(ends[-1]) if len(ends) else 0, np.int32)
    out[starts[has_pre]] = pre[has_pre]
    out[starts + has_pre] = ids
    out[ends[has_post] - 1] = post[has_post]
    return out, np.repeat(rows, counts)


def _offsets(rows, n_rows):
    import numpy as np

    return np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_rows))]).astype(np.int64)


def _base_sentences(vocab: Vocabulary, rng, n_rows):
    """Token ids of n_rows reference sentences; returns (ids, rows)."""
    import numpy as np

    lengths = np.clip(np.rint(rng.lognormal(math.log(16.0), 0.55, n_rows)), 5, 58).astype(np.int64)
    rows = np.repeat(np.arange(n_rows), lengths)
    ids = vocab.sample_content(rng, len(rows))
    offs = np.concatenate([[0], np.cumsum(lengths)])
    pos = np.arange(len(rows)) - offs[rows]
    last = pos == lengths[rows] - 1
    pre = np.full(len(ids), -1, np.int32)
    post = np.full(len(ids), -1, np.int32)
    P = vocab.punct
    r = rng.random(len(ids))
    post[(r < 0.065) & ~last] = P["comma"]
    post[(r >= 0.065) & (r < 0.072) & ~last] = P["poss"]
    post[(r >= 0.072) & (r < 0.075) & ~last] = P["semicolon"]
    post[vocab.is_number[ids] & (r > 0.8)] = P["percent"]
    # a second sentence inside some segments
    mid = (r >= 0.075) & (r < 0.081) & ~last & (pos > 2)
    post[mid] = P["period"]
    # a quoted or bracketed span in some segments
    span_rows = np.flatnonzero(rng.random(n_rows) < 0.06)
    span_rows = span_rows[lengths[span_rows] >= 4]
    if len(span_rows):
        start = (rng.random(len(span_rows)) * (lengths[span_rows] - 2)).astype(np.int64)
        span = 1 + rng.geometric(0.35, len(span_rows))
        stop = np.minimum(start + span, lengths[span_rows] - 2)
        paren = rng.random(len(span_rows)) < 0.4
        pre[offs[span_rows] + start] = np.where(paren, P["oparen"], P["oquote"])
        post[offs[span_rows] + stop] = np.where(paren, P["cparen"], P["cquote"])
    # sentence-final punctuation
    f = rng.random(len(ids))
    final = np.where(f < 0.86, P["period"], np.where(f < 0.92, P["question"],
                     np.where(f < 0.95, P["exclaim"], np.where(f < 0.96, P["colon"], -1))))
    post[last] = final[last]
    return _insert(ids, rows, pre, post)


def _edit(vocab: Vocabulary, rng, ids, rows, n_rows, p_sub, p_ins, p_del, p_swap):
    """Noisy copy of token sequences: substitutions, insertions, deletions, local reorders.

    p_* are per-row rates (arrays of length n_rows) or scalars."""
    import numpy as np

    def per_token(p):
        return p[rows] if isinstance(p, np.ndarray) else p

    ids = ids.copy()
    sub = rng.random(len(ids)) < per_token(p_sub)
    ids[sub] = vocab.sample_content(rng, int(sub.sum()))
    ins = rng.random(len(ids)) < per_token(p_ins)
    counts = 1 + ins.astype(np.int64)
    ends = np.cumsum(counts)
    rows = np.repeat(rows, counts)
    ids = np.repeat(ids, counts)
    ins_slots = ends[ins] - 1
    ids[ins_slots] = vocab.sample_content(rng, len(ins_slots))
    keep = rng.random(len(ids)) >= per_token(p_del)
    ids, rows = ids[keep], rows[keep]
    jitter = rng.normal(0.0, 1.6, len(ids)) * (rng.random(len(ids)) < per_token(p_swap))
    order = np.lexsort((np.arange(len(ids)) + jitter, rows))
    return ids[order], rows[order]


def _render(vocab: Vocabulary, ids, rows, n_rows):
    """Detokenised strings: spaces between pieces except around attaching punctuation."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(ids)
    offsets = _offsets(rows, n_rows)
    first = np.zeros(n, bool)
    starts = offsets[:-1][offsets[:-1] < offsets[1:]]
    first[starts] = True
    prev_ar = np.zeros(n, bool)
    prev_end = np.zeros(n, bool)
    if n:
        prev_ar[1:] = vocab.attach_right[ids[:-1]]
        prev_end[1:] = vocab.ends[ids[:-1]]
    space = ~(first | vocab.attach_left[ids] | prev_ar)
    cap = first | prev_end
    idx = ids.astype(np.int64) * 4 + cap * 2 + space
    flat = vocab.forms.take(pa.array(idx))
    lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), flat)
    return pc.binary_join(lists, "")


def _oddities(rng, arr, rates: Dict[str, float]):
    """Real-log oddities on a small share of rows: NBSP, U+3000, tabs, double spaces, ..."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(arr)
    for kind, rate in rates.items():
        mask = pa.array(rng.random(n) < rate)
        if kind == "nbsp":
            alt = pc.replace_substring(arr, " ", "\u00a0", max_replacements=1)
        elif kind == "ideographic":
            alt = pc.replace_substring(arr, " ", "\u3000", max_replacements=1)
        elif kind == "tab":
            alt = pc.replace_substring(arr, " ", "\t", max_replacements=1)
        elif kind == "double":
            alt = pc.replace_substring(arr, " ", "  ", max_replacements=1)
        elif kind == "trailing":
            alt = pc.binary_join_element_wise(arr, pa.scalar(" "), "")
        elif kind == "empty":
            alt = pa.array(np.full(n, ""), pa.string())
        else:
            raise ValueError(kind)
        arr = pc.if_else(mask, alt, arr)
    return arr


CAND_ODDITIES = {"nbsp": 0.003, "ideographic": 0.0005, "tab": 0.001, "double": 0.003,
                 "trailing": 0.003, "empty": 0.0002}
REF_ODDITIES = {"nbsp": 0.002, "double": 0.001}


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
            base_ids, base_rows = _base_sentences(vocab, rng, n_segs)
            difficulty = np.clip(rng.lognormal(0.0, 0.35, n_segs), 0.3, 3.0)
            nrefs = rng.integers(lo, hi + 1, n_segs)
            ref_cols = [_oddities(rng, _render(vocab, base_ids, base_rows, n_segs), REF_ODDITIES)]
            for k in range(1, hi):
                # another translator: a paraphrase-like edit of the same sentence
                e_ids, e_rows = _edit(vocab, rng, base_ids, base_rows, n_segs,
                                      0.25 * difficulty, 0.04, 0.04, 0.15)
                ref_cols.append(_oddities(rng, _render(vocab, e_ids, e_rows, n_segs), REF_ODDITIES))
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
            base_offsets = _offsets(base_rows, n_segs)
            for c0 in range(0, n_segs, chunk):
                c1 = min(n_segs, c0 + chunk)
                m = c1 - c0
                sel = slice(int(base_offsets[c0]), int(base_offsets[c1]))
                c_ids, c_rows = base_ids[sel], base_rows[sel] - c0
                cands = []
                for si in range(n_sys):
                    srng = np.random.default_rng([params["seed"], 3, li, c0, si])
                    q = quality[si] * difficulty[c0:c1]
                    e_ids, e_rows = _edit(vocab, srng, c_ids, c_rows, m, q, q / 4, q / 3, q / 2)
                    cands.append(_oddities(srng, _render(vocab, e_ids, e_rows, m), CAND_ODDITIES))
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


def run_scale(args) -> int:
    """c and d per number of groups: time and peak memory of intervals as groups grow."""
    table = []
    for groups in args.scale_groups:
        systems = min(groups, 100)
        langpairs = ",".join(f"x{i:03d}-en" for i in range(max(1, groups // systems)))
        out = Path(args.workdir) / f"scale-{groups}.json"
        argv = ["--rows", str(args.rows), "--systems", str(systems), "--langpairs", langpairs,
                "--paths", "c,d", "--row-groups", str(args.row_groups), "--json", str(out),
                "--workdir", args.workdir, "--n-bootstrap", str(args.n_bootstrap)]
        argv += [f"--conf={c}" for c in args.conf] + [f"--job-arg={a}" for a in args.job_arg]
        print(f"== {groups} groups: {systems} systems x {groups // systems} language pairs", flush=True)
        if main(argv) != 0:
            return 2
        runs = json.loads(out.read_text())["runs"]
        table.append((groups, runs["c"], runs["d"]))
    print()
    print(f"{args.rows:,} rows in {args.row_groups} row groups; B = {args.n_bootstrap}; "
          f"peak RSS of the whole process tree")
    print(f"{'groups':>7} {'c wall s':>9} {'d wall s':>9} {'d/c':>5} {'c MiB':>8} {'d MiB':>8} "
          f"{'d driver py MiB':>16} {'d 1 wrk MiB':>12}")
    for groups, c, d in table:
        print(f"{groups:>7} {c['wall_s']:>9.1f} {d['wall_s']:>9.1f} {d['wall_s'] / c['wall_s']:>5.2f} "
              f"{c['peak_rss_total_mib']:>8.0f} {d['peak_rss_total_mib']:>8.0f} "
              f"{d['peak_rss_mib'].get('py_driver', 0):>16.0f} "
              f"{d['peak_rss_one_mib'].get('py_worker', 0):>12.0f}")
    return 0


def run_segments(args) -> int:
    """a2 and c, then c with `--segments`, on one input: the extra time and memory of writing
    the segments table, and its bytes per input row."""
    found = {}
    carried = f"--segments-columns={args.segments_columns}" if args.segments_columns else None
    with_a2 = "a2" in args.paths.split(",")  # --paths c: the job alone (at 10M rows, say)
    for label, paths, extra in (("plain", "a2,c" if with_a2 else "c", []),
                                ("segments", "c", ["--segments", *([carried] if carried else [])])):
        out = Path(args.workdir) / f"segments-{label}.json"
        argv = ["--paths", paths, "--json", str(out), "--workdir", args.workdir]
        argv += ["--input", args.input] if args.input else \
            ["--rows", str(args.rows), "--systems", str(args.systems), "--langpairs", args.langpairs]
        argv += ["--row-groups", str(args.row_groups)] if args.row_groups else []
        argv += [f"--conf={c}" for c in args.conf] + [f"--job-arg={a}" for a in [*args.job_arg, *extra]]
        print(f"== {label}", flush=True)
        if main(argv) != 0:
            return 2
        found[label] = json.loads(out.read_text())
    a2, plain = found["plain"]["runs"].get("a2"), found["plain"]["runs"]["c"]
    written = found["segments"]["runs"]["c"]
    folder = Path(written["cmd"][written["cmd"].index("--output") + 1]) / "segments"
    size = sum(f.stat().st_size for f in folder.rglob("*.parquet"))
    rows = found["segments"]["corpus"]["rows"]
    print()
    print(f"{rows:,} rows; segments table {size / 2**20:,.1f} MiB, {size / rows:,.0f} bytes per "
          f"input row ({carried or 'no carried columns'})")
    print(f"{'path':<14} {'wall s':>8} {'/ a2':>6} {'MiB all':>8} {'MiB driver py':>14} {'MiB JVM':>8}")
    shown = ((("a2 sacrebleu", a2),) if a2 else ()) + (("c", plain), ("c --segments", written))
    for name, run in shown:
        mib = run.get("peak_rss_mib", {})
        ratio = f"{run['wall_s'] / a2['wall_s']:>6.2f}" if a2 else f"{'-':>6}"
        print(f"{name:<14} {run['wall_s']:>8.1f} {ratio} "
              f"{run.get('peak_rss_total_mib', 0):>8.0f} {mib.get('py_driver', 0):>14.0f} "
              f"{mib.get('jvm', 0):>8.0f}")
    print(f"--segments costs {written['wall_s'] / plain['wall_s']:.2f}x the plain run's wall time")
    return 0


# --------------------------------------------------------------------------------------------
# sacrebleu / bleuscore paths (run in a child process: bench.py _score ...)
# --------------------------------------------------------------------------------------------

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


def _valid_rows(table):
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
        valid = _valid_rows(table)
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


def spark_floor() -> None:
    """Path s: the SparkContext as `bleu-spark score` starts it (its JVM options, local[*]),
    one Python task per core that does nothing, stop."""
    from bleu_spark.spark.session import spark_session

    spark = spark_session()
    cores = spark.sparkContext.defaultParallelism
    spark.sparkContext.parallelize(range(cores), cores).mapPartitions(lambda rows: [sum(1 for _ in rows)]).collect()
    spark.stop()


# --------------------------------------------------------------------------------------------
# Whole-process measurement
# --------------------------------------------------------------------------------------------

def _classify(cmdline: List[str], name: str) -> str:
    exe = os.path.basename(cmdline[0]) if cmdline else name
    joined = " ".join(cmdline)
    if exe == "java" or name == "java":
        # spark-class first runs a small launcher JVM that only prints the real command
        return "launcher" if "org.apache.spark.launcher.Main" in joined else "jvm"
    if "python" in exe or "python" in name:
        if "pyspark.daemon" in joined or "pyspark.worker" in joined or "pyspark/daemon" in joined:
            return "py_worker"
        return "py_driver"
    return "other"


class TreeMonitor:
    """Polls a process tree: peak RSS per kind of process, CPU seconds, process counts."""

    def __init__(self, pid: int, interval: float = 0.1, on_new=None):
        try:
            import psutil
        except ImportError:  # memory is then not reported; timings and the guard still run
            psutil = None
        self.psutil = psutil
        self.root = psutil.Process(pid) if psutil else None
        self.interval = interval
        self.on_new = on_new
        self.kinds: Dict[int, str] = {}
        self.names: Dict[int, str] = {}
        self.cpu: Dict[int, float] = {}
        self.peak_sum: Dict[str, int] = {}
        self.peak_one: Dict[str, int] = {}
        self.peak_total = 0
        self.max_procs: Dict[str, int] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        if self.psutil:
            self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self.psutil:
            self._thread.join()

    def _run(self):
        ps = self.psutil
        while not self._stop.is_set():
            try:
                procs = [self.root] + self.root.children(recursive=True)
            except ps.Error:
                break
            sums: Dict[str, int] = {}
            counts: Dict[str, int] = {}
            total = 0
            for p in procs:
                try:
                    with p.oneshot():
                        name = p.name()
                        # spark-submit's bash execs java: same pid, new program
                        if self.names.get(p.pid) != name:
                            self.names[p.pid] = name
                            self.kinds[p.pid] = _classify(p.cmdline(), name)
                            if self.on_new:
                                self.on_new(p.pid, self.kinds[p.pid], p)
                        kind = self.kinds[p.pid]
                        rss = p.memory_info().rss
                        t = p.cpu_times()
                        self.cpu[p.pid] = t.user + t.system
                except ps.Error:
                    continue
                sums[kind] = sums.get(kind, 0) + rss
                counts[kind] = counts.get(kind, 0) + 1
                self.peak_one[kind] = max(self.peak_one.get(kind, 0), rss)
                total += rss
            for kind, v in sums.items():
                self.peak_sum[kind] = max(self.peak_sum.get(kind, 0), v)
                self.max_procs[kind] = max(self.max_procs.get(kind, 0), counts[kind])
            self.peak_total = max(self.peak_total, total)
            self.samples += 1
            self._stop.wait(self.interval)

    def report(self) -> Dict[str, Any]:
        cpu_by_kind: Dict[str, float] = {}
        for pid, c in self.cpu.items():
            k = self.kinds.get(pid, "other")
            cpu_by_kind[k] = cpu_by_kind.get(k, 0.0) + c
        mib = 1024 * 1024
        return {"peak_rss_mib": {k: round(v / mib, 1) for k, v in self.peak_sum.items()},
                "peak_rss_one_mib": {k: round(v / mib, 1) for k, v in self.peak_one.items()},
                "peak_rss_total_mib": round(self.peak_total / mib, 1),
                "max_processes": self.max_procs,
                "cpu_s": {k: round(v, 2) for k, v in cpu_by_kind.items()},
                "cpu_total_s": round(sum(cpu_by_kind.values()), 2),
                "samples": self.samples}


class PySpyAttacher:
    """Starts `py-spy record --subprocesses` on the first Python worker process seen."""

    def __init__(self, out_raw: Path, rate: int = 100):
        self.out_raw = out_raw
        self.rate = rate
        self.proc: Optional[subprocess.Popen] = None
        self.lock = threading.Lock()

    def __call__(self, pid, kind, p):
        if kind != "py_worker":
            return
        with self.lock:
            if self.proc is not None:
                return
            exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
            self.proc = subprocess.Popen(
                [exe, "record", "--pid", str(pid), "--subprocesses", "--format", "raw",
                 "--rate", str(self.rate), "--nonblocking", "-o", str(self.out_raw)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def finish(self, timeout=30) -> Optional[str]:
        if self.proc is None:
            return "no Python worker seen"
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            _, err = self.proc.communicate()
        if not self.out_raw.exists():
            return (err or b"").decode(errors="replace")[-2000:]
        return None


def summarize_collapsed(raw_path: Path, top: int = 25) -> Dict[str, Any]:
    """Self and inclusive sample shares per function from py-spy's collapsed stacks."""
    self_c: Dict[str, int] = {}
    incl: Dict[str, int] = {}
    total = 0
    for line in raw_path.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        n_i = int(n)
        # one entry per function: "name (file:line)" -> "name (file)"
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";") if f]
        # drop the leading "process ..." frame added by --subprocesses
        if frames and frames[0].startswith("process "):
            frames = frames[1:]
        if not frames:
            continue
        total += n_i
        self_c[frames[-1]] = self_c.get(frames[-1], 0) + n_i
        for f in set(frames):
            incl[f] = incl.get(f, 0) + n_i
    def top_of(d):
        return [(k, round(100.0 * v / total, 1)) for k, v in
                sorted(d.items(), key=lambda kv: -kv[1])[:top]] if total else []
    return {"samples": total, "self_pct": top_of(self_c), "inclusive_pct": top_of(incl)}


def run_measured(cmd: Sequence[str], env: Dict[str, str], log_path: Path,
                 timeout: Optional[float] = None, on_new=None,
                 cwd: Optional[Path] = None) -> Dict[str, Any]:
    load_before = os.getloadavg()
    busy_before = _machine_busy_s()
    t0 = time.perf_counter()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(list(cmd), env=env, stdout=log, stderr=subprocess.STDOUT,
                                cwd=str(cwd) if cwd else None)
        mon = TreeMonitor(proc.pid, on_new=on_new).start()
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(proc.pid)
            rc = proc.wait()
        wall = time.perf_counter() - t0
        mon.stop()
    out = {"cmd": list(cmd), "returncode": rc, "wall_s": round(wall, 3),
           "load_before": [round(x, 2) for x in load_before],
           "load_after": [round(x, 2) for x in os.getloadavg()], "log": str(log_path)}
    out.update(mon.report())
    busy_after = _machine_busy_s()
    if busy_before is not None and busy_after is not None:
        # CPU that other processes on the machine used meanwhile: the noise in this timing
        out["other_cpu_s"] = round(max(0.0, busy_after - busy_before - out.get("cpu_total_s", 0)), 1)
    return out


def _machine_busy_s() -> Optional[float]:
    try:
        import psutil
    except ImportError:
        return None
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def _kill_tree(pid: int) -> None:
    try:
        import psutil
    except ImportError:
        os.kill(pid, 9)
        return
    try:
        root = psutil.Process(pid)
        procs = root.children(recursive=True) + [root]
    except psutil.Error:
        return
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass


# --------------------------------------------------------------------------------------------
# Results: loading and the identity guard
# --------------------------------------------------------------------------------------------

def _key(rec: Dict[str, Any]) -> Tuple[str, ...]:
    return tuple(str(rec[k]) for k in GROUP_KEYS)


def load_job_results(out_dir: Path) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    scores_json = out_dir / "scores.json"
    if scores_json.exists():
        rows = json.loads(scores_json.read_text())
    else:
        import pyarrow.parquet as pq

        rows = pq.read_table(out_dir / "scores").to_pylist()
    run = {}
    if (out_dir / "run.json").exists():
        run = json.loads((out_dir / "run.json").read_text())
    return rows, run


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


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------

def machine_info() -> Dict[str, Any]:
    info: Dict[str, Any] = {"nproc": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["mem_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    from importlib import metadata

    for pkg in ("pyspark", "pyarrow", "sacrebleu", "bleuscore", "numpy", "psutil", "bleu-spark"):
        try:
            info[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            info[pkg] = None
    try:
        jv = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        info["java"] = (jv.stderr or jv.stdout).splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        info["java"] = None
    return info


def _git_describe(root: Path) -> Optional[str]:
    """HEAD's short hash, with '+dirty' when tracked files under root differ from it."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=30)
        if head.returncode != 0:
            marker = root / "COMMIT"
            return marker.read_text().strip() if marker.exists() else None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no", "--", "bleu_spark", "jobs"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def find_spark_submit() -> str:
    """spark-submit next to this Python, else the installed pyspark's, else PATH's."""
    here = Path(sys.executable).parent / "spark-submit"
    if here.exists():
        return str(here)
    try:
        from pyspark.find_spark_home import _find_spark_home

        cand = Path(_find_spark_home()) / "bin" / "spark-submit"
        if cand.exists():
            return str(cand)
    except Exception:  # noqa: BLE001 - any failure falls back to PATH
        pass
    return shutil.which("spark-submit") or "spark-submit"


def _fmt_rate(rows: int, seconds: Optional[float]) -> str:
    return f"{rows / seconds:,.0f}" if seconds else "-"


def _fmt_mib(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:,.0f}"


def print_table(runs: Dict[str, Dict[str, Any]], rows: int) -> None:
    hdr = (f"{'path':<4} {'what':<42} {'rows/s':>9} {'wall s':>8} {'cpu s':>7} {'rows/cpu-s':>10} "
           f"{'JVM MiB':>8} {'py drv':>7} {'py wrk':>7} {'1 wrk':>6} {'load':>5} {'other cpu':>9}")
    print(hdr)
    print("-" * len(hdr))
    for p in ALL_PATHS:
        r = runs.get(p)
        if not r or r.get("returncode") != 0 or "rows_per_s" not in r:  # g: no rows scored
            continue
        peak = r.get("peak_rss_mib", {})
        one = r.get("peak_rss_one_mib", {})
        print(f"{p:<4} {PATH_TITLES[p]:<42} {r['rows_per_s']:>9,.0f} {r['wall_s']:>8.1f} "
              f"{r.get('cpu_total_s', 0):>7.1f} {_fmt_rate(rows, r.get('cpu_total_s')):>10} "
              f"{_fmt_mib(peak.get('jvm')):>8} "
              f"{_fmt_mib(peak.get('py_driver')):>7} {_fmt_mib(peak.get('py_worker')):>7} "
              f"{_fmt_mib(one.get('py_worker')):>6} {r['load_before'][0]:>5.2f} "
              f"{r.get('other_cpu_s', float('nan')):>9.1f}")


def compute_ratios(runs: Dict[str, Dict[str, Any]]) -> Dict[str, float]:
    out = {}
    for num, den in (("b", "a1"), ("b", "a2"), ("c", "a1"), ("c", "a2"), ("c", "b"),
                     ("c", "a3"), ("a2", "a1"), ("e", "a2")):
        if num in runs and den in runs and runs[den].get("rows_per_s") and runs[num].get("rows_per_s"):
            out[f"{num}/{den}"] = round(runs[num]["rows_per_s"] / runs[den]["rows_per_s"], 3)
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
        statstable.measurement_columns(n_rows, one("13a", pa.string()), one("13a", pa.string()), False, 4),
        {"n_segments": pa.array(totals // 20), "n_rejected": one(0, pa.int64()),
         "n_reference_segments": pa.nulls(n_rows, pa.int64()), "min_refs": one(1, pa.int32()),
         "max_refs": one(1, pa.int32())},
        {name: pa.array(stats[name]) for name in stats_names(4)})
    out = store.open_output(str(folder))
    out.write_table("stats", table)
    out.commit({"generated": n_rows})
    return folder


# --------------------------------------------------------------------------------------------
# Per-tokenizer cost in one process: this checkout against another (--job-root)
# --------------------------------------------------------------------------------------------

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
        stats, tokenizers = (importlib.import_module(alias + ".metrics.bleu.stats"),
                             importlib.import_module(alias + ".tokenizers"))
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
    table = table.filter(_valid_rows(table))
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
          f"order, best of {args.repeats}; new = {REPO} ({_git_describe(REPO)})"
          + (f", old = {other} ({_git_describe(other) or 'commit unknown: no git, no COMMIT file'})"
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


# Per-segment statistics of the metrics besides BLEU: this project's batch kernels against
# sacrebleu's own extraction, on the same rows.
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


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "_score":
        run_score_path(*argv[1:])
        return 0
    if argv and argv[0] == "_spark_floor":
        spark_floor()
        return 0
    ap = argparse.ArgumentParser(
        prog="bench.py",
        description="Time bleu-spark against sacrebleu 2.6 and bleuscore, each path as a whole "
                    "process, after checking that the exact paths give identical scores.",
        epilog="Paths: " + "; ".join(f"{k} = {v}" for k, v in PATH_TITLES.items())
               + ". Exit 0 ok, 1 results differ, 2 a path failed.")
    ap.add_argument("--input", help="Parquet file or folder to score (default: generated corpus)")
    ap.add_argument("--rows", type=int, default=100_000,
                    help="rows of the generated corpus (rounded up to whole segments x systems x "
                         "langpairs; default 100000)")
    ap.add_argument("--systems", type=int, default=10, help="systems per segment (default 10)")
    ap.add_argument("--langpairs", default="de-en:2,cs-en:1",
                    help="langpairs with their reference count, e.g. de-en:2,cs-en:1,ru-en:1-2 "
                         "(a range gives a variable count per segment; default de-en:2,cs-en:1)")
    ap.add_argument("--layout", choices=["system", "segment"], default="system",
                    help="row order of the generated corpus: 'system' = per langpair, each system's "
                         "rows in seg_id order (blocks of 50k segments), as submissions arrive; "
                         "'segment' = all systems of a segment side by side (default system)")
    ap.add_argument("--seed", type=int, default=20240601, help="generator seed")
    ap.add_argument("--workdir", default="/tmp/bleu-spark-bench",
                    help="cache of generated corpora and run outputs (default /tmp/bleu-spark-bench)")
    ap.add_argument("--paths", default=",".join(ALL_PATHS),
                    help=f"comma list of paths to run, of {','.join(ALL_PATHS)} (default all)")
    ap.add_argument("--tokenize", default="auto", help="tokenizer for every path (default auto)")
    ap.add_argument("--master-b", default="local[1]", help="Spark master of path b (default local[1])")
    ap.add_argument("--master-c", default="local[2]", help="Spark master of path c (default local[2])")
    ap.add_argument("--spark-submit", default=None,
                    help="spark-submit to use (default: the one next to this Python, else PATH)")
    ap.add_argument("--job-root", default=str(REPO),
                    help="checkout whose jobs/score_bleu.py and bleu_spark/ paths b to e run "
                         "(put first on PYTHONPATH; default: this checkout). Lets a fixed "
                         "snapshot (git archive C | tar -x -C DIR; echo C > DIR/COMMIT) be timed")
    ap.add_argument("--job-arg", action="append", default=[], metavar="ARG",
                    help="an argument for the job's paths (b to e), e.g. "
                         "--job-arg=--colocate-references=never (repeatable)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark --conf for paths b, c and d (repeatable; default none)")
    ap.add_argument("--profile", metavar="DIR", default=None,
                    help="also record path b's Python workers with py-spy into DIR "
                         "(adds sampling overhead to b's timing)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds allowed per path")
    ap.add_argument("--json", dest="json_out", default=None, help="write all results to this file")
    ap.add_argument("--n-bootstrap", type=int, default=1000, help="replicates of path d (default 1000)")
    ap.add_argument("--stats-rows", type=int, default=100_000,
                    help="rows of path g's generated statistics table (default 100000)")
    ap.add_argument("--tokenizer-costs", action="store_true",
                    help="instead of the paths: microseconds per row of the statistics of each "
                         "langpair (and of their tokenizer) in one process, for this checkout "
                         "and, side by side, the --job-root checkout; exit 1 if their "
                         "statistics differ")
    ap.add_argument("--batch-rows", type=int, default=10_000,
                    help="rows per batch for --tokenizer-costs (default 10000)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="--tokenizer-costs: rounds, alternating the checkouts; the best counts "
                         "(default 3)")
    ap.add_argument("--cost-order", choices=["file", "segment"], default="file",
                    help="--tokenizer-costs: rows in file order, or each segment's rows side by "
                         "side as when references are brought together (default file)")
    ap.add_argument("--cost-langpairs", default=None,
                    help="--tokenizer-costs: comma list of langpairs (default all)")
    ap.add_argument("--metric-costs", action="store_true",
                    help="per-row cost of chrF, chrF++ and TER statistics against sacrebleu's, one process")
    ap.add_argument("--cost-rows", type=int, default=1000,
                    help="rows a language pair for --metric-costs (default 1000)")
    ap.add_argument("--row-groups", type=int, default=None,
                    help="rewrite the generated corpus in this many row groups")
    ap.add_argument("--scale-groups", type=lambda v: [int(x) for x in v.split(",")], default=None,
                    metavar="G1,G2,...", help="c and d per number of groups (see above)")
    ap.add_argument("--segments", action="store_true",
                    help="a2 and c, then c with --segments: its extra cost and bytes per row")
    ap.add_argument("--segments-columns", default="candidate,references",
                    help="with --segments: the columns the segments table carries ('' for none)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny corpus (2,000 rows), identity guard only, no speed table")
    ap.add_argument("--start-up", action="store_true",
                    help="instead of the paths: the fixed cost, in new environments from a clean "
                         "clone (scripts/bench_startup.py): cold and warm start, a small run "
                         "against Spark's floor, an executor's first task on a standalone cluster")
    ap.add_argument("--start-rows", type=int, default=400,
                    help="--start-up: rows of the cold and warm runs and the cluster's tasks (default 400)")
    ap.add_argument("--start-small", type=int, default=4,
                    help="--start-up: rows of the small run against Spark's floor (default 4)")
    ap.add_argument("--start-variants", default="built,jit",
                    help="--start-up: built (kernels compiled into the wheel), jit (compiled at "
                         "first use) or both (default built,jit)")
    ap.add_argument("--start-parts", default="cold,floor,imports,cluster",
                    help="--start-up: which of cold, floor, imports, cluster (default all)")
    args = ap.parse_args(argv)
    if args.start_up:
        sys.path.insert(0, str(Path(__file__).parent))
        import bench_startup

        return bench_startup.run(args)
    if args.scale_groups:
        return run_scale(args)
    if args.segments:
        return run_segments(args)

    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    bad = [p for p in paths if p not in ALL_PATHS]
    if bad:
        ap.error(f"unknown path(s) {bad}; choose from {','.join(ALL_PATHS)}")
    if args.smoke:
        args.rows = 2000
        args.systems = min(args.systems, 5)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if "a3" in paths and not args.tokenizer_costs:
        try:
            import bleuscore  # noqa: F401
        except ImportError:
            print("bleuscore is not installed (pip install -e '.[bench]'): skipping a3")
            paths.remove("a3")

    try:
        import psutil  # noqa: F401
    except ImportError:
        if not args.tokenizer_costs:
            print("psutil is not installed (pip install -e '.[bench]'): peak memory not reported")
    info = machine_info()
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items()))
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

    n_rows = pq.ParquetDataset(str(input_path)).read(columns=["seg_id"]).num_rows
    corpus_meta["rows"] = n_rows
    print(f"input: {input_path} ({n_rows:,} rows)")
    if args.tokenizer_costs:
        return run_costs(args, input_path, info)
    if args.metric_costs:
        return run_metric_costs(args, input_path, info)

    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    job_root = Path(args.job_root).resolve()
    job_script = job_root / "jobs" / "score_bleu.py"
    if any(p in paths for p in (*JOB_PATHS, "s", "g")):
        env["PYTHONPATH"] = os.pathsep.join([str(job_root)] + (
            [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        info["job_root"] = str(job_root)
        info["job_commit"] = _git_describe(job_root)
        print(f"job: {job_script} (commit {info['job_commit']})")
    spark_submit = args.spark_submit or find_spark_submit()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = workdir / "runs" / f"{stamp}-{n_rows}"
    run_dir.mkdir(parents=True, exist_ok=True)
    runs: Dict[str, Dict[str, Any]] = {}
    results: Dict[str, List[Dict[str, Any]]] = {}
    failed: List[str] = []
    profile = None
    for p in paths:
        print(f"running {p}: {PATH_TITLES[p]} ...", flush=True)
        on_new = None
        if p in ("a1", "a2", "a3"):
            out_json = run_dir / f"{p}.json"
            cmd = [sys.executable, str(Path(__file__).resolve()), "_score", p, str(input_path),
                   str(out_json), args.tokenize]
        elif p == "s":
            cmd = [sys.executable, str(Path(__file__).resolve()), "_spark_floor"]
        elif p == "g":
            stats_table = ensure_stats_table(workdir, args.stats_rows)
            cmd = [sys.executable, "-m", "bleu_spark", "aggregate", "--stats", str(stats_table),
                   "--output", str(run_dir / "aggregate"), "--group-by", "langpair,system"]
        else:
            out_dir = run_dir / f"job-{p}"
            if out_dir.exists():
                shutil.rmtree(out_dir)
            if p == "e":
                cmd = [sys.executable, "-m", "bleu_spark", "score"]
            else:
                master = args.master_b if p == "b" else args.master_c
                cmd = [spark_submit, "--master", master]
                for c in args.conf:
                    cmd += ["--conf", c]
                cmd += [str(job_script)]
            cmd += ["--input", str(input_path), "--output", str(out_dir),
                    "--group-by", ",".join(GROUP_KEYS)]
            if args.tokenize != "auto":
                cmd += ["--tokenize", args.tokenize]
            cmd += args.job_arg
            if p == "d":
                cmd += ["--confidence", "--n-bootstrap", str(args.n_bootstrap)]
            if p == "b" and args.profile:
                Path(args.profile).mkdir(parents=True, exist_ok=True)
                profile = PySpyAttacher(Path(args.profile) / "pyspy-b.txt")
                on_new = profile
        # cwd: Spark may create spark-warehouse/ and derby files in the working folder
        r = run_measured(cmd, env, run_dir / f"{p}.log", timeout=args.timeout, on_new=on_new,
                         cwd=run_dir)
        runs[p] = r
        if r["returncode"] != 0:
            print(f"  {p} FAILED (exit {r['returncode']}); log: {r['log']}")
            try:
                print("  " + "\n  ".join(Path(r["log"]).read_text(errors="replace").splitlines()[-25:]))
            except OSError:
                pass
            failed.append(p)
            continue
        if p == "s":
            print(f"  s: Spark alone in {r['wall_s']:.2f} s as a whole process", flush=True)
            continue
        if p == "g":
            r["stats_rows"] = args.stats_rows
            print(f"  g: aggregate of {args.stats_rows:,} statistics rows in {r['wall_s']:.2f} s "
                  f"as a whole process", flush=True)
            continue
        if p in ("a1", "a2", "a3"):
            data = json.loads(out_json.read_text())
            results[p] = data["results"]
            r["rows_scored"] = data["rows"]
            r["inner_timings"] = data["timings"]
        else:
            rows, run_info = load_job_results(out_dir)
            results[p] = rows
            r["job_run"] = run_info
        r["rows_per_s"] = n_rows / r["wall_s"]
        print(f"  {p}: {r['wall_s']:.1f} s, {r['rows_per_s']:,.0f} rows/s, "
              f"peak RSS {r['peak_rss_mib']}", flush=True)
        if p == "b" and profile is not None:
            err = profile.finish()
            if err:
                print(f"  py-spy: {err}")
            else:
                summ = summarize_collapsed(profile.out_raw)
                r["profile"] = summ
                print(f"  py-spy on b's Python workers ({summ['samples']} samples), top self time:")
                for fn, pct in summ["self_pct"][:15]:
                    print(f"    {pct:5.1f}%  {fn}")

    # identity guard, before any speed figure
    exact = [p for p in EXACT_PATHS if p in results]
    identity: Dict[str, Any] = {"paths": exact, "problems": {}, "signature_warnings": {}}
    ok = not failed
    if len(exact) >= 2:
        ref_path = exact[0]
        print(f"identity check against {ref_path} ({len(results[ref_path])} groups):")
        for p in exact[1:]:
            probs = compare_results(results[ref_path], results[p])
            identity["problems"][p] = probs
            sig = signature_differences(results[ref_path], results[p])
            if sig:
                identity["signature_warnings"][p] = sig[:20]
            status = "identical" if not probs else f"{len(probs)} DIFFERENCES"
            print(f"  {p} vs {ref_path}: {status}")
            for line in probs[:20]:
                print(f"    {line}")
            for line in sig[:3]:
                print(f"    warning: {line}")
            ok = ok and not probs
        if "a3" in results:
            base = {_key(x): x for x in results[ref_path]}
            diffs = [abs(x["score"] - base[_key(x)]["score"]) for x in results["a3"]
                     if _key(x) in base]
            identity["a3_max_abs_score_diff"] = max(diffs) if diffs else None
            print(f"  a3 (bleuscore, not checked): max |score - {ref_path}| = "
                  f"{identity['a3_max_abs_score_diff']}")
        identity["passed"] = ok
        print("identity check: " + ("PASSED" if ok else "FAILED"))
    else:
        identity["passed"] = None
        print("identity check: not run (needs two of a1, a2, b, c)")

    report = {"machine": info, "corpus": corpus_meta, "paths": paths, "runs": runs,
              "identity": identity, "ratios": compute_ratios(runs), "smoke": args.smoke}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    if failed:
        print(f"failed paths: {', '.join(failed)}")
        return 2
    if identity["passed"] is False:
        return 1
    if args.smoke:
        print("smoke mode: timings not reported")
        return 0
    print()
    print(f"{n_rows:,} rows; peak RSS in MiB (py wrk = all Python workers together, "
          f"1 wrk = the largest one); load = 1-min load average before the run; other cpu = "
          f"CPU seconds used meanwhile by processes outside the run")
    print_table(runs, n_rows)
    ratios = report["ratios"]
    if ratios:
        print("ratios of rows/s: " + ", ".join(f"{k} = {v:.2f}" for k, v in ratios.items()))
    if "c" in runs and "d" in runs:
        print(f"d / c wall time (B = {args.n_bootstrap} intervals against the plain run): "
              f"{runs['d']['wall_s'] / runs['c']['wall_s']:.2f}")
    if "g" in runs:
        print(f"g: aggregate of {args.stats_rows:,} statistics rows: {runs['g']['wall_s']:.2f} s")
    if runs.get("s", {}).get("returncode") == 0:
        floor = runs["s"]["wall_s"]
        print(f"s: Spark alone {floor:.2f} s" + (
            f"; a2's wall time / s's = {runs['a2']['wall_s'] / floor:.2f}, the most a job path "
            f"could gain over a2 here" if "a2" in runs else ""))
    for p in JOB_PATHS:
        cpu = runs.get(p, {}).get("cpu_s")
        if cpu:
            print(f"{p} CPU seconds by process: " + ", ".join(
                f"{k} {v:.1f}" for k, v in sorted(cpu.items(), key=lambda kv: -kv[1]) if v >= 0.05))
        jr = runs.get(p, {}).get("job_run")
        if jr:
            keep = {k: jr[k] for k in ("rows", "timings", "layout", "tasks", "input_bytes")
                    if k in jr}
            print(f"{p} run.json: " + json.dumps(keep)[:900])
            if jr.get("input_bytes") and "tasks" in jr:
                print(f"{p} shuffle bytes written per input byte: "
                      f"{jr['tasks'].get('shuffle_write_bytes', 0) / jr['input_bytes']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
