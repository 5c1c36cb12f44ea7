"""freqlab.apply: STRING (An et al., ICLR 2025, Sec. 4, Eq. 4, Fig. 5) and Self-Extend (Jin et al., ICML 2024,
Sec. 3.2, Alg. 1) on tiny random transformers models, float64 on CPU, against an explicit reference."""

from __future__ import annotations

import copy
import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from apply.tiny_models import (  # noqa: E402
    CACHE,
    MODEL_TYPES,
    SLIDING,
    L,
    cache_of,
    decoded_with_cache,
    exact_rope,
    left_padded,
    reference_logits,
    rotary_of,
    seeded,
    tiny_model,
)

import freqlab.apply as fa  # noqa: E402
from freqlab.errors import FreqlabError  # noqa: E402
from freqlab.plan.self_extend import self_extend_position_matrix  # noqa: E402
from freqlab.plan.string import string_position_matrix  # noqa: E402

EXACT = {"rtol": 1e-10, "atol": 1e-10}  # float64, up to the rounding of composed rotations
# Gemma 2 runs only transformers' eager attention (softcapping), whose softmax is float32 even for float64 models:
# against the stock model it agrees to float32 rounding.
FLOAT32_SOFTMAX = {"rtol": 1e-5, "atol": 1e-6}


def stock(model_type: str) -> dict:
    """Tolerance against the stock model: exact, except where its attention rounds to float32 (Gemma 2)."""
    return FLOAT32_SOFTMAX if model_type == "gemma2" else {"rtol": 1e-12, "atol": 1e-12}


T = 40  # prompt length in the tests: > the sliding window (24), < L (64)


def _ids(batch: int = 1, length: int = T, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 101, (batch, length), generator=seeded(seed))


def _logits(model, ids, **kwargs) -> torch.Tensor:
    with torch.no_grad():
        return model(ids, **kwargs).logits


def test_the_models_and_inputs_are_on_the_device_the_run_asks_for():
    # FREQLAB_TEST_DEVICE=cuda runs this folder on the GPU (tests/apply/conftest.py); CI runs it on the CPU
    device = os.environ.get("FREQLAB_TEST_DEVICE") or "cpu"
    assert next(tiny_model("llama").parameters()).device.type == _ids().device.type == device


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_reference_is_the_stock_model_with_plain_distances(model_type):
    model = tiny_model(model_type)
    exact_rope(model)
    ids = _ids()
    plain = np.subtract.outer(np.arange(T), np.arange(T))  # P[m, n] = m - n (the reference ignores n > m)
    torch.testing.assert_close(reference_logits(model, ids, plain), _logits(model, ids), **stock(model_type))


@pytest.mark.parametrize("backend", ["sdpa", "eager"])
@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_string_logits_equal_the_shifted_position_matrix(model_type, backend):
    model = tiny_model(model_type)
    exact_rope(model)
    ids = _ids()
    S, W = 16, 4  # Eq. 4: r >= 16 uses r - 12
    expected = reference_logits(model, ids, string_position_matrix(T, S, W))
    before = _logits(model, ids)
    fa.string(model, S, W, backend=backend)
    got = _logits(model, ids)
    torch.testing.assert_close(got, expected, **EXACT)
    assert not torch.allclose(got[:, S:], before[:, S:]), "STRING must change the attention of queries past S"
    torch.testing.assert_close(got[:, :S], before[:, :S], **stock(model_type))  # rows m < S have no pair at r >= S


@pytest.mark.parametrize("backend", ["sdpa", "eager"])
@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_self_extend_logits_equal_the_grouped_positions(model_type, backend):
    model = tiny_model(model_type)
    exact_rope(model)
    ids = _ids()
    G, w_n = 3, 8
    expected = reference_logits(model, ids, self_extend_position_matrix(T, G, w_n))
    fa.self_extend(model, G, w_n, backend=backend)
    torch.testing.assert_close(_logits(model, ids), expected, **EXACT)


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_a_prompt_of_at_most_S_tokens_is_the_stock_model(model_type):
    """Eq. 4 changes only pairs at r >= S, so a prompt of S tokens (whatever L - S is) keeps the model's own
    rotations; Self-Extend likewise up to w_n tokens."""
    model = tiny_model(model_type)
    ids = _ids(length=T)
    before = _logits(model, ids)
    longer = _ids(length=T + 1)
    stock_longer = _logits(model, longer)
    fa.string(model, T, 4)
    torch.testing.assert_close(_logits(model, ids), before, **stock(model_type))
    if model_type != "mistral":  # (Mistral's every layer has a window of 24: it never sees r = T)
        assert not torch.allclose(_logits(model, longer)[:, -1], stock_longer[:, -1])  # r = T now uses W
    fa.remove(model)
    fa.self_extend(model, 4, T)  # every pair inside the neighbour window
    torch.testing.assert_close(_logits(model, ids), before, **stock(model_type))


def _apply(model, method: str, backend: str = "sdpa"):
    return getattr(fa, method)(model, *((16, 4) if method == "string" else (3, 8)), backend=backend)


