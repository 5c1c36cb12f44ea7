"""STRING and Self-Extend as attention functions of transformers' ``AttentionInterface`` (needs torch).

What the interface receives. A rotary model (Llama, Mistral, Qwen2/3, Gemma 1/2/3, ...) rotates queries and keys
*before* it calls the attention function: the query at position m arrives as R(m) q, every key (the new ones and
those from the KV cache) as R(n) k, where R(p) rotates each pair of dimensions (i, i + d/2) by the angle
p · theta_i (``rotate_half`` layout) and theta_i are the model's inverse frequencies. Their product is
(R(m) q) · (R(n) k) = q · R(n - m) k, a function of the distance r = m - n alone.

Design (exact). Rotations by the same frequencies compose: R(a) R(b) = R(a + b). So a pair can be given any
position p without the un-rotated q and k: rotate the delivered query once more by delta_q and the delivered key by
delta_k, and the score is q · R((n + delta_k) - (m + delta_q)) k, i.e. position p = r + delta_q - delta_k. This
module forms two sets of scores, the model's own ("near") and one from re-rotated tensors ("far"), and gives each
pair the score of the set its distance selects, before the mask and the softmax:

* STRING (An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, Sec. 4, Eq. 3-4,
  Alg. 1): far pairs are r >= S; the query is rotated by delta_q = -(S - W) (the keys stay), so
  p = r - S + W, the shifted position matrix of Fig. 5. As Alg. 1 does, it shifts the query positions.
* Self-Extend (Jin et al., "LLM Maybe LongLM: Self-Extend LLM Context Window Without Tuning", ICML 2024,
  Sec. 3.2, Alg. 1): far pairs are r >= w_n; the query at m is moved to m // G + w_n - w_n // G and the key at n
  to n // G (delta_q = m // G + w_n - w_n // G - m, delta_k = n // G - n), so p = m // G - n // G + w_n - w_n // G.

The extra rotation angles are computed in float64 from the model's inverse frequencies (read at every call, so
dynamic RoPE stays right, and per layer type for Gemma 3's local and global layers) and cast to the model's dtype.
The result is therefore the paper's position matrix up to the rounding of composing two rotations (float64:
~1e-15 relative); the model's own rotary tables (transformers computes them in float32) are the only coarser
rounding, and they are the stock model's too. Scores then go through softcapping (Gemma 2) and the model's mask
exactly as in transformers' eager attention, with the softmax in at least float32 (float64 stays float64).

Positions. Distances are those of the delivered key array: the query i of a call is key offset + i, where the
offset is kv - q (the dynamic cache, sliding-window layers included, returns the kept keys followed by the new
ones), except in a static cache, which returns its whole array of max_cache_len keys (the unwritten ones masked):
there it is the number of tokens the layer has seen, read by a forward pre-hook on each attention layer before the
cache is written (:func:`_static_offset`: a tensor, so nothing waits for the device and ``torch.compile`` traces
it). Self-Extend also needs absolute positions; it takes the queries' ``position_ids`` (every model passes them)
and each row's keys' as its last real query's (:func:`_last_real_queries`: whose own key the mask lets through)
minus the distance, so left- and right-padded batches (whose pads Hugging Face gives position 1) are handled.
Packed sequences (positions restarting inside a row) are not supported.

Masks come from transformers' ``eager_mask`` (registered for both names), so padding and sliding windows are the
model's own. Three forms compute the merge (``backend``): ``sdpa`` is one call of torch's
``scaled_dot_product_attention`` on doubled keys (:func:`merged_attention_sdpa`), so the device's fused kernels run
it (CPU or CUDA; twice the keys and twice the head dimension); ``eager`` forms the scores explicitly by blocks of
queries (``BLOCK_ELEMENTS`` scores at a time, softmax in at least float32) and is used whenever the model softcaps
its scores (Gemma 2); ``flash`` (:func:`merged_attention_flash`) is STRING's own flash-attention implementation
(HKUNLP/STRING): flash kernels take no arbitrary mask, but both sets of pairs are bands of the causal matrix, so two
``flash_attn_func`` calls, near pairs in a sliding window and far pairs with the far queries against the keys shifted
by the threshold (causal, bottom-right aligned), are merged exactly by their log-sum-exp. It is registered under
``<name>_lse`` with transformers' flash mask function (None, or a (B, kv) padding mask: a padded batch then runs as
two ``flash_attn_varlen_func`` calls on the rows' runs of real tokens, :func:`merged_attention_flash_varlen`;
padding inside a row is refused), chosen by ``backend="auto"`` when the model runs ``flash_attention_2``/``_3`` and
the kernels import. The real flash kernels are untested in freqlab's suite (no GPU): the merge is tested on CPU with
pure-torch kernels of flash-attn's signatures and semantics put in their place (``flash_fn``, ``flash_varlen_fn``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import transformers
from transformers import AttentionInterface, cache_utils
from transformers.masking_utils import AttentionMaskInterface, eager_mask, flash_attention_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from freqlab.apply import TESTED_MODEL_TYPES, UNTESTED_BECAUSE, check_model_type
from freqlab.apply.window import config_window
from freqlab.errors import FreqlabError, brief, brief_line
from freqlab.plan.self_extend import _check_group
from freqlab.plan.string import _check_shift

STRING_NAME = "freqlab_string"
SELF_EXTEND_NAME = "freqlab_self_extend"
FLASH_SUFFIX = "_lse"  # the flash form's registered name: no "flash" in it, which transformers reads as its own
_OWN_NAMES = {name + suffix for name in (STRING_NAME, SELF_EXTEND_NAME) for suffix in ("", FLASH_SUFFIX)}
#: the flash kernels each transformers implementation runs: module (flash-attn 2, flash-attn 3's hopper build), the
#: function for a batch without padding and the variable-length one for a padded batch
FLASH_KERNELS = {
    "flash_attention_2": ("flash_attn", "flash_attn_func", "flash_attn_varlen_func"),
    "flash_attention_3": ("flash_attn_interface", "flash_attn_func", "flash_attn_varlen_func"),
}
BLOCK_ELEMENTS = 1 << 24  # scores materialized at once (batch x heads x query block x keys)


@dataclass(frozen=True)
class Setting:
    """What one attention layer does: the method, its two parameters and where its inverse frequencies live."""

    method: str  # STRING_NAME or SELF_EXTEND_NAME
    first: int  # S or G
    second: int  # W or w_n
    rotary: torch.nn.Module
    inv_freq_attr: str  # "inv_freq", or "<layer_type>_inv_freq" (Gemma 3)
    backend: str = "sdpa"  # "sdpa" (one fused call), "eager" (explicit scores, by blocks) or "flash" (two, merged)
    flash_fn: Callable | None = None  # flash_attn_func (or a stand-in with its signature), for backend "flash"
    flash_varlen_fn: Callable | None = None  # flash_attn_varlen_func (or a stand-in), for padded batches

    def inv_freq(self) -> torch.Tensor:
        """The rotary embedding's inverse frequencies theta_j (read from the model, never copied)."""
        return getattr(self.rotary, self.inv_freq_attr)


_SETTINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # attention module -> Setting
# attention module -> its next call's static-cache key offset (:func:`_remember_key_offset`; None: the keys end with
# the queries), and model -> the hooks that set it
_KEY_OFFSET: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_HOOKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PREVIOUS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> its attention implementation before


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) over the two halves of the last dimension (transformers' rotary layout)."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate(x: torch.Tensor, delta: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """R(delta) x: rotate (..., T, d) by ``delta`` positions (broadcast against (..., T)); angles in float64."""
    angle = delta.to(torch.float64)[..., None] * inv_freq.to(device=x.device, dtype=torch.float64)
    angle = torch.cat((angle, angle), dim=-1)
    return x * angle.cos().to(x.dtype) + rotate_half(x) * angle.sin().to(x.dtype)


#: attention modules of a text model that freqlab does not rotate (Mllama's cross-attention layers: no RoPE, no
#: self_attn): the implementation the text model had, which they keep
_PASSTHROUGH: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _passed_through(module: torch.nn.Module, query, key, value, attention_mask, **kwargs) -> tuple | None:
    """The attention of such a module as its own implementation computes it ("eager", each model's own function,
    runs as "sdpa": the same attention), or None for a module freqlab applies to.
    """
    previous = _PASSTHROUGH.get(module)
    if previous is None:
        return None
    function = ALL_ATTENTION_FUNCTIONS.get(previous) or ALL_ATTENTION_FUNCTIONS["sdpa"]
    return function(module, query, key, value, attention_mask, **kwargs)


def _setting(module: torch.nn.Module, name: str) -> Setting:
    setting = _SETTINGS.get(module)
    if setting is None or setting.method != name:
        if _shares_config(getattr(module, "config", None)):  # a review: the message named no cause
            raise FreqlabError(f"attention implementation {name!r} was set on this model's config by {SHARED}")
        raise FreqlabError(
            f"attention implementation {name!r} was set on a model it was not applied to (a copy of one, or a model "
            "built from the same config object): use freqlab.apply.string or freqlab.apply.self_extend, or "
            "freqlab.apply.remove"
        )
    return setting


#: why a model runs (or is asked to remove) a plan applied to another: transformers 5 keeps ``from_config``'s config
#: as ``model.config``, and the attention implementation is set on the config, by transformers'
#: ``set_attn_implementation`` as by freqlab
SHARED = (
    "applying a plan to another model built from the same config object (transformers sets the attention "
    "implementation on the config): build each model from its own config, e.g. "
    "AutoModelForCausalLM.from_config(copy.deepcopy(config))"
)


def _shares_config(config: Any, but: Any = None) -> bool:
    """Whether ``config`` (a model's, or its text config) is that of a model other than ``but`` that a plan is
    applied to (its text config too: two Llavas may share one ``text_config`` under their own top-level configs).
    """
    return config is not None and any(
        config is model.config or config is _text_config(model) for model in list(_PREVIOUS.keys()) if model is not but
    )


def _check_own_config(model: Any) -> None:
    """A FreqlabError where ``model`` shares its config (or text config) with another model a plan is applied to:
    setting the implementation, or taking it back, on the one config would change that model's plan (a review:
    Self-Extend on one took STRING off the other, a plan that changes nothing put it back to sdpa, unsaid).
    """
    if _shares_config(model.config, but=model) or _shares_config(_text_config(model), but=model):
        raise FreqlabError(
            "this model's config object is shared with another model a plan is applied to, and the attention "
            "implementation is set on the config: build each model from its own config, e.g. "
            "AutoModelForCausalLM.from_config(copy.deepcopy(config)), or remove the plan from the other first"
        )


def _repeat_kv(x: torch.Tensor, groups: int) -> torch.Tensor:
    return x if groups == 1 else x.repeat_interleave(groups, dim=1)


def merged_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    far_query: torch.Tensor,
    far_key: torch.Tensor,
    far: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    softcap: float | None = None,
    dropout: float = 0.0,
) -> torch.Tensor:
    """softmax(where(far, far_query · far_key, query · key) · scaling + mask) · value, by blocks of queries.

    query, far_query: (B, H, q, d); key, far_key, value: (B, H_kv, kv, d); far: (q, kv) bool. Without a mask
    the causal one (key index > kv - q + query index) is applied. Returns (B, q, H, d), transformers' layout.
    """
    groups = query.shape[1] // key.shape[1]
    key, far_key, value = (_repeat_kv(t, groups) for t in (key, far_key, value))
    batch, heads, q_len, _ = query.shape
    kv_len = key.shape[2]
    work = torch.promote_types(query.dtype, torch.float32)
    lowest = torch.finfo(work).min
    future = torch.arange(kv_len - q_len, kv_len, device=query.device)[:, None] < torch.arange(
        kv_len, device=query.device
    )
    out = query.new_empty(batch, heads, q_len, value.shape[-1])
    block = max(1, BLOCK_ELEMENTS // max(1, batch * heads * kv_len))
    key_t, far_key_t = key.transpose(-1, -2), far_key.transpose(-1, -2)
    for start in range(0, q_len, block):
        rows = slice(start, start + block)
        scores = torch.where(far[rows], far_query[:, :, rows] @ far_key_t, query[:, :, rows] @ key_t)
        scores = scores.to(work) * scaling
        if softcap is not None:
            scores = torch.tanh(scores / softcap) * softcap
        if attention_mask is None:
            scores = scores.masked_fill(future[rows], lowest)
        elif attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask[:, :, rows, :kv_len], lowest)
        else:
            scores = scores + attention_mask[:, :, rows, :kv_len].to(work)
        probs = torch.softmax(scores, dim=-1)
        if dropout:
            probs = torch.nn.functional.dropout(probs, p=dropout, training=True)
        out[:, :, rows] = (probs.to(value.dtype)) @ value
    return out.transpose(1, 2).contiguous()


