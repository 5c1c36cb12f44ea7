"""Axis helpers shared by every freqlab figure: tick labels for positions and counts, twin axes, notes, inputs.

Units are stated on the axes that use them, as the papers' conventions differ: positions and lengths with
K = 1024 ("relative position i (K = 1024)": 2K = 2048), counts of tokens and occurrences with decimal M, B, T
("occurrences (B = 10⁹, T = 10¹²)"); counts below a million are written out (1,500), never with a "K"
that could be read as 1024.

The ticks of one position axis share one unit (:func:`position_tick_labels`): all in K when every tick is a
multiple of 256 and the largest reaches 1K (``0, 0.5K, 1K, 1.5K, 2K``), else all written out (``0, 750, 1500``),
never ``512`` beside ``1K``.

>>> position_label(1536), position_label(2048), position_label(100)
('1.5K', '2K', '100')
>>> count_label(1500), count_label(2.5e9), distance_label(34_000), distance_label(130_880)
('1,500', '2.5B', '34,000', '130,880')
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, Formatter, FuncFormatter, MaxNLocator

from freqlab.errors import FreqlabError
from freqlab.frequency.regime_table import human_count
from freqlab.histogram import LengthHistogram
from freqlab.plots.style import NOTE_SIZE
from freqlab.sizes import position_label  # noqa: F401 - re-exported for the figures

#: What each count suffix means (decimal, the token-budget convention: STRING's "1T tokens").
COUNT_UNITS: dict[str, str] = {"M": "M = 10⁶", "B": "B = 10⁹", "T": "T = 10¹²"}
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
#: What a position suffix means.
POSITION_UNIT = "K = 1024"


def count_label(y: float) -> str:
    """Counts: written out below a million (1,500), decimal suffixes above (2.5e9 -> '2.5B'); a mean below 100
    that is no whole number to three digits (0.4, 12.5: rounded to whole numbers, 0.4 and 0.7 both read 0 or 1).

    >>> count_label(1500), count_label(2.5e9), count_label(0.4), count_label(12.5), count_label(999.7)
    ('1,500', '2.5B', '0.4', '12.5', '1,000')
    """
    if y == 0:
        return "0"
    if abs(y) < 100 and not float(y).is_integer():  # 99.97 reads 100; 999.7 "1,000" below (.3g: "1e+03")
        return f"{y:.3g}"
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
    axis limits are set).
    """
    lo, hi = sorted(axis.get_view_interval())
    labels = axis.get_major_formatter().format_ticks([t for t in axis.get_major_locator()() if lo <= t <= hi])
    used = {label[-1] for label in labels if label}
    return ", ".join(unit for suffix, unit in COUNT_UNITS.items() if suffix in used)


def position_units(axis) -> str:
    """``K = 1024`` when a tick label of the position axis uses K, else ''."""
    lo, hi = sorted(axis.get_view_interval())
    ticks = [t for t in axis.get_major_locator()() if lo <= t <= hi]
    labels = axis.get_major_formatter().format_ticks(ticks)
    return POSITION_UNIT if any(label.endswith("K") for label in labels) else ""


def position_tick_labels(values: Iterable[float]) -> list[str]:
    """Labels of the ticks of one position axis, all in one unit: K = 1024 when every tick is a multiple of 256
    and the largest is at least 1024, else every tick written out.

    >>> position_tick_labels([0, 512, 1024, 1536, 2048]), position_tick_labels([0, 256, 512, 768])
    (['0', '0.5K', '1K', '1.5K', '2K'], ['0', '256', '512', '768'])
    >>> position_tick_labels([0, 750, 1500, 2250, 3000]), position_tick_labels([0, 32768, 65536, 131072])
    (['0', '750', '1500', '2250', '3000'], ['0', '32K', '64K', '128K'])
    """
    values = [float(v) for v in values]
    in_k = bool(values) and max(abs(v) for v in values) >= 1024 and all(v % 256 == 0 for v in values)
    if in_k:
        return [f"{v / 1024:g}K" if v else "0" for v in values]
    return [f"{v:.0f}" if v == int(v) else f"{v:g}" for v in values]


class PositionFormatter(Formatter):
    """Tick labels of a position axis in one unit (:func:`position_tick_labels`), decided over all its ticks."""

    def __init__(self) -> None:
        self.labels: dict[float, str] = {}

    def set_locs(self, locs) -> None:
        """Remember the tick positions, to label them: the unit is decided over the ticks drawn (a review: a 1K tick
        past the axis's end made the ticks in view 0.25K, 0.5K, 0.75K, and no label said K = 1024).
        """
        super().set_locs(locs)
        values = [float(v) for v in locs]
        if self.axis is not None:
            lo, hi = sorted(self.axis.get_view_interval())
            values = [v for v in values if lo <= v <= hi] or values
        self.labels = dict(zip(values, position_tick_labels(values), strict=True))

    def __call__(self, x, pos=None) -> str:
        """The label of the tick at ``x``."""
        return self.labels.get(float(x)) or position_tick_labels([x])[0]


