"""Bad records: a clear error with file and line by default, counted by reason with on_error="skip"."""

from __future__ import annotations

import functools
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from freqlab.errors import FreqlabError
from freqlab.scan import scan

from .conftest import reference_histogram, scan_slimpajama, write_slimpajama

GOOD = [("def f():\n    return 1\n", "RedPajamaGithub"), ("Some prose, here.", "RedPajamaBook")]
BAD_LINES = [
    '{"text": "unterminated',  # malformed-json
    '{"meta": {"redpajama_set_name": "RedPajamaBook"}}',  # missing-text-field
    '{"text": 42, "meta": {"redpajama_set_name": "RedPajamaBook"}}',  # non-string-text
    '{"text": null}',  # null-text
]


@pytest.fixture
def bad_dir(tmp_path):
    folder = tmp_path / "bad"
    write_slimpajama(folder / "a.jsonl", [*GOOD, ("", "RedPajamaBook")])
    write_slimpajama(folder / "b.jsonl", [GOOD[0], *BAD_LINES, GOOD[1]])
    with open(folder / "b.jsonl", "ab") as handle:  # invalid UTF-8 on line 7
        handle.write(b'{"text": "caf\xe9"}\n')
    return folder


run = functools.partial(scan_slimpajama, L=[64])


@pytest.mark.parametrize("workers", [1, 2])
def test_the_first_bad_record_raises_with_its_file_and_line(bad_dir, workers):
    with pytest.raises(FreqlabError, match=r"b\.jsonl:2: malformed-json"):
        run(bad_dir, workers=workers)


def test_skip_counts_every_bad_record_by_reason_and_accounts_for_every_document(bad_dir, counter):
    result = run(bad_dir, on_error="skip", workers=1)
    docs = result.summary["documents"]
    assert docs["skipped"] == {
        "invalid-utf8": 1,
        "malformed-json": 1,
        "missing-text-field": 1,
        "non-string-text": 1,
        "null-text": 1,
    }
    assert (docs["read"], docs["tokenized"], docs["empty"]) == (10, 4, 1)
    assert docs["read"] == docs["tokenized"] + docs["empty"] + sum(docs["skipped"].values())
    expected = reference_histogram([*GOOD, ("", "RedPajamaBook"), GOOD[0], GOOD[1]], counter)
    assert result.histogram.counts.tolist() == expected.counts.tolist()
    assert result.histogram.lengths.tolist() == expected.lengths.tolist()
    assert "5 skipped (invalid-utf8: 1, malformed-json: 1" in result.report()


def test_a_limit_before_the_bad_record_does_not_raise(bad_dir):
    # both shards run at once: b.jsonl meets its bad line 2 before a.jsonl's result says it is not needed
    result = run(bad_dir, max_docs=4, workers=2)  # a.jsonl's 3 documents, then b.jsonl line 1
    assert result.summary["documents"]["read"] == 4
    with pytest.raises(FreqlabError, match=r"b\.jsonl:2: malformed-json"):
        run(bad_dir, max_docs=5, workers=1)


def test_only_empty_documents_give_an_empty_histogram_and_no_windows(tmp_path):
    path = write_slimpajama(tmp_path / "empty.jsonl", [("", "x"), ("", "y")])
    result = scan(str(path), progress=False, workers=1)
    assert result.histogram.documents == 0 and result.summary["documents"]["empty"] == 2
    assert result.summary["windows"] == []
    assert "no tokens counted" in result.report()


