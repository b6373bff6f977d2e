"""sacrebleu's tokenizers as Arrow compute kernels: every line of an array in one call per step;
and the lowercasing every metric does before them (`python_lower`).

Each kernel takes lines already lowercased (if asked) and stripped of trailing whitespace, as
sacrebleu's BLEU hands them to its tokenizer, and returns the tokenized lines, whose
`str.split()` tokens are sacrebleu's. The regular expressions are sacrebleu's, in its order; RE2
gives them the same meaning as Python's `re` (explicit ASCII or code point classes, a negated
class matches a newline too, left-to-right non-overlapping replacement). zh's padding of its
characters is done with numpy on the UTF-8 bytes of the whole array. The tests prove every
kernel identical to sacrebleu, token for token, on generated text and every line of the sample.
"""
from __future__ import annotations

import sys
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .compiled import utf8_parts

# What str.split(), str.strip() and str.rstrip() treat as whitespace: code points up to U+3000
# only (the tests check every one above), so every import is not a pass over all of Unicode.
PYTHON_WHITESPACE = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())


def python_lower(lines: pa.Array) -> pa.Array:
    """Python's `str.lower()` of each line, as sacrebleu lowercases (`lines`: no nulls). Arrow's
    utf8_lower is not it (final sigma, one-to-many mappings, another Unicode version) and fills
    a table of every code point on its first call, a fifth of a second of a new process: ASCII
    lines are lowered by Arrow's ascii_lower, the others by Python, once per distinct line."""
    ascii_lines = pc.string_is_ascii(lines)
    lowered = pc.ascii_lower(lines)
    if ascii_lines.false_count == 0:
        return lowered
    other = pc.invert(ascii_lines)
    encoded = lines.filter(other).dictionary_encode()
    texts = pa.array([line.lower() for line in encoded.dictionary.to_pylist()], lines.type)
    return pc.replace_with_mask(lowered, other, texts.take(encoded.indices))


# sacrebleu 2.6's TokenizerRegexp, as (pattern, replacement). The first pads each character of
# its class with spaces; the class here leaves out the space itself, which padding only turns
# into more spaces (same tokens, a third of the replacements).
_REGEXP_STEPS = (
    (r"([\{-\~\[-\`!-\&\(-\+\:-\@\/])", r" \1 "),
    (r"([^0-9])([\.,])", r"\1 \2 "),   # period and comma unless preceded by a digit
    (r"([\.,])([^0-9])", r" \1 \2"),   # period and comma unless followed by a digit
    (r"([0-9])(-)", r"\1 \2 "),        # dash after a digit
)
_13A_REPLACEMENTS = (("<skipped>", ""), ("-\n", ""), ("\n", " "),
                     ("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"))


# Each match of the steps holds an ASCII punctuation character, and they add only spaces: a
# line without any is left as it is.
_ASCII_PUNCTUATION = r"[!-/:-@\[-`{-~]"


def tokenize_regexp(lines: pa.Array) -> pa.Array:
    """sacrebleu's TokenizerRegexp, the part 13a and zh share (its final whitespace
    normalisation is left to the split)."""
    for pattern, replacement in _REGEXP_STEPS:
        lines = pc.replace_substring_regex(lines, pattern, replacement)
    return lines


def tokenize_regexp_where_punctuated(lines: pa.Array) -> pa.Array:
    """tokenize_regexp on the lines with ASCII punctuation only: for text such as Chinese,
    where most lines have none, finding them costs less than one step over them all."""
    punctuated = pc.match_substring_regex(lines, _ASCII_PUNCTUATION)
    return pc.replace_with_mask(lines, punctuated, tokenize_regexp(lines.filter(punctuated)))


def tokenize_13a(lines: pa.Array) -> pa.Array:
    """sacrebleu's Tokenizer13a."""
    # sacrebleu replaces the entities only when the line has an '&': without one there is none.
    for old, new in _13A_REPLACEMENTS:
        lines = pc.replace_substring(lines, old, new)
    lines = pc.binary_join_element_wise("", lines, "", " ")  # f" {line} "
    return tokenize_regexp(lines)


@lru_cache(maxsize=None)
def zh_code_points():
    """The code points sacrebleu's TokenizerZh pads with spaces, as merged (first, last) pairs.

    It tests `start <= char <= end` on strings. Two of its bounds are typed as five hex digits in
    `\\u` escapes, which take four: '\\u20000' is U+2000 followed by '0'. A single character is
    above such a two-character start only if it is above its first character, and below such an
    end when it is at most its first character: (u'\\u20000', u'\\u2a6d6') means U+2001..U+2A6D
    (General Punctuation to Supplemental Arrows, not CJK Extension B), and (u'\\u2f800',
    u'\\u2fa1d') U+2F81..U+2FA1. sacrebleu's scores depend on this quirk, so it is kept."""
    from sacrebleu.tokenizers.tokenizer_zh import _UCODE_RANGES

    ranges = sorted((ord(start[0]) + (len(start) > 1), ord(end[0])) for start, end in _UCODE_RANGES)
    merged = [list(ranges[0])]
    for first, last in ranges[1:]:
        if first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return [tuple(r) for r in merged]


