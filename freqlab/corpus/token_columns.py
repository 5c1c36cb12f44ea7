"""Token-id and length columns of Parquet and Arrow files (what ``datasets.map(tokenizer)`` and
``save_to_disk`` write): a document's length is its token list's length, or the value of a length column.

Used by the Parquet and Arrow formats (:mod:`freqlab.corpus.columnar`) and by datasets streamed through
``datasets`` (:mod:`freqlab.corpus.hub`) when ``--tokens-field`` or ``--length-field`` is given, or when the
records have no text column but an ``input_ids`` one. Lengths come from the
Arrow list offsets (``pyarrow.compute.list_value_length``): no token is converted to Python, only the one
column is read. With a source field, each run of rows with one label is one batch, so order is kept.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyarrow as pa

from freqlab.corpus.arrow_files import (
    NOT_UTF8,
    arrow_batches,
    first_row,
    parquet_batches,
    python_values,
    repeated_column,
)
from freqlab.corpus.base import (
    LENGTH_BEYOND_INT64,
    MISSING_SOURCE,
    NEGATIVE_LENGTH,
    NULL_LENGTH,
    NULL_TOKEN_ID,
    NULL_TOKEN_LIST,
    LengthBatch,
)
from freqlab.corpus.fields import DEFAULT_TOKENS_FIELD, Fields
from freqlab.corpus.file_discovery import DataFile
from freqlab.corpus.token_files import TokenFileShard
from freqlab.errors import FreqlabError, brief

BATCH_ROWS = 1 << 16
# the Arrow types of a column of token-id lists (list views exist since pyarrow 16)
LIST_TYPES = tuple(
    getattr(pa.types, name)
    for name in ("is_list", "is_large_list", "is_fixed_size_list", "is_list_view", "is_large_list_view")
    if hasattr(pa.types, name)
)


def token_column(fields: Fields, names: list[str]) -> tuple[str, str] | None:
    """``("tokens" | "length", column)`` when records of a file with columns ``names`` are read as lengths."""
    read = fields.read
    if read.length_field:
        return "length", read.length_field
    if read.tokens_field:
        return "tokens", read.tokens_field
    if fields.text.split(".")[0] not in names and DEFAULT_TOKENS_FIELD in names:
        return "tokens", DEFAULT_TOKENS_FIELD
    return None


def column_lengths(column: pa.Array, kind: str, row: Callable[[int], str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Lengths (int64) of a token-list column, or a length column's values, and why rows are no documents: a row
    ``k`` with length ``-(j + 1)`` is bad for ``reasons[j]`` (a null list, length or token id, a negative length,
    one past int64; see :class:`~freqlab.corpus.base.LengthBatch`). A column of the wrong type raises, naming
    the row that made it so (``row(k)``: the name of row ``k``) and its value.
    """
    import pyarrow.compute as pc  # here: ~0.02-0.04 s of import that a scan of text files never needs

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_null(column.type):  # nothing but nulls (pandas writes such a column; JSON read in blocks too)
        return np.full(len(column), -1, np.int64), (NULL_TOKEN_LIST if kind == "tokens" else NULL_LENGTH,)
    bad: dict[str, np.ndarray] = {}  # reason -> the rows it holds for
    if kind == "tokens":
        lists = any(is_list(column.type) for is_list in LIST_TYPES)
        # list<null>: what pyarrow infers for lists that are all empty (an id in one would be a null id)
        if not lists or not (pa.types.is_integer(column.type.value_type) or pa.types.is_null(column.type.value_type)):
            raise _wrong_type(column, kind, row, "lists of token ids (integers)")
        counted = pc.list_value_length(column)
        if column.null_count:
            bad[NULL_TOKEN_LIST] = np.asarray(column.is_null())
            counted = counted.fill_null(0)
        lengths = np.asarray(counted, np.int64)
        ids = pc.list_flatten(column)  # in row order, list views too (whose list_parent_indices are not)
        if ids.null_count:  # a list with a hole is no token sequence: its length would count a token not there
            holes = np.flatnonzero(np.asarray(ids.is_null()))
            rows = np.zeros(len(column), bool)
            rows[np.searchsorted(np.cumsum(lengths), holes, side="right")] = True
            bad[NULL_TOKEN_ID] = rows
    else:
        if not pa.types.is_integer(column.type):
            raise _wrong_type(column, kind, row, "integers")
        if column.null_count:
            bad[NULL_LENGTH] = np.asarray(column.is_null())
            column = column.fill_null(0)
        values = np.asarray(column)
        if values.dtype == np.uint64:  # past int64 it would wrap to a negative length
            if values.size and int(values.max()) > np.iinfo(np.int64).max:
                bad[LENGTH_BEYOND_INT64] = values > np.iinfo(np.int64).max
        elif values.size and int(values.min()) < 0:
            bad[NEGATIVE_LENGTH] = values < 0
        lengths = values.astype(np.int64, copy=False)  # an int64 column's buffer as it is
    if bad:
        lengths = lengths.copy()  # Arrow's buffer, read-only
        for j, rows in enumerate(bad.values()):
            lengths[rows] = -(j + 1)
    return lengths, tuple(bad)


