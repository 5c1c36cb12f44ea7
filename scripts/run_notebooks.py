"""Execute the notebooks in ``notebooks/`` and save them with their outputs, or check that they still print those.

    python scripts/run_notebooks.py            # execute every notebook, save it in place with its outputs
    python scripts/run_notebooks.py --check    # execute into memory, compare with the committed outputs
    python scripts/run_notebooks.py 01_position_frequency --check

A notebook runs on this interpreter (a kernelspec for ``sys.executable`` in a temporary folder: the ``python3``
spec ipykernel installs may point at another environment) in an empty temporary working folder, which must stay
empty. The committed outputs are small and deterministic: ``--check`` compares every code cell's text outputs
(stdout, and the text/plain and text/html of results and displays) after :func:`normalise` removes what changes
from run to run (timings, rates, worker counts, memory addresses, temporary paths), DataFrames by the values in
their cells (:func:`dataframe_cells`: their rendering changes with the polars version), and its figures by number
and pixel size (the PNG bytes depend on the matplotlib and FreeType builds).

The built-in corpus is the Python standard library of the interpreter, so what a scan of it prints differs from one
Python installation to another. A notebook that scans it records which one in its metadata
(:func:`builtin_corpus_identity`: Python version, number of files, bytes and a digest of their names and sizes);
:func:`corpus_cells` finds the cells whose outputs come from the scan (they call ``scan(`` or use a name a corpus
cell assigned). On another installation those cells are executed but not compared; every other cell (closed forms,
the papers' values) is compared everywhere.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import platform
import re
import struct
import sys
import tempfile
import time
from base64 import b64decode
from html.parser import HTMLParser
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL = "freqlab-notebooks-python"
TEXT_TYPES = ("text/plain", "text/html")

# what changes from one run to the next, and what it becomes before a comparison
VOLATILE = [
    (re.compile(r"\b\d+(?:\.\d+)?[KMBT]? (?:docs|tokens|B)/s\b"), "<rate>"),
    (re.compile(r"\b\d+(?:\.\d+)? s\b"), "<seconds> s"),
    (re.compile(r"\b\d+ workers?\b"), "<n> workers"),  # a scan's default: one worker per core
    (re.compile(r"\b0x[0-9a-f]{6,}\b"), "0x<address>"),
    (re.compile(r"(?:/tmp|/var/folders)/[^\s'\"<>]+"), "<tmp>"),
]


def normalise(text: str) -> str:
    """``text`` with timings, rates, memory addresses and temporary paths replaced by placeholders.

    >>> normalise("time 1.8 s, 4.66M tokens/s (local, 2 workers) at 0x7f3a2b1c4d50 in /tmp/tmpab12/fig.png")
    'time <seconds> s, <rate> (local, <n> workers) at 0x<address> in <tmp>'
    """
    for pattern, placeholder in VOLATILE:
        text = pattern.sub(placeholder, text)
    return text


def png_size(data: str) -> tuple[int, int]:
    """(width, height) in pixels of a base64 PNG, from its IHDR chunk."""
    raw = b64decode(data)
    return struct.unpack(">II", raw[16:24])


class _Cells(HTMLParser):
    """The header and data cells of an HTML table, row by row."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append(_cell_value("".join(self._cell)))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _cell_value(text: str) -> str:
    text = text.strip().strip('"')
    for number in (int, float):  # 2.68 and 2.680 alike, whatever the library's float format; integers exact
        try:
            return repr(number(text))
        except ValueError:
            pass
    return text


def dataframe_cells(html: str) -> str:
    """A polars (or pandas) DataFrame's HTML as its cells only: their rendering (styles, quoting, float digits, the
    box-drawn text/plain) changes between library versions, the values do not.

    >>> dataframe_cells('<table><tr><th>set</th><th>n</th><th>x</th></tr><tr><td>&quot;a&quot;</td><td>7</td>'
    ...                 '<td>2.680</td></tr></table>')
    "table [['set', 'n', 'x'], ['a', '7', '2.68']]"
    """
    return f"table {_Cells(html).rows}"