@pytest.mark.parametrize("backend", ["sdpa", "eager"])
@pytest.mark.parametrize("method", ["string", "self_extend"])
@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_decoding_with_the_cache_equals_recomputation(model_type, method, backend):
    model = tiny_model(model_type)
    _apply(model, method, backend)
    ids = _ids(length=T + 8)
    steps = decoded_with_cache(model, ids, T)
    full = _logits(model, ids)
    torch.testing.assert_close(steps, full[:, T - 1 :], **EXACT)


@pytest.mark.parametrize("backend", ["sdpa", "eager"])
@pytest.mark.parametrize("method", ["string", "self_extend"])
@pytest.mark.parametrize("model_type", ["llama", "qwen3", "gemma2"])
def test_padded_batches_equal_single_rows(model_type, method, backend):
    model = tiny_model(model_type)
    _apply(model, method, backend)
    rows = [_ids(length=n, seed=n)[0] for n in (T, 29, 35)]
    ids, mask, positions = left_padded(rows)
    batch = _logits(model, ids, attention_mask=mask, position_ids=positions)
    for i, row in enumerate(rows):
        torch.testing.assert_close(batch[i, T - len(row) :], _logits(model, row[None])[0], **EXACT)
    right = torch.zeros_like(ids)  # right padding: positions 0.. in every row
    right_mask = torch.zeros_like(mask)
    for i, row in enumerate(rows):
        right[i, : len(row)], right_mask[i, : len(row)] = row, 1
    batch = _logits(model, right, attention_mask=right_mask)
    for i, row in enumerate(rows):
        torch.testing.assert_close(batch[i, : len(row)], _logits(model, row[None])[0], **EXACT)
    # right padding with the position ids Hugging Face builds from the mask (cumsum - 1, pads at 1): a padded row's
    # last query is a pad, whose position says nothing of its keys' (a review: Self-Extend off by 5e-3)
    positions = (right_mask.cumsum(-1) - 1).masked_fill(right_mask == 0, 1)
    batch = _logits(model, right, attention_mask=right_mask, position_ids=positions)
    for i, row in enumerate(rows):
        torch.testing.assert_close(batch[i, : len(row)], _logits(model, row[None])[0], **EXACT)


@pytest.mark.parametrize("backend", ["sdpa", "eager"])
@pytest.mark.parametrize("model_type", ["llama", "gemma2"])
def test_a_left_padded_batch_without_position_ids_equals_single_rows(model_type, backend):
    """transformers numbers the padding too when no position ids are given: plain RoPE does not mind (distances),
    Self-Extend's grouped m // G does, and each row was grouped as if its padding were text (6e-4 off; apply
    review). Without position ids, a left-padded batch is numbered as generate numbers it, decoding steps too."""
    model = tiny_model(model_type)
    _apply(model, "self_extend", backend)
    rows = [_ids(length=n, seed=n)[0] for n in (T, 29, 35)]
    ids, mask, _ = left_padded(rows)
    nxt = _ids(batch=3, length=2, seed=7)
    with torch.no_grad():
        out = model(ids, mask, use_cache=True)  # the mask by position, as model(ids, mask) passes it
        cache = out.past_key_values
        steps = []
        for t in range(2):
            mask = torch.cat((mask, torch.ones_like(nxt[:, :1])), 1)
            steps.append(model(nxt[:, t : t + 1], attention_mask=mask, past_key_values=cache, use_cache=True).logits)
    for i, row in enumerate(rows):
        alone = _logits(model, torch.cat((row, nxt[i]))[None])[0]
        torch.testing.assert_close(out.logits[i, T - len(row) :], alone[: len(row)], **EXACT)
        torch.testing.assert_close(torch.cat(steps, 1)[i], alone[len(row) :], **EXACT)
    # every way of giving the batch (adversary review: input_ids=None beside inputs_embeds and a float mask were
    # passed over, position_ids=None by position was given twice, a TypeError)
    embeds = model.get_input_embeddings()(ids)
    alone = [_logits(model, row[None])[0] for row in rows]
    for args, kwargs in [
        ((), {"input_ids": None, "inputs_embeds": embeds, "attention_mask": mask[:, :T]}),
        ((None, mask[:, :T]), {"inputs_embeds": embeds}),
        ((ids,), {"attention_mask": mask[:, :T].double()}),
        ((ids, mask[:, :T], None), {}),
    ]:
        with torch.no_grad():
            batch = model(*args, **kwargs).logits
        for i, row in enumerate(rows):
            torch.testing.assert_close(batch[i, T - len(row) :], alone[i], **EXACT)
    # the base model numbers positions: called alone, or through forward() (hooks of the outer module do not run),
    # it got transformers' numbering again (2.4e-3 and 2.5e-4 off; second adversary review)
    with torch.no_grad():
        hidden = model.model(ids, attention_mask=mask[:, :T]).last_hidden_state
        direct = model.forward(ids, mask[:, :T]).logits
        for i, row in enumerate(rows):
            torch.testing.assert_close(hidden[i, T - len(row) :], model.model(row[None]).last_hidden_state[0], **EXACT)
            torch.testing.assert_close(direct[i, T - len(row) :], alone[i], **EXACT)
    fa.remove(model)
    assert not model._forward_pre_hooks and not model.model._forward_pre_hooks  # the hook goes with the plan


