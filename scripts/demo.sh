#!/usr/bin/env bash
# Quick start: set up, then score the bundled WMT22 sample on local[*] and print the scores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
out=${1:-out/demo}
exec .venv/bin/bleu-spark score --input samples/wmt22_sample.parquet --output "$out" --report
