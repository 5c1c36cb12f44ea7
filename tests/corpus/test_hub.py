"""Streaming through HF ``datasets`` (tested offline on local files), and the fast one-line offline-Hub error."""

from __future__ import annotations

import http.server
import os
import pickle
import socket
import threading
import time

import pytest
from corpus_helpers import expected, read_all, write_bytes, write_jsonl, write_parquet

from freqlab.corpus import ReadOptions, hub, open_corpus
from freqlab.errors import FreqlabError

SOURCE = "meta.redpajama_set_name"


def _fails_fast(call, seconds: float = 5.0) -> str:
    start = time.perf_counter()
    with pytest.raises(FreqlabError) as caught:
        call()
    elapsed = time.perf_counter() - start
    message = str(caught.value)
    assert elapsed < seconds, f"took {elapsed:.1f} s"
    assert "\n" not in message
    return message


@pytest.fixture
def no_offline_switch(monkeypatch):
    """The offline switches off, in the environment and where huggingface_hub and datasets read them once, at import:
    a suite run with HF_HUB_OFFLINE=1 (an air-gapped machine's usual setting) reached no test server otherwise."""
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setattr(datasets.config, name, False)


def test_offline_switch_fails_at_once_naming_the_dataset(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    message = _fails_fast(lambda: open_corpus("slimpajama"), seconds=1.0)
    assert message == (
        "cerebras/SlimPajama-627B: Hugging Face Hub access is off (HF_HUB_OFFLINE=1); "
        "to scan local copies of its files use --dataset slimpajama --data-files 'PATH/OR/GLOB'"
    )
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    message = _fails_fast(lambda: open_corpus("someone/some-corpus"), seconds=1.0)
    assert message.startswith("someone/some-corpus: Hugging Face Hub access is off (HF_DATASETS_OFFLINE=1)")
    assert "--data-files" in message


def test_a_name_no_dataset_can_have_and_hub_data_files_are_said_so_not_blamed_on_the_network(monkeypatch):
    """A review: 'data:text/plain,abc' was "cannot reach the Hugging Face Hub (network error: HFValidationError...)",
    and a Hub id with --data-files offline was told to use --data-files."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    message = _fails_fast(lambda: open_corpus("data:text/plain,abc"), seconds=1.0)
    assert message.startswith("data:text/plain,abc: no local file or folder, preset or Hugging Face dataset id (Repo")
    message = _fails_fast(lambda: open_corpus("someone/some-corpus", data_files=["srv/a.jsonl"]), seconds=1.0)
    assert message.endswith(
        "beside a Hub dataset id, --data-files name files inside its repository: to scan local files, give them as "
        "--dataset PATH (or --dataset json/parquet --data-files 'PATH/OR/GLOB')"
    )


@pytest.fixture
def silent_endpoint(monkeypatch, no_offline_switch):
    """An HTTP endpoint that accepts connections and never answers (a hung proxy, a dead route)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
    yield
    server.close()


def test_unresponsive_hub_fails_within_seconds(silent_endpoint):
    message = _fails_fast(lambda: open_corpus("HuggingFaceFW/fineweb", config="sample-10BT"))
    assert message.startswith("HuggingFaceFW/fineweb: ")
    assert "Hugging Face Hub" in message
    assert message.endswith("use --dataset fineweb --data-files 'PATH/OR/GLOB'")


def test_refused_connection_fails_fast(monkeypatch, no_offline_switch):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    message = _fails_fast(lambda: open_corpus("someone/some-corpus"), seconds=3.0)
    assert message.startswith("someone/some-corpus: cannot reach the Hugging Face Hub (network error: ")
    assert message.endswith("use --data-files 'PATH/OR/GLOB' (with --text-field if not 'text')")


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(404)
        self.send_header("X-Error-Code", "RepoNotFound")
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": "Repository not found"}')

    def log_message(self, *args):
        pass


def test_unknown_hub_dataset(monkeypatch, no_offline_switch):
    server = http.server.HTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        message = _fails_fast(lambda: open_corpus("someone/no-such-corpus"))
    finally:
        server.shutdown()
    assert message.startswith("someone/no-such-corpus: no such dataset on the Hugging Face Hub")


def _split_files(tmp_path, records, suffix=".jsonl"):
    thirds = [records[:9], records[9:18], records[18:]]
    return [str(write_jsonl(tmp_path / f"part-{i}{suffix}", part)) for i, part in enumerate(thirds)]


def test_datasets_streaming_of_local_json_lines_equals_the_native_reader(tmp_path, records):
    files = _split_files(tmp_path, records)
    native = open_corpus("slimpajama", data_files=files)
    streamed = open_corpus("json", data_files=files, source_field=SOURCE)
    assert streamed.description["streamed_with"] == "datasets"
    assert len(streamed.shards) == 3  # one per file
    assert read_all(streamed) == read_all(native) == expected(records)
    where = [d.where for d in streamed.shards[1].read()]
    assert where[:2] == [f"{files[1]}:record 1", f"{files[1]}:record 2"]  # one file per shard: named


def test_datasets_streaming_of_compressed_json_lines_and_parquet(tmp_path, records):
    zst = _split_files(tmp_path, records, ".jsonl.zst")
    assert read_all(open_corpus("json", data_files=zst, source_field=SOURCE)) == expected(records)
    parquet = str(write_parquet(tmp_path / "p.parquet", records, meta_as_json_string=True))
    assert read_all(open_corpus("parquet", data_files=parquet, source_field=SOURCE)) == expected(records)


def test_stream_shards_cover_every_record_once(tmp_path, records, monkeypatch):
    monkeypatch.setattr(hub, "MAX_SHARDS", 2)  # 3 files in 2 contiguous groups
    corpus = open_corpus("json", data_files=_split_files(tmp_path, records), source_field=SOURCE)
    assert [s.id for s in corpus.shards] == ["json:train:000-of-002", "json:train:001-of-002"]
    assert [len(list(s.read())) for s in corpus.shards] == [18, len(records) - 18]
    assert read_all(corpus) == expected(records)


def test_stream_shards_pickle_and_rebuild_their_stream(tmp_path, records):
    corpus = open_corpus("json", data_files=_split_files(tmp_path, records), source_field=SOURCE)
    shard = corpus.shards[2]
    blob = pickle.dumps(shard)
    assert len(blob) < 2000
    hub._stream.cache_clear()  # as in a fresh worker process
    assert list(pickle.loads(blob).read()) == list(shard.read())


def test_builder_needs_existing_local_files(tmp_path):
    with pytest.raises(FreqlabError, match="the 'json' builder reads local files: pass them with --data-files"):
        open_corpus("json")
    with pytest.raises(FreqlabError, match=r"gone\.jsonl: no such file or directory"):
        open_corpus("json", data_files=str(tmp_path / "gone.jsonl"))
    with pytest.raises(FreqlabError, match=r"\*\.jsonl: no files match this pattern"):
        open_corpus("json", data_files=str(tmp_path / "*.jsonl"))


def test_an_eos_id_for_a_streamed_dataset_is_refused_before_any_request(tmp_path, records):
    """A review: --eos-id with --dataset json --data-files (or a Hub id) was recorded and checked nothing; it is
    refused as it is for local text and Parquet files, before the Hub is asked anything."""
    data = str(write_jsonl(tmp_path / "a.jsonl", records[:3]))
    with pytest.raises(FreqlabError, match=r"^json: --eos-id 2 cuts token streams .* the datasets library .* drop it"):
        open_corpus("json", data_files=data, read=ReadOptions(eos_id=2))
    message = _fails_fast(lambda: open_corpus("someone/some-corpus", read=ReadOptions(eos_id=2)), seconds=1.0)
    assert message.startswith("someone/some-corpus: --eos-id 2 cuts token streams")
    assert len(list(open_corpus("json", data_files=data).shards[0].read())) == 3


def test_a_file_datasets_cannot_parse_is_an_unreadable_file_naming_it(tmp_path, records):
    from freqlab.corpus.base import UnreadableFile

    good = write_jsonl(tmp_path / "a.jsonl", records[:3])
    bad = write_bytes(tmp_path / "b.jsonl", b'{"text": "fine"}\n{"text": broken\n')
    corpus = open_corpus("json", data_files=[str(good), str(bad)])
    assert len(list(corpus.shards[0].read())) == 3
    # the builder numbers records in its block ("record 1" for the second line): the line is found and named
    with pytest.raises(UnreadableFile, match=f"^{bad}:2: cannot read \\(") as caught:
        list(corpus.shards[1].read())
    assert caught.value.path == str(bad)  # so a scan can skip it (--on-error skip) like any unreadable file


def test_strings_datasets_turns_into_numbers_are_skipped_saying_why(tmp_path):
    """datasets' json builder reads a column mixing numbers and strings with pandas, which makes "12" a number and
    "true" a boolean (an adversary's review): freqlab cannot undo that, and says so where it counts them, in the
    report and in the error, pointing to the native reader, which reads them as written."""
    from freqlab.scan import scan

    path = write_bytes(tmp_path / "m.jsonl", b'{"text":"007 x"}\n{"text":"12"}\n{"text":5}\n{"text":"true"}\n')
    skipped = scan("json", data_files=str(path), on_error="skip", progress=False, tokenizer="tekken")
    assert skipped.histogram.skipped == {"non-string-text": 3}  # datasets delivered 12, 5 and True
    assert f"non-string-text {hub.TYPE_GUESS_NOTE}" in skipped.report()
    native = scan(str(path), on_error="skip", progress=False, tokenizer="tekken")
    assert native.histogram.skipped == {"non-string-text": 1} and native.histogram.documents == 3
    assert "pandas" not in native.report()
    with pytest.raises(FreqlabError, match=r"m\.jsonl:record 2: non-string-text \(as datasets delivered"):
        scan("json", data_files=str(path), progress=False, tokenizer="tekken")


def test_hub_dataset_is_streamed_with_load_dataset(tmp_path, records, monkeypatch):
    """The Hub path calls load_dataset(id, config, split=..., streaming=True) after the probe (stubbed here:
    no network in the tests), and reads whatever stream it returns with the preset's field mapping."""
    import datasets

    files = _split_files(tmp_path, records)
    local_stream = datasets.load_dataset("json", data_files=files, split="train", streaming=True)
    calls = []

    def fake_load_dataset(path, name=None, **kwargs):
        calls.append((path, name, kwargs))
        return local_stream

    monkeypatch.setattr(hub, "probe_hub", lambda dataset, **_: calls.append(("probe", dataset)))
    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    hub._stream.cache_clear()
    try:
        corpus = open_corpus("slimpajama-6b", split="validation")
        assert read_all(corpus) == expected(records)
    finally:
        hub._stream.cache_clear()
    assert calls[0] == ("probe", "DKYoon/SlimPajama-6B")
    assert calls[1] == ("DKYoon/SlimPajama-6B", None, {"split": "validation", "data_files": None, "streaming": True})
    assert corpus.name == "DKYoon/SlimPajama-6B"
    assert corpus.description["kind"] == "preset"
    assert corpus.has_sources
    assert [s.id for s in corpus.shards] == [f"DKYoon/SlimPajama-6B:validation:{i:03d}-of-003" for i in range(3)]
    # checkpoints of a Hub stream record the revision the probe found: another revision is recounted on --resume
    monkeypatch.setattr(hub, "probe_hub", lambda dataset, **_: "0123abcd")
    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    hub._stream.cache_clear()
    try:
        pinned = open_corpus("slimpajama-6b", split="validation")
    finally:
        hub._stream.cache_clear()
    assert [s.identity() for s in pinned.shards] == [{"revision": "0123abcd"}] * 3


# ---- tokenized datasets streamed through datasets ------------------------------------------------------------


def _token_parquets(tmp_path) -> tuple[list[str], list[int], list[str]]:
    """Two Parquet files written by ``datasets`` (what ``map(tokenizer)`` + ``to_parquet`` leave): token lists of
    known lengths (an empty one too), a length column and a source column."""
    import datasets

    lengths = [3, 1, 0, 7, 2, 2, 5, 1]
    sources = ["web", "web", "code", "web", "code", "code", "web", "web"]
    files = []
    for k, rows in enumerate((slice(0, 5), slice(5, 8))):
        part = datasets.Dataset.from_dict(
            {
                "input_ids": [list(range(n)) for n in lengths[rows]],
                "n_tokens": lengths[rows],
                "src": sources[rows],
            }
        )
        files.append(str(tmp_path / f"tok-{k}.parquet"))
        part.to_parquet(files[-1])
    return files, lengths, sources


def _streamed_lengths(corpus) -> list[tuple[int, str | None]]:
    return [(int(n), batch.source) for shard in corpus.shards for batch in shard.read_lengths() for n in batch.lengths]


def test_a_streamed_token_column_gives_each_records_list_length_without_a_tokenizer(tmp_path):
    files, lengths, sources = _token_parquets(tmp_path)
    corpus = open_corpus("parquet", data_files=files, source_field="src")  # no text column, an input_ids one
    assert corpus.kind == "lengths" and corpus.description["tokens_field"] == "input_ids"
    assert _streamed_lengths(corpus) == list(zip(lengths, sources, strict=True))
    by_length = open_corpus("parquet", data_files=files, read=ReadOptions(length_field="n_tokens"))
    assert by_length.description["length_field"] == "n_tokens"
    assert _streamed_lengths(by_length) == [(n, None) for n in lengths]


def test_a_streamed_token_column_scans_like_the_same_files_read_natively(tmp_path):
    from freqlab.scan import scan

    files, lengths, _ = _token_parquets(tmp_path)
    streamed = scan("parquet", data_files=files, source_field="src", workers=1, progress=False)
    native = scan(data_files=files, source_field="src", workers=1, progress=False)
    assert streamed.summary["tokenizer"] is None
    for result in (streamed, native):
        h = result.histogram
        assert dict(zip(h.lengths.tolist(), h.counts.tolist(), strict=True)) == {1: 2, 2: 2, 3: 1, 5: 1, 7: 1}
        assert h.empty_documents == 1 and h.tokens == sum(lengths)
        assert sorted(h.sources) == ["code", "web"]
    assert streamed.histogram.sources["code"].tokens == native.histogram.sources["code"].tokens == 4


def test_a_streamed_token_column_that_holds_no_lists_is_one_line(tmp_path):
    files, _, _ = _token_parquets(tmp_path)
    corpus = open_corpus("parquet", data_files=files, read=ReadOptions(tokens_field="src"))
    with pytest.raises(FreqlabError, match=r"the token column holds string, not lists of token ids"):
        _streamed_lengths(corpus)


def test_a_failed_streamed_scan_prints_one_line_and_no_warning_from_its_workers(tmp_path):
    """Workers stopped at the end of a failed scan leave nothing behind (tqdm, which datasets uses, would make a
    multiprocessing semaphore, and the resource tracker would print a warning about it)."""
    import subprocess
    import sys

    bad = write_bytes(tmp_path / "b.jsonl", b'{"text": "fine"}\n{"text": broken\n')
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "freqlab",
            "scan",
            "--dataset",
            "json",
            "--data-files",
            str(bad),
            "-q",
            "--workers",
            "2",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1
    assert run.stderr.startswith(f"Error: {bad}:2: cannot read (") and run.stderr.count("\n") == 1


def test_a_file_a_builder_reaches_twice_is_read_once(tmp_path):
    """A review: `--dataset json --data-files 'js/*.jsonl'` with a link beside its target read 800 documents where
    `--dataset js` reads 600: a file reached through a symlink or a hard link is read once, as local paths do."""
    folder = tmp_path / "js"
    folder.mkdir()
    (folder / "a.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n')
    (folder / "link.jsonl").symlink_to("a.jsonl")
    os.link(folder / "a.jsonl", folder / "hard.jsonl")
    assert hub.expand_data_files([str(folder / "*.jsonl")]) == [str(folder / "a.jsonl")]
    assert len(read_all(open_corpus("json", data_files=str(folder / "*.jsonl")))) == 2


def test_a_builder_folder_follows_folder_links_once_and_passes_over_dangling_ones(tmp_path):
    """A review: a linked subfolder was skipped (1 document read where the folder scan reads 601), and a dangling
    link in the folder stopped the scan where a glob passes it over."""
    real, sub = tmp_path / "real", tmp_path / "sub"
    real.mkdir()
    sub.mkdir()
    (real / "a.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n')
    (sub / "own.jsonl").write_text('{"text": "three"}\n')
    (sub / "link_to_real").symlink_to(real)
    (sub / "loop").symlink_to(sub)  # a link back up the tree: walked once
    (sub / "broken.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    files = hub.expand_data_files([str(sub)])
    assert sorted(os.path.basename(f) for f in files) == ["a.jsonl", "own.jsonl"]
    assert len(read_all(open_corpus("json", data_files=str(sub)))) == 3


def test_a_first_data_file_datasets_cannot_read_is_named(tmp_path):
    """A review: an empty first --data-files file was "json: cannot open with datasets (StopIteration); check
    --data-files", naming no file (datasets reads the first to learn the columns)."""
    empty = tmp_path / "e.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(FreqlabError, match=rf"datasets reads the first of --data-files \({empty}\) to learn the"):
        read_all(open_corpus("json", data_files=[str(empty)]))
