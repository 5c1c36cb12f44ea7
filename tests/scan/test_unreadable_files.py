"""A file that fails while being read: one clear error by default, one counted ``unreadable-file`` skip with
``on_error="skip"`` (none of its documents kept: a checksum that fails at the end vouches for none of the bytes
before it); blank lines counted, never documents."""

from __future__ import annotations

import json
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from freqlab.errors import FreqlabError
from freqlab.scan import scan

from .conftest import assert_same_histogram, real_texts, reference_histogram, write_slimpajama

LABEL = "RedPajamaBook"


@pytest.fixture(scope="module")
def texts():
    return real_texts(40)


def jsonl(texts) -> bytes:
    return b"".join(json.dumps({"text": t, "meta": {"redpajama_set_name": LABEL}}).encode() + b"\n" for t in texts)


def truncated_zst(path, texts) -> int:
    """A .jsonl.zst cut in the middle of its frame; returns how many whole lines come out before the cut."""
    writer = zstandard.ZstdCompressor(level=3).compressobj()
    blocks = []  # one zstd block per line, so the first half of the file decompresses to whole lines
    for line in jsonl(texts).splitlines(keepends=True):
        blocks += [writer.compress(line), writer.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)]
    data = b"".join(blocks) + writer.flush()
    cut = data[: len(data) // 2]
    path.write_bytes(cut)
    return zstandard.ZstdDecompressor().decompressobj().decompress(cut).count(b"\n")


def run(folder, **options):
    options.setdefault("workers", 1)
    return scan(
        str(folder), L=[256], regimes=["natural"], progress=False, source_field="meta.redpajama_set_name", **options
    )


@pytest.fixture
def broken_dir(tmp_path, texts):
    """good.jsonl (10 docs), cut.jsonl.zst (truncated), plain.json.gz (not gzip), bad.parquet (garbage): three
    unreadable files; zero.parquet (0 bytes) is an empty file, not an unreadable one (issue 14, case 4)."""
    folder = tmp_path / "data"
    folder.mkdir()
    write_slimpajama(folder / "good.jsonl", [(t, LABEL) for t in texts[:10]])
    kept = truncated_zst(folder / "cut.jsonl.zst", texts[10:40])
    (folder / "plain.json.gz").write_bytes(jsonl(texts[:2]))
    (folder / "zero.parquet").write_bytes(b"")
    (folder / "bad.parquet").write_bytes(b"PAR1 not parquet at all PAR1")
    return folder, kept


def test_skip_counts_each_unreadable_file_once_and_none_of_its_documents(broken_dir, texts, counter):
    folder, kept = broken_dir
    assert 0 < kept < 30
    result = run(folder, on_error="skip")
    docs = result.summary["documents"]
    assert docs["skipped"] == {"unreadable-file": 3}
    assert docs["unreadable_files"] == ["bad.parquet", "cut.jsonl.zst", "plain.json.gz"]
    assert (docs["read"], docs["tokenized"], docs["empty"]) == (10 + 3, 10, 0)  # the cut file's `kept`: not counted
    assert result.summary["corpus"]["description"]["empty_files"] == 1  # zero.parquet: empty, counted once
    expected = reference_histogram([(t, LABEL) for t in texts[:10]], counter)
    assert result.histogram.lengths.tolist() == expected.lengths.tolist()
    assert result.histogram.counts.tolist() == expected.counts.tolist()
    report = result.report()
    assert "+ 3 skipped (unreadable-file: 3)" in report
    # the cut file's lines read before it failed are no limit's (there is none): said as what they are (a review)
    assert result.summary["scan"]["documents_past_limit"] == 0
    assert result.summary["scan"]["documents_in_failed_files"] == kept
    assert "past the limit" not in report and "documents of them in files that failed (not kept)" in report
    unreached = run(folder, on_error="skip", max_docs=1000)  # a limit never reached: the same (a second review)
    assert unreached.summary["scan"]["documents_past_limit"] == 0
    assert unreached.summary["scan"]["documents_in_failed_files"] == kept

    assert "(none of their documents counted, one skip each): bad.parquet, cut.jsonl.zst, plain.json.gz\n" in report
    # the same with a process pool
    pooled = run(folder, on_error="skip", workers=2)
    assert_same_histogram(pooled.histogram, result.histogram)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("cut.jsonl.zst", r"cut\.jsonl\.zst: cannot read \(ZstdError: .*\); is the file truncated or corrupt\?$"),
        # plain text under a gzip name: not 'truncated or corrupt' (second adversary review)
        (
            "plain.json.gz",
            r"plain\.json\.gz: cannot read \(BadGzipFile: Not a gzipped file .*\); the name says gzip, the content is "
            r"not: rename the file after what it holds$",
        ),
        ("bad.parquet", r"bad\.parquet: cannot read \(ArrowInvalid: "),
    ],
)
def test_by_default_an_unreadable_file_is_one_error_naming_it(broken_dir, name, message):
    folder, _ = broken_dir
    for other in folder.iterdir():
        if other.name not in (name, "good.jsonl"):
            other.unlink()
    with pytest.raises(FreqlabError, match=message) as caught:
        run(folder)
    assert "\n" not in str(caught.value)


