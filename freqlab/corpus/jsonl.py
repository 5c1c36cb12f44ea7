"""JSON lines, plain or compressed (``.jsonl``, ``.json``, ``.ndjson``, each optionally ``.gz`` or ``.zst``).

Streams: the file is decompressed on the fly and read one *bytes* line at a time, so memory holds one line
(one document) plus a 1 MiB buffer, whatever the file size. Each line is decoded on its own, so a line of
invalid UTF-8 becomes one ``invalid-utf8`` record instead of killing the stream. Blank lines are not records
and are passed over (as every JSON-lines reader does), but a scan counts them (``read(blank_lines=True)``
yields a ``blank-line`` marker for each); a UTF-8 byte-order mark on the first line is dropped.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, ClassVar

import zstandard

from freqlab.corpus.base import (
    BLANK_LINE,
    INVALID_UNICODE,
    INVALID_UTF8,
    MALFORMED_JSON,
    NOT_AN_OBJECT,
    Document,
    FileShard,
)

_BUFFER = 1 << 20
_FEED = 1 << 16
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_BOM = b"\xef\xbb\xbf"


class ZstdFrames(io.RawIOBase):
    """The decompressed bytes of a ``.zst`` file: every frame in turn (``pzstd`` writes several).

    Unlike ``ZstdDecompressor.stream_reader``, which ends quietly when the input stops in the middle of a
    frame, this raises ``zstandard.ZstdError`` for a truncated file, so no document is lost silently.
    Compressed input is fed :data:`_FEED` bytes at a time, so one step's output stays small (text compresses
    3-10x: a few hundred KiB).
    """

    def __init__(self, path: str) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed in close()
        self._context = zstandard.ZstdDecompressor()
        self._frame = self._context.decompressobj()
        self._in_frame = False
        self._input = memoryview(b"")
        self._output = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        while not self._output:
            if not self._input:
                self._input = memoryview(self._file.read(_BUFFER))
                if not self._input:
                    if self._in_frame:
                        raise zstandard.ZstdError("the file ends inside a zstd frame")
                    return 0
            piece, self._input = self._input[:_FEED], self._input[_FEED:]
            self._output = memoryview(self._decompress(piece.tobytes()))
        count = min(len(buffer), len(self._output))
        buffer[:count] = self._output[:count]
        self._output = self._output[count:]
        return count

    def _decompress(self, data: bytes) -> bytes:
        out = []
        while data:
            self._in_frame = True
            out.append(self._frame.decompress(data))
            if not self._frame.eof:
                break
            data = self._frame.unused_data  # the next frame starts here
            self._frame = self._context.decompressobj()
            self._in_frame = False
        return b"".join(out)

    def close(self) -> None:
        self._file.close()
        super().close()


def open_binary(path: str) -> BinaryIO:
    """A buffered binary stream of the file's decompressed bytes (by suffix: ``.zst``/``.zstd``, ``.gz``)."""
    lower = path.lower()
    if lower.endswith((".zst", ".zstd")):
        return io.BufferedReader(ZstdFrames(path), buffer_size=_BUFFER)  # type: ignore[return-value]
    if lower.endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb", buffering=_BUFFER)


@dataclass(frozen=True)
class JsonlShard(FileShard):
    """One JSON-lines file. ``where`` of each record is ``path:line`` (1-based)."""

    # what a corrupt or truncated compressed stream raises while being read
    read_errors: ClassVar = (OSError, EOFError, zstandard.ZstdError, zlib.error)

    def records(self) -> Iterator[Document]:
        path = self.path
        extract = self.fields.extractor()
        loads = json.loads
        with open_binary(path) as stream:
            for lineno, raw in enumerate(stream, 1):
                if lineno == 1 and raw.startswith(_BOM):
                    raw = raw[3:]
                where = f"{path}:{lineno}"
                if raw.isspace() or not raw:
                    yield Document(None, None, where, BLANK_LINE)
                    continue
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    yield Document(None, None, where, INVALID_UTF8)
                    continue
                try:
                    record = loads(line)
                except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
                    yield Document(None, None, where, MALFORMED_JSON)
                    continue
                if record.__class__ is not dict:
                    yield Document(None, None, where, NOT_AN_OBJECT)
                    continue
                text, source, error = extract(record)
                # \ud800-\udfff escapes can leave a lone surrogate, which no tokenizer can encode.
                # Only possible in a non-ASCII text (isascii is O(1)) from a line holding such an escape.
                if (
                    error is None
                    and not text.isascii()  # type: ignore[union-attr]
                    and ("\\ud" in line or "\\uD" in line)
                    and _LONE_SURROGATE.search(text)  # type: ignore[arg-type]
                ):
                    yield Document(None, None, where, INVALID_UNICODE)
                    continue
                yield Document(text, source, where, error)
