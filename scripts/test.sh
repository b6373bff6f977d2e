#!/usr/bin/env bash
# Sets up .venv with the test extra and runs the whole test suite (arguments go to pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test >/dev/null
exec .venv/bin/python -m pytest "$@"
