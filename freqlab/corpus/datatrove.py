"""datatrove tokenized files: ``NAME.ds`` (tokens) with ``NAME.ds.index`` (document ends).

datatrove's ``DocumentTokenizer`` (``datatrove/pipeline/tokens/tokenizer.py``, ``TokenizedFile``) writes the
tokens of each document back to back in ``NAME.ds`` (uint16, or uint32 when the vocabulary exceeds 65,536),
and in ``NAME.ds.index`` the cumulative end of each document in tokens, uint64 little-endian; a
``NAME.ds.metadata`` text file starts with ``tokenizer|token_size``. ``NAME.ds.loss`` (loss masks) is not
needed. A document's length is the difference of consecutive ends (its EOS, when the tokenizer's
post-processor or ``eos_token`` appended one, included). Only the index is read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from freqlab.corpus.base import FileChanged, changed_while_read
from freqlab.corpus.registry import register
from freqlab.corpus.token_files import (
    IndexedTokenShard,
    IndexFile,
    TokenFileFormat,
    batched_ranges,
    lengths_from_ends,
    read_chunks,
    tokens_at,
)
from freqlab.errors import FreqlabError, brief

TOKEN_DTYPES = {2: np.dtype("<u2"), 4: np.dtype("<u4")}


@dataclass(frozen=True)
class DatatroveFile:
    """A checked ``.ds`` file: its document ends (uint64 memory map) and token dtype."""

    path: str
    ends: np.ndarray
    dtype: np.dtype

    @property
    def documents(self) -> int:
        """Number of documents in the file."""
        return self.ends.size

    @property
    def index_bytes(self) -> int:
        """Bytes of index read to get every document's length."""
        return 8 * self.ends.size

    @property
    def token_bound(self) -> int:
        """Token ids of the file's dtype are below this bound."""
        return int(np.iinfo(self.dtype).max) + 1

    def length_batches(self, start: int, end: int) -> Iterator[tuple[int, np.ndarray]]:
        """``(first document, lengths)`` for documents ``start`` .. ``end - 1``, a batch at a time, from windows
        of the index (:class:`~freqlab.corpus.token_files.IndexFile`); each valid until the next is drawn.
        """
        with IndexFile(self.path + ".index") as index:
            for a, b in batched_ranges(start, end):
                # the end before the first document too; read as int64 (an end beyond 2**63 decreases: refused)
                run = index.run(0, np.int64, a - 1 if a else 0, b)
                ends, previous = (run[1:], int(run[0])) if a else (run, 0)
                yield a, lengths_from_ends(ends, previous, out=index.lengths(b - a), first=a)

    def last_tokens(self, count: int) -> np.ndarray:
        """The last token of each of the first ``count`` non-empty documents."""
        ends = np.asarray(self.ends[:count], np.int64)
        lengths = lengths_from_ends(ends, 0)
        if not ends.size:
            return np.zeros(0, np.int64)
        size = int(self.ends[-1])  # the file's tokens (checked when opened; a file cut since: a short read)
        beyond = np.flatnonzero(ends > size)  # a larger end decreases later
        if beyond.size:
            k = int(beyond[0])
            raise ValueError(  # the caller names the .ds (a review: an IndexError's traceback)
                f"document {k:,} ends at token {int(ends[k]):,}, beyond the file's {size:,} tokens; "
                "is the index corrupt?"
            )
        return tokens_at(self.path, self.dtype, ends[lengths > 0] - 1).astype(np.int64)


def _metadata(path: str) -> tuple[str | None, int | None]:
    """``(tokenizer, token_size)`` from ``NAME.ds.metadata`` (first line ``tokenizer|token_size``), each None
    when the file is not there or does not say.
    """
    try:
        with open(path + ".metadata", encoding="utf-8") as handle:
            first = handle.readline().strip()
    except (OSError, UnicodeDecodeError):
        return None, None
    tokenizer, _, size = first.rpartition("|")
    if size.isascii() and size.isdigit() and len(size) > 2:  # datatrove writes 2 or 4: refused without reading
        raise FreqlabError(  # thousands of digits
            f"{path}.metadata: token size {brief(size, 20)} ({len(size):,} digits); datatrove writes 2 (uint16) or "
            "4 (uint32)"
        )
    return tokenizer or None, int(size) if size.isascii() and size.isdigit() else None


