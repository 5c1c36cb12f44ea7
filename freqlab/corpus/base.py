"""The three things a scan reads: a :class:`Corpus` is a list of :class:`Shard` s, a shard streams :class:`Document` s.

A shard is the unit of parallel work and of checkpointing: a small picklable description (a file, or a byte range
or row groups of one, and a field mapping; or a hub dataset id and a slice index); the reading itself happens in
:meth:`Shard.read`, in the worker. Shards come in two kinds: *text* shards yield documents for a tokenizer;
*length* shards (tokenized training data) yield document lengths directly (:class:`LengthShard`).

A bad record does not raise: it comes out as a ``Document`` with ``text=None`` and ``error`` set to one of the
reason keys below, ``where`` naming the file and line (or row). The scan engine decides whether to raise
(``FreqlabError(f"{where}: {error}")``) or to count the skip by reason. Problems that make a whole source unusable
raise :class:`freqlab.errors.FreqlabError` at once, from ``open_corpus`` or, for I/O that only fails while reading
(a truncated ``.zst``), from ``read()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from freqlab.corpus.frames import GZIP_MAGIC
from freqlab.corpus.ranges import LineTooLong
from freqlab.errors import FreqlabError
from freqlab.formats import UNLABELLED_SOURCE

if TYPE_CHECKING:  # fields.py and file_discovery.py import from here
    from freqlab.corpus.fields import Fields, ReadOptions
    from freqlab.corpus.file_discovery import DataFile


class FileChanged(OSError):
    """A data file that is gone or changed (size, modification time, version) since the corpus was opened;
    ``path`` names it when known. (Defined here, below ``file_discovery``, so that :meth:`FileShard.reading` can catch
    it; ``freqlab.corpus.file_discovery`` re-exports it).
    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


# Reasons a single record is unusable (the keys the summary counts skips by).
MALFORMED_JSON = "malformed-json"  # the line is not valid JSON
NOT_AN_OBJECT = "not-a-json-object"  # valid JSON, but a list/number/string instead of an object
MISSING_TEXT_FIELD = "missing-text-field"  # the record has no text field (or the dotted path does not resolve)
NULL_TEXT = "null-text"  # the text field is null (JSON null, Parquet/Arrow null)
NON_STRING_TEXT = "non-string-text"  # the text field is a number, list, object...
INVALID_UTF8 = "invalid-utf8"  # the line (or .txt file) is not valid UTF-8
INVALID_UNICODE = "invalid-unicode"  # a lone surrogate (JSON \\ud800-style escape): not encodable as UTF-8
NON_STRING_SOURCE = "non-string-source"  # the source label is a list or an object
BAD_SOURCE = "bad-source-label"  # the source label holds a lone surrogate (cannot be written as UTF-8)
# A whole file that fails while being read (truncated/corrupt compressed stream, broken Parquet/Arrow file):
# one count per file; the documents read from it before the failure are kept.
UNREADABLE_FILE = "unreadable-file"
# A row of tokenized data (Parquet/Arrow/``datasets`` token or length column) whose length is not a document's:
NULL_TOKEN_LIST = "null-token-list"  # the row's token list is null
NULL_TOKEN_ID = "null-token-id"  # a token id in the row's list is null: its length would count a token not there
NULL_LENGTH = "null-length"  # the row's length value is null
NEGATIVE_LENGTH = "negative-length"  # the row's length value is below 0
LENGTH_BEYOND_INT64 = "length-beyond-int64"  # a uint64 length past 2^63 - 1: no document is that long
#: What each reason of a row of tokenized data means, said beside it in the error (a review: "row 2:
#: negative-length" alone).
ROW_REASONS = {
    NULL_TOKEN_LIST: "its token list is null",
    NULL_TOKEN_ID: "a token id in its list is null",
    NULL_LENGTH: "its length is null",
    NEGATIVE_LENGTH: "its length is below 0",
    LENGTH_BEYOND_INT64: "its length is past 2^63 - 1, longer than any document",
}

