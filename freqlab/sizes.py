"""Sizes: one syntax for every count, two bases.

A size is a number with an optional suffix, case-insensitive, ``_`` allowed as a separator: ``2048``, ``2k``,
``128K``, ``1.5T``, ``2e9``. What the suffix means depends on what is counted, as in the papers:

- **positions** (windows L, target lengths, offsets, lengths): K = 1024, M = 1024² (STRING's "2K" window is
  2048 positions, Llama 3.1's "128K" is 131,072);
- **tokens** (budgets T, the threshold tau, limits) and other counts (documents, samples, bytes): decimal,
  K = 10³, M = 10⁶, B (or G) = 10⁹, T = 10¹² (STRING's "1T tokens").

>>> parse_positions("2k"), parse_positions("128K"), parse_positions("1.5K"), parse_positions(4096)
(2048, 131072, 1536, 4096)
>>> parse_tokens("1T"), parse_tokens("300b"), parse_tokens("2e9"), parse_tokens("1.5K")
(1000000000000, 300000000000, 2000000000, 1500)

Printing follows the same conventions: :func:`position_label` writes positions with K = 1024, and
:func:`human_count` writes token counts with decimal suffixes.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

from freqlab.arrays import real_number
from freqlab.errors import FreqlabError, brief

#: Suffix -> multiplier for positions (K = 1024).
POSITION_SUFFIXES: dict[str, int] = {"K": 1 << 10, "M": 1 << 20}
#: Suffix -> multiplier for tokens and other counts (decimal: B = 10^9).
DECIMAL_SUFFIXES: dict[str, int] = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}

#: The largest window (or position) freqlab computes f for: f is a dense array of L int64 values, 8 GiB here.
MAX_POSITIONS = 1 << 30
#: the largest head dimension a plan takes: 32x the largest of published models (256); beyond it the blocks and
#: waveforms only grow (a longrope block of 10^6 factors was 23 MB of text)
MAX_HEAD_DIM = 8192

#: One line for help texts: what the suffixes mean.
POSITIONS_HELP = "K = 1024: 2K = 2048, 128K = 131072"
TOKENS_HELP = "K, M, B, T = 10^3, 10^6, 10^9, 10^12"
#: The occurrence threshold tau of an effective length, f_T(i) >= tau (STRING calibration, Sec. 3: see
#: :mod:`freqlab.frequency.stats`); a token count, here at the bottom so that every layer can default to it.
DEFAULT_TAU: float = 100e9


def parse_size(value, suffixes: dict[str, int], what: str, example: str, *, minimum: int = 1) -> int:
    """An integer >= ``minimum`` from a number or a string with one of ``suffixes`` (see the module docstring).

    >>> parse_size("3K", POSITION_SUFFIXES, "length", "2K")
    3072
    """
    if isinstance(value, bool):
        raise FreqlabError(f"not a {what}: {value!r}")
    try:
        if isinstance(value, str):
            text = value.strip().upper().replace("_", "")
            scale = suffixes.get(text[-1:], 1)
            number = exact_number(text[:-1] if scale > 1 else text)
        else:
            scale, number = 1, Fraction(value)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        raise FreqlabError(f"not a {what}: {brief(value)} (use e.g. {example})") from None
    size = number * scale
    if size.denominator != 1 or size < minimum:
        least = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")
        # a suffixed fraction that is no whole number says what it came to (1.9K is 1945.6: a review)
        came = f" ({_decimal(size)})" if scale > 1 and size.denominator != 1 else ""
        raise FreqlabError(f"a {what} must be {least}, got {brief(value)}{came}")
    return int(size)


def _decimal(value: Fraction) -> str:
    """A decimal times a whole scale, written out exactly (it ends: 1.9999999K is 2047.9998976, not 2048)."""
    whole, rest = divmod(value.numerator, value.denominator)
    digits: list[str] = []
    while rest and len(digits) < MAX_NUMBER_CHARS:
        rest *= 10
        digit, rest = divmod(rest, value.denominator)
        digits.append(str(digit))
    return f"{whole:,}" + ("." + "".join(digits) if digits else "")


#: the longest number text read exactly, and the largest decimal exponent: ``1e999999999`` would take minutes
#: and gigabytes to expand exactly, while no count freqlab takes needs more than 20 digits
MAX_NUMBER_CHARS = 100
MAX_EXPONENT = 400


def exact_number(text: str) -> Fraction:
    """A decimal number as an exact rational (``0.7`` is 7/10, ``1e9`` is 10^9), its text and exponent
    bounded so that reading it is instant; ValueError otherwise (as ``Fraction``).

    >>> exact_number("1.5e3"), exact_number("7/10")
    (Fraction(1500, 1), Fraction(7, 10))
    """
    text = text.strip()
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"more than {MAX_NUMBER_CHARS} characters")
    exponent = text.upper().partition("E")[2]
    if exponent and not (exponent.lstrip("+-").isdigit() and abs(int(exponent)) <= MAX_EXPONENT):
        raise ValueError(f"exponent beyond ±{MAX_EXPONENT}")
    return Fraction(text)


def parse_tokens(value, *, minimum: int = 1) -> int:
    """A positive token count: ``2e9``, ``100B``, ``1.5T`` (decimal suffixes, B = 10^9).

    Parameters
    ----------
    value : str or float
        The count, with an optional decimal suffix ``K``, ``M``, ``B`` or ``T``.
    minimum : int
        Smallest accepted value.

    Returns
    -------
    int
        The number of tokens.

    Raises
    ------
    FreqlabError
        When ``value`` is not a token count or is below ``minimum``.

    Examples
    --------
    >>> parse_tokens("100B"), parse_tokens("1.5T"), parse_tokens(2e9)
    (100000000000, 1500000000000, 2000000000)
    """
    return parse_size(value, DECIMAL_SUFFIXES, "token count", "2e9, 100B or 1.5T", minimum=minimum)


def json_threshold(tau: float | int) -> float | int:
    """``tau`` as JSON writes it: an integer as it is (exact past 2^53, where float64 would round it), a whole float
    as that integer (one type in every command's JSON: ``100e9`` and ``100B`` were 1e11 in one, 100000000000 in
    another, a review), else a float.

    >>> json_threshold(2**53 + 3), json_threshold(100e9), json_threshold(2.5)
    (9007199254740995, 100000000000, 2.5)
    """
    if isinstance(tau, numbers.Integral) and not isinstance(tau, bool):  # np.int64 too
        return int(tau)
    value = float(tau)
    return int(value) if value.is_integer() and abs(value) < 2**63 else value


def parse_count(value, what: str = "count", *, minimum: int = 1) -> int:
    """A count of documents, samples or bytes: ``100000``, ``100k``, ``2.5T`` (decimal suffixes)."""
    return parse_size(value, DECIMAL_SUFFIXES, what, "100000, 100K or 2.5M", minimum=minimum)


def parse_positions(value, what: str = "length in positions", *, minimum: int = 1) -> int:
    """A number of positions (a window, a length, an offset): ``2048``, ``2k``, ``128K`` (K = 1024).

    Parameters
    ----------
    value : str or int
        The number, with an optional binary suffix ``K`` (2^10) or ``M`` (2^20).
    what : str
        What the number is, for the error message.
    minimum : int
        Smallest accepted value.

    Returns
    -------
    int
        The number of positions.

    Raises
    ------
    FreqlabError
        When ``value`` is not a number of positions or is below ``minimum``.

    Examples
    --------
    >>> parse_positions("4K"), parse_positions("1M")
    (4096, 1048576)
    """
    return parse_size(value, POSITION_SUFFIXES, what, "2048, 2K or 128K (K = 1024)", minimum=minimum)


def _number(value, function: str, parser: str) -> int | float:
    """``value`` as an int (an integer of any kind, exact) or a float (a float, Fraction, Decimal or 0-d array); a
    FreqlabError when it is no real number (a string such as '2K': ``parser`` reads those).
    """
    number = real_number(value)
    if number is None:
        raise FreqlabError(f"{function} takes a number, got {brief(value)} ({parser} reads a size such as '2K')")
    return int(value) if isinstance(value, numbers.Integral) and math.isfinite(number) else number


def position_label(x: float) -> str:
    """Positions and lengths in the papers' convention, K = 1024: 1536 -> '1.5K', 131072 -> '128K'.

    Parameters
    ----------
    x : float
        A position or length.

    Returns
    -------
    str
        Multiples of 256K from 1M on as ``M`` (2^20), of 256 from 1024 on as ``K`` (1024), others as they are.

    Examples
    --------
    >>> position_label(1536), position_label(2048), position_label(131072), position_label(100), position_label(3000)
    ('1.5K', '2K', '128K', '100', '3000')
    >>> position_label(1048576), position_label(1310720), position_label(2**30)
    ('1M', '1.25M', '1024M')
    >>> position_label(1048575), position_label(1048577), position_label(2**30 + 256)  # never two alike
    ('1048575', '1048577', '1048576.25K')
    """
    x = float(_number(x, "position_label", "parse_positions"))
    if abs(x) >= 1 << 20 and (x * 4) % (1 << 20) == 0:  # 1M, as the papers write it, not 1024K (a review)
        return f"{x / (1 << 20):.2f}".rstrip("0").rstrip(".") + "M"
    if abs(x) >= 1024 and (x * 4) % 1024 == 0:  # a multiple of 1/4 K: two decimals at most, written out
        return f"{x / 1024:.2f}".rstrip("0").rstrip(".") + "K"
    return str(int(x)) if x.is_integer() else f"{x:g}"


def counts_told_apart(a: float, b: float) -> tuple[str, str]:
    """Two counts as :func:`human_count` writes them, or written out where that would show different counts alike
    (a review: "T = 100B < tau" with tau = 100B and T = 99,999,999,999).

    >>> counts_told_apart(50, 100), counts_told_apart(99_999_999_999, 100_000_000_000)
    (('50', '100'), ('99,999,999,999', '100,000,000,000'))
    """
    # a count below 1,000 that is no whole number as it is (tau = 3.3 read "3", and 3 would pass 97: a review)
    # (12 digits: 999.9999 beside 1000 read "1000" and "1K" with :g, a second review; a Fraction as a float)

    def written(x: float) -> str:
        return f"{float(x):.12g}" if abs(x) < 1000 and not float(x).is_integer() else human_count(x)

    shown = written(a), written(b)
    if shown[0] != shown[1] or a == b:
        return shown
    return f"{int(a):,}" if float(a).is_integer() else f"{a:,}", f"{int(b):,}" if float(b).is_integer() else f"{b:,}"


def human_count(n: float, *, up: bool = False, down: bool = False) -> str:
    """A token count with a decimal suffix and 3 significant digits: ``1.5e12 -> '1.5T'``.

    Parameters
    ----------
    n : float
        A count.
    up, down : bool
        Round up, not to nearest: for a minimum (a budget that is needed), which the text must not understate
        (304.3B needed printed as "304B", and 304B falls short); down: for a bound below which nothing reaches.

    Returns
    -------
    str
        The count with ``K`` (10^3), ``M``, ``B`` or ``T`` (10^12); counts below 1000 as they are, and from 10^18
        on as a power of ten (``2.94e23``).

    Examples
    --------
    >>> human_count(1.5e12), human_count(2.1e9), human_count(8_440_000), human_count(999)
    ('1.5T', '2.1B', '8.44M', '999')
    >>> human_count(304_295_942_721), human_count(304_295_942_721, up=True), human_count(999_600_000, up=True)
    ('304B', '305B', '1B')
    >>> human_count(999_999), human_count(2.03e16), human_count(2.94e23)
    ('1M', '20300T', '2.94e23')
    """
    n = _number(n, "human_count", "parse_tokens")
    if not math.isfinite(n):
        return str(n)  # inf, nan: no suffix
    if n < 0:  # the magnitude rounded the other way, the sign put back ("-0" is 0)
        shown = human_count(-n, up=down, down=up)
        return shown if shown == "0" else "-" + shown
    if n > 0:  # 3 significant digits first, so the suffix fits the rounded count
        step = 10 ** max(math.floor(math.log10(n)) - 2, 0)  # the third significant digit's
        n = (math.ceil(n / step) if up else math.floor(n / step) if down else math.floor(n / step + 0.5)) * step
    if n >= 1e18:  # past a million T, a power of ten reads better than "294000000000T"
        mantissa, exponent = f"{n:.2e}".split("e")
        return f"{float(mantissa):.3g}e{int(exponent)}"
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= scale:
            value = n / scale
            return f"{value:.0f}{suffix}" if abs(value) >= 1000 else f"{value:.3g}{suffix}"  # past 999T: 20300T
    return f"{n:.0f}"
