"""freqlab.apply's flash backend: STRING's two flash-attention calls merged by their log-sum-exp (An et al., ICLR
2025, Sec. 4; HKUNLP/STRING), on CPU through pure-torch kernels with flash-attn 2's signatures and semantics
(``flash_reference``: ``flash_attn_func``, and ``flash_attn_varlen_func`` for padded batches) put in place of
flash_attn. The real kernels are not run here (no GPU)."""

from __future__ import annotations

import functools
import itertools
import sys
import types

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from apply.flash_reference import flash_attn_func, flash_attn_varlen_func  # noqa: E402
from apply.tiny_models import CACHE, cache_of, decoded_with_cache, left_padded, seeded, tiny_model  # noqa: E402

import freqlab.apply as fa  # noqa: E402
from freqlab.apply.attention import (  # noqa: E402
    merged_attention,
    merged_attention_flash,
    merged_attention_flash_varlen,
    resolve_backend,
)
from freqlab.errors import FreqlabError  # noqa: E402

EXACT = {"rtol": 1e-10, "atol": 1e-10}
FLASH64 = functools.partial(flash_attn_func, lse_dtype=torch.float64)  # float64 end to end, for exact comparisons
VARLEN64 = functools.partial(flash_attn_varlen_func, lse_dtype=torch.float64)
T = 40


def test_the_stand_in_has_flash_attns_bottom_right_causal_mask_and_window():
    """flash-attn's docstring: seqlen_q 2, seqlen_k 5 keeps [[1 1 1 1 0], [1 1 1 1 1]]; seqlen_q 5, seqlen_k 2 keeps
    [[0 0], [0 0], [0 0], [1 0], [1 1]] and an empty row gives 0; a window (w, 0) keeps keys i + k - q - w ..."""
    g = seeded(0)

    def kept(tq: int, tk: int, **options) -> torch.Tensor:
        q = torch.randn(1, tq, 1, 4, generator=g, dtype=torch.float64)
        k = torch.randn(1, tk, 1, 4, generator=g, dtype=torch.float64)
        _, lse, probs = flash_attn_func(q, k, k, causal=True, return_attn_probs=True, **options)
        return (probs[0, 0] > 0).int(), lse[0, 0]

    assert kept(2, 5)[0].tolist() == [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]
    mask, lse = kept(5, 2)
    assert mask.tolist() == [[0, 0], [0, 0], [0, 0], [1, 0], [1, 1]]
    assert lse[:3].tolist() == [torch.inf] * 3 and lse.dtype == torch.float32  # empty rows: +inf, as flash-attn 2
    assert kept(3, 6, window_size=(1, 0))[0].tolist() == [[0, 0, 1, 1, 0, 0], [0, 0, 0, 1, 1, 0], [0, 0, 0, 0, 1, 1]]


