"""Local data: files, folders (recursive) and globs, in any registered format, as shards.

==========================================================  =====================  ============================
file name ends with                                         format                 shard
==========================================================  =====================  ============================
``.jsonl`` ``.json`` ``.ndjson`` (+ ``.gz``, ``.zst``)      JSON lines             a file, or a byte range of it
``.parquet``                                                Parquet                a file, or a run of row groups
``.arrow``                                                  Arrow IPC              one per file
``.txt``                                                    one document per file  groups of 256 files
a folder with ``state.json`` (``datasets.save_to_disk``)    its Arrow files        one per Arrow file
a folder with ``dataset_dict.json`` (a saved DatasetDict)   the ``split`` subset   one per Arrow file
a ``datasets`` cache folder (``dataset_info.json``)         the ``split``'s files  one per Arrow file
==========================================================  =====================  ============================

Formats come from :mod:`freqlab.corpus.registry` (``format`` reads only that one); finding files is
:mod:`freqlab.corpus.file_discovery`; cutting large files into parts is :mod:`freqlab.corpus.ranges`. Empty files are
fine (zero documents) and counted in ``description["empty_files"]``: zero bytes, a Parquet/Arrow table of zero
rows, or a compressed JSON-lines file of nothing. A corrupt file (a bad Parquet footer, a truncated ``.zst``)
fails when read (``unreadable-file``: the scan raises, or counts it with ``on_error="skip"``).

Shard ids are paths relative to the common folder of all files (plus the part, for a file cut into parts), so
they stay stable when the data moves. URLs (``hf://``, ``s3://``, ``gs://``, ``http(s)://``) are expanded and read the
same way through fsspec (:mod:`freqlab.corpus.remote_files`).
"""

from __future__ import annotations

import itertools
import os
from collections import Counter

from freqlab.corpus.base import LENGTHS, TEXT, Corpus, Shard
from freqlab.corpus.fields import Fields
from freqlab.corpus.file_discovery import find_files, relative_ids, stat_file
from freqlab.corpus.ranges import range_bytes
from freqlab.corpus.registry import format_of, get_format
from freqlab.corpus.remote_files import find_remote, is_url
from freqlab.errors import FreqlabError


