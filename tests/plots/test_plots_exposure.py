"""The exposure figure: f(c)/f(0) per source and the tail table's shares, drawn exactly."""

import numpy as np
from plot_helpers import assert_labelled

from freqlab import LengthHistogram
from freqlab.histogram import combine_sources
from freqlab.plots.exposure import plot_exposure


def test_exposure_figure_draws_each_source_s_tail_shares():
    h = combine_sources(
        {"web": LengthHistogram.from_lengths([1000] * 50), "books": LengthHistogram.from_lengths([20000, 9000])}
    )
    fig = plot_exposure(h)
    assert_labelled(fig)
    left, right = fig.axes[:2]
    assert [line.get_label() for line in left.lines] == ["books", "web", "(all)"]
    books = left.lines[0].get_ydata()
    assert books[4096] == (15904 + 4904) / 29000 and books.size == 20000
    heights = [round(bar.get_height(), 9) for bar in right.patches]
    # books at 4K, 8K, 16K; then web; then all
    assert heights[:3] == [round(100 * v, 9) for v in ((15904 + 4904) / 29000, (11808 + 808) / 29000, 3616 / 29000)]
    assert heights[3:6] == [0.0, 0.0, 0.0]
    assert np.isclose(heights[6], 100 * (15904 + 4904) / 79000)


def test_a_window_of_at_most_4k_gets_thresholds_of_its_own_scale():
    # L = 2048: the bars are at 256, 512, 1024 (not a 4K bar of zeros); one document of 2048 tokens has
    # f(c) = 2048 - c, so the shares are (2048 - t) / 2048
    fig = plot_exposure(LengthHistogram.from_lengths([2048]), L=2048)
    right = fig.axes[1]
    # one unit on the axis, as every position axis has (a review: "256, 512, 1K")
    assert [t.get_text() for t in right.get_xticklabels()] == ["0.25K", "0.5K", "1K"]
    assert [round(bar.get_height(), 9) for bar in right.patches] == [
        round(100 * (2048 - t) / 2048, 9) for t in (256, 512, 1024)
    ]


def test_a_source_named_with_a_leading_underscore_is_in_the_legend():
    """A review: matplotlib's automatic legend leaves out labels starting with "_" (and reads "$" as math)."""
    h = combine_sources(
        {"_private": LengthHistogram.from_lengths([50, 900]), "web $": LengthHistogram.from_lengths([30])}
    )
    fig = plot_exposure(h, 1024)
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert labels[:2] == ["_private", "web \\$"] and len(labels) == 3  # the sources, then all of them


def test_a_source_without_tokens_has_no_curve_and_no_warning(recwarn):
    """A review: a source weighted 0 divided f/f(0) by zero (a RuntimeWarning) and was listed without a curve; and
    thresholds written out (375, 750, 1500 for L = 3000) were labelled K = 1024 all the same."""
    h = combine_sources({"a": LengthHistogram.from_lengths([100, 5000]), "b": LengthHistogram.from_counts([], [])})
    fig = plot_exposure(h, 3000)
    left, right = fig.axes[:2]
    assert [line.get_label() for line in left.lines] == ["a", "(all)"]
    assert len(right.patches) == 2 * 3 and not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    assert [t.get_text() for t in right.get_xticklabels()] == ["375", "750", "1500"]
    assert right.get_xlabel() == "context at least"
