"""bleu_spark.report: the page as a person sees it, rendered by headless Chromium.

The inputs are real scores: groups of the bundled sample scored in-process with bleu_of_rows.
"""
import datetime
import importlib.util
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from bleu_spark import bleu_of_rows
from bleu_spark.metrics import REGISTRY
from bleu_spark.report import TOP, interpretation, render_report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCREENSHOT = os.path.join(ROOT, "scripts", "report_screenshot.py")
SAMPLE = os.path.join(ROOT, "samples", "wmt22_sample.parquet")
LANGPAIRS = ["cs-en", "de-en", "en-de"]
GROUP_COLS = ["langpair", "system"]
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")
BLEU_BANDS = REGISTRY["bleu"].bands
# Columns of a section's scores table (1-based, as CSS counts them), with no coverage column.
RANK, SYSTEM, SCORE, N_SEGMENTS, N_REJECTED = 1, 2, 3, 4, 5


def load_screenshot_module():
    spec = importlib.util.spec_from_file_location("report_screenshot", SCREENSHOT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def CHROMIUM_ARGS_OF(module):
    return module.CHROMIUM_ARGS


@pytest.fixture(scope="module")
def shot():
    return load_screenshot_module()


@pytest.fixture(scope="module")
def sample_rows():
    """The sample's rows of LANGPAIRS, by (langpair, system), in segment order."""
    groups = {}
    table = pq.read_table(SAMPLE, columns=["langpair", "system", "seg_id", "candidate", "references"])
    for row in sorted(table.to_pylist(), key=lambda r: r["seg_id"]):
        if row["langpair"] in LANGPAIRS:
            groups.setdefault((row["langpair"], row["system"]), []).append(row)
    return groups


def score_row(langpair, system, rows, **extra):
    result = bleu_of_rows([r["candidate"] for r in rows], [r["references"] for r in rows], langpair=langpair)
    return dict({"langpair": langpair, "system": system, "score": result.score, "n_segments": result.n_segments,
                 "n_rejected": 0, "coverage": None, "signature": result.signature, "tokenize": result.tokenize,
                 "verbose": result.verbose}, **extra)


@pytest.fixture(scope="module")
def scores(shot):
    return shot.sample_scores(SAMPLE, LANGPAIRS)


# ---- interpretation bands (no browser) ----

BAND_AT = [
    (0.0, "Almost useless"),
    (9.99, "Almost useless"),
    (10.0, "Hard to get the gist"),
    (19.99, "Hard to get the gist"),
    (20.0, "The gist is clear, but has significant grammatical errors"),
    (29.99, "The gist is clear, but has significant grammatical errors"),
    (30.0, "Understandable to good translations"),
    (39.99, "Understandable to good translations"),
    (40.0, "High quality translations"),
    (50.0, "Very high quality, adequate, and fluent translations"),
    (60.0, "Very high quality, adequate, and fluent translations"),
    (60.01, "Quality often better than human"),
    (100.0, "Quality often better than human"),
]


@pytest.mark.parametrize("score,band", BAND_AT)
def test_interpretation_at_band_boundaries(score, band):
    assert interpretation(score, BLEU_BANDS) == band


def test_interpretation_of_no_score_is_none():
    assert interpretation(None, BLEU_BANDS) is None


def test_a_metric_without_bands_has_no_interpretation():
    assert interpretation(75.0, REGISTRY["ter"].bands) is None


def test_report_module_does_not_import_pyspark():
    code = "import sys, bleu_spark.report; sys.exit('pyspark' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_plotly_is_embedded_once_and_nothing_is_linked(scores):
    from bleu_spark.report.plotlyjs import plotly_js

    page = render_report(scores, group_cols=GROUP_COLS)
    assert page.count(plotly_js()[:200]) == 1
    assert "<link" not in page and "<script src" not in page
    assert len(page.encode()) < 1_500_000  # the basic bundle's 1.2 MB, not the full one's 4.8 MB


def test_the_vendored_basic_bundle_is_the_plotly_js_the_figures_are_built_for():
    from plotly.offline import get_plotlyjs_version

    from bleu_spark.report.plotlyjs import basic_bundle, bundle_version, plotly_js

    assert bundle_version(basic_bundle()) == get_plotlyjs_version()
    assert plotly_js() == basic_bundle() and len(plotly_js()) < 1_300_000


def test_another_plotly_gets_its_own_full_bundle(monkeypatch):
    from plotly.offline import get_plotlyjs

    from bleu_spark.report import plotlyjs

    monkeypatch.setattr(plotlyjs, "get_plotlyjs_version", lambda: "0.0.1")
    plotlyjs.plotly_js.cache_clear()
    try:
        assert plotlyjs.plotly_js() == get_plotlyjs()
    finally:
        plotlyjs.plotly_js.cache_clear()


# ---- the rendered page ----

@pytest.fixture(scope="module")
def browser(shot):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=shot.CHROMIUM, args=shot.CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


class Opened:
    """A page opened from a file, with every request it made."""

    def __init__(self, browser, tmp_path, html):
        path = tmp_path / "report.html"
        path.write_text(html, encoding="utf-8")
        self.requests = []
        self.errors = []
        self.page = browser.new_page(viewport={"width": 1200, "height": 900})
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
        self.page.goto("file://" + str(path), wait_until="load")

    def texts(self, selector):
        return self.page.eval_on_selector_all(selector, "nodes => nodes.map(n => n.textContent.trim())")

    def column(self, section, index):
        return self.texts(f"#section-{section} table.scores tbody tr td:nth-child({index})")

    def count(self, selector):
        return self.page.eval_on_selector_all(selector, "nodes => nodes.length")


@pytest.fixture
def open_report(browser, tmp_path):
    opened = []

    def open_page(scores, **options):
        page = Opened(browser, tmp_path, render_report(scores, **options))
        opened.append(page)
        return page

    yield open_page
    for page in opened:
        assert page.errors == []
        page.page.close()


def by_langpair(scores):
    sections = {}
    for row in scores:
        sections.setdefault(row["langpair"], []).append(row)
    return [sections[lp] for lp in sorted(sections)]


@pytest.mark.browser
def test_every_system_has_a_row_and_a_bar_ranked_by_score(open_report, scores):
    report = open_report(scores, group_cols=GROUP_COLS)
    sections = by_langpair(scores)
    assert report.texts("section h2") == sorted(LANGPAIRS)
    for number, rows in enumerate(sections):
        ranked = [r["system"] for r in sorted(rows, key=lambda r: -r["score"])]
        assert report.column(number, SYSTEM) == ranked
        assert report.column(number, SCORE) == [f"{r['score']:.2f}" for r in sorted(rows, key=lambda r: -r["score"])]
        assert report.column(number, RANK) == [str(i) for i in range(1, len(rows) + 1)]
        bars = report.page.eval_on_selector_all(
            f"#bars-{number} .barlayer .point path",
            "paths => paths.map(p => { const box = p.getBoundingClientRect(); return [box.top, box.width]; })")
        assert len(bars) == len(rows)
        widths_top_down = [width for _, width in sorted(bars)]
        assert widths_top_down == sorted(widths_top_down, reverse=True) and widths_top_down[-1] > 0
        # a bar is labelled by its score alone: its band is its colour, named once in the legend
        labels = report.texts(f"#bars-{number} .annotation-text")
        assert sorted(labels) == sorted(f"{r['score']:.2f}" for r in rows)


@pytest.mark.browser
def test_no_network_request_is_made(open_report, scores):
    report = open_report(scores, group_cols=GROUP_COLS, run={"run_id": "r1", "rows": {"read": 3}})
    assert report.requests, "the request recorder saw nothing, not even the page itself"
    assert [url for url in report.requests if not url.startswith(LOCAL_SCHEMES)] == []


@pytest.mark.browser
def test_the_request_recorder_sees_a_remote_load(browser, tmp_path):
    # The check above passes only because the page loads nothing remote, not because remote
    # loads go unseen: the same recorder catches one.
    html = '<!DOCTYPE html><img src="http://127.0.0.1:9/remote.png">'
    opened = Opened(browser, tmp_path, html)
    assert [url for url in opened.requests if not url.startswith(LOCAL_SCHEMES)] == ["http://127.0.0.1:9/remote.png"]
    opened.page.close()


@pytest.mark.browser
def test_a_header_click_sorts_ascending_then_descending(open_report, scores, sample_rows):
    # One group scored on its first 9 segments: n_segments 9 sorts before 151 only numerically.
    short = score_row("cs-en", "Online-W (9 segments)", sample_rows[("cs-en", "Online-W")][:9])
    rows = [r for r in scores if r["langpair"] == "cs-en"] + [short]
    report = open_report(rows, group_cols=GROUP_COLS)
    before = report.column(0, SYSTEM)
    ranked = [float(text) for text in report.column(0, SCORE)]
    header = report.page.locator("#section-0 table.scores th", has_text="n_segments")
    header.click()
    assert report.column(0, N_SEGMENTS)[0] == "9" and report.column(0, SYSTEM)[0] == short["system"]
    report.page.locator("#section-0 table.scores th", has_text="BLEU").click()
    ascending = [float(text) for text in report.column(0, SCORE)]
    assert ascending == sorted(ranked) != ranked
    report.page.locator("#section-0 table.scores th", has_text="BLEU").click()
    descending = [float(text) for text in report.column(0, SCORE)]
    assert descending == ranked
    report.page.locator("#section-0 table.scores th", has_text="system").click()
    assert report.column(0, SYSTEM) == sorted(before, key=str.lower) != before


@pytest.mark.browser
def test_bands_at_boundary_scores_are_shown(open_report, scores):
    real = scores[0]
    rows = [dict(real, system=f"at {score}", score=score) for score, _ in BAND_AT]
    report = open_report(rows, group_cols=GROUP_COLS)
    # each row's band is its swatch's colour, named in the swatch's title and once in the legend
    names = report.page.eval_on_selector_all("#section-0 td.score .swatch", "ns => ns.map(n => n.title)")
    assert dict(zip(report.column(0, SYSTEM), names)) == {f"at {score}": band for score, band in BAND_AT}
    legend = " ".join(report.texts(".legend li"))
    text = report.page.inner_text("main")
    for _, band in BAND_AT:
        assert band in legend and text.count(band) == 1


@pytest.mark.browser
def test_interval_whiskers_are_drawn_when_given(open_report, scores):
    rows = [r for r in scores if r["langpair"] == "de-en"]
    with_ci = [dict(r, ci_low=r["score"] - 1.5, ci_high=r["score"] + 1.25) for r in rows]
    report = open_report(with_ci, group_cols=GROUP_COLS)
    whiskers = report.page.eval_on_selector_all(
        "#bars-0 .errorbar path.xerror", "paths => paths.filter(p => p.getAttribute('d')).length")
    assert whiskers == len(rows)
    plain = open_report(rows, group_cols=GROUP_COLS)
    assert plain.count("#bars-0 .errorbar path.xerror") == 0


def history_rows(sample_rows, langpair):
    """A score per system on three dates: its first 50, then 100 segments, then all of them."""
    dates = [(datetime.date(2024, 1, 1), 50), (datetime.date(2024, 2, 1), 100), (datetime.date(2024, 3, 1), None)]
    return [score_row(lp, system, rows[:upto], day=day)
            for (lp, system), rows in sorted(sample_rows.items()) if lp == langpair for day, upto in dates]


@pytest.mark.browser
def test_time_chart_has_one_line_per_system(open_report, scores, sample_rows):
    history = history_rows(sample_rows, "en-de")
    systems = {r["system"] for r in history}
    report = open_report(scores, group_cols=GROUP_COLS, history=history, time_col="day")
    en_de = sorted(LANGPAIRS).index("en-de")
    assert report.count(f"#time-{en_de}") == 1 and report.count(".chart.time") == 1
    lines = report.page.eval_on_selector_all(
        f"#time-{en_de} .scatterlayer .trace path.js-line", "paths => paths.filter(p => p.getAttribute('d')).length")
    assert lines == len(systems)
    assert sorted(report.texts(f"#time-{en_de} .legendtext")) == sorted(systems)


@pytest.mark.browser
def test_no_time_chart_with_a_single_date(open_report, scores, sample_rows):
    one_day = [r for r in history_rows(sample_rows, "en-de") if r["day"] == datetime.date(2024, 3, 1)]
    report = open_report(scores, group_cols=GROUP_COLS, history=one_day, time_col="day")
    assert report.count(".chart.time") == 0 and report.count(".chart.bars") == len(LANGPAIRS)


HOSTILE = ['<img src=x onerror="window.pwned = 1">', "<script>window.pwned = 2</script>", "A & B \"<b>\"",
           "</script><script>window.pwned = 5</script>", "<b>bold</b>"]
HOSTILE_PAIR = "</script><b>xx-yy</b>"


@pytest.mark.browser
def test_hostile_names_are_shown_as_text(open_report, scores):
    real = [r for r in scores if r["langpair"] == "cs-en"]
    rows = [dict(real[i], system=name, langpair=pair) for i, name in enumerate(HOSTILE)
            for pair in ("cs-en", HOSTILE_PAIR)]
    report = open_report(rows, group_cols=GROUP_COLS, title='<img src=x onerror="window.pwned = 3">',
                         run={"run_id": "<img src=x onerror=\"window.pwned = 4\">"})
    report.page.wait_for_timeout(200)  # an onerror of a broken image would have run by now
    assert report.page.evaluate("window.pwned") is None
    assert report.count("img") == 0 and report.count("main script, main b") == 0
    assert report.texts("section h2") == [HOSTILE_PAIR, "cs-en"]
    for section in range(2):
        assert sorted(report.column(section, SYSTEM)) == sorted(HOSTILE)
        assert sorted(report.texts(f"#bars-{section} .ytick text")) == sorted(HOSTILE)
    assert sorted(report.texts("#overview td.label")) == sorted(HOSTILE)
    assert report.texts("#overview thead th a") == [HOSTILE_PAIR, "cs-en"]
    assert report.texts("nav.contents li") == [HOSTILE_PAIR, "cs-en"]
    assert report.texts("h1") == ['<img src=x onerror="window.pwned = 3">']


@pytest.mark.browser
def test_flags_for_rejections_coverage_and_unscored_groups(open_report, scores):
    rows = [dict(r) for r in scores if r["langpair"] == "cs-en"]
    rows[0].update(n_rejected=4, coverage=0.9737)
    rows[1].update(score=None, signature=None, verbose=None, n_segments=0, n_rejected=151)
    report = open_report(rows, group_cols=GROUP_COLS)
    # a coverage column (5) is shown, as a row has a coverage
    assert report.texts("#section-0 table.scores th")[4] == "coverage"
    table = dict(zip(report.column(0, SYSTEM), zip(report.column(0, SCORE), report.column(0, 5), report.column(0, 6))))
    assert table[rows[0]["system"]] == (f"{rows[0]['score']:.2f}", "⚠ 97.4%", "⚠ 4")
    assert table[rows[1]["system"]] == ("—", "—", "⚠ 151")
    assert report.count("#bars-0 .barlayer .point path") == len(rows) - 1
    assert rows[1]["system"] not in report.texts("#bars-0 .ytick text")
    flags = report.texts("#section-0 .flag")
    assert flags == ["⚠ 2 with rejected rows", "⚠ 1 below 100% coverage"]
    assert report.texts("#section-0 .signature code") == [rows[0]["signature"]]


@pytest.mark.browser
def test_run_facts_are_shown(open_report, scores):
    run = {"run_id": "run-42", "time": "2024-03-01T10:00:00", "input": "s3://bucket/wmt22",
           "rows": {"read": 1000, "scored": 990, "rejected": 10}}
    report = open_report(scores, group_cols=GROUP_COLS, run=run)
    facts = dict(zip(report.texts(".run dt"), report.texts(".run dd")))
    assert facts == {"run": "run-42", "time": "2024-03-01T10:00:00", "input": "s3://bucket/wmt22",
                     "rows read": "1000", "rows scored": "990", "rows rejected": "10"}


@pytest.mark.browser
def test_paired_tests_star_the_significant(open_report, scores):
    systems = [r["system"] for r in scores if r["langpair"] == "de-en"]
    paired = [{"langpair": "de-en", "system": systems[1], "baseline": systems[0], "test": "paired-bs",
               "delta": 1.234, "p_value": 0.001, "delta_ci_low": 0.5, "delta_ci_high": 2.0},
              {"langpair": "de-en", "system": systems[2], "baseline": systems[0], "test": "paired-bs",
               "delta": -0.2, "p_value": 0.4}]
    report = open_report(scores, group_cols=GROUP_COLS, paired=paired)
    de_en = sorted(LANGPAIRS).index("de-en")
    assert report.count("table.paired") == 1
    rows = report.texts(f"#section-{de_en} table.paired tbody tr")
    assert len(rows) == 2
    assert rows[0].startswith(systems[1]) and "+1.23" in rows[0] and rows[0].endswith("0.0010 *")
    assert "-0.20" in rows[1] and rows[1].endswith("0.4000")


@pytest.mark.browser
def test_one_section_without_a_langpair_column(open_report, scores):
    rows = [{k: v for k, v in r.items() if k != "langpair"} for r in scores if r["langpair"] == "cs-en"]
    report = open_report(rows, group_cols=["system"])
    assert report.texts("section h2") == ["All systems"]
    assert sorted(report.column(0, SYSTEM)) == sorted(r["system"] for r in rows)
    assert report.count("#bars-0 .barlayer .point path") == len(rows)


# ---- the overview, the contents and the folds, at 1, 10 and 200 systems a pair ----

PAIRS = ["de-en", "en-de", "en-zh"]


@pytest.fixture(scope="module")
def many(shot, scores):
    """Score rows of N systems in each of PAIRS, BLEU and TER, scores drawn at random."""
    return lambda systems: shot.many_systems(scores[0], systems, PAIRS, metrics=("bleu", "ter"), seed=systems)


def targets(report, selector):
    """The element id each link under `selector` points to, and whether that element exists."""
    return report.page.eval_on_selector_all(selector, """links => links.map(a => {
        const id = a.getAttribute("href").slice(1);
        return [id, document.getElementById(id) !== null]; })""")


def section_title(report, anchor):
    return report.page.text_content(f"#{anchor} h2").strip()


@pytest.mark.browser
@pytest.mark.parametrize("systems", [1, 10, 200])
def test_the_overview_links_every_score_to_its_section(open_report, many, systems):
    rows = many(systems)
    report = open_report(rows, group_cols=GROUP_COLS)
    sections = report.page.eval_on_selector_all("section", "ns => ns.map(n => n.id)")
    assert len(sections) == len(PAIRS) * 2
    # a matrix per metric, a column per language pair, its best rows shown and the rest folded
    assert report.texts(".switch button") == ["BLEU", "TER"]
    assert report.count("#overview .metric-matrix") == 2
    shown = min(systems, TOP)
    for matrix, title in ((0, "BLEU"), (1, "TER")):
        heads = report.texts(f"#matrix-{matrix} > .table-wrap thead th a")
        assert heads == PAIRS
        assert report.count(f"#matrix-{matrix} > .table-wrap tbody tr") == shown
        assert report.count(f"#matrix-{matrix} details tbody tr") == systems - shown
        # every score links to the section of its language pair and metric, and is its score there
        links = targets(report, f"#matrix-{matrix} td.cell a")
        assert len(links) == len(PAIRS) * systems and all(found for _, found in links)
        cells = report.page.eval_on_selector_all(f"#matrix-{matrix} > .table-wrap tbody tr", """rows => rows.map(r =>
            [r.querySelector("td.label").textContent, Array.from(r.querySelectorAll("td.cell a")).map(a => [a.getAttribute("href").slice(1), a.textContent])])""")
        for system, linked in cells:
            assert len(linked) == len(PAIRS)
            for pair, (anchor, score) in zip(PAIRS, linked):
                assert section_title(report, anchor) == f"{pair} · {title}"
                mine = [r for r in rows if (r["langpair"], r["system"], r["metric"]) == (pair, system, title.lower())]
                assert score == f"{mine[0]['score']:.2f}"


@pytest.mark.browser
@pytest.mark.parametrize("systems", [1, 10, 200])
def test_contents_bands_once_and_the_best_systems_shown(open_report, many, systems):
    rows = many(systems)
    report = open_report(rows, group_cols=GROUP_COLS)
    sections = report.page.eval_on_selector_all("section", "ns => ns.map(n => n.id)")
    # the contents link every section once, and the overview and the guide to the bands
    links = targets(report, "nav.contents a")
    assert all(found for _, found in links)
    assert sorted(anchor for anchor, _ in links) == sorted(sections + ["overview", "reading"])
    assert report.texts("nav.contents li") == [f"{pair}BLEUTER" for pair in PAIRS]
    # the bands explained once, with their source; a section counts its systems
    assert report.count(".legend") == 1 and report.count("#reading a[href^='https://']") == 1
    text = report.page.inner_text("main")
    for band in (b[2] for b in BLEU_BANDS):
        assert text.count(band) == 1
    assert text.count("compare scores within a section only") == 1
    shown = min(systems, TOP)
    noun = "system" if systems == 1 else "systems"
    for number in range(len(sections)):
        summary = report.texts(f"#section-{number} .summary")[0]
        assert summary.startswith(f"{systems} {noun}") and "group" not in summary
        assert report.count(f"#bars-{number} .barlayer .point path") == shown
        top = report.texts(f"#section-{number} > .table-wrap table.scores tbody td:nth-child({RANK})")
        assert top == [str(i) for i in range(1, shown + 1)]
        assert report.count(f"#section-{number} details tbody tr") == systems - shown
        assert report.count(f"#section-{number} .signature code") == 1
        headers = report.texts(f"#section-{number} > .table-wrap table.scores th")
        assert headers == ["#", "system", section_title(report, sections[number]).split(" · ")[1], "n_segments",
                           "n_rejected"]  # no coverage column, no signature column


@pytest.mark.browser
def test_two_hundred_systems_make_a_page_of_bounded_height(open_report, many):
    rows = many(200)
    report = open_report(rows, group_cols=GROUP_COLS)
    height = report.page.evaluate("document.documentElement.scrollHeight")
    # the best 20 of a section: its bars and rows; the other 180 folded, closed
    assert height < 2500 + len(PAIRS) * 2 * 1700, height
    report.page.click("#section-0 details summary")
    opened = report.page.evaluate("document.documentElement.scrollHeight")
    assert opened > height + 180 * 20  # the folded rows are there, a row high each


@pytest.mark.browser
def test_the_metric_switch_shows_one_matrix_at_a_time(open_report, many):
    report = open_report(many(10), group_cols=GROUP_COLS)
    visible = lambda: report.page.eval_on_selector_all(
        ".metric-matrix", "ms => ms.map(m => m.getBoundingClientRect().height > 0)")
    assert visible() == [True, False]
    report.page.click(".switch button:text('TER')")
    assert visible() == [False, True]
    # TER: lower is better, so the darkest cell of a column is its lowest score
    column = report.page.eval_on_selector_all(
        "#matrix-1 > .table-wrap tbody td.cell:nth-child(3)",
        "cells => cells.map(c => [parseFloat(c.textContent), c.classList.contains('dark')])")
    lowest = min(score for score, _ in column)
    assert dict(column)[lowest] is True and dict(column)[max(score for score, _ in column)] is False


@pytest.mark.browser
def test_the_baseline_is_marked_where_its_system_shows(open_report, scores):
    systems = [r["system"] for r in scores if r["langpair"] == "de-en"]
    paired = [{"langpair": "de-en", "system": s, "baseline": systems[0], "test": "paired-bs", "delta": 0.5,
               "p_value": 0.2} for s in systems[1:]]
    report = open_report(scores, group_cols=GROUP_COLS, paired=paired)
    de_en = sorted(LANGPAIRS).index("de-en")
    assert report.texts(f"#section-{de_en} h3") == ["Scores", f"Paired tests against the baseline: {systems[0]}"]
    marked = report.texts(f"#section-{de_en} table.scores tr.baseline td:nth-child({SYSTEM})")
    assert marked == [f"{systems[0]}baseline"]
    assert report.count(f"section:not(#section-{de_en}) tr.baseline") == 0
    assert [t for t in report.texts(f"#bars-{de_en} .annotation-text") if "baseline" in t] == \
        [f"{next(r['score'] for r in scores if r['system'] == systems[0] and r['langpair'] == 'de-en'):.2f}  baseline"]
    assert report.texts("#overview td.label .tag") == ["baseline"]


@pytest.mark.browser
def test_a_partitioned_report_names_the_partitions_it_covers(open_report, scores):
    days = [datetime.date(2026, 1, day) for day in (3, 1, 2)]
    report = open_report(scores, group_cols=GROUP_COLS, run={"run_id": "r3", "input": "day3.parquet"},
                         partitions={"run_date": days})
    assert report.texts(".run .caption") == ["Last run:", "The scores cover every partition:"]
    assert dict(zip(report.texts(".partitions dt"), report.texts(".partitions dd"))) == \
        {"run_date": "2026-01-01, 2026-01-02, 2026-01-03 (3 partitions)"}
    daily = open_report(scores, group_cols=GROUP_COLS, partitions={"run_date": [f"2026-02-{d:02d}" for d in range(1, 29)]})
    assert daily.texts(".partitions dd") == ["2026-02-01 … 2026-02-28 (28 partitions)"]
    plain = open_report(scores, group_cols=GROUP_COLS, run={"run_id": "r3"})
    assert plain.count(".partitions") == 0 and plain.count(".run .caption") == 0


@pytest.mark.browser
def test_groups_of_several_columns_are_counted_as_groups(open_report, scores):
    rows = [dict(r, domain="news") for r in scores if r["langpair"] == "cs-en"]
    report = open_report(rows, group_cols=["langpair", "system", "domain"])
    assert report.texts("#section-0 .summary")[0].startswith(f"{len(rows)} groups")
    assert report.texts("#overview td.label")[0].endswith(" · news")


# ---- clusters: what the page says one is ----

def chained_cluster(template):
    """20 systems whose rank ranges each overlap their neighbours', from 1-2 down to 16-20:
    one cluster, as bleu_spark.resampling.clusters numbers it."""
    import numpy as np

    from bleu_spark.resampling.clusters import cluster_numbers

    low = np.array([1] + [max(1, i - 2) for i in range(2, 20)] + [16])
    high = np.array([2] + [min(20, i + 2) for i in range(2, 20)] + [20])
    clusters = cluster_numbers(np.arange(20), low, high)
    return [dict(template, system=f"sys-{i + 1:02d}", score=60.0 - i, rank=i + 1, rank_low=int(low[i]),
                 rank_high=int(high[i]), cluster=int(clusters[i])) for i in range(20)]


@pytest.mark.browser
def test_the_overview_says_what_a_cluster_is_where_one_chains(open_report, scores):
    rows = chained_cluster(scores[0])
    report = open_report(rows, group_cols=GROUP_COLS)
    cells = report.page.eval_on_selector_all(
        "#overview td.cell sup.cluster", "sups => sups.map(s => [s.textContent, s.title])")
    # the best and the worst system: ranges far apart, one cluster
    assert cells[0] == ["1", "cluster 1, rank range 1–2"] and cells[-1] == ["1", "cluster 1, rank range 16–20"]
    summary = report.page.inner_text("#overview .summary")
    assert "not told apart" not in summary
    assert ("a new cluster starts where every system below has a rank range (over the bootstrap's "
            "resamples) wholly below the rank range of every system above") in summary
    assert "Systems of one cluster are not all tied" in summary


# ---- the bar axis fits every bar ----

def bar_geometry(report, chart):
    """A bar chart's plot area, its bars, whiskers and labels (left, right in pixels), its svg's
    right edge and its x axis' tick values."""
    return report.page.evaluate("""id => {
        const chart = document.getElementById(id);
        const span = e => { const b = e.getBoundingClientRect(); return [b.left, b.right]; };
        const all = s => Array.from(chart.querySelectorAll(s));
        return {plot: span(chart.querySelector(".draglayer .xy .nsewdrag")),
                svg: span(chart.querySelector("svg.main-svg")),
                bars: all(".barlayer .point path").map(span),
                whiskers: all(".errorbar path.xerror").filter(p => p.getAttribute("d")).map(span),
                labels: all(".annotation").map(span),
                ticks: all(".xtick text").map(t => parseFloat(t.textContent.replace(/,/g, "")))};
    }""", chart)


@pytest.mark.parametrize("bars,ticks,axis_end", [
    ([(62.5, None)], (0, 100, 10), 112),                # the usual scale, whatever the metric
    ([(95.0, (90.0, 99.0))], (0, 100, 10), 129),        # the longest whisker keeps its label's room
    ([(897.92, None), (40.0, None)], (0, 900, 100), 1167.92),
    ([(2.0, (-3.5, 6.0))], (-20, 100, 20), 114.4),      # a whisker below 0 starts the axis below it
])
def test_the_bar_axis_reaches_every_bar_and_its_label(bars, ticks, axis_end):
    from bleu_spark.report.charts import _score_axis
    from bleu_spark.report.sections import Group

    groups = [Group({}, "g", {"score": score, "ci_low": ci and ci[0], "ci_high": ci and ci[1]}) for score, ci in bars]
    axis = _score_axis(groups)
    first, last, step = ticks
    assert axis["tickvals"] == pytest.approx(list(range(first, last + 1, step)))
    assert axis["range"] == pytest.approx([first, axis_end])


@pytest.mark.browser
def test_the_bar_axis_fits_every_bar_and_label(open_report, shot, scores):
    # TER passes 100 (193.45 on WMT22's en-ja): bars far past it, where lower is better, and
    # their whiskers; the other sections keep the axis 0-100.
    ter = shot.metric_scores("ter", langpairs=["cs-en", "de-en"])
    ter = [dict(r, ci_low=r["score"] - 2.0, ci_high=r["score"] + 3.0) for r in ter]
    high = [dict(r, score=s, ci_low=s - 20.0, ci_high=s + 30.0) for r, s in
            zip((r for r in ter if r["langpair"] == "de-en"), (897.92, 412.5, 150.0, 99.0))]
    rows = [r for r in ter if r not in high and r["langpair"] == "cs-en"] + high
    rows += [dict(r, metric="bleu") for r in scores if r["langpair"] == "cs-en"]
    report = open_report(rows, group_cols=GROUP_COLS)
    charts = dict(zip((section_title(report, a) for a in report.page.eval_on_selector_all(
        "section", "ns => ns.map(n => n.id)")), ("bars-0", "bars-1", "bars-2")))
    for title, chart in charts.items():
        mine = [r for r in rows if f"{r['langpair']} · {REGISTRY[r['metric']].title}" == title]
        shape = bar_geometry(report, chart)
        (left, right), svg_right = shape["plot"], shape["svg"][1]
        assert len(shape["bars"]) == len(mine) and shape["labels"]
        for bar_left, bar_right in shape["bars"] + shape["whiskers"]:
            assert left - 0.5 <= bar_left and bar_right <= right + 0.5, (title, shape)
        assert all(label_right <= svg_right for _, label_right in shape["labels"]), (title, shape)
        # numbered from 0 up to the first tick past the longest whisker (927.92: 1000), at most 11 ticks
        top, ticks = max(r.get("ci_high", r["score"]) for r in mine), shape["ticks"]
        assert ticks == ([10.0 * i for i in range(11)] if top <= 100 else [100.0 * i for i in range(11)]), \
            (title, ticks)


# ---- the embedded plotly.js draws every kind of chart ----

@pytest.mark.browser
def test_the_error_recorder_sees_a_console_error(browser, tmp_path):
    # `open_report` finds no console error on the report's pages, and would see one.
    opened = Opened(browser, tmp_path, '<!DOCTYPE html><script>console.error("drawn wrong")</script>')
    assert opened.errors == ["drawn wrong"]
    opened.page.close()


def drilldown_of(rows, baseline):
    """Segments of each system: its two worst and 30 points against the baseline."""
    worst = [dict(langpair=r["langpair"], system=r["system"], candidate=f"segment {i}", sentence_score=5.0 * i)
             for r in rows for i in range(2)]
    points = [dict(langpair=r["langpair"], system=r["system"], sentence_score=(7 * i + n) % 100,
                   baseline_score=(11 * i) % 100) for n, r in enumerate(rows) if r["system"] != baseline
              for i in range(30)]
    return {"columns": ["candidate"], "worst": worst, "losses": [], "points": points, "baseline": baseline}


@pytest.mark.browser
def test_every_chart_is_drawn_by_the_embedded_plotly(open_report, scores, sample_rows):
    from plotly.offline import get_plotlyjs_version

    rows = [dict(r, ci_low=r["score"] - 1.0, ci_high=r["score"] + 1.0) for r in scores if r["langpair"] == "en-de"]
    history = history_rows(sample_rows, "en-de")
    report = open_report(rows, group_cols=GROUP_COLS, history=history, time_col="day",
                         drilldown=drilldown_of(rows, rows[0]["system"]))
    assert report.page.evaluate("window.Plotly.version") == get_plotlyjs_version()
    drawn = lambda selector: report.page.eval_on_selector_all(
        selector, "nodes => nodes.filter(n => n.getAttribute('d') && n.getBoundingClientRect().width > 0).length")
    assert drawn("#bars-0 .barlayer .point path") == len(rows)
    assert drawn("#bars-0 .errorbar path.xerror") == len(rows)
    assert len(report.texts("#bars-0 .annotation-text")) == len(rows)
    assert drawn("#time-0 .scatterlayer .trace path.js-line") == len({r["system"] for r in history})
    assert drawn("#scatter-0 .scatterlayer path.point") == 30 * (len(rows) - 1)
    assert drawn("#scatter-0 .scatterlayer .trace path.js-line") == 1  # the diagonal
    assert report.count(".chart") == 3 and report.count(".chart:not(:has(.main-svg))") == 0
    # no page error nor console error: `open_report` checks both as it closes the page


@pytest.mark.browser
def test_a_lower_is_better_segment_score_and_a_check_rank_lowest_first_without_bands(open_report, scores):
    """Score rows of a MetricX-like column (lower is better) and of the off_target check beside
    BLEU's: each has a section of its own, titled by its name, ranked lowest first, and no band."""
    from bleu_spark.metrics.checks import OffTarget
    from bleu_spark.metrics.means import SegmentScore
    from bleu_spark.scoring import ScoreRow

    metricx, off_target = SegmentScore("metricx", "lower"), OffTarget(recorded="kind:check")
    rows = [r for r in scores if r["langpair"] == "de-en"]
    extra = []
    for i, row in enumerate(rows):
        for measured, value in ((metricx, 3.0 + (i * 7 % 5) / 2), (off_target, (i * 3 % 4) * 0.5)):
            made = ScoreRow({**row, "metric": measured.name, "score": value, "tokenize": None,
                             "signature": measured.signature(), "verbose": f"{value:.2f}"})
            made.measured = measured
            extra.append(made)
    report = open_report([dict(r, metric="bleu") for r in rows] + extra, group_cols=GROUP_COLS)
    titles = report.texts("section h2")
    assert titles == ["de-en · BLEU", "de-en · off_target", "de-en · metricx"]
    for number, name in ((1, "off_target"), (2, "metricx")):
        mine = sorted((r for r in extra if r["metric"] == name), key=lambda r: (r["score"], r["system"]))
        shown = [float(s) for s in report.column(number, SCORE)]
        assert shown == sorted(shown) and shown == [round(r["score"], 2) for r in mine]
    # one band legend, BLEU's: the segment score and the check have no bands
    assert report.count("ul.legend") == 1
    assert [t for t in report.texts("p") if t.startswith("The colours of")][0].startswith("The colours of BLEU bars")