def local_corpus(
    specs: list[str],
    fields: Fields,
    *,
    name: str,
    split: str = "train",
    config: str | None = None,
    description: dict | None = None,
    format: str | None = None,
) -> Corpus:
    """A corpus over local files/folders/globs, with ``fields`` mapping records to text and source."""
    only = get_format(format).name if format is not None else None

    def name_of(path: str) -> str | None:
        fmt = format_of(path)
        return None if fmt is None else fmt.name

    def remote_name_of(path: str) -> str | None:  # URLs: files of other formats are passed over
        fmt = name_of(path)
        return fmt if only is None or fmt == only else None

    shown = " ".join(specs)
    if any(is_url(spec) for spec in specs):  # remote data: the same formats and shards, through fsspec
        found, remote_files, root = find_remote(specs, remote_name_of, split, config)
        files = [(file, get_format(fmt)) for file, fmt in remote_files]
    else:
        found = find_files(specs, name_of, split, config, only)
        root, ids = relative_ids([path for path, _ in found.files])
        files = [(stat_file(path, ids[path]), get_format(fmt)) for path, fmt in found.files]
    counts = dict(sorted(Counter(_format_label(path, fmt) for path, fmt in found.files).items()))
    estimated = sum(fmt.estimated_bytes(file) for file, fmt in files)
    part = range_bytes(estimated)
    units: dict[str, str] = {}  # format -> what its lengths count: text for a tokenizer, or tokenized data
    # shards in file order (limits take "the first documents"): each run of files of one format at a time. Parquet's
    # and Arrow's are made first, since their columns tell their unit, and files in different units are refused
    # before any other format reads its files (whose own errors, a token stream's missing --eos-id, would hide it)
    runs = [(fmt, [file for file, _ in run]) for fmt, run in itertools.groupby(files, key=lambda pair: pair[1])]
    made: dict[int, list[Shard]] = {}
    # a Parquet or Arrow file whose footer cannot be read has no known columns, so no unit: it is read (and reported,
    # or skipped with on_error="skip") like the others, not called text (a review)
    unreadable = {
        file.path for file, fmt in files if fmt.columns_decide_unit and file.size and fmt.records(file) is None
    }
    example: dict[tuple[str, str], str] = {}  # (format, unit) -> its first shard's file (what a refusal names)
    for first in (True, False):
        for k, (fmt, run) in enumerate(runs):
            if fmt.columns_decide_unit == first:
                made[k] = fmt.shards(run, fields, part)
                for shard in made[k]:
                    if shard.part_of() in unreadable:
                        continue
                    unit = TEXT if shard.kind == TEXT else fmt.name if fmt.kind != TEXT else "token columns"
                    example.setdefault((fmt.name, unit), shard.part_of())
                    if units.setdefault(fmt.name, unit) != unit:
                        text, ids = example[fmt.name, TEXT], example[fmt.name, "token columns"]
                        raise FreqlabError(
                            f"{shown}: {fmt.name} files of text ({text}) and of token ids ({ids}) found together: "
                            "their lengths are in different units and are never added; name one kind of file"
                        )
        if first:  # a Parquet or Arrow file without a shard (empty) is in no unit
            named = {fmt.name: TEXT if fmt.kind == TEXT else fmt.name for fmt, _ in runs if not fmt.columns_decide_unit}
            check_one_unit(shown, counts, {**named, **units})
    shards = [shard for k in range(len(runs)) for shard in made[k]]
    column = fields.read.tokens_field or fields.read.length_field
    read_as_text = sorted(name for name, unit in units.items() if unit == TEXT)  # JSON lines, .txt: no such column
    if column and read_as_text:
        option = "--tokens-field" if fields.read.tokens_field else "--length-field"
        raise FreqlabError(
            f"{shown}: {option} {column!r} reads a column of Parquet or Arrow files (or of a dataset streamed by "
            f"datasets); {', '.join(read_as_text)} files are read as text (--text-field)"
        )
    eos_unused = sorted(name for name, unit in units.items() if unit in (TEXT, "token columns"))
    if eos_unused and len(eos_unused) == len(units):
        fields.read.refuse_eos_id(shown, f"{', '.join(eos_unused)} files")
    described: dict = {}
    for fmt in dict.fromkeys(fmt for _, fmt in files):
        described.update(fmt.describe([file for file, f in files if f is fmt], fields))
    rows = [fmt.records(file) for file, fmt in files]
    # a remote file is not read to tell (a request per small file): zero bytes is empty
    empty_files = sum(file.size == 0 if file.remote else fmt.is_empty(file) for file, fmt in files)
    total = None if None in rows else sum(rows)  # type: ignore[arg-type]

    info = {
        "kind": "local",
        "id": " ".join(specs),
        "text_field": fields.text,
        "source_field": fields.source,
        "root": root,
        "files": len(found.files),
        "formats": counts,
        "empty_files": empty_files,
        "ignored_files": len(found.ignored),
        "not_regular_files": len(found.not_regular),
        "duplicate_files": len(found.duplicates),
    }
    if found.split_used:  # a saved DatasetDict or a datasets cache folder: which of its splits was read
        info["split"] = split
    if found.splits_named:  # a folder of files named for several splits, all read: the report says so
        info["splits_named"] = dict(sorted(found.splits_named.items()))
    if only is not None:
        info["format"] = only
    if found.other_formats:
        info["other_formats"] = dict(sorted(found.other_formats.items()))
    if found.hidden:  # said when some
        info["hidden_entries"] = len(found.hidden)
    for key, paths in (("ignored", found.ignored), ("not_regular", found.not_regular), ("duplicate", found.duplicates)):
        if paths:
            info[f"{key}_examples"] = [_printable(p) for p in paths[:5]]
    if not fields.read.is_default:
        info["read_options"] = fields.read.describe()
    info.update(described)
    info.update(description or {})
    return Corpus(
        name=name,
        shards=shards,
        has_sources=fields.source is not None,
        description=info,
        total_documents=total,
        estimated_bytes=estimated,
        empty_kind=LENGTHS if all(fmt.kind == LENGTHS for _, fmt in files) else TEXT,
        read_options=fields.read,
        folders=found.folders,
        patterns=tuple(found.patterns),
    )


def check_one_unit(shown: str, counts: dict[str, int], units: dict[str, str]) -> None:
    """Refuse files whose lengths are in different units: text (tokenized by the scan's tokenizer) beside
    tokenized data, or tokenized data of different kinds (each may come from another tokenizer or EOS
    convention). ``counts``: files per format label; ``units``: format name -> ``text`` or the tokenized kind.
    Text formats (JSON lines, Parquet, Arrow, ``.txt``) merge: one tokenizer counts them all.
    """
    kinds = set(units.values())
    if len(kinds) < 2:
        return

    def base(label: str) -> str:
        return label.split(".", 1)[0]  # jsonl.zst -> jsonl

    found = ", ".join(
        f"{n:,} {label} ({'text' if units.get(base(label)) == TEXT else 'tokenized'})" for label, n in counts.items()
    )
    what = "text and tokenized files" if TEXT in kinds else "tokenized files of different kinds"
    names = "|".join(dict.fromkeys(base(label) for label in counts))
    raise FreqlabError(
        f"{shown}: {what} found together ({found}): their lengths are in different units and are never added; "
        f"read one format with --format {names} (format= in Python)"
    )


def _printable(path: str) -> str:
    r"""A path as printable text (undecodable bytes of a file name as ``\xNN``)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _format_label(path: str, fmt: str) -> str:
    """``jsonl.zst`` for compressed JSON lines, else the format's name."""
    lower = path.lower()
    if fmt == "jsonl":
        for compression in (".gz", ".zst", ".zstd"):
            if lower.endswith(compression):
                return f"jsonl{compression}"
    return fmt
