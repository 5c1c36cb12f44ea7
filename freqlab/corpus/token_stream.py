"""Plain token streams split by an EOS token: ``.npy`` arrays and lit-gpt / TinyLlama packed ``.bin`` files.

Both hold one long stream of token ids; ``--eos-id`` names the token that ends each document (it belongs to
the document it ends, and counts). lit-gpt's ``PackedDatasetBuilder`` (``lit_gpt/packed_dataset.py``) writes
chunk files ``PREFIX_0000000000.bin`` ... with a 24-byte header (``b"LITPKDS"``, version uint64 = 1, dtype
code uint8 with lit-gpt's codes 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float32, 7 float64, 8 uint16;
chunk size uint64) and a document may continue from one chunk file into the next, so the files of a run are
read as one stream, in name order, by one shard. The builder pads its last chunk with the separator: at the
end of that stream, separators after the first one that ends the last document are padding, not documents. A
``.npy`` array is a stream of its own (its own shard: no document runs into the next file, and no padding: a lone
EOS at its end is a document of one token). Tokens after the last separator are a last document without one.
Streams of different dtypes (written for different vocabularies) are refused together. ``.bin`` files beside a
``.idx`` of the same name are Megatron's and are not claimed here.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from freqlab.corpus.base import LENGTHS, LengthBatch, LengthShard, UnreadableFile, changed_message, describe_error
from freqlab.corpus.fields import Fields
from freqlab.corpus.file_discovery import DataFile, FileChanged
from freqlab.corpus.registry import FileFormat, register
from freqlab.corpus.token_files import check_eos_option
from freqlab.errors import FreqlabError

LIT_MAGIC = b"LITPKDS"
LIT_HEADER = struct.Struct("<7sQBQ")
LIT_DTYPES = {
    1: np.uint8,
    2: np.int8,
    3: np.int16,
    4: np.int32,
    5: np.int64,
    6: np.float32,
    7: np.float64,
    8: np.uint16,
}
CHUNK_TOKENS = 1 << 24  # tokens compared with the EOS id at a time


def open_stream(path: str) -> np.ndarray:
    """The tokens of a ``.npy`` (1-D integer array) or lit-gpt ``.bin`` file, memory-mapped."""
    if path.lower().endswith(".npy"):
        try:
            tokens = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, EOFError) as exc:  # EOFError: an empty file (click would take it for Ctrl-D, "interrupted")
            raise FreqlabError(f"{path}: not a NumPy array file ({describe_error(exc)})") from exc
        if tokens.ndim != 1 or tokens.dtype.kind not in "iu":
            raise FreqlabError(f"{path}: a token stream is a 1-D integer array, not {tokens.shape} {tokens.dtype}")
        return tokens
    with open(path, "rb") as handle:
        head = handle.read(LIT_HEADER.size)
    if len(head) < LIT_HEADER.size or not head.startswith(LIT_MAGIC):
        raise FreqlabError(f"{path}: not a lit-gpt packed file (bad header {head[:7]!r}, expected {LIT_MAGIC!r})")
    _, version, code, _chunk_size = LIT_HEADER.unpack(head)
    if version != 1 or code not in LIT_DTYPES:
        raise FreqlabError(f"{path}: lit-gpt header with version {version}, dtype code {code}: not supported")
    dtype = np.dtype(LIT_DTYPES[code])
    if dtype.kind not in "iu":
        raise FreqlabError(f"{path}: lit-gpt header with dtype code {code} ({dtype.name}): token ids are integers")
    size = os.path.getsize(path) - LIT_HEADER.size
    if size % dtype.itemsize:
        raise FreqlabError(f"{path}: {size:,} bytes of data is not a whole number of {dtype.name} tokens")
    if not size:
        return np.zeros(0, dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=LIT_HEADER.size)


@dataclass(frozen=True)
class TokenStreamShard(LengthShard):
    """A run of token-stream files read as one stream, cut into documents after each ``eos_id``; ``padded``: a
    lit-gpt run, whose lone EOS tokens at the very end are its last chunk's padding.
    """

    id: str
    files: tuple[DataFile, ...]
    eos_id: int
    padded: bool = False
    read_errors: ClassVar = (OSError, ValueError)

    def identity(self) -> dict:
        """What identifies the content of each file of the shard."""
        return {file.id: file.identity() for file in self.files}

    def local_paths(self) -> tuple[str, ...]:
        """The shard's files."""
        return tuple(file.path for file in self.files)

    def check_unchanged(self) -> None:
        """Raise :class:`FileChanged` if any of the files is gone or changed."""
        for file in self.files:
            file.check_unchanged()

    def read_lengths(self) -> Iterator[LengthBatch]:
        """Document lengths: the runs of tokens between EOS ids, across chunks and files."""
        carry = 0  # tokens since the last EOS, carried into the next chunk or file
        # one-token documents (a lone EOS) at the end of what was read: a lit-gpt run's padding if it ends so
        held = 0
        where = ""
        for file in self.files:
            try:
                file.check_unchanged()
                tokens = open_stream(file.path)
                for start in range(0, tokens.size, CHUNK_TOKENS):
                    chunk = np.asarray(tokens[start : start + CHUNK_TOKENS])
                    ends = np.flatnonzero(chunk == self.eos_id)
                    if not ends.size:
                        carry += chunk.size
                        continue
                    lengths = np.diff(ends, prepend=-1).astype(np.int64)
                    lengths[0] += carry
                    carry = chunk.size - 1 - int(ends[-1])
                    where = f"{file.path}: token {start}"
                    run = _trailing_ones(lengths) if self.padded else 0
                    if run < lengths.size:  # a real document follows the held lone EOSes: they were documents
                        if held:
                            yield LengthBatch(np.ones(held, np.int64), None, where)
                            held = 0
                        yield LengthBatch(lengths[: lengths.size - run], None, where)
                    held += run
            except FileChanged as exc:
                raise UnreadableFile(changed_message(file.path, exc), file.path) from exc
            except (OSError, ValueError) as exc:
                message = f"{file.path}: cannot read ({describe_error(exc)}); is the file truncated or corrupt?"
                raise UnreadableFile(message, file.path) from exc
        if carry and not where:  # not one EOS: the "documents" would be the whole stream, ended by nothing
            shown = self.files[0].path if len(self.files) == 1 else f"{self.files[0].path} .. {self.files[-1].path}"
            raise FreqlabError(
                f"--eos-id {self.eos_id} never occurs in {shown} ({carry:,} tokens): it would be one "
                "document; give the EOS id of the tokenizer that wrote it"
            )
        if carry:  # tokens after the last EOS: a last document without one (and no padding before it)
            if held:
                yield LengthBatch(np.ones(held, np.int64), None, where)
            yield LengthBatch(np.array([carry], np.int64), None, f"{self.files[-1].path}: end")


