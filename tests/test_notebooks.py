"""The notebooks in notebooks/ are committed executed, with their outputs and inline figures, so a repository page
shows them; re-executed here (offline, on this interpreter, in an empty folder), they print what was committed.

A committed output that no longer matches what the code prints fails the suite: regenerate with
``python scripts/run_notebooks.py``. The comparison (scripts/run_notebooks.py) covers every code cell's text outputs
once timings, rates, memory addresses and temporary paths are normalised, and its figures by number and pixel size.
Notebooks that scan the built-in corpus record which interpreter's standard library they scanned; on another one
their numbers differ and only the execution is checked.
"""

from __future__ import annotations

import copy
import functools

import pytest
from notebook_helpers import run_notebooks

nbformat = pytest.importorskip("nbformat")

NOTEBOOKS = run_notebooks.NOTEBOOKS


@functools.cache
def executed(path):
    """Each notebook runs once per test session: (executed notebook, seconds)."""
    return run_notebooks.execute(path)


def test_there_are_three_notebooks():
    assert [p.name for p in NOTEBOOKS] == [
        "01_position_frequency.ipynb",
        "02_planning_string_self_extend.ipynb",
        "03_harpe_bases.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_executed_with_small_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1)), "run top to bottom once"
    outputs = [o for cell in code for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2, "inline figures"
    assert all(cell.outputs for cell in code[1:]), "every cell after the imports shows something"
    assert path.stat().st_size < 300_000


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_offline_in_seconds(path):
    nb, seconds = executed(path)  # raises on a failing cell, or when a notebook writes into its folder
    assert seconds < 60, f"{path.name} took {seconds:.0f} s"
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_prints_what_was_committed(path):
    committed = nbformat.read(path, as_version=4)
    if not run_notebooks.built_with_this_corpus(committed):
        pytest.skip(f"{path.name} was executed with {committed.metadata['freqlab']['builtin_corpus']}'s built-in "
                    f"corpus; this interpreter has {run_notebooks.builtin_corpus_identity()}")
    nb, _ = executed(path)
    found = run_notebooks.differences(committed, nb)
    assert not found, "\n".join(found) + "\nregenerate with: python scripts/run_notebooks.py"


def test_a_changed_number_is_caught_and_volatile_text_is_not():
    committed = nbformat.read(NOTEBOOKS[0], as_version=4)
    changed = copy.deepcopy(committed)
    cell = next(c for c in changed.cells if c.cell_type == "code" and any(o.get("name") == "stdout" for o in c.outputs))
    stream = next(o for o in cell.outputs if o.get("name") == "stdout")
    stream.text = stream.text.replace("76.8%", "76.9%", 1)
    assert stream.text != next(o for o in committed.cells[changed.cells.index(cell)].outputs
                               if o.get("name") == "stdout").text
    assert run_notebooks.differences(committed, changed)
    assert run_notebooks.normalise("took 1.8 s, 4.6M tokens/s") == run_notebooks.normalise("took 2.3 s, 9M tokens/s")
    assert run_notebooks.differences(committed, copy.deepcopy(committed)) == []
