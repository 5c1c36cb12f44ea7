"""Position-frequency figures in the layouts of the STRING paper (An et al., ICLR 2025, arXiv:2410.18745).

- :func:`plot_position_frequency`: Fig. 1 layout for one regime: bars of the segment-length histogram (right
  axis) and f(i) (left axis) over a shared x-axis that is both the relative position i and the segment
  length; the regions i <= L/2 and i >= 3L/4 are shaded with their share of the position mass.
- :func:`plot_regimes`: one such panel per regime; ``("natural", "uniform", "concat")`` from one histogram
  reproduces Fig. 1a/b/c.
- :func:`plot_windows`: Fig. 3 layout: f_T(i) for several windows L at the same token budget T.
- :func:`plot_effective_length`: Fig. 2 layout: the predicted effective length as a function of training
  tokens for each window, and f_T(i) against the threshold tau that defines it.

Everything is computed with the core API (:func:`freqlab.position_frequency`, :mod:`freqlab.frequency.stats`);
the figures only draw.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from freqlab.errors import FreqlabError
from freqlab.frequency import (
    DEFAULT_TAU,
    effective_length,
    position_frequency,
    scale_to_budget,
    segments,
    share_at_least,
    share_at_most,
)
from freqlab.frequency.position import segment_frequency
from freqlab.frequency.regimes import check_windows
from freqlab.frequency.stats import positive_number
from freqlab.plots.axes import (
    as_histogram,
    count_label,
    count_units,
    format_counts,
    format_log_counts,
    format_positions,
    grid_shape,
    panel_letters,
    position_label,
    position_units,
    position_xaxis,
    top_note,
    twin_behind,
    with_units,
)
from freqlab.plots.style import (
    COLORS,
    NOTE_SIZE,
    PALETTE,
    STYLE,
    figure_for,
    figure_size,
    freqlab_style,
    new_figure,
)

#: Fig. 1 bins the segment lengths into this many equal bins over 0..L.
DEFAULT_BINS = 32

#: The shared x-axis of a Fig. 1 panel: f(i) is drawn over i, the bars over segment length.
FIG1_XLABEL = "relative position i (line) / segment length (bars)"


def plot_position_frequency(
    histogram,
    L: int,
    regime: str = "natural",
    *,
    ax: Axes | None = None,
    bins: int = DEFAULT_BINS,
    seed: int = 0,
    size="one-column",
    title: str | None = None,
) -> Figure:
    """STRING Fig. 1 layout for one regime: segment-length bars and f(i) on twin y-axes.

    ``histogram`` is a :class:`~freqlab.LengthHistogram` (or a ``(lengths, counts)`` pair) of documents;
    the regime turns it into segments of at most L tokens (:func:`freqlab.segments`) and f(i) =
    Σ_s max(|s| - i, 0) (Eq. 2). Shaded: i <= L/2 and i >= 3L/4, labelled with their share of the
    position mass (:func:`freqlab.share_at_most`, :func:`freqlab.share_at_least`). Draws into ``ax`` when
    given (returns its figure), else into a new figure of preset ``size``.

    Parameters
    ----------
    histogram : LengthHistogram or tuple
        Document lengths: a LengthHistogram or a ``(lengths, counts)`` pair.
    L : int
        Training window (the model's max_position_embeddings).
    regime : str
        Data regime (see ``REGIMES``).
    ax : matplotlib.axes.Axes, optional
        Axes to draw into (its figure is returned); default: a new figure.
    bins : int
        Bins of the segment-length bars; at most L are drawn (a bin narrower than one position holds no length).
    seed : int
        Seed of the shuffled document order, in the regimes that need one.
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.
    title : str, optional
        Panel title; default: the regime and L.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (shows itself in Jupyter).

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.
    """
    h = as_histogram(histogram)
    if int(bins) < 1:
        raise FreqlabError(f"bins must be a positive integer, got {bins}")
    segs = segments(h.lengths, h.counts, L, regime, seed=seed)
    f = segment_frequency(segs)
    with freqlab_style():
        fig, ax = figure_for(ax, size, aspect=0.72)
        # 4096 bins over L = 100 drew bars 0.024 wide, out of sight (a review): one bin per position at most
        _draw_fig1_panel(ax, segs, f, L, min(int(bins), int(L)))
        computed = f" (computed as {segs.approximation})" if segs.approximation else ""  # megatron from a histogram
        ax.set_title(title if title is not None else f"{regime}{computed}, L = {position_label(L)}")
    return fig


def _draw_fig1_panel(ax: Axes, segs, f: np.ndarray, L: int, bins: int) -> None:
    half, three_quarters = L // 2, (3 * L) // 4
    bars = twin_behind(ax)
    edges = np.linspace(0, L, bins + 1)
    # a segment of length l (1..L) in the bar over (k·L/bins, (k+1)·L/bins] that holds it, in integers: np.histogram's
    # [k·w, (k+1)·w) drew l at [l, l + 1), the first bar empty and L with L - 1 (a review: lengths 7 and 8 in one bar)
    kept = segs.lengths > 0
    index = (segs.lengths[kept].astype(np.int64) * bins + L - 1) // L - 1
    per_bin = np.bincount(index, weights=segs.counts[kept].astype(np.float64), minlength=bins)
    share = 100 * per_bin / max(per_bin.sum(), 1)
    bars.bar(edges[:-1], share, width=np.diff(edges), align="edge", color=COLORS["segments"], alpha=0.55, lw=0)
    bars.set_ylim(0, max(share.max(), 1e-9) * 1.6)  # bars in the lower part, f(i) above them
    bars.set_ylabel(f"segments per bin of {bin_width(L, bins)} (%)", color=COLORS["segments"])
    bars.tick_params(axis="y", colors=COLORS["segments"])

    i = np.arange(L)
    ax.plot(i, f, color=COLORS["frequency"], lw=1.6)
    ax.axvspan(0, half, color=COLORS["head"], alpha=0.12, lw=0)
    ax.axvspan(three_quarters, L, color=COLORS["tail"], alpha=0.12, lw=0)
    ax.set_ylim(0, float(f[0]) * 1.32)  # room for the notes above f(0)
    top_note(ax, half / 2, f"i ≤ {position_label(half)}\n{100 * share_at_most(f, half):.1f}%")
    tail = f"i ≥ {position_label(three_quarters)}\n{100 * share_at_least(f, three_quarters):.1f}%"
    top_note(ax, (three_quarters + L) / 2, tail, color=COLORS["tail"])
    if segs.dropped_tokens:  # truncate: say what the regime threw away
        dropped = segs.dropped_tokens / (segs.dropped_tokens + segs.tokens)
        top_note(ax, (half + three_quarters) / 2, f"cut:\n{100 * dropped:.0f}% of\ntokens", color=COLORS["threshold"])
    ax.tick_params(axis="y", colors=COLORS["frequency"])
    position_xaxis(ax, L, FIG1_XLABEL)
    format_counts(ax.yaxis)
    ax.set_ylabel(with_units("position frequency f(i)", count_units(ax.yaxis)), color=COLORS["frequency"])


def bin_width(L: int, bins: int) -> str:
    """The width of one of ``bins`` equal bins over 0..L, as a position (K = 1024).

    >>> bin_width(2048, 32), bin_width(131072, 32), bin_width(1000, 32)
    ('64', '4K', '31.25')
    """
    width = L / bins
    return position_label(width) if width == int(width) else f"{width:g}"


#: Narrowest Fig. 1 panel (inches): two y-axes of tick labels and five position ticks side by side.
MIN_PANEL_WIDTH = 2.2
#: Lowest row of Fig. 1 panels (inches) an explicit (width, height) may give: title, notes and ticks fit.
MIN_PANEL_HEIGHT = 1.8


def regime_grid(panels: int, size="two-column", columns: int = 3) -> tuple[int, int]:
    """Rows and columns of ``panels`` Fig. 1 panels in a figure of ``size``: at most ``columns`` per row, and no
    more than fit at :data:`MIN_PANEL_WIDTH` each (a one-column figure stacks its panels).

    >>> regime_grid(3, "two-column"), regime_grid(3, "one-column"), regime_grid(4, "two-column")
    ((1, 3), (3, 1), (2, 3))
    """
    fits = max(1, int(figure_size(size)[0] // MIN_PANEL_WIDTH))
    return grid_shape(panels, min(columns, fits))


def plot_regimes(
    histogram,
    L: int,
    regimes: Sequence[str] = ("natural", "uniform", "concat"),
    *,
    bins: int = DEFAULT_BINS,
    seed: int = 0,
    size="two-column",
    columns: int = 3,
) -> Figure:
    """One Fig. 1 panel per regime (rows of ``columns``, fewer when the figure is too narrow for them:
    :func:`regime_grid`); the default reproduces STRING Fig. 1a/b/c from one histogram: natural lengths split
    at L, the same tokens with lengths uniform on 1..L (f quadratic), and everything concatenated into rows of L
    (f linear). The f(i) axis has one scale across the panels (f(0) is the token count in every regime but
    ``truncate``), so the panels compare at a glance; the bars' axis (share of segments per bin) is each panel's
    own, as in the paper, since one regime may put every segment in one bin.

    Parameters
    ----------
    histogram : LengthHistogram or tuple
        Document lengths: a LengthHistogram or a ``(lengths, counts)`` pair.
    L : int
        Training window (the model's max_position_embeddings).
    regimes : sequence of str
        One panel per regime.
    bins : int
        Bins of the segment-length bars.
    seed : int
        Seed of the shuffled document order, in the regimes that need one.
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.
    columns : int
        Panels per row (fewer when the figure is too narrow).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (shows itself in Jupyter).

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.
    """
    if not regimes:
        raise FreqlabError("give at least one regime")
    h = as_histogram(histogram)
    rows, cols = regime_grid(len(regimes), size, columns)
    width, height = figure_size(size)
    if not isinstance(size, str) and height / rows < MIN_PANEL_HEIGHT:
        raise FreqlabError(
            f"size {width:g}x{height:g} in: {rows} row{'s' if rows > 1 else ''} of Fig. 1 panels need at least "
            f"{rows * MIN_PANEL_HEIGHT:g} in of height; give a taller size, or one-column / two-column"
        )
    panel_height = min(0.82 * width / cols, 2.4) if cols > 1 else 0.55 * width
    aspect = rows * panel_height / width
    with freqlab_style():
        fig, axes = new_figure(size, aspect=aspect, nrows=rows, ncols=cols, squeeze=False)
        flat = axes.ravel()
        for k, regime in enumerate(regimes):
            plot_position_frequency(h, L, regime, ax=flat[k], bins=bins, seed=seed)
        shown = flat[: len(regimes)]
        top = max(ax.get_ylim()[1] for ax in shown)  # one scale for f across the panels
        for ax in shown:
            ax.set_ylim(0, top)
        if len(regimes) > 1:
            for k, ax in enumerate(shown):
                _keep_outer_labels(ax, k, len(regimes), cols)
            panel_letters(shown)
            xlabel = with_units(FIG1_XLABEL, position_units(shown[0].xaxis))
            fig.supxlabel(xlabel, fontsize=STYLE["axes.labelsize"])
        for ax in flat[len(regimes) :]:
            ax.set_visible(False)
    return fig


def _twin(ax: Axes) -> Axes:
    """The bars' twin axes of a Fig. 1 panel."""
    return next(other for other in ax.get_shared_x_axes().get_siblings(ax) if other is not ax)


def _keep_outer_labels(ax: Axes, k: int, panels: int, cols: int) -> None:
    """In a grid of Fig. 1 panels (one f(i) scale across them, each its own bars' scale): f(i)'s ticks on the
    first column only; the bars' ticks on every panel. The axis labels on the first and last panel of each row,
    or, panels stacked in one column, on the middle one only.
    """
    ax.set_xlabel("")
    twin = _twin(ax)
    if k % cols:
        ax.tick_params(axis="y", labelleft=False)
    if cols == 1:
        left = right = k == panels // 2
    else:
        left, right = k % cols == 0, (k + 1) % cols == 0 or k + 1 == panels
    for axes, keep in ((ax, left), (twin, right)):  # units on a second line: the panels are short
        axes.set_ylabel(axes.get_ylabel().replace(" (", "\n(", 1) if keep else "")


def plot_windows(
    histogram,
    Ls: Sequence[int] = (2048, 4096),
    regime: str = "natural",
    *,
    tokens: float = 1e12,
    seed: int = 0,
    ax: Axes | None = None,
    size="one-column",
) -> Figure:
    """STRING Fig. 3 layout: f_T(i) = f(i) · T / f(0) for each window L at the same budget of T tokens.

    With equal tokens, windows barely differ at small i (position 0 occurs T times whatever L is) and
    the gap grows with i.

    Parameters
    ----------
    histogram : LengthHistogram or tuple
        Document lengths: a LengthHistogram or a ``(lengths, counts)`` pair.
    Ls : sequence of int
        Windows L, one line each.
    regime : str
        Data regime (see ``REGIMES``).
    tokens : float
        The budget T every window trains on.
    seed : int
        Seed of the shuffled document order, in the regimes that need one.
    ax : matplotlib.axes.Axes, optional
        Axes to draw into (its figure is returned); default: a new figure.
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (shows itself in Jupyter).

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.
    """
    h = as_histogram(histogram)
    Ls = check_windows(Ls)
    with freqlab_style():
        fig, ax = figure_for(ax, size, aspect=0.68)
        for k, L in enumerate(Ls):
            f_T = scale_to_budget(position_frequency(h.lengths, h.counts, L, regime, seed=seed), tokens)
            ax.plot(np.arange(L), f_T, color=PALETTE[k % len(PALETTE)], label=f"L = {position_label(L)}")
        position_xaxis(ax, max(Ls))
        ax.set_ylim(bottom=0)
        format_counts(ax.yaxis)
        ax.set_ylabel(with_units("occurrences f_T(i)", count_units(ax.yaxis)))
        ax.set_title(f"{regime}: windows at the same budget, T = {count_label(tokens)} tokens")
        ax.legend(loc="upper right")
    return fig


def effective_length_curve(f, tokens: np.ndarray, tau: float = DEFAULT_TAU) -> np.ndarray:
    """Predicted effective length (:func:`freqlab.effective_length`) at each budget in ``tokens`` (int64).

    Parameters
    ----------
    f : array_like
        Position frequency f(i) of one window.
    tokens : numpy.ndarray
        Training budgets T.
    tau : float
        Threshold of the effective length, f_T(i) >= tau.

    Returns
    -------
    numpy.ndarray
        int64 effective length at each budget.

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.
    """
    return np.array([effective_length(f, t, tau) for t in np.asarray(tokens, dtype=np.float64)], dtype=np.int64)


#: The largest budget a log axis of tokens is drawn to (matplotlib's decade ticks overflow float64 near 1e308).
MAX_AXIS_TOKENS = 1e300


def plot_effective_length(
    histogram,
    Ls: Sequence[int] = (2048, 4096),
    regime: str = "natural",
    *,
    tokens: tuple[float, float] | None = None,
    budget: float = 1e12,
    tau: float = DEFAULT_TAU,
    points: int = 200,
    seed: int = 0,
    size="two-column",
) -> Figure:
    """STRING Fig. 2 layout. (a) Predicted effective length (largest i with f_T(i) >= tau) against training
    tokens T on a log axis, one line per window L. (b) f_T(i) at ``budget`` tokens with tau marked: each
    curve crosses tau at its effective length. tau defaults to 100B, STRING's calibration for 1.3B models
    (Sec. 3, Fig. 2b), an empirical, model-dependent value.

    Parameters
    ----------
    histogram : LengthHistogram or tuple
        Document lengths: a LengthHistogram or a ``(lengths, counts)`` pair.
    Ls : sequence of int
        Windows L, one line each.
    regime : str
        Data regime (see ``REGIMES``).
    tokens : tuple of float, optional
        Range (low, high) of budgets T on the x axis.
    budget : float
        Budget T of panel (b).
    tau : float
        Threshold of the effective length, f_T(i) >= tau.
    points : int
        Budgets evaluated along the x axis.
    seed : int
        Seed of the shuffled document order, in the regimes that need one.
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (shows itself in Jupyter).

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.
    """
    h = as_histogram(histogram)
    Ls = check_windows(Ls)
    tau = positive_number(tau, "tau")  # before the token range is made of it (tau=0 was "0 < start < stop, got None")
    # by default up to 100 tau, within the budgets freqlab counts (2^63 - 1 tokens: a review saw 10^21 on the axis)
    lo, hi = (tau / 2, min(100 * tau, float(2**63 - 1))) if tokens is None else (float(t) for t in tokens)
    if tokens is None and hi < 2 * lo:  # a tau near or past 2^63 from Python: up to 100 tau (reviews: refused; then
        hi = min(100 * tau, MAX_AXIS_TOKENS)  # a range of nothing), within what a log axis draws (1e307: inf)
        if hi < 2 * lo:
            raise FreqlabError(
                f"tau = {tau:g}: the default budgets tau/2 .. 100 tau pass what a figure draws ({MAX_AXIS_TOKENS:g}); "
                "give tokens=(low, high)"
            )
    if not 0 < lo < hi:
        raise FreqlabError(f"token range must satisfy 0 < start < stop, got {tokens}")
    grid = np.geomspace(lo, hi, int(points))
    with freqlab_style():
        fig, (left, right) = new_figure(size, aspect=0.34, ncols=2)
        highest = 0  # the largest effective length drawn in (a): its axis is ticked for the data, not for max(Ls)
        for k, L in enumerate(Ls):
            color = PALETTE[k % len(PALETTE)]
            f = position_frequency(h.lengths, h.counts, L, regime, seed=seed)
            if not f[1:].any():  # both panels empty, and matplotlib's warnings about them (reviews; L = 1 too)
                why = (
                    "a window of L = 1 holds position 0 alone"
                    if L == 1
                    else f"under {regime} at L = {L} every segment is 1 token long: no position past 0 occurs"
                )
                raise FreqlabError(f"{why}, so there is no effective length to plot")
            curve = effective_length_curve(f, grid, tau)
            highest = max(highest, int(np.max(curve)))
            left.plot(grid, curve, color=color, label=f"L = {position_label(L)}")
            f_T = scale_to_budget(f, budget)
            E = effective_length(f, budget, tau)
            # E = 0 has no dot on the curve from i = 1: the legend says it (a review: neither end was marked)
            none = " (E = 0: no position past 0 reaches τ)" if E == 0 else ""
            right.plot(np.arange(1, L), f_T[1:], color=color, label=f"L = {position_label(L)}{none}")
            if E > 0:  # the whole window (E = L - 1) too
                right.plot([E], [f_T[E]], "o", color=color, ms=3.5)
                # each window's label a line above the one before: two dots close together stay readable
                offset = (3, 4 + (NOTE_SIZE + 2) * k)
                right.annotate(
                    position_label(E), (E, f_T[E]), textcoords="offset points", xytext=offset, fontsize=NOTE_SIZE
                )
        left.set_xscale("log")
        left.set_xlim(lo, hi)
        left.set_ylim(bottom=0)
        # ticks at quarters of the power of two above the data (L = 2K beside 256K: not 0 and 64K alone)
        format_positions(left.yaxis, 1 << max(highest - 1, 1).bit_length() if highest else max(Ls))
        format_log_counts(left.xaxis)
        left.set_xlabel(with_units("training tokens T", count_units(left.xaxis)))
        left.set_ylabel(with_units("predicted effective length", position_units(left.yaxis)))
        left.set_title(f"{regime}: last i with f_T(i) ≥ τ = {count_label(tau)}")
        left.legend(loc="upper left")
        right.set_yscale("log")
        right.axhline(tau, color=COLORS["threshold"], ls="--", lw=0.8)
        right.text(  # beside the axes at the line's height: clear of the dots, their labels and the legend (reviews)
            1.01,
            tau,
            f"τ = {count_label(tau)}",
            transform=right.get_yaxis_transform(),
            ha="left",
            va="center",
            fontsize=NOTE_SIZE,
            color=COLORS["threshold"],
            clip_on=False,
        )
        position_xaxis(right, max(Ls))
        format_log_counts(right.yaxis)
        right.set_ylabel(with_units("occurrences f_T(i)", count_units(right.yaxis)))
        right.set_title(f"T = {count_label(budget)} tokens; dots: effective length")
        right.legend(loc="lower left")
        panel_letters((left, right))
    return fig
