"""HARPE per-head RoPE bases (Sec. 3.2, Eq. 9, Eq. 10, Algorithm 1, Table 2 of Lian et al., "Breaking the Stage
Barrier: A Novel Single-Stage Approach to Long Context Extension for Large Language Models", COLING 2025,
arXiv:2412.07171).

HARPE gives every attention head its own RoPE base b_h. Two strategies:

- uniform (Eq. 9): b_h = b_min + h·(b_max − b_min)/(N − 1), h = 0..N−1;
- peak-valley search (Algorithm 1): candidates B_c = {b_min + i·s, i = 1..⌊(b_max − b_min)/s⌋} (Eq. 10);
  start from B_s = {b_min} with its peaks P_s and valleys V_s; each round adds the candidate b_j with the
  smallest d_j = Σ_i |p_{j,i} − v_{s,i}| + Σ_i |v_{j,i} − p_{s,i}|, where the i-th peak of the candidate is
  paired with the i-th valley of the selected set (both sorted, truncated to the shorter list) and vice
  versa; P_s and V_s become the (set) unions with the new base's peaks and valleys, kept sorted. Already
  selected bases are skipped; ties go to the smaller base.

The paper leaves two things open, which freqlab chooses and exposes:

- where waveforms are compared: :class:`~freqlab.plan.waveform.DistanceGrid`, by default the Attention
  Buckets grid scaled to the target length (32000..130880 step 32 for 128K), or derived from a frequency
  analysis (:func:`grid_from_frequency`: the under-trained range [N*, target]);
- what a peak is: :class:`ProminentExtrema` (strict local maxima that are also the maximum within ±
  ``separation`` grid points, default 10; optionally only the ``count`` highest; valleys mirror it).

Properties of the literal algorithm worth knowing: since V_s is a growing sorted union and pairs are
truncated to the shorter list, a candidate's k peaks are compared with the k *smallest* valleys of the
selected set (later rounds favour bases whose extrema sit early on the grid), and a candidate with fewer
extrema sums fewer terms. On the paper's setting the shortest staves of Table 2 and of the uniform set
lie within the spread of random sets drawn from the same grid (``freqlab plan harpe --compare``); the
default ``separation`` was picked where freqlab's set scores high on that same measure, so its lead
over random sets is not independent evidence.

Heads get bases in selection order (b_min first). Table 2 prints its bases in ascending order, while the
paper's Table 6 lists a "same stride ascending order" variant as a different (worse) configuration; the
assignment used for the trained model is not published.

HARPE's Table 2 (the 32 published bases) cannot be reproduced from public information: the paper defines
neither the distance range nor the peak detection. It ships as reference data
(``freqlab/data/harpe_table2.json``) to compare against.

The Attention Buckets search (Chen et al. 2024, "Fortify the Shortest Stave"), which HARPE cites, is
available as :func:`attention_buckets_search` with its public defaults and peak/valley rules.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from importlib import resources

import numpy as np

from freqlab.arrays import as_written, finite
from freqlab.display import Display, Displayed, quantity, rough_count
from freqlab.errors import FreqlabError, ParameterError, brief
from freqlab.plan import display as shown
from freqlab.plan.waveform import (
    DistanceGrid,
    StaveScore,
    check_head_dim,
    envelope_score,
    require_waveforms,
    rope_waveform,
    stave_score,
)
from freqlab.plan.well_trained import WellTrained
from freqlab.resources import require_memory

# HARPE's setting (Sec. 4.2): Llama2-7B, 32 heads of dimension 128, b_min = 1M, b_max = 5M, s = 30k, 128K.
PAPER_HEADS, PAPER_HEAD_DIM = 32, 128
PAPER_B_MIN, PAPER_B_MAX, PAPER_STRIDE = 1_000_000, 5_000_000, 30_000
PAPER_TARGET = 131_072

# Attention Buckets' public driver: 6 bases from 10000..30000 step 500, m = 1000..4090, d = 128.
BUCKETS_BASES = 6
BUCKETS_B_MIN, BUCKETS_B_MAX, BUCKETS_STRIDE = 10_000, 30_000, 500
BUCKETS_CANDIDATES = tuple(range(BUCKETS_B_MIN, BUCKETS_B_MAX + 1, BUCKETS_STRIDE))
BUCKETS_GRID = DistanceGrid(1000, 4090, 1)
BUCKETS_SEED = (10_000, 18_000, 19_000)
BUCKETS_PUBLISHED = (10_000, 17_500, 18_000, 19_000, 20_000, 25_000)


# --------------------------------------------------------------------------------------------- Eq. 9, 10
def uniform_bases(n_heads: int, b_min: float, b_max: float) -> np.ndarray:
    """HARPE Eq. 9: b_h = b_min + h·(b_max − b_min)/(N − 1), h = 0..N−1 (float64; N = 1 gives [b_min]).

    Parameters
    ----------
    n_heads : int
        Number of heads N.
    b_min, b_max : float
        Smallest and largest base.

    Returns
    -------
    numpy.ndarray
        float64 bases b_h, h = 0..N-1, ascending.

    References
    ----------
    .. [1] Lian et al., "Breaking the Stage Barrier: A Novel Single-Stage Approach to Long Context Extension
           for Large Language Models", COLING 2025, arXiv:2412.07171.

    Examples
    --------
    >>> uniform_bases(5, 1e6, 5e6).tolist()
    [1000000.0, 2000000.0, 3000000.0, 4000000.0, 5000000.0]
    """
    _check_range(b_min, b_max)
    n_heads = _check_heads(n_heads)
    if n_heads == 1:
        return np.array([float(b_min)])
    h = np.arange(n_heads, dtype=np.float64)
    return float(b_min) + h * ((float(b_max) - float(b_min)) / (n_heads - 1))


def candidate_bases(b_min: float, b_max: float, stride: float) -> np.ndarray:
    """HARPE Eq. 10: B_c = {b_min + i·s, i = 1..⌊(b_max − b_min)/s⌋} (float64, ascending, b_min excluded).

    The count is computed exactly, on the numbers as written (rational arithmetic on each float's shortest decimal
    form, :func:`~freqlab.arrays.as_written`): 4e6 / 3e4 gives 133, and 1.5..2 by 0.1 gives 5 (1.6, ..., 2.0; the
    binary 0.1 is a little above 1/10, which gave 4); each candidate is the float nearest to b_min + i·s.

    Parameters
    ----------
    b_min, b_max : float
        Range of the candidates (b_min excluded).
    stride : float
        Step s between candidates.

    Returns
    -------
    numpy.ndarray
        float64 candidates, ascending.

    References
    ----------
    .. [1] Lian et al., "Breaking the Stage Barrier: A Novel Single-Stage Approach to Long Context Extension
           for Large Language Models", COLING 2025, arXiv:2412.07171.

    Examples
    --------
    >>> candidate_bases(1e6, 5e6, 3e4).size
    133
    """
    count = candidate_count(b_min, b_max, stride)
    low, high, step = (float(v) for v in (b_min, b_max, stride))  # for messages and the float fallback
    if count < 1:
        raise FreqlabError(f"stride {step:g} is larger than b_max − b_min = {high - low:g}: no candidates")
    require_memory(16 * count, f"--stride {step:g}", f"{rough_count(count)} candidate bases from {low:g} to {high:g}")
    first, each = as_written(b_min), as_written(stride)
    scale = math.lcm(first.denominator, each.denominator)
    top, add = int(first * scale), int(each * scale)
    i = np.arange(1, count + 1, dtype=np.int64)
    if top + count * add < 2**53 and scale < 2**53:  # integers exact in float64: one division rounds once
        return (top + i * add).astype(np.float64) / scale
    if count <= EXACT_CANDIDATES:  # each the nearest float to the exact value, one at a time
        return np.array([float(first + k * each) for k in range(1, count + 1)], dtype=np.float64)
    return low + i.astype(np.float64) * step  # within a few ulps of b_min + i·s


#: up to this many candidates past float64's exact integers, each is computed as a Fraction (the nearest float)
EXACT_CANDIDATES = 100_000


def candidate_count(b_min: float, b_max: float, stride: float) -> int:
    """⌊(b_max − b_min)/s⌋ of HARPE Eq. 10, exactly, on the numbers as written (:func:`~freqlab.arrays.as_written`)."""
    _check_range(b_min, b_max)
    if not (stride > 0 and finite(stride)):
        raise FreqlabError(f"stride must be a finite number > 0, got {brief(stride)}")
    return math.floor((as_written(b_max) - as_written(b_min)) / as_written(stride))


def _check_searchable(head_dim: int) -> None:
    """A search compares waveforms: with d = 2 every base has the one frequency b^0 = 1 (refused, not searched)."""
    if head_dim < 4:
        raise ParameterError(
            f"head dimension {head_dim} has one rotary frequency, b^0 = 1 for every base: every candidate's "
            "waveform is the same (√2·cos m), so the search cannot tell bases apart; give d >= 4",
            "--head-dim",
        )


def _check_range(b_min: float, b_max: float) -> None:
    if not (b_min > 1 and finite(b_min)):
        raise FreqlabError(f"b_min must be a finite number > 1, got {brief(b_min)}")
    if not finite(b_max):
        raise FreqlabError(f"b_max must be a finite number, got {brief(b_max)}")
    if not b_max > b_min:
        raise FreqlabError(f"b_max must be larger than b_min, got b_min={b_min:g}, b_max={b_max:g}")


def _check_heads(n_heads: int) -> int:
    if int(n_heads) != n_heads or n_heads < 1:
        raise FreqlabError(f"number of heads must be a positive integer, got {n_heads}")
    return int(n_heads)


# ------------------------------------------------------------------------------------ peaks and valleys
@dataclass(frozen=True)
class ProminentExtrema:
    """freqlab's peak/valley detection for Algorithm 1 (the paper does not define one).

    A grid point i is a peak of w when it is a strict local maximum (w[i-1] < w[i] > w[i+1]) and the
    maximum of w over grid points i − separation .. i + separation (clipped to the grid). All of them are
    kept, or only the ``count`` highest when ``count`` is set (ties: earlier distance); they are returned
    sorted by distance. Valleys mirror this (strict local minima that are the minimum of their window).

    ``separation`` is in grid points, so it scales with the grid: the default 10 points is ±320 distance
    units on the 128K grid, well above the 2π ripple of the fastest RoPE dimensions, and leaves on the
    order of a hundred extrema per base. It sits in the middle of a plateau (8-12) where the searched set's
    shortest stave was highest on the paper's setting (README, HARPE section); score differences between
    detection settings are of the order of the spread between random sets.
    """

    count: int | None = None
    separation: int = 10

    def __post_init__(self) -> None:
        if self.count is not None and (int(self.count) != self.count or self.count < 1):
            raise FreqlabError(f"peak count must be a positive integer, got {self.count}")
        if int(self.separation) != self.separation or self.separation < 1:
            raise FreqlabError(f"peak separation must be a positive integer (grid points), got {self.separation}")

    def find(self, waveforms: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Grid indices of the peaks and valleys of each row of ``waveforms`` (rows: bases)."""
        waveforms = np.atleast_2d(np.asarray(waveforms, dtype=np.float64))
        peaks = self._maxima(waveforms)
        valleys = self._maxima(-waveforms)
        return peaks, valleys

    def _maxima(self, w: np.ndarray) -> list[np.ndarray]:
        r = min(int(self.separation), w.shape[1])  # a window past the whole grid is the whole grid
        padded = np.pad(w, ((0, 0), (r, r)), constant_values=-np.inf)
        window_max = np.lib.stride_tricks.sliding_window_view(padded, 2 * r + 1, axis=1).max(axis=2)
        strict = np.zeros(w.shape, dtype=bool)
        strict[:, 1:-1] = (w[:, 1:-1] > w[:, :-2]) & (w[:, 1:-1] > w[:, 2:])
        is_peak = strict & (w == window_max)
        out = []
        for row, mask in zip(w, is_peak, strict=True):
            index = np.flatnonzero(mask)
            keep = index[np.argsort(-row[index], kind="stable")[: self.count]] if self.count else index
            out.append(np.sort(keep))
        return out