def merged_attention_sdpa(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    far_query: torch.Tensor,
    far_key: torch.Tensor,
    far: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
) -> torch.Tensor:
    """:func:`merged_attention` as one ``torch.nn.functional.scaled_dot_product_attention`` call, exactly.

    The keys are doubled along the sequence (a near copy and a far copy) and queries and keys widened along the head
    dimension, so that [q, q_far] · [k, 0] = q · k and [q, q_far] · [0, k_far] = q_far · k_far; the values are
    doubled, and the mask lets each pair through in the one copy its distance selects (the other gets the dtype's
    lowest value, as a masked pair does in transformers' eager mask). Twice the keys and twice the head dimension,
    the fused kernels of the device.
    """
    groups = query.shape[1] // key.shape[1]
    key, far_key, value = (_repeat_kv(t, groups) for t in (key, far_key, value))
    q_len, kv_len = query.shape[2], key.shape[2]
    lowest = torch.finfo(query.dtype).min
    if attention_mask is None:
        future = torch.arange(kv_len - q_len, kv_len, device=query.device)[:, None] < torch.arange(
            kv_len, device=query.device
        )
        base = torch.zeros(q_len, kv_len, dtype=query.dtype, device=query.device).masked_fill(future, lowest)
    elif attention_mask.dtype == torch.bool:
        base = torch.zeros(attention_mask[..., :kv_len].shape, dtype=query.dtype, device=query.device)
        base = base.masked_fill(~attention_mask[..., :kv_len], lowest)
    else:
        base = attention_mask[..., :kv_len].to(query.dtype)
    mask = torch.cat((base.masked_fill(far, lowest), base.masked_fill(~far, lowest)), dim=-1)
    zeros = torch.zeros_like(key)
    out = torch.nn.functional.scaled_dot_product_attention(
        torch.cat((query, far_query), dim=-1),
        torch.cat((torch.cat((key, zeros), dim=-1), torch.cat((zeros, far_key), dim=-1)), dim=2),
        torch.cat((value, value), dim=2),
        attn_mask=mask,
        dropout_p=dropout,
        scale=scaling,
    )
    return out.transpose(1, 2).contiguous()


def _flash_options(scaling: float, left: int | None, softcap, dropout: float) -> dict:
    """Keyword arguments of one causal flash-attention call, only those flash-attn 2 and 3 share (``dropout_p``,
    ``softcap``, ``window_size`` only when used).
    """
    options: dict = {"softmax_scale": scaling, "causal": True, "return_attn_probs": True}
    if left is not None:
        options["window_size"] = (left, 0)
    if softcap is not None:
        options["softcap"] = softcap
    if dropout:
        options["dropout_p"] = dropout
    return options


def _checked(result: Any, fn: Callable, role: str, out_shape: tuple, lse_shape: tuple) -> tuple:
    """(out, lse) of a flash call (flash-attn 2: (out, lse, probs); 3: (out, lse)), or one line naming the function,
    the shapes it must return and what it returned.
    """
    out, lse = result[:2] if isinstance(result, (tuple, list)) and len(result) >= 2 else (None, None)
    if not (
        isinstance(out, torch.Tensor)
        and isinstance(lse, torch.Tensor)
        and tuple(out.shape) == out_shape
        and tuple(lse.shape) == lse_shape
    ):
        name, kernel = {
            "dense": ("flash_fn", "flash_attn_func"),
            "varlen": ("flash_varlen_fn", "flash_attn_varlen_func"),
        }[role]
        raise FreqlabError(
            f"{name} {getattr(fn, '__name__', fn)!r} must return (out, lse, ...) as {kernel} with "
            f"return_attn_probs=True does: out of shape {out_shape} and lse of shape {lse_shape}; got {_shapes(result)}"
        )
    return out, lse


def _flash_call(flash_fn: Callable, q, k, v, scaling: float, left: int | None, softcap, dropout: float):
    """One causal ``flash_attn_func`` call on (B, T, H, d) tensors. Returns the output (B, T, H, d) and the
    log-sum-exp (B, H, T).
    """
    B, T, H, _ = q.shape
    result = flash_fn(q, k, v, **_flash_options(scaling, left, softcap, dropout))
    return _checked(result, flash_fn, "dense", (B, T, H, v.shape[-1]), (B, H, T))


def _shapes(result: Any) -> str:
    """What a flash function returned, by shape (for the error naming it)."""
    if isinstance(result, torch.Tensor):
        return f"one tensor of shape {tuple(result.shape)}"
    if isinstance(result, (tuple, list)):
        parts = [str(tuple(r.shape)) if isinstance(r, torch.Tensor) else type(r).__name__ for r in result]
        return f"{len(result)} values: {', '.join(parts)}"
    return type(result).__name__


def _lse_merge(near, near_lse, far, far_lse, has_far: torch.Tensor) -> torch.Tensor:
    """The softmax over two disjoint sets of keys from their outputs (B, q, H, d) and log-sum-exps (B, H, q):
    (e^(l_a - m) o_a + e^(l_b - m) o_b) / (e^(l_a - m) + e^(l_b - m)), m = max(l_a, l_b). ``has_far`` ((q,) or
    (B, q)): the queries that have a far key; the others take the near output alone, whatever the far call left.
    """
    has_far = has_far.reshape(-1, has_far.shape[-1])  # (1 or B, q)
    work = torch.promote_types(torch.promote_types(near.dtype, near_lse.dtype), torch.float32)
    near_lse = near_lse.to(work)
    far_lse = far_lse.to(work).masked_fill(~has_far[:, None, :], -torch.inf)
    top = torch.maximum(near_lse, far_lse)
    w_near, w_far = (near_lse - top).exp(), (far_lse - top).exp()  # (B, H, q)
    total = w_near + w_far
    w_near, w_far = ((w / total).transpose(1, 2)[..., None] for w in (w_near, w_far))  # (B, q, H, 1)
    far = far.to(work).masked_fill(~has_far[:, :, None, None], 0.0)
    return (w_near * near.to(work) + w_far * far).to(near.dtype).contiguous()


def _windows(threshold: int, kv_len: int, sliding_window: int | None) -> tuple[int, int | None]:
    """The near call's left window (pairs r <= threshold - 1, and r < the model's sliding window) and the far call's
    (None: causal only; negative: no pair is far).
    """
    reach = kv_len if sliding_window is None else int(sliding_window)  # allowed pairs: r < reach
    far_left = reach - 1 - threshold
    return min(threshold, reach) - 1, (far_left if sliding_window is not None or far_left < 0 else None)


