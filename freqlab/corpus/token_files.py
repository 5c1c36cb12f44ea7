"""What the readers of tokenized training data share: shards over a range of documents, lengths from document
ends, and the check of whether documents end with an EOS token.

A tokenized file holds each document's tokens as the trainer read them, so its length is what the file holds:
an EOS appended by the writer (Megatron's ``--append-eod``, datatrove's ``eos_token``) is a token the model
trains on, and counts. Whether the source had one is checked on the first :data:`EOS_CHECKED` documents of
each file (their last token), against ``--eos-id`` when given, else by whether they all end with one token.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from freqlab.corpus.base import LENGTHS, FileShard, LengthBatch, LengthShard, changed_while_read
from freqlab.corpus.fields import Fields
from freqlab.corpus.file_discovery import DataFile, FileChanged, stat_file
from freqlab.corpus.registry import FileFormat
from freqlab.errors import FreqlabError
from freqlab.jit import njit

BATCH_DOCUMENTS = 1 << 21  # documents per LengthBatch: 16 MiB of int64 lengths
EOS_CHECKED = 1000  # documents per file whose last token is read to tell whether an EOS was appended
MIN_SHARD_DOCUMENTS = 1 << 22  # reading lengths is cheap: shards need not be small
CHUNK_TOKENS = 1 << 24  # tokens read from a token file at a time (compared with an EOS or EOD id)


@dataclass(frozen=True)
class TokenFileShard(FileShard, LengthShard):
    """Documents ``start`` .. ``end - 1`` of a tokenized file (``end`` None: to the last document).

    Subclasses implement :meth:`batches`; :meth:`read_lengths` checks the file is unchanged and turns the
    errors of a file that fails while being read into one ``unreadable-file`` error naming it.
    """

    read_errors: ClassVar = (OSError, ValueError)

    def read_lengths(self) -> Iterator[LengthBatch]:
        """The shard's document lengths, with the file checked for changes while it is read."""
        with self.reading():
            self.check_unchanged()
            yield from self.batches()

    def batches(self) -> Iterator[LengthBatch]:  # pragma: no cover - abstract
        """The document lengths of the shard's range, in batches."""
        raise NotImplementedError

    def size(self) -> int | None:
        """None: progress of a tokenized shard is counted in documents."""
        return None  # progress by documents: a shard reads a few bytes per document, not the file


def document_ranges(documents: int, index_bytes: int, range_bytes: int) -> list[tuple[int, int | None]]:
    """Cut ``documents`` into runs of about ``range_bytes`` of index (``index_bytes`` for all), at least
    :data:`MIN_SHARD_DOCUMENTS` each; the last run is open-ended (``None``).
    """
    per_byte = documents / max(index_bytes, 1)
    size = max(MIN_SHARD_DOCUMENTS, int(range_bytes * per_byte))
    starts = list(range(0, documents, size)) or [0]
    return [(start, start + size if start + size < documents else None) for start in starts]


@njit(cache=True, nogil=True)
def ends_to_lengths(ends: np.ndarray, start: int, out: np.ndarray) -> int:
    """``out[k] = ends[k] - ends[k - 1]`` (``start`` before the first) for cumulative int64 ends, in one pass;
    returns -1, or the first ``k`` where the ends decrease (``out`` is then only partly written).
    """
    previous = start
    for k in range(ends.shape[0]):
        end = ends[k]
        if end < previous:
            return k
        out[k] = end - previous
        previous = end
    return -1


def lengths_from_ends(ends: np.ndarray, start: int, *, out: np.ndarray | None = None, first: int = 0) -> np.ndarray:
    """Document lengths (int64, into ``out`` when given) from cumulative end offsets (``start``: where the first
    document begins); a decreasing offset raises ValueError naming the document (numbered from ``first``), as
    in a corrupt index.

    >>> lengths_from_ends(np.array([3, 3, 10], np.uint64), 0).tolist()
    [3, 0, 7]
    """
    ends = np.asarray(ends, np.int64)  # uint64 ends beyond 2**63 turn negative, so they decrease: refused
    out = np.empty(ends.size, np.int64) if out is None else out
    k = ends_to_lengths(ends, start, out)
    if k >= 0:
        end = int(ends[k]) % (1 << 64)  # as the file holds it: uint64 (a review: an end of 2**63 + 1 read negative)
        if ends[k] < 0:  # not "after a larger one": past any count of tokens (a review)
            raise ValueError(f"document {first + k} ends at token {end:,}, past 2^63 - 1: is the index corrupt?")
        raise ValueError(f"document ends decrease at document {first + k} ({end:,} after a larger one)")
    return out


