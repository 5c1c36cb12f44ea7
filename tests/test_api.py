"""The top-level API: every lazily loaded name resolves, and type checkers see each one (TYPE_CHECKING block)."""

import ast
import importlib
from pathlib import Path

import freqlab

INIT = Path(freqlab.__file__)


def type_checking_names() -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(INIT.read_text())):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            names |= {alias.asname or alias.name for sub in ast.walk(node) for alias in getattr(sub, "names", [])}
    return names


def test_every_lazy_name_is_visible_to_type_checkers():
    assert set(freqlab._EXPORTS) | set(freqlab._SUBPACKAGES) <= type_checking_names()


def test_every_lazy_name_resolves_to_the_object_of_its_module():
    for name, module in freqlab._EXPORTS.items():
        assert getattr(freqlab, name) is getattr(importlib.import_module(module), name)


def test_the_package_ships_its_type_hints():
    assert (INIT.parent / "py.typed").is_file()
