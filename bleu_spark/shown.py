"""How a group value is written for people (the console, the report, warnings): one text per
value, so two values never look alike."""
from __future__ import annotations

import json
from typing import Any

NULL = "—"          # a null value
JOINER = " · "      # between the values of a label of several columns


def shown(value: Any) -> str:
    """Null is `—`; a string that could be taken for another value (empty, starting like the
    null marker or a quoted string, holding the joiner, surrounding or unprintable characters)
    is JSON-quoted; any other value is its text. Values of one column share a type, so an
    integer 3 never meets a string "3"."""
    if value is None:
        return NULL
    if not isinstance(value, str):
        return str(value)
    if (value == "" or value.startswith((NULL, '"')) or JOINER in value
            or value != value.strip() or not value.isprintable()):
        return json.dumps(value, ensure_ascii=False)
    return value
