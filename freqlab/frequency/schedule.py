"""Multi-stage training schedules: frequencies of several stages add up.

A schedule is a small YAML (or JSON) file. Each stage trains ``tokens`` tokens with window ``L`` under a
regime, on a histogram file (paths relative to the schedule file) or, when omitted, on the schedule's
default ``histogram``. The frequency after all stages is

    F(i) = Σ_stages f_k(i) · T_k / f_k(0),      0 <= i < max_k L_k,

with f_k zero beyond its own window. This answers questions like the STRING paper's open one on Llama 3.1's
six-stage schedule: how much do short long-context stages add to the tail? Example::

    histogram: lengths.parquet     # default corpus for every stage
    tau: 100e9                     # optional threshold for the effective-length prediction
    stages:
      - {name: pretrain, L: 2048, tokens: 1T, regime: natural}
      - {name: long-8k, L: 8192, tokens: 20B, regime: pack, histogram: long.parquet}

Token counts accept plain numbers (``1e12``) or suffixes K, M, B (or G), T (decimal: B = 10^9); windows L accept
``8192`` or ``8K`` (K = 1024), as every size in freqlab (:mod:`freqlab.sizes`). ``weights`` (for the schedule, or per
stage) trains a stage on a weighted mix of its histogram's sources: ``SOURCE=W,...``, a mixture file (relative to the
schedule file) or a preset (:mod:`freqlab.frequency.mixture`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from freqlab.config_file import read_config_file
from freqlab.errors import FreqlabError, brief
from freqlab.frequency.position import position_frequency
from freqlab.frequency.regimes import REGIMES, expands_documents
from freqlab.frequency.stats import DEFAULT_TAU
from freqlab.resources import require_memory
from freqlab.sizes import parse_positions, parse_tokens


@dataclass(frozen=True)
class Stage:
    """One training stage: ``tokens`` tokens in windows of ``L`` under ``regime`` on ``histogram``."""

    name: str
    L: int
    tokens: int
    regime: str = "natural"
    histogram: Path | None = None
    weights: str | None = None  # source weights of the stage's mix (None: the histogram as scanned)


@dataclass(frozen=True)
class Schedule:
    stages: tuple[Stage, ...]
    histogram: Path | None = None
    tau: float = DEFAULT_TAU
    source: str = "<schedule>"


def load_schedule(path: str | Path, *, histogram: str | Path | None = None, weights: str | None = None) -> Schedule:
    """Read and validate a schedule file; ``histogram`` and ``weights`` override its default corpus and mix."""
    path = Path(path)
    data = read_config_file(path, "schedule")
    return parse_schedule(data, base=path.parent, source=str(path), histogram=histogram, weights=weights)


def parse_schedule(
    data, *, base: Path = Path("."), source: str = "<schedule>", histogram=None, weights: str | None = None
) -> Schedule:
    """Validate a schedule given as a dict (see the module docstring for the format)."""
    if not isinstance(data, dict) or not isinstance(data.get("stages"), list) or not data["stages"]:
        raise FreqlabError(f"{source}: a schedule needs a non-empty list 'stages'")
    unknown = set(data) - {"stages", "histogram", "tau", "weights"}
    if unknown:
        raise FreqlabError(f"{source}: unknown key(s) {', '.join(sorted(unknown))}")
    default = Path(histogram) if histogram else _relative(base, data.get("histogram"))
    default_weights = weights if weights is not None else _weights(base, data.get("weights"))
    stages = []
    for number, raw in enumerate(data["stages"], start=1):
        where = f"{source}: stage {number}"
        if not isinstance(raw, dict):
            raise FreqlabError(f"{where}: expected a mapping, got {brief(raw)}")
        unknown = set(raw) - {"name", "L", "tokens", "regime", "histogram", "weights"}
        if unknown:
            raise FreqlabError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        name = str(raw.get("name", f"stage-{number}"))
        where = f"{source}: stage {number} ({name})"
        try:
            L = parse_positions(raw.get("L"))
        except FreqlabError:
            given = raw.get("L")
            raise FreqlabError(f"{where}: L must be a positive integer (e.g. 2048 or 2K), got {brief(given)}") from None
        if "tokens" not in raw:
            raise FreqlabError(f"{where}: missing 'tokens'")
        try:
            tokens = parse_tokens(raw["tokens"])
        except FreqlabError as exc:
            raise FreqlabError(f"{where}: {exc}") from None
        regime = raw.get("regime", "natural")
        if regime not in REGIMES:
            raise FreqlabError(f"{where}: unknown regime {brief(regime)}; choose one of {', '.join(REGIMES)}")
        stage_histogram = _relative(base, raw.get("histogram")) or default
        if stage_histogram is None:
            raise FreqlabError(f"{where}: no histogram (give one for the stage or a default 'histogram')")
        stage_weights = _weights(base, raw.get("weights"))
        stages.append(Stage(name, L, tokens, regime, stage_histogram, stage_weights or default_weights))
    tau = data.get("tau", DEFAULT_TAU)
    try:
        tau = float(parse_tokens(tau))
    except FreqlabError:
        raise FreqlabError(f"{source}: tau must be a positive number, got {brief(tau)}") from None
    return Schedule(tuple(stages), default, tau, source)


def _weights(base: Path, value) -> str | None:
    """A stage's weights as text: ``SOURCE=W,...``, a preset, or a mixture file (relative to the schedule file)."""
    if value is None:
        return None
    if isinstance(value, dict):
        return ",".join(f"{source}={weight}" for source, weight in value.items())
    text = str(value)
    candidate = _relative(base, text)
    return str(candidate) if "=" not in text and candidate is not None and candidate.is_file() else text


