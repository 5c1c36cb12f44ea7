"""Axis helpers shared by every freqlab figure: tick labels for positions and counts, twin axes, notes, inputs.

>>> position_label(1536), position_label(2048), position_label(100)
('1.5K', '2K', '100')
>>> distance_label(34_000), distance_label(130_880), distance_label(500)
('34,000', '130,880', '500')
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, FuncFormatter

from freqlab.errors import FreqlabError
from freqlab.frequency.summary import human_count
from freqlab.histogram import LengthHistogram
from freqlab.plots.style import NOTE_SIZE
from freqlab.sizes import position_label


def count_label(y: float) -> str:
    """Counts with decimal suffixes: 2.5e9 -> '2.5B' (the token-budget convention)."""
    return "0" if y == 0 else human_count(y)


def format_positions(axis, L: int | None = None) -> None:
    """Tick a position (or length) axis at multiples of L/4 when L is given, labelled with K = 1024."""
    if L is not None and L >= 8:
        axis.set_major_locator(FixedLocator([round(k * L / 4) for k in range(5)]))
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: position_label(x)))


def distance_label(x: float) -> str:
    """Distances written out in full (HARPE grids are decimal, so neither K = 1024 nor a decimal "k" would be
    unambiguous next to the position axes): 34000 -> '34,000', 130880 -> '130,880'."""
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,g}"


def format_distances(axis) -> None:
    """Label a distance axis with :func:`distance_label`."""
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: distance_label(x)))


def format_counts(axis) -> None:
    """Label a count axis as 1.5M, 2B, ..."""
    axis.set_major_formatter(FuncFormatter(lambda y, _pos: count_label(y)))


def format_log_counts(axis) -> None:
    """Label the decades of a log-scale count axis (1B, 10B, 100B, 1T), leave the minor ticks blank."""

    def label(value: float, _pos) -> str:
        exponent = np.log10(value) if value > 0 else 0
        return count_label(value) if abs(exponent - round(exponent)) < 1e-9 else ""

    axis.set_major_formatter(FuncFormatter(label))


def position_xaxis(ax: Axes, L: int, label: str = "relative position i") -> None:
    """The x-axis as relative positions 0..L: limits, ticks at multiples of L/4 (K = 1024), label."""
    ax.set_xlim(0, L)
    format_positions(ax.xaxis, L)
    ax.set_xlabel(label)


def top_note(ax: Axes, x: float, text: str, color: str | None = None) -> None:
    """A small note centred at data ``x`` just under the top of ``ax`` (labels of shaded position ranges)."""
    ax.text(x, 0.98, text, transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=NOTE_SIZE, color=color)


def twin_behind(ax: Axes) -> Axes:
    """A twin y-axis (right) drawn *behind* ``ax``, so lines on ``ax`` stay in front of bars on the twin."""
    twin = ax.twinx()
    twin.spines["right"].set_visible(True)
    ax.set_zorder(twin.get_zorder() + 1)
    ax.patch.set_visible(False)
    return twin


def as_histogram(data) -> LengthHistogram:
    """A LengthHistogram from a LengthHistogram or a ``(lengths, counts)`` pair."""
    if isinstance(data, LengthHistogram):
        histogram = data
    elif isinstance(data, tuple) and len(data) == 2:
        histogram = LengthHistogram.from_counts(*data)
    else:
        raise FreqlabError(f"expected a LengthHistogram or a (lengths, counts) pair, got {type(data).__name__}")
    if histogram.documents == 0:
        raise FreqlabError("the histogram holds no documents: nothing to plot")
    return histogram


def panel_letters(axes: Iterable[Axes]) -> None:
    """'(a)', '(b)', ... in the top-left corner outside each axes, as in the papers' multi-panel figures."""
    for index, ax in enumerate(axes):
        letter = f"({chr(ord('a') + index)})"
        ax.text(-0.02, 1.02, letter, transform=ax.transAxes, ha="right", va="bottom", weight="bold")


def grid_shape(panels: int, columns: int = 3) -> tuple[int, int]:
    """Rows and columns for ``panels`` panels, at most ``columns`` per row."""
    columns = max(1, min(columns, panels))
    return int(np.ceil(panels / columns)), columns