@dataclass(frozen=True)
class BucketsExtrema:
    """Attention Buckets' peak/valley rules (their public search), on a waveform sampled on a grid.

    Peaks: walk the strict local maxima left to right with a target level that starts at the largest
    local-maximum value. A local maximum within ``tolerance`` of the target (a) is recorded unless it lies
    at most ``peak_gap`` distance units after the previously recorded peak, and (b) in either case resets
    the target to max(w) over the ``window`` grid points starting at min(its index + ``skip``, index of the
    next local maximum). Other local maxima are passed over. Stop at ``count`` peaks.

    Valleys mirror it from the right over the strict local minima: the target starts at the smallest
    local-minimum value; a local minimum within ``tolerance`` is recorded unless it lies at most
    ``valley_gap`` units before the previously recorded valley, and in either case the target becomes
    min(w) over all grid points before j = min(its index − ``skip``, index of the previous local minimum);
    the walk ends when j <= 0. Stop at ``count`` valleys; valleys are returned left to right.
    """

    tolerance: float = 0.001
    peak_gap: int = 50
    valley_gap: int = 60
    skip: int = 50
    window: int = 500
    count: int = 6

    def peaks(self, w: np.ndarray, distances: np.ndarray) -> list[int]:
        """Distances of the peaks of one waveform ``w`` sampled at ``distances``."""
        w = np.asarray(w, dtype=np.float64)
        maxima = _strict_extrema(w, np.greater)
        found: list[int] = []
        if maxima.size == 0:
            return found
        target = w[maxima].max()
        for k, i in enumerate(maxima):
            if len(found) == self.count:
                break
            if abs(w[i] - target) > self.tolerance:
                continue
            if not found or distances[i] - found[-1] > self.peak_gap:
                found.append(int(distances[i]))
            nxt = maxima[k + 1] if k + 1 < maxima.size else i + self.skip
            start = min(i + self.skip, nxt)
            if start >= w.size:
                break
            target = w[start : start + self.window].max()
        return found

    def valleys(self, w: np.ndarray, distances: np.ndarray) -> list[int]:
        """Distances of the valleys of one waveform ``w`` sampled at ``distances``, left to right.

        Not :meth:`peaks` on a mirrored waveform: their code takes the *farther* of (index − skip, previous
        extremum) and the whole prefix for the next target, where peaks take the nearer one and a window.
        """
        w = np.asarray(w, dtype=np.float64)
        minima = _strict_extrema(w, np.less)
        found: list[int] = []
        if minima.size == 0:
            return found
        target = w[minima].min()
        for k in range(minima.size - 1, -1, -1):
            if len(found) == self.count:
                break
            i = minima[k]
            if abs(w[i] - target) > self.tolerance:
                continue
            if not found or found[-1] - distances[i] > self.valley_gap:
                found.append(int(distances[i]))
            previous = minima[k - 1] if k > 0 else i - self.skip
            end = min(i - self.skip, previous)
            if end <= 0:
                break
            target = w[:end].min()
        return found[::-1]


