"""A ``.zst`` file of several frames is cut where frames start: each part decompresses its own frames only, and
the parts read together give exactly what one reader of the whole stream gives (records, line numbers, errors),
wherever a frame boundary falls (inside a JSON line, on a newline, inside a line that spans several frames).

Frames are written by ``zstandard`` as ``pzstd``, ``zstd -c a b`` and chunked writers write them (with or
without the content size, with checksums, with ``pzstd``'s skippable frames); the frame index is checked against
the offsets the writer produced.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random

import pytest
import zstandard

from freqlab.corpus import open_corpus
from freqlab.corpus.base import UnreadableFile
from freqlab.corpus.file_discovery import stat_file
from freqlab.corpus.frames import BGZF_EOF, Frame, bgzf_members, frame_parts, zstd_frames
from freqlab.corpus.jsonl import JsonlShard, ZstdFrames, frame_shards, lines_before_frame
from freqlab.errors import FreqlabError


def _frame(data: bytes, content_size: bool = True, checksum: bool = False) -> bytes:
    """One zstd frame of ``data`` (a streamed frame records no content size)."""
    compressor = zstandard.ZstdCompressor(write_content_size=content_size, write_checksum=checksum)
    if content_size:
        return compressor.compress(data)
    streamer = compressor.compressobj()  # size unknown to the writer: no Frame_Content_Size
    return streamer.compress(data) + streamer.flush()


def _skippable(payload: bytes) -> bytes:
    """A skippable frame (RFC 8878 section 3.1.2), as ``pzstd`` writes before each frame (the frame's size)."""
    return (0x184D2A50).to_bytes(4, "little") + len(payload).to_bytes(4, "little") + payload


def _bgzf(data: bytes) -> bytes:
    """One BGZF member of ``data``, as ``bgzip`` writes it: a gzip member whose ``BC`` extra subfield holds its
    size - 1 (SAM/BAM specification section 4.1)."""
    body = gzip.compress(data, mtime=0)
    extra = b"BC" + (2).to_bytes(2, "little") + (len(body) + 8 - 1).to_bytes(2, "little")
    return body[:3] + bytes([body[3] | 4]) + body[4:10] + len(extra).to_bytes(2, "little") + extra + body[10:]


def _framed(body: bytes, cuts: list[int], pzstd: bool = False, bgzf: bool = False, **options):
    """``body`` compressed as one frame (BGZF member) per piece between ``cuts`` (byte offsets anywhere in the
    content), and the frames written (skippable frames counted with the frame they precede)."""
    packed, frames = b"", []
    for start, end in zip([0, *cuts], [*cuts, len(body)]):
        frame = _bgzf(body[start:end]) if bgzf else _frame(body[start:end], **options)
        if pzstd:
            frame = _skippable(len(frame).to_bytes(4, "little")) + frame
        frames.append(Frame(len(packed), len(frame)))
        packed += frame
    if bgzf:  # its end-of-file block (an empty member), as bgzip writes last
        frames.append(Frame(len(packed), len(BGZF_EOF)))
        packed += BGZF_EOF
    return packed, frames


def _body() -> tuple[bytes, list[int]]:
    """JSON lines of varied lengths with bad lines and a blank line, and the offsets of interesting cuts: inside
    lines, right after a newline, on a newline, and several inside one long line (it spans four frames)."""
    rng = random.Random(7)
    lines = [json.dumps({"text": f"doc {k} " + "word " * rng.randrange(0, 60)}).encode() for k in range(400)]
    lines[3] = b'{"text": broken'
    lines[150] = b""  # blank: not a record, but it has a number
    lines[151] = b"[1, 2]"  # not an object
    lines[200] = json.dumps({"text": "long " * 5000}).encode()
    lines[399] = b'{"text": "bad \xff utf-8"}'
    body = b"\n".join(lines) + b"\n"
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    long_start, long_end = starts[200], starts[201]
    cuts = sorted(
        {
            17,  # inside the first line
            starts[50],  # right after a newline: a line starts exactly at the frame
            starts[80] - 1,  # on a newline: the frame starts with "\n"
            long_start + 3,  # three cuts inside one line: it spans four frames, two with no newline at all
            long_start + 9000,
            long_end - 5,
            starts[300] + 11,
            len(body) - 2,  # the last frame holds the end of the last line
        }
    )
    return body, cuts


def _records(docs) -> list[tuple]:
    return [(doc.text, doc.source, doc.where, doc.error) for doc in docs]


def _runs(shard) -> list:
    """What a scan reads: runs of plain texts as lists, other records as (text, where, error)."""
    return [run if isinstance(run, list) else (run.text, run.where, run.error) for run in shard.read_runs()]


def test_frames_are_found_from_their_headers_alone_as_the_writer_wrote_them(tmp_path):
    body, cuts = _body()
    for options in ({}, {"content_size": False}, {"checksum": True}, {"pzstd": True}):
        packed, written = _framed(body, cuts, **options)
        path = tmp_path / "f.jsonl.zst"
        path.write_bytes(packed)
        assert zstd_frames(str(path)) == written, options
        for frame, start, end in zip(written, [0, *cuts], [*cuts, len(body)]):  # each decompresses on its own
            with ZstdFrames(str(path), frame.offset, frame.offset + frame.size, tail=False) as stream:
                assert stream.read() == body[start:end]


def test_files_that_cannot_be_indexed_exactly_have_no_frames(tmp_path):
    body, cuts = _body()
    packed, frames = _framed(body, cuts)
    path = tmp_path / "f.jsonl.zst"
    for broken in (
        packed[:-1],  # cut short
        packed[: frames[3].offset + 7],  # cut inside a frame header
        packed + b"this is not zstd",  # trailing garbage
        packed + b"\x28\xb5\x2f",  # a magic cut short
        b"not zstd at all, a plain file named .zst",
    ):
        path.write_bytes(broken)
        assert zstd_frames(str(path)) is None
    path.write_bytes(packed)
    assert zstd_frames(str(path), max_blocks=3) is None  # more blocks than the bound: read as one stream
    dictionary = zstandard.train_dictionary(1024, [body[k : k + 200] for k in range(0, 40_000, 200)])
    path.write_bytes(zstandard.ZstdCompressor(dict_data=dictionary).compress(body))
    assert zstd_frames(str(path)) is None  # a frame that needs a dictionary


def test_frames_are_grouped_into_parts_of_about_equal_compressed_size_covering_the_file():
    frames = [Frame(sum(range(10, 10 + k)), 10 + k) for k in range(12)]  # sizes 10 .. 21, contiguous
    stop = frames[-1].offset + frames[-1].size
    for count in range(1, 15):
        parts = frame_parts(frames, count)
        assert parts[0][0] == 0 and parts[-1][1] == stop
        assert all(a[1] == b[0] for a, b in itertools.pairwise(parts))  # contiguous, cut where a frame starts
        assert {start for start, _ in parts} <= {frame.offset for frame in frames}
        # as many as asked while frames are much smaller than parts; never more (cuts go to the nearest frame)
        assert len(parts) == count if count <= 6 else min(count, len(frames)) - 2 <= len(parts) <= count
        sizes = [b - a for a, b in parts]
        assert max(sizes) - min(sizes) <= 2 * 21, (count, sizes)  # within two frames of each other
    assert frame_parts([Frame(0, 5)], 4) == [(0, 5)]


@pytest.mark.parametrize(
    "options", [{}, {"content_size": False, "pzstd": True}, {"checksum": True}, {"bgzf": True}], ids=str
)
def test_parts_read_together_give_the_whole_streams_records_and_line_numbers(tmp_path, options):
    body, cuts = _body()
    packed, frames = _framed(body, cuts, **options)
    name = "f.jsonl.gz" if options.get("bgzf") else "f.jsonl.zst"
    path = tmp_path / name
    path.write_bytes(packed)
    assert (bgzf_members if options.get("bgzf") else zstd_frames)(str(path)) == frames
    file = stat_file(str(path), name)
    whole = JsonlShard(name, file, open_corpus(str(path)).shards[0].fields)  # read as one stream (GzipFile for .gz)
    expected = _records(whole.read(blank_lines=True))
    assert [where for *_, where, error in expected if error] == [
        f"{path}:{k + 1}" for k in (3, 150, 151, 399)
    ]  # the blank line (150), the bad ones
    expected_runs = _runs(whole)
    for count in range(2, len(frames) + 1):
        parts = [
            JsonlShard(f"p{k}", file, whole.fields, frames=part) for k, part in enumerate(frame_parts(frames, count))
        ]
        assert [r for part in parts for r in _records(part.read(blank_lines=True))] == expected, count
        # the scan's read (runs of plain texts), flattened the same way: runs may be cut elsewhere
        flat = [x for part in parts for run in _runs(part) for x in (run if isinstance(run, list) else [run])]
        assert flat == [x for run in expected_runs for x in (run if isinstance(run, list) else [run])], count
        assert sum(part.size() for part in parts) == len(packed)  # progress: the parts add up to the file


@pytest.mark.parametrize("name", ["f.jsonl.zst", "f.jsonl.gz"])
def test_line_numbers_before_a_frame_count_the_frames_before_it(tmp_path, name):
    body, cuts = _body()
    packed, frames = _framed(body, cuts, bgzf=name.endswith(".gz"))
    path = tmp_path / name
    path.write_bytes(packed)
    for frame, cut in zip(frames[1:], cuts):
        assert lines_before_frame(str(path), frame.offset) == body[:cut].count(b"\n")


def test_a_large_multi_frame_file_is_cut_where_frames_start_and_a_single_frame_one_is_not(tmp_path):
    body, cuts = _body()
    framed = tmp_path / "framed.jsonl.zst"
    framed.write_bytes(_framed(body, cuts)[0])
    single = tmp_path / "single.jsonl.zst"
    single.write_bytes(_frame(body))
    fields = open_corpus(str(single)).shards[0].fields
    part_bytes = framed.stat().st_size  # 4 parts: parts are of estimated decompressed bytes (4x the compressed)
    shards = frame_shards(stat_file(str(framed), "framed.jsonl.zst"), fields, part_bytes)
    offsets = [frame.offset for frame in zstd_frames(str(framed))]
    assert len(shards) == 4 and [shard.frames[0] for shard in shards] == sorted({s.frames[0] for s in shards})
    assert {shard.frames[0] for shard in shards} <= set(offsets)
    assert shards[0].id == f"framed.jsonl.zst@frames0-{shards[0].frames[1]}"
    assert frame_shards(stat_file(str(single), "single.jsonl.zst"), fields, part_bytes) == []  # one frame
    assert frame_shards(stat_file(str(framed), "framed.jsonl.zst"), fields, 1 << 30) == []  # one part is enough
    members = tmp_path / "members.jsonl.gz"  # ordinary gzip members (`cat a.gz b.gz`): where each ends is unknown
    members.write_bytes(b"".join(gzip.compress(body[a:b]) for a, b in zip([0, *cuts], [*cuts, len(body)])))
    assert bgzf_members(str(members)) is None
    assert frame_shards(stat_file(str(members), "members.jsonl.gz"), fields, 1024) == []
    bgzf = tmp_path / "bgzf.jsonl.gz"
    bgzf.write_bytes(_framed(body, cuts, bgzf=True)[0])
    assert len(frame_shards(stat_file(str(bgzf), "bgzf.jsonl.gz"), fields, bgzf.stat().st_size)) == 4


def test_a_damaged_multi_frame_file_is_read_as_one_stream_as_before(tmp_path, monkeypatch):
    """A file cut short or with trailing garbage is not indexed: one shard, every line before the damage read,
    then the one-line error (as a single-frame file)."""
    from freqlab.corpus import ranges

    monkeypatch.setattr(ranges, "MIN_RANGE_BYTES", 1024)  # small parts: a sound file of this size is cut
    body, cuts = _body()
    packed, frames = _framed(body, cuts)
    path = tmp_path / "f.jsonl.zst"
    path.write_bytes(packed)
    assert len(open_corpus(str(path)).shards) > 1
    # cut short inside the last frame: every line of the frames before it; trailing garbage: every line
    for damaged, lines in ((packed[: frames[-1].offset + 9], body[: cuts[-1]].count(b"\n")), (packed + b"junk", 400)):
        path.write_bytes(damaged)
        (shard,) = open_corpus(str(path)).shards
        assert shard.frames is None
        read = []
        with pytest.raises(UnreadableFile, match=r"f\.jsonl\.zst: cannot read"):
            for doc in shard.read(blank_lines=True):
                read.append(doc.where)
        assert read == [f"{path}:{k}" for k in range(1, lines + 1)]


def test_a_corrupt_frame_is_reported_by_its_own_part_not_by_the_part_that_finishes_a_line_in_it(tmp_path):
    rng = random.Random(3)
    body = b"".join(json.dumps({"text": f"{rng.getrandbits(800):x}"}).encode() + b"\n" for _ in range(2000))
    cuts = [10_000, 400_000]  # inside lines; the damaged frame holds several blocks (of 128 KiB of content at most)
    packed, frames = _framed(body, cuts, checksum=True)
    end = frames[1].offset + frames[1].size
    path = tmp_path / "f.jsonl.zst"
    path.write_bytes(packed[: end - 4] + bytes(b ^ 0xFF for b in packed[end - 4 : end]) + packed[end:])  # checksum
    file = stat_file(str(path), "f.jsonl.zst")
    fields = open_corpus(str(path)).shards[0].fields
    first, second, third = (
        JsonlShard(f"p{k}", file, fields, frames=(f.offset, f.offset + f.size)) for k, f in enumerate(frames)
    )
    # the first part's last line ends early in the damaged frame: it is read whole, the damage is not this part's
    assert [doc.where for doc in first.read()] == [f"{path}:{k}" for k in range(1, body[:10_000].count(b"\n") + 2)]
    with pytest.raises(UnreadableFile, match=r"f\.jsonl\.zst: cannot read \(ZstdError"):
        list(second.read())
    assert len(list(third.read())) == 2000 - body[: cuts[1]].count(b"\n") - 1  # the frames after it are read
    # the third part's line numbers count the damaged frame's lines: asked for, they name the line within the part's
    # own frames (a raw ZstdError traceback on a pool; second adversary review)
    lines_before_frame.cache_clear()
    where = next(iter(third.read())).where
    assert where.startswith(f"{path}: line 1 of the frames from compressed byte {frames[2].offset:,} (the frames ")
    assert where.endswith("cannot be read: ZstdError: zstd decompressor error: Restored data doesn't match checksum)")


def test_a_compressed_files_recorded_size_raises_the_estimate_of_its_text(tmp_path):
    """The plan of a compressed file (engine, parts, progress) uses 4x its size, or what the file records when that is
    more: a zstd frame's content size, a gzip member's ISIZE. A streamed zstd frame records nothing: 4x it stays."""
    from freqlab.corpus.jsonl import COMPRESSION_RATIO_GUESS, estimated_content_bytes

    data = b"".join(json.dumps({"text": "the same words again " * 50}).encode() + b"\n" for _ in range(2000))
    written = {
        "one.jsonl.zst": _frame(data),
        "one.jsonl.gz": gzip.compress(data),
        "streamed.jsonl.zst": _frame(data, content_size=False),
        "empty.jsonl.gz": b"",
    }
    estimates = {}
    for name, content in written.items():
        (tmp_path / name).write_bytes(content)
        file = stat_file(str(tmp_path / name), name)
        estimates[name] = estimated_content_bytes(file)
        assert estimates[name] >= COMPRESSION_RATIO_GUESS * file.size
    assert estimates["one.jsonl.zst"] == estimates["one.jsonl.gz"] == len(data) > 100 * len(written["one.jsonl.gz"])
    assert estimates["streamed.jsonl.zst"] == COMPRESSION_RATIO_GUESS * len(written["streamed.jsonl.zst"])
    assert estimates["empty.jsonl.gz"] == 0


def test_a_compressed_shard_ranks_by_the_text_it_holds_not_its_bytes_on_disk(tmp_path):
    """Several workers take the largest shards first (:func:`freqlab.scan.driver.dispatch_order`), by their work:
    a plain file's bytes, a compressed file's estimated content (a ``.zst`` of 7 MB of text, a few KB on disk, goes
    before a 3 MB plain file, not after it)."""
    from freqlab.scan.driver import dispatch_order

    record = json.dumps({"text": "the same words again " * 50}).encode() + b"\n"
    (tmp_path / "a-plain.jsonl").write_bytes(record * (3_000_000 // len(record)))
    text = record * (7_000_000 // len(record))
    (tmp_path / "b-packed.jsonl.zst").write_bytes(_frame(text))
    corpus = open_corpus(str(tmp_path))
    plain, packed = corpus.shards
    assert packed.size() < plain.size() == plain.work() < packed.work() == len(text)
    assert dispatch_order(corpus.shards, largest_first=True) == [1, 0]


def test_a_gzip_size_is_read_from_a_trailer_only_where_there_can_be_one(tmp_path):
    """The last 4 bytes of a gzip file are its size (ISIZE) only when the file is whole: a file cut short, or one that
    is no gzip, made the scan plan for 686 MiB of text (a pool of workers for a 5 MiB corpus). A size past what
    deflate can expand the file to (~1032:1), or a file without a gzip header, records nothing."""
    import os

    from freqlab.corpus.jsonl import recorded_content_bytes

    def recorded(path):
        stat = os.stat(path)
        return recorded_content_bytes(str(path), (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns))

    raw = b"".join(json.dumps({"text": f"document {i} " + "x" * (i % 97)}).encode() + b"\n" for i in range(5000))
    whole = gzip.compress(raw)
    (tmp_path / "whole.gz").write_bytes(whole)
    (tmp_path / "cut.gz").write_bytes(whole[: len(whole) // 2] + (2**31).to_bytes(4, "little"))  # 2 GiB "ISIZE"
    (tmp_path / "not.gz").write_bytes(b"not gzip" * 1000 + (10**6).to_bytes(4, "little"))
    assert (recorded(tmp_path / "whole.gz"), recorded(tmp_path / "cut.gz"), recorded(tmp_path / "not.gz")) == (
        len(raw),
        None,
        None,
    )


def test_a_bgzf_file_cut_where_a_block_ends_is_cut_short_not_a_shorter_file(tmp_path):
    """A review: a BGZF file cut at a block boundary read as a whole shorter gzip file, its lost documents neither
    counted nor skipped (at a line's end: "60 read", exit 0; mid-line: a malformed last line and no word of the cut).
    BGZF ends with an empty end-of-file block; without it the file is cut short. An ordinary gzip file records no
    end: a cut between its members stays unseen, and where it leaves a line without its newline, that is said."""
    from freqlab.scan import scan

    lines = [json.dumps({"text": f"document {i} " * 20}).encode() + b"\n" for i in range(40)]
    whole, _ = _framed(b"".join(lines), [sum(map(len, lines[:k])) for k in range(1, 40)], bgzf=True)
    (tmp_path / "whole.jsonl.gz").write_bytes(whole)
    assert scan(str(tmp_path / "whole.jsonl.gz"), progress=False).histogram.documents == 40
    # zeros after the end-of-file block are padding gzip reads through, and an ordinary gzip member after it is more
    # of the file (gzip reads both: a third review); other extra subfields may precede BC
    for name, data in (("pad16", whole + bytes(16)), ("pad70k", whole + bytes(70_000)),
                       ("more", whole + gzip.compress(lines[0], mtime=0))):  # fmt: skip
        (tmp_path / f"{name}.jsonl.gz").write_bytes(data)
        assert scan(str(tmp_path / f"{name}.jsonl.gz"), progress=False).histogram.documents == 40 + (name == "more")
    first = _bgzf(lines[0])  # an "XY" subfield of 2 bytes before its BC one
    xlen = int.from_bytes(first[10:12], "little")
    bc = b"BC\x02\x00" + (len(first) + 6 - 1).to_bytes(2, "little")  # the block's size - 1, 6 bytes longer now
    with_xy = first[:10] + (xlen + 6).to_bytes(2, "little") + b"XY\x02\x00ab" + bc + first[12 + xlen :]
    (tmp_path / "xy.jsonl.gz").write_bytes(with_xy)  # cut: no end-of-file block
    with pytest.raises(FreqlabError, match="the file ends without BGZF's end-of-file block"):
        scan(str(tmp_path / "xy.jsonl.gz"), progress=False)
    at_line_end = whole[: whole.index(BGZF_EOF)]  # every block, no end-of-file block
    mid_line, _ = _framed(b"".join(lines)[:700], [300], bgzf=True)
    for name, data in (("line_end.jsonl.gz", at_line_end), ("mid_line.jsonl.gz", mid_line[: -len(BGZF_EOF)])):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(FreqlabError, match="the file ends without BGZF's end-of-file block: cut short where a"):
            scan(str(path), progress=False)
        skipped = scan(str(path), on_error="skip", progress=False).histogram
        assert (skipped.documents, skipped.skipped) == (0, {"unreadable-file": 1})
    # zstd frames record no end either: a cut mid-line says so beside the bad last line
    cut = _framed(b"".join(lines), [500, 1000, 1500])[0]
    (tmp_path / "cut.jsonl.zst").write_bytes(cut[: len(cut) - len(_frame(b"".join(lines)[1500:]))])
    with pytest.raises(FreqlabError) as error:
        scan(str(tmp_path / "cut.jsonl.zst"), progress=False)
    assert str(error.value).endswith(
        "malformed-json (Unterminated string starting at: column 10); the file's last line ends without a newline "
        "and is no JSON: the file may be cut short"
    ), str(error.value)
    # a last line of more than a MiB, whole JSON without its newline, is no sign of a cut (a second review)
    body = b'{"text": "a"}\n{"text": 5}\n' + json.dumps({"text": "x" * (1 << 21)}).encode()
    (tmp_path / "long.jsonl.zst").write_bytes(_frame(body))
    with pytest.raises(FreqlabError) as error:
        scan(str(tmp_path / "long.jsonl.zst"), progress=False)
    assert str(error.value).endswith(
        "long.jsonl.zst:2: non-string-text (the text field holds a number, 5); --on-error skip counts such records as "
        "skipped"
    )
