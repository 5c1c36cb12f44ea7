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
best-fit   best-fit packing (Ding et al. 2024, "Fewer truncations improve language modeling", Sec. 3):
           documents cut into chunks of at most L (as ``natural``), chunks placed longest first into the
           row with the least room that fits them; no document mask, so a row is one segment of its fill
           (with a mask, the segments would be the chunks: the ``natural`` regime)
megatron   Megatron-LM's GPTDataset windows (:mod:`freqlab.frequency.megatron_replay`, exact from the ``.idx``
           and the seed). From a histogram alone there is no order: ``concat`` (without
           ``reset_attention_mask``) or ``pack`` (with it) is computed instead, and ``approximation`` says so
========== ==============================================================================================

Every regime but ``truncate`` and ``megatron`` conserves tokens, so ``f(0)`` equals the corpus's token count
(Megatron's replay trains its train split's windows: ``samples · L`` tokens).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from freqlab.arrays import as_int64 as _as_int64
from freqlab.arrays import (  # the first two also for import compatibility
    check_histogram,
    exact_dot,
    int64_tokens,
    real_number,
    summed_by_length,
)
from freqlab.errors import FreqlabError, brief
from freqlab.frequency.kernels import best_fit_fills, pack_walk, scatter_add
from freqlab.resources import require_memory
from freqlab.sizes import MAX_POSITIONS

#: The data regimes f(i) is computed for (the table in the module docstring says what each one does).
REGIMES: tuple[str, ...] = ("natural", "truncate", "concat", "uniform", "pack", "best-fit", "megatron")
EXPANDING: frozenset[str] = frozenset({"pack", "best-fit"})  # their cost grows with the number of documents
#: the regimes a scan reports and its figures draw unless told (pack: how STRING trained, App. A.2)
DEFAULT_REGIMES: tuple[str, ...] = ("natural", "pack", "concat")


def expands_documents(regimes: str | Iterable[str]) -> bool:
    """Whether any of ``regimes`` walks the histogram document by document (``pack``, ``best-fit``): a float64
    source mix for them is kept to a bounded number of documents (``weighted_histogram(..., stream=True)``).

    >>> expands_documents("best-fit"), expands_documents(["natural", "concat"])
    (True, False)
    """
    return (regimes in EXPANDING) if isinstance(regimes, str) else any(r in EXPANDING for r in regimes)


@dataclass(frozen=True)
class Segments:
    """Segment-length histogram of one regime: ``counts[k]`` segments of ``lengths[k]`` tokens.

    ``lengths`` is sorted and unique, ``1 <= lengths <= L``; both arrays are int64.
    ``dropped_tokens`` counts tokens the regime discards (only ``truncate`` drops any); ``approximation``
    names the regime computed in place of one that a histogram cannot give exactly (``megatron``).

    Attributes
    ----------
    lengths : numpy.ndarray
        Distinct segment lengths, int64, sorted, 1 <= lengths <= L.
    counts : numpy.ndarray
        Segments of each length, int64.
    L : int
        Training window (the model's max_position_embeddings).
    regime : str
        The regime that made them.
    dropped_tokens : int
        Tokens the regime discards (``truncate`` only).
    approximation : str or None
        The regime computed in place of one a histogram cannot give exactly (``megatron``).
    note : str or None
        What a reader of the row should know of how it was computed (``megatron``: a reset mask that cuts nothing).
    """

    lengths: np.ndarray
    counts: np.ndarray
    L: int
    regime: str
    dropped_tokens: int = 0
    approximation: str | None = None
    note: str | None = None

    @property
    def tokens(self) -> int:
        """Tokens inside the segments, which is f(0) (exact: Python integers)."""
        return exact_dot(self.lengths, self.counts)

    @property
    def segments(self) -> int:
        """Number of segments."""
        return int(self.counts.sum())


MAX_WINDOW = MAX_POSITIONS  # f is a dense array of L int64 values: 8 GiB at this size


