"""Suite-wide settings: sibling helpers importable, and the slow tests (real clusters, notebooks, real signals)
run only with ``--run-slow`` (CI and the README's test command pass it; a plain ``pytest`` is the quick loop)."""

import sys
from pathlib import Path

import pytest

# lets test modules import their sibling reference helpers (e.g. tests/frequency/reference.py)
sys.path.insert(0, str(Path(__file__).parent))

# Modules whose every test is slow: each starts processes that take seconds (a Ray cluster, a notebook kernel,
# whole `freqlab scan` processes interrupted by real signals, every figure made again, a second venv).
SLOW_MODULES = {
    "test_ray_cluster.py",
    "test_notebooks.py",
    "test_faults.py",
    "test_make_figures.py",
    "test_rope_blocks_load_in_transformers.py",  # builds a venv with the oldest transformers allowed (cached)
}


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="also run the tests marked slow (CI does)")


def pytest_collection_modifyitems(config, items):
    run_slow = config.getoption("--run-slow")
    skip = pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if not run_slow and item.get_closest_marker("slow"):
            item.add_marker(skip)
