"""Loops over whole batches as machine code (numba), for the few steps numpy cannot do without
a Python loop per segment or per string; and the bytes of a string array as numpy arrays.

Where the machine code comes from, first found first used (docs/internals.md, "Compiled
kernels"):

1. `bleu_spark/_kernels/`, written when the wheel is built (`setup.py` runs
   `python -m bleu_spark.build_kernels`): every kernel for every argument type the job passes,
   compiled for x86-64-v3 and for the target's baseline CPU (`BUILT_CPUS`), so a new machine,
   a new executor or a cluster archive loads the best its CPU runs and compiles nothing. An
   entry is used only if the numba version, the Python version, the target (e.g.
   x86_64-unknown-linux-gnu) and the kernel's source and bytecode all match; otherwise it is
   not found, and:
2. numba's own cache on disk (next to the source, or in the user's cache folder), written the
   first time a kernel compiles on this machine, for this machine's CPU;
3. compiling at first use (about 20 s for all the kernels of the four metrics).

Without numba (a platform it has no wheel for, or `BLEU_SPARK_PURE_PYTHON=1`) the kernels run
as the plain Python functions they are written as: slower, the same statistics.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import sys

import numpy as np
import pyarrow as pa

from . import cache, notices

# BLEU_SPARK_KERNELS_DIR: another folder of built kernels (the tests build into one of their own)
BUILT = os.environ.get("BLEU_SPARK_KERNELS_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "_kernels")
# The CPUs the built kernels are compiled for, best first, each with the host features it needs
# (LLVM's names): x86-64-v3 (AVX2, FMA, BMI: Intel since 2013, AMD since 2015) where the target
# is x86-64, and "generic", the target's baseline (SSE2 on x86-64), which every machine of the
# target runs. v3 code saves a few percent of the kernels' time (docs/benchmarks.md).
BUILT_CPUS = {"x86-64-v3": ("avx2", "bmi", "bmi2", "fma", "f16c", "lzcnt", "movbe"),
              "generic": ()}
_BUILDING = os.environ.get("BLEU_SPARK_BUILD_KERNELS") == "1"  # set by build_kernels only

_numba = None  # the module, once `load_numba` imported it; False where it cannot be


def load_numba():
    """numba, imported on first use (a quarter of a second of CPU and more, and the driver of
    a Spark run calls no kernel), or None where it cannot load: the kernels then run as
    Python."""
    global _numba
    if _numba is None:
        try:
            if os.environ.get("BLEU_SPARK_PURE_PYTHON") == "1":
                raise ImportError("BLEU_SPARK_PURE_PYTHON=1")
            import numba
            _numba = numba
            _define_cache(numba)
        except ImportError:
            _numba = False
    return _numba or None


def _define_cache(numba) -> None:
    from numba.core import caching

    global _KernelCache

    class _BuiltLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
        """The folder of built kernels; accepted even where it cannot be written, since it is
        read. Its entries are keyed by the source file's content (numba's stamp), never its
        path or time, so they hold wherever the package is unpacked."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno

        def get_cache_path(self):
            return BUILT

        @classmethod
        def from_function(cls, py_func, py_file):
            return cls(py_func, py_file) if os.path.exists(py_file) else None

    class _Impl(caching.CompileResultCacheImpl):
        # Building writes only the built folder; at run time numba's own folders come first
        # (what this machine compiled) and the built folder last (so a read-only install with
        # no writable cache folder still finds it).
        _locator_classes = ([_BuiltLocator] if _BUILDING else
                            [*caching.CompileResultCacheImpl._locator_classes, _BuiltLocator])

    class KernelCache(caching.FunctionCache):
        """numba's per-function cache, that looks in the built folder first (for the portable
        CPU), then where numba looks (for this CPU)."""
        _impl_class = _Impl

        def __init__(self, py_func):
            super().__init__(py_func)
            self._built = caching.IndexDataCacheFile(
                cache_path=BUILT, filename_base=self._impl.filename_base,
                source_stamp=self._impl.locator.get_source_stamp())

        def load_overload(self, sig, target_context):
            # numba refreshes the compiler's registries before it loads an entry (a tenth of a
            # second or more of a fresh process, in an executor's first task); a built entry is
            # machine code loaded whole and needs of that only numba's runtime, which allocates
            # the arrays the kernels make (compiling refreshes the rest itself). The built
            # kernels call nothing else refresh registers (no hashing, strings or typed
            # containers): a kernel that did would need the refresh here.
            from numba.core.runtime import rtsys

            rtsys.initialize(target_context)
            built = self._guarded(self._load_built, sig, target_context)
            if built is not None:
                return built
            return super().load_overload(sig, target_context)

        def _load_overload(self, sig, target_context):
            # numba's own cache, read through the same checks as the built folder
            def load(sig, target_context):
                if not self._enabled:
                    return None
                data = self._cache_file.load(self._index_key(sig, target_context.codegen()))
                return self._rebuilt(data, sig, target_context)

            return self._guarded(load, sig, target_context)

        def _guarded(self, load, sig, target_context):
            """An entry that cannot be used is a miss, compiled again (the same statistics),
            never a failed run: one written under another module name (a second checkout
            imported beside this one, as the benchmark does) quietly; a damaged one (unreadable,
            truncated, garbage, another kernel's, another build's) with one warning a process."""
            try:
                return load(sig, target_context)
            except (ImportError, _OtherModule):
                return None
            except Exception as exc:  # noqa: BLE001 (any reading or unpickling error: a miss)
                _damaged(self._py_func, exc)
                return None

        def _rebuilt(self, data, sig, target_context):
            """A loaded entry made a kernel again, once it is checked to be this kernel's for
            these argument types: a file of another kernel swapped in would run its code."""
            if data is None:
                return None
            fndesc, signature = data[1], data[3]
            if fndesc.qualname != self._py_func.__qualname__ or tuple(signature.args) != tuple(
                    getattr(sig, "args", sig)):
                raise ValueError(f"an entry of {fndesc.modname}.{fndesc.qualname}{signature}")
            if fndesc.modname != self._py_func.__module__:
                raise _OtherModule(fndesc.modname)
            return self._impl.rebuild(target_context, data)

        def _load_built(self, sig, target_context):
            # Built without index checks: a process that asks for them (the tests) compiles.
            if self._enabled and not _BUILDING and not numba.core.config.BOUNDSCHECK:
                sig_, (triple, _, _), code = self._index_key(sig, target_context.codegen())
                overloads = self._built._load_index()  # {} where there is none, or stale
                for cpu in _usable_cpus():
                    name = overloads.get((sig_, (triple, cpu, ""), code))
                    if name is not None:  # named by the index: its file must load (numba's
                        # own load takes an unreadable or missing one for a quiet miss)
                        return self._rebuilt(self._built._load_data(name), sig, target_context)
            return None

        def save_overload(self, sig, data):
            try:
                super().save_overload(sig, data)
            except Exception:  # noqa: BLE001 (a read-only or damaged folder: the kernel stays
                pass           # compiled in this process)

    _KernelCache = KernelCache


