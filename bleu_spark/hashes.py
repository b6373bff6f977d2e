"""Spark's `xxhash64` of a reference list, computed in the Python workers.

A segment's bootstrap weights are drawn from a hash of its references when it has no key
(`resampling.poisson_weights`); where rows pass through Spark's SQL engine that hash is
`xxhash64(references)`, so rows read by the Python workers directly must get the very same
value, or the same segment would get other weights in another run and paired tests would pair
nothing. Spark hashes an array by chaining: the seed (42) hashes the first non-null element,
that hash is the seed of the next one; null elements and null arrays leave it as it was. A
string is hashed as its UTF-8 bytes with XXH64 (the reference algorithm, little-endian). The
tests compare every value with Spark's own.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .compiled import compiled, utf8_parts

SPARK_SEED = 42  # the seed of Spark's xxhash64 expression

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)


@compiled
def _rotl(x, r):  # pragma: no cover (compiled)
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@compiled
def _word(data, at, n):  # pragma: no cover (compiled)
    """The little-endian unsigned integer of `n` bytes at `at`."""
    value = np.uint64(0)
    for k in range(n):
        value |= np.uint64(data[at + k]) << np.uint64(8 * k)
    return value


@compiled
def _round(acc, lane):  # pragma: no cover (compiled)
    return _rotl(acc + lane * _P2, 31) * _P1


@compiled
def _merge(acc, v):  # pragma: no cover (compiled)
    return (acc ^ _round(np.uint64(0), v)) * _P1 + _P4


@compiled
def xxh64(data, start, end, seed):  # pragma: no cover (compiled)
    """XXH64 of data[start:end] (uint8) with a uint64 seed."""
    length = end - start
    at = start
    if length >= 32:
        v1, v2, v3, v4 = seed + _P1 + _P2, seed + _P2, seed, seed - _P1
        while at + 32 <= end:
            v1 = _round(v1, _word(data, at, 8))
            v2 = _round(v2, _word(data, at + 8, 8))
            v3 = _round(v3, _word(data, at + 16, 8))
            v4 = _round(v4, _word(data, at + 24, 8))
            at += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(_merge(_merge(_merge(h, v1), v2), v3), v4)
    else:
        h = seed + _P5
    h += np.uint64(length)
    while at + 8 <= end:
        h = _rotl(h ^ _round(np.uint64(0), _word(data, at, 8)), 27) * _P1 + _P4
        at += 8
    if at + 4 <= end:
        h = _rotl(h ^ (_word(data, at, 4) * _P1), 23) * _P2 + _P3
        at += 4
    while at < end:
        h = _rotl(h ^ (np.uint64(data[at]) * _P5), 11) * _P1
        at += 1
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    return h ^ (h >> np.uint64(32))


@compiled
def _list_hashes(list_offsets, list_valid, string_offsets, string_valid, data, seed):  # pragma: no cover
    hashes = np.empty(len(list_valid), np.uint64)
    for row in range(len(list_valid)):
        h = seed
        if list_valid[row]:
            for k in range(list_offsets[row], list_offsets[row + 1]):
                if string_valid[k]:
                    h = xxh64(data, string_offsets[k], string_offsets[k + 1], h)
        hashes[row] = h
    return hashes


def _valid(array: pa.Array) -> np.ndarray:
    return array.is_valid().to_numpy(zero_copy_only=False)


def reference_hashes(references: pa.Array) -> np.ndarray:
    """Spark's `xxhash64(references)` of every row of a list<string> array, as int64."""
    strings = references.values
    string_offsets, data = utf8_parts(strings)
    hashes = _list_hashes(references.offsets.to_numpy().astype(np.int64), _valid(references),
                          string_offsets, _valid(strings), data, np.uint64(SPARK_SEED))
    return hashes.view(np.int64)
