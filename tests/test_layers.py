"""The package has one order of layers, and imports only go down it:

    errors/sizes (and the other bottom modules) < histogram < corpus < tokenization < frequency < scan < plan < plots
    < cli

A module may import from its own layer or any layer below, never from one above: at module level or inside a
function (a lazy import that keeps ``freqlab --help`` fast must go down too). Imports under ``if TYPE_CHECKING:``
are for type checkers only, never run, and are not counted. A top-level subpackage not named here (``apply``,
``probe``, ...) sits above ``plan`` and below ``plots``. The one upward call the package makes is allow-listed below
with its reason. A second test finds import cycles among module-level imports (importing ``a.b.c`` runs ``a`` and
``a.b`` first, so those count as imported too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import freqlab

PACKAGE = Path(freqlab.__file__).parent
ROOT = PACKAGE.parent

#: the layers, lowest first; the first one holds the top-level modules that import nothing else of freqlab's
LAYERS = ("bottom", "histogram", "corpus", "tokenization", "frequency", "scan", "plan", "others", "plots", "cli")
# top-level modules at the bottom (resources and config_file: memory checks and bounded file reading, both
# importing errors alone; deprecation: the old names' warnings, importing nothing of freqlab's; jit: numba's njit
# applied on a kernel's first call; paths: ~ in the paths read and written, importing errors alone; files: atomic
# writes and Parquet under any name, importing errors and formats; fastokens_ahead: fastokens built in the
# forkserver before it imports freqlab, importing nothing of freqlab's)
BOTTOM = {
    *("errors", "sizes", "display", "arrays", "formats", "resources", "config_file", "deprecation", "jit", "paths"),
    *("files", "fastokens_ahead"),
}
TOP = {"freqlab", "freqlab.__main__"}  # the package's lazy table and `python -m freqlab` reach everything

#: (importing file, imported module) -> why this upward import is allowed
ALLOWED = {
    ("freqlab/histogram.py", "freqlab.frequency.result"): (
        "LengthHistogram.frequency(L, regime) is the API's short spelling of PositionFrequency.from_histogram: "
        "the computation lives in frequency, the method imports it when called"
    ),
    ("freqlab/scan/engines/ray.py", "freqlab"): (
        "a Ray worker hashes the installed package's source files to check it runs the same code: it imports the "
        "package only for its __file__"
    ),
}


def layer(module: str) -> int:
    """The rank of a module in LAYERS."""
    if module in TOP:
        return len(LAYERS)
    top = module.split(".")[1]
    if top in BOTTOM:
        return 0
    return LAYERS.index(top) if top in LAYERS else LAYERS.index("others")


def layer_name(module: str) -> str:
    rank = layer(module)
    return "the package root" if rank == len(LAYERS) else LAYERS[rank]


def modules() -> dict[str, Path]:
    """Every module of freqlab by dotted name."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking_only(tree: ast.Module) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for statement in node.body for child in ast.walk(statement))
    return skipped


def _in_functions(tree: ast.Module) -> set[int]:
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(child) for child in ast.walk(node) if child is not node)
    return inside


def imports() -> list[tuple[str, Path, int, str, bool]]:
    """(importer, its file, line, imported freqlab module, at module level?) for every import that runs."""
    known = modules()
    found = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        skipped, local = _type_checking_only(tree), _in_functions(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skipped or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                # `from package import submodule` imports the submodule
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            found += [
                (name, path, node.lineno, target, id(node) not in local)
                for target in dict.fromkeys(targets)
                if target == "freqlab" or target.startswith("freqlab.")
            ]
    return found


def test_every_module_is_in_a_layer():
    assert {"freqlab.histogram", "freqlab.errors", "freqlab.sizes", "freqlab.cli"} <= set(modules())
    examples = ("freqlab.sizes", "freqlab.histogram", "freqlab.frequency.regimes", "freqlab.cli.freq")
    assert [layer_name(m) for m in examples] == ["bottom", "histogram", "frequency", "cli"]
    assert layer("freqlab.apply.probe") == LAYERS.index("plan") + 1  # an unknown subpackage: above plan


def test_imports_only_go_down_the_layers():
    upward = []
    used = set()
    for importer, path, line, target, _ in imports():
        if layer(target) <= layer(importer):
            continue
        key = (path.relative_to(ROOT).as_posix(), target)
        if key in ALLOWED:
            used.add(key)
            continue
        upward.append(f"{key[0]}:{line}: {layer_name(importer)} imports {target} from {layer_name(target)} (above it)")
    assert upward == [], "imports against the layer order:\n" + "\n".join(upward)
    assert used == set(ALLOWED), f"allow-listed but no longer needed: {sorted(set(ALLOWED) - used)}"


def _module_level_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for importer, _, _, target, module_level in imports():
        if not module_level:
            continue
        parts = target.split(".")
        ancestors = {".".join(parts[:k]) for k in range(2, len(parts))}  # run before the target itself
        ancestors -= {a for a in ancestors if importer == a or importer.startswith(a + ".")}  # already running
        graph.setdefault(importer, set()).update(ancestors | {target} - {importer})
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm), each sorted.

    >>> find_cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def test_find_cycles_finds_a_cycle_through_a_package():
    graph = {"freqlab.x.a": {"freqlab.x", "freqlab.x.b"}, "freqlab.x.b": {"freqlab.x.a"}, "freqlab.x": set()}
    assert find_cycles(graph) == [["freqlab.x.a", "freqlab.x.b"]]


def test_no_import_cycles_at_module_level():
    assert find_cycles(_module_level_graph()) == []
