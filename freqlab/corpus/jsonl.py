"""JSON lines, plain or compressed (``.jsonl``, ``.json``, ``.ndjson``, each optionally ``.gz`` or ``.zst``).

Streams: the file is decompressed on the fly and read one *bytes* line at a time, so memory holds one line
(one document) plus a 1 MiB buffer, whatever the file size. Each line is decoded on its own, so a line of
invalid UTF-8 becomes one ``invalid-utf8`` record instead of killing the stream. Blank lines are not records
and are passed over (as every JSON-lines reader does), but a scan counts them (``read(blank_lines=True)``
yields a ``blank-line`` marker for each); a UTF-8 byte-order mark on the first line is dropped.

Large files are cut into byte ranges (:mod:`freqlab.corpus.ranges`): a plain file's ranges seek, a compressed
file's ranges skip their prefix by decompressing it, so a compressed file is one part, except a local ``.zst`` of
several frames (or a ``.gz`` of BGZF members), cut where frames start (:func:`frame_shards`): each part
decompresses its own frames. A corrupt or truncated compressed file fails when read, after every complete line
before the damage has been yielded (as ``zstd -dc`` and ``gzip -dc`` recover them).
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, ClassVar

import orjson
import zstandard

from freqlab.corpus.base import (
    BLANK_LINE,
    INVALID_UNICODE,
    INVALID_UTF8,
    MALFORMED_JSON,
    NON_STRING_TEXT,
    NOT_AN_OBJECT,
    Document,
    FileShard,
    Run,
    UnreadableFile,
    describe_error,
    read_meter,
    utf8_error,
)
from freqlab.corpus.fields import REPARSE, Fields, has_lone_surrogate, json_loads
from freqlab.corpus.file_discovery import DATASETS_METADATA, DataFile
from freqlab.corpus.frames import bgzf_cut_short, bgzf_members, frame_parts, zstd_frames
from freqlab.corpus.ranges import (
    MAX_STREAM_RANGES,
    LineTooLong,
    owned_blocks,
    owned_lines,
    skip_bytes,
    split_bytes,
)
from freqlab.corpus.registry import FileFormat, register
from freqlab.corpus.remote_files import is_url, open_input
from freqlab.errors import FreqlabError

_BUFFER = 1 << 20
_CUT_SHORT = "the file ends inside a"  # ZstdFrames' (GzipMembers') message for a stream cut short inside a frame
_FEED = 1 << 16
_TAIL_FEED = 1 << 12
_BOM = b"\xef\xbb\xbf"
_ZSTD_SUFFIXES = (".zst", ".zstd")
MAX_ZSTD_WINDOW = 1 << 31  # zstd's largest window (--long=31); the decoder allocates only what a frame asks for
# Decompressed bytes per compressed byte assumed when cutting a compressed file whose size inside is not
# recorded (text compresses 3-5x with zstd or gzip); only the balance of the parts depends on it.
COMPRESSION_RATIO_GUESS = 4
# A run of plain records (JsonlShard.record_runs) ends after this many lines or bytes of lines.
RUN_LINES = 4096
RUN_BYTES = 1 << 20
# JSON-lines files up to this size are read when the corpus is opened, to tell whether they hold any record.
_SMALL_FILE = 4096


class ZstdFrames(io.RawIOBase):
    """The decompressed bytes of a ``.zst`` file: every frame in turn (``pzstd`` writes several).

    Unlike ``ZstdDecompressor.stream_reader``, which ends quietly when the input stops in the middle of a
    frame, this raises ``zstandard.ZstdError`` for a truncated file, so no document is lost silently; bytes
    decoded before damage (trailing garbage after a frame, a corrupt block) are returned first, and the
    error is raised on the next read. Compressed input is fed :data:`_FEED` bytes at a time, so one step's
    output stays small (text compresses 3-10x: a few hundred KiB).

    ``offset``/``stop``: the frames whose compressed bytes are ``[offset, stop)`` (both frame boundaries, see
    :func:`freqlab.corpus.frames.zstd_frames`), followed by the next frames' bytes up to and including their first
    newline (the end of the line that runs over ``stop``; nothing when the frames end the file): a part of the file
    that owns the lines starting in its frames (:class:`JsonlShard`); without ``tail``, nothing past ``stop``.
    """

    def __init__(self, path: str, offset: int = 0, stop: int | None = None, tail: bool = True) -> None:
        self._file = open_input(path)  # closed in close()
        if offset:
            self._file.seek(offset)
        self._position = offset  # compressed bytes read from the file so far
        self._stop = stop
        self._frame = self._decoder()
        self._in_frame = False
        self._input = memoryview(b"")
        self._output = memoryview(b"")
        self._error: Exception | None = None
        self._tail = False  # past `stop`: only up to the next newline is wanted
        self._wants_tail = tail
        self._done = False

    _damage: ClassVar[type[Exception]] = zstandard.ZstdError  # what damage raises (a cut frame raises it too)
    _unit = "zstd frame"

    @staticmethod
    def _decoder():
        """A decompressor of one frame (``decompress``, ``eof``, ``unused_data``); windows up to zstd's largest, 2 GiB
        (``zstd --long=31`` writes them: the default 128 MiB limit refused such files as "truncated or corrupt").
        """
        return zstandard.ZstdDecompressor(max_window_size=MAX_ZSTD_WINDOW).decompressobj()

    def readable(self) -> bool:
        """Always True: a readable stream."""
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        """Fill ``buffer`` with decompressed bytes; return how many (0 at the end)."""
        while not self._output:
            if self._error is not None:
                raise self._error
            if self._done:
                return 0
            if not self._input:
                self._input = memoryview(self._file.read(_BUFFER))
                self._position += len(self._input)
                if not self._input:
                    if self._in_frame:
                        raise self._damage(f"{_CUT_SHORT} {self._unit}")
                    return 0
            feed = _TAIL_FEED if self._tail else _FEED  # the tail is one line: damage past it is not this part's
            if not self._tail and self._stop is not None:  # never past `stop` in one step: its frame ends there
                feed = min(feed, self._stop - self.compressed_position())
            piece, self._input = self._input[:feed], self._input[feed:]
            output = self._decompress(piece.tobytes())
            if self._tail:
                newline = output.find(b"\n")
                if newline >= 0:  # the part's last line is whole: damage further on is the next part's to report
                    output, self._done, self._error = output[: newline + 1], True, None
            elif self._stop is not None and self.compressed_position() >= self._stop and self._error is None:
                if self._in_frame:  # the frames were indexed when the corpus was opened: a file changed since
                    self._error = self._damage(f"no {self._unit} ends at byte {self._stop}")
                self._tail = True
                self._done = not self._wants_tail
            self._output = memoryview(output)
        count = min(len(buffer), len(self._output))
        buffer[:count] = self._output[:count]
        self._output = self._output[count:]
        return count

    def _decompress(self, data: bytes) -> bytes:
        out = []
        try:
            while data:
                self._in_frame = True
                out.append(self._frame.decompress(data))
                if not self._frame.eof:
                    break
                data = self._frame.unused_data  # the next frame starts here
                self._frame = self._decoder()
                self._in_frame = False
        except self._damage as exc:
            self._error = exc  # raised once the bytes decoded before it are consumed
        return b"".join(out)

    def compressed_position(self) -> int:
        """Compressed bytes consumed so far (for progress: the file's size is known, its decompressed size not)."""
        return self._position - len(self._input)

    def close(self) -> None:
        """Close the compressed file."""
        self._file.close()
        super().close()


class GzipMembers(ZstdFrames):
    """:class:`ZstdFrames` for the members of a ``.gz`` file (RFC 1952 section 2.2; ``bgzip`` writes many, see
    :func:`freqlab.corpus.frames.bgzf_members`): each member is inflated on its own and checked (CRC-32 and size).
    """

    _damage = zlib.error
    _unit = "gzip member"

    @staticmethod
    def _decoder():
        """A decompressor of one gzip member."""
        return zlib.decompressobj(16 + zlib.MAX_WBITS)


class _KeepDecoded:
    """``read(n)`` of a decompressing stream that returns the bytes decoded before damage and raises the error on
    the next call (``io.BufferedReader.read(n)`` and ``gzip.GzipFile.read(n)`` drop what they gathered in a call
    that ends in an error: the last MiB of documents before trailing garbage went neither counted nor skipped).
    """

    damage: ClassVar[tuple[type[BaseException], ...]] = ()
    _pending: BaseException | None = None

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` decompressed bytes (all the rest when negative); b"" at the end."""
        if self._pending is not None:
            error, self._pending = self._pending, None
            raise error
        if size is None or size < 0:
            return super().read(size)  # type: ignore[misc]
        chunks: list[bytes] = []
        got = 0
        while got < size:
            try:
                piece = self.read1(size - got)  # type: ignore[attr-defined]
            except self.damage as exc:
                if not chunks:
                    raise
                self._pending = exc
                break
            if not piece:
                break
            chunks.append(piece)
            got += len(piece)
        return b"".join(chunks)


class _ZstdReader(_KeepDecoded, io.BufferedReader):
    damage = (zstandard.ZstdError,)


class _GzipReader(_KeepDecoded, gzip.GzipFile):
    damage = (OSError, EOFError, zlib.error)


class _GzipMembersReader(_KeepDecoded, io.BufferedReader):
    damage = (zlib.error,)


def is_compressed(path: str) -> bool:
    """Whether ``path`` names a compressed file (zstd or gzip suffix)."""
    return path.lower().endswith((*_ZSTD_SUFFIXES, ".gz"))


def estimated_content_bytes(file: DataFile) -> int:
    """The decompressed bytes of ``file``: its size, or for a compressed file :data:`COMPRESSION_RATIO_GUESS` times
    it, or more where the file records more (:func:`recorded_content_bytes`: a file of text compressed 20x at
    ``zstd -19 --long`` was planned as a small scan); the one estimate every plan of a compressed file uses.
    """
    if not is_compressed(file.path):
        return file.size
    recorded = recorded_content_bytes(file.path, file.stamp) if not file.remote else None
    return max(file.size * COMPRESSION_RATIO_GUESS, recorded or 0)


@functools.lru_cache(maxsize=4096)
def recorded_content_bytes(path: str, stamp: tuple[int, int, int]) -> int | None:
    """What a local compressed file records of its decompressed size, a lower bound of it: a zstd file's first frame
    header's content size (RFC 8878, section 3.1.1.1.4; the whole file's when it is one frame, as ``zstd`` and
    ``zstandard.compress`` write it), a gzip file's last member's ISIZE (RFC 1952, section 2.3.1: the size modulo
    2^32; the whole file's when it is one member below 4 GiB; none when the file starts with no gzip header or the
    ISIZE is more than deflate can expand the file to, as the last 4 bytes of a file cut short are); None when it
    records nothing (a zstd stream written without its size) or cannot be read. ``stamp`` (:attr:`DataFile.stamp
    <freqlab.corpus.file_discovery.DataFile.stamp>`: size, modification and status-change times) keys the cache.
    """
    size = stamp[0]
    try:
        with open(path, "rb") as handle:
            if path.lower().endswith(_ZSTD_SUFFIXES):
                found = zstandard.frame_content_size(handle.read(18))
                return found if found > 0 else None
            if size < 18 or handle.read(2) != b"\x1f\x8b":  # no gzip header: nothing recorded
                return None
            handle.seek(size - 4)
            isize = int.from_bytes(handle.read(4), "little")
            # deflate expands at most ~1032:1: a larger ISIZE is no trailer (a file cut short ends inside its data)
            return isize if 0 < isize <= _MAX_DEFLATE_RATIO * size else None
    except (OSError, zstandard.ZstdError):
        return None


def open_binary(path: str, frames: tuple[int, int] | None = None) -> BinaryIO:
    """A buffered binary stream of the file's decompressed bytes (by suffix: ``.zst``/``.zstd``, ``.gz``);
    ``frames``: the zstd frames (gzip members) ``[offset, stop)`` and the rest of the line that runs over ``stop``
    (:class:`ZstdFrames`, :class:`GzipMembers`).
    """
    lower = path.lower()
    if lower.endswith(_ZSTD_SUFFIXES):
        return _ZstdReader(ZstdFrames(path, *(frames or (0, None))), buffer_size=_BUFFER)  # type: ignore[return-value]
    if lower.endswith(".gz") and frames is not None:
        return _GzipMembersReader(GzipMembers(path, *frames), buffer_size=_BUFFER)  # type: ignore[return-value]
    if lower.endswith(".gz"):
        return _GzipReader(fileobj=open_input(path), mode="rb")  # type: ignore[return-value]
    return open_input(path, buffering=_BUFFER)


@functools.lru_cache(maxsize=64)
def lines_before(path: str, position: int) -> int:
    """Newlines in the first ``position`` decompressed bytes of ``path`` (a range's first line number - 1)."""
    with open_binary(path) as stream:
        return skip_bytes(stream, position)


@functools.lru_cache(maxsize=64)
def lines_before_frame(path: str, offset: int) -> int:
    """Newlines in the decompressed content of the zstd frames (gzip members) before compressed byte ``offset``."""
    frames = (ZstdFrames if path.lower().endswith(_ZSTD_SUFFIXES) else GzipMembers)(path, 0, offset, tail=False)
    with io.BufferedReader(frames, buffer_size=_BUFFER) as stream:
        return skip_bytes(stream, 1 << 62)


def _not_an_object(value) -> str:
    """What a line that is JSON but no object holds, from its parsed ``value`` (a review: a one-line JSON array said
    only not-a-json-object).
    """
    if isinstance(value, list):
        items = f"{len(value):,} item{'s' if len(value) != 1 else ''}"
        if value and isinstance(value[0], dict):  # an array of records: how to make them lines
            return f"the line is a JSON array of {items}: JSON lines hold one object per line (jq -c '.[]' writes them)"
        return f"the line is a JSON array of {items}, not an object"
    if value is None or isinstance(value, bool):
        kind = json.dumps(value)  # null, true, false
    else:
        kind = "a string" if isinstance(value, str) else "a number"
    return f"the line holds {kind}, not an object"


def parse_line(raw: bytes, extract) -> tuple[str | None, str | None, str | None]:
    """``(text, source, error)`` of one JSON line, with the standard library's parser: the reference the fast
    path (orjson) must agree with, and the judge of every line orjson refuses.
    """
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, None, INVALID_UTF8
    try:
        record = json_loads(line)
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return None, None, MALFORMED_JSON
    if record.__class__ is not dict:
        return None, None, NOT_AN_OBJECT
    text, source, error = extract(record)
    # \ud800-\udfff escapes can leave a lone surrogate, which no tokenizer can encode
    if error is None and has_lone_surrogate(text):
        return None, None, INVALID_UNICODE
    return text, source, error


def _is_json(raw: bytes) -> bool:
    """Whether ``raw`` is one JSON value (the standard library's parser)."""
    try:
        json_loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return False
    return True


def _json_error(raw: bytes) -> str:
    """What the standard library's parser says is wrong with a line it refuses, and where (a line may be megabytes)."""
    try:
        json_loads(raw.decode("utf-8").rstrip("\r\n"))  # the line's own end, not a column on a line after it
    except json.JSONDecodeError as exc:
        return f"{exc.msg}: column {exc.colno}"
    except RecursionError:
        return "nested too deeply"
    except ValueError as exc:  # a number too long to convert, ...
        return str(exc).splitlines()[0]
    return "not JSON"


def _plain_texts(lines: list[bytes], key: str) -> list[str] | None:
    """The texts of ``lines`` when every one is a JSON object whose top-level ``key`` holds a non-empty string (the
    usual block), else None. Per line this is the parse and ~20 ns: a missing key or a line that is no object
    raises, and two passes in C find an empty text or a value of another type.
    """
    try:
        texts = [record[key] for record in map(orjson.loads, lines)]
    except (ValueError, RecursionError, KeyError, TypeError):  # orjson's error is a ValueError
        return None
    return None if "" in texts or set(map(type, texts)) != {str} else texts


def _where_later(path: str, position: int):
    """``path:line`` of the line starting at byte ``position``, worked out when asked for (it reads the prefix)."""
    return lambda: f"{path}:{lines_before(path, position) + 1}"


def _where_counted(path: str, base: Callable[[], int], lineno: int, offset: int = 0):
    """``path:line`` of line ``lineno`` after ``base()`` lines, worked out when asked for (``base`` reads a prefix:
    the frames before ``offset``; where they cannot be read, the line is named within its own frames).
    """

    def where() -> str:
        try:
            return f"{path}:{base() + lineno}"
        except JsonlShard.read_errors as exc:
            return (
                f"{path}: line {lineno} of the frames from compressed byte {offset:,} (the frames before them cannot "
                f"be read: {describe_error(exc)})"
            )

    return where


@dataclass(frozen=True)
class JsonlShard(FileShard):
    """A JSON-lines file, or the lines of byte range ``[start, end)`` of its (decompressed) content, or (``frames``)
    the lines that start in the zstd frames (BGZF members) stored in compressed bytes ``[offset, stop)``: those are
    decompressed, not the ones before, and the line running over ``stop`` (frames need not end at a newline) is
    read to its end from the next frames; the line running into ``offset`` is the part before's (the rule of
    :mod:`freqlab.corpus.ranges`, with the decompressed position where the frames start as ``start``). ``where``
    of each record is ``path:line`` (1-based).
    """

    frames: tuple[int, int] | None = None

    # what a corrupt or truncated compressed stream raises while being read
    read_errors: ClassVar = (OSError, EOFError, zstandard.ZstdError, zlib.error)

    def records(self) -> Iterator[Document]:
        """Each line is parsed by orjson (strict: valid UTF-8, valid JSON, no lone surrogate escape) when it takes
        it; any line it refuses, and any record whose source label is a number, is decided by the standard
        library's parser (:func:`parse_line`), which names the reason exactly. Both paths give the same records
        (tested line by line on hostile input).
        """
        return self._lines(runs=False)

    def record_runs(self) -> Iterator[Document | list[str]]:
        """:meth:`records`, with runs of plain records (non-empty text; the corpus has no source field) as lists
        of at most :data:`RUN_LINES` texts or :data:`RUN_BYTES` bytes of lines.
        """
        return self._lines(runs=self.fields.source is None)

    def _lines(self, runs: bool) -> Iterator[Document | list[str]]:
        path = self.path
        extract = self.fields.extractor()
        fast_extract = self.fields.extractor(exact_numbers=False)
        fast_loads = orjson.loads
        start, end = self._owned()
        with open_binary(path, self.frames) as stream:
            plain_start = start == 0 and not is_compressed(path) and hasattr(stream, "peek")
            if plain_start and (message := compressed_content(stream.peek(4)[:4], path)):
                raise UnreadableFile(message, path)
            meter = read_meter()
            if meter is not None:
                meter.probe = self._bytes_read(stream)
            # newlines before `start`: a number, or None or a function (worked out if a line number is asked for)
            base = self._seek(stream)
            lines = self._runs(stream, start, end) if runs else owned_lines(stream, start, end)
            lineno = 0  # of the line in this range
            for position, raw in lines:
                if isinstance(raw, list):  # a run of plain texts (self._runs), and the blank lines between them
                    lineno += len(raw) + (sum(raw.gaps) if raw.__class__ is Run else 0)
                    yield raw
                    continue
                lineno += 1
                bom = position == 0 and raw.startswith(_BOM)
                if bom:
                    raw = raw[3:]
                if base.__class__ is int:
                    where = f"{path}:{base + lineno}"
                elif base is None:
                    where = _where_later(path, position)
                else:
                    where = _where_counted(path, base, lineno, self.frames[0] if self.frames else 0)
                if raw.isspace() or not raw:
                    yield Document(None, None, where, BLANK_LINE)
                    continue
                try:
                    record = fast_loads(raw)
                except (ValueError, RecursionError):
                    record = None
                if record.__class__ is dict:
                    text, source, error = fast_extract(record)
                    if error != REPARSE:
                        detail = self._text_kind(raw) if error == NON_STRING_TEXT else None
                        yield Document(text, source, where, error, detail)
                        continue
                elif record is not None:  # JSON, but no object: said from the value parsed (no second parse)
                    yield Document(None, None, where, NOT_AN_OBJECT, _not_an_object(record))
                    continue
                text, source, error = parse_line(raw, extract)
                detail = None
                if error == MALFORMED_JSON:
                    detail = _json_error(raw)
                elif error == INVALID_UTF8:  # where in the line as written: a BOM taken off counts (a review)
                    detail = utf8_error(raw, first=position == 0, skipped=3 if bom else 0)
                elif error == NON_STRING_TEXT:  # one orjson refused (NaN)
                    detail = self._text_kind(raw)
                elif error == NOT_AN_OBJECT:  # one orjson refused (NaN inside)
                    detail = _not_an_object(json_loads(raw))
                yield Document(text, source, where, error, detail)
            if (cut := self._bgzf_cut_short()) is not None:  # read whole as gzip: that it ends here, BGZF says
                raise EOFError(cut)

    def _text_kind(self, raw: bytes) -> str:
        """What a record's text field holds instead of a string, read by the standard library's parser: exact where
        orjson is not (an int past 64 bits it reads as a float), and it takes NaN.
        """
        return self.fields.text_kind(json_loads(raw))

    def _bgzf_cut_short(self) -> str | None:
        """:func:`~freqlab.corpus.frames.bgzf_cut_short` of a local ``.gz`` file, when this part reads to its end."""
        if not self.path.lower().endswith(".gz") or self.file.remote:
            return None
        if self.frames is not None and self.frames[1] < self.file.size:
            return None  # the last part says it
        return bgzf_cut_short(self.path)

    def compressed_damage(self) -> str | None:
        """What a bad record's error adds when this part's compressed stream, decompressed to its end, fails: the
        file is cut short (that cannot have made an earlier record), or its data is corrupt (a gzip CRC is checked
        only at a member's end, so the record may be that damage's output); None when it reads whole, is not
        compressed, or is remote (read again over the network, a failure there would be no verdict on the file).
        """
        if not is_compressed(self.path) or is_url(self.path):
            return None
        last: bytes | None = b""  # the stream's last line after its last newline (None: longer than a MiB, not kept)
        try:
            with open_binary(self.path, self.frames) as stream:
                while chunk := stream.read(_BUFFER):
                    newline = chunk.rfind(b"\n")
                    if newline >= 0:
                        last = chunk[newline + 1 :]
                    elif last is not None:
                        last = last + chunk if len(last) + len(chunk) <= 1 << 20 else None
        except self.read_errors as exc:
            found = describe_error(exc)
            if isinstance(exc, EOFError) or str(exc).startswith(_CUT_SHORT):  # gzip's own, or ZstdFrames
                return f"the file is also cut short ({found})"
            return f"the file's compressed data is corrupt ({found}): the record may be that damage"
        if self.path.lower().endswith(".gz") and (cut := bgzf_cut_short(self.path)) is not None:
            return f"the file is also cut short ({cut})"
        if last is not None and last.strip() and not _is_json(last):  # cut where a frame (gzip member) ends
            return "the file's last line ends without a newline and is no JSON: the file may be cut short"
        return None

    def first_record(self) -> dict | None:
        """The file's first non-blank line, parsed (None when it is not a JSON object)."""
        with self.reading(), open_binary(self.path) as stream:
            for number, raw in enumerate(stream):
                raw = raw.removeprefix(_BOM) if number == 0 else raw  # a BOM alone on the first line is blank
                if raw.strip():
                    try:
                        record = orjson.loads(raw)
                    except ValueError:
                        return None
                    return record if isinstance(record, dict) else None
        return None

    def _runs(self, stream, start: int, end: int | None) -> Iterator[tuple[int, bytes | list[str]]]:
        """The lines of :func:`owned_lines` (``(position, line)``, for :meth:`_lines` to decide), except that runs
        of plain records come as ``(-1, [texts])``: read in blocks (:func:`owned_blocks`), each line parsed once by
        orjson, and a record is plain when its text field (a top-level key) holds a non-empty string, the very
        case where the extractor returns ``(text, None, None)``.
        """
        fast_loads = orjson.loads
        key = self.fields.text
        simple = "." not in key  # a dotted path goes through the extractor's lookup (and its surrogate check)
        fast_extract = self.fields.extractor(exact_numbers=False)
        run: list[str] = []
        gaps: list[int] = []  # blank lines before each text of the run (kept only once one is met)
        blanks: list[tuple[int, bytes]] = []  # blank lines met since the run's last text: (position, line)
        run_bytes = 0

        def ended() -> Iterator[tuple[int, bytes | list[str]]]:
            """The run so far, then the blank lines after its last text as lines (as owned_lines gives them)."""
            nonlocal run, gaps, run_bytes
            if run:
                yield -1, Run(run, gaps) if gaps else run
                run, gaps, run_bytes = [], [], 0
            yield from ((at, blank + b"\n") for at, blank in blanks)
            blanks.clear()

        for first, lines in owned_blocks(stream, start, end):
            if simple and not (first == 0 and lines[0].startswith(_BOM)):
                texts = _plain_texts(lines, key)
                if texts is not None:
                    yield from ended()
                    for at in range(0, len(texts), RUN_LINES):
                        yield -1, texts[at : at + RUN_LINES]
                    continue
            position = first
            for line in lines:
                size = len(line) + 1
                if not line or line.isspace():  # a blank line between plain texts joins the run's gaps
                    blanks.append((position, line))
                    position += size
                    if len(blanks) >= RUN_LINES:  # a long stretch of them: as lines, memory bounded (a review)
                        yield from ended()
                    continue
                # the BOM is the file's, not the record's; the line goes on as read (_lines removes it once)
                bare = line[3:] if position == 0 and line.startswith(_BOM) else line
                try:
                    record = fast_loads(bare)
                except (ValueError, RecursionError):
                    record = None
                if record.__class__ is dict:
                    text = record.get(key) if simple else fast_extract(record)[0]
                    if text.__class__ is str and text and (simple or fast_extract(record)[2] is None):
                        if blanks and not gaps:
                            gaps = [0] * len(run)
                        if gaps or blanks:
                            gaps.append(len(blanks))
                        blanks.clear()
                        run.append(text)
                        run_bytes += size
                        if len(run) >= RUN_LINES or run_bytes >= RUN_BYTES:
                            yield from ended()
                        position += size
                        continue
                yield from ended()
                yield position, line + b"\n"  # as owned_lines gives it (a last line's extra newline is blank)
                position += size
            # what this block read goes to the scan before the next block is read: a file that fails there (cut
            # short, a line too long) keeps the documents before it, as a limit inside them needs (a review)
            yield from ended()

    def _owned(self) -> tuple[int, int | None]:
        """``(start, end)`` for :func:`~freqlab.corpus.ranges.owned_lines`: the byte range, or for ``frames`` the
        compressed offset and no end (the stream stops after the line running over ``stop``): only whether ``start``
        is 0 (the part begins the file) matters then, positions are not the content's (no line number is taken
        from them).
        """
        return (self.start, self.end) if self.frames is None else (self.frames[0], None)

    def _seek(self, stream) -> int | Callable[[], int] | None:
        """Move ``stream`` to ``start``: seek a plain file (its line count is then unknown: None), skip a
        compressed one's prefix by decompressing it (counting its newlines on the way). ``frames`` start where they
        are stored: their line count comes from the frames before, decompressed only when asked for (a function).
        """
        if self.frames is not None:
            offset = self.frames[0]  # + 1: the newline that ends the line holding the frames' start (the part before's)
            return 0 if offset == 0 else lambda: lines_before_frame(self.path, offset) + 1
        if self.start == 0:
            return 0
        if is_compressed(self.path):  # + 1: the newline that ends the line holding `start` (the range before's)
            return skip_bytes(stream, self.start) + 1
        stream.seek(self.start)
        return None

    def size(self) -> int | None:
        """Bytes of the file this shard covers: its range of a plain file; of a compressed file split into ranges of
        estimated decompressed bytes, the same share of the compressed size (the parts add up to the file's size).
        """
        if self.frames is not None:
            return self.frames[1] - self.frames[0]
        if self.start == 0 and self.end is None:
            return self.file.size
        if is_compressed(self.path):
            start, stop = self._compressed_range()
            return stop - start
        return (self.end if self.end is not None else self.file.size) - self.start

    def work(self) -> int | None:
        """Bytes of content this shard reads: its :meth:`size`, for a compressed file the estimated decompressed
        bytes (:func:`estimated_content_bytes`) of its share, so that a ``.zst`` ranks by the text it holds, not by
        its bytes on disk (~4x fewer), beside plain files.
        """
        size = self.size()
        if size is None or not is_compressed(self.path):
            return size
        return size * estimated_content_bytes(self.file) // max(self.file.size, 1)  # its share of the content

    def _compressed_range(self) -> tuple[int, int]:
        """``[start, stop)`` of the compressed file matching this range of its estimated decompressed content."""
        size, estimated = self.file.size, estimated_content_bytes(self.file)
        if estimated <= 0:  # a 0-byte file: nothing to read
            return 0, size
        end = estimated if self.end is None else min(self.end, estimated)
        return size * min(self.start, estimated) // estimated, size * end // estimated

    def _bytes_read(self, stream: BinaryIO):
        """The probe of a :class:`~freqlab.corpus.base.ReadMeter`: bytes of :meth:`size` read so far (0, meaning "no
        news", once the file is closed).
        """
        if not is_compressed(self.path):
            position, offset = stream.tell, self.start
        else:
            framed = self.frames is not None or self.path.lower().endswith(_ZSTD_SUFFIXES)
            position = stream.raw.compressed_position if framed else stream.fileobj.tell  # type: ignore[attr-defined]
            offset = self.frames[0] if self.frames is not None else self._compressed_range()[0]
        return lambda: 0 if stream.closed else position() - offset


def first_bad_line(path: str, limit: int = 1 << 28) -> int | None:
    """The number (1-based) of the first line of a JSON-lines file that is not a JSON object, reading at most
    ``limit`` decompressed bytes; None when there is none that far (for messages of readers that cannot say).
    """
    read = 0
    try:
        with open_binary(path) as stream:
            for number, raw in enumerate(stream, 1):
                read += len(raw)
                if read > limit:
                    return None
                if raw.isspace():
                    continue
                try:
                    record = orjson.loads(raw.removeprefix(_BOM) if number == 1 else raw)
                except ValueError:
                    return number
                if not isinstance(record, dict):
                    return number
    except (OSError, EOFError, zstandard.ZstdError, zlib.error):
        return None
    return None


_MAX_DEFLATE_RATIO = 1032  # the most a deflate stream expands (258-byte matches of 2 bits: RFC 1951)
#: what a file named as plain JSON lines may hold instead: gzip (RFC 1952), zstd (RFC 8878), Parquet ("PAR1") and
#: Arrow's IPC file ("ARROW1"; a review: a Parquet file named .jsonl was "invalid-utf8" at line 1, or with
#: --on-error skip 251 garbage records)
_COMPRESSED_MAGIC = (
    (b"\x1f\x8b", "gzip", ".gz"),
    (b"\x28\xb5\x2f\xfd", "zstd", ".zst"),
    (b"PAR1", "Parquet", ".parquet"),  # and it ends with PAR1 too (a text line may start "PAR1 is ...")
    (b"ARRO", "Arrow", ".arrow"),  # ARROW1 at both ends: Arrow's IPC file
    (b"\xff\xff\xff\xff", "Arrow", ".arrow"),  # Arrow's IPC stream (the datasets cache's files); never UTF-8
)
_ENDS_ALIKE = {b"PAR1": b"PAR1", b"ARRO": b"ARROW1"}  # formats whose files end with their magic too
_WHOLE_JSON_LIMIT = 64 << 20  # a file whose first line is no JSON is parsed whole, to say what it is, up to this size


def compressed_content(head: bytes, path: str) -> str | None:
    """The one-line message when a file named as plain JSON lines starts with gzip, zstd, Parquet or Arrow data
    (:data:`_COMPRESSED_MAGIC`), whose bytes would be read as lines of invalid UTF-8; None otherwise.
    """
    for magic, kind, suffix in _COMPRESSED_MAGIC:
        if head.startswith(magic) and (magic not in _ENDS_ALIKE or _ends_with(path, _ENDS_ALIKE[magic])):
            return (
                f"{path}: holds {kind} data, but its name has no {suffix} suffix: freqlab reads a file by its "
                f"name; rename it (e.g. {os.path.basename(path)}{suffix})"
            )
    return None


def _ends_with(path: str, tail: bytes) -> bool:
    """Whether the local file ``path`` ends with ``tail`` (False when it cannot be read so: a remote file)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() < len(tail):
                return False
            handle.seek(-len(tail), os.SEEK_END)
            return handle.read() == tail
    except OSError:
        return False


def check_json_lines(file: DataFile) -> bool:
    """FreqlabError when a plain local file is one JSON document (a pretty-printed object or an array, such as a
    ``tokenizer.json``) rather than JSON lines, instead of a ``malformed-json`` error at line 1. Reads the first
    line; the whole file only when that line is not JSON by itself. True when the file starts with gzip or zstd
    data (:func:`compressed_content`: one part, whose read says so).
    """
    if file.remote or is_compressed(file.path) or not file.size:
        return False
    with open(file.path, "rb") as handle:
        first = handle.readline(_BUFFER).removeprefix(_BOM)
        if compressed_content(first, file.path):
            return True
        while first and first.isspace():
            first = handle.readline(_BUFFER)
    try:
        orjson.loads(first)
        return False
    except ValueError:
        pass
    if file.size > _WHOLE_JSON_LIMIT:
        return False
    try:
        with open(file.path, "rb") as handle:
            data = handle.read().removeprefix(_BOM)
        whole = orjson.loads(data)
    except (ValueError, OSError):
        return False  # not JSON as a whole either: its bad lines are reported as usual
    if b"\n" not in data.strip():
        return False  # one line (longer than the first read): JSON lines of one document
    what = "one JSON array" if isinstance(whole, list) else "one JSON document"
    folder = os.path.dirname(file.path) or "."
    hint = f" (to leave it out, name the data files with a pattern, e.g. {os.path.join(folder, '*.jsonl*')!r})"
    if isinstance(whole, dict) and "model" in whole and ("added_tokens" in whole or "pre_tokenizer" in whole):
        hint = " (it looks like a tokenizer: give it as --tokenizer)"
    raise FreqlabError(f"{file.path}: {what} spread over lines, not JSON lines (one object per line){hint}")


def frame_shards(file: DataFile, fields: Fields, range_bytes: int) -> list[JsonlShard]:
    """The parts of a local ``.zst`` file of several frames (or a ``.gz`` file of BGZF members), as many as a file of
    its size split into ranges of ``range_bytes`` (estimated decompressed bytes) would have, cut where frames start
    (about equal compressed sizes; :func:`~freqlab.corpus.frames.frame_parts`): each part decompresses its own
    frames, not the ones before. Empty (one stream, from the start) for a remote file, a gzip file of other members
    (their sizes are not recorded: finding where one ends means inflating it), a file that needs one part, one of
    one frame, or one whose frames cannot be indexed exactly (:func:`~freqlab.corpus.frames.zstd_frames`: a
    truncated file or trailing garbage is read as one stream, as before, and reported where the reader meets it).
    """
    wanted = len(split_bytes(estimated_content_bytes(file), range_bytes))
    if wanted < 2 or file.remote:
        return []
    try:
        frames = (zstd_frames if file.path.lower().endswith(_ZSTD_SUFFIXES) else bgzf_members)(file.path)
    except OSError:
        return []  # unreadable: the reader reports it
    parts = frame_parts(frames, wanted) if frames is not None else []
    if len(parts) < 2:
        return []
    return [JsonlShard(f"{file.id}@frames{start}-{stop}", file, fields, frames=(start, stop)) for start, stop in parts]


class JsonlFormat(FileFormat):
    """JSON lines files, plain or compressed: shards are byte ranges cut at line boundaries."""

    name = "jsonl"
    suffixes = tuple(
        f"{base}{compression}"
        for base in (".jsonl", ".json", ".ndjson")
        for compression in ("", ".gz", ".zst", ".zstd")
    )
    description = "JSON lines (.jsonl/.json/.ndjson, optionally .gz/.zst)"

    def claims(self, path: str) -> bool:
        """Whether ``path`` is a JSON lines file (by its suffix)."""
        name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
        return name not in DATASETS_METADATA and super().claims(path)

    def estimated_bytes(self, file: DataFile) -> int:
        """Estimated uncompressed bytes of ``file`` (for planning shards and progress)."""
        return estimated_content_bytes(file)

    def shards(self, files: list[DataFile], fields: Fields, range_bytes: int) -> list[JsonlShard]:
        """Shards of about ``range_bytes`` each, cut at line boundaries; a local ``.zst`` file of several frames is
        cut where frames start (:func:`frame_shards`), any other compressed file is one shard.
        """
        shards: list[JsonlShard] = []
        for file in files:
            if check_json_lines(file):  # compressed data: one part, whose read says what it holds
                shards.append(JsonlShard(file.id, file, fields))
                continue
            if is_compressed(file.path) and (framed := frame_shards(file, fields, range_bytes)):
                shards.extend(framed)
                continue
            limit = MAX_STREAM_RANGES if is_compressed(file.path) else None
            parts = split_bytes(self.estimated_bytes(file), range_bytes, limit)
            for start, end in parts:
                part_id = file.id if len(parts) == 1 else f"{file.id}@{start}-{'' if end is None else end}"
                shards.append(JsonlShard(part_id, file, fields, start, end))
        return shards

    def is_empty(self, file: DataFile) -> bool:
        """Zero bytes, or a small file without a record (a compressed empty file still has a header of
        ~10-20 bytes; blank lines are not records).
        """
        if file.size == 0:
            return True
        if file.size > _SMALL_FILE:
            return False
        shard = JsonlShard(file.id, file, Fields())
        try:
            return next(iter(shard.read()), None) is None
        except (OSError, ValueError, LineTooLong):
            return False  # corrupt: reading the shard reports it, as for any other file


JSONL = register(JsonlFormat())
