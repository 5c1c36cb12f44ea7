"""Plain token streams split by an EOS token: ``.npy`` arrays and lit-gpt / TinyLlama packed ``.bin`` files.

Both hold one long stream of token ids; ``--eos-id`` names the token that ends each document (it belongs to the
document it ends, and counts). lit-gpt's ``PackedDatasetBuilder`` (``lit_gpt/packed_dataset.py``) writes chunk files
``PREFIX_0000000000.bin`` ... with a 24-byte header (``b"LITPKDS"``, version uint64 = 1, dtype code uint8 with
lit-gpt's codes 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float32, 7 float64, 8 uint16; chunk size uint64), then
exactly chunk size tokens. A document may continue from one chunk file into the next, so the files of a run (one
builder: ``PREFIX_0000000000.bin``, ``PREFIX_0000000001.bin``, ...) are read as one stream, in order, by one shard;
each run is a shard of its own (TinyLlama's ``prepare_slimpajama.py`` runs one builder per process, prefixes
``train_slimpajama_0``, ``train_slimpajama_1``, ...: each run ends in its own padding). A run with a chunk missing is
refused (the documents around the gap would be joined, or the first one counted in part). The builder pads its last
chunk with its separator (``sep_token``): the tokens after the run's last EOS are that padding when they are all one
token (TinyLlama: documents end with EOS 2, padding is BOS 1), or, when the separator is the EOS, the lone EOS tokens
after the one that ends the last document; either way they are not documents. Other tokens after the last EOS are a
last document without one. A chunk file whose size is not its header's chunk size is refused (truncated). A ``.npy``
array is a stream of its own (its own shard: no document runs into the next file, and no padding: a lone EOS at its
end is a document of one token). Streams of different dtypes (written for different vocabularies) are refused
together. ``.bin`` files beside a ``.idx`` of the same name are Megatron's and are not claimed here.
"""

from __future__ import annotations

import os
import re
import struct
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import ClassVar, NamedTuple

import numpy as np

from freqlab.corpus import megatron
from freqlab.corpus.base import LENGTHS, LengthBatch, LengthShard, UnreadableFile, changed_message, describe_error
from freqlab.corpus.fields import Fields
from freqlab.corpus.file_discovery import DataFile, FileChanged
from freqlab.corpus.registry import FileFormat, register
from freqlab.corpus.token_files import check_eos_option, read_chunks
from freqlab.errors import FreqlabError

LIT_MAGIC = b"LITPKDS"
NPY_MAGIC = b"\x93NUMPY"
HEADER_BYTES = 2**20  # the longest .npy header parsed (numpy: 10,000 bytes by default)
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
LIT_CHUNK_NAME = re.compile(r"(?P<prefix>.*)_(?P<number>\d{10})\.bin", re.IGNORECASE)  # f"{prefix}_{counter:010d}.bin"


class StreamLayout(NamedTuple):
    """Where a token stream's tokens are in its file: ``count`` tokens of ``dtype`` from byte ``offset`` on."""

    dtype: np.dtype
    count: int
    offset: int


