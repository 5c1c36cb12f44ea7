"""Calibrate the occurrence threshold tau from measured effective lengths.

The effective-length prediction (:func:`freqlab.frequency.effective_length`) is E(T) = the largest i with
f_T(i) >= tau, after An et al., "Why Does the Effective Context Length of LLMs Fall Short?" (ICLR 2025, Sec. 3,
Fig. 2b), which found both of its TinyLlama 1.3B models (2K and 4K windows) at an effective length of 1,280 when
f(1280) ≈ 100B. tau is model-dependent: one pair (T, E) measured on one's own checkpoint (``freqlab probe``, or
RULER) inverts the prediction.

Per point. f_T is non-increasing, so the measured E is what the prediction gives for every tau in
(f_T(E_next), f_T(E)], where E_next is the next length tested (the first one that failed; E + 1 when the
measurement is exact to the token). The point estimate is tau_k = f_T(E) (the paper's reading, "f(1280) of
100B"); the interval is (f_T(E_next), f_T(E)] (a point given as its ``occurrences`` allows that value alone).

Pooled. tau spans orders of magnitude, so points are pooled on a log scale: the estimate is the geometric mean of
the tau_k. Its uncertainty is stated two ways: ``range``, from the smallest interval low to the largest interval
high over the points (any tau outside it contradicts some point more than its own measuring step allows); and,
with 3 or more points, a 95% percentile bootstrap interval of the geometric mean (points resampled with
replacement, ``BOOTSTRAP_DRAWS`` draws, seed 0). With one or two points no bootstrap is reported.
"""

from __future__ import annotations

import csv
import decimal
import json
import math
import os
import stat
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import cast

import numpy as np

from freqlab.config_file import unique_pairs
from freqlab.deprecation import renamed_method
from freqlab.display import Display, Displayed, listed, name_column
from freqlab.errors import FreqlabError
from freqlab.formats import CALIBRATION_FORMAT, CALIBRATION_KEYS, CALIBRATION_VERSION
from freqlab.frequency.regimes import seeded_rng
from freqlab.frequency.stats import STRING_PROBE_CALIBRATION, scale_to_budget
from freqlab.paths import expand_home, printable, printable_lines

BOOTSTRAP_DRAWS: int = 10_000
FORMAT = CALIBRATION_FORMAT  # importable from here as before
FORMAT_VERSION = CALIBRATION_VERSION


@dataclass(frozen=True)
class CalibrationPoint:
    """One measurement: the effective length E reached after ``tokens`` training tokens, and the tau it implies.

    ``tau`` = f_T(E), as an occurrence count: ⌊f_T(E)⌋ in exact arithmetic, the largest whole tau with which E is
    still predicted; ``tau_low`` = f_T(E_next) (E_next: the next length tested, which failed), so the measurement
    holds for every tau in (tau_low, tau] (:meth:`allows`). ``tokens`` and ``next_length`` are None for a point given
    directly as occurrences (the paper's): it allows its tau alone (``tau_low`` = ``tau``).
    """

    label: str
    effective_length: int
    tau: int | float
    tau_low: float
    tokens: int | float | None = None
    next_length: int | None = None
    L: int | None = None
    source: str = ""

    def allows(self, tau: float) -> bool:
        """Whether ``tau`` predicts this point's E: f_T(E_next) < tau <= f_T(E), or tau = the given occurrences.

        >>> PAPER_POINTS[0].allows(10**11), PAPER_POINTS[0].allows(10**11 - 1)
        (True, False)
        """
        return tau == self.tau if self.tokens is None else self.tau_low < tau <= self.tau

    def interval(self) -> str:
        """The taus :meth:`allows`, as the report writes them: ``(low, high]`` rounded outward (to 3 digits both
        ends rounded to nearest could meet: "(134B, 134B]" for 133.52B-133.77B), or ``[v, v]`` for a given point.

        >>> CalibrationPoint("r", 1500, tau=133_770_000_000, tau_low=133_520_000_000.0, tokens=5 * 10**11).interval()
        '(133B, 134B]'
        """
        from freqlab.frequency.regime_table import human_count

        if self.tokens is None:
            return f"[{human_count(self.tau_low)}, {human_count(self.tau)}]"
        return f"({human_count(self.tau_low, down=True)}, {human_count(self.tau, up=True)}]"

    def missed_by(self, tau: int) -> str:
        """What the point allows, beside a ``tau`` it does not (:meth:`allows`), in whole digits: the bound ``tau``
        passes (``tau`` is a whole count, so ``tau <= x`` is ``tau <= floor(x)`` and ``tau > x`` is
        ``tau > floor(x)``).
        """
        if self.tokens is None:
            return f"it allows tau = {math.floor(self.tau):,} alone"
        if tau > self.tau:
            return f"it allows tau <= {math.floor(self.tau):,}"
        return f"it allows tau > {math.floor(self.tau_low):,}"

    def to_dict(self) -> dict:
        """The point as JSON-ready data."""
        return {key: getattr(self, key) for key in self.__dataclass_fields__}


