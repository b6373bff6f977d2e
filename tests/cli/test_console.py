"""What the console shows: the scores table with several metrics, a signature a line, the run's
and the process's time, and progress lines that a short run shows too."""
import io
import json
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sacrebleu.metrics import BLEU, CHRF

from bleu_spark import cli, compiled, console, notices
from bleu_spark.spark.progress import Progress
from bleu_spark.scoring import ScoreRow
from conftest import ROOT


def score_row(system, metric, name, score, details=None, signature="nrefs:1|x"):
    row = ScoreRow(system=system, grouping="system", metric=metric, score=score, n_segments=2,
                   tokenize="13a" if metric == "bleu" else None, signature=signature, n_rejected=0,
                   verbose=None if score is None else f"{name} = {score:.2f}")
    row.sacrebleu = {"name": name, **({"verbose_score": details} if metric == "bleu" else {})}
    return row


def test_the_table_names_each_metric_once_and_shows_the_score_alone():
    rows = [score_row("A", "bleu", "BLEU", 41.234, "70.0/50.0/40.0/30.0 (BP = 1.000 ...)"),
            score_row("A", "chrf++", "chrF2++", 55.5), score_row("B", "bleu", "BLEU", None)]
    header, *lines = console.format_table(rows, ["system"]).splitlines()
    assert header.split() == ["system", "metric", "tokenize", "n_segments", "n_rejected", "score",
                              "details"]
    cells = [line.split(None, 5) for line in lines]
    assert [c[1] for c in cells] == ["BLEU", "chrF2++", "BLEU"]
    assert cells[0][5] == "41.23  70.0/50.0/40.0/30.0 (BP = 1.000 ...)"
    assert cells[1][5] == "55.50" and lines[1].endswith("55.50")
    assert cells[2][5] == "-  (no scored rows)"
    assert "BLEU =" not in "\n".join(lines) and "chrF2++ =" not in "\n".join(lines)


def test_without_bleu_there_is_no_details_column():
    header = console.format_table([score_row("A", "ter", "TER", 30.0)], ["system"]).splitlines()[0]
    assert header.split()[-1] == "score"


def test_each_signature_is_on_a_line_of_its_own_in_metric_order():
    rows = [score_row("A", "ter", "TER", 1.0, signature="nrefs:1|case:lc|tok:tercom"),
            score_row("A", "chrf", "chrF2", 1.0, signature="nrefs:1|nc:6"),
            score_row("A", "bleu", "BLEU", 1.0, "d", signature="nrefs:1|tok:13a"),
            score_row("B", "bleu", "BLEU", 2.0, "d", signature="nrefs:1|tok:13a"),
            score_row("C", "bleu", "BLEU", 2.0, "d", signature="nrefs:1|tok:zh")]
    assert console.format_signatures(rows).splitlines() == [
        "signatures:", "  BLEU   nrefs:1|tok:13a", "  BLEU   nrefs:1|tok:zh",
        "  chrF2  nrefs:1|nc:6", "  TER    nrefs:1|case:lc|tok:tercom"]


def test_the_process_time_counts_from_the_process_start_not_the_import():
    code = "import time; time.sleep(1.5); from bleu_spark import cli; print(cli.process_seconds())"
    seconds = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                   check=True, cwd=ROOT).stdout)
    assert 1.5 <= seconds < 60
    assert re.fullmatch(r"wrote out in 2\.0 s \(\d+\.\d s since the process started\)",
                        cli.wrote_line("out", 2.0))


def fake_spark(value):
    tracker = SimpleNamespace(getActiveStageIds=lambda: [], getStageInfo=lambda s: None)
    context = SimpleNamespace(accumulator=lambda v: value, statusTracker=lambda: tracker)
    return SimpleNamespace(sparkContext=context)


def test_a_short_pass_shows_its_start_and_its_end():
    stream, rows = io.StringIO(), SimpleNamespace(value=0)
    with Progress(fake_spark(rows), 1234, 30, stream=stream):
        rows.value = 1234
    start, end = stream.getvalue().splitlines()
    assert start == "bleu-spark: progress: scoring 1,234 rows, a line every 30 s"
    assert re.fullmatch(r"bleu-spark: progress: done: 1,234 of 1,234 rows scored and summed per "
                        r"group in 0m0\ds", end)


