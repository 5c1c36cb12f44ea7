"""HARPE figures (Lian et al., COLING 2025, arXiv:2412.07171, Sec. 3.2): RoPE waveforms, their peaks and
valleys, and how well a set of per-head bases complements itself.

- :func:`plot_waveforms`: Attention Buckets' waveform w_b(m) = (2/√d) Σ_j cos(m · b^(-2j/d)) (HARPE names
  waveforms but defines none; see :mod:`freqlab.plan.waveform`) for a few bases on a distance grid, one
  row per base, with the peaks (filled ▲) and valleys (hollow ▼, both black: distinct from the waveforms'
  colours) that the peak-valley search (Algorithm 1) pairs up. Distances are written out in full (HARPE's grids
  are decimal: 32,000..130,880).
- :func:`plot_envelopes`: for several base sets (e.g. freqlab's search, the uniform set of Eq. 9 and the
  published Table 2), (a) the lowest head-wise envelope max_h w_{b_h}(m) per block of distances, one small panel
  per set (the other sets in grey behind it), and (b) the lowest envelope values sorted, so the "shortest stave"
  min_m max_h w (the Attention Buckets principle: higher is better) is the left end of each curve.

Waveforms, grids, detectors and scores come from :mod:`freqlab.plan.waveform` and
:mod:`freqlab.plan.harpe`; this module only draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from freqlab.errors import FreqlabError
from freqlab.plan.harpe import PAPER_HEAD_DIM, PAPER_TARGET, ProminentExtrema
from freqlab.plan.waveform import DistanceGrid, rope_waveform, stave_score
from freqlab.plots.axes import distance_label, format_distances, panel_letters
from freqlab.plots.style import (
    COLORS,
    NOTE_SIZE,
    PALETTE,
    FreqlabFigure,
    figure_size,
    freqlab_style,
    new_figure,
    plain,
)


def _grid(grid: DistanceGrid | None, target: int) -> DistanceGrid:
    return DistanceGrid.for_target(target) if grid is None else grid


def base_label(base: float) -> str:
    """1_150_000 -> '1.15M' (decimal M, as the papers write bases); below a million written out, 17_500 ->
    '17,500' (a "K" could be read as 1024).

    >>> base_label(1_150_000), base_label(17_500), base_label(500)
    ('1.15M', '17,500', '500')
    """
    if abs(base) >= 1e6:
        return f"{base / 1e6:.4g}M"
    return f"{base:,.0f}" if float(base).is_integer() else f"{base:,g}"


def plot_waveforms(
    bases: Sequence[float],
    grid: DistanceGrid | None = None,
    *,
    head_dim: int = PAPER_HEAD_DIM,
    target: int = PAPER_TARGET,
    detector: ProminentExtrema | None = None,
    points: int | None = 400,
    size="one-column",
) -> Figure:
    """One row per base: its waveform on ``grid`` (default: the Attention Buckets grid scaled to
    ``target``) with the peaks and valleys found by ``detector`` (default :class:`ProminentExtrema`, the
    detector :func:`~freqlab.plan.harpe.peak_valley_search` uses). Extrema are detected on the whole grid;
    the plot shows its first ``points`` grid points (None: all) so single peaks stay visible.

    Parameters
    ----------
    bases : sequence of float
        RoPE bases, one row each.
    grid : DistanceGrid, optional
        Distances; default the Attention Buckets grid scaled to ``target``.
    head_dim : int
        Head dimension d.
    target : int
        Target context length.
    detector : ProminentExtrema, optional
        Peak and valley detection.
    points : int or None
        Grid points shown (None: all).
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (shows itself in Jupyter).

    References
    ----------
    .. [1] Lian et al., "Breaking the Stage Barrier: A Novel Single-Stage Approach to Long Context Extension
           for Large Language Models", COLING 2025, arXiv:2412.07171.
    .. [2] Chen et al., "Fortify the Shortest Stave in Attention: Enhancing Context Awareness of Large Language
           Models for Effective Tool Use", ACL 2024, arXiv:2312.04455 (Attention Buckets).
    """
    bases = [float(b) for b in bases]
    if not bases:
        raise FreqlabError("give at least one base")
    grid = _grid(grid, target)
    detector = detector or ProminentExtrema()
    m = grid.distances
    waves = rope_waveform(bases, m, head_dim)
    peaks, valleys = detector.find(waves)
    shown = m.size if points is None else max(2, min(int(points), m.size))
    low, high = float(waves[:, :shown].min()), float(waves[:, :shown].max())
    pad = 0.12 * (high - low)
    with freqlab_style():
        fig, axes = new_figure(size, aspect=0.3 * len(bases) + 0.2, nrows=len(bases), sharex=True, squeeze=False)
        for k, (base, w) in enumerate(zip(bases, waves)):
            ax = axes[k, 0]
            ax.plot(m[:shown], w[:shown], color=PALETTE[k % len(PALETTE)], lw=0.8)
            p = peaks[k][peaks[k] < shown]
            v = valleys[k][valleys[k] < shown]
            ax.plot(m[p], w[p], "^", color=COLORS["peak"], ms=3, label="peaks")
            ax.plot(m[v], w[v], "v", mfc="white", mec=COLORS["valley"], mew=0.7, ms=3.2, label="valleys")
            ax.set_ylim(low - pad, high + 2.2 * pad)
            ax.text(
                0.005,
                0.97,
                f"b = {base_label(base)}",
                transform=ax.transAxes,
                ha="left",
                va="top",
                fontsize=7,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8},
            )
            ax.set_ylabel("w_b(m)")
        axes[0, 0].legend(loc="upper right", ncols=2, fontsize=NOTE_SIZE, handletextpad=0.2, borderaxespad=0.1)
        span = f"{distance_label(m[0])}..{distance_label(m[-1])}"
        axes[0, 0].set_title(f"RoPE waveforms, d = {head_dim}, grid m = {span} step {grid.step}")
        bottom = axes[-1, 0]
        bottom.set_xlim(m[0], m[shown - 1])
        format_distances(bottom.xaxis)
        bottom.set_xlabel("relative distance m" + ("" if shown == m.size else f" (first {shown} grid points)"))
    return fig


def plot_envelopes(
    sets: Mapping[str, Sequence[float]],
    grid: DistanceGrid | None = None,
    *,
    head_dim: int = PAPER_HEAD_DIM,
    target: int = PAPER_TARGET,
    blocks: int = 48,
    size="two-column",
) -> Figure:
    """Complementarity of base sets on a grid, from the head-wise envelope e(m) = max_h w_{b_h}(m).

    (a) The lowest envelope value in each of ``blocks`` equal blocks of distances, where the staves are short: one
    small panel per set (named on its y-axis), sharing both axes, the set's own step line in colour over the
    others in grey, its shortest stave dashed. (b) The lowest 10% of e(m), sorted: the left end is the shortest
    stave min_m e(m) (legend: shortest and mean, as :func:`~freqlab.plan.waveform.stave_score`; higher is better).

    Parameters
    ----------
    sets : mapping of str to sequence of float
        Base sets by name.
    grid : DistanceGrid, optional
        Distances; default the Attention Buckets grid scaled to ``target``.
    head_dim : int
        Head dimension d.
    target : int
        Target context length.
    blocks : int
        Equal blocks of distances in panel (a).
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (shows itself in Jupyter).

    References
    ----------
    .. [1] Lian et al., "Breaking the Stage Barrier: A Novel Single-Stage Approach to Long Context Extension
           for Large Language Models", COLING 2025, arXiv:2412.07171.
    .. [2] Chen et al., "Fortify the Shortest Stave in Attention: Enhancing Context Awareness of Large Language
           Models for Effective Tool Use", ACL 2024, arXiv:2312.04455 (Attention Buckets).
    """
    if not sets:
        raise FreqlabError("give at least one base set")
    grid = _grid(grid, target)
    m = grid.distances
    blocks = max(1, min(int(blocks), m.size))
    edges = np.linspace(0, m.size, blocks + 1).round().astype(int)
    block_edges = np.append(m[edges[:-1]], m[-1])
    tenth = max(1, m.size // 10)
    share = 100 * np.arange(m.size) / max(m.size - 1, 1)
    curves = {}
    for k, (name, bases) in enumerate(sets.items()):
        envelope = rope_waveform(list(bases), m, head_dim).max(axis=0)
        score = stave_score(list(bases), grid, head_dim)  # the numbers come from the planner's scorer
        curves[name] = (PALETTE[k % len(PALETTE)], envelope, np.minimum.reduceat(envelope, edges[:-1]), score)
    with freqlab_style():
        aspect = 0.34 + 0.06 * max(len(sets) - 3, 0)
        fig = FreqlabFigure(figsize=figure_size(size, aspect=aspect), layout="constrained")
        layout = fig.add_gridspec(len(sets), 2)
        lefts = [fig.add_subplot(layout[0, 0])]
        lefts += [fig.add_subplot(layout[k, 0], sharex=lefts[0], sharey=lefts[0]) for k in range(1, len(sets))]
        right = fig.add_subplot(layout[:, 1])
        top = -np.inf
        for ax, (name, (color, envelope, lowest, score)) in zip(lefts, curves.items()):
            for other, (_, _, other_lowest, _) in curves.items():
                if other != name:
                    ax.stairs(other_lowest, block_edges, color="#bbbbbb", lw=0.7, baseline=None)
            ax.stairs(lowest, block_edges, color=color, lw=1.1, baseline=None)
            ax.axhline(score.shortest, color=color, ls="--", lw=0.7)
            ax.set_ylabel(plain(name), color=color, fontsize=NOTE_SIZE)
            ax.tick_params(axis="x", labelbottom=ax is lefts[-1])
            ordered = np.sort(envelope)
            right.plot(share, ordered, color=color, label=f"{plain(name)}: {score.shortest:.2f} / {score.mean:.2f}")
            right.plot([0], [score.shortest], "o", color=color, ms=3.5, clip_on=False)
            top = max(top, float(ordered[tenth - 1]))
        bottom = lefts[-1]
        bottom.set_xlim(m[0], m[-1])
        format_distances(bottom.xaxis)
        bottom.set_xlabel("relative distance m")
        lefts[0].set_title(f"lowest max_h w_b(m) per block of {m.size // blocks} grid points")
        right.set_xlim(0, 10)  # the lowest 10% of distances, where the shortest staves are
        low = right.get_ylim()[0]
        right.set_ylim(low, low + 1.1 * (top - low))
        right.set_xlabel("lowest share of distances (%)")
        right.set_ylabel("max_h w_b(m), sorted")
        right.set_title("sorted envelope; dot = shortest stave")
        right.legend(loc="lower right", title="shortest / mean", title_fontsize=7)
        panel_letters((lefts[0], right))
    return fig
