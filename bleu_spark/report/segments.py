"""A section's segments (`--segments`): per group the worst, and the losses against the
baseline, with its segment scores against the baseline's as a scatter."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import plotly.graph_objects as go

from .sections import Section, Segments
from .shared import (LANGPAIR, figure_json, figure_layout, group_label, label_columns, metric_name,
                     plotly_text, value_text)

SEGMENTS_SHOWN = 10        # a group's worst segments and largest losses shown
SENTENCE_SCORE, BASELINE_SCORE, LOSS = "sentence_score", "baseline_score", "loss"
INPUT_FILE = "input_file"  # a segment's file, when its position in it names it


def segment_text(value: Any) -> str:
    """A carried value as text: a list (the references) one item after another."""
    if isinstance(value, (list, tuple)):
        return " ‖ ".join(value_text(v) for v in value)
    return value_text(value)


def _by_label(rows: Sequence[dict], section: Section, label_cols: Sequence[str],
              by_langpair: bool) -> Dict[str, List[dict]]:
    mine: Dict[str, List[dict]] = {}
    for row in rows:
        if metric_name(row) == section.metric.name and (not by_langpair or row.get(LANGPAIR) == section.key):
            mine.setdefault(group_label({c: row.get(c) for c in label_cols}, label_cols), []).append(row)
    return mine


def _scatter(section: Section, points: Dict[str, List[dict]], baseline: str) -> Optional[go.Figure]:
    """Each shown group's segment scores against the baseline's on the same segments."""
    traces = [go.Scatter(x=[p[BASELINE_SCORE] for p in points[g.label]],
                           y=[p[SENTENCE_SCORE] for p in points[g.label]], mode="markers",
                           name=plotly_text(g.label), marker=dict(size=5, opacity=0.6),
                           hovertemplate=f"{plotly_text(g.label)}: %{{y:.1f}} against %{{x:.1f}}<extra></extra>")
              for g in section.top if g.label in points]
    if not traces:
        return None
    values = [v for t in traces for v in (*t.x, *t.y)]
    end = max(100.0, max(values))
    diagonal = go.Scatter(x=[0, end], y=[0, end], mode="lines", hoverinfo="skip", showlegend=False,
                          line=dict(color="#adb5bd", dash="dot"))
    title = section.metric.title
    return go.Figure([diagonal, *traces], figure_layout(
        height=420, xaxis=dict(title=f"{title} of {plotly_text(baseline)} (baseline), per segment",
                               range=[-2, end + 2]),
        yaxis=dict(title=f"{title} of the system, same segment", range=[-2, end + 2]), showlegend=True))


def segment_columns_of(drilldown: Optional[dict]) -> Tuple[List[str], Optional[str]]:
    """The columns that name and show a segment, and the one input file they all come from
    (named once above the tables, not on every row), if they do."""
    columns = list((drilldown or {}).get("columns", []))
    rows = [r for kind in ("worst", "losses") for r in (drilldown or {}).get(kind, [])]
    files = {r.get(INPUT_FILE) for r in rows}
    if INPUT_FILE in columns and len(files) == 1:
        return [c for c in columns if c != INPUT_FILE], value_text(files.pop())
    return columns, None


def attach_segments(sections: List[Section], group_cols: Sequence[str], drilldown: Optional[dict]) -> None:
    """Each section's worst segments and losses per group, and its segment scores against the
    baseline's as a scatter (`--segments`)."""
    if not drilldown:
        return
    by_langpair = LANGPAIR in group_cols
    label_cols = label_columns(group_cols, by_langpair)
    baseline = drilldown.get("baseline")
    for number, section in enumerate(sections):
        worst = _by_label(drilldown.get("worst", []), section, label_cols, by_langpair)
        losses = _by_label(drilldown.get("losses", []), section, label_cols, by_langpair)
        sign = 1.0 if section.metric.higher_is_better else -1.0
        section.segments = [
            Segments(g.label, sorted(worst.get(g.label, []), key=lambda r: sign * r[SENTENCE_SCORE])[:SEGMENTS_SHOWN],
                     sorted(losses.get(g.label, []), key=lambda r: -r[LOSS])[:SEGMENTS_SHOWN])
            for g in section.groups if g.label in worst or g.label in losses]
        points = _by_label(drilldown.get("points", []), section, label_cols, by_langpair)
        scatter = _scatter(section, points, baseline) if points and baseline else None
        if scatter is not None:
            section.charts.append(dict(id=f"scatter-{number}", kind="scatter", figure=figure_json(scatter)))
