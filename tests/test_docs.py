"""The README and docs/ against the code: every option and job-file key documented, nothing
documented that the parser lacks, every link resolving, every module in the layout, and the
README's snippet writing a table the job scores as sacrebleu does."""
import argparse
import os
import re
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import cli
from conftest import ROOT

README = os.path.join(ROOT, "README.md")
DOCS = os.path.join(ROOT, "docs")
OPTIONS = os.path.join(DOCS, "options.md")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def commands():
    """name -> parser of each `bleu-spark` command."""
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, dict(subparsers.choices)


def option_strings(parser):
    return {s for action in parser._actions for s in action.option_strings if s.startswith("--")}


def section(text, heading):
    """The text under a `## heading`, up to the next heading of that level."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


@pytest.mark.parametrize("command", ["score", "aggregate", "gate"])
def test_every_option_of_each_command_is_documented_under_it(command):
    _, parsers = commands()
    heading = f"`bleu-spark {command}`"
    documented = set(OPTION.findall(section(read(OPTIONS), heading)))
    options = {o for o in option_strings(parsers[command]) - {"--help"}
               if not (o.startswith("--no-") and o[5:] and f"--{o[5:]}" in option_strings(parsers[command]))}
    assert options - documented == set(), f"undocumented options of {command}"


def test_every_documented_option_exists():
    root, parsers = commands()
    known = option_strings(root) | {o for p in parsers.values() for o in option_strings(p)}
    documented = set(OPTION.findall(read(OPTIONS)))
    assert documented - known == set()


def test_the_job_file_keys_and_types_are_the_loaders():
    table = section(read(OPTIONS), "The YAML job file")
    documented = {}
    for keys, kind in re.findall(r"^\| ([^|]+) \| ([^|]+) \|$", table, re.MULTILINE):
        for key in re.findall(r"`([a-z_]+)`", keys):
            documented[key] = kind.strip()
    assert documented == cli.JOB_FILE_KINDS
    assert set(cli.JOB_FILE_KINDS) == set(cli.DEFAULTS)


def slug(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    return {slug(h) for h in re.findall(r"^#+ (.+)$", read(path), re.MULTILINE)}


def markdown_files():
    return [README, *(os.path.join(DOCS, n) for n in sorted(os.listdir(DOCS)) if n.endswith(".md"))]


@pytest.mark.parametrize("path", markdown_files(), ids=os.path.basename)
def test_links_resolve_to_files_and_headings(path):
    broken = []
    for target in LINK.findall(read(path)):
        if re.match(r"[a-z]+://", target):
            continue
        file, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        if not os.path.exists(resolved):
            broken.append(target)
        elif anchor and anchor not in anchors(resolved):
            broken.append(target)
    assert broken == []


def test_the_readme_links_every_docs_page():
    linked = {os.path.normpath(t) for t in LINK.findall(read(README))}
    pages = {f"docs/{n}" for n in os.listdir(DOCS) if n.endswith(".md")}
    assert pages - linked == set()


def test_the_layout_names_every_module():
    internals = read(os.path.join(DOCS, "internals.md"))
    package = os.path.join(ROOT, "bleu_spark")
    missing = []
    for folder, _, files in os.walk(package):
        for name in files:
            if name.endswith((".py", ".j2", ".properties")):
                module = os.path.relpath(os.path.join(folder, name), package)
                if f"`{module}`" not in internals:
                    missing.append(module)
    assert missing == []


def test_ci_runs_the_readmes_test_command():
    quick_start = section(read(README), "Quick start")
    assert "    scripts/test.sh " in quick_start and "    scripts/demo.sh " in quick_start
    assert "exec scripts/test.sh" in read(os.path.join(ROOT, ".ci", "run"))


def readme_snippet():
    blocks = re.findall(r"```python\n(.*?)```", read(README), re.DOTALL)
    assert len(blocks) == 1
    return blocks[0]


def test_the_readme_snippet_writes_the_minimal_table(tmp_path):
    subprocess.run([sys.executable, "-c", readme_snippet()], cwd=tmp_path, check=True)
    schema = pq.read_schema(tmp_path / "my_table.parquet")
    table = section(read(README), "Your table")
    documented = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", table, re.MULTILINE))
    types = {"string": pa.string(), "array\\<string\\>": pa.list_(pa.string())}
    assert [(f.name, f.type) for f in schema] == [(k, types[v.strip()]) for k, v in documented.items()]


@pytest.mark.spark
def test_the_job_scores_the_readme_snippets_table_as_sacrebleu(spark, tmp_path, monkeypatch):
    from bleu_spark.spark.job import JobOptions, run_job
    from matching import assert_matches_sacrebleu
    from test_spark_job import oracle_by_group

    monkeypatch.chdir(tmp_path)
    exec(compile(readme_snippet(), "README.md", "exec"), {"__name__": "readme"})
    path = str(tmp_path / "my_table.parquet")
    result = run_job(spark, JobOptions(input=path, output=str(tmp_path / "out")))
    oracle = oracle_by_group(pq.read_table(path).to_pylist())
    assert len(result.scores) == len(oracle) == 2
    for row in result.scores:
        assert_matches_sacrebleu(row, oracle[row["langpair"], row["system"]])


@pytest.mark.spark
def test_what_a_later_run_without_report_leaves_of_an_earlier_report(spark, tmp_path):
    """docs/outputs.md: a whole output loses the earlier report.html; a partitioned one too,
    since it would not cover the new partition (a report drawn again covers every partition)."""
    from bleu_spark.spark.job import JobOptions, run_job

    for day in ("2026-01-01", "2026-01-02"):
        pq.write_table(pa.table({"run_date": [day] * 2, "system": ["A", "B"],
                                 "candidate": ["the cat sat", "a cat sat"],
                                 "references": [["the cat sat down"]] * 2}), tmp_path / f"{day}.parquet")
    day = lambda d: str(tmp_path / f"{d}.parquet")
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    run_job(spark, JobOptions(input=day("2026-01-01"), output=str(whole), report=True))
    assert (whole / "report.html").exists()
    run_job(spark, JobOptions(input=day("2026-01-02"), output=str(whole)))
    assert not (whole / "report.html").exists()

    run_job(spark, JobOptions(input=day("2026-01-01"), output=str(parts), report=True,
                              partition_by=("run_date",)))
    assert "2026-01-02" not in (parts / "report.html").read_text(encoding="utf-8")
    run_job(spark, JobOptions(input=day("2026-01-02"), output=str(parts), partition_by=("run_date",)))
    assert not (parts / "report.html").exists() and (parts / "scores" / "run_date=2026-01-02").is_dir()
    run_job(spark, JobOptions(input=day("2026-01-02"), output=str(parts), report=True,
                              partition_by=("run_date",)))
    page = (parts / "report.html").read_text(encoding="utf-8")
    assert "2026-01-01" in page and "2026-01-02" in page