def point_from_frequency(
    f, tokens: float, effective_length: int, *, next_length: int | None = None, label: str = "", source: str = ""
) -> CalibrationPoint:
    """The tau a measured effective length implies: f_T(E), with the interval down to f_T(E_next).

    ``f`` is the raw position frequency of the run's data (length L, e.g. :func:`freqlab.position_frequency`),
    rescaled to the budget: f_T(i) = f(i) · T / f(0).

    >>> p = point_from_frequency([4, 3, 2, 1], tokens=400, effective_length=2)  # f_T = [400, 300, 200, 100]
    >>> p.tau, p.tau_low
    (200, 100.0)
    """
    f_T = scale_to_budget(f, tokens)
    if isinstance(effective_length, bool) or int(effective_length) != effective_length:
        raise FreqlabError(f"{label or 'point'}: effective length {effective_length!r} is not a whole position")
    E = int(effective_length)
    if f_T.size == E:  # a probe that passed every length up to the window: E is at least L, not known
        raise FreqlabError(
            f"{label or 'point'}: effective length {E} is the whole window (every tested length passed): a lower "
            "bound, not a measurement, tells no tau; leave the row out, or probe past the window"
        )
    if not 0 <= E < f_T.size:
        raise FreqlabError(f"{label or 'point'}: effective length {E} is outside the window 0..{f_T.size - 1}")
    following = E + 1 if next_length is None else int(next_length)
    if following <= E:
        raise FreqlabError(f"{label or 'point'}: next_length {next_length} must exceed the effective length {E}")
    tau_low = float(f_T[following]) if following < f_T.size else 0.0
    counts = np.asarray(f)
    # exact: float f_T(E) is off in its last digits past 2^53, and a tau one above f_T(E) predicts E - 1
    tau = math.floor(Fraction(counts[E].item()) * Fraction(tokens) / Fraction(counts[0].item()))
    if tau < 1:
        raise FreqlabError(
            f"{label or 'point'}: f_T(E) = {float(f_T[E]):.3g} is below one occurrence (E = {E} after {tokens:g} "
            "tokens): no tau is that small"
        )
    if following < f_T.size and tau <= Fraction(counts[following].item()) * Fraction(tokens) / counts[0].item():
        # ⌊f_T(E)⌋ <= f_T(E_next): that tau predicts E_next or beyond, which the measurement says failed
        raise FreqlabError(
            f"{label or 'point'}: no whole tau separates E = {E} from {following}: f_T(E) = {float(f_T[E]):.4g} and "
            f"f_T({following}) = {float(f_T[following]):.4g} lie within one occurrence of each other at "
            f"{tokens:g} tokens; a point measured after more tokens can be fitted"
        )
    return CalibrationPoint(label, E, tau, tau_low, tokens, next_length, int(f_T.size), source)


#: STRING Sec. 3, Finding (2), Fig. 2b: both TinyLlama 1.3B models (2K, 4K) reach effective length 1,280 when
#: f(1280) ≈ 100B: given as occurrences, so each point's interval is that one value.
PAPER_POINTS: tuple[CalibrationPoint, ...] = tuple(
    CalibrationPoint(
        f"TinyLlama 1.3B, L = {L}",
        STRING_PROBE_CALIBRATION[0],
        STRING_PROBE_CALIBRATION[1],  # given as occurrences: the one value [v, v], a whole count as a row's
        STRING_PROBE_CALIBRATION[1],
        L=L,
        source="An et al., ICLR 2025, Sec. 3 Finding (2), Fig. 2b",
    )
    for L in (2048, 4096)
)