def _strict_extrema(w: np.ndarray, better) -> np.ndarray:
    """Indices i (interior) with better(w[i], w[i-1]) and better(w[i], w[i+1])."""
    if w.size < 3:
        return np.empty(0, dtype=np.int64)
    mask = better(w[1:-1], w[:-2]) & better(w[1:-1], w[2:])
    return np.flatnonzero(mask) + 1


# --------------------------------------------------------------------------------- frequency link
@dataclass(frozen=True)
class GridChoice:
    """A distance grid and why it was chosen (shown in the planner's output)."""

    grid: DistanceGrid
    reason: str
    well_trained: int | None = None


def grid_from_frequency(well_trained: WellTrained, target: int) -> GridChoice:
    """Compare waveforms where positions are under-trained: the range [N*, target].

    N* comes from :func:`freqlab.plan.well_trained.well_trained_range` (budget rule f_T(i) >= tau, STRING
    Sec. 3; or the position-mass rule without a budget). The grid spans N* .. target − 1 (the largest
    relative distance in a window of ``target`` tokens) with about as many points as the Attention Buckets
    grid (3,091).

    Parameters
    ----------
    well_trained : WellTrained
        The well-trained range N*.
    target : int
        Target context length.

    Returns
    -------
    GridChoice
        The grid, its reason and N*.

    References
    ----------
    .. [1] Lian et al., "Breaking the Stage Barrier: A Novel Single-Stage Approach to Long Context Extension
           for Large Language Models", COLING 2025, arXiv:2412.07171.
    .. [2] Chen et al., "Fortify the Shortest Stave in Attention: Enhancing Context Awareness of Large Language
           Models for Effective Tool Use", ACL 2024, arXiv:2312.04455 (Attention Buckets).

    Examples
    --------
    >>> from freqlab.plan.well_trained import well_trained_range
    >>> choice = grid_from_frequency(well_trained_range(131072, frequency=np.arange(131072, 0, -1)), 131072)
    >>> choice.grid, choice.well_trained
    (DistanceGrid(start=89624, stop=131071, step=13), 89624)
    """
    n_star = int(well_trained.N)
    if int(target) != target or target < 3:
        raise FreqlabError(f"target length must be an integer >= 3, got {target}")
    if n_star >= target:
        raise FreqlabError(
            f"the well-trained range N* = {n_star} already reaches the target {target}: nothing under-trained "
            "to plan for (use the default grid, or a larger target)"
        )
    grid = DistanceGrid.spanning(max(n_star, 1), int(target) - 1)
    reason = (
        f"distance grid from the frequency analysis: under-trained distances N* .. target − 1 = {n_star}..{target - 1} "
        f"({well_trained.explanation})"
    )
    return GridChoice(grid, reason, n_star)


