"""Exact frequencies: int64 numerators over one common denominator, never wrapped."""

from decimal import Decimal
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


def test_values_beyond_int64_become_python_integers_never_wrapped():
    big = ExactFrequency(np.array([1 << 62, 1]))
    total = big + big
    assert total.numerator.dtype == object and total.numerator.tolist() == [1 << 63, 2]
    assert big.scale(4).numerator.tolist() == [1 << 64, 4] and big.scale(4).f.tolist() == [2.0**64, 4.0]
    assert (total.scale(Fraction(1, 2))).numerator.dtype == np.int64  # back to int64 once it fits
    assert ExactFrequency.from_fractions([Fraction(1 << 63, 3)]).value(0) == Fraction(1 << 63, 3)
    # -2^63 has no int64 absolute value (np.abs gives it back): the bound is taken without it
    lowest = ExactFrequency(np.array([-(1 << 63)]))
    assert (lowest + ExactFrequency(np.array([-1]))).numerator.tolist() == [-(1 << 63) - 1]
    assert lowest.scale(2).numerator.tolist() == [-(1 << 64)]


def test_from_fractions_and_bad_denominators():
    f = ExactFrequency.from_fractions([Fraction(1, 2), Fraction(1, 3), 0])
    assert f.numerator.tolist() == [3, 2, 0] and f.denominator == 6 and f.f.tolist() == [0.5, 1 / 3, 0.0]
    with pytest.raises(FreqlabError, match="denominator must be a positive integer, got 0"):
        ExactFrequency(np.array([1]), 0)


def test_floats_of_huge_numerators_and_denominators_are_correctly_rounded():
    f = ExactFrequency(np.array([3 << 1200, 1 << 1200], dtype=object), 1 << 1201)
    assert f.f.tolist() == [1.5, 0.5]


def test_a_position_outside_the_window_and_a_factor_that_is_no_number_are_named():
    """A review: value(-1) was f(L - 1) (numpy's indexing from the end), value(5) an IndexError, scale(nan)
    Fraction's own "cannot convert NaN to integer ratio"."""
    f = ExactFrequency(np.array([6, 3, 1]), 2)
    assert f.value(0) == 3 and f.value(2) == Fraction(1, 2)
    for i in (-1, 3, 1.0, True):
        with pytest.raises(FreqlabError, match=r"^a position is an integer in 0\.\.2, got"):
            f.value(i)
    for factor in (float("nan"), float("inf"), "x"):
        with pytest.raises(FreqlabError, match=r"^a frequency is scaled by a finite factor >= 0, got"):
            f.scale(factor)
    assert f.scale("0.5").value(0) == f.scale(np.float32(0.5)).value(0) == Fraction(3, 2)


@pytest.mark.parametrize(
    ("numerator", "denominator", "message"),
    [
        ([1.5, 2**70], 1, "needs integer counts, got 1.5"),  # 1.5 was read as 1
        ([[3, 2], [1, 0]], 1, r"one row of counts, got shape \(2, 2\)"),  # was flattened into one f
        ([3], float("nan"), "denominator must be a positive integer, got nan"),
        ([3], 0, "denominator must be a positive integer, got 0"),
    ],
)
def test_an_exact_frequency_made_by_hand_refuses_what_is_no_exact_count(numerator, denominator, message):
    """A review: ExactFrequency's own checks truncated floats and flattened tables."""
    with pytest.raises(FreqlabError, match=message):
        ExactFrequency(numerator, denominator)


def test_an_exact_frequency_takes_python_integers_past_int64_and_no_counts():
    assert ExactFrequency([2**70, 3]).numerator.tolist() == [2**70, 3]
    assert ExactFrequency([]).L == 0
    # whole numbers of other types are counts, as before the checks (a second review)
    assert ExactFrequency([Fraction(2, 1), 1]).numerator.tolist() == [2, 1]
    assert ExactFrequency([Decimal("3")]).numerator.tolist() == [3]
    for denominator in (Fraction(2), Decimal(2), np.float32(2.0), 2.0):
        assert ExactFrequency([4, 2], denominator).denominator == 2
    assert ExactFrequency([3.0, 2.0]).numerator.tolist() == [3, 2]  # a float array as an object array's floats
    with pytest.raises(FreqlabError, match="scaled by a finite factor >= 0, got True"):  # was a factor of 1
        ExactFrequency([3]).scale(True)


def test_a_float_factor_is_read_as_written_as_mixtures_read_weights():
    """0.1 is 1/10: f(0) = 10 scaled by 0.1 is 1, not 18014398509481985/18014398509481984 (a review)."""
    assert ExactFrequency([10]).scale(0.1).value(0) == 1
    assert ExactFrequency([10]).scale(np.float64(0.25)).value(0) == Fraction(5, 2)
    assert ExactFrequency([10, 5]).scale(np.float32(0.1)).value(0) == 1  # as numpy writes it, not 0.10000000149
