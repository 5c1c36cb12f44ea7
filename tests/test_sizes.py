"""freqlab.sizes: counts printed for people."""

from __future__ import annotations

import numpy as np
import pytest

from freqlab import LengthHistogram, position_frequency
from freqlab.errors import FreqlabError
from freqlab.frequency import effective_length, tokens_needed
from freqlab.sizes import human_count, parse_positions, parse_tokens


@pytest.mark.parametrize("n", [304_295_942_721, 221_024_740_487, 999_600_000, 1_000, 1_234, 5e15, 100e9])
def test_a_minimum_printed_rounded_up_is_never_below_it(n):
    shown = human_count(n, up=True)
    assert parse_tokens(shown) >= n and (parse_tokens(shown) - n) < n / 100


def test_a_needed_budget_as_printed_reaches_the_position():
    """stats printed 'f_T(1024) ≥ 100B needs T ≥ 304B tokens' (exact 304,295,942,721) and freq --tokens 304B then
    gave an effective length of 1023: a minimum is rounded up."""
    h = LengthHistogram.from_counts([100, 1300, 2000, 3000, 5000], [50, 10, 7, 3, 2])
    f = position_frequency(h, 2048, "natural")
    needed = tokens_needed(f, 1024, 100e9)
    assert human_count(needed) == "304B" and human_count(needed, up=True) == "305B"
    assert effective_length(f, parse_tokens(human_count(needed)), 100e9) == 1023
    assert effective_length(f, parse_tokens(human_count(needed, up=True)), 100e9) >= 1024


def test_counts_of_any_sign_and_size_keep_one_form():
    """Negative counts rounded their magnitude the same way and printed '-1e+03K'; inf printed 'infT'."""
    shown = [human_count(x) for x in (-999_500, -999.5e12, -999.5, -0.4, float("inf"), 2.5, 999.5, 2.03e16)]
    assert shown == ["-1M", "-1000T", "-1K", "0", "inf", "3", "1K", "20300T"]
    assert (human_count(-1_234_567, up=True), human_count(-1_234_567, down=True)) == ("-1.23M", "-1.24M")


def test_tau_is_one_type_in_every_commands_json():
    """A review: stats --json and plan ... well_trained wrote tau as 100000000000.0, freq --json as 100000000000."""
    from freqlab.plan.well_trained import well_trained_range
    from freqlab.sizes import json_threshold

    assert [json_threshold(t) for t in (100e9, 10**11, 2**53 + 3, 1.5, 1e300)] == [
        10**11,
        10**11,
        2**53 + 3,
        1.5,
        1e300,
    ]
    assert all(type(json_threshold(t)) is int for t in (100e9, np.float64(5e10), np.int64(7)))
    wt = well_trained_range(300, frequency=np.arange(300, 0, -1), tokens=400, tau=200.0).to_dict()
    assert wt["tau"] == 200 and type(wt["tau"]) is int


def test_a_suffixed_fraction_that_is_no_whole_number_says_what_it_came_to():
    """A review: "--effective-length 1.9K must be a positive integer" left the user to find that 1.9K is 1945.6."""
    with pytest.raises(FreqlabError, match=r"got '1.9K' \(1,945.6\)$"):
        parse_positions("1.9K")
    with pytest.raises(FreqlabError, match=r"got '1.9999999K' \(2,047.9998976\)$"):  # exact: not "(2048)"
        parse_positions("1.9999999K")
    assert parse_positions("1.5K") == 1536


def test_position_labels_write_multiples_of_a_quarter_M_in_M_as_the_papers_do():
    """A review: 2^30 was '1048576K'."""
    from freqlab.sizes import position_label

    assert [position_label(x) for x in (1 << 20, 5 << 18, 1 << 30, (1 << 20) + 256, 1 << 19)] == [
        "1M", "1.25M", "1024M", "1024.25K", "512K",
    ]  # fmt: skip


def test_counts_told_apart_write_a_count_below_1000_that_is_no_whole_number_as_it_is():
    """A review: tau = 3.3 was written "3", and the reasoning's positions 0..96 then read wrong (f = 3 at 97 passes
    3)."""
    from freqlab.sizes import counts_told_apart

    assert counts_told_apart(100, 3.3) == ("100", "3.3")
    assert counts_told_apart(2, 2.5) == ("2", "2.5")
    assert counts_told_apart(10**12, 10**11) == ("1T", "100B")
    assert counts_told_apart(999.9999, 1000) == ("999.9999", "1K")  # :g read "1000" beside "1K" (a second review)
    from fractions import Fraction

    assert counts_told_apart(Fraction(1, 3), 1) == ("0.333333333333", "1")  # a TypeError from Fraction's format