def default_grid(target: int = PAPER_TARGET) -> GridChoice:
    """The Attention Buckets distance grid (1000..4090 for 4K) scaled to ``target``, with its reason."""
    grid = DistanceGrid.for_target(target)
    return GridChoice(grid, f"Attention Buckets grid (1000..4090 for 4K) scaled to the target {target}")


# ------------------------------------------------------------------------------------- Algorithm 1
@dataclass(frozen=True, repr=False)
class HarpePlan(Displayed):
    """Result of a HARPE base search: ``bases[h]`` is head h's RoPE base (selection order: b_min first)."""

    bases: list[float]
    strategy: str
    n_heads: int
    head_dim: int
    b_min: float
    b_max: float
    stride: float | None
    candidates: int
    grid: DistanceGrid
    grid_reason: str
    score: StaveScore
    detector: dict = field(default_factory=dict)
    seconds: float = 0.0

    def sorted_bases(self) -> list[float]:
        """The bases in increasing order."""
        return sorted(self.bases)

    def report(self, order: str = "selection") -> str:
        """The terminal report of ``freqlab plan harpe``: how the bases were searched, the grid, one row per head
        (``order``: "selection", b_min first, or "ascending" like Table 2), the stave score and a Python list.
        """
        bases = self.sorted_bases() if order == "ascending" else self.bases
        title = {"peak-valley": "peak-valley search (Algorithm 1)", "uniform": "uniform (Eq. 9)"}[self.strategy]
        lines = [f"HARPE per-head RoPE bases: {title}, {quantity(self.n_heads, 'head')}, d = {self.head_dim}"]
        if self.strategy == "peak-valley":
            d = self.detector
            kept = "all kept" if d["count"] is None else f"the {d['count']} highest kept"
            stride = "-" if self.stride is None else _fmt(self.stride)
            lines += [
                f"  head 0: b_min; candidates for the others: b_min + i·s, i = 1..{self.candidates} "
                f"(b_min = {_fmt(self.b_min)}, b_max = {_fmt(self.b_max)}, s = {stride})",
                f"  peaks/valleys: strict local extrema dominating ± {d['separation']} grid points ({kept})",
            ]
        else:
            lines.append(
                f"  b_h = b_min + h·(b_max − b_min)/(N − 1), b_min = {_fmt(self.b_min)}, b_max = {_fmt(self.b_max)}"
            )
        lines += [
            f"  grid: m = {self.grid.describe()}; {self.grid_reason}",
            f"  time: {self.seconds:.2f} s; head order: {order}",
            "",
            f"  {'head':>4}  {'base':>14}  {'millions':>8}",
            *(f"  {h:>4}  {_fmt(b):>14}  {b / 1e6:>8.3f}" for h, b in enumerate(bases)),
            "",
            f"  shortest stave min_m max_h w = {self.score.shortest:.3f}; mean_m max_h w = {self.score.mean:.3f}",
            "",
            "Python:",
            python_list(bases),
        ]
        return "\n".join(lines)

    def to_dict(self, order: str | None = None) -> dict:
        """The plan as JSON; with ``order`` ("selection" or "ascending"), ``bases`` and ``python`` in that order
        and the order named.
        """
        out = asdict(self)
        for name in ("b_min", "b_max", "stride"):  # 1000000, not 1000000.0, as the bases
            out[name] = None if out[name] is None else plain_number(out[name])
        bases = self.sorted_bases() if order == "ascending" else self.bases
        out["bases"] = [plain_number(b) for b in bases]
        out["grid"] = self.grid.to_dict()
        out["score"] = asdict(self.score)
        out["python"] = python_list(bases)
        if order is not None:
            out["order"] = order
        return out

    def _display(self) -> Display:
        return shown.harpe_display(self, python_list)


