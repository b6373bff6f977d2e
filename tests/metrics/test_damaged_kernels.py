"""A built kernels folder that cannot be used as it is (unreadable, truncated, garbage bytes,
another kernel's file swapped in, another kernel's index): the run compiles the kernels again
with one warning, never a traceback, and its scores are sacrebleu's. Each run is a process of
its own, since `bleu_spark.compiled` decides at import; a few BLEU kernels are built (not the
whole set) to keep it short."""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

BUILD = r"""
from bleu_spark import compiled
import pyarrow as pa
from bleu_spark import metrics
from bleu_spark.tokenizers import LineTokenizer
compiled.load_numba()
bleu = metrics.configured(["bleu"], {}, None)[0]
bleu.measure(pa.array(["the cat sat", ""]), pa.array([["the cat sat on", None], [""]]),
             LineTokenizer("13a", False, None))
"""

# BLEU of a few rows against sacrebleu's; paths in UNREADABLE cannot be opened (as another
# user's files, for a process running as root, whom permissions do not stop).
RUN = r"""
import builtins, json, os, sys
blocked = set(filter(None, os.environ.get("UNREADABLE", "").split(os.pathsep)))
_open = builtins.open
def guarded(file, *args, **kwargs):
    if str(file) in blocked:
        raise PermissionError(13, "Permission denied", str(file))
    return _open(file, *args, **kwargs)
builtins.open = guarded
import pyarrow as pa
from sacrebleu.metrics.bleu import BLEU
from bleu_spark import build_kernels, metrics
from bleu_spark.tokenizers import LineTokenizer
hyps = ["the cat sat on the mat", "a dog ran in the park today", "hello there world", ""]
refs = [["the cat sat on a mat"], ["the dog ran in the park"], ["hello world"], ["nothing"]]
bleu = metrics.configured(["bleu"], {}, None)[0]
stats, _ = bleu.measure(pa.array(hyps), pa.array(refs, pa.list_(pa.string())),
                        LineTokenizer("13a", False, None))
ours = bleu.score(stats.sum(axis=0).tolist())
theirs = BLEU().corpus_score(hyps, [[r[0] for r in refs]]).score
print(json.dumps({"ours": ours, "theirs": theirs, "compiled": build_kernels.compiled_now()}))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kernels") / "built"
    env = {**os.environ, "BLEU_SPARK_BUILD_KERNELS": "1", "NUMBA_CPU_NAME": "generic",
           "NUMBA_CPU_FEATURES": "", "BLEU_SPARK_KERNELS_DIR": str(folder), "NUMBA_BOUNDSCHECK": "0"}
    done = subprocess.run([sys.executable, "-c", BUILD], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


@pytest.fixture(scope="module")
def numba_cache(tmp_path_factory):
    """numba's own cache, shared by the runs: the first compiles, the others load from it (the
    built folder is still read first, so each run meets its damage)."""
    return tmp_path_factory.mktemp("numba-cache")


def run(folder, numba_cache, unreadable=()):
    env = {**os.environ, "BLEU_SPARK_KERNELS_DIR": str(folder), "NUMBA_CACHE_DIR": str(numba_cache),
           "NUMBA_BOUNDSCHECK": "0", "UNREADABLE": os.pathsep.join(map(str, unreadable))}
    done = subprocess.run([sys.executable, "-c", RUN], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    return done


def kernel_files(folder, name, module="stats"):
    index = glob.glob(str(folder / f"{module}.{name}-*.nbi"))
    assert len(index) == 1, os.listdir(folder)
    return index[0], sorted(glob.glob(index[0][:-len(".nbi")] + ".*.nbc"))


def damage(folder, kind):
    """Damages BLEU's n-gram counting kernel in `folder`; the files it makes unreadable."""
    index, data = kernel_files(folder, "_clipped_matches")
    other_index, other_data = kernel_files(folder, "_split_words", "tokenizers") if kind.startswith("swapped") else (None, None)
    if kind == "unreadable-index":
        os.chmod(index, 0)
        return [index]
    if kind == "unreadable-entry":
        for path in data:
            os.chmod(path, 0)
        return data
    if kind == "unreadable-folder":
        os.chmod(folder, 0)
        return [index, *data]
    for path in ([index] if kind.endswith("index") else data):
        content = open(path, "rb").read()
        if kind.startswith("truncated"):
            content = content[:len(content) // 2]
        elif kind.startswith("garbage"):
            content = os.urandom(len(content))
        elif kind == "swapped-entry":
            content = open(other_data[0], "rb").read()
        elif kind == "swapped-index":
            content = open(other_index, "rb").read()
        with open(path, "wb") as f:
            f.write(content)
    return []


def warnings_of(stderr):
    return [line for line in stderr.splitlines() if line.startswith("bleu-spark: warning: ")]


def test_the_built_kernels_are_used_undamaged(built, numba_cache):
    done = run(built, numba_cache)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["compiled"] == {} and out["ours"] == out["theirs"]
    assert warnings_of(done.stderr) == []


@pytest.mark.parametrize("kind,warned", [
    ("unreadable-index", 1), ("unreadable-entry", 1), ("unreadable-folder", 1),
    ("truncated-index", 1), ("truncated-entry", 1), ("garbage-index", 1), ("garbage-entry", 1),
    ("swapped-entry", 1),
    ("swapped-index", 0),  # keyed by another source: numba's own check makes it a plain miss
])
def test_a_damaged_kernels_folder_compiles_again_with_one_warning(built, numba_cache, tmp_path,
                                                                    kind, warned):
    folder = tmp_path / "built"
    shutil.copytree(built, folder)
    unreadable = damage(folder, kind)
    try:
        done = run(folder, numba_cache, unreadable)
    finally:
        os.chmod(folder, 0o755)
        for path in unreadable:
            os.chmod(path, 0o644)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["ours"] == out["theirs"]
    said = warnings_of(done.stderr)
    assert len(said) == warned, done.stderr
    if warned:
        assert "stats._clipped_matches" in said[0] and "compile again" in said[0]
