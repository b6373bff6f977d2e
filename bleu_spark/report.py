"""A self-contained HTML page of the score rows: an overview, then a section per language pair
and metric with charts, tables, signatures and flags.

The page opens offline: plotly.js is embedded once, inline, and every chart is a JSON figure
drawn by `Plotly.newPlot`; the HTML comes from a Jinja2 template with autoescaping, so text
from the data (system names, signatures) is never read as markup. A section shows its best
`TOP` systems and folds the rest, so a page of hundreds of systems stays readable.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import jinja2
import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from .metrics import DEFAULT, REGISTRY, order_of
from .shown import JOINER, NULL, shown

__all__ = ["render_report", "interpretation", "TOP"]

LANGPAIR = "langpair"
SYSTEM = "system"  # the group column paired tests name their systems and baselines by
MISSING = NULL  # shown for a value that is absent (no score, no coverage, no group value)
SIGNIFICANCE = 0.05  # paired tests: p below this gets a star
TOP = 20           # systems shown per section and in the overview; the rest are folded
BAR_HEIGHT_PX = 30
AXIS_END = 112     # score units on the bar charts' x axis
LABEL_ROOM = 30    # score units a bar's label needs right of the bar
NO_BAND_COLOUR = "#1c7ed6"  # bars of a metric without interpretation bands
# The overview's shades, worst to best within a column; the last DARK_SHADES take white text.
SHADES = ("#f1f6fc", "#d3e4f5", "#a3c6ea", "#5f9dd9", "#2466b0")
DARK_SHADES = 2
PARTITION_VALUES_SHOWN = 12  # more partition values than this are shown as first … last
DEFAULT_METRIC = DEFAULT[0]  # the metric of rows that name none
# What a group of each label column is called ("11 systems"); other columns: "groups".
NOUNS = {SYSTEM: ("system", "systems"), LANGPAIR: ("language pair", "language pairs")}
# Fonts the machine has: the page fetches none.
FONT_STACK = "system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', 'Liberation Sans', sans-serif"


def _band(score: float, bands) -> Optional[Tuple[float, bool, str, str]]:
    for band in bands:
        low, inclusive = band[0], band[1]
        if score > low or (inclusive and score == low):
            return band
    return bands[-1] if bands else None  # NaN compares false with everything


def interpretation(score: Optional[float], bands) -> Optional[str]:
    """The interpretation band of a score (0-100) among a metric's `bands`, or None for no
    score or a metric without bands."""
    band = None if score is None else _band(score, bands)
    return band[2] if band else None


def band_colour(score: float, bands) -> str:
    band = _band(score, bands)
    return band[3] if band else NO_BAND_COLOUR


@dataclass
class Group:
    """One score row as the page shows it."""
    values: Dict[str, Any]   # group column -> value
    label: str               # the group columns other than the section's, joined
    row: Dict[str, Any]
    baseline: bool = False   # the baseline of the section's paired tests

    @property
    def score(self) -> Optional[float]:
        return self.row.get("score")

    @property
    def interval(self) -> Optional[Tuple[float, float]]:
        low, high = self.row.get("ci_low"), self.row.get("ci_high")
        return None if low is None or high is None else (low, high)

    @property
    def cluster(self) -> Optional[int]:
        return self.row.get("cluster")

    @property
    def rank_range(self) -> str:
        """The bootstrap's rank range, `2–4` (one rank alone when it is sure)."""
        low, high = self.row.get("rank_low"), self.row.get("rank_high")
        return "" if low is None else str(low) if low == high else f"{low}–{high}"

    @property
    def rejected(self) -> bool:
        return (self.row.get("n_rejected") or 0) > 0

    @property
    def partial(self) -> bool:
        coverage = self.row.get("coverage")
        return coverage is not None and coverage < 1.0


