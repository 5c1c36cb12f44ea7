"""Slow, obviously-correct references for the frequency math: explicit segment lists and token-level loops."""

from __future__ import annotations

import collections
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
    """f(i) = Σ_s max(|s| - i, 0) by counting every (query, key) pair of a segment, once per distinct length,
    times the number of segments of that length."""
    f = [0] * L
    for s, copies in collections.Counter(segment_lengths).items():
        pairs = [0] * s
        for m in range(s):  # query position inside the segment
            for n in range(m + 1):  # keys at or before it: relative position m - n
                pairs[m - n] += 1
        for i, count in enumerate(pairs):
            f[i] += copies * count
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


# -- curricula and position ids: real rows, real position ids, real attention masks --------------------------------


def pairs_by_distance(position_ids: list[int], allowed, size: int) -> list[int]:
    """f[d] = #(query q, key k) with k <= q, ``allowed(q, k)`` and position_ids[q] - position_ids[k] = d."""
    f = [0] * size
    for q in range(len(position_ids)):
        for k in range(q + 1):
            if allowed(q, k):
                f[position_ids[q] - position_ids[k]] += 1
    return f


def add_into(total: list, part: list) -> None:
    for i, v in enumerate(part):
        total[i] += v


def token_rows(docs: list[int], L: int, regime: str) -> list[list[int]]:
    """Rows of L tokens, each token given as its document's index: ``concat``/``pack`` cut the stream of documents
    every L tokens, ``natural`` cuts each document into its own rows."""
    if regime == "natural":
        return [[d] * min(L, n - s) for d, n in enumerate(docs) for s in range(0, n, L)]
    stream = [d for d, n in enumerate(docs) for _ in range(n)]
    return [stream[s : s + L] for s in range(0, len(stream), L)]


def windowed_rows_frequency(docs, L, regime, windows, rule, offset=0):
    """f and dropped tokens of rows trained with ``windows[r]``, token by token: ``truncate`` keeps the first w
    tokens of a row; otherwise position p of a row is in fragment #{g >= 1 : g·w + offset <= p} and a query
    attends the keys of its fragment (and, except under ``concat``, of its document)."""
    f, dropped = [0] * L, 0
    for row, w in zip(token_rows(docs, L, regime), windows):
        if rule == "truncate":
            dropped += max(len(row) - w, 0)
            row = row[:w]
        fragment = [sum(1 for g in range(1, L + 1) if g * w + offset <= p) for p in range(len(row))]
        masked = regime != "concat"

        def allowed(q, k, row=row, fragment=fragment, masked=masked):
            return fragment[q] == fragment[k] and (not masked or row[q] == row[k])

        add_into(f, pairs_by_distance(list(range(len(row))), allowed, L))
    return f, dropped


