"""STRING (An et al., ICLR 2025, Sec. 4.1, Eq. 4, Fig. 5, Fig. 7, App. A.1): position matrix, fast paths and planner."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from freqlab.errors import FreqlabError
from freqlab.frequency import position_frequency
from freqlab.frequency.schedule import parse_schedule, schedule_frequency
from freqlab.histogram import LengthHistogram
from freqlab.plan.string import (
    MASKED,
    OFFICIAL_README_RANGE,
    PAPER_RANGE,
    plan_string,
    recommended_range,
    string_position_histogram,
    string_position_matrix,
    string_position_row,
    string_positions_used,
    string_remap_counts,
    string_usage,
    string_yarn,
    validated_range,
)


def brute_matrix(L: int, S: int, W: int) -> list[list[int]]:
    """Eq. 4 written out cell by cell: r = m - n; r >= S becomes r - S + W; n > m is masked."""
    out = []
    for m in range(L):
        row = []
        for n in range(L):
            r = m - n
            if r < 0:
                row.append(MASKED)
            elif r >= S:
                row.append(r - S + W)
            else:
                row.append(r)
        out.append(row)
    return out


SMALL_CASES = [(L, S, W) for L in range(2, 13) for S in range(1, L) for W in range(0, S)]


# --- the paper's examples ------------------------------------------------------------------------------------


def test_fig5_last_row_with_w0():
    assert string_position_row(9, 3, 0).tolist() == [5, 4, 3, 2, 1, 0, 2, 1, 0]
    assert string_position_matrix(9, 3, 0)[-1].tolist() == [5, 4, 3, 2, 1, 0, 2, 1, 0]


def test_fig5_positions_6_to_8_are_gone():
    used = set(string_position_matrix(9, 3, 0)[np.tril_indices(9)].tolist())
    assert used == {0, 1, 2, 3, 4, 5}


def test_appendix_a1_llama31_last_row():
    L, S, W = 131072, 43008, 128  # 128K, S = 42K
    row = string_position_row(L, S, W)
    assert row.size == L
    assert int(row[0]) == 88191  # 86K + 127
    crossing = L - 1 - S  # column n where r = m - n = S
    assert row[crossing] == 128 and row[crossing + 1] == 43007  # drops from W to S - 1
    assert np.array_equal(row[: crossing + 1], np.arange(88191, 127, -1))  # [86K+127, ..., 129, 128]
    assert np.array_equal(row[crossing + 1 :], np.arange(43007, -1, -1))  # [42K-1, ..., 1, 0]


def test_largest_position_used_is_L_minus_1_minus_S_plus_W():
    hist = string_position_histogram(131072, 43008, 128)
    assert hist.size == 131072 - 43008 + 128 == string_positions_used(131072, 43008, 128)
    assert hist[-1] > 0


# --- fast paths against the cell-by-cell matrix -----------------------------------------------------------------


@pytest.mark.parametrize(("L", "S", "W"), SMALL_CASES)
def test_matrix_row_and_histogram_match_brute_force(L, S, W):
    brute = np.array(brute_matrix(L, S, W))
    assert np.array_equal(string_position_matrix(L, S, W), brute)
    for m in range(L):
        assert np.array_equal(string_position_row(L, S, W, m), brute[m, : m + 1])
    lower = brute[np.tril_indices(L)]
    expected = np.bincount(lower, minlength=max(S, L - S + W))
    assert np.array_equal(string_position_histogram(L, S, W), expected)
    for n in range(1, L + 1):  # a shorter sequence uses the top-left n x n block
        block = brute[:n, :n][np.tril_indices(n)]
        assert np.array_equal(string_position_histogram(L, S, W, n), np.bincount(block, minlength=max(S, L - S + W)))


def test_remap_counts_moves_arbitrary_pair_counts():
    rng = np.random.default_rng(0)
    L, S, W = 40, 15, 4
    pairs = rng.integers(0, 1000, size=L)
    moved = string_remap_counts(pairs, S, W)
    expected = np.zeros(L - S + W, dtype=np.int64)
    for r in range(L):
        expected[r - S + W if r >= S else r] += pairs[r]
    assert np.array_equal(moved, expected)
    assert moved.sum() == pairs.sum()  # no pair lost


def test_usage_reports_trained_frequency_and_pairs():
    f = position_frequency([9, 5], [1, 2], 9)
    u = string_usage(9, 3, 0, frequency=f)
    assert u.pairs_before.tolist() == [9, 8, 7, 6, 5, 4, 3, 2, 1]
    assert u.pairs_after.tolist() == [15, 13, 11, 3, 2, 1, 0, 0, 0]
    assert u.trained.tolist() == f.tolist()
    assert u.pairs_after.sum() == 45  # 9·10/2 pairs either way


@pytest.mark.parametrize(
    ("args", "message"),
    [((9, 3, 3), "smaller than the shift"), ((9, 0, 0), "0 < S < L"), ((9, 9, 0), "0 < S < L"), ((9, 3, -1), "W")],
)
def test_bad_shift_parameters_are_clear_errors(args, message):
    with pytest.raises(FreqlabError, match=message):
        string_position_row(*args)


def test_full_matrix_refused_for_large_L():
    with pytest.raises(FreqlabError, match="string_position_row"):
        string_position_matrix(131072, 43008, 128)


# --- planner ------------------------------------------------------------------------------------------------


def test_default_without_frequency_is_L_over_3_rounded_up():
    p = plan_string(131072)
    assert (p.S, p.W, p.rule, p.S_rule) == (43712, 128, "default", None)  # ceil(43690.67 / 64) * 64
    assert p.hf_patch == "replace_with_string(max_test_length=131072, shifted_offset=43712, small_local_value=128)"
    assert p.vllm_config == {"string_config": {"shifted_offset": 43712, "local_value": 128}}
    assert p.vllm_block == '"string_config": {"shifted_offset": 43712, "local_value": 128}'
    # full-window baseline f(i) = L - i: share of i >= L - S is S(S+1) / (L(L+1))
    assert p.overwritten_share == pytest.approx(43712 * 43713 / (131072 * 131073))


def test_the_default_plan_gives_no_verdict_against_an_assumed_N_star():
    """Without frequency information N* = 2L/3 is assumed: the default S = L/3 rounded up uses positions past it
    (21951 against 21844 at 32K), and the plan flagged its own recommendation as 'beyond N*'."""
    p = plan_string(32768)
    # a second review: "N* = 21845 (rule: default)" above that S read as a broken rule: the line says what it is
    assert "well-trained range N* unknown without frequency information (21845 = 2L/3 assumed; S is not chosen by" in (
        p.report()
    )
    assert "no frequency information to check it against" in p.report()
    assert "beyond the well-trained" not in p.reasoning and "beyond N*" not in p.report()


@pytest.mark.parametrize("L", [2048, 4096, 8192, 32768, 131072, 1000, 300, 100])
def test_default_never_leaves_the_papers_range(L):
    """Sec. 4.1: L/3 <= S <= L/2 and "We set S = L/3". Rounding to 64 must not go below L/3."""
    p = plan_string(L, W=32) if L < 1000 else plan_string(L)
    assert L / 3 <= p.S <= L / 2
    assert 3 * p.S >= L


def test_default_for_4k_is_1408_not_1344():
    # L/3 = 1365.33: the nearest multiple of 64 below (1344) leaves the paper's range; 1408 is the first inside
    p = plan_string(4096)
    assert p.S == 1408 >= 1366 and p.S % 64 == 0
    assert "rounded up" in p.reasoning and "L/3 <= S <= L/2 (Sec. 4.1" in p.reasoning


def test_ranges_and_their_sources():
    paper, official = PAPER_RANGE, OFFICIAL_README_RANGE
    assert paper == (Fraction(1, 3), Fraction(1, 2))  # Sec. 4.1: L/3 <= S <= L/2
    assert official == (Fraction(1, 4), Fraction(2, 5))  # HKUNLP/STRING README: 0.25-0.4 L


def test_recommended_range_is_third_to_half_rounded_inwards():
    assert recommended_range(2048) == (704, 1024, 64)  # L/3 = 682.67
    assert recommended_range(4096) == (1408, 2048, 64)  # L/3 = 1365.33
    assert recommended_range(131072) == (43712, 65536, 64)
    assert recommended_range(1000) == (384, 448, 64)
    assert recommended_range(100) == (34, 50, 1)  # no multiple of 64 fits: not rounded
    assert validated_range is recommended_range  # the former name


def test_mass_rule_on_concatenated_data_keeps_every_used_position_within_N_star():
    L = 2048
    f = position_frequency([L], [1], L)  # f(i) = L - i: fully concatenated rows
    p = plan_string(L, frequency=f)
    # share of i >= x is ((L - x)(L - x + 1)) / (L(L + 1)); the smallest N* holding 90% of the mass:
    mass = np.cumsum(f) / f.sum()
    N_star = int(np.argmax(mass >= 0.9)) + 1
    assert p.N_star == N_star == 1401
    assert N_star / L == pytest.approx(1 - 0.1**0.5, abs=1e-3)  # 0.684 L, the linear closed form
    # S = L - N* + W = 775, rounded up to 832 (0.406 L): inside the paper's range, kept
    assert p.S_rule == 832 == -(-(L - N_star + 128) // 64) * 64 and p.S == 832 and p.within_range
    # the largest position used, L - S + W - 1 = 1343, lies in the well-trained 0..1400
    assert p.largest_position == L - 832 + 128 - 1 == 1343 < N_star and p.within_well_trained
    assert "inside the paper's range" in p.reasoning
    assert p.overwritten_share == pytest.approx(f[L - 832 :].sum() / f.sum())
    assert p.unused_share == pytest.approx(f[L - 832 + 128 :].sum() / f.sum())


def test_budget_rule_uses_f_T_and_tau_and_shows_both_values_below_the_range():
    L = 2048
    f = position_frequency([L], [1], L)
    # f_T(i) = T (L - i) / L >= tau  <=>  i <= L (1 - tau / T); T = 4 tau -> i <= 1536
    p = plan_string(L, frequency=f, tokens=400e9, tau=100e9)
    assert p.N_star == 1537 and p.rule == "budget"
    # L - N* + W = 639 -> 640 (0.3125 L) < L/3: S raised to 704, both values shown
    assert p.S_rule == 640 and p.S == 704 and not p.within_range
    assert "below the paper's range" in p.reasoning and "shifted_offset = 640" in p.reasoning
    assert "0.25-0.4 L that the official repository's README suggests" in p.reasoning  # 640 >= L/4 = 512
    assert p.largest_position == 2048 - 704 + 128 - 1 == 1471 < 1537


def test_rule_inside_the_papers_range_is_kept():
    L = 2048
    f = position_frequency([L], [1], L)
    # i <= L (1 - tau/T) with T = 2.5 tau: N* = 1229, S = L - N* + W = 947 -> 960 (0.469 L)
    p = plan_string(L, frequency=f, tokens=250e9, tau=100e9)
    assert (p.N_star, p.S_rule, p.S, p.within_range) == (1229, 960, 960, True)
    assert p.largest_position == 1215 < 1229  # L - 960 + 128 - 1
    assert "inside the paper's range" in p.reasoning


def test_rule_below_range_is_clamped_and_both_values_shown():
    L = 2048
    f = position_frequency([L], [1], L)
    p = plan_string(L, frequency=f, tokens=100e12, tau=100e9)  # almost everything well trained
    assert p.N_star == 2046 and p.S_rule == 192 and p.S == 704 and not p.within_range  # 2048 - 2046 + 128 = 130
    assert "below the paper's range" in p.reasoning and "shifted_offset = 192" in p.reasoning
    assert "S = 704" in p.reasoning and "official repository" not in p.reasoning  # 192 < L/4


def test_rule_above_range_is_clamped():
    # N* = 1100: S = 2048 - 1100 + 128 = 1076, rounded up 1088 <= N*, keeps positions below N*; above L/2 = 1024
    p = plan_string(2048, given=1100)
    assert (p.S_rule, p.S, p.within_range) == (1088, 1024, False)
    assert "above the paper's range" in p.reasoning and "shifted_offset = 1088" in p.reasoning
    exact = plan_string(2048, S=1088, given=1100)
    assert exact.within_well_trained and exact.largest_position == 1087  # max(1088, 2048 - 1088 + 128) - 1


@pytest.mark.parametrize("N", [69, 0, 1087])
def test_a_well_trained_range_no_shift_can_keep_to_is_said_not_given_a_shift(N):
    """Positions used reach max(S, L - S + W) - 1 >= ceil((L + W)/2) - 1 = 1087 at L = 2048, W = 128: below that N*
    the rule's S = L - N* + W was printed as "use shifted_offset = 1984 to keep every position within N*" (1984 uses
    up to 1983). Now the rule gives no S, and the plan takes L/2, the fewest positions of the paper's range."""
    L = 2048
    p = plan_string(L, given=N) if N else plan_string(L, frequency=position_frequency([100], [1000], L), tokens=1e9)
    assert p.N_star == N and p.S_rule is None and p.S == 1024 and not p.within_range and not p.within_well_trained
    assert p.to_dict()["S_rule"] is None
    assert "No S keeps every position" in p.reasoning and "at least 1087 (at S = ceil((L + W)/2) = 1088)" in p.reasoning
    assert "shifted_offset = " not in p.reasoning


