"""A self-contained HTML page of the score rows: an overview, then a section per language pair
and metric with charts, tables, signatures and flags.

The page opens offline: plotly.js is embedded once, inline, and every chart is a JSON figure
drawn by `Plotly.newPlot`; the HTML comes from a Jinja2 template with autoescaping, so text
from the data (system names, signatures) is never read as markup. A section shows its best
`TOP` systems and folds the rest, so a page of hundreds of systems stays readable.
"""
from .bands import interpretation
from .render import render_report
from .sections import TOP

__all__ = ["render_report", "interpretation", "TOP"]
