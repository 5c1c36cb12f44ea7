"""Exact position frequencies with a common denominator: deterministic counts and exact expectations.

A recipe that is deterministic given the histogram trains an integer number of (query, key) pairs at each
relative position: ``f(i) = numerator[i]`` with ``denominator = 1``. A recipe that samples (PoSE's skip offsets,
Dataset Decomposition's random splits) trains, in expectation over its sampler, a rational number of pairs:

    E[f](i) = numerator[i] / denominator,

one common denominator for all i, so sums and shares stay exact. Numerators are int64 whenever every value fits
(always for deterministic counts, which are at most the token count); an exact expectation whose numerators exceed
2^63 (PoSE over a large corpus: E[f] near 10^11 times a denominator near 10^10) keeps them as Python integers
(an object array): no operation ever wraps.

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

from freqlab.arrays import as_int64, as_written, finite, magnitude, whole_number
from freqlab.errors import FreqlabError

INT64_LIMIT = 1 << 63


def exact_integers(values) -> np.ndarray:
    """Integers as int64 when every one fits, else as an object array of Python integers (never wrapped)."""
    array = np.asarray(values)
    if array.ndim > 1:  # flattened, a table's rows were one f (a review)
        raise FreqlabError(f"an exact position frequency is one row of counts, got shape {array.shape}")
    if array.size == 0:  # [] is float64 to numpy
        return np.zeros(0, np.int64)
    if array.dtype == object:
        values = array.reshape(-1).tolist()
        found = [whole_number(v) for v in values]  # Fraction(2, 1), Decimal("3") and 3.0 are counts; 1.5 was 1
        if None in found:
            raise FreqlabError(f"an exact position frequency needs integer counts, got {values[found.index(None)]!r}")
        ints = [v for v in found if v is not None]
        wide = bool(ints) and max(abs(v) for v in ints) >= INT64_LIMIT
        return np.array(ints, dtype=object if wide else np.int64)
    if array.dtype.kind == "f":  # whole floats are counts, as in an object array (a review): as_int64's checks
        return as_int64(array, "an exact position frequency's counts")
    if array.dtype.kind not in "iu":
        raise FreqlabError(f"an exact position frequency needs integer counts, got dtype {array.dtype}")
    if array.dtype == np.uint64 and array.size and int(array.max()) >= INT64_LIMIT:
        return exact_integers(array.astype(object))
    return array.reshape(-1).astype(np.int64)


def exact_scaled(values: np.ndarray, factor: int) -> np.ndarray:
    """``values * factor`` exactly: int64 when every product fits, Python integers otherwise."""
    factor = int(factor)
    if values.dtype != object and magnitude(values) * abs(factor) < INT64_LIMIT:
        return values * np.int64(factor)
    return exact_integers(values.astype(object) * factor)


def exact_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b`` exactly (equal shapes): int64 when it fits, Python integers otherwise."""
    narrow = a.dtype != object and b.dtype != object
    if narrow and magnitude(a) + magnitude(b) < INT64_LIMIT:
        return a + b
    return exact_integers(a.astype(object) + b.astype(object))


def as_floats(numerator: np.ndarray, denominator: int) -> np.ndarray:
    """numerator / denominator as float64, each value correctly rounded, also where they are Python integers past
    what a float holds (a PoSE expectation's run to thousands of bits): int / int rounds exactly.
    """
    if numerator.dtype == object or denominator >= INT64_LIMIT:
        return np.array([int(v) / denominator for v in numerator.tolist()], dtype=np.float64)
    return numerator.astype(np.float64) / denominator


