#!/usr/bin/env bash
# Quick start: set up, then score the bundled WMT22 sample on local[*] and print the scores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
out=${1:-out/demo}
# Not exec'd: the run's last line counts the seconds since its own process started, not the setup's.
.venv/bin/bleu-spark score --input samples/wmt22_sample.parquet --output "$out" --report