def test_a_given_S_is_evaluated_not_replaced():
    # the official README's int(0.33 L) for L = 4096: 1351, just below the paper's L/3 = 1365.3
    p = plan_string(4096, S=int(0.33 * 4096))
    assert (p.S, p.S_given, p.within_range) == (1351, True, False)
    assert any("outside the paper's range" in note for note in p.notes)
    assert "was given and is evaluated" in p.reasoning
    assert p.hf_patch == "replace_with_string(max_test_length=4096, shifted_offset=1351, small_local_value=128)"
    # without a corpus the shares follow f(i) = L - i: share of i >= x is (L - x)(L - x + 1) / (L (L + 1))
    assert p.overwritten_share == pytest.approx(1351 * 1352 / (4096 * 4097))
    assert p.unused_share == pytest.approx(1223 * 1224 / (4096 * 4097))
    with pytest.raises(FreqlabError, match="much smaller than S"):
        plan_string(4096, S=100)


def test_a_window_too_small_for_any_W_says_no_W_fits():
    """L = 64: S = 22, below the smallest W (32); the message said to use a smaller W (>= 32), which none is (new
    user)."""
    with pytest.raises(FreqlabError) as caught:
        plan_string(64)
    assert str(caught.value) == (
        "W = 128 must be much smaller than S = 22 (STRING needs W << S); no W fits (32 <= W < S): give a larger S or "
        "a window with L/3 > 32"
    )


