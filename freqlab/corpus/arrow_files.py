"""Parquet and Arrow IPC files, local or remote (:func:`freqlab.corpus.remote_files.open_input`): opening them, their
metadata, their first row and their record batches. What :mod:`freqlab.corpus.columnar` (text columns) and
:mod:`freqlab.corpus.token_columns` (token columns) read through.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from freqlab.corpus.remote_files import is_url, open_input


def open_parquet(path: str) -> pq.ParquetFile:
    """A Parquet file by path, or over a remote stream (:func:`freqlab.corpus.remote_files.open_input`)."""
    return pq.ParquetFile(open_input(path) if is_url(path) else path)


@functools.lru_cache(maxsize=256)
def parquet_metadata(path: str, mtime_ns: int) -> pq.FileMetaData:
    """A Parquet file's footer, read once per path and modification time."""
    with open_parquet(path) as parquet:
        return parquet.metadata


def first_row(path: str) -> dict | None:
    """The first row of a Parquet or Arrow file, every column (None when it has no row)."""
    if path.lower().endswith(".parquet"):
        with open_parquet(path) as parquet:
            batch = next(parquet.iter_batches(batch_size=1), None)
    else:
        batch = next(_batches(path), None)
    return batch.slice(0, 1).to_pylist()[0] if batch is not None and batch.num_rows else None


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


def open_arrow(path: str) -> pa.ipc.RecordBatchStreamReader | pa.ipc.RecordBatchFileReader:
    """An Arrow IPC reader over a memory map: stream format (what ``datasets`` writes), else file format."""
    source = pa.PythonFile(open_input(path), mode="r") if is_url(path) else pa.memory_map(path)
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
    else:
        yield from reader