def test_the_varlen_stand_in_aligns_each_sequence_to_its_own_bottom_right_and_packs_the_lse_by_head():
    """flash-attn 2's flash_attn_varlen_func: sequence b is q[cu_q[b]:cu_q[b+1]] against k[cu_k[b]:cu_k[b+1]] with
    the causal mask of flash_attn_func on that block; softmax_lse is (nheads, total_q)."""
    g = seeded(1)
    lengths = [(2, 5), (5, 2), (3, 3), (1, 0)]  # (queries, keys); the last sequence has no key
    q = torch.randn(sum(n for n, _ in lengths), 2, 4, generator=g, dtype=torch.float64)
    k, v = (torch.randn(sum(n for _, n in lengths), 1, 4, generator=g, dtype=torch.float64) for _ in range(2))
    cu_q, cu_k = (torch.tensor([0, *itertools.accumulate(n[i] for n in lengths)], dtype=torch.int32) for i in (0, 1))
    out, lse, _ = flash_attn_varlen_func(q, k, v, cu_q, cu_k, 5, 5, causal=True, return_attn_probs=True)
    assert out.shape == (11, 2, 4) and lse.shape == (2, 11) and lse.dtype == torch.float32
    for b, (nq, nk) in enumerate(lengths):
        rows, keys = slice(int(cu_q[b]), int(cu_q[b + 1])), slice(int(cu_k[b]), int(cu_k[b + 1]))
        one, one_lse, probs = flash_attn_func(q[None, rows], k[None, keys], v[None, keys], causal=True,
                                              return_attn_probs=True)  # fmt: skip
        torch.testing.assert_close(out[rows], one[0], rtol=0, atol=0)
        torch.testing.assert_close(lse[:, rows], one_lse[0], rtol=0, atol=0)
        if (nq, nk) == (2, 5):
            assert (probs[0, 0] > 0).int().tolist() == [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]
        if (nq, nk) == (5, 2):
            assert (probs[0, 0] > 0).int().tolist() == [[0, 0], [0, 0], [0, 0], [1, 0], [1, 1]]
    assert out[-1].abs().max() == 0 and lse[:, -1].tolist() == [torch.inf] * 2  # no key: 0 and +inf, as flash-attn 2
    with pytest.raises(AssertionError):  # flash-attn wants int32 offsets
        flash_attn_varlen_func(q, k, v, cu_q.long(), cu_k, 5, 5, causal=True)
    with pytest.raises(AssertionError):  # and max_seqlen covering every sequence
        flash_attn_varlen_func(q, k, v, cu_q, cu_k, 4, 5, causal=True)


def _tensors(q_len: int, kv_len: int, seed: int = 3):
    g = seeded(seed)
    q, fq = (torch.randn(2, 4, q_len, 8, generator=g, dtype=torch.float64) for _ in range(2))
    k, fk, v = (torch.randn(2, 2, kv_len, 8, generator=g, dtype=torch.float64) for _ in range(3))
    return q, k, v, fq, fk


@pytest.mark.parametrize(("q_len", "kv_len"), [(9, 9), (1, 9), (3, 12), (12, 12)])
@pytest.mark.parametrize("threshold", [1, 3, 8, 20])
@pytest.mark.parametrize("sliding_window", [None, 5])
@pytest.mark.parametrize("softcap", [None, 2.0])
def test_the_merge_equals_the_explicit_scores(q_len, kv_len, threshold, sliding_window, softcap):
    """Prefill (q = kv) and decoding (q < kv, keys from a cache), thresholds with no far pair and with every query
    far, a sliding window, softcapping: the merge is the softmax over the union, to float64 rounding."""
    q, k, v, fq, fk = _tensors(q_len, kv_len)
    r = torch.arange(kv_len - q_len, kv_len)[:, None] - torch.arange(kv_len)[None, :]
    mask = None
    if sliding_window is not None:  # the model's own window, as transformers' eager mask writes it
        mask = ((r >= 0) & (r < sliding_window))[None, None].expand(2, 1, q_len, kv_len)
    expected = merged_attention(q, k, v, fq, fk, r >= threshold, mask, 0.3, softcap)
    got = merged_attention_flash(q, k, v, fq, fk, threshold, 0.3, FLASH64, softcap, sliding_window=sliding_window)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def test_with_flash_attns_float32_log_sum_exp_the_merge_is_float32_close():
    q, k, v, fq, fk = _tensors(12, 12)
    r = torch.arange(12)[:, None] - torch.arange(12)[None, :]
    expected = merged_attention(q, k, v, fq, fk, r >= 4, None, 0.3)
    got = merged_attention_flash(q, k, v, fq, fk, 4, 0.3, flash_attn_func)  # LSE rounded to float32
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    assert not torch.allclose(got, expected, rtol=1e-12, atol=1e-12)  # the rounding shows: it is float32's


