"""Per-source figures: how each corpus source (e.g. SlimPajama's seven RedPajama sets) shapes f.

:func:`plot_sources` draws (a) the complementary CDF of document lengths per source, P(length >= x) on
log-log axes with the window L marked, and (b) each source's normalised position frequency f(i)/f(0)
under a regime, labelled with its share of position mass at i <= L/2. Sources come from
``LengthHistogram.sources`` (a scan of a corpus with source labels).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from freqlab.display import source_names
from freqlab.errors import FreqlabError
from freqlab.formats import ALL_SOURCES
from freqlab.frequency import position_frequency, share_at_most
from freqlab.histogram import LengthHistogram
from freqlab.plots.axes import as_histogram, panel_letters, position_label, position_xaxis
from freqlab.plots.style import (
    COLORS,
    NOTE_SIZE,
    SOURCE_COLORS,
    drawn_sources,
    freqlab_style,
    new_figure,
    plain,
)


def length_ccdf(histogram: LengthHistogram) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, share of documents at least that long), exact from the counts.

    Parameters
    ----------
    histogram : LengthHistogram
        Document lengths.

    Returns
    -------
    tuple of numpy.ndarray
        (lengths, share of documents at least that long).

    Examples
    --------
    >>> x, p = length_ccdf(LengthHistogram.from_lengths([1, 2, 2, 4]))
    >>> x.tolist(), p.tolist()
    ([1, 2, 4], [1.0, 0.75, 0.25])
    """
    counts = histogram.counts
    at_least = np.cumsum(counts[::-1])[::-1]
    return histogram.lengths, at_least / counts.sum()


def plot_sources(
    histogram, L: int = 2048, regime: str = "natural", *, seed: int = 0, size="two-column", corpus=None
) -> Figure:
    """(a) length CCDF per source with L marked; (b) f(i)/f(0) per source at window L under ``regime``.

    ``histogram`` must carry a per-source split (``histogram.sources``); the total is drawn in black. One
    legend under both panels gives each source's documents and share of position mass at i <= L/2 (so
    SlimPajama's seven sources cover no data).

    Parameters
    ----------
    histogram : LengthHistogram
        A histogram split by source (``histogram.sources``).
    L : int
        Training window (the model's max_position_embeddings).
    regime : str
        Data regime (see ``REGIMES``).
    seed : int
        Seed of the shuffled document order, in the regimes that need one.
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.
    corpus : LengthHistogram, optional
        The histogram a weighted mix (``histogram``) was made from: the legend counts its documents (a mix's counts
        are scaled to keep fractional weights exact, not documents: a review), and the total is the mix.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (shows itself in Jupyter).

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.
    """
    h = as_histogram(histogram)
    if not h.sources:
        raise FreqlabError("the histogram has no per-source split (scan a corpus whose documents carry source labels)")
    series = drawn_sources(h)
    counted = as_histogram(corpus) if corpus is not None else None

    def documents(label, part, total: bool) -> str:
        if counted is None:
            return f"{part.documents:,} docs"
        if total:  # the corpus's documents of the sources in the mix: one weighted 0 is not in it (a review)
            mixed = (counted.sources or {}).get
            inside = sum(mixed(name, g).documents for name, g in (h.sources or {}).items() if g.documents)
            return f"the mix of {inside:,} docs"
        return f"{(counted.sources or {}).get(label, part).documents:,} docs"

    legend_rows = (len(series) + 2) // 2  # two columns: the sources, then all of them
    with freqlab_style():
        fig, (left, right) = new_figure(size, aspect=0.3 + 0.035 * legend_rows, ncols=2)
        entries = []
        drawn = [*series, (ALL_SOURCES, h)]
        names = source_names([label for label, _ in drawn])  # one line, cut but told apart, blank quoted (a review)
        for k, (label, part) in enumerate(drawn):
            name = plain(names[k])
            total = k == len(series)  # by place: a source may be called anything
            color = "black" if total else SOURCE_COLORS[k]
            width = 1.6 if total else 1.0
            x, p = length_ccdf(part)
            docs = documents(label, part, total)
            # P(len >= x) for x in (x[k-1], x[k]] is p[k]: each value drawn over the interval up to its length
            left.step(x, p, where="pre", color=color, lw=width, label=f"{name} ({docs})")
            if len(x) == 1:  # one length: a step of one point draws nothing (a review), so a marker shows it
                left.plot(x, p, marker="o", ms=3, color=color, ls="none")
            f = position_frequency(part.lengths, part.counts, L, regime, seed=seed)
            share = 100 * share_at_most(f, L // 2)
            (line,) = right.plot(
                np.arange(L), f / f[0], color=color, lw=width, label=f"{name}: {share:.1f}% at i ≤ {L // 2}"
            )
            entries.append((line, f"{name}: {docs}, {share:.1f}% of f at i ≤ {L // 2}"))
        left.set_xscale("log")
        left.set_yscale("log")
        left.axvline(L, color=COLORS["threshold"], ls="--", lw=0.8)
        window = f" L = {position_label(L)}"  # at the bottom, where the curves have fallen away at x = L
        left.text(L, 0.02, window, transform=left.get_xaxis_transform(), color=COLORS["threshold"], fontsize=NOTE_SIZE)
        left.set_xlabel("document length x (tokens)")
        left.set_ylabel("share of documents ≥ x")
        left.set_title("length distribution per source (CCDF)")
        position_xaxis(right, L)
        right.set_ylim(0, 1.02)
        right.set_ylabel("f(i) / f(0)")
        right.set_title(f"position frequency per source ({regime}, L = {position_label(L)})")
        handles, labels = zip(*entries)
        fig.legend(handles, labels, loc="outside lower center", ncols=2)
        panel_letters((left, right))
    return fig
