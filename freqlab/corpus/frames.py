"""Seek points of a compressed file: where an independent zstd frame starts, and how much it holds.

A ``.zst`` file is a sequence of frames (RFC 8878, "Zstandard Compression and the 'application/zstd' Media
Type", section 3.1), each decompressible on its own: ``pzstd``, ``zstd -c a b``, ``cat a.zst b.zst`` and many
writers that compress in chunks emit several. A part of the file can then start decompressing at a frame
instead of decompressing (and dropping) everything before it: parts of one file run on several workers, each
decompressing its own frames once (:class:`~freqlab.corpus.jsonl.JsonlShard` says which lines a part owns:
frames need not end at a newline).

Frames are found by walking headers only: a frame header, then each block's 3-byte header (its size says where
the next one is), then the optional checksum (section 3.1.1); a skippable frame (section 3.1.2) says its own
size. Nothing is decompressed. A file that cannot be indexed exactly (a frame that needs a dictionary, a
reserved block type, trailing bytes that are no frame, a file cut short, more than :data:`MAX_BLOCKS` blocks to
walk) gets no seek points: it is read as one stream, from the start, as a single-frame file is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ZSTD_MAGIC = 0xFD2FB528
SKIPPABLE_MASK, SKIPPABLE_MAGIC = 0xFFFFFFF0, 0x184D2A50
# Block headers walked at most per file (1-4 microseconds each, measured; ~8 GB of compressed text at typical block
# sizes of 30 KB): past that a file is read as one stream rather than have the planning of a scan take seconds. Only
# a file larger than a part is indexed (at most 256 files of a corpus, see freqlab.corpus.ranges).
MAX_BLOCKS = 1 << 18


@dataclass(frozen=True)
class Frame:
    """One frame of a compressed file: its compressed bytes ``[offset, offset + size)``."""

    offset: int
    size: int


def zstd_frames(path: str, max_blocks: int = MAX_BLOCKS) -> list[Frame] | None:
    """The frames of the local ``.zst`` file ``path``, in order, skippable frames merged into the frame they
    precede (or the one before, at the end); None when the file cannot be indexed exactly (see the module).

    >>> import os, tempfile, zstandard
    >>> first, second = zstandard.compress(b"a" * 1000), zstandard.compress(b"bc")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "two.jsonl.zst")
    ...     with open(path, "wb") as out:
    ...         _ = out.write(first + second)
    ...     zstd_frames(path) == [Frame(0, len(first)), Frame(len(first), len(second))]
    True
    """
    frames: list[Frame] = []
    pending = 0  # bytes of skippable frames waiting for the frame they precede
    blocks = 0
    with open(path, "rb", buffering=0) as handle:
        fd = handle.fileno()
        size = os.fstat(fd).st_size
        at = 0
        while at < size:
            magic = _read_int(fd, at, 4)
            if magic is None:
                return None
            if magic & SKIPPABLE_MASK == SKIPPABLE_MAGIC:
                length = _read_int(fd, at + 4, 4)
                if length is None or at + 8 + length > size:
                    return None
                pending += 8 + length
                at += 8 + length
                continue
            if magic != ZSTD_MAGIC:
                return None  # trailing garbage (or not zstd): the reader reports it where it meets it
            header = _frame_header(fd, at + 4)
            if header is None:
                return None
            header_size, checksum = header
            end = at + 4 + header_size
            while True:
                block = _read_int(fd, end, 3)
                blocks += 1
                if block is None or blocks > max_blocks:
                    return None
                kind, length = (block >> 1) & 3, block >> 3
                if kind == 3:  # reserved: corrupt
                    return None
                end += 3 + (1 if kind == 1 else length)  # an RLE block stores one byte
                if block & 1:
                    break
            end += 4 * checksum
            if end > size:
                return None  # cut short: the reader reports it where it meets it
            frames.append(Frame(at - pending, end - at + pending))
            pending = 0
            at = end
        if pending:  # skippable frames at the end belong to the last frame (or make a file of no data)
            last = frames.pop() if frames else Frame(size - pending, 0)
            frames.append(Frame(last.offset, last.size + pending))
    return frames


GZIP_MAGIC = b"\x1f\x8b\x08"  # ID1, ID2, CM = deflate (RFC 1952 section 2.3.1)
#: BGZF's end-of-file block, an empty member every BGZF writer ends with (SAM/BAM specification section 4.1.2)
BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")


def bgzf_cut_short(path: str) -> str | None:
    """Why the local file ``path`` is cut short, when it is BGZF throughout (:func:`bgzf_members`) and its last member
    is not :data:`BGZF_EOF`: then it was cut where a member ends, which gzip reads as a shorter whole file
    (``samtools`` warns "EOF marker is absent"). None for anything else: an ordinary gzip file or member, padding
    after the last member (gzip reads through both: a review), a file cut inside a member (gzip says so), or a whole
    BGZF file.

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "a.jsonl.gz")
    ...     _ = open(path, "wb").write(BGZF_EOF)
    ...     bgzf_cut_short(path) is None
    True
    """
    members = bgzf_members(path)
    if not members:
        return None
    last = members[-1]
    with open(path, "rb", buffering=0) as handle:
        if os.pread(handle.fileno(), last.size, last.offset) == BGZF_EOF:
            return None
    return (
        "the file ends without BGZF's end-of-file block: cut short where a block ends (bgzip writes that block "
        "last; samtools says 'EOF marker is absent')"
    )


def bgzf_members(path: str, max_blocks: int = MAX_BLOCKS) -> list[Frame] | None:
    """The members of the local BGZF file ``path`` (``bgzip``'s gzip: every member records its own size in a
    ``BC`` extra subfield, SAM/BAM specification section 4.1), in order; None when a member does not (an ordinary
    gzip file: where its members end is known only by inflating them), or the file is cut short.

    >>> import gzip, os, tempfile
    >>> def bgzf(data):
    ...     body = gzip.compress(data, mtime=0)
    ...     extra = b"BC" + (2).to_bytes(2, "little") + (len(body) + 8 - 1).to_bytes(2, "little")
    ...     return body[:3] + bytes([4]) + body[4:10] + len(extra).to_bytes(2, "little") + extra + body[10:]
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "two.jsonl.gz")
    ...     with open(path, "wb") as out:
    ...         _ = out.write(bgzf(b"a" * 1000) + bgzf(b"bc"))
    ...     data = open(path, "rb").read()
    ...     [gzip.decompress(data[m.offset : m.offset + m.size]) for m in bgzf_members(path)] == [b"a" * 1000, b"bc"]
    True
    """
    members: list[Frame] = []
    with open(path, "rb", buffering=0) as handle:
        fd = handle.fileno()
        size = os.fstat(fd).st_size
        at = 0
        while at < size:
            header = os.pread(fd, 12, at)
            if len(members) >= max_blocks or len(header) < 12 or header[:3] != GZIP_MAGIC or not header[3] & 4:
                return None  # FEXTRA not set: no BC subfield
            extra = os.pread(fd, int.from_bytes(header[10:12], "little"), at + 12)
            length = None
            while len(extra) >= 4:  # subfields: SI1 SI2 LEN(2) data
                sub = int.from_bytes(extra[2:4], "little")
                if extra[:2] == b"BC" and sub == 2 and len(extra) >= 6:
                    length = int.from_bytes(extra[4:6], "little") + 1
                extra = extra[4 + sub :]
            if length is None or at + length > size:
                return None
            members.append(Frame(at, length))
            at += length
    return members


def _read_int(fd: int, offset: int, count: int) -> int | None:
    """The little-endian integer of ``count`` bytes at ``offset`` (None past the end of the file)."""
    data = os.pread(fd, count, offset)
    return int.from_bytes(data, "little") if len(data) == count else None


def _frame_header(fd: int, offset: int) -> tuple[int, int] | None:
    """``(header size, checksum flag)`` of the zstd frame header at ``offset`` (after the magic); None when the
    frame needs a dictionary or sets the reserved bit (RFC 8878 section 3.1.1.1).
    """
    descriptor = _read_int(fd, offset, 1)
    if descriptor is None or descriptor & 3 or descriptor & 0x08:  # a dictionary id, or the reserved bit
        return None
    fcs_flag, single_segment = descriptor >> 6, (descriptor >> 5) & 1
    fcs_bytes = (single_segment, 2, 4, 8)[fcs_flag]
    return 1 + (1 - single_segment) + fcs_bytes, (descriptor >> 2) & 1


def frame_parts(frames: list[Frame], count: int) -> list[tuple[int, int]]:
    """Consecutive frames grouped into at most ``count`` parts of about equal compressed size (cut only where a
    frame starts): ``[offset, stop)`` of each part's compressed bytes. The parts cover the frames exactly, none
    is empty, and they depend only on the frames and ``count``.

    >>> frame_parts([Frame(0, 10), Frame(10, 10), Frame(20, 10)], 2)
    [(0, 20), (20, 30)]
    >>> frame_parts([Frame(0, 10), Frame(10, 90)], 4)
    [(0, 10), (10, 100)]
    """
    if not frames:
        return []
    first, stop = frames[0].offset, frames[-1].offset + frames[-1].size
    total = stop - first
    parts: list[tuple[int, int]] = []
    offset = first
    for k, frame in enumerate(frames[:-1]):
        end = frame.offset + frame.size
        target = first + total * (len(parts) + 1) // count
        # cut after this frame when that boundary is the nearest one to the next part's share of the total
        if len(parts) < count - 1 and 2 * end + frames[k + 1].size > 2 * target:
            parts.append((offset, end))
            offset = end
    parts.append((offset, stop))
    return parts
