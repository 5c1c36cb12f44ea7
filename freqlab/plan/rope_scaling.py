"""RoPE scaling for extension beyond the training window L, as Hugging Face config blocks.

Types (s = N / L, the target length over the training window; d = head dimension; b = rope_theta):

``linear`` (position interpolation, PI)
    Positions are divided by s. Giraffe (seed 004, Sec. 5.2): a model fine-tuned at factor x can be
    evaluated zero-shot at factor 2x, about doubling its usable context (with some accuracy loss; it did
    not hold at x = 16, and > 2x breaks).
``ntk`` (NTK-aware, static)
    No scaling block: the base becomes b' = b · s^(d / (d - 2)).
``dynamic`` (dynamic NTK)
    Hugging Face recomputes the base for a sequence of n > L tokens as b · (s·n/L - (s - 1))^(d/(d-2));
    ``max_position_embeddings`` must stay L, the length where scaling starts.
``yarn``
    NTK-by-parts interpolation with attention temperature 0.1 ln s + 1 (Peng et al. 2023).
``llama3``
    Llama 3.1's wavelength-dependent interpolation (low_freq_factor 1, high_freq_factor 4 by default).

Two config conventions are emitted:

* transformers 4.x (``rope_scaling``, 4.45-4.57 validators): ``{"rope_theta": b, "max_position_embeddings": ...,
  "rope_scaling": {"rope_type": ..., "factor": s, ...}}``; ``original_max_position_embeddings`` only where
  the type takes it (yarn, llama3): 4.x's linear validator warns about unknown keys.
* transformers 5.x (``rope_parameters``, which holds ``rope_theta``): ``{"max_position_embeddings": ...,
  "rope_parameters": {"rope_type": ..., "rope_theta": b, "factor": s, ...}}``; static NTK is
  ``rope_type: "default"`` with the new theta.

``max_position_embeddings`` is N for linear, ntk, yarn (where 5.x checks N / original == factor) and llama3,
and L for dynamic.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

from freqlab.errors import FreqlabError
from freqlab.plan.well_trained import check_window, json_fields

ROPE_TYPES: tuple[str, ...] = ("linear", "ntk", "dynamic", "yarn", "llama3")
GIRAFFE_ZERO_SHOT_MULTIPLIER: int = 2  # Giraffe Sec. 5.2: fine-tuned at x, zero-shot up to about 2x


def _ntk_exponent(head_dim: int) -> float:
    """d / (d - 2), the exponent of the NTK-aware base change; needs an even d >= 4."""
    if isinstance(head_dim, bool) or int(head_dim) != head_dim or head_dim < 4 or head_dim % 2:
        raise FreqlabError(f"head_dim must be an even integer >= 4, got {head_dim!r}")
    return head_dim / (head_dim - 2)


def ntk_aware_base(base: float, factor: float, head_dim: int) -> float:
    """NTK-aware base b' = b · s^(d/(d-2)).

    >>> round(ntk_aware_base(10000.0, 4.0, 128))
    40890
    """
    return float(base) * float(factor) ** _ntk_exponent(head_dim)


def dynamic_ntk_base(base: float, factor: float, head_dim: int, L: int, n: int) -> float:
    """Hugging Face dynamic NTK base for a sequence of n tokens: b · (s·n/L - (s-1))^(d/(d-2)) for n > L
    (unchanged for n <= L).

    >>> round(dynamic_ntk_base(10000.0, 4.0, 128, 4096, 16384))  # b · 13^(128/126)
    135402
    """
    n = max(int(n), int(L))
    return float(base) * (float(factor) * n / L - (float(factor) - 1)) ** _ntk_exponent(head_dim)


def yarn_attention_factor(factor: float) -> float:
    """YaRN's default attention temperature 0.1 · ln(s) + 1 (used by transformers when unset).

    >>> round(yarn_attention_factor(4.0), 4)
    1.1386
    """
    return 0.1 * math.log(float(factor)) + 1.0


@dataclass(frozen=True)
class RopeScalingPlan:
    """Config blocks for one RoPE-scaling type; ``config_4x`` and ``config_5x`` are LlamaConfig kwargs.

    Both return fresh copies: transformers edits the nested dict it is given (it adds ``rope_theta``).
    """

    rope_type: str
    L: int
    N: int
    factor: float
    rope_theta: float
    head_dim: int
    block_4x: dict
    block_5x: dict
    reasoning: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def config_4x(self) -> dict:
        """transformers 4.x kwargs / config.json keys: ``rope_theta``, ``rope_scaling``, ``max_position_embeddings``."""
        return copy.deepcopy(self.block_4x)

    @property
    def config_5x(self) -> dict:
        """transformers 5.x kwargs / config.json keys: ``rope_parameters``, ``max_position_embeddings``."""
        return copy.deepcopy(self.block_5x)

    def to_dict(self) -> dict:
        return {
            "method": "rope",
            **json_fields(self, skip=("block_4x", "block_5x")),
            "transformers_4x": self.config_4x,
            "transformers_5x": self.config_5x,
        }


def plan_rope_scaling(
    L: int,
    N: int,
    rope_type: str = "linear",
    *,
    rope_theta: float = 10000.0,
    head_dim: int = 128,
    factor: float | None = None,
    low_freq_factor: float = 1.0,
    high_freq_factor: float = 4.0,
) -> RopeScalingPlan:
    """Config blocks extending a window-L model to N tokens with one scaling type.

    ``factor`` defaults to s = N / L.

    >>> p = plan_rope_scaling(4096, 16384, "linear")
    >>> p.config_5x
    {'max_position_embeddings': 16384, 'rope_parameters': {'rope_type': 'linear', 'rope_theta': 10000.0, 'factor': 4.0}}
    >>> p.config_4x
    {'max_position_embeddings': 16384, 'rope_theta': 10000.0, 'rope_scaling': {'rope_type': 'linear', 'factor': 4.0}}
    """
    L = check_window(L)
    N = check_window(N, "target length N")
    if rope_type not in ROPE_TYPES:
        raise FreqlabError(f"unknown RoPE scaling type {rope_type!r}; choose one of {', '.join(ROPE_TYPES)}")
    if N <= L:
        raise FreqlabError(f"target length N = {N} is not above the training window L = {L}: nothing to extend")
    s = float(N / L if factor is None else factor)
    if s <= 1.0:
        raise FreqlabError(f"the scaling factor must exceed 1, got {s}")
    _ntk_exponent(head_dim)  # validates head_dim
    theta = float(rope_theta)
    if theta <= 1.0:
        raise FreqlabError(f"rope_theta must exceed 1, got {rope_theta}")
    notes: list[str] = []
    if factor is not None and not math.isclose(s * L, N):
        notes.append(f"factor {s} differs from N / L = {N / L:.4g}")
    if rope_type == "ntk":
        new_theta = ntk_aware_base(theta, s, head_dim)
        c4 = {"max_position_embeddings": N, "rope_theta": new_theta, "rope_scaling": None}
        c5 = {"max_position_embeddings": N, "rope_parameters": {"rope_type": "default", "rope_theta": new_theta}}
        why = (
            f"NTK-aware scaling keeps positions and raises the base: b' = b · s^(d/(d-2)) = {theta:g} · "
            f"{s:g}^({head_dim}/{head_dim - 2}) = {new_theta:.6g}."
        )
    else:
        specific: dict = {"factor": s}
        if rope_type in ("yarn", "llama3"):
            specific["original_max_position_embeddings"] = L
        if rope_type == "llama3":
            specific["low_freq_factor"] = float(low_freq_factor)
            specific["high_freq_factor"] = float(high_freq_factor)
            if high_freq_factor <= low_freq_factor:
                raise FreqlabError("llama3 needs high_freq_factor > low_freq_factor")
        max_pos = L if rope_type == "dynamic" else N
        zero_shot = GIRAFFE_ZERO_SHOT_MULTIPLIER
        c4 = {
            "max_position_embeddings": max_pos,
            "rope_theta": theta,
            "rope_scaling": {"rope_type": rope_type, **specific},
        }
        c5 = {
            "max_position_embeddings": max_pos,
            "rope_parameters": {"rope_type": rope_type, "rope_theta": theta, **specific},
        }
        why = {
            "linear": (
                f"Linear scaling (position interpolation) divides positions by s = N/L = {s:g}. Giraffe "
                f"(Sec. 5.2): after fine-tuning at factor {s:g}, evaluating zero-shot at factor {zero_shot * s:g} "
                f"reaches about {zero_shot * N} tokens with some accuracy loss (not observed at factor 16); "
                f"conversely a model fine-tuned at factor {s / zero_shot:g} may reach N zero-shot at this factor."
            ),
            "dynamic": (
                f"Dynamic NTK leaves max_position_embeddings = L = {L}; beyond it the base grows with the sequence "
                f"length n as b·(s·n/L - (s-1))^(d/(d-2)); at n = N it is "
                f"{dynamic_ntk_base(theta, s, head_dim, L, N):.6g}."
            ),
            "yarn": (
                f"YaRN interpolates low frequencies by s = {s:g}, keeps high ones, and scales attention by "
                f"0.1·ln(s) + 1 = {yarn_attention_factor(s):.4f}; transformers 5.x checks "
                f"max_position_embeddings / original_max_position_embeddings = factor."
            ),
            "llama3": (
                f"Llama 3.1-style scaling divides frequencies with wavelength > L/low_freq_factor by s = {s:g}, keeps "
                "those with wavelength < L/high_freq_factor and blends in between (Llama 3.1 itself: factor 8, "
                "original 8192, max_position_embeddings 131072 after long-context training)."
            ),
        }[rope_type]
    if s > 8:
        notes.append(f"factor {s:g} > 8: Giraffe saw linear scaling degrade at factor 16 even after fine-tuning")
    reasoning = f"Extend L = {L} to N = {N} (s = {s:g}, head_dim {head_dim}, rope_theta {theta:g}). " + why
    return RopeScalingPlan(rope_type, L, N, s, theta, head_dim, c4, c5, reasoning, tuple(notes))


def plan_rope_scalings(L: int, N: int, **kwargs) -> list[RopeScalingPlan]:
    """One plan per type in ROPE_TYPES."""
    return [plan_rope_scaling(L, N, t, **kwargs) for t in ROPE_TYPES]
