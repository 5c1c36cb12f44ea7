"""Bad input: each bad record gets the right reason and line; a whole unusable source raises FreqlabError."""

from __future__ import annotations

import gzip
import json
import os

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from corpus_helpers import jsonl_bytes, write_bytes, write_jsonl

from freqlab.corpus import REASONS, ReadOptions, open_corpus
from freqlab.corpus.base import BLANK_LINE, UnreadableFile
from freqlab.errors import FreqlabError
from freqlab.scan import scan

GOOD = {"text": "def f():\n    return 1\n", "meta": {"redpajama_set_name": "RedPajamaGithub"}}

# (raw line, expected error reason or None for a good record); line numbers are positions in this list, 1-based.
LINES: list[tuple[bytes, str | None]] = [
    (json.dumps(GOOD).encode(), None),
    (b'{"text": "unterminated', "malformed-json"),
    (b"[1, 2, 3]", "not-a-json-object"),
    (b'{"meta": {"redpajama_set_name": "RedPajamaC4"}}', "missing-text-field"),
    (b'{"text": 42, "meta": {"redpajama_set_name": "RedPajamaC4"}}', "non-string-text"),
    (b'{"text": null, "meta": {"redpajama_set_name": "RedPajamaC4"}}', "null-text"),
    (b'{"text": "caf\xe9 latin-1", "meta": {"redpajama_set_name": "RedPajamaC4"}}', "invalid-utf8"),
    (b'{"text": "lone \\ud800 surrogate", "meta": {"redpajama_set_name": "RedPajamaC4"}}', "invalid-unicode"),
    (b'{"text": "pair \\ud83d\\ude00 is fine", "meta": {"redpajama_set_name": "RedPajamaC4"}}', None),
    (b'{"text": "", "meta": {"redpajama_set_name": "RedPajamaBook"}}', None),  # an empty document is good
    (b'{"text": "x", "meta": {"redpajama_set_name": ["a", "list"]}}', "non-string-source"),
    (b"   ", "blank"),  # blank lines are not records
    (json.dumps(GOOD).encode(), None),
]


def _bad_file(tmp_path, name):
    return write_bytes(tmp_path / name, b"\n".join(line for line, _ in LINES) + b"\n")


@pytest.mark.parametrize("name", ["bad.jsonl", "bad.jsonl.gz", "bad.jsonl.zst"])
def test_each_bad_line_gets_its_reason_and_line_number(tmp_path, name):
    path = _bad_file(tmp_path, name)
    docs = list(open_corpus("slimpajama", data_files=str(path)).documents())
    expected = [(f"{path}:{n}", reason) for n, (_, reason) in enumerate(LINES, 1) if reason != "blank"]
    assert [(d.where, d.error) for d in docs] == expected
    assert all(d.text is None and d.source is None for d in docs if d.error)
    good = [(d.text, d.source) for d in docs if d.error is None]
    assert good == [
        (GOOD["text"], "RedPajamaGithub"),
        ("pair \U0001f600 is fine", "RedPajamaC4"),
        ("", "RedPajamaBook"),
        (GOOD["text"], "RedPajamaGithub"),
    ]
    assert {d.error for d in docs if d.error} <= set(REASONS)


