"""Error bars for sampled scans: bootstrap confidence intervals of the position-mass shares.

A scan with ``sample_rate`` r keeps each document independently with probability r, so a mass share computed
from the sample (e.g. ``share_at_most_half`` = Σ_{i ≤ L/2} f(i) / Σ_i f(i), STRING Sec. 2.2) estimates the
corpus's share with a sampling error. It is estimated by the *Poisson bootstrap over documents* (Hanley &
MacGibbon 2006; Chamandy et al. 2012): each sampled document is counted W ~ Poisson(1) times, independently,
which mirrors the independent per-document sampling (the sample size itself varies, as it does between
sampled scans). Grouped by length, the replicate count of length ℓ is Poisson(c_ℓ): exact int64 counts, no
pass over the documents. f is a sum over segments, so a replicate's shares are exact integer sums of what each
document length adds (:func:`document_masses`, checked against the summary's own regime → segments → f code,
:func:`mass_shares`), divided once; the interval is the percentile interval of the replicates. With n sampled
documents, its width shrinks as 1/√n.

Intervals are given for the regimes whose shares come from the document lengths (``natural``, ``truncate``);
``concat`` and ``uniform`` shares depend only on the token count, and a ``pack`` replicate would re-shuffle and
re-pack the whole stream (:func:`no_interval` says why, in the summary; so for any other regime).

>>> from freqlab.histogram import LengthHistogram
>>> h = LengthHistogram.from_lengths([300] * 50 + [3000] * 50)
>>> ci = share_intervals(h.lengths, h.counts, 2048, "natural", replicates=200, seed=1)
>>> ci["level"], ci["replicates"], ci["share_at_most_half"][0] < ci["share_at_most_half"][1]
(0.95, 200, True)
"""

from __future__ import annotations

import numpy as np

from freqlab.arrays import magnitude
from freqlab.frequency.position import segment_frequency
from freqlab.frequency.regimes import REGIMES, segments
from freqlab.frequency.stats import share_at_least, share_at_most

LEVEL = 0.95
REPLICATES = 1000
METHOD = "percentile interval of a Poisson bootstrap over the sampled documents"
SHARES = ("share_at_most_half", "share_at_least_three_quarters")
# Regimes whose shares are sums over documents get intervals; the others say why they get none.
WITH_INTERVAL = ("natural", "truncate")
NO_INTERVAL = {
    "concat": "concat shares depend only on the token count (one stream cut into rows of L), not on the lengths",
    "uniform": "uniform shares depend only on the token count (lengths uniform on 1..L), not on the lengths",
    "pack": "the pack regime's order is a seeded shuffle: each replicate would re-pack the whole stream",
    "megatron": "the megatron row replays the whole index, not the sample: it has no sampling error",
}
OTHER_REGIMES = "the {regime} regime's shares are not sums over documents: no per-document bootstrap"
# Past this share of the sample's position mass (Σ_i f(i)) in one document, the lengths are too heavy-tailed for
# the interval's level to be taken at its word. Simulated (scripts/check_interval_coverage.md, 800 and 4,000 sampled
# documents), 95% intervals held the corpus's share 91-94% of the time on lognormal lengths (the largest sampled
# document: 1-4% of the mass), 89-96% with 2% of book-length documents (5-13%) and 60-71% on Pareto(1.1) lengths
# (14-19%), where a sample that misses the longest documents is confidently wrong.
HEAVY_TAIL_SHARE = 0.05
HEAVY_TAIL_NOTE = (
    "the largest sampled document holds {share:.0%} of the sampled position mass: on lengths this heavy-tailed the "
    "interval can miss more often than its level says (scripts/check_interval_coverage.md); sample more documents"
)