def _padding(kind: str, kv_len: int) -> torch.Tensor:
    """(4, kv) real-key masks: a full row, a short one, one shorter than every threshold and one of padding only (a
    review: its queries met no key, +inf log-sum-exp, NaN), padded on the left or right."""
    real = torch.zeros(4, kv_len, dtype=torch.bool)
    for b, n in enumerate((kv_len, kv_len - 4, 2, 0)):
        if kind == "left":
            real[b, kv_len - n :] = True
        else:
            real[b, :n] = True
    return real


@pytest.mark.parametrize("padding", ["left", "right"])
@pytest.mark.parametrize(("q_len", "kv_len"), [(12, 12), (1, 12), (3, 12)])
@pytest.mark.parametrize("threshold", [1, 3, 20])
@pytest.mark.parametrize("sliding_window", [None, 5])
@pytest.mark.parametrize("softcap", [None, 2.0])
def test_the_varlen_merge_of_a_padded_batch_equals_the_explicit_scores(padding, q_len, kv_len, threshold,
                                                                       sliding_window, softcap):  # fmt: skip
    """Each row's real keys, its queries among them, the distances of the key array: the explicit merge with the
    padding (and sliding window) mask, on every query that is a real token; queries on padding give 0."""
    g = seeded(5)
    q, fq = (torch.randn(4, 4, q_len, 8, generator=g, dtype=torch.float64) for _ in range(2))
    k, fk, v = (torch.randn(4, 2, kv_len, 8, generator=g, dtype=torch.float64) for _ in range(3))
    real = _padding(padding, kv_len)
    r = torch.arange(kv_len - q_len, kv_len)[:, None] - torch.arange(kv_len)[None, :]
    allowed = (r >= 0) & (r < (sliding_window or kv_len))
    mask = (allowed[None] & real[:, None, :])[:, None]  # (4, 1, q, kv)
    calls = []

    def counted(*args, **kwargs):
        calls.append(tuple(kwargs["cu_seqlens_k"].tolist()))
        return VARLEN64(*args, **kwargs)

    got = merged_attention_flash_varlen(q, k, v, fq, fk, real, threshold, 0.3, counted, softcap,
                                        sliding_window=sliding_window)  # fmt: skip
    queries = real[:, kv_len - q_len :]  # (4, q): the queries that are real tokens
    expected = merged_attention(q, k, v, fq, fk, r >= threshold, mask, 0.3, softcap)
    torch.testing.assert_close(got[queries], expected[queries], rtol=1e-12, atol=1e-12)
    assert not got[~queries].any()
    lengths = real.sum(1)[queries.any(1)]  # the rows in the calls: those with a real query
    assert calls[0] == tuple([0, *itertools.accumulate(lengths.tolist())])  # one call for the whole batch
    far = (lengths - threshold)[lengths > threshold].tolist()  # the rows with a far pair, their first n - S keys
    assert calls[1:] == ([tuple([0, *itertools.accumulate(far)])] if far and (sliding_window or 99) > threshold else [])


def _ids(batch: int = 1, length: int = T, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 101, (batch, length), generator=seeded(seed))


def _apply(model, method: str, **options):
    return getattr(fa, method)(model, *((16, 4) if method == "string" else (3, 8)), **options)


def _logits(model, ids) -> torch.Tensor:
    with torch.no_grad():
        return model(ids).logits


@pytest.mark.parametrize("method", ["string", "self_extend"])
@pytest.mark.parametrize("model_type", ["llama", "qwen2", "mistral", "gemma2", "gemma3_text"])
def test_flash_logits_equal_the_sdpa_path(model_type, method):
    """Gemma 2 (softcapping; the SDPA path gives way to explicit scores) and Gemma 3 (local and global layers) too."""
    model = tiny_model(model_type)
    ids = _ids(batch=2)
    _apply(model, method, backend="sdpa")
    expected = _logits(model, ids)
    calls = []

    def counted(*args, **kwargs):
        calls.append(kwargs.get("window_size"))
        return FLASH64(*args, **kwargs)

    _apply(model, method, backend="flash", flash_fn=counted)
    assert model.config._attn_implementation == f"freqlab_{method}_lse"
    torch.testing.assert_close(_logits(model, ids), expected, **EXACT)
    threshold = 16 if method == "string" else 8  # near pairs r <= threshold - 1; far ones r >= threshold
    window = (24 - 1 - threshold, 0)  # the sliding window 24 (Mistral's layers, Gemma's first): r <= 23
    far = {"mistral": [window, window], "gemma2": [window, None], "gemma3_text": [window, None]}.get(model_type)
    assert calls[1::2] == (far or [None, None])  # two layers, two calls each
    assert calls[0::2] == [(threshold - 1, 0)] * 2