def test_bad_parameters_are_clear_errors(bad_dir):
    for options, message in [
        ({"sample_rate": 0}, "sample_rate must be in"),
        ({"on_error": "ignore"}, "on_error must be one of raise, skip"),
        ({"engine": "spark"}, "engine must be one of local, ray"),
        ({"regimes": ["zigzag"]}, "unknown regime 'zigzag'"),
        ({"workers": 0}, "workers must be at least 1"),
        ({"address": "ray://x:10001"}, "address is for the Ray engine"),
    ]:
        with pytest.raises(FreqlabError, match=message):
            scan("slimpajama", data_files=str(bad_dir / "*.jsonl"), progress=False, **options)
    with pytest.raises(FreqlabError, match="text field '' names no field"):
        scan(str(bad_dir), text_field="", progress=False)
    # wrong types (an adversary's review: 'int' object is not iterable, has no attribute 'strip'; "2048" read as the
    # windows 2, 0, 4, 8, refused naming only the 2)
    with pytest.raises(FreqlabError, match="L must be a positive integer or a list of them, got '2048'"):
        scan(str(bad_dir), L="2048", progress=False)
    for L, message in [(None, "got None"), (2048.0, "got 2048.0"), ([], "give at least one window L")]:
        with pytest.raises(FreqlabError, match=message):  # a review: "'NoneType' object is not iterable"
            scan(str(bad_dir), L=L, progress=False)
    for options, message in [
        ({"dataset": 123}, "dataset is a name, a path, a list of paths or an opened corpus, not int"),
        ({"dataset": str(bad_dir), "text_field": 3}, r"text_field is a field name \(a dotted path for a nested one\)"),
        ({"dataset": str(bad_dir), "source_field": 1}, "source_field is a field name"),
    ]:
        with pytest.raises(TypeError, match=message):
            scan(progress=False, **options)


@pytest.mark.parametrize(
    ("dataset", "out"),
    [
        ("{d}", "{d}/out"),
        ("{d}", "{d}"),
        ("{d}/*", "{d}/out"),  # a glob matches the output folder the next time
        ("{d}/**", "{d}/deep/er/out"),  # a recursive glob
        ("{d}/*/*", "{d}/out"),  # a glob that lists what is written in it
        ("{d}/**/*.parquet", "{d}/out"),
        ("{d}", "{d}/../dangling-target"),  # a dangling symlink in the corpus points there
        ("{d}", "{d}/link"),  # a symlink to a folder elsewhere: the walk follows it
        ("opened:{d}", "{d}/out"),  # a corpus opened first
        ("{d}/**/*.jsonl*", "{d}/o"),  # lists the checkpoints, named after the files: a.jsonl-<hash>.parquet
        ("{d}/*/*.jsonl*", "{d}"),
        ("{d}/../linked/*", "{d}/o"),  # a glob through a symlink to the corpus folder
        ("{d}", "{d}/../summary-target"),  # a dangling symlink to a file freqlab writes there
        ("json:{d}/**", "{d}/o"),  # local files read by datasets
    ],
)
def test_an_output_folder_a_later_scan_would_read_is_refused_before_anything_is_written(
    bad_dir, tmp_path, dataset, out
):
    from freqlab.corpus import open_corpus

    (tmp_path / "elsewhere").mkdir()
    (bad_dir / "link").symlink_to(tmp_path / "elsewhere")
    (bad_dir / "dangling").symlink_to(tmp_path / "dangling-target")
    write_slimpajama(bad_dir / "sub" / "c.jsonl", GOOD)
    pq.write_table(pa.table({"text": ["some text"]}), bad_dir / "sub" / "p.parquet")
    (tmp_path / "linked").symlink_to(bad_dir)
    (bad_dir / "x.jsonl").symlink_to(tmp_path / "summary-target" / "summary.json")
    before = sorted(p.name for p in bad_dir.iterdir())
    dataset, out = dataset.format(d=bad_dir), out.format(d=bad_dir)
    corpus = open_corpus(dataset.removeprefix("opened:")) if dataset.startswith("opened:") else dataset
    options = {"data_files": dataset.removeprefix("json:")} if dataset.startswith("json:") else {}
    with pytest.raises(FreqlabError, match=r"the output folder .* is inside the corpus .*give an --out outside"):
        scan("json" if options else corpus, out=out, on_error="skip", progress=False, **options)
    assert sorted(p.name for p in bad_dir.iterdir()) == before
    assert not any((tmp_path / "elsewhere").iterdir())


@pytest.mark.parametrize(
    ("dataset", "out"),
    [
        ("{d}", "{d}/.out"),
        ("{d}/a.jsonl", "{d}/out"),
        ("{d}/*.jsonl", "{d}/o"),
        ("{d}/**/*.jsonl", "{d}/deep/out"),
        ("{d}/*/*.jsonl", "{d}/out"),
        ("{d}/*", "{d}/.h/out"),
    ],
)
def test_an_output_folder_no_later_scan_reads_is_accepted(bad_dir, dataset, out):
    write_slimpajama(bad_dir / "sub" / "c.jsonl", GOOD)
    result = scan(dataset.format(d=bad_dir), out=out.format(d=bad_dir), on_error="skip", progress=False)
    assert result.summary["documents"]["read"] > 0
    again = scan(dataset.format(d=bad_dir), out=out.format(d=bad_dir), on_error="skip", progress=False)
    assert again.summary["documents"] == result.summary["documents"]


