"""The top-level API: every lazily loaded name resolves, and type checkers see each one (TYPE_CHECKING block)."""

import ast
import importlib
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

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


def test_every_subpackage_is_an_attribute_after_a_plain_import_without_importing_torch():
    """A review: freqlab.plots was, freqlab.apply an AttributeError until `import freqlab.apply`."""
    code = "import sys, freqlab; freqlab.apply.string; print('torch' in sys.modules, freqlab.plots.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "False freqlab.plots\n"


def test_the_package_ships_its_type_hints():
    assert (INIT.parent / "py.typed").is_file()


WRONG_TYPES = [  # (call, the start of its one-line error): a review met Python's own errors from each
    (lambda: freqlab.describe(None), r"describe takes a row of regime_rows \(a dict\), got None"),
    (lambda: freqlab.human_count("2K"), r"human_count takes a number, got '2K' \(parse_tokens reads"),
    (lambda: freqlab.position_label("2K"), r"position_label takes a number, got '2K' \(parse_positions reads"),
    (lambda: freqlab.frequency_key_numbers(5), r"a position frequency must be a non-empty 1-D array, got shape \(\)"),
    (lambda: freqlab.regime_rows([3], [1], 8, regimes=None), r"regimes must be a regime name or a list of them"),
    (lambda: freqlab.regime_rows([3], [1], 8, regimes=[1]), r"regimes must be regime names \(strings: natural,"),
    (lambda: freqlab.LengthHistogram.from_lengths([3]).frequency_table(8, None), r"regimes must be a regime name"),
    (lambda: freqlab.plan_string(2048, histogram=0), r"histogram must be a LengthHistogram or the path of its"),
    (lambda: freqlab.plan_rope_scaling(2048, 8192, "yarn", head_dim=float("nan")), r"head_dim must be an even"),
    (lambda: freqlab.position_frequency([3], [1], 4, regime=[]), r"regime must be a regime name \(a string: natural"),
]


@pytest.mark.parametrize(("call", "message"), WRONG_TYPES)
def test_a_top_level_function_given_the_wrong_type_says_so_in_one_line(call, message):
    with pytest.raises(freqlab.FreqlabError, match="^" + message):
        call()


def test_the_helpers_still_take_every_kind_of_number():
    assert freqlab.human_count(np.int64(2_100_000_000)) == "2.1B" and freqlab.human_count(1500.0) == "1.5K"
    assert freqlab.position_label(np.float32(2048)) == "2K" and freqlab.position_label(Fraction(3072)) == "3K"
    assert freqlab.plan_rope_scaling(2048, 8192, "yarn", head_dim=128.0).rotary_dim == 128
    # an adversary: 0-d arrays and Decimals were taken before the check, and are still
    assert freqlab.position_label(np.array(2048)) == "2K" and freqlab.human_count(np.array(2048)) == "2.05K"
    assert freqlab.position_label(Decimal(2048)) == "2K" and freqlab.human_count(Decimal("1500")) == "1.5K"
