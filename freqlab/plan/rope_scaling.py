"""RoPE scaling for extension beyond the training window L, as Hugging Face config blocks.

Types (s = N / L, the target length over the training window; d = head dimension; b = rope_theta):

``linear`` (position interpolation, PI)
    Positions are divided by s. Giraffe (Pal et al. 2023, arXiv:2308.10882, Sec. 5.2, Table 4) measured evaluating
    zero-shot at a larger factor than the one fine-tuned with, on LLaMA-13B (base window 2048) and LongChat-Lines: the
    largest context length with non-zero accuracy went from 7100 (eval 4) to 16000 (eval 8) when fine-tuned
    at 4, from none (eval 1) to 4200 (eval 2) for the base model, and stayed 16000 (eval 16 and 32) when
    fine-tuned at 16; evaluating at 4x the training factor gave 0 everywhere. The plan quotes these numbers
    (:data:`freqlab.plan.rope_bases.TABLE4_ACCURACY`) and projects nothing from them.
``ntk`` (NTK-aware, static)
    No scaling block: the base becomes b' = b · s^(d / (d - 2)).
``dynamic`` (dynamic NTK)
    Hugging Face recomputes the base for a sequence of n > L tokens as b · (s·n/L - (s - 1))^(d/(d-2));
    ``max_position_embeddings`` must stay L, the length where scaling starts.
``yarn``
    NTK-by-parts interpolation with attention temperature 0.1 ln s + 1 (Peng et al. 2023).
``llama3``
    Llama 3.1's wavelength-dependent interpolation (low_freq_factor 1, high_freq_factor 4 by default).
``longrope``
    Per-dimension rescale factors (Ding et al., "LongRoPE: Extending LLM Context Window Beyond 2 Million Tokens",
    ICML 2024, arXiv:2402.13753; shipped in the 128K configs of Phi-3, Abdin et al., "Phi-3 Technical Report",
    arXiv:2404.14219): ``long_factor`` above the original length,
    ``short_factor`` within it, and transformers' attention factor sqrt(1 + ln s / ln L). LongRoPE finds its factors
    by an evolutionary search that freqlab does not run; freqlab prints a **search-free initialisation, not LongRoPE's
    searched factors** (:func:`longrope_factors`): YaRN's by-parts ramp per dimension, counted against the effective
    length E, the starting point the LongRoPE repository's own search ships (``dim_mono_yarn_*x.csv``).

Config blocks, each labelled with the transformers versions it is right for (:class:`ConfigBlock`):

* transformers 4.x (``rope_scaling``, validated by 4.45-4.57): ``{"max_position_embeddings": ..., "rope_theta": b,
  "rope_scaling": {"rope_type": ..., "factor": s, ...}}``; ``original_max_position_embeddings`` only where the type
  takes it (llama3; yarn from 4.51): 4.x's validators warn about unknown keys.
* transformers 5.x (``rope_parameters``, which holds ``rope_theta``): ``{"max_position_embeddings": ...,
  "rope_parameters": {"rope_type": ..., "rope_theta": b, "factor": s, ...}}``; static NTK is ``rope_type: "default"``
  with the new theta.

``max_position_embeddings`` is N for linear, ntk, yarn (where 4.56+ and 5.x check N / original == factor) and llama3,
and L for dynamic. LongRoPE: 4.x reads the original length from ``max_position_embeddings``, or from a top-level
``original_max_position_embeddings`` (Phi-3's form), with which it replaces ``factor`` by max_position_embeddings /
original; so its 4.x blocks keep L there and name ``factor`` (read as given everywhere). Before 4.51 a Llama-family
model computes its angles once, at load, from one list for every length: ``long_factor`` in 4.45-4.47 (the expanded
length s·L exceeds L), ``short_factor`` in 4.48-4.50 (no sequence length at load: the stock angles past L, no
extension at all); so the 4.45-4.50 block sets ``short_factor = long_factor``, interpolated angles at every length,
within L too. 4.51+ (``dynamic_rope_update``) and 5.x switch from ``short_factor`` to ``long_factor`` past the original
length. The 5.x block has N and ``original_max_position_embeddings`` L inside ``rope_parameters`` (required there).

YaRN differs across 4.x (read from each version's ``modeling_rope_utils``): 4.45-4.50 do not know
``original_max_position_embeddings`` in ``rope_scaling`` (they log "Unrecognized keys" and take
``max_position_embeddings`` as the original length), so their block keeps ``max_position_embeddings = L`` and no such
key; 4.51-4.55 read it (transformers #36877) but replace ``factor`` by ``max_position_embeddings / original``
(transformers #38224, fixed by #40320 in 4.56). With a ``factor`` other than N / L every YaRN block therefore keeps
``max_position_embeddings = L`` (the one form every version reads as factor s over original L).

The plans also report the critical dimension (Liu et al. 2024, "Scaling Laws of RoPE-based Extrapolation", ICLR):
rotary pair j (frequency b^(-2j/d_r) over the d_r = int(d · partial_rotary_factor) rotary dimensions) has period
2π·b^(2j/d_r); the pairs whose period exceeds a length E never completed a turn within it. freqlab counts them for
the predicted effective length E (the well-trained range N*, :mod:`freqlab.plan.well_trained`) as well as for L:
d_crit(E) = 2·#{j : 2π·b^(2j/d_r) <= E} = 2⌈(d_r/2)·log_b(E/2π)⌉ (for E > 2π).
"""

from __future__ import annotations

import copy
import json
import math
import numbers
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from freqlab.arrays import whole_number
from freqlab.deprecation import renamed_attributes
from freqlab.display import Display, Displayed
from freqlab.errors import FreqlabError, brief
from freqlab.frequency.stats import positive_number
from freqlab.plan import display as shown
from freqlab.plan.rope_bases import TABLE4_CONTEXT_LENGTHS, check_base, table4_reach
from freqlab.plan.well_trained import check_window, json_fields
from freqlab.sizes import MAX_HEAD_DIM, MAX_POSITIONS

