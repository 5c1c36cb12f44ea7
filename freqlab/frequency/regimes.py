"""Data regimes: how documents become the attention segments of training windows of length L.

A *segment* is a run of tokens that attend only within themselves (one sequence for RoPE's Toeplitz
position matrix, STRING Sec. 2.2). Each regime maps a document-length histogram ``(lengths, counts)`` to a
segment-length histogram with every segment at most ``L`` long:

========== ==============================================================================================
natural    a document of n tokens becomes ``n // L`` segments of L plus one of ``n % L`` (STRING Fig. 1a)
truncate   a document is cut to ``min(n, L)``; the ``max(n - L, 0)`` tail tokens are dropped (reported)
concat     all T tokens in one stream cut into rows of L, no document mask: ``T // L`` rows of L and one of
           ``T % L`` (STRING Fig. 1c; f is linear in i)
uniform    the same token budget T with lengths uniform on 1..L (STRING Fig. 1b; f is quadratic in i)
pack       documents concatenated in stream order into rows of L *with* a document mask: a document that
           crosses a row boundary is cut there (packed pretraining with variable-length attention, e.g.
           TinyLlama, STRING App. A.2). Given only a histogram, the stream order is a seeded shuffle.
========== ==============================================================================================

Every regime but ``truncate`` conserves tokens, so ``f(0)`` equals the corpus's token count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from freqlab.errors import FreqlabError
from freqlab.frequency.kernels import pack_walk, scatter_add

REGIMES: tuple[str, ...] = ("natural", "truncate", "concat", "uniform", "pack")


@dataclass(frozen=True)
class Segments:
    """Segment-length histogram of one regime: ``counts[k]`` segments of ``lengths[k]`` tokens.

    ``lengths`` is sorted and unique, ``1 <= lengths <= L``; both arrays are int64.
    ``dropped_tokens`` counts tokens the regime discards (only ``truncate`` drops any).
    """

    lengths: np.ndarray
    counts: np.ndarray
    L: int
    regime: str
    dropped_tokens: int = 0

    @property
    def tokens(self) -> int:
        """Tokens inside the segments, which is f(0)."""
        return int(np.dot(self.lengths, self.counts))

    @property
    def segments(self) -> int:
        return int(self.counts.sum())


def check_histogram(lengths, counts) -> tuple[np.ndarray, np.ndarray]:
    """Validate and normalise a document-length histogram to int64 arrays of equal shape.

    Lengths must be >= 1 and counts >= 0 (a zero count is allowed and ignored). Raises FreqlabError
    naming the first offending value.
    """
    lengths = _as_int64(lengths, "lengths")
    counts = _as_int64(counts, "counts")
    if lengths.shape != counts.shape:
        raise FreqlabError(f"lengths and counts differ in size: {lengths.size} vs {counts.size}")
    if lengths.size and lengths.min() < 1:
        bad = int(lengths[np.argmax(lengths < 1)])
        raise FreqlabError(f"document lengths must be >= 1, got {bad}")
    if counts.size and counts.min() < 0:
        bad = int(counts[np.argmax(counts < 0)])
        raise FreqlabError(f"counts must be >= 0, got {bad}")
    return lengths, counts


def check_window(L) -> int:
    """Validate a training window length L (a positive integer)."""
    if isinstance(L, bool) or not isinstance(L, (int, np.integer)):
        raise FreqlabError(f"L must be a positive integer, got {L!r}")
    if L < 1:
        raise FreqlabError(f"L must be >= 1, got {L}")
    return int(L)


def _as_int64(values, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        array = array.reshape(-1)
    if array.size == 0:
        return array.astype(np.int64)
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)) or not np.all(array == np.round(array)):
            raise FreqlabError(f"{name} must be integers, got non-integer values")
    elif array.dtype.kind not in "iu":
        raise FreqlabError(f"{name} must be integers, got dtype {array.dtype}")
    return array.astype(np.int64)


def _collect(size: int, index: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum ``values`` by ``index`` into (sorted unique index, total) with zero totals removed."""
    dense = scatter_add(size, index.astype(np.int64), values.astype(np.int64))
    nonzero = np.flatnonzero(dense)
    return nonzero.astype(np.int64), dense[nonzero]