@pytest.mark.parametrize("model_type", ["llama", "mistral"])
def test_self_extend_with_no_neighbour_window_on_flash_equals_the_sdpa_path(model_type):
    """w_n = 0: every pair is grouped. The near call's window (-1, 0) is flash-attn's "no limit", so it attended
    every key at its real position beside the far call's grouped ones (and past Mistral's sliding window): 1.4e-3
    off on Llama, 0.2-0.3 on Mistral (apply review). One call of the grouped form now, padded batches too."""
    model = tiny_model(model_type)
    ids = _ids(batch=2)
    fa.self_extend(model, 2, 0, backend="sdpa")
    expected = _logits(model, ids)
    rows = [_ids(length=n, seed=n)[0] for n in (T, 29)]
    padded = _padded_logits(model, rows, "left", steps=2)
    calls = []

    def counted(*args, **kwargs):
        calls.append(kwargs.get("window_size"))
        return FLASH64(*args, **kwargs)

    fa.self_extend(model, 2, 0, backend="flash", flash_fn=counted, flash_varlen_fn=VARLEN64)
    torch.testing.assert_close(_logits(model, ids), expected, **EXACT)
    window = (24 - 1, 0) if model_type == "mistral" else (T - 1, 0)
    assert calls == [window, window]  # one call per layer, every pair in it
    for got, want in zip(_padded_logits(model, rows, "left", steps=2), padded, strict=True):
        torch.testing.assert_close(got, want, **EXACT)


@pytest.mark.parametrize("method", ["string", "self_extend"])
@pytest.mark.parametrize("model_type", ["llama", "qwen2"])
def test_flash_decoding_with_the_cache_equals_the_sdpa_path(model_type, method):
    model = tiny_model(model_type)
    ids = _ids(length=T + 8)
    _apply(model, method, backend="sdpa")
    full = _logits(model, ids)
    _apply(model, method, backend="flash", flash_fn=FLASH64)
    torch.testing.assert_close(decoded_with_cache(model, ids, T), full[:, T - 1 :], **EXACT)


def _padded_logits(model, rows: list[torch.Tensor], padding: str, steps: int = 0) -> list[torch.Tensor]:
    """Logits of each row's real tokens in one padded batch: left padding (generate's position ids) then ``steps``
    decoding steps on the KV cache, or right padding (no decoding: a token after the padding would put padding
    between real tokens)."""
    ids, mask, positions = left_padded(rows)
    width = ids.shape[1]
    if padding == "right":
        ids, mask, positions = torch.zeros_like(ids), torch.zeros_like(mask), None
        for i, row in enumerate(rows):
            ids[i, : len(row)], mask[i, : len(row)] = row, 1
    nxt = _ids(batch=len(rows), length=steps, seed=7)
    with torch.no_grad():
        out = model(ids, attention_mask=mask, position_ids=positions, use_cache=True)
        logits, cache = [out.logits], cache_of(out)
        for t in range(steps):
            mask = torch.cat((mask, torch.ones_like(nxt[:, :1])), 1)
            out = model(nxt[:, t : t + 1], attention_mask=mask, position_ids=positions[:, -1:] + 1 + t,
                        **{CACHE: cache}, use_cache=True)  # fmt: skip
            logits.append(out.logits)
    logits = torch.cat(logits, 1)
    return [logits[i, width - len(row) :] if padding == "left" else logits[i, : len(row)] for i, row in enumerate(rows)]


