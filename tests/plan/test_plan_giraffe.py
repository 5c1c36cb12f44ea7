"""Giraffe bases (seed 004, Sec. 4): power basis (Eq. 2) and truncated basis (Eq. 3) on hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from freqlab.errors import FreqlabError
from freqlab.plan.giraffe import (
    TRUNCATED_A,
    TRUNCATED_B,
    TRUNCATED_RHO,
    power_basis,
    rope_basis,
    truncated_basis,
)


def test_rope_basis_eq1():
    # d = 8, base 10000: θ_i = 10000^(-2(i-1)/8) = 1, 0.1, 0.01, 0.001
    assert rope_basis(8) == pytest.approx([1.0, 0.1, 0.01, 0.001])


def test_power_basis_eq2_by_hand():
    # θ*_i = θ_i (1 - 2i/d)^k with d = 8, k = 1/2: factors √(3/4), √(1/2), √(1/4), 0
    expected = [math.sqrt(3) / 2, 0.1 / math.sqrt(2), 0.01 * 0.5, 0.0]
    assert power_basis(8, 0.5) == pytest.approx(expected)
    assert power_basis(8, 0.0) == pytest.approx(rope_basis(8))  # k = 0 is RoPE itself
    assert power_basis(8, 2.0) == pytest.approx([0.5625, 0.025, 0.000625, 0.0])  # (3/4)², (1/2)², (1/4)², 0


def test_truncated_basis_eq3_by_hand():
    # θ = [1, 0.1, 0.01, 0.001]; keep θ >= b, ρ for a < θ < b, 0 for θ <= a
    assert truncated_basis(8, a=0.005, b=0.05, rho=0.02).tolist() == [1.0, 0.1, 0.02, 0.0]
    # the boundaries: θ = b is kept, θ = a is zeroed
    assert truncated_basis(8, a=0.001, b=0.1, rho=0.03).tolist() == [1.0, 0.1, 0.03, 0.0]


def test_truncated_basis_table1_defaults():
    # a = (1/8)(2π/2048), b = 2π/2048, ρ = (1/16)(2π/2048); θ_i = 10000^(-2(i-1)/128)
    # kept while (i-1) <= 64 ln(1/b)/ln(1e4) = 40.2 -> i = 1..41; ρ while (i-1) <= 64 ln(1/a)/ln(1e4) = 54.7
    theta = truncated_basis(128)
    assert theta.size == 64
    assert np.array_equal(theta[:41], rope_basis(128)[:41])
    assert np.all(theta[41:55] == TRUNCATED_RHO) and np.all(theta[55:] == 0.0)
    constants = (TRUNCATED_A, TRUNCATED_B)
    assert constants == pytest.approx((2 * math.pi / 2048 / 8, 2 * math.pi / 2048))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rope_basis(7), "even"),
        (lambda: power_basis(8, -1.0), "non-negative"),
        (lambda: truncated_basis(8, a=0.1, b=0.05), "0 <= a < b"),
        (lambda: truncated_basis(8, rho=-1.0), "rho"),
    ],
)
def test_bad_parameters(call, message):
    with pytest.raises(FreqlabError, match=message):
        call()
