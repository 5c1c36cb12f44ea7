"""freqlab.apply's flash backend: STRING's two flash-attention calls merged by their log-sum-exp (An et al., ICLR
2025, Sec. 4; HKUNLP/STRING), on CPU through a pure-torch kernel with flash-attn 2's signature and semantics
(``flash_reference``) put in place of flash_attn. The real kernel is not run here (no GPU)."""

from __future__ import annotations

import functools
import sys
import types

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from apply.flash_reference import flash_attn_func  # noqa: E402
from apply.tiny_models import CACHE, cache_of, decoded_with_cache, left_padded, tiny_model  # noqa: E402

import freqlab.apply as fa  # noqa: E402
from freqlab.apply.attention import merged_attention, merged_attention_flash, resolve_backend  # noqa: E402
from freqlab.errors import FreqlabError  # noqa: E402

EXACT = {"rtol": 1e-10, "atol": 1e-10}
FLASH64 = functools.partial(flash_attn_func, lse_dtype=torch.float64)  # float64 end to end, for exact comparisons
T = 40


def test_the_stand_in_has_flash_attns_bottom_right_causal_mask_and_window():
    """flash-attn's docstring: seqlen_q 2, seqlen_k 5 keeps [[1 1 1 1 0], [1 1 1 1 1]]; seqlen_q 5, seqlen_k 2 keeps
    [[0 0], [0 0], [0 0], [1 0], [1 1]] and an empty row gives 0; a window (w, 0) keeps keys i + k - q - w ..."""
    g = torch.Generator().manual_seed(0)

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


def _tensors(q_len: int, kv_len: int, seed: int = 3):
    g = torch.Generator().manual_seed(seed)
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


def _ids(batch: int = 1, length: int = T, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 101, (batch, length), generator=torch.Generator().manual_seed(seed))


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


@pytest.mark.parametrize("method", ["string", "self_extend"])
@pytest.mark.parametrize("model_type", ["llama", "qwen2"])
def test_flash_decoding_with_the_cache_equals_the_sdpa_path(model_type, method):
    model = tiny_model(model_type)
    ids = _ids(length=T + 8)
    _apply(model, method, backend="sdpa")
    full = _logits(model, ids)
    _apply(model, method, backend="flash", flash_fn=FLASH64)
    torch.testing.assert_close(decoded_with_cache(model, ids, T), full[:, T - 1 :], **EXACT)


@pytest.mark.parametrize("method", ["string", "self_extend"])
@pytest.mark.parametrize("model_type", ["llama", "qwen2", "mistral"])
def test_padded_batches_run_row_by_row_and_equal_single_rows(model_type, method):
    """transformers' flash mask is (batch, keys); each row runs on its real tokens: left padding (with generate's
    position ids), then decoding a step with the cache; right padding."""
    model = _apply(tiny_model(model_type), method, backend="flash", flash_fn=FLASH64)
    rows = [_ids(length=n, seed=n)[0] for n in (T, 29, 35)]
    ids, mask, positions = left_padded(rows)
    nxt = _ids(batch=3, length=1, seed=7)
    with torch.no_grad():
        out = model(ids, attention_mask=mask, position_ids=positions, use_cache=True)
        step = model(nxt, attention_mask=torch.cat((mask, torch.ones_like(nxt)), 1), position_ids=positions[:, -1:] + 1,
                     **{CACHE: cache_of(out)}, use_cache=True).logits  # fmt: skip
    for i, row in enumerate(rows):
        single = _logits(model, torch.cat((row, nxt[i]))[None])[0]
        torch.testing.assert_close(out.logits[i, T - len(row) :], single[:-1], **EXACT)
        torch.testing.assert_close(step[i, 0], single[-1], **EXACT)
    right, right_mask = torch.zeros_like(ids), torch.zeros_like(mask)
    for i, row in enumerate(rows):
        right[i, : len(row)], right_mask[i, : len(row)] = row, 1
    with torch.no_grad():
        batch = model(right, attention_mask=right_mask).logits
    for i, row in enumerate(rows):
        torch.testing.assert_close(batch[i, : len(row)], _logits(model, row[None])[0], **EXACT)