class IndexFile:
    """A tokenized file's index, read a batch at a time.

    Each run of an array is a read-only memory map of just its bytes, unmapped as soon as the run is dropped,
    so a 20 GB index never counts as 20 GB of the process's memory; the lengths computed from it go into one
    int64 buffer reused from batch to batch. (On a 10^8-document Megatron index in the page cache, fresh memory
    per batch was ~3x slower than this, page faults costing more than the copy, and plain reads into reused
    buffers ~1.5x.) Runs and :meth:`lengths` are valid until the next batch.
    """

    def __init__(self, path: str) -> None:
        self.handle = open(path, "rb")  # noqa: SIM115 - closed by __exit__
        self.buffer = np.empty(0, np.int64)

    def __enter__(self) -> IndexFile:
        return self

    def __exit__(self, *exc) -> None:
        self.handle.close()

    def run(self, at: int, dtype, start: int, end: int) -> np.ndarray:
        """Elements ``start`` .. ``end - 1`` of the array of ``dtype`` stored from byte ``at``; ValueError when
        the file ends first (it changed since it was checked).
        """
        dtype = np.dtype(dtype)
        count = max(end - start, 0)
        first = at + start * dtype.itemsize
        last = first + count * dtype.itemsize
        # checked before every window: a mapped byte beyond the end of a file that shrank would kill the process
        # (SIGBUS) instead of raising
        size = os.fstat(self.handle.fileno()).st_size
        if last > size:
            raise ValueError(f"the index ends at byte {size:,}, before byte {last:,}; did it change during the scan?")
        if not count:
            return np.empty(0, dtype)
        base = first - first % mmap.ALLOCATIONGRANULARITY
        window = mmap.mmap(self.handle.fileno(), last - base, access=mmap.ACCESS_READ, offset=base)
        return np.frombuffer(window, dtype, count, first - base)  # the map lives as long as this array

    def lengths(self, count: int) -> np.ndarray:
        """The reused buffer, as ``count`` int64 values to write lengths into."""
        if count > self.buffer.size:
            self.buffer = np.empty(count, np.int64)
        return self.buffer[:count]


def read_chunks(path: str, dtype: np.dtype, count: int, offset: int = 0) -> Iterator[tuple[int, np.ndarray]]:
    """``(first token, tokens)`` of the ``count`` tokens of ``dtype`` stored from byte ``offset`` of a file,
    :data:`CHUNK_TOKENS` at a time, read into one reused buffer (each chunk valid until the next is drawn). Read,
    not mapped: a file cut while it is read is a short read, :class:`FileChanged`, where a mapped page beyond its
    new end kills the process (SIGBUS; a review).
    """
    buffer = np.empty(min(CHUNK_TOKENS, count), dtype)
    with open(path, "rb", buffering=0) as handle:  # unbuffered: each read sees the file as it is then
        handle.seek(offset)
        for start in range(0, count, CHUNK_TOKENS):
            chunk = buffer[: min(CHUNK_TOKENS, count - start)]
            view, got = memoryview(chunk.view(np.uint8)), 0
            while got < chunk.nbytes and (step := handle.readinto(view[got:])):
                got += step
            if got != chunk.nbytes:
                at = offset + start * buffer.itemsize
                raise FileChanged(f"{got:,} of {chunk.nbytes:,} bytes read at byte {at:,}: cut short", path)
            yield start, chunk


def tokens_at(path: str, dtype: np.dtype, positions: np.ndarray) -> np.ndarray:
    """The tokens at ``positions`` (token offsets) of a file of ``dtype`` tokens, each read on its own (a few:
    the EOS checks read :data:`EOS_CHECKED`); read, not mapped, as :func:`read_chunks` reads.
    """
    out = np.empty(positions.size, dtype)
    raw = memoryview(out.view(np.uint8))
    size = out.dtype.itemsize
    with open(path, "rb", buffering=0) as handle:
        for k, position in enumerate(positions.tolist()):
            handle.seek(position * size)
            if handle.readinto(raw[k * size : (k + 1) * size]) != size:
                raise FileChanged(f"token {position:,} is past the file's end: cut short", path)
    return out


def batched_ranges(start: int, end: int, size: int | None = None) -> Iterator[tuple[int, int]]:
    """``[a, b)`` runs of at most ``size`` (default :data:`BATCH_DOCUMENTS`) covering ``[start, end)``."""
    size = size or BATCH_DOCUMENTS
    for a in range(start, end, size):
        yield a, min(a + size, end)


