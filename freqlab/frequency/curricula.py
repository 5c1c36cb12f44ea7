"""Context-window curricula inside a stage: which relative positions a stage trains when its window grows.

A curriculum is given as a mapping (a stage's YAML) and read by :func:`curriculum_from_spec`; its
``.frequency(lengths, counts, L, regime, seed=0)`` returns f(i), 0 <= i < L, as an
:class:`~freqlab.frequency.exact.ExactFrequency`: exact int64 counts where the recipe is deterministic given the
histogram.

**Rows.** Warm-up and SkyLadder act on the stage's *rows* of L tokens, taken from the regime's token stream in
order (:mod:`freqlab.frequency.regimes`): ``concat`` (one stream cut into rows of L, no document mask: the last row
holds ``T mod L`` tokens; the order does not matter, f is exact), ``pack`` (the seeded stream order packed into
rows with a document mask) or ``natural`` (each document cut into rows of at most L, documents in the seeded stream
order). Row k (0-based, in training order) belongs to step ``k // batch`` and is trained with the window w(k) the
schedule gives that step. In a schedule's stage (``stage_tokens``: the stage trains T_s tokens, its histogram holds
T_h) ``batch`` and ``share`` count the stage's steps, not the histogram's (a review: with ``batch: 512`` the ~1,000 rows
of a small histogram were two steps, and the warm-up vanished): ``concat`` walks the stage's own ⌈T_s/L⌉ rows (its
rows are the stream cut every L tokens, so only T_s matters: exact); ``pack`` and ``natural``, whose rows are walked
one by one, let the histogram's rows stand for the stage's in proportion, row k taking the window of the stage's row
⌊(k + 1/2)·T_s/T_h⌋, the middle of the block it stands for: an estimate, exact when T_s = T_h. A row's attention
segments (its documents under a mask, the whole row without) are then
cut by the window; f is the frequency of the resulting segments (STRING Eq. 2). Cost: O(L + distinct windows) for
``concat``, O(documents + rows) for the walks of ``pack`` and ``natural`` (as the ``pack`` regime), plus
O(L · log rows) to find where each window starts, never O(tokens).

``warmup`` (sequence-length warm-up; Li, Zhang & He, "The Stability-Efficiency Dilemma: Investigating Sequence Length
Warmup for Training GPT Models", NeurIPS 2022, arXiv:2108.06084, as DeepSpeed's curriculum learning ``seqlen`` and
Megatron-DeepSpeed run it): the window grows from ``start`` to L over the first ``share`` of the steps, then stays L.
``steps: linear`` is DeepSpeed's ``fixed_linear``, ``w(s) = ⌊(start + (L − start)·(s + 1)/S_w) / m⌋·m`` for the steps
s = 0, 1, ... (``m = multiple``, DeepSpeed's ``difficulty_step``; its engine evaluates the schedule at
``global_steps + 1`` before each step, so the last warm-up step already has L; in exact rationals where DeepSpeed uses
float64); ``steps: N`` holds N equal plateaus ``start + ⌊(L − start)·j/N⌋`` at the steps with ``j = ⌊s·N/S_w⌋`` (rounded
down to m). ``batch_rule: truncate`` keeps the first w tokens of each row and drops the rest (Megatron-DeepSpeed
``--curriculum-learning-legacy``: ``tokens[:, :curriculum_seqlen]``; reported in ``dropped_tokens``);
``batch_rule: rechunk`` is DeepSpeed's ``seqlen_reshape`` as Megatron-DeepSpeed's ``data_post_process``
(``pretrain_gpt.py``) runs it on each micro-batch of ``micro_batch`` rows (its rows are L + 1 tokens, the inputs and the
last label): each row gives q = ⌊(L + 1)/(w + 1)⌋ pieces of w + 1 tokens (w inputs: a row's tokens j(w + 1) + w are
labels only), then each row's last w + 1 tokens follow as one more piece per row, and the first ⌈b(L + 1)/(w + 1)⌉
pieces are kept, one fewer when that number is odd and above 1. Every kept piece is a segment of w inputs (cut at
documents under ``pack``: Megatron-DeepSpeed's ``--reset-attention-mask``, whose masks are built after the reshape,
without ``--use-flash-attn``, which skips them); inputs no kept piece holds (a piece's last token is its label only) are
``dropped_tokens``, inputs two pieces hold (a tail over the last main piece) count twice. ``regime: natural`` has rows
of unequal length, which the reshape cannot batch: refused. The last, shorter row of a stage (its ``T mod L`` tokens) is
a micro-batch of its own.

``skyladder`` (Zhu et al., "SkyLadder: Better and Faster Pretraining via Context Window Scheduling", arXiv:2503.15450,
2025; code: github.com/sail-sg/SkyLadder, ``lit_gpt/packed_dataset.py``): every row keeps all L tokens, but is cut
into *fragments* of the current window w attended separately (``flash_attn_varlen_func``). The schedule counts
samples k (rows); ``rate: r`` with ``batch: B`` rows per step is their ``dm{r}``/``sin{r}``/``exp{r}`` (α = 1/r: the
linear window grows by 1 every r steps, ``w = start + ⌊k/(B·r)⌋``; sine and exponential reach their final length at
``k = (L + 1 − start)·B·r``); ``share: p`` is their ``lin{p}p``/``sin{p}p``/``exp{p}p``: the growth ends at
``k_c = B·⌊p·steps⌋``. With ``x = k/k_c`` and their final length ``F = L + 1`` (``final_mask_length =
block_size``, and their blocks are L + 1 tokens: ``assert self._block_size - 1 in [512, ...]``): linear
``start + int((F − start)·x)``, sine ``start + int((F − start)·sin(πx/2))``, exponential ``int(start·(F/start)^x)``,
all in numpy float64 as their code; a window of L or more is the whole row;
``round: R`` rounds down to a multiple of R (their ``inc{R}``; a window rounded down to 0 is ``start``; only
without a document mask, as their code, whose ``intradm`` path does not round).
``start`` defaults to their 32. Their code runs only the names its lists hold (``dm1``..``dm8``, ``sin8``,
``exp8``, ``lin80p``/``lin90p``/``lin95p``, ``...inc1024``, ...), and reads a rate from the name by substring
(``dm16`` runs as rate 1): freqlab computes any rate or share, as the paper states them.
``document_mask: false`` (their ``dm``) cuts the row at multiples of w; ``document_mask: true`` (their
``intradm``) also cuts after each document's last token, and, as their ``get_fragment_lens_fixed_length_intramask``
does, at positions w+1, 2w+1, ... (its first fragment has w + 1 tokens). Their blocks are L + 1 tokens at
stride L + 1 (the last only a label); freqlab's rows are L tokens at stride L, as every regime.

``dataset-decomposition`` (Pouransari et al., "Dataset Decomposition: Faster LLM Training with Variable Sequence
Length Curriculum", NeurIPS 2024, arXiv:2405.13226; code: github.com/apple/ml-dataset-decomposition,
``scripts/make_dd_buckets.py``, ``get_binary``): a document of m tokens repeatedly gives a piece of ``2^k + 1``
tokens with ``k = ⌊log2(m − 1)⌋`` (2^k inputs and their next-token labels: one attention segment of 2^k), capped at
the largest bucket; the loop stops when ``k`` falls below the smallest bucket (the remainder is dropped). Pieces
are deterministic (the paper's binary decomposition), so f is exact. The public code splits a document longer than
the largest bucket at random (``randomize=True``: bucket k with probability ∝ 2^(max − k)); ``randomize: true``
gives the exact expectation over that split (denominator (2^buckets − 1)^draws, Python integers; O(n_max ·
buckets²) operations, refused beyond documents of 2^17 tokens) and ``replay: true`` one seeded replay of it.
The curriculum (odds over buckets, e.g. their "Grow-P2") only orders the batches: ``get_dd_params.py`` takes every
bucket's sequences once per epoch in proportion to its tokens, so f does not depend on it (validated, recorded).
``regime`` is not used: Dataset Decomposition replaces it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import cast

import numpy as np

from freqlab.arrays import finite, int64_tokens
from freqlab.errors import FreqlabError, brief
from freqlab.frequency.exact import ExactFrequency
from freqlab.frequency.position import refuse_megatron, segment_frequency
from freqlab.frequency.regimes import (
    REPLAYED_MIX_DOCUMENTS,
    WALKED_MIX_DOCUMENTS,
    Segments,
    check_histogram,
    check_walk,
    check_window,
    exact_dot,
    seeded_rng,
    stream_order,
)
from freqlab.jit import njit
from freqlab.sizes import parse_positions

MAX_COUNT = 1 << 62  # a spec's integers (rows per step, steps...): int64 arithmetic on them stays exact

ROW_REGIMES: tuple[str, ...] = ("concat", "pack", "natural")


# -- reading specs -------------------------------------------------------------------------------------------------


class Spec:
    """A curriculum's mapping, read key by key: unknown keys and bad values raise one FreqlabError naming them."""

    def __init__(self, spec, kind: str, allowed: tuple[str, ...]):
        if not isinstance(spec, dict):
            raise FreqlabError(f"a {kind} spec must be a mapping, got {spec!r}")
        unknown = sorted(set(spec) - set(allowed) - {"kind"})
        if unknown:
            raise FreqlabError(f"{kind}: unknown key {unknown[0]!r}; expected {', '.join(allowed)}")
        self.data, self.kind = spec, kind

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def bad(self, key: str, expected: str) -> FreqlabError:
        return FreqlabError(f"{self.kind}: {key} must be {expected}, got {self.data.get(key)!r}")

    def positions(self, key: str, default=None) -> int:
        if not self.has(key):
            if default is None:
                raise FreqlabError(f"{self.kind}: missing {key!r}")
            return default
        try:
            return parse_positions(self.data[key], f"{self.kind} {key}")
        except FreqlabError:
            raise self.bad(key, "a positive length (e.g. 64 or 8K)") from None

    def integer(self, key: str, default=None, minimum: int = 1) -> int:
        """An integer in ``minimum`` .. 2^62 (rows and steps are counted in int64 arrays: a review met an
        OverflowError traceback from ``batch: 2**40`` times ``rate: 2**40``, see :func:`_skyladder`).
        """
        if not self.has(key):
            if default is None:
                raise FreqlabError(f"{self.kind}: missing {key!r}")
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not minimum <= value <= MAX_COUNT:
            raise self.bad(key, f"an integer in {minimum}..2^62")
        return int(value)

    def share(self, key: str) -> Fraction:
        value = self.data.get(key)
        try:
            share = Fraction(str(value)) if not isinstance(value, bool) else None
        except (ValueError, ZeroDivisionError):
            share = None
        if share is None or not 0 < share <= 1:
            raise self.bad(key, "a share of the stage in (0, 1], e.g. 0.1")
        return share

    def choice(self, key: str, options: tuple[str, ...], default: str | None = None) -> str:
        value = self.data.get(key, default)
        if value not in options:
            raise self.bad(key, "one of " + ", ".join(str(o) for o in options if o is not None))  # None: leave out
        return value

    def flag(self, key: str, default: bool | None) -> bool | None:
        value = self.data.get(key, default)
        if value is not None and not isinstance(value, bool):
            raise self.bad(key, "true or false")
        return value


