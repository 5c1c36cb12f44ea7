"""Remote servers that misbehave, on loopback: each case is one line within seconds, or the exact histogram.

A file whose content and ETag change while it is read is refused (every ranged GET carries ``If-Match``; a 412, or
another ETag after the read, means "changed"); 5xx answers are retried a bounded number of times; a body that
drips in or stops short of its Content-Length times out (``FREQLAB_REMOTE_TIMEOUT`` bounds every request); an index
page with many links is listed with one request per file at most.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import pytest
from click.testing import CliRunner

from freqlab.cli import main
from freqlab.corpus import remote_files
from freqlab.errors import FreqlabError
from freqlab.scan import scan

TEXTS = [f"document number {k} " + "word " * (k % 17) for k in range(60)]


def jsonl(texts) -> bytes:
    return b"".join(json.dumps({"text": t}).encode() + b"\n" for t in texts)


@dataclass
class Site:
    """What the server serves and how it misbehaves; ``requests`` logs (method, path, headers) of each request."""

    files: dict[str, bytes] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    requests: list = field(default_factory=list)
    on_get: object = None  # called with (site, path) before a GET is answered; may return a status to answer
    on_head: object = None  # the same for a HEAD
    honour_if_match: bool = True
    drip: float | None = None  # seconds between body bytes of a GET
    short_by: int = 0  # bytes a GET body stops short of its Content-Length (the connection kept open)
    index_delay: float = 0.0  # seconds before an index page is answered
    head_delay: float = 0.0  # seconds before a HEAD is answered

    def etag(self, path: str) -> str:
        return f'"v{self.versions.get(path, 0)}"'

    def change(self, path: str, data: bytes) -> None:
        self.files[path] = data
        self.versions[path] = self.versions.get(path, 0) + 1

    def gets(self) -> list:
        return [r for r in self.requests if r[0] == "GET" and r[1] in self.files]


def handler(site: Site):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive

        def log_message(self, *args) -> None:
            pass

        def do_HEAD(self) -> None:
            time.sleep(site.head_delay)
            self.answer(body=False)

        def do_GET(self) -> None:
            self.answer(body=True)

        def answer(self, body: bool) -> None:
            site.requests.append((self.command, self.path, dict(self.headers)))
            if self.path.endswith("/"):
                return self.index()
            if self.path not in site.files:
                return self.status(404)
            hook = site.on_get if body else site.on_head
            if hook is not None and (status := hook(site, self.path)):
                return self.status(status)
            data, etag = site.files[self.path], site.etag(self.path)
            wanted = self.headers.get("If-Match")
            if wanted is not None and wanted != etag and site.honour_if_match:
                return self.status(412)
            match = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
            start, end = (
                (int(match.group(1)), min(int(match.group(2) or len(data) - 1), len(data) - 1))
                if match
                else (0, len(data) - 1)
            )
            part = data[start : end + 1]
            self.send_response(206 if match else 200)
            self.send_header("ETag", etag)
            self.send_header("Accept-Ranges", "bytes")
            if match:
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            self.send_header("Content-Length", str(len(part)))
            self.end_headers()
            if not body:
                return None
            if site.drip is not None:
                for k in range(min(len(part), 200)):  # bounded: the client gives up long before
                    try:
                        self.wfile.write(part[k : k + 1])
                        self.wfile.flush()
                    except OSError:
                        return None
                    time.sleep(site.drip)
                return None
            self.wfile.write(part[: len(part) - site.short_by] if site.short_by else part)
            if site.short_by:
                time.sleep(3)  # the connection stays open: the client must time out, not wait for ever
            return None

        def index(self) -> None:
            time.sleep(site.index_delay)
            names = sorted(p.rsplit("/", 1)[1] for p in site.files if p.startswith(self.path))
            page = "".join(f'<a href="{n}">{n}</a>\n' for n in names).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(page)

        def status(self, code: int) -> None:
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 128  # many requests at once (a listing asks its files together)
    daemon_threads = True

    def handle_error(self, request, client_address):
        """Clients that give up (deadlines, retries) break pipes on purpose: socketserver would print each
        traceback to whatever sys.stderr is then, possibly a later test's captured output."""


