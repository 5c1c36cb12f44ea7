"""Load RoPE-scaling config blocks into the installed transformers and say what it makes of them.

Runs in-process (the installed transformers 5.x) and, as a script, in the test-only virtual environment that holds the
oldest transformers pyproject allows (4.45): ``python rope_probe.py < blocks.json`` prints the findings as JSON. It
imports only transformers and numpy (no freqlab, no torch).

For each block: the warnings transformers emits while ``LlamaConfig(**config)`` validates it, for YaRN what the
rotary embedding is really computed from, and for LongRoPE what ``_compute_longrope_parameters`` returns at N
tokens. Without torch, transformers' own ``_compute_yarn_parameters`` (and ``_compute_longrope_parameters``) runs on a
numpy stand-in for the few torch calls it makes; the YaRN inverse frequencies and attention factor are then
matched against probes built with no ``original_max_position_embeddings`` key, which every version reads the same way
(original length = ``max_position_embeddings``, ``factor`` as given): the block's effective original length and
factor are those of the probe it equals.
"""

from __future__ import annotations

import json
import logging
import sys
import types
import warnings

import numpy as np


class _Array(np.ndarray):
    """The torch.Tensor methods _compute_yarn_parameters calls, on numpy."""

    def float(self):
        return self.astype(np.float32).view(_Array)

    def to(self, *args, dtype=None, **kwargs):
        return self if dtype is None else self.astype(dtype).view(_Array)


def _torch_stand_in() -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.float = torch.float32 = np.float32
    torch.int64 = np.int64
    torch.int = np.int32
    torch.Tensor = _Array
    torch.device = str

    def arange(*args, dtype=None, device=None):
        return np.arange(*args, dtype=dtype or np.int64).view(_Array)

    def tensor(data, dtype=None, device=None):
        return np.asarray(data, dtype=dtype).view(_Array)

    torch.arange = arange
    torch.tensor = tensor
    torch.clamp = lambda x, lo, hi: np.clip(x, lo, hi).view(_Array)
    return torch


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _config_class(config: dict):
    """``LlamaConfig``; in 4.x, a block with a top-level ``partial_rotary_factor`` goes to ``PhiConfig`` (head_dim
    128 as LlamaConfig's): 4.x's LlamaConfig validates ``rope_scaling`` before it stores the factor (and rotates whole
    heads), so a per-dimension list (longrope) would be checked against the whole head; PhiConfig, a partial-rotary
    model, stores it first."""
    import transformers

    if int(transformers.__version__.split(".")[0]) < 5 and "partial_rotary_factor" in config:
        return lambda **kwargs: transformers.PhiConfig(**{"hidden_size": 4096, "num_attention_heads": 32, **kwargs})
    return transformers.LlamaConfig


def load(config: dict):
    """``LlamaConfig(**config)`` (see :func:`_config_class`) and every warning (Python or transformers' logger) it
    raised."""
    handler = _Warnings()
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loaded = _config_class(config)(**json.loads(json.dumps(config)))  # a copy: transformers edits it
    finally:
        logger.removeHandler(handler)
    return loaded, [str(w.message) for w in caught] + handler.messages


def _yarn(config) -> tuple[list[float], float]:
    from transformers import modeling_rope_utils

    modeling_rope_utils.torch = _torch_stand_in()
    inv_freq, attention = modeling_rope_utils._compute_yarn_parameters(config, None)
    return np.asarray(inv_freq, dtype=np.float64).tolist(), float(attention)


def longrope(config, seq_len: int) -> dict:
    """What transformers' own ``_compute_longrope_parameters`` computes for a sequence of ``seq_len`` tokens: the
    inverse frequencies (from long_factor past the original length) and the attention factor."""
    from transformers import modeling_rope_utils

    modeling_rope_utils.torch = _torch_stand_in()
    inv_freq, attention = modeling_rope_utils._compute_longrope_parameters(config, None, seq_len=seq_len)
    return {"inv_freq": np.asarray(inv_freq, dtype=np.float64).tolist(), "attention_factor": float(attention)}


def _params(config) -> dict:
    """The rope dict this version computes from: 4.x ``rope_scaling`` (a ``rope_parameters`` key given to 4.x is
    stored as an unused attribute), 5.x ``rope_parameters``."""
    import transformers

    if int(transformers.__version__.split(".")[0]) < 5:
        return dict(config.rope_scaling or {})
    return dict(config.rope_parameters or {})


def effective_yarn(config, lengths: list[int], factors: list[float]) -> dict | None:
    """The (original length, factor) among the candidates whose probe computes exactly what ``config`` does."""
    inv_freq, attention = _yarn(config)
    params = _params(config)
    theta = params.get("rope_theta", getattr(config, "rope_theta", None))
    explicit = params.get("attention_factor")
    partial = params.get("partial_rotary_factor", getattr(config, "partial_rotary_factor", None))
    for original in lengths:
        for factor in factors:
            scaling = {"rope_type": "yarn", "factor": float(factor)}
            if explicit is not None:
                scaling["attention_factor"] = explicit
            kwargs = {"max_position_embeddings": original, "rope_theta": theta, "rope_scaling": scaling}
            if partial is not None:
                kwargs["partial_rotary_factor"] = partial
            probe, _ = load(kwargs)
            if _yarn(probe) == (inv_freq, attention):
                return {"original": original, "factor": factor, "attention_factor": attention}
    return None


def probe(blocks: list[dict]) -> list[dict]:
    """For each ``{"config": ..., "L": ..., "N": ..., "factor": ...}``: warnings, the kept rope dict, and for YaRN
    the effective (original length, factor), for LongRoPE the inverse frequencies and attention factor at N tokens."""
    out = []
    for block in blocks:
        config, messages = load(block["config"])
        params = _params(config)
        found = None
        if params.get("rope_type", params.get("type")) == "yarn":
            found = effective_yarn(config, [block["L"], block["N"]], sorted({block["factor"], block["N"] / block["L"]}))
        computed = longrope(config, block["N"]) if params.get("rope_type") == "longrope" else None
        out.append({"warnings": messages, "rope": params, "yarn": found, "longrope": computed,
                    "max_position_embeddings": config.max_position_embeddings})  # fmt: skip
    return out


if __name__ == "__main__":
    import transformers

    json.dump({"transformers": transformers.__version__, "blocks": probe(json.load(sys.stdin))}, sys.stdout)