def peak_valley_search(
    n_heads: int = PAPER_HEADS,
    b_min: float = PAPER_B_MIN,
    b_max: float = PAPER_B_MAX,
    stride: float = PAPER_STRIDE,
    *,
    head_dim: int = PAPER_HEAD_DIM,
    grid: DistanceGrid | GridChoice | None = None,
    target: int = PAPER_TARGET,
    detector: ProminentExtrema | None = None,
) -> HarpePlan:
    """HARPE's Algorithm 1, literally, on freqlab's grid and peak detection (see the module docstring).

    All candidates' waveforms, peaks and valleys are computed once (one vectorised pass); each round then
    scores every remaining candidate with exact integer distance sums.

    Parameters
    ----------
    n_heads : int
        Number of bases to select (one per attention head).
    b_min, b_max, stride : float
        Candidate bases B_c = {b_min + i · stride, i = 1..⌊(b_max − b_min)/stride⌋} (Eq. 10 of [1]_); the
        search starts from {b_min}.
    head_dim : int
        Head dimension d.
    grid : DistanceGrid or GridChoice, optional
        Relative distances the waveforms are evaluated on (default: derived from ``target``).
    target : int
        Target context length.
    detector : ProminentExtrema, optional
        Peak and valley detection.

    Returns
    -------
    HarpePlan
        The selected ``bases`` (in selection order) with their grid and scores.

    Notes
    -----
    The waveform of base b is Attention Buckets' [2]_ w_b(m) = (2/√d) Σ_{j=0}^{d/2−1} cos(m · b^(−2j/d)).
    Each round adds the candidate b_j with the smallest d_j = Σ_i |p_{j,i} − v_{s,i}| + Σ_i |v_{j,i} − p_{s,i}|,
    its peaks p_j paired with the selected set's valleys v_s and vice versa; ties go to the smaller base.

    References
    ----------
    .. [1] Lian et al., "Breaking the Stage Barrier: A Novel Single-Stage Approach to Long Context Extension
           for Large Language Models", COLING 2025, arXiv:2412.07171.
    .. [2] Chen et al., "Fortify the Shortest Stave in Attention: Enhancing Context Awareness of Large Language
           Models for Effective Tool Use", ACL 2024, arXiv:2312.04455 (Attention Buckets).

    Examples
    --------
    >>> plan = peak_valley_search(4, 10_000, 40_000, 5_000, target=4096)
    >>> plan.bases[0], len(set(plan.bases))
    (10000.0, 4)
    """
    started = time.perf_counter()
    head_dim = check_head_dim(head_dim)
    n_heads = _check_heads(n_heads)
    _check_range(b_min, b_max)
    _check_searchable(head_dim)
    if stride > 0:  # the waveforms and the peak detection's three arrays like them, before any is allocated
        count = candidate_count(b_min, b_max, stride)
        require_waveforms(count + 1, _grid_choice(grid, target).grid.size, head_dim, bytes_per_point=26)
    candidates = candidate_bases(b_min, b_max, stride)
    if n_heads > candidates.size + 1:
        raise ParameterError(
            f"{n_heads} heads need {n_heads} distinct bases but the grid b_min + i·s has only "
            f"{candidates.size + 1} (b_min and {candidates.size} candidates): fewer heads, a smaller stride or a "
            "wider range",
            "--heads",
        )
    choice = _grid_choice(grid, target)
    detector = detector or ProminentExtrema()
    distances = choice.grid.distances
    pool = np.concatenate([[float(b_min)], candidates])  # row 0 is b_min
    waves = rope_waveform(pool, distances, head_dim)
    peak_idx, valley_idx = detector.find(waves)
    peaks = [distances[i] for i in peak_idx]
    valleys = [distances[i] for i in valley_idx]

    selected = select_peak_valley(peaks, valleys, n_heads)
    bare = [float(pool[j]) for j in selected if not (len(peaks[j]) and len(valleys[j]))]
    if bare:  # d sums no term for them: 0, the best score, so the set would say nothing about the waveforms
        raise FreqlabError(
            f"{len(bare)} of the {n_heads} bases selected (the first {bare[0]:g}) have no peak or no valley on the "
            f"grid {int(distances[0])}..{int(distances[-1])} ({distances.size} points), where Algorithm 1 scores "
            "them d = 0: widen the grid (--grid) or lower the detector's separation"
        )
    bases = [float(pool[j]) for j in selected]
    return HarpePlan(
        bases=bases,
        strategy="peak-valley",
        n_heads=n_heads,
        head_dim=head_dim,
        b_min=float(b_min),
        b_max=float(b_max),
        stride=float(stride),
        candidates=int(candidates.size),
        grid=choice.grid,
        grid_reason=choice.reason,
        score=envelope_score(waves[selected]),
        detector={"method": "prominent-extrema", **asdict(detector)},
        seconds=time.perf_counter() - started,
    )


def select_peak_valley(peaks: list, valleys: list, n: int) -> list[int]:
    """Algorithm 1's selection loop on given extrema; returns indices into the pool, in selection order.

    ``peaks[k]`` / ``valleys[k]`` are the sorted peak / valley distances of pool base k; base 0 is b_min
    (the start), the others are the candidates in ascending order of base. Each round picks the unselected
    k with the smallest d_k = Σ_i |p_{k,i} − v_{s,i}| + Σ_i |v_{k,i} − p_{s,i}| (sorted lists paired
    index by index, truncated to the shorter), ties to the smaller index; P_s and V_s are the sorted set
    unions of the selected bases' peaks and valleys.

    >>> select_peak_valley([[10], [40], [25]], [[30], [5], [15]], 3)  # d_1 = 10 + 5 > d_2 = 5 + 5
    [0, 2, 1]
    """
    peaks = [np.asarray(x, dtype=np.int64) for x in peaks]
    valleys = [np.asarray(x, dtype=np.int64) for x in valleys]
    if n > len(peaks):
        raise FreqlabError(f"{n} bases requested from a pool of {len(peaks)}")
    selected = [0]
    taken = np.zeros(len(peaks), dtype=bool)
    taken[0] = True
    p_s, v_s = np.unique(peaks[0]), np.unique(valleys[0])
    while len(selected) < n:
        best, best_d = -1, None
        for k in range(1, len(peaks)):  # ascending bases: strict '<' gives ties to the smaller base
            if taken[k]:
                continue
            d = _paired_distance(peaks[k], v_s) + _paired_distance(valleys[k], p_s)
            if best_d is None or d < best_d:
                best, best_d = k, d
        selected.append(best)
        taken[best] = True
        p_s = np.union1d(p_s, peaks[best])
        v_s = np.union1d(v_s, valleys[best])
    return selected


def _paired_distance(mine: np.ndarray, selected: np.ndarray) -> int:
    """Σ_i |mine_i − selected_i| over the first min(len) entries of two sorted arrays (exact int)."""
    k = min(mine.size, selected.size)
    return int(np.abs(mine[:k] - selected[:k]).sum())