@pytest.mark.parametrize("S, inside", [(1365, False), (1366, True), (1370, True), (2048, True), (2049, False)])
def test_a_given_S_is_held_to_the_papers_range_itself_not_its_multiples_of_64(S, inside):
    """L/3 <= S <= L/2 (Sec. 4.1) is 1365.33..2048 at L = 4096; S = 1370 was called outside "L/3..L/2 =
    1408..2048", the default S's rounding taken for the paper's bound (new user)."""
    p = plan_string(4096, S=S)
    assert p.within_range is inside
    assert (
        f"it lies {'inside' if inside else 'outside'} the paper's range L/3 <= S <= L/2 (Sec. 4.1; 1365.33..2048)"
        in (p.reasoning)
    )
    outside = f"S = {S} (S/L = {S / 4096:.3f}) is outside the paper's range L/3..L/2 = 1365.33..2048 (Sec. 4.1)"
    assert (outside in p.notes) is not inside
    # at 1M the bounds printed to 6 digits read "349525..524288" beside S = 349525 called outside (adversary review)
    far = plan_string(1 << 20, S=349525)
    assert "is outside the paper's range L/3..L/2 = 349525.33..524288 (Sec. 4.1)" in far.notes[-1]


def test_the_two_shares_are_the_plan_and_the_usage_figure_definitions():
    """`plan string` reports i >= L - S (overwritten), `plot string-usage` shades i >= L - S + W (never used):
    both are on the plan, each under its own name."""
    f = position_frequency([2048], [1], 2048)
    p = plan_string(2048, frequency=f, tokens=400e9, tau=100e9)
    u = string_usage(2048, p.S, p.W, frequency=f)
    never_used = np.flatnonzero(u.pairs_after == 0)
    assert never_used[0] == 2048 - p.S + p.W  # the first position no pair uses after STRING
    assert p.unused_share == pytest.approx(f[never_used[0] :].sum() / f.sum())
    assert p.overwritten_share == pytest.approx(f[2048 - p.S :].sum() / f.sum())
    assert "(overwritten)" in p.reasoning and "(never used after STRING)" in p.reasoning