def merged_attention_flash(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    far_query: torch.Tensor,
    far_key: torch.Tensor,
    threshold: int,
    scaling: float,
    flash_fn: Callable,
    softcap: float | None = None,
    dropout: float = 0.0,
    sliding_window: int | None = None,
) -> torch.Tensor:
    """:func:`merged_attention` (far pairs: r >= ``threshold``, causal mask, no padding) from two flash-attention
    calls merged by their log-sum-exp, as STRING's implementation does (An et al., ICLR 2025, Sec. 4; HKUNLP/STRING).

    ``flash_attn_func`` aligns its causal mask to the bottom right: query i of q sees keys j <= i + kv - q, and
    ``window_size=(w, 0)`` keeps j >= i + kv - q - w. So the near call (``query``, all keys, window threshold - 1)
    covers exactly r = 0 .. threshold - 1, and the far call (``far_query``, the first kv - threshold keys, causal)
    exactly r >= threshold; a model's sliding window (pairs r <= sliding_window - 1, as transformers' masks) narrows
    both windows. With o_a, o_b the two outputs and l_a, l_b their log-sum-exps (float32 in flash-attn),

        out = (e^(l_a - m) o_a + e^(l_b - m) o_b) / (e^(l_a - m) + e^(l_b - m)),  m = max(l_a, l_b),

    the softmax over the union of the two disjoint sets. Queries with no far key (key index < threshold) take the
    near output alone (flash-attn leaves such rows zero, with an infinite log-sum-exp whose sign differs between
    versions: they are recognised from the geometry, not from it). query, far_query: (B, H, q, d); key, far_key,
    value: (B, H_kv, kv, d) (grouped heads are flash-attn's own). Returns (B, q, H, d), transformers' layout.
    Inference only (flash-attn's backward ignores the log-sum-exp's gradient; :func:`_merge` refuses when gradients
    are on). The real kernel is untested in freqlab's suite (no GPU); the merge is tested with a pure-torch stand-in.
    """
    q_len, kv_len = query.shape[2], key.shape[2]
    near_left, far_left = _windows(threshold, kv_len, sliding_window)

    def bthd(x: torch.Tensor) -> torch.Tensor:
        return x.transpose(1, 2)

    near, near_lse = _flash_call(flash_fn, bthd(query), bthd(key), bthd(value), scaling, near_left, softcap, dropout)
    far_keys = kv_len - threshold
    if far_keys <= 0 or (far_left is not None and far_left < 0):  # no pair is far: the near call is all
        return near.contiguous()
    far, far_lse = _flash_call(flash_fn, bthd(far_query), bthd(far_key[:, :, :far_keys]),
                               bthd(value[:, :, :far_keys]), scaling, far_left, softcap, dropout)  # fmt: skip
    has_far = torch.arange(kv_len - q_len, kv_len, device=query.device) >= threshold  # (q,)
    return _lse_merge(near, near_lse, far, far_lse, has_far)


def _varlen_call(flash_varlen_fn: Callable, q, k, v, q_rows, k_rows, scaling, left, softcap, dropout):
    """One causal ``flash_attn_varlen_func`` call on the rows' packed tokens: q (B, q, H, d) taken where ``q_rows``
    (B, q) is True, k and v (B, kv, H_kv, d) where ``k_rows`` (B, kv) is, row after row (``cu_seqlens``: int32
    cumulative lengths, as flash-attn wants; rows without queries left out). Returns the output (B, q, H, d) and the
    log-sum-exp (B, H, q) from flash-attn's packed layouts (total_q, H, d) and (H, total_q); 0 and 0 on the queries
    not taken (padding), so that the merge leaves them 0.
    """
    q_lens, k_lens = q_rows.sum(1), k_rows.sum(1)
    taken = q_lens > 0  # the rows in the call (a row without queries has no keys in it either)
    q_lens, k_lens = q_lens[taken], k_lens[taken]
    cu = [torch.nn.functional.pad(n.cumsum(0), (1, 0)).to(torch.int32) for n in (q_lens, k_lens)]
    packed_q = q[q_rows]
    result = flash_varlen_fn(packed_q, k[k_rows], v[k_rows], cu_seqlens_q=cu[0], cu_seqlens_k=cu[1],
                             max_seqlen_q=int(q_lens.max()), max_seqlen_k=int(k_lens.max()),
                             **_flash_options(scaling, left, softcap, dropout))  # fmt: skip
    total, heads = packed_q.shape[:2]
    out, lse = _checked(result, flash_varlen_fn, "varlen", (total, heads, v.shape[-1]), (heads, total))
    full = out.new_zeros(*q.shape[:3], v.shape[-1])
    full[q_rows] = out
    full_lse = lse.new_zeros(q.shape[0], q.shape[1], heads)
    full_lse[q_rows] = lse.transpose(0, 1)
    return full, full_lse.transpose(1, 2)


def merged_attention_flash_varlen(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    far_query: torch.Tensor,
    far_key: torch.Tensor,
    real: torch.Tensor,
    threshold: int,
    scaling: float,
    flash_varlen_fn: Callable,
    softcap: float | None = None,
    dropout: float = 0.0,
    sliding_window: int | None = None,
) -> torch.Tensor:
    """:func:`merged_attention_flash` on a padded batch, in two ``flash_attn_varlen_func`` calls for the whole batch.

    ``real`` (B, kv) is True on real keys (transformers' flash mask), one run per row (left or right padding):
    row b's keys are its run [s_b, e_b), its queries those whose key index kv - q + i falls in it. flash-attn's
    variable-length call packs the rows (``cu_seqlens``) and aligns each row's causal mask to the bottom right of
    its own block, so a row's last query meets its last key as in :func:`merged_attention_flash`: the near call
    takes every row's run, the far call each row's first e_b - s_b - threshold keys (none for a row shorter than
    the threshold). Distances inside a row are those of the key array, as in the unpadded form. Queries on padding
    give 0 (as transformers' own flash path). Padding between real tokens is refused in one line.
    """
    q_len, kv_len = query.shape[2], key.shape[2]
    real = real[:, -kv_len:].to(device=query.device, dtype=torch.bool)
    count = real.sum(1)
    start = real.to(torch.int8).argmax(1)  # first real key (0 for an empty row)
    # one past the last real key; an empty row's run is empty (argmax read kv: its queries met no key, NaN; a review)
    end = torch.where(count > 0, kv_len - real.flip(1).to(torch.int8).argmax(1), start)
    gapped = ((count > 0) & (end - start != count)).nonzero().flatten()
    if gapped.numel():
        raise FreqlabError(
            f"freqlab.apply's flash backend: row {int(gapped[0])} of the batch has padding between real tokens; use "
            "backend='sdpa'"
        )
    query_index = torch.arange(kv_len - q_len, kv_len, device=query.device)  # key index of each query
    q_rows = (query_index[None, :] >= start[:, None]) & (query_index[None, :] < end[:, None])  # (B, q)
    keep = q_rows.any(1, keepdim=True)  # rows with a real query (the others give 0)
    if not bool(keep.any()):
        return query.new_zeros(query.shape[0], q_len, query.shape[1], value.shape[-1])
    k_rows = real & keep
    near_left, far_left = _windows(threshold, kv_len, sliding_window)

    def bthd(x: torch.Tensor) -> torch.Tensor:
        return x.transpose(1, 2)

    q, k, v = bthd(query), bthd(key), bthd(value)
    near, near_lse = _varlen_call(flash_varlen_fn, q, k, v, q_rows, k_rows, scaling, near_left, softcap, dropout)
    far_rows = keep[:, 0] & (count > threshold)  # rows with a far pair: more than threshold keys
    if (far_left is not None and far_left < 0) or not bool(far_rows.any()):
        return near.contiguous()
    key_index = torch.arange(kv_len, device=query.device)
    far_k_rows = k_rows & far_rows[:, None] & (key_index[None, :] < (end - threshold)[:, None])
    far_q_rows = q_rows & far_rows[:, None]
    far, far_lse = _varlen_call(flash_varlen_fn, bthd(far_query), bthd(far_key), v, far_q_rows, far_k_rows, scaling,
                                far_left, softcap, dropout)  # fmt: skip
    has_far = far_q_rows & (query_index[None, :] - start[:, None] >= threshold)  # (B, q)
    return _lse_merge(near, near_lse, far, far_lse, has_far)