def uniform_plan(
    n_heads: int = PAPER_HEADS,
    b_min: float = PAPER_B_MIN,
    b_max: float = PAPER_B_MAX,
    *,
    head_dim: int = PAPER_HEAD_DIM,
    grid: DistanceGrid | GridChoice | None = None,
    target: int = PAPER_TARGET,
) -> HarpePlan:
    """HARPE's uniform strategy (Eq. 9) as a plan, scored on the same grid as the search.

    Parameters
    ----------
    n_heads : int
        Number of bases N (one per attention head).
    b_min, b_max : float
        Smallest and largest base.
    head_dim : int
        Head dimension d.
    grid : DistanceGrid or GridChoice, optional
        Relative distances the waveforms are evaluated on (default: derived from ``target``).
    target : int
        Target context length.

    Returns
    -------
    HarpePlan
        The ``bases`` and their score.

    Notes
    -----
    b_h = b_min + h · (b_max − b_min)/(N − 1), h = 0..N − 1 (Eq. 9 of [1]_); the score is the Attention
    Buckets [2]_ "shortest stave" of :mod:`freqlab.plan.waveform`.

    References
    ----------
    .. [1] Lian et al., "Breaking the Stage Barrier: A Novel Single-Stage Approach to Long Context Extension
           for Large Language Models", COLING 2025, arXiv:2412.07171.
    .. [2] Chen et al., "Fortify the Shortest Stave in Attention: Enhancing Context Awareness of Large Language
           Models for Effective Tool Use", ACL 2024, arXiv:2312.04455 (Attention Buckets).

    Examples
    --------
    >>> uniform_plan(4, 10_000, 40_000, target=4096).bases
    [10000.0, 20000.0, 30000.0, 40000.0]
    """
    started = time.perf_counter()
    head_dim = check_head_dim(head_dim)
    choice = _grid_choice(grid, target)
    bases = uniform_bases(n_heads, b_min, b_max).tolist()
    return HarpePlan(
        bases=bases,
        strategy="uniform",
        n_heads=len(bases),
        head_dim=head_dim,
        b_min=float(b_min),
        b_max=float(b_max),
        stride=None,
        candidates=0,
        grid=choice.grid,
        grid_reason=choice.reason,
        score=stave_score(bases, choice.grid, head_dim),
        seconds=time.perf_counter() - started,
    )


def _grid_choice(grid: DistanceGrid | GridChoice | None, target: int) -> GridChoice:
    if grid is None:
        return default_grid(target)
    if isinstance(grid, DistanceGrid):
        return GridChoice(grid, f"distance grid given: {grid.describe()}")
    return grid


# ------------------------------------------------------------------------------ Attention Buckets
def attention_buckets_search(
    n_bases: int = BUCKETS_BASES,
    candidates=BUCKETS_CANDIDATES,
    *,
    seed=BUCKETS_SEED,
    grid: DistanceGrid = BUCKETS_GRID,
    head_dim: int = 128,
    rules: BucketsExtrema | None = None,
) -> list[int | float]:
    """The Attention Buckets base search (Chen et al. 2024), as HARPE cites it; returns the bases sorted.

    Selected peaks (valleys) are one sorted list with duplicates. The seed bases are merged in order; after
    each merge every value present in both lists is removed from both. Each round scores every candidate
    not yet selected: count the pairs within ±3 distance units between its peaks and the selected valleys
    plus its valleys and the selected peaks; the largest count wins, ties by the smallest mean squared
    distance of the counted pairs, then by the smaller base.

    Parameters
    ----------
    n_bases : int
        Number of bases to select.
    candidates : array_like
        Candidate bases.
    seed : array_like
        Bases the selection starts from.
    grid : DistanceGrid
        Distances the waveforms are evaluated on.
    head_dim : int
        Head dimension d.
    rules : BucketsExtrema, optional
        How peaks and valleys are detected (default: the paper's).

    Returns
    -------
    list
        The selected bases, sorted.

    References
    ----------
    .. [1] Lian et al., "Breaking the Stage Barrier: A Novel Single-Stage Approach to Long Context Extension
           for Large Language Models", COLING 2025, arXiv:2412.07171.
    .. [2] Chen et al., "Fortify the Shortest Stave in Attention: Enhancing Context Awareness of Large Language
           Models for Effective Tool Use", ACL 2024, arXiv:2312.04455 (Attention Buckets).
    """
    rules = rules or BucketsExtrema()
    head_dim = check_head_dim(head_dim)
    _check_searchable(head_dim)
    pool = sorted({float(b) for b in (*seed, *candidates)})
    if n_bases > len(pool):
        raise FreqlabError(f"{n_bases} bases requested but only {len(pool)} distinct seed + candidate bases")
    distances = grid.distances
    waves = rope_waveform(pool, distances, head_dim)
    extrema = {b: (rules.peaks(w, distances), rules.valleys(w, distances)) for b, w in zip(pool, waves, strict=True)}

    chosen = select_buckets(extrema, [float(b) for b in seed], sorted({float(b) for b in candidates}), n_bases)
    return [plain_number(b) for b in sorted(chosen)]


def select_buckets(extrema: dict, seed: list, candidates: list, n: int, within: int = 3) -> list:
    """Attention Buckets' selection loop on given extrema ``{base: (peaks, valleys)}``; selection order.

    Selected peaks and valleys are sorted lists with duplicates; after merging a base, every value present
    in both lists is removed from both. A candidate (not yet selected) scores the number of pairs within
    ±``within`` between its peaks and the selected valleys plus its valleys and the selected peaks; the
    largest count wins, then the smallest mean squared distance of the counted pairs, then the smaller base.

    >>> select_buckets({1: ([10], [50]), 2: ([52], [12]), 3: ([51], [10])}, [1], [2, 3], 2)  # mean 0.5 < 4
    [1, 3]
    """
    selected: list = []
    sel_peaks: list[int] = []
    sel_valleys: list[int] = []

    def merge(base) -> None:
        nonlocal sel_peaks, sel_valleys
        selected.append(base)
        sel_peaks = sorted(sel_peaks + list(extrema[base][0]))
        sel_valleys = sorted(sel_valleys + list(extrema[base][1]))
        common = set(sel_peaks) & set(sel_valleys)
        sel_peaks = [x for x in sel_peaks if x not in common]
        sel_valleys = [x for x in sel_valleys if x not in common]

    for base in seed:
        if base in selected:
            raise FreqlabError(f"seed base {base} is listed twice")
        merge(base)
    while len(selected) < n:
        best_key, best = None, None
        for base in sorted(candidates):
            if base in selected:
                continue
            count, squares = _pairs_within(extrema[base][0], sel_valleys, within)
            c2, s2 = _pairs_within(extrema[base][1], sel_peaks, within)
            count, squares = count + c2, squares + s2
            key = (-count, squares / count if count else math.inf, base)
            if best_key is None or key < best_key:
                best_key, best = key, base
        if best is None:
            raise FreqlabError(f"only {len(selected)} bases available, {n} requested")
        merge(best)
    return selected


