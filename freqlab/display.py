"""How freqlab's results show themselves: a short ``repr`` in a terminal, a compact HTML table in a notebook.

Every result class (histograms, scan results, frequencies, plans) builds one :class:`Display` in its ``_display()``
method; :class:`Displayed` turns it into

- ``__repr__``: one to three lines, what the object is and its key numbers, never more than :data:`MAX_REPR`
  characters whatever the data size (arrays are summarised, never printed);
- ``_repr_html_`` (Jupyter calls it): a title, a table of the key numbers and, where a picture says more, a small
  inline SVG drawn here by hand (:func:`svg_chart`; no matplotlib, nothing to load).

Numbers are formatted as the command line prints them: counts with thousands separators, positions with
K = 1024 (:func:`freqlab.sizes.position_label`), token budgets with decimal suffixes (B = 10^9).

>>> d = Display("Thing", "3 parts", rows=[("parts", "3")])
>>> d.text()
'Thing: 3 parts'
>>> "<td>3</td>" in d.html()
True
"""

from __future__ import annotations

import html
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from freqlab.sizes import position_label

#: Upper bound of any repr, in characters.
MAX_REPR = 1000
#: Rows shown in an HTML table before "... N more".
MAX_ROWS = 24
#: Points per drawn line (curves are sampled evenly, ends kept).
MAX_POINTS = 240

# the figures' colours (freqlab.plots.style.PALETTE, Okabe-Ito), repeated here to keep matplotlib out
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
HEAD_SHADE = "#56B4E9"
TAIL_SHADE = "#D55E00"