@pytest.mark.parametrize("padding", ["left", "right"])
@pytest.mark.parametrize("method", ["string", "self_extend"])
@pytest.mark.parametrize("model_type", ["llama", "qwen2", "mistral", "gemma2"])
def test_padded_batches_run_in_varlen_calls_and_equal_the_sdpa_path(model_type, method, padding):
    """transformers' flash mask is (batch, keys); the rows' runs of real tokens go through flash_attn_varlen_func
    (two calls per layer for the whole batch, none of flash_attn_func): prefill and, left-padded, decoding with the
    cache, against the exact SDPA path (explicit scores on Gemma 2) on the same batch. Mistral and Gemma 2 slide a
    window of 24 (< T), and their cache keeps only the window."""
    rows = [_ids(length=n, seed=n)[0] for n in (T, 29, 35)]
    steps = 4 if padding == "left" else 0
    model = _apply(tiny_model(model_type), method, backend="sdpa")
    expected = _padded_logits(model, rows, padding, steps)
    calls = {"dense": 0, "varlen": 0}

    def counted(kind, fn):
        def call(*args, **kwargs):
            calls[kind] += 1
            return fn(*args, **kwargs)

        return call

    _apply(
        model, method, backend="flash", flash_fn=counted("dense", FLASH64), flash_varlen_fn=counted("varlen", VARLEN64)
    )
    for got, want in zip(_padded_logits(model, rows, padding, steps), expected):
        torch.testing.assert_close(got, want, **EXACT)
    assert calls["dense"] + calls["varlen"] == 2 * 2 * (1 + steps)  # two layers, two calls each, per forward
    # the prefill is padded in every layer; so is each step of a full-attention layer, while a sliding layer's cache
    # may keep only real tokens by then (its mask is None: one flash_attn_func call for the batch)
    assert calls["varlen"] >= 4 and (calls["dense"] == 0 or model_type in ("mistral", "gemma2"))


@pytest.mark.parametrize("method", ["string", "self_extend"])
def test_right_padding_with_the_masks_position_ids_and_a_chunk_ending_in_padding_equal_the_sdpa_path(method):
    """Right padding with the position ids Hugging Face builds from the mask (pads at 1): Self-Extend's keys take
    their positions from each row's last real query; a prompt given in two calls on the dynamic cache whose second
    ends in padding in every row is no static cache (a review saw both: 9.9e-4 off, a refusal)."""
    rows = [_ids(length=n, seed=n)[0] for n in (30, 25)]
    ids = torch.zeros(2, 32, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, : len(row)], mask[i, : len(row)] = row, 1
    positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
    model = _apply(tiny_model("llama"), method, backend="flash", flash_fn=FLASH64, flash_varlen_fn=VARLEN64)
    with torch.no_grad():
        batch = model(ids, attention_mask=mask, position_ids=positions).logits
        first = model(ids[:, :20], attention_mask=mask[:, :20], use_cache=True)
        second = model(ids[:, 20:], attention_mask=mask, **{CACHE: cache_of(first)}, use_cache=True).logits
    for i, row in enumerate(rows):
        alone = _logits(model, row[None])[0]
        torch.testing.assert_close(batch[i, : len(row)], alone, **EXACT)
        torch.testing.assert_close(torch.cat((first.logits[i], second[i]))[: len(row)], alone, **EXACT)


def test_a_padded_batch_without_a_varlen_kernel_is_refused_in_one_line():
    model = _apply(tiny_model("llama"), "string", backend="flash", flash_fn=FLASH64)
    ids, mask, positions = left_padded([_ids(length=n, seed=n)[0] for n in (T, 29)])
    refused = (r"^freqlab.apply's flash backend: a padded batch needs flash_varlen_fn \(flash_attn_varlen_func's "
               r"signature\) beside the flash_fn given; use backend='sdpa'$")  # fmt: skip
    with pytest.raises(FreqlabError, match=refused), torch.no_grad():
        model(ids, attention_mask=mask, position_ids=positions)