def check_window(L) -> int:
    """Validate a training window length L (a positive integer, at most 2^30)."""
    if isinstance(L, bool) or not isinstance(L, (int, np.integer)):
        raise FreqlabError(f"L must be a positive integer, got {L!r}")
    if L < 1:
        raise FreqlabError(f"L must be >= 1, got {L}")
    if L > MAX_WINDOW:
        raise FreqlabError(f"L = {L} is larger than freqlab supports (2^30 = {MAX_WINDOW})")
    require_memory(BYTES_PER_POSITION * int(L), f"--L {int(L):,}", f"f(i), {BYTES_PER_POSITION} bytes per position")
    return int(L)


def regime_name(regime) -> str:
    """``regime`` when it is a string; a FreqlabError naming it otherwise (np.array([]) met ``==``: "the truth value of
    an empty array is ambiguous", a review). Whether it names a regime is the caller's to say.
    """
    if not isinstance(regime, str):
        raise FreqlabError(f"regime must be a regime name (a string: {', '.join(REGIMES)}), got {brief(regime)}")
    return regime


def check_windows(Ls) -> list[int]:
    """One window or several (a list, tuple, range or array of them) as a non-empty list of validated windows
    (:func:`check_window`): ``2048``, ``np.int64(2048)`` and ``[2048, 4096]`` alike; a string is no list of windows.

    >>> check_windows(2048), check_windows((1024, np.int64(4096)))
    ([2048], [1024, 4096])
    """
    if isinstance(Ls, (str, bytes)):  # "2048" is not the windows 2, 0, 4, 8
        raise FreqlabError(f"L must be a positive integer or a list of them, got {Ls!r}")
    if isinstance(Ls, np.ndarray) and Ls.ndim == 0:
        Ls = Ls.item()
    try:
        items = iter(Ls)
    except TypeError:  # one window (a bool or a float is refused by check_window)
        return [check_window(Ls)]
    windows = [check_window(L) for L in items]  # a list, tuple, range, array, set, generator: each one checked
    if not windows:
        raise FreqlabError("give at least one window L")
    return windows


#: peak bytes per position of L while one window's f(i) is computed and summarised, in every regime (measured on
#: L = 2^25: 8.0 natural, truncate, concat and pack, 8.8 uniform, 9.0 with the summary of ``freqlab freq``)
BYTES_PER_POSITION = 10


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
    dropped = exact_dot(np.maximum(lengths - L, 0), counts)
    seg, cnt = _collect(L + 1, np.minimum(lengths, L), counts)
    return seg, cnt, dropped


def _stream(tokens: int, L: int) -> tuple[np.ndarray, np.ndarray]:
    """One stream of ``tokens`` tokens cut into rows of L."""
    rows, rest = divmod(tokens, L)
    return _collect(L + 1, np.array([L, rest]), np.array([rows, 1 if rest else 0]))