@dataclass(frozen=True, repr=False)
class Calibration(Displayed):
    """A fitted tau: the geometric mean of the points' tau (rounded down to a whole count, exactly: one point's fit
    predicts its own E), the range their intervals allow, and (3+ points) a 95% bootstrap interval of the geometric
    mean.
    """

    points: tuple[CalibrationPoint, ...]
    tau: int
    range: tuple[float, float]
    bootstrap: tuple[float, float] | None
    method: str = field(
        default="geometric mean of f_T(E) per point; range: smallest to largest tau any point allows; "
        f"bootstrap: 95% percentile interval of the geometric mean ({BOOTSTRAP_DRAWS:,} resamples, seed 0, 3+ points)"
    )

    def to_dict(self) -> dict:
        """The calibration as JSON-ready data."""
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "tau": self.tau,
            "range": list(self.range),
            "bootstrap_95": None if self.bootstrap is None else list(self.bootstrap),
            "method": self.method,
            "points": [p.to_dict() for p in self.points],
        }

    def write_json(self, path: str | Path) -> Path:
        """Write the fit as JSON (what ``--tau-from`` reads), atomically; ``~`` is the home folder."""
        from freqlab.files import write_atomic

        path = expand_home(path)
        write_atomic(path, (json.dumps(self.to_dict(), indent=2) + "\n").encode())
        return Path(path)

    def table(self) -> tuple[list[str], list[list[str]]]:
        """Header and one row per point: label, E, tokens, tau = f_T(E), the tau interval it allows."""
        from freqlab.frequency.regime_table import human_count

        rows = [
            [
                p.label,
                f"{p.effective_length:,}",
                "-" if p.tokens is None else human_count(p.tokens),
                human_count(p.tau),
                p.interval(),
            ]
            for p in self.points
        ]
        return ["point", "E", "tokens", "tau = f_T(E)", "allows tau in"], rows

    def _range(self) -> str:
        """:attr:`range` as the points' intervals are written: ``(low, high]`` rounded outward (``[low`` where a point
        given as its occurrences sets it), ``low .. high`` when every point is (a review: "range 447M .. 447M"
        beside rows allowing (446M, 447M]).
        """
        from freqlab.frequency.regime_table import human_count

        low, high = self.range
        if all(p.tokens is None for p in self.points):
            return f"{human_count(low)} .. {human_count(high)}"
        given = any(p.tokens is None and p.tau_low == low for p in self.points)  # allows its own value: low included
        return f"{'[' if given else '('}{human_count(low, down=True)}, {human_count(high, up=True)}]"

    def estimate_lines(self) -> list[str]:
        """The pooled estimate and its uncertainty, as the command line prints them."""
        from freqlab.frequency.regime_table import human_count

        n = len(self.points)
        lines = [
            f"tau = {human_count(self.tau)} (geometric mean of {n:,} point{'s' if n != 1 else ''}); "
            f"range {self._range()}"
        ]
        if self.bootstrap is None:
            lines.append("no bootstrap interval (fewer than 3 points)")
        else:
            lines.append(f"95% bootstrap interval {human_count(self.bootstrap[0])} .. {human_count(self.bootstrap[1])}")
        # each missed point with the bound the pooled tau passes, in digits: rounded, the table's outward interval
        # "(205B, 207B]" seemed to hold tau = 207B (207.16B above 206.42B: a review)
        against = [f"{p.label or f'E = {p.effective_length}'} ({p.missed_by(self.tau)})"
                   for p in self.points if not p.allows(self.tau)]  # fmt: skip
        if against:
            low, high = max(p.tau_low for p in self.points), min(p.tau for p in self.points)
            if any(p.tokens is None for p in self.points):  # a given point allows one tau: it fits all, or none does
                fits = low == high and all(p.allows(high) for p in self.points)
                common = f"every point allows tau = {human_count(high)} alone" if fits else "no tau fits every point"
            elif low < high:
                common = f"every point allows tau in ({human_count(low)}, {human_count(high)}]"
            else:
                common = "no tau fits every point"
            lines.append(
                f"note: tau = {human_count(self.tau)} ({self.tau:,}) predicts another E for {listed(against)}; {common}"
            )
        return lines

    def report(self) -> str:
        """The terminal report of ``freqlab calibrate``: the table of :meth:`table`, the pooled estimate and its
        uncertainty (:meth:`estimate_lines`), the method.
        """
        header, rows = self.table()
        # the labels (from the user's file) as tables show names: escaped, cut to 40 columns, padded by terminal
        # columns (a review: a newline split a row, ESC reached the terminal, 10,000 characters widened every row)
        names = name_column([row[0] for row in rows], header=header[0])
        rows = [[name, *row[1:]] for name, row in zip(names[1:], rows, strict=True)]
        widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
        lines = ["  ".join(c if k == 0 else f"{c:>{w}}" for k, (c, w) in enumerate(zip(row, widths)))
                 for row in ([names[0], *header[1:]], *rows)]  # fmt: skip
        # each estimate line on its line: a label's newline in the note forged another (a review)
        estimates = [printable(line) for line in self.estimate_lines()]
        return printable_lines([*lines, *estimates, f"method: {self.method}"])

    summary_lines = renamed_method("summary_lines", "estimate_lines")  # deprecated: the old name goes in 0.3

    def _display(self) -> Display:
        head, *rest = self.estimate_lines()
        return Display("Calibration", head, rest, table=self.table(), details=self.method)


