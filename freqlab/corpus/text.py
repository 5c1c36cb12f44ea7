"""Plain text files, one document per file (``.txt``, and the ``.py`` files of the built-in corpus).

Small files are many, so a shard is a group of up to :data:`FILES_PER_SHARD` files (in sorted order). A file is
read whole: it *is* one document, whatever its size. ``where`` is the file's path.

Two decodings: ``"utf-8"`` (strict; a file that is not UTF-8 becomes an ``invalid-utf8`` record; a leading
byte-order mark is dropped) and ``"python"``: Python source decoded as the interpreter does (PEP 263 coding
cookie, default UTF-8); the few standard-library test files that are deliberately mis-encoded are decoded
with U+FFFD replacement characters instead of failing, so the built-in corpus always reads cleanly.
"""

from __future__ import annotations

import hashlib
import io
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from freqlab.corpus.base import INVALID_UTF8, MISSING_SOURCE, UNREADABLE_FILE, Document, Shard, utf8_error
from freqlab.corpus.fields import Fields
from freqlab.corpus.file_discovery import DataFile
from freqlab.corpus.registry import FileFormat, register
from freqlab.corpus.remote_files import open_input

FILES_PER_SHARD = 256


def decode_python_source(data: bytes) -> str:
    """Python source bytes as text: PEP 263 encoding (default UTF-8), undecodable bytes replaced by U+FFFD."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class TextFilesShard(Shard):
    """A group of files, each one document. ``sources[i]`` labels ``files[i]`` (or no labels)."""

    id: str
    files: tuple[DataFile, ...]
    sources: tuple[str, ...] | None = None
    decoding: str = "utf-8"  # "utf-8" (strict) or "python" (PEP 263, lenient)

    def read(self) -> Iterator[Document]:
        """Each file's text as one document."""
        for i, file in enumerate(self.files):
            path = file.path
            source = None if self.sources is None else self.sources[i]
            try:
                file.check_unchanged()
                with open_input(path) as handle:
                    data = handle.read()
            except OSError:  # one bad file of the group: a bad record, the group goes on
                yield Document(None, None, path, UNREADABLE_FILE)
                continue
            if self.decoding == "python":
                yield Document(decode_python_source(data), source, path)
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:  # which byte, and where (a review: the error said invalid-utf8 alone)
                detail = utf8_error(data, first=True, unit="file", kind="text files")
                yield Document(None, None, path, INVALID_UTF8, detail)
                continue
            yield Document(text.removeprefix("\ufeff"), source, path)

    def identity(self) -> dict[str, Any]:
        """A digest of the group's file ids, sizes, modification and status-change times."""
        digest = hashlib.blake2b(digest_size=12)
        for file in self.files:
            version = getattr(file, "version", "")  # a remote file's ETag (freqlab.corpus.remote_files)
            times = f"{file.mtime_ns}\0{file.ctime_ns}"
            digest.update(f"{file.id}\0{file.size}\0{times}{version and chr(0) + version}\n".encode())
        # "times": what the stamp holds (a stamp of size and modification time only is an older freqlab's)
        return {"files": len(self.files), "stamp": digest.hexdigest(), "times": "mtime ctime"}

    def size(self) -> int | None:
        """Bytes of the shard's files."""
        return sum(file.size for file in self.files)

    def check_unchanged(self) -> None:
        """Raise :class:`FileChanged` if any of the files is gone or changed."""
        for file in self.files:
            file.check_unchanged()

    def local_paths(self) -> tuple[str, ...]:
        """The local files among the shard's files."""
        return tuple(file.path for file in self.files if not file.remote)


def group_files(
    files: list[DataFile],
    sources: list[str] | None = None,
    decoding: str = "utf-8",
    per_shard: int = FILES_PER_SHARD,
) -> list[TextFilesShard]:
    """Consecutive groups of ``per_shard`` files; a shard's id is its first file and its file count."""
    shards = []
    for start in range(0, len(files), per_shard):
        chunk = tuple(files[start : start + per_shard])
        labels = None if sources is None else tuple(sources[start : start + per_shard])
        shard_id = f"{chunk[0].id} (+{len(chunk) - 1} files)" if len(chunk) > 1 else chunk[0].id
        shards.append(TextFilesShard(shard_id, chunk, labels, decoding))
    return shards


class TxtFormat(FileFormat):
    """Plain text files: each file is one document."""

    name = "txt"
    suffixes = (".txt",)
    description = ".txt (one document per file)"

    def records(self, file: DataFile) -> int | None:
        """Always 1: a text file is one document."""
        return 1

    def is_empty(self, file: DataFile) -> bool:
        """Whether the file has no bytes."""
        return file.size == 0

    def shards(self, files: list[DataFile], fields: Fields, range_bytes: int) -> list[TextFilesShard]:
        """Shards of whole files, about ``range_bytes`` each."""
        # .txt files carry no label; in a labelled corpus they count under the "(none)" source.
        labels = None if fields.source is None else [MISSING_SOURCE] * len(files)
        return group_files(files, labels)


TXT = register(TxtFormat())
