"""Local data: files, folders (recursive) and globs, in any of the supported formats, as shards.

==========================================================  =====================  ============================
file name ends with                                         format                 shard
==========================================================  =====================  ============================
``.jsonl`` ``.json`` ``.ndjson`` (+ ``.gz``, ``.zst``)      JSON lines             one per file
``.parquet``                                                Parquet                one per file
``.arrow``                                                  Arrow IPC              one per file
``.txt``                                                    one document per file  groups of 256 files
a folder with ``state.json`` (``datasets.save_to_disk``)    its Arrow files        one per Arrow file
a folder with ``dataset_dict.json`` (a saved DatasetDict)   the ``split`` subset   one per Arrow file
==========================================================  =====================  ============================

Each path, folder or glob is expanded in sorted order (deterministic), duplicates dropped. A file named
explicitly must have a known format; files of unknown formats met inside folders or matched by globs
(a README, a checksum file) are passed over and counted in ``description["ignored_files"]``. Hidden files
and folders (``.git``) are not entered. A missing path, a glob matching nothing, or a file that cannot be
opened raises FreqlabError at once; a corrupt file (a bad Parquet footer, a truncated ``.zst``) fails when
read (``unreadable-file``: the scan raises, or counts it with ``on_error="skip"``). Empty files are fine
(zero documents) and counted in ``description["empty_files"]``: zero bytes, a Parquet/Arrow table of zero
rows, or a compressed JSON-lines file of nothing. ``config``, and a ``split`` other than ``"train"`` outside a
saved DatasetDict, mean nothing for local files: they raise rather than being ignored.

Shard ids are paths relative to the common folder of all files, so they stay stable when the data moves.
"""

from __future__ import annotations

import glob
import json
import os
from collections import Counter
from dataclasses import dataclass, field

from freqlab.corpus.base import MISSING_SOURCE, Corpus, FileShard, Shard
from freqlab.corpus.columnar import ArrowShard, ParquetShard
from freqlab.corpus.fields import Fields
from freqlab.corpus.jsonl import JsonlShard
from freqlab.corpus.text import group_files
from freqlab.errors import FreqlabError

_JSON_SUFFIXES = tuple(
    f"{base}{compression}" for base in (".jsonl", ".json", ".ndjson") for compression in ("", ".gz", ".zst", ".zstd")
)
SUPPORTED = "JSON lines (.jsonl/.json/.ndjson, optionally .gz/.zst), .parquet, .arrow, .txt, a save_to_disk folder"

_SHARD_TYPES: dict[str, type[FileShard]] = {"jsonl": JsonlShard, "parquet": ParquetShard, "arrow": ArrowShard}
# JSON-lines files up to this size are read at open time to tell whether they hold any record.
_SMALL_FILE = 4096

# Metadata files of saved datasets: JSON, but never JSON-lines data (a glob like saved/* matches them).
_DATASETS_METADATA = frozenset({"state.json", "dataset_info.json", "dataset_dict.json"})


def file_format(path: str) -> str | None:
    """``jsonl``, ``parquet``, ``arrow`` or ``txt`` from the file name, or None when unknown."""
    lower = path.lower()
    if os.path.basename(lower) in _DATASETS_METADATA:
        return None
    if lower.endswith(_JSON_SUFFIXES):
        return "jsonl"
    for fmt in ("parquet", "arrow", "txt"):
        if lower.endswith(f".{fmt}"):
            return fmt
    return None


def is_saved_dataset(folder: str) -> bool:
    """True for a folder written by ``Dataset.save_to_disk`` or ``DatasetDict.save_to_disk``."""
    return os.path.isfile(os.path.join(folder, "dataset_dict.json")) or (
        os.path.isfile(os.path.join(folder, "state.json")) and os.path.isfile(os.path.join(folder, "dataset_info.json"))
    )


def saved_dataset_files(folder: str, split: str) -> list[str]:
    """The Arrow files of a saved dataset, in their recorded order (for a DatasetDict: of ``split``)."""
    dict_file = os.path.join(folder, "dataset_dict.json")
    if os.path.isfile(dict_file):
        splits = _read_json(dict_file).get("splits", [])
        if split not in splits:
            raise FreqlabError(f"{folder}: saved DatasetDict has no split {split!r} (splits: {', '.join(splits)})")
        folder = os.path.join(folder, split)
    state = _read_json(os.path.join(folder, "state.json"))
    names = [entry["filename"] for entry in state.get("_data_files", [])]
    return [os.path.join(folder, name) for name in names]


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise FreqlabError(f"{path}: cannot read saved-dataset metadata ({exc})") from exc


