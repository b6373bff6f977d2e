"""bleu_spark.report: the page as a person sees it, rendered by headless Chromium.

The inputs are real scores: groups of the bundled sample scored in-process with corpus_bleu.
"""
import datetime
import importlib.util
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from bleu_spark import corpus_bleu
from bleu_spark.metrics import REGISTRY
from bleu_spark.report import TOP, interpretation, render_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
    result = corpus_bleu([r["candidate"] for r in rows], [r["references"] for r in rows], langpair=langpair)
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
    from plotly.offline import get_plotlyjs

    page = render_report(scores, group_cols=GROUP_COLS)
    assert page.count(get_plotlyjs()[:200]) == 1
    assert "<link" not in page and "<script src" not in page


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


HOSTILE = ['<img src=x onerror="window.pwned = 1">', "<script>window.pwned = 2</script>", "A & B \"<b>\""]


@pytest.mark.browser
def test_hostile_names_are_shown_as_text(open_report, scores):
    real = [r for r in scores if r["langpair"] == "cs-en"]
    rows = [dict(real[i], system=name) for i, name in enumerate(HOSTILE)]
    report = open_report(rows, group_cols=GROUP_COLS, title='<img src=x onerror="window.pwned = 3">',
                         run={"run_id": "<img src=x onerror=\"window.pwned = 4\">"})
    report.page.wait_for_timeout(200)  # an onerror of a broken image would have run by now
    assert report.page.evaluate("window.pwned") is None
    assert report.count("img") == 0 and report.count("main script, main b") == 0
    assert sorted(report.column(0, SYSTEM)) == sorted(HOSTILE)
    assert sorted(report.texts("#bars-0 .ytick text")) == sorted(HOSTILE)
    assert report.texts("h1") == ['<img src=x onerror="window.pwned = 3">']


@pytest.mark.browser
def test_flags_for_rejections_coverage_and_unscored_groups(open_report, scores):
    rows = [dict(r) for r in scores if r["langpair"] == "cs-en"]
    rows[0].update(n_rejected=4, coverage=0.9737)
    rows[1].update(score=None, signature=None, verbose=None, n_segments=0, n_rejected=151)
    report = open_report(rows, group_cols=GROUP_COLS)
    # a coverage column (5) is shown, as a row has a coverage
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
