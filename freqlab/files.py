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
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from freqlab.errors import FreqlabError
from freqlab.formats import METADATA_KEY

if TYPE_CHECKING:
    import polars as pl


def write_atomic(path: Path, data: bytes | None = None, writer: Callable[[str], object] | None = None) -> None:
    """Write ``data`` (or call ``writer(tmp_path)``) to a temporary file beside ``path``, then rename.

    Any failure (a full disk, a read-only folder) is one FreqlabError naming ``path``; nothing half-written
    is left behind.
    """
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            if data is not None:
                handle.write(data)
        if writer is not None:
            writer(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600: give it the mode any new file gets here
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, Exception) and not isinstance(exc, FreqlabError):
            raise FreqlabError(f"{path}: cannot write ({_write_error(exc)})") from exc
        raise


def write_parquet(path: str | Path, frame: pl.DataFrame, header: dict | None = None) -> None:
    """``frame`` written to ``path`` atomically (:func:`write_atomic`), with ``header`` as JSON under the Parquet
    metadata key :data:`freqlab.formats.METADATA_KEY` when given.
    """
    metadata = {METADATA_KEY: json.dumps(header)} if header is not None else None

    def write(tmp: str) -> None:
        with open(tmp, "wb") as handle:
            frame.write_parquet(handle, metadata=metadata)

    write_atomic(Path(path), writer=write)


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
    """The process's umask (read by setting it and putting it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_error(exc: Exception) -> str:
    """Why a write failed, in a few words (writers that wrap the OS error, like polars, say "(os error N)")."""
    code = getattr(exc, "errno", None)
    found = re.search(r"\(os error (\d+)\)", str(exc))
    if code is None and found:
        code = int(found.group(1))
    if code == errno.ENOSPC:
        return "no space left on the device; free some space or choose another --out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if code is not None:
        return os.strerror(code)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
