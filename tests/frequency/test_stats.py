"""Statistics on f: mass shares, budgets and the effective-length prediction (STRING Sec. 3, Fig. 2b)."""

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freqlab import FreqlabError
from freqlab.frequency import (
    DEFAULT_TAU,
    effective_length,
    position_at_mass,
    position_frequency,
    scale_to_budget,
    share_at_least,
    share_at_most,
    tokens_needed,
)
from freqlab.frequency.regime_table import describe, frequency_key_numbers, string_probe_comparison
from freqlab.frequency.stats import (
    STRING_PROBE_CALIBRATION,
    STRING_PROBE_REPORTS,
    STRING_PROBE_STEP,
)

F = np.array([4, 3, 2, 1], dtype=np.int64)  # one document of 4 tokens


def test_shares_of_position_mass():
    assert share_at_most(F, 1) == pytest.approx(0.7)
    assert share_at_least(F, 2) == pytest.approx(0.3)
    assert share_at_most(F, 3) == 1.0


def test_position_where_cumulative_mass_reaches_a_fraction():
    assert position_at_mass(F, 0.4) == 0
    assert position_at_mass(F, 0.41) == 1
    assert position_at_mass(F, 0.7) == 1
    assert position_at_mass(F, 1.0) == 3


def test_scaling_to_a_budget_divides_by_f0():
    assert scale_to_budget(F, 1000).tolist() == [1000.0, 750.0, 500.0, 250.0]


def test_effective_length_is_the_last_position_above_tau():
    # f_T = [400, 300, 200, 100]
    assert effective_length(F, 400, tau=100) == 3
    assert effective_length(F, 400, tau=101) == 2
    assert effective_length(F, 400, tau=401) == 0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=12),
    st.integers(1, 10**6),
    st.integers(1, 10**6),
)
def test_effective_length_is_the_largest_position_reaching_tau_even_where_f_rises(values, tokens, tau):
    """A PoSE replay's f rises again after a dip (skipped position ids): a bisection answered from the first dip
    (f_T = [1000, 750, 500, 250, 125, 0, 0, 0, 0, 125, 250, 375, 375, 375, 250, 125] at tau 300 gave 2, not 13)."""
    f = np.array([max(values[0], 1), *values[1:]], dtype=np.int64)
    reaching = [i for i in range(f.size) if int(f[i]) * tokens >= tau * int(f[0])]
    assert effective_length(f, tokens, tau) == (max(reaching) if reaching else 0)
    assert effective_length([1000, 750, 500, 250, 125, 0, 0, 0, 0, 125, 250, 375, 375, 375, 250, 125], 1000, 300) == 13


def test_effective_length_walks_the_window_a_chunk_at_a_time_exactly(monkeypatch):
    """No whole-window temporaries (regime_rows' memory estimate at L = 2^24): the checks run over chunks, here of 3
    positions, and still give the brute-force answer, rising f or not, prefix or largest."""
    from fractions import Fraction

    from freqlab.frequency import stats

    monkeypatch.setattr(stats, "_CHUNK", 3)
    rng = np.random.default_rng(7)
    for _ in range(300):
        f = rng.integers(0, 6, rng.integers(1, 14))
        f[0] = max(f[0], 1)
        if rng.random() < 0.5:
            f = np.sort(f)[::-1].copy()
        need = Fraction(int(rng.integers(0, 7)), int(rng.integers(1, 3)))
        reaching = [i for i in range(f.size) if f[i] >= need]
        prefix = next((i for i in range(f.size) if f[i] < need), f.size) - 1

        def reaches(i, f=f, need=need):
            return f[i] >= need

        assert stats.largest_reaching(f, need, reaches) == (max(reaching) if reaching else -1)
        assert stats.largest_reaching(f, need, reaches, prefix=True) == prefix


