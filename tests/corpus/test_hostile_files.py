"""Files that used to hang, crash or lose data (issue 14): each is now read exactly, or refused in one line.

Real files, real symlinks, real FIFOs; nothing is mocked.
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from corpus_helpers import write_jsonl

from freqlab.corpus import open_corpus
from freqlab.corpus.base import UnreadableFile
from freqlab.corpus.ranges import MAX_LINE_VARIABLE, owned_lines, split_bytes
from freqlab.errors import FreqlabError

GOOD = {"text": "some text", "meta": {"redpajama_set_name": "RedPajamaBook"}}


def test_a_folder_with_symlinks_back_to_itself_is_walked_once(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(data / "a.jsonl", [GOOD])
    os.symlink(data, data / "loop1")  # two links back up: ~2^40 paths if each were followed
    os.symlink(tmp_path, data / "loop2")
    corpus = open_corpus(str(data))
    assert [doc.text for doc in corpus.documents()] == ["some text"]
    assert corpus.description["files"] == 1


def test_a_fifo_in_a_folder_is_passed_over_and_counted_and_refused_when_named(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [GOOD])
    os.mkfifo(tmp_path / "pipe.jsonl")  # opening it for reading would block forever
    corpus = open_corpus(str(tmp_path))
    assert [doc.text for doc in corpus.documents()] == ["some text"]
    assert corpus.description["not_regular_files"] == 1
    with pytest.raises(FreqlabError, match=r"pipe\.jsonl: not a regular file"):
        open_corpus(str(tmp_path / "pipe.jsonl"))


def test_a_symlink_to_an_endless_device_is_not_read(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [GOOD])
    os.symlink("/dev/zero", tmp_path / "zero.jsonl")  # one endless line: memory would grow ~1 GB/s
    corpus = open_corpus(str(tmp_path))
    assert [doc.text for doc in corpus.documents()] == ["some text"]
    assert corpus.description["not_regular_files"] == 1


@pytest.mark.parametrize("link", [os.symlink, os.link])
def test_a_duplicate_reached_through_a_symlink_or_a_hard_link_is_read_once_and_reported(tmp_path, link):
    """A review counted a hard-linked file twice (``cp -al`` and ``rsync --link-dest`` snapshots make them)."""
    write_jsonl(tmp_path / "a.jsonl", [GOOD])
    link(tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    corpus = open_corpus(str(tmp_path))
    assert len(list(corpus.documents())) == 1
    assert corpus.description["duplicate_files"] == 1
    assert corpus.description["duplicate_examples"] == [str(tmp_path / "b.jsonl")]


def test_a_line_longer_than_the_bound_is_an_unreadable_file_naming_it(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "long.jsonl", [GOOD, {"text": "x" * 5000}, GOOD])
    monkeypatch.setenv(MAX_LINE_VARIABLE, "1000")
    with pytest.raises(UnreadableFile, match=r"long\.jsonl: a line longer than 1,000 bytes .*rest of the file is"):
        list(open_corpus(str(path)).documents())
    monkeypatch.setenv(MAX_LINE_VARIABLE, "lots")
    with pytest.raises(FreqlabError, match="FREQLAB_MAX_LINE_BYTES='lots': expected a positive number"):
        list(open_corpus(str(path)).documents())


def test_a_file_name_that_is_not_utf8_gets_a_printable_id(tmp_path):
    name = os.fsdecode(b"caf\xe9.jsonl")  # a Latin-1 file name: undecodable as UTF-8
    write_jsonl(tmp_path / name, [GOOD])
    write_jsonl(tmp_path / "b.jsonl", [GOOD])
    corpus = open_corpus(str(tmp_path))
    assert sorted(shard.id for shard in corpus.shards) == ["b.jsonl", "caf\\xe9.jsonl"]
    assert len(list(corpus.documents())) == 2


def test_parquet_and_arrow_files_whose_names_are_not_utf8_are_read(tmp_path):
    # pyarrow encodes a name strictly as UTF-8: such a Parquet or Arrow file ended the scan in a traceback
    table = pa.table({"text": ["one two", "three", "four five six"]})
    parquet, arrow = tmp_path / os.fsdecode(b"caf\xe9.parquet"), tmp_path / os.fsdecode(b"caf\xe9.arrow")
    pq.write_table(table, pa.OSFile(os.fsencode(parquet), "wb"))
    with pa.ipc.new_stream(pa.OSFile(os.fsencode(arrow), "wb"), table.schema) as writer:
        writer.write_table(table)
    for path in (parquet, arrow):
        assert [doc.text for doc in open_corpus(str(path)).documents()] == ["one two", "three", "four five six"]


def test_trailing_garbage_after_a_zstd_frame_keeps_every_line_before_it(tmp_path):
    lines = b"".join(json.dumps({"text": f"document {k}"}).encode() + b"\n" for k in range(2000))
    frame = zstandard.ZstdCompressor().compress(lines)
    path = tmp_path / "tail.jsonl.zst"
    path.write_bytes(frame + b"this is not zstd" * 10)
    corpus = open_corpus(str(path))
    docs = []
    with pytest.raises(UnreadableFile, match=r"tail\.jsonl\.zst: cannot read \(ZstdError"):
        docs.extend(doc.text for doc in corpus.documents())
    assert docs == [f"document {k}" for k in range(2000)]  # all of them, as `zstd -dc` recovers them


@pytest.mark.parametrize("suffix", ["zst", "gz"])
def test_trailing_garbage_after_compressed_data_keeps_every_line_of_a_shard_read_in_blocks(tmp_path, suffix):
    """A scan reads a shard a MiB at a time: the block that meets the garbage is returned before the error
    (``read(n)`` dropped it: the last MiB of documents was neither counted nor skipped)."""
    texts = [f"document {k} {random.Random(k).getrandbits(256):x}" for k in range(30_000)]  # 2.5 MB
    lines = b"".join(json.dumps({"text": text}).encode() + b"\n" for text in texts)
    packed = zstandard.ZstdCompressor().compress(lines) if suffix == "zst" else gzip.compress(lines)
    path = tmp_path / f"tail.jsonl.{suffix}"
    path.write_bytes(packed + b"this is not compressed" * 10)
    (shard,) = open_corpus(str(path)).shards
    read = []
    with pytest.raises(UnreadableFile, match=rf"tail\.jsonl\.{suffix}: cannot read"):
        for run in shard.read_runs():  # a scan's read: runs of plain texts, read a MiB at a time
            read.extend(run if isinstance(run, list) else [run.text])
    assert read == texts


def test_zstd_with_a_long_window_is_read_and_gzip_named_zst_is_said(tmp_path):
    """A review: a file from `zstd --long=31` (a window past the decoder's default 128 MiB) was "truncated or corrupt"
    and dropped whole under --on-error skip; gzip data named .zst was "truncated or corrupt" too."""
    import zstandard

    lines = b"".join(b'{"text": "doc %d"}\n' % i for i in range(100))
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=30, enable_ldm=True)
    compressor = zstandard.ZstdCompressor(compression_params=params)
    with open(tmp_path / "long.jsonl.zst", "wb") as handle, compressor.stream_writer(handle) as writer:
        writer.write(lines)  # streamed: the frame states its 1 GiB window
    assert zstandard.get_frame_parameters((tmp_path / "long.jsonl.zst").read_bytes()).window_size == 1 << 30
    (shard,) = open_corpus(str(tmp_path / "long.jsonl.zst")).shards
    assert [d.text for d in shard.read()] == [f"doc {i}" for i in range(100)]
    named = tmp_path / "g.jsonl.zst"
    named.write_bytes(gzip.compress(lines))
    (shard,) = open_corpus(str(named)).shards
    with pytest.raises(UnreadableFile, match=r"g\.jsonl\.zst: cannot read .*the name says zstd, the content is gzip"):
        list(shard.read())


def test_gzip_data_followed_by_garbage_is_not_called_a_file_that_is_no_gzip(tmp_path):
    """A review met "the name says gzip, the content is not: rename the file" for a gzip member followed by garbage;
    a file with no gzip data at all keeps that message."""
    tail = tmp_path / "tail.jsonl.gz"
    tail.write_bytes(gzip.compress(b'{"text": "a b"}\n') + b"garbage!!")
    plain = tmp_path / "plain.jsonl.gz"
    plain.write_bytes(b'{"text": "a b"}\n')
    for path, words in ((tail, "gzip data followed by bytes that are no gzip member"), (plain, "the name says gzip")):
        (shard,) = open_corpus(str(path)).shards
        with pytest.raises(UnreadableFile) as raised:
            list(shard.read())
        assert str(raised.value).startswith(f"{path}: cannot read (BadGzipFile: Not a gzipped file") and words in str(
            raised.value
        )


@pytest.mark.parametrize("where", ["jsonl", "parquet"])
def test_a_source_label_with_a_lone_surrogate_is_a_bad_source_label(tmp_path, where):
    if where == "jsonl":
        path = tmp_path / "a.jsonl"
        path.write_bytes(b'{"text": "t", "meta": {"redpajama_set_name": "x\\ud800y"}}\n' + json.dumps(GOOD).encode())
        first = f"{path}:1"
    else:  # Parquet with meta as a JSON string, as some SlimPajama copies have it
        path = tmp_path / "a.parquet"
        meta = ['{"redpajama_set_name": "x\\ud800y"}', json.dumps(GOOD["meta"])]
        pq.write_table(pa.table({"text": ["t", "some text"], "meta": meta}), path)
        first = f"{path}:row 1"
    docs = list(open_corpus("slimpajama", data_files=str(path)).documents())
    assert [(d.where, d.error) for d in docs] == [(first, "bad-source-label"), (docs[1].where, None)]


def test_a_lone_surrogate_text_reached_through_a_json_string_column_is_invalid_unicode(tmp_path):
    path = tmp_path / "a.parquet"
    meta = ['{"body": "lone \\ud800 here"}', '{"body": "pair \\ud83d\\ude00 is fine"}']
    pq.write_table(pa.table({"meta": meta}), path)
    docs = list(open_corpus(str(path), text_field="meta.body").documents())
    assert [(d.text, d.error) for d in docs] == [(None, "invalid-unicode"), ("pair \U0001f600 is fine", None)]


@pytest.mark.parametrize("where", ["jsonl", "parquet"])
def test_a_json_string_nested_deeper_than_python_recurses_has_no_field(tmp_path, where):
    """A review met a RecursionError traceback (``--on-error skip`` too): the string is no object holding the field."""
    deep = "[" * 100_000 + "]" * 100_000
    if where == "jsonl":
        path = tmp_path / "a.jsonl"
        path.write_text(json.dumps({"text": "a b", "meta": deep}) + "\n" + json.dumps({"text": "c", "meta": "{}"}))
    else:
        path = tmp_path / "a.parquet"
        pq.write_table(pa.table({"text": ["a b", "c"], "meta": [deep, "{}"]}), path)
    docs = list(open_corpus(str(path), text_field="meta.set").documents())
    assert [d.error for d in docs] == ["missing-text-field", "missing-text-field"]
    docs = list(open_corpus(str(path), source_field="meta.set").documents())
    assert [(d.text, d.source, d.error) for d in docs] == [("a b", "(none)", None), ("c", "(none)", None)]


@pytest.mark.parametrize("suffix", ["parquet", "arrow", "jsonl"])
def test_a_column_whose_name_holds_a_dot_is_read_as_that_field(tmp_path, suffix):
    """A literal dotted key wins, in JSON lines as in columns: a review's Parquet column 'a.b' was looked for as
    column 'a' ("no text column 'a' ...; give --text-field", with --text-field given)."""
    table = pa.table({"a.b": ["x y", "z"], "meta.set": ["s1", "s2"]})
    path = tmp_path / f"d.{suffix}"
    if suffix == "parquet":
        pq.write_table(table, path)
    elif suffix == "arrow":
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in table.to_pylist()))
    docs = list(open_corpus(str(path), text_field="a.b", source_field="meta.set").documents())
    assert [(d.text, d.source) for d in docs] == [("x y", "s1"), ("z", "s2")]


def test_byte_ranges_partition_the_lines_whatever_their_lengths(tmp_path):
    # ranges cut anywhere, inside lines, on newlines, inside a line longer than a range: every line once
    body = b"".join(b"x" * n + b"\n" for n in (0, 5, 1, 40, 3, 0, 0, 17, 2, 60, 1)) + b"last line without newline"
    path = tmp_path / "f.jsonl"
    path.write_bytes(body)
    starts = [0] + [k + 1 for k, byte in enumerate(body) if byte == ord("\n")]
    for part in range(1, 40):
        seen = []
        for start, end in split_bytes(len(body), part):
            with open(path, "rb") as stream:
                stream.seek(start)
                seen += [position for position, _ in owned_lines(stream, start, end)]
        assert seen == starts, part


@pytest.mark.parametrize("name", ["f.jsonl", "f.jsonl.zst", "f.jsonl.gz"])
def test_a_file_read_in_byte_ranges_gives_the_same_records_and_line_numbers(tmp_path, name):
    from corpus_helpers import write_bytes

    from freqlab.corpus.file_discovery import stat_file
    from freqlab.corpus.jsonl import JsonlShard

    lines = [json.dumps({"text": f"doc {k} " + "y" * (k * 7 % 50)}).encode() for k in range(300)]
    for bad in (0, 41, 42, 199, 299):
        lines[bad] = b'{"text": broken'
    lines[100] = b""  # a blank line: not a record, but it has a number
    body = b"\n".join(lines) + b"\n"
    path = write_bytes(tmp_path / name, body)
    whole = list(open_corpus(str(path)).documents())
    assert [d.where for d in whole if d.error] == [f"{path}:{k + 1}" for k in (0, 41, 42, 199, 299)]
    file = stat_file(str(path), name)
    fields = open_corpus(str(path)).shards[0].fields
    for part in (97, 1000, 4096):
        docs = []
        for start, end in split_bytes(len(body), part):
            docs += list(JsonlShard(name, file, fields, start, end).read())
        assert docs == whole, part  # text, source, where (line numbers worked out) and error, record by record


def _strings(texts: list[bytes]) -> pa.StringArray:
    """A string column holding bytes as given: pyarrow does not check what a writer put in a buffer."""
    offsets = pa.array([0, *itertools.accumulate(len(t) for t in texts)], pa.int32())
    return pa.StringArray.from_buffers(len(texts), offsets.buffers()[1], pa.py_buffer(b"".join(texts)))


def _parquet_with_invalid_utf8(path, texts: list[bytes]) -> None:
    pq.write_table(pa.table({"text": _strings(texts)}), path)


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_a_string_column_holding_invalid_utf8_gives_invalid_utf8_records_and_keeps_the_rest(tmp_path, suffix):
    path = tmp_path / f"bad{suffix}"
    _parquet_with_invalid_utf8(tmp_path / "bad.parquet", [b"good text", b"caf\xff\xfe", b"more"])
    if suffix == ".arrow":
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, pq.read_schema(tmp_path / "bad.parquet")) as w:
            w.write_table(pq.read_table(tmp_path / "bad.parquet"))
        (tmp_path / "bad.parquet").unlink()
    docs = list(open_corpus(str(path)).documents())
    assert [(d.text, d.error, d.where) for d in docs] == [
        ("good text", None, f"{path}:row 1"),
        (None, "invalid-utf8", f"{path}:row 2"),
        ("more", None, f"{path}:row 3"),
    ]


def test_a_dictionary_encoded_text_column_holding_invalid_utf8_keeps_its_good_rows(tmp_path):
    """A review: pyarrow refused the whole file when decoding such a column to plain strings ("cannot read
    (ArrowInvalid: Invalid UTF8 payload)"; --on-error skip lost its good rows as one unreadable file)."""
    path = tmp_path / "dict.parquet"
    values = _strings([b"good one", b"bad \xff", b"good two three", b"\xed\xa0\x80 sur"])
    pq.write_table(pa.table({"text": pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 3, 1]), values)}), path)
    docs = list(open_corpus(str(path)).documents())
    assert [(d.text, d.error, d.where) for d in docs] == [
        ("good one", None, f"{path}:row 1"),
        (None, "invalid-utf8", f"{path}:row 2"),
        ("good two three", None, f"{path}:row 3"),
        (None, "invalid-utf8", f"{path}:row 4"),
        (None, "invalid-utf8", f"{path}:row 5"),
    ]


