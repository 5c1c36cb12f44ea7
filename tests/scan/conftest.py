"""Fixtures for the scan tests: small SlimPajama-schema corpora built from the built-in corpus (real text),
the real default tokenizer, and an independent reference count (one document at a time, no engine)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from freqlab.corpus import builtin_corpus
from freqlab.histogram import LengthHistogram
from freqlab.scan import ScanResult, scan

SET_NAMES = ("RedPajamaGithub", "RedPajamaStackExchange", "RedPajamaBook")
MAX_CHARS = 6000  # keep documents small: the whole scan test suite tokenizes only a few MB


def real_texts(n: int) -> list[str]:
    """n real documents: standard-library files (every 7th, cut to MAX_CHARS), in the corpus's order."""
    texts = []
    for k, doc in enumerate(builtin_corpus().documents()):
        if k % 7 == 0 and doc.text:
            texts.append(doc.text[: MAX_CHARS - 37 * (len(texts) % 97)])
        if len(texts) == n:
            return texts
    raise AssertionError("the built-in corpus is too small")


def write_slimpajama(path: Path, records: list) -> Path:
    """A JSON-lines file in SlimPajama's schema; a record is (text, set name) or a raw line (bad input)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            if isinstance(record, str):
                handle.write(record + "\n")
            else:
                text, label = record
                handle.write(json.dumps({"text": text, "meta": {"redpajama_set_name": label}}) + "\n")
    return path


@pytest.fixture(scope="session")
def counter():
    from freqlab.tokenization import load_tokenizer

    return load_tokenizer()


@pytest.fixture(scope="session")
def corpus_records() -> list[list[tuple[str, str]]]:
    """Three shards of (text, set name) records, with a few empty documents; 90 documents in all."""
    texts = real_texts(84)
    records = [(text, SET_NAMES[k % 3 if k % 5 else 2]) for k, text in enumerate(texts)]
    for k in (3, 40, 77, 80, 81, 83):
        records.insert(k, ("", SET_NAMES[k % 3]))
    return [records[:25], records[25:60], records[60:]]


@pytest.fixture
def slimpajama_dir(tmp_path, corpus_records) -> Path:
    folder = tmp_path / "slimpajama"
    for k, shard in enumerate(corpus_records):
        write_slimpajama(folder / f"chunk_{k}.jsonl", shard)
    return folder


def scan_slimpajama(folder: Path, **options) -> ScanResult:
    """``scan`` of the SlimPajama-schema ``*.jsonl`` files in ``folder``: window 512 unless ``L`` is given,
    natural regime, no progress bar."""
    options.setdefault("L", [512])
    return scan("slimpajama", data_files=str(folder / "*.jsonl"), regimes=["natural"], progress=False, **options)


def reference_histogram(records, counter) -> LengthHistogram:
    """Independent count: each document tokenized alone, tallied with collections.Counter."""
    per_source: dict[str, Counter] = {}
    empty: Counter = Counter()
    for text, label in records:
        if text == "":
            empty[label] += 1
            continue
        n = int(counter.count([text])[0])
        per_source.setdefault(label, Counter())[n] += 1
    from freqlab.histogram import combine_sources

    sources = {
        label: LengthHistogram.from_counts(
            np.array(list(c), np.int64), np.array(list(c.values()), np.int64), empty_documents=empty[label]
        )
        for label, c in per_source.items()
    }
    return combine_sources(sources, empty_documents=sum(empty.values()))


def assert_same_histogram(a: LengthHistogram, b: LengthHistogram) -> None:
    """Same lengths and counts, same empties, same per-source split."""
    assert a.lengths.tolist() == b.lengths.tolist()
    assert a.counts.tolist() == b.counts.tolist()
    assert a.empty_documents == b.empty_documents
    assert a.documents_read == b.documents_read
    assert dict(a.skipped) == dict(b.skipped)
    assert sorted(a.sources or {}) == sorted(b.sources or {})
    for name in a.sources or {}:
        x, y = a.sources[name], b.sources[name]
        assert (x.lengths.tolist(), x.counts.tolist(), x.empty_documents) == (
            y.lengths.tolist(),
            y.counts.tolist(),
            y.empty_documents,
        ), name


@pytest.fixture
def pool_kept(monkeypatch):
    """Two cores, and every corpus said to hold 100 GB of text: a scan keeps the pool of 2 workers, however small."""
    from freqlab.corpus.base import Corpus

    monkeypatch.setattr("freqlab.scan.driver.default_workers", lambda: 2)
    opened = Corpus.__init__

    def huge(self, *args, **kwargs):
        opened(self, *args, **kwargs)
        self.estimated_bytes = 100 << 30

    monkeypatch.setattr(Corpus, "__init__", huge)