@pytest.fixture
def site(monkeypatch):
    """A server on 127.0.0.1 serving ``Site.files``; short deadlines and backoff so each case takes seconds."""
    monkeypatch.setenv("FREQLAB_REMOTE_TIMEOUT", "0.5")
    monkeypatch.setattr(remote_files, "BACKOFF", 0.01)
    state = Site()
    server = Server(("127.0.0.1", 0), handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


def run(url: str, **options):
    return scan(url, L=[64], regimes=["natural"], progress=False, workers=1, **options)


def local_histogram(tmp_path, texts):
    path = tmp_path / "same.jsonl"
    path.write_bytes(jsonl(texts))
    return run(str(path)).histogram


def test_every_ranged_get_carries_if_match_and_reads_the_exact_file(site, tmp_path):
    site.files["/d/a.jsonl"] = jsonl(TEXTS)
    result = run(f"{site.url}/d/a.jsonl")
    expected = local_histogram(tmp_path, TEXTS)
    assert result.histogram.counts.tolist() == expected.counts.tolist()
    assert result.histogram.lengths.tolist() == expected.lengths.tolist()
    gets = site.gets()
    assert gets and all(headers.get("If-Match") == '"v0"' and "Range" in headers for _, _, headers in gets)


def changes_on_first_get():
    """A server's ``on_get``: the file changes after the reader's check, before its first ranged GET is answered
    (same size, other content, new ETag)."""
    done = []

    def change(site: Site, path: str):
        if not done:
            done.append(site.change(path, jsonl(reversed(TEXTS))))

    return change


def test_content_and_etag_changing_before_the_ranged_get_is_refused(site):
    site.files["/d/a.jsonl"] = jsonl(TEXTS)
    site.on_get = changes_on_first_get()
    with pytest.raises(FreqlabError) as error:
        run(f"{site.url}/d/a.jsonl")
    assert str(error.value) == (
        f"{site.url}/d/a.jsonl changed while it was being read (version v0 -> v1); its counts would mix two "
        "versions: rescan it (a corpus from open_corpus: open it again)"
    )
    assert len(site.gets()) == 1  # answered 412 (If-Match "v0"): not one byte of v1 was read, nor retried


def test_a_server_ignoring_if_match_is_caught_by_the_check_after_the_read(site):
    site.files["/d/a.jsonl"] = jsonl(TEXTS)
    site.on_get = changes_on_first_get()
    site.honour_if_match = False
    with pytest.raises(FreqlabError, match=r"a\.jsonl changed while it was being read \(version v0 -> v1\)"):
        run(f"{site.url}/d/a.jsonl")
    site.on_get = changes_on_first_get()
    skipped = run(f"{site.url}/d/a.jsonl", on_error="skip")
    assert skipped.summary["documents"]["skipped"] == {"unreadable-file": 1}
    assert skipped.summary["documents"]["tokenized"] == 0


def test_a_500_on_get_is_one_line_after_bounded_retries(site):
    site.files["/d/a.jsonl"] = jsonl(TEXTS)
    site.on_get = lambda site, path: 500
    started = time.monotonic()
    with pytest.raises(FreqlabError) as error:
        run(f"{site.url}/d/a.jsonl")
    assert str(error.value) == (f"{site.url}/d/a.jsonl: cannot read (HTTP 500 Internal Server Error (tried 4 times))")
    assert len(site.gets()) == 1 + remote_files.RETRIES and time.monotonic() - started < 10
    skipped = run(f"{site.url}/d/a.jsonl", on_error="skip")
    assert skipped.summary["documents"]["skipped"] == {"unreadable-file": 1}
    assert skipped.summary["documents"]["unreadable_files"] == ["a.jsonl"]


def test_the_scan_command_says_a_500_in_one_line(site, tmp_path):
    site.files["/d/a.jsonl"] = jsonl(TEXTS)
    site.on_get = lambda site, path: 503
    result = CliRunner().invoke(
        main, ["scan", "--dataset", f"{site.url}/d/a.jsonl", "-q", "--workers", "1", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 1
    assert result.output == f"Error: {site.url}/d/a.jsonl: cannot read (HTTP 503 Service Unavailable (tried 4 times))\n"


def test_a_500_to_every_request_is_a_server_error_not_a_missing_file(site):
    """fsspec reports a file whose HEAD and GET both fail as FileNotFoundError: a 500 said 'no such file'."""
    site.files["/d/a.jsonl"] = jsonl(TEXTS)
    site.on_head = site.on_get = lambda site, path: 500
    with pytest.raises(FreqlabError) as error:
        run(f"{site.url}/d/a.jsonl")
    assert str(error.value) == (
        f"{site.url}/d/a.jsonl: cannot reach (HTTP 500 Internal Server Error); check the network, or copy the "
        "files and scan the local path"
    )
    with pytest.raises(FreqlabError, match=r"b\.jsonl: no such file or directory$"):  # a 404 still is missing
        run(f"{site.url}/d/b.jsonl")


def test_5xx_answers_that_pass_are_retried_and_the_result_is_exact(site, tmp_path):
    site.files["/d/a.jsonl"] = jsonl(TEXTS)
    failures = iter([502, 503])
    site.on_get = lambda site, path: next(failures, None)
    result = run(f"{site.url}/d/a.jsonl")
    assert result.histogram.counts.tolist() == local_histogram(tmp_path, TEXTS).counts.tolist()
    assert len(site.gets()) == 3


def test_a_body_that_drips_in_times_out(site, monkeypatch):
    monkeypatch.setenv("FREQLAB_REMOTE_TIMEOUT", "0.25")
    site.files["/d/a.jsonl"] = jsonl(TEXTS)
    site.drip = 0.1  # each byte within the socket deadline (0.25 s), the whole body never within 4 x 0.25 s
    started = time.monotonic()
    with pytest.raises(FreqlabError) as error:
        run(f"{site.url}/d/a.jsonl")
    assert str(error.value) == (
        f"{site.url}/d/a.jsonl: cannot read (no complete answer within 1 s (FREQLAB_REMOTE_TIMEOUT sets the "
        "deadline) (tried 4 times))"
    )
    assert time.monotonic() - started < 15


def test_a_body_short_of_its_content_length_on_a_kept_alive_connection_times_out(site):
    site.files["/d/a.jsonl"] = jsonl(TEXTS)
    site.short_by = 10
    started = time.monotonic()
    with pytest.raises(FreqlabError, match=r"a\.jsonl: cannot read \(.*\(tried 4 times\)\)$"):
        run(f"{site.url}/d/a.jsonl")
    assert time.monotonic() - started < 15


def test_an_index_page_with_many_links_is_listed_with_one_request_per_file(site, monkeypatch):
    monkeypatch.setenv("FREQLAB_REMOTE_TIMEOUT", "10")  # a HEAD slower than its deadline would be asked again
    for k in range(300):
        site.files[f"/d/f{k:03d}.jsonl"] = jsonl(TEXTS[k % 60 : k % 60 + 1])
    site.files["/d/notes.md"] = b"not data"
    from freqlab.corpus import open_corpus

    started = time.monotonic()
    corpus = open_corpus(f"{site.url}/d/")
    assert len(corpus.shards) == 300 and corpus.description["ignored_files"] == 1
    methods = [method for method, _, _ in site.requests]
    assert methods.count("GET") == 1 and methods.count("HEAD") == 300  # the index page, then each file's size
    assert time.monotonic() - started < 20  # measured 0.6 s (one HEAD after the other took 10 s for 200 files)


@pytest.mark.parametrize("phase", ["index page", "file sizes"])
def test_sigterm_during_a_remote_listing_is_one_line_and_exits_143(site, tmp_path, phase):
    for k in range(100):
        site.files[f"/d/f{k:03d}.jsonl"] = jsonl(TEXTS[:1])
    if phase == "index page":
        site.index_delay = 20  # the signal comes while the index page is awaited
    else:
        site.head_delay = 20  # ... while the files' HEADs are under way
    environment = {**os.environ, "FREQLAB_REMOTE_TIMEOUT": "60"}
    process = subprocess.Popen(
        [sys.executable, "-m", "freqlab", "scan", "--dataset", f"{site.url}/d/", "-q", "--out", str(tmp_path / "out")],
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    deadline = time.monotonic() + 60
    while not any(r[0] == "GET" for r in site.requests) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 143
    assert stderr.strip().startswith("interrupted") and stderr.strip().count("\n") == 0, stderr
