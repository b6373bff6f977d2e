"""Save a PNG of a bleu-spark HTML report as headless Chromium draws it.

    python scripts/report_screenshot.py HTML PNG [--max-height PX]
    python scripts/report_screenshot.py --sample HTML PNG --max-height 5200     # docs/report.png
    python scripts/report_screenshot.py --overview HTML PNG --max-height 2400  # docs/report-overview.png
    python scripts/report_screenshot.py --many HTML PNG --max-height 3000      # docs/report-200-systems.png
    python scripts/report_screenshot.py --segments HTML PNG --max-height 1500  # docs/report-segments.png
    python scripts/report_screenshot.py --ter-axis HTML PNG --max-height 3000  # docs/report-ter-axis.png

`--sample` scores every (langpair, system) group of samples/wmt22_sample.parquet in-process
with `bleu_spark.bleu_of_rows` and first renders the report of all 112 groups to HTML.
`--overview` renders the sample's systems of four language pairs (9 to 11 each) in BLEU, chrF
and TER (scored in-process by the metric modules); `--many` renders 200 systems a language pair,
their scores drawn at random (fields of a real row). `--segments` runs `bleu-spark score
--segments --report` on the sample's de-en rows against the baseline Online-B and shows the first
section's segments, one system opened. `--ter-axis` renders the sample's TER of en-de and en-ja,
whose scores pass 100 (TER without --ter-asian-support on Japanese). A page taller than --max-height is cut after
the last section that fits. The browser is Debian's Chromium (/usr/bin/chromium), driven by
Playwright.
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
OVERVIEW_PAIRS = ("de-en", "en-de", "en-ru", "ru-en")  # 14 systems in all, 9 to 11 a pair
OVERVIEW_METRICS = ("bleu", "chrf", "ter")
MANY_PAIRS = ("de-en", "en-de", "en-zh")
TER_AXIS_PAIRS = ("en-de", "en-ja")  # en-ja's TER: 99.44 to 213.97 in the sample


def sample_groups(path: str = SAMPLE, langpairs: Optional[Iterable[str]] = None) -> dict:
    """The sample's rows per (langpair, system), in segment order."""
    wanted = set(langpairs) if langpairs is not None else None
    groups = defaultdict(list)
    for row in pq.read_table(path, columns=["langpair", "system", "seg_id", "candidate", "references"]).to_pylist():
        if wanted is None or row["langpair"] in wanted:
            groups[(row["langpair"], row["system"])].append(row)
    for rows in groups.values():
        rows.sort(key=lambda r: r["seg_id"])
    return groups


def sample_scores(path: str = SAMPLE, langpairs: Optional[Iterable[str]] = None) -> List[dict]:
    """Score rows of the sample per (langpair, system), shaped as the job's scores.json rows."""
    from bleu_spark import bleu_of_rows

    scores = []
    for (langpair, system), rows in sorted(sample_groups(path, langpairs).items()):
        result = bleu_of_rows([r["candidate"] for r in rows], [r["references"] for r in rows], langpair=langpair)
        scores.append({"langpair": langpair, "system": system, "score": result.score,
                       "n_segments": result.n_segments, "n_rejected": 0, "coverage": None,
                       "signature": result.signature, "tokenize": result.tokenize, "verbose": result.verbose})
    return scores


def metric_scores(name: str, path: str = SAMPLE, langpairs: Optional[Iterable[str]] = None) -> List[dict]:
    """Score rows of a metric without a tokenizer (chrF, TER, ...) per (langpair, system),
    summed from its segment statistics as the job sums them."""
    import pyarrow as pa

    from bleu_spark import metrics
    from bleu_spark.metrics.bleu import BleuConfig

    metric = metrics.configured([name], {}, BleuConfig())[0]
    scores = []
    for (langpair, system), rows in sorted(sample_groups(path, langpairs).items()):
        references = [[ref for ref in r["references"] if ref is not None] for r in rows]
        stats = metric.segment_statistics(pa.array([r["candidate"] for r in rows], pa.string()),
                                          pa.array(references, pa.list_(pa.string())))
        counts = [len(refs) for refs in references]
        result = metric.result(stats.sum(axis=0), {"n_segments": len(rows), "min_refs": min(counts),
                                                    "max_refs": max(counts)})
        scores.append(dict(result, langpair=langpair, system=system, metric=name, n_rejected=0,
                           coverage=None))
    return scores