def shown(cell) -> dict:
    """What a code cell shows: its normalised texts, DataFrames by their cells, and the pixel sizes of its figures."""
    texts, figures = [], []
    for output in cell.get("outputs", []):
        kind = output["output_type"]
        if kind == "stream" and output["name"] == "stdout":
            texts.append(normalise(output["text"]))
        elif kind in ("execute_result", "display_data"):
            data = output["data"]
            html = _joined(data.get("text/html", ""))
            if 'class="dataframe"' in html:
                texts.append(dataframe_cells(html))
            else:
                texts += [normalise(_joined(data[t])) for t in TEXT_TYPES if t in data]
            if "image/png" in data:
                figures.append(png_size(_joined(data["image/png"])))
        elif kind == "error":
            texts.append(f"error: {output['ename']}: {output['evalue']}")
    return {"texts": texts, "figures": figures}


def _joined(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def builtin_corpus_identity() -> dict:
    """Which built-in corpus this interpreter has: its Python, its number of files and bytes, and a digest of the
    files' names and sizes (two installations of one Python version can differ: Debian splits out the tests)."""
    import sysconfig

    from freqlab.corpus.builtin import stdlib_files

    root = sysconfig.get_paths()["stdlib"]
    files = stdlib_files(root)
    sizes = [os.stat(os.path.join(root, name)).st_size for name in files]
    digest = hashlib.sha256("\n".join(f"{n}\t{s}" for n, s in zip(files, sizes)).encode()).hexdigest()[:16]
    python = f"{platform.python_implementation()} {platform.python_version()}"
    return {"python": python, "files": len(files), "bytes": sum(sizes), "digest": digest}


def built_with_this_corpus(nb) -> bool:
    """False when the notebook's outputs come from another interpreter's built-in corpus than this one's."""
    recorded = nb.metadata.get("freqlab", {}).get("builtin_corpus")
    return recorded is None or recorded == builtin_corpus_identity()


def corpus_cells(nb) -> set[int]:
    r"""Indices (in ``nb.cells``) of the code cells whose outputs depend on the built-in corpus: those that call
    ``scan(...)`` and, in order, those that read a name such a cell assigned (which then depends on it too).

    >>> cells = [nbformat.v4.new_code_cell(src) for src in
    ...          ("from freqlab.scan import scan", "h = scan().histogram", "f = h.frequency(2048)\nf",
    ...           "g = freqlab.plan_string(4096)", "print(g.S)")]
    >>> sorted(corpus_cells(nbformat.v4.new_notebook(cells=cells)))
    [1, 2]
    """
    tainted: set[str] = set()
    found = set()
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        tree = ast.parse(source)
        calls = any(
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "scan"
            for node in ast.walk(tree)
        )
        loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if calls or loads & tainted:
            found.add(index)
            tainted |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return found


def execute(path: Path, timeout: int = 180) -> tuple[nbformat.NotebookNode, float]:
    """Run a notebook top to bottom on this interpreter in an empty temporary folder; (notebook, seconds)."""
    nb = nbformat.read(path, as_version=4)
    kernelspec = nb.metadata.get("kernelspec")
    with tempfile.TemporaryDirectory() as kernels, tempfile.TemporaryDirectory() as workdir:
        spec = Path(kernels) / KERNEL
        spec.mkdir()
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"}))
        manager = KernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[kernels]))
        client = NotebookClient(
            nb,
            km=manager,
            timeout=timeout,
            kernel_name=KERNEL,
            resources={"metadata": {"path": workdir}},
            record_timing=False,  # no timestamps in the saved cells: a re-run changes only what it shows
        )
        started = time.perf_counter()
        client.execute()
        seconds = time.perf_counter() - started
        for cell in nb.cells:
            cell.metadata.pop("execution", None)  # timestamps of an earlier run with timing recorded
        left = sorted(p.name for p in Path(workdir).iterdir())
        if left:
            raise RuntimeError(f"{path.name} wrote into its working folder: {', '.join(left)}")
    if kernelspec is not None:
        nb.metadata["kernelspec"] = kernelspec  # the committed notebook names the usual kernel, not ours
    if corpus_cells(nb):
        nb.metadata.setdefault("freqlab", {})["builtin_corpus"] = builtin_corpus_identity()
    return nb, seconds