@dataclass(frozen=True)
class ExactFrequency:
    """f(i) = ``numerator[i] / denominator`` for 0 <= i < ``len(numerator)``, exactly.

    ``numerator`` has shape (L,) (or (target,) for recipes whose position-id differences exceed the window, e.g.
    PoSE), int64 (Python integers only where a value exceeds 2^63); ``denominator`` is a positive integer, 1 when the
    recipe is deterministic.
    ``dropped_tokens`` counts (in expectation, exactly) the tokens a recipe discards (truncation, Dataset
    Decomposition's short remainders); ``note`` says in one line what the numbers are (e.g. "position-id
    differences on the original scale").
    """

    numerator: np.ndarray
    denominator: int = 1
    dropped_tokens: Fraction = Fraction(0)
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "numerator", exact_integers(self.numerator))
        d = whole_number(self.denominator)  # Fraction(2), Decimal(2) and 2.0 too; nan was "cannot convert float NaN"
        if d is None or d < 1:
            raise FreqlabError(f"denominator must be a positive integer, got {self.denominator!r}")
        object.__setattr__(self, "denominator", d)
        object.__setattr__(self, "dropped_tokens", Fraction(self.dropped_tokens))

    @property
    def f(self) -> np.ndarray:
        """f as float64 (numerator / denominator): for plots and statistics, not for exact comparisons."""
        return as_floats(self.numerator, self.denominator)

    @property
    def tokens(self) -> Fraction:
        """Trained tokens, f(0) (each query attends itself once), exactly."""
        return Fraction(int(self.numerator[0]), self.denominator) if self.numerator.size else Fraction(0)

    @property
    def L(self) -> int:
        """The window: the length of f."""
        return int(self.numerator.size)

    def value(self, i: int) -> Fraction:
        """f(i) as an exact Fraction, 0 <= i < L."""
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.numerator.size:
            raise FreqlabError(f"a position is an integer in 0..{self.numerator.size - 1}, got {i!r}")  # -1 was f(L-1)
        return Fraction(int(self.numerator[i]), self.denominator)

    def reduced(self) -> ExactFrequency:
        """The same frequency with numerator and denominator divided by their greatest common divisor."""
        g = math.gcd(self.denominator, *(int(v) for v in np.unique(np.abs(self.numerator)).tolist()))
        if g <= 1:
            return self
        return ExactFrequency(self.numerator // g, self.denominator // g, self.dropped_tokens, self.note)

    def scale(self, factor) -> ExactFrequency:
        """f · factor exactly (``factor`` an int, a Fraction, a decimal string such as ``"0.25"``, or a float read as
        written, as mixtures read weights: 0.1 is 1/10, not the binary double nearest it).
        """
        if isinstance(factor, bool | np.bool_):  # True was a factor of 1 (a review)
            raise FreqlabError(f"a frequency is scaled by a finite factor >= 0, got {factor!r}")
        try:
            factor = as_written(factor) if finite(factor) else Fraction(factor)  # a decimal string too
        except (TypeError, ValueError, OverflowError):  # nan, inf, "x": Fraction's own words named no factor
            raise FreqlabError(f"a frequency is scaled by a finite factor >= 0, got {factor!r}") from None
        if factor < 0:
            raise FreqlabError(f"a frequency can only be scaled by a factor >= 0, got {factor}")
        numerator = exact_scaled(self.numerator, factor.numerator)
        result = ExactFrequency(
            numerator, self.denominator * factor.denominator, self.dropped_tokens * factor, self.note
        )
        return result.reduced()

    def padded(self, length: int) -> ExactFrequency:
        """f extended with zeros to ``length`` positions (a stage trains nothing beyond its reach)."""
        if length < self.L:
            raise FreqlabError(f"cannot pad a frequency of {self.L} positions to {length}")
        numerator = np.zeros(length, dtype=self.numerator.dtype)
        numerator[: self.L] = self.numerator
        return ExactFrequency(numerator, self.denominator, self.dropped_tokens, self.note)

    def __add__(self, other: ExactFrequency) -> ExactFrequency:
        if not isinstance(other, ExactFrequency):
            return NotImplemented
        denominator = math.lcm(self.denominator, other.denominator)
        length = max(self.L, other.L)
        a = exact_scaled(self.padded(length).numerator, denominator // self.denominator)
        b = exact_scaled(other.padded(length).numerator, denominator // other.denominator)
        note = self.note if self.note == other.note else "; ".join(n for n in (self.note, other.note) if n)
        return ExactFrequency(exact_sum(a, b), denominator, self.dropped_tokens + other.dropped_tokens, note).reduced()

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
        numerator = np.array([v.numerator * (denominator // v.denominator) for v in values], dtype=object)
        return cls(numerator, denominator, Fraction(dropped_tokens), note)