#: The ``rope_type`` values :func:`plan_rope_scaling` plans (transformers' ``rope_scaling`` config names).
ROPE_TYPES: tuple[str, ...] = ("linear", "ntk", "dynamic", "yarn", "longrope", "llama3")
LARGE_LINEAR_FACTOR: float = 8  # above this, quote Giraffe's factor-16 result (Sec. 5.1, Table 1)


def _whole(number) -> bool:
    """Whether ``number`` is a whole real number (128 or 128.0; nan met int(): "cannot convert float NaN", a review)."""
    if isinstance(number, bool):
        return False
    if isinstance(number, numbers.Integral):
        return True
    return isinstance(number, numbers.Real) and math.isfinite(float(number)) and float(number).is_integer()


def _ntk_exponent(head_dim: int) -> float:
    """d / (d - 2), the exponent of the NTK-aware base change; needs an even d >= 4."""
    if not _whole(head_dim) or not 4 <= head_dim <= MAX_HEAD_DIM or head_dim % 2:
        raise FreqlabError(f"head_dim must be an even integer from 4 to {MAX_HEAD_DIM}, got {head_dim!r}")
    return head_dim / (head_dim - 2)


def ntk_aware_base(base: float, factor: float, head_dim: int) -> float:
    """NTK-aware base b' = b · s^(d/(d-2)).

    Parameters
    ----------
    base : float
        RoPE base b.
    factor : float
        Scale factor s.
    head_dim : int
        Head dimension d.

    Returns
    -------
    float
        The NTK-aware base b · s^(d/(d-2)); inf past float64 (see :func:`check_scaled_base`).

    References
    ----------
    .. [1] Peng et al., "YaRN: Efficient Context Window Extension of Large Language Models", ICLR 2024,
           arXiv:2309.00071.

    Examples
    --------
    >>> round(ntk_aware_base(10000.0, 4.0, 128))
    40890
    """
    # a negative s made a complex base, NaN a NaN one, 1e308 an OverflowError (reviews): inf past float64
    return _finite_base(check_base(base), positive_number(factor, "the scale factor s"), _ntk_exponent(head_dim))


def _positions(value, name: str) -> int:
    """A number of positions (:func:`check_window`), a whole float or Fraction too (4096.0, as before: a review)."""
    whole = whole_number(value)
    return check_window(value if whole is None else whole, name)


def _finite_base(base: float, stretch: float, exponent: float) -> float:
    """base · stretch^exponent, inf past float64 (an OverflowError's traceback: a review), as
    :func:`check_scaled_base` takes it.
    """
    try:
        return base * stretch**exponent
    except OverflowError:
        return math.inf


def dynamic_ntk_base(base: float, factor: float, head_dim: int, L: int, n: int) -> float:
    """Hugging Face dynamic NTK base for a sequence of n tokens: b · (s·n/L - (s-1))^(d/(d-2)) for n > L
    (unchanged for n <= L).

    Parameters
    ----------
    base : float
        RoPE base b.
    factor : float
        Scale factor s.
    head_dim : int
        Head dimension d.
    L : int
        Training window (the model's max_position_embeddings).
    n : int
        Current sequence length.

    Returns
    -------
    float
        The base used for a sequence of n tokens.

    References
    ----------
    .. [1] Peng et al., "YaRN: Efficient Context Window Extension of Large Language Models", ICLR 2024,
           arXiv:2309.00071.

    Examples
    --------
    >>> round(dynamic_ntk_base(10000.0, 4.0, 128, 4096, 16384))  # b · 13^(128/126)
    135402
    """
    # L = 0 divided by zero (a review); 4096.0 and 5000.0 are whole numbers, as before (a second)
    L, n = _positions(L, "L"), _positions(n, "the sequence length n")
    n = max(n, L)
    s = positive_number(factor, "the scale factor s")
    return _finite_base(check_base(base), s * n / L - (s - 1), _ntk_exponent(head_dim))


def yarn_attention_factor(factor: float) -> float:
    """YaRN's default attention temperature 0.1 · ln(s) + 1 for s > 1, else 1 (transformers' ``get_mscale``, used
    when ``attention_factor`` is unset).

    Parameters
    ----------
    factor : float
        Scale factor s.

    Returns
    -------
    float
        0.1 · ln(s) + 1 (1 for s <= 1: no temperature where nothing is stretched).

    References
    ----------
    .. [1] Peng et al., "YaRN: Efficient Context Window Extension of Large Language Models", ICLR 2024,
           arXiv:2309.00071.

    Examples
    --------
    >>> round(yarn_attention_factor(4.0), 4)
    1.1386
    """
    s = positive_number(factor, "the scale factor s")  # 0 was "math domain error" (a review)
    return 0.1 * math.log(s) + 1.0 if s > 1 else 1.0  # 0.5 gave 0.93 where transformers uses 1 (a review)


#: YaRN's ramp bounds alpha, beta (Peng et al., Sec. 3.2, "NTK-by-parts": 1 and 32 for LLaMA), used by longrope
YARN_ALPHA, YARN_BETA = 1.0, 32.0
LONGROPE_LABEL = "search-free initialisation, not LongRoPE's searched factors"


