"""numba kernels shared by the frequency math: exact int64 scatter-add and the packing walk.

Both are sequential loops that numpy cannot express without float weights (``np.bincount(weights=...)``
returns float64, which is inexact above 2**53) or Python-level iteration.
"""

from __future__ import annotations

import numpy as np

from freqlab.jit import njit


@njit(cache=True)
def scatter_add(size: int, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``out[index[k]] += values[k]`` in int64, for ``out`` of length ``size``."""
    out = np.zeros(size, dtype=np.int64)
    for k in range(index.shape[0]):
        out[index[k]] += values[k]
    return out


@njit(cache=True)
def pack_walk(stream: np.ndarray, L: int, lengths: np.ndarray, weights: np.ndarray) -> tuple:
    """Walk documents in order through rows of ``L`` tokens; count the pieces each row boundary cuts.

    Returns ``(counts, rows)`` where ``counts[l]`` is the number of segments of length ``l`` (1 <= l <= L)
    and ``rows`` the number of rows touched (the last may be partly filled). O(1) per document: a document
    first fills the current row, then whole rows, then starts a new one with its remainder. ``stream`` holds the
    documents' lengths, each counted once, when ``lengths`` is empty; else each is an index k into ``lengths`` and
    ``weights``: a document of ``lengths[k]`` tokens whose pieces count ``weights[k]`` times (a weighted sample).
    """
    counts = np.zeros(L + 1, dtype=np.int64)
    indexed = lengths.shape[0] > 0
    offset = 0  # tokens already in the current row
    rows = 0
    for k in range(stream.shape[0]):
        n = lengths[stream[k]] if indexed else stream[k]
        if n <= 0:
            continue
        w = weights[stream[k]] if indexed else 1
        if offset == 0:
            rows += w
        room = L - offset
        if n <= room:
            counts[n] += w
            offset += n
            if offset == L:
                offset = 0
            continue
        # first piece fills the current row
        counts[room] += w
        n -= room
        full = n // L
        rest = n - full * L
        counts[L] += full * w
        rows += full * w
        if rest > 0:
            counts[rest] += w
            rows += w
            offset = rest
        else:
            offset = 0
    return counts, rows


@njit(cache=True)
def _first_fit_at_least(tree: np.ndarray, size: int, need: int) -> int:
    """Smallest index >= ``need`` whose count is > 0, in a sum segment tree over ``size`` leaves; -1 if none."""
    if need >= size:
        return -1
    # walk up from the leaf of `need`, then down into the first subtree right of the path that holds a bin
    node = need + size
    if tree[node] > 0:
        return need
    while node > 1:
        if node % 2 == 0 and tree[node + 1] > 0:  # a left child: its right sibling covers larger indices
            node += 1
            while node < size:
                node = 2 * node if tree[2 * node] > 0 else 2 * node + 1
            return node - size
        node //= 2
    return -1


@njit(cache=True)
def _tree_add(tree: np.ndarray, size: int, index: int, delta: int) -> None:
    node = index + size
    while node >= 1:
        tree[node] += delta
        node //= 2


@njit(cache=True)
def best_fit_fills(chunk_lengths: np.ndarray, chunk_counts: np.ndarray, L: int) -> np.ndarray:
    """Best-fit-decreasing packing of chunks (each <= L) into bins of L; ``fills[f]`` = bins holding f tokens.

    Chunks are taken longest first (``chunk_lengths`` sorted decreasing); each goes into the open bin with the
    least room that still fits it, or into a new bin (Ding et al. 2024, Sec. 3). Bins are tracked only by their
    room (a segment tree over 0..L), which is all the fills depend on: ties between bins of equal room do not
    change them. O(chunks · log L); ``counts`` of chunks of one length are placed in bulk while the bins they
    go into cannot become a tighter fit for the next one.
    """
    size = 1
    while size < L + 1:
        size *= 2
    tree = np.zeros(2 * size, dtype=np.int64)  # leaf r: open bins with room r (1 <= r < L)
    fills = np.zeros(L + 1, dtype=np.int64)
    new_bins = 0  # bins opened so far (their fills are read off the tree at the end)
    for k in range(chunk_lengths.shape[0]):
        length = chunk_lengths[k]
        left = chunk_counts[k]
        while left > 0:
            room = _first_fit_at_least(tree, size, length)
            if room == -1:  # no open bin fits: open new ones, L - length room each
                rest = L - length
                if rest < length or rest == 0:  # a new bin can never take another chunk of this length
                    new_bins += left
                    if rest > 0:
                        _tree_add(tree, size, rest, left)
                    else:
                        fills[L] += left
                    left = 0
                else:
                    new_bins += 1
                    _tree_add(tree, size, rest, 1)
                    left -= 1
                continue
            bins = tree[room + size]
            rest = room - length
            take = bins if rest < length else 1  # bins left with less room than the chunk are final for it
            take = min(take, left)
            _tree_add(tree, size, room, -take)
            if rest > 0:
                _tree_add(tree, size, rest, take)
            else:
                fills[L] += take
            left -= take
    for room in range(1, L):
        fills[L - room] += tree[room + size]
    return fills


@njit(cache=True)
def megatron_walk(
    order: np.ndarray,
    sequence_lengths: np.ndarray,
    cut_starts: np.ndarray,
    cut_offsets: np.ndarray,
    L: int,
    windows: int,
    consumed: np.ndarray,
) -> np.ndarray:
    """Segments of Megatron GPT windows with ``reset_attention_mask``: ``counts[l]`` segments of l tokens.

    The sequences ``order`` names (the trainer's stream, a sequence id per entry) form one token stream; window w's
    inputs are tokens ``[w·L, (w+1)·L)``; a segment ends after each EOD token, at offsets
    ``cut_offsets[cut_starts[j]:cut_starts[j + 1]]`` (ascending) within sequence j, and at window boundaries. Only
    windows with ``consumed[w]`` count (all when ``consumed`` is empty). O(stream + EODs + windows).
    """
    counts = np.zeros(L + 1, dtype=np.int64)
    limit = windows * L  # tokens covered by the windows' inputs
    every = consumed.shape[0] == 0
    start = 0  # of the current segment
    position = 0  # stream position after the sequences walked so far
    before = 0  # stream position where the current sequence starts
    c = 0  # the next cut of the current sequence, up to c_end
    c_end = 0
    k = 0
    n = order.shape[0]
    while start < limit:
        if c < c_end:
            cut = before + cut_offsets[c] + 1
            c += 1
        elif k < n:
            j = order[k]
            before = position
            position += sequence_lengths[j]
            c, c_end = cut_starts[j], cut_starts[j + 1]
            k += 1
            continue
        else:
            cut = limit  # the stream ran out: close what is left
        cut = min(cut, limit)
        # the tokens [start, cut) as pieces cut at window boundaries
        while start < cut:
            window = start // L
            end = min(cut, (window + 1) * L)
            if every or consumed[window]:
                counts[end - start] += 1
            start = end
    return counts


@njit(cache=True)
def blending_counts(weights: np.ndarray, samples: int) -> np.ndarray:
    """Samples per dataset among the first ``samples`` of a Megatron blend (``build_blending_indices``)."""
    counts = np.zeros(weights.shape[0], dtype=np.int64)
    for k in range(samples):
        scale = max(float(k), 1.0)
        best = 0
        best_error = weights[0] * scale - counts[0]
        for d in range(1, weights.shape[0]):
            error = weights[d] * scale - counts[d]
            if error > best_error:
                best_error = error
                best = d
        counts[best] += 1
    return counts


@njit(cache=True)
def pack_walk_chunked(doc_lengths: np.ndarray, L: int, C: int) -> np.ndarray:
    """:func:`pack_walk` with every row also cut at the multiples of ``C`` within it (chunked attention, Llama 4
    ``attention_chunk_size``, beside the document mask): ``counts[l]`` pieces of l tokens (1 <= l <= min(C, L)).

    A row of L is a run of sub-rows of C tokens and one of ``L % C``; documents are walked through them in
    order. Whole rows inside a long document are counted in bulk, so the cost is O(documents + tokens / C).
    """
    top = min(C, L)
    counts = np.zeros(top + 1, dtype=np.int64)
    per_row = L // C if C < L else 0  # whole chunks in a row
    rest_row = L - per_row * C if C < L else L
    offset = 0  # position in the current row
    for k in range(doc_lengths.shape[0]):
        n = doc_lengths[k]
        while n > 0:
            if offset == 0 and n >= L:  # whole rows inside the document
                full = n // L
                if per_row:
                    counts[C] += full * per_row
                if rest_row:
                    counts[rest_row] += full
                n -= full * L
                continue
            boundary = min(L, (offset // C + 1) * C)  # end of the current chunk
            room = boundary - offset
            if n < room:
                counts[n] += 1
                offset += n
                n = 0
            else:
                counts[room] += 1
                n -= room
                offset = 0 if boundary == L else boundary
    return counts
