"""Giraffe's modified RoPE bases (Pal et al. 2023, arXiv:2308.10882, Sec. 4): power basis (Eq. 2), truncated
basis (Eq. 3).

RoPE's basis (Eq. 1) is θ_i = b^(-2(i-1)/d) for i = 1..d/2 (b = 10000 in the paper). Both functions return
the modified θ* vector (float64, length d/2), index 0 holding i = 1.
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from freqlab.arrays import real_number
from freqlab.errors import FreqlabError, brief
from freqlab.plan.waveform import check_head_dim

# Table 4 (Sec. 5.2), verbatim: LongChat-Lines accuracy of LLaMA-13B (base window 2048) fine-tuned on 4096-token
# samples with linear scale "train" (or the truncated basis at scale 1) and evaluated with linear scale "eval".
TABLE4_CONTEXT_LENGTHS: tuple[int, ...] = (2500, 3600, 4200, 4800, 7100, 9400, 11800, 14000, 16000, 17500, 20000, 22000)
TABLE4_ACCURACY: dict[tuple[str, int, int], tuple[float, ...]] = {  # (basis, train scale, eval scale) -> column
    ("linear", 1, 1): (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ("linear", 1, 2): (0.32, 0.3, 0.18, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ("linear", 1, 4): (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ("linear", 4, 4): (0.88, 0.8, 0.86, 0.86, 0.64, 0, 0, 0, 0, 0, 0, 0),
    ("linear", 4, 8): (0.64, 0.58, 0.62, 0.62, 0.38, 0.32, 0.30, 0.1, 0.12, 0, 0, 0),
    ("linear", 4, 16): (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ("linear", 16, 16): (0.64, 0.42, 0.56, 0.62, 0.4, 0.22, 0.14, 0.12, 0.1, 0, 0, 0),
    ("linear", 16, 32): (0.24, 0.26, 0.12, 0.22, 0.12, 0.12, 0.1, 0.04, 0.02, 0, 0, 0),
    ("linear", 16, 64): (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ("truncated", 1, 1): (0.42, 0.26, 0.18, 0.14, 0.04, 0, 0, 0, 0, 0, 0, 0),
    ("truncated", 1, 2): (0.58, 0.44, 0.28, 0.26, 0.04, 0.04, 0.04, 0, 0, 0, 0, 0),
    ("truncated", 1, 4): (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
}


def table4_reach(train: int, evaluate: int, basis: str = "linear") -> int | None:
    """Largest context length of Giraffe's Table 4 with non-zero accuracy (None: zero at every length,
    from 2500 on) for a model fine-tuned at linear scale ``train`` and evaluated at scale ``evaluate``.

    >>> table4_reach(4, 4), table4_reach(4, 8), table4_reach(16, 16), table4_reach(16, 32), table4_reach(1, 1)
    (7100, 16000, 16000, 16000, None)
    """
    key = (basis, int(train), int(evaluate))
    if key not in TABLE4_ACCURACY:
        raise FreqlabError(f"Giraffe's Table 4 has no column {key}; it has {sorted(TABLE4_ACCURACY)}")
    reached = [n for n, acc in zip(TABLE4_CONTEXT_LENGTHS, TABLE4_ACCURACY[key], strict=True) if acc > 0]
    return max(reached) if reached else None


# Table 1 settings for LLaMA fine-tuned at 4096 tokens (2048 is the base model's window)
TRUNCATED_A: float = (1 / 8) * (2 * math.pi / 2048)
TRUNCATED_B: float = 2 * math.pi / 2048
TRUNCATED_RHO: float = (1 / 16) * (2 * math.pi / 2048)
POWER_K: float = 0.5


def rope_basis(head_dim: int, base: float = 10000.0) -> np.ndarray:
    """Eq. 1: θ_i = base^(-2(i-1)/d), i = 1..d/2.

    Parameters
    ----------
    head_dim : int
        Head dimension d.
    base : float
        RoPE base.

    Returns
    -------
    numpy.ndarray
        float64 θ_i, i = 1..d/2.

    References
    ----------
    .. [1] Pal et al., "Giraffe: Adventures in Expanding Context Lengths in LLMs", 2023, arXiv:2308.10882.

    Examples
    --------
    >>> rope_basis(4, 100.0).tolist()
    [1.0, 0.1]
    """
    d = check_head_dim(head_dim)
    base = check_base(base)  # NaN made every θ NaN, unsaid (a review)
    i = np.arange(1, d // 2 + 1, dtype=np.float64)
    return base ** (-2.0 * (i - 1) / d)


def check_base(base) -> float:
    """The RoPE base b as a float: a finite number above 1 (a FreqlabError otherwise), for every plan that uses one."""
    return _real(base, "the RoPE base", above=1.0)


def _real(value, what: str, *, above: float | None = None) -> float:
    """``value`` as a finite float, above ``above`` where given, else at least 0; a FreqlabError naming ``what``."""
    number = real_number(value)
    inside = number is not None and math.isfinite(number) and (number >= 0 if above is None else number > above)
    if not inside:
        kind = "non-negative finite number" if above is None else f"finite number above {above:g}"
        raise FreqlabError(f"{what} must be a {kind}, got {brief(value)}")
    return cast(float, number)


def power_basis(head_dim: int, k: float = POWER_K, base: float = 10000.0) -> np.ndarray:
    """Eq. 2: θ*_i = θ_i · (1 - 2i/d)^k, i = 1..d/2. High frequencies (small i) change least; the last
    entry (i = d/2) becomes 0 for k > 0.

    Parameters
    ----------
    head_dim : int
        Head dimension d.
    k : float
        Exponent of the power scaling.
    base : float
        RoPE base.

    Returns
    -------
    numpy.ndarray
        float64 θ*_i, i = 1..d/2.

    References
    ----------
    .. [1] Pal et al., "Giraffe: Adventures in Expanding Context Lengths in LLMs", 2023, arXiv:2308.10882.

    Examples
    --------
    >>> power_basis(4, 1.0, 100.0).tolist()  # θ = [1, 0.1], factors (1 - 2/4), (1 - 4/4)
    [0.5, 0.0]
    """
    d = check_head_dim(head_dim)
    k = _real(k, "the power k")
    i = np.arange(1, d // 2 + 1, dtype=np.float64)
    return rope_basis(d, base) * (1.0 - 2.0 * i / d) ** k


def truncated_basis(
    head_dim: int,
    a: float = TRUNCATED_A,
    b: float = TRUNCATED_B,
    rho: float = TRUNCATED_RHO,
    base: float = 10000.0,
) -> np.ndarray:
    """Eq. 3: keep θ_i >= b, set a < θ_i < b to the fixed frequency ρ, and θ_i <= a to 0.

    (The paper prints the last case as θ*_i <= a; it means θ_i <= a.) Defaults are Table 1's
    a = (1/8)(2π/2048), b = 2π/2048, ρ = (1/16)(2π/2048).

    Parameters
    ----------
    head_dim : int
        Head dimension d.
    a, b : float
        Lower and upper cut-offs: θ_i >= b is kept, θ_i <= a is set to 0.
    rho : float
        The fixed frequency ρ of the band a < θ_i < b.
    base : float
        RoPE base.

    Returns
    -------
    numpy.ndarray
        float64 θ*_i, i = 1..d/2.

    References
    ----------
    .. [1] Pal et al., "Giraffe: Adventures in Expanding Context Lengths in LLMs", 2023, arXiv:2308.10882.

    Examples
    --------
    >>> truncated_basis(4, a=0.05, b=0.5, rho=0.2, base=100.0).tolist()  # θ = [1, 0.1]
    [1.0, 0.2]
    """
    d = check_head_dim(head_dim)
    a, b = _real(a, "the cut-off a"), _real(b, "the cut-off b")
    if not a < b:
        raise FreqlabError(f"the truncated basis needs 0 <= a < b, got a = {a}, b = {b}")
    rho = _real(rho, "rho")
    theta = rope_basis(d, base)
    return np.where(theta >= b, theta, np.where(theta > a, rho, 0.0))