@dataclass
class EosCheck:
    """Last tokens of the checked documents, pooled over files: whether the source appended an EOS.

    With ``eos_id`` (``--eos-id``): appended when every checked document ends with it, not when none does.
    Without: inferred when every checked document (two or more) ends with the same token.
    """

    eos_id: int | None = None
    checked: int = 0
    ending_with: dict[int, int] | None = None

    def add(self, last_tokens: np.ndarray) -> None:
        """Count the last tokens of a batch of documents."""
        values, counts = np.unique(np.asarray(last_tokens, np.int64), return_counts=True)
        merged = dict(self.ending_with or {})
        for value, count in zip(values.tolist(), counts.tolist(), strict=True):
            merged[value] = merged.get(value, 0) + count
        self.ending_with = merged
        self.checked += int(last_tokens.size)

    def describe(self) -> dict:
        """``{"eos": {...}}`` for the corpus description: appended True/False/None (mixed or unknown)."""
        ending = self.ending_with or {}
        out: dict = {"documents_checked": self.checked, "eos_id": self.eos_id}
        if self.eos_id is not None:
            with_eos = ending.get(self.eos_id, 0)
            out["ending_with_eos"] = with_eos
            out["appended"] = True if self.checked and with_eos == self.checked else False if not with_eos else None
            out["from"] = "eos_id option"
        elif self.checked >= 2 and len(ending) == 1:
            (token,) = ending
            out.update(eos_id=token, ending_with_eos=self.checked, appended=True, **{"from": "inferred"})
        else:
            out.update(appended=None if not self.checked else False, **{"from": "inferred"})
        return {"eos": out}


def check_eos_option(eos_id: int | None, vocabulary_bound: int, where: str) -> None:
    """``--eos-id`` must be a token the file's dtype can hold."""
    if eos_id is not None and not 0 <= eos_id < vocabulary_bound:
        raise FreqlabError(f"{where}: eos_id {eos_id} cannot occur in this file (tokens below {vocabulary_bound})")


class TokenIndex(Protocol):
    """What a tokenized file's index tells without reading its tokens."""

    documents: int
    index_bytes: int  # bytes of index read to get every document's length
    token_bound: int  # tokens of the file's dtype are below this (for --eos-id)
    dtype: np.dtype  # of its tokens

    def length_batches(self, start: int, end: int) -> Iterator[tuple[int, np.ndarray]]:
        """Lengths (int64) of documents ``start .. end - 1``, BATCH_DOCUMENTS at a time (each valid until the next)."""

    def last_tokens(self, count: int) -> np.ndarray:
        """The last token of the first ``count`` non-empty documents."""


@dataclass(frozen=True)
class IndexedTokenShard(TokenFileShard):
    """Documents ``start`` .. ``end - 1`` of a tokenized file with a document index; subclasses name the
    function that opens and checks the index (:attr:`open_index`).
    """

    open_index: ClassVar = None  # path -> TokenIndex (a staticmethod in subclasses)
    companions: tuple[DataFile, ...] = ()  # files read with it (datatrove's NAME.ds.index), stamped as it is

    def identity(self) -> dict:
        """What identifies the content of the file and of its companions (a checkpoint is trusted while all hold)."""
        own = self.file.identity()
        return {**own, "companions": {file.id: file.identity() for file in self.companions}} if self.companions else own

    def check_unchanged(self) -> None:
        """Raise :class:`FileChanged` if the file or a companion is gone or changed since the corpus was opened."""
        for file in (self.file, *self.companions):
            file.check_unchanged()

    def batches(self) -> Iterator[LengthBatch]:
        """The document lengths of the shard's range, read from the file's index."""
        index = self.open_index(self.path)
        end = index.documents if self.end is None else self.end
        for first, lengths in index.length_batches(self.start, end):
            yield LengthBatch(lengths, None, f"{self.path}: document {first}")


