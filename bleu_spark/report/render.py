"""The page itself: the sections filled, one view each, and the Jinja2 template rendered."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import jinja2

from ..shown import shown
from .charts import attach_charts
from .header import band_notes, partition_facts, run_facts
from .overview import contents, overview
from .paired import SIGNIFICANCE, attach_paired, paired_columns
from .plotlyjs import plotly_js
from .sections import TOP, sections_of
from .segments import attach_segments, segment_columns_of, segment_text
from .shared import LANGPAIR, MISSING

_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("bleu_spark", "templates"),
    autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_ENVIRONMENT.filters["shown"] = shown  # a group value as the console writes it


def render_report(scores: List[dict], *, group_cols: Sequence[str], title: str = "bleu-spark report",
                  run: Optional[dict] = None, history: Optional[List[dict]] = None,
                  time_col: Optional[str] = None, paired: Optional[List[dict]] = None,
                  partitions: Optional[Dict[str, Sequence[Any]]] = None,
                  drilldown: Optional[dict] = None, left_out: Optional[str] = None) -> str:
    """One self-contained HTML page of the score rows (see the module doc); returns its text.

    `scores`: one dict per group (the group columns, score, n_segments, n_rejected, coverage,
    signature, tokenize, verbose, optionally ci_low/ci_high). `history`: rows of the same shape
    with a `time_col` value, drawn as a line per system over time in each language pair.
    `paired`: paired-test rows (system, baseline, test, delta, p_value, ...). Rows name their
    `metric` (BLEU when they do not): a section per language pair and metric, each with its
    metric's title, interpretation bands and ranking direction. `partitions`: the values of
    each partition column the scores cover (a partitioned folder's report), shown in the header.
    `drilldown`: the run's segments to show (`spark.drilldown.highlights`: `columns`, `worst`,
    and with a baseline `losses` and `points`). `left_out`: what the page leaves out of a
    result too large to draw whole, and where it is, said under the title.
    """
    group_cols = list(group_cols)
    sections = sections_of(scores, group_cols)
    # Each step fills one view of every section, and the section's template has a block for it
    # that folds past TOP as the scores do.
    attach_paired(sections, group_cols, paired)  # first: the bars mark the baseline
    attach_charts(sections, group_cols, history, time_col)
    attach_segments(sections, group_cols, drilldown)
    segment_columns, segment_file = segment_columns_of(drilldown)
    by_langpair = LANGPAIR in group_cols
    return _ENVIRONMENT.get_template("report.html.j2").render(
        title=title, sections=sections, run_facts=run_facts(run),
        partition_facts=partition_facts(partitions), overview=overview(sections),
        contents=contents(sections), band_notes=band_notes(sections),
        several_metrics=len({s.metric.name for s in sections}) > 1,
        has_clusters=any(s.has_clusters for s in sections),
        table_cols=[c for c in group_cols if not (by_langpair and c == LANGPAIR)] or group_cols,
        paired_cols=[c for c in paired_columns(paired) if not (by_langpair and c == LANGPAIR)],
        figures={c["id"]: c["figure"] for section in sections for c in section.charts},
        plotly_js=plotly_js(), missing=MISSING, significance=SIGNIFICANCE, top=TOP,
        segment_columns=segment_columns, segment_file=segment_file, segment_text=segment_text,
        segment_baseline=(drilldown or {}).get("baseline"), left_out=left_out)