@dataclass
class Display:
    """What an object shows: ``title`` and a one-line ``headline`` (the repr's first line), ``lines`` (at most two
    more repr lines), ``rows`` (name, value) for the HTML table, optional ``table`` (header, rows) of several
    columns, ``code`` blocks (label, text) shown as is, a ``figure`` (SVG) and a ``details`` paragraph folded away.
    """

    title: str
    headline: str
    lines: Sequence[str] = ()
    rows: Sequence[tuple[str, str]] = ()
    table: tuple[Sequence[str], Sequence[Sequence[str]]] | None = None
    code: Sequence[tuple[str, str]] = ()
    figure: str | None = None
    details: str = ""

    def text(self) -> str:
        """The repr: ``title: headline`` and up to two more lines, each shortened and shown as :func:`shown_text`
        shows it (a name from the data may hold a newline, ESC or a byte that is not UTF-8: a review), the whole
        below MAX_REPR.
        """
        lines = [f"{self.title}: {self.headline}", *list(self.lines)[:2]]  # (NBSP and U+3000 as they are: a review)
        return clip("\n".join(clip(shown_text(line), MAX_REPR // 3) for line in lines), MAX_REPR)

    def html(self) -> str:
        """A ``<div>``: title, headline, key-number table, wide table, code blocks, figure, folded details; every
        text escaped for HTML after :func:`shown_text` (a right-to-left override in a source's name reversed what
        followed it, and a byte that is not UTF-8 made the HTML unencodable: a review).
        """
        from freqlab.paths import printable_lines

        esc = escaped
        parts = [
            '<div class="freqlab-display" style="font-family: sans-serif; font-size: 13px; line-height: 1.35">',
            f"<div><b>{esc(self.title)}</b>: {esc(self.headline)}</div>",
        ]
        body = []
        if self.rows:
            cells = "".join(
                f'<tr><th style="text-align: left; padding-right: 1em">{esc(name)}</th><td>{esc(value)}</td></tr>'
                for name, value in self.rows
            )
            body.append(f"<table>{cells}</table>")
        if self.figure:
            body.append(f'<div style="margin-left: 1.5em">{self.figure}</div>')
        if body:
            flex = '<div style="display: flex; align-items: flex-start; flex-wrap: wrap">'
            parts.append(flex + "".join(body) + "</div>")
        if self.table is not None:
            parts.append(html_table(*self.table))
        for label, text in self.code:
            code = html.escape(printable_lines([text]))  # its own line breaks kept
            parts.append(f"<div>{esc(label)}</div><pre style='margin: 0.2em 0 0.5em 1em'>{code}</pre>")
        if self.details:
            parts.append(f"<details><summary>reasoning</summary><p>{esc(self.details)}</p></details>")
        parts.append("</div>")
        return "\n".join(parts)


class Displayed:
    """Mixin: ``__repr__`` and ``_repr_html_`` from the class's ``_display()`` (a :class:`Display`).

    Dataclasses using it are declared with ``repr=False``, so that the dataclass does not write its own repr.
    """

    def _display(self) -> Display:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __repr__(self) -> str:
        return self._display().text()

    def _repr_html_(self) -> str:
        return self._display().html()


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in "…" when cut.

    >>> clip("abcdef", 4)
    'abc…'
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: The most terminal columns a source's name takes in a table or a legend (a longer one is cut in its middle)
NAME_WIDTH = 40


def shown_text(text: str) -> str:
    r"""``text`` as a table or a figure shows it: on one line, a control, format or separator character (a newline,
    a tab, ESC, a right-to-left override, a zero-width joiner, an unassigned code point) escaped as
    :func:`freqlab.paths.printable` writes it; spaces of any kind (NBSP, the ideographic space) drawn as they are.

    >>> shown_text("a\tb\u202ec"), shown_text("日本語\u3000コーパス")
    ('a\\tb\\u202ec', '日本語\u3000コーパス')
    """
    from freqlab.paths import printable

    return "".join(c if c.isprintable() or unicodedata.category(c) == "Zs" else printable(c) for c in text)


def source_name(name: object, width: int = NAME_WIDTH) -> str:
    r"""A source's name as tables and legends show it: :func:`shown_text`, quoted when blank, and at most ``width``
    terminal columns, cut in the middle (its start and its end kept: ``..._v2`` and ``..._v3`` stay apart), never
    inside an escape (a review: a 500-character name widened a table past the screen and a figure to 32 in).

    >>> source_name("web"), source_name(""), source_name("  "), source_name("x" * 30 + "_v2", 16)
    ('web', "''", "'  '", 'xxxxxxxx…xxxx_v2')
    """
    text = str(name)
    if not text.strip():
        return repr(text)
    pieces = [shown_text(c) for c in text]
    if sum(map(columns, pieces)) <= width:
        return "".join(pieces)
    head, tail, room = [], [], width - 1  # the start gets the larger half
    for k in range(len(pieces)):  # alternate: start, end, start, ... each whole piece while it fits
        side, piece = (head, pieces[len(head)]) if k % 2 == 0 else (tail, pieces[len(pieces) - 1 - len(tail)])
        if columns(piece) > room:
            break
        side.append(piece)
        room -= columns(piece)
    return "".join(head) + "…" + "".join(reversed(tail))


def source_names(names: Sequence[object], width: int = NAME_WIDTH) -> list[str]:
    """:func:`source_name` of each of ``names``; names that would be shown alike (cut, or a quoted blank) are shown
    whole instead, so that every source can still be told apart and named (``--weights``).

    >>> source_names(["a" * 50 + "1", "a" * 50 + "2"], 12)
    ['aaaaaa…aaaa1', 'aaaaaa…aaaa2']
    >>> source_names(["a" * 20 + "x" + "b" * 20, "a" * 20 + "y" + "b" * 20], 12)[0] == "a" * 20 + "x" + "b" * 20
    True
    """
    shown = [source_name(name, width) for name in names]
    seen = Counter(shown)
    return [shown_text(str(name)) if seen[text] > 1 else text for name, text in zip(names, shown, strict=True)]


def name_column(names: Sequence[object], header: str = "source") -> list[str]:
    """A table's column of source names: ``header`` then :func:`source_names`, padded to one width in terminal
    columns (:func:`pad`), so the columns after it line up whatever the names hold.

    >>> name_column(["web", "日本語", ""])
    ['source', 'web   ', '日本語', "''    "]
    """
    shown = source_names(names)
    width = max(columns(header), *map(columns, shown))
    return [pad(text, width) for text in (header, *shown)]


def pad(text: str, width: int) -> str:
    """``text`` left-aligned in ``width`` terminal columns (:func:`columns`): ``f"{text:<{width}}"`` counts
    characters, so the columns after a CJK or combined name slid (a review).

    >>> pad("日本", 6) + "|", len(pad("cafe\u0301", 6))  # 5 characters in 4 columns, then 2 spaces
    ('日本  |', 7)
    """
    return text + " " * max(width - columns(text), 0)


def columns(text: str) -> int:
    """Terminal columns of ``text``: two for an East Asian wide or full-width character, none for a combining mark
    or a zero-width format character, one for any other.
    """
    return sum(
        0 if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf")
        else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )  # fmt: skip


def escaped(text: str) -> str:
    r"""``text`` for HTML: as :func:`shown_text` shows it, then escaped (``<``, ``&``, quotes).

    >>> escaped("a<b\u202ec")
    'a&lt;b\\u202ec'
    """
    return html.escape(shown_text(text))


def html_table(header: Sequence[str], rows: Sequence[Sequence[str]], limit: int = MAX_ROWS) -> str:
    """A compact HTML table (right-aligned numbers), the first ``limit`` rows then "... N more rows"; cells
    :func:`escaped`.
    """
    esc = escaped
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    shown = list(rows)[:limit]
    body = "".join(
        "<tr>" + "".join(f'<td style="text-align: {_align(c)}">{esc(c)}</td>' for c in row) + "</tr>" for row in shown
    )
    more = len(rows) - len(shown)
    foot = f'<tr><td colspan="{len(header)}">… {more:,} more rows</td></tr>' if more > 0 else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}{foot}</tbody></table>"


def _align(cell: str) -> str:
    return "right" if cell[:1].isdigit() or cell[:1] in "-+.≤≥" else "left"


def count(n) -> str:
    """An exact count with thousands separators: 8442997 -> '8,442,997'."""
    return f"{int(n):,}"


def counted(n, noun: str) -> str:
    """``n`` of ``noun``, singular for one: counted(1, "document") -> '1 document', counted(8442997, "token") ->
    '8,442,997 tokens'.
    """
    return f"{count(n)} {noun}{'' if n == 1 else 's'}"


def rough_count(n: int) -> str:
    """A count as :func:`count` writes it, or its magnitude past 10^15, where its digits say nothing more (a
    refused option's 10^298 candidates).

    >>> rough_count(8442997), rough_count(10**298 // 3)
    ('8,442,997', '3.33e+297')
    """
    return f"{int(n):,}" if abs(n) < 10**15 else f"{float(n):.3g}"


def quantity(n: int, noun: str) -> str:
    """``n`` and the noun, plural unless n is 1.

    >>> quantity(1, "head"), quantity(3, "entry"), quantity(1200, "layer")
    ('1 head', '3 entries', '1,200 layers')
    """
    plural = noun if n == 1 else noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
    return f"{int(n):,} {plural}"


def percent(x: float, digits: int = 1) -> str:
    """0.765 -> '76.5%'; a share that rounds to zero is '0.0%', never '-0.0%' (float sums can end a hair below 0).

    >>> percent(0.765), percent(-1e-17)
    ('76.5%', '0.0%')
    """
    value = 100 * x
    return f"{0.0 if abs(value) < 0.5 * 10**-digits else value:.{digits}f}%"


def listed(items: Sequence[str], limit: int = 6) -> str:
    """'a, b, c' with at most ``limit`` items, then '(+N more)'.

    >>> listed([f"p{k}" for k in range(2002)], limit=2)
    'p0, p1 (+2,000 more)'
    """
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit:,} more)" if len(items) > limit else "")