def test_with_gradients_on_it_refuses_in_one_line():
    """flash-attn's backward (FlashAttnFunc.backward(ctx, dout, *args)) drops the log-sum-exp's gradient, which the
    merge weights depend on: gradients through it would be wrong, so it refuses."""
    model = _apply(tiny_model("llama"), "string", backend="flash", flash_fn=FLASH64)
    refused = r"^freqlab.apply's flash backend is for inference: .*\(generate does\) or use backend='sdpa'$"
    with pytest.raises(FreqlabError, match=refused):
        model(_ids())


def test_padding_inside_a_row_is_refused_in_one_line():
    model = _apply(tiny_model("llama"), "string", backend="flash", flash_fn=FLASH64)
    ids = _ids(batch=2)
    mask = torch.ones_like(ids)
    mask[1, 5:9] = 0
    refused = r"^freqlab.apply's flash backend: row 1 of the batch has padding between real tokens; use backend='sdpa'$"
    with pytest.raises(FreqlabError, match=refused), torch.no_grad():
        model(ids, attention_mask=mask)
    with torch.no_grad():  # an all-ones mask is no padding
        torch.testing.assert_close(model(ids, attention_mask=torch.ones_like(ids)).logits, _logits(model, ids))


def test_auto_picks_flash_for_a_flash_model_whose_kernel_imports(monkeypatch):
    assert resolve_backend("auto", "sdpa") == ("sdpa", None)
    assert resolve_backend("auto", "sdpa", FLASH64) == ("sdpa", None)  # only a flash model runs flash by itself
    assert resolve_backend("auto", "eager") == ("sdpa", None)
    assert resolve_backend("eager", "flash_attention_2") == ("eager", None)
    monkeypatch.setitem(sys.modules, "flash_attn", None)  # not installed
    assert resolve_backend("auto", "flash_attention_2") == ("sdpa", None)
    with pytest.raises(FreqlabError, match=r"^backend 'flash' needs flash-attn's flash_attn.flash_attn_func, which is"):
        resolve_backend("flash", "sdpa")
    installed = types.ModuleType("flash_attn")
    installed.flash_attn_func = flash_attn_func
    monkeypatch.setitem(sys.modules, "flash_attn", installed)
    assert resolve_backend("auto", "flash_attention_2") == ("flash", flash_attn_func)
    assert resolve_backend("flash", "sdpa") == ("flash", flash_attn_func)
    hopper = types.ModuleType("flash_attn_interface")
    hopper.flash_attn_func = FLASH64
    monkeypatch.setitem(sys.modules, "flash_attn_interface", hopper)
    assert resolve_backend("auto", "flash_attention_3") == ("flash", FLASH64)
    with pytest.raises(FreqlabError, match="backend must be one of auto, sdpa, eager, flash"):
        resolve_backend("flash2", "sdpa")


def test_a_flash_fn_beside_a_backend_that_never_calls_it_or_not_callable_is_refused():
    # a flash_fn given with backend='sdpa' was dropped silently; a non-function failed only at the first forward
    with pytest.raises(FreqlabError, match=r"^flash_fn is for backend 'flash' \(or 'auto' on a flash-attention"):
        resolve_backend("sdpa", "sdpa", FLASH64)
    with pytest.raises(FreqlabError, match=r"^flash_fn is for backend 'flash' .*, not 'eager'$"):
        fa.string(tiny_model("llama"), 16, 4, backend="eager", flash_fn=FLASH64)
    with pytest.raises(FreqlabError, match=r"^flash_fn must be a function with flash_attn_func's signature, got 3$"):
        fa.string(tiny_model("llama"), 16, 4, backend="flash", flash_fn=3)


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
