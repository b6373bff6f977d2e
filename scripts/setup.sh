#!/usr/bin/env bash
# Sets up .venv with the package (and, with `--test`, the test extra) and checks for Java 17+.
# Source-free: run it as `scripts/setup.sh [--test]`; it prints the venv's python on success.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
extra=""
[ "${1:-}" = "--test" ] && extra="[test]"

java_major() {  # major version of the java on PATH (or JAVA_HOME), empty if none
  local java=java
  [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && java="$JAVA_HOME/bin/java"
  command -v "$java" >/dev/null 2>&1 || return 0
  "$java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1
}

major=$(java_major)
if [ -z "$major" ] || [ "$major" -lt 17 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: no Java 17+ found; installing openjdk-17-jre-headless with apt-get" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless) >&2
  else
    echo "setup: Spark needs Java 17 or newer (found: ${major:-none}); install a JDK 17+ (e.g. apt-get install openjdk-17-jre-headless) and set JAVA_HOME" >&2
    exit 3
  fi
fi

# The report tests drive Debian's Chromium through Playwright (never Playwright's own browser download).
if [ -n "$extra" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: no chromium found; installing Debian's chromium with apt-get" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >&2
  else
    echo "setup: the report tests need Debian's chromium (/usr/bin/chromium); install it as root: apt-get install chromium" >&2
    exit 3
  fi
fi

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "setup: Python 3.10+ is needed (found: $("$PYTHON" --version 2>&1))" >&2
  exit 3
fi

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.installed$extra"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  "$VENV/bin/python" -m pip install -q -e ".$extra" >&2
  touch "$stamp"
fi
echo "$VENV/bin/python"
