"""The well-trained range N*: relative positions 0..N*-1 that training exposed often enough.

Every planner (STRING, Self-Extend, RoPE scaling's critical dimension, length upsampling) needs the same quantity:
positions 0..N*-1, so N* - 1 is the effective length freqlab predicts, derived here by one of these rules, in order
of preference (each plan says which it used):

``budget``
    With a training budget T (tokens) and a threshold tau, N* is the number of positions whose scaled
    frequency f_T(i) = f(i) · T / f(0) is at least tau. f is non-increasing, so these positions are the
    prefix 0..N*-1 and N* = effective_length(f, T, tau) + 1 (0 when even f_T(0) = T < tau). This is the
    STRING finding (Sec. 3, Fig. 2b): effective length tracks where f_T falls below tau (about 100B for a
    1.3B model). A multi-stage schedule gives F(i) = Σ_k f_k(i) T_k / f_k(0) directly and uses the same rule.
``mass``
    Without a budget, N* is the smallest prefix holding a fraction ``mass`` of all position occurrences:
    N* = position_at_mass(f, mass) + 1, so the positions >= N* carry at most 1 - mass of the mass. This
    rule and its default mass 0.9 are freqlab's: the STRING paper defines no mass rule. For fully
    concatenated data f is linear, the share of i >= x·L is (1 - x)^2 = 0.1 at x = 1 - √0.1 ≈ 0.684, so
    N* ≈ 0.684 L (the STRING planner's S = L - N* + W then keeps every used position below N*).
``default``
    Without any frequency information: a fixed fraction of L (STRING's default S = L/3 means N* = 2L/3;
    the Self-Extend maintainers' rule of thumb puts the well-trained range at 1/2 to 2/3 of L).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from fractions import Fraction
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from freqlab.display import Display, Displayed
from freqlab.errors import FreqlabError
from freqlab.frequency import (
    DEFAULT_TAU,
    effective_length,
    position_at_mass,
    position_frequency,
)
from freqlab.frequency.budget import DEFAULT_TOKENS
from freqlab.frequency.schedule import Schedule, ScheduleFrequency, load_schedule, schedule_frequency
from freqlab.frequency.stats import checked_frequency, positive_number, token_budget
from freqlab.histogram import LengthHistogram, as_histogram  # as_histogram: kept for import compatibility
from freqlab.sizes import MAX_POSITIONS, counts_told_apart, human_count, json_threshold

DEFAULT_MASS: float = 0.9  # the "mass" rule's share: N* = position_at_mass(f, 0.9) + 1
DEFAULT_FRACTION: Fraction = Fraction(2, 3)

RULES: tuple[str, ...] = ("given", "schedule", "budget", "mass", "default")


class FrequencyInputs(TypedDict, total=False):
    """The frequency keywords every planner passes on to :func:`well_trained_range` unchanged."""

    histogram: LengthHistogram | str | Path | None
    regime: str
    frequency: np.ndarray | None
    schedule: ScheduleFrequency | Schedule | str | Path | None
    tokens: int | float | None
    tau: float | None
    mass: float


@dataclass(frozen=True, repr=False)
class WellTrained(Displayed):
    """N*: positions 0..N*-1 are well trained; ``rule`` says how it was derived, ``explanation`` in words.

    ``frequency`` is the curve the rule used (raw f as int64, or a schedule's F as float64), or None.

    Attributes
    ----------
    N : int
        N*: positions 0..N*-1 are well trained (also ``N_star``).
    L : int
        Training window (the model's max_position_embeddings).
    rule : str
        How N* was derived (``given``, ``schedule``, ``budget``, ``mass``, ``default``).
    explanation : str
        The derivation in words.
    frequency : numpy.ndarray or None
        The curve the rule used.
    tokens : int or None
        Training budget T of the budget rule.
    tau : float or None
        Threshold of the budget rule.
    mass : float or None
        Share of the mass rule.

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.
    """

    N: int
    L: int
    rule: str
    explanation: str
    frequency: np.ndarray | None = None
    tokens: int | None = None
    tau: float | None = None
    mass: float | None = None

    def to_dict(self) -> dict:
        """N* (as ``N_star``), its rule, the explanation and what it came from, as JSON (without the curve)."""
        out = {"N_star": self.N, **json_fields(self, skip=("N", "frequency"))}
        if out.get("tau") is not None:  # as every command's JSON writes tau
            out["tau"] = json_threshold(out["tau"])
        return out

    def report(self) -> str:
        """N* and its rule, then how it was derived."""
        return f"well-trained range N* = {self.N} (rule: {self.rule})\n  {self.explanation}"

    def _display(self) -> Display:
        from freqlab.plan.display import well_trained_display  # it imports nothing from here; plan/__init__ does

        return well_trained_display(self)


class WellTrainedBasis:
    """Base of the plans built on a :class:`WellTrained` range: N* and its rule come from ``well_trained``."""

    well_trained: WellTrained

    @property
    def N_star(self) -> int:
        """The well-trained range N*."""
        return self.well_trained.N

    @property
    def rule(self) -> str:
        """How N* was derived (one of :data:`RULES`)."""
        return self.well_trained.rule

    def _plan_dict(self, method: str, *, skip: tuple[str, ...] = (), **derived) -> dict:
        """For ``to_dict``: the method, the fields (JSON-ready), N* and its rule, then ``derived`` values."""
        return {"method": method, **json_fields(self, skip=skip), "N_star": self.N_star, "rule": self.rule, **derived}


def json_fields(obj, *, skip: tuple[str, ...] = ()) -> dict:
    """A planner dataclass's fields as a JSON-ready dict: tuples become lists, nested results their to_dict()."""
    out = {}
    for f in fields(obj):
        if f.name in skip:
            continue
        value = getattr(obj, f.name)
        if isinstance(value, tuple):
            value = list(value)
        elif hasattr(value, "to_dict"):
            value = value.to_dict()
        out[f.name] = value
    return out


def check_window(L, name: str = "L") -> int:
    """A positive integer window of at most 2^30 positions (as f's), or a FreqlabError naming the value."""
    if isinstance(L, bool) or not isinstance(L, (int, np.integer)) or int(L) < 1:
        raise FreqlabError(f"{name} must be a positive integer, got {L!r}")
    if int(L) > MAX_POSITIONS:  # plan_string(10**19) printed a patch with max_test_length=10^19 (a review)
        raise FreqlabError(f"{name} = {int(L):,} is larger than freqlab supports (2^30 = {MAX_POSITIONS:,} positions)")
    return int(L)


def frequency_from_histogram(
    histogram: LengthHistogram | str | Path, L: int, regime: str = "natural", *, seed: int = 0
) -> np.ndarray:
    """f(i) for 0 <= i < L from a histogram (object or Parquet path) under a regime (STRING Eq. 2)."""
    histogram = as_histogram(histogram)
    if histogram.documents == 0:
        raise FreqlabError("the histogram holds no documents")
    return position_frequency(histogram.lengths, histogram.counts, L, regime, seed=seed)


def planned_layers(sf: ScheduleFrequency, tau) -> tuple[Any, str, int]:
    """The layer kind a plan from the schedule ``sf`` extends, the words that name it, and the last position its
    layers train at least ``tau`` times with none before below it (``sf.effective_length(tau, kind,
    without_gap=True)``; kind None and no words without layouts: every layer global): the RoPE layers of the last
    stage's layout that attend its whole window (global, or a window or chunk as long); of several (layers that went
    through the stages in different ways), the one trained least far. STRING, Self-Extend and RoPE scaling change the
    rotary angles of far positions, which sliding-window and chunked layers never attend and NoPE layers have none
    of: a layout without such layers has nothing to plan, and the FreqlabError says so (a review: Llama 4's chunked
    + NoPE layout got a STRING shift from the data's total, the F of a full-attention layer it has not).
    """
    if not sf.histories:
        return None, "", sf.effective_length(tau, without_gap=True)
    layout = sf.schedule.stages[-1].layout
    spec = layout.spec if layout is not None else "global"  # the last stage global, layouts before it
    whole = [kind for kind in sf.histories if kind.rope and kind.reach(sf.window) == sf.window - 1]
    if not whole:
        others = ", ".join(
            f"{kind.name} {'has no rotary embedding' if not kind.rope else f'reaches {kind.reach(sf.window)}'}"
            for kind in sf.histories
        )
        raise FreqlabError(
            f"the last stage's layout ({spec}) has no RoPE layer that attends the whole window of {sf.window} "
            f"({others}): STRING, Self-Extend and RoPE scaling have no layer to extend"
        )
    last = {kind: sf.effective_length(tau, kind, without_gap=True) for kind in whole}  # each kind's once
    kind = min(whole, key=last.__getitem__)
    final = getattr(kind, "final", kind)
    if layout is None or any(getattr(other, "final", None) == final for other in sf.histories):
        # layers of one final kind that went two ways: a count of the kind would count both (a review)
        return kind, f" in its {kind.name} layers (of {spec}, the RoPE layers that attend it all)", last[kind]
    count = layout.kinds.get(final, 0)
    share = f"{count} of {len(layout.layers)}" if layout.whole else f"{count} in every {len(layout.layers)}"
    words = f" in its {kind.name} layers ({share} layers of {spec}, the RoPE layers that attend it all)"
    return kind, words, last[kind]


def as_schedule_frequency(schedule: ScheduleFrequency | Schedule | str | Path) -> ScheduleFrequency:
    """Accept a schedule file, a parsed Schedule or an evaluated ScheduleFrequency."""
    if isinstance(schedule, ScheduleFrequency):
        return schedule
    if not isinstance(schedule, Schedule):
        schedule = load_schedule(schedule)
    return schedule_frequency(schedule)


def well_trained_range(
    L: int,
    *,
    given: int | None = None,
    histogram: LengthHistogram | str | Path | None = None,
    regime: str = "natural",
    frequency=None,
    schedule: ScheduleFrequency | Schedule | str | Path | None = None,
    tokens: int | float | None = None,
    tau: float | None = None,
    mass: float | None = None,
    default_fraction: Fraction | float = DEFAULT_FRACTION,
) -> WellTrained:
    """Derive N*, the end of the well-trained positions, by the first rule the inputs allow.

    The ``schedule``/``budget`` rule, else the ``mass`` rule, else the ``default`` fraction.

    Parameters
    ----------
    L
        Training window; N* is at most L.
    given
        N* chosen by the user (rule ``given``); overrides everything else.
    histogram, regime
        Length histogram (object or Parquet path) whose frequency under ``regime`` is used.
    frequency
        Raw position frequency f (length L), e.g. from :func:`frequency_from_histogram`.
    schedule
        A multi-stage schedule (file, Schedule or ScheduleFrequency); its longest window must equal L.
    tokens, tau
        Budget T and threshold (default: the schedule's tau, else DEFAULT_TAU = 100e9). A histogram without
        ``tokens`` or ``mass`` follows the one budget rule of the command line: T = 1T (``DEFAULT_TOKENS``).
    mass
        Fraction of position mass for the ``mass`` rule (default :data:`DEFAULT_MASS`, 0.9, for a raw
        ``frequency`` without ``tokens``).
    default_fraction
        N* = floor(L · fraction) when nothing else is known.

    Returns
    -------
    WellTrained
        ``N`` (N*) and the ``rule`` that gave it.

    Notes
    -----
    Budget rule: N* = 1 + max {i : f_T(i) >= tau} with f_T = f · T / f(0), STRING's effective length
    (Sec. 3 [1]_). Mass rule: N* = 1 + min {i : Σ_{j≤i} f(j) >= mass · Σ_j f(j)}.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> well_trained_range(300, frequency=np.arange(300, 0, -1), tokens=400, tau=200).N  # f_T = 400(1 - i/300)
    151
    >>> well_trained_range(3000).N, well_trained_range(3000).rule
    (2000, 'default')
    """
    L = check_window(L)
    # what the command line refuses, refused here too rather than left unused
    if tokens is not None and mass is not None:
        raise FreqlabError("give tokens (the budget rule) or mass (the mass rule), not both")
    if given is not None and (tokens is not None or mass is not None or tau is not None):
        raise FreqlabError("a given N* takes no tokens, mass or tau: they derive N*")
    if (tokens is not None or mass is not None) and histogram is None and frequency is None and given is None:
        if schedule is not None:
            raise FreqlabError("a schedule sets its own budget (its stages' tokens): give no tokens or mass with it")
        raise FreqlabError("tokens and mass apply to a histogram or a frequency: give one")
    if tau is not None and histogram is None and frequency is None and schedule is None and given is None:
        raise FreqlabError("tau applies to a histogram, a frequency or a schedule: give one")
    if mass is not None and tau is not None:
        raise FreqlabError("tau is the budget rule's threshold: give no tau with mass")
    if given is not None:
        if isinstance(given, bool) or not isinstance(given, (int, np.integer)) or not 1 <= int(given) <= L:
            raise FreqlabError(f"the well-trained range N* must be an integer in 1..L = {L}, got {given!r}")
        return WellTrained(int(given), L, "given", f"N* = {int(given)} was given")
    if histogram is not None:
        if frequency is not None or schedule is not None:
            raise FreqlabError("give one of a histogram, a frequency or a schedule")
        frequency = frequency_from_histogram(histogram, L, regime)
        if tokens is None and mass is None:  # the budget rule, as `freqlab plan --hist` applies it
            tokens = DEFAULT_TOKENS
    if schedule is not None:
        if frequency is not None:
            raise FreqlabError("give either a schedule or a frequency, not both")
        sf = as_schedule_frequency(schedule)
        if sf.window != L:
            raise FreqlabError(f"the schedule's longest window is {sf.window}, but L = {L}")
        threshold = sf.schedule.tau if tau is None else positive_number(tau, "tau")
        kind, layers, last = planned_layers(sf, threshold)
        N = last + 1  # every position 0..N-1: F need not decrease
        stages = len(sf.schedule.stages)
        text = (
            f"the schedule ({stages} stage{'s' if stages != 1 else ''}, {sf.schedule.source}) trains positions "
            f"0..{N - 1} at least tau = {human_count(threshold)} times{layers}"
            if N
            else f"no position reaches tau = {human_count(threshold)} occurrences over the schedule "
            f"({sf.schedule.source})"
            f"{layers}"
        )
        return WellTrained(N, L, "schedule", text, sf.kind_total(kind), None, threshold, None)
    if frequency is not None:
        f = np.asarray(frequency)
        if f.ndim != 1 or f.size != L:
            raise FreqlabError(f"the frequency must have one value per position 0..L-1 (L = {L}), got shape {f.shape}")
        f = checked_frequency(f)  # numbers, finite, never negative (f(0) = -2048 was "zero": a review)
        if f[0] == 0:
            raise FreqlabError("f(0) is zero: the frequency holds no tokens")
        if np.any(f[1:] > f[:-1]):  # not np.diff: a uint64 f wraps below zero (a review)
            raise FreqlabError("a position frequency must be non-increasing in i")
        if tokens is not None:
            T = token_budget(tokens)
            threshold = DEFAULT_TAU if tau is None else positive_number(tau, "tau")
            # f_T(0) = T, so nothing is well trained when T < tau
            N = effective_length(f, T, threshold) + 1 if threshold <= T else 0
            shown_T, shown_tau = counts_told_apart(T, threshold)  # 1T and 100B, not 1e+12 (a review)
            text = (
                f"with T = {shown_T} training tokens, f_T(i) >= tau = {shown_tau} holds for positions 0..{N - 1}"
                f" (N* counts them; the predicted effective length is the last, {N - 1})"
                if N
                else f"with T = {shown_T} tokens no position reaches tau = {shown_tau}"
            )
            return WellTrained(N, L, "budget", text, f, T, threshold, None)
        mass = DEFAULT_MASS if mass is None else positive_number(mass, "mass")
        if not 0.0 < float(mass) < 1.0:
            raise FreqlabError(f"mass must be in (0, 1), got {mass}")
        N = position_at_mass(f, float(mass)) + 1
        text = f"positions 0..{N - 1} hold {float(mass):.0%} of all position occurrences"
        return WellTrained(N, L, "mass", text, f, None, None, float(mass))
    fraction = Fraction(positive_number(default_fraction, "default_fraction")).limit_denominator(10**6)
    if not 0 < fraction <= 1:
        raise FreqlabError(f"default_fraction must be in (0, 1], got {default_fraction}")
    N = L * fraction.numerator // fraction.denominator
    text = f"no frequency information: N* = {fraction} of L"
    return WellTrained(N, L, "default", text)
