"""STRING figures (An et al., ICLR 2025, arXiv:2410.18745, Sec. 4.1): the shifted position matrix and which
positions it uses.

- :func:`plot_position_matrix`: one relative-position matrix as an annotated heatmap (upper triangle and
  dropped cells blank); also used for Self-Extend's grouped matrix.
- :func:`plot_string_matrices`: Fig. 5a/b/c for a small window (L = 9, S = 3): (a) positions >= N = L - S
  dropped, (b) the rest shifted by S into the empty corner (W = 0), (c) plus a local window W.
- :func:`plot_string_overview`: Fig. 8 for a large window (e.g. Llama 3.1, L = 128K), the matrix sampled on
  a coarse grid from :func:`~freqlab.plan.string.string_position_row` (no L x L matrix).
- :func:`plot_string_usage`: for a large window, how often training saw each position (f) with the tail
  STRING stops using shaded, and how many query-key pairs of one full sequence use each position with RoPE
  and with STRING.

The matrices and counts come from :mod:`freqlab.plan.string`; this module only draws.
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from freqlab.errors import FreqlabError
from freqlab.frequency import share_at_least
from freqlab.plan.string import string_position_matrix, string_position_row, string_positions_used, string_usage
from freqlab.plots.axes import (
    count_label,
    count_units,
    format_counts,
    format_positions,
    panel_letters,
    position_label,
    position_units,
    position_xaxis,
    top_note,
    with_units,
)
from freqlab.plots.style import COLORS, NOTE_SIZE, figure_for, freqlab_style, new_figure

#: Colour map of position matrices; masked cells (upper triangle, dropped) stay white.
MATRIX_CMAP = matplotlib.colormaps["Blues"].with_extremes(bad="white")

#: Largest matrix drawn with one annotated cell per entry.
ANNOTATE_LIMIT = 16


def plot_position_matrix(
    matrix,
    *,
    ax: Axes | None = None,
    title: str = "",
    vmax: int | None = None,
    annotate: bool | None = None,
    size="one-column",
) -> Figure:
    """Heatmap of a relative-position matrix (rows m = query, columns n = key); negative entries (the
    masked upper triangle, dropped positions) are left blank. Values are written in the cells for
    matrices up to 16 x 16.

    Parameters
    ----------
    matrix : numpy.ndarray
        Relative positions, rows m = query, columns n = key; negative entries left blank.
    ax : matplotlib.axes.Axes, optional
        Axes to draw into (its figure is returned); default: a new figure.
    title : str
        Panel title.
    vmax : int, optional
        Top of the colour scale; default the largest entry.
    annotate : bool, optional
        Write the values in the cells; default for matrices up to 16 x 16.
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (shows itself in Jupyter).
    """
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise FreqlabError(f"a position matrix must be 2-D, got shape {matrix.shape}")
    annotate = matrix.shape[0] <= ANNOTATE_LIMIT if annotate is None else annotate
    with freqlab_style():
        fig, ax = figure_for(ax, size, aspect=1.0)
        shown = np.ma.masked_less(matrix, 0)
        top = int(matrix.max()) if vmax is None else int(vmax)
        ax.imshow(shown, cmap=MATRIX_CMAP, vmin=0, vmax=max(top, 1), interpolation="nearest")
        if annotate:
            for (m, n), value in np.ndenumerate(matrix):
                if value >= 0:
                    dark = value > 0.6 * top
                    color = "white" if dark else "black"
                    ax.text(n, m, str(value), ha="center", va="center", fontsize=NOTE_SIZE, color=color)
        n_rows, n_cols = matrix.shape
        if annotate:
            ax.set_xticks(range(n_cols))
            ax.set_yticks(range(n_rows))
            ax.tick_params(length=0)
        for side in ("top", "right", "left", "bottom"):
            ax.spines[side].set_visible(annotate is False)
        ax.set_xlabel("key position n")
        ax.set_ylabel("query position m")
        ax.set_title(title)
    return fig


def dropped_matrix(L: int, S: int) -> np.ndarray:
    """Fig. 5a: RoPE's relative positions r = m - n with the infrequent r >= N = L - S dropped (-1)."""
    idx = np.arange(int(L))
    r = idx[:, None] - idx[None, :]
    return np.where((r < 0) | (r >= L - S), -1, r)


