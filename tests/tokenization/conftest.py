"""Shared fixtures for the tokenizer tests."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture
def no_fastokens(monkeypatch):
    """fastokens cannot be imported (as on a platform without its wheel): ``import fastokens`` raises."""
    monkeypatch.setitem(sys.modules, "fastokens", None)
