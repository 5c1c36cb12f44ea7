"""Datasets streamed through Hugging Face ``datasets``: Hub datasets, and packaged builders over local files.

``load_dataset(id, config, split=split, data_files=..., streaming=True)`` yields records one at a time; nothing
is downloaded up front. The stream is cut into at most :data:`MAX_SHARDS` shards with ``IterableDataset.shard``
(contiguous groups of the dataset's files), so workers share the work and a scan checkpoints per group. A
worker builds the stream once per process and reuses it for every shard it reads.

Offline or unreachable Hub: ``datasets`` retries for ~20 s before failing. Instead, ``HF_HUB_OFFLINE`` /
``HF_DATASETS_OFFLINE`` fail at once, and otherwise one metadata request (``HfApi.dataset_info``, bounded to
:data:`PROBE_TIMEOUT` seconds, run in a thread so a slow DNS lookup cannot hang it either) checks the dataset
before ``datasets`` is even imported; either way the error is one line naming the dataset and suggesting
``--data-files``. Packaged builders over local files (``json``, ``parquet``, ...) never touch the network:
``open_corpus("json", data_files="shards/*.jsonl")`` reads local files through ``datasets``.

Tokenized datasets (a token-id list column such as ``input_ids``, or a length column) stream as lengths, as
their local Parquet/Arrow files do (:mod:`freqlab.corpus.token_columns`): no tokenizer is loaded.
"""

from __future__ import annotations

import functools
import glob
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from freqlab.corpus.base import (
    Corpus,
    Document,
    LengthBatch,
    LengthShard,
    Shard,
    UnreadableFile,
    changed_message,
    describe_error,
)
from freqlab.corpus.fields import DEFAULT_TOKENS_FIELD, Fields
from freqlab.corpus.file_discovery import DataFile, FileChanged, stat_file
from freqlab.corpus.presets import PRESETS
from freqlab.corpus.remote_files import is_url, offline_variable  # offline_variable: kept for import compatibility
from freqlab.errors import FreqlabError, brief_line
from freqlab.paths import expand_home

MAX_SHARDS = 256
PROBE_TIMEOUT = 3.0
DEFAULT_ENDPOINT = "https://huggingface.co"
# Builders shipped inside `datasets` that read files given as data_files (no Hub access needed for local files).
PACKAGED_BUILDERS = frozenset({"json", "parquet", "arrow", "text", "csv", "pandas", "webdataset", "xml"})
#: builders that guess a column's type from its values (pandas): a text column mixing numbers and strings comes
#: out with strings such as "12" or "true" turned into numbers and booleans, which are then no text
TYPE_GUESSING_BUILDERS = frozenset({"json", "csv"})
TYPE_GUESS_NOTE = (
    "as datasets delivered the records: its builder reads a column that mixes numbers and strings with pandas, "
    'which turns strings such as "12" or "true" into numbers; --dataset PATH reads JSON lines as written'
)


def _hint(dataset: str, data_files: bool = False) -> str:
    """How to scan local copies instead: with the matching preset's field mapping when there is one."""
    preset = next((p.name for p in PRESETS.values() if p.id == dataset), None)
    if preset is not None:
        return f"to scan local copies of its files use --dataset {preset} --data-files 'PATH/OR/GLOB'"
    if data_files:  # a review: the hint repeated the option given (beside a Hub id, files inside its repository)
        return (
            "beside a Hub dataset id, --data-files name files inside its repository: to scan local files, give "
            "them as --dataset PATH (or --dataset json/parquet --data-files 'PATH/OR/GLOB')"
        )
    return "to scan local copies of its files use --data-files 'PATH/OR/GLOB' (with --text-field if not 'text')"


