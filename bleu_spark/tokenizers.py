"""sacrebleu's own tokenizers, built once per process or partition.

Every tokenizer is sacrebleu 2.6's class, called through its API; the only addition is that the
SentencePiece tokenizers load their model from a local file, because executors cannot download.
"""
from __future__ import annotations

from typing import Callable, Optional

import sacrebleu
from sacrebleu.tokenizers.tokenizer_spm import SPM_MODELS, TokenizerSPM

from .config import SPM_TOKENIZERS
from .errors import ModelFileError


class LocalModelSPMTokenizer(TokenizerSPM):
    """sacrebleu's SentencePiece tokenizer (its `__call__` and signature), model from a file."""

    def __init__(self, name: str, model_path: str):  # noqa: super().__init__ would download
        import sentencepiece

        self.name = SPM_MODELS[name]["signature"]
        self.sp = sentencepiece.SentencePieceProcessor()
        try:
            self.sp.Load(model_path)
        except (OSError, RuntimeError) as exc:
            raise ModelFileError(f"cannot load SentencePiece model {model_path}: {exc}") from None


def build_tokenizer(name: str, spm_model: Optional[str] = None) -> Callable[[str], str]:
    """A tokenizer object: `tok(line) -> str` of space-separated tokens, `tok.signature()`."""
    if name in SPM_TOKENIZERS:
        if not spm_model:
            raise ModelFileError(f"tokenizer {name} needs a SentencePiece model file (--spm-model)")
        return LocalModelSPMTokenizer(name, spm_model)
    return sacrebleu.BLEU(tokenize=name).tokenizer