def test_string_with_yarn_counts_the_unshifted_distances_in_its_largest_position():
    """Eq. 4 leaves the distances below S_N where they are: at N = 4096, S_N = 2400 they use positions up to 2399,
    past L = 2048 (string_position_row's own maximum). freqlab said N - S_N + W - 1 = 1823 'is already below L, so
    no YaRN is needed'."""
    e = string_yarn(2048, 1200, 128, 4096)
    assert e.S == 2400 and e.yarn is None
    assert e.largest_position == 2399 == string_position_row(4096, 2400, 128).max()
    text = plan_string(2048, S=1200, extend_to=4096).reasoning
    assert "max(2400, N - 2400 + W) - 1 = 2399, is not below L = 2048" in text and "already below" not in text
    # and YaRN's factor note counts the positions STRING uses (up to 176255), not N: 128 of them pass s·L = 176128
    big = plan_string(131072, S=43008, extend_to=262144, rope_theta=500000).extension
    assert big.largest_position == 176255
    assert big.yarn.notes[0] == (
        "factor 1.34375 stretches L = 131072 to s·L = 176128 positions, and STRING uses positions up to 176255: "
        "128 of them (176128..176255) fall beyond the trained range after scaling (the last, 176255, scales to "
        "131167: 96 past L - 1 = 131071)"  # 176255 / 1.34375 = 131166.5: the reasoning's units too (a review)
    )


