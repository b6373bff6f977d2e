"""sacrebleu's own chrF and TER test files, run as oracle tests against this project's metrics.

The files are not copied here: the first run fetches sacrebleu's source distribution (the version
installed) with `pip download` into `.pytest_cache/sacrebleu-sdist/` and reads `test/test_chrf.py`
and `test/test_ter.py` from it. Each test function of those files is called once per row of its
`parametrize` table, unchanged, with sacrebleu's `CHRF` and `TER` classes replaced in every
sacrebleu module (so `sacrebleu.corpus_chrf`, `sentence_chrf`, `sacrebleu.metrics.TER()`, ...
reach the stand-in). The stand-in runs sacrebleu's own class on the same call, checks that this
project's metric (`bleu_spark.metrics.chrf.Chrf`, `ter.Ter`, same options) gives the same summed
statistics and a score within 1e-9, and returns this project's score, which the file's own
assertion then compares with the value it states.

In sacrebleu 2.6.0 every case of the two files scores chrF or TER, so none is left out: 25 of
`test_chrf.py` (13 corpus cases with eps smoothing, 7 without, 2 keeping whitespace, 3 sentence
scores) and 7 of `test_ter.py`. A case that never reaches the stand-in fails, and so does a run
of fewer cases than those.
"""
import importlib.util
import inspect
import os
import subprocess
import sys
import tarfile
import types

import pyarrow as pa
import pytest
import sacrebleu
from sacrebleu.metrics.chrf import CHRF
from sacrebleu.metrics.ter import TER

from bleu_spark.metrics.chrf import Chrf
from bleu_spark.metrics.chrf_kernel import ChrfOptions
from bleu_spark.metrics.ter import Ter
from bleu_spark.metrics.ter_kernel import TerOptions
from bleu_spark.oracle import sacrebleu_sums
from conftest import ROOT

VERSION = sacrebleu.__version__
CACHE = os.path.join(ROOT, ".pytest_cache", "sacrebleu-sdist", VERSION)
# Cases each file held in sacrebleu 2.6.0: fewer cases run means some were lost.
CASES_AT_LEAST = {"test_chrf.py": 25, "test_ter.py": 7}
TOLERANCE = 1e-9


def fetch_sdist() -> str:
    """sacrebleu's source distribution, downloaded once with pip (from the configured index)."""
    archive = os.path.join(CACHE, f"sacrebleu-{VERSION}.tar.gz")
    if not os.path.exists(archive):
        os.makedirs(CACHE, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               "--quiet", f"sacrebleu=={VERSION}", "--dest", CACHE]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode or not os.path.exists(archive):
            pytest.fail(f"could not fetch sacrebleu {VERSION}'s source distribution, which holds "
                        f"the test files these tests run ({' '.join(cmd)}): "
                        f"{(done.stderr or done.stdout).strip()[-2000:]}", pytrace=False)
    return archive


@pytest.fixture(scope="module")
def upstream_folder() -> str:
    """The sdist's test files, extracted next to it."""
    with tarfile.open(fetch_sdist()) as archive:
        for name in CASES_AT_LEAST:
            member = archive.getmember(f"sacrebleu-{VERSION}/test/{name}")
            with open(os.path.join(CACHE, name), "wb") as out:
                out.write(archive.extractfile(member).read())
    return CACHE