def test_a_text_that_is_no_string_or_no_utf8_says_what_it_is(tmp_path):
    """A review: ``{"text": 12}``, a list and an object each said non-string-text and no more; a Latin-1 byte said
    invalid-utf8 without where; a UTF-16 file (``iconv -t utf-16``) said invalid-utf8 on its first line."""
    path = write_bytes(
        tmp_path / "kinds.jsonl",
        b'{"text": 12}\n{"text": ["a", "b"]}\n{"text": {"x": 1, "y": 2}}\n{"text": true}\n{"text": "caf\xe9"}\n'
        b'{"text": 123456789012345678901234567890}\n{"text": NaN}\n',
    )
    assert [(d.error, d.detail) for d in open_corpus(str(path)).documents()] == [
        ("non-string-text", "the text field holds a number, 12"),
        ("non-string-text", "the text field holds a list of 2"),
        ("non-string-text", "the text field holds an object with keys 'x', 'y'"),
        ("non-string-text", "the text field holds true"),
        ("invalid-utf8", "byte 0xE9 at byte 14 of the line: invalid continuation byte"),
        # a second review: orjson reads an int past 64 bits as a float, and refuses NaN (no detail then)
        ("non-string-text", "the text field holds a number, 123456789012345678901234567890"),
        ("non-string-text", "the text field holds a number, nan"),
    ]
    # a second review: keys were listed whole and raw (a key of 2 MB, one with a newline and an escape), and a
    # UTF-8 BOM taken off the first line shifted the byte's place
    hostile = write_bytes(tmp_path / "keys.jsonl", json.dumps({"text": {"k" * 100_000: 1, "a\nb\x1b[31m": 2}}).encode())
    detail = next(iter(open_corpus(str(hostile)).documents())).detail
    assert len(detail) < 200 and "\n" not in detail and "\x1b" not in detail and "\\n" in detail, detail
    bom = write_bytes(tmp_path / "bom.jsonl", b'\xef\xbb\xbf{"text": "caf\xe9"}\n')
    assert next(iter(open_corpus(str(bom)).documents())).detail.startswith("byte 0xE9 at byte 17 of the line")
    utf16 = write_bytes(tmp_path / "utf16.jsonl", '{"text": "a"}\n'.encode("utf-16"))
    first = next(iter(open_corpus(str(utf16)).documents()))
    assert (first.error, first.detail) == (
        "invalid-utf8",
        "the file starts with a UTF-16 byte-order mark: JSON lines are UTF-8; iconv -f UTF-16 -t UTF-8 converts it",
    )


def test_a_parquet_or_arrow_text_that_is_no_string_says_what_it_is_too(tmp_path):
    """A review: a list<string> text column, or --text-field naming an integer column, said only non-string-text in
    Parquet and Arrow, where JSON lines say what the field holds."""
    table = pa.table({"text": [["a", "b"], ["c"]], "n": [12, 3]})
    pq.write_table(table, tmp_path / "t.parquet")
    feather.write_feather(table, tmp_path / "t.arrow")
    for name in ("t.parquet", "t.arrow"):
        docs = list(open_corpus(str(tmp_path / name)).documents())
        assert [(d.error, d.detail) for d in docs] == [
            ("non-string-text", f"the text field holds a list of {n}") for n in (2, 1)
        ]
        numbers = list(open_corpus(str(tmp_path / name), text_field="n").documents())
        assert numbers[0].detail == "the text field holds a number, 12"


@pytest.mark.parametrize("suffix", ["parquet", "arrow"])
def test_a_file_of_counts_without_text_is_pointed_at_the_options_that_read_it(tmp_path, suffix):
    """A review: a Parquet of lengths alone was pointed at --text-field only; the columns that hold token ids or
    counts are named with the option that reads them (the schema's: the batches hold only the columns read)."""
    path = tmp_path / f"counts.{suffix}"
    table = pa.table({"ids": [[3, 5], [7]], "n": [2, 1]})
    if suffix == "arrow":  # every list type, and every integer column (the first may be an id: a review)
        large = pa.array([[3, 5], [7]], pa.large_list(pa.int64()))
        table = pa.table({"doc": [10, 11], "ids": large, "n": [2, 1]})
    pq.write_table(table, path) if suffix == "parquet" else feather.write_feather(table, path)
    with pytest.raises(UnreadableFile) as caught:
        list(open_corpus(str(path)).documents())
    columns, ints = ("ids, n", "n") if suffix == "parquet" else ("doc, ids, n", "doc or n")
    assert str(caught.value) == (
        f"{path}: no text column 'text' (columns: {columns}); give --text-field, or --tokens-field ids (lists of "
        f"token ids), or --length-field {ints} (if it holds token counts)"
    )


def test_a_dotted_text_field_missing_from_a_parquet_names_the_field_not_its_first_name(tmp_path):
    """A review: --text-field a.b.c on a column 'a.b' said "no text column 'a' ...; give --text-field", blaming a
    column never named and asking for the option given; a dotted column name is matched by the whole field only."""
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"a.b": pa.array([{"c": "x y"}])}), path)
    with pytest.raises(UnreadableFile) as caught:
        list(open_corpus(str(path), text_field="a.b.c").documents())
    assert str(caught.value) == (
        f"{path}: no column 'a.b.c' and none 'a' to read the text field 'a.b.c' from (columns: a.b); a column whose "
        "name has a dot is matched only by the whole field"
    )