def test_rows_of_tasks_run_again_never_make_more_rows_than_the_input():
    """A lost executor's tasks run again and count their rows again: the running line never
    says more rows than the input has, and the end line says how many were scored again."""
    stream, rows = io.StringIO(), SimpleNamespace(value=0)
    stage = SimpleNamespace(stageId=0, numCompletedTasks=33, numTasks=32)
    tracker = SimpleNamespace(getActiveStageIds=lambda: [0], getStageInfo=lambda s: stage)
    spark = SimpleNamespace(sparkContext=SimpleNamespace(accumulator=lambda v: rows,
                                                         statusTracker=lambda: tracker))
    with Progress(spark, 1000, 30, stream=stream) as progress:
        rows.value = 1250
        line = progress.line()
        assert line.startswith("bleu-spark: progress: all 1,000 rows scored, adding up"), line
        assert line.endswith("[stage 0: 32/32 tasks]"), line
    end = stream.getvalue().splitlines()[-1]
    assert re.fullmatch(r"bleu-spark: progress: done: all 1,000 rows scored \(250 scored again, by "
                        r"tasks Spark ran again\) and summed per group in 0m0\ds", end), end


def test_a_failed_pass_has_no_end_line_and_interval_0_no_line():
    stream = io.StringIO()
    with pytest.raises(RuntimeError):
        with Progress(fake_spark(SimpleNamespace(value=0)), 10, 30, stream=stream):
            raise RuntimeError("lost")
    assert stream.getvalue().count("\n") == 1 and "scoring 10 rows" in stream.getvalue()
    quiet = io.StringIO()
    with Progress(fake_spark(SimpleNamespace(value=0)), 10, 0, stream=quiet):
        pass
    assert quiet.getvalue() == ""


def test_before_a_task_ends_the_line_says_the_first_tasks_are_starting():
    stage = SimpleNamespace(stageId=0, numCompletedTasks=0, numTasks=2)
    tracker = SimpleNamespace(getActiveStageIds=lambda: [0], getStageInfo=lambda s: stage)
    context = SimpleNamespace(accumulator=lambda v: SimpleNamespace(value=0),
                              statusTracker=lambda: tracker)
    line = Progress(SimpleNamespace(sparkContext=context), 360, 30).line()
    assert line.startswith("bleu-spark: progress: 0 of 360 rows scored, the first tasks starting "
                           "(Python workers, imports, the compiled kernels), ")
    assert line.endswith("[stage 0: 0/2 tasks]") and "0%" not in line
    stage.numCompletedTasks = 1  # a task ended with no rows of its own: the count is the truth
    assert "0 of 360 rows scored (0%)" in Progress(SimpleNamespace(sparkContext=context), 360, 30).line()