def _pairs_within(mine, selected, within: int) -> tuple[int, int]:
    """Number of pairs (x, y) with |x − y| <= within, and the sum of their squared differences."""
    if not mine or not selected:
        return 0, 0
    diff = np.subtract.outer(np.asarray(mine, dtype=np.int64), np.asarray(selected, dtype=np.int64))
    close = np.abs(diff) <= within
    return int(close.sum()), int((diff[close] ** 2).sum())


# ------------------------------------------------------------------------------------ Table 2, compare
def harpe_table2() -> dict:
    """HARPE Table 2 (the 32 published per-head bases, stride 30k), from ``freqlab/data/harpe_table2.json``.

    Returns
    -------
    dict
        The published bases and their setting, as in the data file.

    References
    ----------
    .. [1] Lian et al., "Breaking the Stage Barrier: A Novel Single-Stage Approach to Long Context Extension
           for Large Language Models", COLING 2025, arXiv:2412.07171.
    """
    path = resources.files("freqlab").joinpath("data/harpe_table2.json")
    return json.loads(path.read_text(encoding="utf-8"))


def table2_bases() -> list[int]:
    """Table 2 as integer bases, head 1..32 (1.00M .. 4.54M)."""
    return [int(b) for b in harpe_table2()["bases"]]


def random_sets(
    n_heads: int, b_min: float, b_max: float, stride: float, *, count: int = 3, seed: int = 0
) -> list[list[float]]:
    """``count`` sets of ``n_heads`` distinct bases drawn uniformly from {b_min} ∪ B_c, sorted; set k (0-based) is
    drawn with its own seed ``seed + k``, so each set can be reproduced alone (and is labelled with its seed).
    """
    pool = np.concatenate([[float(b_min)], candidate_bases(b_min, b_max, stride)])
    n_heads = _check_heads(n_heads)
    if n_heads > pool.size:
        raise FreqlabError(f"{n_heads} distinct bases requested from a grid of {pool.size}")
    rng = np.random.default_rng
    return [sorted(rng(seed + k).choice(pool, size=n_heads, replace=False).tolist()) for k in range(count)]


def common_values(a, b, resolution: float = 10_000) -> list[float]:
    """Values of ``a`` that also appear in ``b`` once both are rounded to ``resolution`` (default 0.01M)."""
    rb = {round(float(x) / resolution) for x in b}
    return sorted(float(x) for x in a if round(float(x) / resolution) in rb)


def expected_random_overlap(n_heads: int, b_min: float, b_max: float, stride: float, reference) -> float:
    """Expected number of ``reference`` values in a random set of ``n_heads`` distinct bases drawn from
    {b_min} ∪ B_c: n · |reference ∩ pool| / |pool| (7.6 for 32 heads and Table 2 on the paper's grid).

    >>> round(expected_random_overlap(32, 1e6, 5e6, 3e4, table2_bases()), 2)
    7.64
    """
    pool = np.concatenate([[float(b_min)], candidate_bases(b_min, b_max, stride)])
    hits = len(common_values(pool, reference))
    return n_heads * hits / pool.size


@dataclass(frozen=True)
class ComparedSet:
    """One base set of :func:`compare_sets`, its stave score and how many of its values Table 2 shares."""

    name: str
    bases: list[float]
    score: StaveScore
    common_with_table2: int

    def to_dict(self) -> dict:
        """The set as JSON: its bases, stave scores and the values it shares with Table 2 (0.01M resolution)."""
        return {
            "name": self.name,
            "bases": [plain_number(b) for b in self.bases],
            "shortest_stave": self.score.shortest,
            "mean_max": self.score.mean,
            "common_with_table2": self.common_with_table2,
            "common_values": [plain_number(b) for b in common_values(self.bases, table2_bases())],
        }


#: Why :func:`compare_sets` shows Table 2 as published data.
TABLE2_NOTE = (
    "HARPE's Table 2 cannot be reproduced from public information: the paper defines neither the distance "
    "range nor how peaks and valleys are detected. It is shown as published reference data."
)


def comparison_report(plan: HarpePlan, compared: list[ComparedSet]) -> str:
    """The terminal report of ``freqlab plan harpe --compare``: each set's stave score on the plan's grid and
    its overlap with Table 2, and the overlap a random set has on average.
    """
    table = table2_bases()
    lines = [
        f"Comparison on the same grid (m = {plan.grid.describe()}, d = {plan.head_dim}):",
        f"  {'set':<26} {'shortest':>9} {'mean':>7}  {'in Table 2 (0.01M)':>18}",
        *(
            f"  {c.name:<26} {c.score.shortest:>9.3f} {c.score.mean:>7.3f}  {c.common_with_table2:>12}/{len(c.bases)}"
            for c in compared
        ),
        "",
        TABLE2_NOTE,
    ]
    paper = (PAPER_HEADS, PAPER_HEAD_DIM, PAPER_B_MIN, PAPER_B_MAX)
    if (plan.n_heads, plan.head_dim, plan.b_min, plan.b_max) != paper:  # a review: read as a like-for-like ranking
        lines.append(
            f"Table 2 is the paper's setting ({PAPER_HEADS} heads, d = {PAPER_HEAD_DIM}, bases 1M..5M); this plan has "
            f"{plan.n_heads} heads, d = {plan.head_dim}, bases {_fmt(plan.b_min)}..{_fmt(plan.b_max)}: Table 2's row "
            "is not comparable with the others' (a set of more bases, or other ones, draws more waveforms, whose "
            "maximum is higher)."
        )
    if plan.strategy == "peak-valley":
        common = common_values(plan.bases, table)
        shared = f": {', '.join(f'{b / 1e6:.2f}' for b in common)}" if common else "."
        lines.append(
            f"freqlab's set shares {len(common)} of {len(table)} values with Table 2 at 0.01M resolution{shared}"
        )
    stride = plan.stride if plan.stride is not None else PAPER_STRIDE
    expected = expected_random_overlap(plan.n_heads, plan.b_min, plan.b_max, stride, table)
    lines.append(
        f"For scale: a random set of {plan.n_heads} distinct bases from the same grid (stride {_fmt(stride)}) "
        f"shares {expected:.1f} values with Table 2 on average."
    )
    return "\n".join(lines)


