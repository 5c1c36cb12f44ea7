r"""Megatron-LM / NeMo indexed datasets: ``PREFIX.idx`` (the index) beside ``PREFIX.bin`` (the tokens).

Byte layout of the index (``megatron/core/datasets/indexed_dataset.py``, ``_IndexWriter``; little-endian)::

    offset  size        field
    0       9           magic b"MMIDIDX\x00\x00"
    9       8           version, uint64 = 1
    17      1           token dtype code, uint8: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64,
                        7 float32, 8 uint16
    18      8           S = sequence count, uint64
    26      8           D = document count, uint64 (entries of document_indices: documents + 1)
    34      4 S         sequence_lengths, int32 (tokens per sequence)
    34+4S   8 S         sequence_pointers, int64 (byte offset of each sequence in PREFIX.bin)
    34+12S  8 D         document_indices, int64: 0, then the end (exclusive) sequence of each document
    34+12S+8D  S        sequence_modes, int8 (multimodal datasets only)

``PREFIX.bin`` is the sequences' tokens back to back in the index's dtype, so it holds
``sequence_pointers[-1] + sequence_lengths[-1] * itemsize`` bytes. A document is one or more sequences
(``preprocess_data.py --split-sentences`` makes one per sentence); its length is their sum, the EOD that
``--append-eod`` adds to its last sequence included. A document of no sequences is an empty document.

Lengths come from the index only, :data:`~freqlab.corpus.token_files.BATCH_DOCUMENTS` documents at a time,
mapped window by window and summed by one compiled pass: O(documents), memory flat. The ``.bin`` is read
only for the EOS check (the last token of the first documents). A bad header, an index shorter than its header
says (truncated), and a ``.bin`` whose size does not match the index's dtype are one-line errors when the corpus
is opened.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from freqlab.corpus.registry import register
from freqlab.corpus.token_files import (
    IndexedTokenShard,
    IndexFile,
    TokenFileFormat,
    batched_ranges,
    read_chunks,
    tokens_at,
)
from freqlab.errors import FreqlabError
from freqlab.jit import njit

MAGIC = b"MMIDIDX\x00\x00"
HEADER = struct.Struct("<9sQBQQ")  # magic, version, dtype code, sequence count, document_indices entries
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32, 8: np.uint16}


@dataclass(frozen=True)
class MegatronIndex:
    """A checked, memory-mapped ``PREFIX.idx``: ``sequence_lengths`` (int32), ``sequence_pointers`` and
    ``document_indices`` (int64) as read-only memory maps, and the token ``dtype`` of ``PREFIX.bin``.
    """

    prefix: str
    index_path: str
    bin_path: str
    dtype: np.dtype
    sequence_lengths: np.ndarray
    sequence_pointers: np.ndarray
    document_indices: np.ndarray

    @property
    def documents(self) -> int:
        """Number of documents in the dataset."""
        return self.document_indices.size - 1

    @property
    def sequences(self) -> int:
        """Number of sequences in the dataset."""
        return self.sequence_lengths.size

    @property
    def index_bytes(self) -> int:
        """Bytes of index read to get every document's length."""
        return 4 * self.sequences + 8 * (self.documents + 1)  # lengths and document bounds

    @property
    def token_bound(self) -> int:
        """Token ids of the dataset's dtype are below this bound."""
        return int(np.iinfo(self.dtype).max) + 1 if self.dtype.kind in "iu" else 1 << 63

    @property
    def bin_tokens(self) -> int:
        """Tokens the index points to: the ``.bin``'s size in tokens (checked when the index is read)."""
        if not self.sequences:
            return 0
        return int(self.sequence_pointers[-1]) // self.dtype.itemsize + int(self.sequence_lengths[-1])

    def token_chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        """``(first token, tokens)`` of the ``.bin``, read a chunk at a time (:func:`read_chunks`: a ``.bin`` cut
        while it is read is :class:`~freqlab.corpus.file_discovery.FileChanged`, not a crash).
        """
        return read_chunks(self.bin_path, self.dtype, self.bin_tokens)

    def document_lengths(self, start: int, end: int) -> np.ndarray:
        """Lengths (int64) of documents ``start`` .. ``end - 1``: the sums of their sequences' lengths (read
        through the memory map: for a few documents; a scan uses :meth:`length_batches`).
        """
        bounds = self._checked(np.asarray(self.document_indices[start : end + 1]), start)
        sequence_lengths = np.asarray(self.sequence_lengths[int(bounds[0]) : int(bounds[-1])])
        pointer = self.sequence_pointers.__getitem__
        return self._sum(bounds, sequence_lengths, np.empty(end - start, np.int64), start, pointer)

    def length_batches(self, start: int, end: int) -> Iterator[tuple[int, np.ndarray]]:
        """``(first document, lengths)`` for documents ``start`` .. ``end - 1``, a batch at a time, from windows
        of the index (:class:`~freqlab.corpus.token_files.IndexFile`): memory flat whatever the index's size; each
        batch is valid until the next is drawn.
        """
        with IndexFile(self.index_path) as index:

            def pointer(n: int) -> int:
                return int(index.run(HEADER.size + 4 * self.sequences, np.int64, n, n + 1)[0])

            for a, b in batched_ranges(start, end):
                bounds = self._checked(index.run(HEADER.size + 12 * self.sequences, np.int64, a, b + 1), a)
                sequence_lengths = index.run(HEADER.size, np.int32, int(bounds[0]), int(bounds[-1]))
                yield a, self._sum(bounds, sequence_lengths, index.lengths(b - a), a, pointer)

    def _checked(self, bounds: np.ndarray, first: int) -> np.ndarray:
        """``bounds`` (document_indices from document ``first`` on), once the sequences they span are known to be
        in the index: a corrupt entry would read past it (a review: "did it change during the scan?").
        """
        low, high = int(bounds[0]), int(bounds[-1])
        if not 0 <= low <= high <= self.sequences:
            last = first + bounds.size - 2
            documents = f"document {first:,}" if last == first else f"documents {first:,}..{last:,}"
            raise ValueError(
                f"{documents}: document_indices run from {low:,} to {high:,}, outside the {self.sequences:,} "
                "sequences (corrupt index)"
            )
        return bounds

    def _sum(
        self, bounds: np.ndarray, sequence_lengths: np.ndarray, out: np.ndarray, first: int, pointer: Callable
    ) -> np.ndarray:
        """Document lengths (into ``out``) from their sequence bounds and those sequences' lengths, checked against
        the bytes the sequences span in the ``.bin`` (``pointer(n)``: where sequence n starts): Megatron writes
        sequences back to back, so a batch's lengths sum to the distance between the pointers at its ends. Two
        reads a batch find a damaged length, unless another in the same batch cancels it exactly (the ``.bin``'s
        size, checked on opening, covers only the last).
        """
        k = sum_sequences(bounds, sequence_lengths, out)
        if k >= 0:
            raise ValueError(
                f"document {first + k}: document_indices out of order or a negative sequence length (corrupt index)"
            )
        a, b = int(bounds[0]), int(bounds[-1])
        if a < b:
            start = int(pointer(a))
            end = (
                int(pointer(b))
                if b < self.sequences
                else int(pointer(b - 1)) + int(sequence_lengths[-1]) * self.dtype.itemsize
            )
            tokens = int(out.sum(dtype=np.int64))
            if tokens * self.dtype.itemsize != end - start:
                raise ValueError(
                    f"documents {first:,}..{first + out.size - 1:,}: their sequence lengths sum to {tokens:,} tokens, "
                    f"but their sequences span {end - start:,} bytes of the .bin ({self.dtype.name}); corrupt index"
                )
        return out

    def last_tokens(self, count: int) -> np.ndarray:
        """The last token of each of the first ``count`` non-empty documents."""
        return self.last_tokens_and_documents(count)[0]

    def last_tokens_and_documents(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The last token of each of the first ``count`` non-empty documents, and those documents' indices."""
        count = min(count, self.documents)
        bounds = np.asarray(self.document_indices[: count + 1], np.int64)
        lengths = self.document_lengths(0, count)
        docs = np.flatnonzero(lengths > 0)
        last_sequence = bounds[docs + 1] - 1
        # the last sequence of a non-empty document may itself be empty: step back to one that is not
        # (indexing the maps reads only these entries: converting a whole map would hold the index in memory)
        seq_lengths = self.sequence_lengths
        for k in np.flatnonzero(np.asarray(seq_lengths[last_sequence]) == 0):
            while seq_lengths[last_sequence[k]] == 0:
                last_sequence[k] -= 1
        itemsize = self.dtype.itemsize
        offsets = np.asarray(self.sequence_pointers[last_sequence], np.int64) // itemsize
        ends = offsets + np.asarray(seq_lengths[last_sequence], np.int64) - 1
        size = self.bin_tokens
        outside = np.flatnonzero((offsets < 0) | (ends < 0) | (ends >= size))
        if outside.size:
            k = int(outside[0])
            raise ValueError(  # the caller names the .idx
                f"sequence {int(last_sequence[k]):,} points at byte "
                f"{int(self.sequence_pointers[last_sequence[k]]):,}, outside {self.bin_path} "
                f"({size * itemsize:,} bytes); is the index corrupt?"
            )
        return tokens_at(self.bin_path, self.dtype, ends), docs


@njit(cache=True, nogil=True)
def sum_sequences(bounds: np.ndarray, sequence_lengths: np.ndarray, out: np.ndarray) -> int:
    """``out[k]`` = the sum of ``sequence_lengths[bounds[k] - bounds[0] : bounds[k + 1] - bounds[0]]`` (int64) for
    every ``k`` but the last bound's, in one pass; returns -1, or the first ``k`` of a corrupt index: bounds out of
    order, or a negative sequence length. Checked against the documents an index was written from in the tests.
    """
    base, last = bounds[0], bounds[bounds.shape[0] - 1]
    for k in range(bounds.shape[0] - 1):
        a, b = bounds[k], bounds[k + 1]
        if b < a or b > last:  # out of order: b would also reach past the sequences read for this batch
            return k
        total = 0
        for j in range(a - base, b - base):
            if sequence_lengths[j] < 0:
                return k
            total += sequence_lengths[j]
        out[k] = total
    return -1


def beside(path: str, suffix: str) -> str | None:
    """The other file of a Megatron pair beside ``path`` (``suffix``: ``".bin"`` beside an index, ``".idx"``
    beside tokens): its suffix in ``path``'s own case first (``x.IDX`` pairs with ``x.BIN``), then lower, then upper
    case; None when there is none (two or three look-ups: a folder of many lit-gpt chunks asks for each).

    Megatron writes ``PREFIX.idx`` and ``PREFIX.bin``; a review found ``x.IDX`` counted from another file's ``x.idx``.
    """
    prefix, own = os.path.splitext(path)
    same_case = "".join(s.upper() if o.isupper() else s for o, s in zip(own, suffix, strict=False))
    candidates = dict.fromkeys([same_case, suffix, suffix.upper()])
    return next((prefix + c for c in candidates if os.path.exists(prefix + c)), None)


def read_index(idx_path: str) -> MegatronIndex:
    """Open and check ``PREFIX.idx`` (and the size of ``PREFIX.bin``); FreqlabError in one line otherwise."""
    prefix = os.path.splitext(idx_path)[0]
    try:
        size = os.path.getsize(idx_path)
        with open(idx_path, "rb") as handle:
            head = handle.read(HEADER.size)
    except OSError as exc:
        raise FreqlabError(f"{idx_path}: cannot open ({exc.strerror or exc})") from exc
    if len(head) < HEADER.size and head.startswith(MAGIC):
        raise FreqlabError(f"{idx_path}: truncated index: {len(head)} bytes, shorter than its header ({HEADER.size})")
    if len(head) < HEADER.size or not head.startswith(MAGIC):
        raise FreqlabError(
            f"{idx_path}: not a Megatron index (bad header {head[:9]!r}, expected {MAGIC!r}); "
            "written by megatron/core/datasets/indexed_dataset.py?"
        )
    _, version, code, sequences, entries = HEADER.unpack(head)
    if version != 1:
        raise FreqlabError(f"{idx_path}: Megatron index version {version}, expected 1")
    if code not in DTYPES:
        raise FreqlabError(f"{idx_path}: unknown token dtype code {code} (known: {sorted(DTYPES)})")
    dtype = np.dtype(DTYPES[code])
    needed = HEADER.size + 12 * sequences + 8 * entries
    if size < needed:
        raise FreqlabError(
            f"{idx_path}: truncated index: {size:,} bytes, but its header ({sequences:,} sequences, "
            f"{max(entries - 1, 0):,} documents) needs {needed:,}"
        )
    if size not in (needed, needed + sequences):  # + one int8 mode per sequence: a multimodal index
        raise FreqlabError(f"{idx_path}: {size:,} bytes, but its header says {needed:,}; is it corrupt?")
    if entries < 1:
        raise FreqlabError(f"{idx_path}: document_indices is empty (it starts with 0 in every Megatron index)")
    buffer = np.memmap(idx_path, dtype=np.uint8, mode="r")
    lengths = buffer[HEADER.size : HEADER.size + 4 * sequences].view(np.int32)
    pointers = buffer[HEADER.size + 4 * sequences : HEADER.size + 12 * sequences].view(np.int64)
    documents = buffer[HEADER.size + 12 * sequences : needed].view(np.int64)
    if int(documents[0]) != 0 or int(documents[-1]) != sequences:
        raise FreqlabError(
            f"{idx_path}: document_indices run from {int(documents[0])} to {int(documents[-1])}, "
            f"expected 0 to the sequence count {sequences:,}; is it corrupt?"
        )
    bin_path = beside(idx_path, ".bin") or prefix + ".bin"
    index = MegatronIndex(prefix, idx_path, bin_path, dtype, lengths, pointers, documents)
    _check_bin(index, idx_path)
    return index


def _check_bin(index: MegatronIndex, idx_path: str) -> None:
    """The ``.bin`` must hold exactly the tokens the index points to, in the index's dtype."""
    bin_path = index.bin_path
    try:
        info = os.stat(bin_path)
    except OSError as exc:
        raise FreqlabError(f"{idx_path}: no {os.path.basename(bin_path)} beside it ({exc.strerror or exc})") from exc
    if not stat.S_ISREG(info.st_mode):  # a FIFO reads as 0 bytes: "truncated" blamed the data (a review)
        raise FreqlabError(f"{bin_path}: not a regular file; Megatron writes files")
    actual = info.st_size
    itemsize = index.dtype.itemsize
    expected = 0
    if index.sequences:  # in bytes: a last pointer that is no whole number of tokens is refused (a review)
        expected = int(index.sequence_pointers[-1]) + int(index.sequence_lengths[-1]) * itemsize
        # the pointers advance by length * itemsize: check the first ones too (a dtype change shows there)
        head = min(index.sequences, 1024)
        steps = np.diff(np.asarray(index.sequence_pointers[:head], np.int64))
        sizes = np.asarray(index.sequence_lengths[: head - 1], np.int64) * itemsize
        if steps.size and not np.array_equal(steps, sizes):
            k = int(np.flatnonzero(steps != sizes)[0])
            raise FreqlabError(
                f"{idx_path}: sequence {k + 1:,} starts {int(steps[k]):,} bytes after sequence {k:,}, whose "
                f"{int(index.sequence_lengths[k]):,} {index.dtype.name} tokens take {int(sizes[k]):,}: the sizes and "
                "pointers disagree (dtype mismatch or corrupt index)"
            )  # a review: this said "-1 bytes expected"
    if expected % itemsize:  # the last pointer is no whole number of tokens: the .bin's tokens would be misread
        raise FreqlabError(
            f"{idx_path}: the last sequence starts at byte {int(index.sequence_pointers[-1]):,}, not a whole number "
            f"of {index.dtype.name} tokens; is the index corrupt?"
        )
    if actual != expected:
        found = f"{actual // itemsize:,}" if actual % itemsize == 0 else f"{actual / itemsize:,.1f}"
        raise FreqlabError(
            f"{bin_path}: {actual:,} bytes, but {idx_path} says {index.dtype.name} tokens "
            f"({expected:,} bytes expected, {found} tokens found); dtype mismatch or truncated .bin"
        )


@dataclass(frozen=True)
class MegatronShard(IndexedTokenShard):
    """Documents ``start`` .. ``end - 1`` of a Megatron index (``file`` is the ``.idx``)."""

    open_index = staticmethod(read_index)


class MegatronFormat(TokenFileFormat):
    """Megatron-LM / NeMo indexed datasets (``PREFIX.idx`` beside ``PREFIX.bin``)."""

    name = "megatron"
    suffixes = (".idx",)
    description = "Megatron .idx/.bin"
    shard_type = MegatronShard


MEGATRON = register(MegatronFormat())
