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


def test_whole_number_takes_whole_numbers_of_every_type_and_nothing_else():
    """Reviews: ExactFrequency's denominators and dynamic_ntk_base's windows of Fraction(2), Decimal(2), 4096.0 and
    np.float16(2048) are whole numbers (float16 warned of an overflow at the 2^53 bound); 2.5, True, nan are not."""
    import warnings
    from decimal import Decimal
    from fractions import Fraction

    from freqlab.arrays import whole_number

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [whole_number(v) for v in (5, Fraction(4, 2), Decimal("3"), 4096.0, np.float16(2048))] == [
            5, 2, 3, 4096, 2048
        ]  # fmt: skip
    assert [whole_number(v) for v in (2.5, True, float("nan"), 2.0**60, "3", Decimal("1.5"))] == [None] * 6
