"""fastokens built first thing in the local pool's forkserver, from a file beside the tokenizer's cache entry.

fastokens' build is most of a warm scan's start-up (Llama 3's ``tokenizer.json``: 0.55-0.65 s, Tekken's ranks
0.45 s; it has no serialized form), and the forkserver could only start it once it had imported freqlab's
tokenizer code (numpy included) and read the whole cache entry (a pickle of every backend's data): ~0.2 s after
it started. Next to each entry whose verdicts accept fastokens, the cache writes the input of that one build
(:func:`input_file`: ``<key>.pickle.fastokens``, a header line and the bytes fastokens reads) and records the input's
:func:`input_identity` in the entry. This module imports nothing of freqlab's, so when the forkserver imports it
first (``FREQLAB_PREBUILD`` naming the entry), a thread builds fastokens from that file ~0.01 s after the
interpreter started, while the forkserver imports the rest; :mod:`freqlab.tokenization.prebuild` then takes the built
tokenizer (:func:`take`) only for the identity the verified entry records, and builds it itself otherwise. The file
is read only when it is a regular file whose body is the one its header names (sha256), so a truncated, foreign or
edited file, a FIFO or a device is never built from.

:func:`build_fastokens` is the one place fastokens is built from such an input: the counter's
:class:`~freqlab.tokenization.backends.FastokensEngine` calls it too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

ENV = "FREQLAB_PREBUILD"  # the cache entry the forkserver builds (the one name: the pool imports it)
FORKSERVER_ENV = "FREQLAB_FORKSERVER"  # "1" in the forkserver freqlab starts (and in what it forks)
SUFFIX = ".fastokens"  # beside <key>.pickle
FORMAT = 2
JSON, TIKTOKEN = "json", "tiktoken"  # what the body is: tokenizer.json text, or a .tiktoken ranks file
MAX_BYTES = 1 << 30  # a larger file is no input (or cache entry) of ours: not read

_BUILT: dict[str, Any] = {}  # input identity -> fastokens.Tokenizer, built by the thread below
_SCRATCH: set[str] = set()  # temporary folders of builds under way
TIMES: dict[str, float] = {}  # "start", "end" of that build (time.time()): for scripts/bench_startup.py


def input_path(entry: str | os.PathLike) -> Path:
    """Where the fastokens input of the cache entry ``entry`` lives."""
    return Path(os.fspath(entry) + SUFFIX)


def build_fastokens(kind: str, body: bytes | str, encoding: str | None = None, pattern: str | None = None) -> Any:
    """A ``fastokens.Tokenizer`` for counting: from ``tokenizer.json`` text (``kind`` :data:`JSON`), or from a
    ``.tiktoken`` ranks file's bytes (:data:`TIKTOKEN`) with fastokens' own ``encoding`` (``cl100k_base``...) or
    the ``pattern``; special tokens are ordinary text (tiktoken's ``encode_ordinary``), and counts are full
    lengths, whatever the file says about truncation or padding.
    """
    import fastokens

    if kind == JSON:
        tokenizer = fastokens.Tokenizer.from_json_str(body if isinstance(body, str) else body.decode())
    elif kind == TIKTOKEN:
        how = {"encoding": encoding} if encoding else {"pattern": pattern}
        with _ranks_path(body.encode() if isinstance(body, str) else body) as path:  # from_tiktoken reads a file
            tokenizer = fastokens.Tokenizer.from_tiktoken(path, special_tokens={}, **how)
    else:
        raise ValueError(f"unknown fastokens input {kind!r}")
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


@contextlib.contextmanager
def _ranks_path(body: bytes) -> Iterator[str]:
    """A path at which fastokens reads ``body``: on Linux an anonymous file in memory (``memfd_create``), which
    nothing leaves behind however the process ends (a worker killed mid-build left a 2 MB ``/tmp/freqlab-*``
    folder); elsewhere a temporary folder, removed by the exit hook too if the process ends mid-build.
    """
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("freqlab-ranks", os.MFD_CLOEXEC)
        try:
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view) :]
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="freqlab-") as folder:
        _SCRATCH.add(folder)
        path = os.path.join(folder, "ranks.tiktoken")
        with open(path, "wb") as out:
            out.write(body)
        yield path
    _SCRATCH.discard(folder)


def input_identity(kind: str, body: bytes | str, **how: str | None) -> str:
    """sha256 of everything a build from this input depends on: ``kind``, ``how`` (encoding, pattern) and the body.
    The cache entry records it for its verified source; a file beside it is built from only when its own is the same.
    """
    body = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    return hashlib.sha256(json.dumps([kind, sorted(how.items())]).encode() + b"\n" + body).hexdigest()


def input_file(kind: str, body: bytes | str, **how: str | None) -> bytes:
    """The content of a fastokens input file (:func:`read_input` reads it): a JSON header line (its
    :func:`input_identity`, the body's length, ``kind`` and ``how``) and the body, as :func:`build_fastokens` takes
    them.
    """
    body = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    header = {"format": FORMAT, "identity": input_identity(kind, body, **how), "size": len(body), "kind": kind}
    return json.dumps({**header, "how": how}).encode() + b"\n" + body


def read_header(entry: str | os.PathLike) -> dict | None:
    """The header of the file beside ``entry`` when the file is whole as far as its size says (its body's identity
    is checked only where it is built from, :func:`read_input`), else None.
    """
    found = _read_regular(input_path(entry), header_only=True)
    return found[0] if found is not None else None


def read_input(entry: str | os.PathLike) -> tuple[dict, bytes] | None:
    """The header and body beside ``entry``, or None when missing, no regular file, truncated, corrupt, of another
    format, or when the body is not the one its header names.
    """
    found = _read_regular(input_path(entry))
    if found is None:
        return None
    header, body = found
    if input_identity(header["kind"], body, **header["how"]) == header["identity"]:
        return found
    # ours (its header is) but its body damaged: removed, so that the next load of the entry writes it again (its
    # repair reads the header alone); else every scan would lose the early build, silently (a review)
    with contextlib.suppress(OSError):
        os.unlink(input_path(entry))
    return None


def _read_regular(path: Path, header_only: bool = False) -> tuple[dict, bytes] | None:
    """(header, body) of the file at ``path`` (:func:`open_regular`), its size the header's."""
    handle = open_regular(path)
    if handle is None:
        return None
    try:
        with handle:
            size = os.fstat(handle.fileno()).st_size
            line = handle.readline(1 << 16)
            header = json.loads(line)
            if not _well_formed(header) or header["size"] != size - len(line):
                return None
            return header, b"" if header_only else handle.read()
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python's recursion
        return None


def _well_formed(header: object) -> bool:
    """Whether a header has the fields of :func:`input_file`, of their types (anything else is no input of ours)."""
    if not isinstance(header, dict) or type(header.get("format")) is not int or header["format"] != FORMAT:
        return False
    how = header.get("how")
    return (
        isinstance(header.get("identity"), str)
        and type(header.get("size")) is int
        and header.get("kind") in (JSON, TIKTOKEN)
        and isinstance(how, dict)
        and set(how) <= {"encoding", "pattern"}
        and all(value is None or isinstance(value, str) for value in how.values())
    )


def open_regular(path: str | os.PathLike, limit: int = MAX_BYTES) -> BinaryIO | None:
    """``path`` opened for reading when it is a regular file of at most ``limit`` bytes, else None: it is opened
    without blocking and checked before anything is read (a FIFO put in its place would block the reader, a link to
    a device never end).
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_size <= limit:
            return os.fdopen(fd, "rb")
    except OSError:
        pass
    os.close(fd)
    return None


def take(identity: str | None) -> Any:
    """The fastokens tokenizer built here from the input of this ``identity`` (waiting for its build), or None:
    nothing built, or built from another input.
    """
    if _BUILDING is not None:
        _BUILDING.join()
    return _BUILT.get(identity) if identity else None


def building() -> bool:
    """Whether this process started a build from a file (:func:`take` then waits for it)."""
    return _BUILDING is not None


def _build_from(entry: str) -> None:
    TIMES["start"] = time.time()
    try:
        found = read_input(entry)
        if found is not None:
            header, body = found
            _BUILT[header["identity"]] = build_fastokens(header["kind"], body, **header["how"])
    except BaseException as exc:  # a Rust panic too: the prebuild then builds it the usual way
        if not (isinstance(exc, Exception) or type(exc).__name__ == "PanicException"):
            raise
    finally:
        TIMES["end"] = time.time()


_BUILDING: threading.Thread | None = None


def start_building(build: Callable[..., object], *args: object) -> threading.Thread:
    """Run ``build(*args)`` on a thread this process joins before it forks (``os.register_at_fork``), so that no
    fork copies a running thread.

    Not a daemon: Python would end it inside fastokens' native build if the forkserver exited mid-build (its driver
    stopped), which aborts the process (see :meth:`~freqlab.tokenization.counter.Engines.build`). Waiting for the
    build instead would keep the forkserver, and the caller's pipes it holds, alive for the rest of the build after
    the driver is gone: so a process exiting while it still builds ends at once (the hook runs before Python joins
    its threads), its build's temporary folder removed first.
    """
    thread = threading.Thread(target=build, args=args, name="freqlab-prebuild", daemon=False)
    thread.start()
    os.register_at_fork(before=thread.join)
    register = getattr(threading, "_register_atexit", None)  # Python 3.9+: what concurrent.futures uses too
    if register is not None:
        register(lambda: _exit_now() if thread.is_alive() else None)
    return thread


def _exit_now() -> None:
    """End this process at once, its builds' temporary folders removed (the build under way reads no more)."""
    for folder in list(_SCRATCH):
        shutil.rmtree(folder, ignore_errors=True)
    os._exit(0)


#: the cache entry ``FREQLAB_PREBUILD`` named when this module was imported in the pool's forkserver; the variable is
#: then removed from its environment, so that what it forks (the workers, anything they start) builds nothing again
REQUESTED: str | None = None


def _build_from_environment() -> None:
    global _BUILDING, REQUESTED
    if os.environ.get(FORKSERVER_ENV) != "1":  # set by freqlab in the forkserver it starts, and nowhere else
        return
    REQUESTED = os.environ.pop(ENV, None) or None
    if REQUESTED and _BUILDING is None:
        _BUILDING = start_building(_build_from, REQUESTED)


_build_from_environment()
