"""Tiny random rotary models built from configs (no download) and an obviously-correct reference attention.

The reference forms every score from the *un-rotated* query and key and an explicit position matrix P:
score(m, n) = (R(P[m, n]) q_m) · k_n, R(p) the rotation of each dimension pair by p · theta_i. It knows nothing of
freqlab.apply's re-rotation; with P = m - n it is the stock model (checked in the tests).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
import transformers
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, eager_mask
from transformers.modeling_outputs import CausalLMOutputWithPast

REFERENCE = "freqlab_test_reference"
L = 64  # max_position_embeddings of every tiny model
MODEL_TYPES = (
    "llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "olmo2", "granite", "starcoder2", "phi3",
)  # fmt: skip
SLIDING = 24  # sliding window of the models that have one (Mistral, Gemma 2/3): exercised at the test lengths
_EXTRA = {
    "mistral": {"sliding_window": SLIDING},
    "gemma2": {"sliding_window": SLIDING, "layer_types": ["sliding_attention", "full_attention"]},
    "gemma3_text": {"sliding_window": SLIDING, "layer_types": ["sliding_attention", "full_attention"]},
    "phi3": {"pad_token_id": None},  # its default, 32000, is past the tiny vocabulary
}
_POSITIONS: dict[str, np.ndarray] = {}  # the position matrix the reference uses
#: The KV cache's name, in a forward's arguments and in its output: ``cache`` from transformers 5.24 on (which
#: deprecates ``past_key_values``), ``past_key_values`` before. Before 5.24 a ``cache=`` argument is no error: it
#: falls into the forward's ``**kwargs`` unread, and the step runs on a new, empty cache (other logits).
CACHE = "cache" if "cache" in {f.name for f in dataclasses.fields(CausalLMOutputWithPast)} else "past_key_values"


def seeded(seed: int) -> torch.Generator:
    """A generator on torch's default device (the GPU check sets it: tests/apply/conftest.py), seeded."""
    return torch.Generator(device=torch.get_default_device()).manual_seed(seed)


def cache_of(output) -> transformers.Cache:
    """The KV cache a forward returned (``output.cache``, or ``output.past_key_values`` before transformers 5.24)."""
    return getattr(output, CACHE)


def decoded_with_cache(model: torch.nn.Module, ids: torch.Tensor, prompt: int) -> torch.Tensor:
    """Next-token logits of the positions prompt - 1 .. len - 1: the prompt in one call, then one token per call
    on the KV cache (what ``generate`` does). (B, len - prompt + 1, vocab).
    """
    with torch.no_grad():
        out = model(ids[:, :prompt], use_cache=True)
        cache, steps = cache_of(out), [out.logits[:, -1]]
        for t in range(prompt, ids.shape[1]):
            out = model(ids[:, t : t + 1], **{CACHE: cache}, use_cache=True)
            steps.append(out.logits[:, -1])
    return torch.stack(steps, 1)


def tiny_model(
    model_type: str, seed: int = 0, *, vocab_size: int = 101, max_positions: int = L, **config_options
) -> torch.nn.Module:
    """A 2-layer float64 causal LM of ``model_type`` with random weights (GQA: 4 query heads, 2 key heads);
    ``config_options``: more of its config's settings.
    """
    config = transformers.AutoConfig.for_model(
        model_type,
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=max_positions,
        attn_implementation="eager" if model_type == "gemma2" else "sdpa",
        **{**_EXTRA.get(model_type, {}), **config_options},
    )
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float64).eval()
    with torch.no_grad():  # random (not zero) norms and biases, so every part of the layer matters
        for name, param in model.named_parameters():
            if "norm" in name or name.endswith("bias"):
                param.copy_(torch.rand_like(param) * 0.5 + 0.75 if "norm" in name else torch.randn_like(param) * 0.1)
    return model


def left_padded(rows: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Left-padded batch, its attention mask and the position ids generate() computes (cumsum - 1, pads at 1)."""
    width = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r) :], mask[i, width - len(r) :] = r, 1
    positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
    return ids, mask, positions


def rotary_of(model) -> torch.nn.Module:
    return next(m for m in model.modules() if type(m).__name__.endswith("RotaryEmbedding"))


def _inv_freq(rotary, layer_type: str | None) -> torch.Tensor:
    return getattr(rotary, f"{layer_type}_inv_freq", None) if layer_type else None


def exact_rope(model) -> None:
    """Make the model's rotary tables float64 (transformers computes them in float32), so that comparisons can be
    exact to float64 rounding; cos and sin come from the same inverse frequencies and attention scaling."""

    def hook(module, args, kwargs, output):
        x, position_ids = args[0], args[1] if len(args) > 1 else kwargs["position_ids"]
        layer_type = args[2] if len(args) > 2 else kwargs.get("layer_type")
        inv = _inv_freq(module, layer_type)
        inv = module.inv_freq if inv is None else inv
        scale = getattr(module, f"{layer_type}_attention_scaling", None) if layer_type else None
        scale = module.attention_scaling if scale is None else scale
        angle = position_ids[..., None].double() * inv.double()
        angle = torch.cat((angle, angle), dim=-1)
        return (angle.cos() * scale).to(x.dtype), (angle.sin() * scale).to(x.dtype)

    rotary_of(model).register_forward_hook(hook, with_kwargs=True)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _rotation(angle_positions: torch.Tensor, inv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    angle = angle_positions.double()[..., None] * inv.double()
    angle = torch.cat((angle, angle), dim=-1)
    return angle.cos(), angle.sin()


def reference_attention(
    module, query, key, value, attention_mask, scaling=None, dropout=0.0, softcap=None, position_ids=None, **kwargs
):
    """Eager attention whose pair (m, n) uses position P[m, n] (no cache: keys at positions 0..T-1)."""
    T = query.shape[2]
    assert key.shape[2] == T, "the reference runs without a cache"
    P = torch.as_tensor(_POSITIONS["P"][:T, :T])
    rotary = _POSITIONS["rotary"]
    layer_types = getattr(module.config, "layer_types", None)
    inv = _inv_freq(rotary, layer_types[module.layer_idx] if layer_types else None)
    inv = rotary.inv_freq if inv is None else inv
    pos = torch.arange(T)
    cos, sin = _rotation(-pos, inv)  # undo the model's rotation R(pos)
    q_raw = query * cos + _rotate_half(query) * sin
    k_raw = key * cos + _rotate_half(key) * sin
    groups = query.shape[1] // key.shape[1]
    k_raw, value = k_raw.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1)
    cos, sin = _rotation(P.clamp(min=0), inv)  # (T, T, d): the rotation of each pair
    q_pair = q_raw[:, :, :, None, :] * cos + _rotate_half(q_raw)[:, :, :, None, :] * sin  # (B, H, T, T, d)
    scores = (q_pair * k_raw[:, :, None, :, :]).sum(-1) * scaling
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    scores = scores + attention_mask[:, :, :, :T]
    probs = torch.softmax(scores, dim=-1)
    return (probs @ value).transpose(1, 2).contiguous(), None


AttentionInterface.register(REFERENCE, reference_attention)
AttentionMaskInterface.register(REFERENCE, eager_mask)


def reference_logits(model, input_ids: torch.Tensor, P: np.ndarray) -> torch.Tensor:
    """Logits of ``model`` with every attention pair (m, n) at position P[m, n]; restores the implementation."""
    previous = model.config._attn_implementation
    _POSITIONS.update(P=P, rotary=rotary_of(model))
    model.set_attn_implementation(REFERENCE)
    try:
        with torch.no_grad():
            return model(input_ids).logits
    finally:
        model.set_attn_implementation(previous)
