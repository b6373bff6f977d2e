"""sacrebleu 2.6's BLEU itself on the same rows, as it prints a corpus score: what the tests and
scripts check this job's BLEU against; never used by the job."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Optional, Sequence

from sacrebleu.metrics.bleu import BLEU
from sacrebleu.tokenizers import tokenizer_spm

from ...languages import TextSettings
from ...oracle import reference_streams
from ...tokenizers import SPM_TOKENIZERS
from .options import BleuConfig


@contextlib.contextmanager
def _spm_model_in_place(name: str, model_path: str):
    """sacrebleu loads SentencePiece models from its own folder: put the local one there."""
    folder = tempfile.mkdtemp(prefix="sacrebleu-")
    models = os.path.join(folder, "models")
    os.makedirs(models)
    url = tokenizer_spm.SPM_MODELS[name]["url"]
    shutil.copy(model_path, os.path.join(models, os.path.basename(url)))
    saved = tokenizer_spm.SACREBLEU_DIR
    tokenizer_spm.SACREBLEU_DIR = folder
    try:
        yield
    finally:
        tokenizer_spm.SACREBLEU_DIR = saved
        shutil.rmtree(folder)


def sacrebleu_score(candidates: Sequence[str], references: Sequence[Sequence[Optional[str]]],
                    config: BleuConfig, langpair: Optional[str] = None,
                    text: Optional[TextSettings] = None) -> dict:
    """Score, counts, totals, lengths, signature and text line as sacrebleu prints them, with
    the run's text settings (`text`; by default `--tokenize auto`)."""
    text = text or TextSettings()
    tokenize = text.tokenizer_for(langpair)
    kwargs = dict(lowercase=config.lowercase, tokenize=tokenize,
                  max_ngram_order=config.max_ngram_order, effective_order=config.effective_order)
    streams = reference_streams(references)
    with (_spm_model_in_place(tokenize, text.spm_model) if tokenize in SPM_TOKENIZERS
          else contextlib.nullcontext()):
        bleu = BLEU(smooth_method=config.smooth_method, smooth_value=config.smooth_value, **kwargs)
        result = bleu.corpus_score(list(candidates), streams)
        # sacrebleu adds the add-k constant into the counts it returns: take them unsmoothed.
        raw = BLEU(smooth_method="none", **kwargs).corpus_score(list(candidates), streams)
    return {"score": result.score, "counts": list(raw.counts), "totals": list(raw.totals),
            "precisions": list(result.precisions), "bp": result.bp, "sys_len": result.sys_len,
            "ref_len": result.ref_len, "signature": str(bleu.get_signature()),
            "verbose": str(result)}