def mass_shares(lengths, counts, L: int, regime: str, seed: int = 0) -> tuple[float, float]:
    """``(share_at_most_half, share_at_least_three_quarters)`` of f for documents ``(lengths, counts)``, through
    the summary's own code (:func:`freqlab.frequency.regime_table.frequency_key_numbers`): the reference the bootstrap's
    per-document sums (:func:`document_masses`) are checked against.

    >>> lengths, counts = np.array([300, 3000]), np.array([5, 2])
    >>> half, tail, total = (document_masses(lengths, 2048, "natural") @ counts).tolist()
    >>> mass_shares(lengths, counts, 2048, "natural") == (half / total, tail / total)
    True
    """
    f = segment_frequency(segments(lengths, counts, L, regime, seed=seed))
    return share_at_most(f, L // 2), share_at_least(f, (3 * L) // 4)


def document_masses(lengths, L: int, regime: str) -> np.ndarray:
    """Per document length ℓ, what one document adds to Σ_{i ≤ L/2} f(i), to Σ_{i ≥ 3L/4} f(i) and to Σ_i f(i)
    (rows 0, 1, 2; int64, or Python ints when they could overflow): f is a sum over segments, so each share of
    a histogram is ``masses @ counts`` row over row (natural: ``ℓ // L`` segments of L and one of ``ℓ % L``;
    truncate: one of ``min(ℓ, L)``). A segment of s tokens holds position i ``max(s - i, 0)`` times, so it adds
    ``Σ_{i ≤ x} (s - i)`` up to x, ``(s - y)(s - y + 1) / 2`` from y on, ``s(s + 1) / 2`` in all.
    """
    lengths = np.asarray(lengths, np.int64)
    if regime not in ("natural", "truncate"):
        raise ValueError(f"no per-document masses for the {regime} regime")
    wide = int(lengths.max(initial=0)) * (L + 1) >= 1 << 61
    lengths = lengths.astype(object) if wide else lengths
    half, tail = L // 2, (3 * L) // 4

    def masses(s):  # of one segment of s tokens (s may be 0: no segment)
        up_to_half = np.where(s > half, (half + 1) * s - half * (half + 1) // 2, s * (s + 1) // 2)
        from_tail = np.where(s > tail, (s - tail) * (s - tail + 1) // 2, 0)
        return np.stack([up_to_half, from_tail, s * (s + 1) // 2])

    if regime == "truncate":
        return masses(np.minimum(lengths, L))
    return (lengths // L) * masses(np.full_like(lengths, L)) + masses(lengths % L)


def _exact_matmul(counts: np.ndarray, masses: np.ndarray) -> np.ndarray:
    """``counts @ masses.T`` in int64 when it provably fits, in Python ints otherwise (no silent wrap)."""
    if counts.size == 0:
        return np.zeros((counts.shape[0], masses.shape[0]), np.int64)
    bound = int(counts.max()) * magnitude(masses) * counts.shape[1]
    if masses.dtype != object and bound < 1 << 63:
        return counts @ masses.T
    return counts.astype(object) @ masses.T.astype(object)


def share_intervals(
    lengths, counts, L: int, regime: str, *, level: float = LEVEL, replicates: int = REPLICATES, seed: int = 0
) -> dict | None:
    """Bootstrap confidence intervals of the mass shares of ``regime`` in windows of ``L``, for a sample of
    documents ``(lengths, counts)`` (see the module docstring); None when there is no interval to give (fewer
    than two documents, or a regime of :data:`NO_INTERVAL`).

    Returns ``{"level", "method", "replicates", "seed", "share_at_most_half": [low, high],
    "share_at_least_three_quarters": [low, high], "standard_error": {share: bootstrap standard deviation},
    "largest_document_share"}`` (what the sample's longest document adds to Σ_i f(i), over the whole), and a
    ``"caveat"`` when that passes :data:`HEAVY_TAIL_SHARE`. Replicates are Poisson counts per length (int64),
    their shares exact integer sums (:func:`document_masses`) divided once, equal to :func:`mass_shares` of the
    replicate histogram.
    """
    lengths = np.asarray(lengths, np.int64)
    counts = np.asarray(counts, np.int64)
    if regime not in WITH_INTERVAL or int(counts.sum()) < 2:
        return None
    masses = document_masses(lengths, L, regime)
    rng = np.random.default_rng([int(seed), L, REGIMES.index(regime)])
    block = max(1, (1 << 22) // max(lengths.size, 1))  # replicates per draw: at most ~4M counts in memory
    draws = []
    for start in range(0, replicates, block):
        resampled = rng.poisson(counts, size=(min(block, replicates - start), counts.size)).astype(np.int64)
        for half, tail, total in _exact_matmul(resampled, masses).tolist():
            if total:  # a replicate without documents has no shares (vanishing for real samples)
                draws.append((half / total, tail / total))  # int / int: correctly rounded
    draws = np.array(draws)
    if len(draws) < 2:
        return None
    tail = (1 - level) / 2
    result: dict = {"level": level, "method": METHOD, "replicates": len(draws), "seed": int(seed)}
    for k, share in enumerate(SHARES):
        low, high = np.quantile(draws[:, k], [tail, 1 - tail])
        result[share] = [float(low), float(high)]
    result["standard_error"] = {share: float(draws[:, k].std(ddof=1)) for k, share in enumerate(SHARES)}
    whole = int(_exact_matmul(counts[None, :], masses)[0][2])
    largest = int(max(masses[2][counts > 0])) / whole  # int / int: correctly rounded
    result["largest_document_share"] = largest
    if largest > HEAVY_TAIL_SHARE:
        result["caveat"] = HEAVY_TAIL_NOTE.format(share=largest)
    return result


def add_intervals(
    windows: list[dict], lengths, counts, *, seed: int = 0, level: float = LEVEL, replicates: int = REPLICATES
) -> None:
    """Set ``row["ci"]`` on each summary row (one per window L and regime) of a sampled scan; rows without an
    interval (see :data:`NO_INTERVAL`) get ``{"none": reason}``.
    """
    for row in windows:
        ci = share_intervals(lengths, counts, row["L"], row["regime"], level=level, replicates=replicates, seed=seed)
        if ci is None:
            reason = "fewer than two documents" if row["regime"] in WITH_INTERVAL else no_interval(row["regime"])
            ci = {"none": reason}
        row["ci"] = ci


def no_interval(regime: str) -> str:
    """Why the shares of ``regime`` get no bootstrap interval."""
    return NO_INTERVAL.get(regime, OTHER_REGIMES.format(regime=regime))


def describe_interval(row: dict) -> str:
    """``95% CI 80.9-81.5% at i ≤ 1024, 4.4-4.8% at i ≥ 1536 (Poisson bootstrap over sampled documents)``."""
    ci = row["ci"]

    def span(share: str) -> str:
        low, high = ci[share]
        return f"{100 * low:.1f}-{100 * high:.1f}%"

    return (
        f"{100 * ci['level']:g}% CI {span('share_at_most_half')} at i ≤ {row['half']}, "
        f"{span('share_at_least_three_quarters')} at i ≥ {row['three_quarters']} "
        f"(bootstrap over the sampled documents, {ci['replicates']} replicates)"
        + (f"; {ci['caveat']}" if "caveat" in ci else "")
    )