def test_a_mask_kept_at_a_static_caches_length_is_read_where_cache_position_says():
    """A decoding step with a 2D mask as long as the static cache (31 ones, then padding: a compiled decode keeps its
    shapes so) and cache_position [30]: Self-Extend's pre-hook read the mask's last column, padding, and numbered the
    new token 1 (1.1e-3 off; third adversary review). The stock model reads it as no mask."""
    from transformers import StaticCache

    model = tiny_model("llama")
    _apply(model, "self_extend")
    ids = _ids(batch=2, length=31)
    full = _logits(model, ids)
    cache = StaticCache(config=model.config, max_cache_len=48)
    mask = torch.cat([torch.ones(2, 31, dtype=torch.long), torch.zeros(2, 17, dtype=torch.long)], 1)
    with torch.no_grad():
        model(ids[:, :30], **{CACHE: cache}, use_cache=True, cache_position=torch.arange(30))
        step = model(
            ids[:, 30:], **{CACHE: cache}, use_cache=True, cache_position=torch.tensor([30]), attention_mask=mask
        )
    torch.testing.assert_close(step.logits[:, -1], full[:, -1], **EXACT)


@pytest.mark.parametrize("method", ["string", "self_extend"])
def test_a_bidirectional_mask_is_read_as_the_model_gives_it(method):
    """Gemma 3 with bidirectional attention (its image tokens attend so too): with the threshold at the prompt's length
    the plan changes nothing (a review saw the queries' place taken from such a mask: 1.2e-2 off)."""
    model = tiny_model("gemma3_text", use_bidirectional_attention=True)
    stock = _logits(model, _ids())
    getattr(fa, method)(model, *((T, 4) if method == "string" else (4, T)), backend="sdpa")
    torch.testing.assert_close(_logits(model, _ids()), stock, **EXACT)


@pytest.mark.slow  # torch.compile
@pytest.mark.parametrize("method", ["string", "self_extend"])
def test_a_static_cache_decoding_step_compiles_in_one_graph(method):
    """The static cache's place is a tensor read before the cache is written: nothing waits for the device, and
    torch.compile(fullgraph=True) traces a decoding step (a review saw a data-dependent int() break it). With a 2D
    mask too: Self-Extend's position pre-hook branched on the mask's values, which a full graph cannot (second
    adversary review)."""
    from transformers import StaticCache

    model = tiny_model("llama")
    _apply(model, method)
    ids = _ids(length=T)
    full = _logits(model, ids)
    for mask in (None, torch.ones(1, T, dtype=torch.long)):
        cache = StaticCache(config=model.config, max_cache_len=T + 8)
        with torch.no_grad():
            model(ids[:, : T - 1], **{CACHE: cache}, use_cache=True)
            step = torch.compile(model.forward, fullgraph=True, backend="eager")
            out = step(ids[:, T - 1 :], attention_mask=mask, **{CACHE: cache}, use_cache=True).logits
        torch.testing.assert_close(out[:, -1], full[:, -1], **EXACT)


@pytest.mark.parametrize("method", ["string", "self_extend"])
@pytest.mark.parametrize("model_type", ["llama", "mistral", "gemma3_text"])
def test_a_static_cache_equals_recomputation(model_type, method):
    """A static cache returns its whole key array (max_cache_len keys, the unwritten ones masked), so the queries are
    not at its end: their place comes from the mask (a review: STRING off by 7.8e-3, Self-Extend by 1.1e-2)."""
    from transformers import StaticCache

    model = tiny_model(model_type)
    _apply(model, method)
    ids = _ids(length=T + 6)
    full = _logits(model, ids)
    cache = StaticCache(config=model.config, max_cache_len=T + 20)
    with torch.no_grad():
        out = model(ids[:, :T], **{CACHE: cache}, use_cache=True)
        steps = [out.logits[:, -1]]
        for t in range(T, ids.shape[1]):
            steps.append(model(ids[:, t : t + 1], **{CACHE: cache}, use_cache=True).logits[:, -1])
    torch.testing.assert_close(out.logits, full[:, :T], **EXACT)
    torch.testing.assert_close(torch.stack(steps, 1), full[:, T - 1 :], **EXACT)


@pytest.mark.slow  # model.generate, twice per row
@pytest.mark.parametrize("method", ["string", "self_extend"])
def test_generate_on_a_padded_batch_equals_generating_each_row(method):
    model = tiny_model("mistral")  # sliding window 24 < the generated lengths: the cache keeps only the window
    _apply(model, method)
    rows = [_ids(length=n, seed=n)[0] for n in (30, 22)]
    ids, mask, _ = left_padded(rows)
    settings = {"max_new_tokens": 12, "min_new_tokens": 12, "do_sample": False, "pad_token_id": 0}
    with torch.no_grad():
        batch = model.generate(ids, attention_mask=mask, output_scores=True, return_dict_in_generate=True, **settings)
        for i, row in enumerate(rows):
            single = model.generate(row[None], output_scores=True, return_dict_in_generate=True, **settings)
            assert batch.sequences[i, -12:].tolist() == single.sequences[0, -12:].tolist()
            torch.testing.assert_close(torch.stack(batch.scores)[:, i], torch.stack(single.scores)[:, 0], **EXACT)


