"""The names renamed by issue 24 keep working for one release (freqlab.deprecation, the CHANGELOG's table): every
old module path, function and method still works, warns once with a DeprecationWarning that names the new name, and
is the new object (a method calls the new one); nothing in freqlab itself uses an old name."""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import freqlab

PACKAGE = Path(freqlab.__file__).parent

#: old module path -> new module path
MODULES = {
    "freqlab.tokenize": "freqlab.tokenization",
    "freqlab.frequency.megatron": "freqlab.frequency.megatron_replay",
    "freqlab.frequency.summary": "freqlab.frequency.regime_table",
    "freqlab.scan.summary": "freqlab.scan.summary_json",
    "freqlab.plan.giraffe": "freqlab.plan.rope_bases",
    "freqlab.corpus.files": "freqlab.corpus.file_discovery",
    "freqlab.corpus.local": "freqlab.corpus.local_files",
    "freqlab.corpus.remote": "freqlab.corpus.remote_files",
    "freqlab.corpus.resolve": "freqlab.corpus.open",
    "freqlab.corpus.tokenized": "freqlab.corpus.token_files",
}

#: (module, old name, new name): old functions, looked up on the module (top level and subpackage names)
NAMES = [
    ("freqlab", "tokenize", "tokenization"),
    ("freqlab", "frequency_summary", "frequency_key_numbers"),
    ("freqlab", "regime_summaries", "regime_rows"),
    ("freqlab.scan", "summarize_windows", "budget_and_windows"),
    ("freqlab.scan", "run_scan", "scan_from_settings"),
    ("freqlab.plan", "plan_rope_scalings", "compare_rope_scalings"),
    # and in the modules that defined them (`from freqlab.scan.driver import run_scan` in 0.1 code)
    ("freqlab.plan.rope_scaling", "plan_rope_scalings", "compare_rope_scalings"),
    ("freqlab.scan.driver", "run_scan", "scan_from_settings"),
]

#: (old module, old name, new module, new name): names of the old modules that were renamed with them
MODULE_NAMES = [
    ("freqlab.frequency.summary", "frequency_summary", "freqlab.frequency.regime_table", "frequency_key_numbers"),
    ("freqlab.frequency.summary", "regime_summaries", "freqlab.frequency.regime_table", "regime_rows"),
    ("freqlab.frequency.summary", "describe", "freqlab.frequency.regime_table", "describe"),
    ("freqlab.scan.summary", "summarize_windows", "freqlab.scan.summary_json", "budget_and_windows"),
    ("freqlab.scan.summary", "scan_summary", "freqlab.scan.summary_json", "build_summary_json"),
    ("freqlab.scan.summary", "format_report", "freqlab.scan.summary_json", "format_report"),
]


def deprecations(record: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, DeprecationWarning)]


def forget(name: str) -> None:
    """Drop ``name`` (and its submodules) from sys.modules and from its parent, so importing it runs it again."""
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]
    parent, _, child = name.rpartition(".")
    importlib.import_module(parent).__dict__.pop(child, None)


def fresh_import(name: str) -> tuple[object, list[str]]:
    forget(name)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        module = importlib.import_module(name)
    return module, deprecations(record)


@pytest.mark.parametrize(("old", "new"), MODULES.items())
def test_an_old_module_path_warns_once_naming_the_new_one(old, new):
    module, messages = fresh_import(old)
    assert len(messages) == 1, messages
    assert messages[0].startswith(f"{old} is renamed {new}") and messages[0].endswith("the old name goes in 0.3")
    current = importlib.import_module(new)
    if module is not current:  # a shim that also keeps old function names: the same objects under each name
        public = [name for name in vars(current) if not name.startswith("_")]
        assert public and all(getattr(module, name) is getattr(current, name) for name in public)


@pytest.mark.parametrize(("old", "new"), [(o, n) for o, n in MODULES.items() if "summary" not in o])
def test_a_renamed_module_is_the_new_module_under_its_old_path(old, new):
    fresh_import(old)
    assert sys.modules[old] is importlib.import_module(new)