def test_a_parquet_file_with_its_text_column_twice_is_one_unreadable_file(tmp_path):
    table = pa.Table.from_arrays([pa.array(["a"]), pa.array(["b"])], names=["text", "text"])
    pq.write_table(table, tmp_path / "dup.parquet")
    with pytest.raises(UnreadableFile, match=r"dup\.parquet: column 'text' appears 2 times"):
        list(open_corpus(str(tmp_path / "dup.parquet")).documents())


def _arrow_stream(table: pa.Table, rows_per_batch: int) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=rows_per_batch):
            writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _read_until_error(path) -> tuple[list, Exception | None]:
    """The documents (or, of a token column, the lengths) read before an UnreadableFile, and it."""
    shard = open_corpus(str(path)).shards[0]
    read = []
    try:
        if hasattr(shard, "read_lengths"):
            for batch in shard.read_lengths():
                read.extend(batch.lengths)
        else:
            read.extend(shard.read())
    except UnreadableFile as exc:
        return read, exc
    return read, None


@pytest.mark.parametrize("column", ["text", "input_ids"])
def test_an_arrow_stream_cut_between_messages_or_followed_by_another_is_unreadable(tmp_path, column):
    """pyarrow reads a stream cut at a message boundary (a copy cut short, as datasets' save_to_disk shards get)
    as a shorter valid one and stops at the first end-of-stream marker of two streams written one after the
    other: 4 of 6 documents, and 6 of 12, were read without a word."""
    values = [f"doc {i}" for i in range(6)] if column == "text" else [[1] * (i + 1) for i in range(6)]
    whole = _arrow_stream(pa.table({column: values}), 2)
    marker = b"\xff\xff\xff\xff\x00\x00\x00\x00"
    assert whole.endswith(marker)
    message_ends = []  # where each message ends: the schema, then three record batches
    reader = pa.ipc.MessageReader.open_stream(source := pa.BufferReader(whole))
    for _ in reader:
        message_ends.append(source.tell())
    cut, twice = tmp_path / "cut.arrow", tmp_path / "twice.arrow"
    cut.write_bytes(whole[: message_ends[2]])  # the schema and two batches
    twice.write_bytes(whole + whole)
    docs, error = _read_until_error(cut)
    assert len(docs) == 4 and error is not None
    assert "ends after 2 record batches without Arrow's end-of-stream marker" in str(error)
    docs, error = _read_until_error(twice)
    assert len(docs) == 6 and "bytes follow the end-of-stream marker" in str(error)
    (tmp_path / "whole.arrow").write_bytes(whole)
    docs, error = _read_until_error(tmp_path / "whole.arrow")
    assert len(docs) == 6 and error is None


