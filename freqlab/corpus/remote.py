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
in a thread, so a DNS lookup that hangs cannot hold the scan): the error is one line naming the URL. ``hf://`` fails
at once with ``HF_HUB_OFFLINE=1``. Tokenized formats read through memory maps (Megatron, datatrove, token streams)
must be local.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import threading
from dataclasses import dataclass
from typing import Any, BinaryIO

from freqlab.corpus.base import describe_error
from freqlab.corpus.files import DataFile, FoundFiles
from freqlab.errors import FreqlabError

TIMEOUT = 15.0
TIMEOUT_VARIABLE = "FREQLAB_REMOTE_TIMEOUT"
BLOCK_BYTES = 8 << 20  # bytes per request while streaming a remote file
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


def protocol_of(spec: str) -> str | None:
    """``s3`` for ``s3://bucket/key``; None for a local path (``file://`` counts as local).

    >>> protocol_of("hf://datasets/org/name/train/*.parquet"), protocol_of("/data/x.jsonl"), protocol_of("C:/x")
    ('hf', None, None)
    """
    match = _URL.match(str(spec))
    if match is None or match.group(1).lower() in ("file", "local"):
        return None
    return match.group(1).lower()


def is_url(spec: str) -> bool:
    """Whether ``spec`` names remote data (a URL with a protocol other than ``file://``)."""
    return protocol_of(spec) is not None


def timeout() -> float:
    """The deadline of a first request: ``$FREQLAB_REMOTE_TIMEOUT``, else :data:`TIMEOUT`."""
    value = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not value:
        return TIMEOUT
    try:
        seconds = float(value)
        if not seconds > 0:
            raise ValueError
    except ValueError:
        raise FreqlabError(f"{TIMEOUT_VARIABLE}={value!r}: expected a positive number of seconds") from None
    return seconds


def _storage_options(protocol: str) -> dict[str, Any]:
    """Options that keep a dead network from hanging a request (each backend names them its own way)."""
    seconds = timeout()
    if protocol in ("http", "https"):
        import aiohttp

        limits = aiohttp.ClientTimeout(total=None, connect=seconds, sock_read=4 * seconds)
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
    if protocol == "hf":
        from freqlab.corpus.hub import offline_variable

        if (variable := offline_variable()) is not None:
            raise FreqlabError(f"{url}: Hugging Face Hub access is off ({variable}=1)")
    try:
        return fsspec.core.url_to_fs(url, **_storage_options(protocol))
    except ImportError as exc:
        needed = f"{install}" if module else "the fsspec implementation of this protocol"
        raise FreqlabError(f"{url}: reading {protocol}:// needs {needed} ({describe_error(exc)})") from None
    except ValueError as exc:  # fsspec: unknown protocol
        raise FreqlabError(f"{url}: {describe_error(exc)}") from None


def within_deadline(url: str, call, what: str = "answer"):
    """``call()``, or a one-line FreqlabError naming ``url`` when it fails or takes longer than :func:`timeout`."""
    seconds = timeout()
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
    raise FreqlabError(
        f"{url}: cannot reach ({describe_error(value)}); check the network, or copy the files and scan the local path"
    ) from None


def _connection_error(error: BaseException) -> BaseException | None:
    """The connection failure behind a FileNotFoundError (fsspec's HTTP file system reports both alike)."""
    seen = error.__cause__ or error.__context__
    while seen is not None:
        if "Connect" in type(seen).__name__ or (isinstance(seen, OSError) and not isinstance(seen, FileNotFoundError)):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def open_input(path: str, buffering: int = -1) -> BinaryIO:
    """A binary stream of a local file or a URL: the one opener every reader uses.

    A remote file is read in blocks of :data:`BLOCK_BYTES` (ranged requests where the server supports them), so it is
    streamed and seekable without being downloaded first.
    """
    if not is_url(path):
        return open(path, "rb", buffering=buffering)  # the caller closes it
    fs, inner = filesystem(path)
    remote = fs.open(inner, "rb", block_size=BLOCK_BYTES, cache_type="readahead")
    # a standard buffered stream (readline(limit), peek) over fsspec's file, whatever the file system
    return io.BufferedReader(remote, buffer_size=1 << 20 if buffering < 0 else max(buffering, 1))


@dataclass(frozen=True)
class RemoteFile(DataFile):
    """A remote data file: ``path`` is its URL; ``version`` its ETag (or modification time) when known."""

    version: str = ""

    @property
    def remote(self) -> bool:
        return True

    def identity(self) -> dict[str, Any]:
        return {"size": self.size, "version": self.version}

    def check_unchanged(self) -> None:
        """Raise OSError when the file is gone or changed (size or version) since the corpus was opened."""
        fs, inner = filesystem(self.path)
        info = fs.info(inner)
        size, version = _size(info), _version(info)
        if size != self.size or (self.version and version and version != self.version):
            raise OSError(f"the file changed while the scan ran (size {self.size} -> {size}); rescan to count it")


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
    ``files`` being ``(RemoteFile, format name)`` pairs."""
    if not all(is_url(spec) for spec in specs):
        raise FreqlabError(f"{' '.join(specs)}: give either local paths or URLs, not both")
    found = FoundFiles()
    infos: dict[str, dict] = {}
    for spec in specs:
        fs, inner = filesystem(spec)
        protocol = protocol_of(spec)
        for path, info in within_deadline(spec, lambda fs=fs, inner=inner: _expand(fs, inner), "listing"):
            url = _join(protocol, path)
            fmt = format_of(url)
            if fmt is None:
                if path == inner:  # named explicitly
                    from freqlab.corpus.registry import supported

                    raise FreqlabError(f"{spec}: unknown file format; supported: {supported()}")
                found.ignored.append(url)
                continue
            if fmt in LOCAL_ONLY_FORMATS:
                raise FreqlabError(f"{url}: {fmt} files are read through memory maps: copy them to a local disk")
            if info.get("size") is None:  # a listing without sizes (an HTTP index page): ask the file itself
                info = within_deadline(url, lambda fs=fs, path=path: fs.info(path))
            infos[url] = info
            found.add(url, fmt)
        if not found.files and not found.ignored:
            raise FreqlabError(f"{spec}: no files match this pattern" if _magic(inner) else f"{spec}: no such file")
    if not found.files:
        from freqlab.corpus.registry import supported

        raise FreqlabError(f"{', '.join(specs)}: no data files found (supported: {supported()})")
    if config is not None:
        raise FreqlabError(f"{' '.join(specs)}: --config {config!r} applies to Hugging Face datasets, not to files")
    if split != "train":
        raise FreqlabError(f"{' '.join(specs)}: --split {split!r} applies to Hugging Face datasets, not to files")
    paths = [url for url, _ in found.files]
    root = os.path.commonpath([_URL.sub("", url).rsplit("/", 1)[0] for url in paths]) if paths else ""
    files = []
    for url, fmt in found.files:
        info = infos[url]
        relative = _URL.sub("", url)[len(root) :].lstrip("/")
        files.append((RemoteFile(url, relative, _size(info), 0, _version(info)), fmt))
    return found, files, f"{protocol_of(paths[0])}://{root}"


def _magic(path: str) -> bool:
    return any(c in path for c in "*?[")


def _expand(fs, inner: str) -> list[tuple[str, dict]]:
    """``(path, info)`` of every file a spec names, in sorted order: a glob's matches, a folder's files (recursively,
    hidden entries skipped), or the file itself."""
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