def _merge(setting: Setting, query, key, value, far_query, far_key, threshold, attention_mask, scaling, softcap,
           dropout, sliding_window, offset):  # fmt: skip
    """The form the backend names; ``sdpa`` gives way to ``eager`` when the model softcaps its scores (Gemma 2).
    ``offset``: the key index of the first query (:func:`_key_offset`).
    """
    if setting.backend == "flash":
        if not isinstance(offset, int) or offset != key.shape[2] - query.shape[2]:
            raise FreqlabError(
                "freqlab.apply's flash backend needs the queries at the end of the key array (the dynamic cache); "
                "a static cache returns its whole array: use backend='sdpa' or the dynamic cache"
            )
        if torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value)):
            raise FreqlabError(
                "freqlab.apply's flash backend is for inference: flash-attn's backward ignores the gradient of the "
                "log-sum-exp the merge needs; run under torch.no_grad() (generate does) or use backend='sdpa'"
            )
        options = {"softcap": softcap, "dropout": dropout, "sliding_window": sliding_window}
        if threshold <= 0:  # every pair is far (Self-Extend, w_n = 0): no near call, whose left window of -1 flash
            # reads as no limit (every key again, at its real position): one call of the far form, every pair near
            query, key, threshold = far_query, far_key, key.shape[2] + 1
        if attention_mask is None:
            return merged_attention_flash(query, key, value, far_query, far_key, threshold, scaling, setting.flash_fn,
                                          **options)  # fmt: skip
        if setting.flash_varlen_fn is None:
            raise FreqlabError(
                "freqlab.apply's flash backend: a padded batch needs flash_varlen_fn (flash_attn_varlen_func's "
                "signature) beside the flash_fn given; use backend='sdpa'"
            )
        return merged_attention_flash_varlen(query, key, value, far_query, far_key, attention_mask, threshold,
                                             scaling, setting.flash_varlen_fn, **options)  # fmt: skip
    far = _distances(query, key, offset)[1] >= threshold
    if setting.backend == "sdpa" and softcap is None:
        return merged_attention_sdpa(query, key, value, far_query, far_key, far, attention_mask, scaling, dropout)
    return merged_attention(query, key, value, far_query, far_key, far, attention_mask, scaling, softcap, dropout)


def _static_offset(cache: Any, layer_idx: int, q_len: int) -> int | torch.Tensor | None:
    """Where a static cache layer puts this call's keys in the array it returns, read before it writes them: a
    static layer returns its whole array (``max_cache_len`` keys, the unwritten ones masked), so the queries are not at
    its end but at the tokens it has seen (a 0-d tensor for :class:`StaticLayer`, which counts them in one, so that
    nothing waits for the device and ``torch.compile`` traces it); None where the keys returned end with the new
    ones (the dynamic cache, sliding-window layers included; a static sliding-window layer once it is full).
    """
    layers = getattr(cache, "layers", None)
    if layers is None or not 0 <= layer_idx < len(layers):
        return None
    layer = layers[layer_idx]
    sliding = getattr(cache_utils, "StaticSlidingWindowLayer", None)
    if sliding is not None and isinstance(layer, sliding):
        seen = layer.cumulative_length_int
        return seen if seen + q_len <= layer.max_cache_len else None
    static = getattr(cache_utils, "StaticLayer", None)
    if static is not None and isinstance(layer, static):
        return layer.cumulative_length.clone()  # it is added to in place by the update
    return None