def _trailing_ones(lengths: np.ndarray) -> int:
    """How many of the last documents are a lone EOS (length 1)."""
    not_one = np.flatnonzero(lengths != 1)
    return lengths.size - 1 - int(not_one[-1]) if not_one.size else lengths.size


class TokenStreamFormat(FileFormat):
    """Token streams (``.npy``, lit-gpt ``.bin``) cut into documents at ``--eos-id``."""

    name = "token-stream"
    kind = LENGTHS
    suffixes = (".npy", ".bin")
    description = ".npy / lit-gpt .bin token streams (--eos-id)"

    def claims(self, path: str) -> bool:
        """Whether ``path`` is a token stream: ``.npy``, or ``.bin`` with no Megatron ``.idx`` beside it."""
        lower = path.lower()
        if lower.endswith(".bin"):
            return not os.path.exists(path[:-4] + ".idx")  # PREFIX.bin beside PREFIX.idx is Megatron's
        return lower.endswith(".npy")

    def shards(self, files: list[DataFile], fields: Fields, range_bytes: int) -> list[TokenStreamShard]:
        """The lit-gpt ``.bin`` files in order as one shard (a document may cross files, the last chunk is padded),
        each ``.npy`` array as its own.
        """
        eos = fields.read.eos_id
        if eos is None:
            raise FreqlabError(
                f"{files[0].path}: a plain token stream needs --eos-id (the token that ends each document)"
            )
        dtypes: dict[str, str] = {}
        for file in files:  # every header (and the EOS id against its dtype) checked before anything is counted
            dtype = open_stream(file.path).dtype
            check_eos_option(eos, int(np.iinfo(dtype).max) + 1, file.path)
            dtypes.setdefault(dtype.name, file.path)
        if len(dtypes) > 1:  # token ids of different widths: written for different vocabularies
            shown = ", ".join(f"{name} ({path})" for name, path in dtypes.items())
            raise FreqlabError(f"token streams of different dtypes: {shown}; scan them apart")
        packed = [file for file in files if not file.path.lower().endswith(".npy")]
        shards = [TokenStreamShard(file.id, (file,), eos) for file in files if file.path.lower().endswith(".npy")]
        if packed:
            name = packed[0].id if len(packed) == 1 else f"{packed[0].id}..{packed[-1].id}"
            shards.append(TokenStreamShard(name, tuple(packed), eos, padded=True))
        return shards

    def describe(self, files: list[DataFile], fields: Fields) -> dict:
        """How documents are delimited (the EOS id), for the scan's summary."""
        return {"eos": {"appended": True, "eos_id": fields.read.eos_id, "from": "separator of the stream"}}


TOKEN_STREAM = register(TokenStreamFormat())