#: Every reason a record can be skipped for, as counted by a scan (one count per reason).
REASONS = (
    MALFORMED_JSON,
    NOT_AN_OBJECT,
    MISSING_TEXT_FIELD,
    NULL_TEXT,
    NON_STRING_TEXT,
    INVALID_UTF8,
    INVALID_UNICODE,
    NON_STRING_SOURCE,
    BAD_SOURCE,
    UNREADABLE_FILE,
    NULL_TOKEN_LIST,
    NULL_TOKEN_ID,
    NULL_LENGTH,
    NEGATIVE_LENGTH,
    LENGTH_BEYOND_INT64,
)

# Marker of a blank JSON-lines line (not a record): yielded only by ``FileShard.read(blank_lines=True)``, so
# a scan can count them; plain ``read()`` passes over them.
BLANK_LINE = "blank-line"

# Source label of a record that has no label (missing or null field) in a corpus that has sources: the document
# is kept and counted under this label, so a wrong --source-field shows up as one big "(none)" source.
MISSING_SOURCE = UNLABELLED_SOURCE  # "(none)": the label of documents without one, as in LengthHistogram

#: Description keys that count what a folder walk passed over without reading (hidden entries, files of no known
#: format or of a format not selected, FIFOs and sockets, a second path to a file read once): one appearing beside
#: the data changes no count, so a ``--resume`` does not compare them (:class:`freqlab.scan.checkpoint.CheckpointStore`;
#: the keys of a folder's description, :mod:`freqlab.corpus.local_files`).
PASSED_OVER = (
    "hidden_entries",
    "ignored_files",
    "ignored_examples",
    "not_regular_files",
    "not_regular_examples",
    "other_formats",
    "duplicate_files",
    "duplicate_examples",
)

# The two kinds of shard.
TEXT = "text"  # yields documents; a tokenizer counts them
LENGTHS = "lengths"  # tokenized data: yields document lengths, no tokenizer


class Document:
    """One record. Good: ``text`` is a str (maybe ""), ``error`` is None. Bad: ``text`` is None, ``error`` a reason.

    ``source`` is the record's source label when the corpus has sources, else None. ``where`` is ``path:line``
    for line-based files (1-based), ``path:row N`` for Parquet/Arrow rows (1-based), the path for a one-file
    document, and ``dataset[split]#shard:row N`` for datasets streamed through HF ``datasets``. A reader that
    would have to read back to know a line number (a byte range in the middle of a file) passes a callable,
    and the number is worked out only when ``where`` is asked for.

    Parameters
    ----------
    text : str or None
        The text (None for a bad record).
    source : str or None
        The source label, when the corpus has sources.
    where : str or callable
        Where the record is (``path:line``, ...), or a callable that works it out when asked.
    error : str or None
        The reason a bad record is bad (one of ``REASONS``), else None.
    detail : str or None
        What exactly is wrong, when the reader can say (the JSON parser's message and column), for the error line.
    """

    __slots__ = ("_where", "detail", "error", "source", "text")

    def __init__(
        self,
        text: str | None,
        source: str | None,
        where: str | Callable[[], str],
        error: str | None = None,
        detail: str | None = None,
    ):
        self.text = text
        self.source = source
        self._where = where
        self.error = error
        self.detail = detail

    @property
    def where(self) -> str:
        """Where the record is: ``path:line``, ``path:row N``, ..."""
        where = self._where
        if where.__class__ is not str:
            where = self._where = where()  # type: ignore[operator]
        return where  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Document):
            return NotImplemented
        return (self.text, self.source, self.where, self.error) == (other.text, other.source, other.where, other.error)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking record: compare, do not hash

    def __repr__(self) -> str:
        text = self.text if self.text is None or len(self.text) <= 40 else self.text[:40] + "..."
        return f"Document(text={text!r}, source={self.source!r}, where={self.where!r}, error={self.error!r})"


class LengthBatch(NamedTuple):
    """Documents of a length shard: ``lengths`` (int64, >= 0; 0 is an empty document), one ``source`` label
    for all of them (None when the corpus has no sources) and ``where`` (file and first record) for errors.

    A row that is no document (a null token list...) has the length ``-(j + 1)``, where ``reasons[j]`` says why
    (one of ``REASONS``) and ``row(k)`` names the batch's ``k``-th row: the scan stops there or, with
    ``on_error="skip"``, counts the skip by reason, as for a bad text record. A batch without ``reasons`` has none.

    ``lengths`` may be a view of a buffer the reader reuses: valid until the next batch is drawn (copy to keep).
    """

    lengths: np.ndarray
    source: str | None
    where: str
    reasons: tuple[str, ...] = ()
    row: Callable[[int], str] | None = None


