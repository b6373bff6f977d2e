"""Loops over whole batches as machine code (numba): the few steps numpy cannot do without a
Python loop per segment or per string."""
from __future__ import annotations

import numba


def compiled(function):
    """`function` compiled (numba, no Python objects inside), cached on disk where the package
    folder or the user's cache folder can be written, else compiled once per process."""
    try:
        return numba.njit(cache=True, nogil=True)(function)
    except RuntimeError:  # numba found no writable cache folder
        return numba.njit(nogil=True)(function)