def seqlen_reshape_frequency(docs, L, regime, windows, micro_batch):
    """f and dropped tokens of Megatron-DeepSpeed's ``data_post_process`` with ``seqlen_reshape`` (pretrain_gpt.py),
    transcribed on numpy arrays: rows of L inputs and the next token as label (L + 1 tokens; -1 past the stream), in
    micro-batches of ``micro_batch`` consecutive rows (the stage's last, shorter row alone), each reshaped at its
    window w (``windows[r]``) when w is below its inputs; then each resulting row's inputs attend their own piece
    (and, except under ``concat``, their own document). Tokens are stream indices: dropped = those no input holds."""
    import math

    import numpy as np

    stream = [d for d, n in enumerate(docs) for _ in range(n)]
    T = len(stream)
    starts, full = list(range(0, T, L)), T // L
    groups = [list(range(k, min(k + micro_batch, full))) for k in range(0, full, micro_batch)]
    groups += [[full]] if T % L else []
    f, inputs = [0] * L, set()
    for group in groups:
        w, n = windows[group[0]], min(L, T - starts[group[0]])
        assert all(windows[r] == w for r in group)
        text = np.array([[s + j if s + j < T else -1 for j in range(n + 1)] for s in (starts[r] for r in group)])
        if w < n:  # transcribed: current_seqlen < args.seq_length
            orig_num_token = text.size
            reshape_len = (text.shape[1] // (w + 1)) * (w + 1)
            text = np.concatenate((text[:, :reshape_len].reshape(-1, w + 1), text[:, -(w + 1) :]), 0)
            num_row = math.ceil(orig_num_token / (w + 1))
            num_row = min(num_row, text.shape[0])
            if num_row > 1 and num_row % 2 != 0:
                num_row -= 1
            text = text[:num_row, :]
        for piece in text[:, :-1].tolist():  # tokens = text[:, :-1]: the inputs
            inputs.update(piece)
            masked = regime != "concat"

            def allowed(q, k, piece=piece, masked=masked):
                return not masked or stream[piece[q]] == stream[piece[k]]

            add_into(f, pairs_by_distance(list(range(len(piece))), allowed, L))
    return f, T - len(inputs)


def dd_get_binary(n: int, min_log2: int, max_log2: int, choose=None) -> tuple[list[int], int]:
    """Dataset Decomposition's ``get_binary`` on a document of n tokens, transcribed: the pieces' k and the tokens
    never used as inputs (``choose()`` draws k for a piece longer than the largest bucket; None: the largest)."""
    seq = list(range(n))
    ks = []
    while len(seq) > 1:
        k = (len(seq) - 1).bit_length() - 1
        if k < min_log2:
            break
        if k > max_log2:
            k = choose() if choose else max_log2
        ks.append(k)
        seq = seq[(1 << k) + 1 :]
    return ks, n - sum(1 << k for k in ks)


def pose_row(n: int, L: int, target: int, rng) -> list[int]:
    """Position ids of one document's PoSE row, transcribed from ``train_preprocess_function_pose``."""
    ids = list(range(min(n, 5 * L)))
    len_chunk = min(len(ids), L)
    len_input = len(ids)
    lt1 = 0
    rt1 = rng.randint(1, (len_chunk + 1) // 2)
    rt2 = rng.randint(lt1 + len_chunk, len_input)
    lt2 = rt2 - (len_chunk - (rt1 - lt1))
    chunked_ids = ids[lt1:rt1] + ids[lt2:rt2]
    pos_ids = list(range(len(chunked_ids)))
    lt = 0
    rt = rng.randint(lt, target - len(pos_ids))
    return [p + lt for p in pos_ids[: rt1 - lt1]] + [p + rt for p in pos_ids[rt1 - lt1 :]]


def pose_expectation(docs: list[int], L: int, target: int) -> list:
    """E[f] over every equally likely (a, u) of every document, as Fractions, from real position ids."""
    from fractions import Fraction

    total = [Fraction(0)] * target
    for n in docs:
        row = min(n, L)
        draws = [(a, u) for a in range(1, (row + 1) // 2 + 1) for u in range(target - row + 1)]
        for a, u in draws:
            ids = list(range(a)) + [p + u for p in range(a, row)]
            f = pairs_by_distance(ids, lambda q, k: True, target)
            for d, v in enumerate(f):
                total[d] += Fraction(v, len(draws))
    return total


def dd_expected_segments(n: int, min_log2: int, max_log2: int) -> dict:
    """E[number of pieces of 2^k inputs] of ``get_binary(randomize=True)`` on n tokens, by following every draw
    (bucket k with probability 2^(max - k) / (2^buckets - 1)) as a tree, in Fractions."""
    from fractions import Fraction

    total_weight = (1 << (max_log2 - min_log2 + 1)) - 1
    expected: dict = {}

    def walk(m: int, probability) -> None:
        while m > 1:
            k = (m - 1).bit_length() - 1
            if k < min_log2:
                return
            if k > max_log2:
                for choice in range(min_log2, max_log2 + 1):
                    p = probability * Fraction(1 << (max_log2 - choice), total_weight)
                    expected[1 << choice] = expected.get(1 << choice, 0) + p
                    walk(m - (1 << choice) - 1, p)
                return
            expected[1 << k] = expected.get(1 << k, 0) + probability
            m -= (1 << k) + 1

    walk(n, Fraction(1))
    return expected


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
