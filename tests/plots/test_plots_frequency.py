"""Position-frequency figures (STRING Fig. 1, 2, 3 layouts) draw the core API's numbers, labelled."""

import numpy as np
import pytest
from plot_helpers import assert_labelled, overlapping_texts

from freqlab import FreqlabError, LengthHistogram, effective_length, position_frequency
from freqlab.plots import (
    effective_length_curve,
    plot_effective_length,
    plot_position_frequency,
    plot_regimes,
    plot_windows,
)
from freqlab.plots.axes import position_tick_labels
from freqlab.plots.frequency import regime_grid

# 2049 documents of exactly 2048 tokens: T = 2048 * 2049 = 2 * (1 + ... + 2048), so the concat rows and the
# uniform sweep are both exact and the shares are the closed forms of reference.md (75.04/6.26, 87.52/1.57).
FULL_ROWS = LengthHistogram.from_counts([2048], [2049])


def test_fig1_panel_draws_f_and_segment_bars(histogram):
    fig = plot_position_frequency(histogram, 2048, "natural")
    assert_labelled(fig)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "relative position i (line) / segment length (bars) (K = 1024)"
    assert ax.get_ylabel() == "position frequency f(i) (M = 10⁶)"  # K = 1024 positions, decimal counts: both said
    assert fig.axes[1].get_ylabel() == "segments per bin of 64 (%)"  # 32 bins over 2048 positions
    assert ax.get_title() == "natural, L = 2K"
    (line,) = ax.lines
    np.testing.assert_array_equal(line.get_ydata(), position_frequency(histogram.lengths, histogram.counts, 2048))
    bars = fig.axes[1].patches
    assert len(bars) == 32
    assert sum(bar.get_height() for bar in bars) == pytest.approx(100.0)


def test_bins_finer_than_one_position_draw_one_bar_per_position():
    # --bins 4096 at L = 100 drew one bar 0.024 wide, out of sight, under "segments per bin of 0.0244141"
    fig = plot_position_frequency(LengthHistogram.from_counts([100], [3]), 100, "natural", bins=4096)
    bars = fig.axes[1].patches
    assert fig.axes[1].get_ylabel() == "segments per bin of 1 (%)" and len(bars) == 100
    assert [b.get_height() for b in bars if b.get_height()] == [100.0] and bars[-1].get_width() == 1.0


def test_each_segment_length_is_in_the_bar_over_the_lengths_it_holds():
    # np.histogram's [k, k + 1) bars drew length 7 and 8 in one bar over [7, 8], nothing in the first (a review):
    # a bar over (k·w, (k+1)·w] holds the lengths k·w + 1 .. (k+1)·w, drawn over the positions they end at
    fig = plot_position_frequency(LengthHistogram.from_lengths([4, 4, 7, 8]), 8, "natural", bins=8)
    heights = [bar.get_height() for bar in fig.axes[1].patches]
    assert heights == [0, 0, 0, 50, 0, 0, 25, 25]  # lengths 4, 7, 8 in the bars over (3, 4], (6, 7], (7, 8]
    wide = plot_position_frequency(LengthHistogram.from_lengths([1, 64, 65, 2048]), 2048, "natural")
    heights = [bar.get_height() for bar in wide.axes[1].patches]  # bars of 64: lengths 1..64 in the first
    assert heights[:2] == [50, 25] and heights[-1] == 25 and sum(heights[2:-1]) == 0


def test_a_regime_a_histogram_only_approximates_says_so_in_its_title(histogram):
    """Megatron's windows need its indexes: from a histogram the panel draws concat, and its title says so."""
    ax = plot_position_frequency(histogram, 2048, "megatron").axes[0]
    assert ax.get_title() == "megatron (computed as concat), L = 2K"
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), position_frequency(histogram, 2048, "concat"))


def test_fig1abc_shares_are_the_closed_forms():
    fig = plot_regimes(FULL_ROWS, 2048)
    assert_labelled(fig)
    titles = ["(a) natural, L = 2K", "(b) uniform, L = 2K", "(c) concat, L = 2K"]  # letters never cover titles
    assert [ax.get_title() for ax in fig.axes[:3]] == titles
    shown = [[t.get_text() for t in ax.texts if "%" in t.get_text()] for ax in fig.axes[:3]]
    assert shown[0] == ["i ≤ 1K\n75.0%", "i ≥ 1.5K\n6.3%"]  # natural = concat: every document is one row
    assert shown[1] == ["i ≤ 1K\n87.5%", "i ≥ 1.5K\n1.6%"]  # uniform lengths: quadratic f
    assert shown[2] == ["i ≤ 1K\n75.0%", "i ≥ 1.5K\n6.3%"]  # concat: linear f
    f_uniform = fig.axes[1].lines[0].get_ydata()
    np.testing.assert_array_equal(f_uniform, position_frequency([2048], [2049], 2048, "uniform"))