def first_few(items: Sequence[str], limit: int = 3, total: int | None = None) -> str:
    """'a, b, c, ...': at most ``limit`` items, then '...' when there are more (``total`` in all, where ``items``
    are only examples): for a line that says how many elsewhere (:func:`listed` says it itself).

    >>> first_few(["a", "b", "c", "d"]), first_few(["a"], total=1)
    ('a, b, c, ...', 'a')
    """
    total = len(items) if total is None else total
    return ", ".join(items[:limit]) + (", ..." if total > limit else "")


# --- inline SVG -----------------------------------------------------------------------------------------------


@dataclass
class Series:
    """One thing drawn by :func:`svg_chart`: a ``line`` (xs, ys), ``bars`` (xs are the left edges, ``width`` each)
    or ``dots``; ``label`` goes in the legend when there are several series. ``width``: one or one per bar.
    """

    xs: np.ndarray
    ys: np.ndarray
    label: str = ""
    color: str = PALETTE[0]
    kind: str = "line"
    width: float | np.ndarray = 0.0


@dataclass
class Chart:
    """Frame of :func:`svg_chart`: data ranges, tick labels (value -> text) and axis titles; ``shades`` are
    ``(x0, x1, colour)`` bands behind the data; ``log_x`` draws x on a log2 scale.
    """

    x_range: tuple[float, float]
    y_range: tuple[float, float]
    x_ticks: Sequence[tuple[float, str]] = ()
    y_ticks: Sequence[tuple[float, str]] = ()
    x_title: str = ""
    y_title: str = ""
    shades: Sequence[tuple[float, float, str]] = ()
    log_x: bool = False
    notes: Sequence[tuple[float, str, str]] = field(default_factory=tuple)  # (x, text, colour) under the top