_KernelCache = None
_cpus = None


class _OtherModule(Exception):
    """A cached entry of this code imported under another module name: a quiet miss."""


_warned: list = []  # the damaged entry this process said, at most one


def _damaged(function, exc: Exception) -> None:
    """One warning a process for kernel entries that cannot be used: they compile again."""
    if _warned:
        return
    _warned.append(function)

    reason = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:200]
    notices.say_warnings([f"a compiled kernel of {function.__module__}.{function.__qualname__} "
                          f"cannot be loaded ({reason}; in {BUILT} or numba's cache): the kernels "
                          f"compile again, the same statistics, slower to start"])


def _usable_cpus() -> list:
    """The built kernels' CPUs this machine runs, best first."""
    global _cpus
    if _cpus is None:
        from llvmlite import binding

        host = binding.get_host_cpu_features()
        _cpus = [cpu for cpu, needs in BUILT_CPUS.items() if all(host.get(f) for f in needs)]
    return _cpus


_kernels: list = []  # every kernel defined, as (its function, its stand-in)


class _Kernel:
    """A kernel's stand-in until a kernel is first called: then numba is imported and every
    kernel's name, in every module that holds one, is bound to its compiled dispatcher (or to
    the plain function without numba), since compiled code calls the kernels it names."""

    def __init__(self, function):
        self.function = function
        self.__name__, self.__doc__ = function.__name__, function.__doc__
        self.__module__, self.__qualname__ = function.__module__, function.__qualname__

    def __call__(self, *args):
        return bind_all()[self](*args)

    def __reduce__(self):  # pickled by reference, as a module's function is
        return (_bound, (self.function.__module__, self.function.__name__))


