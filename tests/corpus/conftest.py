"""Session fixtures for the corpus tests (see corpus_helpers for the record layout and writers)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the test modules import corpus_helpers too

from corpus_helpers import slimpajama_records


@pytest.fixture(scope="session")
def records() -> list[dict]:
    """SlimPajama-schema records made of real standard-library texts (plus an empty and a non-BMP one)."""
    return slimpajama_records()