def test_hidden_files_and_folders_are_passed_over_and_counted(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [GOOD])
    write_jsonl(tmp_path / ".hidden.jsonl", [GOOD])
    (tmp_path / ".git").mkdir()
    write_jsonl(tmp_path / ".git" / "b.jsonl", [GOOD])
    corpus = open_corpus(str(tmp_path))
    assert len(list(corpus.documents())) == 1
    assert corpus.description["hidden_entries"] == 2
    assert "hidden_entries" not in open_corpus(str(tmp_path / "a.jsonl")).description


def test_a_nested_text_keeps_its_rows_when_only_a_field_beside_it_is_not_utf8(tmp_path):
    meta = pa.StructArray.from_arrays([_strings([b"first", b"second doc"]), _strings([b"ok", b"\xff"])], ["body", "x"])
    pq.write_table(pa.table({"meta": meta}), tmp_path / "n.parquet")
    docs = list(open_corpus(str(tmp_path / "n.parquet"), text_field="meta.body").documents())
    assert [(d.text, d.error) for d in docs] == [("first", None), ("second doc", None)]
    meta = pa.StructArray.from_arrays([_strings([b"first", b"bad \xff"])], ["body"])
    pq.write_table(pa.table({"meta": meta}), tmp_path / "m.parquet")
    docs = list(open_corpus(str(tmp_path / "m.parquet"), text_field="meta.body").documents())
    assert [(d.text, d.error) for d in docs] == [("first", None), (None, "invalid-utf8")]