def _bound(module: str, name: str):
    return getattr(sys.modules[module] if module in sys.modules else
                   __import__(module, fromlist=[name]), name)


_bound_to: dict = {}


def bind_all() -> dict:
    """Binds every kernel's name to its dispatcher (or function); {stand-in: what it is now}."""
    numba = load_numba()
    for function, stand_in in _kernels:
        if stand_in in _bound_to:
            continue
        if numba is None:
            target = function
        else:
            target = numba.njit(nogil=True)(function)
            try:
                target._cache = _KernelCache(function)  # what `cache=True` sets, our lookup
            except RuntimeError:  # no source file to key a cache by: compiled in this process
                pass
        _bound_to[stand_in] = target
    for module in {sys.modules[f.__module__] for f, _ in _kernels if f.__module__ in sys.modules}:
        for name, value in list(vars(module).items()):
            if isinstance(value, _Kernel):
                setattr(module, name, _bound_to[value])
    return _bound_to


def compiled(function):
    """`function` compiled (numba, no Python objects inside) when first called, its machine
    code loaded from the built kernels or numba's cache where they have it; run as Python
    without numba."""
    stand_in = _Kernel(function)
    _kernels.append((function, stand_in))
    if _bound_to:  # defined after the others were bound (a module imported late)
        return bind_all()[stand_in]
    return stand_in


def _numba_version():
    """numba's version from its installed metadata, without importing it; None if absent."""
    from importlib import metadata

    try:
        return metadata.version("numba")
    except metadata.PackageNotFoundError:
        return None


def built_here() -> bool:
    """Whether this process would load kernels built ahead of time: numba is installed, and
    the built folder has kernels for this Python written by this numba version. Imports no
    numba (the driver of a Spark run asks, and runs no kernel)."""
    version = _numba_version()
    if (version is None or os.environ.get("BLEU_SPARK_PURE_PYTHON") == "1"
            or not os.path.isdir(BUILT)):
        return False
    tag = f".py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}.nbi"
    try:
        index = next((f for f in sorted(os.listdir(BUILT)) if f.endswith(tag)), None)
        if index is None:
            return False
        with open(os.path.join(BUILT, index), "rb") as f:
            return pickle.load(f) == version  # an index starts with the version that wrote it
    except Exception:  # noqa: BLE001 (unreadable or damaged: not kernels this process loads)
        return False


def status():
    """What a progress line says of the kernels before the first rows are scored, where they
    are slow to come; None when they were built ahead of time."""
    version = _numba_version()
    if version is None or os.environ.get("BLEU_SPARK_PURE_PYTHON") == "1":
        return "numba is not loaded here: the kernels run as plain Python (slower, the same statistics)"
    if built_here() or not _first_word(version):
        return None
    return (f"no kernels built for numba {version} and Python "
            f"{sys.version_info[0]}.{sys.version_info[1]} in this install: each Python worker "
            f"compiles the ones it uses, unless numba's cache has them (about 20 s; said once "
            f"per install)")


def _first_word(version: str) -> bool:
    """Whether the kernels line is said now: once per install (its kernels folder, numba and
    Python version), as numba's cache keeps what compiles (an editable install's first run
    compiles, the next ones load), remembered by an empty file in the user's cache folder; said
    where that cannot be written, as nothing remembers it."""
    install = f"{os.path.realpath(BUILT)}|{version}|{sys.version_info[0]}.{sys.version_info[1]}"
    marker = os.path.join(cache.folder(), "kernels-said-" + hashlib.sha256(install.encode()).hexdigest()[:20])
    try:
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    except OSError:
        pass
    return True


def utf8_parts(strings: pa.Array):
    """A string array's bytes as numpy: (offsets, int64, one more than there are strings, into
    data; data, uint8, the whole buffer). No copy but the offsets' widening."""
    width = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    offsets = np.frombuffer(strings.buffers()[1], width)[strings.offset:strings.offset + len(strings) + 1]
    return offsets.astype(np.int64), np.frombuffer(strings.buffers()[2] or b"\0", np.uint8)
