"""Per-source figure: exact CCDFs and per-source shares of position mass."""

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from plot_helpers import assert_labelled

from freqlab import FreqlabError, LengthHistogram, position_frequency, share_at_most
from freqlab.histogram import combine_sources
from freqlab.plots import length_ccdf, plot_sources


def test_length_ccdf_is_exact():
    x, p = length_ccdf(LengthHistogram.from_counts([1, 2, 4, 10], [5, 3, 1, 1]))
    assert x.tolist() == [1, 2, 4, 10]
    assert p.tolist() == [1.0, 0.5, 0.2, 0.1]


def drawn_at(line, x: float) -> float:
    """The value a step line shows at ``x``, as matplotlib draws it (its drawstyle)."""
    xs, ys = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    if line.get_drawstyle() == "steps-pre":  # ys[k] over (xs[k-1], xs[k]]
        return float(ys[np.searchsorted(xs, x, side="left")])
    assert line.get_drawstyle() == "steps-post"  # ys[k] over [xs[k], xs[k+1])
    return float(ys[np.searchsorted(xs, x, side="right") - 1])


def test_the_ccdf_drawn_is_the_share_of_documents_at_least_x_long_between_lengths():
    """A review: drawn "post", P(len >= previous length) was held up to the next length: 1.0 at x = 500 for lengths
    10, 10, 10, 1000, where 1 of 4 documents is at least 500 long."""
    h = combine_sources({"a": LengthHistogram.from_lengths([10, 10, 10, 1000])})
    total = plot_sources(h, 2048).axes[0].lines[0]
    for x, expected in ((5, 1.0), (10, 1.0), (11, 0.25), (500, 0.25), (1000, 0.25)):
        assert drawn_at(total, x) == expected, x


def test_sources_figure_has_one_series_per_source_plus_total(sourced):
    fig = plot_sources(sourced, 2048)
    assert_labelled(fig)
    left, right = fig.axes[:2]
    names = [line.get_label() for line in right.lines]
    assert len(names) == 4 and names[-1].startswith("(all):")
    for (name, part), label, line in zip(sourced.sources.items(), names, right.lines):
        f = position_frequency(part.lengths, part.counts, 2048)
        assert label == f"{name}: {100 * share_at_most(f, 1024):.1f}% at i ≤ 1024"
        np.testing.assert_allclose(line.get_ydata(), f / f[0])
    ccdf_total = left.lines[3]
    assert ccdf_total.get_label() == f"(all) ({sourced.documents:,} docs)"
    assert ccdf_total.get_ydata()[0] == 1.0


def test_one_legend_under_both_panels_gives_documents_and_shares(sourced):
    fig = plot_sources(sourced, 2048)
    (legend,) = fig.legends
    expected = []
    for name, part in [*sourced.sources.items(), ("(all)", sourced)]:
        share = 100 * share_at_most(position_frequency(part.lengths, part.counts, 2048), 1024)
        expected.append(f"{name}: {part.documents:,} docs, {share:.1f}% of f at i ≤ 1024")
    assert [t.get_text() for t in legend.get_texts()] == expected
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # constrained layout places the legend below the x labels of both panels
    renderer = canvas.get_renderer()
    legend_top = legend.get_window_extent(renderer).y1
    assert all(legend_top <= ax.get_tightbbox(renderer).y0 + 1 for ax in fig.axes[:2])


def test_sources_needs_a_split(histogram):
    with pytest.raises(FreqlabError, match="no per-source split"):
        plot_sources(histogram)


def test_a_dollar_in_a_source_name_is_drawn_as_written_not_as_math():
    """A review: "price $5 and $6" was drawn as an italic "5and6", and "$\\frac{$" failed the figure."""
    from freqlab.histogram import combine_sources

    h = combine_sources({name: LengthHistogram.from_lengths([3, 9]) for name in ("price $5 and $6", "$\\frac{$")})
    fig = plot_sources(h, 16)
    FigureCanvasAgg(fig).draw()  # mathtext would raise on the second name
    texts = [text.get_text() for text in fig.legends[0].get_texts()] if fig.legends else []
    texts += [line.get_label() for line in fig.axes[1].lines]
    assert any(text.startswith("price \\$5 and \\$6") for text in texts)  # escaped: drawn as "price $5 and $6"


def test_a_weighted_mix_is_labelled_with_the_corpus_documents_and_a_one_length_source_is_drawn():
    """A review: with --weights books=0.5,web=1 the legend gave the mix's scaled counts as documents (3,221,225,472
    books); a source whose documents are all of one length drew no CCDF (a step of one point)."""
    from freqlab.frequency.mixture import weighted_histogram
    from freqlab.histogram import combine_sources

    corpus = combine_sources(
        {"web": LengthHistogram.from_counts([100, 3000], [70, 10]), "books": LengthHistogram.from_counts([50000], [3])}
    )
    mix, _ = weighted_histogram(corpus, "books=0.5,web=1")
    assert mix.sources["books"].documents > 10**9  # scaled counts, no documents
    fig = plot_sources(mix, 2048, corpus=corpus)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert [t.split(",")[0] for t in texts] == ["books: 3 docs", "web: 80 docs", "(all): the mix of 83 docs"]
    left = fig.axes[0]
    books = [line for line in left.lines if line.get_marker() == "o"]
    assert len(books) == 1 and books[0].get_xdata().tolist() == [50000]
