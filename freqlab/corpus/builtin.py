"""The built-in corpus: the Python standard library source of the running interpreter.

It exists on every machine with Python, needs no network, is real text no one here wrote (the project ships
no third-party text), and has a natural heavy-tailed length distribution (a 2-line ``__init__.py`` next to
a 10k-line ``test_*.py``).

* Files: every ``*.py`` under ``sysconfig.get_paths()["stdlib"]``, recursively, excluding ``site-packages``,
  ``dist-packages`` and ``__pycache__``, in sorted order; one document per file, decoded as Python decodes
  source (PEP 263; the 3 deliberately mis-encoded test files of CPython get U+FFFD replacements).
* Source labels (``has_sources``): ``test`` for files under a test directory (a path component ``test``,
  ``tests`` or ``idle_test``, or a ``test_*.py`` file name), else ``package`` for files inside a package
  (a sub-directory of the stdlib), else ``module`` for top-level modules (``os.py``, ``json/`` is a package).
* Shards of :data:`~freqlab.corpus.text.FILES_PER_SHARD` files, so two workers can share it.

CPython 3.11.7 (pyenv build): 1790 files, 31.5 million characters. Distributions that split the test
suite into its own package (Debian's ``libpython3.x-testsuite``) have fewer files; the corpus is
deterministic for a given interpreter installation, not across installations.
"""

from __future__ import annotations

import os
import platform
import sysconfig

from freqlab.corpus.base import Corpus
from freqlab.corpus.file_discovery import stat_file
from freqlab.corpus.text import group_files

BUILTIN_NAME = "python-stdlib"
_EXCLUDED_DIRS = frozenset({"site-packages", "dist-packages", "__pycache__"})
_TEST_DIRS = frozenset({"test", "tests", "idle_test"})


def source_label(relpath: str) -> str:
    """``test``, ``package`` or ``module`` for a stdlib file path relative to the stdlib root.

    >>> [source_label(p) for p in ("os.py", "json/decoder.py", "test/test_os.py", "idlelib/idle_test/x.py")]
    ['module', 'package', 'test', 'test']
    """
    parts = relpath.replace(os.sep, "/").split("/")
    if _TEST_DIRS.intersection(parts[:-1]) or parts[-1].startswith("test_"):
        return "test"
    return "package" if len(parts) > 1 else "module"


def stdlib_files(root: str) -> list[str]:
    """Sorted ``*.py`` paths (relative to ``root``, ``/``-separated) of the standard library at ``root``."""
    found = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in _EXCLUDED_DIRS]
        rel = os.path.relpath(directory, root)
        for name in names:
            if name.endswith(".py"):
                found.append(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
    return sorted(found)


def builtin_corpus() -> Corpus:
    """The Python standard library of this interpreter, one document per ``.py`` file, labelled by kind.

    Returns
    -------
    Corpus
        The built-in corpus (offline).
    """
    root = sysconfig.get_paths()["stdlib"]
    files = stdlib_files(root)
    sources = [source_label(name) for name in files]
    data_files = [stat_file(os.path.join(root, name), name) for name in files]
    shards = group_files(data_files, sources, decoding="python")
    version = platform.python_version()
    return Corpus(
        name=BUILTIN_NAME,
        shards=list(shards),
        has_sources=True,
        description={
            "kind": "builtin",
            "id": BUILTIN_NAME,
            "python": f"{platform.python_implementation()} {version}",
            "root": root,
            "files": len(files),
            "sources": {label: sources.count(label) for label in sorted(set(sources))},
            "text": "Python standard library source, one document per .py file",
        },
        total_documents=len(files),
        estimated_bytes=sum(file.size for file in data_files),
    )
