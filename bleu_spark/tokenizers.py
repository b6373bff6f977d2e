"""sacrebleu's tokenizers, applied to whole Arrow arrays of lines.

`LineTokenizer(name)` turns an Arrow array of lines into `Tokens`: the `str.split()` tokens of
sacrebleu's tokenized line, for every line at once. 13a, the default and by far the most used,
zh and intl run as Arrow compute kernels over the whole array (`kernels.py`): sacrebleu's own
steps, in its order, with its regular expressions, character ranges and Unicode classes. ja-mecab and ko-mecab call
sacrebleu's MeCab tagger once per distinct line and do the rest for the whole array. Every
other tokenizer is sacrebleu 2.6's class, called per line. The tests prove each identical to
sacrebleu, on generated and real text.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .compiled import compiled, utf8_parts
from .errors import ModelFileError
from .kernels import PYTHON_WHITESPACE, python_lower, tokenize_13a, tokenize_intl, tokenize_zh

# `--tokenize`: sacrebleu 2.6's tokenizer names, and `auto` (by each row's target language).
TOKENIZERS = ("13a", "intl", "zh", "char", "none", "ja-mecab", "ko-mecab",
              "flores101", "flores200", "spBLEU-1K")
SPM_TOKENIZERS = ("flores101", "flores200", "spBLEU-1K")   # these need --spm-model
AUTO = "auto"

# What str.split() splits on, by code point: all of it is at most U+3000, so a character of
# one to three UTF-8 bytes, and a multi-byte one starts with 0xC2 or 0xE1-0xE3.
_SPACE = np.zeros(0x3001, np.bool_)
_SPACE[[ord(c) for c in PYTHON_WHITESPACE]] = True
assert {c.encode()[0] for c in PYTHON_WHITESPACE if c > "\x7f"} <= {0xC2, 0xE1, 0xE2, 0xE3}


@dataclass
class Tokens:
    """The tokens of `n_lines` lines, flat: the i-th is word `ids[i]`, of line `line[i]`; each
    line's tokens are contiguous and in order. Equal tokens have equal ids, 0, 1, 2, ... in the
    order they first occur."""
    ids: np.ndarray
    line: np.ndarray
    n_lines: int
    lines: pa.Array             # what was split
    first_spans: np.ndarray     # (start, end) in the lines' UTF-8 bytes of each word's first occurrence

    def lengths(self) -> np.ndarray:
        return np.bincount(self.line, minlength=self.n_lines)

    @property
    def vocabulary(self) -> pa.Array:
        """The words, as strings: word i is `vocabulary[i]`."""
        _, data = utf8_parts(self.lines)
        starts, ends = self.first_spans[:, 0], self.first_spans[:, 1]
        offsets = np.zeros(len(starts) + 1, np.int64)
        np.cumsum(ends - starts, out=offsets[1:])
        gather = np.repeat(starts - offsets[:-1], ends - starts) + np.arange(offsets[-1])
        return pa.Array.from_buffers(pa.large_string(), len(starts), [
            None, pa.py_buffer(offsets), pa.py_buffer(data[gather])])


def split_tokens(lines: pa.Array) -> Tokens:
    """`str.split()` of every line, its words numbered: one compiled pass over the UTF-8 bytes
    (Arrow's split knows only ASCII whitespace, and its dictionary encoding of the words cost
    more than the split)."""
    offsets, data = utf8_parts(lines)
    ids, line, first_spans = _split_words(offsets, data, _SPACE)
    return Tokens(ids, line, len(lines), lines, first_spans)


@compiled
def _space_width(data, i, end, space):  # pragma: no cover (compiled)
    """The bytes of the whitespace character at `i` (line ends at `end`), 0 if it is none. The
    callers test ASCII bytes themselves: a call per byte costs several times the test."""
    # Bytes widened before shifting: numba would widen them anyway, numpy's uint8 would not
    # (the plain Python kernels, without numba, must give the same words).
    b = np.int64(data[i])
    if b == 0xC2 and i + 1 < end:
        return 2 if space[(b & 0x1F) << 6 | np.int64(data[i + 1]) & 0x3F] else 0
    if 0xE1 <= b <= 0xE3 and i + 2 < end:
        code = (b & 0x0F) << 12 | (np.int64(data[i + 1]) & 0x3F) << 6 | np.int64(data[i + 2]) & 0x3F
        return 3 if code <= 0x3000 and space[code] else 0
    return 0


_FNV_OFFSET, _FNV_PRIME = np.uint64(14695981039346656037), np.uint64(1099511628211)


@compiled
def _split_words(offsets, data, space):  # pragma: no cover (compiled)
    """Each token's word id and line, and each word's first (start, end). Each token's bytes are
    hashed (FNV-1a) into an open addressing table of word ids, equal hashes confirmed byte for
    byte; the table doubles as words come, so it stays as small as the vocabulary (a table
    sized for every token would not stay in the cache)."""
    n_lines = len(offsets) - 1
    # A token is a byte at least, and the tokens of a line are a byte apart.
    most = (offsets[-1] - offsets[0] + n_lines) // 2
    ids, line = np.empty(most, np.int64), np.empty(most, np.int64)
    hashes, spans = np.empty(most, np.uint64), np.empty((most, 2), np.int64)
    size = 1024
    table = np.full(size, -1, np.int64)
    t = n_words = 0
    for l in range(n_lines):
        i, end = offsets[l], offsets[l + 1]
        while i < end:
            b = data[i]
            if (space[b] if b < 0x80 else _space_width(data, i, end, space)):
                i += 1 if b < 0x80 else _space_width(data, i, end, space)
                continue
            start, h = i, _FNV_OFFSET
            while i < end:
                b = data[i]
                if space[b] if b < 0x80 else _space_width(data, i, end, space):
                    break
                h = (h ^ np.uint64(b)) * _FNV_PRIME
                i += 1
            slot = _slot(h, size)
            while True:
                word = table[slot]
                if word < 0:
                    word = table[slot] = n_words
                    hashes[word], spans[word, 0], spans[word, 1] = h, start, i
                    n_words += 1
                    if 2 * n_words > size:
                        size *= 2
                        table = _rehashed(hashes[:n_words], size)
                    break
                if hashes[word] == h and _same_bytes(data, start, i, spans[word, 0], spans[word, 1]):
                    break
                slot = (slot + 1) & (size - 1)
            ids[t], line[t] = word, l
            t += 1
    return ids[:t], line[:t], spans[:n_words]


@compiled
def _slot(h, size):  # pragma: no cover (compiled)
    return np.int64((h ^ (h >> np.uint64(29))) & np.uint64(size - 1))


@compiled
def _rehashed(hashes, size):  # pragma: no cover (compiled)
    table = np.full(size, -1, np.int64)
    for word in range(len(hashes)):
        slot = _slot(hashes[word], size)
        while table[slot] >= 0:
            slot = (slot + 1) & (size - 1)
        table[slot] = word
    return table


@compiled
def _same_bytes(data, start, end, other_start, other_end):  # pragma: no cover (compiled)
    if end - start != other_end - other_start:
        return False
    for k in range(end - start):
        if data[start + k] != data[other_start + k]:
            return False
    return True


# The tokenizers that run as Arrow kernels over a whole array; the others run per line.
KERNELS = {"13a": tokenize_13a, "zh": tokenize_zh, "intl": tokenize_intl}
MECAB_TOKENIZERS = ("ja-mecab", "ko-mecab")


def parse_distinct_lines(parse: Callable[[str], str], lines: pa.Array) -> pa.Array:
    """sacrebleu's TokenizerJaMecab and TokenizerKoMecab, `tagger.parse(line.strip()).strip()`,
    for a whole array: the strip is done by Arrow, each distinct line is parsed once (MeCab's
    parse is a function of its line alone, as sacrebleu's own cache of it assumes), and the
    final strip is left to the split, which drops whitespace at either end anyway. Only the
    call into MeCab stays per line."""
    encoded = pc.utf8_trim(lines, characters=PYTHON_WHITESPACE).dictionary_encode()
    parsed = pa.array([parse(text) for text in encoded.dictionary.to_pylist()], pa.string())
    return parsed.take(encoded.indices)


def build_tokenizer(name: str, spm_model: Optional[str] = None) -> Callable[[str], str]:
    """sacrebleu's tokenizer object: `tok(line) -> str` of space-separated tokens, `tok.signature()`."""
    if name in SPM_TOKENIZERS:
        if not spm_model:
            raise ModelFileError(f"tokenizer {name} needs a SentencePiece model file (--spm-model)")
        return _local_model_spm(name, spm_model)
    import sacrebleu

    return sacrebleu.BLEU(tokenize=name).tokenizer


def _local_model_spm(name: str, model_path: str):
    """sacrebleu's SentencePiece tokenizer (its `__call__` and signature), its model from a
    file, because executors cannot download."""
    import sentencepiece
    from sacrebleu.tokenizers.tokenizer_spm import SPM_MODELS, TokenizerSPM

    tokenizer = TokenizerSPM.__new__(TokenizerSPM)  # its __init__ would download the model
    tokenizer.name = SPM_MODELS[name]["signature"]
    tokenizer.sp = sentencepiece.SentencePieceProcessor()
    try:
        tokenizer.sp.Load(model_path)
    except (OSError, RuntimeError) as exc:
        raise ModelFileError(f"cannot load SentencePiece model {model_path}: {exc}") from None
    return tokenizer


class LineTokenizer:
    """sacrebleu's preprocessing of a line, for whole arrays: lowercase, strip trailing
    whitespace, tokenize, split. Built once per process or partition."""

    def __init__(self, name: str, lowercase: bool = False, spm_model: Optional[str] = None):
        self.name = name
        self.lowercase = lowercase
        self._spm_model = spm_model
        # An Arrow kernel's tokenizer needs sacrebleu's object only for its signature: built
        # when asked, so a Python worker tokenizing 13a does not import sacrebleu.
        self._tokenizer = None if name in KERNELS else build_tokenizer(name, spm_model)

    @property
    def tokenizer(self):
        """sacrebleu's tokenizer object (`build_tokenizer`)."""
        if self._tokenizer is None:
            self._tokenizer = build_tokenizer(self.name, self._spm_model)
        return self._tokenizer

    def signature(self) -> str:
        return self.tokenizer.signature()

    def __call__(self, lines: pa.Array) -> Tokens:
        """`lines`: a string array without nulls."""
        kernel = KERNELS.get(self.name)
        if self.name in MECAB_TOKENIZERS:
            kernel = partial(parse_distinct_lines, self.tokenizer.tagger.parse)
        if kernel is not None:
            if self.lowercase:
                lines = python_lower(lines)
            lines = kernel(pc.utf8_rtrim(lines, characters=PYTHON_WHITESPACE))
        else:
            texts = lines.to_pylist()
            if self.lowercase:
                texts = [text.lower() for text in texts]
            lines = pa.array([self.tokenizer(text.rstrip()) for text in texts], pa.string())
        return split_tokens(lines)