def test_a_limit_reached_before_the_unreadable_file_does_not_raise(broken_dir):
    folder, kept = broken_dir
    for name in ("bad.parquet", "zero.parquet", "plain.json.gz"):
        (folder / name).unlink()
    # shard order: cut.jsonl.zst, then good.jsonl; the failure comes after the cut file's `kept` documents
    for workers in (1, 2):
        result = run(folder, max_docs=kept, workers=workers)
        assert result.summary["documents"]["read"] == kept and result.summary["documents"]["skipped"] == {}
    for cap in (1, kept // 2, kept):  # a cap reached before the failure: the same documents with skip as with raise
        raised, skipped = run(folder, max_docs=cap), run(folder, max_docs=cap, on_error="skip")
        assert skipped.summary["documents"] == raised.summary["documents"]
        assert_same_histogram(skipped.histogram, raised.histogram)
    with pytest.raises(FreqlabError, match=r"cut\.jsonl\.zst: cannot read"):
        run(folder, max_docs=kept + 1)
    # a cap past the failure: the cut file is one skip and none of its documents, as without a cap, and the cap goes
    # on to good.jsonl's 10 (the ledger decides, in shard order: the same whatever the worker count)
    for workers in (1, 2):
        skipped = run(folder, max_docs=kept + 2, on_error="skip", workers=workers)
        assert skipped.summary["documents"]["skipped"] == {"unreadable-file": 1}
        assert skipped.summary["documents"]["tokenized"] == 10
        unreached = run(folder, max_docs=10**6, on_error="skip", workers=workers)  # a cap never reached changes nothing
        assert unreached.summary["documents"] == run(folder, on_error="skip", workers=workers).summary["documents"]


def test_resume_treats_a_shard_ended_by_an_unreadable_file_as_finished(broken_dir, tmp_path):
    folder, _ = broken_dir
    out = tmp_path / "out"
    first = run(folder, on_error="skip", out=out)
    again = run(folder, on_error="skip", out=out, resume=True)
    assert again.summary["scan"]["resumed_shards"] == 4  # zero.parquet has no shard: nothing to read
    assert again.summary["documents"] == first.summary["documents"]
    assert_same_histogram(again.histogram, first.histogram)
    assert again.summary["scan"]["documents_per_second"] is None
    assert "all shards from checkpoints (local, 1 worker)" in again.report()
    # resuming with on_error="raise" recounts the shards that hold skips, and raises
    with pytest.raises(FreqlabError, match=r"cannot read"):
        run(folder, out=out, resume=True)


def test_blank_lines_are_counted_apart_and_do_not_change_which_documents_are_sampled(tmp_path, texts):
    lines = jsonl(texts[:20]).splitlines(keepends=True)
    plain, blank = tmp_path / "plain", tmp_path / "blank"
    plain.mkdir()
    blank.mkdir()
    (plain / "a.jsonl").write_bytes(b"".join(lines))
    (blank / "a.jsonl").write_bytes(
        b"\n" + b"".join(line + (b"  \n" if k % 4 == 0 else b"") for k, line in enumerate(lines)) + b"\n\n"
    )
    a = run(plain, sample_rate=0.5, seed=3)
    b = run(blank, sample_rate=0.5, seed=3)
    assert b.summary["documents"]["blank_lines"] == 1 + 5 + 2 and a.summary["documents"]["blank_lines"] == 0
    assert (
        b.summary["documents"]["read"] == a.summary["documents"]["read"] == 20 - a.summary["documents"]["sampled_out"]
    )
    assert_same_histogram(a.histogram, b.histogram)
    assert "8 blank lines passed over (not records)" in b.report()


def test_the_report_lists_files_with_empty_and_ignored_ones(tmp_path, texts):
    write_slimpajama(tmp_path / "a.jsonl", [(texts[0], LABEL)])
    (tmp_path / "empty.jsonl").write_bytes(b"")
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), tmp_path / "none.parquet")
    (tmp_path / "README.md").write_text("not data")
    result = run(tmp_path)
    assert "files      3 files: 2 jsonl, 1 parquet (2 empty, 1 ignored: README.md)" in result.report()  # named
    assert "(local, 1 worker)" in result.report()


