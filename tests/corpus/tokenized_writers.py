"""Writers of tokenized-data files for the tests, each following the layout its library documents, written
without freqlab's readers: Megatron indexes (``indexed_dataset.py``'s ``_IndexWriter``) and plain streams."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

MEGATRON_CODES = {
    np.uint8: 1,
    np.int8: 2,
    np.int16: 3,
    np.int32: 4,
    np.int64: 5,
    np.float64: 6,
    np.float32: 7,
    np.uint16: 8,
}


def write_megatron(prefix: Path, documents: list[list[list[int]]], dtype=np.int32) -> Path:
    """``PREFIX.bin`` + ``PREFIX.idx``: each document a list of sequences, each sequence a list of token ids.

    Header ``MMIDIDX\\0\\0``, version 1 (<Q), dtype code (<B), sequence count (<Q), document_indices entries
    (<Q); then sequence lengths (int32), byte pointers (int64), document_indices (int64, starting at 0).
    """
    prefix.parent.mkdir(parents=True, exist_ok=True)
    lengths, pointers, document_indices = [], [], [0]
    offset = 0
    with open(f"{prefix}.bin", "wb") as data:
        for document in documents:
            for sequence in document:
                data.write(np.asarray(sequence, dtype).tobytes())
                lengths.append(len(sequence))
                pointers.append(offset)
                offset += len(sequence) * np.dtype(dtype).itemsize
            document_indices.append(len(lengths))
    with open(f"{prefix}.idx", "wb") as index:
        index.write(b"MMIDIDX\x00\x00")
        index.write(struct.pack("<Q", 1))
        index.write(struct.pack("<B", MEGATRON_CODES[dtype]))
        index.write(struct.pack("<Q", len(lengths)))
        index.write(struct.pack("<Q", len(document_indices)))
        index.write(np.asarray(lengths, np.int32).tobytes())
        index.write(np.asarray(pointers, np.int64).tobytes())
        index.write(np.asarray(document_indices, np.int64).tobytes())
    return Path(f"{prefix}.idx")


def single_sequence_documents(lengths: list[int], eod: int = 2, seed: int = 0) -> list[list[list[int]]]:
    """Documents of the given lengths, one sequence each, ending with ``eod`` (as ``--append-eod`` writes)."""
    rng = np.random.default_rng(seed)
    return [[[*rng.integers(3, 1000, n - 1).tolist(), eod]] if n else [] for n in lengths]