def test_fig1abc_panels_share_f_but_each_has_its_own_bar_scale(histogram):
    """f(i) has one scale across the panels (f(0) is the token count in each); the bars' axis is each panel's
    own (concat puts every segment in the last bin: one shared axis made the other panels look flat)."""
    fig = plot_regimes(histogram, 2048)
    panels, bars = fig.axes[:3], fig.axes[3:6]
    assert len({ax.get_ylim() for ax in panels}) == 1
    for ax in bars:
        assert ax.get_ylim()[1] == pytest.approx(1.6 * max(p.get_height() for p in ax.patches))
    assert len({ax.get_ylim() for ax in bars}) == 3
    assert all(label.get_visible() for ax in bars for label in ax.get_yticklabels())  # every scale is shown
    assert fig._supxlabel.get_text().endswith("(K = 1024)")


@pytest.mark.parametrize("size", ["one-column", "two-column"])
def test_fig1abc_texts_fit_at_both_paper_sizes(histogram, size):
    """The CLI's --help example at one column gave 700x364 px with "(a)" over a title, "1.5K2K" run together and
    the y label clipped: one column now stacks the panels, and no two texts overlap or leave the figure."""
    fig = plot_regimes(histogram, 2048, size=size)
    rows, cols = (3, 1) if size == "one-column" else (1, 3)
    assert regime_grid(3, size) == (rows, cols)
    assert fig.get_size_inches()[0] == pytest.approx(3.5 if size == "one-column" else 7.2)
    assert overlapping_texts(fig) == []
    assert_labelled(fig)
    with pytest.raises(FreqlabError, match=r"size 5x3 in: 2 rows of Fig. 1 panels need at least 3.6 in of height"):
        plot_regimes(histogram, 2048, size=(5, 3))


def test_position_ticks_use_one_unit_per_axis(histogram):
    """Never "512" beside "1K": every tick of an axis in K when all are multiples of 256 reaching 1K, else all
    written out; count axes likewise (0.5M beside 1M, not 500,000)."""
    fig = plot_regimes(histogram, 2048)
    overlapping_texts(fig)  # draws the figure, so the tick labels are set
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["0", "0.5K", "1K", "1.5K", "2K"]
    assert position_tick_labels([0, 750, 1500, 2250, 3000]) == ["0", "750", "1500", "2250", "3000"]
    counts = [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_text()]
    assert all(c == "0" or c.endswith("M") for c in counts), counts


@pytest.mark.parametrize(("counts", "budget"), [(([4096], [10]), 1e12), (([100_000, 3000], [50, 50]), 5e14)])
def test_the_tau_label_is_beside_the_axes_clear_of_dots_and_legend(counts, budget):
    """Reviews: on the README's figure "τ = 100B" (at the right end) lay under the label "3535" of the dot at 86%
    of the axis; moved to the left end, it lay under the legend when both dots were on the right (a budget of
    500T). It stands beside the axes, at the line's height."""
    from freqlab.plots import plot_effective_length

    fig = plot_effective_length(LengthHistogram.from_counts(*counts), [2048, 4096], budget=budget, tau=1e11)
    assert [pair for pair in overlapping_texts(fig) if any(text.startswith("τ") for text in pair)] == []
    (label,) = [t for t in fig.axes[1].texts if t.get_text().startswith("τ")]
    legend = fig.axes[1].get_legend().get_window_extent()
    assert label.get_position() == (1.01, 1e11) and not label.get_window_extent().overlaps(legend)


def test_a_tick_past_the_axis_end_does_not_choose_the_unit():
    """A review: one document of 925 tokens drew the effective-length axis as 0.25K, 0.5K, 0.75K (its 1K tick lay
    past the axis's end, 960), and the label said nothing of K = 1024."""
    from freqlab.plots import plot_effective_length

    fig = plot_effective_length(LengthHistogram.from_lengths([925]), [2048, 4096])
    fig.canvas.draw()
    axis = fig.axes[0].yaxis
    lo, hi = axis.get_view_interval()
    drawn = [t.get_text() for t, x in zip(axis.get_ticklabels(), axis.get_ticklocs(), strict=True) if lo <= x <= hi]
    assert drawn == ["0", "256", "512", "768"] and "K = 1024" not in fig.axes[0].get_ylabel()


