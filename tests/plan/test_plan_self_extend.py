"""Self-Extend (Jin et al., ICML 2024, Eq. 8, Fig. 3, Table 1): max length, positions used, and the (G, w_n) planner."""

from __future__ import annotations

import pytest

from freqlab.errors import FreqlabError
from freqlab.frequency import position_frequency
from freqlab.plan.self_extend import (
    LLAMA_CPP_NOTE,
    PAPER_GROUP,
    PAPER_L,
    PAPER_N,
    PAPER_WINDOW,
    evaluate_self_extend,
    largest_window,
    paper_setting,
    plan_self_extend,
    self_extend_eq8,
    self_extend_largest_position,
    self_extend_max_length,
    self_extend_position_matrix,
)


def brute_max_length(L: int, G: int, w_n: int) -> int:
    """Grow N until some pair's Self-Extend position (official pseudo-code, cell by cell) reaches L."""
    N = 1
    while True:
        m, worst = N, 0  # adding token m = N: its pairs with every key n <= m
        for n in range(m + 1):
            r = m - n
            p = r if r < w_n else m // G - n // G + w_n - w_n // G
            worst = max(worst, p)
        if worst >= L:
            return N
        N += 1


def test_fig3_example():
    assert self_extend_max_length(7, 2, 4) == self_extend_eq8(7, 2, 4) == 10


def test_llama2_4k_table1_setting():
    # Eq. 8: (4096 - 1024) * 8 + 1024 = 25,600 (> 16K, as Table 1 reports). The issue text's 24,576 is
    # (L - w_n) * G without the "+ w_n" of Eq. 8; the brute force below confirms 25,600.
    assert self_extend_max_length(4096, 8, 1024) == 25600
    assert self_extend_eq8(4096, 8, 1024) == 25600
    assert self_extend_largest_position(25600, 8, 1024) == 4095
    assert self_extend_largest_position(25601, 8, 1024) == 4096
    # the 24,576 is exactly Eq. 8 without "+ w_n", and that length is 1,024 tokens short of the limit
    assert (4096 - 1024) * 8 == 24576 == self_extend_eq8(4096, 8, 1024) - 1024
    assert self_extend_largest_position(24576, 8, 1024) == 3967  # 24575 // 8 + 1024 - 128 < L - 1


@pytest.mark.parametrize("L", [5, 7, 12, 16])
def test_max_length_matches_brute_force(L):
    for G in range(1, 6):
        for w_n in range(0, L):
            assert self_extend_max_length(L, G, w_n) == brute_max_length(L, G, w_n), (L, G, w_n)
            if w_n % G == 0:
                assert self_extend_max_length(L, G, w_n) == self_extend_eq8(L, G, w_n)


def test_largest_position_matches_matrix():
    for N, G, w_n in [(10, 2, 4), (11, 2, 4), (30, 3, 5), (8, 4, 8), (25, 5, 0)]:
        P = self_extend_position_matrix(N, G, w_n)
        assert self_extend_largest_position(N, G, w_n) == P.max()


def test_fig3_matrix_last_row():
    # L = 7, w_n = 4, G = 2, 10 tokens: neighbours 0..3 exact, farther ones grouped, max 6 < L
    row = self_extend_position_matrix(10, 2, 4)[-1]
    assert row.tolist() == [6, 6, 5, 5, 4, 4, 3, 2, 1, 0]


def test_evaluate_given_setting():
    c = evaluate_self_extend(4096, 8, 1024, 16384, well_trained=2730)
    assert (c.max_length, c.eq8_length, c.largest_position) == (25600, 25600, 2943)
    assert c.rule_of_thumb == 1024 + (16384 - 1024) / 8 == 2944
    assert c.fits is True and c.well_trained is False  # 2944 > 2/3 of 4096
    assert evaluate_self_extend(4096, 3, 1000).notes[0].startswith("w_n = 1000 is not divisible by G = 3")
    # w_n = 0 is allowed and said: every distance grouped, the largest position (N - 1) // G (a review)
    zero = evaluate_self_extend(4096, 4, 0, 16384)
    assert zero.largest_position == 16383 // 4 == 4095
    assert zero.notes == ("w_n = 0: no neighbour window, so every pair takes its grouped position m // G - n // G, "
                          "and tokens of one group see each other at position 0",)  # fmt: skip
    assert evaluate_self_extend(4096, 1, 0).notes == ("G = 1 is outside the maintainers' range 2..64",)  # no grouping