def probe_hub(dataset: str, timeout: float = PROBE_TIMEOUT, data_files: bool = False) -> str | None:
    """Raise FreqlabError (one line, within ~``timeout`` s) unless the Hub is reachable and has ``dataset``; its
    revision (the commit the Hub serves now) when it says, which checkpoints of its shards record.
    ``data_files``: whether --data-files were given (the hint then says what they mean beside a Hub id).
    """
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:  # a name no dataset can have is said so, never blamed on the network (a review)
        validate_repo_id(dataset)
    except HFValidationError as exc:
        raise FreqlabError(
            f"{dataset}: no local file or folder, preset or Hugging Face dataset id ({brief_line(str(exc), 160)})"
        ) from None
    hint = _hint(dataset, data_files)
    if (variable := offline_variable()) is not None:
        raise FreqlabError(f"{dataset}: Hugging Face Hub access is off ({variable}=1); {hint}")
    outcome: list[BaseException | None] = []
    revision: list[str | None] = []

    def request() -> None:
        from huggingface_hub import HfApi

        try:
            info = HfApi(endpoint=os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT)).dataset_info(
                dataset, timeout=timeout
            )
            revision.append(getattr(info, "sha", None))
            outcome.append(None)
        except BaseException as exc:  # reported to the caller below
            outcome.append(exc)

    thread = threading.Thread(target=request, name="freqlab-hub-probe", daemon=True)
    thread.start()
    thread.join(timeout + 0.5)
    if not outcome:
        raise FreqlabError(f"{dataset}: the Hugging Face Hub did not answer within {timeout:g} s; {hint}")
    error = outcome[0]
    if error is None:
        return revision[0] if revision and isinstance(revision[0], str) else None
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    if isinstance(error, GatedRepoError):
        return None  # it exists; load_dataset explains how to get access (token, accepting the terms)
    if isinstance(error, RepositoryNotFoundError):
        raise FreqlabError(
            f"{dataset}: no such dataset on the Hugging Face Hub (or it is private); "
            "check the id, or give a preset name or local files"
        )
    what = "HTTP error" if isinstance(error, HfHubHTTPError) else "network error"
    detail = describe_error(error)
    raise FreqlabError(f"{dataset}: cannot reach the Hugging Face Hub ({what}: {detail}); {hint}")


def _quiet_datasets() -> None:
    """``datasets`` logs a line of its own before raising on a bad file; the error freqlab raises says it all."""
    from datasets.utils import logging as datasets_logging

    datasets_logging.set_verbosity_error()
    datasets_logging.get_logger("datasets.packaged_modules").setLevel(datasets_logging.CRITICAL)


@functools.lru_cache(maxsize=4)
def _stream(dataset: str, config: str | None, split: str, data_files: tuple[str, ...] | None):
    """The streaming IterableDataset (cached: a worker reading several shards builds it once)."""
    from datasets import load_dataset

    _quiet_datasets()
    try:
        return load_dataset(
            dataset,
            config,
            split=split,
            data_files=list(data_files) if data_files else None,
            streaming=True,
        )
    except Exception as exc:  # DatasetNotFoundError, missing config, scripts no longer supported, ...
        hint = _hint(dataset)
        if data_files:  # given already: datasets puts files given as a list under split "train"
            hint = (
                f"datasets puts --data-files under the split 'train': drop --split {split}, and name that split's "
                "files in --data-files (or give their folder as --dataset PATH, read by its split's names)"
                if split != "train"
                # a review: an empty or damaged first file failed here, named by no path, even with --on-error skip
                else f"datasets reads the first of --data-files ({_first_file(data_files[0])}) to learn the columns: "
                "check it, or "
                "give the files as --dataset PATH, whose readers name a bad file (and pass over it with --on-error "
                "skip)"
            )
        raise FreqlabError(f"{dataset}: cannot open with datasets ({describe_error(exc)}); {hint}") from exc


def _first_file(pattern: str) -> str:
    """The first file a --data-files pattern names (datasets sorts the matches), or the pattern itself."""
    if any(char in pattern for char in "*?["):
        matches = sorted(glob.glob(pattern, recursive=True))
        return matches[0] if matches else pattern
    return pattern


def _label(dataset: str, config: str | None, split: str) -> str:
    return f"{dataset}{'/' + config if config else ''}[{split}]"