def compare_sets(plan: HarpePlan, *, random_count: int = 3, seed: int = 0) -> list[ComparedSet]:
    """Score freqlab's searched bases against the uniform set, Table 2 and random sets.

    Parameters
    ----------
    plan : HarpePlan
        A plan from :func:`peak_valley_search`; its grid scores every set.
    random_count : int
        Number of random sets (see :func:`random_sets`).
    seed : int
        Seed of the first random set; the others use ``seed + 1``, ``seed + 2``, ...

    Returns
    -------
    list of ComparedSet
        freqlab's searched set, the uniform set (Eq. 9 of [1]_), HARPE's Table 2 and the random sets, each with
        its "shortest stave" score on ``plan.grid``.

    Notes
    -----
    A set of bases B is scored by its head-wise envelope e(m) = max_{b ∈ B} w_b(m) on the grid, with the
    Attention Buckets [2]_ waveform w_b(m) = (2/√d) Σ_{j=0}^{d/2−1} cos(m · b^(−2j/d)); the score's
    ``shortest`` is min_m e(m) (higher is better), see :mod:`freqlab.plan.waveform`.

    References
    ----------
    .. [1] Lian et al., "Breaking the Stage Barrier: A Novel Single-Stage Approach to Long Context Extension
           for Large Language Models", COLING 2025, arXiv:2412.07171.
    .. [2] Chen et al., "Fortify the Shortest Stave in Attention: Enhancing Context Awareness of Large Language
           Models for Effective Tool Use", ACL 2024, arXiv:2312.04455 (Attention Buckets).

    Examples
    --------
    >>> sets = compare_sets(peak_valley_search(4, 10_000, 40_000, 5_000, target=4096), random_count=1)
    >>> [s.name for s in sets]
    ['freqlab peak-valley', 'uniform (Eq. 9)', 'HARPE Table 2', 'random #1 (seed 0)']
    """
    table = [float(b) for b in table2_bases()]
    stride = plan.stride if plan.stride is not None else PAPER_STRIDE
    option = f"--random-sets {random_count:,}"
    require_memory(64 * random_count * plan.n_heads, option, f"{random_count:,} sets of {plan.n_heads} bases")
    require_waveforms(
        random_count * plan.n_heads, plan.grid.size, plan.head_dim, option, bytes_per_point=0
    )  # scored one set at a time: the time is the bound
    sets = [
        (f"freqlab {plan.strategy}", plan.bases),
        ("uniform (Eq. 9)", uniform_bases(plan.n_heads, plan.b_min, plan.b_max).tolist()),
        ("HARPE Table 2", table),
    ]
    for k, bases in enumerate(random_sets(plan.n_heads, plan.b_min, plan.b_max, stride, count=random_count, seed=seed)):
        sets.append((f"random #{k + 1} (seed {seed + k})", bases))
    return [
        ComparedSet(name, list(bases), stave_score(bases, plan.grid, plan.head_dim), len(common_values(bases, table)))
        for name, bases in sets
    ]


@dataclass(frozen=True)
class BucketsSearch:
    """A run of :func:`attention_buckets_search` with what it searched: ``bases`` found among ``candidates`` on
    ``grid`` (``n_bases`` asked for), beside the list Attention Buckets publishes (:data:`BUCKETS_PUBLISHED`).
    """

    bases: list
    n_bases: int
    candidates: list
    grid: DistanceGrid
    head_dim: int

    @property
    def common(self) -> list:
        """The bases also in the published list, ascending."""
        return sorted(set(self.bases) & set(BUCKETS_PUBLISHED))

    def report(self) -> str:
        """The terminal report: the search's settings, its result, the published list and what they share."""
        g, published = self.grid, list(BUCKETS_PUBLISHED)
        return "\n".join([
            f"Attention Buckets search: {self.n_bases} bases, d = {self.head_dim}, m = {g.start}..{g.stop} step "
            f"{g.step}, candidates {_fmt(min(self.candidates))}..{_fmt(max(self.candidates))} "
            f"({len(self.candidates)}), seed {list(BUCKETS_SEED)}",
            f"  result:    {python_list(self.bases)}",
            f"  published: {python_list(published)}",
            f"  in common: {len(self.common)} of {len(published)} ({python_list(self.common)})",
        ])  # fmt: skip

    def to_dict(self) -> dict:
        """The search as JSON."""
        return {
            "strategy": "attention-buckets",
            "bases": self.bases,
            "python": python_list(self.bases),
            "seed": list(BUCKETS_SEED),
            "grid": self.grid.to_dict(),
            "candidates": [plain_number(c) for c in self.candidates],
            "published": list(BUCKETS_PUBLISHED),
            "common_with_published": self.common,
        }


def _fmt(base: float) -> str:
    value = plain_number(base)
    return f"{value:,}" if isinstance(value, int) else f"{value:,.3f}"


def python_list(bases) -> str:
    """A Python list literal ready to paste, e.g. ``[1000000, 1150000]`` (integers when integral)."""
    return "[" + ", ".join(repr(plain_number(b)) for b in bases) + "]"


def plain_number(value: float) -> int | float:
    """An integral float as int (1000000.0 -> 1000000) for JSON and pasting; other values unchanged."""
    value = float(value)
    return int(value) if value.is_integer() else value
