"""A position frequency with what it was computed from: what ``LengthHistogram.frequency(L, regime)`` returns.

:class:`PositionFrequency` holds f(i) for 0 <= i < L (exact int64, STRING Eq. 2) with its window, regime, segment
count, dropped tokens and the histogram's corpus and tokenizer. It behaves as the array where an array is
expected (``np.asarray(pf)``, ``pf[1024]``, ``len(pf)``, and every function of :mod:`freqlab.frequency.stats`
takes it), has the statistics as methods, and shows itself in a notebook: a short repr, and an HTML table with a
small plot of f(i) and the shaded ranges i <= L/2 and i >= 3L/4.

>>> from freqlab import LengthHistogram
>>> pf = LengthHistogram.from_lengths([4096] * 10).frequency(2048)   # 20 segments of 2048: f(i) = 20 (2048 - i)
>>> pf[0], pf[1024], pf.segments, round(pf.share_at_most(), 4), pf.effective_length(40960, tau=1000)
(40960, 20480, 20, 0.7504, 1998)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from freqlab.arrays import exact_sum, whole_count
from freqlab.deprecation import renamed_method
from freqlab.display import HEAD_SHADE, TAIL_SHADE, Display, Displayed, count, counted, curve_svg, percent
from freqlab.errors import FreqlabError
from freqlab.frequency import stats
from freqlab.frequency.position import segment_frequency
from freqlab.frequency.regime_table import describe, regime_row
from freqlab.frequency.regimes import REGIMES, Segments, segments
from freqlab.frequency.stats import DEFAULT_TAU
from freqlab.sizes import position_label

if TYPE_CHECKING:  # type-only: importing it here would load polars with freqlab.frequency
    from freqlab.histogram import LengthHistogram


@dataclass(frozen=True, repr=False, eq=False)
class PositionFrequency(NDArrayOperatorsMixin, Displayed):
    """Position frequency f(i), 0 <= i < L, of one data regime, with where it came from.

    Parameters
    ----------
    f : np.ndarray
        int64 array of shape (L,); ``f[0]`` is the number of tokens in the segments.
    L : int
        Training window.
    regime : str
        The data regime (``natural``, ``truncate``, ``concat``, ...; see :mod:`freqlab.frequency.regimes`).
    segments : int
        Number of segments (training sequences) the regime cuts the documents into.
    dropped_tokens : int
        Tokens the regime dropped (``truncate``).
    approximation : str or None
        The regime computed in place of one a histogram cannot give exactly.
    corpus, tokenizer : str
        The histogram's ``corpus`` and ``tokenizer``.

    Notes
    -----
    f(i) = Σ_s max(|s| − i, 0), summed over the segments s of the regime (STRING Eq. 2 [1]_), so
    f(0) = Σ_s |s| is the number of tokens and f(L − 1) the number of full-window segments.
    Indexing (``pf[i]``) reads f(i); operators and numpy functions act on f and give plain arrays (``pf == other``
    compares element by element, as arrays do; ``pf * 2``, ``np.cumsum(pf)``), and the array's attributes are
    f's (``pf.shape``, ``pf.sum()``); :meth:`share_at_most` and the other statistics are those of
    :mod:`freqlab.frequency.stats`. The position mass Σ f(i) ≈ T·L/2 passes 2^63 at 10^13 tokens of L = 2^21:
    ``pf.sum()`` and ``np.sum(pf)`` are exact (a Python int), and ``pf.cumsum()`` and ``np.cumsum(pf)`` are Python
    ints (an object array) where int64 would wrap; every other operation is numpy's on int64 f, which wraps there as
    numpy does (``np.add.reduce(pf)``, ``pf @ ones``, a sum with ``initial`` or ``where``): take
    ``pf.f.astype(object)`` for those. f itself is read-only: f(0) is the tokens, at most 2^63 - 1.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> from freqlab import LengthHistogram
    >>> pf = LengthHistogram.from_lengths([2048] * 10).frequency(2048)
    >>> pf.L, pf.regime, pf.segments, pf.f[:3].tolist()
    (2048, 'natural', 10, [20480, 20470, 20460])
    """

    f: np.ndarray
    L: int
    regime: str
    segments: int
    dropped_tokens: int = 0
    approximation: str | None = None
    corpus: str = ""
    tokenizer: str = ""

    def __post_init__(self) -> None:
        # made by hand (it is exported), checked as the regimes make it: PositionFrequency(f, L=10, regime="zzz",
        # segments=-5) was taken, and its repr raised (a review)
        f = np.asarray(self.f).view()  # frozen, as the object is: np.asarray(pf)[0] = 999 changed pf.tokens (a
        f.setflags(write=False)  # review); a view, so the caller's own array stays writable
        L = self.L  # not check_window: f exists, so its memory check (10 bytes a position) is passed (a review)
        if isinstance(L, bool) or not isinstance(L, int | np.integer) or L < 1:
            raise FreqlabError(f"L must be a positive integer, got {L!r}")
        L = int(L)
        if f.ndim != 1 or f.size != L or f.dtype.kind not in "iufO":
            raise FreqlabError(
                f"f must hold one number per position 0..L-1 (L = {L:,}), got {f.dtype} of shape {f.shape}"
            )
        if f.dtype.kind in "fO" or f.min() < 0:  # an int f: a reduction, no copy (f of 2^30 positions is 8 GiB)
            stats.checked_frequency(f)  # names the first negative, NaN or non-number value
        if self.regime not in REGIMES:
            raise FreqlabError(f"unknown regime {self.regime!r}; choose from {', '.join(REGIMES)}")
        for name in ("segments", "dropped_tokens"):
            object.__setattr__(self, name, whole_count(getattr(self, name), name))
        object.__setattr__(self, "f", f)
        object.__setattr__(self, "L", L)

    def __setstate__(self, state: dict) -> None:
        """Unpickled or deep-copied read-only, as made (pickle makes f anew, writable: a review)."""
        self.__dict__.update(state)
        self.f.setflags(write=False)

    @classmethod
    def from_segments(cls, segs: Segments, *, corpus: str = "", tokenizer: str = "") -> PositionFrequency:
        """f of a regime's segments (:func:`freqlab.frequency.segments`)."""
        return cls(
            segment_frequency(segs), segs.L, segs.regime, segs.segments, segs.dropped_tokens, segs.approximation,
            corpus, tokenizer,
        )  # fmt: skip

    @classmethod
    def from_histogram(
        cls, h: LengthHistogram, L: int, regime: str = "natural", *, seed: int = 0, megatron=None
    ) -> PositionFrequency:
        """f(i) for 0 <= i < L of histogram ``h`` under ``regime`` (STRING Eq. 2, exact int64), knowing ``h``'s corpus
        and tokenizer: what :meth:`LengthHistogram.frequency <freqlab.histogram.LengthHistogram.frequency>` returns.

        >>> from freqlab.histogram import LengthHistogram
        >>> PositionFrequency.from_histogram(LengthHistogram.from_counts([3, 6], [2, 1]), 4).f.tolist()
        [12, 8, 4, 1]
        """
        segs = segments(h.lengths, h.counts, L, regime, seed=seed, megatron=megatron)
        return cls.from_segments(segs, corpus=h.corpus, tokenizer=h.tokenizer)

    # the array -----------------------------------------------------------------------------------------------
    __hash__ = None  # type: ignore[assignment]  # compared element by element, as an array: not hashable either

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if dtype is not None and np.dtype(dtype) != self.f.dtype:
            return self.f.astype(dtype)
        return self.f.copy() if copy else self.f

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """Operators and ufuncs on f (:class:`numpy.lib.mixins.NDArrayOperatorsMixin`): a plain array comes out.
        Never into one (``out=pf``, ``pf += 1``): it is frozen, its f the count of its segments.
        """
        if any(isinstance(x, PositionFrequency) for x in kwargs.get("out", ())):
            return NotImplemented
        inputs = tuple(x.f if isinstance(x, PositionFrequency) else x for x in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def _not_in_place(self, other):
        return NotImplemented  # pf += 1 falls back to pf + 1, a new array, as for a tuple: pf itself is never changed

    __iadd__ = __isub__ = __imul__ = __imatmul__ = __itruediv__ = __ifloordiv__ = __imod__ = __ipow__ = _not_in_place
    __ilshift__ = __irshift__ = __iand__ = __ixor__ = __ior__ = _not_in_place

    def __eq__(self, other):  # ndarray's own comparison (an array of False against a string, as arrays give)
        return self.f == (other.f if isinstance(other, PositionFrequency) else other)

    def __ne__(self, other):
        return self.f != (other.f if isinstance(other, PositionFrequency) else other)

    def __getattr__(self, name: str):
        # the array's own attributes and methods (shape, dtype, sum(), tolist()...); called only for names the
        # class does not have, so its own (L, tokens, effective_length...) come first
        if name.startswith("_") or not hasattr(np.ndarray, name) or "f" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.f, name)

    def __len__(self) -> int:
        return int(self.f.size)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        """Σ f(i), exact: an int (``keepdims``: in an array of one, of Python ints past int64), where int64's own sum
        wraps past 2^63 (a review); with ``dtype``, ``out``, ``initial`` or ``where``, the array's own.
        """
        if axis in (None, 0, -1, (0,), (-1,)) and dtype is None and out is None and not kwargs:
            total = exact_sum(self.f)
            return np.array([total], dtype=np.int64 if total < 1 << 63 else object) if keepdims else total
        return self.f.sum(axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kwargs)

    def cumsum(self, axis=None, dtype=None, out=None):
        """Σ_{j <= i} f(j): int64, or Python ints (an object array) where int64 would wrap; with ``dtype`` or ``out``,
        the array's own.
        """
        if axis in (None, 0, -1) and dtype is None and out is None and exact_sum(self.f) >= 1 << 63:
            return np.cumsum(self.f.astype(object))
        return self.f.cumsum(axis=axis, dtype=dtype, out=out)

    def __getitem__(self, index):
        value = self.f[index]
        return int(value) if np.ndim(value) == 0 else value

    @property
    def tokens(self) -> int:
        """Tokens in the regime's segments: f(0)."""
        return int(self.f[0])

    # statistics (freqlab.frequency.stats) ------------------------------------------------------------------
    def share_at_most(self, x: int | None = None) -> float:
        """Share of position mass at i <= x (default L/2)."""
        return stats.share_at_most(self.f, self.L // 2 if x is None else x)

    def share_at_least(self, x: int | None = None) -> float:
        """Share of position mass at i >= x (default 3L/4)."""
        return stats.share_at_least(self.f, (3 * self.L) // 4 if x is None else x)

    def position_at_mass(self, fraction: float) -> int:
        """Smallest i whose cumulative mass reaches ``fraction`` of the total."""
        return stats.position_at_mass(self.f, fraction)

    def scaled(self, tokens: float) -> np.ndarray:
        """f_T = f · T / f(0) after training on ``tokens`` tokens (float64)."""
        return stats.scale_to_budget(self.f, tokens)

    def effective_length(self, tokens: float, tau: float = DEFAULT_TAU) -> int:
        """Largest i with f_T(i) >= tau (STRING Sec. 3, Fig. 2b); 0 when even f_T(0) < tau."""
        return stats.effective_length(self.f, tokens, tau)

    def tokens_needed(self, i: int, tau: float = DEFAULT_TAU) -> int:
        """Smallest budget T with f_T(i) >= tau."""
        return stats.tokens_needed(self.f, i, tau)

    def regime_row(self, tokens: float | None = None, tau: float = DEFAULT_TAU) -> dict:
        """:func:`~freqlab.frequency.regime_table.frequency_key_numbers` with the regime, segments and dropped tokens:
        one row of ``freqlab freq --json`` and of a scan's ``summary.json``. JSON-serialisable.
        """
        return regime_row(self.regime, self.f, self.segments, self.dropped_tokens, self.approximation, tokens, tau)

    def to_dict(self, tokens: float | None = None, tau: float = DEFAULT_TAU) -> dict:
        """What ``freqlab freq --json`` prints per window and regime: :meth:`regime_row`."""
        return self.regime_row(tokens, tau)

    def report(self, tokens: float | None = None, tau: float = DEFAULT_TAU) -> str:
        """What ``freqlab freq`` prints per window and regime: the mass shares, the predicted effective length at
        ``tokens``, the budget that makes f_T(L/2) reach ``tau`` (:func:`~freqlab.frequency.regime_table.describe`).
        """
        return describe(self.regime_row(tokens, tau), detail=True)

    summary = renamed_method("summary", "regime_row")  # deprecated: the old name goes in 0.3

    def to_frame(self):
        """A polars DataFrame with columns ``position``, ``regime``, ``f``; ``regime`` says what was computed in place
        of the regime asked for (``megatron (as concat)`` from a histogram alone: a table has no room for the note, and
        a bare ``megatron`` label passed concat's f off as Megatron's, a review).
        """
        import polars as pl

        regime = f"{self.regime} (as {self.approximation})" if self.approximation else self.regime
        return pl.DataFrame({"position": np.arange(self.L, dtype=np.int64), "regime": [regime] * self.L, "f": self.f})

    # display -------------------------------------------------------------------------------------------------
    def _display(self) -> Display:
        half, tail = self.L // 2, (3 * self.L) // 4
        title = f"PositionFrequency {self.regime}, L = {self.L}"
        if self.tokens <= 0:
            return Display(title, "no tokens in the segments", rows=[("L", count(self.L)), ("regime", self.regime)])
        head_share, tail_share = self.share_at_most(), self.share_at_least()
        headline = (
            f"f(0) = {counted(self.tokens, 'token')} in {counted(self.segments, 'segment')}; {percent(head_share)} of "
            f"position mass at i ≤ {half}, {percent(tail_share)} at i ≥ {tail}"
        )
        source = ", ".join(part for part in (self.corpus, self.tokenizer) if part)
        mass = {q: self.position_at_mass(q / 100) for q in (50, 90)}
        second = f"50% of mass at i ≤ {mass[50]}, 90% at i ≤ {mass[90]}" + (f" ({source})" if source else "")
        lines = [second]
        notes = []
        if self.dropped_tokens:
            notes.append(f"{count(self.dropped_tokens)} tokens dropped")
        if self.approximation:
            notes.append(f"{self.approximation} computed (a histogram has no order to replay)")
        if notes:
            lines.append("; ".join(notes))
        rows = [
            ("corpus", self.corpus or "-"),
            ("tokenizer", self.tokenizer or "-"),
            ("window L", f"{self.L} ({position_label(self.L)})"),
            ("regime", self.regime + (f" (computed as {self.approximation})" if self.approximation else "")),
            ("f(0): tokens in segments", count(self.tokens)),
            ("segments", count(self.segments)),
            ("dropped tokens", count(self.dropped_tokens)),
            (f"mass at i ≤ L/2 = {half}", percent(head_share)),
            (f"mass at i ≥ 3L/4 = {tail}", percent(tail_share)),
            ("50% / 80% / 90% of mass at i ≤", f"{mass[50]} / {self.position_at_mass(0.8)} / {mass[90]}"),
            *((f"f({i})", count(self.f[i])) for i in sorted({self.L // 4, half, tail, self.L - 1})),
        ]
        return Display(title, headline, lines, rows, figure=self._svg())

    def _svg(self) -> str:
        L = self.L
        return curve_svg(self.f, shades=[(0, L // 2, HEAD_SHADE), ((3 * L) // 4, L, TAIL_SHADE)])
