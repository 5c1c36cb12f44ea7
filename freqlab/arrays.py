"""Exact integer arrays: a document-length histogram's ``(lengths, counts)`` validated to int64, and exact dot
products (int64 when the result provably fits, Python integers otherwise: never a silent wrap).

They sit at the bottom of the package (numpy and :mod:`freqlab.errors` only): :mod:`freqlab.histogram` checks its
counts with them and :mod:`freqlab.frequency` computes with them.

>>> exact_dot(np.array([2, 3]), np.array([10, 1]))
23
>>> [a.tolist() for a in check_histogram([3, 5], [1, 2])]
[[3, 5], [1, 2]]
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from fractions import Fraction
from typing import Any, cast

import numpy as np

from freqlab.errors import FreqlabError, brief


def magnitude(values: np.ndarray) -> int:
    """max |value| as a Python integer (0 for none), the bound of the exact functions' int64 paths: ``np.abs`` would
    wrap -2^63 to itself, a negative bound that passes every check.

    >>> magnitude(np.array([-2**63, 5]))
    9223372036854775808
    """
    return max(int(values.max()), -int(values.min())) if values.size else 0


def exact_sum(values: np.ndarray) -> int | float:
    """Exact sum of integers (int64 when it cannot overflow, Python ints otherwise); of floats, a float64 one.

    >>> exact_sum(np.array([2**62, 2**62])), exact_sum(np.array([0.5, 1.0]))
    (9223372036854775808, 1.5)
    """
    if values.size == 0:
        return 0
    if values.dtype.kind == "f":
        return float(values.sum())
    if magnitude(values) * values.size < 2**62:
        return int(values.sum(dtype=np.int64))
    return sum(int(part.astype(object).sum()) for part in _chunks(values))


#: elements turned into Python integers at a time where int64 could wrap: ~40 bytes each, so memory stays flat (a
#: review: f of 2^24 positions through whole object arrays took `freq --weights --regime uniform` to 64 bytes a
#: position, past its memory check)
OBJECT_CHUNK = 1 << 16


def _chunks(*arrays: np.ndarray):
    """The arrays' aligned slices of :data:`OBJECT_CHUNK` elements (one array: the slices themselves)."""
    size = arrays[0].size
    for start in range(0, size, OBJECT_CHUNK):
        parts = tuple(a[start : start + OBJECT_CHUNK] for a in arrays)
        yield parts if len(parts) > 1 else parts[0]


def exact_dot(a: np.ndarray, b: np.ndarray) -> int:
    """Σ a·b as a Python integer: int64 when it provably fits, Python ints otherwise (no silent wrap)."""
    if a.size == 0:
        return 0
    # np.dot of int64 and uint64 goes through float64 (a review: 3458764526705442816 for ...825): same kinds only
    mixed = a.dtype.kind != b.dtype.kind or a.dtype.kind not in "iu"
    if not mixed and magnitude(a) * magnitude(b) * a.size < 1 << 63:
        return int(np.dot(a, b))
    return sum(int(np.dot(x.astype(object), y.astype(object))) for x, y in _chunks(a, b))


def int64_tokens(lengths: np.ndarray, counts: np.ndarray | None = None) -> int:
    """The histogram's tokens Σ length·count (``counts`` None: each length one document); a FreqlabError from 2^63
    on. Whatever is counted from a histogram (segments, rows, pieces, f(i)) is at most its tokens, so below 2^63
    int64 counts it exactly.
    """
    tokens = int(exact_sum(lengths)) if counts is None else exact_dot(lengths, counts)
    if tokens >= 1 << 63:
        raise FreqlabError(f"{tokens:,} tokens exceed exact int64 arithmetic (2^63); scale the histogram down")
    return tokens


