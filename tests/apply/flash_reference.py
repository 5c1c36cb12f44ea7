"""Pure-torch stand-ins for flash-attn 2's ``flash_attn_func`` and ``flash_attn_varlen_func``: their signatures and
semantics, on CPU, any dtype.

What it reproduces (flash-attn 2's docstring, Dao-AILab/flash-attention ``flash_attn/flash_attn_interface.py``):
q (B, Tq, H, d), k and v (B, Tk, H_kv, d) with H a multiple of H_kv (grouped heads); the causal mask aligned to the
bottom right (query i sees keys j <= i + Tk - Tq); ``window_size=(left, right)`` keeps keys in
[i + Tk - Tq - left, i + Tk - Tq + right] (-1: unbounded; causal sets right to 0); ``softcap`` > 0 caps the scaled
scores as softcap · tanh(s / softcap); a row with no allowed key gives output 0 and log-sum-exp +inf (its non-split
kernel, ``softmax.h``); with ``return_attn_probs=True`` it returns (out, softmax_lse (B, H, Tq), probabilities), the
log-sum-exp of the scaled scores in float32. ``lse_dtype`` (not flash-attn's) lets a float64 test keep float64.
"""

from __future__ import annotations

import torch


def flash_attn_func(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    dropout_p: float = 0.0,
    softmax_scale: float | None = None,
    causal: bool = False,
    window_size: tuple[int, int] = (-1, -1),
    softcap: float = 0.0,
    alibi_slopes: torch.Tensor | None = None,
    deterministic: bool = False,
    return_attn_probs: bool = False,
    *,
    lse_dtype: torch.dtype = torch.float32,
):
    assert dropout_p == 0.0 and alibi_slopes is None, "the stand-in computes no dropout and no ALiBi"
    tq, heads, d = q.shape[1:]
    tk, groups = k.shape[1], heads // k.shape[2]
    scale = d**-0.5 if softmax_scale is None else softmax_scale
    work = torch.promote_types(q.dtype, torch.float32)
    k, v = (x.repeat_interleave(groups, dim=2).to(work) for x in (k, v))
    scores = torch.einsum("bqhd,bkhd->bhqk", q.to(work), k) * scale
    if softcap > 0:
        scores = torch.tanh(scores / softcap) * softcap
    diagonal = torch.arange(tq)[:, None] + tk - tq  # the key index a query's distance 0 falls on
    j = torch.arange(tk)[None, :]
    left, right = window_size
    right = 0 if causal else right
    allowed = torch.ones(tq, tk, dtype=torch.bool)
    if left >= 0:
        allowed &= j >= diagonal - left
    if right >= 0:
        allowed &= j <= diagonal + right
    scores = scores.masked_fill(~allowed, -torch.inf)
    lse = torch.logsumexp(scores, dim=-1)  # (B, H, Tq); -inf on empty rows
    empty = ~allowed.any(-1)
    probs = (scores - lse[..., None]).exp().masked_fill(empty[:, None], 0.0)
    out = torch.einsum("bhqk,bkhd->bqhd", probs, v).to(q.dtype)
    lse = lse.masked_fill(empty, torch.inf).to(lse_dtype)
    return (out, lse, probs) if return_attn_probs else out


def flash_attn_varlen_func(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    max_seqlen_q: int,
    max_seqlen_k: int,
    dropout_p: float = 0.0,
    softmax_scale: float | None = None,
    causal: bool = False,
    window_size: tuple[int, int] = (-1, -1),
    softcap: float = 0.0,
    alibi_slopes: torch.Tensor | None = None,
    deterministic: bool = False,
    return_attn_probs: bool = False,
    block_table: torch.Tensor | None = None,
    *,
    lse_dtype: torch.dtype = torch.float32,
):
    """flash-attn 2's ``flash_attn_varlen_func``: sequences packed one after another, q (total_q, H, d), k and v
    (total_k, H_kv, d); sequence b is q[cu_seqlens_q[b]:cu_seqlens_q[b + 1]] against
    k[cu_seqlens_k[b]:cu_seqlens_k[b + 1]], each with :func:`flash_attn_func`'s mask aligned to the bottom right of its
    own block (a sequence without keys: output 0, log-sum-exp +inf). Returns (out (total_q, H, d), softmax_lse
    (H, total_q), None) with ``return_attn_probs=True`` (flash-attn's varlen layout of the log-sum-exp).

    It checks what flash-attn requires of the call: int32 ``cu_seqlens`` starting at 0, non-decreasing, ending at the
    packed lengths, the same number of sequences for q and k, and ``max_seqlen_*`` at least every sequence's length.
    """
    assert block_table is None, "the stand-in has no paged KV cache"
    for cu, packed, longest in ((cu_seqlens_q, q, max_seqlen_q), (cu_seqlens_k, k, max_seqlen_k)):
        assert cu.dtype == torch.int32 and cu.ndim == 1 and int(cu[0]) == 0, cu
        assert int(cu[-1]) == packed.shape[0] and bool((cu.diff() >= 0).all()), (cu, packed.shape)
        assert isinstance(longest, int) and longest >= int(cu.diff().max()), (longest, cu)
    assert cu_seqlens_q.shape == cu_seqlens_k.shape, (cu_seqlens_q, cu_seqlens_k)
    options = {"dropout_p": dropout_p, "softmax_scale": softmax_scale, "causal": causal, "window_size": window_size,
               "softcap": softcap, "alibi_slopes": alibi_slopes, "lse_dtype": lse_dtype}  # fmt: skip
    outs, lses = [], []
    bounds = zip(cu_seqlens_q.tolist(), cu_seqlens_q.tolist()[1:], cu_seqlens_k.tolist(), cu_seqlens_k.tolist()[1:])
    for q0, q1, k0, k1 in bounds:
        out, lse, _ = flash_attn_func(q[None, q0:q1], k[None, k0:k1], v[None, k0:k1], return_attn_probs=True, **options)
        outs.append(out[0])
        lses.append(lse[0])
    out, lse = torch.cat(outs), torch.cat(lses, dim=-1)
    return (out, lse, None) if return_attn_probs else out