def _remember_key_offset(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
    """Forward pre-hook of each attention layer: its cache's :func:`_static_offset` for the call about to run."""
    cache = kwargs.get("cache", kwargs.get("past_key_values", kwargs.get("past_key_value")))
    hidden = kwargs.get("hidden_states", args[0] if args else None)
    offset = None if cache is None or hidden is None else _static_offset(cache, module.layer_idx, hidden.shape[1])
    _KEY_OFFSET[module] = offset


def _key_offset(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor) -> int | torch.Tensor:
    """The key index of the call's first query: kv - q, or a static cache's (:func:`_remember_key_offset`)."""
    offset = _KEY_OFFSET.get(module)
    if offset is None:
        return key.shape[2] - query.shape[2]
    return offset.to(query.device) if isinstance(offset, torch.Tensor) else offset


def _last_real_queries(attention_mask: torch.Tensor | None, query_index: torch.Tensor, kv_len: int):
    """Each row's last query that is a real token (its own key let through by the mask: a pad's key is masked),
    (B,) or (1,), -1 where none; None without a mask (every query real). Tensor operations only.
    """
    if attention_mask is None:
        return None
    mask = attention_mask[..., :kv_len]
    allowed = mask if mask.dtype == torch.bool else mask > torch.finfo(mask.dtype).min / 2
    if allowed.dim() == 2:  # (B, kv): flash's padding mask
        own = allowed[:, query_index]
    else:  # (B, 1 or H, q, kv)
        rows = allowed.any(dim=1)
        own = torch.gather(rows, 2, query_index.view(1, -1, 1).expand(rows.shape[0], -1, 1)).squeeze(-1)
    queries = torch.arange(query_index.numel(), device=own.device)
    return torch.where(own, queries, -1).amax(-1)


def _distances(query: torch.Tensor, key: torch.Tensor, offset: int | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Key-array index of each query (``offset`` + i) and the distance matrix r = that - key index, (q, kv)."""
    q_len, kv_len = query.shape[2], key.shape[2]
    query_index = offset + torch.arange(q_len, device=query.device)
    return query_index, query_index[:, None] - torch.arange(kv_len, device=query.device)[None, :]


@functools.cache
def _reads_cache(forward: Callable) -> bool:
    """Whether an attention layer's forward takes the KV cache as ``cache`` (transformers 5.24 on)."""
    return "cache" in inspect.signature(forward).parameters


def _check_kwargs(module: torch.nn.Module, kwargs: dict) -> None:
    """Refuse what the merge cannot honour: attention sinks, and a KV cache given as ``cache=`` to a transformers
    that reads only ``past_key_values=`` (before 5.24: ``cache=`` reaches the attention function unread through
    ``**kwargs``, and the step would attend to its own tokens alone, silently).
    """
    if kwargs.get("s_aux") is not None:
        raise FreqlabError("attention sinks (s_aux) are not supported by freqlab.apply")
    if kwargs.get("cache") is not None and not _reads_cache(type(module).forward):
        raise FreqlabError(
            f"transformers {transformers.__version__} does not read cache= (the KV cache's name from 5.24 on): the "
            "cache would go unused; pass it as past_key_values="
        )


def string_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    softcap: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """STRING attention (Eq. 4): pairs at r >= S score with the query rotated back by S - W positions."""
    if (out := _passed_through(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                               softcap=softcap, **kwargs)) is not None:  # fmt: skip
        return out
    _check_kwargs(module, kwargs)
    setting = _setting(module, STRING_NAME)
    S, W = setting.first, setting.second
    far_query = rotate(query, torch.tensor(float(W - S), device=query.device), setting.inv_freq())
    scaling = query.shape[-1] ** -0.5 if scaling is None else scaling
    out = _merge(setting, query, key, value, far_query, key, S, attention_mask, scaling, softcap,
                 dropout if module.training else 0.0, kwargs.get("sliding_window"),
                 _key_offset(module, query, key))  # fmt: skip
    return out, None


def self_extend_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    softcap: float | None = None,
    position_ids: torch.Tensor | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Self-Extend attention: pairs at r >= w_n score at the grouped position m // G - n // G + w_n - w_n // G."""
    if (out := _passed_through(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                               softcap=softcap, position_ids=position_ids, **kwargs)) is not None:  # fmt: skip
        return out
    _check_kwargs(module, kwargs)
    setting = _setting(module, SELF_EXTEND_NAME)
    G, w_n = setting.first, setting.second
    offset = _key_offset(module, query, key)
    query_index, _ = _distances(query, key, offset)
    if position_ids is None:
        position_ids = query_index[None, :]
    if position_ids.ndim != 2:
        raise FreqlabError(f"Self-Extend needs position_ids of shape (batch, length), got {tuple(position_ids.shape)}")
    q_pos = position_ids.to(query.device).expand(query.shape[0], -1)  # (B, q)
    # the keys' positions: row b's from one of its real queries (its last), key index + that query's position - its
    # key index; a padding token's position id says nothing (right padding: Hugging Face gives it 1)
    real = _last_real_queries(attention_mask, query_index, key.shape[2])
    if real is None:
        last = torch.full((q_pos.shape[0], 1), q_pos.shape[1] - 1, device=query.device)
    else:  # a row without a real query in this call: any will do (its outputs are masked)
        last = real.clamp(min=0).to(query.device).expand(q_pos.shape[0])[:, None]
    shift = torch.gather(q_pos, 1, last) - query_index[last]  # (B, 1)
    k_pos = shift + torch.arange(key.shape[2], device=query.device)[None, :]  # (B, kv)
    inv_freq = setting.inv_freq()
    far_query = rotate(query, (q_pos // G + (w_n - w_n // G) - q_pos)[:, None, :], inv_freq)
    far_key = rotate(key, (k_pos // G - k_pos)[:, None, :], inv_freq)
    scaling = query.shape[-1] ** -0.5 if scaling is None else scaling
    out = _merge(setting, query, key, value, far_query, far_key, w_n, attention_mask, scaling, softcap,
                 dropout if module.training else 0.0, kwargs.get("sliding_window"), offset)  # fmt: skip
    return out, None


def register() -> None:
    """Register both attention functions with transformers: under their names with the (eager, materialized) mask
    function, and under ``<name>_lse`` (the flash form) with transformers' flash mask function (None, or the 2D
    padding mask).
    """
    for name, function in ((STRING_NAME, string_attention), (SELF_EXTEND_NAME, self_extend_attention)):
        AttentionInterface.register(name, function)
        AttentionMaskInterface.register(name, eager_mask)
        AttentionInterface.register(name + FLASH_SUFFIX, function)
        AttentionMaskInterface.register(name + FLASH_SUFFIX, flash_attention_mask)


def _check_model(model: Any) -> None:
    """A FreqlabError unless ``model`` is a loaded model (a torch module with a config): a path or None gave
    AttributeError or TypeError (a review).
    """
    config = getattr(model, "config", None)
    if isinstance(model, torch.nn.Module) and hasattr(config, "model_type"):
        return
    what = f"{type(model).__name__} {brief_line(brief(model, 500), 60)}"  # a module's or config's repr spans lines
    if isinstance(model, torch.nn.Module):  # a wrapper (DataParallel, a holder of the model): the model is inside
        raise FreqlabError(
            f"expected a loaded transformers model (a torch module with a config), got {what}, which has no "
            "transformers config: pass the Hugging Face model it holds (e.g. wrapper.module or wrapper.model)"
        )
    raise FreqlabError(
        f"expected a loaded transformers model (a torch module with a config), got {what}: load it first, e.g. "
        "AutoModelForCausalLM.from_pretrained(path)"
    )


def _text_config(model: Any) -> Any:
    config = model.config
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def _set_implementation(model: Any, name: str) -> None:
    """Set the attention implementation of the model's text part alone: a multimodal model's vision tower keeps its
    own, and the masks built for it (set on the whole model, a Llava's or a Gemma 3's tower ran freqlab's function,
    which failed on any image, and then its own with freqlab's mask; reviews).
    """
    config, text = model.config, _text_config(model)
    key = next((k for k in getattr(config, "sub_configs", None) or {} if getattr(config, k, None) is text), None)
    model.set_attn_implementation(name if key is None else {key: name})


def _rotary(model: Any) -> torch.nn.Module:
    found = [m for _, m in model.named_modules() if type(m).__name__.endswith("RotaryEmbedding")]
    if not found:
        raise FreqlabError(f"{type(model).__name__} has no rotary embedding: STRING and Self-Extend need RoPE")
    if len(found) > 1:
        raise FreqlabError(f"{type(model).__name__} has {len(found)} rotary embeddings: not supported")
    return found[0]


def _attention_modules(model: Any) -> list[torch.nn.Module]:
    modules = [m for name, m in model.named_modules() if name.endswith("self_attn") and hasattr(m, "layer_idx")]
    if not modules:  # with allow_untested: the type's own reason too, where known (a review: GPT-NeoX's said no more)
        known = UNTESTED_BECAUSE.get(getattr(_text_config(model), "model_type", None))
        raise FreqlabError(
            f"{type(model).__name__}: no attention layers (self_attn with a layer_idx) found"
            + (f"; and {known}" if known else "")
        )
    return modules


def _inv_freq_attr(rotary: torch.nn.Module, config: Any, layer_idx: int) -> str:
    layer_types = getattr(config, "layer_types", None)
    if layer_types and hasattr(rotary, f"{layer_types[layer_idx]}_inv_freq"):
        return f"{layer_types[layer_idx]}_inv_freq"
    if not hasattr(rotary, "inv_freq"):
        raise FreqlabError(f"{type(rotary).__name__}: no inverse frequencies (inv_freq) found")
    return "inv_freq"


BACKENDS = ("auto", "sdpa", "eager", "flash")


def flash_kernels(implementation: str = "flash_attention_2") -> tuple[Callable, Callable]:
    """The installed ``flash_attn_func`` and ``flash_attn_varlen_func`` for ``flash_attention_2`` (flash-attn) or
    ``flash_attention_3`` (its hopper build, ``flash_attn_interface``), or one line saying they are missing.
    """
    module, *functions = FLASH_KERNELS.get(implementation, FLASH_KERNELS["flash_attention_2"])
    try:
        found = importlib.import_module(module)
        return tuple(getattr(found, f) for f in functions)  # type: ignore[return-value]
    except (ImportError, AttributeError) as exc:
        raise FreqlabError(
            f"backend 'flash' needs flash-attn's {module}.{' and '.join(functions)}, which are not installed (pip "
            "install flash-attn; a CUDA GPU); use backend='sdpa'"
        ) from exc


def resolve_backend(
    backend: str, implementation: str | None, flash_fn: Callable | None = None, flash_varlen_fn: Callable | None = None
) -> tuple:
    """(backend, flash_fn, flash_varlen_fn) to run: ``auto`` is ``flash`` when the model's implementation is
    ``flash_attention_2``/``3`` and its kernels import (or ``flash_fn`` is given), else ``sdpa``. The kernels are
    the installed flash-attn's unless ``flash_fn`` (and for padded batches ``flash_varlen_fn``) is given.
    """
    if backend not in BACKENDS:
        raise FreqlabError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    for name, fn, kernel in (("flash_fn", flash_fn, "flash_attn_func"),
                             ("flash_varlen_fn", flash_varlen_fn, "flash_attn_varlen_func")):  # fmt: skip
        if fn is not None and not callable(fn):
            raise FreqlabError(f"{name} must be a function with {kernel}'s signature, got {fn!r}")
        if fn is not None and backend in ("sdpa", "eager"):
            raise FreqlabError(f"{name} is for backend 'flash' (or 'auto' on a flash-attention model), not {backend!r}")
    if flash_varlen_fn is not None and flash_fn is None:
        raise FreqlabError("flash_varlen_fn goes with flash_fn (the two kernels of one flash-attention build)")
    if backend == "auto":
        if flash_fn is None and implementation in FLASH_KERNELS:
            try:
                flash_fn, flash_varlen_fn = flash_kernels(implementation)
            except FreqlabError:
                return "sdpa", None, None
        backend = "flash" if flash_fn is not None and implementation in FLASH_KERNELS else "sdpa"
    if backend != "flash":
        return backend, None, None
    if flash_fn is None:
        flash_fn, flash_varlen_fn = flash_kernels(implementation or "flash_attention_2")
    return "flash", flash_fn, flash_varlen_fn


def _apply(model: Any, method: str, first: int, second: int, backend: str, flash_fn: Callable | None = None,
           flash_varlen_fn: Callable | None = None, allow_untested: bool = False) -> Any:  # fmt: skip
    config = _text_config(model)
    check_model_type(config.model_type, allow_untested)
    _check_own_config(model)
    previous = _PREVIOUS.get(model, config._attn_implementation)
    if previous in _OWN_NAMES:  # a deep copy of an applied model: the implementation before freqlab's is not known
        previous = "sdpa" if getattr(model, "_supports_sdpa", False) else "eager"
    backend, flash_fn, flash_varlen_fn = resolve_backend(backend, previous, flash_fn, flash_varlen_fn)
    if config.model_type not in TESTED_MODEL_TYPES:  # allowed: said once more where it runs
        known = UNTESTED_BECAUSE.get(config.model_type)
        warnings.warn(
            f"freqlab.apply is tested on {', '.join(sorted(TESTED_MODEL_TYPES))}; {config.model_type!r} is not "
            "among them "
            + (
                f"and {known}: its logits differ from the plan's"
                if known
                else "(it must rotate queries and keys with transformers' rotate_half layout)"
            ),
            stacklevel=3,
        )
    rotary = _rotary(model)
    modules = _attention_modules(model)
    settings = {}
    for module in modules:
        attr = _inv_freq_attr(rotary, config, module.layer_idx)
        rotary_dims = 2 * getattr(rotary, attr).numel()
        head_dim = getattr(module, "head_dim", rotary_dims)
        if rotary_dims != head_dim:
            raise FreqlabError(
                f"{type(model).__name__}: RoPE covers {rotary_dims} of {head_dim} head dimensions (partial rotary); "
                "not supported"
            )
        settings[module] = Setting(method, first, second, rotary, attr, backend, flash_fn, flash_varlen_fn)
    unchanged = _changes_nothing(modules, method, first, second)
    if unchanged:  # the model's own attention, bit for bit in every dtype (a review: the merged form's kernel
        # rounds otherwise outside float64); applied all the same, so that remove() takes it off
        warnings.warn(f"{type(model).__name__}: {unchanged}: the model keeps its own attention", stacklevel=4)
        _restore(model, modules, previous)
        _PREVIOUS[model] = previous
        return model
    register()
    _set_implementation(model, method + (FLASH_SUFFIX if backend == "flash" else ""))
    _SETTINGS.update(settings)
    others = (m for m in model.modules() if type(m).__name__.endswith("Attention") and m not in settings)
    _PASSTHROUGH.update(dict.fromkeys((m for m in others if getattr(m, "config", None) is config), previous))
    _PREVIOUS[model] = previous
    _unhook(model, modules)  # applied again: one hook per layer
    _HOOKS[model] = [m.register_forward_pre_hook(_remember_key_offset, with_kwargs=True) for m in modules]
    base = _base_model(model)
    _HOOKS[model].append(base.register_forward_pre_hook(_no_attention_weights, with_kwargs=True))
    if method == SELF_EXTEND_NAME:
        _HOOKS[model].append(base.register_forward_pre_hook(_positions_from_mask, with_kwargs=True))
    return model


def _sliding_window(module: torch.nn.Module) -> int | None:
    """The sliding window a layer attends within, None for full attention: the layer's own attribute where it has
    one (Gemma 2/3, Qwen2), else its config's: ``layer_types`` where it names the layer's, else ``sliding_window``
    for every layer (Mistral passes it to the attention at each call).
    """
    if hasattr(module, "sliding_window"):
        return module.sliding_window
    config = getattr(module, "config", None)
    layer_types = getattr(config, "layer_types", None)
    index = getattr(module, "layer_idx", None)
    if layer_types is not None and index is not None and layer_types[index] != "sliding_attention":
        return None
    return getattr(config, "sliding_window", None)


def _changes_nothing(modules: list[torch.nn.Module], method: str, first: int, second: int) -> str:
    """Why a plan changes no attention score of these layers, or "": Self-Extend with G = 1, or every layer's sliding
    window at most the distance the plan starts at (STRING's S, Self-Extend's w_n): its pairs r <= window - 1 never
    reach it (a review: STRING on Mistral's sliding window ran as the stock model, unsaid).
    """
    if method == SELF_EXTEND_NAME and first == 1:
        return "Self-Extend with G = 1 groups no distance (floor(r / 1) = r)"
    start, name = (first, "S") if method == STRING_NAME else (second, "w_n")
    windows = [_sliding_window(module) for module in modules]
    if not windows or any(w is None or int(w) > start for w in windows):
        return ""
    method_name = "STRING" if method == STRING_NAME else "Self-Extend"
    return (
        f"every attention layer attends at most {max(int(w) for w in windows) - 1} tokens back (its sliding window), "
        f"and {method_name} changes the distances from {name} = {start} on"
    )


@functools.cache
def _parameters(forward: Callable) -> tuple[str, ...]:
    """The names of a model forward's parameters after ``self``, in order (to find what was passed by position)."""
    return tuple(inspect.signature(forward).parameters)[1:]


def _no_attention_weights(model: torch.nn.Module, args: tuple, kwargs: dict) -> None:
    """Forward pre-hook of the base model: ``output_attentions=True`` gets a warning, as transformers' own sdpa gives,
    since the plan's attention returns no weights (a review: ``attentions`` came back empty, unsaid, even on the eager
    backend, where the stock model returns them).
    """
    if kwargs.get("output_attentions"):
        warnings.warn(
            "freqlab's STRING and Self-Extend attention return no attention weights: output_attentions gives an empty "
            "tuple (freqlab.apply.remove(model) gives back the stock attention and its weights)",
            stacklevel=2,
        )


def _positions_from_mask(model: torch.nn.Module, args: tuple, kwargs: dict):
    """Forward pre-hook of the base model (the module that numbers positions: ``model.model(...)`` and
    ``model.forward(...)`` reach it too) with Self-Extend: a batch given with a 2D mask and without position ids
    gets those ``generate`` builds (the mask's cumulative sum - 1, padding at 1), each row numbered from its first
    real token. transformers' default numbers left padding too: plain RoPE depends on distances only, but
    Self-Extend's grouped positions m // G do not, and each row was grouped as if its padding were text (6e-4 off;
    apply review). Unpadded rows get the default's own numbers; no branch on the mask's values, so that
    ``torch.compile(fullgraph=True)`` traces it.
    """
    names = _parameters(type(model).forward)
    given = dict(zip(names, args, strict=False)) | kwargs
    mask = given.get("attention_mask")
    ids = given.get("input_ids") if given.get("input_ids") is not None else given.get("inputs_embeds")
    if given.get("position_ids") is not None or "position_ids" not in names or ids is None:
        return None
    # a 2D mask is keep (non-zero) or pad (0), whatever its dtype, as transformers reads it
    if not isinstance(mask, torch.Tensor) or mask.dim() != 2:
        return None
    real = mask != 0
    numbered = (real.long().cumsum(-1) - 1).masked_fill(~real, 1)
    # the input's columns of the mask: its last ones, or where cache_position says (a mask kept at a static cache's
    # length ends in padding; read there, the new token was numbered 1, 1.1e-3 off; third adversary review)
    at = given.get("cache_position")
    if isinstance(at, torch.Tensor) and at.dim() == 1 and at.numel() == ids.shape[1]:
        positions = numbered[:, at.to(numbered.device)].to(ids.device)
    else:
        positions = numbered[:, -ids.shape[1] :].to(ids.device)
    slot = names.index("position_ids")
    if slot < len(args):  # passed by position (as None): filled there, not given twice
        return (*args[:slot], positions, *args[slot + 1 :]), kwargs
    return args, {**kwargs, "position_ids": positions}


def _base_model(model: Any) -> torch.nn.Module:
    """The module that turns the mask and cache into position ids (``LlamaModel`` inside ``LlamaForCausalLM``)."""
    base = getattr(model, "base_model", None)
    return base if isinstance(base, torch.nn.Module) else model


def _unhook(model: Any, modules: list[torch.nn.Module]) -> None:
    """Take this module's hooks off the model and ``modules``: those registered here, and those a deep copy of a
    model it was applied to brought along (registered on the original, they have no handle here).
    """
    for handle in _HOOKS.pop(model, ()):
        handle.remove()
    for module in [model, _base_model(model), *modules]:
        for key, hook in list(module._forward_pre_hooks.items()):
            if hook in (_remember_key_offset, _positions_from_mask, _no_attention_weights):
                del module._forward_pre_hooks[key]
                module._forward_pre_hooks_with_kwargs.pop(key, None)


def model_window(model: Any) -> int:
    """The context the model's positions are set up for: ``max_position_embeddings``, or the original window times
    its RoPE scaling factor when larger, where the RoPE parameters name the original (YaRN, llama3, LongRoPE: a YaRN
    block keeps ``max_position_embeddings`` at L and scales to N, and the STRING + YaRN plan's shift S_N = (S/L)·N is
    above L, below N; a review). Linear and dynamic scaling name none: ``max_position_embeddings`` is already the
    scaled window there (Gemma 3's linear factor 8 at 131072), or the original one that dynamic NTK grows from.
    """
    config = _text_config(model)
    L = config_window(lambda name: getattr(config, name, None))
    if L is None:
        found = getattr(config, "max_position_embeddings", None)
        raise FreqlabError(f"{type(model).__name__}: config has no usable max_position_embeddings ({found!r})")
    return L


def apply_string(model: Any, S: int, W: int, backend: str = "auto", flash_fn: Callable | None = None,
                 flash_varlen_fn: Callable | None = None, allow_untested: bool = False) -> Any:  # fmt: skip
    """See :func:`freqlab.apply.string`."""
    _check_model(model)
    _, S, W = _check_shift(model_window(model), S, W)
    return _apply(model, STRING_NAME, S, W, backend, flash_fn, flash_varlen_fn, allow_untested)


def apply_self_extend(model: Any, G: int, w_n: int, backend: str = "auto", flash_fn: Callable | None = None,
                      flash_varlen_fn: Callable | None = None, allow_untested: bool = False) -> Any:  # fmt: skip
    """See :func:`freqlab.apply.self_extend`."""
    _check_model(model)
    G, w_n = _check_group(G, w_n, model_window(model))
    return _apply(model, SELF_EXTEND_NAME, G, w_n, backend, flash_fn, flash_varlen_fn, allow_untested)


def remove(model: Any) -> Any:
    """See :func:`freqlab.apply.remove`."""
    _check_model(model)
    previous = _PREVIOUS.pop(model, None)
    if previous is None and _text_config(model)._attn_implementation in _OWN_NAMES:
        # not a copy: taking it off here took it off that model, unsaid (a review; a shared text_config too)
        if _shares_config(model.config) or _shares_config(_text_config(model)):
            raise FreqlabError(f"no STRING or Self-Extend was applied to this model: its config says so after {SHARED}")
        # a deep copy (or unpickled copy) of an applied model: set up as _apply does for one (a review: it could neither
        # run nor be removed)
        previous = "sdpa" if getattr(model, "_supports_sdpa", False) else "eager"
    if previous is None:
        raise FreqlabError("no STRING or Self-Extend was applied to this model")
    _restore(model, _attention_modules(model), previous)
    return model


def _restore(model: Any, modules: list[torch.nn.Module], previous: str) -> None:
    """The model as it was before any plan: its implementation ``previous``, no hook, no setting."""
    _set_implementation(model, previous)
    _unhook(model, modules)
    for module in modules:
        _SETTINGS.pop(module, None)
        _KEY_OFFSET.pop(module, None)
    for module in model.modules():
        _PASSTHROUGH.pop(module, None)