@dataclass
class Section:
    title: str
    key: Optional[Any]       # the language pair, or None for the one section of the page
    groups: List[Group]      # ranked by score, best first; groups without a score last
    charts: List[Dict[str, Any]] = field(default_factory=list)
    paired: List[Dict[str, Any]] = field(default_factory=list)
    segments: List["Segments"] = field(default_factory=list)  # per group, with --segments
    metric: Any = None       # the metric of its scores (title, bands, direction)
    anchor: str = ""         # its element id, which the overview and the contents link to
    noun: Tuple[str, str] = ("group", "groups")

    @property
    def metric_title(self) -> str:
        return self.metric.title

    @property
    def column(self) -> str:
        """Its heading in the overview and the contents."""
        return "all" if self.key is None else _text(self.key)

    @property
    def top(self) -> List[Group]:
        return self.groups[:TOP]

    @property
    def rest(self) -> List[Group]:
        return self.groups[TOP:]

    def count(self, number: int) -> str:
        return f"{number} {self.noun[0] if number == 1 else self.noun[1]}"

    def interpretation(self, score: Optional[float]) -> str:
        return interpretation(score, self.metric.bands) or MISSING

    def band_colour(self, score: float) -> str:
        return band_colour(score, self.metric.bands)

    @property
    def signatures(self) -> List[str]:
        return sorted({g.row["signature"] for g in self.groups if g.row.get("signature")})

    @property
    def has_clusters(self) -> bool:
        return any(g.cluster is not None for g in self.groups)

    @property
    def one_comparison(self) -> bool:
        """Whether its rows are one comparison group (they differ in the system alone): only
        then do bands across the table mean ties (clusters are numbered per comparison)."""
        return len({tuple((c, v) for c, v in g.values.items() if c != SYSTEM)
                    for g in self.groups}) <= 1

    @property
    def has_coverage(self) -> bool:
        # Coverage is measured only against a segment key; without one every row would say "—".
        return any(g.row.get("coverage") is not None for g in self.groups)

    @property
    def unscored(self) -> List[Group]:
        return [g for g in self.groups if g.score is None]


def _text(value: Any) -> str:
    return shown(value)


def _label(values: Dict[str, Any], columns: Sequence[str]) -> str:
    """A group's name on the page, and its key there (bars, matrix rows, drill-down): one per
    group, as `shown` writes each value once."""
    return JOINER.join(_text(values[c]) for c in columns) if columns else "all"


def _label_columns(group_cols: Sequence[str], by_langpair: bool) -> List[str]:
    rest = [c for c in group_cols if not (by_langpair and c == LANGPAIR)]
    # A page grouped by language pair alone still names each bar, by its language pair.
    return rest or list(group_cols)


def _noun(label_cols: Sequence[str]) -> Tuple[str, str]:
    only = label_cols[0] if len(label_cols) == 1 else None
    return NOUNS.get(only, ("group", "groups"))


def _ranked(groups: List[Group], higher_is_better: bool = True) -> List[Group]:
    """Best first (the highest score, or the lowest for a metric where lower is better)."""
    sign = -1.0 if higher_is_better else 1.0
    return sorted(groups, key=lambda g: (g.score is None, sign * (g.score or 0.0), g.label))


def _metric_name(row: dict) -> str:
    return row.get("metric") or DEFAULT_METRIC


def _sections(scores: Sequence[dict], group_cols: Sequence[str]) -> List[Section]:
    """A section per language pair (or one for the page) and metric, each metric's sections
    after the one before in the registry's order within a language pair."""
    by_langpair = LANGPAIR in group_cols
    label_cols = _label_columns(group_cols, by_langpair)
    buckets: Dict[Any, List[Group]] = {}
    for row in scores:
        values = {c: row.get(c) for c in group_cols}
        key = (values[LANGPAIR] if by_langpair else None, _metric_name(row))
        buckets.setdefault(key, []).append(Group(values, _label(values, label_cols), row))
    several = len({metric for _, metric in buckets}) > 1
    keys = sorted(buckets, key=lambda k: (k[0] is None, str(k[0]), order_of(k[1])))
    sections = []
    for number, (langpair, name) in enumerate(keys):
        metric = REGISTRY.get(name, REGISTRY[DEFAULT_METRIC])
        title = _text(langpair) if by_langpair else f"All {_noun(label_cols)[1]}"
        sections.append(Section(f"{title} · {metric.title}" if several else title, langpair,
                                _ranked(buckets[langpair, name], metric.higher_is_better),
                                metric=metric, anchor=f"section-{number}", noun=_noun(label_cols)))
    return sections


def _plotly_text(text: str) -> str:
    # plotly.js reads a few HTML tags in text (<b>, <a href>, ...) and decodes entities into
    # plain text nodes: escaping makes a name shown exactly as written, never as a tag.
    return html.escape(text, quote=False)