def test_sliding_window_is_exercised():
    assert T > SLIDING  # the tests above run Mistral/Gemma 2/3 past their sliding window


def test_a_plan_that_changes_no_attention_says_so():
    """A review: STRING with S at or past every layer's sliding window (Mistral-7B v0.1: 4,096 against S = 10.9K)
    ran as the stock model, unsaid, and so did Self-Extend with G = 1; with one full-attention layer it is no note."""
    ids = _ids()
    for method, first, second, why in (
        (fa.string, SLIDING, 5, rf"every attention layer attends at most {SLIDING - 1} tokens back .* from S = 24 on"),
        (
            fa.self_extend,
            3,
            SLIDING,
            rf"every attention layer attends at most {SLIDING - 1} tokens back .* Self-Extend changes .* w_n = 24 on",
        ),
    ):
        model = tiny_model("mistral")
        before = _logits(model, ids)
        with pytest.warns(UserWarning, match=rf"^MistralForCausalLM: {why}: the model keeps its own attention$"):
            method(model, first, second)
        torch.testing.assert_close(_logits(model, ids), before, **EXACT)
    with pytest.warns(UserWarning, match=r"Self-Extend with G = 1 groups no distance"):
        fa.self_extend(tiny_model("llama"), 1, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fa.string(tiny_model("mistral"), SLIDING - 1, 5)  # the window's last distance, 23, is shifted
        fa.string(tiny_model("gemma3_text"), SLIDING, 5)  # its full-attention layer is changed


def test_a_plan_that_changes_nothing_leaves_the_model_bit_for_bit_in_every_dtype():
    """A review: in bfloat16 such a plan moved logits by 0.004 (the merged form's own kernel) and changed a greedy
    generation in 6: the model keeps its own attention, and remove() still takes the plan off."""
    ids = _ids()
    model = tiny_model("mistral").to(torch.bfloat16)
    stock = _logits(model, ids)
    fa.string(model, SLIDING - 4, 5)  # a real change first: an unchanging plan after it restores the stock attention
    assert not torch.equal(_logits(model, ids), stock)
    with pytest.warns(UserWarning, match="the model keeps its own attention"):
        fa.string(model, SLIDING, 5)
    assert torch.equal(_logits(model, ids), stock)
    assert torch.equal(_logits(fa.remove(model), ids), stock)
    with pytest.raises(FreqlabError, match="no STRING or Self-Extend was applied"):
        fa.remove(model)


@pytest.mark.parametrize("method", [lambda m: fa.string(m, 24, 5), lambda m: fa.self_extend(m, 3, 8)])
def test_attention_weights_asked_of_a_plan_are_said_to_be_none(method):
    """A review: output_attentions=True gave an empty tuple, unsaid (the stock eager model returns the weights)."""
    model = method(tiny_model("gemma2"))  # loaded eager
    with pytest.warns(UserWarning, match=r"^freqlab's STRING and Self-Extend attention return no attention weights"):
        assert model(_ids(), output_attentions=True).attentions == ()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model(_ids())
        assert len(fa.remove(model)(_ids(), output_attentions=True).attentions) == 2  # the stock eager's


def test_parameters_are_checked_against_the_window():
    model = tiny_model("llama")
    with pytest.raises(FreqlabError, match="0 < S < L = 64"):
        fa.string(model, 64, 4)
    with pytest.raises(FreqlabError, match="smaller than the shift"):
        fa.string(model, 16, 16)
    with pytest.raises(FreqlabError, match="0 <= w_n < L = 64"):
        fa.self_extend(model, 2, 64)
    with pytest.raises(FreqlabError, match="no STRING or Self-Extend"):
        fa.remove(model)
    with pytest.raises(FreqlabError, match="backend must be one of auto, sdpa, eager, flash"):
        fa.string(model, 16, 4, backend="flash2")


def test_remove_restores_the_stock_model():
    model = tiny_model("qwen2")
    ids = _ids()
    stock = _logits(model, ids)
    fa.string(model, 16, 4)
    fa.self_extend(model, 2, 8)  # a second call replaces the first; remove() goes back to the original
    fa.remove(model)
    assert model.config._attn_implementation == "sdpa"
    torch.testing.assert_close(_logits(model, ids), stock, rtol=0, atol=0)
    # no hook is left on its attention layers, a deep copy's (which brings the original's along) neither
    fa.string(model, 16, 4)
    copy = __import__("copy").deepcopy(model)
    fa.string(copy, 16, 4)
    for applied in (model, copy):
        fa.remove(applied)
        assert [len(m._forward_pre_hooks) for m in _attention_layers(applied)] == [0, 0]
    # the copy applied again went back to freqlab_string, the implementation its config held, and every forward
    # then refused (apply review): the one before freqlab's is unknown to a copy, so it goes back to sdpa
    assert copy.config._attn_implementation == "sdpa"
    torch.testing.assert_close(_logits(copy, ids), stock, rtol=0, atol=0)


def test_models_built_from_one_config_object_say_so_and_no_plan_is_taken_off_unsaid():
    """transformers 5 keeps from_config's config object as model.config, and the attention implementation is set on
    the config (by set_attn_implementation as by freqlab), so two models built from one config share it. A review:
    the other model failed naming no cause, and remove() on it was taken for a deep copy's and silently took STRING
    off the model it was applied to. Each is now said; a model built from its own config is not touched."""
    first = tiny_model("llama")
    config = first.config
    second = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float64).eval()
    second.load_state_dict(first.state_dict())
    own = transformers.AutoModelForCausalLM.from_config(copy.deepcopy(config), dtype=torch.float64).eval()
    own.load_state_dict(first.state_dict())
    ids = _ids()
    stock = _logits(own, ids)
    fa.string(first, 16, 4)
    applied = _logits(first, ids)
    assert not torch.allclose(applied, stock)  # STRING changes the logits at T = 40 > S = 16
    with pytest.raises(
        FreqlabError,
        match=r"set on this model's config by applying a plan to another model built "
        r"from the same config object .*from_config\(copy\.deepcopy\(config\)\)",
    ):
        _logits(second, ids)  # fmt: skip
    with pytest.raises(FreqlabError, match="no STRING or Self-Extend was applied to this model: its config says so"):
        fa.remove(second)
    torch.testing.assert_close(_logits(first, ids), applied, rtol=0, atol=0)  # still STRING
    torch.testing.assert_close(_logits(own, ids), stock, rtol=0, atol=0)  # its own config: untouched
    # a plan on the other would change this one's (Self-Extend set on the config took STRING off it; a plan that
    # changes nothing put the config back to sdpa: a second review): refused, until this one's plan is removed
    for apply in (lambda: fa.self_extend(second, 4, 8), lambda: fa.self_extend(second, 1, 8)):
        with pytest.raises(FreqlabError, match="this model's config object is shared with another model a plan is"):
            apply()
    torch.testing.assert_close(_logits(first, ids), applied, rtol=0, atol=0)
    fa.remove(first)
    assert config._attn_implementation == "sdpa"
    fa.string(second, 20, 4)  # now its plan is the config's
    assert not torch.allclose(_logits(second, ids), stock)
    fa.remove(second)
    torch.testing.assert_close(_logits(second, ids), stock, rtol=0, atol=0)


