"""Exact integer helpers (freqlab.arrays): sums and dot products never wrap, and agree with Python's integers."""

from __future__ import annotations

import numpy as np

from freqlab import arrays
from freqlab.arrays import exact_dot, exact_sum


def test_sums_and_dots_past_int64_agree_with_python_integers_a_chunk_at_a_time(monkeypatch):
    """The Python-integer fallback goes a chunk at a time (memory flat: a review measured 40 bytes a position through
    whole object arrays); chunk edges and signs near ±2^63 change nothing."""
    monkeypatch.setattr(arrays, "OBJECT_CHUNK", 7)
    rng = np.random.default_rng(5)
    for size in (0, 1, 6, 7, 8, 50):
        a = rng.integers(-(2**63), 2**63 - 1, size, dtype=np.int64, endpoint=True)
        b = rng.integers(-(2**40), 2**40, size, dtype=np.int64)
        assert exact_sum(a) == sum(int(x) for x in a)
        assert exact_dot(a, b) == sum(int(x) * int(y) for x, y in zip(a, b, strict=True))


def test_a_dot_of_signed_and_unsigned_arrays_stays_exact():
    """np.dot of int64 and uint64 goes through float64 (a review: 3458764526705442816 for 3458764526705442825)."""
    a, b = np.array([2**30 + 1] * 3, np.int64), np.array([2**30 + 3] * 3, np.uint64)
    assert exact_dot(a, b) == 3 * (2**30 + 1) * (2**30 + 3) == 3458764526705442825
