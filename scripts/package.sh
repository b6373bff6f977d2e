#!/usr/bin/env bash
# Build what a Spark cluster needs to run the job:
#
#   dist/bleu_spark_env.tar.gz  venv-pack archive of a fresh venv holding bleu-spark (a normal,
#                               non-editable install, its kernels compiled when its wheel was
#                               built) and its runtime dependencies; ship it with
#                               --archives dist/bleu_spark_env.tar.gz#environment and point
#                               spark.pyspark.python at ./environment/bin/python
#   dist/score_bleu.py          the entry point to hand to spark-submit
#
# Usage: scripts/package.sh            (from anywhere; works from a clean checkout)
# Env:   PYTHON  interpreter to build with (default: .venv/bin/python, else python3). The packed
#                env's bin/python is a link to that interpreter's base installation, so the same
#                Python must exist at the same path on every node (true on this machine's
#                standalone cluster; on YARN/Kubernetes use an image or nodes that have it).
#
# Always rebuilds from scratch, so running it twice gives the same result. Prints what it built.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ -n "${PYTHON:-}" ]]; then
  PY="$PYTHON"
elif [[ -x "$ROOT/.venv/bin/python" ]]; then
  PY="$ROOT/.venv/bin/python"
else
  PY="$(command -v python3)"
fi

DIST="$ROOT/dist"
BUILD="$ROOT/build/package"
ENV_DIR="$BUILD/env"
WHEEL_DIR="$BUILD/wheel"
ARCHIVE="$DIST/bleu_spark_env.tar.gz"
ENTRY="$DIST/score_bleu.py"

log() { printf 'package.sh: %s\n' "$*" >&2; }

[[ -f "$ROOT/jobs/score_bleu.py" ]] || { log "missing jobs/score_bleu.py"; exit 1; }

t0=$SECONDS
rm -rf "$BUILD"
mkdir -p "$BUILD" "$DIST"

# venv-pack does the packing. Use the one in $PY if it has it (it is in the test extra), else
# install it into a throwaway tools venv so the packed env does not carry it.
if "$PY" -c 'import venv_pack' 2>/dev/null; then
  PACK=("$PY" -m venv_pack)
else
  log "venv-pack not in $PY; installing it into build/package/tools"
  "$PY" -m venv "$BUILD/tools"
  "$BUILD/tools/bin/python" -m pip install --quiet --disable-pip-version-check venv-pack
  PACK=("$BUILD/tools/bin/python" -m venv_pack)
fi

log "python: $("$PY" -c 'import sys; print(sys.version.split()[0], sys._base_executable)')"
log "creating fresh venv $ENV_DIR"
# Created from the base interpreter even when $PY is itself a venv's python; --copies is not
# used on purpose: venv-pack expects bin/python to be a link it can re-point on unpacking.
"$PY" -m venv "$ENV_DIR"
EPY="$ENV_DIR/bin/python"
PIP=("$EPY" -m pip --disable-pip-version-check --no-input)
"${PIP[@]}" install --quiet --upgrade pip

log "building the wheel"
"${PIP[@]}" wheel --quiet --no-deps --wheel-dir "$WHEEL_DIR" "$ROOT"
WHEEL="$(ls "$WHEEL_DIR"/bleu_spark-*.whl)"

