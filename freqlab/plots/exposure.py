"""What the curve hides, in one figure: the exposure histogram h(c) and the per-source tail table.

:func:`plot_exposure` draws (a) the share of tokens trained with at least c tokens of same-document left context,
f(c) / f(0) = Σ_{c' >= c} h(c') / Σ h, per source (the total in black), and (b) the tail table as grouped bars: the
share of each source's tokens with at least 4K, 8K, ... of context (:func:`freqlab.frequency.exposure.source_tails`).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from freqlab.display import source_names
from freqlab.frequency.exposure import longest_document_window, source_tails, thresholds_below
from freqlab.frequency.position import position_frequency
from freqlab.plots.axes import as_histogram, panel_letters, position_tick_labels, position_xaxis, with_units
from freqlab.plots.style import SOURCE_COLORS, drawn_sources, freqlab_style, new_figure, plain

#: legend entries in a row: more go on further rows, so the figure keeps the width --size gives it
LEGEND_COLUMNS = 6


def plot_exposure(histogram, L: int | None = None, regime: str = "natural", *, size="two-column") -> Figure:
    """(a) share of tokens with >= c tokens of context per source; (b) the tail table (bars per threshold).

    ``L`` defaults to the longest document (the context the data offers); ``regime`` is ``natural`` or
    ``truncate`` (a segment holds one source's document). Panel (b)'s thresholds are 4K, 8K, ... below ``L``, or
    ``L`` / 8, / 4, / 2 when ``L`` is at most 4K (:func:`freqlab.frequency.exposure.thresholds_below`).

    Parameters
    ----------
    histogram : LengthHistogram
        Document lengths, split by source or not.
    L : int, optional
        Window; default the longest document.
    regime : str
        ``natural`` or ``truncate``.
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (shows itself in Jupyter).

    Examples
    --------
    >>> from freqlab import LengthHistogram
    >>> fig = plot_exposure(LengthHistogram.from_lengths([100, 5000, 20000]))
    >>> [ax.get_title() for ax in fig.axes]
    ['(a) tokens with at least c tokens of context', '(b) share of tokens beyond each context length']
    """
    h = as_histogram(histogram)
    window = int(L) if L is not None else longest_document_window(h)
    thresholds = thresholds_below(window)
    drawn_sources(h)  # at most MAX_SOURCES: one curve, bar group and legend entry each (a review: 50 made 46 in)
    rows = source_tails(h, window, regime, thresholds)
    parts = [*(h.sources or {}).values(), h]  # as source_tails' rows: the total last
    # a source without tokens (weighted 0) has no curve and no bars: f/f(0) would divide by zero (a review)
    drawn = [(row, part) for row, part in zip(rows, parts, strict=True) if part.tokens > 0 or part is h]
    labels = position_tick_labels(thresholds)  # one unit for the axis (a review: 256, 512, 1K)
    with freqlab_style():
        fig, (left, right) = new_figure(size, aspect=0.36, ncols=2)
        width = 0.8 / len(drawn)
        names = source_names([row["source"] for row, _ in drawn])  # one line, cut but told apart (a review)
        for k, (row, part) in enumerate(drawn):
            name = plain(names[k])
            total = k == len(drawn) - 1
            color = "black" if total else SOURCE_COLORS[k]
            f = position_frequency(part.lengths, part.counts, window, regime)
            left.plot(np.arange(window), f / f[0], color=color, lw=1.6 if total else 1.0, label=name)
            shares = [100 * v for v in row["tails"].values()]
            right.bar(
                np.arange(len(thresholds)) + (k - (len(drawn) - 1) / 2) * width, shares, width, color=color, label=name
            )
        axis = 1 << max(window - 1, 1).bit_length()  # ticks at quarters of a power of two, K = 1024
        position_xaxis(left, axis, "context c (tokens of same-document left context)")
        left.set_ylim(0, 1.02)
        left.set_ylabel("f(c) / f(0)")
        left.set_title("tokens with at least c tokens of context")
        right.set_xticks(np.arange(len(thresholds)), labels)
        right.set_xlabel(with_units("context at least", "K = 1024" if any("K" in label for label in labels) else ""))
        right.set_ylabel("share of the source's tokens (%)")
        right.set_title("share of tokens beyond each context length")
        # every source's line, named: get_legend_handles_labels leaves out labels starting with "_" (a source "_x")
        fig.legend(
            left.lines,
            [line.get_label() for line in left.lines],
            loc="outside lower center",
            ncols=min(len(drawn), LEGEND_COLUMNS),
        )
        panel_letters((left, right))
    return fig