def _layout(**extra) -> Dict[str, Any]:
    base = dict(template="plotly_white", font=dict(family=FONT_STACK, size=13),
                margin=dict(l=10, r=20, t=30, b=40))
    base.update(extra)
    return base


def _bar_chart(section: Section, metric) -> Optional[go.Figure]:
    scored = [g for g in section.top if g.score is not None]
    if not scored:
        return None
    labels = [_plotly_text(g.label) for g in scored]
    bar = go.Bar(
        orientation="h", x=[g.score for g in scored], y=labels,
        marker=dict(color=[band_colour(g.score, metric.bands) for g in scored]),
        hovertemplate="%{y}: %{x:.2f}<extra></extra>", error_x=_whiskers(scored))
    highest = max(_right_end(g) for g in scored)
    return go.Figure(bar, _layout(
        height=80 + BAR_HEIGHT_PX * len(scored), bargap=0.25, annotations=_score_labels(scored, labels),
        # One scale for every section, so bars compare across language pairs; past 100 there is
        # room for the label right of the longest bar.
        xaxis=dict(title=metric.title, range=[0, max(AXIS_END, highest + LABEL_ROOM)],
                   tickvals=list(range(0, 101, 10)), zeroline=True),
        yaxis=dict(autorange="reversed", automargin=True)))


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


def _time_text(value: Any) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _time_chart(history: Sequence[dict], time_col: str, label_cols: Sequence[str], metric,
                shown: set) -> Optional[go.Figure]:
    """A line per shown group (the section's top ones: hundreds of lines read as none)."""
    times = sorted({_time_text(r[time_col]) for r in history if r.get(time_col) is not None})
    if len(times) < 2:
        return None
    lines: Dict[str, Dict[str, float]] = {}
    for row in history:
        if row.get("score") is None or row.get(time_col) is None:
            continue
        label = _label({c: row.get(c) for c in label_cols}, label_cols)
        if label in shown:
            lines.setdefault(label, {})[_time_text(row[time_col])] = row["score"]
    traces = [go.Scatter(x=[t for t in times if t in points], y=[points[t] for t in times if t in points],
                         name=_plotly_text(label), mode="lines+markers",
                         hovertemplate="%{x}: %{y:.2f}<extra>" + _plotly_text(label) + "</extra>")
              for label, points in sorted(lines.items())]
    return go.Figure(traces, _layout(
        height=360, xaxis=dict(title=time_col, type="category"), yaxis=dict(title=metric.title),
        legend=dict(orientation="v")))


def _figure_json(figure: go.Figure) -> Dict[str, Any]:
    # Plain JSON (no numpy): the template writes it with |tojson, which escapes "<" and "&".
    return json.loads(pio.to_json(figure, validate=False))


def _history_by_section(history: Sequence[dict], by_langpair: bool) -> Dict[Any, List[dict]]:
    buckets: Dict[Any, List[dict]] = {}
    for row in history:
        key = (row.get(LANGPAIR) if by_langpair else None, _metric_name(row))
        buckets.setdefault(key, []).append(row)
    return buckets


def _paired_rows(paired: Sequence[dict]) -> List[Dict[str, Any]]:
    rows = []
    for row in paired:
        low, high = row.get("delta_ci_low"), row.get("delta_ci_high")
        p_value = row.get("p_value")
        rows.append(dict(row, significant=p_value is not None and p_value < SIGNIFICANCE,
                         interval=None if low is None or high is None else (low, high)))
    return sorted(rows, key=lambda r: (-(r.get("delta") or 0.0), str(r.get("system"))))


def _attach_charts(sections: List[Section], group_cols: Sequence[str], history: Optional[Sequence[dict]],
                   time_col: Optional[str]) -> None:
    by_langpair = LANGPAIR in group_cols
    label_cols = _label_columns(group_cols, by_langpair)
    histories = _history_by_section(history or [], by_langpair) if time_col else {}
    for number, section in enumerate(sections):
        bars = _bar_chart(section, section.metric)
        if bars is not None:
            section.charts.append(dict(id=f"bars-{number}", kind="bars", figure=_figure_json(bars)))
        timeline = _time_chart(histories.get((section.key, section.metric.name), []), time_col, label_cols,
                               section.metric, {g.label for g in section.top}) if time_col else None
        if timeline is not None:
            section.charts.append(dict(id=f"time-{number}", kind="time", figure=_figure_json(timeline)))