def plot_string_matrices(L: int = 9, S: int = 3, W: int = 1, *, size="two-column") -> Figure:
    """STRING Fig. 5: (a) positions >= N = L - S dropped, (b) shifted by S with W = 0, (c) with local window W.

    Panel (b)'s last row for L = 9, S = 3 is [5, 4, 3, 2, 1, 0, 2, 1, 0], as in the paper.

    Parameters
    ----------
    L : int
        Window (small: the matrices are L x L).
    S : int
        STRING's shift, 0 < S < L.
    W : int
        STRING's local window, 0 <= W < S.
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
    panels = [
        (dropped_matrix(L, S), f"drop positions ≥ N = {L - S}"),
        (string_position_matrix(L, S, 0), f"shift by S = {S} (W = 0)"),
        (string_position_matrix(L, S, W), f"local window W = {W}"),
    ]
    with freqlab_style():
        fig, axes = new_figure(size, aspect=0.36, ncols=3)
        for k, (matrix, title) in enumerate(panels):
            plot_position_matrix(matrix, ax=axes[k], title=title, vmax=L - 1)
            if k:
                axes[k].set_ylabel("")
        panel_letters(axes)
    return fig


def plot_string_overview(L: int, S: int, W: int = 128, *, resolution: int = 256, size="one-column") -> Figure:
    """STRING Fig. 8 for a large window: the position matrix on a ``resolution`` x ``resolution`` grid of
    sampled rows and columns (each row from :func:`~freqlab.plan.string.string_position_row`).

    Parameters
    ----------
    L : int
        Training window (the model's max_position_embeddings).
    S : int
        STRING's shift, 0 < S < L.
    W : int
        STRING's local window, 0 <= W < S.
    resolution : int
        Rows and columns sampled.
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
    L, resolution = int(L), int(resolution)
    if resolution < 2:
        raise FreqlabError(f"resolution must be at least 2, got {resolution}")
    sample = np.unique(np.linspace(0, L - 1, min(resolution, L)).round().astype(np.int64))
    grid = np.full((sample.size, sample.size), -1, dtype=np.int64)
    for a, m in enumerate(sample):
        row = string_position_row(L, S, W, int(m))
        cols = sample[sample <= m]
        grid[a, : cols.size] = row[cols]
    with freqlab_style():
        fig, ax = new_figure(size, aspect=0.85)
        extent = (-0.5, L - 0.5, L - 0.5, -0.5)
        image = ax.imshow(
            np.ma.masked_less(grid, 0), cmap=MATRIX_CMAP, vmin=0, vmax=L - 1, extent=extent, interpolation="nearest"
        )
        bar = fig.colorbar(image, ax=ax, shrink=0.85)
        format_positions(bar.ax.yaxis, L)
        format_positions(ax.xaxis, L)
        format_positions(ax.yaxis, L)
        bar.set_label(with_units("position used", position_units(bar.ax.yaxis)))
        ax.set_xlabel(with_units("key position n", position_units(ax.xaxis)))
        ax.set_ylabel(with_units("query position m", position_units(ax.yaxis)))
        ax.set_title(f"STRING, L = {position_label(L)}, S = {position_label(S)}, W = {W}")
    return fig


def never_used_label(share: float) -> str:
    r"""The shaded tail's note, named as `plan string` names it (its other share, i >= L - S, is the overwritten one).

    >>> never_used_label(0.062)
    'never used\n(p ≥ max(S, L−S+W))\n6.2% of mass'
    """
    return f"never used\n(p ≥ max(S, L−S+W))\n{100 * share:.1f}% of mass"


def plot_string_usage(L: int, S: int, W: int = 128, *, frequency=None, size="one-column") -> Figure:
    """Which positions STRING uses, for a large window.

    Top (when ``frequency`` f of length L is given): f(p), how often training saw position p; shaded, the
    positions p >= max(S, L - S + W) that STRING no longer uses, with their share of the position mass. Bottom:
    query-key pairs of one sequence of L tokens per position p, with RoPE (L - p) and with STRING (pairs
    at r >= S moved to p = r - S + W); the legend gives the pair-weighted mean training frequency
    Σ_p pairs(p) f(p) / Σ_p pairs(p) when f is known: STRING moves attention onto better-trained positions.

    Parameters
    ----------
    L : int
        Training window (the model's max_position_embeddings).
    S : int
        STRING's shift, 0 < S < L.
    W : int
        STRING's local window, 0 <= W < S.
    frequency : array_like, optional
        Position frequency f of length L (adds the top panel).
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
    usage = string_usage(L, S, W, frequency=frequency)
    unused = min(string_positions_used(L, S, W), L)  # first position STRING never uses
    p = usage.positions
    rows = 2 if usage.trained is not None else 1
    with freqlab_style():
        fig, axes = new_figure(size, aspect=0.55 * rows + 0.15, nrows=rows, sharex=True, squeeze=False)
        axes = axes[:, 0]
        bottom = axes[-1]
        if usage.trained is not None:
            top = axes[0]
            f = usage.trained
            top.plot(p, f, color=COLORS["frequency"])
            top.axvspan(unused, L, color=COLORS["tail"], alpha=0.15, lw=0)
            top_note(top, (unused + L) / 2, never_used_label(share_at_least(f, unused)), COLORS["tail"])
            top.set_ylim(0, float(f[0]) * 1.05)
            format_counts(top.yaxis)
            top.set_ylabel(with_units("trained f(p)", count_units(top.yaxis)))
            panel_letters(axes)
        axes[0].set_title(f"STRING, L = {position_label(L)}, S = {position_label(S)}, W = {W}")
        labels = {"RoPE": usage.pairs_before, "STRING": usage.pairs_after}
        for (name, pairs), color, style in zip(labels.items(), (COLORS["threshold"], COLORS["frequency"]), ("--", "-")):
            label = name
            if usage.trained is not None:
                mean = float(np.dot(pairs.astype(np.float64), usage.trained)) / float(pairs.sum())
                label += f" (mean trained f = {count_label(mean)})"
            bottom.plot(p, pairs, style, color=color, label=label)
        bottom.axvspan(unused, L, color=COLORS["tail"], alpha=0.15, lw=0)
        position_xaxis(bottom, L, "relative position p")
        bottom.set_ylim(0, float(max(usage.pairs_before.max(), usage.pairs_after.max())) * 1.35)
        format_counts(bottom.yaxis)
        bottom.set_ylabel(with_units("pairs using p", count_units(bottom.yaxis)))
        bottom.legend(loc="upper right")
    return fig
