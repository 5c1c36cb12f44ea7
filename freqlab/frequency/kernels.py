"""numba kernels shared by the frequency math: exact int64 scatter-add and the packing walk.

Both are sequential loops that numpy cannot express without float weights (``np.bincount(weights=...)``
returns float64, which is inexact above 2**53) or Python-level iteration.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def scatter_add(size: int, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``out[index[k]] += values[k]`` in int64, for ``out`` of length ``size``."""
    out = np.zeros(size, dtype=np.int64)
    for k in range(index.shape[0]):
        out[index[k]] += values[k]
    return out


@numba.njit(cache=True)
def pack_walk(doc_lengths: np.ndarray, L: int) -> tuple:
    """Walk documents in order through rows of ``L`` tokens; count the pieces each row boundary cuts.

    Returns ``(counts, rows)`` where ``counts[l]`` is the number of segments of length ``l`` (1 <= l <= L)
    and ``rows`` the number of rows touched (the last may be partly filled). O(1) per document: a document
    first fills the current row, then whole rows, then starts a new one with its remainder.
    """
    counts = np.zeros(L + 1, dtype=np.int64)
    offset = 0  # tokens already in the current row
    rows = 0
    for k in range(doc_lengths.shape[0]):
        n = doc_lengths[k]
        if n <= 0:
            continue
        if offset == 0:
            rows += 1
        room = L - offset
        if n <= room:
            counts[n] += 1
            offset += n
            if offset == L:
                offset = 0
            continue
        # first piece fills the current row
        counts[room] += 1
        n -= room
        full = n // L
        rest = n - full * L
        counts[L] += full
        rows += full
        if rest > 0:
            counts[rest] += 1
            rows += 1
            offset = rest
        else:
            offset = 0
    return counts, rows