def test_the_rule_takes_an_unrounded_shift_where_the_multiple_passes_N_star():
    """L = 4096, W = 100, N* = 2100: every S in [2096, 2100] keeps the positions used below N* (2096 uses up to 2099),
    but the multiple of 64 above 2096 is 2112 > N*: the plan said no S can. The rule is 2096 itself; and a
    sweep of small windows finds every such S_rule within N*, and none where the range is empty."""
    p = plan_string(4096, W=100, given=2100)
    assert p.S_rule == 2096 and string_positions_used(4096, 2096, 100) - 1 == 2099
    assert "use shifted_offset = 2096" in p.reasoning and "No S keeps" not in p.reasoning
    assert "S = L - N* + W (not rounded: the next multiple of 64 passes N*) gives S = 2096" in p.reasoning
    for L in range(300, 700, 13):
        for N in range(1, L + 1, 7):
            plan = plan_string(L, W=32, given=N)
            feasible = [S for S in range(33, L) if string_positions_used(L, S, 32) <= N]
            assert (plan.S_rule is None) == (not feasible)
            if feasible:
                assert string_positions_used(L, plan.S_rule, 32) <= N


def test_string_with_yarn_says_how_far_past_L_and_N_star_its_scaled_positions_reach():
    """'becomes 2096 after YaRN (about L = 2048)' hid 48 positions past L and more past N*: the numbers now."""
    p = plan_string(2048, given=1500, extend_to=8192)  # S = 704: N = 8192 -> S_N = 2816, factor 2.625, largest 5503
    assert p.extension.largest_position == 5503
    assert "becomes 2096 after YaRN (49 past L - 1 = 2047, 597 past the well-trained N* - 1 = 1499)" in p.reasoning


