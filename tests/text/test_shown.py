"""Values that print alike stay distinct wherever they are shown or matched: a null system and one
named like the null marker, an empty name, names with the label joiner or surrounding spaces,
and integer ids given on the command line."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import console, report
from bleu_spark.report.shared import group_label
from bleu_spark.resampling import Resampling
from bleu_spark.errors import BaselineNotFoundError
from bleu_spark.shown import NULL, shown
from bleu_spark.spark.job import JobOptions, run_job

ALIKE = [None, "", "—", "— ", '"—"', "None", "null", "NULL", "A", "A ", " A", "a · b", "a\nb",
         "a\\nb", '"A"', "a\u00a0b", "a b", "a\tb", "\u200b", "3", "—x", "x—"]


def test_every_value_has_a_text_of_its_own():
    texts = [shown(v) for v in ALIKE]
    assert len(set(texts)) == len(ALIKE), texts
    assert shown(None) == NULL and shown("A") == "A" and shown(3) == "3"
    assert all("\n" not in t and "\t" not in t for t in texts)


def test_report_labels_of_several_columns_stay_apart():
    groups = [{"system": "a · b", "testset": "c"}, {"system": "a", "testset": "b · c"},
              {"system": None, "testset": "x"}, {"system": "—", "testset": "x"},
              {"system": "", "testset": "x"}]
    labels = [group_label(g, ["system", "testset"]) for g in groups]
    assert len(set(labels)) == len(groups), labels


def score_row(system):
    return dict(system=system, metric="bleu", tokenize="13a", signature="s", n_rejected=0,
                n_segments=1, score=10.0, grouping="system", verbose="BLEU = 10.00")


def test_the_console_shows_a_null_system_apart_from_one_named_like_it():
    rows = [score_row(v) for v in (None, "—", "", "None")]
    header, *lines = console.format_table(rows, ["system"]).splitlines()
    firsts = [line.split("  ")[0].strip() for line in lines]
    assert firsts == [NULL, '"—"', '""', "None"]


def test_a_baseline_given_as_text_names_an_integer_id():
    resampling = Resampling(paired_bs=True, baseline="3")
    assert resampling.baseline_of({3, 4, None}) == 3
    resampling.check_baseline({3, 4})
    assert Resampling(paired_bs=True, baseline="B").baseline_of({"B", "3"}) == "B"
    for spelled in ("03", "3.0", " 3"):
        with pytest.raises(BaselineNotFoundError):
            Resampling(paired_bs=True, baseline=spelled).check_baseline({3, 4})


@pytest.mark.spark
def test_paired_tests_against_an_integer_baseline_id(spark, tmp_path):
    n = 8
    pq.write_table(pa.table({
        "system": pa.array([1] * n + [2] * n, pa.int64()), "langpair": ["en-de"] * (2 * n),
        "seg": list(range(n)) * 2,
        "candidate": [f"die katze {i}" for i in range(n)] + [f"eine katze {i} sitzt" for i in range(n)],
        "references": [[f"die katze {i} sitzt"] for i in range(n)] * 2}), tmp_path / "in.parquet")
    result = run_job(spark, JobOptions(
        input=str(tmp_path / "in.parquet"), output=str(tmp_path / "out"), progress_seconds=0,
        resampling=Resampling(paired_bs=True, baseline="1", n_bootstrap=50), report=True))
    assert [(r["system"], r["baseline"]) for r in result.paired] == [(2, "1")]
    assert not [w for w in result.run["warnings"] if "no baseline" in w]
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.count("\\u003c/b\\u003e  baseline") == 1   # system 1's bar marked as the baseline


def test_the_reports_table_shows_a_null_system_apart_from_one_named_like_it():
    from html.parser import HTMLParser

    class FirstColumns(HTMLParser):
        """The text of the second cell (the system) of each row of the scores tables."""
        def __init__(self):
            super().__init__()
            self.cells, self.row, self.depth, self.scores = [], None, 0, False

        def handle_starttag(self, tag, attrs):
            classes = dict(attrs).get("class") or ""
            if tag == "table":
                self.scores = "scores" in classes.split()
            elif tag == "tr" and self.scores:
                self.row = []
            elif tag == "td" and self.row is not None:
                self.row.append("")

        def handle_endtag(self, tag):
            if tag == "tr" and self.row:
                self.cells.append(self.row[1])
                self.row = None

        def handle_data(self, data):
            if self.row:
                self.row[-1] += data

    page = report.render_report([score_row(None), score_row(NULL), score_row("B")],
                                group_cols=["system"])
    parser = FirstColumns()
    parser.feed(page)
    systems = [cell.strip() for cell in parser.cells]
    assert sorted(systems) == sorted([shown(None), shown(NULL), "B"]) and len(set(systems)) == 3