@dataclass(frozen=True)
class HubShard(Shard):
    """Shard ``index`` of ``num_shards`` of a dataset streamed through ``datasets``."""

    id: str
    dataset: str
    config: str | None
    split: str
    data_files: tuple[str, ...] | None
    fields: Fields
    index: int = 0
    num_shards: int = 1
    files: tuple[str, ...] = ()  # the local files this shard streams (packaged builders), when known
    # what checkpoints of it must match, stamped when the corpus was opened: the local files it may read (its own when
    # known, else all the builder's), or the Hub's revision (a review: a resumed builder scan kept the counts of files
    # since shrunk, and a file rewritten during the scan mixed two versions, where local paths refuse both)
    stamped: tuple[DataFile, ...] = ()
    revision: str | None = None

    def identity(self) -> dict:
        """The stamps of the local files this shard may read, or the Hub revision it streams ({} when neither)."""
        if self.stamped:
            return {"files": {file.path: file.identity() for file in self.stamped}}
        return {"revision": self.revision} if self.revision else {}

    def check_unchanged(self) -> None:
        """Raise :class:`~freqlab.corpus.file_discovery.FileChanged` when a local file this shard may read changed
        since the corpus was opened (before and after the read, as local paths are checked).
        """
        for file in self.stamped:
            file.check_unchanged()

    def local_paths(self) -> tuple[str, ...]:
        """The local files the shard may read (a Ray node must see each at this path)."""
        return tuple(file.path for file in self.stamped)

    def _check_before_reading(self) -> None:
        """:meth:`check_unchanged`, a change said as an unreadable file naming it (skipped under --on-error skip),
        as a local path's reader says it (a review: "Error: size 47850026 -> 47850039 bytes", and skip aborted).
        """
        try:
            self.check_unchanged()
        except FileChanged as exc:
            raise UnreadableFile(changed_message(exc.path or self.id, exc), exc.path or self.id) from exc

    def stream(self):
        """The shard's part of the streaming dataset."""
        stream = _stream(self.dataset, self.config, self.split, self.data_files)
        return stream.shard(num_shards=self.num_shards, index=self.index) if self.num_shards > 1 else stream

    @property
    def non_string_note(self) -> str:
        """What to add to a ``non-string-text`` error: a builder's type guessing may have made it."""
        return f" ({TYPE_GUESS_NOTE})" if self.dataset in TYPE_GUESSING_BUILDERS else ""

    @property
    def row_prefix(self) -> str:
        """How rows are named in messages: one local file's records are numbered in it; else the stream shard."""
        if len(self.files) == 1:
            return f"{self.files[0]}:record "
        return f"{_label(self.dataset, self.config, self.split)}#{self.index}:row "

    def read(self) -> Iterator[Document]:
        """The shard's documents, streamed from the Hub."""
        extract = self.fields.extractor()
        prefix = self.row_prefix
        row = 0
        self._check_before_reading()
        try:
            for record in self.stream():
                row += 1
                text, source, error = extract(record)
                yield Document(text, source, f"{prefix}{row}", error)
        except FreqlabError:
            raise
        except Exception as exc:  # a file that the builder cannot parse, a dropped connection, ...
            raise self.failure(exc, row + 1) from exc

    def _bad_line(self) -> int | None:
        """The first line that is no JSON object of this shard's one local JSON-lines file, else None."""
        from freqlab.corpus.jsonl import JSONL, first_bad_line  # the JSON-lines reader loads with the format

        if len(self.files) != 1 or not JSONL.claims(self.files[0]) or is_url(self.files[0]):
            return None
        return first_bad_line(self.files[0])

    def failure(self, exc: Exception, row: int) -> FreqlabError:
        """The one-line error of a stream that fails at ``row``: a local file's may be skipped (--on-error skip)."""
        message = f"{self.row_prefix}{row}: cannot read ({describe_error(exc)})"
        line = self._bad_line()
        if line is not None:  # the builder numbers records in its block: the line is what the user can find
            message = f"{self.files[0]}:{line}: cannot read ({describe_error(exc)})"
        if self.files:  # the native reader names the bad line
            single = len(self.files) == 1 and line is None
            hint = f"; `--dataset {self.files[0]}` reads it natively, naming the bad line" if single else ""
            return UnreadableFile(message + hint, ", ".join(self.files))
        return FreqlabError(message)


@dataclass(frozen=True)
class HubLengthShard(HubShard, LengthShard):
    """A :class:`HubShard` of tokenized data: each record's length is the length of its token-id list or the
    value of its length column (``column``: ``(kind, name)``, see :func:`~freqlab.corpus.token_columns.token_column`).
    Rows come as Arrow tables, so lengths are read from the list offsets without a Python object per token.
    """

    column: tuple[str, str] = ("tokens", DEFAULT_TOKENS_FIELD)

    def read_lengths(self) -> Iterator[LengthBatch]:
        """The shard's document lengths, from the dataset's token column."""
        from freqlab.corpus.token_columns import BATCH_ROWS, length_batches  # pyarrow: only for token columns

        prefix, name = self.row_prefix, _label(self.dataset, self.config, self.split)
        row = 0
        self._check_before_reading()
        try:
            for table in self.stream().with_format("arrow").iter(batch_size=BATCH_ROWS):
                yield from length_batches(table, self.column, self.fields.source, prefix, row + 1, name)
                row += table.num_rows
        except FreqlabError:
            raise
        except Exception as exc:
            raise self.failure(exc, row + 1) from exc