def test_effective_length_of_counts_past_any_float_rising_again():
    """Python-integer counts past 1e308: the threshold tau·f(0)/T overflows a float, which read as 'nothing reaches'
    (0 where 2 does), or an OverflowError."""
    assert effective_length(np.array([2 * 10**308, 10**308, 2 * 10**308], dtype=object), 1, 1) == 2
    assert effective_length(np.array([10**400, 10**400 + 1, 10**400], dtype=object), 10**300, 1) == 2


def test_tokens_needed_inverts_effective_length():
    for i in range(4):
        T = tokens_needed(F, i, tau=150)
        assert effective_length(F, T, tau=150) >= i
        assert effective_length(F, T - 1, tau=150) < i or i == 0


def test_stringlike_calibration_on_a_concatenated_2k_window():
    """With concatenated rows of 2048, f_T(i) = T (L - i) / L: f_T(1280) = 100B needs T = 100B · 2048 / 768."""
    f = position_frequency([2048 * 10_000], [1], 2048, "concat")
    assert DEFAULT_TAU == 100e9
    T = tokens_needed(f, 1280)
    assert T == -(-100 * 10**9 * 2048 // 768)  # 266.67B tokens, exact ceiling
    assert effective_length(f, T) == 1280
    assert effective_length(f, T - 1) == 1279


def test_exact_integer_comparison_for_huge_budgets():
    f = np.array([10**15, 10**15 - 1, 3], dtype=np.int64)
    # f_T(1) = (10^15 - 1) / 10^15 * T; with T = 10^18 that is 10^18 - 1000 exactly
    assert effective_length(f, 10**18, tau=10**18 - 1000) == 1
    assert effective_length(f, 10**18, tau=10**18 - 999) == 0


def test_summary_line_reads_like_the_paper():
    f = position_frequency([2048 * 10], [1], 2048, "concat")
    row = {"regime": "concat", **frequency_key_numbers(f, tokens=10**12)}
    assert describe(row).startswith("L=2048 concat: 75.0% of position mass at i ≤ 1024, 6.3% at i ≥ 1536")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: share_at_most(F, 4), "outside the window"),
        (lambda: share_at_most(F, 1.5), r"a position is an integer, got 1\.5"),
        (lambda: position_at_mass(F, 0), "fraction must be a number in"),
        (lambda: position_at_mass(F, float("nan")), "fraction must be a number in"),
        (lambda: position_at_mass(F, "half"), "fraction must be a number in"),
        (lambda: effective_length(F, 0), "budget must be a positive finite number, got 0"),
        (lambda: effective_length(F, float("nan")), "budget must be a positive finite number, got nan"),
        (lambda: effective_length(F, float("inf")), "budget must be a positive finite number, got inf"),
        (lambda: effective_length(F, "10"), "budget must be a positive number, got '10'"),
        (lambda: share_at_most(F, float("nan")), "a position is an integer, got nan"),
        (lambda: share_at_most(F, float("inf")), "a position is an integer, got inf"),
        (lambda: effective_length(F, 10, tau=-1), "tau must be a positive finite number, got -1"),
        (lambda: effective_length(F, 10, tau=float("nan")), "tau must be a positive finite number"),
        (lambda: tokens_needed(F, 1, tau=float("inf")), "tau must be a positive finite number, got inf"),
        (lambda: tokens_needed(F, 1, tau=0), "tau must be a positive finite number, got 0"),
        (lambda: effective_length(F, 10, tau=10**400), "tau must be a positive finite number, got 1000"),  # float()
        (lambda: scale_to_budget(F, 10**400), "budget must be a positive finite number, got 1000"),  # overflowed
        (lambda: scale_to_budget(F, -5), "budget must be a positive finite number, got -5"),
        (lambda: tokens_needed(np.array([3, 0]), 1), "never occurs"),
        (lambda: share_at_most([], 0), "non-empty"),
        (lambda: share_at_most(np.ones((2, 2)), 0), r"1-D array, got shape \(2, 2\)"),
        (lambda: share_at_most([4, -3, 2], 0), r"never negative: f\(1\) = -3"),
        (lambda: share_at_most([4.0, float("nan")], 0), r"finite: f\(1\) = nan"),
        (lambda: share_at_most(["4", "3"], 0), "holds numbers"),
    ],
)
def test_bad_parameters_are_clear_errors(call, message):
    with pytest.raises(FreqlabError, match=message):
        call()