@pytest.mark.e2e
def test_the_console_of_a_short_run_with_two_metrics(tmp_path):
    candidates = ["the cat sat on the mat", "a dog ran in the park today", "hello there world"]
    references = ["the cat sat on a mat", "the dog ran in the park", "hello world"]
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"system": ["A"] * 3, "candidate": candidates,
                             "references": [[r] for r in references]}), path)
    # a cache folder of its own, never run before: the kernels line is said on a first run
    env = {**os.environ, "BLEU_SPARK_CACHE_DIR": str(tmp_path / "cache"), "BLEU_SPARK_JVM_ARCHIVE": "0"}
    result = subprocess.run([sys.executable, "-m", "bleu_spark", "score", "--input", str(path),
                             "--output", str(tmp_path / "out"), "--metrics", "bleu,chrf"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    bleu_metric, chrf_metric = BLEU(), CHRF()
    bleu = bleu_metric.corpus_score(candidates, [references])
    chrf = chrf_metric.corpus_score(candidates, [references])
    signature = str(bleu_metric.get_signature())
    details = json.loads(bleu.format(signature=signature, is_json=True))["verbose_score"]
    assert lines[0].split()[-2:] == ["score", "details"]
    assert lines[1].split(None, 6)[1:] == ["BLEU", "13a", "3", "0", f"{bleu.score:.2f}", details]
    assert lines[2].split() == ["A", "chrF2", "-", "3", "0", f"{chrf.score:.2f}"]
    assert lines[4:6] == ["rows: read 3, scored 3, rejected 0", "signatures:"]
    assert lines[6].split() == ["BLEU", signature]
    assert lines[7].split() == ["chrF2", str(chrf_metric.get_signature())]
    assert re.fullmatch(r"wrote .*out in \d+\.\d s \(\d+\.\d s since the process started\)", lines[8])
    progress = [l for l in result.stderr.splitlines() if l.startswith("bleu-spark: progress:")]
    # what runs before the first row is scored is said as it starts: Spark, the footers, and
    # the kernels where this install has none built (an editable one)
    assert progress[:2] == ["bleu-spark: progress: starting Spark",
                            "bleu-spark: progress: reading the input's Parquet footers"]
    kernels = [l for l in progress[2:-2] if "no kernels built" in l]
    assert len(kernels) == (0 if compiled.built_here() else 1), progress
    assert progress[2 + len(kernels)] == "bleu-spark: progress: scoring 3 rows, a line every 30 s"
    assert progress[-1].startswith("bleu-spark: progress: done: 3 of 3 rows scored")
    assert len(progress) == 4 + len(kernels) and len(kernels) <= 1


def test_ranked_groups_are_listed_in_rank_order_within_each_comparison(tmp_path, capsys):
    """With --clusters, each comparison (per metric; per language pair too) reads down as its
    ranking, whatever the systems' names; TER, where lower is better, too."""
    from test_coverage import ALL, save, segment_rows

    names = ("bleu", "chrf", "ter")
    tables = [segment_rows(system, ALL, names, right=right, seed=seed)
              for seed in (0, 1) for system, right in (("A", 0.0), ("M", 1.0), ("Z", 0.5))]
    for seed, table in enumerate(tables):
        pair = ["en-de", "en-cs"][seed // 3]
        tables[seed] = table.append_column("langpair", pa.array([pair] * table.num_rows))
    stats = save(tmp_path / "saved", *tables)
    code = cli.main(["aggregate", "--stats", stats, "--output", str(tmp_path / "out"),
                     "--engine", "local", "--group-by", "langpair,system", "--clusters"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.split("\n\n")[0].splitlines()[1:]
    listed = [line.split()[:3] for line in lines]
    expected = [[pair, system, metric] for pair in ("en-cs", "en-de")
                for metric in ("BLEU", "chrF2", "TER") for system in ("M", "Z", "A")]
    assert listed == expected
    ranks = [int(re.search(r"  (\d+) \(\d+-\d+\)  ", line).group(1)) for line in lines]
    assert ranks == [1, 2, 3] * 6


def test_a_warning_said_before_a_step_is_not_printed_again_at_the_end(capsys):
    """The row-group advice is said before scoring and kept in run.json's warnings: the end of
    the run prints the others, each once."""
    notices.say_warnings(["few row groups"])
    notices.print_warnings(["options", "few row groups", "tokenizer", "options"])
    err = capsys.readouterr().err.splitlines()
    assert err == ["bleu-spark: warning: few row groups", "bleu-spark: warning: options",
                   "bleu-spark: warning: tokenizer"]
    notices.print_warnings(["few row groups"])  # a later run in the process says its own
    assert capsys.readouterr().err == "bleu-spark: warning: few row groups\n"


def test_every_warning_line_of_the_package_is_printed_by_one_module():
    """One printer of warnings (which knows what was said already): no module prints its own."""
    package = os.path.join(ROOT, "bleu_spark")
    printing = []
    for folder, _, files in os.walk(package):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".py") and path != os.path.join(package, "notices.py"):
                with open(path, encoding="utf-8") as source:
                    if re.search(r"print\(f?[\"'][^\"']*warning: ", source.read()):
                        printing.append(os.path.relpath(path, ROOT))
    assert printing == []


def test_the_kernels_line_is_said_once_per_install(tmp_path, monkeypatch):
    """An install without built kernels (an editable one) compiles them into numba's cache on
    its first run: the line is said then, not on every run after; another install (another
    kernels folder) or another numba version says it once too."""
    monkeypatch.setenv("BLEU_SPARK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compiled, "built_here", lambda: False)
    monkeypatch.delenv("BLEU_SPARK_PURE_PYTHON", raising=False)
    said = [compiled.status() for _ in range(3)]
    assert "no kernels built" in said[0] and said[1:] == [None, None]
    monkeypatch.setattr(compiled, "BUILT", str(tmp_path / "another" / "_kernels"))
    assert "no kernels built" in compiled.status() and compiled.status() is None
    monkeypatch.setattr(compiled, "_numba_version", lambda: "0.68.99")
    assert "numba 0.68.99" in compiled.status() and compiled.status() is None


def test_the_kernels_line_is_said_where_nothing_can_remember_it(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("BLEU_SPARK_CACHE_DIR", str(blocked / "cache"))  # under a file: unwritable
    monkeypatch.setattr(compiled, "built_here", lambda: False)
    monkeypatch.delenv("BLEU_SPARK_PURE_PYTHON", raising=False)
    assert "no kernels built" in compiled.status() and "no kernels built" in compiled.status()