def load(folder: str, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(f"sacrebleu_upstream_{name[:-3]}",
                                                  os.path.join(folder, name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases(module: types.ModuleType):
    """(id, test function, arguments): every test function, once per row of its parametrize table.
    Anything else (other marks, fixtures) is refused, so no case is skipped unseen."""
    for name, function in vars(module).items():
        if not (name.startswith("test") and inspect.isfunction(function)):
            continue
        marks = getattr(function, "pytestmark", [])
        wanted = list(inspect.signature(function).parameters)
        if not marks and not wanted:
            yield name, function, {}
            continue
        assert len(marks) == 1 and marks[0].name == "parametrize", f"{name}: cannot run {marks}"
        argnames, rows = marks[0].args[:2]
        names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        assert sorted(names) == sorted(wanted), f"{name}: needs fixtures {set(wanted) - set(names)}"
        for i, row in enumerate(rows):
            row = row.values if isinstance(row, type(pytest.param(None))) else row
            yield f"{name}[{i}]", function, dict(zip(names, row if len(names) > 1 else (row,)))


def stand_in(real_class, ours_of, calls: list):
    """A class in place of sacrebleu's `real_class` whose scores are this project's."""

    class StandIn:
        def __init__(self, *args, **kwargs):
            self.real = real_class(*args, **kwargs)
            options = inspect.signature(real_class).bind(*args, **kwargs).arguments
            # references given at construction are cached by sacrebleu: not a scoring option
            assert options.pop("references", None) is None, "cached references: no counterpart"
            self.ours = ours_of(options)

        def corpus_score(self, hypotheses, references, n_bootstrap=1):
            assert n_bootstrap == 1, "bootstrap: not a case of these files"
            theirs = self.real.corpus_score(hypotheses, references)
            return self.checked(hypotheses, references, theirs.score)

        def sentence_score(self, hypothesis, references):
            theirs = self.real.sentence_score(hypothesis, references)
            result = self.checked([hypothesis], [[r] for r in references], theirs.score)
            assert self.ours.sentence_score(hypothesis, references) == result.score
            return result

        def checked(self, hypotheses, streams, expected):
            """This project's score of the corpus, after comparing it with sacrebleu's."""
            segments = [list(refs) for refs in zip(*streams)]
            stats = self.ours.segment_statistics(pa.array(hypotheses, pa.string()),
                                                 pa.array(segments, pa.list_(pa.string())))
            sums = [int(v) for v in stats.sum(axis=0)]
            theirs = sacrebleu_sums(self.real, self.real._extract_corpus_statistics(hypotheses, streams))
            assert sums == theirs, f"statistics {sums} != sacrebleu's {theirs}"
            score = self.ours.score(sums)
            assert abs(score - expected) <= TOLERANCE, f"score {score!r} != sacrebleu's {expected!r}"
            calls.append((hypotheses, streams))
            return types.SimpleNamespace(score=score)

    return StandIn


def redirect(monkeypatch, calls: list):
    """Every sacrebleu module's `CHRF` and `TER` (sacrebleu.CHRF, sacrebleu.metrics.TER, the ones
    `corpus_chrf` and friends build, ...) -> stand-ins backed by this project's metrics."""
    ours = {CHRF: stand_in(CHRF, lambda o: Chrf(ChrfOptions(**o)), calls),
            TER: stand_in(TER, lambda o: Ter(TerOptions(**o)), calls)}
    for name, module in list(sys.modules.items()):
        if name == "sacrebleu" or name.startswith("sacrebleu."):
            for attribute, value in list(vars(module).items()):
                if isinstance(value, type) and value in ours:
                    monkeypatch.setattr(module, attribute, ours[value])


@pytest.mark.parametrize("name", sorted(CASES_AT_LEAST))
def test_sacrebleus_own_cases_on_our_metrics(name, upstream_folder, monkeypatch):
    module = load(upstream_folder, name)
    calls, failures, ran = [], [], 0
    redirect(monkeypatch, calls)
    for case, function, arguments in cases(module):
        before, ran = len(calls), ran + 1
        try:
            function(**arguments)
        except Exception as error:  # noqa: BLE001 - every failing case is listed, not the first
            # the files' bare asserts say nothing (not rewritten here): show the case itself
            failures.append(f"{case} {arguments!r:.300}: {type(error).__name__}: {error}")
            continue
        if len(calls) == before:
            failures.append(f"{case}: never reached this project's metrics")
    assert not failures, "\n".join(failures)
    assert ran >= CASES_AT_LEAST[name], f"{name}: {ran} cases ran, {CASES_AT_LEAST[name]} expected"