def format_positions(axis, L: int | None = None) -> None:
    """Tick a position (or length) axis at multiples of L/4 when L is given, labelled with K = 1024."""
    if L is not None and L >= 8:
        axis.set_major_locator(FixedLocator([round(k * L / 4) for k in range(5)]))
    elif L is not None:  # positions are whole: no tick at 0.5 (a review)
        axis.set_major_locator(MaxNLocator(integer=True))
    axis.set_major_formatter(PositionFormatter())


def distance_label(x: float) -> str:
    """Distances written out in full (HARPE grids are decimal, so neither K = 1024 nor a decimal "k" would be
    unambiguous next to the position axes): 34000 -> '34,000', 130880 -> '130,880'.
    """
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,g}"


def format_distances(axis) -> None:
    """Label a distance axis with :func:`distance_label`."""
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: distance_label(x)))


def count_tick_labels(values: Iterable[float]) -> list[str]:
    """Labels of the ticks of one (linear) count axis, all in one unit: written out when the largest is below a
    million, else all in the largest tick's decimal suffix.

    >>> count_tick_labels([0, 500_000, 1_000_000, 1_500_000]), count_tick_labels([0, 2500, 5000])
    (['0', '0.5M', '1M', '1.5M'], ['0', '2,500', '5,000'])
    >>> count_tick_labels([0, 0.2, 0.4, 0.6, 0.8, 1.0])  # a tiny count axis: not 0, 0, 0, 1, 1, 1 (a review)
    ['0.0', '0.2', '0.4', '0.6', '0.8', '1.0']
    """
    values = [float(v) for v in values]
    top = max((abs(v) for v in values), default=0.0)
    if top < 1e6 and not all(v.is_integer() for v in values):  # ticks between whole counts: their decimals
        decimals = next((d for d in range(1, 7) if all(abs(round(v, d) - v) < 1e-9 for v in values)), 6)
        return [f"{v:,.{decimals}f}" for v in values]
    if top < 1e6:
        return [count_label(v) for v in values]
    scale, suffix = next((s, x) for s, x in ((1e12, "T"), (1e9, "B"), (1e6, "M")) if top >= s)
    return [f"{v / scale:g}{suffix}" if v else "0" for v in values]


class CountFormatter(Formatter):
    """Tick labels of a linear count axis in one unit (:func:`count_tick_labels`), decided over all its ticks."""

    def __init__(self) -> None:
        self.labels: dict[float, str] = {}

    def set_locs(self, locs) -> None:
        """Remember the tick positions, to label them."""
        super().set_locs(locs)
        self.labels = dict(zip((float(v) for v in locs), count_tick_labels(locs), strict=True))

    def __call__(self, x, pos=None) -> str:
        """The label of the tick at ``x``."""
        return self.labels.get(float(x)) or count_label(x)


def format_counts(axis) -> None:
    """Label a count axis as 0, 0.5M, 1M, 1.5M, ... in one unit (:func:`count_tick_labels`)."""
    axis.set_major_formatter(CountFormatter())


def format_log_counts(axis) -> None:
    """Label the decades of a log-scale count axis (1B, 10B, 100B, 1T; 10¹⁵ on), leave the minor ticks blank."""

    def label(value: float, _pos) -> str:
        exponent = np.log10(value) if value > 0 else 0
        if abs(exponent - round(exponent)) >= 1e-9:
            return ""
        # past 100T as powers of ten: "1000T, 10000T" beside human_count's "1e18" mixed three forms (a review)
        return "10" + str(round(exponent)).translate(_SUPERSCRIPT) if value >= 1e15 else count_label(value)

    axis.set_major_formatter(FuncFormatter(label))


def position_xaxis(ax: Axes, L: int, label: str = "relative position i") -> None:
    """The x-axis as relative positions 0..L: limits, ticks at multiples of L/4 and the label, with K = 1024
    stated when the ticks use it.
    """
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
    """'(a)', '(b)', ... as in the papers' multi-panel figures: put before each axes' title (so a letter never
    covers it, however narrow the panel), or in the top-left corner outside an axes without one.
    """
    for index, ax in enumerate(axes):
        letter = f"({chr(ord('a') + index)})"
        if ax.get_title():
            ax.set_title(f"{letter} {ax.get_title()}")
        else:
            ax.text(-0.02, 1.02, letter, transform=ax.transAxes, ha="right", va="bottom", weight="bold")


def grid_shape(panels: int, columns: int = 3) -> tuple[int, int]:
    """Rows and columns for ``panels`` panels, at most ``columns`` per row."""
    columns = max(1, min(columns, panels))
    return int(np.ceil(panels / columns)), columns