def test_a_frequency_of_floats_is_read_exactly_never_truncated():
    """An expectation (floats) is compared at its exact value: ceil(10 · 4.5 / 3.2) = 15 (truncated: 14); its
    shares are float64 sums (0.5 of [0.5, 0.5], where truncation gave 0)."""
    assert tokens_needed([4.5, 3.2], 1, tau=10) == 15
    # a budget is its exact value too, never rounded (0.4 was rounded to 0): f_T = [0.4, 0.3, 0.2, 0.1]
    assert effective_length(F, 0.4, tau=0.1) == 3 and effective_length(F, 0.4, tau=0.15) == 2
    assert effective_length(F, 0.5, tau=1) == 0  # below the threshold, not an error (a plot's grid starts at tau/2)
    assert share_at_most(F, np.array(1)) == 0.7  # a 0-d array holding a position
    at_one = Fraction(3.2) * 10 / Fraction(4.5)  # f_T(1) of the floats' exact values
    assert effective_length([4.5, 3.2], 10, tau=at_one) == 1
    assert effective_length([4.5, 3.2], 10, tau=at_one + Fraction(1, 10**30)) == 0
    assert share_at_most([0.5, 0.5], 0) == 0.5 and position_at_mass([0.5, 0.25, 0.25], 0.6) == 1


non_increasing = st.lists(st.integers(0, 10**6), min_size=1, max_size=40).map(
    lambda xs: np.array(sorted(xs, reverse=True), dtype=np.int64)
)


@settings(max_examples=200, deadline=None)
@given(non_increasing, st.integers(1, 10**9), st.integers(1, 10**9))
def test_searches_match_a_linear_scan(f, tokens, tau):
    """The binary searches against the definitions, scanned position by position with exact fractions."""
    from fractions import Fraction

    if f[0] == 0:
        return
    f_T = [Fraction(int(x) * tokens, int(f[0])) for x in f]
    reached = [i for i in range(f.size) if f_T[i] >= tau]
    assert effective_length(f, tokens, tau) == (max(reached) if reached else 0)
    total = sum(int(x) for x in f)
    for q in (0.1, 0.5, 0.9, 1.0):
        # q as the decimal it is written as (0.9 is nine tenths, as position_at_mass reads it), not the binary
        # float's exact value, which is a hair above: 0.9 of 1030 is 927, which Fraction(0.9) puts past 927
        share = Fraction(str(q))
        expected = next(i for i in range(f.size) if sum(int(x) for x in f[: i + 1]) >= share * total)
        if total:
            assert position_at_mass(f, q) == expected
    for i in range(f.size):
        if f[i] > 0:
            T = tokens_needed(f, i, tau)
            assert Fraction(int(f[i]) * T, int(f[0])) >= tau > Fraction(int(f[i]) * (T - 1), int(f[0]))


def test_string_sec3_numbers_are_the_papers():
    """STRING Sec. 3 (TinyLlama 1.3B, natural SlimPajama): effective length 1280 at f(1280) ≈ 100B (Fig. 2b);
    1024 at ~300B for both 2K and 4K (Finding 3); 1.4K at 400B for 4K vs ~1T for 2K (Finding 1);
    measured in 128-token steps."""
    assert STRING_PROBE_CALIBRATION == (1280, 100e9) and DEFAULT_TAU == 100e9
    assert STRING_PROBE_STEP == 128
    reports = [(r.L, r.tokens, r.tokens_text, r.reported) for r in STRING_PROBE_REPORTS]
    assert reports == [
        (2048, 300e9, "around 300B", "1024"),
        (4096, 300e9, "around 300B", "1024"),
        (4096, 400e9, "400B", "1.4K"),
        (2048, 1e12, "around 1T", "1.4K"),
    ]