def test_missing_text_column_in_parquet_and_null_text(tmp_path):
    """A Parquet or Arrow file without the text column is one error listing its columns (not a bad record per
    row); with --on-error skip it is one unreadable file."""
    no_text = tmp_path / "no_text.parquet"
    pq.write_table(pa.table({"content": ["a", "b"], "lang": ["en", "de"]}), no_text)
    with pytest.raises(
        UnreadableFile,
        match=r"no_text.parquet: no text column 'text' \(columns: content, lang\); "
        r"give --text-field",
    ):
        list(open_corpus(str(no_text)).documents())
    assert [d.text for d in open_corpus(str(no_text), text_field="content").documents()] == ["a", "b"]
    arrow = tmp_path / "no_text.arrow"
    with pa.ipc.new_stream(str(arrow), pa.schema([("content", pa.string())])) as writer:
        writer.write_table(pa.table({"content": ["a"]}))
    with pytest.raises(UnreadableFile, match=r"no_text.arrow: no text column 'text' \(columns: content\)"):
        list(open_corpus(str(arrow)).documents())
    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"text": ["a", None, ""]}), nulls)
    docs = list(open_corpus(str(nulls)).documents())
    assert [(d.text, d.error) for d in docs] == [("a", None), (None, "null-text"), ("", None)]


def test_a_json_document_is_not_json_lines(tmp_path):
    """A pretty-printed JSON file (a tokenizer.json given as --dataset, an array of records) says what it is,
    instead of ":1: malformed-json"."""
    from tokenizers import Tokenizer, models

    tekken_json = tmp_path / "tokenizer.json"
    Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]")).save(str(tekken_json))  # pretty-printed
    with pytest.raises(
        FreqlabError,
        match=r"tokenizer.json: one JSON document spread over lines, not JSON lines "
        r"\(one object per line\) \(it looks like a tokenizer: give it as --tokenizer\)",
    ):
        open_corpus(str(tekken_json))
    array = tmp_path / "records.json"
    array.write_text(json.dumps([{"text": "a"}, {"text": "b"}], indent=2), encoding="utf-8")
    with pytest.raises(FreqlabError, match=r"records.json: one JSON array spread over lines, not JSON lines") as err:
        open_corpus(str(array))
    assert f"to leave it out, name the data files with a pattern, e.g. {str(tmp_path / '*.jsonl*')!r}" in str(err.value)
    bad_line = tmp_path / "bad.json"  # JSON lines with one bad line: still read, the line reported as usual
    bad_line.write_text('{"text": "a"}\n{broken\n', encoding="utf-8")
    assert [d.error for d in open_corpus(str(bad_line)).documents()] == [None, "malformed-json"]


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_compressed_data_under_a_plain_name_is_named_not_read_as_bad_lines(tmp_path, kind):
    """gzip -c corpus.jsonl > x.jsonl: its bytes were lines of invalid UTF-8 (300 documents became 588 skipped
    records with --on-error skip); the file is one error saying what it holds and how to name it (one
    unreadable-file skip with skip), however large (one part: not cut into parts that would each read garbage)."""
    import gzip

    import zstandard

    lines = b"".join(json.dumps({"text": f"document {i}"}).encode() + b"\n" for i in range(300))
    data = gzip.compress(lines) if kind == "gzip" else zstandard.ZstdCompressor().compress(lines)
    (tmp_path / "x.jsonl").write_bytes(data)
    suffix = ".gz" if kind == "gzip" else ".zst"
    from freqlab.corpus.fields import Fields
    from freqlab.corpus.file_discovery import stat_file
    from freqlab.corpus.jsonl import JSONL

    (shard,) = JSONL.shards([stat_file(str(tmp_path / "x.jsonl"), "x.jsonl")], Fields(), 64)  # 64-byte parts asked
    with pytest.raises(UnreadableFile, match=rf"x\.jsonl: holds {kind} data, but its name has no \{suffix} suffix"):
        list(shard.read())
    (tmp_path / "x.jsonl").rename(tmp_path / f"x.jsonl{suffix}")
    assert sum(1 for _ in open_corpus(str(tmp_path / f"x.jsonl{suffix}")).documents()) == 300


def _arrow_stream(table, path):
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


