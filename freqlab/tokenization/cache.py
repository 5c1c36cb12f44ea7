"""The on-disk cache of loaded tokenizers: start-up paid once per tokenizer file, not once per run.

Loading a tokenizer converts it (a ``tokenizer.json`` compiled to tiktoken ranks, a SentencePiece model to a
``tokenizer.json``, a regex respelled for fastokens' preset) and verifies every faster backend against the
reference on sample text: seconds for Llama 3 (measured in the README). All of it is deterministic given

* the tokenizer file's bytes (sha256),
* the load options (``add_special_tokens``, ``pattern``, ``verify_texts``, backends left out),
* the versions of freqlab (its ``tokenize`` sources included), Python, fastokens, tokenizers, tiktoken, regex
  and sentencepiece,

so an entry keyed by all of them holds the converted counter (its backends' data and their sha256 digests, which
make its fingerprint) and the verification verdicts; a load that finds it builds nothing, hashes nothing but the file
and compares nothing. The local pool's forkserver builds the entry's fast backend once for all workers
(:mod:`freqlab.tokenization.prebuild`). Any change of the key (an edited file, an upgraded
backend) misses, and the verification runs again. A verdict that was never computed (fastokens left out of a
small scan) is computed on the load that needs it and added to the entry.

Where: ``$FREQLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/freqlab``, else ``~/.cache/freqlab``; subfolder
``tokenizers``. ``FREQLAB_NO_CACHE=1`` turns it off. Entries are written to a temporary file and renamed
(atomic: concurrent writers each write a whole entry, the last rename wins); each starts with a sha256 of its
payload, and an entry that is truncated, corrupt, unreadable or from another format is ignored and rebuilt.
An entry is read only as a regular file and only under its own key (it records it). Beside an entry that verified
fastokens lies the input of fastokens' build (``<key>.pickle.fastokens``, :mod:`freqlab.fastokens_ahead`: the local
pool's forkserver builds from it before it imports freqlab), its identity recorded in the entry. Entries are Python
pickles: the cache folder must be as trusted as the user's own files. :func:`cache_files` lists the cache's files
(by name: nothing else in the folder is touched) and :func:`clear_cache` removes them (``freqlab cache --clear``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import pickle
import re
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from freqlab import fastokens_ahead
from freqlab.errors import FreqlabError
from freqlab.paths import expand_home
from freqlab.tokenization.backends import BACKEND_FASTOKENS, fastokens_input
from freqlab.tokenization.counter import TokenCounter, sources_fingerprint
from freqlab.tokenization.verify import capturing, verified

FORMAT = b"freqlab-tokenizer-cache-1\n"
_BACKEND_PACKAGES = ("fastokens", "tokenizers", "tiktoken", "regex", "sentencepiece", "numpy")


def cache_dir() -> Path | None:
    """The tokenizer cache folder, or None when ``FREQLAB_NO_CACHE`` is set (to anything but ``0``/empty)."""
    return None if cache_off() else cache_folder()


def cache_off() -> bool:
    """Whether ``FREQLAB_NO_CACHE`` turns the cache off (set to anything but ``0`` or empty)."""
    return os.environ.get("FREQLAB_NO_CACHE", "") not in ("", "0")


def cache_folder() -> Path:
    """Where the tokenizer cache lives, whether it is on or off: ``$FREQLAB_CACHE_DIR/tokenizers`` (made absolute:
    workers in other folders share it; ``~user`` of no user is an error, not a folder made here), else
    ``$XDG_CACHE_HOME/freqlab/tokenizers`` (a relative one ignored, as the XDG specification says), else
    ``~/.cache/freqlab/tokenizers``.
    """
    given = os.environ.get("FREQLAB_CACHE_DIR", "")
    if given:
        try:
            return Path(os.path.abspath(expand_home(given))) / "tokenizers"  # ~ as a shell expands it unquoted
        except FreqlabError as exc:
            raise FreqlabError(f"FREQLAB_CACHE_DIR={given}: {exc}") from None
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(xdg):
        xdg = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "freqlab" / "tokenizers"


#: the names of the cache's own files: an entry (its key, a sha256), the fastokens input beside it, and the
#: temporary file of a write (:func:`write_private`), running or left by a process that ended mid-write
_CACHE_FILE = re.compile(r"[0-9a-f]{64}\.pickle(?:\.fastokens)?(?:\.[A-Za-z0-9_]+\.tmp)?")


#: the kinds of the cache's files (:attr:`CacheFile.kind`)
ENTRY, FASTOKENS_INPUT, UNFINISHED_WRITE = CACHE_FILE_KINDS = ("entry", "fastokens input", "unfinished write")


@dataclass(frozen=True)
class CacheFile:
    """One file of the tokenizer cache: ``kind`` is one of :data:`CACHE_FILE_KINDS`."""

    path: Path
    kind: str
    size: int
    modified: float  # seconds since the epoch


def cache_files(folder: str | os.PathLike | None = None) -> list[CacheFile]:
    """The tokenizer cache's files in ``folder`` (default :func:`cache_folder`), by name: every other file there
    (a user's own, a folder, anything a name does not mark as the cache's) is none of the cache's. Links are
    listed as links (their own size), never followed. An absent folder has none.

    >>> cache_files("/nonexistent")
    []
    """
    folder = Path(folder) if folder is not None else cache_folder()
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        if not _CACHE_FILE.fullmatch(name):
            continue
        try:
            info = os.lstat(folder / name)
        except FileNotFoundError:  # removed meanwhile (another process's write, or clean-up)
            continue
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            continue
        kind = FASTOKENS_INPUT if name.endswith(fastokens_ahead.SUFFIX) else ENTRY
        kind = UNFINISHED_WRITE if name.endswith(".tmp") else kind
        found.append(CacheFile(folder / name, kind, info.st_size, info.st_mtime))
    return found


class Cleared(NamedTuple):
    """What :func:`clear_cache` did: the files ``removed``, those ``not_removed`` with the system's reason, and the
    unfinished writes ``left`` (younger than :data:`UNFINISHED_WRITE_SECONDS`: a write may be running).
    """

    removed: list[CacheFile]
    not_removed: list[tuple[CacheFile, str]]
    left: list[CacheFile]


def clear_cache(folder: str | os.PathLike | None = None) -> Cleared:
    """Remove the tokenizer cache's files from ``folder`` (:func:`cache_files`: nothing else there, links as links);
    the next load of each tokenizer is a cold one (it converts and verifies again). A file that cannot be removed is
    passed over (the rest still go); an unfinished write younger than :data:`UNFINISHED_WRITE_SECONDS` is left: it
    may be a running write's (which then renames it into place).
    """
    done = Cleared([], [], [])
    now = time.time()
    for found in cache_files(folder):
        if found.kind == UNFINISHED_WRITE and now - found.modified < UNFINISHED_WRITE_SECONDS:
            done.left.append(found)
            continue
        try:
            os.unlink(found.path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            done.not_removed.append((found, exc.strerror or str(exc)))
            continue
        done.removed.append(found)
    return done


#: an unfinished write this old is an ended process's (an entry is written in well under a second)
UNFINISHED_WRITE_SECONDS = 600


@functools.cache
def versions() -> tuple[tuple[str, str], ...]:
    """What the cached data depends on besides the file: Python, the backends' versions, freqlab's tokenize
    sources and :mod:`freqlab.fastokens_ahead` (a development checkout changes without a version bump).
    """
    found = []
    for name in _BACKEND_PACKAGES:
        try:
            found.append((name, importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            found.append((name, "-"))
    sources = hashlib.sha256()
    for path in [*sorted(Path(__file__).parent.glob("*.py")), Path(fastokens_ahead.__file__)]:
        sources.update(path.name.encode() + b"\0" + path.read_bytes())
    data = Path(__file__).parent.parent / "data" / "throughput.json"
    if data.is_file():
        sources.update(data.read_bytes())
    return (("python", sys.version), ("freqlab-tokenize", sources.hexdigest()), *found)


def file_sha256(file: str | Path) -> str:
    """sha256 hex of the file's bytes."""
    digest = hashlib.sha256()
    with open(file, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_key(file: str | Path, options: Mapping[str, Any], *, digest: str | None = None) -> str:
    """sha256 hex of the file's bytes (``digest``: their :func:`file_sha256`, when already known), the load
    ``options`` (repr, sorted) and :func:`versions`.
    """
    key = hashlib.sha256(bytes.fromhex(file_sha256(file) if digest is None else digest))
    key.update(repr(sorted((k, _plain(v)) for k, v in options.items())).encode("utf-8", "surrogatepass"))
    key.update(repr(versions()).encode())
    return key.hexdigest()


#: why a counter was not cached when its file changed between its hash and its load (no folder to blame)
CHANGED_WHILE_LOADED = "the tokenizer file changed while it was loaded"


def _same_key(file: str | Path, options: Mapping[str, Any], key: str) -> bool:
    """Whether ``file`` still has the key it had (hashed again: ~30 ms for Llama 3's 9 MB, beside a cold load's
    seconds).
    """
    try:
        return cache_key(file, options) == key
    except OSError:
        return False


def _file_state(file: str | Path) -> tuple[int, ...] | None:
    """The file's device, inode, size, modification and status-change times (the system sets the last on every
    write and rename): equal before the hash and after the load only if nothing wrote or replaced it in between.
    """
    try:
        stat = os.stat(file)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _plain(value: Any) -> Any:
    """A repr-stable form of an option: sequences of texts by their sha256."""
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        joined = "\x00".join(value).encode("utf-8", "surrogatepass")
        return ("texts", len(value), hashlib.sha256(joined).hexdigest())
    if isinstance(value, Mapping):
        return tuple(sorted(value.items()))
    return value


def read_entry(path: Path) -> dict | None:
    """The entry at ``path``, or None when it is missing, no regular file, truncated, corrupt or of another format."""
    handle = fastokens_ahead.open_regular(path)
    if handle is None:
        return None
    try:
        with handle:
            data = handle.read()
    except OSError:
        return None
    if not data.startswith(FORMAT) or len(data) < len(FORMAT) + 32:
        return None
    checksum, payload = data[len(FORMAT) : len(FORMAT) + 32], data[len(FORMAT) + 32 :]
    if hashlib.sha256(payload).digest() != checksum:
        return None
    try:
        entry = pickle.loads(payload)
    except Exception:
        return None
    if not isinstance(entry, dict) or not {"state", "refusals", "salad", "verdicts"} <= entry.keys():
        return None
    return entry if entry.get("key") == path.stem else None  # another key's entry, copied or linked here: not ours


def write_entry(path: Path, entry: dict) -> str | None:
    """Write ``entry`` (:func:`write_private`) with its key (the file's name); None once written, else why it could
    not be (the cache only saves time).
    """
    try:
        payload = pickle.dumps({**entry, "key": path.stem}, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        return f"the entry cannot be pickled: {exc}"
    return write_private(path, FORMAT + hashlib.sha256(payload).digest() + payload)


def write_private(path: Path, data: bytes) -> str | None:
    """Write ``data`` to ``path`` atomically and readable by this user only (a temporary file in the same folder,
    then a rename, which replaces whatever was at ``path``, a link or a FIFO included, without following it); None
    once written, else why it could not be (the folder, or ``path`` when the folder took the temporary file, and the
    system's reason).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    except OSError as exc:
        return f"{path.parent}: {exc.strerror or exc}"
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
        return None
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def cached_load(
    file: str | Path,
    options: Mapping[str, Any],
    load: Callable[[], TokenCounter],
    *,
    settings: Mapping[str, Any],
    verify_texts,
) -> TokenCounter:
    """``load()`` through the cache: an entry for (``file``, ``options``) rebuilds the counter from its data and
    verdicts (with ``settings``: name, spec, threads of this call); otherwise ``load()`` runs and its verified
    candidate is written; when it cannot be, the counter's ``cache_not_written`` says why (the next load of this
    file is a cold one again; a scan's report says so). Statistics: :data:`STATS` (hits, misses, writes).
    """
    folder = cache_dir()
    try:
        before = _file_state(file)  # before the hash: a write or a replacement after it changes the state
        digest = file_sha256(file) if folder is not None else None
        key = cache_key(file, options, digest=digest) if folder is not None else None
    except OSError:  # unreadable: the loader names the file in its error
        key = None
    if folder is None or key is None:
        return load()
    path = folder / f"{key}.pickle"
    entry = read_entry(path)
    if entry is not None:
        STATS["hits"] += 1
        seen: dict = {}
        candidate = TokenCounter(**{**entry["state"], **settings})
        with capturing(seen):
            counter = verified(
                candidate,
                refusals=entry["refusals"],
                verify_texts=verify_texts,
                salad_tokens=entry["salad"],
                verdicts=entry["verdicts"],
            )
        if seen.get("verdicts", {}).keys() - entry["verdicts"].keys():  # a verdict computed now: keep it
            # not kept, every run computes it again (fastokens' build and verification: seconds), said as a cold
            # load's failed write is (a review: a read-only cache cost 4 s a run without a word)
            counter.cache_not_written = write_with_fastokens_input(
                path, {**entry, "verdicts": dict(seen["verdicts"])}, counter
            )
            STATS["writes"] += 1
        else:
            repair_fastokens_input(path, entry)
        return counter
    STATS["misses"] += 1
    seen = {}
    with capturing(seen):
        counter = load()
    read = seen.get("read", [])  # the bytes the load read, by their sha256: those the key hashed, or not cached
    if "state" in seen and (
        any(sha != digest for sha in read) or not _same_key(file, options, key) or _file_state(file) != before
    ):
        # load() read the file after it was hashed: another content under this key would give every later load of
        # the first content this counter (a review: a file replaced in between poisoned the entry until cleared;
        # another: replaced and put back, A -> B -> A, the same key again: its inode and change time are not)
        counter.cache_not_written = CHANGED_WHILE_LOADED
        return counter
    if "state" in seen:
        state = {k: v for k, v in seen["state"].items() if k not in ("name", "spec")}
        # the sources' digests: a hit does not hash them again (the fingerprint, ~0.2 s for 128k ranks)
        state["source_digests"] = dict(state.get("source_digests") or {})
        sources_fingerprint(state["sources"], state["routed"], state["source_digests"])
        verdicts = dict(seen["verdicts"])
        entry = {"state": state, "refusals": seen["refusals"], "salad": seen["salad"], "verdicts": verdicts}
        counter.cache_not_written = write_with_fastokens_input(path, entry, counter)
        STATS["writes"] += 1
    return counter


def fastokens_build_input(entry: dict, counter: TokenCounter | None = None) -> tuple[str, bytes | str, dict] | None:
    """What the entry's fastokens is built from (:func:`~freqlab.tokenization.backends.fastokens_input`: the
    ``tokenizer.json`` export where ``counter`` built it so, its ranks refused), or None when its verdicts do not
    accept fastokens. Kept beside the entry (:mod:`freqlab.fastokens_ahead`: the local pool's forkserver starts
    building from it before it imports freqlab), its identity in the entry.
    """
    source = entry["state"]["sources"].get(BACKEND_FASTOKENS)
    if source is None or entry["verdicts"].get(BACKEND_FASTOKENS, "not verified") is not None:
        return None
    engine = counter.built(BACKEND_FASTOKENS) if counter is not None else None
    return fastokens_input(source, exported=getattr(engine, "exported", False))


def repair_fastokens_input(path: Path, entry: dict) -> None:
    """Write the fastokens input beside the entry at ``path`` again when the file there is missing, cut short or
    another input (its header read, not its body), where the input made now is the one the entry records (a
    ``tokenizer.json`` export, made only where fastokens refused the ranks, is not made again here).
    """
    identity = entry.get("fastokens_input")
    header = fastokens_ahead.read_header(path) if identity else None
    if not identity or (header is not None and header["identity"] == identity) or not os.access(path.parent, os.W_OK):
        return
    made = fastokens_build_input(entry)
    if made is not None:
        kind, body, how = made
        if fastokens_ahead.input_identity(kind, body, **how) == identity:
            write_private(fastokens_ahead.input_path(path), fastokens_ahead.input_file(kind, body, **how))


def write_with_fastokens_input(path: Path, entry: dict, counter: TokenCounter) -> str | None:
    """Write ``entry`` with the identity of its fastokens input (:func:`fastokens_build_input`, None when it has
    none), and the input beside it once the entry is written; None once the entry is written, else why it could
    not be (the input only speeds a pool's start: its failure is not one).
    """
    made = fastokens_build_input(entry, counter)
    if made is None:
        return write_entry(path, {**entry, "fastokens_input": None})
    kind, body, how = made
    failed = write_entry(path, {**entry, "fastokens_input": fastokens_ahead.input_identity(kind, body, **how)})
    if failed is None:
        write_private(fastokens_ahead.input_path(path), fastokens_ahead.input_file(kind, body, **how))
    return failed


STATS = {"hits": 0, "misses": 0, "writes": 0}