def differences(committed, executed, *, same_corpus: bool = True, tolerance: float = 0.03) -> list[str]:
    """Where the executed notebook shows something else than the committed one (empty: they agree). With
    ``same_corpus`` False, the cells of :func:`corpus_cells` are left out (another interpreter's standard library)."""
    found = []
    if len(committed.cells) != len(executed.cells):
        found.append(f"{len(committed.cells)} cells committed, {len(executed.cells)} executed")
    skipped = set() if same_corpus else corpus_cells(committed)
    number = 0
    for index, (old, new) in enumerate(zip(committed.cells, executed.cells)):
        if old.cell_type != "code":
            continue
        number += 1
        if index in skipped:
            continue
        before, after = shown(old), shown(new)
        if before["texts"] != after["texts"]:
            found.append(
                f"code cell {number}: text differs\n--- committed\n{_excerpt(before)}\n--- now\n{_excerpt(after)}"
            )
        if len(before["figures"]) != len(after["figures"]):
            found.append(f"code cell {number}: {len(before['figures'])} figures committed, {len(after['figures'])} now")
        for (w0, h0), (w1, h1) in zip(before["figures"], after["figures"]):
            if abs(w1 - w0) > tolerance * w0 or abs(h1 - h0) > tolerance * h0:
                found.append(f"code cell {number}: a figure of {w0}x{h0} px is now {w1}x{h1} px")
    return found


def compared_cells(nb, same_corpus: bool) -> int:
    """How many code cells :func:`differences` compares."""
    code = sum(cell.cell_type == "code" for cell in nb.cells)
    return code if same_corpus else code - len(corpus_cells(nb))


def unchanged(committed, executed) -> bool:
    """True when saving ``executed`` would only change timings and PNG bytes: same cells, run in the same order,
    showing the same things on the same corpus (then the committed file is kept, and its diff stays empty)."""
    same_run = [c.get("execution_count") for c in committed.cells] == [c.get("execution_count") for c in executed.cells]
    same_sources = [(c.source, c.metadata) for c in committed.cells] == [(c.source, c.metadata) for c in executed.cells]
    return (
        same_run
        and same_sources
        and committed.metadata.get("freqlab") == executed.metadata.get("freqlab")
        and not differences(committed, executed)
    )


def _excerpt(shown_cell: dict, limit: int = 1500) -> str:
    text = "\n".join(shown_cell["texts"])
    return text if len(text) <= limit else text[:limit] + " ..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="notebooks to run (file stems; default: all)")
    parser.add_argument("--check", action="store_true", help="compare with the committed outputs, save nothing")
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="save even when the outputs compare equal (after a figure style change: new PNGs)",
    )
    args = parser.parse_args(argv)
    chosen = [p for p in NOTEBOOKS if not args.names or p.stem in args.names]
    failed = False
    for path in chosen:
        executed, seconds = execute(path)
        if args.check:
            committed = nbformat.read(path, as_version=4)
            same = built_with_this_corpus(committed)
            found = differences(committed, executed, same_corpus=same)
            failed |= bool(found)
            compared = f"{compared_cells(committed, same)} code cells compared"
            if not same:
                compared += f" (the {len(corpus_cells(committed))} that scan another built-in corpus left out)"
            verdict = "outputs as committed" if not found else "DIFFERS"
            print(f"{path.name}: ran in {seconds:.1f} s; {compared}: {verdict}")
            for item in found:
                print(item)
        else:
            python = f"{platform.python_implementation()} {platform.python_version()}"
            if not args.refresh and unchanged(nbformat.read(path, as_version=4), executed):
                print(f"{path.name}: ran in {seconds:.1f} s ({python}); shows what was committed, file kept")
                continue
            nbformat.write(executed, path)
            print(f"{path.name}: ran in {seconds:.1f} s ({python}); saved with its outputs")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