def open_stream(path: str) -> StreamLayout:
    """The layout of a ``.npy`` (1-D integer array) or lit-gpt ``.bin`` file, from its header, checked against the
    file's size; :func:`~freqlab.corpus.token_files.read_chunks` reads the tokens it names.

    A ``.npy`` header is parsed here, not by a memory map of the file (a review: a shape of 2^62 tokens ended in
    mmap's OverflowError and a traceback), by numpy's ``read_array_header`` for format versions 1.0, 2.0 and 3.0
    (2.0's layout with a UTF-8 header), up to :data:`HEADER_BYTES`; a shape that is not one count of tokens is
    refused (numpy's own check lets ``(True,)`` and ``(-8,)`` through).
    """
    if path.lower().endswith(".npy"):
        return _npy_layout(path)
    with open(path, "rb") as handle:
        head = handle.read(LIT_HEADER.size)
    if len(head) < LIT_HEADER.size and LIT_MAGIC.startswith(head[:7]):  # an adversary: "bad header b'LITPKDS'"
        raise FreqlabError(f"{path}: {len(head)} bytes, cut inside its {LIT_HEADER.size}-byte lit-gpt header")
    if len(head) < LIT_HEADER.size or not head.startswith(LIT_MAGIC):
        raise FreqlabError(f"{path}: not a lit-gpt packed file (bad header {head[:7]!r}, expected {LIT_MAGIC!r})")
    _, version, code, chunk_size = LIT_HEADER.unpack(head)
    if version != 1 or code not in LIT_DTYPES:
        raise FreqlabError(f"{path}: lit-gpt header with version {version}, dtype code {code}: not supported")
    dtype = np.dtype(LIT_DTYPES[code])
    if dtype.kind not in "iu":
        raise FreqlabError(f"{path}: lit-gpt header with dtype code {code} ({dtype.name}): token ids are integers")
    size = os.path.getsize(path) - LIT_HEADER.size
    if size % dtype.itemsize:
        raise FreqlabError(f"{path}: {size:,} bytes of data is not a whole number of {dtype.name} tokens")
    if size != chunk_size * dtype.itemsize:  # the builder writes every chunk whole, the last one padded
        raise FreqlabError(
            f"{path}: {size // dtype.itemsize:,} tokens, but its header's chunk size is {chunk_size:,} (lit-gpt "
            "writes every chunk whole): truncated or damaged"
        )
    return StreamLayout(dtype, size // dtype.itemsize, LIT_HEADER.size)


def _npy_layout(path: str) -> StreamLayout:
    from numpy.lib import format as npy

    # 3.0 is 2.0's layout with a UTF-8 header (non-ASCII only in a structured dtype's names, refused below)
    readers = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0, (3, 0): npy.read_array_header_2_0}
    with open(path, "rb") as handle:
        magic = handle.read(len(NPY_MAGIC) + 2)  # and the format version
        if not magic:
            raise FreqlabError(f"{path}: not a NumPy array file (0 bytes)")
        if not magic.startswith(NPY_MAGIC[: len(magic)]):  # numpy: "pickled data" (allow_pickle=)
            raise FreqlabError(f"{path}: not a NumPy array file (it begins {magic[:6]!r}, not {NPY_MAGIC!r})")
        if len(magic) < len(NPY_MAGIC) + 2:
            raise FreqlabError(f"{path}: not a NumPy array file ({len(magic)} bytes: cut inside its magic)")
        version = (magic[6], magic[7])
        if version not in readers:
            raise FreqlabError(f"{path}: NumPy format {version[0]}.{version[1]} (numpy writes 1.0, 2.0 and 3.0)")
        # a header numpy cannot parse raises ValueError, tokenize's TokenError, SyntaxError or TypeError (a review:
        # tracebacks); one cut short, ValueError("EOF: reading array header, ...")
        try:
            shape, _, dtype = readers[version](handle, max_header_size=HEADER_BYTES)
        except (ValueError, EOFError, TypeError, SyntaxError, tokenize.TokenError) as exc:
            if str(exc).startswith("EOF"):
                raise FreqlabError(f"{path}: its header is cut short ({exc}): truncated") from exc
            raise FreqlabError(f"{path}: not a NumPy array file (its header: {describe_error(exc)})") from exc
        offset = handle.tell()
    if len(shape) != 1 or dtype.kind not in "iu":
        raise FreqlabError(f"{path}: a token stream is a 1-D integer array, not {shape} {dtype}")
    count, size = shape[0], os.path.getsize(path)
    if type(count) is not int or count < 0:  # numpy's check takes True for 1 and lets -8 through (an adversary)
        raise FreqlabError(f"{path}: its header's shape {shape} is not a number of tokens")
    if offset + count * dtype.itemsize > size:  # a review: a file cut after it was listed was "not a NumPy array file"
        raise FreqlabError(
            f"{path}: shorter than its header says: truncated, or cut while it was being read ({count:,} "
            f"{dtype.name} tokens in {size - offset:,} bytes)"
        )
    return StreamLayout(dtype, count, offset)


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
        # a lit-gpt run's padding is what follows its last EOS: lone EOS tokens (held: documents of one token at the
        # end of what was read), or, when the separator is another token, tokens all equal (tail: their one value,
        # MIXED when they are not)
        held, tail = 0, None
        where = ""
        for file in self.files:
            try:
                file.check_unchanged()
                layout = open_stream(file.path)
                for start, chunk in read_chunks(file.path, layout.dtype, layout.count, layout.offset):
                    ends = np.flatnonzero(chunk == self.eos_id)
                    if self.padded:
                        tail = _one_value(chunk[int(ends[-1]) + 1 :], None) if ends.size else _one_value(chunk, tail)
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
        if carry and not where and self.padded and tail is not None and tail is not MIXED:
            return  # a run of nothing but padding (a builder given no document writes one chunk of its separator)
        if carry and not where:  # not one EOS: the "documents" would be the whole stream, ended by nothing
            shown = self.files[0].path if len(self.files) == 1 else f"{self.files[0].path} .. {self.files[-1].path}"
            raise FreqlabError(
                f"--eos-id {self.eos_id} never occurs in {shown} ({carry:,} tokens): it would be one "
                "document; give the EOS id of the tokenizer that wrote it"
            )
        if carry:  # tokens after the last EOS: a run's padding by another separator, or a last document without EOS
            if held:  # lone EOS tokens before them: documents (the padding is not the EOS)
                yield LengthBatch(np.ones(held, np.int64), None, where)
            if tail is None or tail is MIXED:
                yield LengthBatch(np.array([carry], np.int64), None, f"{self.files[-1].path}: end")


