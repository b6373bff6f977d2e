"""The section's plotly charts: its scores as bars with interval whiskers and score labels,
and its groups' scores over time."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

import plotly.graph_objects as go

from .bands import band_colour
from .sections import Group, Section
from .shared import (LANGPAIR, figure_json, figure_layout, group_label, label_columns, metric_name,
                     plotly_text, time_text)

BAR_HEIGHT_PX = 30
FULL_SCALE = 100.0  # every bar axis reaches this at least, so sections compare at a glance
TICKS = 10          # at most this many steps between the axis' ticks
AXIS_PAD = 0.12     # axis share past the last tick (room for the label of a bar that reaches it)
LABEL_ROOM = 0.30   # axis share a bar's label needs right of the bar


def _bar_chart(section: Section, metric) -> Optional[go.Figure]:
    scored = [g for g in section.top if g.score is not None]
    if not scored:
        return None
    labels = [plotly_text(g.label) for g in scored]
    bar = go.Bar(
        orientation="h", x=[g.score for g in scored], y=labels,
        marker=dict(color=[band_colour(g.score, metric.bands) for g in scored]),
        hovertemplate="%{y}: %{x:.2f}<extra></extra>", error_x=_whiskers(scored))
    return go.Figure(bar, figure_layout(
        height=80 + BAR_HEIGHT_PX * len(scored), bargap=0.25, annotations=_score_labels(scored, labels),
        xaxis=dict(title=metric.title, zeroline=True, **_score_axis(scored)),
        yaxis=dict(autorange="reversed", automargin=True)))


def _score_axis(groups: List[Group]) -> Dict[str, Any]:
    """The x axis' range and ticks: 0 to 100 wherever the section's bars fit (one scale, so
    bars compare across sections), else as far as its longest bar or whisker (TER passes 100),
    with room for the label right of the longest bar."""
    low = min(0.0, min(_left_end(g) for g in groups))
    highest = max(_right_end(g) for g in groups)
    step = _tick_step(max(FULL_SCALE, highest) - low)
    first, last = math.floor(low / step) * step, math.ceil(max(FULL_SCALE, highest) / step) * step
    span = last - first
    return dict(range=[first, max(last + AXIS_PAD * span, highest + LABEL_ROOM * span)],
                tickvals=[first + i * step for i in range(round(span / step) + 1)])


def _tick_step(span: float) -> float:
    """The smallest of 1, 2 and 5 times a power of ten that cuts `span` in at most TICKS steps."""
    power = 10.0 ** math.floor(math.log10(span / TICKS))
    return next(power * m for m in (1, 2, 5, 10) if span / (power * m) <= TICKS)


def _left_end(group: Group) -> float:
    """Where a bar or its whisker starts on the x axis, nearest the left."""
    return min(group.score, group.interval[0]) if group.interval else group.score


def _right_end(group: Group) -> float:
    """Where a bar ends on the x axis, its whisker included."""
    return max(group.score, group.interval[1]) if group.interval else group.score


def _score_labels(groups: List[Group], labels: List[str]) -> List[Dict[str, Any]]:
    # Annotations rather than bar text: placed right of the whisker, so the two never overlap.
    # The band is the bar's colour, named once in the page's legend, not on every bar.
    return [dict(x=_right_end(g), y=label, xanchor="left", xshift=6, showarrow=False,
                 text=f"<b>{g.score:.2f}</b>" + (f"  #{g.rank_range}" if g.rank_range else "")
                 + ("  baseline" if g.baseline else ""))
            for g, label in zip(groups, labels)]


def _whiskers(groups: List[Group]) -> Optional[Dict[str, Any]]:
    if not any(g.interval for g in groups):
        return None
    high = [g.interval[1] - g.score if g.interval else 0.0 for g in groups]
    low = [g.score - g.interval[0] if g.interval else 0.0 for g in groups]
    return dict(type="data", symmetric=False, array=high, arrayminus=low, color="#343a40",
                thickness=1.5, width=6)


def _time_chart(history: Sequence[dict], time_col: str, label_cols: Sequence[str], metric,
                shown: set) -> Optional[go.Figure]:
    """A line per shown group (the section's top ones: hundreds of lines read as none)."""
    times = sorted({time_text(r[time_col]) for r in history if r.get(time_col) is not None})
    if len(times) < 2:
        return None
    lines: Dict[str, Dict[str, float]] = {}
    for row in history:
        if row.get("score") is None or row.get(time_col) is None:
            continue
        label = group_label({c: row.get(c) for c in label_cols}, label_cols)
        if label in shown:
            lines.setdefault(label, {})[time_text(row[time_col])] = row["score"]
    traces = [go.Scatter(x=[t for t in times if t in points], y=[points[t] for t in times if t in points],
                         name=plotly_text(label), mode="lines+markers",
                         hovertemplate="%{x}: %{y:.2f}<extra>" + plotly_text(label) + "</extra>")
              for label, points in sorted(lines.items())]
    return go.Figure(traces, figure_layout(
        height=360, xaxis=dict(title=time_col, type="category"), yaxis=dict(title=metric.title),
        legend=dict(orientation="v")))


def _history_by_section(history: Sequence[dict], by_langpair: bool) -> Dict[Any, List[dict]]:
    buckets: Dict[Any, List[dict]] = {}
    for row in history:
        key = (row.get(LANGPAIR) if by_langpair else None, metric_name(row))
        buckets.setdefault(key, []).append(row)
    return buckets


def attach_charts(sections: List[Section], group_cols: Sequence[str], history: Optional[Sequence[dict]],
                  time_col: Optional[str]) -> None:
    by_langpair = LANGPAIR in group_cols
    label_cols = label_columns(group_cols, by_langpair)
    histories = _history_by_section(history or [], by_langpair) if time_col else {}
    for number, section in enumerate(sections):
        bars = _bar_chart(section, section.metric)
        if bars is not None:
            section.charts.append(dict(id=f"bars-{number}", kind="bars", figure=figure_json(bars)))
        timeline = _time_chart(histories.get((section.key, section.metric.name), []), time_col, label_cols,
                               section.metric, {g.label for g in section.top}) if time_col else None
        if timeline is not None:
            section.charts.append(dict(id=f"time-{number}", kind="time", figure=figure_json(timeline)))
