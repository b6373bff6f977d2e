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
import sacrebleu
from sacrebleu.tokenizers.tokenizer_spm import SPM_MODELS, TokenizerSPM

from .config import SPM_TOKENIZERS
from .errors import ModelFileError
from .kernels import PYTHON_WHITESPACE, tokenize_13a, tokenize_intl, tokenize_zh

# Arrow's ascii_split_whitespace splits on the ASCII whitespace only, so the rest of what
# str.split() splits on is first made spaces.
_ASCII_WHITESPACE = " \t\n\v\f\r"
_OTHER_WHITESPACE = "[" + "".join(
    f"\\x{{{ord(c):x}}}" for c in PYTHON_WHITESPACE if c not in _ASCII_WHITESPACE) + "]"


@dataclass
class Tokens:
    """The tokens of `n_lines` lines, flat: the i-th is `vocabulary[ids[i]]`, of line `line[i]`;
    each line's tokens are contiguous and in order. Equal tokens have equal ids."""
    ids: np.ndarray
    line: np.ndarray
    n_lines: int
    vocabulary: pa.Array

    def lengths(self) -> np.ndarray:
        return np.bincount(self.line, minlength=self.n_lines)


def split_tokens(lines: pa.Array) -> Tokens:
    """`str.split()` of every line."""
    lines = pc.replace_substring_regex(lines, _OTHER_WHITESPACE, " ")
    lists = pc.ascii_split_whitespace(lines)
    flat, line = pc.list_flatten(lists), pc.list_parent_indices(lists)
    nonempty = pc.not_equal(pc.binary_length(flat), 0)  # what runs at either end leave
    flat, line = flat.filter(nonempty), line.filter(nonempty)
    encoded = flat.dictionary_encode()
    return Tokens(encoded.indices.to_numpy().astype(np.int64), line.to_numpy().astype(np.int64),
                  len(lines), encoded.dictionary)


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


class LocalModelSPMTokenizer(TokenizerSPM):
    """sacrebleu's SentencePiece tokenizer (its `__call__` and signature), model from a file,
    because executors cannot download."""

    def __init__(self, name: str, model_path: str):  # noqa: super().__init__ would download
        import sentencepiece

        self.name = SPM_MODELS[name]["signature"]
        self.sp = sentencepiece.SentencePieceProcessor()
        try:
            self.sp.Load(model_path)
        except (OSError, RuntimeError) as exc:
            raise ModelFileError(f"cannot load SentencePiece model {model_path}: {exc}") from None


def build_tokenizer(name: str, spm_model: Optional[str] = None) -> Callable[[str], str]:
    """sacrebleu's tokenizer object: `tok(line) -> str` of space-separated tokens, `tok.signature()`."""
    if name in SPM_TOKENIZERS:
        if not spm_model:
            raise ModelFileError(f"tokenizer {name} needs a SentencePiece model file (--spm-model)")
        return LocalModelSPMTokenizer(name, spm_model)
    return sacrebleu.BLEU(tokenize=name).tokenizer


class LineTokenizer:
    """sacrebleu's preprocessing of a line, for whole arrays: lowercase, strip trailing
    whitespace, tokenize, split. Built once per process or partition."""

    def __init__(self, name: str, lowercase: bool = False, spm_model: Optional[str] = None):
        self.name = name
        self.lowercase = lowercase
        self.tokenizer = build_tokenizer(name, spm_model)

    def signature(self) -> str:
        return self.tokenizer.signature()

    def __call__(self, lines: pa.Array) -> Tokens:
        """`lines`: a string array without nulls."""
        kernel = KERNELS.get(self.name)
        if self.name in MECAB_TOKENIZERS:
            kernel = partial(parse_distinct_lines, self.tokenizer.tagger.parse)
        if kernel is not None:
            if self.lowercase:  # Python's str.lower(), which Arrow's utf8_lower does not match
                lines = pa.array([line.lower() for line in lines.to_pylist()], pa.string())
            lines = kernel(pc.utf8_rtrim(lines, characters=PYTHON_WHITESPACE))
        else:
            texts = lines.to_pylist()
            if self.lowercase:
                texts = [text.lower() for text in texts]
            lines = pa.array([self.tokenizer(text.rstrip()) for text in texts], pa.string())
        return split_tokens(lines)