@pytest.mark.parametrize(("kind", "suffix", "write"), [
    ("Parquet", ".parquet", pq.write_table),
    ("Arrow", ".arrow", lambda table, path: pa.feather.write_feather(table, path)),
    ("Arrow", ".arrow", _arrow_stream),  # the datasets cache's files (an adversary)
])  # fmt: skip
def test_a_parquet_or_arrow_file_under_a_plain_name_is_named_not_read_as_bad_lines(tmp_path, kind, suffix, write):
    """A review: a Parquet file named .jsonl was "invalid-utf8 (byte 0x86 ...)" at line 1, and with --on-error skip
    251 garbage records of one binary file; a text whose first line starts "PAR1" is still text."""
    import pyarrow.feather  # noqa: F401  (pa.feather)

    table = pa.table({"text": [f"document {i}" for i in range(200)]})
    path = tmp_path / "x.jsonl"
    write(table, path)
    with pytest.raises(FreqlabError, match=rf"x\.jsonl: holds {kind} data, but its name has no \{suffix} suffix"):
        scan(str(path), progress=False, workers=1)
    skipped = scan(str(path), progress=False, workers=1, on_error="skip").summary["documents"]
    assert skipped["skipped"] == {"unreadable-file": 1} and skipped["read"] == 1
    path.rename(tmp_path / f"x{suffix}")
    assert scan(str(tmp_path / f"x{suffix}"), progress=False, workers=1).histogram.documents == 200
    text = tmp_path / "t.jsonl"
    text.write_text('PAR1 is a text\n{"text": "a b"}\n', encoding="utf-8")
    assert scan(str(text), progress=False, workers=1, on_error="skip").summary["documents"]["skipped"] == {
        "malformed-json": 1
    }


def test_one_json_line_longer_than_the_first_read_is_one_document(tmp_path):
    """A JSON-lines file of one document longer than the 1 MiB first read is JSON lines, not "one JSON document
    spread over lines" (its cut first line once sent the whole file, a valid object, down that path)."""
    text = "ab " * (1 << 20)  # 3 MiB on one line
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"text": text}) + "\n", encoding="utf-8")
    assert [d.text for d in open_corpus(str(one)).documents()] == [text]


def test_parquet_token_columns_name_their_rows_and_columns(tmp_path):
    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"input_ids": [[1, 2], [3], None]}), nulls)
    (batch,) = [b for s in open_corpus(str(nulls)).shards for b in s.read_lengths()]
    assert batch.lengths.tolist() == [2, 1, -1] and batch.reasons == ("null-token-list",)
    assert batch.row(2).endswith("nulls.parquet:row 3")  # not "row 1+2"
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"ids": [[1, 2]], "n": [2]}), other)
    with pytest.raises(FreqlabError, match=r"other.parquet: no column 'input_ids' \(columns: ids, n\)"):
        open_corpus(str(other), read=ReadOptions(tokens_field="input_ids"))


def test_text_file_that_is_not_utf8(tmp_path):
    """As a JSON line: which byte, where, and a UTF-16 file named (a review: "invalid-utf8" alone)."""
    (tmp_path / "a.txt").write_bytes(b"fine")
    (tmp_path / "b.txt").write_bytes(b"ok\ncaf\xe9")
    (tmp_path / "c.txt").write_bytes("hi\n".encode("utf-16"))  # a byte-order mark first, as iconv -t UTF-16 writes
    docs = list(open_corpus(str(tmp_path)).documents())
    assert [(d.text, d.where, d.error, d.detail) for d in docs] == [
        ("fine", str(tmp_path / "a.txt"), None, None),
        (None, str(tmp_path / "b.txt"), "invalid-utf8", "byte 0xE9 at byte 7 of the file: unexpected end of data"),
        (
            None,
            str(tmp_path / "c.txt"),
            "invalid-utf8",
            "the file starts with a UTF-16 byte-order mark: text files are UTF-8; iconv -f UTF-16 -t UTF-8 converts it",
        ),
    ]


def test_empty_files_give_zero_documents_and_are_counted(tmp_path):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    write_bytes(tmp_path / "empty.jsonl.zst", b"")  # a zstd frame header, no content
    write_bytes(tmp_path / "empty.jsonl.gz", b"")  # a gzip header and trailer
    (tmp_path / "blank.jsonl").write_bytes(b"\n  \n")  # blank lines are not records
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), tmp_path / "empty.parquet")
    write_jsonl(tmp_path / "one.jsonl", [GOOD])
    corpus = open_corpus(str(tmp_path))
    assert corpus.description["files"] == 6
    assert corpus.description["empty_files"] == 5
    assert [len(list(shard.read())) for shard in corpus.shards] == [0, 0, 0, 0, 0, 1]
    assert [d.text for d in corpus.documents()] == [GOOD["text"]]


