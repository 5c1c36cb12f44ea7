"""Exact frequencies: int64 numerators over one common denominator, never wrapped."""

from fractions import Fraction

import numpy as np
import pytest

from freqlab import FreqlabError
from freqlab.frequency.exact import ExactFrequency


def test_sums_take_the_least_common_denominator_and_pad_the_shorter_frequency():
    a = ExactFrequency(np.array([1, 1, 1]), 3)
    b = ExactFrequency(np.array([1]), 2)
    total = a + b
    assert total.denominator == 6 and total.numerator.tolist() == [5, 2, 2]
    assert [total.value(i) for i in range(3)] == [Fraction(5, 6), Fraction(1, 3), Fraction(1, 3)]


def test_scaling_is_exact_and_reduced():
    f = ExactFrequency(np.array([6, 4, 2]), 1, dropped_tokens=3)
    half = f.scale("0.5")
    assert half.numerator.tolist() == [3, 2, 1] and half.denominator == 1 and half.dropped_tokens == Fraction(3, 2)
    assert f.scale(Fraction(1, 4)) == ExactFrequency(np.array([3, 2, 1]), 2)
    assert f.scale(Fraction(1, 4)).tokens == Fraction(3, 2)


def test_overflow_is_refused_rather_than_wrapped():
    big = ExactFrequency(np.array([1 << 62]))
    with pytest.raises(FreqlabError, match="exceeds int64"):
        big + big
    with pytest.raises(FreqlabError, match="exceeds int64"):
        big.scale(4)
    with pytest.raises(FreqlabError, match="exceeds int64"):
        ExactFrequency.from_fractions([Fraction(1 << 63)])


def test_from_fractions_and_bad_denominators():
    f = ExactFrequency.from_fractions([Fraction(1, 2), Fraction(1, 3), 0])
    assert f.numerator.tolist() == [3, 2, 0] and f.denominator == 6 and f.f.tolist() == [0.5, 1 / 3, 0.0]
    with pytest.raises(FreqlabError, match="denominator must be a positive integer, got 0"):
        ExactFrequency(np.array([1]), 0)