def calibrate(points, *, seed: int = 0) -> Calibration:
    """Fit tau from calibration points (see the module docstring for the method).

    >>> fit = calibrate(PAPER_POINTS)  # the STRING paper's two TinyLlama models
    >>> fit.tau, fit.range, fit.bootstrap
    (100000000000, (100000000000, 100000000000), None)
    """
    points = tuple(points)
    if not points:
        raise FreqlabError("no calibration points")
    for p in points:
        if not p.tau > 0:
            raise FreqlabError(f"{p.label or 'point'}: f_T(E) = {p.tau} is not positive (E beyond the data?)")
    logs = np.log([float(p.tau) for p in points])
    tau = _floor_geometric_mean([Fraction(p.tau) for p in points])
    span = (min(p.tau_low for p in points), max(p.tau for p in points))
    interval = None
    if len(points) >= 3:
        rng = seeded_rng(seed)
        draws = rng.integers(0, len(points), size=(BOOTSTRAP_DRAWS, len(points)))
        # a geometric mean lies between its smallest and largest value: clipped there, exp(mean(log)) drifting by
        # an ulp no longer puts the interval of identical points beside the estimate
        low, high = min(float(p.tau) for p in points), max(float(p.tau) for p in points)
        means = np.clip(np.exp(logs[draws].mean(axis=1)), low, high)
        interval = (float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5)))
    return Calibration(points, tau, span, interval)


def _floor_geometric_mean(values: list[Fraction]) -> int:
    """⌊(Π values)^(1/n)⌋ exactly, for positive ``values``: estimated from the logarithm of their product to 12
    digits more than the result has, then corrected in integers (a step at most, where the mean lies within 10^-12
    of an integer). A float estimate drifts by many ulps past 2^53, and was corrected a unit per step: each step a
    power of n values' bits (a review: 1,000 points near 2^63 took 71 s).

    >>> _floor_geometric_mean([Fraction(2), Fraction(8)]), _floor_geometric_mean([Fraction(10**18 + 1)] * 3)
    (4, 1000000000000000001)
    """
    n = len(values)
    numerator, denominator = _product([v.numerator for v in values]), _product([v.denominator for v in values])
    digits = max(int(v).bit_length() for v in values) * 31 // 100 + 12  # log10(2) < 0.31
    with decimal.localcontext(decimal.Context(prec=digits + len(str(n)) + 4)):  # + ln(product)'s integer digits
        bits = 4 * digits + n.bit_length()  # ln to 2^-bits: the mean's to 10^-digits
        tau = int(((_ln(numerator, bits) - _ln(denominator, bits)) / n).exp())  # the floor of a positive number
    while tau > 0 and tau**n * denominator > numerator:
        tau -= 1
    while (tau + 1) ** n * denominator <= numerator:
        tau += 1
    return tau