# The package is installed with --no-deps and its runtime dependencies are installed explicitly,
# as read from the wheel's own metadata, minus pyspark. Why: the package declares pyspark (the
# driver needs it), but on a cluster the executors' Python workers import pyspark from the
# cluster's Spark installation (Spark puts its pyspark.zip and py4j on their PYTHONPATH, ahead
# of site-packages). A pyspark wheel in the archive would be ~450 MB of jars that every executor
# downloads and unpacks for nothing, and could differ in version from the cluster's Spark.
# Reading the list from the wheel's metadata keeps it in step with pyproject.toml. The
# dependencies go in first, so pip has no missing requirement to warn about.
mapfile -t DEPS < <("$EPY" - "$WHEEL" <<'EOF'
import re
import sys
import zipfile
from email.parser import Parser

with zipfile.ZipFile(sys.argv[1]) as whl:
    meta = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
    requires = Parser().parsestr(whl.read(meta).decode()).get_all("Requires-Dist") or []
for req in requires:
    spec, _, marker = req.partition(";")
    if "extra" in marker:          # optional extras ([test], [bench]) are not runtime deps
        continue
    name = re.match(r"\s*([A-Za-z0-9._-]+)", spec).group(1)
    if re.sub(r"[-_.]+", "-", name).lower() == "pyspark":
        continue
    print(req.strip())
EOF
)
log "installing runtime dependencies: ${DEPS[*]}"
"${PIP[@]}" install --quiet "${DEPS[@]}"
log "installing $(basename "$WHEEL") with --no-deps (pyspark deliberately left out)"
"${PIP[@]}" install --quiet --no-deps "$WHEEL"

# Smoke test the env as an executor would use it: from an unrelated directory, isolated from
# the user's site and PYTHONPATH, with only Spark's own pyspark.zip/py4j added (if the build
# python has pyspark). It must import the package from the env (not from this source tree) and
# run the MeCab-based tokenizers, which need their dictionaries from the sacrebleu extras.
SPARK_PYPATH="$("$PY" - <<'EOF' 2>/dev/null || true
import glob, os
import pyspark
lib = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")
print(os.pathsep.join(sorted(glob.glob(os.path.join(lib, "*.zip")))))
EOF
)"
log "smoke-testing the env from $BUILD/smoke"
mkdir -p "$BUILD/smoke"
# As an executor runs it: without the index checks a test run asks numba for (NUMBA_BOUNDSCHECK),
# under which the built kernels are passed over and compiled again with the checks.
(cd "$BUILD/smoke" && env -u PYTHONHOME -u NUMBA_BOUNDSCHECK PYTHONPATH="$SPARK_PYPATH" PYTHONNOUSERSITE=1 \
  "$EPY" - "$ENV_DIR" <<'EOF'
import os, sys
env = os.path.realpath(sys.argv[1])
import bleu_spark, sacrebleu, pyarrow, sentencepiece, yaml  # noqa: F401
where = os.path.realpath(bleu_spark.__file__)
assert where.startswith(env + os.sep), f"bleu_spark imported from {where}, not from {env}"
from sacrebleu.tokenizers.tokenizer_ja_mecab import TokenizerJaMecab
from sacrebleu.tokenizers.tokenizer_ko_mecab import TokenizerKoMecab
assert TokenizerJaMecab()("今日は良い天気です。").split(), "ja-mecab gave no tokens"
assert TokenizerKoMecab()("오늘은 날씨가 좋습니다.").split(), "ko-mecab gave no tokens"
# The wheel's kernels were compiled when it was built: an executor unpacking the archive loads
# them and compiles nothing (docs/internals.md, "Compiled kernels").
from bleu_spark import build_kernels, compiled
assert compiled.built_here(), f"no built kernels in {compiled.BUILT}"
build_kernels.workload()
assert not build_kernels.compiled_now(), f"compiled at run time: {build_kernels.compiled_now()}"
print(f"  bleu_spark {bleu_spark.__version__}, sacrebleu {sacrebleu.__version__}, "
      f"pyarrow {pyarrow.__version__}: ok", file=sys.stderr)
EOF
)

log "packing with venv-pack"
rm -f "$ARCHIVE"
"${PACK[@]}" --prefix "$ENV_DIR" --output "$ARCHIVE" --quiet
cp "$ROOT/jobs/score_bleu.py" "$ENTRY"

size="$(du -h "$ARCHIVE" | cut -f1)"
echo "built $ARCHIVE ($size, $(basename "$WHEEL") + ${DEPS[*]}, python $("$EPY" -c 'import sys; print(sys.version.split()[0])'))"
echo "built $ENTRY (copy of jobs/score_bleu.py)"
echo "took $((SECONDS - t0)) s"