def test_with_gradients_on_it_refuses_in_one_line():
    """flash-attn's backward (FlashAttnFunc.backward(ctx, dout, *args)) drops the log-sum-exp's gradient, which the
    merge weights depend on: gradients through it would be wrong, so it refuses."""
    model = _apply(tiny_model("llama"), "string", backend="flash", flash_fn=FLASH64)
    refused = r"^freqlab.apply's flash backend is for inference: .*\(generate does\) or use backend='sdpa'$"
    with pytest.raises(FreqlabError, match=refused):
        model(_ids())


def test_padding_inside_a_row_is_refused_in_one_line():
    model = _apply(tiny_model("llama"), "string", backend="flash", flash_fn=FLASH64, flash_varlen_fn=VARLEN64)
    ids = _ids(batch=2)
    mask = torch.ones_like(ids)
    mask[1, 5:9] = 0
    refused = r"^freqlab.apply's flash backend: row 1 of the batch has padding between real tokens; use backend='sdpa'$"
    with pytest.raises(FreqlabError, match=refused), torch.no_grad():
        model(ids, attention_mask=mask)
    with torch.no_grad():  # an all-ones mask is no padding
        torch.testing.assert_close(model(ids, attention_mask=torch.ones_like(ids)).logits, _logits(model, ids))


def test_auto_picks_flash_for_a_flash_model_whose_kernels_import(monkeypatch):
    assert resolve_backend("auto", "sdpa") == ("sdpa", None, None)
    assert resolve_backend("auto", "sdpa", FLASH64) == ("sdpa", None, None)  # only a flash model runs flash by itself
    assert resolve_backend("auto", "eager") == ("sdpa", None, None)
    assert resolve_backend("eager", "flash_attention_2") == ("eager", None, None)
    monkeypatch.setitem(sys.modules, "flash_attn", None)  # not installed
    assert resolve_backend("auto", "flash_attention_2") == ("sdpa", None, None)
    missing = r"^backend 'flash' needs flash-attn's flash_attn.flash_attn_func and flash_attn_varlen_func, which are"
    with pytest.raises(FreqlabError, match=missing):
        resolve_backend("flash", "sdpa")
    installed = types.ModuleType("flash_attn")
    installed.flash_attn_func = flash_attn_func
    monkeypatch.setitem(sys.modules, "flash_attn", installed)
    with pytest.raises(FreqlabError, match=missing):  # a flash-attn without the varlen kernel
        resolve_backend("flash", "sdpa")
    installed.flash_attn_varlen_func = flash_attn_varlen_func
    assert resolve_backend("auto", "flash_attention_2") == ("flash", flash_attn_func, flash_attn_varlen_func)
    assert resolve_backend("flash", "sdpa") == ("flash", flash_attn_func, flash_attn_varlen_func)
    assert resolve_backend("flash", "sdpa", FLASH64) == ("flash", FLASH64, None)  # a stand-in is not mixed with it
    hopper = types.ModuleType("flash_attn_interface")
    hopper.flash_attn_func, hopper.flash_attn_varlen_func = FLASH64, VARLEN64
    monkeypatch.setitem(sys.modules, "flash_attn_interface", hopper)
    assert resolve_backend("auto", "flash_attention_3") == ("flash", FLASH64, VARLEN64)
    with pytest.raises(FreqlabError, match="backend must be one of auto, sdpa, eager, flash"):
        resolve_backend("flash2", "sdpa")


@pytest.mark.parametrize(("name", "kernel"), [("flash_fn", "flash_attn_func"),
                                              ("flash_varlen_fn", "flash_attn_varlen_func")])  # fmt: skip
