"""Statistics on a position frequency f: mass shares, budgets, and effective-length prediction.

f is non-increasing in i (f(i) - f(i+1) is the number of segments longer than i), which the searches here
use. Budgets rescale f to T training tokens: f_T(i) = f(i) · T / f(0), since f(0) is the number of tokens
in the regime's segments. Threshold comparisons ``f_T(i) >= tau`` are done in exact integer arithmetic
(``f(i) · T >= tau · f(0)`` on Python ints), so predictions do not depend on float rounding.

The threshold ``DEFAULT_TAU = 100e9`` is the STRING calibration (Sec. 3, Fig. 2b): two 1.3B TinyLlama models
(2K and 4K windows, SlimPajama) both reached an effective length of 1,280 when f(1280) ≈ 100B. It is an
empirical, model-dependent value, not a law: larger models may need fewer occurrences.

What STRING Sec. 3 reports for those models is kept as data (:data:`STRING_PROBE_REPORTS`,
:data:`STRING_PROBE_CALIBRATION`) so that ``freqlab stats`` can show it beside freqlab's prediction. The paper
measured effective length with a 4-needle Needle-in-a-Haystack test whose "evaluation context length
increases in 128-token steps" (:data:`STRING_PROBE_STEP`); freqlab's prediction is exact to the position.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from freqlab.arrays import as_written, exact_sum, magnitude, real_number
from freqlab.errors import FreqlabError, brief
from freqlab.sizes import DEFAULT_TAU  # kept for import compatibility (and used here)


@dataclass(frozen=True)
class ProbeReport:
    """An effective length STRING Sec. 3 reports for its TinyLlama 1.3B models (natural SlimPajama): training
    window ``L``, tokens consumed (``tokens``; ``tokens_text`` as the paper writes it), the effective length as
    the paper writes it, and where.
    """

    L: int
    tokens: int
    tokens_text: str
    reported: str
    source: str


#: Sec. 3 (Evaluation): "The evaluation context length increases in 128-token steps".
STRING_PROBE_STEP: int = 128
#: Sec. 3 Finding (2), Fig. 2b: "when the effective context length reaches 1,280 tokens, both models exhibit a
#: position frequency f(1280) of 100B" -- (position, occurrences).
STRING_PROBE_CALIBRATION: tuple[int, int] = (1280, 100 * 10**9)
#: Sec. 3 Finding (3): "Both models consume roughly the same number of tokens (around 300B) when reaching an
#: effective length of 1024"; Finding (1), Fig. 2a: "the model trained with a sequence length of 4K tokens
#: achieves an effective context length of 1.4K after consuming 400B tokens. In contrast, the model with a 2K
#: training length needs around 1T tokens to attain the same effective context length."
STRING_PROBE_REPORTS: tuple[ProbeReport, ...] = (
    ProbeReport(2048, 300 * 10**9, "around 300B", "1024", "Sec. 3 Finding (3)"),
    ProbeReport(4096, 300 * 10**9, "around 300B", "1024", "Sec. 3 Finding (3)"),
    ProbeReport(4096, 400 * 10**9, "400B", "1.4K", "Sec. 3 Finding (1), Fig. 2a"),
    ProbeReport(2048, 10**12, "around 1T", "1.4K", "Sec. 3 Finding (1), Fig. 2a"),
)


def checked_frequency(f) -> np.ndarray:
    """``f`` as a 1-D array of non-negative counts: integers (int64, or Python integers beyond 2^63), or floats
    (an expectation, a sum of scaled stages) that are finite; a FreqlabError naming the first value that is not.
    """
    f = np.asarray(f)
    if f.ndim != 1 or f.size == 0:
        raise FreqlabError(f"a position frequency must be a non-empty 1-D array, got shape {f.shape}")
    if f.dtype.kind not in "iufO":
        raise FreqlabError(f"a position frequency holds numbers, got dtype {f.dtype}")
    if f.dtype == object:
        bad = next((i for i, v in enumerate(f) if isinstance(v, bool) or not isinstance(v, (int, np.integer))), None)
        if bad is not None:
            raise FreqlabError(f"a position frequency holds numbers: f({bad}) = {f[bad]!r}")
    elif f.dtype.kind == "f" and not np.isfinite(f).all():
        bad = int(np.flatnonzero(~np.isfinite(f))[0])
        raise FreqlabError(f"a position frequency is finite: f({bad}) = {f[bad]}")
    negative = np.flatnonzero(f < 0)
    if negative.size:
        bad = int(negative[0])
        raise FreqlabError(f"a position frequency counts occurrences, never negative: f({bad}) = {f[bad]}")
    return f


def _value(f: np.ndarray, i: int) -> int | Fraction:
    """f(i) exactly: an integer, or a float's exact rational value (no truncation)."""
    return Fraction(float(f[i])) if f.dtype.kind == "f" else int(f[i])


