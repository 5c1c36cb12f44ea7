"""The notebooks in notebooks/ are committed executed, with their outputs and inline figures, so a repository page
shows them; re-executed here (offline, on this interpreter, in an empty folder), they print what was committed.

A committed output that no longer matches what the code prints fails the suite: regenerate with
``python scripts/run_notebooks.py``. The comparison (scripts/run_notebooks.py) covers every code cell's text outputs
once timings, rates, worker counts, memory addresses and temporary paths are normalised, DataFrames by the values in
their cells, and its figures by number and pixel size. The cells that show a scan of the built-in corpus (this
interpreter's standard library) are compared only on the installation the notebook was executed with (its metadata
records which); every other cell, the closed forms and the papers' values among them, is compared everywhere.
"""

from __future__ import annotations

import copy
import doctest
import functools

import pytest
from notebook_helpers import run_notebooks

nbformat = pytest.importorskip("nbformat")

NOTEBOOKS = run_notebooks.NOTEBOOKS
BY_NAME = {path.stem[:2]: path for path in NOTEBOOKS}


@functools.cache
def executed(path):
    """Each notebook runs once per test session: (executed notebook, seconds)."""
    return run_notebooks.execute(path)


def committed(key: str):
    return nbformat.read(BY_NAME[key], as_version=4)


def stdout_of(nb, fragment: str) -> tuple[int, str]:
    """(cell index, printed text) of the code cell whose source contains ``fragment``."""
    index = next(k for k, c in enumerate(nb.cells) if c.cell_type == "code" and fragment in c.source)
    return index, "".join(o.text for o in nb.cells[index].outputs if o.get("name") == "stdout")


def test_there_are_four_notebooks():
    assert [p.name for p in NOTEBOOKS] == [
        "01_position_frequency.ipynb",
        "02_planning_string_self_extend.ipynb",
        "03_harpe_bases.ipynb",
        "04_training_recipes.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_executed_with_small_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1)), "run top to bottom once"
    assert not [cell for cell in code if "execution" in cell.metadata], "no timestamps saved"
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
    saved = nbformat.read(path, as_version=4)
    same = run_notebooks.built_with_this_corpus(saved)
    nb, _ = executed(path)
    found = run_notebooks.differences(saved, nb, same_corpus=same)
    where = "" if same else " (cells scanning another installation's standard library left out)"
    assert not found, "\n".join(found) + f"{where}\nregenerate with: python scripts/run_notebooks.py"
    assert run_notebooks.compared_cells(saved, same) >= 3


def test_the_scan_cells_are_the_ones_compared_only_on_the_same_corpus():
    first, second, third = committed("01"), committed("02"), committed("03")
    assert run_notebooks.corpus_cells(third) == set() and "freqlab" not in third.metadata
    for nb in (first, second):
        recorded = nb.metadata["freqlab"]["builtin_corpus"]
        assert set(recorded) == {"python", "files", "bytes", "digest"} and recorded["python"].startswith("CPython 3.")
        cells = run_notebooks.corpus_cells(nb)
        scans = {k for k, c in enumerate(nb.cells) if c.cell_type == "code" and "scan(" in c.source}
        assert scans and scans <= cells
    # what reads the scanned histogram depends on it; closed forms and the papers' settings do not
    assert stdout_of(first, "h.length_statistics(")[0] in run_notebooks.corpus_cells(first)
    assert stdout_of(first, "from_lengths([2048] * 1000)")[0] not in run_notebooks.corpus_cells(first)
    assert stdout_of(second, "string_position_matrix(9, 3, 0)")[0] not in run_notebooks.corpus_cells(second)


def test_the_cells_compared_everywhere_show_the_papers_values():
    # STRING Fig. 1b/1c closed forms at L = 2048 (reference.md): rows of L tokens 75.04% / 6.26%, lengths uniform
    # on 1..L 87.52% / 1.57%
    _, closed = stdout_of(committed("01"), "from_lengths([2048] * 1000)")
    assert closed == (
        "rows of L tokens: 75.04% at i ≤ 1024, 6.26% at i ≥ 1536\n"
        "lengths uniform on 1..L: 87.52% at i ≤ 1024, 1.57% at i ≥ 1536\n"
    )
    second = committed("02")
    # STRING Fig. 5 (L = 9, S = 3, W = 0) last row, and App. A.1 (Llama 3.1, 128K, S = 42K, W = 128): 88191 first
    assert stdout_of(second, "string_position_matrix(9, 3, 0)")[1].splitlines() == [
        "[5, 4, 3, 2, 1, 0, 2, 1, 0]",
        "88191",
    ]
    index, _ = stdout_of(second, "freqlab.plan_string(131072)")
    default = second.cells[index].outputs[0].data["text/plain"]
    assert "S = 43712 (S/L = 0.333), W = 128" in default  # Sec. 4.1: S = L/3 (up to a multiple of 64), W = 128
    index, _ = stdout_of(second, "plan_rope_scaling(4096, 16384, 'yarn')")
    assert '"factor": 4.0' in second.cells[index].outputs[0].data["text/plain"]
    third = committed("03")
    waveform = stdout_of(third, "DistanceGrid.for_target(131072)")[1].splitlines()
    assert waveform[-1] == "128.0"  # w_b(0)^2 = d
    buckets = stdout_of(third, "attention_buckets_search()")[1]
    assert "[10000, 17500, 18000, 19000, 20000, 25000]" in buckets  # Attention Buckets' published list


def test_a_changed_number_is_caught_wherever_it_is_compared():
    saved = committed("01")
    closed, _ = stdout_of(saved, "from_lengths([2048] * 1000)")
    summary, _ = stdout_of(saved, "h.length_statistics(")
    for index, old, new in ((closed, "75.04%", "75.05%"), (summary, "76.8%", "76.9%")):
        changed = copy.deepcopy(saved)
        stream = next(o for o in changed.cells[index].outputs if o.get("name") == "stdout")
        assert old in stream.text
        stream.text = stream.text.replace(old, new, 1)
        assert run_notebooks.differences(saved, changed)
        # another installation's standard library: the scan's numbers are not compared, the closed form still is
        assert bool(run_notebooks.differences(saved, changed, same_corpus=False)) == (index == closed)
    assert run_notebooks.differences(saved, copy.deepcopy(saved)) == []
    assert run_notebooks.unchanged(saved, copy.deepcopy(saved))


def test_timings_rates_and_worker_counts_are_normalised_away():
    normalise = run_notebooks.normalise
    one, other = "took 1.8 s, 4.6M tokens/s (local, 2 workers)", "took 2.3 s, 9M tokens/s (local, 1 worker)"
    assert normalise(one) == normalise(other)
    assert normalise("76.8% at i ≤ 1024") == "76.8% at i ≤ 1024"
    assert doctest.testmod(run_notebooks).failed == 0  # normalise, corpus_cells


def test_dataframes_are_compared_by_their_values_not_their_rendering():
    saved = committed("03")
    index = next(k for k, c in enumerate(saved.cells) if c.cell_type == "code" and "pl.DataFrame(" in c.source)

    def edited(old: str, new: str):
        nb = copy.deepcopy(saved)
        data = nb.cells[index].outputs[0].data
        assert f">{old}<" in data["text/html"]
        data["text/html"] = data["text/html"].replace(f">{old}<", f">{new}<", 1).replace("white-space", "x-space")
        data["text/plain"] = "another polars version draws its box otherwise"
        return nb

    assert run_notebooks.differences(saved, edited("2.68", "2.680")) == []  # another float format, other styles
    assert run_notebooks.differences(saved, edited("2.68", "2.69"))  # another value