MIXED = object()  # tokens after the last EOS that are not all one token


def _one_value(tokens: np.ndarray, value):
    """The one token value of the tokens after the last EOS, extended by ``tokens`` (``value``: that of those
    before; None: none before), or :data:`MIXED`.
    """
    if value is MIXED or not tokens.size:
        return value
    first = int(tokens[0])
    if (value is not None and first != value) or not bool((tokens == first).all()):
        return MIXED
    return first


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
            return megatron.beside(path, ".idx") is None  # PREFIX.bin beside PREFIX.idx is Megatron's
        return lower.endswith(".npy")

    def shards(self, files: list[DataFile], fields: Fields, range_bytes: int) -> list[TokenStreamShard]:
        """Each run of lit-gpt ``.bin`` chunk files (:func:`lit_runs`) as one shard (a document may cross files, the
        last chunk is padded), each ``.npy`` array as its own.
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
        shards = [TokenStreamShard(file.id, (file,), eos) for file in files if file.path.lower().endswith(".npy")]
        for run in lit_runs([file for file in files if not file.path.lower().endswith(".npy")]):
            name = run[0].id if len(run) == 1 else f"{run[0].id}..{run[-1].id}"
            shards.append(TokenStreamShard(name, tuple(run), eos, padded=True))
        return shards

    def describe(self, files: list[DataFile], fields: Fields) -> dict:
        """How documents are delimited (the EOS id), for the scan's summary."""
        return {"eos": {"appended": True, "eos_id": fields.read.eos_id, "from": "separator of the stream"}}


TOKEN_STREAM = register(TokenStreamFormat())


def lit_runs(files: list[DataFile]) -> list[list[DataFile]]:
    """lit-gpt chunk files grouped by builder run: ``PREFIX_NNNNNNNNNN.bin`` by ``PREFIX``, in chunk order (a file
    named otherwise is a run of its own); FreqlabError when a run's chunks are not consecutive.
    """
    runs: dict[tuple[str, bool], list[tuple[int, DataFile]]] = {}
    for file in files:
        match = LIT_CHUNK_NAME.fullmatch(file.path)
        # a file named otherwise is keyed apart: `x.bin` is no chunk of the run `x.bin_0000000001.bin` (a review)
        key, number = ((match["prefix"], True), int(match["number"])) if match else ((file.path, False), 0)
        runs.setdefault(key, []).append((number, file))
    out = []
    for key in sorted(runs):
        chunks = sorted(runs[key], key=lambda item: item[0])
        if key[1] and chunks[0][0] != 0:  # its first document began before
            raise FreqlabError(
                f"{chunks[0][1].path}: its run starts at chunk {chunks[0][0]}: "
                f"{os.path.basename(key[0])}_0000000000.bin and those after it are missing (a document may begin in "
                "them); scan the run whole"
            )
        for (number, file), (following, _) in pairwise(chunks):
            if following != number + 1:
                raise FreqlabError(
                    f"{file.path}: the next chunk of its run, {os.path.basename(key[0])}_{number + 1:010d}.bin, is "
                    f"missing ({len(chunks)} chunks from {chunks[0][0]} to {chunks[-1][0]}): the documents across "
                    "the gap would be joined; scan the run whole"
                )
        out.append([file for _, file in chunks])
    return out