def test_a_file_whose_checksum_fails_at_the_end_counts_none_of_the_documents_before(tmp_path, texts, counter):
    """A stored (level 0) gzip member with one byte changed inside a text decompresses to a wrong document and fails
    its CRC only at the end: with skip, that wrong document was counted beside the unreadable-file skip."""
    import gzip

    folder = tmp_path / "data"
    folder.mkdir()
    write_slimpajama(folder / "good.jsonl", [(t, LABEL) for t in texts[:5]])
    data = bytearray(gzip.compress(jsonl(texts[5:15]), compresslevel=0))
    at = data.find(b" ", data.find(json.dumps(texts[7])[1:20].encode()))  # a space inside the 3rd text
    data[at] = ord("X")  # two words become one: a shorter document, were it counted
    (folder / "flip.jsonl.gz").write_bytes(bytes(data))
    with pytest.raises(FreqlabError, match=r"flip\.jsonl\.gz: cannot read \(BadGzipFile: CRC check failed"):
        run(folder)
    result = run(folder, on_error="skip")
    docs = result.summary["documents"]
    assert (docs["read"], docs["tokenized"], docs["skipped"]) == (6, 5, {"unreadable-file": 1})
    expected = reference_histogram([(t, LABEL) for t in texts[:5]], counter)
    assert (result.histogram.lengths.tolist(), result.histogram.counts.tolist()) == (
        expected.lengths.tolist(),
        expected.counts.tolist(),
    )


def test_a_bad_record_that_is_a_damaged_streams_garbage_says_the_stream_is_corrupt(tmp_path, texts):
    """A stored gzip member with a quote inside a text turned into a NUL decompresses to a malformed line, and the
    CRC fails only at the member's end: the error named the line alone, as if the file's text were bad. It now says
    the compressed data is corrupt too. A malformed line in an intact stream says nothing of the kind."""
    import gzip

    content = jsonl(texts[:10])
    data = bytearray(gzip.compress(content, compresslevel=0))
    at = data.find(b'"', data.find(json.dumps(texts[3])[1:20].encode()))  # the text's closing quote
    data[at] = 0
    (tmp_path / "flip.jsonl.gz").write_bytes(bytes(data))
    quote = content.find(b'"', content.find(json.dumps(texts[3])[1:20].encode()))  # stored: the same byte
    damaged = content[:quote] + b"\0" + content[quote + 1 :]
    with pytest.raises(FreqlabError) as caught:
        run(tmp_path / "flip.jsonl.gz")
    assert str(caught.value).startswith(f"{tmp_path / 'flip.jsonl.gz'}:4: malformed-json (")
    assert str(caught.value).endswith(
        "; the file's compressed data is corrupt (BadGzipFile: CRC check failed "
        f"{hex(zlib.crc32(content))} != {hex(zlib.crc32(damaged))}): the record may be that damage"
    )
    (tmp_path / "bad.jsonl.gz").write_bytes(gzip.compress(jsonl(texts[:3]) + b"{not json\n"))
    with pytest.raises(
        FreqlabError,
        match=r"bad\.jsonl\.gz:4: malformed-json \([^)]*\); --on-error skip counts such records as skipped$",
    ):
        run(tmp_path / "bad.jsonl.gz")
    # a real bad record in a file also cut short: the cut cannot have made it (adversary review: it was "likely damage")
    whole = gzip.compress(jsonl(texts[:3]) + b"{not json\n" + jsonl(texts[3:20]))
    (tmp_path / "cut.jsonl.gz").write_bytes(whole[:-50])
    with pytest.raises(FreqlabError) as caught:
        run(tmp_path / "cut.jsonl.gz")
    assert str(caught.value).endswith(
        "; the file is also cut short (EOFError: Compressed file ended before the end-of-stream marker was reached)"
    )