def test_a_first_row_that_is_not_utf8_is_shown_not_raised(tmp_path):
    from freqlab.corpus.arrow_files import first_row

    pq.write_table(pa.table({"text": _strings([b"\xfe"]), "n": [1]}), tmp_path / "f.parquet")
    assert first_row(str(tmp_path / "f.parquet")) == {"text": "<invalid UTF-8>", "n": 1}


def test_a_token_column_with_a_source_label_that_is_not_utf8_is_one_line_naming_the_row(tmp_path):
    pq.write_table(pa.table({"input_ids": [[1, 2], [3]], "lang": _strings([b"en", b"\xff"])}), tmp_path / "t.parquet")
    corpus = open_corpus(str(tmp_path / "t.parquet"), source_field="lang")
    with pytest.raises(FreqlabError, match=r"t\.parquet:row 2: source label 'lang' is not valid UTF-8"):
        list(corpus.shards[0].read_lengths())


def test_a_token_column_given_twice_is_one_line(tmp_path):
    table = pa.Table.from_arrays([pa.array([[1, 2]]), pa.array([[3]])], names=["input_ids", "input_ids"])
    pq.write_table(table, tmp_path / "d.parquet")
    with pytest.raises(FreqlabError, match=r"d\.parquet: column 'input_ids' appears 2 times"):
        list(open_corpus(str(tmp_path / "d.parquet")).shards[0].read_lengths())


