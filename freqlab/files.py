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

import errno
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from freqlab.errors import FreqlabError, cannot_write
from freqlab.formats import METADATA_KEY

if TYPE_CHECKING:
    import polars as pl


def write_atomic(
    path: str | bytes | os.PathLike, data: bytes | None = None, writer: Callable[[str], object] | None = None
) -> None:
    """Write ``data`` (or call ``writer(tmp_path)``) to a temporary file beside ``path``, then rename.

    Any failure (a full disk, a read-only folder) is one FreqlabError naming ``path``; nothing half-written is
    left behind by an interrupt or an error (no ``fsync``: a power cut is the file system's affair). A file replaced
    keeps its permission bits (not setuid/setgid/sticky) and, for root, its owner; another hard link to it keeps the
    old content, as a rename leaves it. A read-only file is refused, as the shell's ``>`` refuses it. Written in
    place instead, since nothing can be renamed over them: what is no regular file (``/dev/null``, a FIFO,
    ``/dev/fd/N`` of a shell's ``>(...)``), and a file this process may write but not replace (in a folder it cannot
    write, or another user's in a sticky folder). A symbolic link is written through (its target replaced, the link
    kept), unless another user's link in a sticky, world-writable folder: the kernel's ``protected_symlinks`` rule,
    which a rename onto the resolved target would get around. A name whose last part is empty, ``.`` or ``..``
    names a folder and is refused (pathlib drops it: ``x/.`` would write ``x``).
    """
    text = os.fsdecode(path)
    if os.path.basename(text) in ("", ".", ".."):
        raise FreqlabError(f"{text}: cannot write (it names a folder: give a file's name)")
    try:
        if os.path.islink(text) and _regular_or_missing(text):  # a link to a pipe is written as it is
            text = _followed(text)
        in_place = _in_place(text)
    except OSError as exc:
        raise cannot_write(text, exc) from exc
    if in_place:
        try:
            if data is not None:
                with open(text, "wb") as handle:
                    handle.write(data)
            if writer is not None:
                writer(text)
        except Exception as exc:
            raise exc if isinstance(exc, FreqlabError) else cannot_write(text, exc) from exc
        return
    path = Path(text)
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
        with os.fdopen(fd, "wb") as handle:
            if data is not None:
                handle.write(data)
        if writer is not None:
            writer(tmp)
        os.chmod(tmp, mode)  # mkstemp makes it 0600
        if old is not None and _euid() == 0:  # root replacing a user's file: it stays theirs
            os.chown(tmp, old.st_uid, old.st_gid)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, Exception) and not isinstance(exc, FreqlabError):
            raise cannot_write(path, exc) from exc
        raise


#: the name of a temporary file :func:`write_atomic` leaves when interrupted before its rename (``name``: the file's,
#: or ``freqlab`` for a name longer than 200 bytes)
TEMPORARY = re.compile(r"\.(?P<name>.+)\.[A-Za-z0-9_]+\.tmp")


def _regular_or_missing(text: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(text).st_mode)
    except FileNotFoundError:  # a dangling link: its target is made
        return True


def _followed(link: str) -> str:
    """The path a symbolic link leads to, refused where the kernel's ``protected_symlinks`` would refuse to follow
    it: another user's link in a sticky, world-writable folder (such as ``/tmp``), unless the folder is its owner's.
    """
    owner, folder = os.lstat(link).st_uid, os.stat(os.path.dirname(os.path.abspath(link)))
    shared = folder.st_mode & stat.S_ISVTX and folder.st_mode & stat.S_IWOTH
    if shared and owner not in (_euid(), folder.st_uid):
        raise FreqlabError(f"{link}: cannot write (another user's symbolic link in a shared folder)")
    return os.path.realpath(link)


def _in_place(text: str) -> bool:
    """Whether ``text`` is written into rather than replaced: no regular file, or one that may be written but not
    replaced here (a read-only file is a PermissionError, as for ``>``).
    """
    try:
        found = os.stat(text)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(found.st_mode):
        return False  # the rename fails, naming it
    if not stat.S_ISREG(found.st_mode):
        return True
    if not os.access(text, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), text)
    folder_path = os.path.dirname(os.path.abspath(text))
    if not os.access(folder_path, os.W_OK | os.X_OK):
        return True
    folder = os.stat(folder_path)
    return bool(folder.st_mode & stat.S_ISVTX) and _euid() not in (0, found.st_uid, folder.st_uid)


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