SUBMODULES = {old: new for old, new in MODULES.items() if old.count(".") == 2}  # freqlab.tokenize: in NAMES


@pytest.mark.parametrize(("old", "new"), SUBMODULES.items())
def test_an_old_submodule_is_an_attribute_of_its_package_as_after_a_plain_import_in_0_1(old, new):
    # 0.1's packages imported these submodules, so `import freqlab` made `freqlab.corpus.resolve.open_corpus` work
    forget(old)
    package, _, child = old.rpartition(".")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        value = getattr(importlib.import_module(package), child)  # the first look-up
        again = getattr(importlib.import_module(package), child)  # now a plain attribute, as after an import
    assert len(deprecations(record)) == 1 and deprecations(record)[0].startswith(f"{old} is renamed {new}")
    assert [(Path(w.filename).name, w.lineno) for w in record] == [(Path(__file__).name, _line_of("# the first"))]
    assert value is again is sys.modules[old]
    assert getattr(value, "__freqlab_shim__", False) or value is importlib.import_module(new)


@pytest.mark.parametrize(("old", "new"), SUBMODULES.items())
def test_from_a_package_import_an_old_submodule_warns_once(old, new):
    forget(old)
    package, _, child = old.rpartition(".")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        namespace: dict = {}
        exec(f"from {package} import {child}", namespace)
    assert len(deprecations(record)) == 1 and deprecations(record)[0].startswith(f"{old} is renamed {new}")
    assert namespace[child] is sys.modules[old]


def test_the_old_tokenize_package_and_its_submodules_keep_working():
    forget("freqlab.tokenize")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        import freqlab.tokenize.counter
        from freqlab.tokenize.backends import BACKEND_HF

        from freqlab.tokenize import load_tokenizer
    assert deprecations(record) == ["freqlab.tokenize is renamed freqlab.tokenization; the old name goes in 0.3"]
    import freqlab.tokenization.backends
    import freqlab.tokenization.counter

    assert freqlab.tokenize.counter is freqlab.tokenization.counter
    assert load_tokenizer is freqlab.tokenization.load_tokenizer
    assert BACKEND_HF is freqlab.tokenization.backends.BACKEND_HF
    assert load_tokenizer().count(["Hello world"]).tolist() == [2]  # Tekken, as in the package's docstring


@pytest.mark.parametrize(("module", "old", "new"), NAMES)
def test_an_old_name_warns_once_and_is_the_new_object(module, old, new):
    package = importlib.import_module(module)
    package.__dict__.pop(old, None)  # an earlier `import freqlab.tokenize` leaves a plain attribute
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        value = getattr(package, old)
    assert deprecations(record) == [f"{module}.{old} is renamed {module}.{new}; the old name goes in 0.3"]
    assert value is getattr(package, new)


@pytest.mark.parametrize(("module", "old", "new"), NAMES)
def test_importing_an_old_name_warns_once(module, old, new):
    importlib.import_module(module).__dict__.pop(old, None)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        exec(f"from {module} import {old}", {})
    assert len(deprecations(record)) == 1 and f"renamed {module}.{new}" in deprecations(record)[0]


@pytest.mark.parametrize(("old_module", "old", "new_module", "new"), MODULE_NAMES)
def test_the_names_of_an_old_module_are_the_new_objects(old_module, old, new_module, new):
    module, messages = fresh_import(old_module)
    assert len(messages) == 1 and (old == new or f"{old}: {new}" in messages[0])
    assert getattr(module, old) is getattr(importlib.import_module(new_module), new)


@pytest.mark.parametrize("module", ["freqlab", "freqlab.scan", "freqlab.plan"])
def test_old_names_are_not_part_of_the_api(module):
    package = importlib.import_module(module)
    assert not {old for m, old, _ in NAMES if m == module} & set(package.__all__)
    if module == "freqlab":
        assert not {old for m, old, _ in NAMES if m == module} & set(freqlab._EXPORTS)