def _uniform(tokens: int, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Lengths 1..L each ``q = T // (L(L+1)/2)`` times; the r leftover tokens become one extra segment each
    of lengths spread evenly over 1..L (taken in bit-reversed order, a low-discrepancy sequence, while they
    fit), plus one segment of what remains. Integer counts and the exact budget; f is the quadratic
    f(i) ∝ (L − i)(L − i + 1)/2 at whole sweeps of L(L+1)/2 tokens and close to it from a tenth of a sweep on (at L =
    2048, for i < L/2: within 0.1% at half a sweep, 2.2% at a tenth, 13% at a hundredth, where the few lengths drawn
    make it lumpy; a review found the docstring claimed more).
    """
    sweep = L * (L + 1) // 2
    q, r = divmod(tokens, sweep)
    # from an eighth of a sweep on, more than ~L/8 lengths get a count: the counts of every length (8 bytes a
    # position), the lengths and their counts kept (16 more where all have one), then f's 8 (a review: 40-42 bytes a
    # position, past the common 10); below, the few lengths found stay within it
    if q > 0 or 8 * r >= sweep:
        require_memory(
            UNIFORM_BYTES_PER_POSITION * L, f"--L {L:,}",
            f"uniform f(i) of {tokens:,} tokens, an eighth of a sweep of every length or more: "
            f"{UNIFORM_BYTES_PER_POSITION} bytes per position",
        )  # fmt: skip
    counts = np.full(L + 1, q, dtype=np.int64)
    counts[0] = 0
    rest = r
    bits = max(1, (L - 1).bit_length())
    for start in range(0, (1 << bits) if r else 0, _SPREAD_CHUNK):  # a chunk at a time: memory flat in L
        spread = _bit_reversed_lengths(L, start, start + _SPREAD_CHUNK)
        cumulative = np.cumsum(spread)
        taken = int(np.searchsorted(cumulative, rest, side="right"))
        counts[spread[:taken]] += 1
        rest -= int(cumulative[taken - 1]) if taken else 0
        if taken < spread.size:
            break
    if rest:
        counts[rest] += 1
    if q:  # every length has a count: no index arrays to find them
        return np.arange(1, L + 1, dtype=np.int64), counts[1:]
    nonzero = np.flatnonzero(counts)
    return nonzero.astype(np.int64, copy=False), counts[nonzero]


_SPREAD_CHUNK = 1 << 20
#: peak bytes per position of a uniform f whose budget is an eighth of a sweep L(L+1)/2 or more: the counts of every
#: length, the lengths, and f (measured: 24.0 bytes allocated, 26.3 resident at L = 2^22)
UNIFORM_BYTES_PER_POSITION = 28


def _bit_reversed_lengths(L: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """1..L in bit-reversed order of 0..L-1: every prefix is spread evenly over the range. ``start``, ``stop``:
    only the part of the order that indices ``start`` .. ``stop - 1`` of the bit-reversal (of 0 .. 2^bits - 1) give.

    >>> _bit_reversed_lengths(8).tolist(), _bit_reversed_lengths(6).tolist(), _bit_reversed_lengths(6, 4).tolist()
    ([1, 5, 3, 7, 2, 6, 4, 8], [1, 5, 3, 2, 6, 4], [2, 6, 4])
    """
    bits = max(1, (L - 1).bit_length())
    index = np.arange(start, min(1 << bits, (1 << bits) if stop is None else stop), dtype=np.int64)
    reversed_index = np.zeros_like(index)
    for bit in range(bits):
        reversed_index |= ((index >> bit) & 1) << (bits - 1 - bit)
    return reversed_index[reversed_index < L] + 1


MAX_STREAM_DOCUMENTS = 1 << 31  # 16 GiB of int64 lengths
#: at most this many documents in a float64 source mix whose f walks them one by one (``weighted_histogram``'s
#: ``stream``): a walk in numba (pack, best-fit, a curriculum's rows), and a replay in Python (~2 µs a document)
WALKED_MIX_DOCUMENTS = 1 << 25
REPLAYED_MIX_DOCUMENTS = 1 << 20
#: rows of L a curriculum walks one by one in numba (~10^8 a second): a float64 mix for one gives at most this many,
#: half the walk's own limit (MAX_STREAM_DOCUMENTS)
WALKED_MIX_ROWS = 1 << 30


def seeded_rng(seed: int) -> np.random.Generator:
    """numpy's generator for ``seed``, a non-negative integer (else a FreqlabError naming it, not numpy's
    ``expected non-negative integer``).
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise FreqlabError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng(int(seed))


