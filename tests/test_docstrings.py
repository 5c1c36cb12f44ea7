"""Every runnable example in a freqlab docstring holds (they are part of the documentation)."""

import doctest
import importlib
import pkgutil

import pytest

import freqlab

MODULES = sorted(info.name for info in pkgutil.walk_packages(freqlab.__path__, "freqlab."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name == "freqlab.apply.attention":  # needs the apply extra (torch, transformers)
        pytest.importorskip("torch")
        pytest.importorskip("transformers")
    flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    result = doctest.testmod(importlib.import_module(name), optionflags=flags)
    assert result.failed == 0


def test_the_core_modules_have_examples():
    for name in ("freqlab.frequency.position", "freqlab.frequency.stats", "freqlab.histogram", "freqlab.plan.string"):
        assert doctest.testmod(importlib.import_module(name)).attempted > 0
