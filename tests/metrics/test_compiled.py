"""The compiled kernels: built ahead of time they cover what the job runs (nothing compiles at
run time), and without numba the plain Python kernels give sacrebleu's scores exactly. Each
check runs in a process of its own, since `bleu_spark.compiled` decides at import."""
import json
import os
import subprocess
import sys

from conftest import ROOT, SAMPLE

# Every metric's statistics of the first rows of each language pair of the sample, summed and
# scored, beside sacrebleu's score of the same rows; and which kernels compiled in the process.
SCRIPT = r"""
import json, sys
from collections import defaultdict
import pyarrow as pa, pyarrow.parquet as pq
from sacrebleu.metrics.bleu import BLEU
from sacrebleu.metrics.chrf import CHRF
from sacrebleu.metrics.ter import TER
from bleu_spark import build_kernels, compiled, metrics
from bleu_spark.languages import TextSettings
from bleu_spark.metrics.bleu import BleuConfig
from bleu_spark.oracle import reference_streams
from bleu_spark.tokenizers import LineTokenizer

rows_each = int(sys.argv[2])
groups = defaultdict(list)
for row in pq.read_table(sys.argv[1]).to_pylist():
    if len(groups[row["langpair"]]) < rows_each:
        groups[row["langpair"]].append(row)
config = BleuConfig()
out = {"numba": compiled.load_numba() is not None, "groups": {}}
for langpair, rows in sorted(groups.items()):
    hyps, refs = [r["candidate"] for r in rows], [r["references"] for r in rows]
    candidates = pa.array(hyps, pa.string())
    references = pa.array(refs, pa.list_(pa.string()))
    tokenize = TextSettings().tokenizer_for(langpair)
    ours = {}
    for metric in metrics.configured(["bleu", "chrf", "chrf++", "ter"], {}, config):
        tokenizer = LineTokenizer(tokenize, False, None) if metric.uses_tokenizer else None
        stats, _ = metric.measure(candidates, references, tokenizer)
        ours[metric.name] = metric.score(stats.sum(axis=0).tolist())
    streams = reference_streams(refs)
    theirs = {"bleu": BLEU(tokenize=tokenize).corpus_score(hyps, streams).score,
              "chrf": CHRF().corpus_score(hyps, streams).score,
              "chrf++": CHRF(word_order=2).corpus_score(hyps, streams).score,
              "ter": TER().corpus_score(hyps, streams).score}
    out["groups"][langpair] = [ours, theirs]
out["compiled"] = build_kernels.compiled_now() if out["numba"] else {}
print(json.dumps(out))
"""


def run(env: dict, rows_each: int) -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT, SAMPLE, str(rows_each)], cwd=ROOT,
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_without_numba_the_python_kernels_give_sacrebleus_scores():
    """BLEU_SPARK_PURE_PYTHON=1 stands for a platform numba cannot load on: every metric's score
    equals sacrebleu's, bit for bit, on every language pair of the sample."""
    out = run({"BLEU_SPARK_PURE_PYTHON": "1"}, rows_each=12)
    assert out["numba"] is False
    assert len(out["groups"]) >= 5
    for langpair, (ours, theirs) in out["groups"].items():
        assert ours == theirs, langpair


def test_kernels_built_ahead_cover_what_a_run_compiles(tmp_path):
    """The build step's kernels (written here into a folder of their own) are all a scoring of
    every metric on every language pair needs: nothing compiles, and the scores are sacrebleu's."""
    built = tmp_path / "kernels"
    build = subprocess.run([sys.executable, "-m", "bleu_spark.build_kernels"], cwd=ROOT,
                           env={**os.environ, "BLEU_SPARK_BUILD_KERNELS": "1",
                                "NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": "",
                                "BLEU_SPARK_KERNELS_DIR": str(built), "NUMBA_BOUNDSCHECK": "0"},
                           capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-3000:]
    assert any(name.endswith(".nbc") for name in os.listdir(built))
    # numba's own cache folder empty, so whatever is not built would have to compile
    out = run({"BLEU_SPARK_KERNELS_DIR": str(built), "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
               "NUMBA_BOUNDSCHECK": "0"}, rows_each=30)  # as a run: built kernels are unchecked
    assert out["numba"] is True
    assert out["compiled"] == {}
    for langpair, (ours, theirs) in out["groups"].items():
        assert ours == theirs, langpair


ALIAS = r"""
import importlib.util, os, sys
init = os.path.join(sys.argv[1], "bleu_spark", "__init__.py")
spec = importlib.util.spec_from_file_location(sys.argv[2], init,
                                              submodule_search_locations=[os.path.dirname(init)])
package = importlib.util.module_from_spec(spec)
sys.modules[sys.argv[2]] = package
spec.loader.exec_module(package)
cli = importlib.import_module(sys.argv[2] + ".cli")
chrf = importlib.import_module(sys.argv[2] + ".metrics").configured(
    ["chrf"], cli.DEFAULTS, None)[0]
print(chrf.sentence_score("the cat sat", ["the cat sat on the mat"]))
"""


def test_a_kernel_cached_under_another_module_name_compiles_again(tmp_path):
    """The same code imported under another name (a second checkout beside this one, as the
    benchmark loads them) caches kernels whose entries name that module: read back where the
    package runs as `bleu_spark`, they are a miss and compile again, never a failed run."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_BOUNDSCHECK": "0"}
    scores = []
    for alias in ("bleu_spark_elsewhere", "bleu_spark"):
        done = subprocess.run([sys.executable, "-c", ALIAS, ROOT, alias], cwd=str(tmp_path),
                              env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        scores.append(float(done.stdout.strip().splitlines()[-1]))
    assert os.listdir(tmp_path / "cache")  # the first process did cache its kernels
    assert scores[0] == scores[1]


WORKER = r"""
import json, sys
import pyarrow as pa
from bleu_spark.spark import stats  # the module of the job's Arrow functions, as a worker has it
from bleu_spark import metrics
from bleu_spark.metrics.bleu import BleuConfig
from bleu_spark.tokenizers import LineTokenizer

candidates = pa.array(["The cat sat on the mat.", "Ölçü «test»"], pa.string())
references = pa.array([["The cat is on the mat."], ["ölçü test", None]], pa.list_(pa.string()))
width = 0
for metric in metrics.configured(["bleu", "chrf", "chrf++", "ter"], {}, BleuConfig()):
    tokenizer = LineTokenizer("13a", False, None) if metric.uses_tokenizer else None
    width += metric.measure(candidates, references, tokenizer)[0].shape[1]
print(json.dumps({"width": width, "sacrebleu": "sacrebleu" in sys.modules}))
"""


def test_a_worker_measuring_statistics_does_not_import_sacrebleu():
    """sacrebleu (a tenth of a second of imports) is for signatures, scores and the tokenizers
    that are its own classes: a Python worker measuring the four metrics' statistics with 13a
    does not import it, so an executor's first task does not wait for it."""
    done = subprocess.run([sys.executable, "-c", WORKER], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "BLEU_SPARK_PURE_PYTHON": "1"}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["width"] > 0
    assert out["sacrebleu"] is False
