"""Runs of plain records: the JSON-lines reader reads blocks and gives runs of texts (tiny documents without a
Python object each), and must give exactly the records, line numbers and errors of the line-by-line reader."""

from __future__ import annotations

import io
import json

import pytest
from corpus_helpers import write_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from freqlab.corpus.base import BLANK_LINE, Document, Run
from freqlab.corpus.fields import Fields
from freqlab.corpus.file_discovery import stat_file
from freqlab.corpus.jsonl import JsonlShard
from freqlab.corpus.ranges import LineTooLong, owned_blocks, owned_lines, split_bytes

RELAXED = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def lines_of(reader, body: bytes, start: int, end, max_line: int):
    """The ``(position, line without newline)`` a reader gives, and the error it ends with (None)."""
    stream = io.BufferedReader(io.BytesIO(body), buffer_size=8)
    stream.seek(start)
    got, error = [], None
    try:
        if reader is owned_lines:
            for position, line in owned_lines(stream, start, end, max_line):
                got.append((position, line.removesuffix(b"\n")))
        else:
            for first, block in owned_blocks(stream, start, end, max_line):
                for line in block:
                    got.append((first, line))
                    first += len(line) + 1
    except LineTooLong as exc:
        error = str(exc)
    return got, error


@RELAXED
@given(
    st.lists(st.integers(0, 30), max_size=40),
    st.booleans(),
    st.integers(1, 60),
    st.integers(1, 80),
)
def test_blocks_hold_the_lines_of_owned_lines_in_every_range(monkeypatch, lengths, final_newline, part, max_line):
    from freqlab.corpus import ranges

    monkeypatch.setattr(ranges, "_CHUNK", 16)  # blocks far smaller than the lines: every boundary case
    body = b"\n".join(bytes([97 + k % 26]) * n for k, n in enumerate(lengths)) + (b"\n" if final_newline else b"")
    for start, end in split_bytes(len(body), part):
        assert lines_of(owned_blocks, body, start, end, max_line) == lines_of(owned_lines, body, start, end, max_line)


GOOD = [{"text": "plain one"}, {"text": "x"}, {"text": "def f(x):"}]
HOSTILE = [
    b"",
    b"   ",
    b'{"text": ""}',
    b'{"other": "no text"}',
    b'{"text": null}',
    b'{"text": 5}',
    b'{"text": 0}',
    b'{"text": false}',
    b'{"text": ["a"]}',
    b'{"text": {"a": "b"}}',
    b'{"text": "", "text": "dup"}',
    b'"a string"',
    b"7",
    b"null",
    b"[1, 2]",
    b'[{"text": "in a list"}]',
    b'\xef\xbb\xbf{"text": "a BOM of its own"}',  # after the file's BOM: two, the second no JSON
    b'{"text": "cut',
    b'{"text": "bad \xff byte"}',
    b'{"text": "lone \\ud800 escape"}',
    b'{"text": "pair \\ud83d\\ude00 fine"}',
    b'{"text": "crlf"}\r',
]


@st.composite
def jsonl_bodies(draw) -> bytes:
    picks = draw(st.lists(st.one_of(
        st.sampled_from([json.dumps(r).encode() for r in GOOD]),
        st.sampled_from(HOSTILE),
        st.text(min_size=1, max_size=20).map(lambda t: json.dumps({"text": t}).encode()),
    ), max_size=60))  # fmt: skip
    body = b"\n".join(picks) + (b"\n" if draw(st.booleans()) else b"")
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + body


BLANK = (None, None, BLANK_LINE, None)  # a blank line: no record, never named by where it is


def flattened(items) -> list[tuple]:
    out = []
    for item in items:
        if isinstance(item, list):
            assert item and all(t.__class__ is str and t for t in item)
            gaps = item.gaps if item.__class__ is Run else [0] * len(item)
            assert item.__class__ is list or (len(gaps) == len(item) and any(gaps))
            for text, gap in zip(item, gaps, strict=True):  # a run: plain records, "where" never asked for
                out += [BLANK] * gap + [(text, None, None, None)]
        elif item.error == BLANK_LINE:
            out.append(BLANK)
        else:
            out.append((item.text, item.source, item.error, item.where))
    return out


def expected(items) -> list[tuple]:
    return [
        BLANK if d.error == BLANK_LINE else (d.text, d.source, d.error, None if d.error is None and d.text else d.where)
        for d in items
    ]


@RELAXED
@given(jsonl_bodies(), st.integers(1, 200), st.sampled_from(["f.jsonl", "f.jsonl.zst", "f.jsonl.gz"]))
def test_runs_give_the_records_of_the_line_by_line_reader(tmp_path, monkeypatch, body, part, name):
    from freqlab.corpus import ranges

    monkeypatch.setattr(ranges, "_CHUNK", 64)
    path = tmp_path / name
    write_bytes(path, body)
    file = stat_file(str(path), name)
    for start, end in split_bytes(len(body), part):
        shard = JsonlShard(name, file, Fields("text"), start, end)
        assert flattened(shard.read_runs()) == expected(shard.read(blank_lines=True))