def longrope_factors(factor: float, rope_theta: float, rotary_dim: int, length: int) -> list[float]:
    """Search-free LongRoPE ``long_factor``: YaRN's by-parts ramp, one rescale factor per rotary pair.

    Pair j (of d_r/2) has wavelength λ_j = 2π·b^(2j/d_r) and completes r_j = E / λ_j turns within the length E
    (the effective length; L without one). YaRN (Peng et al., "YaRN: Efficient Context Window Extension of Large
    Language Models", ICLR 2024, Sec. 3.2) interpolates a pair by γ_j = clip((r_j − α)/(β − α), 0, 1), α = 1,
    β = 32: its frequency becomes (1 − γ_j)·θ_j/s + γ_j·θ_j. As a LongRoPE factor (θ_j' = θ_j / λ'_j, the form
    transformers' ``long_factor`` takes):

        λ'_j = 1 / ((1 − γ_j)/s + γ_j)

    so the pairs beyond the critical dimension (period > E: no full turn within E) get s, those turning more than
    β times within E keep 1, and the factors never decrease with j (LongRoPE's monotonicity constraint, Ding et al.,
    ICML 2024, Sec. 3.2). This is a search-free initialisation, not LongRoPE's searched factors.

    >>> f = longrope_factors(4.0, 10000.0, 128, 4096)
    >>> len(f), f[0], f[-1], f.count(4.0)  # 64 pairs; 18 whose period exceeds 4096 (critical dimension 92)
    (64, 1.0, 4.0, 18)
    """
    s, E = float(factor), int(length)
    gamma = np.clip((E / pair_wavelengths(rope_theta, rotary_dim) - YARN_ALPHA) / (YARN_BETA - YARN_ALPHA), 0.0, 1.0)
    return [float(x) for x in s / ((1.0 - gamma) + gamma * s)]  # = 1/((1-γ)/s + γ), exactly s at γ = 0, 1 at γ = 1


def longrope_attention_factor(factor: float, L: int) -> float:
    """The attention factor transformers uses for ``longrope`` when none is given: sqrt(1 + ln s / ln L) (1 for
    s <= 1), L the original length; it multiplies cos and sin at every length, within L too.

    >>> round(longrope_attention_factor(32.0, 4096), 4)  # Phi-3-mini-128k: 131072 / 4096
    1.1902
    """
    s = float(factor)
    if int(L) < 2:
        raise FreqlabError(f"longrope's attention factor sqrt(1 + ln s / ln L) needs L >= 2, got L = {L}")
    return 1.0 if s <= 1.0 else math.sqrt(1 + math.log(s) / math.log(int(L)))


#: transformers versions the blocks are written for: the floor pyproject allows, the YaRN changes, and 5.0
V4_FLOOR, YARN_READS_ORIGINAL, YARN_HONOURS_FACTOR, V5 = "4.45", "4.51", "4.56", "5.0"
#: from 4.51 ``dynamic_rope_update`` switches LongRoPE from short_factor to long_factor past the original length;
#: before, a Llama-family model computes its angles once, at load (4.45-4.47 from long_factor, 4.48-4.50 short_factor)
LONGROPE_SWITCHES = "4.51"
LAST_V4 = "4.57"  # the last 4.x release series before 5.0
#: vLLM pitfalls, said where a block is pasted
VLLM_MAX_MODEL_LEN = (
    "raise --max-model-len to N by hand: vLLM derives its maximum length from the model's own config, not from a "
    "rope block given with --hf-overrides (older vLLM: --rope-scaling); vLLM's context-extension example does the same"
)
VLLM_ATTENTION_FACTOR = (
    "this block sets attention_factor explicitly: vLLM's YaRN path does not forward it and uses 0.1·ln(factor) + 1 "
    "instead (vllm-project/vllm#46280, closed unmerged; #48351 open): check your vLLM version"
)


@dataclass(frozen=True)
class ConfigBlock:
    """One paste-ready config: the transformers versions it is right for, [since, until), and its keys.

    ``key`` names the convention: ``rope_scaling`` (4.x, which 5.x still converts) or ``rope_parameters`` (5.x).
    """

    since: str
    until: str | None
    key: str
    config: dict

    @property
    def label(self) -> str:
        """e.g. ``transformers 4.45-4.50 (rope_scaling)``; ``until`` is exclusive."""
        if self.until is None:
            versions = f"{self.since}+"
        else:
            major, minor = self.until.split(".")
            last = LAST_V4 if self.until == V5 else f"{major}.{int(minor) - 1}"
            versions = f"{self.since}-{last}"
        return f"transformers {versions} ({self.key})"

    def to_dict(self) -> dict:
        """The block as JSON-ready data."""
        return {"transformers": self.label, "since": self.since, "until": self.until, "key": self.key,
                "config": copy.deepcopy(self.config)}  # fmt: skip


def rotary_dims(head_dim: int, partial_rotary_factor: float = 1.0) -> int:
    """Dimensions that rotate, d_r = int(d · partial_rotary_factor) as transformers computes it (even, >= 2).

    >>> rotary_dims(128), rotary_dims(128, 0.25), rotary_dims(80, 0.4)
    (128, 32, 32)
    """
    factor = float(partial_rotary_factor)
    if not 0.0 < factor <= 1.0:
        raise FreqlabError(f"partial_rotary_factor must be in (0, 1], got {partial_rotary_factor}")
    if not _whole(head_dim) or head_dim < 1:
        raise FreqlabError(f"head_dim must be a positive integer, got {brief(head_dim)}")
    d_r = int(int(head_dim) * factor)
    if d_r < 2 or d_r % 2:
        raise FreqlabError(
            f"head_dim {head_dim} · partial_rotary_factor {factor:g} = {d_r} rotary dimensions: RoPE rotates pairs "
            "of dimensions, so they must be an even number >= 2"
        )
    return d_r


#: the types whose base change has the exponent d_r / (d_r - 2): they need d_r >= 4
NTK_TYPES = ("ntk", "dynamic")


def scaled_rotary_dims(rope_type: str, head_dim: int, partial_rotary_factor: float = 1.0) -> int:
    """:func:`rotary_dims` for one scaling type: NTK-aware and dynamic NTK also need d_r >= 4 (their exponent
    d_r / (d_r - 2); transformers' dynamic NTK divides by d_r - 2 as well).

    >>> scaled_rotary_dims("linear", 4, 0.5)
    2
    """
    d_r = rotary_dims(head_dim, partial_rotary_factor)
    if rope_type in NTK_TYPES and d_r < 4:
        raise FreqlabError(
            f"head_dim {head_dim} · partial_rotary_factor {float(partial_rotary_factor):g} = {d_r} rotary dimensions: "
            f"{rope_type} scaling needs at least 4 (its exponent d_r / (d_r - 2))"
        )
    return d_r


