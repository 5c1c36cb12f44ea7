"""fastokens built first thing in the local pool's forkserver, from a file beside the tokenizer's cache entry.

fastokens' build is most of a warm scan's start-up (Llama 3's ``tokenizer.json``: 0.55-0.65 s, Tekken's ranks
0.45 s; it has no serialized form), and the forkserver could only start it once it had imported freqlab's
tokenizer code (numpy included) and read the whole cache entry (a pickle of every backend's data): ~0.2 s after
it started. Next to each entry whose verdicts accept fastokens, the cache writes the input of that one build
(:func:`input_file`: ``<entry>.fastokens``, a header line and the bytes fastokens reads). This module imports
nothing of freqlab's, so when the forkserver imports it first (``FREQLAB_PREBUILD`` naming the entry), a thread
builds fastokens from that file ~0.01 s after the interpreter started, while the forkserver imports the rest;
:mod:`freqlab.tokenization.prebuild` then takes the built tokenizer (:func:`take`) if its header names the very
source the verified entry holds (its sha256), and builds it itself otherwise.

:func:`build_fastokens` is the one place fastokens is built from such an input: the counter's
:class:`~freqlab.tokenization.backends.FastokensEngine` calls it too.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV = "FREQLAB_PREBUILD"  # the cache entry the forkserver builds (freqlab.tokenization.prebuild reads it too)
SUFFIX = ".fastokens"  # beside <key>.pickle
FORMAT = 1
JSON, TIKTOKEN = "json", "tiktoken"  # what the body is: tokenizer.json text, or a .tiktoken ranks file

_BUILT: dict[str, Any] = {}  # source digest -> fastokens.Tokenizer, built by the thread below
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
        with tempfile.TemporaryDirectory(prefix="freqlab-") as folder:  # from_tiktoken reads a file
            path = os.path.join(folder, "ranks.tiktoken")
            with open(path, "wb") as out:
                out.write(body.encode() if isinstance(body, str) else body)
            tokenizer = fastokens.Tokenizer.from_tiktoken(path, special_tokens={}, **how)
    else:
        raise ValueError(f"unknown fastokens input {kind!r}")
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def input_file(digest: str, kind: str, body: bytes | str, **how: str | None) -> bytes:
    """The content of a fastokens input file (:func:`read_input` reads it): a JSON header line (``digest``: the
    sha256 the cache entry keeps for its fastokens source; the body's own sha256; ``kind`` and ``how``) and the
    body, as :func:`build_fastokens` takes them.
    """
    body = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    header = {"format": FORMAT, "digest": digest, "kind": kind, "body": hashlib.sha256(body).hexdigest(), **how}
    return json.dumps(header).encode() + b"\n" + body


def read_input(entry: str | os.PathLike) -> tuple[dict, bytes] | None:
    """The header and body beside ``entry``, or None when missing, truncated, corrupt or of another format."""
    try:
        data = input_path(entry).read_bytes()
        line, body = data.split(b"\n", 1)
        header = json.loads(line)
    except (OSError, ValueError):
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT or not isinstance(header.get("digest"), str):
        return None
    return (header, body) if hashlib.sha256(body).hexdigest() == header.get("body") else None


def take(digest: str | None) -> Any:
    """The fastokens tokenizer built here from the input whose header names ``digest`` (waiting for its build),
    or None: nothing built, or built from another source.
    """
    if _BUILDING is not None:
        _BUILDING.join()
    return _BUILT.get(digest) if digest else None


def _build_from(entry: str) -> None:
    TIMES["start"] = time.time()
    try:
        found = read_input(entry)
        if found is not None:
            header, body = found
            _BUILT[header["digest"]] = build_fastokens(
                header.get("kind", ""), body, header.get("encoding"), header.get("pattern")
            )
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
    its threads; a forkserver has nothing to clean up).
    """
    thread = threading.Thread(target=build, args=args, name="freqlab-prebuild", daemon=False)
    thread.start()
    os.register_at_fork(before=thread.join)
    register = getattr(threading, "_register_atexit", None)  # Python 3.9+: what concurrent.futures uses too
    if register is not None:
        register(lambda: os._exit(0) if thread.is_alive() else None)
    return thread


def _build_from_environment() -> None:
    global _BUILDING
    entry = os.environ.get(ENV)
    if entry and _BUILDING is None:
        _BUILDING = start_building(_build_from, entry)


_build_from_environment()