def _token_size(path: str) -> int | None:
    """``token_size`` from ``NAME.ds.metadata``, if the file is there."""
    return _metadata(path)[1]


SAMPLED_TOKENS = 1 << 20  # tokens of a .ds without metadata read to tell uint32 ids from pairs of uint16 ones
MAX_TOKEN_ID = 1 << 24  # above every tokenizer's vocabulary (the largest have ~2^18 tokens)


def _check_token_ids(path: str, count: int) -> None:
    """A ``.ds`` of 4 bytes per indexed token and no metadata holds uint32 ids, unless it holds twice the index's
    uint16 tokens: then its first tokens read as uint32 (``a + 65536 b``) are far above any vocabulary.
    """
    try:  # read, not mapped (a review: a .ds cut while its first tokens were mapped killed the process)
        largest = max((int(chunk.max()) for _, chunk in read_chunks(path, np.dtype("<u4"), count)), default=0)
    except FileChanged as exc:
        raise changed_while_read(exc) from exc
    if largest >= MAX_TOKEN_ID:
        raise FreqlabError(
            f"{path}: 4 bytes per token of its index, but read as uint32 its tokens reach {largest:,}, no "
            "vocabulary's ids: twice the index's uint16 tokens? (NAME.ds.metadata, 'tokenizer|token_size', says "
            "the token size)"
        )


def read_ds(path: str) -> DatatroveFile:
    """Open and check a ``.ds`` file and its ``.ds.index``; FreqlabError in one line otherwise."""
    index_path = path + ".index"
    try:
        index_size = os.path.getsize(index_path)
        data_size = os.path.getsize(path)
    except OSError as exc:
        raise FreqlabError(
            f"{path}: no {os.path.basename(index_path)} beside it (datatrove writes one with save_index=True)"
            if not os.path.exists(index_path)
            else f"{path}: cannot open ({exc.strerror or exc})"
        ) from exc
    for name in (index_path, path):  # a FIFO or device reads as 0 bytes: "truncated" blamed the data (a review)
        if not stat.S_ISREG(os.stat(name).st_mode):
            raise FreqlabError(f"{name}: not a regular file; datatrove writes files")
    if index_size % 8:
        raise FreqlabError(f"{index_path}: {index_size:,} bytes, not a whole number of uint64 document ends")
    ends = np.memmap(index_path, dtype="<u8", mode="r") if index_size else np.zeros(0, np.uint64)
    tokens = int(ends[-1]) if ends.size else 0
    size = _token_size(path)
    if size is None:  # no metadata: the only token size that makes the sizes agree
        size = data_size // tokens if tokens and data_size % tokens == 0 else 2
        if size == 4:  # or twice the index's uint16 tokens: read as uint32, those are no vocabulary's ids
            _check_token_ids(path, min(tokens, SAMPLED_TOKENS))
    if size not in TOKEN_DTYPES:
        raise FreqlabError(f"{path}: token size {size} bytes; datatrove writes 2 (uint16) or 4 (uint32)")
    if data_size != tokens * size:
        raise FreqlabError(
            f"{path}: {data_size:,} bytes, but its index ends at token {tokens:,} ({tokens * size:,} bytes of "
            f"{size}-byte tokens); truncated, or a token size mismatch"
        )
    return DatatroveFile(path, ends, TOKEN_DTYPES[size])


@dataclass(frozen=True)
class DatatroveShard(IndexedTokenShard):
    """Documents ``start`` .. ``end - 1`` of a ``.ds`` file."""

    open_index = staticmethod(read_ds)


class DatatroveFormat(TokenFileFormat):
    """datatrove tokenized files (``.ds`` with their ``.ds.index``)."""

    name = "datatrove"
    suffixes = (".ds",)
    description = "datatrove .ds"
    shard_type = DatatroveShard
    companion_suffixes = (".index",)  # the lengths are read from NAME.ds.index: its changes count as the file's

    def tokenizer_name(self, index: DatatroveFile) -> str | None:  # type: ignore[override]
        """The tokenizer ``NAME.ds.metadata`` names (None without one: a file of the same run may lack it)."""
        return _metadata(index.path)[0]


DATATROVE = register(DatatroveFormat())