def check_histogram(lengths, counts) -> tuple[np.ndarray, np.ndarray]:
    """Validate and normalise a document-length histogram to int64 arrays of equal shape.

    Lengths must be >= 1 and counts >= 0 (a zero count is allowed and ignored). Raises FreqlabError
    naming the first offending value.
    """
    lengths = as_int64(lengths, "lengths")
    counts = as_int64(counts, "counts")
    if lengths.shape != counts.shape:
        raise FreqlabError(f"lengths and counts differ in size: {lengths.size} vs {counts.size}")
    if lengths.size and lengths.min() < 1:
        bad = int(lengths[np.argmax(lengths < 1)])
        raise FreqlabError(f"document lengths must be >= 1, got {bad}")
    if counts.size and counts.min() < 0:
        bad = int(counts[np.argmax(counts < 0)])
        raise FreqlabError(f"counts must be >= 0, got {bad}")
    return lengths, counts


def summed_by_length(lengths: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One row per distinct length, in length order, its counts summed (int64): a histogram whose rows repeat a
    length, or come in any order, as the one multiset of documents it is.

    >>> [a.tolist() for a in summed_by_length(np.array([5, 3, 5]), np.array([1, 4, 2]))]
    [[3, 5], [4, 3]]
    """
    unique, inverse = np.unique(lengths, return_inverse=True)
    summed = np.zeros(unique.size, np.int64)
    np.add.at(summed, inverse, counts)
    return unique, summed


def real_number(value) -> float | None:
    """``value`` as a float when it is one real number (an int, a float, a Fraction, a Decimal, a numpy scalar or
    0-d array of one; not a bool, not a string), else None. NaN stays NaN: the caller's range check refuses it.

    >>> real_number(np.array(0.5)), real_number(Decimal("0.25")), real_number(True), real_number("0.5")
    (0.5, 0.25, None, None)
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_, np.timedelta64)) or not isinstance(value, (numbers.Real, Decimal)):
        return None  # (numpy's timedelta64 is an integer to Python)
    try:
        return float(value)
    except OverflowError:  # an int or Fraction past float64 (10**400): infinite, of its sign
        return math.inf if cast(Any, value) > 0 else -math.inf
    except ValueError:  # Decimal("sNaN")
        return math.nan


def as_written(number) -> Fraction:
    """A finite real number exactly as it is written: an integer, Fraction or Decimal as it is, a float as its
    shortest decimal (0.1 is 1/10, not the binary double nearest it), a numpy float of any width as numpy prints
    it (``np.float32(0.3)`` is 3/10). The caller has checked that it is one finite real number.

    >>> as_written(0.1), as_written(np.float32(0.3)), as_written(1e-13), as_written(Decimal("0.25"))
    (Fraction(1, 10), Fraction(3, 10), Fraction(1, 10000000000000), Fraction(1, 4))
    """
    if isinstance(number, np.ndarray):
        number = number[()]
    if isinstance(number, np.floating):
        return Fraction(str(number))  # numpy's shortest digits of its own width (float32's 0.3, not 0.30000001...)
    if isinstance(number, np.integer):
        return Fraction(int(number))
    if isinstance(number, numbers.Rational | Decimal):
        return Fraction(number)
    return Fraction(repr(float(number)))


