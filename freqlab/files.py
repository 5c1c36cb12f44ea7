r"""freqlab's own files, written and read in one place: atomically, and under any name the file system allows.

A file written here goes to a temporary file beside it, then ``os.replace``: an interrupted or failed
write leaves the old file or none, never half of one, and any failure is one :class:`~freqlab.errors.FreqlabError`
naming the file. Parquet goes through a Python file handle, not a path: polars takes only names it can encode as
UTF-8, so a name with undecodable bytes (``$'\xff'`` in a shell, ``'\udcff'`` in Python) failed with a
``TypeError`` from inside polars.

>>> import polars as pl, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
>>> write_parquet(path, pl.DataFrame({"length": [3, 5]}), header={"format": "demo"})
>>> frame, metadata = read_parquet(path)
>>> frame["length"].to_list(), metadata["freqlab"]
([3, 5], '{"format": "demo"}')
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from freqlab.errors import FreqlabError, cannot_write
from freqlab.formats import FIGURES_WRITTEN, METADATA_KEY
from freqlab.paths import writes_stdout

if TYPE_CHECKING:
    import polars as pl


def write_atomic(
    path: str | bytes | os.PathLike,
    data: bytes | None = None,
    writer: Callable[[str], object] | None = None,
    before_replacing: Callable[[], object] | None = None,
) -> None:
    """Write ``data`` (or call ``writer(tmp_path)``) to a temporary file beside ``path``, then rename.

    ``before_replacing`` is called once the new content is made, right before it replaces the old: a second file
    written there is replaced back to back with this one, and a failure in it leaves this file as it was (a scan's
    lengths and summary are never of two scans, a review).

    Any failure (a full disk, a read-only folder) is one FreqlabError naming ``path``; nothing half-written is
    left behind by an interrupt or an error (no ``fsync``: a power cut is the file system's affair). A file replaced
    keeps its permission bits (not setuid/setgid/sticky), its group where this process may give it, and, for root,
    its owner; another hard link to it keeps the old content, as a rename leaves it. A read-only file is refused, as
    the shell's ``>`` refuses it, and so is a folder (a symbolic link to one included).

    Written in place instead, since nothing can be renamed over them: what is no regular file (``/dev/null``, a FIFO,
    ``/dev/fd/N`` of a shell's ``>(...)``), a file this process may write but not replace (in a folder it cannot
    write, or another user's in a sticky folder), and the file this process's stdout goes to (``/dev/stdout`` of
    ``> f`` or ``>> f``: written at stdout's place). A regular file's content is made first (a writer's, in a temporary
    file of the system's), then copied in: a failing writer or an interrupt before the copy leaves the old content, a
    failure during the copy (a full disk) may leave part of the new, as ``>`` would; a stream is written as it is
    made. A temporary file whose clean-up an interrupt cut short is removed at exit.

    Symbolic links are followed as the kernel follows them, so the link is kept and its target replaced, except where
    the kernel's ``protected_symlinks`` rule would refuse to follow one (another user's link in a sticky,
    world-writable folder that is not the link owner's): a rename onto the resolved path would get around it. A name
    whose last part is empty, ``.`` or ``..`` names a folder and is refused (pathlib drops it: ``x/.`` would write
    ``x``).
    """
    text = check_file_name(path)
    try:
        target, in_place = _destination(text)
    except OSError as exc:
        raise cannot_write(_through_link(text), exc) from exc
    if in_place:
        if before_replacing is not None:
            try:
                before_replacing()
            except FreqlabError:
                raise
            except Exception as exc:  # named as in the renaming path below
                raise cannot_write(text, exc) from exc
        _write_in_place(text, target, data, writer)
        return
    path = Path(target)
    tmp = None
    try:
        old = path.stat() if path.exists() else None
        mode = stat.S_IMODE(old.st_mode) & 0o777 if old is not None else 0o666 & ~_umask()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # a file where a folder of the path should be
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from None
        # the temporary file's name begins with the file's own (an interrupted write is recognised by it) unless
        # that would pass the usual 255-byte limit on a name
        prefix = f".{path.name}." if len(os.fsencode(path.name)) <= 200 else ".freqlab."
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
        _WRITING.add(tmp)
        with os.fdopen(fd, "wb") as handle:
            if data is not None:
                handle.write(data)
        if writer is not None:
            writer(tmp)
        if old is not None:
            _same_owner(tmp, old)
        os.chmod(tmp, mode)  # mkstemp makes it 0600
        if before_replacing is not None:
            before_replacing()
        os.replace(tmp, path)
        _WRITING.discard(tmp)
    except BaseException as exc:
        # a writer that wraps the disk's error in its own (polars: "Invalid thrift: transport error", a review) on a
        # full disk: said as the full disk it is, looked at before the temporary file frees its space
        reason = exc
        if tmp is not None and _silent_write_failure(exc, tmp) and _out_of_space(path.parent):
            reason = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if tmp is not None:
            _remove(tmp)
        if isinstance(exc, Exception) and not isinstance(exc, FreqlabError):
            raise cannot_write(_through_link(text), reason) from exc
        raise


#: free bytes below which a write that failed without saying why is taken to have failed for want of space
FULL_BELOW = 1 << 20


def check_file_name(path: str | bytes | os.PathLike) -> str:
    """``path`` as text; a FreqlabError when its last part is empty, ``.`` or ``..``: it names a folder, which pathlib
    would drop (``x/.`` would write ``x``, ``figs/`` with a format added ``figs.png``).
    """
    text = os.fsdecode(path)
    if os.path.basename(text) in ("", ".", ".."):
        raise FreqlabError(f"{text}: cannot write (it names a folder: give a file's name)")
    return text


def _silent_write_failure(exc: BaseException, tmp: str) -> bool:
    """Whether ``exc`` failed a writer that had begun writing ``tmp`` without naming an OS error (an errno, or "(os
    error N)" in its text, as polars gives "File too large (os error 27)"): a writer's own refusal before writing
    (matplotlib's "Image size ... too large") is none.
    """
    if getattr(exc, "errno", None) is not None or re.search(r"\(os error \d+\)", str(exc)):
        return False
    try:
        return os.path.getsize(tmp) > 0
    except OSError:
        return False


def _out_of_space(folder: Path) -> bool:
    """Whether the file system of ``folder`` has less than :data:`FULL_BELOW` bytes left for this process (root may
    use the blocks kept for it).
    """
    try:
        fs = os.statvfs(folder)
    except (OSError, AttributeError):  # no statvfs (Windows): nothing to say
        return False
    free = fs.f_bfree if hasattr(os, "geteuid") and os.geteuid() == 0 else fs.f_bavail
    return free * fs.f_frsize < FULL_BELOW


def _through_link(text: str) -> str:
    """``text`` as an error names it: with its target when it is a symbolic link (the target is what could not be
    written; a review: the link alone was named).
    """
    return f"{text} (a link to {os.path.realpath(text)})" if os.path.islink(text) else text


#: temporary files being written: removed at exit if an interrupt cut their own clean-up short (a second Ctrl-C, or
#: the one polars passes on beside Python's own, can land before the clean-up's first instruction); a forked child
#: has none of its parent's
_WRITING: set[str] = set()


def _remove_left_behind() -> None:
    for path in list(_WRITING):
        with contextlib.suppress(OSError):
            os.unlink(path)


atexit.register(_remove_left_behind)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WRITING.clear)

#: the name of a temporary file :func:`write_atomic` leaves when interrupted before its rename (``name``: the file's,
#: or ``freqlab`` for a name longer than 200 bytes)
TEMPORARY = re.compile(r"\.(?P<name>.+)\.[A-Za-z0-9_]+\.tmp")


def _destination(text: str) -> tuple[str, bool]:
    """Where the bytes for ``text`` go, and whether they are written into it rather than renamed over it."""
    try:
        found: os.stat_result | None = os.stat(text)
    except FileNotFoundError:  # nothing there, or a dangling link: its target is made
        found = None
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), text)
    target = _resolved(text)  # the protected_symlinks rule holds for a device or a FIFO too
    if found is not None and (not stat.S_ISREG(found.st_mode) or writes_stdout(text)):
        return text, True  # through its links as the kernel opens it (/dev/fd/N leads to no path)
    if found is None and os.path.islink(text) and os.path.basename(os.readlink(text)) in ("", ".", ".."):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), text)  # a dangling link to `name/`
    if found is None:
        return target, False
    if not os.access(target, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), text)
    folder_path = os.path.dirname(target)
    if not os.access(folder_path, os.W_OK | os.X_OK):
        return target, True
    folder = os.stat(folder_path)
    return target, bool(folder.st_mode & stat.S_ISVTX) and _euid() not in (0, found.st_uid, folder.st_uid)


def resolved_output(path: str | bytes | os.PathLike) -> str:
    """``path`` with its symbolic links resolved as :func:`write_atomic` resolves them (refusing another user's link
    in a sticky, world-writable folder anywhere on the path), for an output written otherwise (a scan's lock file);
    one FreqlabError naming ``path``.
    """
    text = os.fsdecode(path)
    try:
        return _resolved(text)
    except OSError as exc:
        raise cannot_write(text, exc) from exc


def _resolved(text: str) -> str:
    """``text`` as an absolute path with every symbolic link resolved as the kernel resolves it (``..`` after a link
    goes up from where the link led), refused where the kernel's ``protected_symlinks`` rule would refuse to follow a
    link: another user's link in a sticky, world-writable folder (such as ``/tmp``) that is not that user's.
    """
    pending = text.split(os.sep)[::-1]  # the components still to walk, the next one last
    current = os.sep if text.startswith(os.sep) else os.getcwd()
    followed = 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, name)
        try:
            found = os.lstat(candidate)
        except FileNotFoundError:  # the rest is made (missing parent folders) or is the new file
            if ".." in pending:  # the kernel walks no further than a missing folder: `new/../x` is not `x`
                raise
            return os.path.join(candidate, *pending[::-1])
        if not stat.S_ISLNK(found.st_mode):
            current = candidate
            continue
        followed += 1
        if followed > 40:  # the kernel's limit
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), text)
        folder = os.stat(current)
        shared = folder.st_mode & stat.S_ISVTX and folder.st_mode & stat.S_IWOTH
        if shared and found.st_uid not in (_euid(), folder.st_uid):
            raise FreqlabError(f"{text}: cannot write (another user's symbolic link in a shared folder: {candidate})")
        link = os.readlink(candidate)
        if link.startswith(os.sep):
            current = os.sep
        pending.extend(link.split(os.sep)[::-1])
    return current


def _write_in_place(text: str, target: str, data: bytes | None, writer: Callable[[str], object] | None) -> None:
    """Write into ``target`` (see :func:`write_atomic`). A regular file's content is made first, in a temporary file
    of the system's (a failing writer then leaves the old content); what is no regular file (a FIFO, a device, a
    pipe) is written as it is made, as before: a reader of a stream sees a failure as the stream ends.
    """
    made = None
    try:
        if writer is not None and os.path.isfile(target):
            fd, made = tempfile.mkstemp(prefix="freqlab-", suffix=".tmp")
            _WRITING.add(made)
            os.close(fd)
            try:
                writer(made)
            except OSError as exc:  # the system's temporary folder, not the output, may be what is full
                raise cannot_write(f"{text} (made first in {made})", exc) from exc
        elif writer is not None:
            writer(target)
            return
        # the file stdout goes to (`--out /dev/stdout >> f`): written at stdout's own place, as `cat` writes, not
        # reopened from its start (what the shell wrote there before would be lost)
        with os.fdopen(os.dup(sys.stdout.fileno()), "wb") if writes_stdout(target) else open(target, "wb") as out:
            sys.stdout.flush()
            if made is not None:
                with open(made, "rb") as content:
                    shutil.copyfileobj(content, out)
            elif data is not None:
                out.write(data)
    except Exception as exc:
        raise exc if isinstance(exc, FreqlabError) else cannot_write(text, exc) from exc
    finally:
        if made is not None:
            _remove(made)


def _same_owner(tmp: str, old: os.stat_result) -> None:
    """Give ``tmp`` the owner (root only) and group of the file it replaces, where this process may: root in a user
    namespace, or on a file system that maps root away, may not, and a user may give only a group of its own.
    """
    with contextlib.suppress(OSError):
        os.chown(tmp, old.st_uid if _euid() == 0 else -1, old.st_gid)


def _remove(path: str) -> None:
    """Remove ``path``, finishing even when an interrupt lands meanwhile (a second Ctrl-C while the first is handled,
    or the one polars passes on beside Python's own); the interrupt is raised after. One landing before this runs
    leaves the file to the exit (:data:`_WRITING`).
    """
    interrupted: BaseException | None = None
    while True:
        try:
            os.unlink(path)
        except KeyboardInterrupt as exc:
            interrupted = exc
            continue
        except OSError:
            pass
        break
    _WRITING.discard(path)
    if interrupted is not None:
        raise interrupted


def _euid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else -1


def write_parquet(path: str | bytes | os.PathLike, frame: pl.DataFrame, header: dict | None = None) -> None:
    """``frame`` written to ``path`` atomically (:func:`write_atomic`), with ``header`` as JSON under the Parquet
    metadata key :data:`freqlab.formats.METADATA_KEY` when given.
    """
    metadata = {METADATA_KEY: json.dumps(header)} if header is not None else None

    def write(tmp: str) -> None:
        with open(tmp, "wb") as handle:
            frame.write_parquet(handle, metadata=metadata)

    write_atomic(path, writer=write)


def read_parquet(path: str | Path) -> tuple[pl.DataFrame, dict[str, str]]:
    """The table in the Parquet file ``path`` and its key-value metadata (polars' errors for a file that is no
    Parquet pass through: callers say what they expected).
    """
    import polars as pl

    with open(path, "rb") as handle:
        metadata = pl.read_parquet_metadata(handle)
        handle.seek(0)
        return pl.read_parquet(handle), metadata


def forget_written(folder: str | Path) -> None:
    """Remove the files the list :data:`freqlab.formats.FIGURES_WRITTEN` in ``folder`` names (what freqlab wrote
    there last), then the list: plain files of that folder only, and only while each is as written (:func:`_stamp`:
    a figure the user edited, replaced or copied in since is theirs). Best effort: what cannot be read or
    removed stays (a corrupt list, a read-only folder), and no list removes nothing.

    >>> import tempfile; folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.png").write_bytes(b"old"), (folder / "mine.png").write_bytes(b"kept")
    >>> record_written(folder, ["a.png"]); forget_written(folder); sorted(p.name for p in folder.iterdir())
    ['mine.png']
    """
    written = _listed(folder)
    for name, stamp in written.items():
        path = Path(folder) / name if name == Path(name).name and "\0" not in name else None
        with contextlib.suppress(OSError):
            if path is not None and path.is_file() and not path.is_symlink() and _as_written(stamp, path):
                path.unlink()
    with contextlib.suppress(OSError):
        if written:
            (Path(folder) / FIGURES_WRITTEN).unlink()


def not_written(folder: str | Path, names: Sequence[str]) -> list[str]:
    """Those of ``names`` that are in ``folder`` (a file, a link, anything) but not as freqlab wrote them there last
    (:func:`record_written`'s list, :func:`_stamp`): the user's, which a figure of that name would replace.

    >>> import tempfile; folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.png").write_bytes(b"drawn"), (folder / "b.png").write_bytes(b"mine")
    >>> record_written(folder, ["a.png"]); not_written(folder, ["a.png", "b.png", "c.png"])
    ['b.png']
    """
    written = _listed(folder)
    found = []
    for name in names:
        path = Path(folder) / name
        try:
            if os.path.lexists(path) and (
                path.is_symlink() or not path.is_file() or not _as_written(written.get(name), path)
            ):
                found.append(name)
        except OSError:
            found.append(name)
    return found


def _listed(folder: str | Path) -> dict:
    """The list :func:`record_written` wrote in ``folder`` (name -> stamp); {} when there is none or it is corrupt."""
    listed = Path(folder) / FIGURES_WRITTEN
    try:
        written = json.loads(listed.read_bytes()) if listed.is_file() and not listed.is_symlink() else None
    except (OSError, ValueError, RecursionError):
        return {}
    return written if isinstance(written, dict) else {}


def record_written(folder: str | Path, names: Sequence[str]) -> None:
    """Add ``names`` (files just written into ``folder``) to its list with their :func:`_stamp`, for the next
    :func:`forget_written`; the files listed before keep the stamps they were listed with (one edited since, by
    the user while the rest is drawn, is theirs: stamped again, it would be taken away next time).
    """
    listed = Path(folder) / FIGURES_WRITTEN
    written = {**_listed(folder), **{name: _stamp(Path(folder) / name) for name in names}}
    if listed.is_symlink():  # the list is replaced, not what a link there leads to
        listed.unlink()
    write_atomic(listed, json.dumps(dict(sorted(written.items()))).encode())


def _stamp(path: Path) -> list[int]:
    """Size, modification time and inode: an edit changes the first two, a copy that keeps them (``cp -a``, ``rsync
    -a``, a restore) is a new inode. Not the change time, which ``chmod`` or a hard link elsewhere moves too (a
    figure of freqlab's would become the user's).
    """
    info = path.stat()
    return [info.st_size, info.st_mtime_ns, info.st_ino]


def _as_written(stamp: object, path: Path) -> bool:
    """Whether ``path`` is as listed with ``stamp`` (a list written before the change time was left out has it
    fourth: compared without it).
    """
    return isinstance(stamp, list) and stamp[:3] == _stamp(path)


#: the largest Parquet footer searched for freqlab's header (a histogram of 100,000 sources writes ~11 MB of it)
MAX_HEADER_FOOTER = 1 << 26


def starts_with(path: str | Path, prefix: bytes) -> bool:
    """Whether the regular file at ``path`` begins with ``prefix`` (read no further: a user's large file named like
    an output is not read through); False for anything else, or a file that cannot be read.

    >>> import tempfile; folder = tempfile.mkdtemp()
    >>> _ = open(f"{folder}/a.json", "w").write('{"format": "x"}')
    >>> starts_with(f"{folder}/a.json", b'{"format"'), starts_with(folder, b"")
    (True, False)
    """
    try:
        if not Path(path).is_file():  # a FIFO would block the open
            return False
        with open(path, "rb") as handle:
            return handle.read(len(prefix)) == prefix
    except OSError:
        return False


def has_freqlab_header(path: str | Path, format: str = "freqlab.") -> bool:
    """Whether the file at ``path`` is a Parquet file carrying freqlab's JSON header (:func:`write_parquet`'s, under
    :data:`freqlab.formats.METADATA_KEY`), of ``format`` (default: any of freqlab's; a name in full, or its start),
    read from its footer's bytes: no Parquet library is loaded (a scan asks this of its output folder while it
    starts). False for anything else, or a file that cannot be read.

    >>> import tempfile, polars as pl; folder = tempfile.mkdtemp()
    >>> write_parquet(f"{folder}/h.parquet", pl.DataFrame({"a": [1]}), {"format": "freqlab.x", "version": 1})
    >>> pl.DataFrame({"a": [1]}).write_parquet(f"{folder}/other.parquet")
    >>> has_freqlab_header(f"{folder}/h.parquet"), has_freqlab_header(f"{folder}/other.parquet")
    (True, False)
    """
    try:
        if not Path(path).is_file():  # a FIFO would block the open, a device never end
            return False
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size < 12:
                return False
            handle.seek(size - 8)
            tail = handle.read(8)
            footer = int.from_bytes(tail[:4], "little")
            if tail[4:] != b"PAR1" or footer > min(size - 12, MAX_HEADER_FOOTER):
                return False
            handle.seek(size - 8 - footer)
            metadata = handle.read(footer)
    except OSError:
        return False
    return any(
        isinstance(header, dict) and str(header.get("format")).startswith(format)
        for header in _key_values(metadata, METADATA_KEY)
    )


def _key_values(footer: bytes, key: str) -> list:
    """The JSON values stored under ``key`` in a Parquet footer's key-value metadata (``FileMetaData`` field 5, a
    list of ``KeyValue`` structs), read by walking the footer's Thrift compact encoding: the same bytes anywhere else
    in it (a column's name, a string or binary column's min/max statistics: a user's table that stores a header, or
    a whole freqlab file) are not taken for one. Nothing for a footer that is not well-formed.
    """
    found: list = []
    if key.encode() not in footer:  # most footers (another tool's files): no walk at all
        return found
    with contextlib.suppress(IndexError, ValueError, RecursionError):
        for name, value in _ThriftCompact(footer).file_key_values():
            if name == key.encode():
                with contextlib.suppress(ValueError, RecursionError):
                    found.append(json.loads(value))
    return found


class _ThriftCompact:
    """Just enough of Thrift's compact protocol to read a Parquet footer's key-value metadata and skip the rest."""

    STOP, TRUE, FALSE, BINARY, LIST, SET, MAP, STRUCT = 0, 1, 2, 8, 9, 10, 11, 12
    FIXED: ClassVar[dict[int, int]] = {3: 1, 7: 8}  # byte, double: their sizes (i16, i32, i64 are varints)
    DEPTH = 64  # nesting beyond this is no Parquet footer
    #: values walked before giving up (~1 s): freqlab's footers hold a few thousand, its header one long string; a
    #: footer of millions of small values is another tool's (a crafted 64 MiB one took 41 s; a review)
    BUDGET = 2_000_000

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.left = data, 0, self.BUDGET

    def byte(self) -> int:
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        value = shift = 0
        while True:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 70:
                raise ValueError("varint too long")

    def binary(self) -> bytes:
        size = self.varint()
        if self.pos + size > len(self.data):
            raise ValueError("binary past the end")
        self.pos += size
        return self.data[self.pos - size : self.pos]

    def fields(self):
        """(field id, type) of a struct's fields, up to its end."""
        last = 0
        while (header := self.byte()) & 0x0F != self.STOP:
            if header >> 4:  # the id as a delta from the last one
                last += header >> 4
            else:  # the id in full, a zigzag varint
                zigzag = self.varint()
                last = (zigzag >> 1) ^ -(zigzag & 1)
            yield last, header & 0x0F

    def skip(self, kind: int, depth: int = 0, element: bool = False) -> None:
        """Pass over a value of ``kind`` (``element``: of a list, set or map, where a boolean takes a byte)."""
        self.left -= 1
        if depth > self.DEPTH or self.left < 0:
            raise ValueError("nested too deep, or too many values")
        if kind in (self.TRUE, self.FALSE):
            self.pos += element
        elif kind in self.FIXED:
            self.pos += self.FIXED[kind]
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == self.BINARY:
            self.binary()
        elif kind in (self.LIST, self.SET):
            size, of = self.list_header()
            for _ in range(size):
                self.skip(of, depth + 1, element=True)
        elif kind == self.MAP:
            size = self.bounded(self.varint())
            types = self.byte() if size else 0
            for _ in range(size):
                self.skip(types >> 4, depth + 1, element=True)
                self.skip(types & 0x0F, depth + 1, element=True)
        elif kind == self.STRUCT:
            for _, field_kind in self.fields():
                self.skip(field_kind, depth + 1)
        else:
            raise ValueError(f"unknown Thrift type {kind}")

    def list_header(self) -> tuple[int, int]:
        header = self.byte()
        size = self.varint() if header >> 4 == 15 else header >> 4
        return self.bounded(size), header & 0x0F

    def bounded(self, size: int) -> int:
        """A collection's size, which cannot pass the bytes left (each element takes one at least)."""
        if size > len(self.data) - self.pos:
            raise ValueError("a collection larger than the footer")
        return size

    def file_key_values(self) -> list[tuple[bytes, bytes]]:
        """The (key, value) pairs of ``FileMetaData.key_value_metadata`` (field 5)."""
        pairs = []
        for field, kind in self.fields():
            if field != 5 or kind != self.LIST:
                self.skip(kind)
                continue
            size, element = self.list_header()
            for _ in range(size):
                if element != self.STRUCT:
                    raise ValueError("key_value_metadata holds no structs")
                key = value = b""
                for member, member_kind in self.fields():
                    if member in (1, 2) and member_kind == self.BINARY:
                        key, value = (self.binary(), value) if member == 1 else (key, self.binary())
                    else:
                        self.skip(member_kind, 1)
                pairs.append((key, value))
        return pairs


def not_parquet(path: str | Path) -> str | None:
    """Why the file at ``path`` is plainly no Parquet file (empty; not starting and ending with ``PAR1``, the
    format's magic), for an error message; None when it looks like one (or cannot be read).

    >>> import tempfile; folder = tempfile.mkdtemp()
    >>> _ = open(f"{folder}/s.yaml", "w").write("stages: []")
    >>> not_parquet(f"{folder}/s.yaml")
    "not a Parquet file: it starts with b'stages: []' (a Parquet file starts and ends with b'PAR1')"
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
            handle.seek(0, os.SEEK_END)
            if handle.tell() >= 8:
                handle.seek(-4, os.SEEK_END)
            tail = handle.read(4)
    except OSError:
        return None
    if not head:
        return "an empty file (0 bytes), not a Parquet file"
    if head[:4] != b"PAR1":
        return f"not a Parquet file: it starts with {head!r} (a Parquet file starts and ends with b'PAR1')"
    if tail != b"PAR1":
        return f"no whole Parquet file: it ends with {tail!r}, not b'PAR1' (cut short?)"
    return None


def parquet_metadata(path: str | Path) -> dict[str, str]:
    """The key-value metadata of the Parquet file ``path`` (its rows are not read)."""
    import polars as pl

    with open(path, "rb") as handle:
        return pl.read_parquet_metadata(handle)


def _umask() -> int:
    """The process's umask: from ``/proc/self/status`` where there is one (setting it to read it, the fallback,
    changes it for every thread for a moment).
    """
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