@lru_cache(maxsize=None)
def _zh_table() -> np.ndarray:
    """Over the BMP, True for the code points zh pads. Made at zh's first use: sacrebleu, whose
    ranges these are, is then imported, and not in a worker that tokenizes otherwise."""
    table = np.zeros(0x10000, bool)
    for first, last in zh_code_points():
        # All are in the BMP above U+07FF, so three bytes in UTF-8 with a first byte of
        # 0xE0-0xEF, which no other character's bytes can be (valid UTF-8, as Arrow's are).
        assert 0x800 <= first and last <= 0xFFFF
        table[first:last + 1] = True
    return table


def _insert_spaces(data: np.ndarray, start: np.ndarray) -> np.ndarray:
    """`data` with a space before each 3-byte character starting at `start` (sorted) and one
    after it. A byte moves right by one per space before it: two per character that started
    before it, one more inside a character (np.insert does the same, but sorts the positions)."""
    shift = np.zeros(len(data) + 1, np.int64)
    shift[start] = 1       # from the character's first byte on: its space before
    shift[start + 3] += 1  # from the byte after it on: its space after
    np.cumsum(shift, out=shift)
    padded = np.full(len(data) + 2 * len(start), 0x20, np.uint8)
    padded[np.arange(len(data)) + shift[:-1]] = data
    return padded


def pad_zh_chars(lines: pa.Array) -> pa.Array:
    """Each character of sacrebleu's zh ranges with a space on either side, in every line: on
    the UTF-8 bytes of the whole array at once (a regular expression replacing one character
    at a time costs several times more). `lines`: string or large_string, without nulls."""
    offsets, data = utf8_parts(lines)
    data, offsets = data[offsets[0]:offsets[-1]], offsets - offsets[0]
    lead = np.flatnonzero((data >= 0xE0) & (data <= 0xEF))
    code = ((data[lead] & 0x0F).astype(np.int32) << 12 | (data[lead + 1] & 0x3F).astype(np.int32) << 6
            | (data[lead + 2] & 0x3F))
    start = lead[_zh_table()[code]]
    padded = _insert_spaces(data, start)
    # A line starts after the characters that start before it, both spaces of each included.
    new_offsets = offsets + 2 * np.searchsorted(start, offsets)
    string_type, offset_type = ((pa.string(), np.int32) if len(padded) < 2**31
                                else (pa.large_string(), np.int64))
    return pa.Array.from_buffers(string_type, len(lines), [
        None, pa.py_buffer(new_offsets.astype(offset_type)), pa.py_buffer(padded)])


def tokenize_zh(lines: pa.Array) -> pa.Array:
    """sacrebleu's TokenizerZh: strip, pad each character of its ranges with spaces, then
    TokenizerRegexp (no 13a replacements, no spaces added at the ends)."""
    lines = pc.utf8_trim(lines, characters=PYTHON_WHITESPACE)  # line.strip()
    return tokenize_regexp_where_punctuated(pad_zh_chars(lines))


# sacrebleu's TokenizerV14International: its `regex` patterns, with {N} {P} {S} standing for
# the classes below.
_INTL_STEPS = (
    ("({not_N})({P})", r"\1 \2 "),  # punctuation after a non-digit
    ("({P})({not_N})", r" \1 \2"),  # punctuation before a non-digit
    ("({S})", r" \1 "),             # symbols
)


def _as_class(code_points, negate=False) -> str:
    """An RE2 class of exactly these code points (sorted), every one as \\x{...}."""
    ranges, first, last = [], code_points[0], code_points[0]
    for c in code_points[1:]:
        if c != last + 1:
            ranges.append((first, last))
            first = c
        last = c
    ranges.append((first, last))
    return ("[^" if negate else "[") + "".join(
        f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges) + "]"


@lru_cache(maxsize=1)
def intl_classes() -> dict:
    """\\P{N}, \\p{P} and \\p{S} as the `regex` module sacrebleu uses has them, spelled out as
    code points for RE2. RE2's own \\p{...} tables are of an older Unicode version: they leave
    out the hundreds of digits, punctuation marks and symbols assigned since, which `regex`
    knows. Built once per process, from `regex` itself."""
    import regex

    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    found = {name: [ord(c) for c in regex.findall(prop, every)]
             for name, prop in (("N", r"\p{N}"), ("P", r"\p{P}"), ("S", r"\p{S}"))}
    return {"not_N": _as_class(found["N"], negate=True), "P": _as_class(found["P"]),
            "S": _as_class(found["S"])}


def tokenize_intl(lines: pa.Array) -> pa.Array:
    """sacrebleu's TokenizerV14International (its final whitespace normalisation is left to
    the split)."""
    classes = intl_classes()
    for pattern, replacement in _INTL_STEPS:
        lines = pc.replace_substring_regex(lines, pattern.format(**classes), replacement)
    return lines