def test_a_capped_skip_scan_is_the_same_whatever_the_worker_count(tmp_path, texts):
    """a (3 documents), b.jsonl.gz (4, its CRC failing at the end), c (10), --max-docs 5: the first 5 documents in
    shard order are a's 3 and b's first 2, with skip as with raise. Dropping b's documents in its worker made 2
    workers count c's first document instead (the cap is the ledger's, applied after the workers)."""
    import gzip

    folder = tmp_path / "data"
    folder.mkdir()
    write_slimpajama(folder / "a.jsonl", [(t, LABEL) for t in texts[:3]])
    data = bytearray(gzip.compress(jsonl(texts[3:7]), compresslevel=0))
    data[-8] ^= 0xFF  # the CRC
    (folder / "b.jsonl.gz").write_bytes(bytes(data))
    write_slimpajama(folder / "c.jsonl", [(t, LABEL) for t in texts[7:17]])
    raised = run(folder, max_docs=5)
    for workers in (1, 2):
        skipped = run(folder, max_docs=5, on_error="skip", workers=workers)
        assert skipped.summary["documents"] == raised.summary["documents"]
        assert_same_histogram(skipped.histogram, raised.histogram)


def test_a_limit_reached_after_a_failed_file_leaves_its_documents_the_failed_files(tmp_path, texts):
    """A third review: a.jsonl.zst fails after `kept` documents, b.jsonl then reaches --max-docs: the documents read
    from a were reported past the limit."""
    folder = tmp_path / "data"
    folder.mkdir()
    kept = truncated_zst(folder / "a.jsonl.zst", texts[10:40])
    write_slimpajama(folder / "b.jsonl", [(t, LABEL) for t in texts])
    result = run(folder, on_error="skip", max_docs=kept + 5)  # a's one skip, then b's first kept + 4 documents
    assert result.summary["documents"]["read"] == kept + 5 and result.summary["scan"]["partial"]
    assert result.summary["scan"]["documents_in_failed_files"] == kept
    assert result.summary["scan"]["documents_past_limit"] == 1  # one worker, in corpus order: the one after it


def test_a_resumed_failed_file_waiting_behind_a_limit_is_no_failure_of_this_run(tmp_path, texts):
    """A fourth review: with a limit, a checkpoint of a failed file waits in the ledger until the shards before it are
    counted again; committed then, its documents were called this run's failed-file documents."""
    folder = tmp_path / "data"
    folder.mkdir()
    write_slimpajama(folder / "a.jsonl", [(t, LABEL) for t in texts[:10]])
    kept = truncated_zst(folder / "b.jsonl.zst", texts[10:40])
    write_slimpajama(folder / "c.jsonl", [(t, LABEL) for t in texts])
    out = tmp_path / "out"
    first = run(folder, on_error="skip", max_docs=30, out=str(out))  # a: 10, b: its skip, c: 19
    assert first.summary["scan"]["documents_in_failed_files"] == kept and first.summary["documents"]["read"] == 30
    for checkpoint in (out / "checkpoints").glob("a.jsonl*"):
        checkpoint.unlink()  # a is counted again; b's checkpoint waits behind it
    again = run(folder, on_error="skip", max_docs=30, out=str(out), resume=True)
    assert again.summary["scan"]["resumed_shards"] >= 1 and again.summary["documents"]["read"] == 30
    assert again.summary["scan"]["documents_in_failed_files"] == 0
    assert_same_histogram(again.histogram, first.histogram)


def test_a_failed_file_at_the_limit_adds_none_of_its_counts_to_a_scan_said_whole(tmp_path, texts):
    """A review: a file whose checksum fails (three blank lines, then the CRC) reached --max-docs with its one skip;
    the scan was whole, and the failed file's blank lines (twice: the shard counted them beside the record's gap)
    were added, where the unlimited scan keeps none of its counts."""
    import gzip

    from freqlab.corpus import open_corpus
    from freqlab.scan.work import ShardOptions, count_shard

    folder = tmp_path / "data"
    folder.mkdir()
    write_slimpajama(folder / "a.jsonl", [(t, LABEL) for t in texts[:2]])
    data = bytearray(gzip.compress(b"\n\n\n"))
    data[-8] ^= 0xFF  # the CRC
    (folder / "b.jsonl.gz").write_bytes(bytes(data))
    whole = run(folder, on_error="skip")
    assert (whole.summary["documents"]["read"], whole.summary["documents"]["blank_lines"]) == (3, 0)
    for workers in (1, 2):
        limited = run(folder, on_error="skip", max_docs=3, workers=workers)
        assert limited.summary["documents"] == whole.summary["documents"] and not limited.summary["scan"]["partial"]
    shard = next(s for s in open_corpus(str(folder)).shards if "b.jsonl.gz" in s.id)
    part = count_shard(shard, None, ShardOptions(on_error="skip"))  # the shard itself: its 3 blank lines once
    assert (part.failed, part.blank_lines, part.documents_read) == (True, 3, 1)
