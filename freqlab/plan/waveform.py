"""RoPE attention waveforms, distance grids and the "shortest stave" complementarity score.

The waveform of a RoPE base b at relative distance m is Attention Buckets' (Chen et al. 2024, "Fortify the
Shortest Stave in Attention"): the attention score of an all-ones query and key,

    w_b(m) = (2 / √d) · Σ_{j=0}^{d/2-1} cos(m · b^(-2j/d)),      d = head dimension (even).

HARPE (Lian et al., COLING 2025, arXiv:2412.07171) does not define it: its Sec. 3.2 adopts the Attention
Buckets search over "attention waveforms" (Eq. 10, Algorithm 1) without a formula, and its Eq. 9 is the uniform rule
b_h = b_min + h·(b_max − b_min)/(N − 1), which involves no waveform.

w_b(0) = √d and, because the j = 0 term is cos(m), w_b oscillates with period 2π at every scale. A set of
bases (one per head) complements itself when, at every distance, some head sits near a peak: the
"shortest stave" min_m max_h w_{b_h}(m) is then high (the Attention Buckets principle).

>>> round(float(rope_waveform([10000.0], [0], head_dim=128)[0, 0]), 12)  # √128
11.313708498985
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from freqlab.display import rough_count
from freqlab.errors import FreqlabError
from freqlab.sizes import MAX_HEAD_DIM

#: Attention Buckets' public grid: m = 1000..4090 (step 1) for 4K-context models; freqlab scales it.
BUCKETS_GRID_START, BUCKETS_GRID_STOP, BUCKETS_CONTEXT = 1000, 4090, 4096

# rows of (distances × d/2) evaluated at once: bounds memory at ~32 MB whatever the grid
_CHUNK_CELLS = 1 << 22
#: seconds per term cos(m·θ_j) of a waveform (one base, one distance, one frequency): 13-20 ns measured on a
#: 2-core machine (134 bases × 3,091 distances × 64 frequencies in 0.52 s)
SECONDS_PER_TERM = 2e-8
#: the paper's setting, against which a size is "the option that made it large" (:func:`require_waveforms`)
_PAPER_SIZES = {
    "--stride/--b-min/--b-max (candidate bases)": 134,
    "--grid/--extend-to (distances)": 3091,
    "--head-dim (d/2)": 64,
}


def require_waveforms(
    bases: int, distances: int, head_dim: int, option: str | None = None, *, bytes_per_point: int = 8
) -> None:
    """Refuse (:class:`~freqlab.resources.ResourceError`) waveforms of ``bases`` × ``distances`` points and
    ``head_dim / 2`` terms each that need more memory than is available (``bytes_per_point`` per point, plus the
    chunk of terms evaluated at once) or more time than :data:`freqlab.resources.MAX_SECONDS`. ``option``: what to
    name (default: the size furthest above the paper's setting).
    """
    from freqlab.resources import require_memory, require_time

    if option is None:
        sizes = {
            "--stride/--b-min/--b-max (candidate bases)": bases,
            "--grid/--extend-to (distances)": distances,
            "--head-dim (d/2)": head_dim // 2,
        }
        name = max(sizes, key=lambda key: sizes[key] / _PAPER_SIZES[key])
        option = f"{name} = {rough_count(sizes[name])}"
    purpose = (
        f"waveforms of {rough_count(bases)} bases at {rough_count(distances)} distances, {head_dim // 2:,} terms each"
    )
    require_memory(bases * distances * bytes_per_point + 24 * max(_CHUNK_CELLS, head_dim // 2), option, purpose)
    require_time(bases * distances * (head_dim // 2) * SECONDS_PER_TERM, option, purpose)


def check_head_dim(head_dim: int) -> int:
    """The head dimension must be a positive even integer (RoPE rotates pairs of dimensions), at most
    :data:`MAX_HEAD_DIM`.
    """
    if int(head_dim) != head_dim or head_dim <= 0 or head_dim % 2 or head_dim > MAX_HEAD_DIM:
        raise FreqlabError(f"head dimension must be a positive even integer up to {MAX_HEAD_DIM}, got {head_dim}")
    return int(head_dim)


def rope_frequencies(base: float, head_dim: int = 128) -> np.ndarray:
    """θ_j = b^(-2j/d) for j = 0..d/2-1 (RoPE, HARPE Eq. 6), float64."""
    head_dim = check_head_dim(head_dim)
    if not base > 1:
        raise FreqlabError(f"a RoPE base must be > 1, got {base}")
    return np.power(float(base), -2.0 * np.arange(head_dim // 2, dtype=np.float64) / head_dim)


def rope_waveform(bases, distances, head_dim: int = 128) -> np.ndarray:
    """w_b(m) for every base (rows) and distance (columns), float64 of shape (len(bases), len(distances)).

    Vectorised over a chunk of distances × frequencies at a time; ``tests/plan/test_harpe.py`` checks it
    against a plain Python double loop.

    Parameters
    ----------
    bases : array_like
        RoPE bases b (one row each).
    distances : array_like
        Relative distances m (one column each).
    head_dim : int
        Head dimension d.

    Returns
    -------
    numpy.ndarray
        float64 of shape (len(bases), len(distances)): w_b(m).

    References
    ----------
    .. [1] Chen et al., "Fortify the Shortest Stave in Attention: Enhancing Context Awareness of Large Language
           Models for Effective Tool Use", ACL 2024, arXiv:2312.04455 (Attention Buckets).

    Examples
    --------
    >>> rope_waveform([2.0], [0, 1], head_dim=2).round(6).tolist()  # d = 2: w(m) = (2/√2)·cos(m)
    [[1.414214, 0.764103]]
    """
    head_dim = check_head_dim(head_dim)
    bases = np.atleast_1d(np.asarray(bases, dtype=np.float64))
    m = np.atleast_1d(np.asarray(distances))
    if m.ndim != 1 or bases.ndim != 1:
        raise FreqlabError("bases and distances must be 1-D")
    if m.size and m.min() < 0:
        raise FreqlabError(f"distances must be >= 0, got {m.min()}")
    require_waveforms(bases.size, m.size, head_dim)
    m = m.astype(np.float64)
    out = np.empty((bases.size, m.size), dtype=np.float64)
    rows = max(1, _CHUNK_CELLS // (head_dim // 2))
    for k, base in enumerate(bases):
        theta = rope_frequencies(base, head_dim)
        for lo in range(0, m.size, rows):
            out[k, lo : lo + rows] = np.cos(np.multiply.outer(m[lo : lo + rows], theta)).sum(axis=1)
    out *= 2.0 / math.sqrt(head_dim)
    return out


@dataclass(frozen=True)
class DistanceGrid:
    """Relative distances start, start + step, ..., up to stop (inclusive when on the step), int64.

    HARPE does not say where waveforms are compared. freqlab's default (:meth:`for_target`) scales the
    Attention Buckets grid (m = 1000..4090 step 1 for a 4K context) to the target length, keeping its
    3,091 points: start = round(1000·T/4096), stop = round(4090·T/4096), step = max(1, round(T/4096)).

    Attributes
    ----------
    start, stop : int
        First and last distance (``stop`` included when on the step).
    step : int
        Step between distances, >= 1.

    References
    ----------
    .. [1] Lian et al., "Breaking the Stage Barrier: A Novel Single-Stage Approach to Long Context Extension
           for Large Language Models", COLING 2025, arXiv:2412.07171.
    .. [2] Chen et al., "Fortify the Shortest Stave in Attention: Enhancing Context Awareness of Large Language
           Models for Effective Tool Use", ACL 2024, arXiv:2312.04455 (Attention Buckets).

    Examples
    --------
    >>> DistanceGrid.for_target(131072)
    DistanceGrid(start=32000, stop=130880, step=32)
    >>> DistanceGrid.for_target(131072).size
    3091
    """

    start: int
    stop: int
    step: int = 1

    def __post_init__(self) -> None:
        for name in ("start", "stop", "step"):
            value = getattr(self, name)
            if int(value) != value:
                raise FreqlabError(f"distance grid {name} must be an integer, got {value}")
            object.__setattr__(self, name, int(value))
        if self.start < 0 or self.step < 1 or self.stop < self.start:
            raise FreqlabError(
                f"invalid distance grid start={self.start} stop={self.stop} step={self.step}: "
                "need 0 <= start <= stop and step >= 1"
            )

    @classmethod
    def for_target(cls, target: int) -> DistanceGrid:
        """The Attention Buckets grid scaled from a 4,096 context to ``target`` distances."""
        if int(target) != target or target < BUCKETS_CONTEXT // 4:
            raise FreqlabError(f"target length must be an integer >= {BUCKETS_CONTEXT // 4}, got {target}")
        scale = int(target) / BUCKETS_CONTEXT
        return cls(round(BUCKETS_GRID_START * scale), round(BUCKETS_GRID_STOP * scale), max(1, round(scale)))

    @classmethod
    def spanning(cls, start: int, stop: int, points: int = BUCKETS_GRID_STOP - BUCKETS_GRID_START + 1):
        """A grid over [start, stop] with about ``points`` points (step = max(1, round((stop-start)/(points-1))))."""
        if stop <= start:
            raise FreqlabError(f"empty distance range [{start}, {stop}]")
        return cls(int(start), int(stop), max(1, round((stop - start) / max(points - 1, 1))))

    @property
    def distances(self) -> np.ndarray:
        """The grid's distances, int64."""
        from freqlab.resources import require_memory

        require_memory(8 * self.size, f"--grid {self.start}:{self.stop}:{self.step}", f"{self.size:,} distances")
        return np.arange(self.start, self.stop + 1, self.step, dtype=np.int64)

    @property
    def size(self) -> int:
        """Number of distances on the grid."""
        return (self.stop - self.start) // self.step + 1

    @property
    def last(self) -> int:
        """The last distance on the grid: ``stop``, or the step's last below it (1000:4095:7 ends at 4094)."""
        return self.start + (self.size - 1) * self.step

    def describe(self) -> str:
        """``start..last step k (n points)``, as every report prints the grid (a review found 4095 printed for
        a grid whose last point is 4094).

        >>> DistanceGrid(1000, 4095, 7).describe()
        '1,000..4,094 step 7 (443 points)'
        """
        return f"{self.start:,}..{self.last:,} step {self.step} ({self.size:,} points)"

    def to_dict(self) -> dict:
        """The grid as JSON-ready data (``stop`` as given; ``last``: the last distance on it)."""
        return {"start": self.start, "stop": self.stop, "step": self.step, "last": self.last, "points": self.size}


@dataclass(frozen=True)
class StaveScore:
    """Complementarity of a base set on a grid: ``shortest`` = min_m max_h w_{b_h}(m) (the Attention
    Buckets "shortest stave", higher is better) and ``mean`` = mean_m max_h w_{b_h}(m).
    """

    shortest: float
    mean: float


def stave_score(bases, grid: DistanceGrid, head_dim: int = 128) -> StaveScore:
    """Score a set of bases (one per head) on ``grid``; the order of the bases does not matter.

    Parameters
    ----------
    bases : array_like
        One base per head.
    grid : DistanceGrid
        Distances m the waveforms are evaluated on.
    head_dim : int
        Head dimension d.

    Returns
    -------
    StaveScore
        ``shortest`` = min_m max_h w_{b_h}(m) and ``mean`` = mean_m max_h w_{b_h}(m).

    References
    ----------
    .. [1] Chen et al., "Fortify the Shortest Stave in Attention: Enhancing Context Awareness of Large Language
           Models for Effective Tool Use", ACL 2024, arXiv:2312.04455 (Attention Buckets).

    Examples
    --------
    >>> s = stave_score([10000], DistanceGrid(0, 0), head_dim=128)  # w(0) = √d
    >>> round(s.shortest, 6), round(s.mean, 6)
    (11.313708, 11.313708)
    """
    bases = np.atleast_1d(np.asarray(bases, dtype=np.float64))
    if bases.size == 0:
        raise FreqlabError("cannot score an empty base set")
    return envelope_score(rope_waveform(bases, grid.distances, head_dim))


def envelope_score(waveforms: np.ndarray) -> StaveScore:
    """:class:`StaveScore` of waveforms already evaluated (rows: heads, columns: grid points)."""
    envelope = np.asarray(waveforms, dtype=np.float64).max(axis=0)
    return StaveScore(float(envelope.min()), float(envelope.mean()))
