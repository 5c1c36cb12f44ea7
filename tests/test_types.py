"""The public modules type-check: mypy finds no error in the modules that define freqlab's top-level names.

mypy runs as a subprocess on the files below (imports of other freqlab modules are followed silently: their own
errors are not reported here), with a cache of its own so the run does not depend on a previous one.
"""

import ast
import dataclasses
import importlib.util
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import freqlab

ROOT = Path(__file__).resolve().parents[1]

CHECKED = (
    "freqlab/__init__.py",
    "freqlab/arrays.py",
    "freqlab/errors.py",
    "freqlab/formats.py",
    "freqlab/histogram.py",
    "freqlab/sizes.py",
    "freqlab/frequency/",
    "freqlab/plan/",
    "freqlab/scan/driver.py",
    "freqlab/scan/settings.py",
    "freqlab/corpus/open.py",
)


def _checked_module(module: str) -> bool:
    path = module.replace(".", "/")
    return any(path + ".py" == c or (c.endswith("/") and path.startswith(c)) for c in CHECKED)


def test_checked_files_define_every_top_level_name():
    """Every name of ``freqlab.__all__`` defined by a class or function lives in a checked file (or is listed)."""
    modules = {getattr(getattr(freqlab, name), "__module__", None) for name in freqlab.__all__} - {None}
    assert modules, "freqlab.__all__ names no class or function"
    assert {m for m in modules if not _checked_module(m)} == set()


# ~16 s of mypy on 2 cores (80 s before pyproject.toml had it skip transformers, torch and Ray): with --run-slow
# (CI's main step), not in the quick loop
@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed (it is in the test extra: pip install -e '.[test]')",
)
def test_public_modules_have_no_type_errors(tmp_path_factory):
    cache = tmp_path_factory.mktemp("mypy_cache")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--ignore-missing-imports",
            "--follow-imports=silent",
            "--cache-dir",
            str(cache),
            *CHECKED,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"mypy found type errors:\n{result.stdout}{result.stderr}"
    assert result.stdout.startswith("Success: no issues found in "), result.stdout


def _declared_init(path: Path, class_name: str) -> list[tuple[str, str | None]]:
    """(name, default as source text) of the ``__init__`` a class declares for type checkers only."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    init = next(n for n in ast.walk(cls) if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    args = init.args.args[1:]
    defaults = [None] * (len(args) - len(init.args.defaults)) + [ast.unparse(d) for d in init.args.defaults]
    return [(a.arg, d) for a, d in zip(args, defaults, strict=True)]


@pytest.mark.parametrize("name", ["ScanSettings", "RunOptions", "ReportOptions"])
def test_the_constructors_declared_to_type_checkers_are_the_dataclasses_own(name):
    """The settings classes declare (under TYPE_CHECKING) the wider types their constructor accepts and
    ``__post_init__`` normalises; the declaration lists the dataclass's fields, in order, with the same defaults."""
    from freqlab.scan import settings

    cls = getattr(settings, name)
    declared = _declared_init(ROOT / "freqlab/scan/settings.py", name)
    assert [n for n, _ in declared] == [f.name for f in dataclasses.fields(cls)]
    runtime = inspect.signature(cls.__init__).parameters
    for field_name, default in declared:
        assert default is not None and eval(default, vars(settings)) == runtime[field_name].default, field_name
