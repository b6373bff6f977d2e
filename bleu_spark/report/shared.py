"""What the page's parts share: the columns they name, how a value, a group, a metric and a time
are written on the page, and plotly's text, layout and JSON of a chart."""
from __future__ import annotations

import html
import json
from typing import Any, Dict, List, Sequence

import plotly.graph_objects as go
import plotly.io as pio

from ..metrics import DEFAULT
from ..shown import JOINER, NULL, shown

LANGPAIR = "langpair"
SYSTEM = "system"  # the group column paired tests name their systems and baselines by
MISSING = NULL  # shown for a value that is absent (no score, no coverage, no group value)
DEFAULT_METRIC = DEFAULT[0]  # the metric of rows that name none
# Fonts the machine has: the page fetches none.
FONT_STACK = "system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', 'Liberation Sans', sans-serif"


def value_text(value: Any) -> str:
    return shown(value)


def group_label(values: Dict[str, Any], columns: Sequence[str]) -> str:
    """A group's name on the page, and its key there (bars, matrix rows, drill-down): one per
    group, as `shown` writes each value once."""
    return JOINER.join(value_text(values[c]) for c in columns) if columns else "all"


def label_columns(group_cols: Sequence[str], by_langpair: bool) -> List[str]:
    rest = [c for c in group_cols if not (by_langpair and c == LANGPAIR)]
    # A page grouped by language pair alone still names each bar, by its language pair.
    return rest or list(group_cols)


def metric_name(row: dict) -> str:
    return row.get("metric") or DEFAULT_METRIC


def time_text(value: Any) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def plotly_text(text: str) -> str:
    # plotly.js reads a few HTML tags in text (<b>, <a href>, ...) and decodes entities into
    # plain text nodes: escaping makes a name shown exactly as written, never as a tag.
    return html.escape(text, quote=False)


def figure_layout(**extra) -> Dict[str, Any]:
    base = dict(template="plotly_white", font=dict(family=FONT_STACK, size=13),
                margin=dict(l=10, r=20, t=30, b=40))
    base.update(extra)
    return base


def figure_json(figure: go.Figure) -> Dict[str, Any]:
    # Plain JSON (no numpy): the template writes it with |tojson, which escapes "<" and "&".
    return json.loads(pio.to_json(figure, validate=False))