def test_blank_lines_between_plain_records_stay_in_the_run(tmp_path):
    """A review: records separated by blank lines were read 4x slower, each blank line breaking the run; they are the
    run's gaps now, and a bad line after them is still named by its own line number."""
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"text": "a"}\n\n{"text": "b"}\n  \n\n{"text": "c"}\n\n{"text": 5}\n')
    items = list(JsonlShard("f", stat_file(str(path), "f"), Fields("text")).read_runs())
    (run, blank, bad) = items
    assert run == ["a", "b", "c"] and run.__class__ is Run and run.gaps == [0, 1, 2]
    assert (blank.error, blank.where) == (BLANK_LINE, f"{path}:7")  # after the run's last text: a line as before
    assert (bad.error, bad.where) == ("non-string-text", f"{path}:8")


def test_a_run_is_handed_over_before_a_failing_block_and_blank_stretches_stay_bounded(tmp_path, monkeypatch):
    """An adversary of the runs with gaps: texts held in the run were lost when the next block failed (a line too
    long, a file cut short), so a limit inside them was never reached; and 30 million blank lines in a row were held
    in memory (3.3 GB). A block's run goes out at its end, and a stretch of RUN_LINES blank lines as lines."""
    from freqlab.corpus import ranges
    from freqlab.corpus.jsonl import RUN_LINES

    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"text": "alpha"}\n\n{"text": "gamma"}\n{"text": "' + b"x" * 300 + b'"}\n')
    monkeypatch.setenv(ranges.MAX_LINE_VARIABLE, "100")
    read = []
    with pytest.raises(LineTooLong):
        for item in JsonlShard("f", stat_file(str(path), "f"), Fields("text")).record_runs():
            read.append(item)
    assert read == [["alpha", "gamma"]] and read[0].gaps == [0, 1]
    monkeypatch.undo()
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b'{"text": "hello"}\n' + b"\n" * (2 * RUN_LINES + 5) + b'{"text": "world"}\n')
    shard = JsonlShard("b", stat_file(str(blank), "b"), Fields("text"))
    items = list(shard.read_runs())
    assert flattened(items) == expected(shard.read(blank_lines=True))
    assert max((max(i.gaps) for i in items if i.__class__ is Run), default=0) < RUN_LINES


def test_a_source_field_turns_runs_off(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"text": "a", "src": "x"}\n{"text": "b"}\n')
    shard = JsonlShard("f", stat_file(str(path), "f"), Fields("text", "src"))
    assert all(isinstance(item, Document) for item in shard.read_runs())
    assert [(d.text, d.source) for d in shard.read_runs()] == [("a", "x"), ("b", "(none)")]


def test_tiny_documents_come_in_runs_of_bounded_size(tmp_path):
    from freqlab.corpus.jsonl import RUN_LINES

    path = tmp_path / "tiny.jsonl"
    path.write_bytes(b"".join(json.dumps({"text": f"line {k}"}).encode() + b"\n" for k in range(10_000)))
    items = list(JsonlShard("t", stat_file(str(path), "t"), Fields("text")).read_runs())
    assert all(item.__class__ is list and len(item) <= RUN_LINES for item in items)
    assert [t for item in items for t in item] == [f"line {k}" for k in range(10_000)]


@pytest.mark.parametrize("options", [{}, {"sample_rate": 0.3, "seed": 7}, {"max_docs": 777}, {"max_tokens": 5000}])
def test_a_scan_counts_runs_exactly_as_documents_one_by_one(tmp_path, monkeypatch, options):
    from freqlab.corpus.base import FileShard
    from freqlab.scan.work import ShardOptions, count_shard
    from freqlab.tokenization import load_tokenizer

    lines = [json.dumps({"text": "word " * (k % 13)}).encode() for k in range(3000)]
    lines[100:103] = [b"", b'{"text": 5}', b'{"text": ""}']
    lines[2000:2002] = [b'{"text": "one", "source": "x"}', b'"not an object"']
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    shard = JsonlShard("t", stat_file(str(path), "t"), Fields("text"))
    counter = load_tokenizer("tekken", skip_backends={"fastokens": "test"})
    shard_options = ShardOptions(on_error="skip", batch_size=64, keep_log=True, **options)
    with_runs = count_shard(shard, counter, shard_options)
    monkeypatch.setattr(FileShard, "read_runs", lambda self: self.read(blank_lines=True))
    one_by_one = count_shard(shard, counter, shard_options)
    assert outcome(with_runs) == outcome(one_by_one)
    assert with_runs.documents_read > 0 and with_runs.tokens > 0


def outcome(part) -> tuple:
    """Everything a shard's count holds: lengths per source, empty, skipped, sampled out, blank lines, the log."""
    import numpy as np

    log = part.log
    return (
        {source: [a.tolist() for a in counts.to_arrays()] for source, counts in part.lengths.items()},
        dict(part.empty),
        dict(part.skipped),
        part.sampled_out,
        part.blank_lines,
        part.complete,
        np.concatenate(log.codes).tolist() if log.codes else [],
        np.concatenate(log.positions).tolist() if log.positions else [],
    )


def test_only_the_files_byte_order_mark_is_removed(tmp_path):
    bom = b"\xef\xbb\xbf"
    path = tmp_path / "bom.jsonl"
    path.write_bytes(bom + bom + b'{"text": "two marks"}\n' + bom + b'{"text": "a mark mid-file"}\n{"text": "ok"}\n')
    shard = JsonlShard("b", stat_file(str(path), "b"), Fields("text"))
    refused = [(None, None, "malformed-json", f"{path}:{line}") for line in (1, 2)]
    runs = flattened(shard.read_runs())
    assert runs == expected(shard.read(blank_lines=True)) == [*refused, ("ok", None, None, None)]
