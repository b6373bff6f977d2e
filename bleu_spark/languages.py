"""How a run's text is tokenized: `TextSettings` (the run's `--tokenize` and `--spm-model`, shared
by the metrics that tokenize), language pairs as logs spell them, the tokenizer sacrebleu picks
for a pair's target language, and the warning for a pair whose text looks unspaced though its
target is unknown."""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from .errors import ModelFileError, UsageError
from .tokenizers import AUTO, SPM_TOKENIZERS, TOKENIZERS, build_tokenizer

# sacrebleu's per-target-language defaults (its `-l xx-yy` / `trg_lang` logic).
TOKENIZER_BY_TARGET_LANGUAGE = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}
DEFAULT_TOKENIZER = "13a"


def _code_lists() -> dict:
    """`language_codes.txt`, data kept beside the module: a `name:` word starts a list of codes
    (ISO 639-1 languages, ISO 3166-1 regions); `#` starts a comment line."""
    lists: dict = {}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "language_codes.txt"),
              encoding="utf-8") as lines:
        for word in (w for line in lines if not line.startswith("#") for w in line.split()):
            if word.endswith(":"):
                codes = lists.setdefault(word[:-1], set())
            else:
                codes.add(word)
    return {name: frozenset(codes) for name, codes in lists.items()}


_CODES = _code_lists()
# ISO 639-1: the two-letter language codes, to tell a language from a region (`zh-cn`, `ja-jp`).
ISO_639_1 = _CODES["languages"]
# Other spellings that name a language of the tokenizer table and nothing else: ISO 639-2/3
# codes, English names, and `jp`, no language code but Japan's, as logs write `en-JP`. (`kr` is
# Kanuri and `cn` names no language: they stay as written.)
LANGUAGE_ALIASES = {"jpn": "ja", "jp": "ja", "japanese": "ja",
                    "zho": "zh", "chi": "zh", "cmn": "zh", "chinese": "zh",
                    "kor": "ko", "korean": "ko"}
# ISO 3166-1 alpha-2 region codes, to tell a region from a language: `zh`, `ja` and `ko` are
# none, so `en-ko-kr` can only be Korean.
REGIONS = _CODES["regions"]
_SUBTAGS = re.compile(r"[-_]")


def target_language(langpair: Optional[str]) -> str:
    """The target language of a pair, lowercased, as the tokenizer table spells it when it is one
    of its languages: `en-ja`, `EN-JA`, `en_ja`, `en-JP`, `eng-jpn`, `en-US-ja-JP`,
    `en_US-ja_JP`, `en-ja-JP`, `en-ko-kr` and `en-zh-Hant-TW` give the language named; `en-de`
    gives `de`. '' when the target cannot be told apart from a region (`en-pt-br`: Breton or
    Portuguese), the pair is not tags (`en-ko-KR-x`), has no separator, or is null."""
    return _pair_language(langpair, 1)


def source_language(langpair: Optional[str]) -> str:
    """The source language of a pair, read as `target_language` reads the target (`en-ja-JP`
    gives `en`, `zh-Hant-TW-en` gives `zh`); '' when it cannot be told."""
    return _pair_language(langpair, 0)


def _pair_language(langpair: Optional[str], side: int) -> str:
    parts = [p.strip() for p in _SUBTAGS.split(langpair.strip())] if langpair else []
    parts = [p for p in parts if p]  # `en--ja`, `en-ja-`: the separators' doubling says nothing
    if len(parts) == 2:  # as written: `en-JP`, `en-kr` (Kanuri), `jpn-eng`
        return _language(parts[side])
    found = {_language(tags[side][0]) for tags in _readings(parts)}
    return found.pop() if len(found) == 1 else ""


def _language(code: str) -> str:
    code = code.lower()
    return LANGUAGE_ALIASES.get(code, code)


def _readings(parts: Sequence[str]) -> List[Tuple[Sequence[str], Sequence[str]]]:
    """The (source, target) tags of the ways to cut a pair's subtags into two language tags (language, then an
    optional script, then an optional region); where several remain, those whose target does not
    start with a part in capitals among parts that are not (`en-pt-BR`: BR is the region)."""
    cuts = [(parts[:at], parts[at:]) for at in range(1, len(parts))]
    tags = [(source, target) for source, target in cuts if _is_tag(source) and _is_tag(target)]
    lower = [t for t in tags if not _region_case(t[1][0], parts)]
    return lower if len(tags) > 1 and lower else tags