def check_factor(factor: float | None, L: int, N: int) -> float:
    """The scaling factor s: N / L when not given; a given one must be finite, above 1, and stretch L to at most
    2^30 positions (s · L <= ``MAX_POSITIONS``, the longest target freqlab plans; past it the derived bases overflow
    to infinity, which no config can hold).

    >>> check_factor(None, 4096, 16384), check_factor(8, 4096, 16384), check_factor(4.000000001, 4096, 16384)
    (4.0, 8.0, 4.0)
    """
    s = N / L if factor is None else positive_number(factor, "the scaling factor")
    if math.isclose(s * L, N):  # within rounding of N / L is N / L (a review: 4.000000001 kept max_position_embeddings
        s = N / L  # = N beside it, and transformers warned that the factor did not match N / L)
    if not (s > 1.0 and math.isfinite(s)):
        raise FreqlabError(f"the scaling factor must exceed 1 and be finite, got {factor}")
    if s * L > MAX_POSITIONS:
        raise FreqlabError(
            f"factor {s:.10g} stretches L = {L} to s·L = {s * L:.4g} positions, past the longest length freqlab plans "
            f"(2^30): a factor must be at most 2^30 / L = {MAX_POSITIONS / L:g} (N / L = {N / L:g})"
        )
    return s


def check_scaled_base(rope_type: str, rope_theta: float, factor: float, rotary_dim: int, L: int, N: int) -> None:
    """Refuse a base change that overflows: NTK-aware b · s^(d_r/(d_r-2)), or dynamic NTK's base at N, must be a
    finite number for a config to hold it (JSON has no infinity).

    >>> check_scaled_base("ntk", 1e308, 4.0, 128, 4096, 16384)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    freqlab.errors.FreqlabError: ntk scaling raises rope_theta 1e+308 to b · s^(d_r/(d_r-2)) = inf (s = 4, ...
    """
    try:
        if rope_type == "ntk":
            base = ntk_aware_base(rope_theta, factor, rotary_dim)
        elif rope_type == "dynamic":
            base = dynamic_ntk_base(rope_theta, factor, rotary_dim, L, N)
        else:
            return
    except OverflowError:
        base = math.inf
    if not math.isfinite(base):
        raise FreqlabError(
            f"{rope_type} scaling raises rope_theta {float(rope_theta):g} to b · s^(d_r/(d_r-2)) = {base:g} "
            f"(s = {float(factor):.10g}, d_r = {rotary_dim}): no config can hold it; lower --rope-theta or --factor"
        )


def factor_notes(s: float, L: int, N: int, rope_type: str, used: int | None = None) -> list[str]:
    """What a factor other than N / L does to the plan (none when s · L = N); ``used``: the positions the model
    sees when they are fewer than N (STRING shifts before YaRN scales: 0..used - 1), compared with s · L instead.

    Position interpolation and its refinements (linear, ntk, yarn, llama3, longrope) scale for s · L positions:
    below N / L the positions from s · L to N fall beyond the trained range after scaling (extrapolation); above it
    they are compressed more than N needs. Dynamic NTK grows the base with the sequence length n, so its factor sets
    how fast, not a length.

    >>> factor_notes(2.0, 4096, 16384, "linear")[0][:40]
    'factor 2 is below N / L = 4: it stretche'
    """
    if used is not None:  # STRING + YaRN: positions 0..used - 1, not N
        if s * L >= used:
            return []
        first = math.ceil(s * L)
        scaled = round((used - 1) / s)  # in the model's units, as the plan's reasoning counts; rounded once
        return [f"factor {s:.10g} stretches L = {L} to s·L = {s * L:.10g} positions, and STRING uses positions "
                f"up to {used - 1}: {used - first} of them ({first}..{used - 1}) fall beyond the trained range "
                f"after scaling (the last, {used - 1}, scales to {scaled}: {scaled - (L - 1)} past "
                f"L - 1 = {L - 1})"]  # fmt: skip
    if math.isclose(s * L, N):
        return []
    if rope_type == "dynamic":
        return [f"factor {s:.10g} differs from N / L = {N / L:.4g}: dynamic NTK grows the base with the sequence "
                "length n, b·(s·n/L - (s-1))^(d_r/(d_r-2)), so the factor sets how fast, not a length"]  # fmt: skip
    if s * L < N:
        return [f"factor {s:.10g} is below N / L = {N / L:.4g}: it stretches L = {L} to s·L = {s * L:.10g} positions "
                f"only, so positions from there to N = {N} fall beyond the trained range after scaling "
                "(extrapolation); use factor N / L, or a target N <= s·L"]  # fmt: skip
    return [f"factor {s:.10g} exceeds N / L = {N / L:.4g}: it scales for s·L = {s * L:.10g} positions, more than "
            f"N = {N} needs (positions compressed more than N / L compresses them)"]  # fmt: skip