def test_a_pattern_that_sweeps_in_an_earlier_scans_output_folder_says_so(tmp_path):
    """``--out corp/out`` is fine for ``corp/*.jsonl``; a later ``corp/*`` walked it and failed on its manifest as a
    JSON-lines file. It is named as what it is."""
    write_slimpajama(tmp_path / "corp" / "a.jsonl", GOOD)
    scan(str(tmp_path / "corp" / "*.jsonl"), out=str(tmp_path / "corp" / "out"), progress=False)
    for dataset in ("corp/*", "corp"):
        with pytest.raises(FreqlabError, match=r"corp/out: the output folder of a freqlab scan \(lengths\.parquet"):
            scan(str(tmp_path / dataset), progress=False)


def test_a_folder_with_a_manifest_of_its_own_is_data_not_a_scans_output(tmp_path):
    """Only freqlab's manifest (the fingerprint and its hash) marks a scan's output folder."""
    write_slimpajama(tmp_path / "corp" / "a.jsonl", GOOD)
    (tmp_path / "corp" / "checkpoints").mkdir()
    (tmp_path / "corp" / "checkpoints" / "manifest.json").write_text('{"fingerprint": {"a": 1}, "hash": "abc"}')
    with pytest.raises(FreqlabError, match=r"checkpoints/manifest\.json:1: missing-text-field"):  # read as data
        scan(str(tmp_path / "corp"), progress=False)


def test_a_window_or_regime_given_twice_is_reported_once(bad_dir):
    result = scan(str(bad_dir), L=[4096, 4096, 2048], regimes=["natural", "natural"], on_error="skip", progress=False)
    assert [(w["L"], w["regime"]) for w in result.summary["windows"]] == [(4096, "natural"), (2048, "natural")]


def test_a_working_folder_with_glob_characters_is_no_pattern(tmp_path, monkeypatch):
    folder = tmp_path / "w[x]"
    write_slimpajama(folder / "data" / "a.jsonl", GOOD)
    monkeypatch.chdir(folder)
    with pytest.raises(FreqlabError, match=r"the output folder data/o is inside the corpus \(.*w\[\[\]x\]/data/\*\)"):
        scan("data/*", out="data/o", progress=False)


# Tokenized data: a row that is no document (a null token list, a null id in its list, a null or negative length)
# stops the scan naming its row, or with on_error="skip" is counted by reason, as a bad text record is.
TOKEN_ROWS = [[1, 2, 3], None, [4, 5], [6, None], [7], None, []]  # rows 2 and 6 null, row 4 a null id
TOKEN_SOURCES = ["a", "a", "a", "b", "b", "a", "b"]


@pytest.fixture
def token_rows(tmp_path):
    path = tmp_path / "tokens.parquet"
    pq.write_table(pa.table({"input_ids": TOKEN_ROWS, "src": TOKEN_SOURCES}), path, row_group_size=3)
    return path


@pytest.mark.parametrize("workers", [1, 2])
def test_a_bad_row_of_tokenized_data_stops_the_scan_naming_its_row(token_rows, workers):
    # with the hint a text's bad record gives (a review: a token column's gave none)
    message = r"tokens\.parquet:row 2: null-token-list \(its token list is null\); --on-error skip counts such records"
    with pytest.raises(FreqlabError, match=message + " as skipped$"):
        scan(str(token_rows), progress=False, workers=workers)


@pytest.mark.parametrize("workers", [1, 2])
def test_skipped_rows_of_tokenized_data_are_counted_by_reason(token_rows, workers):
    result = scan(str(token_rows), progress=False, workers=workers, on_error="skip", source_field="src")
    docs = result.summary["documents"]
    assert docs["skipped"] == {"null-token-list": 2, "null-token-id": 1}
    assert (docs["read"], docs["tokenized"], docs["empty"]) == (7, 3, 1)
    assert result.histogram.lengths.tolist() == [1, 2, 3] and result.histogram.counts.tolist() == [1, 1, 1]
    assert {s: h.documents for s, h in result.histogram.sources.items()} == {"a": 2, "b": 1}  # rows 1, 3 and 5