def test_two_llavas_sharing_one_text_config_are_told_apart():
    """A second review: two Llavas with their own top-level configs around one text_config object: remove() on the
    one never applied silently put the other back to stock (only the top-level configs were compared)."""
    torch.manual_seed(0)
    text = transformers.LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
                                    vocab_size=120, intermediate_size=64, max_position_embeddings=L)  # fmt: skip
    vision = transformers.CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                           num_attention_heads=2, image_size=28, patch_size=14)  # fmt: skip

    def llava():
        config = transformers.LlavaConfig(text_config=text, vision_config=vision, image_token_index=119,
                                          vision_feature_layer=-1)  # fmt: skip
        config.text_config = text  # one object under both
        return transformers.LlavaForConditionalGeneration(config).eval()

    first, second = llava(), llava()
    assert first.config is not second.config and first.config.get_text_config() is second.config.get_text_config()
    fa.string(first, 16, 4)
    with pytest.raises(FreqlabError, match="no STRING or Self-Extend was applied to this model: its config says so"):
        fa.remove(second)
    with pytest.raises(FreqlabError, match="this model's config object is shared with another model a plan is"):
        fa.string(second, 16, 4)
    assert first.config.get_text_config()._attn_implementation == "freqlab_string"
    fa.remove(first)


def test_a_deep_copy_of_an_applied_model_can_be_removed_to_stock():
    """A review: a deep copy kept freqlab_string as its implementation, refused every forward, and remove() said no
    plan was applied to it. It goes back to sdpa (the implementation before freqlab's is unknown to a copy)."""
    model = tiny_model("qwen2")
    ids = _ids()
    stock = _logits(model, ids)
    fa.string(model, 16, 4)
    copy = __import__("copy").deepcopy(model)
    with pytest.raises(FreqlabError, match="was set on a model it was not applied to"):
        copy(ids)
    fa.remove(copy)
    assert copy.config._attn_implementation == "sdpa"
    torch.testing.assert_close(_logits(copy, ids), stock, rtol=0, atol=0)


def _attention_layers(model) -> list:
    return [m for name, m in model.named_modules() if name.endswith("self_attn")]


def test_partial_rotary_is_refused():
    model = tiny_model("llama")
    rotary = next(m for m in model.modules() if type(m).__name__.endswith("RotaryEmbedding"))
    rotary.inv_freq = rotary.inv_freq[:2]
    with pytest.raises(FreqlabError, match="RoPE covers 4 of 8 head dimensions"):
        fa.string(model, 16, 4)


def test_the_model_types_apply_takes_are_those_the_tests_build():
    assert set(MODEL_TYPES) == fa.TESTED_MODEL_TYPES