def enumerate_choice(L, N, N_star, lo, hi, max_group=64):
    """Slow reference: every (G, w_n) pair, smallest G first, then the largest w_n."""
    for G in range(2, max_group + 1):
        ok = [w for w in range(lo, hi + 1) if w % G == 0 and (L - w) * G + w >= N and G * w + (N - w) <= G * N_star]
        if ok:
            return G, max(ok)
    return None


def test_planner_picks_smallest_group_and_largest_window():
    p = plan_self_extend(4096, 16384)  # N* = 2/3 · 4096 = 2730, windows [L/8, L/4] = [512, 1024]
    assert (p.N_star, p.G, p.w_n) == (2730, 8, 776)
    assert enumerate_choice(4096, 16384, 2730, 512, 1024) == (8, 776)
    assert p.hf_call.startswith("SelfExtend.apply(model, 8, 776)")
    assert p.llama_cpp_flags == "--grp-attn-n 8 --grp-attn-w 776"
    assert p.check.max_length == 27336 >= 16384 and p.check.largest_position == 2726 < 2730


def test_paper_setting_is_shown_beside_the_recommendation_and_the_rule_rejects_it():
    # Sec. 4.1, Table 1: Llama-2-7b-chat 4K -> 16K with "group size G set as 8 and neighbor window w_n set as 1024"
    assert (PAPER_L, PAPER_N, PAPER_GROUP, PAPER_WINDOW) == (4096, 16384, 8, 1024)
    p = plan_self_extend(4096, 16384)
    paper = p.paper_setting
    assert (paper.G, paper.w_n, paper.max_length, paper.eq8_length) == (8, 1024, 25600, 25600)  # Eq. 8
    # the maintainers' rule: 1024 + (16384 - 1024)/8 = 2944 > N* = 2/3 · 4096 = 2730 -> rejected
    assert paper.rule_of_thumb == 2944 and paper.N_star == 2730 and paper.well_trained is False
    assert paper.fits is True  # the positions used (up to 2943) do stay below L
    assert "not the paper's" in p.reasoning and "maintainers'" in p.reasoning
    assert "G = 8, w_n = 1024 (Sec. 4.1, Table 1; Eq. 8: (4096 - 1024)·8 + 1024 = 25600 tokens)" in p.reasoning
    assert "rejects it: w_n + (N - w_n)/G = 2944 > N* = 2730" in p.reasoning
    assert p.to_dict()["paper_setting"]["max_length"] == 25600


def test_paper_setting_against_other_targets():
    p = plan_self_extend(4096, 8192)  # 1024 + 7168/8 = 1920 <= 2730: accepted, but G = 4 is smaller
    assert p.G == 4 and p.paper_setting.well_trained is True and "passes the rule above" in p.reasoning
    assert paper_setting(1024, 8192, 682) is None  # w_n = 1024 does not fit a 1K window
    assert "does not fit this window" in plan_self_extend(1024, 8192).reasoning


