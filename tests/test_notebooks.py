"""Every notebook in notebooks/ runs top to bottom, offline, on this interpreter, and is saved without outputs.

The kernel is this test run's own Python (``sys.executable``), through a kernelspec written to a temporary
folder: the ``python3`` spec that ipykernel installs says just ``python``, which on a machine with several
environments may not be the one freqlab is installed in.
"""

import json
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is part of the test extra")
nbclient = pytest.importorskip("nbclient", reason="nbclient is part of the test extra")
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
KERNEL = "freqlab-test-python"


@pytest.fixture(scope="module")
def kernel_specs(tmp_path_factory) -> KernelSpecManager:
    folder = tmp_path_factory.mktemp("kernels")
    spec = folder / KERNEL
    spec.mkdir()
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"}))
    return KernelSpecManager(kernel_dirs=[str(folder)])


def test_there_are_three_notebooks():
    assert [p.name for p in NOTEBOOKS] == [
        "01_position_frequency.ipynb",
        "02_planning_string_self_extend.ipynb",
        "03_harpe_bases.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_saved_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: cell with outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path, kernel_specs):
    nb = nbformat.read(path, as_version=4)
    manager = KernelManager(kernel_name=KERNEL, kernel_spec_manager=kernel_specs)
    client = nbclient.NotebookClient(
        nb, km=manager, timeout=120, kernel_name=KERNEL, resources={"metadata": {"path": str(tmp_path)}}
    )
    started = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - started
    assert seconds < 60, f"{path.name} took {seconds:.0f} s"
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    figures = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert figures, f"{path.name} shows no figure"
    assert list(tmp_path.iterdir()) == [], "a notebook wrote into its working folder"