@dataclass
class _Found:
    """Files found so far: (path, format) in order, plus what was passed over."""

    files: list[tuple[str, str]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    ignored: list[str] = field(default_factory=list)
    split_used: bool = False  # a saved DatasetDict was read, so ``split`` chose its subset

    def add(self, path: str, fmt: str) -> None:
        key = os.path.realpath(path)
        if key not in self.seen:
            self.seen.add(key)
            self.files.append((path, fmt))


def _visit(path: str, split: str, found: _Found) -> None:
    """Add a file of a known format, walk a folder, pass over (and count) any other file."""
    if os.path.isdir(path):
        _walk(path, split, found)
    elif (fmt := file_format(path)) is not None:
        found.add(path, fmt)
    else:
        found.ignored.append(path)


def _walk(folder: str, split: str, found: _Found) -> None:
    if is_saved_dataset(folder):
        found.split_used |= os.path.isfile(os.path.join(folder, "dataset_dict.json"))
        for path in saved_dataset_files(folder, split):
            found.add(path, "arrow")
        return
    for entry in sorted(e for e in os.listdir(folder) if not e.startswith(".")):
        _visit(os.path.join(folder, entry), split, found)


def _expand(spec: str, split: str, found: _Found) -> None:
    path = os.path.expanduser(spec)
    if glob.has_magic(path):
        matches = sorted(glob.glob(path, recursive=True))
        if not matches:
            raise FreqlabError(f"{spec}: no files match this pattern")
        for match in matches:
            _visit(match, split, found)
    elif os.path.isdir(path):
        _walk(path, split, found)
    elif os.path.isfile(path):
        fmt = file_format(path)
        if fmt is None:
            raise FreqlabError(f"{spec}: unknown file format; supported: {SUPPORTED}")
        found.add(path, fmt)
    else:
        raise FreqlabError(f"{spec}: no such file or directory")


def _check_readable(path: str) -> int:
    """The file's size; raises FreqlabError when it cannot be opened for reading."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise FreqlabError(f"{path}: cannot open for reading ({exc.strerror or exc})") from exc
    try:
        return os.fstat(descriptor).st_size
    finally:
        os.close(descriptor)


def find_files(
    specs: list[str], split: str = "train", config: str | None = None
) -> tuple[list[tuple[str, str]], list[str]]:
    """``([(path, format), ...], ignored_paths)`` for paths, folders and globs; raises when nothing is found.

    ``config`` and a ``split`` other than ``"train"`` mean nothing for local files (``split`` only chooses the
    subset of a saved DatasetDict): rather than ignore them silently, that raises.
    """
    found = _Found()
    for spec in specs:
        _expand(spec, split, found)
    if not found.files:
        shown = ", ".join(specs)
        raise FreqlabError(f"{shown}: no data files found (supported: {SUPPORTED})")
    shown = " ".join(specs)
    if config is not None:
        raise FreqlabError(f"{shown}: --config {config!r} applies to Hugging Face datasets, not to local files")
    if split != "train" and not found.split_used:
        raise FreqlabError(
            f"{shown}: --split {split!r} applies to Hugging Face datasets and saved DatasetDict folders; "
            "local files are read whole (drop --split, or point at the split's files)"
        )
    return found.files, found.ignored


def local_corpus(
    specs: list[str],
    fields: Fields,
    *,
    name: str,
    split: str = "train",
    config: str | None = None,
    description: dict | None = None,
) -> Corpus:
    """A corpus over local files/folders/globs, with ``fields`` mapping records to text and source."""
    files, ignored = find_files(specs, split, config)
    sizes = {path: _check_readable(path) for path, _ in files}
    root = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p, _ in files])

    def rel(path: str) -> str:
        return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")

    shards: list[Shard] = []
    rows: list[int | None] = []  # records per data file; None: known only by reading it (JSON lines)
    texts: list[str] = []
    empty_files = 0
    for path, fmt in files:
        if fmt == "txt":
            texts.append(rel(path))
            empty_files += sizes[path] == 0
            continue
        shard = _SHARD_TYPES[fmt](rel(path), path, fields)
        shards.append(shard)
        try:
            rows.append(shard.rows())
        except FreqlabError:  # a corrupt footer: the scan meets it again when reading (and raises or skips)
            rows.append(None)
        empty_files += _holds_no_records(shard, sizes[path], rows[-1])
    if texts:
        # .txt files carry no label; in a labelled corpus they count under the "(none)" source.
        labels = None if fields.source is None else [MISSING_SOURCE] * len(texts)
        shards.extend(group_files(root, texts, labels))
    total = None if None in rows else sum(rows) + len(texts)  # type: ignore[arg-type]

    formats = Counter(_format_name(path, fmt) for path, fmt in files)
    info = {
        "kind": "local",
        "id": " ".join(specs),
        "text_field": fields.text,
        "source_field": fields.source,
        "root": root,
        "files": len(files),
        "formats": dict(sorted(formats.items())),
        "empty_files": empty_files,
        "ignored_files": len(ignored),
    }
    if ignored:
        info["ignored_examples"] = ignored[:5]
    info.update(description or {})
    return Corpus(
        name=name, shards=shards, has_sources=fields.source is not None, description=info, total_documents=total
    )


def _holds_no_records(shard: FileShard, size: int, rows: int | None) -> bool:
    """An empty data file: zero bytes, zero rows, or a small JSON-lines file without a record (a compressed
    empty file still has a header: ~10-20 bytes; blank lines are not records)."""
    if size == 0 or rows == 0:
        return True
    if rows is not None or size > _SMALL_FILE:
        return False
    try:
        return next(iter(shard.read()), None) is None
    except FreqlabError:
        return False  # corrupt: reading the shard reports it, as for any other file


def _format_name(path: str, fmt: str) -> str:
    lower = path.lower()
    if fmt == "jsonl":
        for compression in (".gz", ".zst", ".zstd"):
            if lower.endswith(compression):
                return f"jsonl{compression}"
    return fmt
