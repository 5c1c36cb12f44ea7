"""Remote data through fsspec, offline: a local HTTP server in a thread and fsspec's in-memory file system.

Every remote read must give what the same files give on a local disk; a dead or silent server, a missing file, a
missing extra and an offline Hub are one-line errors naming the URL, within seconds.
"""

from __future__ import annotations

import functools
import http.server
import io
import os
import re
import socket
import threading
import time

import fsspec
import pytest
from corpus_helpers import expected, read_all, write_jsonl, write_parquet

from freqlab.corpus import open_corpus
from freqlab.corpus.jsonl import JSONL
from freqlab.corpus.remote_files import is_url, protocol_of
from freqlab.errors import FreqlabError
from freqlab.scan import scan


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Python's file server plus byte ranges and an ETag, as object stores and the Hub answer."""

    def log_message(self, *args) -> None:
        pass

    def end_headers(self) -> None:
        path = self.translate_path(self.path)
        if os.path.isfile(path):
            stat = os.stat(path)
            self.send_header("ETag", f'"{stat.st_size}-{stat.st_mtime_ns}"')
            self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    def send_head(self):
        path = self.translate_path(self.path)
        match = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        if match is None or not os.path.isfile(path):
            return super().send_head()
        size = os.path.getsize(path)
        start, end = int(match.group(1)), min(int(match.group(2) or size - 1), size - 1)
        with open(path, "rb") as handle:
            handle.seek(start)
            body = handle.read(end - start + 1)
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


@pytest.fixture
def served(tmp_path, records):
    """A folder of JSON lines (plain, .gz, .zst), Parquet and .txt files behind http://127.0.0.1:PORT/data/."""
    root = tmp_path / "www"
    write_jsonl(root / "data" / "a.jsonl", records[:10])
    write_jsonl(root / "data" / "b.jsonl.gz", records[10:18])
    write_jsonl(root / "data" / "c.jsonl.zst", records[18:])
    write_parquet(root / "data" / "d.parquet", records)
    (root / "data" / "notes.md").write_text("not data")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(RangeHandler, directory=root))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()
    server.server_close()


def test_urls_are_not_hub_ids_or_paths():
    assert protocol_of("hf://datasets/cerebras/SlimPajama-627B") == "hf" and is_url("s3://bucket/key.jsonl")
    assert not is_url("cerebras/SlimPajama-627B") and not is_url("/data/x.jsonl") and not is_url("file:///x.jsonl")


def test_http_reads_what_the_local_files_hold(served, records):
    url, root = served
    remote = open_corpus(f"{url}/data/", source_field="meta.redpajama_set_name")
    local = open_corpus(str(root / "data"), source_field="meta.redpajama_set_name")
    assert [s.id for s in remote.shards] == [s.id for s in local.shards]  # ids relative to the folder, as locally
    assert remote.description["ignored_files"] == 1  # notes.md, as locally
    assert read_all(remote) == read_all(local) == expected(records) * 2
    assert all(shard.local_paths() == () for shard in remote.shards)  # a Ray node needs no local copy
    preset = open_corpus("slimpajama", data_files=[f"{url}/data/"])
    assert preset.name == "slimpajama (remote files)" and read_all(preset) == read_all(remote)


def test_byte_ranges_stream_and_seek_over_http(served, records):
    url, _ = served
    corpus = open_corpus(f"{url}/data/a.jsonl")
    file = corpus.shards[0].file
    parts = JSONL.shards([file], corpus.shards[0].fields, 1000)  # ranges of ~1000 bytes: each seeks to its start
    assert len(parts) > 3 and all(p.end is not None for p in parts[:-1])
    texts = [doc.text for part in parts for doc in part.read()]
    assert texts == [r["text"] for r in records[:10]]


def test_a_scan_over_http_equals_the_local_scan_and_resumes(served, tmp_path):
    url, root = served
    spec = f"{url}/data/*.jsonl*"
    remote = scan(spec, source_field="meta.redpajama_set_name", workers=2, out=tmp_path / "out", progress=False)
    local = scan(str(root / "data" / "*.jsonl*"), source_field="meta.redpajama_set_name", workers=1, progress=False)
    assert remote.histogram.lengths.tolist() == local.histogram.lengths.tolist()
    assert remote.histogram.counts.tolist() == local.histogram.counts.tolist()
    again = scan(
        spec, source_field="meta.redpajama_set_name", workers=1, out=tmp_path / "out", resume=True, progress=False
    )
    assert again.summary["scan"]["resumed_shards"] == 3 and again.histogram.tokens == remote.histogram.tokens
    # a file changed on the server (size and ETag): its checkpoint is not trusted
    write_jsonl(root / "data" / "a.jsonl", [{"text": "changed", "meta": {"redpajama_set_name": "x"}}])
    changed = scan(
        spec, source_field="meta.redpajama_set_name", workers=1, out=tmp_path / "out", resume=True, progress=False
    )
    assert changed.summary["scan"]["resumed_shards"] == 2


def test_memory_file_system_globs_and_folders(records):
    fs = fsspec.filesystem("memory")
    from corpus_helpers import jsonl_bytes

    fs.pipe("/corpus/train/part-0.jsonl", jsonl_bytes(records[:12]))
    fs.pipe("/corpus/train/part-1.jsonl", jsonl_bytes(records[12:]))
    fs.pipe("/corpus/train/.hidden/x.jsonl", jsonl_bytes(records[:1]))
    fs.pipe("/corpus/README.md", b"# readme")
    try:
        folder = open_corpus("memory://corpus", source_field="meta.redpajama_set_name")
        assert [s.id for s in folder.shards] == ["part-0.jsonl", "part-1.jsonl"]  # hidden entries skipped
        assert read_all(folder) == expected(records)
        glob = open_corpus("memory://corpus/train/*.jsonl", source_field="meta.redpajama_set_name")
        assert read_all(glob) == expected(records)
        result = scan("memory://corpus/train/*.jsonl", workers=1, progress=False)  # memory: one process
        assert result.summary["documents"]["read"] == len(records)
        with pytest.raises(FreqlabError, match=r"^memory://corpus/none/\*\.jsonl: no files match this pattern$"):
            open_corpus("memory://corpus/none/*.jsonl")
    finally:
        fs.rm("/corpus", recursive=True)


