"""Remote data through fsspec: ``hf://``, ``s3://``, ``gs://``, ``http(s)://``, ``memory://``, read as local files.

A dataset or data-file spec with a protocol (``hf://datasets/cerebras/SlimPajama-627B/train/chunk1/*.jsonl.zst``,
``s3://bucket/corpus/``) is expanded on its file system: a glob in sorted order, a folder recursively (hidden entries
skipped), a file as it is; each file gets its registered format by name, exactly as a local file, and is cut into
shards the same way (byte ranges of JSON lines, row groups of Parquet). Readers open every file through
:func:`open_input`, so a shard streams its bytes in blocks instead of downloading the file first; a remote file's
identity is its size and its version (ETag, else modification time, when the file system gives one), so
checkpoints of a remote scan are trusted on ``--resume`` only while the files are unchanged.

=============  ===============================================  =============================================
protocol       file system                                      install
=============  ===============================================  =============================================
``hf://``      huggingface_hub's ``HfFileSystem``               core
``http(s)://`` fsspec's ``HTTPFileSystem`` (aiohttp)            core; globs need the server's index pages
``s3://``      s3fs                                             ``pip install 'freqlab[remote]'``
``gs://``      gcsfs                                            ``pip install 'freqlab[remote]'``
``memory://``  fsspec's in-memory file system                   core (tests)
=============  ===============================================  =============================================

Offline, every first request has a deadline (:data:`TIMEOUT` seconds, ``FREQLAB_REMOTE_TIMEOUT`` overrides it; run
in a thread, so a DNS lookup that hangs cannot hold the scan): the error is one line naming the URL. Over HTTP every
request, its body included, must end within 4 x that deadline; 5xx answers, timeouts and broken connections are
retried (:data:`RETRIES`); every ranged GET of a file whose strong ETag is known sends ``If-Match`` (412: changed).
``hf://`` fails at once with ``HF_HUB_OFFLINE=1``. Tokenized formats read through memory maps (Megatron,
datatrove, token streams) must be local.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any, BinaryIO

from freqlab.corpus.base import describe_error
from freqlab.corpus.file_discovery import DataFile, FileChanged, FoundFiles
from freqlab.corpus.registry import supported
from freqlab.errors import FreqlabError, ParameterError

TIMEOUT = 15.0
TIMEOUT_VARIABLE = "FREQLAB_REMOTE_TIMEOUT"
BLOCK_BYTES = 8 << 20  # bytes per request while streaming a remote file
RETRIES = 3  # a request that fails with a 5xx answer, a timeout or a broken connection is tried again this often
BACKOFF = 0.25  # seconds before the first retry, doubled before each next one
# URL -> (strong ETag, size) of the version a reader is reading in this process: every request for it
# carries If-Match, so a server whose file changed answers 412 instead of bytes of another version
_PINNED: dict[str, tuple[str, int]] = {}
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# protocol -> (module that implements it, what to install)
BACKENDS: dict[str, tuple[str, str]] = {
    "s3": ("s3fs", "pip install 'freqlab[remote]' (s3fs)"),
    "s3a": ("s3fs", "pip install 'freqlab[remote]' (s3fs)"),
    "gs": ("gcsfs", "pip install 'freqlab[remote]' (gcsfs)"),
    "gcs": ("gcsfs", "pip install 'freqlab[remote]' (gcsfs)"),
    "http": ("aiohttp", "pip install aiohttp"),
    "https": ("aiohttp", "pip install aiohttp"),
    "hf": ("huggingface_hub", "pip install huggingface_hub"),
}
LOCAL_ONLY_FORMATS = frozenset({"megatron", "datatrove", "token-stream"})

_TRUE = {"1", "ON", "YES", "TRUE"}


def offline_variable() -> str | None:
    """The name of the set offline switch (``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE``), if any."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(name, "").strip().upper() in _TRUE:
            return name
    return None


def protocol_of(spec: str) -> str | None:
    """``s3`` for ``s3://bucket/key``; None for a local path (``file://`` counts as local).

    >>> protocol_of("hf://datasets/org/name/train/*.parquet"), protocol_of("/data/x.jsonl"), protocol_of("C:/x")
    ('hf', None, None)
    """
    match = _URL.match(str(spec))
    if match is None or match.group(1).lower() in ("file", "local"):
        return None
    return match.group(1).lower()


