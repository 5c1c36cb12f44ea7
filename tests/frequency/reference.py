"""Slow, obviously-correct references for the frequency math: explicit segment lists and token-level loops."""

from __future__ import annotations

from itertools import pairwise


def natural_segments(docs: list[int], L: int) -> list[int]:
    out = []
    for n in docs:
        while n > 0:
            out.append(min(n, L))
            n -= L
    return out


def truncate_segments(docs: list[int], L: int) -> list[int]:
    return [min(n, L) for n in docs]


def concat_segments(docs: list[int], L: int) -> list[int]:
    return natural_segments([sum(docs)], L) if docs else []


def pack_segments(docs: list[int], L: int) -> list[int]:
    """Token-level simulation: lay out document ids token by token in rows of L, then count runs."""
    stream = [doc for doc, n in enumerate(docs) for _ in range(n)]
    out = []
    for start in range(0, len(stream), L):
        row = stream[start : start + L]
        run = 1
        for a, b in pairwise(row):
            if a == b:
                run += 1
            else:
                out.append(run)
                run = 1
        out.append(run)
    return out


def frequency_of_segments(segment_lengths: list[int], L: int) -> list[int]:
    """f(i) = Σ_s max(|s| - i, 0) by counting every (query, key) pair of every segment."""
    f = [0] * L
    for s in segment_lengths:
        for m in range(s):  # query position inside the segment
            for n in range(m + 1):  # keys at or before it: relative position m - n
                f[m - n] += 1
    return f


def expand(lengths, counts) -> list[int]:
    return [int(n) for n, c in zip(lengths, counts) for _ in range(int(c))]


def best_fit_rows(docs: list[int], L: int) -> list[int]:
    """Best-fit packing token by token: chunks of at most L, longest first, each into the row with the least
    room that fits it (a new row if none); returns each row's fill (a row is one segment: no document mask)."""
    chunks = sorted(natural_segments(docs, L), reverse=True)
    rows: list[list[int]] = []  # the chunk lengths in each row
    for chunk in chunks:
        fitting = [r for r in rows if L - sum(r) >= chunk]
        if fitting:
            min(fitting, key=lambda r: L - sum(r)).append(chunk)
        else:
            rows.append([chunk])
    return [sum(r) for r in rows]


def megatron_windows(stream: list[int], eod: int, L: int, windows: list[int], reset: bool) -> list[int]:
    """Segments of Megatron windows token by token: window w's inputs are stream[w·L:(w+1)·L]; with ``reset``,
    a segment ends after each ``eod`` token among them."""
    out = []
    for w in windows:
        inputs = stream[w * L : (w + 1) * L]
        run = 0
        for token in inputs:
            run += 1
            if reset and token == eod:
                out.append(run)
                run = 0
        if run:
            out.append(run)
    return out


def regime_rows(docs: list[int], L: int, regime: str) -> tuple[list[list[int]], bool]:
    """The rows of a regime token by token: each row a list of document ids (one per token), and whether the
    regime masks documents. ``docs`` is the stream order (``pack``, ``concat``) or the document list."""
    if regime in ("natural", "truncate"):
        rows = []
        for doc, n in enumerate(docs):
            pieces = [min(n, L)] if regime == "truncate" else natural_segments([n], L)
            rows.extend([doc] * piece for piece in pieces)
        return rows, True
    if regime in ("pack", "concat"):
        stream = [doc for doc, n in enumerate(docs) for _ in range(n)]
        return [stream[start : start + L] for start in range(0, len(stream), L)], regime == "pack"
    if regime == "best-fit":
        return [[0] * fill for fill in best_fit_rows(docs, L)], False
    raise ValueError(regime)


def position_ids(row: list[int], doc_mask: bool) -> list[int]:
    """Position ids of a row: reset at each document start under a document mask, else 0..len-1."""
    out, start = [], 0
    for t, doc in enumerate(row):
        if doc_mask and t and doc != row[t - 1]:
            start = t
        out.append(t - start)
    return out


def attends(q: int, k: int, kind: str, size: int) -> bool:
    """The causal mask of one layer kind at (query, key) token indices in a row: sliding window of ``size`` keys
    (``q - k < size``) or chunks of ``size`` aligned to multiples of it in the row; global otherwise."""
    if k > q:
        return False
    if kind == "swa":
        return q - k < size
    if kind == "chunk":
        return q // size == k // size
    return True


def masked_pair_frequency(rows: list[list[int]], doc_mask: bool, L: int, kind: str = "global", size: int = 0):
    """f(i) and the exposure h(c) by brute force over the real masks: every (query, key) pair a row's mask allows,
    counted at its position-id difference; each query counted at its number of visible earlier keys."""
    f, h = [0] * L, [0] * L
    for row in rows:
        ids = position_ids(row, doc_mask)
        for q in range(len(row)):
            visible = [k for k in range(q + 1) if attends(q, k, kind, size) and (not doc_mask or row[k] == row[q])]
            for k in visible:
                f[ids[q] - ids[k]] += 1
            h[len(visible) - 1] += 1
    return f, h