def _attach_paired(sections: List[Section], group_cols: Sequence[str], paired: Optional[Sequence[dict]]) -> None:
    """Each section's paired tests, and its baseline marked among its groups."""
    by_langpair = LANGPAIR in group_cols
    for section in sections:
        mine = [r for r in paired or [] if (not by_langpair or r.get(LANGPAIR) == section.key)
                and _metric_name(r) == section.metric.name]
        section.paired = _paired_rows(mine)
        baselines = {r.get("baseline") for r in mine} - {None}
        for group in section.groups:
            system = group.values.get(SYSTEM)
            group.baseline = system is not None and str(system) in baselines  # "3" names 3


# ---- segments (--segments): per group the worst, and the losses against the baseline ----

SEGMENTS_SHOWN = 10        # a group's worst segments and largest losses shown
SENTENCE_SCORE, BASELINE_SCORE, LOSS = "sentence_score", "baseline_score", "loss"
INPUT_FILE = "input_file"  # a segment's file, when its position in it names it


@dataclass
class Segments:
    """One group's segments the page shows: its worst, and where it lost most to the baseline."""
    label: str
    worst: List[Dict[str, Any]]
    losses: List[Dict[str, Any]]


def _segment_text(value: Any) -> str:
    """A carried value as text: a list (the references) one item after another."""
    if isinstance(value, (list, tuple)):
        return " ‖ ".join(_text(v) for v in value)
    return _text(value)


def _by_label(rows: Sequence[dict], section: Section, label_cols: Sequence[str],
              by_langpair: bool) -> Dict[str, List[dict]]:
    mine: Dict[str, List[dict]] = {}
    for row in rows:
        if _metric_name(row) == section.metric.name and (not by_langpair or row.get(LANGPAIR) == section.key):
            mine.setdefault(_label({c: row.get(c) for c in label_cols}, label_cols), []).append(row)
    return mine


def _scatter(section: Section, points: Dict[str, List[dict]], baseline: str) -> Optional[go.Figure]:
    """Each shown group's segment scores against the baseline's on the same segments."""
    traces = [go.Scatter(x=[p[BASELINE_SCORE] for p in points[g.label]],
                           y=[p[SENTENCE_SCORE] for p in points[g.label]], mode="markers",
                           name=_plotly_text(g.label), marker=dict(size=5, opacity=0.6),
                           hovertemplate=f"{_plotly_text(g.label)}: %{{y:.1f}} against %{{x:.1f}}<extra></extra>")
              for g in section.top if g.label in points]
    if not traces:
        return None
    values = [v for t in traces for v in (*t.x, *t.y)]
    end = max(100.0, max(values))
    diagonal = go.Scatter(x=[0, end], y=[0, end], mode="lines", hoverinfo="skip", showlegend=False,
                          line=dict(color="#adb5bd", dash="dot"))
    title = section.metric.title
    return go.Figure([diagonal, *traces], _layout(
        height=420, xaxis=dict(title=f"{title} of {_plotly_text(baseline)} (baseline), per segment",
                               range=[-2, end + 2]),
        yaxis=dict(title=f"{title} of the system, same segment", range=[-2, end + 2]), showlegend=True))


def _segment_columns(drilldown: Optional[dict]) -> Tuple[List[str], Optional[str]]:
    """The columns that name and show a segment, and the one input file they all come from
    (named once above the tables, not on every row), if they do."""
    columns = list((drilldown or {}).get("columns", []))
    rows = [r for kind in ("worst", "losses") for r in (drilldown or {}).get(kind, [])]
    files = {r.get(INPUT_FILE) for r in rows}
    if INPUT_FILE in columns and len(files) == 1:
        return [c for c in columns if c != INPUT_FILE], _text(files.pop())
    return columns, None


def _attach_segments(sections: List[Section], group_cols: Sequence[str], drilldown: Optional[dict]) -> None:
    """Each section's worst segments and losses per group, and its segment scores against the
    baseline's as a scatter (`--segments`)."""
    if not drilldown:
        return
    by_langpair = LANGPAIR in group_cols
    label_cols = _label_columns(group_cols, by_langpair)
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
            section.charts.append(dict(id=f"scatter-{number}", kind="scatter", figure=_figure_json(scatter)))