def test_string_probe_comparison_matches_an_independent_computation():
    lengths, counts = [300, 1500, 5000, 9000], [40, 20, 5, 2]
    c = string_probe_comparison(lengths, counts)
    for row in c["reports"]:
        f = position_frequency(lengths, counts, row["L"], "natural")
        # largest i with f(i) · T >= tau · f(0), by a linear scan
        expected = max(i for i in range(row["L"]) if int(f[i]) * row["tokens"] >= 100e9 * int(f[0]))
        assert row["freqlab"] == expected and row["freqlab_in_steps"] == expected // 128 * 128
    for row in c["calibration"]["freqlab_tokens_needed"]:
        f = position_frequency(lengths, counts, row["L"], "natural")
        assert row["tokens"] == tokens_needed(f, 1280) and effective_length(f, row["tokens"]) >= 1280
        assert effective_length(f, row["tokens"] - 1) < 1280


def test_a_share_reads_as_the_decimal_it_is_written_as():
    """0.9 of 1030 occurrences is 927 (hypothesis found the binary float's hair above 9/10 counted otherwise)."""
    assert position_at_mass(np.array([721, 103, 103, 103]), 0.9) == 2


def test_a_numpy_integer_budget_stays_exact():
    """np.int64(10^17 + 1) went through float: a budget of 10^17."""
    from freqlab.frequency.budget import training_budget

    assert training_budget(np.int64(10**17 + 1)).tokens == 10**17 + 1
    assert training_budget(10**17 + 1).tokens == 10**17 + 1 and training_budget(2.5e9).tokens == 2_500_000_000


def test_effective_length_of_numpy_integers_in_an_object_array_and_prefixes_past_floats():
    from fractions import Fraction

    from freqlab.frequency.stats import largest_reaching

    assert effective_length(np.array([np.int64(10), np.int64(2), np.int64(5)], dtype=object), 10, 4) == 2
    values = np.array([2**1010, 2**1001, 2**1012], dtype=object)  # past a float: still compared exactly
    need = Fraction(2**1005)
    assert largest_reaching(values, need, lambda i: values[i] >= need, prefix=True) == 0


def test_largest_reaching_checks_exactly_only_the_values_within_a_float_of_the_threshold():
    """A second review: the exact check (a schedule's sum of Fractions over its stages) ran at every bisection step,
    O(stages²) over a report; a float clearly above or below the threshold now decides, one within 1e-9 does not."""
    from fractions import Fraction

    from freqlab.frequency.stats import largest_reaching

    values = np.arange(1000, 0, -1, dtype=np.int64)  # non-increasing: bisected
    calls = []

    def reaches(i):
        calls.append(i)
        return Fraction(int(values[i])) >= need

    need = Fraction(5001, 10)  # 500.1: 500 falls short, 501 (i = 499) reaches
    assert largest_reaching(values, need, reaches) == 499 and calls == []
    need = Fraction(500)  # exactly a value: within 1e-9 of it, checked exactly
    assert largest_reaching(values, need, reaches) == 500 and calls == [500]
    need = Fraction(10**400)  # past a float: every step exact
    calls.clear()
    assert largest_reaching(values, need, reaches) == -1 and calls == [0]


def test_a_threshold_below_the_smallest_float_is_checked_exactly():
    """A third review: tau · f(0) / T under float64's normal range collapsed the 1e-9 band, and the float decided:
    f_T = [1, 0] reached a tau of 1e-320 at position 1."""
    from fractions import Fraction

    assert effective_length([1, 0], 1e300, 1e-300) == 0
    assert effective_length([1, 0], 10**308, 1e-20) == 0
    assert effective_length([1.0, 5e-324], 1, Fraction(1, 2**1074 - 1)) == 0


def test_position_at_mass_refuses_a_string_as_effective_length_does():
    """A review: position_at_mass(f, "0.5") answered (float() read the string); effective_length refuses strings."""
    with pytest.raises(FreqlabError, match=r"^fraction must be a number in \(0, 1\], got '0.5'"):
        position_at_mass(F, "0.5")
    assert position_at_mass(F, 0.5) == position_at_mass(F, Fraction(1, 2)) == 1


