"""Every runnable example in a freqlab docstring holds (they are part of the documentation)."""

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import freqlab

ROOT = Path(freqlab.__file__).parent.parent


def is_shim(name: str) -> bool:
    """A deprecated module path kept for one release (freqlab.deprecation): it is the new module under its old name."""
    path = ROOT / f"{name.replace('.', '/')}.py"
    return path.is_file() and "__freqlab_shim__ = True" in path.read_text()


MODULES = sorted(info.name for info in pkgutil.walk_packages(freqlab.__path__, "freqlab.") if not is_shim(info.name))


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


@pytest.mark.parametrize("name", sorted(n for n in freqlab.__all__ if callable(getattr(freqlab, n))))
def test_the_examples_of_functions_and_classes_are_collected(name):
    # testmod runs the docstrings of the functions and classes a module defines, not only the module's own:
    # every top-level name's examples are among the tests of the module that defines it
    obj = getattr(freqlab, name)
    module = importlib.import_module(obj.__module__)
    collected = {test.name for test in doctest.DocTestFinder().find(module) if test.examples}
    assert f"{module.__name__}.{name}" in collected