def _index(f: np.ndarray, x) -> int:
    """Position ``x`` (an integer, or a float holding one, or a 0-d array of one) inside the window of ``f``."""
    if isinstance(x, np.ndarray) and x.ndim == 0:
        x = x.item()
    number = isinstance(x, (int, np.integer, float, np.floating)) and not isinstance(x, bool)
    if not number or not math.isfinite(x) or x != int(x):
        raise FreqlabError(f"a position is an integer, got {x!r}")
    if not 0 <= int(x) < f.size:
        raise FreqlabError(f"position {x} is outside the window 0..{f.size - 1}")
    return int(x)


def positive_number(value, what: str) -> float:
    """``value`` as a float, a FreqlabError naming ``what`` unless it is a finite positive number (a string is none;
    NaN would pass every comparison as false): budgets, thresholds, factors, the planners' numeric arguments.
    """
    number = None if isinstance(value, np.ndarray) else real_number(value)  # one number, not an array of one
    if number is None:
        raise FreqlabError(f"{what} must be a positive number, got {brief(value)}")
    if not math.isfinite(number) or number <= 0:  # past float64 (10**400) infinite, Decimal("sNaN") nan
        raise FreqlabError(f"{what} must be a positive finite number, got {brief(value)}")
    return number


def token_budget(value, what: str = "the token budget") -> int:
    """``value`` as a whole number of tokens: an integer exactly as it is (float64 would round 2^53 + 1), another
    number rounded; a FreqlabError naming ``what`` unless it is at least 1.
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):  # np.int64 too
        count = int(value)
    else:
        count = round(positive_number(value, what))
    if count < 1:
        raise FreqlabError(f"{what} must be at least 1 token, got {brief(value)}")
    return count


def share_at_most(f: ArrayLike, x: int) -> float:
    """Share of position mass at relative positions i <= x.

    Parameters
    ----------
    f : array_like
        Position frequency f(i), 0 <= i < L.
    x : int
        Position.

    Returns
    -------
    float
        Σ_{i≤x} f(i) / Σ_i f(i).

    Notes
    -----
    STRING (Sec. 2.2 [1]_): on SlimPajama at L = 2048, positions i <= 1024 hold over 80% of the mass.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> share_at_most([4, 3, 2, 1], 1)
    0.7
    """
    f = checked_frequency(f)
    total = exact_sum(f)
    return exact_sum(f[: _index(f, x) + 1]) / total if total else 0.0


def share_at_least(f: ArrayLike, x: int) -> float:
    """Share of position mass at relative positions i >= x.

    Parameters
    ----------
    f : array_like
        Position frequency f(i), 0 <= i < L.
    x : int
        Position.

    Returns
    -------
    float
        Σ_{i≥x} f(i) / Σ_i f(i).

    Notes
    -----
    STRING (Sec. 2.2 [1]_): on SlimPajama at L = 2048, positions i >= 1536 hold under 5% of the mass.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> share_at_least([4, 3, 2, 1], 2)
    0.3
    """
    f = checked_frequency(f)
    total = exact_sum(f)
    return exact_sum(f[_index(f, x) :]) / total if total else 0.0


def position_at_mass(f: ArrayLike, fraction: float) -> int:
    """Smallest position i whose cumulative mass reaches ``fraction`` of the total.

    Parameters
    ----------
    f : array_like
        Position frequency f(i), 0 <= i < L.
    fraction : float
        Fraction of the position mass, in (0, 1], read as written: a float as its shortest decimal (0.8 is 4/5
        exactly, not the binary float just above it), a Fraction or Decimal exactly.

    Returns
    -------
    int
        min {i : Σ_{j≤i} f(j) >= fraction · Σ_j f(j)}, exact for integer f (in float64 for float f).

    Notes
    -----
    STRING (Sec. 2.2 [1]_) reads f this way: on SlimPajama at L = 2048, positions i <= 1024 hold over 80% of
    the position occurrences.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> position_at_mass([4, 3, 2, 1], 0.7)
    1
    """
    f = checked_frequency(f)
    number = real_number(fraction)  # a number (a string "0.5" is none, as for effective_length)
    if number is None or not 0 < number <= 1:
        raise FreqlabError(f"fraction must be a number in (0, 1], got {brief(fraction)}")
    original, fraction = fraction, number
    # exact: compare cumulative * denominator >= total * numerator with a rational fraction
    ratio = as_written(original)
    if f.dtype.kind == "f":  # an expectation, a sum of scaled stages: in float64
        cumulative = np.cumsum(f)
        return min(int(np.searchsorted(cumulative, float(ratio) * cumulative[-1], side="left")), f.size - 1)
    total = exact_sum(f)
    target = -(-total * ratio.numerator // ratio.denominator)  # ceil(total * fraction)
    # cumulative sums a chunk at a time (memory flat in L), exact: int64 within a chunk when it cannot overflow
    done = 0
    for start in range(0, f.size, _CHUNK):
        chunk = f[start : start + _CHUNK]
        big = magnitude(chunk) * chunk.size >= 2**62
        cumulative = np.cumsum(chunk.astype(object) if big else chunk)
        rest = target - done
        if int(cumulative[-1]) >= rest:
            return start + int(np.searchsorted(cumulative, rest, side="left"))
        done += int(cumulative[-1])
    return f.size


_CHUNK = 1 << 20


def scale_to_budget(f: ArrayLike, tokens: float) -> np.ndarray:
    """Expected occurrences of each position after training on T tokens: f_T = f · T / f(0).

    Parameters
    ----------
    f : array_like
        Position frequency f(i), 0 <= i < L (f(0) is the number of tokens of one pass).
    tokens : float
        Training budget T.

    Returns
    -------
    np.ndarray
        float64 array f_T(i) = f(i) · T / f(0).

    Notes
    -----
    f_T(i) = f(i) · T / f(0): f(0) counts every token once, so T / f(0) is the number of passes. STRING [1]_
    (Sec. 3) compares f_T with a threshold tau. The values are float64, exact where f(i)·T is below 2^53;
    :func:`effective_length` compares f_T(i) >= tau in exact integer arithmetic.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> scale_to_budget([4, 3, 2, 1], 8).tolist()
    [8.0, 6.0, 4.0, 2.0]
    """
    f = checked_frequency(f)
    budget = positive_number(tokens, "the token budget")
    if f[0] <= 0:
        raise FreqlabError("f(0) is zero: the regime holds no tokens")
    # f·T first, then / f(0): one rounding where f·T is exact (below 2^53), where f·(T/f(0)) rounded twice and
    # put f_T(1) of [14, 7] at T = 122 at 60.99999999999999 (a review); f_T(0) is T itself; f·T past float64 (a
    # second review: [1e300, 1e300] at T = 1e30 gave inf) is scaled the other way
    if f.dtype == object:  # Python integers, 10**400 among them: each f(i)/f(0) exactly first, then rounded
        head = int(f[0])
        values = np.array([float(Fraction(int(v), head)) for v in f.tolist()])
        scaled = values * float(budget)
    else:
        values = f.astype(np.float64)
        if float(values.max()) * float(budget) < 1e300:
            scaled = values * float(budget) / float(f[0])
        else:  # f·T past float64: f / f(0) first, never past 1 (T / f(0) could overflow: a second review)
            scaled = values / float(f[0]) * float(budget)
    scaled[0] = float(budget)
    return scaled


def _reaches(f: np.ndarray, i: int, tokens: Fraction, tau: Fraction) -> bool:
    # f_T(i) >= tau  <=>  f(i) * T >= tau * f(0), exactly
    return _value(f, i) * tokens.numerator * tau.denominator >= tau.numerator * tokens.denominator * _value(f, 0)


def _rational(value, what: str) -> Fraction:
    """``value`` (an integer, a float, a Fraction...) as its exact rational value: a finite positive number."""
    positive_number(value, what)
    if isinstance(value, (Fraction, Decimal)):
        return Fraction(value)
    return Fraction(int(value)) if isinstance(value, (int, np.integer)) else Fraction(float(value))


def _budget(tokens) -> Fraction:
    """The training budget T, exactly (a float budget as its exact value, never rounded: T = 0.4 is 0.4 tokens)."""
    return _rational(tokens, "the token budget")


def exact_tau(tau) -> Fraction:
    """The threshold tau, exactly: a FreqlabError unless a finite positive number."""
    return _rational(tau, "tau")


def effective_length(f: ArrayLike, tokens: float, tau: float = DEFAULT_TAU) -> int:
    """Predicted effective context length: the largest i with f_T(i) >= tau (0 when even f_T(0) < tau).

    f need not be non-increasing (a PoSE replay's is not): the largest such i, whatever lies below it.

    Parameters
    ----------
    f : array_like
        Position frequency f(i), 0 <= i < L.
    tokens : float
        Training budget T in tokens.
    tau : float
        Threshold on the expected occurrences of a position (default 100B, for a 1.3B model).

    Returns
    -------
    int
        max {i : f_T(i) >= tau}, or 0.

    Notes
    -----
    f_T(i) = f(i) · T / f(0) (:func:`scale_to_budget`). STRING (Sec. 3, Fig. 2b [1]_) finds that the
    effective length tracks where f_T drops below a model-dependent threshold tau: TinyLlama 1.3B reaches an
    effective length of 1,280 when f_T(1280) is about 100B.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> effective_length([4, 3, 2, 1], tokens=400, tau=150)  # f_T = [400, 300, 200, 100]
    2
    """
    f = checked_frequency(f)
    T = _budget(tokens)
    threshold = exact_tau(tau)
    if f[0] <= 0:
        return 0
    need = threshold * _value(f, 0) / T  # f_T(i) >= tau  <=>  f(i) >= tau f(0) / T
    return max(largest_reaching(f, need, lambda i: _reaches(f, i, T, threshold)), 0)


def _non_increasing(values: np.ndarray) -> bool:
    """Whether values[i + 1] <= values[i] everywhere, compared a chunk at a time."""
    for start in range(0, values.size - 1, _CHUNK):
        window = values[start : start + _CHUNK + 1]  # overlapping by one: every neighbouring pair once
        if not (window[1:] <= window[:-1]).all():
            return False
    return True


def _approx(values: np.ndarray) -> np.ndarray:
    """float64 values, Python integers past a float's range as infinity (candidates, checked exactly after)."""
    if values.dtype != object:
        return values.astype(np.float64)
    # numpy integers (an object array of them) as Python ints; past a float's range: infinity
    ints = [int(x) for x in values.tolist()]
    return np.array([math.inf if x.bit_length() > 1000 else float(x) for x in ints], dtype=np.float64)


def largest_reaching(
    values: np.ndarray, need: Fraction, reaches: Callable[[int], bool], *, prefix: bool = False
) -> int:
    """The largest i with ``reaches(i)`` (exact: values[i] >= need); ``prefix``: the largest i with ``reaches(j)`` for
    every j <= i. -1 when there is none.

    A non-increasing f (every regime's) is bisected. Not every position frequency is (a PoSE replay's skipped
    position ids make a second hump): then the values within a relative 1e-9 of ``need`` and above it (floats, a
    chunk at a time from the end) are the candidates that reach, tried exactly from the last; with ``prefix``, those
    below it and within it the candidates that do not, from the first.
    """
    if values.size == 0:
        return -1
    try:
        floor, ceiling = float(need) * (1 - 1e-9), float(need) * (1 + 1e-9)
    except OverflowError:  # past any float (Python-integer counts): every position is a candidate, checked exactly
        floor, ceiling = math.inf, -math.inf
    if abs(float(need) if math.isfinite(floor) else 0.0) < sys.float_info.min:  # 0 or subnormal: the 1e-9 band
        floor, ceiling = math.inf, -math.inf  # collapses (a review: f_T = [1, 0] reached a tau of 1e-320)
    if _non_increasing(values):  # the reaching positions are a prefix

        def decided(i: int) -> bool:  # a value clearly off the threshold decides; one within 1e-9 is checked exactly
            value = _approx(values[i : i + 1])[0]  # (a second review: 1,000 stages summed exactly at every step)
            clear = math.isfinite(value) and math.isfinite(floor) and not floor <= value < ceiling
            return bool(value >= ceiling) if clear else reaches(i)

        if not decided(0):
            return -1
        lo, hi = 0, values.size - 1  # invariant: decided(lo)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if decided(mid) else (lo, mid - 1)
        return lo
    if math.isinf(floor):
        if prefix:
            return next((i - 1 for i in range(values.size) if not reaches(i)), values.size - 1)
        return next((i for i in range(values.size - 1, -1, -1) if reaches(i)), -1)
    if prefix:
        for start in range(0, values.size, _CHUNK):
            chunk = _approx(values[start : start + _CHUNK])
            for i in np.flatnonzero((chunk < ceiling) | np.isinf(chunk)).tolist():  # past a float: checked exactly
                if not reaches(start + i):
                    return start + i - 1
        return values.size - 1
    for start in range((values.size - 1) // _CHUNK * _CHUNK, -1, -_CHUNK):
        chunk = _approx(values[start : start + _CHUNK])
        for i in np.flatnonzero(chunk >= floor)[::-1].tolist():
            if reaches(start + i):
                return start + i
    return -1


def tokens_needed(f: ArrayLike, i: int, tau: float = DEFAULT_TAU) -> int:
    """Smallest training budget T (tokens) with f_T(i) >= tau.

    Parameters
    ----------
    f : array_like
        Position frequency f(i), 0 <= i < L.
    i : int
        Position.
    tau : float
        Threshold (default 100B).

    Returns
    -------
    int
        ceil(tau · f(0) / f(i)).

    Notes
    -----
    From f_T(i) = f(i) · T / f(0) >= tau. STRING (Sec. 3, Fig. 2b [1]_): TinyLlama 1.3B reaches effective
    length 1,280 when f_T(1280) is about 100B.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> tokens_needed([4, 3, 2, 1], 2, tau=150)
    300
    """
    f = checked_frequency(f)
    i = _index(f, i)
    if f[i] <= 0:
        raise FreqlabError(f"position {i} never occurs under this regime (f({i}) = 0)")
    needed = exact_tau(tau) * _value(f, 0) / _value(f, i)  # T · f(i) / f(0) >= tau, exactly
    return -(-needed.numerator // needed.denominator)
