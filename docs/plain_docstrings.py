"""Griffe extension for the API reference: freqlab's docstrings are plain text (numpy style), not Markdown.

Four things would render wrongly as Markdown, and this extension rewrites them before mkdocstrings renders:

- a doctest block (``>>>`` lines and their output) outside an Examples section would become nested quotes:
  it becomes a ``pycon`` code block, so every example the tests run is shown as code;
- Sphinx roles (``:func:`name```, ``:mod:``, ``:class:``, ...) become plain code spans;
- References entries (``.. [1] ...``) become paragraphs ``[1] ...`` and citations ``[1]_`` become ``[1]``;
- ``P[m][n]`` or ``[a] [b]`` outside code spans would be read as Markdown links: the brackets are escaped.

Loaded by ``mkdocs.yml`` (``extensions: [docs/plain_docstrings.py]``); it changes only what the site shows.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|meth|class|mod|data|attr|obj|exc|const):`~?([^`]+)`")
PARAMETER = re.compile(r"^\*{0,2}\w+(, \*{0,2}\w+)* : ")
CITATION = re.compile(r"^(\s*)\.\. \[(\w+)\] ")  # a numpy References entry
REFERENCE = re.compile(r"\[(\w+)\]_")  # a citation of one in the text: "Eq. 2 [1]_"
CODE_SPAN = re.compile(r"(``[^`]+``|`[^`]+`)")


def _escape_links(text: str) -> str:
    """``[`` outside code spans escaped, so Markdown sees no link (numpy's ``name : type`` lines keep theirs)."""
    if PARAMETER.match(text):
        return text
    parts = CODE_SPAN.split(ROLE.sub(r"``\1``", text))
    return "".join(part if k % 2 else part.replace("[", "\\[") for k, part in enumerate(parts))


def markdown_docstring(text: str) -> str:
    """A plain-text docstring as Markdown: doctest blocks fenced as ``pycon``, roles as code, citations plain,
    brackets escaped (``tests/test_docs.py`` shows each case).
    """
    lines, out, k = text.splitlines(), [], 0
    fenced = literal = False
    while k < len(lines):
        line = lines[k]
        stripped = line.lstrip()
        if stripped.startswith("```"):
            fenced = not fenced
        # an indented literal block (four spaces past a blank line) is code already: left as it is
        literal = (literal and (not stripped or line.startswith("    "))) or (
            line.startswith("    ") and bool(out) and not out[-1].strip()
        )
        if fenced or literal or stripped.startswith("```"):
            out.append(line)
            k += 1
            continue
        if stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}```pycon")
            while k < len(lines) and lines[k].strip():
                out.append(lines[k])
                k += 1
            out.append(f"{indent}```")
            continue
        citation = CITATION.match(line)
        if citation:  # ".. [1] Title": a paragraph of its own, "[1] Title"
            if out and out[-1].strip():
                out.append("")
            line = f"{citation.group(1)}[{citation.group(2)}] {line[citation.end() :]}"
        out.append(_escape_links(REFERENCE.sub(r"[\1]", line)))
        k += 1
    return "\n".join(out)


def comment_docstring(lines: list[str], lineno: int) -> str | None:
    """The comment that documents the assignment on line ``lineno`` (1-based) of ``lines``, as text.

    Sphinx's ``#:`` lines above it, else a block of ``#`` lines right above it, else its own trailing comment.
    """
    above = []
    for line in reversed(lines[: lineno - 1]):
        if not line.lstrip().startswith("#"):
            break
        above.insert(0, line.strip())
    marked = [line[2:].strip() for line in above if line.startswith("#:")]
    if marked or above:
        return "\n".join(marked or [line.lstrip("#").strip() for line in above])
    _code, _, trailing = lines[lineno - 1].partition("  # ")
    return trailing.strip() or None


class PlainDocstrings(griffe.Extension):
    """Rewrites every docstring with :func:`markdown_docstring` as griffe loads it; constants documented by a
    comment (``#:`` or ``#``) get that comment as their docstring.
    """

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring, if it has one."""
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)

    def on_attribute_instance(self, *, attr: griffe.Attribute, **kwargs: Any) -> None:
        """Give a module-level constant without a docstring the comment that documents it."""
        if attr.docstring is None and attr.lineno and attr.parent is not None and attr.parent.is_module:
            text = comment_docstring(attr.lines_collection[attr.filepath], attr.lineno)
            if text:
                attr.docstring = griffe.Docstring(markdown_docstring(text), lineno=attr.lineno, parent=attr)
