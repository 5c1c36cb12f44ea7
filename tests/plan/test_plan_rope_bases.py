"""Giraffe (Pal et al. 2023): power basis (Eq. 2), truncated basis (Eq. 3) on hand-computed values; Table 4 as data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from freqlab.errors import FreqlabError
from freqlab.plan.rope_bases import (
    TABLE4_ACCURACY,
    TABLE4_CONTEXT_LENGTHS,
    TRUNCATED_A,
    TRUNCATED_B,
    TRUNCATED_RHO,
    power_basis,
    rope_basis,
    table4_reach,
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


# Table 4 (Sec. 5.2) as printed, row by row: context length, then Train 1: Eval 1/2/4, Train 4: Eval 4/8/16,
# Train 16: Eval 16/32/64, Truncated (Scaling = 1): Eval 1/2/4.
TABLE4_ROWS = """
2500 0 0.32 0 0.88 0.64 0 0.64 0.24 0 0.42 0.58 0
3600 0 0.3 0 0.8 0.58 0 0.42 0.26 0 0.26 0.44 0
4200 0 0.18 0 0.86 0.62 0 0.56 0.12 0 0.18 0.28 0
4800 0 0 0 0.86 0.62 0 0.62 0.22 0 0.14 0.26 0
7100 0 0 0 0.64 0.38 0 0.4 0.12 0 0.04 0.04 0
9400 0 0 0 0 0.32 0 0.22 0.12 0 0 0.04 0
11800 0 0 0 0 0.30 0 0.14 0.1 0 0 0.04 0
14000 0 0 0 0 0.1 0 0.12 0.04 0 0 0 0
16000 0 0 0 0 0.12 0 0.1 0.02 0 0 0 0
17500 0 0 0 0 0 0 0 0 0 0 0 0
20000 0 0 0 0 0 0 0 0 0 0 0 0
22000 0 0 0 0 0 0 0 0 0 0 0 0
"""
TABLE4_COLUMNS = [
    ("linear", 1, 1), ("linear", 1, 2), ("linear", 1, 4),
    ("linear", 4, 4), ("linear", 4, 8), ("linear", 4, 16),
    ("linear", 16, 16), ("linear", 16, 32), ("linear", 16, 64),
    ("truncated", 1, 1), ("truncated", 1, 2), ("truncated", 1, 4),
]  # fmt: skip


def test_table4_is_the_paper_table_verbatim():
    rows = [[float(x) for x in line.split()] for line in TABLE4_ROWS.strip().splitlines()]
    assert list(TABLE4_CONTEXT_LENGTHS) == [int(row[0]) for row in rows]
    assert set(TABLE4_ACCURACY) == set(TABLE4_COLUMNS)
    for k, key in enumerate(TABLE4_COLUMNS, start=1):
        assert list(TABLE4_ACCURACY[key]) == [row[k] for row in rows], key


def test_table4_reach_is_what_giraffe_measured():
    # Sec. 5.2: 2x "does double the usable context length ... for train lengths 1 and 4 (for train length 16,
    # it does not)"; 4x the train scale fails
    assert (table4_reach(1, 1), table4_reach(1, 2)) == (None, 4200)
    assert (table4_reach(4, 4), table4_reach(4, 8)) == (7100, 16000)  # ~16K, not 4 · 2 · 4096 = 32768
    assert (table4_reach(16, 16), table4_reach(16, 32)) == (16000, 16000)  # no gain at 16
    assert table4_reach(1, 4) is table4_reach(4, 16) is table4_reach(16, 64) is None
    assert (table4_reach(1, 1, "truncated"), table4_reach(1, 2, "truncated")) == (7100, 11800)
    with pytest.raises(FreqlabError, match="no column"):
        table4_reach(8, 16)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rope_basis(8, float("nan")), "the RoPE base must be a finite number above 1, got nan"),
        (lambda: rope_basis(8, 1.0), "the RoPE base must be a finite number above 1, got 1.0"),
        (lambda: power_basis(8, k=float("nan")), "the power k must be a non-negative finite number, got nan"),
        (lambda: truncated_basis(8, rho=float("inf")), "rho must be a non-negative finite number, got inf"),
    ],
)
def test_a_basis_refuses_bases_and_parameters_that_are_no_numbers(call, message):
    """A review: a NaN base or k gave arrays of NaN, unsaid."""
    with pytest.raises(FreqlabError, match=message):
        call()


def test_the_rope_scaling_helpers_refuse_what_gives_no_base():
    """A review: a negative s made a complex base, L = 0 divided by zero, s = 0 was "math domain error"."""
    from freqlab.plan.rope_scaling import dynamic_ntk_base, ntk_aware_base, yarn_attention_factor

    cases = [
        (lambda: ntk_aware_base(10000, -1, 128), "the scale factor s must be a positive finite number, got -1"),
        (lambda: ntk_aware_base(float("nan"), 4, 128), "the RoPE base must be a finite number above 1, got nan"),
        (lambda: dynamic_ntk_base(10000, 4, 128, 0, 10), "L must be a positive integer, got 0"),
        (lambda: yarn_attention_factor(0), "the scale factor s must be a positive finite number, got 0"),
    ]
    for call, message in cases:
        with pytest.raises(FreqlabError, match=message):
            call()
    # transformers' get_mscale (modeling_rope_utils, YaRN's default attention_factor): 1 where s <= 1, not
    # 0.1 · ln(0.5) + 1 = 0.93
    assert (yarn_attention_factor(0.5), yarn_attention_factor(1.0)) == (1.0, 1.0)
    assert yarn_attention_factor(4.0) == pytest.approx(0.1 * math.log(4.0) + 1.0)
    # whole floats are windows, as before; past float64 a base is inf (an OverflowError's traceback: a second review)
    assert dynamic_ntk_base(10000, 4, 128, 4096.0, 5000.0) == dynamic_ntk_base(10000, 4, 128, 4096, 5000)
    assert ntk_aware_base(10000, 1e308, 128) == math.inf