WIDTH, HEIGHT = 340, 150
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 8, 30


def svg_chart(chart: Chart, series: Sequence[Series]) -> str:
    """A small SVG chart (340 x 150 px): shaded bands, bars/lines/dots, ticks, axis titles and, for several labelled
    series, a legend. Coordinates are rounded to 0.1 px so the same data give the same text.
    """
    x0, x1 = chart.x_range
    y0, y1 = chart.y_range
    if chart.log_x:
        x0, x1 = np.log2(max(x0, 1e-12)), np.log2(max(x1, 1e-12))
    x_span = (x1 - x0) or 1.0
    y_span = (y1 - y0) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x):
        x = np.log2(np.maximum(np.asarray(x, dtype=np.float64), 1e-12)) if chart.log_x else np.asarray(x, np.float64)
        return LEFT + (x - x0) / x_span * plot_w

    def py(y):
        return TOP + plot_h - (np.asarray(y, dtype=np.float64) - y0) / y_span * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="9">'
    ]
    for a, b, color in chart.shades:
        xa, xb = float(px(a)), float(px(b))
        out.append(
            f'<rect x="{xa:.1f}" y="{TOP}" width="{xb - xa:.1f}" height="{plot_h}" fill="{color}" fill-opacity="0.15"/>'
        )
    for s in series:
        xs, ys = np.asarray(s.xs, dtype=np.float64), np.asarray(s.ys, dtype=np.float64)
        if s.kind == "bars":
            for x, y, w in zip(xs, ys, np.broadcast_to(s.width, xs.shape)):
                if y <= 0:
                    continue
                xa, xb, top = float(px(x)), float(px(x + w)), float(py(y))
                out.append(
                    f'<rect x="{xa:.1f}" y="{top:.1f}" width="{max(xb - xa - 0.5, 0.5):.1f}" '
                    f'height="{TOP + plot_h - top:.1f}" fill="{s.color}" fill-opacity="0.7"/>'
                )
        elif s.kind == "dots":
            for x, y in zip(px(xs), py(ys)):
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.2" fill="{s.color}"/>')
        else:
            keep = sample_indices(xs.size)
            points = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(px(xs[keep]), py(ys[keep])))
            out.append(f'<polyline points="{points}" fill="none" stroke="{s.color}" stroke-width="1.5"/>')
    bottom = TOP + plot_h
    out.append(f'<path d="M{LEFT},{TOP} V{bottom} H{WIDTH - RIGHT}" fill="none" stroke="#444" stroke-width="0.8"/>')
    for value, label in chart.x_ticks:
        x = float(px(value))
        out.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 3}" stroke="#444"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 12}" text-anchor="middle">{html.escape(label)}</text>')
    for value, label in chart.y_ticks:
        y = float(py(value))
        out.append(f'<line x1="{LEFT - 3}" y1="{y:.1f}" x2="{LEFT}" y2="{y:.1f}" stroke="#444"/>')
        out.append(f'<text x="{LEFT - 5}" y="{y + 3:.1f}" text-anchor="end">{html.escape(label)}</text>')
    for x, text, color in chart.notes:
        out.append(
            f'<text x="{float(px(x)):.1f}" y="{TOP + 10}" text-anchor="middle" fill="{color}">'
            f"{html.escape(text)}</text>"
        )
    if chart.x_title:
        out.append(
            f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 3}" text-anchor="middle">'
            f"{html.escape(chart.x_title)}</text>"
        )
    if chart.y_title:
        out.append(
            f'<text transform="translate(9,{TOP + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle">'
            f"{html.escape(chart.y_title)}</text>"
        )
    labelled = [s for s in series if s.label]
    if len(labelled) > 1:
        for k, s in enumerate(labelled[:6]):
            y = TOP + 8 + 11 * k
            out.append(f'<rect x="{WIDTH - RIGHT - 96}" y="{y - 6}" width="8" height="3" fill="{s.color}"/>')
            out.append(f'<text x="{WIDTH - RIGHT - 84}" y="{y}">{html.escape(clip(s.label, 16))}</text>')
    out.append("</svg>")
    return "".join(out)


