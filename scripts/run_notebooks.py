"""Execute the notebooks in ``notebooks/`` and save them with their outputs, or check that they still print those.

    python scripts/run_notebooks.py            # execute every notebook, save it in place with its outputs
    python scripts/run_notebooks.py --check    # execute into memory, compare with the committed outputs
    python scripts/run_notebooks.py 01_position_frequency --check

A notebook runs on this interpreter (a kernelspec for ``sys.executable`` in a temporary folder: the ``python3``
spec ipykernel installs may point at another environment) in an empty temporary working folder, which must stay
empty. The committed outputs are small and deterministic: ``--check`` compares every code cell's text outputs
(stdout, and the text/plain and text/html of results and displays) after :func:`normalise` removes what changes
from run to run (timings, rates, memory addresses, temporary paths), and its figures by number and pixel size
(the PNG bytes depend on the matplotlib build). The notebooks that scan the built-in corpus (the Python standard
library of the interpreter) record which one in their metadata; on another interpreter their numbers differ, and
:func:`built_with_this_corpus` says so.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import struct
import sys
import tempfile
import time
from base64 import b64decode
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
    (re.compile(r"\b0x[0-9a-f]{6,}\b"), "0x<address>"),
    (re.compile(r"(?:/tmp|/var/folders)/[^\s'\"<>]+"), "<tmp>"),
]


def normalise(text: str) -> str:
    """``text`` with timings, rates, memory addresses and temporary paths replaced by placeholders.

    >>> normalise("time 1.8 s, 4.66M tokens/s at 0x7f3a2b1c4d50 in /tmp/tmpab12/fig.png")
    'time <seconds> s, <rate> at 0x<address> in <tmp>'
    """
    for pattern, placeholder in VOLATILE:
        text = pattern.sub(placeholder, text)
    return text


def png_size(data: str) -> tuple[int, int]:
    """(width, height) in pixels of a base64 PNG, from its IHDR chunk."""
    raw = b64decode(data)
    return struct.unpack(">II", raw[16:24])


def shown(cell) -> dict:
    """What a code cell shows: its normalised texts and the pixel sizes of its figures."""
    texts, figures = [], []
    for output in cell.get("outputs", []):
        kind = output["output_type"]
        if kind == "stream" and output["name"] == "stdout":
            texts.append(normalise(output["text"]))
        elif kind in ("execute_result", "display_data"):
            data = output["data"]
            texts += [normalise(_joined(data[t])) for t in TEXT_TYPES if t in data]
            if "image/png" in data:
                figures.append(png_size(_joined(data["image/png"])))
        elif kind == "error":
            texts.append(f"error: {output['ename']}: {output['evalue']}")
    return {"texts": texts, "figures": figures}


def _joined(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def builtin_corpus_identity() -> dict:
    """Which built-in corpus this interpreter has: its Python and its number of files."""
    from freqlab.corpus.builtin import builtin_corpus

    description = builtin_corpus().description
    return {"python": description["python"], "files": description["files"]}


def built_with_this_corpus(nb) -> bool:
    """False when the notebook's outputs come from another interpreter's built-in corpus than this one's."""
    recorded = nb.metadata.get("freqlab", {}).get("builtin_corpus")
    return recorded is None or recorded == builtin_corpus_identity()


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
            nb, km=manager, timeout=timeout, kernel_name=KERNEL, resources={"metadata": {"path": workdir}}
        )
        started = time.perf_counter()
        client.execute()
        seconds = time.perf_counter() - started
        left = sorted(p.name for p in Path(workdir).iterdir())
        if left:
            raise RuntimeError(f"{path.name} wrote into its working folder: {', '.join(left)}")
    if kernelspec is not None:
        nb.metadata["kernelspec"] = kernelspec  # the committed notebook names the usual kernel, not ours
    if _uses_builtin_corpus(nb):
        nb.metadata.setdefault("freqlab", {})["builtin_corpus"] = builtin_corpus_identity()
    return nb, seconds


def _uses_builtin_corpus(nb) -> bool:
    return any("scan(" in cell.source for cell in nb.cells if cell.cell_type == "code")


def differences(committed, executed, tolerance: float = 0.03) -> list[str]:
    """Where the executed notebook shows something else than the committed one (empty: they agree)."""
    found = []
    cells = [(a, b) for a, b in zip(committed.cells, executed.cells) if a.cell_type == "code"]
    if len(committed.cells) != len(executed.cells):
        found.append(f"{len(committed.cells)} cells committed, {len(executed.cells)} executed")
    for number, (old, new) in enumerate(cells, start=1):
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


def _excerpt(shown_cell: dict, limit: int = 1500) -> str:
    text = "\n".join(shown_cell["texts"])
    return text if len(text) <= limit else text[:limit] + " ..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="notebooks to run (file stems; default: all)")
    parser.add_argument("--check", action="store_true", help="compare with the committed outputs, save nothing")
    args = parser.parse_args(argv)
    chosen = [p for p in NOTEBOOKS if not args.names or p.stem in args.names]
    failed = False
    for path in chosen:
        executed, seconds = execute(path)
        if args.check:
            committed = nbformat.read(path, as_version=4)
            if not built_with_this_corpus(committed):
                print(f"{path.name}: ran in {seconds:.1f} s; outputs made with another built-in corpus, not compared")
                continue
            found = differences(committed, executed)
            failed |= bool(found)
            print(f"{path.name}: ran in {seconds:.1f} s; " + ("outputs as committed" if not found else "DIFFERS"))
            for item in found:
                print(item)
        else:
            nbformat.write(executed, path)
            python = f"{platform.python_implementation()} {platform.python_version()}"
            print(f"{path.name}: ran in {seconds:.1f} s ({python})")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
