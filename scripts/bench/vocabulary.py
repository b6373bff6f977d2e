"""The synthetic corpus's pieces of text: words, numbers, punctuation and specials, each with
its spacing behaviour and rendered forms, drawn Zipf-distributed."""
from __future__ import annotations

import math
from typing import List

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