def test_a_given_shift_past_half_the_window_says_which_distances_keep_their_positions():
    """S = 1200 at L = 2048: distances 848..1199 are below S and keep their positions (Eq. 4); the plan said STRING
    'drops the distances >= L - S = 848'."""
    p = plan_string(2048, S=1200)
    assert "STRING moves the distances >= S = 1200 to r - S + W; those from L - S = 848 to S - 1 keep" in p.reasoning
    assert "drops the distances" not in p.reasoning
    assert "i >= L - S = 848" in p.report() and "(848..1199 still used by the distances below S)" in p.report()


def test_string_with_yarn_names_the_distances_that_pass_L():
    text = plan_string(4096, S=2048, W=128, extend_to=8192).reasoning  # r = 1/2: S_N - 1 = 4095 is within L
    assert "the shifted distances reach N - 4096 + W - 1 = 4223, 128 past L - 1;" in text
    assert "the distances below 4096 keep" not in text
    both = plan_string(1024, S=525, W=128, extend_to=2100).reasoning  # both kinds pass L: both said
    assert "the distances below 1076 keep their positions, up to 1075; the shifted distances reach" in both
    # their int(shifted_ratio * N) in float64: 1/3 of 12288 is 4096 there (exactly 4095.99... as a Fraction)
    assert string_yarn(4096, 1365, 128, 12288, ratio=1 / 3).S == 4096 == int(1 / 3 * 12288)
    assert string_yarn(4096, 1365, 128, 12288, ratio=Fraction(1, 3)).S == 4096


def test_string_with_yarn_beyond_L_follows_the_repositorys_qwen2_rule():
    """HKUNLP/STRING ruler/test_ruler_qwen2.py: shifted_offset = int(r·N), yarn_factor = (N / L)·(1 - r),
    attention scaled by 0.1·ln 2 + 1 (string_for_qwen2.py); Qwen2: L = 32768, N = 131072, r = 0.33."""
    e = string_yarn(32768, 10813, 128, 131072, ratio=0.33)
    assert e.S == 43253 == int(0.33 * 131072)  # the README's shifted_offset for 128K
    assert e.factor == pytest.approx(4 * 0.67)
    assert e.largest_position == 131072 - 43253 + 127
    assert e.largest_position / e.factor == pytest.approx(32768, rel=0.01)  # back to about L
    assert e.yarn.factor == e.factor
    assert e.yarn.config_5x["rope_parameters"]["attention_factor"] == pytest.approx(0.1 * math.log(2) + 1)
    p = plan_string(32768, S=10813, extend_to=131072)
    assert p.extension.S == int(Fraction(10813, 32768) * 131072) == 43252  # r = S / L of the plan
    assert "theirs, not the paper's" in p.reasoning
    assert p.test_length == 32768  # the plan's own patch stays for L
    assert string_yarn(4096, 1408, 128, 5000).yarn is None  # factor (5000/4096)(1 - 0.34) < 1: no YaRN


def test_histogram_input_equals_frequency_input():
    h = LengthHistogram.from_lengths([300, 1200, 5000, 2048, 700, 90])
    f = position_frequency(h.lengths, h.counts, 2048, "natural")
    for rule in ({"tokens": 10**12}, {"mass": 0.9}):
        assert plan_string(2048, histogram=h, **rule).to_dict() == plan_string(2048, frequency=f, **rule).to_dict()


def test_a_histogram_follows_the_command_lines_budget_rule_in_python_too(tmp_path):
    """The README's one budget rule: T = --tokens, else 1T. `plan string --hist` planned at 1T while
    plan_string(L, histogram=h) fell back to the mass rule (N* 1813 against 1378 on a real corpus, S 704 against
    832)."""
    from click.testing import CliRunner

    from freqlab.cli import main

    h = LengthHistogram.from_lengths([300, 1200, 5000, 2048, 700, 90] * 1000)
    h.to_parquet(tmp_path / "h.parquet")
    api = plan_string(2048, histogram=h)
    assert api.rule == "budget" and api.well_trained.tokens == 10**12
    cli = CliRunner().invoke(main, ["plan", "string", "--hist", str(tmp_path / "h.parquet"), "--L", "2048", "--json"])
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.stdout)["S"] == api.S and json.loads(cli.stdout)["N_star"] == api.N_star