def sample_indices(n: int, points: int = MAX_POINTS) -> np.ndarray:
    """At most ``points`` indices spread evenly over 0..n-1, both ends included.

    >>> sample_indices(5).tolist(), sample_indices(1000, 5).tolist()
    ([0, 1, 2, 3, 4], [0, 250, 500, 749, 999])
    """
    if n <= points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, points).round().astype(np.int64))


def nice_ticks(top: float, label, count: int = 5) -> list[tuple[float, str]]:
    """Ticks 0, step, 2·step, ... up to ``top`` with a round step (1, 2 or 5 times a power of ten), labelled by
    ``label``.

    >>> [t for t, _ in nice_ticks(8.4e6, str)]
    [0.0, 2000000.0, 4000000.0, 6000000.0, 8000000.0]
    """
    if top <= 0:
        return [(0.0, label(0))]
    raw = top / count
    power = 10 ** int(np.floor(np.log10(raw)))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [(float(k * step), label(k * step)) for k in range(int(top // step) + 1)]


def count_ticks(top: float) -> tuple[list[tuple[float, str]], str]:
    """Ticks of a count axis and the note naming its unit: below a million, numbers written out (a "K" would read as
    1024 next to a position axis); above, decimal M, B or T, which the note states.

    >>> count_ticks(8.4e6)[0][-1], count_ticks(8.4e6)[1], count_ticks(9.4e5)[0][-1]
    ((8000000.0, '8M'), 'M = 10^6', (800000.0, '800,000'))
    """
    for scale, suffix, power in ((1e12, "T", 12), (1e9, "B", 9), (1e6, "M", 6)):
        if top >= scale:
            ticks = nice_ticks(top, lambda y, s=scale, x=suffix: "0" if y == 0 else f"{y / s:g}{x}")
            return ticks, f"{suffix} = 10^{power}"
    return nice_ticks(top, lambda y: f"{y:,.0f}"), ""


def position_ticks(L: int) -> list[tuple[float, str]]:
    """0, L/4, L/2, 3L/4, L labelled with K = 1024 (as the figures' position axes)."""
    return [(k * L / 4, position_label(round(k * L / 4))) for k in range(5)]


def curve_svg(
    y, *, y_name: str = "f(i)", shades: Sequence[tuple[float, float, str]] = (), series: Sequence[Series] = ()
) -> str:
    """A curve over relative positions 0..len(y)-1 (a frequency f, or a schedule's F) with ``shades`` behind it and
    extra ``series`` (dots, other lines) on top; the count axis says its decimal unit, the position axis K = 1024.
    """
    y = np.asarray(y)
    L = int(y.size)
    top = float(y.max()) if y.size else 1.0
    ticks, unit = count_ticks(top)
    chart = Chart(
        (0, L),
        (0, top * 1.15 or 1.0),
        x_ticks=position_ticks(L),
        y_ticks=ticks,
        x_title="relative position i (K = 1024)",
        y_title=f"{y_name} ({unit})" if unit else y_name,
        shades=shades,
    )
    return svg_chart(chart, [Series(np.arange(L), y, color=PALETTE[0]), *series])
