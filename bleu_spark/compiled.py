"""Loops over whole batches as machine code (numba), for the few steps numpy cannot do without
a Python loop per segment or per string; and the bytes of a string array as numpy arrays."""
from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa


def compiled(function):
    """`function` compiled (numba, no Python objects inside), cached on disk where the package
    folder or the user's cache folder can be written, else compiled once per process."""
    try:
        return numba.njit(cache=True, nogil=True)(function)
    except RuntimeError:  # numba found no writable cache folder
        return numba.njit(nogil=True)(function)


def utf8_parts(strings: pa.Array):
    """A string array's bytes as numpy: (offsets, int64, one more than there are strings, into
    data; data, uint8, the whole buffer). No copy but the offsets' widening."""
    width = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    offsets = np.frombuffer(strings.buffers()[1], width)[strings.offset:strings.offset + len(strings) + 1]
    return offsets.astype(np.int64), np.frombuffer(strings.buffers()[2] or b"\0", np.uint8)
