"""Compiles every kernel, for every argument type the job passes, into `bleu_spark/_kernels/`
(`compiled.BUILT`) for the CPUs of `compiled.BUILT_CPUS`, so that no run compiles them.

`setup.py` runs it when a wheel is built (`pip install .`, `pip wheel .`, `scripts/package.sh`),
once per CPU of `compiled.BUILT_CPUS` the target has (x86-64-v3 on x86-64, and generic):

    BLEU_SPARK_BUILD_KERNELS=1 NUMBA_CPU_NAME=generic NUMBA_CPU_FEATURES= \
        python -m bleu_spark.build_kernels

The variables must be set before numba is imported, hence a process of its own. The argument
types come from running the kernels, not from a list kept by hand: every metric, with every
option that takes another code path, over a few rows covering the odd cases (empty strings,
null references, non-ASCII text), and the bootstrap's reference hash. `compiled_now()` says
which kernels compiled in a process; the tests use it to check that a run after the build
compiled none.
"""
from __future__ import annotations

import importlib
import os
import sys

# The kernels of the text layer and the bootstrap's hash; each metric names its own.
SHARED_KERNEL_MODULES = ("bleu_spark.tokenizers", "bleu_spark.hashes")


def kernel_modules() -> tuple:
    from .metrics import REGISTRY

    return SHARED_KERNEL_MODULES + tuple(dict.fromkeys(m for metric in REGISTRY.values()
                                                       for m in metric.kernel_modules))

_CANDIDATES = ["The cat sat on the mat.", "", "Guten Morgen!  Wie geht's?\u00a0Gut.",
               "今日は良い天気です。", "a b a b a b c", "Ölçü — «test» 42,5 %"]
_REFERENCES = [["The cat sat on the mat.", "A cat was on the mat."], ["", None],
               ["Guten Morgen! Wie geht es?"], ["今日はいい天気です。"], ["b a b a c", "a"],
               [None, "Ölçü «test» 42.5%"]]


def workload() -> None:
    """Every metric's segment statistics over a few rows, with each option that changes which
    kernels run or with what types; and the reference hash."""
    import pyarrow as pa

    from .hashes import reference_hashes
    from .metrics import REGISTRY, configured
    from .tokenizers import LineTokenizer

    candidates = pa.array(_CANDIDATES, pa.string())
    references = pa.array(_REFERENCES, pa.list_(pa.string()))
    settings_variants = [
        {},
        {"chrf_whitespace": True, "chrf_lowercase": True, "chrf_eps_smoothing": True,
         "ter_case_sensitive": True, "ter_normalized": True, "ter_no_punct": True,
         "ter_asian_support": True},
    ]
    for settings in settings_variants:
        for lowercase in (False, True):
            for metric in configured(list(REGISTRY),
                                     {**settings, "lowercase": lowercase}, None):
                for tokenize in (["13a", "zh", "intl", "char", "none"] if metric.uses_tokenizer
                                 else [None]):
                    tokenizer = (LineTokenizer(tokenize, lowercase, None) if tokenize else None)
                    metric.measure(candidates, references, tokenizer)
    reference_hashes(references)


def dispatchers():
    """Every compiled kernel of the package: (module.name, numba dispatcher)."""
    from . import compiled

    for name in kernel_modules():
        importlib.import_module(name)
    compiled.bind_all()  # the stand-ins become dispatchers
    for name in kernel_modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (hasattr(value, "signatures") and hasattr(value, "py_func")
                    and value.py_func.__module__ == name):
                yield f"{name}.{attr}", value


def compiled_now() -> dict:
    """{kernel: number of argument types it compiled in this process} (not loaded from disk)."""
    out = {}
    for name, dispatcher in dispatchers():
        misses = sum(dispatcher.stats.cache_misses.values())
        if misses:
            out[name] = misses
    return out


def main() -> int:
    from . import compiled

    cpu = os.environ.get("NUMBA_CPU_NAME")
    if (os.environ.get("BLEU_SPARK_BUILD_KERNELS") != "1" or cpu not in compiled.BUILT_CPUS
            or os.environ.get("NUMBA_CPU_FEATURES", "") != ""):
        print(f"build_kernels: run with BLEU_SPARK_BUILD_KERNELS=1, NUMBA_CPU_NAME one of "
              f"{', '.join(compiled.BUILT_CPUS)} and NUMBA_CPU_FEATURES empty", file=sys.stderr)
        return 2
    if compiled.load_numba() is None:
        print("build_kernels: numba is not installed; the kernels will run as Python",
              file=sys.stderr)
        return 0
    os.makedirs(compiled.BUILT, exist_ok=True)
    workload()
    built = sorted(f for f in os.listdir(compiled.BUILT) if f.endswith(".nbc"))
    kernels = {name: len(d.signatures) for name, d in dispatchers()}
    print(f"build_kernels: {cpu}: {sum(kernels.values())} argument types of {len(kernels)} "
          f"functions; {len(built)} compiled kernels in {compiled.BUILT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