def _is_tag(subtags: Sequence[str]) -> bool:
    """Whether subtags are a language tag as pairs write them: `ja`, `jpn`, `ja-JP`, `zh-Hant-TW`,
    `es-419` (a 2-letter language must be ISO 639-1 or a spelling of the table's languages)."""
    language, rest = subtags[0].lower(), [s.lower() for s in subtags[1:]]
    if not (language.isalpha() and language.isascii()) or len(language) in (1, 4) or len(language) > 8:
        return False  # a singleton (`x`) or a script is no language
    if len(language) == 2 and not _is_language(language):
        return False
    if rest and len(rest[0]) == 4 and rest[0].isalpha():  # a script: Hans, Hant, Latn
        rest = rest[1:]
    return len(rest) <= 1 and all(r in REGIONS or (len(r) == 3 and r.isdigit()) for r in rest)


def _is_language(code: str) -> bool:
    code = code.lower()
    return code in ISO_639_1 or (code in LANGUAGE_ALIASES and code != "jp")


def _region_case(part: str, parts: Sequence[str]) -> bool:
    return part.isupper() and not all(p.isupper() for p in parts)


def knows_target(langpair: Optional[str]) -> bool:
    """Whether the pair names its target language (an ISO 639-1 code, or a spelling of one of
    the tokenizer table's languages)."""
    target = target_language(langpair)
    return target in ISO_639_1 or target in TOKENIZER_BY_TARGET_LANGUAGE


# Under 13a, text written without spaces (Japanese, Chinese) is a token or two a segment; text
# with spaces, a dozen or more (WMT22: en-ja 1.3, en-zh 2.3, en-de 19). Fewer tokens a
# reference than this, for a pair whose target cannot be told, is worth a warning.
FEW_TOKENS_A_SEGMENT = 4


def spaceless_warning(langpair: Optional[str], tokenizer: str, n_segments: int,
                      ref_len: int, subject: Optional[str] = None) -> Optional[str]:
    """A warning for a pair scored with 13a because its target could not be told, whose
    references look like text without spaces: its BLEU would count whole sentences as words.
    `subject` names what was scored when it is not a pair (an input without a pair column)."""
    if tokenizer != DEFAULT_TOKENIZER or knows_target(langpair) or not n_segments:
        return None
    per_segment = ref_len / n_segments
    named = sorted(set(_table_languages(langpair)))
    if named:  # Korean has spaces: its token count would not show it (`en-ko-KR-x`, `en/ko`)
        return (f"language pair {langpair!r}: its target language could not be told, though it "
                f"names {', '.join(named)}; scored with {tokenizer} (as target, "
                f"{', '.join(f'{n} gets {TOKENIZER_BY_TARGET_LANGUAGE[n]}' for n in named)}). Write the pair as "
                f"source-target (e.g. en-ko, en-ko-KR) or pass --tokenize")
    if per_segment >= FEW_TOKENS_A_SEGMENT:
        return None
    return (f"{subject or f'language pair {langpair!r}'}: its target language could not be told and its "
            f"references have {per_segment:.1f} tokens a segment under {tokenizer} (text without "
            f"spaces?); BLEU counted whole runs of text as words. Write the pair as source-target "
            f"(e.g. en-ja, en-zh, en-ko) or pass --tokenize")


def _table_languages(langpair: Optional[str]) -> List[str]:
    """The tokenizer table's languages a pair's words name, whatever separates them."""
    words = re.split(r"[^0-9a-z]+", (langpair or "").lower())
    return [lang for lang in (LANGUAGE_ALIASES.get(w, w) for w in words)
            if lang in TOKENIZER_BY_TARGET_LANGUAGE]


def tokenizer_for(tokenize: str, langpair: Optional[str]) -> str:
    """The tokenizer for rows of this language pair, as sacrebleu's `-l` would pick it: the
    one asked for, or with `auto` the target language's."""
    if tokenize != AUTO:
        return tokenize
    return TOKENIZER_BY_TARGET_LANGUAGE.get(target_language(langpair), DEFAULT_TOKENIZER)


def check_tokenizer(tokenize: str) -> None:
    if tokenize != AUTO and tokenize not in TOKENIZERS:
        raise UsageError(f"unknown tokenizer {tokenize!r}; choose one of: auto, {', '.join(TOKENIZERS)}")