# ---- the overview: groups x language pairs, a matrix per metric ----

@dataclass
class Matrix:
    """One metric's scores: a row per group (best first on average), a column per section."""
    metric: Any
    columns: List[Section]
    rows: List[Dict[str, Any]]   # label, baseline, cells (one per column, None where absent)

    @property
    def top(self) -> List[Dict[str, Any]]:
        return self.rows[:TOP]

    @property
    def rest(self) -> List[Dict[str, Any]]:
        return self.rows[TOP:]


def _shade(score: float, scores: Sequence[float], higher_is_better: bool) -> int:
    """The shade of a score among its column's: 0 for the worst .. len(SHADES)-1 for the best.
    Within a column only: scores of other language pairs are of other test sets."""
    low, high = min(scores), max(scores)
    if high == low:  # nothing to compare it with (one system): the middle shade
        return len(SHADES) // 2
    place = (score - low) / (high - low)
    return round((place if higher_is_better else 1.0 - place) * (len(SHADES) - 1))


def _cell(group: Group, section: Section, scores: Sequence[float]) -> Dict[str, Any]:
    if group.score is None:
        return dict(score=None, href="#" + section.anchor, shade=None, dark=False)
    shade = _shade(group.score, scores, section.metric.higher_is_better)
    return dict(score=group.score, href="#" + section.anchor, shade=SHADES[shade],
                dark=shade >= len(SHADES) - DARK_SHADES, cluster=group.cluster,
                rank_range=group.rank_range)


def _matrix(columns: List[Section]) -> Matrix:
    cells: Dict[str, Dict[int, Dict[str, Any]]] = {}
    baselines = set()
    for index, section in enumerate(columns):
        scores = [g.score for g in section.groups if g.score is not None]
        for group in section.groups:
            cells.setdefault(group.label, {})[index] = _cell(group, section, scores)
            if group.baseline:
                baselines.add(group.label)
    places = _places(columns)
    order = sorted(cells, key=lambda label: (places(label), label))
    rows = [dict(label=label, baseline=label in baselines,
                 cells=[cells[label].get(i) for i in range(len(columns))]) for label in order]
    return Matrix(columns[0].metric, columns, rows)


def _places(columns: List[Section]):
    """A row's place: its mean rank relative to each column's size (0 the best), a column
    without it counting as last, so a system of one language pair does not top those of all."""
    ranks = [{g.label: rank / len(s.groups) for rank, g in enumerate(s.groups)} for s in columns]
    return lambda label: sum(r.get(label, 1.0) for r in ranks) / len(ranks)


def _overview(sections: Sequence[Section]) -> List[Matrix]:
    by_metric: Dict[str, List[Section]] = {}
    for section in sections:
        by_metric.setdefault(section.metric.name, []).append(section)
    return [_matrix(by_metric[name]) for name in sorted(by_metric, key=order_of)]


def _contents(sections: Sequence[Section]) -> List[Dict[str, Any]]:
    """The table of contents: a line per language pair, linking each of its metrics' sections."""
    entries: Dict[str, List[Section]] = {}
    for section in sections:
        entries.setdefault(section.column, []).append(section)
    return [dict(heading=heading, sections=mine) for heading, mine in entries.items()]


# ---- the page's header ----

def _run_facts(run: Optional[dict]) -> List[Tuple[str, str]]:
    """(name, value) pairs of the run info worth a line on the page, those present only."""
    if not run:
        return []
    config = run.get("config") or {}
    rows = run.get("rows") or {}
    facts = [("run", run.get("run_id") or run.get("id")),
             ("time", run.get("time") or run.get("started") or run.get("finished")),
             ("input", run.get("input") or config.get("input")),
             ("rows read", rows.get("read")), ("rows scored", rows.get("scored")),
             ("rows rejected", rows.get("rejected"))]
    return [(name, _time_text(value)) for name, value in facts if value is not None]


def _partition_facts(partitions: Optional[Dict[str, Sequence[Any]]]) -> List[Tuple[str, str]]:
    """(column, the values the page covers) per partition column; a long list as its ends."""
    facts = []
    for column, values in (partitions or {}).items():
        texts = sorted(MISSING if v is None else _time_text(v) for v in set(values))
        shown = ", ".join(texts) if len(texts) <= PARTITION_VALUES_SHOWN else f"{texts[0]} … {texts[-1]}"
        facts.append((column, f"{shown} ({len(texts)} partition{'s' if len(texts) != 1 else ''})"))
    return facts


