"""``FREQLAB_TEST_DEVICE=cuda`` runs these tests with torch's default device set to it: the models, their inputs and
every tensor the tests make are created there, so freqlab.apply's own tensors must follow the inputs' device (the
GPU check; CI has no GPU and runs them on the CPU)."""

from __future__ import annotations

import os

import pytest

DEVICE = os.environ.get("FREQLAB_TEST_DEVICE", "")


@pytest.fixture(autouse=True)
def default_device():
    """Every test of this folder under ``torch.device(FREQLAB_TEST_DEVICE)`` when it is set."""
    if not DEVICE:
        yield
        return
    torch = pytest.importorskip("torch")
    with torch.device(DEVICE):
        yield
