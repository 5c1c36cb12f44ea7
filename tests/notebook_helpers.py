"""scripts/run_notebooks.py as a module for the tests (it executes notebooks on this interpreter and compares them
with their committed outputs), loaded only when the notebook tools (the test extra) are installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("nbclient", reason="nbclient is part of the test extra")
pytest.importorskip("nbformat", reason="nbformat is part of the test extra")

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "run_notebooks.py"
_spec = importlib.util.spec_from_file_location("run_notebooks", SCRIPT)
run_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_notebooks)