class Shard:
    """A piece of a corpus, read by one worker. Subclasses are small frozen dataclasses with an ``id``."""

    id: str
    kind: ClassVar[str] = TEXT

    def read(self) -> Iterator[Document]:  # pragma: no cover - abstract
        """The shard's documents, in order (records that fail carry their error reason)."""
        raise NotImplementedError

    def identity(self) -> dict[str, Any]:
        """What a checkpoint of this shard must match to be trusted (a file's size and modification time)."""
        return {}

    def size(self) -> int | None:
        """Bytes this shard reads, when known (progress in percent)."""
        return None

    def work(self) -> int | None:
        """Bytes of content this shard reads, when known: what ranks shards largest first (its :meth:`size`; a
        compressed file's content is estimated, :meth:`JsonlShard.work <freqlab.corpus.jsonl.JsonlShard.work>`).
        """
        return self.size()

    def check_unchanged(self) -> None:
        """Raise :class:`freqlab.corpus.file_discovery.FileChanged` when a file this shard reads changed since the
        corpus was opened (a scan checks before and after reading the shard); nothing to check by default.
        """

    def local_paths(self) -> tuple[str, ...]:
        """Local files this shard opens (a Ray node must see each at this path); none for streamed data."""
        return ()

    def part_of(self) -> str:
        """What the shard is a part of: its file (the parts of one file, local or remote, share it), else its id."""
        return self.id

    def first_record(self) -> dict[str, Any] | None:
        """The first record of the shard's file as a dict, when the format has records with fields and it is
        cheap to read (for messages naming the fields a record has); None otherwise.
        """
        return None


class ReadMeter:
    """How far the reader of a shard has got, for a progress bar in percent.

    A scan sets one around each shard it reads (:func:`metered`); a reader that can tell cheaply sets ``probe`` to
    a callable returning the bytes of its shard read so far, in the units of :meth:`Shard.size` (JSON lines: the
    file position, the compressed position for ``.zst``/``.gz``). The scan calls it once per batch of documents,
    never per document. A shard whose reader sets no probe counts as read when it ends.
    """

    __slots__ = ("probe",)

    def __init__(self) -> None:
        self.probe: Callable[[], int] | None = None


_READ_METER: ContextVar[ReadMeter | None] = ContextVar("freqlab_read_meter", default=None)


@contextmanager
def metered(meter: ReadMeter) -> Iterator[ReadMeter]:
    """Readers started inside the block report to ``meter`` (:func:`read_meter`); a generator reads in the
    context of whoever advances it, so this is the shard's consumer, the scan.
    """
    token = _READ_METER.set(meter)
    try:
        yield meter
    finally:
        _READ_METER.reset(token)


def read_meter() -> ReadMeter | None:
    """The :class:`ReadMeter` of the shard being read, when a scan set one."""
    return _READ_METER.get()


class LengthShard(Shard):
    """A shard of tokenized data: :meth:`read_lengths` yields :class:`LengthBatch` es instead of documents."""

    kind: ClassVar[str] = LENGTHS

    def read_lengths(self) -> Iterator[LengthBatch]:  # pragma: no cover - abstract
        """The shard's document lengths in tokens, in batches (tokenized data: no tokenizer)."""
        raise NotImplementedError


class UnreadableFile(FreqlabError):
    """A data file that fails while being read (the message names it); ``path`` is the file."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


def changed_message(path: str, exc: BaseException) -> str:
    """The one-line message of a file that changed while it was being read (its counts would mix versions); a
    corpus is stamped when opened, so one opened with ``open_corpus`` and scanned later is opened again (a review:
    "rescan it" with the same corpus object failed the same way every time).
    """
    return (
        f"{path} changed while it was being read ({exc}); its counts would mix two versions: rescan it "
        "(a corpus from open_corpus: open it again)"
    )


def changed_while_read(exc: FileChanged) -> FreqlabError:
    """The one-line error of a file found changed while read outside a scan (a corpus's opening checks, a replay)."""
    return FreqlabError(f"{exc.path} changed while it was being read ({exc}); run again once it is written")


def describe_error(exc: BaseException) -> str:
    """``Type: first line of the message`` (``Type`` alone when the message is empty), for one-line errors."""
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message.splitlines()[0]}" if message else type(exc).__name__