def streamed_corpus(
    dataset: str,
    *,
    config: str | None,
    split: str,
    data_files: list[str] | None,
    fields: Fields,
    name: str,
    description: dict,
) -> Corpus:
    """A corpus streamed through ``datasets`` (probing the Hub first unless ``dataset`` is a packaged builder)."""
    local = dataset in PACKAGED_BUILDERS
    fields.read.refuse_eos_id(dataset, "datasets streamed by the datasets library (a Hub id, --dataset json ...)")
    revision = None
    if local:
        if not data_files:
            raise FreqlabError(f"{dataset}: the {dataset!r} builder reads local files: pass them with --data-files")
        data_files = expand_data_files(data_files)
    else:
        revision = probe_hub(dataset, data_files=bool(data_files))
    files = tuple(data_files) if data_files else None
    stream = _stream(dataset, config, split, files)
    count = max(1, min(stream.num_shards, MAX_SHARDS))
    groups = _file_groups(list(files or ()), stream.num_shards, count) if local else [()] * count
    column = _token_column(stream, fields)
    stamps = {path: stat_file(path, path) for path in files or () if not is_url(path)}  # stamped once, when opened
    shards: list[Shard] = []
    for i, group in enumerate(groups):
        # a shard whose own files cannot be told may read any of them
        stamped = tuple(stamps[path] for path in (group or files or ()) if path in stamps)
        kind, extra = (HubShard, {}) if column is None else (HubLengthShard, {"column": column})
        shard_id = f"{dataset}:{split}:{i:03d}-of-{count:03d}"
        args = (shard_id, dataset, config, split, files, fields, i, count, group)
        shards.append(kind(*args, stamped=stamped, revision=revision, **extra))
    total = None
    splits = getattr(stream.info, "splits", None)
    if not data_files and splits and split in splits:
        total = splits[split].num_examples or None  # from the dataset card, when it says
    info = {
        "kind": "builder" if local else "hub",
        "id": dataset,
        "config": config,
        "split": split,
        **({"text_field": fields.text} if column is None else {f"{column[0]}_field": column[1]}),
        "source_field": fields.source,
        "streamed_with": "datasets",
        "stream_shards": stream.num_shards,
    }
    if files:
        info["data_files"] = len(files)
    info.update(description)
    return Corpus(
        name=name,
        shards=shards,
        has_sources=fields.source is not None,
        description=info,
        total_documents=total,
        read_options=fields.read,
    )


def _token_column(stream, fields: Fields) -> tuple[str, str] | None:
    """``(kind, column)`` when the stream's records are read as lengths (``--tokens-field``, ``--length-field``,
    or no text column but an ``input_ids`` one among the features the dataset declares), else None (text).
    """
    from freqlab.corpus.token_columns import token_column  # pyarrow: only for token columns

    names = list(stream.features or {}) if stream.features is not None else []
    return token_column(fields, names)


def _file_groups(files: list[str], stream_shards: int, count: int) -> list[tuple[str, ...]]:
    """The local files each of ``count`` shards streams: ``IterableDataset.shard`` hands out contiguous groups
    (one file per stream shard for the packaged builders); () when that cannot be told.
    """
    if stream_shards != len(files):
        return [()] * count
    from datasets.utils.sharding import _distribute_shards  # the split IterableDataset.shard uses

    return [tuple(files[k] for k in group) for group in _distribute_shards(len(files), count)]


def _walk_files(top: str) -> list[str]:
    """The regular files below ``top`` (hidden names left out), folder links followed once each, as a folder scan
    follows them (a review: a linked subfolder was skipped, a dangling link in the folder stopped the scan).
    """
    seen: set[tuple[int, int]] = set()
    found: list[str] = []
    for folder, dirs, names in os.walk(top, followlinks=True):
        info = os.stat(folder)
        if (info.st_dev, info.st_ino) in seen:  # a link back up the tree: walked already
            dirs[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [
            os.path.join(folder, n) for n in names if not n.startswith(".") and os.path.isfile(os.path.join(folder, n))
        ]
    return found


def expand_data_files(patterns: list[str]) -> list[str]:
    """Local files for a packaged builder: globs expanded and sorted, folders walked; missing ones raise."""
    files: list[str] = []
    for pattern in patterns:
        if "://" in pattern:
            files.append(pattern)  # a URL: datasets fetches it
            continue
        path = expand_home(pattern)
        if glob.has_magic(path):
            matches = sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p))
            if not matches:
                raise FreqlabError(f"{pattern}: no files match this pattern")
            files.extend(os.path.abspath(p) for p in matches)
        elif os.path.isdir(path):
            walked = sorted(_walk_files(path))
            if not walked:
                raise FreqlabError(f"{pattern}: empty folder")
            files.extend(os.path.abspath(p) for p in walked)
        elif os.path.isfile(path):
            files.append(os.path.abspath(path))
        else:
            raise FreqlabError(f"{pattern}: no such file or directory")
    kept: dict[object, str] = {}  # a file reached twice (a symlink to it, a hard link) is read once, as local paths
    for path in files:  # a review: a link beside its target counted 800 documents for 600
        try:
            info = os.stat(path) if "://" not in path else None
        except OSError:
            info = None
        kept.setdefault((info.st_dev, info.st_ino) if info is not None else path, path)
    return list(kept.values())