def _ln(number: int, bits: int) -> Decimal:
    """ln(``number``) from its top ``bits`` bits (to 2^-bits), in the current decimal context."""
    shift = max(number.bit_length() - bits, 0)
    return Decimal(number >> shift).ln() + shift * Decimal(2).ln()


def _product(numbers: list[int]) -> int:
    """The product of ``numbers``, halves first: multiplying large by large is fast, one by one is quadratic."""
    while len(numbers) > 1:
        numbers = [math.prod(numbers[k : k + 2]) for k in range(0, len(numbers), 2)]
    return numbers[0] if numbers else 1


# --- files ---------------------------------------------------------------------------------------------------

REQUIRED = ("effective_length",)
COLUMNS = ("label", "tokens", "effective_length", "next_length", "occurrences", "L", "hist", "regime")


#: the largest points or calibration file read (a calibration is a few hundred bytes; a CSV of 10^5 runs ~5 MB)
MAX_CALIBRATION_BYTES = 16 << 20


def _text(path: Path, what: str) -> str:
    """A points or calibration file's text; one line naming it when it cannot be read, is no regular file (a FIFO
    waited forever, /dev/zero grew until killed: a review), holds more than :data:`MAX_CALIBRATION_BYTES` or is not
    UTF-8 text.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO: opened without a writer
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # before fdopen, which refuses a folder unclosed
                raise FreqlabError(f"{path}: not a regular file; {what} is read from a file")
            raw = b""
            while chunk := os.read(descriptor, MAX_CALIBRATION_BYTES + 1 - len(raw)):
                raw += chunk
                if len(raw) > MAX_CALIBRATION_BYTES:
                    break
        finally:
            os.close(descriptor)
    except OSError as exc:
        raise FreqlabError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    if len(raw) > MAX_CALIBRATION_BYTES:
        raise FreqlabError(f"{path}: more than {MAX_CALIBRATION_BYTES:,} bytes, more than {what} holds")
    try:
        return raw.decode("utf-8-sig")  # a byte-order mark (spreadsheets write one) is no column name
    except UnicodeDecodeError as exc:
        raise FreqlabError(f"{path}: not a UTF-8 text file (byte {exc.start})") from None


def read_records(path: str | Path) -> list[dict]:
    """Rows of a CSV (header line) or JSON file (a list of objects, or {"points": [...]}), each a dict."""
    path = Path(path)
    text = _text(path, "calibration points")
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text, object_pairs_hook=unique_pairs)
        except json.JSONDecodeError as exc:
            raise FreqlabError(f"{path}: not valid JSON ({exc})") from exc
        except ValueError as exc:  # a key given twice: json keeps the last value without a word
            raise FreqlabError(f"{path}: {exc}") from None
        if isinstance(data, dict) and data.get("format") == FORMAT:  # calibrate's own output, fed back (a review)
            raise FreqlabError(
                f"{path}: a calibration written by `freqlab calibrate --out` (its tau: give it to --tau-from); "
                "calibrate reads measured runs: L, hist, regime, tokens, effective length in each point"
            )
        if isinstance(data, dict) and {"results", "ruler_command"} <= set(data):  # a probe's report (a review)
            raise FreqlabError(
                f"{path}: a `freqlab probe --json` report (one model's measurement); calibrate reads measured runs, "
                "one point each: L, hist, regime, tokens and the effective length its probe found"
            )
        if isinstance(data, dict) and set(data) - {"points"}:  # L, hist, tau beside the points: not read (a review)
            extra = ", ".join(sorted(set(data) - {"points"}))
            raise FreqlabError(f'{path}: unknown key(s) {extra} beside "points" (give L, hist, regime in each point)')
        rows = data.get("points") if isinstance(data, dict) else data
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise FreqlabError(f'{path}: expected a list of objects (or {{"points": [...]}})')
        for k, row in enumerate(rows):
            unknown = set(row) - set(COLUMNS)
            if unknown:
                raise FreqlabError(
                    f"{path}: point {k + 1}: unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(COLUMNS)})"
                )
        return [dict(r, _where=f"{path}: point {k + 1}") for k, r in enumerate(rows)]
    reader = csv.DictReader(text.splitlines())
    reader.fieldnames = [name.strip() for name in reader.fieldnames or ()]  # "tokens , effective_length" (and values)
    fieldnames = list(reader.fieldnames)
    repeated = sorted({name for name in fieldnames if fieldnames.count(name) > 1})
    if repeated:  # DictReader would keep the last column of a name and drop the others without a word
        raise FreqlabError(f"{path}: column(s) given twice: {', '.join(repeated)}")
    unknown = set(fieldnames) - set(COLUMNS)
    if unknown:
        shown = ", ".join(repr(name) for name in sorted(unknown))  # quoted: a stray character shows
        raise FreqlabError(f"{path}: unknown column(s) {shown} (known: {', '.join(COLUMNS)})")
    rows = []
    for row in reader:
        where = f"{path}: line {reader.line_num}"  # the file's own line (blank lines and quoted newlines counted)
        if None in row:  # DictReader files the fields past the header under None: they would be dropped
            raise FreqlabError(f"{where}: {len(row[None])} field(s) more than the header's {len(fieldnames)}")
        values = {k: v.strip() for k, v in row.items() if v is not None}  # "1T , 40 , natural": the values
        rows.append({k: v for k, v in values.items() if v} | {"_where": where})
    return rows


#: every count of a point (tokens, occurrences, lengths) stays an exact int64, as the command-line options do
MAX_COUNT = 2**63 - 1


def _number(row: dict, key: str, parse):
    """A point's value through ``parse`` whether the file gave a string (CSV, JSON) or a JSON number: a JSON
    ``true``, ``10.7`` or ``-5`` is refused as the string would be, never taken as 1, 10 or -5.
    """
    value = row.get(key)
    if value is None:
        return None
    try:
        number = parse(value)
    except Exception as exc:  # parse errors name the value
        raise FreqlabError(f"{row['_where']}: {key}: {exc}") from exc
    if number > MAX_COUNT:
        raise FreqlabError(f"{row['_where']}: {key} = {value!r} is past 2^63 (counts stay exact int64)")
    return number


def point_from_record(
    row: dict,
    *,
    hist=None,
    regime: str = "natural",
    L: int | None = None,
    base: Path | None = None,
    frequencies: dict | None = None,
) -> CalibrationPoint:
    """One record -> a point: ``occurrences`` given directly, else f_T(E) from the histogram / regime / L
    (the record's own ``hist``, ``regime``, ``L`` override the defaults; relative paths are relative to ``base``).
    ``frequencies``: a dict the calls of one file share, f of each (histogram file, L, regime) computed once (a
    review: 2,000 rows on one ``--hist`` read it 2,000 times, 17 s).
    """
    from freqlab.frequency import position_frequency
    from freqlab.histogram import as_histogram
    from freqlab.sizes import parse_positions, parse_tokens

    where = row["_where"]
    if str(row.get("effective_length")).strip() == "0":  # what probe reports when no length passed (a review)
        raise FreqlabError(
            f"{where}: effective_length 0 (freqlab probe's answer when no tested length passed) says only that tau is "
            "above f_T at the shortest length tried, which no fit of E >= 1 takes: leave the row out"
        )
    E = _number(row, "effective_length", parse_positions)
    if E is None:
        raise FreqlabError(f"{where}: effective_length is missing")
    label = str(row.get("label") or where)
    occurrences = _number(row, "occurrences", parse_tokens)
    if occurrences is not None:
        if unused := [key for key in ("tokens", "next_length", "L", "hist", "regime") if row.get(key) is not None]:
            raise FreqlabError(f"{where}: occurrences is f_T(E) itself: {', '.join(unused)} beside it would be unused")
        return CalibrationPoint(label, int(E), occurrences, occurrences, source=where)  # [v, v], exact (a review)
    tokens = _number(row, "tokens", parse_tokens)
    if tokens is None:
        raise FreqlabError(f"{where}: give tokens (with a histogram and L) or occurrences")
    window = _number(row, "L", parse_positions) or L
    if window is None:
        raise FreqlabError(f"{where}: no window L (a column L or --L)")
    for key in ("hist", "regime"):
        if row.get(key) is not None and not isinstance(row[key], str):
            raise FreqlabError(f"{where}: {key} must be text, got {row[key]!r}")
    own = row.get("hist")
    if own is None and hist is None:
        raise FreqlabError(f"{where}: no histogram (a column hist or --hist) to evaluate f_T(E)")
    # the point's own hist is relative to its file's folder; --hist, given on the command line, to the working one
    source = hist  # a path, or a histogram a notebook holds (a review: Path(histogram) was a TypeError)
    if own is not None:
        source = Path(expand_home(own))
        if base is not None and not source.is_absolute():  # never the working folder's instead
            source = base / source
    # a file's f is shared through `frequencies` (a histogram a notebook holds is not: no key names it)
    shared = frequencies if frequencies is not None and isinstance(source, str | Path) else {}
    known = (str(source), int(window), row.get("regime") or regime)
    f = shared.get(known)
    if f is None:
        try:
            h = as_histogram(source)
        except FreqlabError as exc:  # a missing or bad file: named with the point
            raise FreqlabError(f"{where}: {exc}") from None
        try:
            f = position_frequency(h.lengths, h.counts, int(window), row.get("regime") or regime)
        except FreqlabError as exc:  # an unknown regime, a window past 2^30: named with the point
            raise FreqlabError(f"{where}: {exc}") from None
        shared[known] = f
    return point_from_frequency(
        f, tokens, int(E), next_length=_number(row, "next_length", parse_positions), label=label, source=where
    )


def is_calibration_file(path: str | Path) -> bool:
    """Whether ``path`` is a file that begins as every calibration freqlab writes (:meth:`Calibration.write_json`),
    read from its first bytes (a large file of the user's named ``tau.json`` is not read through).
    """
    from freqlab.files import starts_with
    from freqlab.formats import CALIBRATION_START

    return starts_with(path, CALIBRATION_START)


def read_tau(path: str | Path) -> int:
    """The pooled tau of a calibration JSON written by :meth:`Calibration.write_json` (``--tau-from``)."""
    path = Path(path)
    text = _text(path, "calibration file")  # its errors name the file once
    try:
        data = json.loads(text, object_pairs_hook=unique_pairs)
    except json.JSONDecodeError as exc:
        raise FreqlabError(f"{path}: not a freqlab calibration file ({exc})") from exc
    except ValueError as exc:  # a key given twice ("tau" twice: json keeps the last one without a word)
        raise FreqlabError(f"{path}: {exc}") from None
    tau = data.get("tau") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("format") != FORMAT or type(tau) not in (int, float):  # bool is not
        raise FreqlabError(f"{path}: not a freqlab calibration file (write one with `freqlab calibrate --out`)")
    version = data.get("version", CALIBRATION_VERSION)  # a file written by hand may leave it out
    if type(version) is not int or version != CALIBRATION_VERSION:  # a later format may mean tau otherwise
        raise FreqlabError(
            f"{path}: version {json.dumps(version)}; this freqlab reads calibrations of version {CALIBRATION_VERSION}"
        )
    if unknown := set(data) - {*CALIBRATION_KEYS, "source", "written"}:  # a typo (taux); calibrate --json's too
        raise FreqlabError(f"{path}: unknown key(s) {', '.join(sorted(unknown))} (a calibration has "
                           f"{', '.join(CALIBRATION_KEYS)})")  # fmt: skip
    tau = cast(float, tau)  # an int or a float: checked just above
    if not 1 <= tau <= MAX_COUNT or tau != int(tau):  # as --tau (NaN, inf, 1e400, which JSON reads as inf, fail too)
        raise FreqlabError(f"{path}: tau = {tau} is not an occurrence count, a whole number in 1..2^63 - 1 (as --tau)")
    return int(tau)  # exact as --tau (float64 rounded 2^53 + 5 down: a review)
