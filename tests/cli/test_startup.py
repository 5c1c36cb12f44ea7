"""`freqlab --help` and `--version` start fast because nothing heavy is imported before a command runs (the wall
times are measured in scripts/bench_cli.py, not here): `import freqlab`, the group and its help load no numba,
polars, matplotlib or numpy."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numba", "polars", "matplotlib", "numpy", "pyarrow", "tokenizers", "datasets")

CODE = f"""
import sys
from click.testing import CliRunner
import freqlab
from freqlab.cli import main
assert CliRunner().invoke(main, ["--help"]).output.startswith("Usage: ")
assert freqlab.__version__ in CliRunner().invoke(main, ["--version"]).output
print(",".join(name for name in {HEAVY!r} if name in sys.modules))
"""


def test_help_and_version_import_nothing_heavy():
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_output_into_a_closed_pipe_ends_quietly_with_status_141():
    """`freqlab ... | head`: once the reader has gone, the command stops with the shell's SIGPIPE status and says
    nothing (no "Error: [Errno 32] Broken pipe")."""
    command = [sys.executable, "-m", "freqlab", "plan", "string", "--L", "4096"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader leaves before the first line
    stderr = process.stderr.read()
    assert (process.wait(timeout=60), stderr) == (141, b"")