@pytest.mark.parametrize(("model_type", "rotate_half"), [*((t, True) for t in MODEL_TYPES), ("cohere", False)])
def test_a_tested_model_type_rotates_with_rotate_half(model_type, rotate_half):
    """What the re-rotation relies on, read from the model's own code: its rotary tables repeat the angles over the
    two halves, and its apply_rotary_pos_emb is q cos + rotate_half(q) sin. The reference below un-rotates with that
    same layout, so it cannot tell an interleaved model from the right one (Cohere's stock logits equal it): this
    checks the layout itself (Cohere's pairs are interleaved). Every layer of these types applies RoPE to q and k
    right before attention (OLMo 2 normalizes q and k before it)."""
    import inspect
    import sys

    model = tiny_model(model_type)
    rotary = rotary_of(model)
    positions, x = torch.arange(1, 20)[None], torch.zeros(1, 19, 8, dtype=torch.float64)
    layer_types = getattr(model.config, "layer_types", None) or [None]
    for layer_type in dict.fromkeys(layer_types):
        takes_type = "layer_type" in inspect.signature(rotary.forward).parameters
        cos, sin = rotary(x, positions, layer_type) if takes_type else rotary(x, positions)
        q, k = torch.randn(1, 4, 19, 8, dtype=torch.float64), torch.randn(1, 2, 19, 8, dtype=torch.float64)
        own = sys.modules[type(model).__module__].apply_rotary_pos_emb(q, k, cos, sin)[0]
        half = q.shape[-1] // 2
        halves = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
        layout = torch.equal(cos[..., :half], cos[..., half:]) and torch.allclose(
            own, q * cos[:, None] + halves * sin[:, None]
        )
        assert layout == rotate_half


class _Holder(torch.nn.Module):
    """A wrapper holding the model (as DataParallel does), with no config of its own."""

    def __init__(self, model):
        super().__init__()
        self.model = model


