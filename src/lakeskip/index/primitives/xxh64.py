"""XXH64 (seed 0) of every value of a binary Arrow array, vectorised with numpy.

Neither pyarrow nor the ``xxhash`` package hashes a whole column, and one ``xxh64_intdigest``
call per value runs at ~3 M values/s. XXH64 of a value of length ``L`` is a fixed sequence of
64-bit steps that depends only on ``L`` (32-byte stripes, then 8-, 4- and 1-byte tails), so the
values are grouped by length and each group is hashed with whole-array steps over 8-byte
words gathered from an unaligned uint64 view of the Arrow data buffer: no per-row Python and
no masks. Small groups and long values are hashed value by value with ``xxhash`` (see
:data:`MIN_GROUP`), which also bounds the cost when lengths are all different.

Algorithm (``xxhash`` spec, all arithmetic mod 2**64, words little-endian)::

    L >= 32: v1..v4 = P1+P2, P2, 0, -P1; per 32-byte stripe v_i = round(v_i, word_i)
             h = rotl(v1,1) + rotl(v2,7) + rotl(v3,12) + rotl(v4,18); h = merge(h, v1..v4)
    L <  32: h = P5
    h += L
    each 8-byte word w: h ^= round(0, w);   h = rotl(h,27) * P1 + P4
    a 4-byte word u:    h ^= u * P1;        h = rotl(h,23) * P2 + P3
    each byte b:        h ^= b * P5;        h = rotl(h,11) * P1
    avalanche: h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32
    round(acc, w) = rotl(acc + w * P2, 31) * P1;  merge(h, v) = (h ^ round(0, v)) * P1 + P4

>>> import pyarrow as pa, xxhash
>>> vals = [b"", b"a", b"abcd", b"0123456789abcdef" * 3]
>>> xxh64_binary(pa.array(vals * 300, pa.binary()))[:4].tolist() == [
...     xxhash.xxh64_intdigest(v) for v in vals]
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

__all__ = ["MAX_VECTOR_LENGTH", "MIN_GROUP", "xxh64_binary"]

_U = np.uint64
P1 = _U(0x9E3779B185EBCA87)
P2 = _U(0xC2B2AE3D27D4EB4F)
P3 = _U(0x165667B19E3779F9)
P4 = _U(0x85EBCA77C2B2AE63)
P5 = _U(0x27D4EB2F165667C5)

#: Groups (values of one length) smaller than this, or of values longer than
#: :data:`MAX_VECTOR_LENGTH`, are hashed value by value. Measured per group (2 cores, loaded):
#: a vectorised group costs ~50 us + ~1 us per 8 bytes of length plus 0.05 us (7 B) .. 0.2 us
#: (100 B) per value; ``xxh64_intdigest`` costs 0.25-0.35 us per value at any length, so a group
#: wins from ~200 values, and values of 64 bytes and more gain little or lose.
MIN_GROUP = 256
MAX_VECTOR_LENGTH = 63


def _rotl(x: Any, r: int) -> Any:
    return (x << _U(r)) | (x >> _U(64 - r))


def _round(acc: Any, word: Any) -> Any:
    return _rotl(acc + word * P2, 31) * P1


def _hash_group(words: Any, starts: Any, length: int) -> Any:
    """XXH64 of the values of length ``length`` starting at byte offsets ``starts``;
    ``words[i]`` is the little-endian 8-byte word at byte ``i`` of the (padded) data."""
    rows = len(starts)
    pos = 0
    if length >= 32:
        v1 = np.full(rows, P1 + P2, dtype=_U)
        v2 = np.full(rows, P2, dtype=_U)
        v3 = np.zeros(rows, dtype=_U)
        v4 = np.full(rows, _U(0) - P1, dtype=_U)
        while pos + 32 <= length:
            v1 = _round(v1, words[starts + pos])
            v2 = _round(v2, words[starts + (pos + 8)])
            v3 = _round(v3, words[starts + (pos + 16)])
            v4 = _round(v4, words[starts + (pos + 24)])
            pos += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        for v in (v1, v2, v3, v4):
            h = (h ^ _round(_U(0), v)) * P1 + P4
    else:
        h = np.full(rows, P5, dtype=_U)
    h += _U(length)
    while pos + 8 <= length:
        h ^= _round(_U(0), words[starts + pos])
        h = _rotl(h, 27) * P1 + P4
        pos += 8
    if pos < length:
        tail = words[starts + pos]  # the last 1..7 bytes, plus bytes past the value
        shift = 0
        if pos + 4 <= length:
            h ^= (tail & _U(0xFFFFFFFF)) * P1
            h = _rotl(h, 23) * P2 + P3
            shift = 32
            pos += 4
        while pos < length:
            h ^= ((tail >> _U(shift)) & _U(0xFF)) * P5
            h = _rotl(h, 11) * P1
            shift += 8
            pos += 1
    h ^= h >> _U(33)
    h *= P2
    h ^= h >> _U(29)
    h *= P3
    h ^= h >> _U(32)
    return h


def _word_view(data: Any) -> Any:
    """Every unaligned little-endian uint64 of ``data`` (padded with 8 zero bytes so that
    the word at any value's start exists): ``view[i]`` = bytes ``i..i+7``."""
    padded = np.zeros(len(data) + 8, dtype=np.uint8)
    padded[: len(data)] = data
    return np.ndarray(shape=(len(data) + 1,), dtype="<u8", buffer=padded, strides=(1,))


def xxh64_binary(arr: pa.Array) -> Any:
    """uint64 XXH64 (seed 0) of each value of a null-free ``binary``/``large_binary`` array."""
    n = len(arr)
    out = np.empty(n, dtype=_U)
    if n == 0:
        return out
    if arr.null_count:
        raise ValueError("xxh64_binary needs an array without nulls")
    off_type = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=off_type, count=arr.offset + n + 1)[arr.offset :]
    offsets = offsets.astype(np.int64)
    data = (
        np.frombuffer(bufs[2], dtype=np.uint8)
        if bufs[2] is not None
        else np.empty(0, dtype=np.uint8)
    )
    lengths = np.diff(offsets)
    counts = np.bincount(np.minimum(lengths, MAX_VECTOR_LENGTH + 1))[: MAX_VECTOR_LENGTH + 1]
    vector_lengths = np.flatnonzero(counts >= MIN_GROUP)
    h = xxhash.xxh64_intdigest
    if len(vector_lengths) == 0:
        # bytes objects: xxhash hashes them faster than memoryview slices of the buffer
        return np.fromiter((h(v) for v in arr.to_pylist()), dtype=_U, count=n)
    words = _word_view(data)
    vectorised = np.zeros(MAX_VECTOR_LENGTH + 2, dtype=np.bool_)
    vectorised[vector_lengths] = True
    with np.errstate(over="ignore"):
        for length in vector_lengths.tolist():
            idx = np.flatnonzero(lengths == length)
            out[idx] = _hash_group(words, offsets[idx], length)
    slow = np.flatnonzero(~vectorised[np.minimum(lengths, MAX_VECTOR_LENGTH + 1)])
    if len(slow):
        values = arr.take(pa.array(slow)).to_pylist()
        out[slow] = np.fromiter((h(v) for v in values), dtype=_U, count=len(slow))
    return out
