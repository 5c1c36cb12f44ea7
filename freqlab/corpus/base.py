"""The three things a scan reads: a :class:`Corpus` is a list of :class:`Shard` s, a shard streams :class:`Document` s.

A shard is the unit of parallel work and of checkpointing: a small picklable description (a path and a field
mapping, or a hub dataset id and a slice index); the reading itself happens in :meth:`Shard.read`, in the worker.

A bad record does not raise: it comes out as a ``Document`` with ``text=None`` and ``error`` set to one of the
reason keys below, ``where`` naming the file and line (or row). The scan engine decides whether to raise
(``FreqlabError(f"{where}: {error}")``) or to count the skip by reason. Problems that make a whole source unusable
raise :class:`freqlab.errors.FreqlabError` at once, from ``open_corpus`` or, for I/O that only fails while reading
(a truncated ``.zst``), from ``read()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from freqlab.errors import FreqlabError
from freqlab.histogram import UNLABELLED_SOURCE

if TYPE_CHECKING:  # fields.py imports the reasons from here
    from freqlab.corpus.fields import Fields

# Reasons a single record is unusable (the keys the summary counts skips by).
MALFORMED_JSON = "malformed-json"  # the line is not valid JSON
NOT_AN_OBJECT = "not-a-json-object"  # valid JSON, but a list/number/string instead of an object
MISSING_TEXT_FIELD = "missing-text-field"  # the record has no text field (or the dotted path does not resolve)
NULL_TEXT = "null-text"  # the text field is null (JSON null, Parquet/Arrow null)
NON_STRING_TEXT = "non-string-text"  # the text field is a number, list, object...
INVALID_UTF8 = "invalid-utf8"  # the line (or .txt file) is not valid UTF-8
INVALID_UNICODE = "invalid-unicode"  # JSON \\ud800-style escapes left a lone surrogate (not encodable as UTF-8)
NON_STRING_SOURCE = "non-string-source"  # the source label is a list or an object
# A whole file that fails while being read (truncated/corrupt compressed stream, broken Parquet/Arrow file):
# one count per file; the documents read from it before the failure are kept.
UNREADABLE_FILE = "unreadable-file"

REASONS = (
    MALFORMED_JSON,
    NOT_AN_OBJECT,
    MISSING_TEXT_FIELD,
    NULL_TEXT,
    NON_STRING_TEXT,
    INVALID_UTF8,
    INVALID_UNICODE,
    NON_STRING_SOURCE,
    UNREADABLE_FILE,
)

# Marker of a blank JSON-lines line (not a record): yielded only by ``FileShard.read(blank_lines=True)``, so
# a scan can count them; plain ``read()`` passes over them.
BLANK_LINE = "blank-line"

# Source label of a record that has no label (missing or null field) in a corpus that has sources: the document
# is kept and counted under this label, so a wrong --source-field shows up as one big "(none)" source.
MISSING_SOURCE = UNLABELLED_SOURCE  # "(none)": the label of documents without one, as in LengthHistogram


class Document(NamedTuple):
    """One record. Good: ``text`` is a str (maybe ""), ``error`` is None. Bad: ``text`` is None, ``error`` a reason.

    ``source`` is the record's source label when the corpus has sources, else None. ``where`` is ``path:line``
    for line-based files (1-based), ``path:row N`` for Parquet/Arrow rows (1-based), the path for a one-file
    document, and ``dataset[split]#shard:row N`` for datasets streamed through HF ``datasets``.
    """

    text: str | None
    source: str | None
    where: str
    error: str | None = None


class Shard:
    """A piece of a corpus, read by one worker. Subclasses are small frozen dataclasses with an ``id``."""

    id: str

    def read(self) -> Iterator[Document]:  # pragma: no cover - abstract
        raise NotImplementedError


class UnreadableFile(FreqlabError):
    """A data file that fails while being read (the message names it); ``path`` is the file."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


def describe_error(exc: BaseException) -> str:
    """``Type: first line of the message`` (``Type`` alone when the message is empty), for one-line errors."""
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message.splitlines()[0]}" if message else type(exc).__name__


@dataclass(frozen=True)
class FileShard(Shard):
    """One data file read with a field mapping. ``id`` is the path relative to the corpus root.

    Subclasses implement :meth:`records` (and :meth:`rows` when cheap); :meth:`read` turns the exceptions a
    corrupt or truncated file raises while being read (:attr:`read_errors`) into one :class:`UnreadableFile`
    error naming it (a FreqlabError, which the scan raises or, with ``on_error="skip"``, counts).
    """

    id: str
    path: str
    fields: Fields

    read_errors: ClassVar[tuple[type[BaseException], ...]] = (OSError,)

    def records(self) -> Iterator[Document]:  # pragma: no cover - abstract
        """The file's documents; blank lines (JSON lines only) as ``BLANK_LINE`` markers."""
        raise NotImplementedError

    def rows(self) -> int | None:
        """Records in the file when that is cheap to know (a Parquet footer), else None."""
        return None

    def read(self, *, blank_lines: bool = False) -> Iterator[Document]:
        """The file's documents; with ``blank_lines``, blank lines too, as ``BLANK_LINE`` markers."""
        with self.reading():
            if blank_lines:
                yield from self.records()
            else:
                for doc in self.records():
                    if doc.error != BLANK_LINE:
                        yield doc

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Turn :attr:`read_errors` raised inside the block into :class:`UnreadableFile` naming the file."""
        try:
            yield
        except self.read_errors as exc:
            message = f"{self.path}: cannot read ({describe_error(exc)}); is the file truncated or corrupt?"
            raise UnreadableFile(message, self.path) from exc


@dataclass
class Corpus:
    """A named list of shards. ``total_documents`` is set when it is cheap to know (for a progress ETA)."""

    name: str
    shards: list[Shard]
    has_sources: bool
    description: dict[str, Any] = field(default_factory=dict)
    total_documents: int | None = None

    def documents(self) -> Iterator[Document]:
        """All documents of all shards, in order (serial; the scan engine reads shards in parallel instead)."""
        for shard in self.shards:
            yield from shard.read()

    def __repr__(self) -> str:
        return (
            f"Corpus({self.name!r}, shards={len(self.shards)}, has_sources={self.has_sources}, "
            f"total_documents={self.total_documents})"
        )