def test_scale_to_budget_rounds_once_so_ties_agree_with_the_exact_effective_length():
    """A review: f · (T / f(0)) rounded twice, f_T(1) of [14, 7] at T = 122 was 60.99999999999999 where
    effective_length (exact) has f_T(1) = 7 · 122 / 14 = 61 >= 61; f_T(0) is T itself."""
    assert scale_to_budget([14, 7], 122).tolist() == [122.0, 61.0]
    assert effective_length([14, 7], 122, 61) == 1
    assert scale_to_budget([13, 2], 54)[0] == 54.0  # not 54.00000000000001


@pytest.mark.parametrize(
    ("fraction", "expected"),
    [(1e-13, 1), (0.7, 1), (Fraction(1, 3), 0), (Decimal("0.5"), 1), (np.float64(0.5), 1), (np.array(1), 2)],
)  # fmt: skip
def test_position_at_mass_reads_the_fraction_as_written(fraction, expected):
    """The target is ceil(fraction · Σf); 1e-13 was read as 0 (limit_denominator(10**12)): 1e-13 · (10^13 + 1) is
    just above f(0) = 1, so position 1 (a review). A Fraction is exact: 1/3 of 9 is 3 = f(0)."""
    f = [1, 10**13] if fraction == 1e-13 else [4, 3, 2, 1] if fraction == 0.7 else [3, 3, 3]
    assert position_at_mass(f, fraction) == expected


def test_key_numbers_of_a_frequency_with_zeros_inside_reach_its_last_nonzero_position():
    """A PoSE replay's f is no longer non-increasing: f(7) = 0 and f(15) = 1. The longest position was counted as
    (number of nonzero values) - 1 = 12, below the effective length 15 (a review)."""
    f = np.array([8, 6, 4, 3, 2, 1, 0, 0, 0, 1, 2, 2, 2, 2, 2, 1, 0, 0])
    numbers = frequency_key_numbers(f, tokens=8, tau=1)
    assert (numbers["longest_position"], numbers["effective_length"]) == (15, 15)
    assert frequency_key_numbers([4, 3, 0, 0])["longest_position"] == 1
    with pytest.raises(FreqlabError, match="describe takes a row of regime_rows"):  # was KeyError: 'regime'
        describe(frequency_key_numbers([4, 3, 2, 1], tokens=10, tau=1))


def test_scale_to_budget_scales_the_other_way_where_f_times_T_passes_float64():
    """A second review: computing f·T first gave inf for [1e300, 1e300] at T = 1e30, and for [14, 7] at 1e308."""
    assert scale_to_budget(np.array([1e300, 1e300]), 1e30).tolist() == pytest.approx([1e30, 1e30], rel=1e-15)
    assert scale_to_budget(np.array([14, 7]), 1e308).tolist() == [1e308, 5e307]
    # f / f(0) first there: T / f(0) overflowed (a third look), and Python integers past float64 are ratios first
    assert scale_to_budget([1e-5, 1e-5], 1e306).tolist() == [1e306, 1e306]
    assert scale_to_budget([0.5, 0.25], 1.5e308).tolist() == [1.5e308, 7.5e307]
    assert scale_to_budget(np.array([10**400, 10**399], dtype=object), 1).tolist() == [1.0, 0.1]


def test_a_numpy_float32_fraction_is_read_as_numpy_writes_it():
    """np.float32(0.3) is 0.3 as numpy prints it, as a float is its shortest decimal (a review: it was read as the
    double 0.30000001192..., so 3 of 10 equal positions where 0.3 gives 2)."""
    f = np.array([10] * 10)
    assert position_at_mass(f, np.float32(0.3)) == position_at_mass(f, 0.3) == 2
    assert position_at_mass(f, np.float32(0.1)) == position_at_mass(f, 0.1) == 0
