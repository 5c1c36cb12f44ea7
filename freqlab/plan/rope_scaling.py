"""RoPE scaling for extension beyond the training window L, as Hugging Face config blocks.

Types (s = N / L, the target length over the training window; d = head dimension; b = rope_theta):

``linear`` (position interpolation, PI)
    Positions are divided by s. Giraffe (seed 004, Sec. 5.2, Table 4) measured evaluating zero-shot at a
    larger factor than the one fine-tuned with, on LLaMA-13B (base window 2048) and LongChat-Lines: the
    largest context length with non-zero accuracy went from 7100 (eval 4) to 16000 (eval 8) when fine-tuned
    at 4, from none (eval 1) to 4200 (eval 2) for the base model, and stayed 16000 (eval 16 and 32) when
    fine-tuned at 16; evaluating at 4x the training factor gave 0 everywhere. The plan quotes these numbers
    (:data:`freqlab.plan.giraffe.TABLE4_ACCURACY`) and projects nothing from them.
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

from freqlab.display import Display, Displayed
from freqlab.errors import FreqlabError
from freqlab.plan import display as shown
from freqlab.plan.giraffe import TABLE4_CONTEXT_LENGTHS, table4_reach
from freqlab.plan.well_trained import check_window, json_fields

ROPE_TYPES: tuple[str, ...] = ("linear", "ntk", "dynamic", "yarn", "llama3")
LARGE_LINEAR_FACTOR: float = 8  # above this, quote Giraffe's factor-16 result (Sec. 5.1, Table 1)


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


@dataclass(frozen=True, repr=False)
class RopeScalingPlan(Displayed):
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

    def _display(self) -> Display:
        return shown.rope_display(self)


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
    if not s > 1.0 or math.isinf(s):
        raise FreqlabError(f"the scaling factor must exceed 1 and be finite, got {s}")
    _ntk_exponent(head_dim)  # validates head_dim
    theta = float(rope_theta)
    if not 1.0 < theta < math.inf:
        raise FreqlabError(f"rope_theta must exceed 1 and be finite, got {rope_theta}")
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
                f"Linear scaling (position interpolation) divides positions by s = N/L = {s:g}. "
                + giraffe_zero_shot_measurements()
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
    if rope_type == "linear" and s > LARGE_LINEAR_FACTOR:
        reach = table4_reach(16, 16)
        first_zero = next(n for n in TABLE4_CONTEXT_LENGTHS if n > reach)
        notes.append(
            f"factor {s:g} > {LARGE_LINEAR_FACTOR:g}: Giraffe fine-tuned LLaMA-13B (base window 2048) at linear "
            f"factor 16 and measured non-zero LongChat-Lines accuracy only up to {reach} tokens (0 from "
            f"{first_zero}), where it 'naively would expect reasonable performance up to roughly 32000' "
            "(Sec. 5.1, Table 1)"
        )
    reasoning = f"Extend L = {L} to N = {N} (s = {s:g}, head_dim {head_dim}, rope_theta {theta:g}). " + why
    return RopeScalingPlan(rope_type, L, N, s, theta, head_dim, c4, c5, reasoning, tuple(notes))


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


def plan_rope_scalings(L: int, N: int, **kwargs) -> list[RopeScalingPlan]:
    """One plan per type in ROPE_TYPES."""
    return [plan_rope_scaling(L, N, t, **kwargs) for t in ROPE_TYPES]