def require_spm_model(tokenizer: str, spm_model: Optional[str]) -> str:
    """The SentencePiece model a tokenizer needs, loaded here, on the driver: a missing file or
    one that is not a model fails now with one line, not on every executor as a traceback."""
    if not spm_model:
        raise ModelFileError(f"tokenizer {tokenizer} needs a SentencePiece model file: "
                             f"pass --spm-model PATH (executors cannot download it)")
    if not os.path.isfile(spm_model):
        raise ModelFileError(f"SentencePiece model file not found: {spm_model}")
    _load_model(tokenizer, os.path.abspath(spm_model), os.stat(spm_model).st_mtime_ns)
    return spm_model


@functools.lru_cache(maxsize=16)
def _load_model(tokenizer: str, path: str, mtime_ns: int) -> None:
    """Loads a model once a process: each text settings object that checks it (copies made with
    `dataclasses.replace` too) would load it again."""
    build_tokenizer(tokenizer, path)


@dataclass(frozen=True)
class TextSettings:
    """The run's text settings, checked once: `tokenize` (auto: by each row's target language),
    the SentencePiece model, and whether the tokenizing metrics lowercase first."""
    tokenize: str = AUTO
    spm_model: Optional[str] = None
    lowercase: bool = False

    def __post_init__(self):
        check_tokenizer(self.tokenize)
        if self.tokenize in SPM_TOKENIZERS:
            require_spm_model(self.tokenize, self.spm_model)

    @classmethod
    def of(cls, values: Mapping[str, Any], lowercase: bool = False) -> "TextSettings":
        """The text settings among a run's option values."""
        return cls(values.get("tokenize", AUTO), values.get("spm_model"), lowercase)

    def tokenizer_for(self, langpair: Optional[str]) -> str:
        return tokenizer_for(self.tokenize, langpair)


def tokenizers_by_pair(stats, column: str, text: TextSettings) -> Optional[dict]:
    """Under `--tokenize auto`, the tokenizer each language pair (as written in `column` of the
    statistics table) was scored with."""
    if text.tokenize != AUTO or column not in stats.column_names:
        return None
    pairs = sorted(set(stats[column].to_pylist()), key=lambda p: (p is None, p or ""))
    return {"" if p is None else p: text.tokenizer_for(p) for p in pairs}


def tokenizer_warnings(stats, column: str, text: TextSettings, measured: Sequence,
                       tokenizers: Optional[dict]) -> List[str]:
    """A warning for each pair scored with 13a for want of a target language the tokenizer table
    knows, when its references look like text without spaces (languages.spaceless_warning),
    counted by the first measured metric that tokenizes and counts reference tokens."""
    import pyarrow.compute as pc

    counting = [m for m in measured if m.uses_tokenizer and m.reference_tokens]
    if not counting:
        return []
    metric, tokens = counting[0].name, counting[0].reference_tokens
    rows = stats.filter(pc.equal(stats["metric"], metric))
    if text.tokenize == AUTO and column not in stats.column_names:
        # No pair column: every row got 13a, which Japanese or Chinese text would not want.
        warning = spaceless_warning(None, DEFAULT_TOKENIZER, pc.sum(rows["n_segments"]).as_py(),
                                    pc.sum(rows[tokens]).as_py(),
                                    subject=f"the input (no {column!r} column)")
        return [warning] if warning else []
    if not tokenizers:
        return []
    sums = rows.group_by([column]).aggregate([("n_segments", "sum"), (tokens, "sum")])
    warnings = []
    for row in sums.to_pylist():
        pair = row[column]
        warning = spaceless_warning(pair, tokenizers["" if pair is None else pair],
                                    row["n_segments_sum"], row[f"{tokens}_sum"])
        warnings += [warning] if warning else []
    return warnings


def target_warnings(stats, column: str, measured: Sequence) -> List[str]:
    """Each measured metric's warnings about the target languages of the scored pairs (TER on
    Japanese, Chinese or Korean without Asian support: a score past 100 that means nothing)."""
    if column not in stats.column_names:
        return []
    targets = sorted({target_language(p) for p in stats[column].unique().to_pylist()} - {""})
    return [line for metric in measured for line in metric.target_warnings(targets)]
