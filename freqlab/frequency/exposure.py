"""What the curve hides: the exposure histogram h(c), and per-source tail tables.

A token at offset m of its attention segment is trained with exactly c = m tokens of left context in that
segment (the same document's when the regime masks documents: ``natural``, ``truncate``, ``pack``; the row's in
``concat`` and ``best-fit``, which have no document mask). The **exposure histogram** counts tokens by that context,

    h(c) = #{tokens trained with exactly c tokens of left context} = #{segments longer than c},

and the position frequency (STRING, An et al., ICLR 2025, Eq. 2) is its tail sum (a query with context c trains
relative positions 0..c):

    f(i) = Σ_{c >= i} h(c),       h(c) = f(c) - f(c + 1).

So f(i) is also the number of tokens that saw at least i tokens of context, and f(i) / f(0) the share of trained
tokens that reached relative position i. A **tail table** gives that share per corpus source at a few context
lengths (4K, 8K, ...): the share of each source's tokens trained with at least that much same-document context,
which is what a data team asks when it picks a long-context mixture.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from freqlab.errors import FreqlabError
from freqlab.formats import ALL_SOURCES
from freqlab.frequency.kernels import scatter_add
from freqlab.frequency.position import refuse_megatron
from freqlab.frequency.regimes import MAX_WINDOW, Segments, check_histogram, check_window, segments
from freqlab.sizes import position_label

#: context lengths of a tail table: 4K, 8K, ..., 1M (K = 1024)
DEFAULT_THRESHOLDS: tuple[int, ...] = tuple(1 << k for k in range(12, 21))


def segment_exposure(segs: Segments) -> np.ndarray:
    """h(c) for 0 <= c < L from a segment-length histogram: the number of segments longer than c (int64).

    >>> segment_exposure(Segments(np.array([2, 4]), np.array([3, 1]), 5, "natural")).tolist()
    [4, 4, 1, 1, 0]
    """
    count_at = scatter_add(segs.L + 1, segs.lengths, segs.counts)
    return np.cumsum(count_at[::-1])[::-1][1:].copy()


def exposure_from_frequency(f) -> np.ndarray:
    """h(c) = f(c) - f(c + 1) (f(L) = 0) from any f: of a layer kind, a curriculum (a numerator), a schedule.

    >>> exposure_from_frequency([6, 5, 0, 0]).tolist()
    [1, 5, 0, 0]
    """
    f = np.asarray(f)
    return f - np.concatenate([f[1:], np.zeros(1, dtype=f.dtype)])


def frequency_from_exposure(h) -> np.ndarray:
    """f(i) = Σ_{c >= i} h(c) (a reverse cumulative sum, exact in int64).

    >>> frequency_from_exposure([4, 4, 1, 1, 0]).tolist()
    [10, 6, 2, 1, 0]
    """
    h = np.asarray(h)
    return np.cumsum(h[::-1])[::-1].copy()


def exposure_histogram(
    lengths: ArrayLike, counts: ArrayLike, L: int, regime: str = "natural", *, seed: int = 0
) -> np.ndarray:
    """h(c), 0 <= c < L, of a document-length histogram under ``regime`` (int64; Σ h = tokens in the segments).

    Parameters
    ----------
    lengths, counts : array_like
        Document-length histogram: distinct lengths in tokens and their counts.
    L : int
        Training window L.
    regime : str
        Data regime (see ``REGIMES``).
    seed : int
        Seed of the shuffled document order, in the regimes that need one.

    Returns
    -------
    numpy.ndarray
        int64 h(c), 0 <= c < L: tokens trained with c tokens of same-document left context.

    Examples
    --------
    A document of 5 tokens in windows of 3 is segments 3 and 2: contexts 0, 1, 2 and 0, 1:

    >>> exposure_histogram([5], [1], 3).tolist()
    [2, 2, 1]
    """
    refuse_megatron(regime)  # a bare array: it could not say it is concat's
    return segment_exposure(segments(lengths, counts, L, regime, seed=seed))


def tail_shares(f, thresholds=DEFAULT_THRESHOLDS) -> dict[int, float]:
    """Share of trained tokens with at least t tokens of left context, f(t) / f(0), for each t (0 beyond L).

    >>> tail_shares([4, 3, 2, 1], (2, 8))
    {2: 0.5, 8: 0.0}
    """
    f = np.asarray(f)
    if f.size == 0 or f[0] <= 0:
        return {int(t): 0.0 for t in thresholds}
    return {int(t): (int(f[t]) / int(f[0]) if t < f.size else 0.0) for t in thresholds}


def thresholds_below(window: int, thresholds=DEFAULT_THRESHOLDS) -> list[int]:
    """The thresholds shorter than ``window``, with ``window`` / 8, / 4 and / 2 beside them while fewer than three
    are (a window of at most 16K); a threshold of at least 1 and below the window only: a column at t >= L is 0%
    by construction.

    A tail table of thresholds at or beyond the window would only show zeros, so a short window gets thresholds of
    its own scale (an adversary: L = 4097 had the 4K column alone, 0.02%, where L = 4096 had 512, 1K and 2K).

    >>> thresholds_below(65536), thresholds_below(16384), thresholds_below(4097), thresholds_below(2048)
    ([4096, 8192, 16384, 32768], [2048, 4096, 8192], [512, 1024, 2048, 4096], [256, 512, 1024])
    >>> thresholds_below(3), thresholds_below(1)
    ([1], [])
    """
    below = {int(t) for t in thresholds if t < window}
    if len(below) < 3:
        below |= {window >> k for k in (3, 2, 1)}
    return sorted(t for t in below if 1 <= t < window)


TAIL_REGIMES = ("natural", "truncate")  # regimes in which a source's segments are its own documents' alone


def longest_document_window(histogram) -> int:
    """The window a whole-document view defaults to: the longest document's length (at least 1), refused in one
    line naming that length when it is beyond the largest window freqlab supports (give a window instead).

    >>> from freqlab import LengthHistogram
    >>> longest_document_window(LengthHistogram.from_lengths([100, 5000]))
    5000
    """
    longest = max(int(histogram.lengths.max(initial=1)), 1)
    if longest > MAX_WINDOW:
        raise FreqlabError(
            f"the longest document has {longest:,} tokens, more than the largest window freqlab supports "
            f"(2^30 = {MAX_WINDOW:,}): give a window with --L (e.g. --L 128K)"
        )
    return longest


def tails_report(rows: list[dict], L: int, *, scaled: bool = False) -> str:
    """The terminal report of :func:`source_tails`' rows at window ``L`` (``freqlab freq --tails``): one line per
    source, one column per threshold; with no rows, why (no threshold below L). ``scaled``: the rows are of a mix
    whose counts are scaled (float64 weights), so each source's share of the mix's tokens is shown, not its count.
    """
    from freqlab.display import name_column, percent

    if not rows:
        return (
            f"tails: no threshold below L={L:,}: a token of a window of {L:,} has at most {max(L - 1, 0):,} tokens of "
            "context"
        )
    thresholds = list(rows[0]["tails"])
    everything = rows[-1]["tokens"]  # the "(all)" row

    def size(tokens: int) -> str:
        return percent(tokens / everything) if scaled else f"{tokens:,}"

    head, *names = name_column([row["source"] for row in rows], header=f"{'source':<12}")  # escaped (a review)
    lines = [
        f"share of tokens with at least N tokens of same-document context (L={rows[0]['L']}, {rows[0]['regime']}):",
        f"  {head} {'mix share' if scaled else 'tokens':>14}  " + "  ".join(f"{t:>7}" for t in thresholds),
        *(
            f"  {shown} {size(row['tokens']):>14}  " + "  ".join(f"{percent(row['tails'][t]):>7}" for t in thresholds)
            for shown, row in zip(names, rows, strict=True)
        ),
    ]
    return "\n".join(lines)


def source_tails(histogram, L: int | None = None, regime: str = "natural", thresholds=DEFAULT_THRESHOLDS) -> list[dict]:
    """Per-source tail table: for each source of a split histogram (and all of them together), its tokens and the
    share of them trained with at least t tokens of same-document left context, for each threshold t.

    ``L`` defaults to the longest document (each document whole: the context the data itself offers); a window
    caps it. Only regimes in which a segment holds one source's document (``natural``, ``truncate``) split
    exactly by source.

    Parameters
    ----------
    histogram : LengthHistogram
        A histogram split by source.
    L : int, optional
        Window; default the longest document.
    regime : str
        Data regime (see ``REGIMES``).
    thresholds : tuple of int
        Left-context thresholds t.

    Returns
    -------
    list of dict
        One row per source and, last, one for all of them (``source`` ``(all)``,
        :data:`~freqlab.formats.ALL_SOURCES`, ``total`` true): ``source``, ``total``, ``tokens`` and ``tails``
        (threshold label -> share).

    Examples
    --------
    >>> from freqlab import LengthHistogram
    >>> from freqlab.histogram import combine_sources
    >>> parts = {"web": LengthHistogram.from_lengths([100] * 9), "books": LengthHistogram.from_lengths([10000])}
    >>> h = combine_sources(parts)
    >>> [(row["source"], row["tokens"], round(row["tails"]["4K"], 4)) for row in source_tails(h, thresholds=(4096,))]
    [('books', 10000, 0.5904), ('web', 900, 0.0), ('(all)', 10900, 0.5417)]
    """
    from freqlab.frequency.position import segment_frequency

    if regime not in TAIL_REGIMES:
        raise FreqlabError(
            f"per-source tails need a regime in which a segment is one source's ({', '.join(TAIL_REGIMES)}), "
            f"got {regime!r}"
        )
    # pairs, the total last: a source called "all" (the total's old label) was replaced by it
    parts = [*(histogram.sources or {}).items(), (ALL_SOURCES, histogram)]
    window = check_window(L) if L is not None else longest_document_window(histogram)
    rows = []
    for k, (name, part) in enumerate(parts):
        lengths, counts = check_histogram(part.lengths, part.counts)
        f = segment_frequency(segments(lengths, counts, window, regime))
        shares = tail_shares(f, thresholds)
        rows.append(
            {
                "source": name,
                "total": k == len(parts) - 1,  # the row of all sources (a source may be called anything)
                "tokens": int(f[0]),
                "L": window,
                "regime": regime,
                "tails": {position_label(t): share for t, share in shares.items()},
            }
        )
    return rows