def test_a_json_string_column_that_is_not_utf8_makes_its_row_invalid_not_unlabelled(tmp_path):
    meta = _strings([b'{"set": "A"}', b'{"set": "B\xff"}', b'{"set": "C"}'])  # SlimPajama's Parquet layout
    pq.write_table(pa.table({"text": ["one", "two", "three"], "meta": meta}), tmp_path / "j.parquet")
    docs = list(open_corpus(str(tmp_path / "j.parquet"), source_field="meta.set").documents())
    assert [(d.text, d.source, d.error) for d in docs] == [
        ("one", "A", None),
        (None, None, "invalid-utf8"),
        ("three", "C", None),
    ]


def test_a_non_string_text_beside_a_field_that_is_not_utf8_keeps_its_own_reason(tmp_path):
    doc = pa.StructArray.from_arrays([pa.array([1, 2]), _strings([b"ok", b"\xff"])], ["text", "meta"])
    pq.write_table(pa.table({"doc": doc}), tmp_path / "s.parquet")
    docs = list(open_corpus(str(tmp_path / "s.parquet"), text_field="doc.text").documents())
    assert [d.error for d in docs] == ["non-string-text", "non-string-text"]


def test_a_folder_named_with_glob_characters_is_that_folder(tmp_path, monkeypatch):
    """'data[1]' was read as a pattern: data1/ beside it was scanned instead (or no file matched)."""
    write_jsonl(tmp_path / "data[1]" / "a.jsonl", [GOOD, GOOD])
    write_jsonl(tmp_path / "data1" / "b.jsonl", [GOOD])
    monkeypatch.chdir(tmp_path)
    for spec in ("data[1]", str(tmp_path / "data[1]")):
        assert len(list(open_corpus(spec).documents())) == 2
    assert len(list(open_corpus("data[0-9]").documents())) == 1  # a pattern still, when no such path exists