def local_path(spec: str) -> str:
    """``spec`` as a local path: a ``file:`` URL (or ``local://``, fsspec's name) as the absolute path it names
    (RFC 8089: ``file:///path``, ``file://localhost/path``, ``file:/path``), anything else as it is. A URL naming
    another host, or no absolute path, is an error: read as a path, ``file://allenai/c4`` went to the Hub.

    >>> local_path("file:///data/a%20b.jsonl"), local_path("file://localhost/data/x"), local_path("file:/data/x")
    ('/data/a b.jsonl', '/data/x', '/data/x')
    >>> local_path("/data/x"), local_path("slimpajama")
    ('/data/x', 'slimpajama')
    """
    text = str(spec)
    scheme, _, rest = text.partition(":")
    scheme = scheme.lower()
    if scheme not in ("file", "local") or (scheme == "local" and not rest.startswith("//")):
        return spec
    if os.path.lexists(text):  # a file of that name (file:x.jsonl) is that file
        return spec
    # not urlsplit: a glob's ? (and a name's #) are the path's, as fsspec reads them
    host = ""
    if rest.startswith("//"):
        host, slash, path = rest[2:].partition("/")
        rest = slash + path
    if host.lower() not in ("", "localhost"):
        raise FreqlabError(
            f"{text}: a {scheme}: URL names a path on this machine, as {scheme}:///absolute/path (or "
            f"{scheme}://localhost/absolute/path); {host!r} after {scheme}:// is read as a host"
        )
    if not rest.startswith("/"):
        raise FreqlabError(f"{text}: a {scheme}: URL names an absolute path ({scheme}:///absolute/path); none is given")
    # percent-encoding decoded; a glob character, written or encoded, is then a wildcard, as in a path (escaped as
    # [?], a%3F.jsonl read a file named a[?].jsonl, and a datasets builder globs the paths it is given again)
    return urllib.parse.unquote(rest)


def is_url(spec: str) -> bool:
    """Whether ``spec`` names remote data (a URL with a protocol other than ``file://``)."""
    return protocol_of(spec) is not None


MAX_TIMEOUT = 86_400  # a day: longer is no deadline


def timeout() -> float:
    """The deadline of a first request: ``$FREQLAB_REMOTE_TIMEOUT``, else :data:`TIMEOUT`."""
    value = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not value:
        return TIMEOUT
    try:
        seconds = float(value)
        if not 0 < seconds <= MAX_TIMEOUT:  # inf: a thread's join overflowed (a review: a traceback)
            raise ValueError
    except ValueError:
        raise FreqlabError(
            f"{TIMEOUT_VARIABLE}={value!r}: expected a positive number of seconds, at most {MAX_TIMEOUT:,}"
        ) from None
    return seconds


def _storage_options(protocol: str) -> dict[str, Any]:
    """Options that keep a dead network or a slow server from hanging a request (each backend names them its
    own way): over HTTP each request, its body included, must be over within 4 x :func:`timeout` (a body that
    drips in never holds a reader longer).
    """
    seconds = timeout()
    if protocol in ("http", "https"):
        import aiohttp

        limits = aiohttp.ClientTimeout(total=4 * seconds, connect=seconds, sock_read=seconds)
        return {"client_kwargs": {"timeout": limits}}
    if protocol in ("s3", "s3a"):
        retries = {"max_attempts": 2}
        return {"config_kwargs": {"connect_timeout": seconds, "read_timeout": 4 * seconds, "retries": retries}}
    return {}


def filesystem(url: str):
    """``(fs, path)`` for a URL: the fsspec file system (cached per protocol and options) and the path on it."""
    import fsspec

    protocol = protocol_of(url)
    if protocol is None:
        raise FreqlabError(f"{url}: not a URL")
    module, install = BACKENDS.get(protocol, (None, ""))
    if protocol == "hf" and (variable := offline_variable()) is not None:
        raise FreqlabError(f"{url}: Hugging Face Hub access is off ({variable}=1)")
    try:
        return fsspec.core.url_to_fs(url, **_storage_options(protocol))
    except FreqlabError:  # the user's settings (FREQLAB_REMOTE_TIMEOUT), not the URL's: said alone
        raise
    except ImportError as exc:
        needed = f"{install}" if module else "the fsspec implementation of this protocol"
        raise FreqlabError(f"{url}: reading {protocol}:// needs {needed} ({describe_error(exc)})") from None
    except ValueError as exc:  # fsspec: unknown protocol
        raise FreqlabError(f"{url}: {describe_error(exc)}") from None
    except OSError as exc:  # a file system that connects when it is made (ftp, github): a review found no URL named
        raise FreqlabError(f"{url}: cannot reach ({describe_error(exc)}); check the network") from None


