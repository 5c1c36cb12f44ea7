"""Self-Extend figure (Jin et al., ICML 2024, arXiv:2401.01325, Fig. 3): RoPE's positions beyond the window vs
grouped positions.

Tokens closer than the neighbour window w_n keep their exact relative position; farther pairs use
floor-grouped positions m // G - n // G + w_n - w_n // G, so a sequence longer than the training window L
only uses positions below L. The matrix comes from :func:`freqlab.plan.self_extend.self_extend_position_matrix`.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from freqlab.plan.self_extend import self_extend_max_length, self_extend_position_matrix
from freqlab.plots.axes import panel_letters
from freqlab.plots.string import plot_position_matrix
from freqlab.plots.style import COLORS, freqlab_style, new_figure


def plot_self_extend_matrices(L: int = 7, G: int = 2, w_n: int = 4, N: int | None = None, *, size="two-column"):
    """(a) RoPE's relative positions for N tokens, those >= L (never trained) highlighted as out of window;
    (b) Self-Extend's positions with group size G and neighbour window w_n, all below L up to
    N = (L - w_n)·G + w_n (Eq. 8; default N). Reproduces Self-Extend Fig. 3 with L = 7, G = 2, w_n = 4, N = 10.

    Parameters
    ----------
    L : int
        Training window (the model's max_position_embeddings).
    G : int
        Group size (the FLOOR divisor).
    w_n : int
        Neighbour window: pairs closer than w_n keep their position.
    N : int, optional
        Sequence length; default (L - w_n)·G + w_n.
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (shows itself in Jupyter).

    References
    ----------
    .. [1] Jin et al., "LLM Maybe LongLM: Self-Extend LLM Context Window Without Tuning", ICML 2024,
           arXiv:2401.01325.
    """
    N = self_extend_max_length(L, G, w_n) if N is None else int(N)
    idx = np.arange(N)
    rope = idx[:, None] - idx[None, :]
    rope = np.where(rope < 0, -1, rope)
    grouped = self_extend_position_matrix(N, G, w_n)
    with freqlab_style():
        fig: Figure
        fig, axes = new_figure(size, aspect=0.46, ncols=2)
        plot_position_matrix(rope, ax=axes[0], vmax=N - 1, title=f"RoPE, N = {N}; boxed: ≥ L = {L}, never trained")
        for m, n in zip(*np.nonzero(rope >= L)):
            axes[0].add_patch(Rectangle((n - 0.5, m - 0.5), 1, 1, fill=False, ec=COLORS["tail"], lw=1.4))
        plot_position_matrix(grouped, ax=axes[1], vmax=N - 1, title=f"Self-Extend, G = {G}, w_n = {w_n}")
        axes[1].set_ylabel("")
        panel_letters(axes)
    return fig
