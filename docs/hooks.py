"""MkDocs hook: the top-level page's table of names, generated from ``freqlab._EXPORTS`` so that it cannot drift."""

from __future__ import annotations

from typing import Any

MARKER = "<!-- top-level names -->"


def top_level_table() -> str:
    """A Markdown table: each name of ``import freqlab``, linked to its entry in the reference, and its module."""
    import freqlab

    exports = sorted(freqlab._EXPORTS.items())
    rows = [f"| [`freqlab.{name}`][{module}.{name}] | `{module}` |" for name, module in exports]
    return "\n".join(["| name | documented in |", "| --- | --- |", *rows])


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Replace the marker (only the top-level page has it) with :func:`top_level_table`."""
    return markdown.replace(MARKER, top_level_table()) if MARKER in markdown else markdown
