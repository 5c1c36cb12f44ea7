"""The built-in corpus is the running interpreter's standard library: complete, labelled, deterministic, offline."""

from __future__ import annotations

import os
import sysconfig
import tokenize

import pytest

from freqlab.corpus import builtin_corpus, open_corpus
from freqlab.corpus.builtin import source_label
from freqlab.corpus.text import FILES_PER_SHARD
from freqlab.errors import FreqlabError


def _independent_listing() -> dict[str, str]:
    """Every stdlib .py file (outside site-/dist-packages and __pycache__) -> its text, read by `tokenize.open`."""
    root = sysconfig.get_paths()["stdlib"]
    texts = {}
    for path in sorted(
        os.path.join(folder, name)
        for folder, _, names in os.walk(root)
        for name in names
        if name.endswith(".py")
        and not {"site-packages", "dist-packages", "__pycache__"} & set(os.path.relpath(folder, root).split(os.sep))
    ):
        try:
            with tokenize.open(path) as handle:  # how Python itself decodes source (PEP 263)
                texts[path] = handle.read()
        except (SyntaxError, UnicodeDecodeError):
            with open(path, encoding="utf-8", errors="replace") as handle:  # the deliberately broken test files
                texts[path] = handle.read()
    return texts


def test_it_is_every_stdlib_source_file_read_as_python_reads_it():
    corpus = open_corpus()  # no dataset: the built-in corpus
    assert corpus.name == "python-stdlib"
    reference = _independent_listing()
    docs = list(corpus.documents())
    assert all(doc.error is None for doc in docs)
    # tokenize.open translates newlines (universal newlines); bytes-level reading keeps \r\n as written.
    assert {doc.where: doc.text.replace("\r\n", "\n").replace("\r", "\n") for doc in docs} == reference
    root = corpus.description["root"]
    assert [doc.where for doc in docs] == sorted(reference, key=lambda path: os.path.relpath(path, root))
    assert corpus.total_documents == len(reference) == corpus.description["files"]
    assert len(reference) > 500  # a real corpus on every CPython installation


def test_sources_label_tests_packages_and_modules():
    corpus = builtin_corpus()
    assert corpus.has_sources
    counts = corpus.description["sources"]
    assert set(counts) <= {"test", "package", "module"}
    assert sum(counts.values()) == corpus.total_documents
    labels = {doc.where: doc.source for doc in corpus.documents()}
    root = corpus.description["root"]
    assert labels[os.path.join(root, "os.py")] == "module"
    assert labels[os.path.join(root, "json", "decoder.py")] == "package"
    assert [source_label(p) for p in ("os.py", "json/decoder.py", "test/test_os.py", "idlelib/idle_test/x.py")] == [
        "module",
        "package",
        "test",
        "test",
    ]
    assert source_label("lib2to3/tests/data/fixers/myfixes/fix_last.py") == "test"
    assert source_label("unittest/test/test_case.py") == "test"


def test_shards_split_the_files_for_two_workers_and_are_stable():
    first, second = builtin_corpus(), builtin_corpus()
    assert [s.id for s in first.shards] == [s.id for s in second.shards]
    assert len(first.shards) >= 2
    assert all(len(shard.files) <= FILES_PER_SHARD for shard in first.shards)
    assert sum(len(shard.files) for shard in first.shards) == first.total_documents
    assert len({s.id for s in first.shards}) == len(first.shards)


@pytest.mark.parametrize("option", [{"config": "foo"}, {"split": "test"}, {"format": "jsonl"}])
def test_options_that_read_nothing_of_the_built_in_corpus_are_refused(option):
    """``scan --config foo`` on the built-in corpus scanned it, the option dropped without a word (a review)."""
    with pytest.raises(
        FreqlabError, match="config, split and format apply to a dataset or data files, not the built-in"
    ):
        open_corpus(**option)
