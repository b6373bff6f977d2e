"""LIKE patterns: the escapes both engines read alike, and the regex Spark matches them with."""
from __future__ import annotations


def plain_escapes(pattern: str) -> bool:
    """Whether each backslash escapes %, _ or a backslash: the escapes that mean the same on
    pyarrow (which lets a backslash escape any character) and Spark (which refuses the rest)."""
    at = pattern.find("\\")
    while at >= 0:
        if pattern[at + 1:at + 2] not in ("%", "_", "\\"):
            return False
        at = pattern.find("\\", at + 2)
    return True

def like_regex(pattern: str) -> str:
    """A LIKE pattern as a Java regex that cannot backtrack for long. Spark's own LIKE becomes
    `.*a.*a.*z`, whose backtracking takes O(n^k) on a value of n characters (`%a%a%a%a%z` on
    300 characters: minutes; one more `%a`, hours). Here each part between two `%` is found at
    its leftmost place and kept there (an atomic group), which is right because every part has a
    fixed length (`_` is one character); the last part must end the value."""
    parts, part, at = [], [], 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":   # escapes %, _ or itself (`plain_escapes`)
            part.append(_regex_char(pattern[at + 1]))
            at += 2
            continue
        if char == "%":
            parts.append("".join(part))
            part = []
        else:
            part.append("." if char == "_" else _regex_char(char))
        at += 1
    parts.append("".join(part))
    if len(parts) == 1:
        return f"(?s)^{parts[0]}\\z"   # \z: Java's $ also matches before a final newline
    middle = "".join(f"(?>.*?{p})" for p in parts[1:-1] if p)
    return f"(?s)^{parts[0]}{middle}.*{parts[-1]}\\z"


def _regex_char(char: str) -> str:
    return char if char.isascii() and char.isalnum() else f"\\x{{{ord(char):x}}}"
