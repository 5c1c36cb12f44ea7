"""Plots are drawn headless (Agg) in tests; fixtures are small histograms built here."""

import os
import sys
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).parent))  # the test modules import plot_helpers

import numpy as np
import pytest

from freqlab import LengthHistogram
from freqlab.histogram import combine_sources


@pytest.fixture(scope="session")
def histogram() -> LengthHistogram:
    """3,000 documents, lognormal lengths (median ~400 tokens, a tail beyond 2048), seeded."""
    rng = np.random.default_rng(7)
    return LengthHistogram.from_lengths(np.maximum(1, rng.lognormal(6.0, 1.3, 3000).astype(np.int64)), corpus="toy")


@pytest.fixture(scope="session")
def sourced() -> LengthHistogram:
    """Three sources with different typical lengths, combined with the per-source split kept."""
    rng = np.random.default_rng(11)
    parts = {
        name: LengthHistogram.from_lengths(np.maximum(1, rng.lognormal(mu, 1.0, 800).astype(np.int64)), corpus=name)
        for name, mu in (("web", 5.5), ("code", 6.5), ("books", 8.0))
    }
    return combine_sources(parts, corpus="toy-sources")
