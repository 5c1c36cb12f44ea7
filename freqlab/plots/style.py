"""The freqlab figure style: paper-ready defaults applied inside every plotting function, and export.

The style is an rc dict applied with :func:`freqlab_style` (a context manager around
``matplotlib.rc_context``), never a global side effect of importing freqlab. Sizes are set for papers:
``one-column`` figures are 3.5 in wide, ``two-column`` figures 7.2 in (the ACL/ICLR/NeurIPS column and
text widths), with 8 pt labels and 7 pt ticks so text stays readable when the figure is placed at 100%.

Fonts: DejaVu Sans (ships with matplotlib, so every machine renders the same), no LaTeX (mathtext only).
PDF and PS exports embed TrueType fonts (``pdf.fonttype = 42``) instead of Type 3 bitmaps, which
publishers and arXiv prefer and which keep text selectable. :func:`save_figure` applies the style while
saving (the font type is read at save time) and strips dates from the file metadata so that the same
figure always gives the same bytes.

>>> from freqlab.plots.style import figure_size
>>> figure_size("one-column"), figure_size("two-column", aspect=0.3)
((3.5, 2.45), (7.2, 2.16))
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from freqlab.display import shown_text
from freqlab.errors import FreqlabError
from freqlab.files import check_file_name, write_atomic
from freqlab.paths import writes_stdout

#: Okabe-Ito colour-blind safe palette; the first colours are used in this order for series.
PALETTE: tuple[str, ...] = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")

#: Colours of the sources of a per-source figure, the total being black: Okabe-Ito's seven colours, then Paul Tol's
#: muted nine (brown for his pale cyan, close to Okabe-Ito's sky blue), so that 16 sources (the most a figure draws,
#: :data:`MAX_SOURCES`) are 16 colours, none black (a review: PALETTE's 8th colour is the total's black, and sources
#: k and k + 8 shared one).
SOURCE_COLORS: tuple[str, ...] = (
    *PALETTE[:7],
    "#CC6677", "#332288", "#DDCC77", "#117733", "#661100", "#882255", "#44AA99", "#999933", "#AA4499",
)  # fmt: skip

#: The most sources a per-source figure draws (one curve, bar and legend entry each; the figure grows with them).
MAX_SOURCES = len(SOURCE_COLORS)


def drawn_sources(histogram) -> list:
    """The ``(label, part)`` of the sources a per-source figure draws: those with documents; a FreqlabError past
    :data:`MAX_SOURCES`.
    """
    series = [(name, part) for name, part in (histogram.sources or {}).items() if part.documents > 0]
    if len(series) > MAX_SOURCES:
        raise FreqlabError(
            f"the histogram has {len(series):,} sources with documents; a per-source figure draws at most "
            f"{MAX_SOURCES} (one curve and legend entry each): merge the smaller ones first "
            "(freqlab.histogram.combine_sources), or list them with freqlab stats"
        )
    return series


#: Named colours used consistently across figures.
COLORS: dict[str, str] = {
    "frequency": "#0072B2",  # f(i), blue as in STRING Fig. 1
    "segments": "#E69F00",  # segment-length bars, orange as in STRING Fig. 1
    "head": "#56B4E9",  # shaded i <= L/2
    "tail": "#D55E00",  # shaded i >= 3L/4, dropped / under-trained positions
    "threshold": "#444444",  # tau and other reference lines
    "peak": "#000000",  # filled ▲; valleys are hollow ▼: distinct from every series colour of the palette
    "valley": "#000000",
}

#: Figure widths in inches: one column and the full text width of a two-column paper.
WIDTHS: dict[str, float] = {"one-column": 3.5, "two-column": 7.2}

#: Export formats accepted by :func:`save_figure`.
FORMATS: tuple[str, ...] = ("png", "pdf", "svg")

DEFAULT_DPI = 200

#: Font size (pt) of notes inside the axes: mass shares, thresholds, matrix values.
NOTE_SIZE = 6.5

#: matplotlib rcParams of every freqlab figure (applied inside each function by :func:`freqlab_style`).
STYLE: dict[str, object] = {
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.frameon": False,
    "legend.handlelength": 1.6,
    "figure.titlesize": 9,
    "text.usetex": False,
    "mathtext.fontset": "dejavusans",
    "axes.prop_cycle": matplotlib.cycler(color=list(PALETTE)),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.linewidth": 0.6,
    "axes.titlepad": 4,
    "axes.labelpad": 2,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "xtick.major.size": 2.5,
    "ytick.major.size": 2.5,
    "xtick.major.pad": 2,
    "ytick.major.pad": 2,
    "lines.linewidth": 1.2,
    "lines.markersize": 4,
    "grid.linewidth": 0.4,
    "grid.alpha": 0.5,
    "figure.dpi": 150,  # on screen and in notebooks; files use savefig.dpi
    "figure.constrained_layout.use": True,
    "figure.constrained_layout.h_pad": 0.02,
    "figure.constrained_layout.w_pad": 0.02,
    "savefig.dpi": DEFAULT_DPI,
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.02,
    "pdf.fonttype": 42,  # embed TrueType, not Type 3
    "ps.fonttype": 42,
    "svg.fonttype": "none",  # text as <text> (DejaVu Sans named): editable in Inkscape/Illustrator
    "svg.hashsalt": "freqlab",  # deterministic element ids
    "image.cmap": "viridis",
}


def plain(text: object) -> str:
    r"""``text`` (a source's name, a stage's, a model's label) drawn as written: matplotlib reads ``$...$`` as math,
    which drew ``price $5 and $6`` as an italic "5and6" and failed on ``$\frac{$``, so each ``$`` is escaped; a
    control or format character (a newline, ESC, BEL, a right-to-left override, a lone surrogate, U+FFFF) is
    written escaped, as the terminal shows it (:func:`freqlab.display.shown_text`): an SVG's XML may hold none of
    them (a review: a source named ``ctrl\x07bell`` wrote an SVG no browser opens), and U+202E reversed the rest of
    its legend entry.

    >>> print(plain("price $5 and $6")), plain("bell\x07"), plain("rtl\u202eab")
    price \$5 and \$6
    (None, 'bell\\x07', 'rtl\\u202eab')
    """
    return shown_text(str(text)).replace("$", r"\$")


@contextmanager
def freqlab_style(**overrides) -> Iterator[None]:
    """Apply the freqlab rc style (plus ``overrides``, rc names with dots as keys) inside a ``with`` block.

    Parameters
    ----------
    **overrides
        rcParams to set as well (rc names with dots as keys, e.g. ``**{'font.size': 9}``).

    Returns
    -------
    contextlib.AbstractContextManager
        The style applied inside the ``with`` block, the previous rcParams after it.

    Examples
    --------
    >>> import matplotlib
    >>> with freqlab_style():
    ...     matplotlib.rcParams["pdf.fonttype"]
    42
    """
    with matplotlib.rc_context({**STYLE, **overrides}):
        yield


def figure_size(size: str | tuple[float, float] = "one-column", *, aspect: float = 0.7) -> tuple[float, float]:
    """(width, height) in inches: a preset width (``one-column`` 3.5 in, ``two-column`` 7.2 in) times
    ``aspect`` for the height, or an explicit ``(width, height)`` tuple passed through.

    Parameters
    ----------
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.
    aspect : float
        Height / width for a preset width.

    Returns
    -------
    tuple of float
        (width, height) in inches.
    """
    if isinstance(size, str):
        if size not in WIDTHS:
            raise FreqlabError(f"unknown figure size {size!r}; choose one of {', '.join(WIDTHS)} or (width, height)")
        width = WIDTHS[size]
        return (width, round(width * aspect, 2))
    try:
        width, height = (float(v) for v in size)
    except (TypeError, ValueError):
        raise FreqlabError(f"figure size must be a preset name or (width, height) in inches, got {size!r}") from None
    if width <= 0 or height <= 0:
        raise FreqlabError(f"figure size must be positive, got {size!r}")
    return (width, height)


class FreqlabFigure(Figure):
    """A :class:`matplotlib.figure.Figure` that shows itself in Jupyter as a PNG, whatever the backend.

    freqlab's figures are made without pyplot (no global state, garbage-collected, headless), so IPython's
    inline backend never registers them: without ``%matplotlib inline`` a plain Figure would show as
    ``<Figure size ... with 6 Axes>``. ``_repr_png_`` renders it in the freqlab style (as saved, at screen dpi).
    """

    def __repr__(self) -> str:
        return super().__repr__().replace(type(self).__name__, "Figure", 1)  # what matplotlib prints for any figure

    def _repr_png_(self) -> bytes:
        import io

        buffer = io.BytesIO()
        with freqlab_style():
            self.savefig(buffer, format="png", dpi=STYLE["figure.dpi"], metadata=_metadata("png"))
        return buffer.getvalue()


def new_figure(size: str | tuple[float, float] = "one-column", *, aspect: float = 0.7, **subplots) -> tuple:
    """A styled figure and its axes: ``plt.subplots`` with the freqlab style and a size preset.

    A :class:`FreqlabFigure` (no pyplot state), so it works headless and figures are garbage-collected; in
    Jupyter it displays itself as the cell result (a PNG), with or without ``%matplotlib inline``.

    Parameters
    ----------
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.
    aspect : float
        Height / width for a preset width.
    **subplots
        Passed to ``plt.subplots`` (``nrows``, ``ncols``, ...).

    Returns
    -------
    tuple
        (figure, axes), as ``plt.subplots`` returns them.
    """
    with freqlab_style():
        fig = FreqlabFigure(figsize=figure_size(size, aspect=aspect), layout="constrained")
        axes = fig.subplots(**subplots)
    return fig, axes


def figure_for(ax: Axes | None, size: str | tuple[float, float] = "one-column", *, aspect: float = 0.7) -> tuple:
    """``(ax.figure, ax)`` to draw into given axes, else a new styled figure of ``size`` and its one axes."""
    return new_figure(size, aspect=aspect) if ax is None else (ax.figure, ax)


def _metadata(fmt: str) -> dict:
    # no creation dates or versions in the files, so regenerated figures are byte-identical
    if fmt == "png":
        return {"Software": None}
    if fmt == "pdf":
        return {"Creator": None, "Producer": None, "CreationDate": None}
    if fmt == "svg":
        return {"Creator": None, "Date": None}
    return {}


def figure_formats(path: str | os.PathLike, formats: Sequence[str] | str | None = None) -> list[str]:
    """The formats :func:`save_figure` writes for ``path`` and ``formats`` (None: the suffix of ``path``), or a
    FreqlabError naming what is unknown: for a command to check its output before the work that makes the figure.

    >>> figure_formats("probe.PDF"), figure_formats("fig", ("png", ".svg"))
    (['pdf'], ['png', 'svg'])
    """
    path = Path(path)
    if formats is None:
        fmt = path.suffix.lstrip(".").lower()
        if not fmt:
            raise FreqlabError(f"{path}: no file suffix; give formats=('png', ...) or a path like fig.png")
        formats = (fmt,)
    if isinstance(formats, str):
        formats = (formats,)
    formats = [f.lower().lstrip(".") for f in formats]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise FreqlabError(f"unknown figure format {unknown[0]!r}; choose from {', '.join(FORMATS)}")
    return formats


def _stream(path: Path) -> bool:
    """Whether ``path`` is a stream (a FIFO, a pipe, a character device such as /dev/stdout's), not a file or folder."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def fit_titles(fig: Figure) -> None:
    """Break each title (the figure's, an axes') that runs past the figure's edges onto more lines, each time at the
    space nearest the middle of its longest line and outside ``$...$`` mathematics: a figure is saved with a tight
    bounding box, so an overflowing title widened the file past its size preset (a review: HARPE's waveforms 3.58
    in wide at one column, 3.5 in). The figure keeps its canvas (a pyplot or notebook window stays its own).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas
    try:
        renderer = FigureCanvasAgg(fig).get_renderer()
        titles = [fig._suptitle, *(title for ax in fig.axes for title in (ax.title, ax._left_title, ax._right_title))]
        titles = [title for title in titles if title is not None and title.get_visible() and title.get_text()]
        for _ in range(3):  # a break, again where one is not enough (at most four lines)
            fig.draw(renderer)  # the layout places the titles
            wide = [title for title in titles if _past_edges(title, renderer, fig)]
            if not wide or not all(_break_line(title) for title in wide):
                break
    finally:
        fig.set_canvas(canvas)


def _past_edges(title, renderer, fig: Figure) -> bool:
    extent = title.get_window_extent(renderer)
    return extent.x0 < 0 or extent.x1 > fig.bbox.width


def _break_line(title) -> bool:
    """Break the longest line of ``title`` at its space nearest the middle outside ``$...$``; False where none is."""
    lines = title.get_text().split("\n")
    k = max(range(len(lines)), key=lambda j: len(lines[j]))
    line, spaces, math = lines[k], [], False
    for at, c in enumerate(line):
        if c == "$" and (at == 0 or line[at - 1] != "\\"):
            math = not math
        elif c == " " and not math:
            spaces.append(at)
    if not spaces:
        return False
    cut = min(spaces, key=lambda at: abs(at - len(line) / 2))
    lines[k : k + 1] = [line[:cut], line[cut + 1 :]]
    title.set_text("\n".join(lines))
    return True


def save_figure(
    fig: Figure,
    path: str | Path,
    formats: Sequence[str] | None = ("png", "pdf", "svg"),
    *,
    dpi: int = DEFAULT_DPI,
) -> list[Path]:
    """Write ``fig`` in each of ``formats`` (png, pdf, svg) next to ``path`` and return the paths written.

    ``path`` may carry a suffix; with ``formats=None`` its suffix is the one format. PDFs embed TrueType
    fonts; dates are left out of the metadata so output is deterministic.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str or Path
        Output path, with or without a suffix.
    formats : sequence of str or None
        Formats to write (png, pdf, svg); None: the suffix of ``path``.
    dpi : int
        Resolution of the PNG.

    Returns
    -------
    list of Path
        The files written.
    """
    path = Path(check_file_name(path))  # a review: figs/ with --format png wrote figs.png
    formats = figure_formats(path, formats)
    stem = path.with_suffix("") if path.suffix.lstrip(".").lower() in FORMATS else path
    # /dev/stdout (a pipe, or the file stdout goes to), a FIFO: written as is (a suffix added made a new file in /dev)
    stream = _stream(path) or writes_stdout(path)
    if stream and len(dict.fromkeys(formats)) > 1:
        raise FreqlabError(f"{path}: a stream takes one figure; give one format")
    written = []
    with freqlab_style():
        fit_titles(fig)
        for fmt in dict.fromkeys(formats):
            # the path as given for its own format (g.PNG stays g.PNG: g.png is another file where case counts)
            own = path.suffix.lstrip(".").lower() == fmt or stream
            target = path if own else stem.with_name(f"{stem.name}.{fmt}")
            options = {"format": fmt, "dpi": dpi, "metadata": _metadata(fmt)}
            if stream:  # drawn in memory first: a figure's writer seeks, a pipe cannot
                drawn = io.BytesIO()
                fig.savefig(drawn, **options)
                write_atomic(target, drawn.getvalue())
            else:  # as every output: whole or not at all, links followed as the kernel follows them (freqlab.files)
                write_atomic(target, writer=lambda tmp, options=options: fig.savefig(tmp, **options))
            written.append(target)
    return written
