"""Parquet files and Arrow files (``.arrow``, e.g. the shards of a dataset saved with ``datasets.save_to_disk``).

Both are read in record batches of :data:`BATCH_ROWS` rows, loading only the top-level columns the field
mapping needs, so memory is one batch (plus, for Parquet, the row group being decoded), whatever the file
size. Arrow files are memory-mapped. ``where`` of each record is ``path:row N`` (1-based row in the file).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
import pyarrow.parquet as pq

from freqlab.corpus.base import Document, FileShard
from freqlab.corpus.fields import Fields

BATCH_ROWS = 256
# what pyarrow raises for a corrupt or truncated file
_ARROW_ERRORS = (pa.ArrowException, OSError)


def _documents(batches: Iterable[pa.RecordBatch], fields: Fields, path: str) -> Iterator[Document]:
    """Documents of a stream of record batches: each row becomes a dict of the needed top-level columns."""
    extract = fields.extractor()
    row = 0
    for batch in batches:
        names = [name for name in fields.columns if name in batch.schema.names]
        columns = [batch.column(name).to_pylist() for name in names]
        # No needed column present: every row is a record without a text field (and says so).
        for values in zip(*columns, strict=True) if columns else [()] * batch.num_rows:
            row += 1
            text, source, error = extract(dict(zip(names, values, strict=True)))
            yield Document(text, source, f"{path}:row {row}", error)


@dataclass(frozen=True)
class ParquetShard(FileShard):
    """One Parquet file."""

    read_errors: ClassVar = _ARROW_ERRORS

    def records(self) -> Iterator[Document]:
        parquet = pq.ParquetFile(self.path)
        present = [name for name in self.fields.columns if name in parquet.schema_arrow.names]
        batches = parquet.iter_batches(batch_size=BATCH_ROWS, columns=present, use_threads=False)
        yield from _documents(batches, self.fields, self.path)

    def rows(self) -> int:
        """Row count from the Parquet footer (cheap: no data is read)."""
        with self.reading():
            return pq.ParquetFile(self.path).metadata.num_rows


def _open_arrow(path: str) -> pa.ipc.RecordBatchStreamReader | pa.ipc.RecordBatchFileReader:
    """An Arrow IPC reader over a memory map: stream format (what ``datasets`` writes), else file format."""
    source = pa.memory_map(path)
    try:
        return pa.ipc.open_stream(source)
    except pa.ArrowInvalid:
        return pa.ipc.open_file(source)


def _arrow_batches(path: str) -> Iterator[pa.RecordBatch]:
    reader = _open_arrow(path)
    if isinstance(reader, pa.ipc.RecordBatchFileReader):
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)
    else:
        yield from reader


@dataclass(frozen=True)
class ArrowShard(FileShard):
    """One Arrow IPC file (stream or file format), memory-mapped."""

    read_errors: ClassVar = _ARROW_ERRORS

    def records(self) -> Iterator[Document]:
        yield from _documents(_rebatched(_arrow_batches(self.path)), self.fields, self.path)

    def rows(self) -> int:
        """Row count (reads only batch headers through the memory map)."""
        with self.reading():
            return sum(batch.num_rows for batch in _arrow_batches(self.path))


def _rebatched(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Split big record batches (``datasets`` writes 1000-row batches, or more) into BATCH_ROWS slices."""
    for batch in batches:
        for start in range(0, batch.num_rows, BATCH_ROWS):
            yield batch.slice(start, BATCH_ROWS)