@pytest.mark.parametrize("name", ["zero.jsonl.zst", "zero.jsonl.gz"])
def test_a_zero_byte_compressed_file_is_an_empty_file_in_a_scan(tmp_path, name):
    """Not even a header: no content to estimate (this divided by zero while a scan measured its progress)."""
    from freqlab.scan import scan

    (tmp_path / name).write_bytes(b"")
    write_jsonl(tmp_path / "one.jsonl", [GOOD])
    result = scan(str(tmp_path), L=[64], regimes=["natural"], progress=True, workers=1)
    assert result.summary["corpus"]["description"]["empty_files"] == 1
    assert (result.summary["documents"]["read"], result.summary["documents"]["skipped"]) == (1, {})


def test_missing_path(tmp_path):
    with pytest.raises(FreqlabError, match=r"nowhere\.jsonl: no such file or directory"):
        open_corpus(str(tmp_path / "nowhere.jsonl"))
    with pytest.raises(FreqlabError, match="no such file or directory"):
        open_corpus("slimpajama", data_files=str(tmp_path / "missing_dir"))


def test_a_missing_relative_path_that_cannot_be_a_hub_id_is_missing_not_offline(tmp_path, monkeypatch):
    """A Hub id is owner/name: nodir/x/y, or a dangling symlink without a suffix, was sent to the Hub (and, offline,
    told that Hub access is off)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "dangling").symlink_to(tmp_path / "nothere")
    for dataset in ("nodir/x/y", "sub/dangling"):
        with pytest.raises(FreqlabError, match=rf"^{dataset}: no such file or directory$"):
            open_corpus(dataset)
    with pytest.raises(FreqlabError, match=r"^owner/name: Hugging Face Hub access is off"):  # that one may be an id
        open_corpus("owner/name")


def test_a_missing_path_that_was_near_an_existing_one_says_so(tmp_path, monkeypatch):
    """A review: a file named with a trailing slash, one copied with a space after it (sent to the Hub as an id),
    and a path under a local folder that lacks it (read as a Hub id) gave messages that hid the cause."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "t19").mkdir()
    write_jsonl(tmp_path / "t19" / "a.jsonl", [GOOD])
    cases = {
        "t19/a.jsonl/": r"t19/a\.jsonl/: no such file or directory \(t19/a\.jsonl is a file, not a folder: drop the",
        "t19/a.jsonl/.": r"t19/a\.jsonl/\.: no such file or directory \(t19/a\.jsonl is a file, .* trailing '/\.'\)",
        " t19 ": r"^ t19 : no such file or directory \(the name has white space around it; 't19' exists\)$",
        "t19/a.jsonl ": r"t19/a\.jsonl : no such file or directory \(the name has white space around it; 't19/a",
        "t19/missing": r"^t19/missing: Hugging Face Hub access is off .*; nor is it a local path \(t19/ is a local",
    }
    for dataset, message in cases.items():
        with pytest.raises(FreqlabError, match=message):
            open_corpus(dataset)
    # with --eos-id (token data, which no Hub dataset takes): the path is missing, or names a Megatron prefix (a
    # review: both were told to drop --eos-id)
    (tmp_path / "t19" / "m.idx").write_bytes(b"")
    eos = ReadOptions(eos_id=2)
    with pytest.raises(FreqlabError, match=r"^t19/x\.np: no such file or directory \(t19/ is a local folder without"):
        open_corpus("t19/x.np", read=eos)
    with pytest.raises(
        FreqlabError, match=r"^t19/m: no such file or directory \(a Megatron prefix: give its index, t19/m\.idx\)$"
    ):
        open_corpus("t19/m", read=eos)
    with pytest.raises(
        FreqlabError, match=r"^ t19/m: no such file or directory \(a Megatron prefix: give its index, t19/m\.idx"
    ):
        open_corpus(" t19/m", read=eos)  # white space around it too (an adversary: "drop --eos-id" again)
    with pytest.raises(
        FreqlabError, match=r"^t19/m: Hugging Face Hub access is off .*; nor is it a local path \(a Megatron"
    ):
        open_corpus("t19/m")