# -- cutting rows by a window --------------------------------------------------------------------------------------


@njit(cache=True)
def _add_piece(counts, start, n, w, truncate, offset, mult):
    """Add the segments of tokens [start, start + n) of a row trained with window w, ``mult`` times; return the
    dropped tokens. ``truncate``: only positions below w are kept. Otherwise the row is cut at g·w + offset
    (g >= 1) and each piece is a segment.
    """
    if n <= 0 or mult == 0:
        return 0
    if truncate:
        kept = min(start + n, w) - start
        if kept < 0:
            kept = 0
        if kept > 0:
            counts[kept] += mult
        return (n - kept) * mult
    g = max(1, (start - offset) // w + 1)
    boundary = g * w + offset
    end = start + n
    if boundary >= end:
        counts[n] += mult
        return 0
    counts[boundary - start] += mult
    full = (end - boundary) // w
    rest = end - boundary - full * w
    counts[w] += full * mult
    if rest > 0:
        counts[rest] += mult
    return 0


@njit(cache=True)
def _reshape_rows(n, w, b):
    """DeepSpeed's seqlen_reshape of a micro-batch of b rows of n inputs (n + 1 tokens) at window w < n: the main
    pieces per row q, and the main and tail pieces it keeps (see the module docstring).
    """
    q = (n + 1) // (w + 1)
    kept = min(-(-(b * (n + 1)) // (w + 1)), b * q + b)
    if kept > 1 and kept % 2 == 1:
        kept -= 1
    mains = min(kept, b * q)
    return q, mains, kept - mains


@njit(cache=True)
def _reshaped_dropped(n, w, mains, tail):
    """Inputs of a row of n that none of its kept pieces holds: ``mains`` main pieces [j(w+1), j(w+1) + w) and, with
    ``tail``, the tail [n - w, n), which may overlap the last of them.
    """
    covered = mains * w
    if tail:
        covered += w
        for j in range((n - w) // (w + 1), mains):
            covered -= max(0, min(j * (w + 1) + w, n) - max(j * (w + 1), n - w))
    return n - covered


@njit(cache=True)
def _add_reshaped(counts, start, n, w, row, mains, tail):
    """Add the segments of tokens [start, start + n) of a row of ``row`` inputs reshaped at window w: their overlap
    with each kept main piece and, with ``tail``, with the tail piece.
    """
    end = start + n
    for j in range(start // (w + 1), mains):
        lo, hi = max(start, j * (w + 1)), min(end, j * (w + 1) + w)
        if lo >= end:
            break
        if hi > lo:
            counts[hi - lo] += 1
    if tail:
        lo, hi = max(start, row - w), min(end, row)
        if hi > lo:
            counts[hi - lo] += 1


@njit(cache=True)
def _reshaped_micro_batch(counts, n, w, b, mult):
    """Add ``mult`` times the segments of a micro-batch of b rows of n tokens without a document mask (each kept piece
    is a segment of w; a window of n or more leaves the rows whole); return the dropped tokens.
    """
    if w >= n:
        counts[n] += b * mult
        return 0
    q, mains, tails = _reshape_rows(n, w, b)
    counts[w] += (mains + tails) * mult
    if tails:  # every main piece kept, the first `tails` rows with their tail too
        dropped = tails * _reshaped_dropped(n, w, q, True) + (b - tails) * _reshaped_dropped(n, w, q, False)
    else:  # main pieces only, which do not overlap
        dropped = b * n - mains * w
    return dropped * mult


@njit(cache=True)
def _reshaped_row(k, w, L, micro_batch, full_rows, tokens):
    """Row k of a stage of ``tokens`` tokens in rows of L (``full_rows`` whole, then the rest as a micro-batch of its
    own), reshaped at window w: its inputs, the main pieces it keeps and whether it keeps its tail.
    """
    if k < full_rows:
        n, b, i = L, min(micro_batch, full_rows - (k // micro_batch) * micro_batch), k % micro_batch
    else:
        n, b, i = tokens - full_rows * L, 1, 0
    if w >= n:
        return n, 0, False
    q, mains, tails = _reshape_rows(n, w, b)
    return n, min(q, max(0, mains - i * q)), i < tails


@njit(cache=True)
def _walk_rows(docs, L, run_rows, run_windows, truncate, offset, row_per_doc, micro_batch, tokens):
    """Documents in order laid into rows of L with a document mask (a new row after each document when
    ``row_per_doc``), row r cut by its window (runs: ``run_rows[j]`` rows of window ``run_windows[j]``, then L), or,
    with ``micro_batch``, reshaped by DeepSpeed's seqlen_reshape in micro-batches of that many rows.
    """
    counts = np.zeros(L + 1, dtype=np.int64)
    dropped = 0
    run = 0
    left = run_rows[0] if run_rows.shape[0] > 0 else -1
    w = run_windows[0] if run_rows.shape[0] > 0 else L
    used = 0  # tokens in the current row
    row, full_rows = 0, tokens // L  # the row's index; whole rows of the stage
    n_row, mains, tail = L, 0, False  # the row reshaped (micro_batch): its inputs and kept pieces
    if micro_batch:
        n_row, mains, tail = _reshaped_row(row, w, L, micro_batch, full_rows, tokens)
    for k in range(docs.shape[0]):
        n = docs[k]
        while n > 0:
            take = min(n, L - used)
            if micro_batch and w < n_row:
                _add_reshaped(counts, used, take, w, n_row, mains, tail)
            else:
                dropped += _add_piece(counts, used, take, w, truncate, offset, 1)
            used += take
            n -= take
            if used == L or (n == 0 and row_per_doc):
                if micro_batch and w < n_row:
                    dropped += _reshaped_dropped(n_row, w, mains, tail)
                used = 0
                row += 1
                left -= 1
                while left == 0 and run + 1 < run_rows.shape[0]:
                    run += 1
                    left = run_rows[run]
                    w = run_windows[run]
                if left <= 0:
                    w = L
                if micro_batch:
                    n_row, mains, tail = _reshaped_row(row, w, L, micro_batch, full_rows, tokens)
    if used and micro_batch and w < n_row:  # the last, shorter row
        dropped += _reshaped_dropped(n_row, w, mains, tail)
    return counts, dropped


def _rows(lengths: np.ndarray, counts: np.ndarray, L: int, regime: str) -> int:
    if regime == "natural":
        return exact_dot(-(-lengths // L), counts)
    return -(-exact_dot(lengths, counts) // L)


def windowed_segments(
    lengths,
    counts,
    L: int,
    regime: str,
    runs: tuple[np.ndarray, np.ndarray],
    *,
    truncate: bool,
    offset: int = 0,
    seed: int = 0,
    micro_batch: int = 0,
) -> tuple[np.ndarray, int]:
    """Segment counts (index = length, 0..L) and dropped tokens of the regime's rows cut by windows ``runs`` (with
    ``micro_batch``: reshaped by DeepSpeed's seqlen_reshape in micro-batches of that many rows, each run of rows
    starting one).
    """
    run_rows, run_windows = runs
    tokens = exact_dot(lengths, counts)
    if regime == "concat":
        full_rows, last = divmod(tokens, L)
        seg = np.zeros(L + 1, dtype=np.int64)
        dropped, first = 0, 0
        for rows, w in zip(run_rows.tolist(), run_windows.tolist()):  # rows [first, first + rows)
            full = max(0, min(first + rows, full_rows) - first)
            if micro_batch:  # whole micro-batches, then the rest of the stage's whole rows
                whole, rest = divmod(full, micro_batch)
                dropped += _reshaped_micro_batch(seg, L, w, micro_batch, whole)
                dropped += _reshaped_micro_batch(seg, L, w, rest, 1) if rest else 0
            else:
                dropped += _add_piece(seg, 0, L, w, truncate, offset, full)
            if last and first <= full_rows < first + rows:
                if micro_batch:  # the last, shorter row: a micro-batch of its own
                    dropped += _reshaped_micro_batch(seg, last, w, 1, 1)
                else:
                    dropped += _add_piece(seg, 0, last, w, truncate, offset, 1)
            first += rows
        return seg, int(dropped)
    # rows are walked one by one: one document of 2^40 tokens at L = 8 ran for hours (a review)
    walker = f"the {regime} regime"
    check_walk(walker, "walks a curriculum's rows one by one, here", np.asarray(run_rows), "rows")
    docs = stream_order(lengths, counts, seed, walker)
    seg, dropped = _walk_rows(
        docs, L, run_rows, run_windows, truncate, offset, regime == "natural", micro_batch, tokens
    )
    return seg, int(dropped)


def stage_rows(k: np.ndarray, scale: Fraction) -> np.ndarray:
    """The stage's row ⌊(k + 1/2)·scale⌋ in the middle of the block each histogram row ``k`` stands for (``scale`` =
    T_s / T_h: the stage's tokens over its histogram's; k itself when 1), int64 (Python integers on the way where
    2k·numerator would pass 2^62).

    >>> stage_rows(np.arange(4), Fraction(5, 2)).tolist()
    [1, 3, 6, 8]
    """
    k = np.asarray(k, dtype=np.int64)
    if scale == 1:
        return k
    num, den = scale.numerator, 2 * scale.denominator
    if k.size and (2 * int(k.max()) + 1) * num >= MAX_COUNT:
        return ((2 * k.astype(object) + 1) * num // den).astype(np.int64)
    return (2 * k + 1) * num // den


def stage_row_count(rows: int, scale: Fraction) -> int:
    """⌈rows·scale⌉: the stage's rows that the histogram's ``rows`` stand for."""
    return -(-rows * scale.numerator // scale.denominator)


def first_row_at(stage_row: int, scale: Fraction) -> int:
    """The first histogram row k whose :func:`stage_rows` is at least ``stage_row``: (2k + 1)·scale >= 2·stage_row."""
    return max(0, -(-(2 * stage_row * scale.denominator - scale.numerator) // (2 * scale.numerator)))


def _stage(lengths, counts, L: int, regime: str, stage_tokens: int | None, rechunk: bool = False):
    """``(lengths, counts, scale)`` a curriculum walks for a schedule's stage of ``stage_tokens`` tokens (None: the
    histogram is the stage): under ``concat`` the stage's own stream, ``[T_s]`` (exact: only its tokens matter);
    else the histogram's rows standing for the stage's, ``scale`` = T_s / T_h (see the module docstring).
    """
    if stage_tokens is None:
        return lengths, counts, Fraction(1)
    if isinstance(stage_tokens, bool) or not isinstance(stage_tokens, int | np.integer) or not 0 < stage_tokens < 2**63:
        raise FreqlabError(
            f"stage_tokens must be a positive integer below 2^63 (the stage's tokens), got {brief(stage_tokens)}"
        )
    if regime == "concat":
        return np.array([int(stage_tokens)], np.int64), np.ones(1, np.int64), Fraction(1)
    scale = Fraction(int(stage_tokens), exact_dot(lengths, counts))
    if rechunk and scale != 1:  # a review: each row stood for a block of the stage's, a micro-batch of one row
        raise FreqlabError(
            f"warmup: batch_rule rechunk under regime {regime!r} in a schedule's stage of another size than its "
            "histogram: its rows cannot stand for the stage's micro-batches; use regime concat (exact) or truncate"
        )
    return lengths, counts, scale


def runs_of(window: Callable[[np.ndarray], np.ndarray], growth_rows: int, rows: int, L: int):
    """Runs (rows, window) of a nondecreasing schedule ``window(k)`` over rows k < ``growth_rows`` (window L from
    there on), over ``rows`` rows. The first row with window >= v is found by binary search for every v in 1..L:
    O(L · log rows) evaluations of the schedule.
    """
    growth_rows = min(growth_rows, rows)
    values = np.arange(1, L + 1, dtype=np.int64)
    lo = np.zeros(L, dtype=np.int64)  # first row with window >= v lies in [lo, hi]; row growth_rows has L
    hi = np.full(L, growth_rows, dtype=np.int64)
    while True:
        open_ = lo < hi
        if not open_.any():
            break
        mid = (lo + hi) // 2
        reached = np.ones(L, dtype=bool)
        inside = open_ & (mid < growth_rows)
        if inside.any():
            reached[inside] = window(mid[inside]) >= values[inside]
        hi = np.where(open_ & reached, mid, hi)
        lo = np.where(open_ & ~reached, mid + 1, lo)
    first = np.concatenate([lo, [rows]])  # first[v - 1]: first row with window >= v; first[L] = rows
    run_rows = first[1:] - first[:-1]  # rows with window exactly v
    keep = run_rows > 0
    return run_rows[keep], values[keep]


def _rows_mix_documents(regime: str) -> int | None:
    """The documents a float64 source mix keeps for a curriculum that walks the regime's rows (pack and natural walk
    documents and rows one by one; concat's rows are counted: None, any mix).
    """
    return WALKED_MIX_DOCUMENTS if regime != "concat" else None


def _frequency(seg: np.ndarray, L: int, dropped: int, name: str, note: str) -> ExactFrequency:
    nonzero = np.flatnonzero(seg)
    segs = Segments(nonzero.astype(np.int64), seg[nonzero], L, name, dropped)
    return ExactFrequency(segment_frequency(segs), 1, Fraction(dropped), note)


def _check_stage(lengths, counts, L, regime: str, kind: str):
    L = check_window(L)
    lengths, counts = check_histogram(lengths, counts)
    int64_tokens(lengths, counts)
    if regime not in ROW_REGIMES:
        raise FreqlabError(
            f"{kind}: regime {regime!r} has no row order to schedule; use one of {', '.join(ROW_REGIMES)}"
        )
    return lengths, counts, L


# -- sequence-length warm-up ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Warmup:
    """Sequence-length warm-up from ``start`` to L over ``share`` of the steps (see the module docstring)."""

    start: int
    share: Fraction
    steps: str | int = "linear"  # "linear" or a number of equal plateaus
    batch_rule: str = "truncate"
    multiple: int = 1
    batch: int = 1
    micro_batch: int = 1  # rows each seqlen_reshape sees at once (rechunk): a data-parallel rank's micro-batch

    kind = "warmup"
    walks_rows = True  # the rows of L walked are bounded too (regimes.WALKED_MIX_ROWS)

    def mix_documents(self, regime: str) -> int | None:
        """At most how many documents a float64 source mix for :meth:`frequency` under ``regime`` keeps."""
        return _rows_mix_documents(regime)

    def window(self, L: int, warm_steps: int) -> Callable[[np.ndarray], np.ndarray]:
        """w(step) for steps below ``warm_steps``, in exact integers (int64 while L · steps fits, else Python ints)."""
        start, m, span = self.start, self.multiple, L - self.start
        wide = (L + 1) * (warm_steps + 1) * (cast(int, self.steps) if self.steps != "linear" else 1) >= 1 << 62

        def at(s: np.ndarray) -> np.ndarray:
            s = s.astype(object) if wide else s
            if self.steps == "linear":  # DeepSpeed's engine asks for step s at global_steps + 1
                raw = (start * warm_steps + span * (s + 1)) // warm_steps
            else:
                raw = start + span * (s * self.steps // warm_steps) // self.steps
            return np.minimum((raw // m) * m, L).astype(np.int64)

        return at

    def runs(self, rows: int, L: int, scale: Fraction = Fraction(1)) -> tuple[np.ndarray, np.ndarray]:
        """(rows, window) runs over the histogram's ``rows`` rows in training order, each standing for the stage's
        row :func:`stage_rows` of ⌈rows·scale⌉: steps are the stage's rows over ``batch``.
        """
        if self.start > L:
            raise FreqlabError(f"warmup: start {self.start} is larger than the window L = {L}")
        if L % self.multiple:  # DeepSpeed's rounded-down window then stays below L past the warm-up, still ramping
            raise FreqlabError(
                f"warmup: multiple {self.multiple} does not divide the window L = {L}: DeepSpeed's fixed_linear "
                "rounds the window down to a multiple, so it stays below L and keeps growing after the warm-up; "
                "freqlab does not model that: make L a multiple of multiple (its difficulty_step)"
            )
        steps = -(-stage_row_count(rows, scale) // self.batch)
        warm_steps = int(self.share * steps)
        by_step = self.window(L, warm_steps)
        growth_rows = first_row_at(warm_steps * self.batch, scale)  # the first row whose stage row is warm
        return runs_of(lambda k: by_step(stage_rows(k, scale) // self.batch), growth_rows, rows, L)

    def frequency(
        self, lengths, counts, L: int, regime: str = "concat", seed: int = 0, stage_tokens: int | None = None
    ) -> ExactFrequency:
        """Exact f(i) of the stage's rows under the warm-up (``seed``: stream order of ``pack``/``natural``;
        ``stage_tokens``: the tokens of the schedule's stage the histogram stands for, whose steps the warm-up counts:
        exact under ``concat``, an estimate under ``pack``/``natural`` when they differ from the histogram's).
        """
        lengths, counts, L = _check_stage(lengths, counts, L, regime, self.kind)
        truncate = self.batch_rule == "truncate"
        lengths, counts, scale = _stage(lengths, counts, L, regime, stage_tokens, rechunk=not truncate)
        if not truncate and regime == "natural":
            raise FreqlabError(
                "warmup: batch_rule rechunk (DeepSpeed's seqlen_reshape) reshapes micro-batches of equal rows of "
                "L + 1 tokens, which regime natural (a row per document) has not: use concat or pack"
            )
        seg, dropped = windowed_segments(
            lengths, counts, L, regime, self.runs(_rows(lengths, counts, L, regime), L, scale), truncate=truncate,
            seed=seed, micro_batch=0 if truncate else self.micro_batch,
        )  # fmt: skip
        note = f"sequence-length warm-up {self.start} -> {L} over {self.share} of the steps ({self.batch_rule})"
        return _frequency(seg, L, dropped, "warmup", note)


def _warmup(spec: Spec) -> Warmup:
    steps = spec.data.get("steps", "linear")
    if steps != "linear" and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise spec.bad("steps", "linear or a number of equal plateaus >= 1")
    multiple = spec.integer("multiple", 1)
    start = spec.positions("start")
    if start % multiple:
        raise spec.bad("start", f"a multiple of multiple = {multiple}")
    batch_rule = spec.choice("batch_rule", ("truncate", "rechunk"), "truncate")
    batch, micro_batch = spec.integer("batch", 1), spec.integer("micro_batch", 1)
    if spec.has("micro_batch") and batch_rule != "rechunk":
        raise spec.bad("micro_batch", "given with batch_rule: rechunk only (the rows seqlen_reshape sees at once)")
    if batch % micro_batch:
        raise spec.bad("micro_batch", f"a divisor of batch = {batch} (a step's rows are whole micro-batches)")
    if micro_batch > 1 << 31:  # b · (L + 1) stays an int64 in the reshape (a review: 3·2^60 wrapped around)
        raise spec.bad("micro_batch", "at most 2^31 rows (a micro-batch of one device)")
    return Warmup(start, spec.share("share"), steps, batch_rule, multiple, batch, micro_batch)


# -- SkyLadder ------------------------------------------------------------------------------------------------------

GROWTHS: tuple[str, ...] = ("linear", "sine", "exponential")


@dataclass(frozen=True)
class SkyLadder:
    """SkyLadder's context-window schedule (see the module docstring): rows cut into fragments of w(k)."""

    growth: str = "linear"
    rate: int | None = None  # 1/α: steps per +1 of the linear window (their dm{rate})
    share: Fraction | None = None  # share of the steps with a growing window (their lin{p}p)
    start: int = 32
    batch: int = 1
    round_to: int | None = None
    document_mask: bool | None = None

    kind = "skyladder"

    walks_rows = True

    def mix_documents(self, regime: str) -> int | None:
        """At most how many documents a float64 source mix for :meth:`frequency` under ``regime`` keeps."""
        return _rows_mix_documents(regime)

    def changing_point(self, rows: int, L: int) -> int:
        """Row index (of the stage's ``rows``) from which the window is L (their ``changing_point``, in samples)."""
        if self.share is not None:
            return self.batch * int(self.share * -(-rows // self.batch))
        # their final_mask_length is their block_size, L + 1 tokens (inputs and the last label)
        return (L + 1 - self.start) * self.batch * cast(int, self.rate)  # _skyladder gives a rate or a share

    def window(self, L: int, rows: int, scale: Fraction = Fraction(1)) -> Callable[[np.ndarray], np.ndarray]:
        """w(k) for the histogram's rows k (of ``rows``, standing for the stage's rows :func:`stage_rows`), as
        their float64 formulas.
        """
        # final: their block_size (see above)
        start, final = self.start, L + 1
        cp = self.changing_point(stage_row_count(rows, scale), L)

        def at(k: np.ndarray) -> np.ndarray:
            k = stage_rows(k, scale)
            if self.share is None and self.growth == "linear":
                # a rate: their calculate_linear_schedule has no changing point; it grows on, rounded, then capped at
                # the final length (a review: round 5 at L = 8 kept 5 from the changing point on where theirs reaches
                # whole rows)
                w = start + k // (self.batch * cast(int, self.rate))
            else:
                x = np.minimum(k / max(cp, 1), 1.0)  # rows from the changing point on take the final length below
                if self.growth == "linear":
                    w = start + ((final - start) * x).astype(np.int64)
                elif self.growth == "sine":
                    w = start + ((final - start) * np.sin((np.pi / 2) * x)).astype(np.int64)
                else:
                    w = (start * (final / start) ** x).astype(np.int64)
                w = np.where(k >= cp, final, w)  # these return the final length from the changing point on
            if self.round_to:  # ... and round it too
                w = (w // self.round_to) * self.round_to
                w = np.where(w == 0, start, w)
            return np.minimum(w, L)

        return at

    def runs(self, rows: int, L: int, scale: Fraction = Fraction(1)) -> tuple[np.ndarray, np.ndarray]:
        """(rows, window) runs over the histogram's ``rows`` rows of window ``L`` under the SkyLadder ramp (each
        standing for the stage's row :func:`stage_rows`).
        """
        if self.start > L:
            raise FreqlabError(f"skyladder: start {self.start} is larger than the window L = {L}")
        if self.round_to is not None and self.round_to > L + 1:  # every window, their final L + 1 too, rounds to 0
            raise FreqlabError(
                f"skyladder: round {self.round_to} is larger than L + 1 = {L + 1} (their final window): every window "
                f"would round down to 0, which SkyLadder's code turns into start ({self.start}) for the whole stage"
            )
        return runs_of(self.window(L, rows, scale), rows, rows, L)

    def frequency(
        self, lengths, counts, L: int, regime: str = "concat", seed: int = 0, stage_tokens: int | None = None
    ) -> ExactFrequency:
        """Exact f(i) of the stage's rows cut into SkyLadder fragments (``seed``: stream order of ``pack``;
        ``stage_tokens``: the tokens of the schedule's stage the histogram stands for, whose steps ``share`` counts:
        exact under ``concat``, an estimate under ``pack``/``natural`` when they differ from the histogram's).
        """
        lengths, counts, L = _check_stage(lengths, counts, L, regime, self.kind)
        if stage_tokens is not None and self.share is None:
            raise FreqlabError(
                "skyladder: rate counts steps of the histogram's own rows, not of the stage's tokens: give share "
                "(of the stage's steps) inside a schedule's stage"
            )
        masked = regime != "concat"
        if self.document_mask is not None and self.document_mask != masked:
            raise FreqlabError(
                f"skyladder: document_mask: {str(self.document_mask).lower()} contradicts regime {regime!r} "
                "(concat has no document mask; pack and natural have one)"
            )
        if masked and self.round_to:  # their intradm path (calculate_mask_length) takes no inc{R}
            raise FreqlabError(
                f"skyladder: round {self.round_to} with a document mask (regime {regime!r}): SkyLadder rounds the "
                "window only without one (their dm path; intradm does not round): drop round, or use regime concat"
            )
        lengths, counts, scale = _stage(lengths, counts, L, regime, stage_tokens)
        runs = self.runs(_rows(lengths, counts, L, regime), L, scale)
        seg, dropped = windowed_segments(
            lengths, counts, L, regime, runs, truncate=False, offset=int(masked), seed=seed
        )
        how = f"rate 1/{self.rate}" if self.share is None else f"over {self.share} of the steps"
        note = f"SkyLadder {self.growth} window {self.start} -> {L} ({how}, {'with' if masked else 'no'} document mask)"
        return _frequency(seg, L, dropped, "skyladder", note)


def _skyladder(spec: Spec) -> SkyLadder:
    if spec.has("rate") == spec.has("share"):
        raise FreqlabError("skyladder: give exactly one of rate (steps per +1 token, e.g. 8) or share (e.g. 0.7)")
    rate = spec.integer("rate") if spec.has("rate") else None
    if rate is not None and not spec.has("batch"):
        raise FreqlabError("skyladder: rate needs batch (rows per step) to turn steps into rows")
    if rate is not None and rate * spec.integer("batch") > MAX_COUNT:  # rows per +1 token, an int64 divisor
        raise FreqlabError(
            f"skyladder: rate × batch = {rate * spec.integer('batch'):.3g} rows per +1 token is past 2^62"
        )
    return SkyLadder(
        spec.choice("growth", GROWTHS, "linear"), rate, spec.share("share") if spec.has("share") else None,
        spec.positions("start", 32), spec.integer("batch", 1),
        spec.positions("round") if spec.has("round") else None, spec.flag("document_mask", None),
    )  # fmt: skip


# -- Dataset Decomposition ------------------------------------------------------------------------------------------

DD_CURRICULA: tuple[str, ...] = ("uniform", "grow-p2", "grow-linear", "shrink")


@dataclass(frozen=True)
class DatasetDecomposition:
    """Binary Dataset Decomposition into buckets 2^min_log2 .. 2^max_log2 (see the module docstring)."""

    min_log2: int = 8
    max_log2: int = 13
    curriculum: str | tuple[float, ...] = "uniform"
    randomize: bool = False
    replayed: bool = False

    kind = "dataset-decomposition"
    walks_rows = False

    def mix_documents(self, regime: str) -> int | None:
        """At most how many documents a float64 source mix keeps for its seeded replay (None: not a replay)."""
        return REPLAYED_MIX_DOCUMENTS if self.randomize and self.replayed else None

    def pieces(self, n: int) -> tuple[dict[int, int], int]:
        """Deterministic pieces of a document of n tokens, as {bucket exponent k: pieces of 2^k + 1 tokens} (k
        falling), and the tokens left over. Counted, not listed: a 2^36-token document is 8·10^9 pieces of 2^3.
        """
        ks: dict[int, int] = {}
        m = n
        big = (1 << self.max_log2) + 1
        if m - 1 >= 1 << (self.max_log2 + 1):  # whole pieces of the largest bucket first
            q = (m - 1 - (1 << (self.max_log2 + 1))) // big + 1
            ks[self.max_log2] = q
            m -= q * big
        while m > 1:
            k = min((m - 1).bit_length() - 1, self.max_log2)
            if k < self.min_log2:
                break
            ks[k] = ks.get(k, 0) + 1
            m -= (1 << k) + 1
        return ks, m

    def _random_pieces(self, n: int, rng: np.random.Generator) -> tuple[list[int], int]:
        """Pieces as ``get_binary(randomize=True)`` draws them (one seeded draw)."""
        ks, m = [], n
        choices = np.arange(self.max_log2, self.min_log2 - 1, -1)
        p = 2.0 ** np.arange(self.max_log2 + 1 - self.min_log2)
        p = p / p.sum()
        while m > 1:
            k = (m - 1).bit_length() - 1
            if k < self.min_log2:
                break
            if k > self.max_log2:
                k = int(rng.choice(choices, p=p))
            ks.append(k)
            m -= (1 << k) + 1
        return ks, m

    def expected_pieces(self, documents: list[int]) -> dict[int, tuple[int, list[int]]]:
        """Expected pieces per bucket of each document length under ``get_binary(randomize=True)``, exactly:
        ``{n: (t, S)}`` with E[pieces of bucket lo + j] = S[j] / Q^t, Q = 2^buckets − 1.

        A remainder m draws bucket k with probability w_k / Q, w_k = 2^(max − k), while ⌊log2(m − 1)⌋ > max:
        E_m = Σ_k (w_k / Q)(e_k + E_(m − 2^k − 1)); below that the pieces are deterministic. Kept as integers
        S_m = Q^t(m) E_m with t(m) = 1 + t(m − 2^min − 1) draws at most, walking m upwards with a window of the
        last 2^max + 1 remainders: O(n_max · buckets²) operations on integers of O(t · buckets) bits.
        """
        lo, hi = self.min_log2, self.max_log2
        buckets, q = hi - lo + 1, (1 << (hi - lo + 1)) - 1
        weights = [1 << (hi - k) for k in range(lo, hi + 1)]
        first_random = (1 << (hi + 1)) + 1  # the smallest remainder that draws
        wanted = sorted(set(documents))
        keep = set(wanted)
        out: dict[int, tuple[int, list[int]]] = {}

        def deterministic(m: int) -> tuple[int, list[int]]:
            counts = [0] * buckets
            for k, many in self.pieces(m)[0].items():
                counts[k - lo] += many
            return 0, counts

        for n in wanted:
            if n < first_random:
                out[n] = deterministic(n)
        if not wanted or wanted[-1] < first_random:
            return out
        span = (1 << hi) + 1
        window: dict[int, tuple[int, list[int]]] = {}
        for m in range(first_random, wanted[-1] + 1):
            back = [m - (1 << k) - 1 for k in range(lo, hi + 1)]
            before = [window[r] if r >= first_random else deterministic(r) for r in back]
            t = 1 + before[0][0]  # the smallest piece leaves the longest remainder
            total = [0] * buckets
            for j, (w, (tr, sr)) in enumerate(zip(weights, before, strict=True)):
                lift = q ** (t - 1 - tr)
                for i in range(buckets):
                    total[i] += w * lift * sr[i]
                total[j] += w * q ** (t - 1)
            window[m] = (t, total)
            window.pop(m - span, None)
            if m in keep:
                out[m] = window[m]
        return out

    def frequency(
        self, lengths, counts, L: int, regime: str = "natural", seed: int = 0, stage_tokens: int | None = None
    ) -> ExactFrequency:
        """Exact f(i) of the pieces' attention segments (2^k each): deterministic, or (``randomize``) the exact
        expectation over the random split (``replay``: one seeded replay). ``regime`` and ``stage_tokens`` are not
        used (the pieces do not depend on steps).
        """
        refuse_megatron(regime)  # not used, but a stage labelled megatron would say what it is not
        L = check_window(L)
        lengths, counts = check_histogram(lengths, counts)
        if 1 << self.max_log2 > L:
            raise FreqlabError(f"dataset-decomposition: the largest bucket 2^{self.max_log2} is longer than L = {L}")
        if self.replayed or not self.randomize:  # int64 pieces (the expectation's numerators are Python integers)
            int64_tokens(lengths, counts)
        if self.randomize and self.replayed:
            return self.replay(lengths, counts, L, seed)
        note = f"Dataset Decomposition, buckets 2^{self.min_log2}..2^{self.max_log2}"
        if not self.randomize:
            seg = np.zeros(L + 1, dtype=np.int64)
            dropped = 0
            for n, c in zip(lengths.tolist(), counts.tolist(), strict=True):
                ks, _ = self.pieces(n)
                dropped += c * (n - sum(many << k for k, many in ks.items()))
                for k, many in ks.items():
                    seg[1 << k] += c * many
            return _frequency(seg, L, dropped, "dataset-decomposition", note + " (deterministic binary pieces)")
        longest = int(lengths[counts > 0].max()) if (counts > 0).any() else 0
        if longest > MAX_DD_EXPECTATION:
            raise FreqlabError(
                f"dataset-decomposition: the exact expectation of the random split walks every remainder up to the "
                f"longest document ({longest:,} tokens, more than {MAX_DD_EXPECTATION:,}); use replay: true"
            )
        expected = self.expected_pieces([n for n, c in zip(lengths.tolist(), counts.tolist(), strict=True) if c])
        q = (1 << (self.max_log2 - self.min_log2 + 1)) - 1
        depth = max((t for t, _ in expected.values()), default=0)
        pieces = [0] * (self.max_log2 - self.min_log2 + 1)  # Σ_n c_n E[pieces of each bucket] · Q^depth
        for n, c in zip(lengths.tolist(), counts.tolist(), strict=True):
            if c:
                t, per = expected[n]
                for j, v in enumerate(per):
                    pieces[j] += c * v * q ** (depth - t)
        denominator = q**depth
        positions = np.arange(L, dtype=object)
        numerator = np.zeros(L, dtype=object)
        for j, count in enumerate(pieces):
            size = 1 << (self.min_log2 + j)
            numerator[:size] += count * (size - positions[:size])  # a segment of `size` holds size − i pairs at i
        tokens = exact_dot(lengths, counts)
        dropped_expected = Fraction(tokens) - Fraction(int(numerator[0]), denominator)
        result = ExactFrequency(numerator, denominator, dropped_expected, note + " (expectation over the random split)")
        return result.reduced()

    def replay(self, lengths, counts, L: int, seed: int = 0) -> ExactFrequency:
        """f of one seeded draw of the random split: documents in the seeded stream order, numpy's
        ``choice(p=...)`` per piece of a remainder longer than the largest bucket, as ``get_binary`` draws.
        """
        L = check_window(L)
        lengths, counts = check_histogram(lengths, counts)
        seg = np.zeros(L + 1, dtype=np.int64)
        dropped = 0
        rng = seeded_rng(seed)
        for n in stream_order(lengths, counts, seed, "Dataset Decomposition's replay").tolist():
            ks, _ = self._random_pieces(n, rng)
            dropped += n - sum(1 << k for k in ks)
            for k in ks:
                seg[1 << k] += 1
        note = f"Dataset Decomposition, buckets 2^{self.min_log2}..2^{self.max_log2} (one seeded replay, seed {seed})"
        return _frequency(seg, L, dropped, "dataset-decomposition", note)


MAX_DD_EXPECTATION = 1 << 17  # longest document whose random split is averaged exactly (7.5 s at this size)


def _dataset_decomposition(spec: Spec) -> DatasetDecomposition:
    buckets = spec.data.get("buckets", [256, 8192])
    if not isinstance(buckets, list) or not buckets:
        raise spec.bad("buckets", "a list of powers of two, e.g. [256, 8192] or [256, 512, 1024]")
    sizes = []
    for b in buckets:
        try:
            size = parse_positions(b)
        except FreqlabError:
            size = 0
        if size < 1 or size & (size - 1):
            raise FreqlabError(f"dataset-decomposition: bucket {b!r} is not a power of two")
        sizes.append(size)
    lo, hi = min(sizes).bit_length() - 1, max(sizes).bit_length() - 1
    if len(sizes) > 2 and sorted(sizes) != [1 << k for k in range(lo, hi + 1)]:
        raise spec.bad("buckets", "consecutive powers of two (or just the smallest and the largest)")
    curriculum = spec.data.get("curriculum", "uniform")
    if isinstance(curriculum, list):
        if len(curriculum) != hi - lo + 1 or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 and finite(x) for x in curriculum
        ):
            raise spec.bad("curriculum", f"{hi - lo + 1} positive finite odds, one per bucket")
        curriculum = tuple(float(x) for x in curriculum)
    elif curriculum not in DD_CURRICULA:
        raise spec.bad("curriculum", "a list of odds per bucket or one of " + ", ".join(DD_CURRICULA))
    randomize, replayed = bool(spec.flag("randomize", False)), bool(spec.flag("replay", False))
    if replayed and not randomize:
        raise spec.bad("replay", "false unless randomize: true (the deterministic split has nothing to replay)")
    return DatasetDecomposition(lo, hi, curriculum, randomize, replayed)


# -- the spec -------------------------------------------------------------------------------------------------------

Curriculum = Warmup | SkyLadder | DatasetDecomposition

_KINDS: dict[str, tuple[Callable[[Spec], Curriculum], tuple[str, ...]]] = {
    "warmup": (_warmup, ("start", "share", "steps", "batch_rule", "multiple", "batch", "micro_batch")),
    "skyladder": (_skyladder, ("growth", "rate", "share", "start", "batch", "round", "document_mask")),
    "dataset-decomposition": (_dataset_decomposition, ("buckets", "curriculum", "randomize", "replay")),
}


def curriculum_from_spec(spec: dict) -> Curriculum:
    """A curriculum from its mapping (a stage's YAML ``curriculum:``); FreqlabError naming a bad key or value.

    >>> c = curriculum_from_spec({"kind": "warmup", "start": 2, "share": 1, "batch_rule": "truncate"})
    >>> f = c.frequency([4], [4], 4, "concat")  # 4 rows of 4 tokens trained with windows 2, 3, 3, 4
    >>> f.numerator.tolist(), f.dropped_tokens
    ([12, 8, 4, 1], Fraction(4, 1))
    >>> curriculum_from_spec({"kind": "skyladder", "growth": "cubic", "share": 0.5})
    Traceback (most recent call last):
    ...
    freqlab.errors.FreqlabError: skyladder: growth must be one of linear, sine, exponential, got 'cubic'
    """
    if not isinstance(spec, dict):
        raise FreqlabError(f"a curriculum must be a mapping with a kind, got {spec!r}")
    kind = spec.get("kind")
    if not isinstance(kind, str) or kind not in _KINDS:  # a list is unhashable: a TypeError (a review)
        raise FreqlabError(f"curriculum kind must be one of {', '.join(_KINDS)}, got {brief(kind)}")
    build, allowed = _KINDS[kind]
    return build(Spec(spec, kind, allowed))


__all__ = [
    "Curriculum",
    "DatasetDecomposition",
    "SkyLadder",
    "Warmup",
    "curriculum_from_spec",
]