def one_line(call) -> tuple[str, float]:
    start = time.monotonic()
    with pytest.raises(FreqlabError) as error:
        call()
    message = str(error.value)
    assert "\n" not in message
    return message, time.monotonic() - start


def test_offline_errors_name_the_url_within_seconds(served, monkeypatch):
    url, _ = served
    message, _ = one_line(lambda: open_corpus(f"{url}/data/missing.jsonl"))
    assert message == f"{url}/data/missing.jsonl: no such file or directory"
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    message, seconds = one_line(lambda: open_corpus(f"http://127.0.0.1:{dead}/data/a.jsonl"))
    assert message.startswith(f"http://127.0.0.1:{dead}/data/a.jsonl: cannot reach") and seconds < 5
    assert message.endswith("check the network, or copy the files and scan the local path")
    # a server that accepts and never answers: the deadline, not a hang
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    monkeypatch.setenv("FREQLAB_REMOTE_TIMEOUT", "0.5")
    try:
        port = silent.getsockname()[1]
        message, seconds = one_line(lambda: open_corpus(f"http://127.0.0.1:{port}/data/*.jsonl"))
        # freqlab's deadline, or on a loaded machine the HTTP client's own timeout first: one line either way
        said = ("no listing within 0.5 s", "cannot reach (FSTimeoutError)")
        assert message.startswith(tuple(f"http://127.0.0.1:{port}/data/*.jsonl: {s}" for s in said)) and seconds < 5
    finally:
        silent.close()


@pytest.mark.parametrize("value", ["inf", "1e12", "abc", "0"])
def test_a_deadline_that_is_none_is_refused_naming_the_setting_alone(monkeypatch, value):
    """A review: inf overflowed a thread's join (a traceback), and 'abc' was said as "FreqlabError: ..." after the
    URL, as if the URL were wrong."""
    monkeypatch.setenv("FREQLAB_REMOTE_TIMEOUT", value)
    message, _ = one_line(lambda: open_corpus("http://127.0.0.1:9/a.jsonl"))
    assert message == f"FREQLAB_REMOTE_TIMEOUT={value!r}: expected a positive number of seconds, at most 86,400"


def test_a_file_system_that_connects_when_made_names_the_url(monkeypatch):
    """A review: ftp:// and github:// connect when fsspec makes them; their failure was a bare socket error."""
    import fsspec.core

    def refuse(url, **options):
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(fsspec.core, "url_to_fs", refuse)
    message, _ = one_line(lambda: open_corpus("ftp://127.0.0.1:9/a.jsonl"))
    assert message == (
        "ftp://127.0.0.1:9/a.jsonl: cannot reach (ConnectionRefusedError: [Errno 111] Connection refused); check "
        "the network"
    )


def test_hub_urls_offline_and_missing_extras(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    url = "hf://datasets/cerebras/SlimPajama-627B/train/chunk1/*.jsonl.zst"
    message, seconds = one_line(lambda: open_corpus(url))
    assert message == f"{url}: Hugging Face Hub access is off (HF_HUB_OFFLINE=1)" and seconds < 2
    import fsspec.core

    def no_backend(url, **options):
        raise ImportError("Install s3fs to access S3")

    monkeypatch.setattr(fsspec.core, "url_to_fs", no_backend)
    message, _ = one_line(lambda: open_corpus("s3://bucket/corpus/*.jsonl.zst"))
    assert message.startswith("s3://bucket/corpus/*.jsonl.zst: reading s3:// needs pip install 'freqlab[remote]'")


def test_memory_mapped_formats_must_be_local():
    fs = fsspec.filesystem("memory")
    fs.pipe("/tok/corpus_text_document.idx", b"MMIDIDX\x00\x00")
    try:
        message, _ = one_line(lambda: open_corpus("memory://tok/corpus_text_document.idx"))
        assert "read through memory maps: copy them to a local disk" in message
    finally:
        fs.rm("/tok", recursive=True)


def test_scan_cli_names_the_url(monkeypatch):
    from click.testing import CliRunner

    from freqlab.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = CliRunner().invoke(main, ["scan", "--dataset", "hf://datasets/org/name/data/*.parquet", "-q"])
    assert result.exit_code in (1, 2) and result.output.count("\n") == 1
    assert "hf://datasets/org/name/data/*.parquet: Hugging Face Hub access is off" in result.output


def test_a_dictionary_column_over_a_server_without_ranges_is_read(tmp_path, records):
    """An adversary's review: a local file's dictionary column is read as one by opening it again with its footer,
    which reads by ranges; a remote file kept that second open and a server without ranges lost it (unreadable)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = [r["text"] for r in records[:20]]
    column = pa.array(texts).dictionary_encode()
    pq.write_table(pa.table({"text": column}), tmp_path / "dict.parquet")
    quiet = type("Quiet", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *args: None})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(quiet, directory=tmp_path))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        corpus = open_corpus(f"http://127.0.0.1:{server.server_address[1]}/dict.parquet")
        assert [(d.text, d.error) for d in corpus.documents()] == [(text, None) for text in texts]
    finally:
        server.shutdown()
        server.server_close()