@dataclass(frozen=True)
class FileShard(Shard):
    """A data file, or a part of one (``start``/``end``: what they count is the format's), read with a field
    mapping. ``id`` is the file's path relative to the corpus root, plus the part when the file is split.

    Subclasses implement :meth:`records`; :meth:`read` turns the exceptions a corrupt or truncated file
    raises while being read (:attr:`read_errors`) into one :class:`UnreadableFile` error naming it (a
    FreqlabError, which the scan raises or, with ``on_error="skip"``, counts). A file that changed since the
    corpus was opened is refused the same way: counting it could mix two versions.
    """

    id: str
    file: DataFile
    fields: Fields
    start: int = 0
    end: int | None = None  # None: to the end of the file

    read_errors: ClassVar[tuple[type[BaseException], ...]] = (OSError,)

    @property
    def path(self) -> str:
        """The path of the shard's file."""
        return self.file.path

    def records(self) -> Iterator[Document]:  # pragma: no cover - abstract
        """The shard's documents; blank lines (JSON lines only) as ``BLANK_LINE`` markers."""
        raise NotImplementedError

    def read(self, *, blank_lines: bool = False) -> Iterator[Document]:
        """The shard's documents; with ``blank_lines``, blank lines too, as ``BLANK_LINE`` markers."""
        with self.reading():
            self.file.check_unchanged()
            if blank_lines:
                yield from self.records()
            else:
                for doc in self.records():
                    if doc.error != BLANK_LINE:
                        yield doc

    def read_runs(self) -> Iterator[Document | list[str]]:
        """:meth:`read` with ``blank_lines``, where a reader may give a run of *plain* records (a non-empty text,
        no source label, no error: the common case) as one list of their texts, in order; every other record
        stays a :class:`Document`. A scan counts a run without a Python object per document. Blank lines between
        a run's texts are no markers but the run's :class:`Run` ``gaps``.
        """
        with self.reading():
            self.file.check_unchanged()
            yield from self.record_runs()

    def record_runs(self) -> Iterator[Document | list[str]]:
        """:meth:`records` with runs of plain records as lists (see :meth:`read_runs`); by default, no runs."""
        return self.records()

    def identity(self) -> dict[str, Any]:
        """What identifies the file's content (size, modification time, version), as checkpoints record it."""
        return self.file.identity()

    def check_unchanged(self) -> None:
        """Raise :class:`FileChanged` if the file is gone or changed since the corpus was opened."""
        self.file.check_unchanged()

    def local_paths(self) -> tuple[str, ...]:
        """The local files the shard reads (none for a remote file)."""
        return () if self.file.remote else (self.file.path,)

    def part_of(self) -> str:
        """The file the shard reads (a part of it, or all of it)."""
        return self.file.path

    def size(self) -> int | None:
        """Bytes the shard reads (for progress), or None when unknown."""
        if self.start == 0 and self.end is None:
            return self.file.size
        return None

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Turn :attr:`read_errors` raised inside the block into :class:`UnreadableFile` naming the file."""
        try:
            yield
        except UnreadableFile:
            raise
        except self.read_errors as exc:
            if isinstance(exc, FileChanged):
                raise UnreadableFile(changed_message(self.path, exc), self.path) from exc
            if self.file.remote and type(exc) is OSError:  # a failed request, said in a few words
                raise UnreadableFile(f"{self.path}: cannot read ({exc})", self.path) from exc
            if isinstance(exc, (FileNotFoundError, PermissionError)):
                message = f"{self.path}: cannot open ({describe_error(exc)})"
            elif isinstance(exc, LineTooLong):  # the file may be whole: a bound was reached, not an end
                rest = "this part of the file" if self.start or self.end is not None else "the file"
                message = f"{self.path}: {exc}; the rest of {rest} is not read"
            elif str(exc).startswith("Not a gzipped file") and _starts_gzip(self.path):  # a member, then not one
                message = (
                    f"{self.path}: cannot read ({describe_error(exc)}); gzip data followed by bytes that are no gzip "
                    "member (trailing garbage?)"
                )
            elif str(exc).startswith("Not a gzipped file"):  # gzip's own words: no gzip data at all, not damage
                message = (
                    f"{self.path}: cannot read ({describe_error(exc)}); the name says gzip, the content is not: "
                    "rename the file after what it holds"
                )
            elif "Unknown frame descriptor" in str(exc) and _starts_gzip(self.path):  # gzip named .zst (a review)
                message = (
                    f"{self.path}: cannot read ({describe_error(exc)}); the name says zstd, the content is gzip: "
                    "rename the file after what it holds"
                )
            else:
                message = f"{self.path}: cannot read ({describe_error(exc)}); is the file truncated or corrupt?"
            raise UnreadableFile(message, self.path) from exc


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def utf8_error(raw: bytes, *, first: bool, skipped: int = 0, unit: str = "line", kind: str = "JSON lines") -> str:
    """Where ``raw`` (a line, or a whole ``unit``) stops being UTF-8 (``skipped``: bytes taken off its start, a UTF-8
    BOM), and a UTF-16 file named as such (a review: a file from ``iconv -t utf-16`` said only invalid-utf8).
    """
    if first and raw.startswith(_UTF16_BOMS):
        return f"the file starts with a UTF-16 byte-order mark: {kind} are UTF-8; iconv -f UTF-16 -t UTF-8 converts it"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"byte 0x{raw[exc.start]:02X} at byte {skipped + exc.start + 1} of the {unit}: {exc.reason}"
    return "not UTF-8"


def _starts_gzip(path: str) -> bool:
    """Whether the local file at ``path`` starts with gzip's magic bytes (False for a URL or an unreadable file)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(GZIP_MAGIC)) == GZIP_MAGIC
    except (OSError, ValueError):
        return False