def pair_wavelengths(rope_theta: float, rotary_dim: int) -> np.ndarray:
    """The wavelength (period, in positions) of each rotary pair, λ_j = 2π·b^(2j/d_r), j = 0..d_r/2 - 1.

    >>> pair_wavelengths(100.0, 4).round(2).tolist()
    [6.28, 62.83]
    """
    j = np.arange(int(rotary_dim) // 2, dtype=np.float64)
    return 2 * math.pi * float(rope_theta) ** (2 * j / int(rotary_dim))


def critical_dimension(length: int, rope_theta: float, rotary_dim: int) -> int:
    """Rotary dimensions whose period fits within ``length``: 2·#{j < d_r/2 : 2π·b^(2j/d_r) <= length}.

    The dimensions from this index on (periods longer than the length) never completed a turn within it; Liu et al.
    2024 ("Scaling Laws of RoPE-based Extrapolation", ICLR) call it the critical dimension, 2⌈(d/2)·log_b(L/2π)⌉.
    Counted exactly (no logarithm rounding at the boundary).

    >>> critical_dimension(4096, 10000.0, 128)  # Llama 2 (Liu et al. 2024: 92)
    92
    """
    return 2 * int(np.count_nonzero(pair_wavelengths(rope_theta, rotary_dim) <= int(length)))


@dataclass(frozen=True, repr=False)
class RopeScalingPlan(Displayed):
    """Config blocks for one RoPE-scaling type, each labelled with the transformers versions it is right for.

    ``config_4x`` (the newest 4.x block) and ``config_5x`` are LlamaConfig kwargs; all return fresh copies:
    transformers edits the nested dict it is given (it adds ``rope_theta``). ``effective_length`` is the length the
    critical dimension is counted for (the predicted N* when frequency information was given, else L; ``E_rule``
    says which).
    """

    rope_type: str
    L: int
    N: int
    factor: float
    rope_theta: float
    head_dim: int
    blocks: tuple[ConfigBlock, ...]
    reasoning: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    partial_rotary_factor: float = 1.0
    effective_length: int | None = None
    E_rule: str = "window"

    @property
    def rotary_dim(self) -> int:
        """d_r = int(head_dim · partial_rotary_factor)."""
        return rotary_dims(self.head_dim, self.partial_rotary_factor)

    @property
    def critical_dim(self) -> int:
        """Rotary dimensions whose period fits within the effective length (:func:`critical_dimension`)."""
        return critical_dimension(self.effective_length or self.L, self.rope_theta, self.rotary_dim)

    @property
    def critical_dim_L(self) -> int:
        """The same for the training window L."""
        return critical_dimension(self.L, self.rope_theta, self.rotary_dim)

    def _newest(self, key: str) -> dict:
        return copy.deepcopy([b for b in self.blocks if b.key == key][-1].config)

    @property
    def config_4x(self) -> dict:
        """The newest transformers 4.x block: ``rope_theta``, ``rope_scaling``, ``max_position_embeddings``."""
        return self._newest("rope_scaling")

    @property
    def config_5x(self) -> dict:
        """transformers 5.x kwargs / config.json keys: ``rope_parameters``, ``max_position_embeddings``."""
        return self._newest("rope_parameters")

    @property
    def vllm_command(self) -> str:
        """``vllm serve`` with the 5.x ``rope_parameters`` as --hf-overrides and --max-model-len N."""
        overrides = json.dumps({"rope_parameters": self.config_5x["rope_parameters"]})
        return f"vllm serve MODEL --hf-overrides '{overrides}' --max-model-len {self.N}"

    def to_dict(self) -> dict:
        """The plan as JSON-ready data."""
        return {
            "method": "rope",
            **json_fields(self, skip=("blocks",)),
            "rotary_dim": self.rotary_dim,
            "critical_dim": self.critical_dim,
            "critical_dim_L": self.critical_dim_L,
            "transformers_4x": self.config_4x,
            "transformers_5x": self.config_5x,
            "blocks": [b.to_dict() for b in self.blocks],
            "vllm": self.vllm_command,
        }

    def report(self) -> str:
        """The terminal report of one scaling type in ``freqlab plan rope``: the reasoning, the config blocks
        labelled by transformers version, and the vLLM command.
        """
        lines = [f"== {self.rope_type} (factor {self.factor:g}) ==", self.reasoning]
        lines += [f"note: {note}" for note in self.notes]
        for b in self.blocks:
            lines += shown.block(f"{b.label}:", [json.dumps(b.config)])
        lines += shown.block("vLLM:", [self.vllm_command, f"note: {VLLM_MAX_MODEL_LEN}"])
        return "\n".join(lines)

    def _display(self) -> Display:
        return shown.rope_display(self)


def _blocks(rope_type: str, L: int, N: int, s: float, theta: float, specific: dict, c4_top: dict) -> tuple:
    """The version-labelled blocks of one type (see the module docstring for the YaRN ranges)."""
    max_pos = L if rope_type == "dynamic" else N

    def four(since, until, scaling, mpe):
        return ConfigBlock(since, until, "rope_scaling",
                           {"max_position_embeddings": mpe, **c4_top, "rope_scaling": scaling})  # fmt: skip

    def five(params, mpe):
        return ConfigBlock(V5, None, "rope_parameters", {"max_position_embeddings": mpe, "rope_parameters": params})

    if rope_type == "ntk":  # no scaling block: a new base
        return (
            ConfigBlock(V4_FLOOR, V5, "rope_scaling", {"max_position_embeddings": N, **c4_top, "rope_scaling": None}),
            five({"rope_type": "default", "rope_theta": c4_top["rope_theta"]}, N),
        )
    scaling = {"rope_type": rope_type, **specific}
    # 4.x YaRN before 4.51 and 4.x LongRoPE take max_position_embeddings as the original length: no original key
    legacy = {"rope_type": rope_type, **{k: v for k, v in specific.items() if k != "original_max_position_embeddings"}}
    if rope_type == "longrope":  # before 4.51 the angles of every length are one factor's: long_factor's, as short
        once = {**legacy, "short_factor": list(legacy["long_factor"])}
        return (four(V4_FLOOR, LONGROPE_SWITCHES, once, L), four(LONGROPE_SWITCHES, V5, legacy, L),
                five({"rope_type": rope_type, "rope_theta": theta, **specific}, N))  # fmt: skip
    if rope_type != "yarn":
        return four(V4_FLOOR, V5, scaling, max_pos), five({"rope_type": rope_type, "rope_theta": theta, **specific},
                                                          max_pos)  # fmt: skip
    if not math.isclose(s * L, N):  # only max_position_embeddings = L reads as (factor s, original L) everywhere
        return (four(V4_FLOOR, V5, legacy, L),
                five({"rope_type": "yarn", "rope_theta": theta, **specific}, L))  # fmt: skip
    return (
        four(V4_FLOOR, YARN_READS_ORIGINAL, legacy, L),
        four(YARN_READS_ORIGINAL, V5, scaling, N),
        five({"rope_type": "yarn", "rope_theta": theta, **specific}, N),
    )


DEFAULT_ROPE_THETA = 10000.0  # the base of the original RoPE (Su et al.) and of Llama 1 and 2
BASE_ASSUMED = (
    f"rope_theta = {DEFAULT_ROPE_THETA:g} assumed (none given): the blocks hold the base, so give the model's own "
    "(config.json rope_theta, --rope-theta; Llama 3 500000, Qwen2 1000000) or pasting one changes it"
)


DEFAULT_HEAD_DIM = 128  # Llama 2/3, Mistral, Qwen2 7B and up


def head_dim_assumed(rope_type: str) -> str:
    """The note of a ``rope_type`` block planned without the model's head dimension (a review: LongRoPE's 64 factors
    made a head_dim-16 model fail past L in transformers, and NTK's base was off by 2% for head_dim 64).
    """
    what = (
        "one LongRoPE factor per rotary pair (lists of another length fail in transformers past L)"
        if rope_type == "longrope"
        else "NTK's raised base b·s^(d/(d-2)) (another d, another base)"
    )
    return (
        f"head_dim = {DEFAULT_HEAD_DIM} assumed (none given): the block holds {what}; give the model's own "
        "(config.json head_dim, else hidden_size / num_attention_heads; --head-dim; Qwen2-0.5B 64, Phi-3-mini 96, "
        "Gemma 256)"
    )


def plan_rope_scaling(
    L: int,
    N: int,
    rope_type: str = "linear",
    *,
    rope_theta: float | None = None,
    head_dim: int | None = None,
    factor: float | None = None,
    low_freq_factor: float = 1.0,
    high_freq_factor: float = 4.0,
    partial_rotary_factor: float = 1.0,
    attention_factor: float | None = None,
    effective_length: int | None = None,
    E_rule: str | None = None,
    positions_used: int | None = None,
) -> RopeScalingPlan:
    """Config blocks extending a window-L model to N tokens with one RoPE scaling type.

    Parameters
    ----------
    L : int
        Training window.
    N : int
        Target length.
    rope_type : str
        ``linear``, ``ntk``, ``dynamic``, ``yarn``, ``longrope`` or ``llama3`` (see the module docstring).
    rope_theta : float, optional
        RoPE base b, the model's own (``config.json``); not given, 10000 (:data:`DEFAULT_ROPE_THETA`) with a note:
        pasting a block with another model's base changes it.
    head_dim : int, optional
        Head dimension d, the model's own; not given, 128 (:data:`DEFAULT_HEAD_DIM`), said in the reasoning and, for
        ``ntk`` and ``longrope`` (whose blocks depend on it), in a note.
    factor : float, optional
        Scale factor; defaults to s = N / L.
    low_freq_factor, high_freq_factor : float
        ``llama3`` wavelength bounds.
    partial_rotary_factor : float
        Only d_r = int(d · factor) dimensions rotate; enters the NTK exponent d_r/(d_r − 2) and the blocks.
    attention_factor : float, optional
        YaRN only, written into the blocks; by default transformers uses 0.1 · ln(s) + 1.
    effective_length : int, optional
        Where the critical dimension is counted (e.g. the predicted N*), at most ``L``; ``longrope``'s ramp is counted
        there too.
    E_rule : str, optional
        Source of ``effective_length`` (default: ``given``, or ``window`` = L).
    positions_used : int, optional
        The positions the scaled model sees, 0..positions_used - 1, when fewer than N (STRING shifts distances
        before YaRN scales them: :func:`freqlab.plan.string.string_yarn`); the factor's note compares s · L with it.

    Returns
    -------
    RopeScalingPlan
        The config blocks for each transformers version (``blocks``, ``config_4x``, ``config_5x``).

    Notes
    -----
    ``linear``: position m becomes m / s; ``ntk``: b' = b · s^(d_r/(d_r − 2)); YaRN [1]_ interpolates the
    dimensions whose wavelength 2π · b^(2j/d) exceeds the window, keeps the short ones (a ramp between) and
    scales the rotary embeddings by the attention factor 0.1 · ln(s) + 1 (√(1/t) in the paper); ``longrope`` [3]_
    takes per-pair factors, here YaRN's ramp per pair at the effective length. Giraffe [2]_
    (Sec. 5.2, Table 4) measured linear scaling evaluated beyond its fine-tuned factor.

    References
    ----------
    .. [1] Peng et al., "YaRN: Efficient Context Window Extension of Large Language Models", ICLR 2024,
           arXiv:2309.00071.
    .. [2] Pal et al., "Giraffe: Adventures in Expanding Context Lengths in LLMs", 2023, arXiv:2308.10882.
    .. [3] Ding et al., "LongRoPE: Extending LLM Context Window Beyond 2 Million Tokens", ICML 2024,
           arXiv:2402.13753 (``longrope``: freqlab's factors are a search-free initialisation, not the searched
           ones; :func:`longrope_factors`).

    Examples
    --------
    >>> p = plan_rope_scaling(4096, 16384, "linear")
    >>> p.config_5x
    {'max_position_embeddings': 16384, 'rope_parameters': {'rope_type': 'linear', 'rope_theta': 10000.0, 'factor': 4.0}}
    >>> p.config_4x
    {'max_position_embeddings': 16384, 'rope_theta': 10000.0, 'rope_scaling': {'rope_type': 'linear', 'factor': 4.0}}
    >>> for block in plan_rope_scaling(4096, 16384, "yarn").blocks:
    ...     print(block.label, block.config["max_position_embeddings"])
    transformers 4.45-4.50 (rope_scaling) 4096
    transformers 4.51-4.57 (rope_scaling) 16384
    transformers 5.0+ (rope_parameters) 16384
    """
    L = check_window(L)
    N = check_window(N, "target length N")
    if rope_type not in ROPE_TYPES:
        raise FreqlabError(f"unknown RoPE scaling type {rope_type!r}; choose one of {', '.join(ROPE_TYPES)}")
    if N <= L:
        raise FreqlabError(f"target length N = {N} is not above the training window L = {L}: nothing to extend")
    s = check_factor(factor, L, N)
    dim_assumed = head_dim is None
    head_dim = DEFAULT_HEAD_DIM if head_dim is None else head_dim
    _ntk_exponent(head_dim)  # validates head_dim
    d_r = scaled_rotary_dims(rope_type, head_dim, partial_rotary_factor)
    prf = float(partial_rotary_factor)
    theta = DEFAULT_ROPE_THETA if rope_theta is None else positive_number(rope_theta, "rope_theta")
    if not 1.0 < theta < math.inf:
        raise FreqlabError(f"rope_theta must exceed 1 and be finite, got {rope_theta}")
    check_scaled_base(rope_type, theta, s, d_r, L, N)
    if effective_length is not None:
        effective_length = check_window(effective_length, "effective length")
        if effective_length > L:  # positions at or beyond L were never trained: no effective length reaches them
            raise FreqlabError(
                f"effective length E = {effective_length} exceeds the training window L = {L}: the effective length "
                "is at most L (the critical dimension is counted within the positions trained)"
            )
    E_rule = E_rule or ("given" if effective_length is not None else "window")
    if attention_factor is not None and rope_type != "yarn":
        raise FreqlabError("attention_factor is a YaRN parameter")
    if attention_factor is not None:
        attention_factor = positive_number(attention_factor, "attention_factor")  # a float in the blocks and text
    if rope_type == "llama3":  # transformers divides by both (and by their difference)
        positive_number(low_freq_factor, "low_freq_factor")
        positive_number(high_freq_factor, "high_freq_factor")
    notes: list[str] = factor_notes(s, L, N, rope_type, positions_used)
    if not math.isclose(s * L, N) and rope_type == "yarn":  # a factor other than N / L
        notes.append(
            "with a factor other than N / L every YaRN block keeps max_position_embeddings = L: transformers "
            "4.51-4.55 replace factor by max_position_embeddings / original_max_position_embeddings "
            "(huggingface/transformers#38224, fixed by #40320 in 4.56) and 4.56+ warn when they differ"
        )
    if rope_theta is None:
        notes.append(BASE_ASSUMED)
    if dim_assumed and rope_type in ("ntk", "longrope"):
        notes.append(head_dim_assumed(rope_type))
    partial = {"partial_rotary_factor": prf} if prf != 1.0 else {}
    if rope_type == "ntk":
        new_theta = ntk_aware_base(theta, s, d_r)
        blocks = _blocks("ntk", L, N, s, theta, {}, {"rope_theta": new_theta, **partial})
        if partial:
            blocks[1].config["rope_parameters"].update(partial)
        why = (
            f"NTK-aware scaling keeps positions and raises the base: b' = b · s^(d_r/(d_r-2)) = {theta:g} · "
            f"{s:.10g}^({d_r}/{d_r - 2}) = {new_theta:.6g}."
        )
    else:
        specific: dict = {"factor": s}
        if rope_type in ("yarn", "llama3", "longrope"):
            specific["original_max_position_embeddings"] = L
        if rope_type == "longrope":  # one factor per rotary pair; within L the stock angles (all 1)
            specific["short_factor"] = [1.0] * (d_r // 2)
            specific["long_factor"] = longrope_factors(s, theta, d_r, effective_length or L)
        if rope_type == "yarn" and attention_factor is not None:
            specific["attention_factor"] = float(attention_factor)
        if rope_type == "llama3":
            specific["low_freq_factor"] = float(low_freq_factor)
            specific["high_freq_factor"] = float(high_freq_factor)
            if high_freq_factor <= low_freq_factor:
                raise FreqlabError("llama3 needs high_freq_factor > low_freq_factor")
        long_factor = specific.get("long_factor", [])
        long_count, one_count = long_factor.count(s), long_factor.count(1.0)
        blocks = _blocks(rope_type, L, N, s, theta, specific, {"rope_theta": theta, **partial})
        if partial:
            for block in blocks:
                if block.key == "rope_parameters":
                    block.config["rope_parameters"].update(partial)
        # the one type whose base change needs d_r >= 4 (see scaled_rotary_dims); the texts below are all built
        dynamic_base = dynamic_ntk_base(theta, s, d_r, L, N) if rope_type == "dynamic" else math.nan
        why = {
            "linear": (
                f"Linear scaling (position interpolation) divides positions by s = "
                f"{'N/L = ' if math.isclose(s * L, N) else ''}{s:.10g}. " + giraffe_zero_shot_measurements()
            ),
            "dynamic": (
                f"Dynamic NTK leaves max_position_embeddings = L = {L}; beyond it the base grows with the sequence "
                f"length n as b·(s·n/L - (s-1))^(d_r/(d_r-2)); at n = N it is "
                f"{dynamic_base:.6g}."
            ),
            "yarn": (
                f"YaRN interpolates low frequencies by s = {s:.10g}, keeps high ones, and scales attention by "
                + (
                    f"the given attention_factor {attention_factor:g}"
                    if attention_factor is not None
                    else f"0.1·ln(s) + 1 = {yarn_attention_factor(s):.4f}"
                )
                + "; transformers 4.56+ check max_position_embeddings / original_max_position_embeddings = factor."
            ),
            "longrope": (
                f"LongRoPE factors here are a {LONGROPE_LABEL} (Ding et al., ICML 2024, arXiv:2402.13753; the "
                "searched ones ship with Phi-3's 128K models): long_factor (used past the original length L) is "
                "YaRN's by-parts ramp per rotary pair, 1/((1-γ_j)/s + γ_j) with γ_j = clip((E/λ_j - 1)/31, 0, 1), "
                f"counted against E = {effective_length or L}: {long_count} pairs whose period exceeds E get "
                f"s = {s:.10g}, {one_count} keep 1; short_factor (within L) is 1 everywhere, the stock angles, "
                "from transformers 4.51 (before, the angles of every length are computed once, at load: the "
                "4.45-4.50 block sets short_factor = long_factor, interpolated within L too; 4.48-4.50 would take "
                "stock angles past L; Phi-3's own rotary embedding switches by length there: give it the 4.51 "
                "block's lists). "
                f"transformers scales cos/sin by sqrt(1 + ln s / ln L) = {longrope_attention_factor(s, L):.4f} at "
                "every length (within L too)."
            ),
            "llama3": (
                f"Llama 3.1-style scaling divides frequencies with wavelength > L/low_freq_factor by s = {s:.10g}, "
                "keeps those with wavelength < L/high_freq_factor and blends in between (Llama 3.1 itself: factor 8, "
                "original 8192, max_position_embeddings 131072 after long-context training)."
            ),
        }[rope_type]
    if rope_type == "linear" and s > LARGE_LINEAR_FACTOR:
        reach = cast(int, table4_reach(16, 16))  # 16000 (see its doctest): never None
        first_zero = next(n for n in TABLE4_CONTEXT_LENGTHS if n > reach)
        notes.append(
            f"factor {s:.10g} > {LARGE_LINEAR_FACTOR:g}: Giraffe fine-tuned LLaMA-13B (base window 2048) at linear "
            f"factor 16 and measured non-zero LongChat-Lines accuracy only up to {reach} tokens (0 from "
            f"{first_zero}), where it 'naively would expect reasonable performance up to roughly 32000' "
            "(Sec. 5.1, Table 1)"
        )
    if rope_type == "yarn" and attention_factor is not None:
        notes.append(VLLM_ATTENTION_FACTOR)
    if rope_type == "longrope":
        notes.append(f"longrope: {LONGROPE_LABEL}; run LongRoPE's search (microsoft/LongRoPE) for searched ones")
    E = effective_length or L
    crit, crit_L = critical_dimension(E, theta, d_r), critical_dimension(L, theta, d_r)
    rotary = f"{d_r} of {head_dim} dimensions rotate (partial_rotary_factor {prf:g}); " if prf != 1.0 else ""
    critical = f" Critical dimension: {rotary}the first {crit} rotary dimensions have periods 2π·b^(2j/d_r) within " + (
        f"E = {E} tokens ({E_rule}), the other {d_r - crit} never completed a turn within it "
        f"(counted for L = {L}: {crit_L})."
        if effective_length is not None
        else f"L = {L}, the other {d_r - crit} never completed a turn within it "
        f"({'no effective length given' if E_rule == 'window' else E_rule})."
    )
    reasoning = (
        f"Extend L = {L} to N = {N} (s = {s:.10g}, head_dim {head_dim}{' assumed' if dim_assumed else ''}, "
        f"rope_theta {theta:g}). " + why + critical
    )
    return RopeScalingPlan(
        rope_type, L, N, s, theta, int(head_dim), blocks, reasoning, tuple(notes), prf, effective_length, E_rule
    )


def giraffe_zero_shot_measurements() -> str:
    """What Giraffe measured for zero-shot linear scaling (Sec. 5.2, Table 4), in words, and nothing more.

    >>> "fine-tuned at factor 4: 7100 at eval factor 4, 16000 at eval factor 8" in giraffe_zero_shot_measurements()
    True
    """

    def reach(train: int, evaluate: int) -> str:
        n = table4_reach(train, evaluate)
        return f"{'0 at all lengths' if n is None else n} at eval factor {evaluate}"

    rows = [
        f"fine-tuned at factor {train}{' (the base model)' if train == 1 else ''}: "
        + ", ".join(reach(train, k * train) for k in (1, 2, 4))
        for train in (1, 4, 16)
    ]
    return (
        "Giraffe (Sec. 5.2, Table 4) evaluated linear scaling zero-shot at a larger factor than the one fine-tuned "
        "with, on LLaMA-13B (base window 2048, fine-tuned on 4096-token samples), LongChat-Lines, context lengths "
        f"{TABLE4_CONTEXT_LENGTHS[0]}..{TABLE4_CONTEXT_LENGTHS[-1]}. Largest length with non-zero accuracy: "
        + "; ".join(rows)
        + ". In the paper's words, 2x 'does double the usable context length, at an accuracy cost, for train "
        "lengths 1 and 4 (for train length 16, it does not)'. These are measurements on that model only; freqlab "
        "does not project them to other windows or factors."
    )


def compare_rope_scalings(L: int, N: int, **kwargs) -> list[RopeScalingPlan]:
    """One plan per type in ROPE_TYPES, the same window and target: the methods side by side.

    Parameters
    ----------
    L : int
        Training window (the model's max_position_embeddings).
    N : int
        Target length.
    **kwargs
        As for :func:`plan_rope_scaling`.

    Returns
    -------
    list of RopeScalingPlan
        One plan per ``rope_type``, in ``ROPE_TYPES`` order.

    References
    ----------
    .. [1] Peng et al., "YaRN: Efficient Context Window Extension of Large Language Models", ICLR 2024,
           arXiv:2309.00071.
    """
    return [plan_rope_scaling(L, N, t, **kwargs) for t in ROPE_TYPES]


# the old name (0.1) in the module that defined it, kept for one release: the look-up warns (freqlab.deprecation)
__getattr__ = renamed_attributes(
    "freqlab.plan.rope_scaling", {"plan_rope_scalings": "freqlab.plan.rope_scaling.compare_rope_scalings"}
)