def _natural(lengths: np.ndarray, counts: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray]:
    full = (lengths // L) * counts
    rest = lengths % L
    index = np.concatenate([rest, [L]])
    values = np.concatenate([np.where(rest > 0, counts, 0), [int(full.sum())]])
    return _collect(L + 1, index, values)


def _truncate(lengths: np.ndarray, counts: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray, int]:
    dropped = int(np.dot(np.maximum(lengths - L, 0), counts))
    seg, cnt = _collect(L + 1, np.minimum(lengths, L), counts)
    return seg, cnt, dropped


def _stream(tokens: int, L: int) -> tuple[np.ndarray, np.ndarray]:
    """One stream of ``tokens`` tokens cut into rows of L."""
    rows, rest = divmod(tokens, L)
    return _collect(L + 1, np.array([L, rest]), np.array([rows, 1 if rest else 0]))


def _uniform(tokens: int, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Lengths 1..L each ``q = T // (L(L+1)/2)`` times; the r leftover tokens become extra segments of
    lengths L, L-1, ... while they fit, then one segment of what remains. Integer counts, exact budget."""
    sweep = L * (L + 1) // 2
    q, r = divmod(tokens, sweep)
    counts = np.full(L + 1, q, dtype=np.int64)
    counts[0] = 0
    length = L
    while r >= length > 0:
        counts[length] += 1
        r -= length
        length -= 1
    if r > 0:
        counts[r] += 1
    nonzero = np.flatnonzero(counts)
    return nonzero.astype(np.int64), counts[nonzero]


def stream_order(lengths: np.ndarray, counts: np.ndarray, seed: int = 0) -> np.ndarray:
    """Expand a histogram into one document length per document, in a seeded random stream order."""
    order = np.repeat(lengths, counts)
    np.random.default_rng(seed).shuffle(order)
    return order


def pack_documents(doc_lengths, L: int) -> Segments:
    """Pack documents, in the given order, into rows of L with a document mask (the ``pack`` regime).

    A document first fills the current row; whatever does not fit continues in the next rows, so a
    document crossing a row boundary is cut there. Runs in O(number of documents) with numba
    (10^8 documents take about a second).

    >>> pack_documents([3, 3, 3], 4).lengths.tolist(), pack_documents([3, 3, 3], 4).counts.tolist()
    ([1, 2, 3], [1, 1, 2])
    """
    L = check_window(L)
    docs = _as_int64(doc_lengths, "doc_lengths")
    if docs.size and docs.min() < 1:
        raise FreqlabError(f"document lengths must be >= 1, got {int(docs[np.argmax(docs < 1)])}")
    dense, _rows = pack_walk(docs, L)
    nonzero = np.flatnonzero(dense)
    return Segments(nonzero.astype(np.int64), dense[nonzero], L, "pack")


def segments(lengths, counts, L: int, regime: str = "natural", *, seed: int = 0) -> Segments:
    """Segment-length histogram of ``regime`` for documents ``(lengths, counts)`` in windows of ``L``.

    >>> s = segments([5000], [1], 2048)
    >>> s.lengths.tolist(), s.counts.tolist()
    ([904, 2048], [1, 2])
    """
    L = check_window(L)
    lengths, counts = check_histogram(lengths, counts)
    if regime == "natural":
        seg, cnt = _natural(lengths, counts, L)
        return Segments(seg, cnt, L, regime)
    if regime == "truncate":
        seg, cnt, dropped = _truncate(lengths, counts, L)
        return Segments(seg, cnt, L, regime, dropped)
    tokens = int(np.dot(lengths, counts))
    if regime == "concat":
        return Segments(*_stream(tokens, L), L, regime)
    if regime == "uniform":
        return Segments(*_uniform(tokens, L), L, regime)
    if regime == "pack":
        packed = pack_documents(stream_order(lengths, counts, seed), L)
        return packed
    raise FreqlabError(f"unknown regime {regime!r}; choose one of {', '.join(REGIMES)}")
