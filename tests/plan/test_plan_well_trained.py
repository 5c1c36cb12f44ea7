"""The well-trained range N*, shared by STRING, Self-Extend and upsampling: budget, schedule, mass, default."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

from freqlab.errors import FreqlabError
from freqlab.frequency import position_frequency
from freqlab.frequency.schedule import parse_schedule, schedule_frequency
from freqlab.histogram import LengthHistogram
from freqlab.plan.well_trained import frequency_from_histogram, well_trained_range


def count_reaching(f, T, tau) -> int:
    """Slow reference: how many positions have f(i) · T / f(0) >= tau (exact rationals)."""
    return sum(1 for v in f if Fraction(int(v) * T, int(f[0])) >= Fraction(tau))


@pytest.mark.parametrize(("T", "tau"), [(400, 100), (1000, 999), (10**12, 10**11), (50, 100), (7, 7)])
def test_budget_rule_counts_positions_at_or_above_tau(T, tau):
    f = position_frequency([300, 120, 77, 5], [3, 10, 2, 40], 256)
    wt = well_trained_range(256, frequency=f, tokens=T, tau=tau)
    assert (wt.rule, wt.N) == ("budget", count_reaching(f, T, tau))


def test_mass_rule_is_smallest_prefix_with_that_share():
    f = position_frequency([300, 120, 77, 5], [3, 10, 2, 40], 256)
    for mass in (0.5, 0.9, 0.99):
        wt = well_trained_range(256, frequency=f, mass=mass)
        share = np.cumsum(f) / f.sum()
        assert (wt.rule, wt.N) == ("mass", int(np.argmax(share >= mass)) + 1)


def test_default_fraction():
    assert well_trained_range(4096).N == 2730  # floor(2/3 · 4096)
    assert well_trained_range(4096, default_fraction=0.5).N == 2048


def test_schedule_rule_adds_stages(tmp_path):
    LengthHistogram.from_lengths([4096] * 3).to_parquet(tmp_path / "h.parquet")
    data = {
        "histogram": "h.parquet",
        "tau": "100B",
        "stages": [
            {"L": 2048, "tokens": "200B", "regime": "concat"},
            {"L": 4096, "tokens": "200B", "regime": "concat"},
        ],
    }
    sf = schedule_frequency(parse_schedule(data, base=tmp_path))
    wt = well_trained_range(4096, schedule=sf)
    # F(i) = 200B (2048 - i)/2048 + 200B (4096 - i)/4096 for i < 2048, 200B (4096 - i)/4096 beyond (in B):
    F = [
        Fraction(200 * (2048 - i), 2048) + Fraction(200 * (4096 - i), 4096)
        if i < 2048
        else Fraction(200 * (4096 - i), 4096)
        for i in range(4096)
    ]
    assert (wt.rule, wt.N) == ("schedule", sum(1 for v in F if v >= 100))


def _two_stages(tmp_path, first: str, last: str | None):
    """400B tokens at 2K in layout ``first``, then 100B at 4K in ``last``, concat: a plan's schedule."""
    LengthHistogram.from_lengths([4096] * 3).to_parquet(tmp_path / "h.parquet")
    stages = [
        {"L": 2048, "tokens": "400B", "regime": "concat", "layout": first},
        {"L": 4096, "tokens": "100B", "regime": "concat", **({"layout": last} if last else {})},
    ]
    return schedule_frequency(
        parse_schedule({"histogram": "h.parquet", "tau": "100B", "stages": stages}, base=tmp_path)
    )


def test_schedule_rule_plans_the_rope_layers_that_attend_the_whole_window(tmp_path):
    """A review: the N* of a schedule with a layout was the data's, as if every layer attended it all; Llama 4's
    chunked + NoPE layers got a STRING shift, NoPE alone one too. F in B: 400 (2048 - i)/2048 + 100 (4096 - i)/4096
    for i < 2048 (>= 100 up to i = 1820), 100 (4096 - i)/4096 beyond (< 100)."""
    expected = sum(
        1 for i in range(4096) if Fraction(400 * max(2048 - i, 0), 2048) + Fraction(100 * (4096 - i), 4096) >= 100
    )
    assert expected == 1821
    gemma = well_trained_range(4096, schedule=_two_stages(tmp_path, "5*swa1K+global", "5*swa1K+global"))
    assert (gemma.rule, gemma.N) == ("schedule", expected)
    assert "in its global layers (1 in every 6 layers of 5*swa1K+global, the RoPE layers that attend it all)" in (
        gemma.explanation
    )
    # the layers made global for the last stage trained as windows of 1K before: beside the layers global
    # throughout, the plan extends the ones trained least far (i >= 1024 only in the 100B stage: < 100B)
    made_global = well_trained_range(4096, schedule=_two_stages(tmp_path, "swa1K+global", "global"))
    assert made_global.N == 1024
    assert "in its global (was swa1K) layers (of global, the RoPE layers that attend it all)" in made_global.explanation
    for first, last, why in [
        ("3*chunk1K+nope", "3*chunk1K+nope", "(3*chunk1K+nope) has no RoPE layer that attends the whole window of "
         "4096 (chunk1K reaches 1023, nope has no rotary embedding)"),
        ("nope", "nope", "(nope) has no RoPE layer that attends the whole window of 4096 (nope has no rotary"),
    ]:  # fmt: skip
        with pytest.raises(FreqlabError, match=re.escape(why)):
            well_trained_range(4096, schedule=_two_stages(tmp_path, first, last))


def test_histogram_helper_matches_position_frequency(tmp_path):
    h = LengthHistogram.from_lengths([10, 20, 5000])
    h.to_parquet(tmp_path / "h.parquet")
    expected = position_frequency(h.lengths, h.counts, 64, "truncate")
    assert np.array_equal(frequency_from_histogram(tmp_path / "h.parquet", 64, "truncate"), expected)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"frequency": np.arange(10)}, "one value per position"),
        ({"frequency": np.zeros(16, dtype=np.int64)}, "f\\(0\\) is zero"),
        ({"frequency": np.array([5] * 8 + [6] * 8)}, "non-increasing"),
        # f(0) = -16 was "zero", and a NaN frequency was planned from (a review)
        ({"frequency": -np.arange(16, 0, -1)}, "never negative: f\\(0\\) = -16"),
        ({"frequency": np.full(16, np.nan)}, "finite: f\\(0\\) = nan"),
        ({"frequency": np.arange(16, 0, -1), "mass": 1.5}, "mass"),
        ({"frequency": np.arange(16, 0, -1), "tokens": -5}, "budget"),
    ],
)
def test_bad_inputs(kwargs, message):
    with pytest.raises(FreqlabError, match=message):
        well_trained_range(16, **kwargs)


def test_a_uint64_frequency_is_read_as_its_values():
    # an adversary: np.diff of a uint64 f wrapped below zero, so a decreasing f was "not non-increasing"
    f = np.arange(16, 0, -1, dtype=np.uint64)
    assert well_trained_range(16, frequency=f).N == well_trained_range(16, frequency=f.astype(np.int64)).N


def test_report_and_dict_say_n_star_and_its_rule():
    """Without frequency information N* is 2/3 of L (the documented default): 2048 for L = 3072."""
    wt = well_trained_range(3072)
    assert wt.report() == "well-trained range N* = 2048 (rule: default)\n  no frequency information: N* = 2/3 of L"
    assert wt.to_dict() == {
        "N_star": 2048,
        "L": 3072,
        "rule": "default",
        "explanation": wt.explanation,
        "tokens": None,
        "tau": None,
        "mass": None,
    }
