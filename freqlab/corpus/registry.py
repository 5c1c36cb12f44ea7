"""Input formats, found through a registry: one :class:`FileFormat` per format, each in its own module.

A format says which files it claims (by name) and how it cuts them into shards. *Text* formats (JSON lines,
Parquet, Arrow, ``.txt``) yield documents for a tokenizer; *length* formats (tokenized training data) yield
document lengths directly. A new format is a new module that calls :func:`register` at import, listed in
:data:`BUILTIN_FORMAT_MODULES`; nothing else changes (the scan driver never names a format).

>>> [f.name for f in formats().values()][:4]
['jsonl', 'parquet', 'arrow', 'txt']
>>> format_of("data/train-00001.jsonl.zst").name
'jsonl'
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

from freqlab.corpus.base import TEXT, Shard
from freqlab.corpus.fields import Fields
from freqlab.errors import FreqlabError

if TYPE_CHECKING:  # type-only: files names the supported formats in its messages (it imports this module)
    from freqlab.corpus.file_discovery import DataFile

# Modules that register the built-in formats, in the order their claims are tried.
BUILTIN_FORMAT_MODULES = (
    "freqlab.corpus.jsonl",
    "freqlab.corpus.columnar",
    "freqlab.corpus.text",
    "freqlab.corpus.megatron",
    "freqlab.corpus.datatrove",
    "freqlab.corpus.token_stream",
)

_FORMATS: dict[str, FileFormat] = {}
_loaded = False
_LOCK = threading.Lock()  # registrations and the one reordering


class FileFormat:
    """One input format. Subclasses set the class attributes and implement :meth:`shards`."""

    name: ClassVar[str]
    kind: ClassVar[str] = TEXT
    suffixes: ClassVar[tuple[str, ...]] = ()  # lower-case file name endings it claims
    description: ClassVar[str] = ""  # for "supported: ..." messages
    # text or token ids by the file's own columns: its unit is known once its shards are made
    columns_decide_unit: ClassVar[bool] = False

    def claims(self, path: str) -> bool:
        """Whether this format reads the file at ``path`` (by its name)."""
        return path.lower().endswith(self.suffixes)

    def shards(self, files: list[DataFile], fields: Fields, range_bytes: int) -> list[Shard]:
        """The shards of ``files`` (all of this format), each at most about ``range_bytes`` to read."""
        raise NotImplementedError

    def records(self, file: DataFile) -> int | None:
        """Records in ``file`` when that is cheap to know (a Parquet footer), else None (then: by reading)."""
        return None

    def is_empty(self, file: DataFile) -> bool:
        """Whether ``file`` holds no record (an empty file is fine: zero documents, and counted)."""
        return file.size == 0 or self.records(file) == 0

    def describe(self, files: list[DataFile], fields: Fields) -> dict:
        """What the corpus description should say about these files (e.g. whether tokenized documents end
        with an EOS); merged into ``corpus.description``.
        """
        return {}

    def estimated_bytes(self, file: DataFile) -> int:
        """Bytes a reader goes through (compressed files: an estimate of the decompressed size)."""
        return file.size


def register(fmt: FileFormat) -> FileFormat:
    """Add a format (its ``name`` must be new); returns it, so a module can write ``FORMAT = register(...)``."""
    with _LOCK:
        if fmt.name in _FORMATS and type(_FORMATS[fmt.name]) is not type(fmt):
            raise ValueError(f"format {fmt.name!r} is registered already")
        _FORMATS[fmt.name] = fmt
    return fmt


def formats() -> dict[str, FileFormat]:
    """Every registered format by name, in the order claims are tried (the built-ins are loaded on first use)."""
    global _FORMATS, _loaded
    if not _loaded:
        for module in BUILTIN_FORMAT_MODULES:
            importlib.import_module(module)
        with _LOCK:
            if not _loaded:
                # built-ins first, in the listed order (whichever module happened to be imported first), then the
                # rest; one assignment, so that another thread's look-up never meets an emptied registry
                rank = {module: k for k, module in enumerate(BUILTIN_FORMAT_MODULES)}
                ordered = sorted(_FORMATS.values(), key=lambda f: rank.get(type(f).__module__, len(rank)))
                _FORMATS = {f.name: f for f in ordered}
                _loaded = True
    return _FORMATS


def _in_claim_order() -> Iterator[FileFormat]:
    """Every format in the order claims are tried, the built-ins' modules imported only as they are reached: a path
    that JSON lines (the first) claims never imports the Parquet reader's pyarrow (~0.03 s before a scan's pool can
    start); a path no format claims imports them all, as :func:`formats` does.
    """
    if _loaded:
        yield from list(_FORMATS.values())
        return
    seen = set()
    for module in BUILTIN_FORMAT_MODULES:
        importlib.import_module(module)
        for fmt in [fmt for fmt in list(_FORMATS.values()) if type(fmt).__module__ == module]:
            seen.add(fmt.name)
            yield fmt
    yield from [fmt for fmt in formats().values() if fmt.name not in seen]


def format_of(path: str) -> FileFormat | None:
    """The first format that claims ``path``, or None."""
    return next((fmt for fmt in _in_claim_order() if fmt.claims(path)), None)


def get_format(name: str) -> FileFormat:
    """The format called ``name``; FreqlabError listing the formats otherwise."""
    found = next((fmt for fmt in _in_claim_order() if fmt.name == name), None)
    if found is None:
        raise FreqlabError(f"unknown format {name!r}; formats: {', '.join(formats())}")
    return found


def supported() -> str:
    """What the formats read, for error messages."""
    return ", ".join(fmt.description or fmt.name for fmt in formats().values())
