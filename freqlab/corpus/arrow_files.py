"""Parquet and Arrow IPC files, local or remote (:func:`freqlab.corpus.remote_files.open_input`): opening them, their
metadata, their first row and their record batches. What :mod:`freqlab.corpus.columnar` (text columns) and
:mod:`freqlab.corpus.token_columns` (token columns) read through.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from freqlab.corpus.remote_files import is_url, open_input


def open_parquet(path: str) -> pq.ParquetFile:
    """A Parquet file by path, or over a remote stream (:func:`freqlab.corpus.remote_files.open_input`).

    A local file's column its writer stored as an Arrow dictionary is read as one: decoded to plain strings, pyarrow
    checks every value's UTF-8 and refuses the whole file for one bad row (a review lost a file's good rows so), where
    a plain column's bad rows are judged one by one (``invalid-utf8``). A remote file is opened once, as it was: a
    second open with the footer given reads by ranges, which some servers refuse (an adversary's review).
    """
    parquet = _parquet_file(path)
    dictionaries = [field.name for field in parquet.schema_arrow if pa.types.is_dictionary(field.type)]
    if not dictionaries or is_url(path):
        return parquet
    metadata = parquet.metadata
    parquet.close()
    return _parquet_file(path, metadata=metadata, read_dictionary=dictionaries)


def _parquet_file(path: str, **options) -> pq.ParquetFile:
    if is_url(path):
        return pq.ParquetFile(open_input(path), **options)
    return pq.ParquetFile(path if _utf8(path) else pa.OSFile(os.fsencode(path)), **options)


def _utf8(path: str) -> bool:
    r"""Whether pyarrow takes ``path`` as a name: it encodes one strictly as UTF-8 (a name that is not, held as
    ``\udcXX``, raised UnicodeEncodeError); such a file is opened by its bytes.
    """
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@functools.lru_cache(maxsize=256)
def parquet_metadata(path: str, stamp: tuple) -> pq.FileMetaData:
    """A Parquet file's footer, read once per path and ``stamp`` (:attr:`DataFile.stamp
    <freqlab.corpus.file_discovery.DataFile.stamp>`: size, modification and status-change times).
    """
    with open_parquet(path) as parquet:
        return parquet.metadata


def first_row(path: str) -> dict | None:
    """The first row of a Parquet or Arrow file, every column (None when it has no row; a value holding invalid
    UTF-8 is shown as ``"<invalid UTF-8>"``).
    """
    if path.lower().endswith(".parquet"):
        with open_parquet(path) as parquet:
            batch = next(parquet.iter_batches(batch_size=1), None)
    else:
        batch = next(_batches(path), None)
    if batch is None or not batch.num_rows:
        return None
    row = batch.slice(0, 1)
    return {name: _shown(python_values(row.column(k))[0]) for k, name in enumerate(row.schema.names)}


def repeated_column(schema_names: list[str], wanted) -> str | None:
    """What is wrong when one of the ``wanted`` column names appears more than once among ``schema_names`` (which of
    them holds the data cannot be told), or None.
    """
    for name in wanted:
        if name and (times := schema_names.count(name)) > 1:
            return f"column {name!r} appears {times} times; the file is ambiguous"
    return None


class _NotUtf8:
    """A string value that is not UTF-8 (Arrow does not check what a writer put in a buffer)."""

    def __repr__(self) -> str:
        return "NOT_UTF8"


NOT_UTF8 = _NotUtf8()


def python_values(column: pa.Array) -> list:
    """A column's values as Python objects, where a string holding invalid UTF-8 is :data:`NOT_UTF8` (inside a
    struct too: only that field, so a row whose other fields are needed stays readable), not an exception.
    """
    try:
        return column.to_pylist()
    except UnicodeDecodeError:
        pass
    if pa.types.is_struct(column.type):
        names = [column.type.field(i).name for i in range(column.type.num_fields)]
        children = [python_values(child) for child in column.flatten()]
        nulls = column.is_null().to_pylist()
        return [None if null else dict(zip(names, row, strict=True)) for null, row in zip(nulls, zip(*children))]
    values = []
    for k in range(len(column)):
        try:
            values.append(column[k].as_py())
        except UnicodeDecodeError:
            values.append(NOT_UTF8)
    return values


def _shown(value):
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return "<invalid UTF-8>" if value is NOT_UTF8 else value


def parquet_batches(
    path: str, columns, start: int, end: int | None, batch_rows: int
) -> tuple[Iterator[pa.RecordBatch], int]:
    """Record batches of the ``columns`` present in row groups ``start`` .. ``end - 1`` (None: to the last),
    and the file row of the first one (0-based).
    """
    parquet = open_parquet(path)
    present = [name for name in columns if name in parquet.schema_arrow.names]
    groups = None
    first_row = 0
    if start or end is not None:
        metadata = parquet.metadata
        groups = list(range(start, metadata.num_row_groups if end is None else end))
        first_row = sum(metadata.row_group(i).num_rows for i in range(start))
    batches = parquet.iter_batches(batch_size=batch_rows, row_groups=groups, columns=present, use_threads=False)
    return batches, first_row


def _arrow_source(path: str) -> pa.NativeFile:
    return pa.PythonFile(open_input(path), mode="r") if is_url(path) else pa.memory_map(os.fsencode(path))


def open_arrow(path: str) -> pa.ipc.RecordBatchStreamReader | pa.ipc.RecordBatchFileReader:
    """An Arrow IPC reader over a memory map: stream format (what ``datasets`` writes), else file format."""
    source = _arrow_source(path)
    try:
        return pa.ipc.open_stream(source)
    except pa.ArrowInvalid:
        return pa.ipc.open_file(source)


def arrow_batches(path: str, columns=None) -> Iterator[pa.RecordBatch]:
    """Record batches of an Arrow file (only ``columns``, when given and present)."""
    for batch in _batches(path):
        yield batch.select([c for c in columns if c in batch.schema.names]) if columns is not None else batch


def _batches(path: str) -> Iterator[pa.RecordBatch]:  # every batch of an Arrow file, in order
    reader = open_arrow(path)
    if isinstance(reader, pa.ipc.RecordBatchFileReader):
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)
        return
    batches = 0
    for batch in reader:
        batches += 1
        yield batch
    check_stream_end(path, batches)


def check_stream_end(path: str, batches: int) -> None:
    """Raise ``pyarrow.ArrowInvalid`` unless the Arrow IPC stream at ``path`` ends with its end-of-stream marker and
    nothing after it. pyarrow reads a stream cut between two messages (a copy or download cut short, a writer
    killed before it closed) as a shorter valid stream, and stops at the first marker of streams written one after
    another: either would lose documents silently. The messages are walked again, without decoding (zero-copy over
    the memory map; a remote stream is downloaded again: a stream cut short, or two streams, may end with bytes
    that are the marker). ``batches``: how many were read, for the message.
    """
    with _arrow_source(path) as source:  # a remote stream is read again: its last bytes alone prove nothing
        messages = pa.ipc.MessageReader.open_stream(source)
        while True:
            end = source.tell()
            try:
                messages.read_next_message()
            except StopIteration:
                break
        if source.tell() == end:  # the bytes ended where a message could start: no marker (8 bytes; 4 before 0.15)
            raise pa.ArrowInvalid(
                f"the stream ends after {batches} record batches without Arrow's end-of-stream marker: cut short, "
                "or written by a writer that does not end its streams (rewrite it with pyarrow or polars)"
            )
        if source.read(1):
            raise pa.ArrowInvalid(
                f"bytes follow the end-of-stream marker after {batches} record batches (streams written one after "
                "another are not one stream)"
            )
