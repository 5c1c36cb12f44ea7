"""Reading what a result shows in a notebook: its ``_repr_html_`` parsed with the standard library's HTMLParser."""

from __future__ import annotations

from html.parser import HTMLParser


class Shown(HTMLParser):
    """The parts of a :class:`freqlab.display.Display` HTML: ``rows`` (header cell -> value) of the key-number
    table, ``tables`` (lists of rows of cell texts), ``code`` blocks, ``svgs`` (count) and all ``text``."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: dict[str, str] = {}
        self.tables: list[list[list[str]]] = []
        self.code: list[str] = []
        self.svgs = 0
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._row: list[tuple[str, str]] = []
        self._in_pre = False
        self._in_svg = 0
        self._depth = 0
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        if tag == "svg":
            self.svgs += 1
            self._in_svg += 1
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "pre":
            self._in_pre = True
            self.code.append("")

    def handle_endtag(self, tag):
        if tag == "svg":
            self._in_svg -= 1
        elif tag in ("td", "th") and self._cell is not None:
            self._row.append((tag, "".join(self._cell).strip()))
            self._cell = None
        elif tag == "tr":
            cells = [text for _, text in self._row]
            if self.tables:
                self.tables[-1].append(cells)
            if [kind for kind, _ in self._row] == ["th", "td"]:
                self.rows[cells[0]] = cells[1]
        elif tag == "pre":
            self._in_pre = False

    def handle_data(self, data):
        if self._in_svg:
            return
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._in_pre:
            self.code[-1] += data


def shown(obj) -> Shown:
    """Parse ``obj._repr_html_()``, checking the repr rules on the way: one to three lines, under 1 KB."""
    text = repr(obj)
    assert 1 <= len(text.splitlines()) <= 3 and len(text) <= 1000, text
    return Shown(obj._repr_html_())