def add_sample_clusters(scores: List[dict], path: str = SAMPLE, n_bootstrap: int = 1000,
                        seed: int = 12345) -> List[dict]:
    """The sample's score rows with rank ranges and clusters per language pair and metric, on
    sacrebleu's draws over each system's segment statistics (what `score --bootstrap-method
    sacrebleu --clusters` computes)."""
    import pyarrow as pa

    from bleu_spark import metrics
    from bleu_spark.languages import TextSettings
    from bleu_spark.metrics.bleu import BleuConfig
    from bleu_spark.resampling import clusters, sacrebleu_resample_scores
    from bleu_spark.tokenizers import LineTokenizer

    groups = sample_groups(path, {r["langpair"] for r in scores})
    replicates = []
    for row in scores:
        rows = groups[row["langpair"], row["system"]]
        metric = metrics.configured([row.get("metric", "bleu")], {}, BleuConfig())[0]
        tokenize = TextSettings().tokenizer_for(row["langpair"])
        references = [[ref for ref in r["references"] if ref is not None] for r in rows]
        stats = metric.segment_statistics(
            pa.array([r["candidate"] for r in rows], pa.string()),
            pa.array(references, pa.list_(pa.string())),
            LineTokenizer(tokenize, False, None) if metric.uses_tokenizer else None)
        replicates.append(sacrebleu_resample_scores(stats, metric, n_bootstrap, seed)[1])
    scores = [dict(r) for r in scores]
    clusters.add_clusters(scores, replicates, key_of=lambda r: (r["langpair"], r.get("metric", "bleu")),
                          name_of=lambda r: r["system"],
                          higher_is_better_of=lambda r: metrics.get(r.get("metric", "bleu")).higher_is_better)
    return scores


def many_systems(template: dict, systems: int, langpairs: Iterable[str], metrics=("bleu", "ter"),
                 seed: int = 0) -> List[dict]:
    """Score rows of `systems` systems in each language pair and metric: `template`'s fields,
    scores drawn at random (a metric where lower is better falling as the others rise)."""
    import random

    from bleu_spark.metrics import REGISTRY

    rng = random.Random(seed)
    rows = []
    for langpair in langpairs:
        for number in range(systems):
            quality = rng.uniform(5.0, 60.0)
            for name in metrics:
                lower = not REGISTRY[name].higher_is_better
                score = 100.0 - quality + rng.uniform(-5.0, 5.0) if lower else quality
                rows.append(dict(template, langpair=langpair, system=f"system-{number:03d}", metric=name,
                                 score=score, verbose=None, signature=template["signature"] if name == "bleu"
                                 else f"nrefs:1|{name}:synthetic"))
    return rows


def write_sample_report(html_path: str) -> None:
    from bleu_spark.report import render_report

    scores = sample_scores()
    run = {"input": os.path.relpath(SAMPLE, ROOT),
           "rows": {"read": sum(r["n_segments"] for r in scores),
                    "scored": sum(r["n_segments"] for r in scores), "rejected": 0}}
    page = render_report(scores, group_cols=["langpair", "system"], title="bleu-spark: WMT22 sample", run=run)
    write(html_path, page)


def write_overview_report(html_path: str) -> None:
    from bleu_spark.report import render_report

    scores = [dict(r, metric="bleu") for r in sample_scores(langpairs=OVERVIEW_PAIRS)]
    for name in OVERVIEW_METRICS[1:]:
        scores += metric_scores(name, langpairs=OVERVIEW_PAIRS)
    run = {"input": os.path.relpath(SAMPLE, ROOT) + " (4 language pairs)",
           "rows": {"read": sum(r["n_segments"] for r in scores if r["metric"] == "bleu")}}
    write(html_path, render_report(scores, group_cols=["langpair", "system"],
                                   title="bleu-spark: WMT22 sample, BLEU, chrF and TER", run=run))


def overview_scores() -> List[dict]:
    """The sample's rows of OVERVIEW_PAIRS in OVERVIEW_METRICS."""
    scores = [dict(r, metric="bleu") for r in sample_scores(langpairs=OVERVIEW_PAIRS)]
    for name in OVERVIEW_METRICS[1:]:
        scores += metric_scores(name, langpairs=OVERVIEW_PAIRS)
    return scores