def stream_order(lengths: np.ndarray, counts: np.ndarray, seed: int = 0, walker: str = "the pack regime") -> np.ndarray:
    """Expand a histogram into one document length per document, in a seeded random stream order.

    Parameters
    ----------
    lengths, counts : numpy.ndarray
        Document-length histogram: distinct lengths and their counts.
    seed : int
        Seed of the shuffle.
    walker : str
        Who walks the stream, for the error past :data:`MAX_STREAM_DOCUMENTS` documents.

    Returns
    -------
    numpy.ndarray
        int64 document lengths, ``counts.sum()`` of them, shuffled.
    """
    lengths, counts = check_histogram(lengths, counts)  # a float or negative count: numpy's errors (a review)
    check_walk(walker, "expands the histogram into a stream of", counts, "documents")
    rank = np.argsort(lengths, kind="stable")  # the same multiset in any row order: the same stream
    order = np.repeat(lengths[rank], counts[rank])
    seeded_rng(seed).shuffle(order)
    return order


#: Above this many documents, :func:`pack_sample` walks a weighted sample of about this many instead of the stream
#: (1.3-1.7 s and 64 MB of int32 kinds for 2^26 documents here).
PACK_SAMPLE_DOCUMENTS = 1 << 24


def pack_sample(
    lengths: ArrayLike, counts: ArrayLike, L: int, seed: int = 0, documents: int = PACK_SAMPLE_DOCUMENTS
) -> Segments:
    """The ``pack`` regime of a histogram too large to expand, on a weighted sample of about ``documents``
    documents in which every length is kept.

    Each length n of c_n documents is walked as m_n = max(1, rint(c_n · documents / N)) documents (N: all of
    them) whose weights, ⌊c_n / m_n⌋ or one more, add up to c_n, in a seeded shuffle; each piece a document is cut
    into counts its document's weight (:func:`~freqlab.frequency.kernels.pack_walk`). So f(0) is the corpus's
    tokens exactly, and a length too rare to survive a plain scaling (a long document of count 1 among 10^8
    short ones) keeps its share of the tokens: only where row boundaries fall is sampled. A histogram of at most
    ``documents`` documents is packed whole (:func:`segments`).

    Parameters
    ----------
    lengths, counts : array_like
        Document-length histogram.
    L : int
        Training window.
    seed : int
        Seed of the shuffle.
    documents : int
        About how many documents to walk.

    Returns
    -------
    Segments
        The ``pack`` regime's segments, their counts weighted (exact when the histogram is walked whole).

    Examples
    --------
    >>> s = pack_sample([100, 30_000], [10**8, 1], 4096, documents=1000)
    >>> int(s.lengths @ s.counts) == 100 * 10**8 + 30_000, int(s.counts[s.lengths == 4096][0]) >= 6
    (True, True)
    """
    lengths, counts = check_histogram(lengths, counts)
    number = real_number(documents)
    whole = isinstance(documents, (int, np.integer)) or (number is not None and number.is_integer())
    if number is None or not (number >= 1 and whole):  # (an int past float64 is whole: its float is infinite)
        raise FreqlabError(f"documents (the sample's size) must be a positive integer, got {brief(documents)}")
    documents = int(documents) if isinstance(documents, (int, np.integer)) else int(number)
    total = int(np.sum(counts, dtype=np.int64))
    if total <= documents:
        return segments(lengths, counts, L, "pack", seed=seed)
    L = check_window(L)
    int64_tokens(lengths, counts)
    # one row per length, in length order: the sample of a multiset is the same whatever its rows (zero counts, a
    # length given twice, another order); a zero count walked as a document of weight 0 would still fill its row
    lengths, counts = summed_by_length(lengths[counts > 0], counts[counts > 0])
    kept = np.maximum(np.rint(counts * (documents / total)), 1).astype(np.int64)  # <= counts: the scale is < 1
    base, extra = np.divmod(counts, kept)
    # two kinds of document per length: `extra` weighing base + 1, the others base (documents of a length are alike)
    kind_lengths = np.repeat(lengths, 2)
    kind_weights = np.stack([base + 1, base], axis=1).ravel()
    kind_counts = np.stack([extra, kept - extra], axis=1).ravel()
    index = np.int32 if kind_lengths.size < 1 << 31 else np.int64  # the stream holds kinds: half the memory
    stream = np.repeat(np.arange(kind_lengths.size, dtype=index), kind_counts)
    seeded_rng(seed).shuffle(stream)
    return _packed(pack_walk(stream, L, kind_lengths, kind_weights)[0], L)


