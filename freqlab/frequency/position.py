"""Position frequency f(i): how often relative position i is trained (STRING Sec. 2.2, Eq. 2).

For one segment of s tokens, RoPE's relative position matrix P[m][n] = m - n holds position i exactly
``s - i`` times (0 <= i < s). Over all segments of a regime,

    f(i) = Σ_s max(|s| - i, 0)  =  Σ_{l > i} c_l · l  -  i · Σ_{l > i} c_l,

where c_l is the number of segments of length l. Both suffix sums take one ``cumsum`` each, so f over a
window L costs O(L + distinct lengths), in exact int64.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from freqlab.arrays import as_int64, int64_tokens
from freqlab.errors import FreqlabError, brief
from freqlab.frequency.kernels import scatter_add
from freqlab.frequency.regimes import Segments, check_window, regime_name, segments
from freqlab.resources import doing

if TYPE_CHECKING:  # type-only: importing it here would be a cycle
    from freqlab.histogram import LengthHistogram


def _read_int64(values, name: str) -> np.ndarray:
    """``values`` to read as int64: an int64 array as it is (as_int64 copies: two more arrays of L values for a
    uniform f, a review), anything else through :func:`~freqlab.arrays.as_int64`.
    """
    if isinstance(values, np.ndarray) and values.dtype == np.int64 and values.ndim == 1 and values.flags.writeable:
        return values  # writeable: numba's kernels compiled for these (a read-only one would compile anew)
    return as_int64(values, name)


def segment_frequency(segs: Segments) -> np.ndarray:
    """f(i) for 0 <= i < L from a segment-length histogram (all segments at most L long): L values, computed in one
    int64 array of L + 1 (8 bytes per position).

    f(i) - f(i+1) = N(i) = Σ_{l > i} c_l (the segments longer than i) and f(L) = 0, so f is the suffix sum of N and
    N the suffix sum of c: two cumulative sums, in place, from the right. Every partial sum is at most f(0) < 2^63
    (checked here: a FreqlabError from 2^63 tokens on): exact in int64.

    Parameters
    ----------
    segs : Segments
        Segment-length histogram of one regime (every segment at most L long).

    Returns
    -------
    numpy.ndarray
        int64 f(0..L-1), L values (a view of the array of L + 1 whose first entry, the count of empty segments, is
        left out).

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.
    """
    L = check_window(segs.L)  # a window of 3.0 reached numba, 2^40 an 8 TB array, -1 an empty f (a review)
    # a Segments made by hand too (a review: floats reached numba, 2^63 tokens wrapped f(0) to a negative number)
    lengths, counts = _read_int64(segs.lengths, "segment lengths"), _read_int64(segs.counts, "segment counts")
    if lengths.shape != counts.shape or lengths.ndim != 1:
        raise FreqlabError(f"segment lengths and counts differ in shape: {lengths.shape} vs {counts.shape}")
    if lengths.size and (lengths.min() < 0 or counts.min() < 0):
        raise FreqlabError(f"segment lengths and counts must be >= 0, got {int(min(lengths.min(), counts.min()))}")
    int64_tokens(lengths, counts)
    if lengths.size and lengths.max() > L:
        raise ValueError(f"segment longer than L={L}: {int(lengths.max())}")
    out = scatter_add(L + 1, lengths, counts)  # out[l] = c_l
    from_right = out[:0:-1]  # out[L], out[L-1], ..., out[1]
    np.cumsum(from_right, out=from_right)  # out[i + 1] = N(i)
    np.cumsum(from_right, out=from_right)  # out[i + 1] = Σ_{j >= i} N(j) = f(i)
    return out[1:]


def position_frequency(
    lengths: ArrayLike | LengthHistogram,
    counts: ArrayLike | int | None = None,
    L: int | str | None = None,
    regime: str | None = None,
    *,
    seed: int = 0,
) -> np.ndarray:
    """Exact frequency f(i) of each relative position 0 <= i < L under a data regime (STRING Eq. 2).

    Called as ``position_frequency(lengths, counts, L, regime)`` or, with a histogram,
    ``position_frequency(histogram, L, regime)`` (the same as ``np.asarray(histogram.frequency(L, regime))``).

    Parameters
    ----------
    lengths, counts
        Document-length histogram: ``counts[k]`` documents of ``lengths[k]`` tokens (lengths >= 1); or a
        :class:`~freqlab.LengthHistogram` in place of both.
    L
        Training window (context length), an integer. (The annotation admits ``str`` for the histogram form only,
        where this place holds the regime: ``position_frequency(histogram, L, regime)``.)
    regime
        ``natural`` (the default), ``truncate``, ``concat``, ``uniform``, ``pack`` or ``best-fit`` (see
        :mod:`freqlab.frequency.regimes`); ``megatron`` is refused (it needs Megatron's indexes:
        :meth:`LengthHistogram.frequency <freqlab.LengthHistogram.frequency>`, which says what it computed).
    seed
        Stream order for ``pack`` when only a histogram is known.

    Returns
    -------
    np.ndarray
        int64 array of shape (L,). ``f[0]`` is the number of tokens in the regime's segments.

    Notes
    -----
    f(i) = Σ_s max(|s| − i, 0), summed over the segments s of the regime (STRING Eq. 2 [1]_); f(0) is the
    number of tokens in the segments. The segments come from :func:`segments`.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    A single document of length L gives f(i) = L - i:

    >>> position_frequency([4], [1], 4).tolist()
    [4, 3, 2, 1]
    >>> position_frequency([3, 6], [2, 1], 4).tolist()  # natural: 6 -> 4 + 2
    [12, 8, 4, 1]
    >>> from freqlab import LengthHistogram
    >>> position_frequency(LengthHistogram.from_counts([3, 6], [2, 1]), 4, "natural").tolist()
    [12, 8, 4, 1]
    """
    doc_lengths, doc_counts, window, regime = histogram_arguments(lengths, counts, L, regime)
    refuse_megatron(regime)
    with doing(f"computing f(i) at L = {window} ({regime})"):
        return segment_frequency(segments(doc_lengths, doc_counts, window, regime, seed=seed))


def refuse_megatron(regime: str) -> None:
    """A FreqlabError for the ``megatron`` regime where the result cannot say it is an approximation (a bare array,
    a table without notes): Megatron's windows are exact only from its indexes.
    """
    if regime_name(regime) == "megatron":
        raise FreqlabError(
            "the megatron regime is replayed from Megatron's indexes only by the rows of freqlab scan, freq and "
            "stats (in Python LengthHistogram.frequency(L, 'megatron', megatron=MegatronOptions(data_path=...))); "
            "here, from the histogram alone, it would be concat (pack with --reset-attention-mask): ask for that "
            "regime"
        )


def histogram_arguments(lengths, counts, L, regime) -> tuple[Any, Any, Any, str]:
    """``(lengths, counts, L, regime)`` whether the call gave a histogram's arrays or the histogram itself (then the
    positional arguments after it are L and the regime).
    """
    if hasattr(lengths, "lengths") and hasattr(lengths, "counts"):  # a LengthHistogram (not imported: a cycle)
        if counts is not None:
            if L is not None and regime is not None:  # a fourth argument was dropped, unsaid (reviews)
                raise FreqlabError(
                    f"position_frequency(histogram, L, regime) takes no fourth argument, got {brief(regime)}"
                )
            L, regime = counts, (regime if L is None else L)
        return lengths.lengths, lengths.counts, L, "natural" if regime is None else regime
    if counts is None or L is None:
        raise FreqlabError("position_frequency needs (lengths, counts, L) or (histogram, L)")
    return lengths, counts, L, "natural" if regime is None else regime
