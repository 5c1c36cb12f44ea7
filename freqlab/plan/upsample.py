"""Length upsampling: what makes position E well trained, and whether upsampling is the way (beyond the papers).

STRING's analysis (Sec. 2-3) says position E is learned once f_T(E) >= tau. With f the corpus frequency under the
chosen regime and window L,

    a = f(E) / f(0)        occurrences of E per training token of the corpus.

**The ceiling.** A segment s of at most L tokens holds E max(|s| - E, 0) <= |s| (L - E) / L times, so under any regime
whose segments are at most L long f(E) <= f(0) (L - E) / L: a token adds at most (L - E) / L occurrences of E, and

    T >= tau · L / (L - E)

tokens are needed whatever the mix or the packing (concatenation without a mask comes within one row of it). No
reweighting of the corpus gains more than ((L - E) / L) / a per token.

**Upsampling by contribution.** A document of n tokens gives E g_n times in segments of its own: under ``natural``,
n // L pieces of L and one of n % L, so g_n = (n // L)(L - E) + max(n % L - E, 0) for its n tokens; under ``truncate``,
max(min(n, L) - E, 0) for its min(n, L) trained tokens t_n. Bins (source, length) are ranked by c_n = g_n / t_n and
whole documents of the best are added first, each bin up to ``max_upweight`` times its share of the corpus's T
tokens (default 4: Muennighoff et al. 2023, "Scaling Data-Constrained Language Models", found up to about 4 epochs
of repeated data nearly as useful as new data; freqlab's choice of cap). Bins with c_n <= a are never added: more
tokens of the corpus itself do as well. When every useful bin is at its cap, the rest is more corpus tokens, at
rate a. Adding d_n documents of each chosen length to T corpus tokens gives exactly

    F(E) = T·a + Σ_n d_n g_n   (+ Y·a for Y more corpus tokens)                (tested on mixes built by hand)

and X = Σ_n d_n t_n + Y extra tokens. b = Σ d_n g_n / Σ d_n t_n is what the added documents give per token, and
(Σ d_n g_n + Y·a) / X what the whole addition does.

**The alternatives**, each as the budget that reaches tau and its excess over T: more tokens of the same mix
(ceil(tau / a)), another packing r of the same corpus (ceil(tau / a_r), a_r = f_r(E)/f_r(0) for natural, pack,
concat, best-fit), and the bound above. When the whole addition trains E less than :data:`UPSAMPLING_HELPS` times
as often per token as the corpus (freqlab's threshold) the plan says plainly that upsampling cannot help: its extra
tokens are barely fewer than training longer (the documents' own b may be higher, when every useful length reaches
its cap and more corpus tokens make up the rest).

``pack``: a document's segments depend on its neighbours, so g_n is taken as if it started a row (its natural
contribution: an upper bound, since cutting a segment never adds occurrences); the plan says so.

With given ``long_lengths`` they are added in their own proportions: X = ceil((tau - T·a) / b), b = g(E)/g(0) of them.
With a multi-stage schedule (:func:`plan_upsample_schedule`) the occurrences are the schedule's
F(E) = Σ_k T_k · f_k(E) / f_k(0); documents join the last stage with the longest window (a, caps, packings and the
fixed-budget share refer to that stage), and the mix shares count every stage's corpus. The fixed-budget share is
p = (tau - F(E)) / (T_stage · (b - a)): the share of the stage's own budget turned into added documents at rate b.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from freqlab.arrays import as_int64
from freqlab.display import Display, Displayed, name_column
from freqlab.errors import FreqlabError
from freqlab.frequency import DEFAULT_TAU, position_frequency, segment_frequency
from freqlab.frequency.regimes import table_segments
from freqlab.frequency.schedule import Schedule, ScheduleFrequency, Stage, stage_histogram
from freqlab.frequency.stats import positive_number, token_budget
from freqlab.histogram import LengthHistogram
from freqlab.plan import display as shown
from freqlab.plan.well_trained import (
    as_histogram,
    as_schedule_frequency,
    check_window,
    json_fields,
)
from freqlab.sizes import counts_told_apart, human_count, json_threshold

ADDITIVE_REGIMES: tuple[str, ...] = ("natural", "truncate", "pack")
PACKINGS: tuple[str, ...] = ("natural", "pack", "concat", "best-fit")
DEFAULT_MAX_UPWEIGHT = 4
#: b / a below this: upsampling "cannot help" (freqlab's threshold: a gain under 10% per token is within what the
#: choice of tau alone moves).
UPSAMPLING_HELPS = Fraction(11, 10)


@dataclass(frozen=True)
class UpsampleStep:
    """``documents`` more documents of ``length`` tokens (of ``source``): ``tokens`` trained tokens, ``occurrences``
    of E; ``per_token`` = c_n; ``capped``: the bin reached its max_upweight cap.
    """

    source: str | None
    length: int
    documents: int
    tokens: int
    occurrences: int
    per_token: float
    capped: bool

    def to_dict(self) -> dict:
        """The step as JSON-ready data."""
        return json_fields(self)


@dataclass(frozen=True)
class BudgetOption:
    """One way to reach tau: the total training budget it needs, its excess over the plan's T (negative: reached
    with fewer tokens) and that excess as a fraction of T (``longer``); ``per_token``: occurrences of E per token.
    """

    way: str
    total_tokens: int
    extra_tokens: int
    longer: float
    per_token: float
    estimate: bool = False  # from a sample (pack past PACK_SAMPLE_DOCUMENTS documents), not exact

    def to_dict(self) -> dict:
        """The option as JSON-ready data."""
        return json_fields(self)

    @property
    def label(self) -> str:
        """The way, as the report shows it (an estimate said so)."""
        return f"{self.way} (a sample's estimate)" if self.estimate else self.way


@dataclass(frozen=True, repr=False)
class UpsamplePlan(Displayed):
    """Extra tokens for f_T(E) >= tau, the mix they produce, and the alternatives side by side."""

    L: int
    E: int
    tokens: int  # T (a schedule: all stages together)
    tau: int | float
    regime: str
    current_occurrences: float  # f_T(E) now (a schedule: F(E))
    current_effective_length: int
    per_token_corpus: float  # a = f(E)/f(0)
    per_token_long: float  # b: occurrences of E per added document token (0 when none is added)
    per_token_added: float  # (Σ d_n g_n + Y·a) / X: occurrences of E per token of the whole addition (0: none)
    extra_tokens: int  # X: added documents' tokens + more corpus tokens
    long_token_share: float  # tokens in documents >= E over all training tokens, after adding X
    long_document_share: float  # documents >= E over all documents, after adding X
    fixed_budget_share: float | None  # p, or None when impossible within T
    long_source: str
    added_to: str  # where the documents go: the corpus, or a schedule's stage
    reasoning: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    ceiling: float = 0.0  # (L - E) / L
    lower_bound_tokens: int = 0  # ceil(tau L / (L - E)) (a schedule: with the other stages as they are)
    best_per_token: float = 0.0  # the best c_n of the corpus
    upsampled_tokens: int = 0  # Σ d_n t_n
    corpus_tokens_added: int = 0  # Y
    max_upweight: float | None = DEFAULT_MAX_UPWEIGHT
    helps: bool = False  # per_token_added / a >= UPSAMPLING_HELPS
    verdict: str = ""
    steps: tuple[UpsampleStep, ...] = ()
    options: tuple[BudgetOption, ...] = ()

    def to_dict(self) -> dict:
        """The plan as JSON-ready data."""
        data = json_fields(self, skip=("steps", "options"))
        steps, options = [s.to_dict() for s in self.steps], [o.to_dict() for o in self.options]
        return {"method": "upsample", **data, "by_source": self.by_source(), "steps": steps, "options": options}

    def by_source(self) -> list[dict]:
        """The added documents per source: documents, tokens, shortest and longest length, occurrences of E."""
        groups: dict = {}
        for step in self.steps:
            g = groups.setdefault(
                step.source,
                {
                    "source": step.source,
                    "documents": 0,
                    "tokens": 0,
                    "occurrences": 0,
                    "shortest": step.length,
                    "longest": step.length,
                    "lengths": 0,
                },
            )
            g["documents"] += step.documents
            g["tokens"] += step.tokens
            g["occurrences"] += step.occurrences
            g["shortest"], g["longest"] = min(g["shortest"], step.length), max(g["longest"], step.length)
            g["lengths"] += 1
        return list(groups.values())

    def report(self) -> str:
        """The terminal report of ``freqlab plan upsample`` (the same numbers as :meth:`to_dict`): the ceiling, the
        alternatives side by side, the documents to add, the verdict.
        """
        p = self
        lines = [
            f"Upsampling for E = {p.E} (L = {p.L}, regime {p.regime}, T = {p.tokens:,} tokens, "
            f"tau = {human_count(p.tau)}; added to {p.added_to}):",
            f"  now f_T(E) = {human_count(p.current_occurrences)}: a = {p.per_token_corpus:.4g} per token, "
            # T < tau: f_T(0) = T, so no position reaches tau (a review: "predicted effective length 0")
            + (
                f"predicted effective length {p.current_effective_length}"
                if p.tokens >= p.tau
                else "no position reaches tau (T = {} < tau = {})".format(*counts_told_apart(p.tokens, p.tau))
            ),
            f"  no mix and no packing reaches tau with fewer than {human_count(p.lower_bound_tokens, down=True)} "
            "tokens in all: "
            f"a token adds at most (L-E)/L = {p.ceiling:.4g} occurrences of E"
            + (f", {p.ceiling / p.per_token_corpus:.2f}x a" if p.per_token_corpus else ""),
            "",
            f"  {'to reach f_T(E) >= tau':<62}  {'tokens':>8}  {'extra':>8}  {'training':>9}",
        ]
        if p.current_occurrences >= p.tau:  # nothing to reach: the rows would be budgets below T (a new user's trial:
            lines[-1] = "  f_T(E) already reaches tau: no budget to add (the JSON's options say what would suffice)"
        for i, o in enumerate(p.options if p.current_occurrences < p.tau else ()):  # "-8990000T -100.0%")
            # the bound (the first row) is one nothing gets below: rounded down; the others are needed: up
            way = {"up": i > 0, "down": i == 0}
            lines.append(
                f"  {o.label:<62}  {human_count(o.total_tokens, **way):>8}  {_signed(o.extra_tokens, **way):>8}  "
                f"{_percent(o.longer):>9}"
            )
        groups = p.by_source()
        if groups:
            cap = f"up to {p.max_upweight:g}x its share of T" if p.max_upweight is not None else "without a cap"
            lines += ["", f"  documents to add (most occurrences of E per token first, each length {cap}):"]
            _, *names = name_column([g["source"] or "-" for g in groups], header="")
            for shown, g in zip(names, groups, strict=True):
                plural = "s" if g["lengths"] > 1 else ""
                lengths = f"{g['shortest']:,}..{g['longest']:,} tokens ({g['lengths']} length{plural})"
                lines.append(
                    f"    {shown}  {g['documents']:>14,} documents  {human_count(g['tokens']):>7} tokens  {lengths}"
                )
            ratio = f" ({p.per_token_long / p.per_token_corpus:.2f}x a)" if p.per_token_corpus else ""
            lines.append(f"    b = {p.per_token_long:.4g} occurrences of E per added token{ratio}")
        if p.corpus_tokens_added:
            lines.append(f"    and {p.corpus_tokens_added:,} more corpus tokens")
        lines += ["", p.verdict, "", p.reasoning, *(f"note: {note}" for note in p.notes)]
        return "\n".join(lines)

    def _display(self) -> Display:
        return shown.upsample_display(self)


def _signed(n: int, *, up: bool = False, down: bool = False) -> str:
    """``n`` with its sign; ``up``/``down``: rounded towards +/- infinity (a needed amount, a bound)."""
    return "+" + human_count(n, up=up, down=down) if n >= 0 else "-" + human_count(-n, up=down, down=up)


def plan_upsample(
    histogram: LengthHistogram | str | Path,
    L: int,
    E: int,
    tokens: int | float,
    *,
    tau: float = DEFAULT_TAU,
    regime: str = "natural",
    long_lengths=None,
    max_upweight: float | None = DEFAULT_MAX_UPWEIGHT,
    seed: int = 0,
) -> UpsamplePlan:
    """Documents to add so that f_T(E) >= tau, ranked by contribution (see the module docstring).

    Parameters
    ----------
    histogram : LengthHistogram or path
        The corpus's length histogram (object or Parquet file).
    L : int
        Training window.
    E : int
        Position that should reach ``tau`` (the wanted effective length).
    tokens : int or float
        Training budget T.
    tau : float
        Threshold on f_T (default 100B).
    regime : str
        Data regime of the training sequences.
    long_lengths : array_like or LengthHistogram, optional
        Lengths of documents to add in their own proportions instead of the corpus's best.
    max_upweight : float or None
        A corpus bin is added up to this many times its share of T (None: no cap).
    seed : int
        Stream order for the ``pack`` regime.

    Returns
    -------
    UpsamplePlan
        The current occurrences of E, the ``extra_tokens`` needed and the ``steps`` (length, documents).

    Notes
    -----
    Position E is learned once f_T(E) = f(E) · T / f(0) >= tau (STRING, Sec. 2-3 [1]_). Under ``natural`` a
    document of n tokens gives E g_n = (n // L)(L − E) + max(n mod L − E, 0) times for its n tokens; bins are
    ranked by g_n / n and whole documents of the best are added first.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    One document of 1000 tokens gives E = 512 488 times (a 1024 window); 90 of 100 tokens give none:

    >>> h = LengthHistogram.from_counts([100, 1000], [90, 1])  # a = 488/10000, b = 488/1000
    >>> p = plan_upsample(h, 1024, 512, tokens=10_000, tau=1_000, max_upweight=None)
    >>> p.current_occurrences, p.extra_tokens, [(s.length, s.documents) for s in p.steps]
    (488.0, 2000, [(1000, 2)])
    """
    h = as_histogram(histogram)
    L = check_window(L)
    T = token_budget(tokens)
    if h.documents == 0:
        raise FreqlabError("the histogram holds no documents")
    # one stage: the same computation as a schedule
    f = position_frequency(h.lengths, h.counts, L, regime, seed=seed)
    sf = ScheduleFrequency(Schedule((Stage("corpus", L, T, regime),), tau=float(tau)), (f,))
    return _plan(sf, [h], E, tau, long_lengths, max_upweight, seed)


def plan_upsample_schedule(
    schedule: ScheduleFrequency | Schedule | str | Path,
    E: int,
    *,
    tau: float | None = None,
    long_lengths=None,
    max_upweight: float | None = DEFAULT_MAX_UPWEIGHT,
    seed: int = 0,
) -> UpsamplePlan:
    """:func:`plan_upsample` for a multi-stage schedule: documents join its last longest-window stage.

    ``tau`` defaults to the schedule's. Each stage's corpus is its histogram (read from the schedule).

    Parameters
    ----------
    schedule : ScheduleFrequency, Schedule, str or Path
        The schedule (evaluated, loaded, or its file).
    E : int
        Position that should reach ``tau`` (the wanted effective length).
    tau : float, optional
        Threshold on F; default the schedule's.
    long_lengths : array_like or LengthHistogram, optional
        Lengths of documents to add in their own proportions instead of the corpus's best.
    max_upweight : float or None
        A corpus bin is added up to this many times its share of the stage's tokens (None: no cap).
    seed : int
        Stream order for the ``pack`` regime.

    Returns
    -------
    UpsamplePlan
        As :func:`plan_upsample`, for the schedule's last longest-window stage.

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.
    """
    sf = as_schedule_frequency(schedule)
    cache: dict = {}
    stage_histograms = [stage_histogram(stage, cache) for stage in sf.schedule.stages]
    tau = sf.schedule.tau if tau is None else tau
    return _plan(sf, stage_histograms, E, tau, long_lengths, max_upweight, seed)


def document_contributions(lengths: np.ndarray, L: int, E: int, regime: str) -> tuple[np.ndarray, np.ndarray]:
    """(g_n, t_n) per document length n: occurrences of E in the document's own segments, and its trained tokens.

    >>> g, t = document_contributions(np.array([100, 1000, 2500]), 1024, 600, "natural")  # 2500 = 1024 + 1024 + 452
    >>> g.tolist(), t.tolist()
    ([0, 400, 848], [100, 1000, 2500])
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if regime == "truncate":
        kept = np.minimum(lengths, L)
        return np.maximum(kept - E, 0), kept
    return (lengths // L) * (L - E) + np.maximum(lengths % L - E, 0), lengths


def _ceil(x: Fraction) -> int:
    return -(-x.numerator // x.denominator)


def _check_request(E, L: int, regime: str, max_upweight) -> tuple[int, Fraction | None]:
    if isinstance(E, bool) or not isinstance(E, (int, np.integer)) or not 0 < int(E) < L:
        raise FreqlabError(f"target effective length E must be an integer with 0 < E < L = {L}, got {E!r}")
    if regime == "best-fit":  # lengths shape f, but a row holds pieces of several documents (a review: it was
        raise FreqlabError(  # refused as if they did not)
            "under regime 'best-fit' a row holds pieces of several documents, so what a document added gives depends "
            "on what it is packed with: plan under regime natural, which suffices (a best-fit row is at least as "
            "long as each of its natural pieces, so its f is at least theirs)"
        )
    if regime not in ADDITIVE_REGIMES:
        raise FreqlabError(
            f"under regime {regime!r} document lengths do not shape f (only the token count does): "
            "upsampling long documents cannot help; the budget that reaches tau is freqlab freq's "
            "(tokens_needed in Python)"
        )
    cap = None
    if max_upweight is not None:
        positive_number(max_upweight, "max_upweight")
        # a float's shortest decimal (0.1 is 1/10, not its binary value); numpy floats as Python's
        cap = (
            Fraction(repr(float(max_upweight)))
            if isinstance(max_upweight, (float, np.floating))
            else Fraction(max_upweight)
        )
        if cap < 1:
            raise FreqlabError(f"max_upweight must be at least 1 (1: add nothing), got {max_upweight}")
    return int(E), cap


def _by_contribution(h, f, L, E, regime, stage_tokens, gap, cap) -> tuple[list[UpsampleStep], Fraction, Fraction]:
    """Greedy by c_n: whole documents of the best bins until ``gap`` occurrences are reached or every bin better
    than a is at its cap. Returns the steps, the best c_n of the corpus, and the occurrences still missing.
    """
    f0, fE = int(f[0]), int(f[E])
    parts = h.sources.items() if h.sources else [(None, h)]
    bins = []  # (c as float, length, source, count, g, t)
    best = Fraction(0)
    for source, part in parts:
        g, t = document_contributions(part.lengths, L, E, regime)
        useful = g > 0
        for length, count, gn, tn in zip(part.lengths[useful], part.counts[useful], g[useful], t[useful], strict=True):
            c = Fraction(int(gn), int(tn))
            best = max(best, c)
            if int(gn) * f0 > fE * int(tn):  # c_n > a, exactly
                bins.append((c, int(length), source or "", source, int(count), int(gn), int(tn)))
    bins.sort(key=lambda b: (-b[0], -b[1], b[2]))
    steps: list[UpsampleStep] = []
    remaining = gap
    for c, length, _key, source, count, gn, tn in bins:
        if remaining <= 0:
            break
        need = _ceil(remaining / gn)
        limit = (
            need if cap is None else int((cap - 1) * count * stage_tokens // f0)
        )  # documents of the bin in T, x(cap-1)
        take = min(need, limit)
        if take <= 0:
            continue
        steps.append(UpsampleStep(source, length, take, take * tn, take * gn, float(c), take < need))
        remaining -= take * gn
    return steps, best, max(remaining, Fraction(0))


def receiving_stage(sf: ScheduleFrequency) -> int:
    """The stage that receives the added documents: the last of the longest window L (``sf.window`` may be a PoSE
    stage's target, past every L).
    """
    stages = sf.schedule.stages
    longest = max(stage.L for stage in stages)
    return max(j for j, stage in enumerate(stages) if longest == stage.L)


def _plan(sf: ScheduleFrequency, histograms: list[LengthHistogram], E, tau, long_lengths, max_upweight, seed: int):
    stages, k = sf.schedule.stages, receiving_stage(sf)
    stage, h, L, regime = stages[k], histograms[k], stages[k].L, stages[k].regime
    if stage.position_ids is not None or stage.curriculum is not None:
        raise FreqlabError(
            f"stage {stage.name!r}, the last of the longest window ({L}), would receive the documents, but its "
            "rows are not the regime's (position_ids or a curriculum): plan upsample ranks documents by what they "
            "give a stage of the regime's rows; give a schedule whose last longest-window stage is one"
        )
    E, cap = _check_request(E, L, regime, max_upweight)
    positive_number(tau, "tau")
    f = sf.frequencies[k]
    a = Fraction(int(f[E]), int(f[0]))
    threshold = Fraction(tau)
    current = sf.occurrences(E)
    before = current - stage.tokens * a  # what the other stages give
    gap = max(threshold - current, Fraction(0))
    ceiling = Fraction(L - E, L)
    notes: list[str] = []
    if regime == "pack":
        notes.append(
            "pack: each added document counted as if it started a row (its natural contribution, an upper "
            "bound); the corpus's own a is the packed one"
        )
    steps: list[UpsampleStep] = []
    if long_lengths is None:
        steps, best, remaining = _by_contribution(h, f, L, E, regime, stage.tokens, gap, cap)
        up_tokens = sum(s.tokens for s in steps)
        up_occurrences = Fraction(sum(s.occurrences for s in steps))
        added_docs = Fraction(sum(s.documents for s in steps))
        capped = f"up to {cap}x its share of T" if cap is not None else "without a cap"
        source = (
            f"the corpus's own documents, best contribution per token first, each length {capped}: "
            f"{len(steps):,} length{'s' if len(steps) != 1 else ''}, {int(added_docs):,} documents"
        )
    else:
        long_h = (
            long_lengths
            if isinstance(long_lengths, LengthHistogram)
            else LengthHistogram.from_lengths(as_int64(long_lengths, "long_lengths"))  # 2048.9 was cut to 2048
        )
        if long_h.documents == 0:
            raise FreqlabError("long_lengths is empty")
        if int(long_h.lengths.min()) < E:
            raise FreqlabError(f"long_lengths must all be >= E = {E}, got {int(long_h.lengths.min())}")
        g = position_frequency(long_h.lengths, long_h.counts, L, "truncate" if regime == "truncate" else "natural")
        b_given = Fraction(int(g[E]), int(g[0]))
        if b_given <= a:
            raise FreqlabError(
                f"the long documents do not train position {E} more often per token than the corpus "
                f"({float(b_given):.3g} vs {float(a):.3g}); upsampling them cannot help"
            )
        up_tokens = _ceil(gap / b_given)
        up_occurrences = up_tokens * b_given
        added_docs = Fraction(up_tokens * long_h.documents, long_h.tokens)
        remaining = Fraction(0)
        best = b_given
        source = f"given documents: {long_h.documents} of >= {E} tokens ({long_h.tokens} tokens), in their proportions"
    if remaining > 0 and a == 0:
        raise FreqlabError(
            f"position {E} never occurs in this corpus under {regime} (no document longer than {E} tokens): neither "
            "more tokens nor upsampling reach tau; give longer documents (--long-hist, long_lengths), or pack "
            "without a document mask (concat)"
        )
    more_corpus = _ceil(remaining / a) if remaining > 0 else 0
    X = up_tokens + more_corpus
    b = up_occurrences / up_tokens if up_tokens else Fraction(0)
    added = (up_occurrences + more_corpus * a) / X if X else Fraction(0)  # the whole addition's rate
    if gap == 0:
        notes.append(f"f_T({E}) already reaches tau: no upsampling needed")
    elif more_corpus:
        notes.append(
            f"every length better than the corpus average is at its cap: {more_corpus:,} more corpus tokens make up "
            "the rest" + (" (raise max_upweight to upsample more)" if cap is not None else "")
        )
    # shares in the resulting mix: each stage's T_k corpus tokens in their own proportions, plus the added ones
    T = sum(st.tokens for st in stages)
    long_tokens = long_docs = docs = Fraction(0)
    for j, (st, hk) in enumerate(zip(stages, histograms, strict=True)):
        tokens_k = st.tokens + (more_corpus if j == k else 0)
        is_long = hk.lengths >= E
        long_tokens += Fraction(tokens_k * int(np.dot(hk.lengths[is_long], hk.counts[is_long])), hk.tokens)
        long_docs += Fraction(tokens_k * int(hk.counts[is_long].sum()), hk.tokens)
        docs += Fraction(tokens_k * hk.documents, hk.tokens)
    token_share = (long_tokens + up_tokens) / (T + X)
    doc_share = (long_docs + added_docs) / (docs + added_docs)
    p = (threshold - current) / (stage.tokens * (b - a)) if b > a else None
    fixed = float(max(p, Fraction(0))) if p is not None and p <= 1 else None
    if p is not None and fixed is None:
        notes.append(
            "even a budget of only added documents reaches f_T({}) = {} < tau = {}: the budget must grow".format(
                E, *counts_told_apart(float(before + stage.tokens * b), float(threshold))
            )
        )
    options = _options(sf, h, k, E, regime, a, before, threshold, T, X, added, seed, notes)
    # judged on the whole addition: documents at their caps and then corpus tokens at rate a barely beat training
    # longer, however good the documents are (a review: "helps, 1.13x" for 0.1% fewer tokens)
    helps = up_tokens > 0 and (added / a >= UPSAMPLING_HELPS if a else True)
    current_eff = sf.effective_length(tau)
    verdict = _verdict(gap, a, b, added, best, ceiling, helps, options, more_corpus)
    if regime == "pack" and gap > 0:  # packed at random offsets, a document trains E less than at a row's start
        verdict += (
            " Under pack the documents and extra tokens of this plan are lower bounds: each added document is "
            "counted as if it started a row, so the mix may fall short of tau (packed at random offsets, a document "
            "reaches E less often); the natural regime's plan is what they are exact for (the other rows are exact)."
        )
    reasoning = _reasoning(
        sf,
        stage,
        k,
        E,
        L,
        regime,
        tau,
        current,
        current_eff,
        a,
        b,
        ceiling,
        source,
        X,
        T,
        token_share,
        doc_share,
        fixed,
    )
    return UpsamplePlan(
        L,
        E,
        T,
        json_threshold(tau),
        regime,
        float(current),
        current_eff,
        float(a),
        float(b),
        float(added),
        X,
        float(token_share),
        float(doc_share),
        fixed,
        source,
        "the corpus" if len(stages) == 1 else f"stage {stage.name!r} of {sf.schedule.source}",
        reasoning,
        tuple(notes),
        float(ceiling),
        options[0].total_tokens,
        float(best),
        up_tokens,
        more_corpus,
        None if cap is None else float(cap),
        helps,
        verdict,
        tuple(steps),
        tuple(options),
    )


def _options(sf, h, k, E, regime, a, before, threshold, T, X, added, seed, notes: list[str]) -> list[BudgetOption]:
    """The bound, more tokens, upsampling, and every other packing, as total budgets reaching tau (a packing the
    histogram is too large to walk: said in ``notes``, as ``freq``'s regime table says it).
    """
    stage = sf.schedule.stages[k]
    L = stage.L  # the receiving stage's window (receiving_stage)
    need = max(threshold - before, Fraction(0))  # occurrences the receiving stage must supply

    def option(way: str, rate: Fraction, estimate: bool = False) -> BudgetOption:
        total = T - stage.tokens + _ceil(need / rate)
        return BudgetOption(way, total, total - T, (total - T) / T, float(rate), estimate)

    out = [option("bound: no mix and no packing does better ((L-E)/L per token)", Fraction(L - E, L))]
    if a > 0:
        out.append(option(f"more tokens of the same mix ({regime})", a))
    out.append(BudgetOption("add the documents of this plan", T + X, X, X / T, float(added)))
    for packing in PACKINGS:
        if packing == regime:
            continue
        try:  # as freq's table: pack of a large histogram on a weighted sample of its stream
            segs, sample = table_segments(h.lengths, h.counts, L, packing, seed=seed)
        except FreqlabError as exc:  # best-fit past the chunks it places one by one: a row not asked for
            notes.append(f"--regime {packing} is not compared: {exc}")
            continue
        fr = segment_frequency(segs)
        if fr[E] > 0:
            rate = Fraction(int(fr[E]), int(fr[0]))
            out.append(option(f"the same mix under --regime {packing}", rate, sample is not None))
    return out


def _percent(x: float) -> str:
    """``+12.5%``, ``+950%``; past +10,000% in powers of ten (a review: ``+138378378378300.0%`` for a tiny budget)."""
    return f"{x:+.1%}" if abs(x) < 10 else f"{x:+.0%}" if abs(x) < 100 else f"{x * 100:+.3g}%"


def _times(rate: Fraction, a: Fraction) -> str:
    """``rate`` as a multiple of the corpus's ``a`` ("1.44x"; "any" where the corpus never trains E)."""
    return f"{float(rate / a):.2f}x" if a else "any"


def _verdict(gap, a, b, added, best, ceiling, helps, options, more_corpus: int) -> str:
    if gap == 0:
        return "f_T(E) already reaches tau: nothing to add."
    ways = [o for o in options[1:]]
    cheapest = min(ways, key=lambda o: o.total_tokens)
    more = next((o for o in options if o.way.startswith("more tokens")), None)
    plan = next(o for o in options if o.way.startswith("add the documents"))
    rate = f"{_times(added, a)} as often per token as the corpus" if a else "where the corpus never does"
    topped_up = (
        f" (its documents {_times(b, a)}, then {more_corpus:,} more corpus tokens once every useful length is at its "
        "cap)"
        if more_corpus
        else ""
    )
    if more_corpus and b == 0:  # every useful length is at its cap already (a review: "its documents 0.00x")
        text = (
            f"Upsampling cannot add anything: every length better than the corpus average is at its cap already "
            f"(--max-upweight), so the plan is {more_corpus:,} more corpus tokens: training longer."
        )
    elif helps:
        text = (
            f"Upsampling helps: the addition trains E {rate}{topped_up}; {plan.extra_tokens:,} extra tokens "
            f"({_percent(plan.longer)} training)"
        )
        text += f" against {more.extra_tokens:,} ({_percent(more.longer)}) by training longer." if more else "."
    elif more_corpus and best / a >= UPSAMPLING_HELPS:
        text = (
            f"Upsampling cannot help much: the addition trains E only {rate}{topped_up}, so adding it "
            f"({plan.extra_tokens:,} tokens, {_percent(plan.longer)} training)"
        )
        text += (
            f" is barely cheaper than training longer ({more.extra_tokens:,}, {_percent(more.longer)}); a higher "
            "--max-upweight adds more of the documents."
            if more
            else "."
        )
    else:
        text = (
            f"Upsampling cannot help: the best documents of this corpus train E at most {_times(best, a)} as often "
            f"per token as its average (no document can do better than {_times(ceiling, a)}: (L-E)/L), so adding "
            f"them ({plan.extra_tokens:,} tokens, {_percent(plan.longer)} training)"
        )
        text += (
            f" is barely cheaper than training longer ({more.extra_tokens:,}, {_percent(more.longer)})."
            if more
            else "."
        )
    if cheapest is not plan:
        text += f" Cheapest: {cheapest.label}, {cheapest.total_tokens:,} tokens in all ({_percent(cheapest.longer)})."
    return text


def _reasoning(
    sf, stage, k, E, L, regime, tau, current, current_eff, a, b, ceiling, source, X, T, token_share, doc_share, fixed
) -> str:
    stages = sf.schedule.stages
    if len(stages) == 1:
        basis = (
            f"With T = {human_count(T)} tokens of this corpus (regime {regime}, L = {L}), "
            f"position E = {E} occurs f_T(E)"
        )
        per_token, gap, budget = "each corpus token", "tau - T·a", "T"
    else:
        basis = (
            f"Over the schedule {sf.schedule.source} ({len(stages)} stages, {human_count(T)} tokens in all), position "
            f"E = {E} occurs F(E)"
        )
        per_token = f"each token of its stage {stage.name!r} (L = {L}, regime {regime}), which the documents join,"
        gap, budget = "tau - F(E)", f"that stage's {human_count(stage.tokens)} tokens"
    text = (
        "{} = {} times (tau = {}); ".format(basis, *counts_told_apart(float(current), float(tau)))
        # T < tau: f_T(0) = T, so no position reaches tau (a review: "the predicted effective length is 0")
        + ("no position reaches tau (T < tau)" if tau > T else f"the predicted effective length is {current_eff}")
        + f". {per_token[0].upper() + per_token[1:]} contributes a = f(E)/f(0) = {float(a):.4g} "
        f"occurrences of E; no token of any mix can give more than (L-E)/L = {float(ceiling):.4g}. Added documents "
        f"({source}) give b = {float(b):.4g} per token. Closing the gap {gap} takes X = {X:,} extra tokens; "
        f"documents of >= {E} tokens then make up {float(token_share):.2%} of training tokens and "
        f"{float(doc_share):.2%} of documents."
    )
    if fixed is not None and X > 0:
        text += f" Keeping the budget at {budget} instead, {fixed:.2%} of it must be added documents at rate b."
    return text