def test_a_limit_before_a_bad_row_of_tokenized_data_does_not_raise(token_rows):
    result = scan(str(token_rows), progress=False, workers=1, max_docs=1)
    assert result.summary["documents"]["read"] == 1 and result.histogram.lengths.tolist() == [3]


def test_a_bad_row_is_never_sampled_out_and_every_row_is_accounted_for(tmp_path):
    """A review: a bad row (or record) not drawn by --sample-rate was "left out by sampling", even with on_error
    raise: the sample's verdict on bad input is now the whole scan's."""
    path = tmp_path / "lengths.parquet"
    values = [None if k % 7 == 3 else k % 50 for k in range(2_000)]  # a null length every 7 rows
    pq.write_table(pa.table({"n": pa.array(values, pa.int64())}), path)
    with pytest.raises(FreqlabError, match=r"lengths\.parquet.*: null-length"):
        scan(str(path), progress=False, workers=1, length_field="n", sample_rate=0.01, seed=1)
    skipped = scan(str(path), progress=False, workers=1, length_field="n", on_error="skip", sample_rate=0.3, seed=1)
    docs = skipped.summary["documents"]
    kept_nulls = docs["skipped"]["null-length"]
    assert kept_nulls == values.count(None)
    assert docs["read"] + docs["sampled_out"] == len(values)
    assert docs["read"] == docs["tokenized"] + docs["empty"] + kept_nulls
    # the same rows sampled (the sample follows the file's name and each row's index), nulls written as -1
    (tmp_path / "negative").mkdir()
    clean = tmp_path / "negative" / "lengths.parquet"
    pq.write_table(pa.table({"n": pa.array([-1 if v is None else v for v in values], pa.int64())}), clean)
    again = scan(str(clean), progress=False, workers=1, length_field="n", on_error="skip", sample_rate=0.3, seed=1)
    assert again.summary["documents"]["skipped"] == {"negative-length": kept_nulls}
    assert again.histogram.counts.tolist() == skipped.histogram.counts.tolist()


def test_a_record_without_the_text_field_says_which_fields_there_are_and_the_option(tmp_path):
    # the Parquet reader names a file's columns; a JSON-lines record said only "missing-text-field"
    path = tmp_path / "nested.jsonl"
    path.write_text('{"doc": {"body": "hello there"}, "id": 1}\n', encoding="utf-8")
    hint = r"nested\.jsonl:1: missing-text-field \(no field 'text'; the file's first record has 'doc', 'id'; give "
    with pytest.raises(FreqlabError, match=hint + r"--text-field, a dotted path for a nested one\)$"):
        scan(str(path), progress=False, workers=1)
    assert scan(str(path), text_field="doc.body", progress=False, workers=1).histogram.documents == 1
    bom = tmp_path / "bom.jsonl"  # a byte-order mark alone on the first line: that line is blank (a review)
    bom.write_bytes(b'\xef\xbb\xbf\n{"content": "x"}\n')
    with pytest.raises(FreqlabError, match=r"bom\.jsonl:2: .*the file's first record has 'content'; give --text-field"):
        scan(str(bom), progress=False, workers=1)


def test_json_lines_of_token_ids_are_pointed_at_the_token_column_reader(tmp_path):
    """A review: a .jsonl of input_ids lists was sent to --text-field only; JSON lines of token ids are read as a
    column through datasets' json builder, which the hint names with the field that holds them."""
    path = tmp_path / "ids.jsonl"
    path.write_text('{"id": 7, "ids": [5, 6, 2]}\n{"id": 8, "ids": [9, 2]}\n', encoding="utf-8")
    hint = r"'ids' holds token ids: --dataset json --data-files FILE --tokens-field ids counts their lists; or give"
    with pytest.raises(FreqlabError, match=hint):
        scan(str(path), progress=False, workers=1)
    counted = scan("json", data_files=[str(path)], tokens_field="ids", progress=False, workers=1).histogram
    assert dict(zip(counted.lengths.tolist(), counted.counts.tolist(), strict=True)) == {2: 1, 3: 1}