class Run(list):
    """A run of plain texts (:meth:`FileShard.read_runs`) with ``gaps[i]``, the blank lines just before text i, where
    any lie between them (a file of records separated by blank lines was read 4x slower: each blank line broke the
    run into Python objects, a review); a plain ``list`` run has none.
    """

    __slots__ = ("gaps",)

    def __init__(self, texts: list[str], gaps: list[int]) -> None:
        super().__init__(texts)
        self.gaps = gaps


@dataclass
class Corpus:
    """A named list of shards. ``total_documents`` is set when it is cheap to know (for a progress ETA)."""

    name: str
    shards: list[Shard]
    has_sources: bool
    description: dict[str, Any] = field(default_factory=dict)
    total_documents: int | None = None
    estimated_bytes: int | None = None  # of text (or index) the shards read, when known: compressed files estimated
    empty_kind: str = TEXT  # the kind of a corpus without shards (tokenized files that hold no document: lengths)
    read_options: ReadOptions | None = None  # how tokenized data is read (open_corpus's ``read``); None: defaults
    # local data: the real paths of the folders walked and the glob patterns expanded (what a later scan of the same
    # specs would read below: freqlab.corpus.file_discovery.read_by_a_later_walk)
    folders: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        """``text`` when any shard needs a tokenizer, else ``lengths``."""
        if not self.shards:
            return self.empty_kind
        return TEXT if any(shard.kind == TEXT for shard in self.shards) else LENGTHS

    @property
    def total_bytes(self) -> int | None:
        """Bytes the shards read, when every shard knows its size (progress in percent)."""
        sizes = [shard.size() for shard in self.shards]
        return None if not sizes or None in sizes else sum(sizes)  # type: ignore[arg-type]

    def documents(self) -> Iterator[Document]:
        """All documents of all text shards, in order (serial; the scan engine reads shards in parallel)."""
        for shard in self.shards:
            yield from shard.read()

    def __repr__(self) -> str:
        return (
            f"Corpus({self.name!r}, shards={len(self.shards)}, has_sources={self.has_sources}, "
            f"total_documents={self.total_documents})"
        )