class TokenFileFormat(FileFormat):
    """A format of tokenized files with a document index (Megatron ``.idx``, datatrove ``.ds``): lengths come
    from the index, in shards of document ranges. Subclasses set :attr:`shard_type`.
    """

    kind = LENGTHS
    shard_type: ClassVar[type[IndexedTokenShard]]
    companion_suffixes: ClassVar[tuple[str, ...]] = ()  # files beside each one that its lengths are read from

    def open(self, path: str) -> TokenIndex:
        """The checked index of ``path``; FreqlabError in one line for a bad file."""
        return self.shard_type.open_index(path)

    def records(self, file: DataFile) -> int | None:
        """Number of documents in the file."""
        return self.open(file.path).documents

    def is_empty(self, file: DataFile) -> bool:
        """Whether the file has no documents."""
        return self.records(file) == 0

    def estimated_bytes(self, file: DataFile) -> int:
        """Bytes of index read (the index is what a scan reads, not the tokens)."""
        return self.open(file.path).index_bytes  # the index is what is read

    def shards(self, files: list[DataFile], fields: Fields, range_bytes: int) -> list[TokenFileShard]:
        """Shards of document ranges, about ``range_bytes`` of index each."""
        shards = []
        for file in files:
            index = self.open(file.path)  # every file is checked before anything is counted
            companions = tuple(stat_file(file.path + suffix, file.id + suffix) for suffix in self.companion_suffixes)
            runs = document_ranges(index.documents, index.index_bytes, range_bytes) if index.documents else []
            for start, end in runs:
                part = file.id if len(runs) == 1 else f"{file.id}@documents{start}-{'' if end is None else end}"
                shards.append(self.shard_type(part, file, fields, start, end, companions=companions))
        return shards

    def vocabulary(self, index: TokenIndex) -> str:
        """What the file says of the vocabulary it was written for: its token dtype, which the writers choose
        by vocabulary size (Megatron: uint16 below 65,500 tokens, else int32; datatrove: 2 or 4 bytes).
        """
        return f"{np.dtype(index.dtype).name} tokens"

    def tokenizer_name(self, index: TokenIndex) -> str | None:
        """The tokenizer the file names (None: it names none)."""
        return None

    def describe(self, files: list[DataFile], fields: Fields) -> dict:
        """Whether the files' documents end with an appended EOS (:class:`EosCheck`), pooled over the files.

        Files written for different vocabularies (:meth:`vocabulary`), by different tokenizers (:meth:`tokenizer_name`,
        where both name one) or with different EOS conventions (one file's documents all end with EOS 2, another's
        with 0 or with no common token) hold lengths that do not add up: FreqlabError naming two such files. A file
        with too few documents to tell its EOS (:data:`EOS_INFERRED_FROM` without ``--eos-id``) agrees with any.
        """
        check = EosCheck(fields.read.eos_id)
        # the files that tell their EOS convention: the corpus's is theirs (a review: 30 documents ending with EOS 2
        # and 19 ending with 0 read "no EOS appended"); when none tells, all of them pooled
        told, untold = EosCheck(fields.read.eos_id), 0
        first: dict[str, tuple[str, str]] = {}  # what -> (value, file) of the first file that told it
        for file in files:
            index = self.open(file.path)
            check_eos_option(fields.read.eos_id, index.token_bound, file.path)
            try:
                last = index.last_tokens(EOS_CHECKED)
            except FileChanged as exc:
                raise changed_while_read(exc) from exc
            except ValueError as exc:  # a corrupt index among the first documents
                raise FreqlabError(f"{file.path}: {exc}") from exc
            check.add(last)
            own = EosCheck(fields.read.eos_id)
            own.add(last)
            convention = eos_convention(own.describe(), EOS_INFERRED_FROM)
            if convention is not None:
                told.add(last)
            else:
                untold += 1
            compared = (
                ("vocabularies", self.vocabulary(index)),
                ("tokenizers", self.tokenizer_name(index)),
                ("EOS conventions", convention),
            )
            for what, value in compared:
                if value is None:
                    continue
                seen = first.setdefault(what, (value, file.path))
                if seen[0] != value:
                    hint = ""
                    if what == "EOS conventions" and fields.read.eos_id is None:  # inferred from last tokens
                        hint = (
                            " (told from the last tokens of each file's first documents: if they share an EOS, give "
                            "it with --eos-id)"
                        )
                    raise FreqlabError(
                        f"{seen[1]} ({seen[0]}) and {file.path} ({value}): tokenized files with different {what} "
                        f"cannot be counted together (their lengths are in different units){hint}; scan them "
                        "separately"
                    )
        if not told.checked:
            return check.describe()
        described = told.describe()
        if untold:
            described["eos"]["files_too_few_documents"] = untold  # they agree with any convention
        return described


#: documents a file must have for its own EOS convention, inferred without --eos-id, to be compared with the other
#: files' (three documents that all end in "." are no convention; a review)
EOS_INFERRED_FROM = 20


def eos_convention(described: dict, inferred_from: int) -> str | None:
    """``EOS 2 appended`` / ``no EOS appended`` from :meth:`EosCheck.describe`, None when it cannot tell (an
    inferred one from fewer than ``inferred_from`` documents).
    """
    eos = described["eos"]
    if eos["appended"] is None or (eos["from"] == "inferred" and eos["documents_checked"] < inferred_from):
        return None
    return f"EOS {eos['eos_id']} appended" if eos["appended"] else "no EOS appended"
