"""Exact position frequencies with a common denominator: deterministic counts and exact expectations.

A recipe that is deterministic given the histogram trains an integer number of (query, key) pairs at each
relative position: ``f(i) = numerator[i]`` with ``denominator = 1``. A recipe that samples (PoSE's skip offsets,
Dataset Decomposition's random splits) trains, in expectation over its sampler, a rational number of pairs:

    E[f](i) = numerator[i] / denominator,

one common denominator for all i, so sums and shares stay exact. Every operation checks that its int64 results
fit (2^63) and raises :class:`~freqlab.FreqlabError` instead of wrapping.

>>> a = ExactFrequency(np.array([4, 3, 2, 1]))
>>> b = ExactFrequency(np.array([3, 1]), 2)          # an expectation: 1.5, 0.5
>>> (a + b).numerator.tolist(), (a + b).denominator
([11, 7, 4, 2], 2)
>>> (a + b).tokens, (a + b).f.tolist()
(Fraction(11, 2), [5.5, 3.5, 2.0, 1.0])
>>> a.scale(Fraction(1, 3)).numerator.tolist(), a.scale(Fraction(1, 3)).denominator
([4, 3, 2, 1], 3)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from freqlab.errors import FreqlabError

INT64_LIMIT = 1 << 63


def checked_int64(values, what: str = "position frequency") -> np.ndarray:
    """An array of Python (or numpy) integers as int64; FreqlabError when one does not fit (never wraps)."""
    array = np.asarray(values)
    if array.dtype == object:
        if array.size and max(abs(int(v)) for v in array.tolist()) >= INT64_LIMIT:
            raise FreqlabError(f"the exact {what} exceeds int64 (2^63); scale the histogram down")
        return array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise FreqlabError(f"the exact {what} needs integer counts, got dtype {array.dtype}")
    return array.astype(np.int64)


def scaled_int64(values: np.ndarray, factor: int, what: str = "position frequency") -> np.ndarray:
    """``values * factor`` in int64 when every product fits, FreqlabError otherwise."""
    if values.size and int(np.abs(values).max()) * abs(int(factor)) >= INT64_LIMIT:
        raise FreqlabError(
            f"the exact {what} needs a common denominator of {len(str(abs(int(factor))))} digits: it exceeds int64 "
            "(2^63); scale the histogram down"
        )
    return values * np.int64(factor)


@dataclass(frozen=True)
class ExactFrequency:
    """f(i) = ``numerator[i] / denominator`` for 0 <= i < ``len(numerator)``, exactly.

    ``numerator`` is int64 of shape (L,) (or (target,) for recipes whose position-id differences exceed the
    window, e.g. PoSE); ``denominator`` is a positive integer, 1 when the recipe is deterministic.
    ``dropped_tokens`` counts (in expectation, exactly) the tokens a recipe discards (truncation, Dataset
    Decomposition's short remainders); ``note`` says in one line what the numbers are (e.g. "position-id
    differences on the original scale").
    """

    numerator: np.ndarray
    denominator: int = 1
    dropped_tokens: Fraction = Fraction(0)
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "numerator", checked_int64(self.numerator))
        if isinstance(self.denominator, bool) or int(self.denominator) != self.denominator or self.denominator < 1:
            raise FreqlabError(f"denominator must be a positive integer, got {self.denominator!r}")
        object.__setattr__(self, "denominator", int(self.denominator))
        object.__setattr__(self, "dropped_tokens", Fraction(self.dropped_tokens))

    @property
    def f(self) -> np.ndarray:
        """f as float64 (numerator / denominator): for plots and statistics, not for exact comparisons."""
        return self.numerator.astype(np.float64) / self.denominator

    @property
    def tokens(self) -> Fraction:
        """Trained tokens, f(0) (each query attends itself once), exactly."""
        return Fraction(int(self.numerator[0]), self.denominator) if self.numerator.size else Fraction(0)

    @property
    def L(self) -> int:
        return int(self.numerator.size)

    def value(self, i: int) -> Fraction:
        """f(i) as an exact Fraction."""
        return Fraction(int(self.numerator[i]), self.denominator)

    def reduced(self) -> ExactFrequency:
        """The same frequency with numerator and denominator divided by their greatest common divisor."""
        g = math.gcd(self.denominator, *(int(v) for v in np.unique(np.abs(self.numerator)).tolist()))
        if g <= 1:
            return self
        return ExactFrequency(self.numerator // g, self.denominator // g, self.dropped_tokens, self.note)

    def scale(self, factor) -> ExactFrequency:
        """f · factor exactly (``factor`` an int, Fraction or a decimal string such as ``"0.25"``)."""
        factor = Fraction(factor)
        if factor < 0:
            raise FreqlabError(f"a frequency can only be scaled by a factor >= 0, got {factor}")
        numerator = scaled_int64(self.numerator, factor.numerator)
        result = ExactFrequency(
            numerator, self.denominator * factor.denominator, self.dropped_tokens * factor, self.note
        )
        return result.reduced()

    def padded(self, length: int) -> ExactFrequency:
        """f extended with zeros to ``length`` positions (a stage trains nothing beyond its reach)."""
        if length < self.L:
            raise FreqlabError(f"cannot pad a frequency of {self.L} positions to {length}")
        numerator = np.zeros(length, dtype=np.int64)
        numerator[: self.L] = self.numerator
        return ExactFrequency(numerator, self.denominator, self.dropped_tokens, self.note)

    def __add__(self, other: ExactFrequency) -> ExactFrequency:
        if not isinstance(other, ExactFrequency):
            return NotImplemented
        denominator = math.lcm(self.denominator, other.denominator)
        length = max(self.L, other.L)
        a = scaled_int64(self.padded(length).numerator, denominator // self.denominator)
        b = scaled_int64(other.padded(length).numerator, denominator // other.denominator)
        if length and int(np.abs(a).max()) + int(np.abs(b).max()) >= INT64_LIMIT:
            raise FreqlabError("the exact sum of two position frequencies exceeds int64 (2^63)")
        note = self.note if self.note == other.note else "; ".join(n for n in (self.note, other.note) if n)
        return ExactFrequency(a + b, denominator, self.dropped_tokens + other.dropped_tokens, note).reduced()

    def __eq__(self, other) -> bool:
        if not isinstance(other, ExactFrequency):
            return NotImplemented
        a, b = self.reduced(), other.reduced()
        return a.denominator == b.denominator and np.array_equal(a.numerator, b.numerator)

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def from_fractions(cls, values, *, dropped_tokens=0, note: str = "") -> ExactFrequency:
        """From exact rationals (Fractions or ints), over their least common denominator."""
        values = [Fraction(v) for v in values]
        denominator = math.lcm(1, *(v.denominator for v in values))
        numerator = checked_int64(
            np.array([v.numerator * (denominator // v.denominator) for v in values], dtype=object)
        )
        return cls(numerator, denominator, Fraction(dropped_tokens), note)
