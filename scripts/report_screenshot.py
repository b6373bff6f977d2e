"""Save a PNG of a bleu-spark HTML report as headless Chromium draws it.

    python scripts/report_screenshot.py HTML PNG [--max-height PX]
    python scripts/report_screenshot.py --sample HTML PNG --max-height 5200   # makes docs/report.png

`--sample` scores every (langpair, system) group of samples/wmt22_sample.parquet in-process
with `bleu_spark.corpus_bleu` and first renders the report of all 112 groups to HTML. A page
taller than --max-height is cut after the last section that fits. The browser is Debian's Chromium (/usr/bin/chromium), driven by Playwright.
"""
import argparse
import os
import sys
from collections import defaultdict
from contextlib import contextmanager
from typing import Iterable, List, Optional

import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "samples", "wmt22_sample.parquet")
CHROMIUM = "/usr/bin/chromium"
# No sandbox (runs as root in containers); no GPU; and none of Chromium's own background traffic,
# so that every request a page makes is the page's.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1200, "height": 900}


def sample_scores(path: str = SAMPLE, langpairs: Optional[Iterable[str]] = None) -> List[dict]:
    """Score rows of the sample per (langpair, system), shaped as the job's scores.json rows."""
    from bleu_spark import corpus_bleu

    wanted = set(langpairs) if langpairs is not None else None
    groups = defaultdict(list)
    for row in pq.read_table(path, columns=["langpair", "system", "seg_id", "candidate", "references"]).to_pylist():
        if wanted is None or row["langpair"] in wanted:
            groups[(row["langpair"], row["system"])].append(row)
    scores = []
    for (langpair, system), rows in sorted(groups.items()):
        rows.sort(key=lambda r: r["seg_id"])
        result = corpus_bleu([r["candidate"] for r in rows], [r["references"] for r in rows], langpair=langpair)
        scores.append({"langpair": langpair, "system": system, "score": result.score,
                       "n_segments": result.n_segments, "n_rejected": 0, "coverage": None,
                       "signature": result.signature, "tokenize": result.tokenize, "verbose": result.verbose})
    return scores


def write_sample_report(html_path: str) -> None:
    from bleu_spark.report import render_report

    scores = sample_scores()
    run = {"input": os.path.relpath(SAMPLE, ROOT),
           "rows": {"read": sum(r["n_segments"] for r in scores),
                    "scored": sum(r["n_segments"] for r in scores), "rejected": 0}}
    page = render_report(scores, group_cols=["langpair", "system"], title="bleu-spark: WMT22 sample", run=run)
    with open(html_path, "w", encoding="utf-8") as handle:
        handle.write(page)


@contextmanager
def chromium_page():
    """A page of a fresh headless Chromium, closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser.new_page(viewport=VIEWPORT)
        finally:
            browser.close()


def file_url(path: str) -> str:
    return "file://" + os.path.abspath(path)


def screenshot(html_path: str, png_path: str, max_height: int) -> None:
    with chromium_page() as page:
        page.goto(file_url(html_path), wait_until="load")
        page.wait_for_selector(".chart .main-svg")
        clip = {"x": 0, "y": 0, "width": VIEWPORT["width"], "height": crop_height(page, max_height)}
        page.screenshot(path=png_path, full_page=True, clip=clip)


def crop_height(page, max_height: int) -> int:
    """The page's height, or if taller than max_height, the end of the last section that fits."""
    height = page.evaluate("document.documentElement.scrollHeight")
    if height <= max_height:
        return height
    ends = page.eval_on_selector_all(
        "section", "nodes => nodes.map(n => n.getBoundingClientRect().bottom + window.scrollY)")
    fitting = [round(end) + 16 for end in ends if end + 16 <= max_height]
    return max(fitting) if fitting else max_height


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html")
    parser.add_argument("png")
    parser.add_argument("--sample", action="store_true", help="first write HTML: the bundled sample's report")
    parser.add_argument("--max-height", type=int, default=100_000, help="crop the page to this many pixels")
    args = parser.parse_args(argv)
    if args.sample:
        write_sample_report(args.html)
    screenshot(args.html, args.png, args.max_height)
    print(args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
