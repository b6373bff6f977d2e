"""Sentences of the synthetic corpus as token ids: references, noisy edits of them (the
systems' candidates, other translators), rendered to text with real-log oddities."""
from __future__ import annotations

import math
from typing import Dict

from .vocabulary import Vocabulary


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


def row_offsets(rows, n_rows):
    import numpy as np

    return np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_rows))]).astype(np.int64)


def base_sentences(vocab: Vocabulary, rng, n_rows):
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


def edit(vocab: Vocabulary, rng, ids, rows, n_rows, p_sub, p_ins, p_del, p_swap):
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


def render(vocab: Vocabulary, ids, rows, n_rows):
    """Detokenised strings: spaces between pieces except around attaching punctuation."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(ids)
    offsets = row_offsets(rows, n_rows)
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


def oddities(rng, arr, rates: Dict[str, float]):
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
