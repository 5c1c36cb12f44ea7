"""The key numbers of a position frequency (:func:`frequency_key_numbers`) and its table per (window, regime)
(:func:`regime_rows`, one :func:`regime_row` each), shared by ``freqlab freq``, ``freqlab scan`` and the notebooks.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from freqlab.arrays import as_names
from freqlab.display import percent
from freqlab.errors import FreqlabError, brief
from freqlab.frequency.budget import budget_note
from freqlab.frequency.position import position_frequency, segment_frequency
from freqlab.frequency.regimes import REGIMES, check_windows, table_segments
from freqlab.frequency.stats import (
    DEFAULT_TAU,
    STRING_PROBE_CALIBRATION,
    STRING_PROBE_REPORTS,
    STRING_PROBE_STEP,
    checked_frequency,
    effective_length,
    position_at_mass,
    share_at_least,
    share_at_most,
    tokens_needed,
)
from freqlab.sizes import human_count, json_threshold  # human_count kept for import compatibility (and used here)


def frequency_key_numbers(f, *, tokens: float | None = None, tau: float = DEFAULT_TAU) -> dict:
    """Key numbers of a position frequency f: shares, mass positions, f itself, effective length, budget.

    Parameters
    ----------
    f : array_like
        Position frequency f(i), 0 <= i < L.
    tokens : float, optional
        Training budget T; adds the predicted effective length.
    tau : float
        Threshold on f_T (default 100B).

    Returns
    -------
    dict
        JSON-serialisable: shares of position mass at i <= L/2 and i >= 3L/4, the positions holding
        50/80/90% of the mass, ``f`` at i = 0, L/4, L/2, 3L/4 and L − 1 (exact), the predicted effective length
        (with ``tokens``) and the budget needed for f_T(L/2) >= tau (None when no segment reaches L/2; then
        ``tokens_needed_at_longest`` is the budget for the longest position a segment reaches, when it is past 0).

    Notes
    -----
    share(i <= x) = Σ_{i≤x} f(i) / Σ_i f(i); STRING's Sec. 2.2 [1]_ uses x = 1024 and 1536 at L = 2048.
    The budget is ceil(tau · f(0) / f(L/2)) (:func:`tokens_needed`).

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> s = frequency_key_numbers([4, 3, 2, 1], tokens=400, tau=150)
    >>> s["share_at_most_half"], s["effective_length"], s["tokens_needed_at_half"], s["f"]
    (0.9, 2, 300, {'0': 4, '1': 3, '2': 2, '3': 1})
    """
    f = checked_frequency(f)  # 5 was "too many indices for array" (a review)
    if f[0] <= 0:
        raise FreqlabError("no tokens in the segments: the histogram holds no documents")
    L = int(f.size)
    half, three_quarters = L // 2, (3 * L) // 4
    longest = _last_nonzero(f)
    out: dict = {
        "L": L,
        "tokens_in_segments": int(f[0]),
        "half": half,
        "three_quarters": three_quarters,
        "share_at_most_half": share_at_most(f, half),
        "share_at_least_three_quarters": share_at_least(f, three_quarters),
        "position_at_mass": {f"{p}%": position_at_mass(f, p / 100) for p in (50, 80, 90)},
        "f": {str(i): f[i].item() for i in sorted({0, L // 4, half, three_quarters, L - 1})},
        "tau": json_threshold(tau),
        "tokens_needed_at_half": tokens_needed(f, half, tau) if f[half] > 0 else None,
        "longest_position": longest,
    }
    if f[half] == 0 and longest > 0:  # L/2 out of any budget's reach: what trains the longest position one reaches
        out["tokens_needed_at_longest"] = tokens_needed(f, longest, tau)
    if tokens is not None:
        length = effective_length(f, tokens, tau)  # checks tokens first (nan: a FreqlabError)
        out["budget_tokens"] = int(tokens) if float(tokens).is_integer() else float(tokens)  # 400.7 is not 400
        out["effective_length"] = length
    return out


def _last_nonzero(f: np.ndarray, chunk: int = 1 << 16) -> int:
    """The last position f reaches (-1 for none): the longest segment's length - 1 where f is non-increasing, past
    its zeros where it is not (a PoSE replay: f = 0 at 7 and 1 at 15 was put at 12, below the effective length, a
    review). Counted in place: no array of f's size is allocated (f is the largest one a command holds).
    """
    n = int(np.count_nonzero(f))
    if np.count_nonzero(f[:n]) == n:  # the nonzero values are 0..n - 1: the non-increasing f of every regime
        return n - 1
    for end in range(f.size, 0, -chunk):
        part = f[max(end - chunk, 0) : end]
        if np.count_nonzero(part):
            return end - part.size + int(np.flatnonzero(part)[-1])
    return -1  # (not reached: n > 0 here)


def regime_rows(
    lengths,
    counts,
    Ls,
    regimes,
    *,
    tokens: float | None = None,
    tau: float = DEFAULT_TAU,
    seed: int = 0,
    one_pass: bool = False,
    megatron=None,
) -> list[dict]:
    """:func:`frequency_key_numbers` for every (L, regime) pair, with the segment count and dropped tokens.

    Parameters
    ----------
    lengths, counts : array_like
        Document-length histogram.
    Ls : sequence of int
        Training windows.
    regimes : sequence of str
        Data regimes (see :mod:`freqlab.frequency.regimes`).
    tokens : float, optional
        Training budget (None: no effective-length prediction).
    tau : float
        Threshold on f_T (default 100B).
    seed : int
        Stream order for ``pack``.
    one_pass : bool
        The budget is one pass over the corpus, so a regime that drops tokens (``truncate``) trains on
        tokens · kept / all.
    megatron : MegatronOptions, optional
        Options of the ``megatron`` regime.

    Returns
    -------
    list of dict
        One :func:`frequency_key_numbers` row per (L, regime), with ``L``, ``regime``, ``segments`` and
        ``dropped_tokens`` (and ``budget_tokens`` with ``tokens``).

    Notes
    -----
    Each row's f is f(i) = Σ_s max(|s| − i, 0), summed over the segments s of the regime (STRING Eq. 2) [1]_.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> rows = regime_rows([4096], [10], [2048], ["natural", "truncate"], tokens=40960, one_pass=True)
    >>> [(r["regime"], r["budget_tokens"], r["dropped_tokens"]) for r in rows]
    [('natural', 40960, 0), ('truncate', 20480, 20480)]
    """
    rows = []
    regimes = as_names(regimes, "regime", ", ".join(REGIMES))
    for L in check_windows(Ls):  # one window or several (a bare 2048 was "'int' object is not iterable")
        for regime in regimes:
            segs, sample = table_segments(lengths, counts, L, regime, seed=seed, megatron=megatron)
            budget = tokens
            if one_pass and tokens is not None and segs.dropped_tokens:
                budget = int(tokens) * segs.tokens // (segs.tokens + segs.dropped_tokens)
            f = segment_frequency(segs)
            row = regime_row(segs.regime, f, segs.segments, segs.dropped_tokens, segs.approximation, budget, tau)
            if segs.note:
                row["note"] = segs.note
            if sample is not None:  # a large histogram: a weighted sample of its stream
                documents = int(np.sum(np.asarray(counts, dtype=np.int64), dtype=np.int64))
                row["note"] = (
                    f"pack shuffles a stream of {documents:,} documents: walked as a weighted sample of about "
                    f"2^{sample.bit_length() - 1}, every length kept, f(0) exact, the rest an estimate "
                    "of the whole stream's f (LengthHistogram.frequency, which freq --out and --layout take: exact for "
                    "the seed, slower)"
                )  # a review: the row and the file of one command differed (f(2048) 40,848 against 42,016)
            rows.append(row)
    return rows


def regime_row(
    regime: str,
    f,
    segments: int,
    dropped_tokens: int,
    approximation: str | None,
    tokens: float | None = None,
    tau: float = DEFAULT_TAU,
) -> dict:
    """:func:`frequency_key_numbers` of ``f`` with the regime, its segment count and dropped tokens (and the
    approximation, when the regime's f is one): one row of ``freqlab freq --json`` and of a scan's ``summary.json``
    (:meth:`PositionFrequency.regime_row <freqlab.frequency.PositionFrequency.regime_row>`).

    >>> row = regime_row("natural", np.array([8, 6, 4, 2]), 2, 0, None)
    >>> row["regime"], row["segments"], row["dropped_tokens"], "approximation" in row
    ('natural', 2, 0, False)
    """
    row = {"regime": regime, **frequency_key_numbers(f, tokens=tokens, tau=tau)}
    row["segments"] = segments
    row["dropped_tokens"] = dropped_tokens
    if approximation:
        row["approximation"] = approximation
    return row


def describe(row: dict, *, detail: bool = False, scaled: bool = False) -> str:
    """One line such as ``L=2048 natural: 81.2% of position mass at i ≤ 1024, 4.6% at i ≥ 1536``.

    Parameters
    ----------
    row : dict
        One row of :func:`regime_rows`.
    detail : bool
        Add a second line: the budget that makes f_T(L/2) reach tau and where 50% and 90% of the position
        mass lie.
    scaled : bool
        The row is of a mix whose counts are scaled (float64 weights): its dropped tokens are shown as a share of
        the mix's tokens, not as a count.

    Returns
    -------
    str
        The description (one line, two with ``detail``).

    Notes
    -----
    The shares are Σ_{i≤L/2} f(i) / Σ_i f(i) and Σ_{i≥3L/4} f(i) / Σ_i f(i), the thresholds of STRING's
    Sec. 2.2 [1]_ (1024 and 1536 at L = 2048).

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> row = regime_rows([2048], [10], [2048], ["natural"], tokens=1e12)[0]
    >>> print(describe(row, detail=True))
    L=2048 natural: 75.0% of position mass at i ≤ 1024, 6.3% at i ≥ 1536; predicted effective length 1843 at 1T tokens
        f_T(1024) ≥ 100B needs T ≥ 200B tokens; 50% of mass at i ≤ 599, 90% at i ≤ 1400
    """
    # None was "not subscriptable"; frequency_key_numbers' dict a KeyError: 'regime' (reviews)
    if not isinstance(row, Mapping) or not {"share_at_most_half", "regime", "L"} <= row.keys():
        raise FreqlabError(f"describe takes a row of regime_rows (a dict), got {brief(row)}")
    line = (
        f"L={row['L']} {row['regime']}: {percent(row['share_at_most_half'])} of position mass at "
        f"i ≤ {row['half']}, {percent(row['share_at_least_three_quarters'])} at i ≥ {row['three_quarters']}"
    )
    if row.get("approximation"):
        line += f" [{row['approximation']} computed: a length histogram has no order to replay; give --data-path]"
    if dropped := row.get("dropped_tokens"):
        if scaled:  # the count is the mix's times its scale K: a share is what it means
            line += f" ({percent(dropped / (dropped + row['tokens_in_segments']))} of the mix's tokens dropped)"
        else:
            line += f" ({human_count(dropped)} tokens dropped)"
    if row.get("note"):
        line += f" [{row['note']}]"
    if "effective_length" in row:
        line += f"; predicted effective length {row['effective_length']} at {human_count(row['budget_tokens'])} tokens"
        if row["effective_length"] == 0 and row.get("longest_position", 1) == 0:  # not the budget: the data
            cut = " (the window L = 1)" if row["L"] == 1 else ""
            line += f": no segment is longer than one token{cut}, so no position past 0 is trained, whatever the budget"
        elif row["effective_length"] == 0:  # say that the budget is what limits it, and what budget would not
            reach = row.get("tokens_needed_at_longest")
            longest = (row["longest_position"], reach) if reach is not None else None
            needed = row["tokens_needed_at_half"]
            line += f": {budget_note(row['budget_tokens'], row['tau'], needed, row['half'], longest)}"
    if detail:
        mass = row["position_at_mass"]
        needed = row["tokens_needed_at_half"]
        at_least = human_count(needed, up=True) if needed else ""  # a minimum: rounded up
        budget = f"f_T({row['half']}) ≥ {human_count(row['tau'])} needs T ≥ {at_least} tokens; " if needed else ""
        line += f"\n    {budget}50% of mass at i ≤ {mass['50%']}, 90% at i ≤ {mass['90%']}"
    return line


def string_probe_comparison(lengths, counts, *, tau: float = DEFAULT_TAU) -> dict:
    """What STRING Sec. 3 reports for its TinyLlama 1.3B models beside what freqlab predicts for the same
    windows and budgets on this length histogram (natural regime, threshold ``tau``). JSON-serialisable.

    ``reports``: per paper report, freqlab's predicted effective length (exact) and the same floored to the
    paper's 128-token measuring step. ``calibration``: per window, the budget freqlab needs for
    f_T(1280) >= tau, beside the paper's f(1280) ≈ 100B at effective length 1280 (None: no segment reaches
    1280 tokens).

    >>> c = string_probe_comparison([2048], [1000])  # f(i) = 1000 (2048 - i) at L = 2048
    >>> [(r["L"], r["paper"], r["freqlab"], r["freqlab_in_steps"]) for r in c["reports"]][-1]
    (2048, '1.4K', 1843, 1792)
    """
    windows = sorted({r.L for r in STRING_PROBE_REPORTS})
    f = {L: position_frequency(lengths, counts, L, "natural") for L in windows}
    position, occurrences = STRING_PROBE_CALIBRATION
    reports = []
    for r in STRING_PROBE_REPORTS:
        n = effective_length(f[r.L], r.tokens, tau) if f[r.L][0] > 0 else 0
        reports.append(
            {
                "L": r.L,
                "tokens": r.tokens,
                "tokens_text": r.tokens_text,
                "paper": r.reported,
                "source": r.source,
                "freqlab": n,
                "freqlab_in_steps": n // STRING_PROBE_STEP * STRING_PROBE_STEP,
            }
        )
    return {
        "regime": "natural",
        "tau": json_threshold(tau),
        "step": STRING_PROBE_STEP,
        "calibration": {
            "position": position,
            "paper_occurrences": occurrences,
            "freqlab_tokens_needed": [
                {"L": L, "tokens": tokens_needed(f[L], position, tau) if f[L][position] > 0 else None} for L in windows
            ],
        },
        "reports": reports,
    }


def describe_string_probe(comparison: dict) -> list[str]:
    """The lines ``freqlab stats`` prints for :func:`string_probe_comparison`: a small table, then the
    calibration line.
    """
    tau, step = human_count(comparison["tau"]), comparison["step"]
    cal = comparison["calibration"]
    position = cal["position"]
    needed = ", ".join(
        f"from T = {human_count(row['tokens'], up=True)} at L={row['L']}"
        if row["tokens"]
        else f"never at L={row['L']} (no segment longer than {position})"
        for row in cal["freqlab_tokens_needed"]
    )
    table = [("window", "tokens", "paper", "freqlab")] + [
        (f"L={row['L']}", row["tokens_text"], row["paper"], f"{row['freqlab']} [{row['freqlab_in_steps']}]")
        for row in comparison["reports"]
    ]
    widths = [max(len(cells[k]) for cells in table) for k in range(3)]
    return [
        f"STRING Sec. 3 vs freqlab on this histogram ({comparison['regime']} regime, tau = {tau}):",
        f"  paper: TinyLlama 1.3B on natural SlimPajama, effective length by needle retrieval in {step}-token steps",
        f"  freqlab: largest i with f_T(i) ≥ tau, exact [floored to the paper's {step}-token steps]",
        *("  " + "  ".join(c.ljust(w) for c, w in zip(cells, [*widths, 0], strict=True)).rstrip() for cells in table),
        f"  paper: effective length {position} where f({position}) ≈ {human_count(cal['paper_occurrences'])} "
        f"(Fig. 2b); freqlab: f_T({position}) ≥ {tau} {needed}",
    ]