class _DictConfig(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.config = {"model_type": "llama"}


@pytest.mark.parametrize(
    ("model", "advice"),
    [
        ("./llama", "load it first, e.g. AutoModelForCausalLM.from_pretrained(path)"),
        (None, "load it first"),
        ({"config": {}}, "load it first"),
        (_DictConfig(), "which has no transformers config: pass the Hugging Face model it holds"),
        ("HOLDER", "which has no transformers config: pass the Hugging Face model it holds"),
        ("CONFIG", "load it first"),
    ],
)
def test_what_is_no_loaded_model_is_one_error_line_naming_it(model, advice):
    """A review: a path gave AttributeError ('str' object has no attribute 'config'), remove(None) a TypeError; a
    second: a config or a wrapper module was quoted by its repr over many lines, and a module whose config is a dict
    passed the check and failed later with AttributeError."""
    if model == "HOLDER":
        model = _Holder(tiny_model("llama"))
    elif model == "CONFIG":
        model = tiny_model("llama").config
    message = f"expected a loaded transformers model (a torch module with a config), got {type(model).__name__} "
    for call in (lambda: fa.string(model, 16, 4), lambda: fa.self_extend(model, 2, 8), lambda: fa.remove(model)):
        with pytest.raises(FreqlabError) as raised:
            call()
        text = str(raised.value)
        assert text.startswith(message) and advice in text and "\n" not in text, text


@pytest.mark.parametrize("method", ["string", "self_extend"])
def test_an_untested_model_type_is_refused_unless_allowed(method):
    """Cohere rotates interleaved pairs (not rotate_half): the re-rotation gave other logits than STRING's Alg. 1
    (2e-3 relative) with a warning only; it is refused, and runs with allow_untested=True (and the warning)."""
    model = tiny_model("cohere")
    with pytest.raises(FreqlabError, match=r"model type 'cohere' is not one freqlab\.apply is tested on.*") as refused:
        getattr(fa, method)(model, 16, 4)
    assert "its RoPE is interleaved (adjacent dimensions paired)" in str(refused.value)  # that type's own reason
    assert model.config._attn_implementation == "sdpa"  # untouched
    with pytest.warns(UserWarning, match="'cohere' is not among them"):
        getattr(fa, method)(model, 16, 4, allow_untested=True)
    assert model.config._attn_implementation.startswith("freqlab")


def test_an_allowed_type_whose_layers_cannot_be_reached_says_its_own_reason_too():
    """A review: GPT-NeoX with allow_untested said "no attention layers (self_attn ...) found" and not the reason
    the README and UNTESTED_BECAUSE give for it (a partial rotary)."""
    import transformers

    config = transformers.GPTNeoXConfig(
        vocab_size=101, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4
    )
    model = transformers.AutoModelForCausalLM.from_config(config)
    with pytest.raises(FreqlabError) as refused, pytest.warns(UserWarning):
        fa.string(model, 16, 4, allow_untested=True)
    assert str(refused.value) == (
        "GPTNeoXForCausalLM: no attention layers (self_attn with a layer_idx) found; and its RoPE, as usually "
        "configured, covers part of each head (a partial rotary: refused)"
    )


def test_the_reasons_given_for_untested_types_name_types_transformers_knows():
    from transformers import CONFIG_MAPPING

    assert set(fa.UNTESTED_BECAUSE) <= set(CONFIG_MAPPING) - fa.TESTED_MODEL_TYPES
    # a type without a known reason gets the general ones
    with pytest.raises(FreqlabError, match=r"interleaved RoPE, layers without RoPE or a norm after RoPE"):
        fa.check_model_type("mamba")


def test_a_missing_extra_is_one_line_naming_it(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    monkeypatch.delitem(__import__("sys").modules, "torch")
    with pytest.raises(FreqlabError, match=r"^torch is not installed: pip install 'freqlab\[apply\]'$"):
        fa.require("torch")


@pytest.mark.parametrize("mask_kind", ["none", "additive", "bool"])
def test_the_sdpa_form_equals_the_explicit_merge(mask_kind):
    from freqlab.apply.attention import merged_attention, merged_attention_sdpa

    g = seeded(3)
    q, fq = (
        torch.randn(2, 4, 5, 8, generator=g, dtype=torch.float64),
        torch.randn(2, 4, 5, 8, generator=g, dtype=torch.float64),
    )
    k, fk, v = (torch.randn(2, 2, 9, 8, generator=g, dtype=torch.float64) for _ in range(3))
    r = torch.arange(4, 9)[:, None] - torch.arange(9)[None, :]
    far = r >= 3
    allowed = (r >= 0) & (torch.rand(2, 1, 5, 9, generator=g) > 0.2)
    allowed[..., 4:] = r[None, None, :, 4:] >= 0  # every query keeps at least its own key
    mask = {
        "none": None,
        "bool": allowed,
        "additive": torch.zeros(allowed.shape, dtype=torch.float64).masked_fill(
            ~allowed, torch.finfo(torch.float64).min
        ),
    }[mask_kind]
    torch.testing.assert_close(
        merged_attention_sdpa(q, k, v, fq, fk, far, mask, 0.3),
        merged_attention(q, k, v, fq, fk, far, mask, 0.3),
        rtol=1e-12,
        atol=1e-12,
    )


@pytest.mark.parametrize("model_type", ["llama", "gemma3_text"])
def test_self_extend_past_the_window_uses_only_trained_positions(model_type):
    """100 tokens on a model with L = 64: with G = 3, w_n = 8 the largest position is 99 // 3 + 8 - 2 = 39 < L
    (Eq. 8 allows (64 - 8 + 2) · 3 = 174 tokens), and the logits are the reference's on those positions."""
    from freqlab.plan.self_extend import self_extend_largest_position, self_extend_max_length

    model = tiny_model(model_type)
    exact_rope(model)
    ids = _ids(length=100)
    P = self_extend_position_matrix(100, 3, 8)
    assert P.max() == self_extend_largest_position(100, 3, 8) == 39 and self_extend_max_length(L, 3, 8) == 174
    expected = reference_logits(model, ids, P)
    fa.self_extend(model, 3, 8)
    torch.testing.assert_close(_logits(model, ids), expected, **EXACT)


def test_a_kv_cache_passed_as_cache_to_a_transformers_that_reads_past_key_values_is_refused():
    """Before transformers 5.24 the cache is ``past_key_values=``; ``cache=`` (5.24's name) falls through the model's
    ``**kwargs`` to the attention function unread, and the step would attend to its own token alone (the stock model
    gives other logits, silently). freqlab's attention functions refuse it in one line."""
    from transformers import DynamicCache

    from freqlab.apply.attention import string_attention

    class Attention524(torch.nn.Module):  # the layer's own forward reads the cache (5.24 on): nothing stray
        def forward(self, hidden_states, cache=None, **kwargs): ...

    class Attention523(torch.nn.Module):  # before 5.24
        def forward(self, hidden_states, past_key_values=None, **kwargs): ...

    q = torch.zeros(1, 4, 1, 8, dtype=torch.float64)
    k = torch.zeros(1, 2, 1, 8, dtype=torch.float64)
    with pytest.raises(FreqlabError, match=r"^transformers .* does not read cache= \(the KV cache's name from 5.24 on"):
        string_attention(Attention523(), q, k, k, None, cache=DynamicCache())
    with pytest.raises(FreqlabError, match="was set on a model it was not applied to"):  # past the cache check
        string_attention(Attention524(), q, k, k, None, cache=DynamicCache())
    model = fa.string(tiny_model("llama"), 16, 4)
    ids = _ids(length=T + 1)
    with torch.no_grad():
        prompt = model(ids[:, :T], use_cache=True)
        step = model(ids[:, T:], **{CACHE: cache_of(prompt)}, use_cache=True).logits
        if CACHE == "past_key_values":  # the installed transformers predates cache=
            with pytest.raises(FreqlabError, match="does not read cache="):
                model(ids[:, T:], cache=cache_of(prompt), use_cache=True)
    torch.testing.assert_close(step[:, -1], _logits(model, ids)[:, -1], **EXACT)


def test_a_vision_tower_keeps_its_own_attention():
    """A review: set_attn_implementation switched a Llava's (or Gemma 3's) vision tower to freqlab's function too,
    and any image input failed ("was set on a model it was not applied to"): only the text model's implementation
    is set, the tower keeps its own (and its masks), and a prompt of at most S tokens, image tokens included, is the
    stock model."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    text = transformers.LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
                                    vocab_size=120, intermediate_size=64, max_position_embeddings=L)  # fmt: skip
    vision = transformers.CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                           num_attention_heads=2, image_size=28, patch_size=14)  # fmt: skip
    config = transformers.LlavaConfig(text_config=text, vision_config=vision, image_token_index=119,
                                      vision_feature_layer=-1)  # fmt: skip
    model = transformers.LlavaForConditionalGeneration(config).eval()
    ids = torch.cat([torch.tensor([[1] + [119] * 4]), _ids(length=T - 5)], dim=1)
    pixels = torch.randn(1, 3, 28, 28, generator=seeded(2))
    before = _logits(model, ids, pixel_values=pixels)
    fa.string(model, T, 4)
    torch.testing.assert_close(_logits(model, ids, pixel_values=pixels), before, rtol=1e-5, atol=1e-5)
    fa.remove(model)
    fa.self_extend(model, 4, T)
    torch.testing.assert_close(_logits(model, ids, pixel_values=pixels), before, rtol=1e-5, atol=1e-5)
    fa.remove(model)
    # a second review: the tower kept freqlab's mask, and remove() set the tower's implementation to the text's
    model.set_attn_implementation({"text_config": "sdpa", "vision_config": "eager"})
    fa.string(model, T, 4)
    assert (config.text_config._attn_implementation, config.vision_config._attn_implementation) == (
        "freqlab_string",
        "eager",
    )
    fa.remove(model)
    assert (config.text_config._attn_implementation, config.vision_config._attn_implementation) == ("sdpa", "eager")


def test_the_string_yarn_plan_runs_on_the_model_its_yarn_block_makes():
    """A review: plan_string(extend_to=N) shifts by S_N = int(S/L·N) > L, and its YaRN block keeps
    max_position_embeddings = L (scaling to N): apply.string refused S_N (0 < S < L). The window is L times the
    RoPE factor; a shift past it is still refused."""
    import transformers

    from freqlab.plan.string import plan_string

    trained = 384  # the plan's W >= 32 (Fig. 7) needs a window above the tiny models' L
    extension = plan_string(trained, W=32, extend_to=4 * trained).extension
    assert trained < extension.S
    config = transformers.LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=1,
                                      vocab_size=120, intermediate_size=64, **extension.yarn.config_5x)  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    fa.string(model, extension.S, extension.W)
    fa.remove(model)
    largest = int(trained * extension.factor)
    with pytest.raises(FreqlabError, match=rf"0 < S < L = {largest}"):
        fa.string(model, largest, 32)


def test_a_linear_scaled_window_is_max_position_embeddings_itself():
    """A third review: a linear factor multiplied max_position_embeddings, already the scaled window (Gemma 3's factor
    8 at 131072 allowed S up to 2^20): only parameters naming the original window scale it."""
    import transformers

    linear = {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0}
    # (dynamic NTK too, even naming an original window transformers does not read for it: a fourth review)
    config = transformers.LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=1,
                                      vocab_size=120, intermediate_size=64, max_position_embeddings=L,
                                      rope_parameters=linear)  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    with pytest.raises(FreqlabError, match=rf"0 < S < L = {L}"):
        fa.string(model, L, 4)
    fa.string(model, L - 1, 4)
    fa.remove(model)
    model.config.rope_parameters = {"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": L}
    with pytest.raises(FreqlabError, match=rf"0 < S < L = {L}"):
        fa.string(model, L, 4)


@pytest.mark.filterwarnings("ignore")
def test_cross_attention_layers_of_the_text_model_keep_their_attention():
    """A fourth review: Mllama's text model holds cross-attention layers (no RoPE, no self_attn); with only the text
    model's implementation set, they ran freqlab's function and any image failed. They keep the text model's."""
    import transformers

    sizes = {"hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2}
    text = transformers.MllamaTextConfig(**sizes, vocab_size=300, intermediate_size=48, max_position_embeddings=L,
                                         cross_attention_layers=[1], pad_token_id=0)  # fmt: skip
    vision = transformers.MllamaVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                             num_global_layers=1, attention_heads=2, image_size=28, patch_size=14,
                                             max_num_tiles=1, vision_output_dim=32, intermediate_layers_indices=[0],
                                             supported_aspect_ratios=[[1, 1]])  # fmt: skip
    config = transformers.MllamaConfig(text_config=text, vision_config=vision, image_token_index=299)
    model = transformers.MllamaForConditionalGeneration(config).eval()
    ids = torch.tensor([[1, 299, *range(10, 30)]])
    image = {"pixel_values": torch.randn(1, 1, 1, 3, 28, 28, generator=seeded(3)),
             "aspect_ratio_ids": torch.tensor([[1]]), "aspect_ratio_mask": torch.ones(1, 1, 1, dtype=torch.long),
             "cross_attention_mask": torch.ones(1, ids.shape[1], 1, 1, dtype=torch.long)}  # fmt: skip
    before = _logits(model, ids, **image)
    fa.string(model, T, 4, allow_untested=True)  # a prompt of 22 tokens < S: the stock model
    torch.testing.assert_close(_logits(model, ids, **image), before, rtol=1e-5, atol=1e-5)
    fa.remove(model)
    torch.testing.assert_close(_logits(model, ids, **image), before, rtol=0, atol=0)
