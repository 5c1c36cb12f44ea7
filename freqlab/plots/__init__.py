"""Figures for papers and notebooks: position frequency (STRING Fig. 1-3 layouts), per-source lengths,
STRING and Self-Extend position matrices, HARPE waveforms and envelopes.

Every function returns a :class:`matplotlib.figure.Figure` drawn in the freqlab style (applied inside the
function, not globally) that shows itself in Jupyter with or without ``%matplotlib inline``; :func:`save_figure`
exports PNG, PDF (TrueType fonts) and SVG (text kept as text). The STRING,
Self-Extend and HARPE figures import :mod:`freqlab.plan` on first use.

>>> import freqlab, freqlab.plots
>>> h = freqlab.LengthHistogram.from_lengths([300, 900, 2500, 5000])
>>> fig = freqlab.plots.plot_regimes(h, 2048)          # STRING Fig. 1a/b/c from one histogram
>>> [ax.get_title() for ax in fig.axes[:3]]
['(a) natural, L = 2K', '(b) uniform, L = 2K', '(c) concat, L = 2K']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from freqlab.plots.frequency import (
    effective_length_curve,
    plot_effective_length,
    plot_position_frequency,
    plot_regimes,
    plot_windows,
)
from freqlab.plots.report import scan_figures
from freqlab.plots.sources import length_ccdf, plot_sources
from freqlab.plots.style import COLORS, PALETTE, STYLE, WIDTHS, figure_size, freqlab_style, new_figure, save_figure

if TYPE_CHECKING:  # the lazy names below, visible to type checkers and the API reference (never run)
    from freqlab.plots.exposure import plot_exposure
    from freqlab.plots.harpe import plot_envelopes, plot_waveforms
    from freqlab.plots.recipe import plot_recipe
    from freqlab.plots.self_extend import plot_self_extend_matrices
    from freqlab.plots.string import (
        plot_position_matrix,
        plot_string_matrices,
        plot_string_overview,
        plot_string_usage,
    )

_LAZY = {
    "plot_position_matrix": "freqlab.plots.string",
    "plot_string_matrices": "freqlab.plots.string",
    "plot_string_overview": "freqlab.plots.string",
    "plot_string_usage": "freqlab.plots.string",
    "plot_self_extend_matrices": "freqlab.plots.self_extend",
    "plot_waveforms": "freqlab.plots.harpe",
    "plot_envelopes": "freqlab.plots.harpe",
    "plot_recipe": "freqlab.plots.recipe",
    "plot_exposure": "freqlab.plots.exposure",
}


def __getattr__(name: str):
    # STRING and HARPE figures need freqlab.plan; import it only when one of them is used
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'freqlab.plots' has no attribute {name!r}")


__all__ = [
    "COLORS",
    "PALETTE",
    "STYLE",
    "WIDTHS",
    "effective_length_curve",
    "figure_size",
    "freqlab_style",
    "length_ccdf",
    "new_figure",
    "plot_effective_length",
    "plot_envelopes",
    "plot_exposure",
    "plot_position_frequency",
    "plot_position_matrix",
    "plot_recipe",
    "plot_regimes",
    "plot_self_extend_matrices",
    "plot_sources",
    "plot_string_matrices",
    "plot_string_overview",
    "plot_string_usage",
    "plot_waveforms",
    "plot_windows",
    "save_figure",
    "scan_figures",
]