def table_segments(
    lengths: ArrayLike, counts: ArrayLike, L: int, regime: str, *, seed: int = 0, megatron=None
) -> tuple[Segments, int | None]:
    """:func:`segments` as a table of regimes computes them (``freq``'s rows, ``plan upsample``'s comparisons):
    ``pack`` of more than :data:`PACK_SAMPLE_DOCUMENTS` documents on :func:`pack_sample`'s weighted sample, an
    estimate; every other regime, and a smaller pack, exact. Returns the segments and the sample's size (None: exact).

    >>> segs, sample = table_segments([100], [1 << 25], 4096, "pack")
    >>> sample == PACK_SAMPLE_DOCUMENTS, int(segs.lengths @ segs.counts) == 100 << 25
    (True, True)
    """
    if regime != "pack":
        return segments(lengths, counts, L, regime, seed=seed, megatron=megatron), None
    segs = pack_sample(lengths, counts, L, seed=seed, documents=PACK_SAMPLE_DOCUMENTS)  # checks them
    documents = int(np.sum(np.asarray(counts, dtype=np.int64), dtype=np.int64))
    return segs, PACK_SAMPLE_DOCUMENTS if documents > PACK_SAMPLE_DOCUMENTS else None


def _packed(dense: np.ndarray, L: int) -> Segments:
    """The ``pack`` regime's Segments from a walk's dense counts (index: segment length)."""
    nonzero = np.flatnonzero(dense)
    return Segments(nonzero.astype(np.int64), dense[nonzero], L, "pack")


def check_walk(walker: str, what: str, counts: np.ndarray, unit: str) -> None:
    """FreqlabError when ``walker`` ("the pack regime") would walk more than MAX_STREAM_DOCUMENTS items one by one."""
    items = int(np.sum(counts, dtype=np.int64))
    if items > MAX_STREAM_DOCUMENTS:
        raise FreqlabError(
            f"{walker} {what} {items:,} {unit}, more than {MAX_STREAM_DOCUMENTS:,}; scale the histogram "
            "down first (LengthHistogram.scale_to_tokens; a source mix: weighted_histogram(..., stream=True))"
        )


def pack_documents(doc_lengths: ArrayLike, L: int) -> Segments:
    """Pack documents, in the given order, into rows of L with a document mask (the ``pack`` regime).

    A document first fills the current row; whatever does not fit continues in the next rows, so a
    document crossing a row boundary is cut there. Runs in O(number of documents) with numba
    (10^8 documents in order take about a second; from a histogram, expanding and shuffling the stream
    order dominates: about 18 s for 10^8 documents).

    Parameters
    ----------
    doc_lengths : array_like
        Document lengths in tokens, in stream order (each >= 1).
    L : int
        Training window L.

    Returns
    -------
    Segments
        The segment-length histogram of the packed rows.

    Examples
    --------
    Rows of 4 tokens: [3 | 1 of the second] [2 of the second | 2 of the third] [1 of the third]:

    >>> packed = pack_documents([3, 3, 3], 4)
    >>> packed.lengths.tolist(), packed.counts.tolist()
    ([1, 2, 3], [2, 2, 1])
    """
    L = check_window(L)
    docs = _as_int64(doc_lengths, "doc_lengths")
    if docs.size and docs.min() < 1:
        raise FreqlabError(f"document lengths must be >= 1, got {int(docs[np.argmax(docs < 1)])}")
    int64_tokens(docs)  # the rows' counts are at most the tokens: exact in int64
    return _packed(pack_walk(docs, L, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))[0], L)