def _layout():
    from freqlab.frequency.layouts import layout_frequency

    return layout_frequency([4096] * 10, [1] * 10, 2048, "5*swa512+global+nope")


def _calibration():
    from freqlab.frequency.calibrate import PAPER_POINTS, calibrate

    return calibrate(PAPER_POINTS)


HISTOGRAM = freqlab.LengthHistogram.from_lengths([4096] * 10)

#: (class name, object, old method, new method, arguments)
METHODS = [
    ("LengthHistogram", HISTOGRAM, "summary", "length_statistics", (2048,)),
    ("PositionFrequency", HISTOGRAM.frequency(2048), "summary", "regime_row", (40960, 1000)),
    ("LayoutFrequency", _layout(), "summaries", "kind_rows", ()),
    ("Calibration", _calibration(), "summary_lines", "estimate_lines", ()),
]


@pytest.mark.parametrize(("owner", "obj", "old", "new", "args"), METHODS, ids=[m[0] for m in METHODS])
def test_an_old_method_warns_once_and_returns_what_the_new_one_returns(owner, obj, old, new, args):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        got = getattr(obj, old)(*args)
    assert deprecations(record) == [f"{owner}.{old} is renamed {owner}.{new}; the old name goes in 0.3"]
    assert got == getattr(obj, new)(*args)


def test_the_old_kind_row_method_and_the_values_it_returns():
    kind = _layout()["global"]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        row = kind.summary(share_of_layers=1 / 7, tokens=40960, tau=1000)
    assert deprecations(record) == ["KindFrequency.summary is renamed KindFrequency.kind_row; the old name goes in 0.3"]
    # ten 4096-token documents in 2048-token rows: 20 segments, f(i) = 20 (2048 - i), f_T(i) >= 1000 up to 1998
    assert (row["layers"], row["effective_length"], row["reach"]) == (1, 1998, 2047)
    assert row == kind.kind_row(share_of_layers=1 / 7, tokens=40960, tau=1000)


def test_a_warning_points_at_the_line_that_used_the_old_name():
    forget("freqlab.corpus.remote")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        import freqlab.corpus.remote  # noqa: F401
    assert [(Path(w.filename).name, w.lineno) for w in record] == [(Path(__file__).name, _line_of("corpus.remote  #"))]


def _line_of(text: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(k for k, line in enumerate(lines, 1) if text in line and "_line_of" not in line)


def shims() -> set[Path]:
    return {path for path in PACKAGE.rglob("*.py") if "__freqlab_shim__ = True" in path.read_text()}


def test_every_old_module_path_is_a_shim_file():
    assert {str(p.relative_to(PACKAGE.parent).with_suffix("")).replace("/", ".") for p in shims()} == set(MODULES)


def test_nothing_in_freqlab_imports_an_old_name():
    old_modules = set(MODULES)
    old_names = {(m, old) for m, old, _ in NAMES} | {(m, old) for m, old, _, _ in MODULE_NAMES}
    found = []
    for path in sorted(set(PACKAGE.rglob("*.py")) - shims()):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                found += [
                    f"{path.name}:{node.lineno} {node.module}.{a.name}"
                    for a in node.names
                    if (node.module, a.name) in old_names
                ]
            else:
                continue
            found += [
                f"{path.name}:{node.lineno} {t}"
                for t in targets
                if any(t == old or t.startswith(old + ".") for old in old_modules)
            ]
    assert found == []


def test_the_kind_rows_are_the_layout_s_numbers():
    rows = {row["kind"]: row for row in _layout().kind_rows(tokens=40960, tau=1000)}
    assert rows["swa512"]["reach"] == 511 and rows["global"]["effective_length"] == 1998
    assert rows["nope"]["rope"] is False and "effective_length" not in rows["nope"]
    assert np.isclose(sum(row["share_of_layers"] for row in rows.values()), 1.0)