def test_glob_matching_nothing(tmp_path):
    with pytest.raises(FreqlabError, match=r"chunk\*/\*\.jsonl\.zst: no files match this pattern"):
        open_corpus("slimpajama", data_files=str(tmp_path / "chunk*" / "*.jsonl.zst"))


def test_folder_without_data_files_names_what_it_passed_over(tmp_path):
    (tmp_path / "README.md").write_text("x")
    with pytest.raises(FreqlabError, match=r"no data files found \(supported: .*\); passed over 1: README\.md$"):
        open_corpus(str(tmp_path))


def test_explicit_file_of_unknown_format(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("text\nhello\n")
    with pytest.raises(FreqlabError, match=r"data\.csv: unknown file format; supported: JSON lines"):
        open_corpus(str(path))


def test_unreadable_file(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "locked.jsonl", [GOOD])
    os.chmod(path, 0)
    if os.geteuid() == 0:  # root reads anything: make the open fail as it would for a normal user
        real_open = os.open

        def deny(file, flags, *args, **kwargs):
            if os.fspath(file) == str(path):
                raise PermissionError(13, "Permission denied")
            return real_open(file, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", deny)
    with pytest.raises(FreqlabError, match=r"locked\.jsonl: cannot open for reading \(Permission denied\)"):
        open_corpus(str(path))


def test_unknown_preset_suggests_the_close_one():
    with pytest.raises(FreqlabError, match=r"unknown corpus preset 'slimpajam': did you mean 'slimpajama'\?"):
        open_corpus("slimpajam")
    with pytest.raises(FreqlabError, match="presets are slimpajama, slimpajama-6b"):
        open_corpus("c4-like-nonsense")


def test_a_dash_is_not_standard_input_and_says_to_write_a_file_unless_a_file_is_named_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for dataset, data_files in [("-", None), (None, "-"), ("slimpajama", ["-"])]:
        with pytest.raises(FreqlabError, match=r"'-' \(standard input\) is not read: write the stream to a file"):
            open_corpus(dataset, data_files=data_files)
    write_jsonl(tmp_path / "-", [{"text": "a file named -"}])
    assert [doc.text for doc in open_corpus("-", format="jsonl").documents()] == ["a file named -"]


def test_an_empty_dataset_or_data_file_is_refused_not_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "here.jsonl", [{"text": "in the working folder"}])
    for dataset, data_files in [("", None), (None, ""), (None, ["here.jsonl", ""])]:
        with pytest.raises(FreqlabError, match="an empty path names no file or folder"):
            open_corpus(dataset, data_files=data_files)


def test_preset_without_hub_copy_needs_local_files():
    with pytest.raises(FreqlabError, match=r"pile: this preset has no Hub dataset.*--data-files"):
        open_corpus("pile")


@pytest.mark.parametrize("name", ["cut.jsonl.zst", "cut.jsonl.gz"])
def test_truncated_compressed_file_raises_while_reading(tmp_path, name):
    # a cut-off download must not pass for a short file: the stream ends inside a frame/member
    path = write_bytes(tmp_path / name, jsonl_bytes([GOOD] * 2000))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    corpus = open_corpus(str(path))
    with pytest.raises(FreqlabError, match=rf"{name}: cannot read .*truncated or corrupt"):
        list(corpus.documents())


def test_not_compressed_despite_the_suffix(tmp_path):
    path = tmp_path / "plain.jsonl.gz"
    path.write_bytes(jsonl_bytes([GOOD]))
    with pytest.raises(FreqlabError, match=r"plain\.jsonl\.gz: cannot read \(BadGzipFile"):
        list(open_corpus(str(path)).documents())
    assert gzip.decompress(gzip.compress(b"x")) == b"x"


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("broken.parquet", b"PAR1 this is not parquet PAR1", r"broken\.parquet: cannot read \(ArrowInvalid"),
        ("broken.arrow", b"not arrow at all", r"broken\.arrow: cannot read \(ArrowInvalid: .*truncated or corrupt"),
    ],
)
def test_corrupt_parquet_or_arrow_opens_then_raises_unreadable_file_while_reading(tmp_path, name, data, message):
    # open_corpus does not raise (the row count is then unknown), so a scan can skip the file with --on-error skip
    path = tmp_path / name
    path.write_bytes(data)
    corpus = open_corpus(str(path))
    assert corpus.total_documents is None and corpus.description["files"] == 1
    with pytest.raises(UnreadableFile, match=message) as caught:
        list(corpus.documents())
    assert caught.value.path == str(path) and isinstance(caught.value, FreqlabError)