def stage_histogram(stage: Stage, cache: dict | None = None):
    """The LengthHistogram a stage trains on: its file, weighted by the stage's ``weights`` (read once per
    file and weights when ``cache`` is shared)."""
    from freqlab.frequency.mixture import weighted_histogram
    from freqlab.histogram import LengthHistogram  # local: histogram imports the regimes module

    cache = {} if cache is None else cache
    key = (stage.histogram, stage.weights, expands_documents(stage.regime))
    if key not in cache:
        h = LengthHistogram.read_parquet(stage.histogram)
        if stage.weights:
            h = weighted_histogram(h, stage.weights, stream=expands_documents(stage.regime))[0]
        cache[key] = h
    return cache[key]


def _relative(base: Path, value) -> Path | None:
    if value is None:
        return None
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() else base / path


@dataclass(frozen=True)
class ScheduleFrequency:
    """Per-stage raw frequencies f_k (int64) and budgets T_k; their scaled sum F (float64)."""

    schedule: Schedule
    frequencies: tuple[np.ndarray, ...]

    @property
    def window(self) -> int:
        return max(stage.L for stage in self.schedule.stages)

    def stage_scaled(self, k: int) -> np.ndarray:
        """f_k · T_k / f_k(0), zero-padded to the longest window."""
        f = self.frequencies[k]
        out = np.zeros(self.window)
        out[: f.size] = f * (self.schedule.stages[k].tokens / float(f[0]))
        return out

    @property
    def total(self) -> np.ndarray:
        """F(i): expected occurrences of position i over the whole schedule (float64)."""
        return sum(self.stage_scaled(k) for k in range(len(self.frequencies)))

    def occurrences(self, i: int) -> Fraction:
        """F(i) as an exact rational."""
        total = Fraction(0)
        for f, stage in zip(self.frequencies, self.schedule.stages):
            if i < f.size and f[0] > 0:
                total += Fraction(int(f[i]) * stage.tokens, int(f[0]))
        return total

    def effective_length(self, tau: float | None = None) -> int:
        """Largest i with F(i) >= tau (exact; F is non-increasing)."""
        threshold = Fraction(self.schedule.tau if tau is None else tau)
        if self.occurrences(0) < threshold:
            return 0
        lo, hi = 0, self.window - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.occurrences(mid) >= threshold:
                lo = mid
            else:
                hi = mid - 1
        return lo


def schedule_frequency(schedule: Schedule, *, seed: int = 0) -> ScheduleFrequency:
    """Evaluate every stage's frequency on its histogram (each file is read once), weighted by its ``weights``."""
    window = max(stage.L for stage in schedule.stages)
    kept = sum(stage.L for stage in schedule.stages)  # every stage's f, then F and one scaled stage in float64
    require_memory(8 * kept + 24 * window, f"{schedule.source}: stages of L = {kept:,} positions in all",
                   "every stage's f(i) and their sum F(i)")
    cache: dict = {}
    frequencies = []
    for stage in schedule.stages:
        h = stage_histogram(stage, cache)
        if h.documents == 0:
            raise FreqlabError(f"{stage.histogram}: the histogram holds no documents")
        frequencies.append(position_frequency(h.lengths, h.counts, stage.L, stage.regime, seed=seed))
    return ScheduleFrequency(schedule, tuple(frequencies))