def within_deadline(url: str, call, what: str = "answer", seconds: float | None = None):
    """``call()``, or a one-line FreqlabError naming ``url`` when it fails or takes longer than ``seconds``
    (default :func:`timeout`).
    """
    seconds = timeout() if seconds is None else seconds
    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # reported below
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="freqlab-remote", daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        raise FreqlabError(f"{url}: no {what} within {seconds:g} s (offline? {TIMEOUT_VARIABLE} sets the deadline)")
    ok, value = outcome[0]
    if ok:
        return value
    if isinstance(value, FileNotFoundError):
        cause = _connection_error(value)
        if cause is None:
            raise FreqlabError(f"{url}: no such file or directory") from None
        value = cause
    if isinstance(value, FreqlabError):
        raise value
    why = _request_error(value) if isinstance(getattr(value, "status", None), int) else describe_error(value)
    raise FreqlabError(
        f"{url}: cannot reach ({why}); check the network, or copy the files and scan the local path"
    ) from None


def _connection_error(error: BaseException) -> BaseException | None:
    """The connection failure or server error behind a FileNotFoundError (fsspec's HTTP file system reports them
    as a missing file).
    """
    seen = error.__cause__ or error.__context__
    while seen is not None:
        if "Connect" in type(seen).__name__ or (isinstance(seen, OSError) and not isinstance(seen, FileNotFoundError)):
            return seen
        status = getattr(seen, "status", None)
        if isinstance(status, int) and status not in (404, 410):  # a server error (5xx), a refusal (401, 403)
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def open_input(path: str, buffering: int = -1) -> BinaryIO:
    """A binary stream of a local file or a URL: the one opener every reader uses.

    A remote file is read in blocks of :data:`BLOCK_BYTES` (ranged requests where the server supports them), so it is
    streamed and seekable without being downloaded first. Over HTTP every request of a file whose strong ETag is
    known carries ``If-Match`` (a 412 answer means the file changed:
    :class:`~freqlab.corpus.file_discovery.FileChanged`); a request failing with a 5xx answer, a timeout or a broken
    connection is tried again :data:`RETRIES` times (waits of :data:`BACKOFF` s, doubled each time); any failure is
    one OSError naming the cause.
    """
    if not is_url(path):
        return open(path, "rb", buffering=buffering)  # the caller closes it
    fs, inner = filesystem(path)
    options: dict[str, Any] = {}
    if path in _PINNED and protocol_of(path) in ("http", "https"):
        etag, size = _PINNED[path]
        options = {"headers": {"If-Match": etag}, "size": size or None}
    remote = _retried(lambda: fs.open(inner, "rb", block_size=BLOCK_BYTES, cache_type="readahead", **options))
    # a standard buffered stream (readline(limit), peek) over fsspec's file, whatever the file system
    return io.BufferedReader(_Guarded(remote), buffer_size=1 << 20 if buffering < 0 else max(buffering, 1))


class _Guarded(io.RawIOBase):
    """fsspec's file with every read retried and its errors made OSErrors (:func:`_retried`)."""

    def __init__(self, remote) -> None:
        self.remote = remote

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        data = _retried(lambda: self.remote.read(len(buffer)))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.remote.seek(offset, whence)

    def tell(self) -> int:
        return self.remote.tell()

    def close(self) -> None:
        if not self.closed:
            with contextlib.suppress(Exception):
                self.remote.close()
        super().close()