def test_a_kernel_beside_a_backend_that_never_calls_it_or_not_callable_is_refused(name, kernel):
    # a flash_fn given with backend='sdpa' was dropped silently; a non-function failed only at the first forward
    given = {"flash_fn": FLASH64, name: FLASH64 if name == "flash_fn" else VARLEN64}
    with pytest.raises(FreqlabError, match=rf"^{name} is for backend 'flash' \(or 'auto' on a flash-attention"):
        resolve_backend("sdpa", "sdpa", **{name: given[name]})
    with pytest.raises(FreqlabError, match=rf"^{name} is for backend 'flash' .*, not 'eager'$"):
        fa.string(tiny_model("llama"), 16, 4, backend="eager", **{name: given[name]})
    with pytest.raises(FreqlabError, match=rf"^{name} must be a function with {kernel}'s signature, got 3$"):
        fa.string(tiny_model("llama"), 16, 4, backend="flash", **{**given, name: 3})


def test_a_varlen_kernel_without_its_dense_one_is_refused():
    with pytest.raises(FreqlabError, match=r"^flash_varlen_fn goes with flash_fn \(the two kernels of one flash-"):
        fa.string(tiny_model("llama"), 16, 4, backend="flash", flash_varlen_fn=VARLEN64)


def _short_output(q, k, v, **options):
    out, lse, probs = FLASH64(q, k, v, **options)
    return out[:, :-1], lse, probs


def _output_only(q, k, v, **options):
    return FLASH64(q, k, v, **options)[0]


def _lse_transposed(q, k, v, **options):
    out, lse, probs = FLASH64(q, k, v, **options)
    return out, lse.transpose(1, 2), probs


@pytest.mark.parametrize(
    ("flash_fn", "got"),
    [
        (_short_output, f"3 values: (1, {T - 1}, 4, 8), (1, 4, {T}), (1, 4, {T}, {T})"),
        (_output_only, f"one tensor of shape (1, {T}, 4, 8)"),
        (_lse_transposed, f"3 values: (1, {T}, 4, 8), (1, {T}, 4), (1, 4, {T}, {T})"),
    ],
)
def test_a_flash_fn_returning_other_shapes_is_one_line_naming_it(flash_fn, got):
    # they were a RuntimeError/IndexError from inside the merge
    model = fa.string(tiny_model("llama"), 16, 4, backend="flash", flash_fn=flash_fn)
    with pytest.raises(FreqlabError) as error:
        _logits(model, _ids())
    assert str(error.value) == (
        f"flash_fn {flash_fn.__name__!r} must return (out, lse, ...) as flash_attn_func with return_attn_probs=True "
        f"does: out of shape (1, {T}, 4, 8) and lse of shape (1, 4, {T}); got {got}"
    )


def _varlen_lse_by_token(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, **options):
    out, lse, _ = VARLEN64(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, **options)
    return out, lse.T  # (total_q, H): the per-token layout of some ports, not flash-attn's (H, total_q)


def test_a_flash_varlen_fn_returning_other_shapes_is_one_line_naming_it():
    model = fa.string(tiny_model("llama"), 16, 4, backend="flash", flash_fn=FLASH64,
                      flash_varlen_fn=_varlen_lse_by_token)  # fmt: skip
    ids, mask, positions = left_padded([_ids(length=n, seed=n)[0] for n in (T, 29)])
    with pytest.raises(FreqlabError) as error, torch.no_grad():
        model(ids, attention_mask=mask, position_ids=positions)
    assert str(error.value) == (
        "flash_varlen_fn '_varlen_lse_by_token' must return (out, lse, ...) as flash_attn_varlen_func with "
        f"return_attn_probs=True does: out of shape ({T + 29}, 4, 8) and lse of shape (4, {T + 29}); got 2 values: "
        f"({T + 29}, 4, 8), ({T + 29}, 4)"
    )
