"""Which field of a record is the text and which is the source label; how tokenized data is read.

Fields are dotted paths into the record (``meta.redpajama_set_name``). A step may go through a JSON *string*
holding an object: SlimPajama's ``meta`` is a struct in its JSON lines but a JSON-encoded string in some Parquet
copies, and RedPajama-1T-Sample stores ``meta`` as a string. Both resolve the same way.

>>> Fields("text", "meta.set").extract({"text": "hi", "meta": '{"set": "Books"}'})
('hi', 'Books', None)
>>> Fields("text", "meta.set").extract({"text": 3, "meta": {"set": "Books"}})
(None, None, 'non-string-text')

Tokenized data is read with :class:`ReadOptions` (carried in ``Fields.read``): the column holding token ids or
lengths, and the EOS id that separates documents in a plain token stream.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from freqlab.corpus.base import (
    BAD_SOURCE,
    INVALID_UNICODE,
    MISSING_SOURCE,
    MISSING_TEXT_FIELD,
    NON_STRING_SOURCE,
    NON_STRING_TEXT,
    NULL_TEXT,
)
from freqlab.display import first_few
from freqlab.errors import FreqlabError, brief

MISSING_FIELD = object()  # what :func:`lookup` returns for a path a record lacks
# What an extractor with ``exact_numbers=False`` returns for a record whose source label is a number: the caller's
# parser may have rounded it (orjson reads integers past 64 bits as floats), so the record must be parsed again.
REPARSE = "reparse"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    r"""Whether ``text`` holds a lone surrogate (from a JSON ``\ud800`` escape): no tokenizer can encode it."""
    return not text.isascii() and _LONE_SURROGATE.search(text) is not None


Extracted = tuple[str | None, str | None, str | None]  # (text, source, error)


def field_paths(record: Mapping[str, Any], limit: int = 12) -> str:
    """The fields of ``record`` as dotted paths (nested objects entered), at most ``limit`` then ``...``.

    >>> field_paths({"text": "a", "meta": {"set": "Books", "id": 3}})
    'text, meta.set, meta.id'
    """
    paths: list[str] = []

    def walk(value: Mapping[str, Any], prefix: str) -> None:
        for key, inner in value.items():
            if isinstance(inner, Mapping) and inner:
                walk(inner, f"{prefix}{key}.")
            else:
                paths.append(f"{prefix}{key}")

    walk(record, "")
    return first_few(paths, limit) if paths else "none"


def _json_int(digits: str) -> int | Decimal:
    """A JSON integer: an int, or past Python's limit on converting digits (4,300) a Decimal of the same digits (a
    review: an ``id`` of 5,000 digits made its valid line malformed-json).
    """
    try:
        return int(digits)
    except ValueError:
        return Decimal(digits)


def json_loads(text: str | bytes) -> Any:
    """``json.loads`` reading integers of any length (the standard library's parser: the reference of the fast one)."""
    return json.loads(text, parse_int=_json_int)


def lookup(record: Any, path: str) -> Any:
    """The value at dotted ``path`` in ``record``, or the :data:`MISSING_FIELD` sentinel. A literal dotted key wins."""
    if isinstance(record, Mapping) and path in record:
        return record[path]
    value = record
    for depth, key in enumerate(path.split(".")):
        if depth and isinstance(value, str):
            # A nested object stored as a JSON string (Parquet copies of SlimPajama, RedPajama-1T-Sample).
            try:
                value = json_loads(value)
            except (ValueError, RecursionError):  # not JSON, or nested deeper than Python recurses: no such field
                return MISSING_FIELD
        if not isinstance(value, Mapping) or key not in value:
            return MISSING_FIELD
        value = value[key]
    return value


# The token-id column read without --tokens-field when a columnar file has no text column (what HF
# tokenizers and ``datasets.map(tokenizer)`` write).
DEFAULT_TOKENS_FIELD = "input_ids"


@dataclass(frozen=True)
class ReadOptions:
    """How tokenized data is read: ``tokens_field`` (a column of token-id lists: a document's length is its
    list's length), ``length_field`` (a column of lengths), ``eos_id`` (the token that ends each document in a
    plain token stream; elsewhere it is checked as the documents' last token). All None: the defaults.

    Attributes
    ----------
    tokens_field : str or None
        Column of token-id lists (a document's length is its list's length).
    length_field : str or None
        Column of document lengths.
    eos_id : int or None
        Token that ends each document in a plain token stream (elsewhere checked as the last token).
    """

    tokens_field: str | None = None
    length_field: str | None = None
    eos_id: int | None = None

    @property
    def is_default(self) -> bool:
        """Whether these are the default read options."""
        return self == ReadOptions()

    def describe(self) -> dict[str, Any]:
        """The options that are set (for summaries and fingerprints)."""
        return {k: v for k, v in vars(self).items() if v is not None}

    def refuse_eos_id(self, where: str, readers: str) -> None:
        """FreqlabError when ``eos_id`` is set for data that takes none (``readers``: what reads it): it would be
        recorded and check nothing (a review).
        """
        if self.eos_id is not None:
            raise FreqlabError(
                f"{where}: --eos-id {self.eos_id} cuts token streams (.npy, lit-gpt .bin) and checks the EOS of "
                f"Megatron and datatrove files; {readers} take none: drop it"
            )


@dataclass(frozen=True)
class Fields:
    """The field mapping of a corpus: ``text`` (dotted path) and optional ``source`` (dotted path), and the
    :class:`ReadOptions` of tokenized data.

    Attributes
    ----------
    text : str
        Dotted path of the text field.
    source : str or None
        Dotted path of the source label, if any.
    read : ReadOptions
        How tokenized data is read.
    """

    text: str = "text"
    source: str | None = None
    read: ReadOptions = field(default_factory=ReadOptions)

    @property
    def columns(self) -> tuple[str, ...]:
        """Top-level columns a columnar reader must load: each path's first step, and a dotted path whole (a column
        named ``a.b``: a literal dotted key wins, as in JSON lines; a reader loads the ones a file has).
        """
        paths = [self.text] if self.source is None else [self.text, self.source]
        return tuple(dict.fromkeys(name for p in paths for name in (p, p.split(".")[0])))

    def extractor(self, exact_numbers: bool = True) -> Callable[[Mapping[str, Any]], Extracted]:
        """A fast ``record -> (text, source, error)`` for the hot loop (built once per shard read).

        ``exact_numbers=False``: the record comes from a parser that may round numbers, so a numeric source label
        (written as text: ``str(label)``) gives the error :data:`REPARSE` instead.
        """
        text_key, source_path = self.text, self.source
        nested_text = "." in text_key  # a dotted path may go through a JSON string, whose escapes can be lone

        def text_of(record: Mapping[str, Any]) -> Any:
            value = record.get(text_key, MISSING_FIELD)
            return lookup(record, text_key) if value is MISSING_FIELD and "." in text_key else value

        def extract(record: Mapping[str, Any]) -> Extracted:
            text = text_of(record)
            if text.__class__ is not str:
                if text is MISSING_FIELD:
                    return None, None, MISSING_TEXT_FIELD
                if text is None:
                    return None, None, NULL_TEXT
                if not isinstance(text, str):
                    return None, None, NON_STRING_TEXT
            if nested_text and has_lone_surrogate(text):
                return None, None, INVALID_UNICODE
            if source_path is None:
                return text, None, None
            source = lookup(record, source_path)
            if source.__class__ is str:
                # a label is written to Parquet and JSON: a lone surrogate cannot be (labels are short: cheap)
                return (None, None, BAD_SOURCE) if has_lone_surrogate(source) else (text, source, None)
            if source is MISSING_FIELD or source is None:
                return text, MISSING_SOURCE, None
            if isinstance(source, (bool, int, float, Decimal)):  # Decimal: an integer of 4,300+ digits, as written
                return (text, str(source), None) if exact_numbers or source.__class__ is bool else (None, None, REPARSE)
            return None, None, NON_STRING_SOURCE

        return extract

    def text_kind(self, record: Mapping[str, Any]) -> str:
        """What the record's text field holds when it is no string, for the error line (a review: ``{"text": 12}``
        said only non-string-text): ``a number, 12``, ``a list of 2``, ``an object with keys a, b``, ``true``.
        """
        value = lookup(record, self.text)
        if isinstance(value, bool):
            return f"the text field holds {str(value).lower()}"
        if isinstance(value, (int, float)):
            return f"the text field holds a number, {brief(value)}"
        if isinstance(value, Decimal):  # an integer of 4,300 digits or more, as written (not "holds Decimal")
            digits = str(value)
            return f"the text field holds a number of {len(digits.lstrip('-')):,} digits, {digits[:20]}…"
        if isinstance(value, list):
            return f"the text field holds a list of {len(value)}"
        if isinstance(value, Mapping):  # keys quoted and cut (a review: a key of 2 MB, one holding an escape)
            keys = [brief(str(k), 40) for k in list(value)[:5]]
            return f"the text field holds an object with keys {first_few(keys, 4) if keys else 'none'}"
        return f"the text field holds {type(value).__name__}"

    def extract(self, record: Mapping[str, Any]) -> Extracted:
        """``(text, source, error)`` of one record (convenience; readers use :meth:`extractor`)."""
        return self.extractor()(record)