def test_schedule_input(tmp_path):
    LengthHistogram.from_lengths([2048] * 10).to_parquet(tmp_path / "h.parquet")
    schedule = parse_schedule(
        {"histogram": "h.parquet", "stages": [{"L": 2048, "tokens": "400B", "regime": "concat"}]},
        base=tmp_path,
    )
    sf = schedule_frequency(schedule)
    p = plan_string(2048, schedule=sf)  # schedule tau 100B: as the budget rule above
    assert (p.rule, p.N_star, p.S_rule, p.S) == ("schedule", 1537, 640, 704)
    with pytest.raises(FreqlabError, match="longest window"):
        plan_string(4096, schedule=sf)


def test_w_constraints():
    with pytest.raises(FreqlabError, match=r"W = 16 is below 32: in STRING.s ablation \(Fig. 7\) the window improves"):
        plan_string(2048, W=16)
    with pytest.raises(FreqlabError, match="much smaller than S"):
        plan_string(300)  # S = 128 (the only multiple of 64 in [75, 150]) and W = 128
    assert plan_string(2048, W=128).notes == ()  # S = 704
    p = plan_string(2048, W=200)  # W > S/4
    assert any("loosely" in note for note in p.notes)


def test_to_dict_is_json_ready():
    import json

    d = plan_string(4096).to_dict()
    assert json.loads(json.dumps(d))["S"] == 1408 and d["S_over_L"] == pytest.approx(1408 / 4096)


def test_usage_report_counts_the_pairs_and_the_positions_used(tmp_path):
    """A causal window of L tokens has L(L+1)/2 query-key pairs; STRING uses positions below max(S, L - S + W)."""
    u = string_usage(2048, 683, 128)
    assert u.report().splitlines() == [
        "STRING usage: RoPE uses positions 0..2047, STRING 0..1492 (positions ≥ 1365 dropped)",
        "  window L: 2048 (2K)",
        "  S, W: 683, 128",
        f"  query-key pairs: {2048 * 2049 // 2:,}",
        "  positions used before / after: 2048 / 1493",
    ]
    import polars as pl

    u.write_parquet(tmp_path / "usage.parquet")
    table = pl.read_parquet(tmp_path / "usage.parquet")
    assert table.columns == ["position", "pairs_before", "pairs_after"]
    assert table["pairs_before"].sum() == table["pairs_after"].sum() == 2048 * 2049 // 2


def test_the_scaled_position_and_its_distance_past_l_are_rounded_once():
    """An adversary's review: 4499 / 1.4667 = 3067.5 and its distance 68.5 were each rounded half to even: "scales to
    3068: 68 past L - 1 = 2999" (3068 - 2999 = 69)."""
    plan = plan_string(3000, S=1240, W=100, extend_to=7500)
    assert "becomes 3068 after YaRN (69 past L - 1 = 2999)" in plan.reasoning
    assert plan.extension.yarn.notes[0].endswith("(the last, 4499, scales to 3068: 69 past L - 1 = 2999)")


def test_a_window_or_test_length_past_2_30_is_refused_as_f_is():
    """A review: plan_string(10**19) printed a patch with max_test_length=10^19; position_frequency refuses L past
    2^30, and so do the planners (evaluate_self_extend's N too)."""
    from freqlab.plan.self_extend import evaluate_self_extend

    past = r"is larger than freqlab supports \(2\^30 = 1,073,741,824 positions\)$"
    for call in (
        lambda: plan_string(10**19),
        lambda: plan_string(np.uint64(2**63)),
        lambda: plan_string(4096, test_length=(1 << 30) + 1),
        lambda: evaluate_self_extend(4096, 8, 1024, 10**19),
    ):
        with pytest.raises(FreqlabError, match=past):
            call()
    assert plan_string(4096, test_length=1 << 30).S == plan_string(4096).S  # the largest is taken
