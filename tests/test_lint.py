"""The codebase stays ruff-clean and ruff-formatted (configuration in pyproject.toml; the same hooks run in
.pre-commit-config.yaml)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["freqlab", "tests", "scripts", "docs"]


def ruff(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(exe).exists():
        pytest.skip("ruff is not installed (it is part of the test extra)")
    return subprocess.run([exe, *args, *PATHS], cwd=ROOT, capture_output=True, text=True)


def test_ruff_is_clean():
    result = ruff("check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    result = ruff("format", "--check")
    assert result.returncode == 0, "run `ruff format " + " ".join(PATHS) + "`:\n" + result.stdout + result.stderr