def write_clusters_report(html_path: str) -> None:
    from bleu_spark.report import render_report

    scores = add_sample_clusters(overview_scores())
    run = {"input": os.path.relpath(SAMPLE, ROOT) + " (4 language pairs)",
           "rows": {"read": sum(r["n_segments"] for r in scores if r["metric"] == "bleu")}}
    write(html_path, render_report(scores, group_cols=["langpair", "system"],
                                   title="bleu-spark: WMT22 sample, clusters (sacrebleu's draws)",
                                   run=run))


def write_many_report(html_path: str) -> None:
    from bleu_spark.report import render_report

    template = sample_scores(langpairs=["de-en"])[0]
    scores = many_systems(template, 200, MANY_PAIRS, metrics=("bleu",))
    write(html_path, render_report(scores, group_cols=["langpair", "system"],
                                   title="bleu-spark: 200 systems a language pair (random scores)"))


def write_segments_report(html_path: str) -> None:
    """The job's own report of the sample's de-en rows, with segments (a Spark run)."""
    import subprocess
    import tempfile

    import pyarrow.compute as pc

    folder = tempfile.mkdtemp(prefix="bleu-spark-segments-")
    table = pq.read_table(SAMPLE)
    pq.write_table(table.filter(pc.equal(table["langpair"], "de-en")), os.path.join(folder, "in.parquet"))
    subprocess.run([sys.executable, "-m", "bleu_spark", "score", "--input", os.path.join(folder, "in.parquet"),
                    "--output", os.path.join(folder, "out"), "--metrics", "bleu,chrf", "--segments",
                    "--segments-columns", "source,candidate,references", "--report", "--paired-bs",
                    "--baseline", "Online-B", "--progress-seconds", "0"], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(folder, "out", "report.html"), encoding="utf-8") as page:
        write(html_path, page.read())


def write_ter_axis_report(html_path: str) -> None:
    from bleu_spark.report import render_report

    scores = metric_scores("ter", langpairs=TER_AXIS_PAIRS)
    write(html_path, render_report(scores, group_cols=["langpair", "system"],
                                   title="bleu-spark: WMT22 sample, TER past 100 (en-ja)"))


def write(path: str, page: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
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


def screenshot(html_path: str, png_path: str, max_height: int, segments: bool = False) -> None:
    with chromium_page() as page:
        page.goto(file_url(html_path), wait_until="load")
        page.wait_for_selector(".chart .main-svg")
        top = 0
        if segments:  # from the first section's segments, its first system opened
            page.eval_on_selector("#section-0 details.segments", "d => d.open = true")
            top = round(page.eval_on_selector("#section-0 .chart.scatter",
                                              "n => n.getBoundingClientRect().top + window.scrollY")) - 80
        height = min(max_height, page.evaluate("document.documentElement.scrollHeight") - top) \
            if segments else crop_height(page, max_height)
        clip = {"x": 0, "y": top, "width": VIEWPORT["width"], "height": height}
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
    first = parser.add_mutually_exclusive_group()
    first.add_argument("--sample", action="store_true", help="first write HTML: the bundled sample's report")
    first.add_argument("--overview", action="store_true",
                       help="first write HTML: four language pairs of the sample in three metrics")
    first.add_argument("--many", action="store_true", help="first write HTML: 200 systems a language pair")
    first.add_argument("--clusters", action="store_true",
                       help="first write HTML: the overview's rows with rank ranges and clusters")
    first.add_argument("--segments", action="store_true",
                       help="first write HTML: the job's report of the sample's de-en rows with segments")
    first.add_argument("--ter-axis", action="store_true",
                       help="first write HTML: the sample's TER of en-de and en-ja, past 100 in en-ja")
    parser.add_argument("--max-height", type=int, default=100_000, help="crop the page to this many pixels")
    args = parser.parse_args(argv)
    if args.sample:
        write_sample_report(args.html)
    elif args.overview:
        write_overview_report(args.html)
    elif args.many:
        write_many_report(args.html)
    elif args.clusters:
        write_clusters_report(args.html)
    elif args.segments:
        write_segments_report(args.html)
    elif args.ter_axis:
        write_ter_axis_report(args.html)
    screenshot(args.html, args.png, args.max_height, segments=args.segments)
    print(args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