def test_regimes_wrap_into_rows_and_hide_spare_panels(histogram):
    fig = plot_regimes(histogram, 1024, ["natural", "truncate", "concat", "uniform"], columns=3)
    main = fig.axes[:6]
    assert [ax.get_visible() for ax in main] == [True, True, True, True, False, False]
    assert_labelled(fig)
    with pytest.raises(FreqlabError, match="at least one regime"):
        plot_regimes(histogram, 1024, [])


def test_truncate_panel_reports_dropped_tokens():
    fig = plot_position_frequency(LengthHistogram.from_counts([1000, 3000], [1, 1]), 2048, "truncate")
    # 3000 -> 2048: 952 of 4000 tokens dropped
    assert "cut:\n24% of\ntokens" in [t.get_text() for t in fig.axes[0].texts]


def test_windows_share_the_budget_at_position_zero(histogram):
    fig = plot_windows(histogram, (2048, 4096), tokens=1e12)
    assert_labelled(fig)
    lines = fig.axes[0].lines
    assert [line.get_label() for line in lines] == ["L = 2K", "L = 4K"]
    assert fig.axes[0].get_ylabel() == "occurrences f_T(i) (T = 10¹²)"  # ticks in one unit: 0.2T, ..., 1T
    assert fig.axes[0].get_xlabel() == "relative position i (K = 1024)"
    # STRING Fig. 3: position 0 occurs T times whatever the window; the gap grows with i
    assert [line.get_ydata()[0] for line in lines] == [pytest.approx(1e12), pytest.approx(1e12)]
    assert lines[1].get_ydata()[1024] > lines[0].get_ydata()[1024]


def test_effective_length_curve_and_threshold():
    f = position_frequency([2048], [2049], 2048, "concat")
    # f_T(i) = T (2048 - i) / 2048 >= 1e11  <=>  i <= 2048 - 2048e11 / T: 0 at T = tau, 1843 at 1T (README), 2027 at 10T
    assert effective_length_curve(f, [1e11, 1e12, 1e13]).tolist() == [0, 1843, 2027]
    fig = plot_effective_length(FULL_ROWS, (2048,), "concat", budget=1e12)
    assert_labelled(fig)
    left, right = fig.axes[:2]
    assert left.get_xscale() == "log" and right.get_yscale() == "log"
    assert left.get_xlabel() == "training tokens T (B = 10⁹, T = 10¹²)"
    assert left.get_ylabel() == "predicted effective length (K = 1024)"
    assert [line.get_ydata()[0] for line in right.lines if line.get_linestyle() == "--"] == [1e11]  # tau = 100B
    assert "1843" in [t.get_text() for t in right.texts]
    assert effective_length(f, 1e12) == 1843
    with pytest.raises(FreqlabError, match="token range"):
        plot_effective_length(FULL_ROWS, (2048,), tokens=(1e12, 1e11))
    # a grid starting below one token (tau = 1: from tau / 2) is plotted, its first budgets 0 (a review saw it refused)
    low = plot_effective_length(FULL_ROWS, (2048,), "concat", tau=1.0)
    assert low.axes[0].lines[0].get_ydata()[0] == 0


def test_an_effective_length_at_either_end_is_marked_or_said():
    """A review: a budget that trains the whole window (E = L - 1) drew no dot, nor one below tau (E = 0) a word."""
    whole = plot_effective_length(FULL_ROWS, (2048,), "concat", budget=10**18)  # f_T(2047) = 1e18/2048 >= 1e11
    assert [t.get_text() for t in whole.axes[1].texts if t.get_text() != "τ = 100B"] == ["2047"]
    none = plot_effective_length(FULL_ROWS, (2048,), "concat", budget=10**10)  # T below tau
    assert none.axes[1].lines[0].get_label() == "L = 2K (E = 0: no position past 0 reaches τ)"


def test_bad_inputs_are_clear_errors():
    with pytest.raises(FreqlabError, match="no documents"):
        plot_position_frequency(LengthHistogram.from_lengths([]), 2048)
    with pytest.raises(FreqlabError, match="LengthHistogram or a"):
        plot_position_frequency([1, 2, 3], 2048)
    with pytest.raises(FreqlabError, match="unknown regime"):
        plot_position_frequency(([5], [1]), 8, "zigzag")