def _retried(call):
    """``call()``, tried again after a 5xx answer, a timeout or a broken connection (at most :data:`RETRIES`
    times); :class:`~freqlab.corpus.file_discovery.FileChanged` for a 412 (If-Match failed), else one-line OSErrors.
    """
    import time

    for attempt in range(RETRIES + 1):
        try:
            return call()
        except Exception as error:  # classified below
            exc = error
            if isinstance(error, FileNotFoundError):  # fsspec's HTTP info() says so of any failed HEAD and GET
                exc = error.__cause__
                if getattr(exc, "status", None) in (None, 404, 410):
                    raise error from None
            status = getattr(exc, "status", None)
            if status == 412:
                raise FileChanged("the server holds another version now: HTTP 412 to If-Match") from None
            if not _transient(exc) or attempt == RETRIES:
                tries = f" (tried {attempt + 1} times)" if attempt else ""
                raise OSError(f"{_request_error(exc)}{tries}") from None
            time.sleep(BACKOFF * 2**attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def _transient(exc: BaseException) -> bool:
    """A failure that may pass: a 5xx answer, a timeout, a broken connection or body."""
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return status >= 500
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"TimeoutError", "ClientConnectionError", "ClientPayloadError", "ConnectionError"})


def _request_error(exc: BaseException) -> str:
    """A failed request in a few words: ``HTTP 500 Internal Server Error``, ``no answer within 2 s``..."""
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return f"HTTP {status} {getattr(exc, 'message', '') or ''}".strip()
    if any(cls.__name__ == "TimeoutError" for cls in type(exc).__mro__):
        return f"no complete answer within {4 * timeout():g} s ({TIMEOUT_VARIABLE} sets the deadline)"
    return describe_error(exc)


@dataclass(frozen=True)
class RemoteFile(DataFile):
    """A remote data file: ``path`` is its URL; ``version`` its ETag (or modification time) when known."""

    version: str = ""
    etag: str = ""  # the strong ETag as the server sent it (quotes kept), for If-Match; "" when none

    @property
    def remote(self) -> bool:
        """Always True: the file is read through fsspec."""
        return True

    def identity(self) -> dict[str, Any]:
        """What identifies the file's content: its size and version (ETag, else modification time)."""
        return {"size": self.size, "version": self.version}

    def check_unchanged(self) -> None:
        """Raise :class:`~freqlab.corpus.file_discovery.FileChanged` when the file is gone or changed (size or version)
        since the corpus was opened; OSError when the server cannot say.
        """
        fs, inner = filesystem(self.path)
        try:
            info = _retried(lambda: fs.info(inner))
        except FileNotFoundError:
            raise FileChanged("the file is gone", self.path) from None
        except FileChanged as exc:
            raise FileChanged(str(exc), self.path) from None
        size, version = _size(info), _version(info)
        if size != self.size:
            raise FileChanged(f"size {self.size} -> {size} bytes", self.path)
        if self.version and version and version != self.version:
            raise FileChanged(f"version {self.version} -> {version}", self.path)
        if self.etag:  # what this process reads of it from now on must be this version
            _PINNED[self.path] = (self.etag, self.size)


def _size(info: dict) -> int:
    return int(info.get("size") or 0)


def _version(info: dict) -> str:
    """The file's version as the file system reports it: an ETag, a generation, else a modification time."""
    for key in ("ETag", "etag", "generation", "blob_id", "VersionId"):
        if info.get(key):
            return str(info[key]).strip('"')
    for key in ("LastModified", "mtime", "last_modified", "updated", "created"):
        value = info.get(key)
        if value:  # listings and info() of one file system may give a datetime or a number: one form for both
            if hasattr(value, "timestamp"):
                value = value.timestamp()
            with contextlib.suppress(TypeError, ValueError):
                value = repr(float(value))
            return f"{key}={value}"
    return ""


def _join(protocol: str, path: str) -> str:
    return path if protocol_of(path) else f"{protocol}://{path}"