def test_a_later_record_without_the_text_field_is_not_blamed_on_the_field_name(tmp_path):
    """The first record has the field: the hint must not send the user to --text-field."""
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"text": "hello"}\n{"body": "there"}\n', encoding="utf-8")
    hint = r"mixed\.jsonl:2: missing-text-field \(no field 'text' in this record, though the file's first record has"
    with pytest.raises(FreqlabError, match=hint + r" it; --on-error skip counts such records as skipped\)$"):
        scan(str(path), progress=False, workers=1)
    skipped = scan(str(path), progress=False, workers=1, on_error="skip").summary["documents"]
    assert (skipped["tokenized"], skipped["skipped"]) == (1, {"missing-text-field": 1})


def test_a_bad_record_in_a_later_part_stops_the_scan_without_reading_the_rest_of_the_corpus(tmp_path, monkeypatch):
    """A review: the ledger holds a bad record until its file's earlier parts are in; parts go out largest first, so
    a small part 0 went out last and the error waited for all 32 shards. Once a bad record is held, only that file's
    earlier parts go out (what was in flight then still arrives)."""
    import json

    import zstandard

    import freqlab.scan.driver as driver
    from freqlab.corpus import open_corpus, ranges
    from freqlab.scan.ledger import Ledger

    monkeypatch.setattr(ranges, "MIN_RANGE_BYTES", 20_000)
    lines = [json.dumps({"text": f"document {k} " + f"w{k} " * (k % 37 + 40)}) for k in range(1200)]
    lines[500] = '{"text": broken'
    small, big = "".join(f"{line}\n" for line in lines[:20]), "".join(f"{line}\n" for line in lines[20:])
    frames = b"".join(zstandard.compress(part.encode()) for part in (small[:400], small[400:], big))
    (tmp_path / "a.jsonl.zst").write_bytes(frames)
    for k in range(30):
        (tmp_path / f"o{k:02d}.jsonl").write_text("".join(f"{line}\n" for line in lines[:60]))
    parts = [shard for shard in open_corpus(str(tmp_path)).shards if shard.part_of().endswith("a.jsonl.zst")]
    assert len(parts) >= 2 and parts[0].work() < parts[-1].work()  # part 0 small: it goes out last
    held, sent_while_held = [], []
    real_add, real_task = Ledger.add, driver.Task

    def add(self, index, part, resumed=False):
        held.extend([index] if part.error is not None else [])
        return real_add(self, index, part, resumed)

    def task(index, shard, options):
        if held:
            sent_while_held.append(shard.id)
        return real_task(index, shard, options)

    monkeypatch.setattr(Ledger, "add", add)
    monkeypatch.setattr(driver, "Task", task)
    with pytest.raises(FreqlabError, match=r"a\.jsonl\.zst:501: malformed-json"):
        scan(str(tmp_path), progress=False, workers=2)
    assert held and set(sent_while_held) <= {parts[0].id}  # no other file once the error was known


def test_a_bad_record_not_drawn_by_sampling_is_an_error_or_a_skip_as_in_the_whole_scan(tmp_path):
    """A review: malformed, invalid UTF-8 and null-text lines not drawn by --sample-rate 0.1 were counted as left
    out by sampling, exit 0."""
    lines = [json.dumps({"text": f"doc {k}"}).encode() for k in range(100)]
    lines[1], lines[2], lines[3] = b'{"text": "cut', b"\xff\xfe junk", b'{"text": null}'
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(FreqlabError, match=r"s\.jsonl:2: malformed-json"):
        scan(str(path), progress=False, workers=1, sample_rate=0.1, seed=0)
    sampled = scan(str(path), progress=False, workers=1, sample_rate=0.1, seed=0, on_error="skip")
    docs = sampled.summary["documents"]
    assert sum(docs["skipped"].values()) == 3 and docs["read"] == docs["tokenized"] + docs["empty"] + 3
    assert docs["read"] + docs["sampled_out"] == 100 and 0 < docs["tokenized"] < 97
    # the corpus size extrapolates from the good records drawn (all 3 bad ones are read: a review saw 5% bad lines
    # halve the estimate), tokens · 97 / (tokenized + empty), rounded to nearest
    drawn = docs["tokenized"] + docs["empty"]
    budget = sampled.summary["budget"]
    assert budget["corpus_tokens"] == (2 * sampled.histogram.tokens * 97 + drawn) // (2 * drawn)