def best_fit_segments(lengths: np.ndarray, counts: np.ndarray, L: int) -> Segments:
    """The ``best-fit`` regime: natural chunks packed best-fit-decreasing into rows of L, a row one segment.

    Chunks of 5, 3 and 2 tokens in rows of 5: [5] [3 2], two full rows; chunks 3, 3, 3: three rows of 3.

    >>> s = best_fit_segments(np.array([2, 3, 5]), np.array([1, 1, 1]), 5)
    >>> s.lengths.tolist(), s.counts.tolist()
    ([5], [2])
    """
    chunk_lengths, chunk_counts = _natural(lengths, counts, L)
    # chunks longer than L/2 (and whole rows) are placed in bulk: only the shorter ones may go one by one
    short = 2 * chunk_lengths <= L
    check_walk("the best-fit regime", "places one by one up to", chunk_counts[short], "chunks of at most L/2 tokens")
    order = np.argsort(chunk_lengths)[::-1]
    fills = best_fit_fills(chunk_lengths[order].copy(), chunk_counts[order].copy(), L)
    nonzero = np.flatnonzero(fills)
    return Segments(nonzero.astype(np.int64), fills[nonzero], L, "best-fit")


def segments(
    lengths: ArrayLike, counts: ArrayLike, L: int, regime: str = "natural", *, seed: int = 0, megatron=None
) -> Segments:
    """Segment-length histogram of ``regime`` for documents ``(lengths, counts)`` in windows of ``L``.

    Parameters
    ----------
    lengths, counts : array_like
        Document-length histogram.
    L : int
        Training window.
    regime : str
        ``natural``, ``truncate``, ``concat``, ``uniform``, ``pack``, ... (see the module docstring).
    seed : int
        Stream order for ``pack``.
    megatron : MegatronOptions, optional
        Makes the ``megatron`` regime exact when it names the indexes (``data_path``); otherwise that regime
        is approximated from the histogram.

    Returns
    -------
    Segments
        ``lengths`` and ``counts`` of the segments, with ``L``, ``regime``, ``dropped_tokens`` and
        ``approximation``.

    Notes
    -----
    Under ``natural`` a document of n tokens gives ⌊n / L⌋ segments of L and one of n mod L (when non-zero);
    the position frequency is then f(i) = Σ_s max(|s| − i, 0), summed over the segments s (STRING Eq. 2 [1]_).

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> s = segments([5000], [1], 2048)
    >>> s.lengths.tolist(), s.counts.tolist()
    ([904, 2048], [1, 2])
    """
    L = check_window(L)
    regime = regime_name(regime)
    seeded_rng(seed)  # checked whatever the regime (seed=-1 passed where no regime read it: a review)
    lengths, counts = check_histogram(lengths, counts)
    tokens = int64_tokens(lengths, counts)
    if regime == "natural":
        seg, cnt = _natural(lengths, counts, L)
        return Segments(seg, cnt, L, regime)
    if regime == "truncate":
        seg, cnt, dropped = _truncate(lengths, counts, L)
        return Segments(seg, cnt, L, regime, dropped)
    if regime == "concat":
        return Segments(*_stream(tokens, L), L, regime)
    if regime == "uniform":
        return Segments(*_uniform(tokens, L), L, regime)
    if regime == "pack":
        packed = pack_documents(stream_order(lengths, counts, seed), L)
        return packed
    if regime == "best-fit":
        return best_fit_segments(lengths, counts, L)
    if regime == "megatron":
        # imported here: megatron imports this module (its approximation without an index is segments() of pack
        # or concat), and segments() hands the megatron regime to its replay: mutual recursion, not a shared name
        from freqlab.frequency.megatron_replay import megatron_segments

        return megatron_segments(L, megatron, histogram=(lengths, counts), seed=seed)
    raise FreqlabError(f"unknown regime {regime!r}; choose one of {', '.join(REGIMES)}")
