"""Parquet files and Arrow files (``.arrow``, e.g. the shards of a dataset saved with ``datasets.save_to_disk``).

Both are read in record batches of :data:`BATCH_ROWS` rows, loading only the top-level columns the field
mapping needs, so memory is one batch (plus, for Parquet, the row group being decoded), whatever the file
size. Arrow files are memory-mapped (URLs are streamed instead: freqlab.corpus.remote_files). ``where`` of each record
is ``path:row N`` (1-based row in the file).
A large Parquet file is cut into runs of row groups of about the corpus's part size (``start``/``end`` are
row-group indices), so a few large files still keep every core busy. A column of token ids or lengths is read
as lengths instead (:mod:`freqlab.corpus.token_columns`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
import pyarrow.parquet as pq

from freqlab.corpus.arrow_files import (  # first_row, parquet_batches, arrow_batches: kept for import compatibility
    NOT_UTF8,
    arrow_batches,
    first_row,
    open_arrow,
    parquet_batches,
    parquet_metadata,
    python_values,
    repeated_column,
)
from freqlab.corpus.base import INVALID_UTF8, NON_STRING_TEXT, Document, FileShard, Shard, UnreadableFile
from freqlab.corpus.fields import Fields
from freqlab.corpus.file_discovery import DataFile
from freqlab.corpus.registry import FileFormat, register
from freqlab.corpus.token_columns import LIST_TYPES, token_column_shards
from freqlab.errors import FreqlabError

BATCH_ROWS = 256
# what pyarrow raises for a corrupt or truncated file
_ARROW_ERRORS = (pa.ArrowException, OSError)


def _count_columns_hint(schema: pa.Schema) -> str:
    """The options that would read a file of counts, naming its columns of that type: lists of integers (token ids)
    and integers (lengths). A review: a Parquet of lengths alone was pointed at --text-field only.
    """
    lists = [f.name for f in schema if any(is_list(f.type) for is_list in LIST_TYPES)
             and pa.types.is_integer(f.type.value_type)]  # fmt: skip
    ints = [f.name for f in schema if pa.types.is_integer(f.type)]
    # every candidate named: the first integer column may be an id (a review)
    return (f", or --tokens-field {' or '.join(lists)} (lists of token ids)" if lists else "") + (
        f", or --length-field {' or '.join(ints)} (if it holds token counts)" if ints else ""
    )


def _documents(
    batches: Iterable[pa.RecordBatch], fields: Fields, path: str, first_row: int = 0, schema_of=None
) -> Iterator[Document]:
    """Documents of a stream of record batches: each row becomes a dict of the needed top-level columns.

    A file without the text column is one error naming its columns (``schema_of()``: the file's schema; default:
    the batch's), raised as :class:`UnreadableFile` (``--on-error skip`` counts the file), not a bad record per row.
    """
    extract = fields.extractor()
    needs = [p for p in (fields.text, fields.source) if p]
    row = first_row
    text_column = fields.text.split(".")[0]
    for batch in batches:
        if batch.num_rows and text_column not in batch.schema.names and fields.text not in batch.schema.names:
            schema = schema_of() if schema_of is not None else batch.schema  # the batch holds the columns read
            columns = ", ".join(schema.names) or "none"
            if text_column != fields.text:  # a dotted field: 'a' was blamed for 'a.b.c' on a column 'a.b' (a review)
                raise UnreadableFile(
                    f"{path}: no column {fields.text!r} and none {text_column!r} to read the text field "
                    f"{fields.text!r} from (columns: {columns}); a column whose name has a dot is matched only by the "
                    "whole field",
                    path,
                )
            raise UnreadableFile(
                f"{path}: no text column {text_column!r} (columns: {columns}); give --text-field"
                + _count_columns_hint(schema),
                path,
            )
        names = [name for name in fields.columns if name in batch.schema.names]
        if (repeated := repeated_column(batch.schema.names, names)) is not None:
            raise UnreadableFile(f"{path}: {repeated}", path)
        columns, invalid = [], False
        for name in names:
            column = batch.column(name)
            try:
                columns.append(column.to_pylist())
            except UnicodeDecodeError:  # a string that is not UTF-8: marked (NOT_UTF8), its rows judged below
                columns.append(python_values(column))
                invalid = True
            except ValueError as exc:  # a struct with two fields of one name: which one is meant cannot be told
                raise UnreadableFile(f"{path}: cannot read its column {name!r} ({exc})", path) from exc
        # No needed column present: every row is a record without a text field (and says so).
        for values in zip(*columns, strict=True) if columns else [()] * batch.num_rows:
            row += 1
            record = dict(zip(names, values, strict=True))
            text, source, error = extract(record)
            # a value the record needs that is not UTF-8 makes it invalid-utf8, as in JSON lines (one not needed: no)
            if invalid and any(_reaches_invalid_utf8(record, needed) for needed in needs):
                text, source, error = None, None, INVALID_UTF8
            # what the text column holds instead, as JSON lines say (a review: only "non-string-text")
            detail = fields.text_kind(record) if error == NON_STRING_TEXT else None
            yield Document(text, source, f"{path}:row {row}", error, detail)


def _reaches_invalid_utf8(record: dict, path: str) -> bool:
    """Whether the dotted ``path`` in ``record`` (from :func:`python_values`) meets a string that is not UTF-8: the
    value itself, or one on the way (a JSON string that holds the rest of the path, as in SlimPajama's Parquet).
    """
    if path in record:  # a literal dotted key wins, as in lookup
        return record[path] is NOT_UTF8
    value: object = record
    for key in path.split("."):
        if not isinstance(value, dict):  # a JSON string, a number...: valid UTF-8 as Arrow held it
            return False
        value = value.get(key)
        if value is NOT_UTF8:
            return True
    return False


@dataclass(frozen=True)
class ParquetShard(FileShard):
    """A Parquet file, or its row groups ``start`` .. ``end - 1``."""

    read_errors: ClassVar = _ARROW_ERRORS

    def first_record(self) -> dict | None:
        """The shard's first record (field names and values), or None if it has none."""
        with self.reading():
            return first_row(self.path)

    def records(self) -> Iterator[Document]:
        """The shard's documents, row group by row group."""
        batches, first_row = parquet_batches(self.path, self.fields.columns, self.start, self.end, BATCH_ROWS)
        yield from _documents(batches, self.fields, self.path, first_row, self._schema)

    def _schema(self) -> pa.Schema:
        return parquet_metadata(self.path, self.file.stamp).schema.to_arrow_schema()


class ParquetFormat(FileFormat):
    """Parquet files: shards are runs of row groups."""

    name = "parquet"
    suffixes = (".parquet",)
    columns_decide_unit = True
    description = ".parquet"

    def metadata(self, file: DataFile) -> pq.FileMetaData:
        """The file's Parquet footer, or a one-line error naming the file."""
        try:
            return parquet_metadata(file.path, file.stamp)
        except _ARROW_ERRORS as exc:
            raise FreqlabError(f"{file.path}: not a readable Parquet file ({exc})") from exc

    def records(self, file: DataFile) -> int | None:
        """Row count from the Parquet footer (cheap: no data is read); None for a corrupt footer (the scan
        meets it again when reading, and raises or skips).
        """
        try:
            return self.metadata(file).num_rows if file.size else 0
        except FreqlabError:
            return None

    def shards(self, files: list[DataFile], fields: Fields, range_bytes: int) -> list[Shard]:
        """Shards of about ``range_bytes`` each, cut at row group boundaries."""

        def names(file: DataFile) -> list[str]:
            try:
                return self.metadata(file).schema.to_arrow_schema().names
            except FreqlabError:
                return []  # corrupt: reported when read

        def runs(file: DataFile) -> list[tuple[int, int | None]]:
            try:
                return _row_group_runs(self.metadata(file), range_bytes)
            except FreqlabError:
                return [(0, None)]

        tokenized = token_column_shards(files, fields, names, runs)
        if tokenized is not None:  # token ids or lengths: read as lengths (freqlab.corpus.token_columns)
            return tokenized
        shards = []
        for file in files:
            if not file.size:
                continue  # an empty file: no records (reported as an empty file), nothing to read
            try:
                metadata = self.metadata(file)
            except FreqlabError:
                metadata = None  # corrupt: one shard, which reports it when read
            runs = _row_group_runs(metadata, range_bytes) if metadata is not None else [(0, None)]
            for start, end in runs:
                part_id = file.id if len(runs) == 1 else f"{file.id}@rowgroups{start}-{end}"
                shards.append(ParquetShard(part_id, file, fields, start, None if len(runs) == 1 else end))
        return shards


def _row_group_runs(metadata: pq.FileMetaData, range_bytes: int) -> list[tuple[int, int | None]]:
    """Consecutive row groups in runs of about ``range_bytes`` (uncompressed) each."""
    runs: list[tuple[int, int | None]] = []
    start, size = 0, 0
    for i in range(metadata.num_row_groups):
        size += metadata.row_group(i).total_byte_size
        if size >= range_bytes:
            runs.append((start, i + 1))
            start, size = i + 1, 0
    if start < metadata.num_row_groups or not runs:
        runs.append((start, metadata.num_row_groups))
    return runs


@dataclass(frozen=True)
class ArrowShard(FileShard):
    """One Arrow IPC file (stream or file format), memory-mapped."""

    read_errors: ClassVar = _ARROW_ERRORS

    def first_record(self) -> dict | None:
        """The shard's first record (field names and values), or None if it has none."""
        with self.reading():
            return first_row(self.path)

    def records(self) -> Iterator[Document]:
        """The shard's documents, batch by batch."""
        yield from _documents(_rebatched(arrow_batches(self.path)), self.fields, self.path)


class ArrowFormat(FileFormat):
    """Arrow IPC files (``.arrow``, as ``datasets`` saves them): one shard per file."""

    name = "arrow"
    suffixes = (".arrow",)
    columns_decide_unit = True
    description = ".arrow"

    def records(self, file: DataFile) -> int | None:
        """Row count (reads only batch headers through the memory map); None when the file is corrupt."""
        if not file.size:
            return 0
        if file.remote:  # counting a remote stream's rows downloads it: the count is not worth that
            return None
        try:
            return sum(batch.num_rows for batch in arrow_batches(file.path))
        except _ARROW_ERRORS:
            return None

    def shards(self, files: list[DataFile], fields: Fields, range_bytes: int) -> list[Shard]:
        """One shard per non-empty file (token columns: length shards)."""

        def names(file: DataFile) -> list[str]:
            try:
                return open_arrow(file.path).schema.names
            except _ARROW_ERRORS:
                return []  # corrupt: reported when read

        tokenized = token_column_shards(files, fields, names, lambda file: [(0, None)])
        if tokenized is not None:  # token ids or lengths: read as lengths (freqlab.corpus.token_columns)
            return tokenized
        return [ArrowShard(file.id, file, fields) for file in files if file.size]  # empty files: no records


def _rebatched(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Split big record batches (``datasets`` writes 1000-row batches, or more) into BATCH_ROWS slices."""
    for batch in batches:
        for start in range(0, batch.num_rows, BATCH_ROWS):
            yield batch.slice(start, BATCH_ROWS)


PARQUET = register(ParquetFormat())
ARROW = register(ArrowFormat())