def _band_legend(bands) -> List[Dict[str, str]]:
    """Each band's name, colour and score range, read off a metric's bands."""
    legend = []
    for index, (low, _, name, colour) in enumerate(bands):
        if index == 0:
            span = f"above {low:g}"
        elif index == len(bands) - 1:
            span = f"below {bands[index - 1][0]:g}"
        else:
            span = f"{low:g}–{bands[index - 1][0]:g}"
        legend.append(dict(name=name, colour=colour, range=span))
    return legend


def _band_notes(sections: Sequence[Section]) -> List[Dict[str, Any]]:
    """Once per page, for each metric on it that has bands: its legend and where it comes from."""
    metrics = {s.metric.name: s.metric for s in sections if s.metric.bands}
    return [dict(title=m.title, legend=_band_legend(m.bands), source=m.bands_source[0],
                 url=m.bands_source[1]) for m in (metrics[n] for n in sorted(metrics, key=order_of))]


_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("bleu_spark", "templates"),
    autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_ENVIRONMENT.filters["shown"] = shown  # a group value as the console writes it


def render_report(scores: List[dict], *, group_cols: Sequence[str], title: str = "bleu-spark report",
                  run: Optional[dict] = None, history: Optional[List[dict]] = None,
                  time_col: Optional[str] = None, paired: Optional[List[dict]] = None,
                  partitions: Optional[Dict[str, Sequence[Any]]] = None,
                  drilldown: Optional[dict] = None) -> str:
    """One self-contained HTML page of the score rows (see the module doc); returns its text.

    `scores`: one dict per group (the group columns, score, n_segments, n_rejected, coverage,
    signature, tokenize, verbose, optionally ci_low/ci_high). `history`: rows of the same shape
    with a `time_col` value, drawn as a line per system over time in each language pair.
    `paired`: paired-test rows (system, baseline, test, delta, p_value, ...). Rows name their
    `metric` (BLEU when they do not): a section per language pair and metric, each with its
    metric's title, interpretation bands and ranking direction. `partitions`: the values of
    each partition column the scores cover (a partitioned folder's report), shown in the header.
    `drilldown`: the run's segments to show (`spark.drilldown.highlights`: `columns`, `worst`,
    and with a baseline `losses` and `points`).
    """
    group_cols = list(group_cols)
    sections = _sections(scores, group_cols)
    # Each step fills one view of every section, and the section's template has a block for it
    # that folds past TOP as the scores do.
    _attach_paired(sections, group_cols, paired)  # first: the bars mark the baseline
    _attach_charts(sections, group_cols, history, time_col)
    _attach_segments(sections, group_cols, drilldown)
    segment_columns, segment_file = _segment_columns(drilldown)
    by_langpair = LANGPAIR in group_cols
    return _ENVIRONMENT.get_template("report.html.j2").render(
        title=title, sections=sections, run_facts=_run_facts(run),
        partition_facts=_partition_facts(partitions), overview=_overview(sections),
        contents=_contents(sections), band_notes=_band_notes(sections),
        several_metrics=len({s.metric.name for s in sections}) > 1,
        has_clusters=any(s.has_clusters for s in sections),
        table_cols=[c for c in group_cols if not (by_langpair and c == LANGPAIR)] or group_cols,
        paired_cols=[c for c in _paired_columns(paired) if not (by_langpair and c == LANGPAIR)],
        figures={c["id"]: c["figure"] for section in sections for c in section.charts},
        plotly_js=get_plotlyjs(), missing=MISSING, significance=SIGNIFICANCE, top=TOP,
        segment_columns=segment_columns, segment_file=segment_file, segment_text=_segment_text,
        segment_baseline=(drilldown or {}).get("baseline"))


def _paired_columns(paired: Optional[Sequence[dict]]) -> List[str]:
    """The comparison's group columns: the keys of a paired row that are not test results."""
    known = {"metric", "system", "baseline", "test", "delta", "p_value", "delta_ci_low",
             "delta_ci_high"}
    columns: List[str] = []
    for row in paired or []:
        columns += [k for k in row if k not in known and k not in columns]
    return columns