@pytest.mark.parametrize(
    ("L", "N", "N_star"),
    [(4096, 16384, 2048), (4096, 8192, 2730), (2048, 10000, 1500), (8192, 100000, 6000), (4096, 32768, 3000)],
)
def test_planner_matches_enumeration(L, N, N_star):
    p = plan_self_extend(L, N, well_trained=N_star)
    assert (p.G, p.w_n) == enumerate_choice(L, N, N_star, L // 8, L // 4)
    assert p.check.well_trained is True and p.check.fits is True


def test_planner_with_given_half_window():
    p = plan_self_extend(4096, 16384, well_trained=2048)  # the maintainers' 1/2 · L
    assert (p.G, p.w_n) == (11, 605)  # G >= 10.33 from (2048 G - 16384)/(G - 1) >= 512


def test_planner_uses_frequency():
    L = 4096
    f = position_frequency([L], [1], L)  # f(i) = L - i
    p = plan_self_extend(L, 16384, frequency=f, tokens=400e9, tau=100e9)  # N* = 3073 (budget rule)
    assert p.N_star == 3073 and p.rule == "budget"
    assert (p.G, p.w_n) == enumerate_choice(L, 16384, 3073, 512, 1024)


def test_the_predicted_N_star_replaces_the_maintainers_guess_which_is_shown_beside_it():
    """With a prediction (f_T(i) >= tau: N* = 3073) the smallest G with w_n + (N - w_n)/G <= N* is G = 7
    (w_n <= (G·N* - N)/(G - 1): 410.8 < 512 for G = 6, 854.5 for G = 7, and 854 = 7 · 122); the maintainers'
    1/2..2/3 L guess (N* = 2048, 2730) would have given G = 11 and G = 8."""
    L = 4096
    f = position_frequency([L], [1], L)
    p = plan_self_extend(L, 16384, frequency=f, tokens=400e9, tau=100e9)
    assert (p.G, p.w_n) == (7, 854) == enumerate_choice(L, 16384, 3073, 512, 1024)
    assert 7 * 854 + (16384 - 854) <= 7 * 3073  # w_n + (N - w_n)/G = 3072.6 <= N*, in integers
    assert p.guesses == ((2048, 11, 605), (2730, 8, 776))
    assert p.guesses[1][1:] == enumerate_choice(L, 16384, 2730, 512, 1024)
    assert "the budget rule replaced it" in p.reasoning and "1/2 to 2/3 of L" in p.reasoning
    assert p.to_dict()["maintainers_guess"][0] == {"N_star": 2048, "G": 11, "w_n": 605}
    default = plan_self_extend(L, 16384)
    assert "it is the default here" in default.reasoning and default.rule == "default"


def test_llama_cpp_line_names_the_program_and_the_context():
    p = plan_self_extend(4096, 16384)
    assert p.llama_cpp_command == "llama-completion -m MODEL.gguf -c 16384 --grp-attn-n 8 --grp-attn-w 776"
    assert p.w_n % p.G == 0  # llama.cpp asserts it
    for fact in ("llama-server dropped both (#9860)", "llama-passkey takes --grp-attn-n only", "#17824"):
        assert fact in LLAMA_CPP_NOTE


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"L": 4096, "N": 4096}, "not above the training window"),
        ({"L": 4096, "N": 2000}, "not above the training window"),
        ({"L": 4096, "N": 16384, "well_trained": 5000}, "integer in 1..L"),
        ({"L": 4096, "N": 16384, "well_trained": 400}, "not above the smallest neighbour window"),
        ({"L": 4096, "N": 10**7, "max_group": 8}, "no group size"),
    ],
)
def test_impossible_requests_are_clear_errors(kwargs, message):
    with pytest.raises(FreqlabError, match=message):
        plan_self_extend(**kwargs)


def test_largest_window_helper():
    assert largest_window(4096, 16384, 2730, 8) == 776
    assert largest_window(4096, 16384, 2730, 2) == -1
    assert largest_window(4096, 16384, 2730, 1) == -1
    assert largest_window(7, 10, 7, 2) == 4  # Fig. 3: w_n = 4 is the largest for N = 10


def test_the_reasoning_says_the_window_is_the_largest_that_keeps_the_positions_within_N_star():
    """G = 8 at 2K -> 8K: 512 is divisible by 8 and inside [256, 512], but 512 + 7680/8 = 1472 > N* = 1365; the
    reasoning called 384 'the largest neighbour window divisible by G' without the condition that rules 512 out."""
    p = plan_self_extend(2048, 8192)
    assert (p.G, p.w_n, p.N_star) == (8, 384, 1365)
    assert "the largest neighbour window divisible by G in [256, 512] that keeps them there, w_n = 384" in p.reasoning


def test_the_headline_labels_the_max_length_eq_8_only_where_it_is_eq_8():
    """A review: G = 8, w_n = 1001 showed 25,760 "(Eq. 8)", where Eq. 8, (L − w_n)·G + w_n, gives 25,761."""
    assert "max length 25,600 (Eq. 8);" in repr(evaluate_self_extend(4096, 8, 1024, 16384))
    assert "max length 25,760 ((L − w_n + w_n // G)·G);" in repr(evaluate_self_extend(4096, 8, 1001, 16384))