def test_a_toy_histogram_gets_ticks_that_say_their_values():
    """A review: one 1-token document gave an f axis reading 0, 0, 0, 1, 1, 1 (ticks at 0.2, 0.4, ... rounded), and a
    window below 8 positions ticks at 0.5, 1.5."""
    fig = plot_position_frequency(LengthHistogram.from_lengths([1]), 4)
    fig.canvas.draw()
    positions = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert positions and all(label.isdigit() for label in positions)
    for ax in fig.axes:
        counts = [t.get_text() for t in ax.get_yticklabels()]
        assert len(counts) == len(set(counts)), counts  # no two ticks of one axis read alike


def test_effective_length_axes_are_ticked_for_the_data_and_dot_labels_do_not_overlap():
    """A review: beside L = 256K, panel (a) ticked quarters of 256K (only 0 under curves reaching ~43K), and in (b)
    the labels of the dots printed over the tau label."""
    rng = np.random.default_rng(0)
    h = LengthHistogram.from_lengths(np.maximum(1, rng.lognormal(6.5, 1.5, 3000).astype(np.int64)))
    fig = plot_effective_length(h, [2048, 262144], budget=10**12, tau=10**11)
    fig.canvas.draw()
    left, right = fig.axes[:2]
    bottom, top = left.get_ylim()
    shown = [t for t in left.get_yticks() if bottom <= t <= top]
    assert len(shown) >= 3, shown
    boxes = [t.get_window_extent() for t in right.texts]
    assert len(boxes) == 3  # two dots' labels and tau's
    assert not any(a.overlaps(b) for k, a in enumerate(boxes) for b in boxes[k + 1 :])


@pytest.mark.parametrize(("tau", "message"), [(0, "got 0"), (float("nan"), "got nan"), ("100B", "got '100B'")])
def test_a_threshold_that_is_no_positive_number_is_named(tau, message):
    """A review: tau=0 said "token range must satisfy 0 < start < stop, got None" (no token range was given),
    tau='100B' a raw TypeError."""
    with pytest.raises(FreqlabError, match=f"tau must be a positive .*{message}"):
        plot_effective_length(LengthHistogram.from_lengths([100, 3000]), 2048, tau=tau)


def test_effective_length_of_one_token_documents_is_refused_not_drawn_empty():
    """A review: a histogram of 1-token documents gave two empty panels and matplotlib's warnings ("Data has no
    positive values", "identical low and high ylims"); under concat the same documents fill windows."""
    ones = LengthHistogram.from_counts([1], [1000])
    with pytest.raises(FreqlabError, match="under natural at L = 2048 every segment is 1 token long"):
        plot_effective_length(ones, 2048)
    assert plot_effective_length(ones, 8, "concat").axes  # 1,000 tokens in windows of 8


def test_decades_past_100T_are_powers_of_ten_and_budgets_stay_within_int64():
    """A review: tau = 9e18 ticked panel (b) 1e18, 10000T, 100T (three forms on one axis) and drew panel (a) to
    ~1e21 tokens, past the 2^63 - 1 that --tokens takes."""
    fig = plot_effective_length(FULL_ROWS, (2048,), "concat", budget=10**19, tau=9e18)
    fig.canvas.draw()
    left, right = fig.axes[:2]
    assert left.get_xlim()[1] <= 2**63
    labels = [t.get_text() for t in right.get_yticklabels() if t.get_text()]
    assert labels and all(label.startswith("10") or label[-1] in "0123456789MBT" for label in labels), labels
    assert not any(label.endswith("e18") or label.endswith("000T") for label in labels), labels
    assert "10¹⁸" in [t.get_text() for t in left.get_xticklabels()]


def test_effective_length_at_a_window_of_one_and_a_tau_past_int64():
    """A second review: L = 1 (no position past 0) still drew empty panels with matplotlib's warnings, and a tau of
    1e20 from Python was refused ("token range must satisfy 0 < start < stop, got None")."""
    with pytest.raises(FreqlabError, match="a window of L = 1 holds position 0 alone, so there is no effective"):
        plot_effective_length(LengthHistogram.from_counts([1, 50], [1000, 1]), [1])
    fig = plot_effective_length(LengthHistogram.from_counts([1, 50], [1000, 1]), [16], tau=1e20)
    assert fig.axes[0].get_xlim()[1] >= 1e21  # up to 100 tau: its own range past 2^63
    h = LengthHistogram.from_counts([1, 50], [1000, 1])
    low, high = plot_effective_length(h, [16], tau=1.8446744073709e19).axes[0].get_xlim()  # just below 2^64
    assert high >= 100 * low  # not a range of nothing
    with pytest.raises(FreqlabError, match=r"tau = 1e\+307: the default budgets tau/2 .. 100 tau pass what a figure"):
        plot_effective_length(h, [16], tau=1e307)  # 100 tau was inf (a second review)
