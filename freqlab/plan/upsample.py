"""Length upsampling: how many tokens of long documents make position E well trained (beyond the papers).

STRING's analysis (Sec. 2-3) says position E is learned once f_T(E) >= tau, and natural corpora leave the
tail of the window under-trained. Adding documents at least E long raises f(E) far more per token than
the corpus average. With f the corpus frequency and g the frequency of the long documents (the corpus's own
documents of length >= E, or lengths you give), both under the same regime and window L,

    a = f(E) / f(0)        (occurrences of E per corpus token)
    b = g(E) / g(0)        (occurrences of E per long-document token)

and training on T corpus tokens plus X long-document tokens gives occurrences T·a + X·b at E (frequencies of
separately segmented documents add, exactly so for the ``natural`` and ``truncate`` regimes). So

    extra tokens   X = ceil((tau - T·a) / b)                                   (budget grows to T + X)
    fixed budget   p = (tau/T - a) / (b - a)  long-document share of T tokens   (same budget T)

The share of long documents in the resulting mix counts both the added ones and the corpus's own.

With a multi-stage schedule (:func:`plan_upsample_schedule`) the occurrences now are the schedule's
F(E) = Σ_k T_k · f_k(E) / f_k(0), the long documents join the last stage with the longest window (a, b and
the fixed-budget share refer to that stage: p = (tau - F(E)) / (T_stage · (b - a))), and the mix shares
count every stage's corpus.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from freqlab.display import Display, Displayed
from freqlab.errors import FreqlabError
from freqlab.frequency import DEFAULT_TAU, position_frequency
from freqlab.frequency.schedule import Schedule, ScheduleFrequency, Stage
from freqlab.histogram import LengthHistogram
from freqlab.plan import display as shown
from freqlab.plan.well_trained import as_histogram, as_schedule_frequency, check_window, json_fields

ADDITIVE_REGIMES: tuple[str, ...] = ("natural", "truncate", "pack")


@dataclass(frozen=True, repr=False)
class UpsamplePlan(Displayed):
    """Extra long-document tokens for f_T(E) >= tau, and the mix they produce."""

    L: int
    E: int
    tokens: int  # T (a schedule: all stages together)
    tau: float
    regime: str
    current_occurrences: float  # f_T(E) now (a schedule: F(E))
    current_effective_length: int
    per_token_corpus: float  # a = f(E)/f(0)
    per_token_long: float  # b = g(E)/g(0)
    extra_tokens: int  # X
    long_token_share: float  # tokens in documents >= E over all training tokens, after adding X
    long_document_share: float  # documents >= E over all documents, after adding X
    fixed_budget_share: float | None  # p, or None when impossible within T
    long_source: str
    added_to: str  # where the long documents go: the corpus, or a schedule's stage
    reasoning: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return {"method": "upsample", **json_fields(self)}

    def _display(self) -> Display:
        return shown.upsample_display(self)


def plan_upsample(
    histogram: LengthHistogram | str | Path,
    L: int,
    E: int,
    tokens: int | float,
    *,
    tau: float = DEFAULT_TAU,
    regime: str = "natural",
    long_lengths=None,
) -> UpsamplePlan:
    """Tokens of documents >= E to add so that f_T(E) >= tau (see the module docstring for the formulas).

    ``long_lengths``: lengths (array or LengthHistogram) of the documents to add; default: the corpus's own
    documents of length >= E, in their corpus proportions.

    >>> h = LengthHistogram.from_counts([100, 1000], [90, 1])  # a = 488/10000, b = 488/1000
    >>> p = plan_upsample(h, 1024, 512, tokens=10_000, tau=1_000)
    >>> p.current_occurrences < 1000, p.extra_tokens
    (True, 1050)
    """
    h = as_histogram(histogram)
    L = check_window(L)
    T = round(float(tokens))
    if T <= 0:
        raise FreqlabError(f"the token budget must be positive, got {tokens}")
    if h.documents == 0:
        raise FreqlabError("the histogram holds no documents")
    # one stage: the same computation as a schedule
    f = position_frequency(h.lengths, h.counts, L, regime)
    sf = ScheduleFrequency(Schedule((Stage("corpus", L, T, regime),), tau=float(tau)), (f,))
    return _plan(sf, [h], E, tau, long_lengths)


def plan_upsample_schedule(
    schedule: ScheduleFrequency | Schedule | str | Path, E: int, *, tau: float | None = None, long_lengths=None
) -> UpsamplePlan:
    """:func:`plan_upsample` for a multi-stage schedule: long documents join its last longest-window stage.

    ``tau`` defaults to the schedule's. Each stage's corpus is its histogram (read from the schedule).
    """
    sf = as_schedule_frequency(schedule)
    histograms: dict = {}
    for stage in sf.schedule.stages:
        if stage.histogram not in histograms:
            histograms[stage.histogram] = as_histogram(stage.histogram)
    stage_histograms = [histograms[stage.histogram] for stage in sf.schedule.stages]
    return _plan(sf, stage_histograms, E, sf.schedule.tau if tau is None else tau, long_lengths)


def _plan(sf: ScheduleFrequency, histograms: list[LengthHistogram], E, tau: float, long_lengths) -> UpsamplePlan:
    stages = sf.schedule.stages
    k = max(j for j, stage in enumerate(stages) if sf.window == stage.L)  # receives the long documents
    stage, h, L, regime = stages[k], histograms[k], sf.window, stages[k].regime
    if isinstance(E, bool) or not isinstance(E, (int, np.integer)) or not 0 < int(E) < L:
        raise FreqlabError(f"target effective length E must be an integer with 0 < E < L = {L}, got {E!r}")
    E = int(E)
    if regime not in ADDITIVE_REGIMES:
        raise FreqlabError(
            f"under regime {regime!r} document lengths do not shape f (only the token count does): "
            "upsampling long documents cannot help; see tokens_needed for the budget instead"
        )
    if long_lengths is None:
        keep = h.lengths >= E
        if not keep.any():
            raise FreqlabError(
                f"the corpus has no document of at least E = {E} tokens (longest: {int(h.lengths.max())}); "
                "give long_lengths"
            )
        long_h = LengthHistogram.from_counts(h.lengths[keep], h.counts[keep])
        source = f"the corpus's own {long_h.documents} documents of >= {E} tokens ({long_h.tokens} tokens)"
    else:
        long_h = (
            long_lengths
            if isinstance(long_lengths, LengthHistogram)
            else LengthHistogram.from_lengths(np.asarray(long_lengths, dtype=np.int64))
        )
        if long_h.documents == 0:
            raise FreqlabError("long_lengths is empty")
        if int(long_h.lengths.min()) < E:
            raise FreqlabError(f"long_lengths must all be >= E = {E}, got {int(long_h.lengths.min())}")
        source = f"given documents: {long_h.documents} of >= {E} tokens ({long_h.tokens} tokens)"
    f = sf.frequencies[k]
    g = position_frequency(long_h.lengths, long_h.counts, L, regime)
    notes: list[str] = []
    if regime == "pack":
        notes.append("pack: long documents are packed separately from the corpus (an approximation)")
    a = Fraction(int(f[E]), int(f[0]))
    b = Fraction(int(g[E]), int(g[0]))
    threshold = Fraction(tau)
    current = sf.occurrences(E)
    if b <= a:
        raise FreqlabError(
            f"the long documents do not train position {E} more often per token than the corpus "
            f"({float(b):.3g} vs {float(a):.3g}); upsampling them cannot help"
        )
    if current >= threshold:
        X = 0
        notes.append(f"f_T({E}) already reaches tau: no upsampling needed")
    else:
        need = (threshold - current) / b
        X = -(-need.numerator // need.denominator)
    # shares in the resulting mix: each stage's T_k corpus tokens in their own proportions plus X long tokens
    T = sum(st.tokens for st in stages)
    long_tokens = long_docs = docs = Fraction(0)
    for st, hk in zip(stages, histograms, strict=True):
        is_long = hk.lengths >= E
        long_tokens += Fraction(st.tokens * int(np.dot(hk.lengths[is_long], hk.counts[is_long])), hk.tokens)
        long_docs += Fraction(st.tokens * int(hk.counts[is_long].sum()), hk.tokens)
        docs += Fraction(st.tokens * hk.documents, hk.tokens)
    added_docs = Fraction(X * long_h.documents, long_h.tokens)
    token_share = (long_tokens + X) / (T + X)
    doc_share = (long_docs + added_docs) / (docs + added_docs)
    p = (threshold - current) / (stage.tokens * (b - a))  # long-token share of the stage's own budget
    fixed = float(max(p, Fraction(0))) if p <= 1 else None
    if fixed is None:
        notes.append(
            f"even a budget of only long documents reaches f_T({E}) = {float(current + stage.tokens * (b - a)):.3g}"
            " < tau: the budget must grow"
        )
    current_eff = sf.effective_length(tau)
    if len(stages) == 1:
        added_to = "the corpus"
        basis = f"With T = {T:.3g} tokens of this corpus (regime {regime}, L = {L}), position E = {E} occurs f_T(E)"
        per_token = "each corpus token"
        gap = "tau - T·a"
        budget = "T"
    else:
        added_to = f"stage {stage.name!r} of {sf.schedule.source}"
        basis = (
            f"Over the schedule {sf.schedule.source} ({len(stages)} stages, {T:.3g} tokens in all), position "
            f"E = {E} occurs F(E)"
        )
        per_token = f"each token of its stage {stage.name!r} (L = {L}, regime {regime}), which the long documents join,"
        gap = "tau - F(E)"
        budget = f"that stage's {stage.tokens:.3g} tokens"
    reasoning = (
        f"{basis} = {float(current):.3g} times (tau = {float(tau):.3g}); the predicted effective length is "
        f"{current_eff}. {per_token[0].upper() + per_token[1:]} contributes a = f(E)/f(0) = {float(a):.4g} "
        f"occurrences of E, each token of long documents ({source}) b = {float(b):.4g}. Adding X = "
        f"ceil(({gap})/b) = {X:,} tokens of long documents reaches tau; long documents (>= {E} tokens) "
        f"then make up {float(token_share):.2%} of training tokens and {float(doc_share):.2%} of documents."
    )
    if fixed is not None and X > 0:
        reasoning += f" Keeping the budget at {budget} instead, {fixed:.2%} of it must be long-document tokens."
    return UpsamplePlan(
        L,
        E,
        T,
        float(tau),
        regime,
        float(current),
        current_eff,
        float(a),
        float(b),
        X,
        float(token_share),
        float(doc_share),
        fixed,
        source,
        added_to,
        reasoning,
        tuple(notes),
    )
