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
    # a source weighted 0 is not in the mix: the mix's documents leave it out (a review: "the mix of 1,762" for 1,594)
    mix, _ = weighted_histogram(corpus, "books=0,web=1")
    texts = [t.get_text() for t in plot_sources(mix, 2048, corpus=corpus).legends[0].get_texts()]
    assert texts[-1].startswith("(all): the mix of 80 docs")


def many_sources(n: int) -> LengthHistogram:
    return combine_sources({f"s{k}": LengthHistogram.from_lengths([10 + k, 300 * (k + 1)]) for k in range(n)})


def test_sixteen_sources_are_sixteen_colours_none_the_totals_black():
    """A review: the palette had 8 colours, its last the total's black: the 8th and 16th sources were drawn black
    like "(all)", and sources k and k + 8 shared a colour."""
    from matplotlib.colors import to_hex

    from freqlab.plots import plot_exposure

    for fig in (plot_sources(many_sources(16), 2048), plot_exposure(many_sources(16), 2048)):
        colours = [to_hex(line.get_color()) for line in fig.axes[1 if fig.axes[0].get_xscale() == "log" else 0].lines]
        *sources, total = colours
        assert len(sources) == 16 and len(set(sources)) == 16 and total == "#000000" and "#000000" not in sources
    few = plot_sources(many_sources(3), 2048)  # the first seven as before (Okabe-Ito): figures of few sources unchanged
    assert [to_hex(line.get_color()) for line in few.axes[0].lines][:3] == ["#0072b2", "#e69f00", "#009e73"]


def test_more_sources_than_a_figure_draws_are_refused_by_it_and_left_out_of_the_scan_figures(tmp_path):
    """A review: with 20 sources scan --plot wrote two figures, then failed after the whole count; plot exposure drew
    50 sources into a 46-inch legend row."""
    from freqlab.plots import plot_exposure, scan_figures
    from freqlab.plots.report import sources_left_out

    h = many_sources(17)
    message = "the histogram has 17 sources with documents; a per-source figure draws at most 16"
    for plot in (plot_sources, plot_exposure):
        with pytest.raises(FreqlabError, match=message):
            plot(h, 2048)
    written = scan_figures(h, [2048], ["natural"], tmp_path)
    assert sorted(p.name for p in written) == ["effective_length.png", "frequency_L2048.png"]
    assert sources_left_out(h) == f"no sources figure: {message} (one curve and legend entry each): merge the " + (
        "smaller ones first (freqlab.histogram.combine_sources), or list them with freqlab stats"
    )
    assert sources_left_out(many_sources(16)) is None


def test_the_exposure_legend_wraps_so_the_figure_keeps_its_width(tmp_path):
    """A review: one legend row of every source made 16 sources 9.55 in wide at --size two-column (7.2 in)."""
    from PIL import Image

    from freqlab.plots import plot_exposure, save_figure

    path = save_figure(plot_exposure(many_sources(16), 2048, size="two-column"), tmp_path / "e.png", ["png"], dpi=100)[
        0
    ]
    assert Image.open(path).size[0] <= 7.2 * 100 * 1.02


def test_a_control_character_in_a_source_name_still_writes_an_svg_that_parses(tmp_path):
    """A review: sources named "ctrl\\x07bell" and "esc\\x1b[31mred" wrote SVGs that are not XML (no browser opens
    them): a control character is drawn as U+FFFD."""
    from xml.dom import minidom

    from freqlab.histogram import combine_sources
    from freqlab.plots import save_figure

    names = ("ctrl\x07bell", "esc\x1b[31mred", "web\uffffx")  # U+FFFF too: XML holds it no more (a second review)
    h = combine_sources({name: LengthHistogram.from_lengths([3, 9]) for name in names})
    save_figure(plot_sources(h, 16), tmp_path / "s.svg")
    text = (tmp_path / "s.svg").read_text(encoding="utf-8")
    minidom.parseString(text)  # raised "not well-formed (invalid token)"
    assert "\x07" not in text and "\x1b" not in text and "\uffff" not in text


def test_odd_source_names_are_legend_entries_of_one_line_within_the_preset_width(tmp_path):
    """A review: a 500-character name made a 32 in wide PNG (two-column is 7.2 in), U+202E reversed the rest of its
    entry, a newline split it and an empty name read ": 3 docs". Legends show names as the terminal tables do."""
    from PIL import Image

    from freqlab.histogram import combine_sources
    from freqlab.plots import save_figure

    names = ("x" * 500, "", "rtl\u202eab", "two\nlines")
    h = combine_sources({name: LengthHistogram.from_lengths([3, 9]) for name in names})
    fig = plot_sources(h, 16)
    entries = [text.get_text() for text in fig.legends[0].get_texts()]
    assert [entry.split(":")[0] for entry in entries] == [
        "''",
        "rtl\\u202eab",
        "two\\nlines",
        "x" * 20 + "…" + "x" * 19,
        "(all)",
    ]
    path = save_figure(fig, tmp_path / "s.png", ["png"], dpi=100)[0]
    assert Image.open(path).size[0] <= 7.2 * 100 * 1.02