@pytest.mark.parametrize("name", ["zero.parquet", "zero.arrow"])
def test_a_zero_byte_parquet_or_arrow_file_is_an_empty_file_not_an_error(tmp_path, name):
    # issue 14, case 4: empty files are documented as fine; a zero-byte columnar file is one of them
    (tmp_path / name).write_bytes(b"")
    corpus = open_corpus(str(tmp_path / name))
    assert (corpus.total_documents, corpus.description["empty_files"], list(corpus.documents())) == (0, 1, [])


def test_blank_lines_are_not_records_but_can_be_marked(tmp_path):
    path = write_bytes(tmp_path / "blank.jsonl", b'{"text": "a"}\n\n   \n{"text": "b"}\n\n')
    shard = open_corpus(str(path)).shards[0]
    assert [d.text for d in shard.read()] == ["a", "b"]
    marked = [(d.where, d.error) for d in shard.read(blank_lines=True) if d.error]
    assert marked == [(f"{path}:{n}", BLANK_LINE) for n in (2, 3, 5)]


def test_config_or_split_for_local_files_is_an_error_not_ignored(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [GOOD])
    with pytest.raises(FreqlabError, match=r"a\.jsonl: --config 'en' applies to Hugging Face datasets"):
        open_corpus(str(path), config="en")
    with pytest.raises(FreqlabError, match=r"--split 'validation' applies to Hugging Face datasets, saved DatasetDict"):
        open_corpus("slimpajama", data_files=str(path), split="validation")
    assert open_corpus(str(path), split="train").description["files"] == 1


def test_both_a_path_and_data_files_is_ambiguous(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [GOOD])
    with pytest.raises(FreqlabError, match="either as the dataset path or as data_files"):
        open_corpus(str(path), data_files=str(path))


def test_a_text_file_that_fails_while_read_is_one_unreadable_record_and_the_group_goes_on(tmp_path, monkeypatch):
    import freqlab.corpus.text as text_module

    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(name)
    corpus = open_corpus(str(tmp_path))

    def failing_open(path, buffering=-1):  # every reader opens its files through open_input
        if str(path).endswith("b.txt"):
            raise OSError(5, "Input/output error")
        return open(path, "rb", buffering=buffering)

    monkeypatch.setattr(text_module, "open_input", failing_open)
    docs = [(d.text, d.where, d.error) for d in corpus.documents()]
    assert docs == [
        ("a.txt", str(tmp_path / "a.txt"), None),
        (None, str(tmp_path / "b.txt"), "unreadable-file"),
        ("c.txt", str(tmp_path / "c.txt"), None),
    ]


def test_a_line_that_is_json_but_no_object_says_what_it_holds(tmp_path):
    """A review: a one-line JSON array stopped a folder scan with `not-a-json-object` and no hint that freqlab reads
    JSON lines (an array spread over lines already said so)."""
    path = write_bytes(tmp_path / "arr.jsonl", b'[{"text": "a"}, {"text": "b"}]\n12\n"s"\nnull\ntrue\n[]\n')
    assert [(d.error, d.detail) for d in open_corpus(str(path)).documents()] == [
        (
            "not-a-json-object",
            "the line is a JSON array of 2 items: JSON lines hold one object per line (jq -c '.[]' writes them)",
        ),
        ("not-a-json-object", "the line holds a number, not an object"),
        ("not-a-json-object", "the line holds a string, not an object"),
        ("not-a-json-object", "the line holds null, not an object"),
        ("not-a-json-object", "the line holds true, not an object"),
        ("not-a-json-object", "the line is a JSON array of 0 items, not an object"),  # no records: no jq hint
    ]
    nan = write_bytes(tmp_path / "nan.jsonl", b"[NaN, 1]\n")  # orjson refuses NaN: the standard library says it
    assert [d.detail for d in open_corpus(str(nan)).documents()] == [
        "the line is a JSON array of 2 items, not an object"
    ]