def _wrong_type(column: pa.Array, kind: str, row: Callable[[int], str], expected: str) -> FreqlabError:
    """The error of a column of the wrong type, naming its first row whose value is no token list (no length):
    Arrow types a column by all its rows, so one float or string among integers types it (a review: row 6's
    ``[1.5]`` was blamed on row 1). Rows of integers that Arrow read as doubles pass; the first row when all pass.
    """
    values = column.to_pylist()  # an error's path: Python objects are fine
    json_type = getattr(pa, "JsonType", ())  # JSON of mixed types: each row, or each id of a list, its JSON text
    if isinstance(column.type, json_type):
        values = [None if v is None else json.loads(v) for v in values]
    elif isinstance(getattr(column.type, "value_type", None), json_type):  # a review: ["x"] among [1, 2]
        values = [None if v is None else [None if i is None else json.loads(i) for i in v] for v in values]
    fits = _is_id if kind == "length" else lambda v: isinstance(v, list) and all(i is None or _is_id(i) for i in v)
    present = [k for k, v in enumerate(values) if v is not None] or [0]
    k = next((k for k in present if not fits(values[k])), present[0])
    shown = f": {brief(values[k])}" if values else ""
    name = "token" if kind == "tokens" else "length"
    return FreqlabError(f"{row(k)}: the {name} column holds {column.type}, not {expected}{shown}")


def _is_id(value) -> bool:
    """An integer of int64 (a token id or a length), or a double that holds one exactly."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return isinstance(value, int) and not isinstance(value, bool) and -(1 << 63) <= value < 1 << 63


@dataclass(frozen=True)
class TokenColumnShard(TokenFileShard):
    """A Parquet file (row groups ``start`` .. ``end - 1``) or an Arrow file, read as token lengths."""

    kind_of_column: str = "tokens"
    column: str = DEFAULT_TOKENS_FIELD
    read_errors: ClassVar = (pa.ArrowException, OSError)

    def first_record(self) -> dict | None:
        """The shard's first record (field names and values), or None if it has none."""
        with self.reading():
            return first_row(self.path)

    def batches(self) -> Iterator[LengthBatch]:
        """Document lengths: the lengths of the token-id lists in the column."""
        columns = [self.column] + ([self.fields.source] if self.fields.source else [])
        if self.path.lower().endswith(".parquet"):
            batches, row = parquet_batches(self.path, columns, self.start, self.end, BATCH_ROWS)
        else:
            batches, row = arrow_batches(self.path, columns), 0
        for batch in batches:
            yield from length_batches(
                batch, (self.kind_of_column, self.column), self.fields.source, f"{self.path}:row ", row + 1, self.path
            )
            row += batch.num_rows


def length_batches(
    batch: pa.RecordBatch | pa.Table, column: tuple[str, str], source: str | None, prefix: str, first: int, name: str
) -> Iterator[LengthBatch]:
    """The lengths of one batch of rows (``column``: ``(kind, name)`` from :func:`token_column`), one
    :class:`LengthBatch` per run of rows with one source label (so order is kept); rows are named
    ``{prefix}{first + k}`` in errors, the file or dataset ``name`` when the column is missing.
    """
    kind, column_name = column
    if column_name not in batch.schema.names:
        raise FreqlabError(f"{name}: no column {column_name!r} (columns: {', '.join(batch.schema.names)})")
    if (repeated := repeated_column(batch.schema.names, (column_name, source))) is not None:
        raise FreqlabError(f"{name}: {repeated}")
    lengths, reasons = column_lengths(batch.column(column_name), kind, lambda k: f"{prefix}{first + k}")
    if not source:
        yield LengthBatch(lengths, None, f"{prefix}{first}", reasons, lambda k: f"{prefix}{first + k}")
        return
    labels = _labels(batch, source, prefix, first)
    cuts = [0, *(k for k in range(1, len(labels)) if labels[k] != labels[k - 1]), len(labels)]
    for a, b in itertools.pairwise(cuts):
        yield LengthBatch(
            lengths[a:b], labels[a], f"{prefix}{first + a}", reasons, lambda k, a=a: f"{prefix}{first + a + k}"
        )


def _labels(batch: pa.RecordBatch | pa.Table, source: str, prefix: str, first: int) -> list[str]:
    if source not in batch.schema.names:
        return [MISSING_SOURCE] * batch.num_rows
    values = python_values(batch.column(source))
    if NOT_UTF8 in values:
        raise FreqlabError(f"{prefix}{first + values.index(NOT_UTF8)}: source label {source!r} is not valid UTF-8")
    return [MISSING_SOURCE if v is None else str(v) for v in values]


def token_column_shards(files: list[DataFile], fields: Fields, names_of, runs_of) -> list[TokenColumnShard] | None:
    """Length shards for ``files`` when they are read as token/length columns, else None (text).

    ``names_of(file)``: the file's column names; ``runs_of(file)``: its parts as ``(start, end)``.
    """
    chosen = [token_column(fields, names_of(file)) if file.size else None for file in files]
    if not any(chosen):
        return None
    if fields.source and "." in fields.source:
        raise FreqlabError("a source field of tokenized data must be a top-level column")
    shards = []
    for file, choice in zip(files, chosen):
        if not file.size:
            continue
        if choice is None and not names_of(file):  # unreadable: read as the others are, which reports it (or skips)
            choice = next(c for c in chosen if c is not None)
        if choice is None:
            if fields.text.split(".")[0] in names_of(file):
                other, (_, column) = next((f, c) for f, c in zip(files, chosen) if c is not None)
                raise FreqlabError(
                    f"{file.path} holds text ({fields.text!r}) and {other.path} token ids ({column!r}) "
                    "found together: their lengths are in different units and are never added; name one kind of file"
                )
            raise FreqlabError(f"{file.path}: no text column {fields.text!r} and no token column among its columns")
        names = names_of(file)
        if names and choice[1] not in names:
            raise FreqlabError(f"{file.path}: no column {choice[1]!r} (columns: {', '.join(names)})")
        runs = runs_of(file)
        for start, end in runs:
            part = file.id if len(runs) == 1 else f"{file.id}@rowgroups{start}-{end}"
            shards.append(TokenColumnShard(part, file, fields, start, None if len(runs) == 1 else end, *choice))
    return shards