def whole_number(value) -> int | None:
    """``value`` as an int when it is one whole real number (an int, a Fraction of denominator 1, an integral
    Decimal, or a float, numpy's too, holding a whole number below 2^53, where every integer is exact), else None;
    never a bool.

    >>> whole_number(5000.0), whole_number(Fraction(4, 2)), whole_number(Decimal("3")), whole_number(2.5)
    (5000, 2, 3, None)
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, numbers.Rational):
        return int(value.numerator) if value.denominator == 1 else None
    if isinstance(value, Decimal):
        return int(value) if value.is_finite() and value == value.to_integral_value() else None
    if isinstance(value, float | np.floating) and math.isfinite(value) and float(value).is_integer():
        return int(value) if abs(float(value)) < 2**53 else None  # (2**53 in float16 overflowed, with a warning)
    return None


def finite(value) -> bool:
    """Whether ``value`` is a real number that float64 holds finitely: not NaN or infinite, and not an int or
    Fraction past 1.8e308 (``math.isfinite`` raises OverflowError on those).

    >>> finite(10**400), finite(1e308), finite(float("nan")), finite("1")
    (False, True, False, False)
    """
    number = real_number(value)
    return number is not None and math.isfinite(number)


def as_int64(values, name: str) -> np.ndarray:
    """``values`` (one number, or a 1-D sequence) as a 1-D int64 array, refusing non-integers, other shapes and
    values beyond int64 (``name`` in the message).
    """
    array = np.asarray(values)
    if array.ndim > 1:  # flattening a table would pair the wrong lengths and counts
        raise FreqlabError(f"{name} must be a 1-D sequence, got shape {array.shape}")
    array = array.reshape(-1)
    if array.size == 0:
        return array.astype(np.int64)
    if array.dtype == object:  # Python integers (beyond int64 among them), or anything else
        bad = [v for v in array if isinstance(v, bool) or not isinstance(v, (int, np.integer))][:1]  # None too
        if bad:
            raise FreqlabError(f"{name} must be integers, got {bad[0]!r}")
        if max(array) >= 2**63:
            raise FreqlabError(f"{name} must be at most 2^63 - 1 (exact int64 counts), got {max(array)}")
        if min(array) < -(2**63):  # refused below as negative: named here, before int64 would wrap it
            raise FreqlabError(f"{name} must be at least -2^63, got {min(array)}")
        return array.astype(np.int64)
    if array.dtype.kind == "f":
        whole = np.isfinite(array) & (array == np.round(array))
        if not whole.all():
            raise FreqlabError(f"{name} must be integers, got {array[np.argmin(whole)].item()!r}")
        # a float64 of 2^53 may have been 2^53 + 1: from there on, digits are lost; float32 from 2^24 on (a pandas
        # float32 column of 16,777,217 reads 16,777,216: a review), float16 from 2^11
        bits = np.finfo(array.dtype).nmant + 1
        largest = np.abs(array).max().item()  # a Python float: 2**53 is no float16 (numpy warned of an overflow)
        if largest >= 2.0**bits:
            raise FreqlabError(
                f"{name} are {array.dtype} values of 2^{bits} or more ({largest:.17g}), which hold no exact count: "
                "give integers"
            )
    elif array.dtype.kind not in "iu":
        raise FreqlabError(f"{name} must be integers, got dtype {array.dtype}")
    if array.dtype.kind != "i" or array.dtype.itemsize > 8:  # uint64 or float: casting must not wrap or saturate
        largest = array.max().item()
        if largest >= 2**63:
            shown = int(largest) if array.dtype.kind == "u" else f"{float(largest):g}"
            raise FreqlabError(f"{name} must be at most 2^63 - 1 (exact int64 counts), got {shown}")
    return array.astype(np.int64)


def whole_count(number, what: str) -> int:
    """``number`` as an int when it is a whole count >= 0 (a report of -4 documents read, or of 2.5 empty ones,
    adds up to nothing), else a FreqlabError naming ``what``.
    """
    if isinstance(number, bool) or not isinstance(number, int | np.integer) or not 0 <= number < 1 << 63:
        raise FreqlabError(f"{what} must be a whole count in 0..2^63 - 1, got {brief(number)}")
    return int(number)


def as_names(value, what: str, examples: str, *, allow_none: bool = False) -> list[str]:
    """``value`` (one name or several) as a list of names, ``what`` naming them and ``examples`` listing some: a
    string is one name (it was read letter by letter: "unknown regime 'c'"); none is a FreqlabError unless
    ``allow_none`` (polars said "cannot concat empty list"), as is anything that is no name or list of names (None
    met iter(): "'NoneType' object is not iterable", a review).

    >>> as_names("pack", "regime", "natural, pack"), as_names(("natural", "concat"), "regime", "natural, pack")
    (['pack'], ['natural', 'concat'])
    """
    if isinstance(value, str):
        return [value]
    try:
        names = list(value)
    except TypeError:
        raise FreqlabError(
            f"{what}s must be a {what} name or a list of them ({examples}), got {brief(value)}"
        ) from None
    bad = [name for name in names if not isinstance(name, str)][:1]
    if bad:
        raise FreqlabError(f"{what}s must be {what} names (strings: {examples}), got {brief(bad[0])}")
    if not names and not allow_none:
        raise FreqlabError(f"{what}s names no {what}: give one or several ({examples})")
    return names
