"""Axis helpers shared by every freqlab figure: tick labels for positions and counts, twin axes, notes, inputs.

Units are stated on the axes that use them, as the papers' conventions differ: positions and lengths with
K = 1024 ("relative position i (K = 1024)": 2K = 2048), counts of tokens and occurrences with decimal M, B, T
("occurrences (B = 10⁹, T = 10¹²)"); counts below a million are written out (1,500), never with a "K"
that could be read as 1024.

>>> position_label(1536), position_label(2048), position_label(100)
('1.5K', '2K', '100')
>>> count_label(1500), count_label(2.5e9), distance_label(34_000), distance_label(130_880)
('1,500', '2.5B', '34,000', '130,880')
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

#: What each count suffix means (decimal, the token-budget convention: STRING's "1T tokens").
COUNT_UNITS: dict[str, str] = {"M": "M = 10⁶", "B": "B = 10⁹", "T": "T = 10¹²"}
#: What a position suffix means.
POSITION_UNIT = "K = 1024"


def count_label(y: float) -> str:
    """Counts: written out below a million (1,500), decimal suffixes above (2.5e9 -> '2.5B')."""
    if y == 0:
        return "0"
    return f"{y:,.0f}" if abs(y) < 1e6 else human_count(y)


def with_units(label: str, *units: str) -> str:
    """``label (unit, unit)`` with the empty units left out.

    >>> with_units("relative position i", "K = 1024"), with_units("f(i)", "")
    ('relative position i (K = 1024)', 'f(i)')
    """
    units = tuple(u for u in units if u)
    return f"{label} ({', '.join(units)})" if units else label


def count_units(axis) -> str:
    """The decimal suffixes the tick labels of a count axis use, as ``B = 10⁹, T = 10¹²`` (call it once the
    axis limits are set)."""
    lo, hi = sorted(axis.get_view_interval())
    labels = [axis.get_major_formatter()(t, k) for k, t in enumerate(axis.get_major_locator()()) if lo <= t <= hi]
    used = {label[-1] for label in labels if label}
    return ", ".join(unit for suffix, unit in COUNT_UNITS.items() if suffix in used)


def position_units(axis) -> str:
    """``K = 1024`` when a tick label of the position axis uses K, else ''."""
    lo, hi = sorted(axis.get_view_interval())
    labels = [axis.get_major_formatter()(t, k) for k, t in enumerate(axis.get_major_locator()()) if lo <= t <= hi]
    return POSITION_UNIT if any(label.endswith("K") for label in labels) else ""


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
    """Label a count axis as 1,500, 1.5M, 2B, ... (:func:`count_label`)."""
    axis.set_major_formatter(FuncFormatter(lambda y, _pos: count_label(y)))


def format_log_counts(axis) -> None:
    """Label the decades of a log-scale count axis (1B, 10B, 100B, 1T), leave the minor ticks blank."""

    def label(value: float, _pos) -> str:
        exponent = np.log10(value) if value > 0 else 0
        return count_label(value) if abs(exponent - round(exponent)) < 1e-9 else ""

    axis.set_major_formatter(FuncFormatter(label))


def position_xaxis(ax: Axes, L: int, label: str = "relative position i") -> None:
    """The x-axis as relative positions 0..L: limits, ticks at multiples of L/4 and the label, with K = 1024
    stated when the ticks use it."""
    ax.set_xlim(0, L)
    format_positions(ax.xaxis, L)
    ax.set_xlabel(with_units(label, position_units(ax.xaxis)))


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
