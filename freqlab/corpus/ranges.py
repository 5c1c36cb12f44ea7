"""Cutting files into parts, so a corpus of a few large files still keeps every core busy.

How big a part is depends only on the corpus (its files' sizes), never on the worker count, so a scan resumed
on another machine finds the same shards: parts are about ``max(MIN_RANGE_BYTES, total / TARGET_SHARDS)``
bytes. A corpus of many files (SlimPajama: 59,166 files of ~40 MB) is read a file per shard; three 30 MB files
become about a dozen shards; one 10 GB file becomes 256.

Line-based files are cut into byte ranges. A range ``[start, end)`` owns the lines that *start* at a position
``q`` with ``start < q <= end`` (the first range also owns ``q = 0``), so consecutive ranges partition the lines
exactly, whatever the line lengths, without knowing where lines start when the ranges are made: a reader skips
to the first line start after ``start`` and reads until it passes ``end``. A line longer than a range belongs to
the range it starts in. A compressed stream has no seek points: a part of it would skip its prefix by decompressing
it (``(n - 1) / 2`` extra decompressions of the file for ``n`` parts), so a compressed file is read as
:data:`MAX_STREAM_RANGES` part (one): each stream is decompressed once. One large compressed file then runs as one
shard, in the driver's process, and fastokens encodes its batches on every core (its own threads); a few of them
run on a pool whose workers share the idle cores (measured on a 36M-character ``.jsonl.zst``, 2 cores: 3.2-4.2 s
as one part against 8.6-9.0 s as four parts on two workers). The range reader still takes any part of a stream.
A ``.zst`` file of several frames has seek points: it is cut where frames start, each part decompressing its own
frames (:func:`freqlab.corpus.jsonl.frame_shards`; the same ownership rule, lines running over frame boundaries).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from freqlab.errors import FreqlabError

MIN_RANGE_BYTES = 8 << 20
TARGET_SHARDS = 256
MAX_STREAM_RANGES = 1
# A line (one JSON record) longer than this is an error, not unbounded memory (an endless "file" like a symlink
# to /dev/zero would otherwise be read as one line until memory runs out). FREQLAB_MAX_LINE_BYTES overrides it.
MAX_LINE_BYTES = 1 << 30
MAX_LINE_VARIABLE = "FREQLAB_MAX_LINE_BYTES"
_CHUNK = 1 << 20


class LineTooLong(OSError):
    """A line longer than the bound (the reader's ``max_line``)."""


def max_line_bytes() -> int:
    """The longest line a reader takes: ``$FREQLAB_MAX_LINE_BYTES``, else :data:`MAX_LINE_BYTES` (1 GiB)."""
    value = os.environ.get(MAX_LINE_VARIABLE, "").strip()
    if not value:
        return MAX_LINE_BYTES
    try:
        bound = int(value)
        if bound < 1:
            raise ValueError
    except ValueError:
        raise FreqlabError(f"{MAX_LINE_VARIABLE}={value!r}: expected a positive number of bytes") from None
    return bound


def range_bytes(total_bytes: int) -> int:
    """The size of a part for a corpus of ``total_bytes``.

    >>> range_bytes(10**6), range_bytes(10 * 2**30) // 2**20
    (8388608, 40)
    """
    return max(MIN_RANGE_BYTES, -(-int(total_bytes) // TARGET_SHARDS))


def split_bytes(size: int, part: int, max_parts: int | None = None) -> list[tuple[int, int | None]]:
    """``[start, end)`` ranges of about ``part`` bytes covering ``size`` bytes; the last one is open (``None``:
    to the end, so a size that was only estimated still covers everything).

    >>> split_bytes(100, 40)
    [(0, 34), (34, 68), (68, None)]
    >>> split_bytes(100, 40, max_parts=2), split_bytes(0, 40)
    ([(0, 50), (50, None)], [(0, None)])
    """
    n = max(1, -(-int(size) // int(part)))
    if max_parts is not None:
        n = min(n, max_parts)
    step = -(-int(size) // n) if size else 0
    return [(k * step, (k + 1) * step if k < n - 1 else None) for k in range(n)]


def skip_bytes(stream: BinaryIO, count: int) -> int:
    """Read and drop ``count`` bytes of ``stream`` (a decompressing stream cannot seek); returns the newlines
    among them. Stops early at the end of the stream.
    """
    newlines = 0
    buffer = bytearray(min(count, _CHUNK))
    view = memoryview(buffer)
    while count > 0:
        got = stream.readinto(view[: min(count, len(buffer))])
        if not got:
            break
        newlines += buffer.count(b"\n", 0, got)
        count -= got
    return newlines


def owned_lines(
    stream: BinaryIO, start: int, end: int | None, max_line: int | None = None
) -> Iterator[tuple[int, bytes]]:
    r"""``(position, line)`` of the lines the range ``[start, end)`` owns; ``stream`` must be at ``start``.

    Lines keep their ``\n`` (the last one may lack it). Raises :class:`LineTooLong` for a line longer than
    ``max_line`` bytes.
    """
    readline = stream.readline
    max_line = max_line_bytes() if max_line is None else max_line
    position = _first_line_start(stream, start, end)
    if position is None:
        return
    limit = max_line + 1
    while end is None or position <= end:
        line = readline(limit)
        if not line:
            return
        if len(line) > max_line:
            _too_long(max_line, position)
        yield position, line
        position += len(line)


def _first_line_start(stream: BinaryIO, start: int, end: int | None) -> int | None:
    """Skip to the first line the range ``[start, end)`` owns (the line around ``start`` belongs to the range
    before); its position, or None when the range owns no line.
    """
    position = start
    if start > 0:
        while True:
            chunk = stream.readline(_CHUNK)
            if not chunk:
                return None
            position += len(chunk)
            if chunk.endswith(b"\n"):
                break
            if end is not None and position >= end:
                return None
    return position


def owned_blocks(
    stream: BinaryIO, start: int, end: int | None, max_line: int | None = None
) -> Iterator[tuple[int, list[bytes]]]:
    r"""The lines of :func:`owned_lines` in blocks, without their ``\n``: ``(position of the first line, lines)``.

    One ``read`` and one ``split`` per MiB instead of a ``readline`` per line; the lines, their positions and
    :class:`LineTooLong` are those of :func:`owned_lines` (a line of ``n`` bytes there is ``n - 1`` here, except
    a last line without ``\n``).
    """
    max_line = max_line_bytes() if max_line is None else max_line
    position = _first_line_start(stream, start, end)
    if position is None:
        return
    pending: list[bytes] = []  # the start of a line that has no newline yet
    pending_bytes = 0
    while end is None or position <= end:
        block = stream.read(_CHUNK)
        if not block:
            if pending_bytes:  # a last line without newline
                if pending_bytes > max_line:
                    _too_long(max_line, position)
                yield position, [b"".join(pending)]
            return
        if b"\n" not in block:
            pending.append(block)
            pending_bytes += len(block)
            if pending_bytes > max_line:
                _too_long(max_line, position)
            continue
        data = b"".join([*pending, block]) if pending else block
        lines = data.split(b"\n")
        tail = lines.pop()
        complete = len(data) - len(tail)
        owned = lines
        if end is not None and position + complete - len(lines[-1]) - 1 > end:  # lines past the range start here
            count, at = 0, position
            while count < len(lines) and at <= end:
                at += len(lines[count]) + 1
                count += 1
            owned = lines[:count]
        if owned and max(map(len, owned)) >= max_line:  # with its newline, longer than max_line
            at = position
            for k, line in enumerate(owned):
                if len(line) >= max_line:
                    if k:
                        yield position, owned[:k]  # the lines before it are read, as owned_lines reads them
                    _too_long(max_line, at)
                at += len(line) + 1
        if owned:
            yield position, owned
        if owned is not lines:
            return
        position += complete
        pending, pending_bytes = ([tail], len(tail)) if tail else ([], 0)
        if pending_bytes > max_line and (end is None or position <= end):
            _too_long(max_line, position)


def _too_long(max_line: int, position: int) -> None:
    raise LineTooLong(
        f"a line longer than {max_line:,} bytes at byte {position:,} (not JSON lines? the bound is "
        f"${MAX_LINE_VARIABLE})"
    )
