"""bleu-spark's one cache folder on this machine: `BLEU_SPARK_CACHE_DIR`, else
`$XDG_CACHE_HOME/bleu-spark`, else `~/.cache/bleu-spark`. It holds the driver JVM's class-data
archives and the note that the kernels line was said; safe to delete whole."""
from __future__ import annotations

import os

ENV = "BLEU_SPARK_CACHE_DIR"


def folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get(ENV) or os.path.join(base, "bleu-spark")