def find_remote(specs: list[str], format_of, split: str = "train", config: str | None = None):
    """The data files of URLs (files, folders, globs): ``(found, files, root)`` as :func:`local_corpus` uses them,
    ``files`` being ``(RemoteFile, format name)`` pairs.
    """
    if not all(is_url(spec) for spec in specs):
        raise FreqlabError(f"{' '.join(specs)}: give either local paths or URLs, not both")
    found = FoundFiles()
    infos: dict[str, dict] = {}
    for spec in specs:
        fs, inner = filesystem(spec)
        protocol = protocol_of(spec)
        listed = within_deadline(spec, lambda fs=fs, inner=inner: _expand(fs, inner), "listing")
        unsized = [path for path, info in listed if info.get("size") is None and format_of(_join(protocol, path))]
        asked = _infos(fs, spec, unsized)  # a listing without sizes (an HTTP index page): ask the files, together
        for path, info in listed:
            url = _join(protocol, path)
            fmt = format_of(url)
            if fmt is None:
                if path == inner:  # named explicitly
                    raise FreqlabError(f"{spec}: unknown file format; supported: {supported()}")
                found.ignored.append(url)
                continue
            if fmt in LOCAL_ONLY_FORMATS:
                raise FreqlabError(f"{url}: {fmt} files are read through memory maps: copy them to a local disk")
            infos[url] = asked.get(path, info)
            found.add(url, fmt)
        if not found.files and not found.ignored:
            raise FreqlabError(f"{spec}: no files match this pattern" if _magic(inner) else f"{spec}: no such file")
    if not found.files:
        raise FreqlabError(f"{', '.join(specs)}: no data files found (supported: {supported()})")
    if config is not None:
        raise ParameterError(
            f"{' '.join(specs)}: --config {config!r} applies to Hugging Face datasets, not to files", "--config"
        )
    if split != "train":
        raise ParameterError(
            f"{' '.join(specs)}: --split {split!r} applies to Hugging Face datasets, not to files", "--split"
        )
    paths = [url for url, _ in found.files]
    root = os.path.commonpath([_URL.sub("", url).rsplit("/", 1)[0] for url in paths]) if paths else ""
    files = []
    for url, fmt in found.files:
        info = infos[url]
        relative = _URL.sub("", url)[len(root) :].lstrip("/")
        etag = str(info.get("ETag") or "")
        strong = etag if etag.startswith('"') else ""  # a weak ETag (W/"...") never matches If-Match
        files.append((RemoteFile(url, relative, _size(info), 0, version=_version(info), etag=strong), fmt))
    return found, files, f"{protocol_of(paths[0])}://{root}"


LISTING_REQUESTS = 32  # requests under way at once while asking a listing's files their size and version


def _infos(fs, spec: str, paths: list[str]) -> dict[str, dict]:
    """``info()`` of each path (size, ETag), :data:`LISTING_REQUESTS` requests at a time on a file system that
    has an event loop (HTTP: one HEAD per file, not one after the other); one-line errors naming the file.
    """
    if not paths:
        return {}
    batches = -(-len(paths) // LISTING_REQUESTS)
    if not getattr(fs, "async_impl", False):
        answers = within_deadline(
            spec, lambda: [_outcome(lambda p=p: fs.info(p)) for p in paths], "answer", timeout() * len(paths)
        )
    else:
        import asyncio

        from fsspec.asyn import sync

        async def ask_all() -> list:
            gate = asyncio.Semaphore(LISTING_REQUESTS)

            async def ask(path: str):
                async with gate:
                    return await fs._info(path)

            return await asyncio.gather(*(ask(path) for path in paths), return_exceptions=True)

        answers = within_deadline(spec, lambda: sync(fs.loop, ask_all), "answer", timeout() * batches)
    infos = {}
    for path, answer in zip(paths, answers, strict=True):
        if isinstance(answer, BaseException):
            url = _join(protocol_of(spec) or "", path)
            within_deadline(url, lambda answer=answer: _raise(answer))
        infos[path] = answer
    return infos


def _outcome(call):
    try:
        return call()
    except Exception as exc:  # reported by the caller, naming the file
        return exc


def _raise(error: BaseException):
    raise error


def _magic(path: str) -> bool:
    return any(c in path for c in "*?[")


def _expand(fs, inner: str) -> list[tuple[str, dict]]:
    """``(path, info)`` of every file a spec names, in sorted order: a glob's matches, a folder's files (recursively,
    hidden entries skipped), or the file itself.
    """
    if _magic(inner):
        matches = fs.glob(inner, detail=True)
        out = []
        for path, info in sorted(matches.items()):
            if info.get("type") == "directory":
                out.extend(_walk(fs, path))
            else:
                out.append((path, info))
        return out
    if inner.endswith("/"):  # a folder (over HTTP, info() cannot tell a folder's index page from a file)
        return _walk(fs, inner)
    info = fs.info(inner)
    if info.get("type") == "directory":
        return _walk(fs, inner)
    return [(inner, info)]


def _walk(fs, folder: str) -> list[tuple[str, dict]]:
    found = fs.find(folder, detail=True)
    return [
        (path, info)
        for path, info in sorted(found.items())
        if not any(part.startswith(".") for part in path[len(folder.rstrip("/")) :].split("/") if part)
    ]
