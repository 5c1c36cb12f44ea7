"""Helpers for the corpus tests: SlimPajama-schema records of real text, and writers for every format.

Records look like SlimPajama's: ``{"text": ..., "meta": {"redpajama_set_name": ...}}``. The texts are real
standard-library files (nothing written here), plus an empty document and one with characters outside the
Basic Multilingual Plane (written as JSON surrogate-pair escapes, which must *not* count as invalid).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from freqlab.corpus import builtin_corpus

SETS = (
    "RedPajamaCommonCrawl",
    "RedPajamaC4",
    "RedPajamaGithub",
    "RedPajamaBook",
    "RedPajamaArXiv",
    "RedPajamaWikipedia",
    "RedPajamaStackExchange",
)
TEXT_COUNT = 24
MAX_CHARS = 6000  # small fixtures keep the tests fast
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _stdlib_texts() -> list[str]:
    texts, astral = [], None
    for doc in builtin_corpus().documents():
        if astral is None and _ASTRAL.search(doc.text) and len(doc.text) < 100_000:
            astral = doc.text
        if 0 < len(doc.text) <= MAX_CHARS:
            texts.append(doc.text)
    assert astral is not None, "the standard library has files with non-BMP characters (e.g. test_unicode.py)"
    texts = texts[:: max(1, len(texts) // TEXT_COUNT)][:TEXT_COUNT]  # spread over the library, sorted order
    return [*texts[:12], "", astral, *texts[12:]]


def slimpajama_records() -> list[dict]:
    """SlimPajama-schema records: real texts, an empty text, a non-BMP text; set names cycle over the 7 sets."""
    texts = _stdlib_texts()
    return [{"text": t, "meta": {"redpajama_set_name": SETS[i % len(SETS)]}} for i, t in enumerate(texts)]


def expected(records: list[dict], sources: bool = True) -> list[tuple[str, str | None]]:
    return [(r["text"], r["meta"]["redpajama_set_name"] if sources else None) for r in records]


def read_all(corpus) -> list[tuple[str | None, str | None]]:
    docs = list(corpus.documents())
    assert all(doc.error is None for doc in docs), [doc for doc in docs if doc.error][:3]
    return [(doc.text, doc.source) for doc in docs]


def jsonl_bytes(records: list[dict], ensure_ascii: bool = True) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=ensure_ascii) + "\n" for r in records).encode("utf-8")


def write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data``, compressed according to the suffix (``.gz``, ``.zst``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        data = gzip.compress(data)
    elif path.suffix == ".zst":
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


def write_jsonl(path: Path, records: list[dict], ensure_ascii: bool = True) -> Path:
    return write_bytes(path, jsonl_bytes(records, ensure_ascii))


def write_parquet(path: Path, records: list[dict], meta_as_json_string: bool = False) -> Path:
    """Parquet with ``meta`` as a struct column, or as a JSON string column; several row groups."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"text": r["text"], "meta": json.dumps(r["meta"]) if meta_as_json_string else r["meta"]} for r in records]
    table = pa.Table.from_pylist(rows)
    struct = pa.struct([("redpajama_set_name", pa.string())])
    assert table.schema.field("meta").type == (pa.string() if meta_as_json_string else struct)
    pq.write_table(table, path, row_group_size=5)
    return path
