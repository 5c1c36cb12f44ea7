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

    Any failure (a full disk, a read-only folder) is one FreqlabError naming ``path``; nothing half-written
    is left behind. A file replaced keeps its mode (a new one gets the mode the umask gives); a symbolic link is
    written through (its target is replaced, the link kept); a path that is no regular file (``/dev/null``, a FIFO,
    ``/dev/fd/N`` of a shell's ``>(...)``) is written in place, since nothing can be renamed over it. A name that
    ends in a separator names a folder and is refused (pathlib would drop the separator and write a file).
    """
    text = os.fsdecode(path)
    if text.endswith(("/", os.sep)):
        raise FreqlabError(f"{text}: cannot write (it ends in {os.sep}: give a file's name)")
    if os.path.exists(text) and not os.path.isfile(text) and not os.path.isdir(text):
        try:  # a device, a FIFO, a pipe: written as it is (before links are resolved: /dev/fd/N links to a pipe)
            if data is not None:
                with open(text, "wb") as handle:
                    handle.write(data)
            if writer is not None:
                writer(text)
        except Exception as exc:
            raise cannot_write(text, exc) from exc
        return
    path = Path(os.path.realpath(text) if os.path.islink(text) else text)
    tmp = None
    try:
        mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o666 & ~_umask()
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
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, Exception) and not isinstance(exc, FreqlabError):
            raise cannot_write(path, exc) from exc
        raise


#: the name of a temporary file :func:`write_atomic` leaves when interrupted before its rename (``name``: the file's)
TEMPORARY = re.compile(r"\.(?P<name>.+)\.[A-Za-z0-9_]+\.tmp")


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
