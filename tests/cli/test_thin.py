"""The command line is a thin layer over the API: it parses options, calls the API and prints what the results say.

Checked on the source of ``freqlab/cli/`` (an AST walk, nothing imported):

- it imports click, the standard library and freqlab's own modules, never numpy, polars, pyarrow or matplotlib:
  no array arithmetic on frequencies happens here, and no table is built here;
- it computes no position-frequency statistic itself (nothing from ``freqlab.frequency.stats``, the kernels or the
  exact reference), and imports no private name of another package;
- it writes no file itself: every file goes through a writer of the API (``LengthHistogram.write_frequencies``,
  ``StringUsage.write_parquet``, ``Calibration.write_json``, ``save_figure``, the scan), whose formats are in
  :mod:`freqlab.formats`;
- an option several commands take is defined once, in ``freqlab/cli/options.py``.

Each exception is listed with its reason.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import freqlab

CLI = Path(freqlab.__file__).parent / "cli"

#: (file, imported module) -> why the command imports it
IMPORT_EXCEPTIONS = {
    ("probe.py", "tqdm.auto"): "the needle tests drive a model for minutes: the command shows their progress bar",
}
#: (file, private name) -> why
PRIVATE_EXCEPTIONS = {
    ("probe.py", "_check_group"): "probe checks --self-extend G,w_n before loading a model, as the planner does",
    ("probe.py", "_check_shift"): "probe checks --string S,W before loading a model, as the planner does",
}
#: third-party packages the command line may import (besides freqlab)
ALLOWED_PACKAGES = {"click"}
#: freqlab modules the command line may not import: the arithmetic behind the results
ARITHMETIC = ("freqlab.frequency.stats", "freqlab.frequency.kernels", "freqlab.frequency.exact", "freqlab.arrays")
#: calls that write a file: a method of this name on anything (a path, a file), or the built-in open (tables and
#: figures cannot be written here anyway: polars, pyarrow and matplotlib are not imported)
WRITERS = {"write_text", "write_bytes", "open", "dump", "touch", "mkdir"}
#: (file, call) -> why
WRITE_EXCEPTIONS = {
    ("__init__.py", "os.open"): "a closed pipe: stdout is pointed at /dev/null so that nothing is flushed at exit",
}
#: the options several commands take, defined once in options.py
SHARED = (
    "--L",
    "--regime",
    "--tokens",
    "--tau",
    "--tau-from",
    "--weights",
    "--layout",
    "--json",
    "--hist",
    "--data-path",
)


def sources() -> dict[str, ast.Module]:
    return {path.name: ast.parse(path.read_text(), str(path)) for path in sorted(CLI.glob("*.py"))}


def imported(tree: ast.Module):
    """(module, names) of every import, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, tuple(alias.name for alias in node.names)


def test_the_cli_imports_click_the_standard_library_and_freqlab_only():
    wrong = []
    for name, tree in sources().items():
        for module, _ in imported(tree):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in ALLOWED_PACKAGES or top == "freqlab":
                continue
            if (name, module) not in IMPORT_EXCEPTIONS:
                wrong.append(f"cli/{name} imports {module}")
    assert wrong == []


def test_the_cli_computes_no_statistic_and_uses_no_private_name():
    wrong = []
    for name, tree in sources().items():
        for module, names in imported(tree):
            if module.startswith(ARITHMETIC):
                wrong.append(f"cli/{name} imports {module}: call a result's method instead")
            for imported_name in names:
                private = imported_name.startswith("_") and imported_name != "__future__"
                if private and module.startswith("freqlab.") and (name, imported_name) not in PRIVATE_EXCEPTIONS:
                    wrong.append(f"cli/{name} imports the private {module}.{imported_name}")
    assert wrong == []


def test_the_cli_writes_files_only_through_the_api():
    wrong = []
    for name, tree in sources().items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            call = ast.unparse(node.func)
            writes = (isinstance(node.func, ast.Name) and node.func.id == "open") or (
                isinstance(node.func, ast.Attribute) and (node.func.attr in WRITERS or call == "os.open")
            )
            if writes and (name, call) not in WRITE_EXCEPTIONS:
                wrong.append(f"cli/{name}:{node.lineno} {call}(...)")
    assert wrong == []


def test_shared_options_are_defined_once_in_options_py():
    where: dict[str, list[str]] = {flag: [] for flag in SHARED}
    for name, tree in sources().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "click.option":
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and arg.value in where:
                        where[arg.value].append(name)
    assert {flag: files for flag, files in where.items() if set(files) != {"options.py"}} == {}


def test_the_checks_see_what_they_look_for():
    """The walks above find a numpy import, a private name, a write and a second --L in a module made to hold them."""
    tree = ast.parse(
        'import numpy\nfrom freqlab.plan.string import _check_shift\nopen("x", "w")\nclick.option("--L")\n'
    )
    assert [module for module, _ in imported(tree)] == ["numpy", "freqlab.plan.string"]
    calls = [ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert calls == ["open", "click.option"]
