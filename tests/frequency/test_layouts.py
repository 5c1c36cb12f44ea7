"""Attention layouts: f per layer kind (global, sliding window, chunked, NoPE), from model configs or short strings."""

import json
import re

import numpy as np
import pytest
from frequency.reference import attends, expand, masked_pair_frequency, regime_rows
from hypothesis import given, settings
from hypothesis import strategies as st

from freqlab import FreqlabError, LengthHistogram
from freqlab.frequency import position_frequency, stream_order
from freqlab.frequency.layouts import (
    LayerKind,
    layout_frequency,
    layout_from_config,
    parse_layout,
    read_layout,
)
from freqlab.frequency.schedule import load_schedule

histograms = st.lists(
    st.tuples(st.integers(1, 30), st.integers(1, 3)), min_size=1, max_size=8, unique_by=lambda t: t[0]
)
MASKED_REGIMES = ("natural", "truncate", "pack", "concat", "best-fit")


def reference(lengths, counts, L, regime, kind, size, seed=0):
    docs = expand(lengths, counts)
    if regime == "pack":
        docs = stream_order(np.array(lengths), np.array(counts), seed).tolist()
    rows, doc_mask = regime_rows(docs, L, regime)
    return masked_pair_frequency(rows, doc_mask, L, kind, size)


@settings(max_examples=80, deadline=None)
@given(histograms, st.integers(1, 20), st.integers(1, 9), st.integers(1, 9), st.sampled_from(MASKED_REGIMES))
def test_every_layer_kind_matches_brute_force_over_its_real_mask(pairs, L, w, C, regime):
    lengths, counts = zip(*pairs)
    lf = layout_frequency(lengths, counts, L, f"swa{w}+chunk{C}+global+nope", regime, seed=1)
    for kind in lf.kinds:
        if kind.f is None:
            assert kind.kind.name == "nope"
            continue
        expected, _ = reference(lengths, counts, L, regime, kind.kind.kind, kind.kind.size, seed=1)
        assert kind.f.dtype == np.int64
        assert kind.f.tolist() == expected, kind.kind.name


def test_sliding_window_of_w_keys_includes_the_query_itself():
    # one document of 10 tokens, window 4: queries see distances 0..3, never 4
    lf = layout_frequency([10], [1], 10, "swa4")
    assert lf["swa4"].f.tolist() == [10, 9, 8, 7, 0, 0, 0, 0, 0, 0]
    assert lf["swa4"].kind.reach(10) == 3
    assert [attends(9, k, "swa", 4) for k in range(4, 10)] == [False, False, True, True, True, True]


def _transformers_overlays():
    """transformers' own ``sliding_window_overlay`` and ``chunked_overlay`` (masking_utils), compiled from its source
    so that torch, which importing the module needs, is not."""
    import ast
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("transformers is not installed")
    source = (Path(spec.submodule_search_locations[0]) / "masking_utils.py").read_text(encoding="utf-8")
    wanted = {"sliding_window_overlay", "chunked_overlay"}
    nodes = [node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) and node.name in wanted]
    assert {node.name for node in nodes} == wanted
    namespace: dict = {"Callable": object, "torch": None}
    for node in nodes:  # annotations dropped: they name torch types
        plain = ast.parse(f"def f({', '.join(a.arg for a in node.args.args)}): pass").body[0]
        node.returns, node.args = None, plain.args
        exec(compile(ast.Module(body=[node], type_ignores=[]), "masking_utils.py", "exec"), namespace)
    return namespace["sliding_window_overlay"], namespace["chunked_overlay"]


def test_sliding_window_and_chunk_conventions_are_transformers_masks():
    sliding_window_overlay, chunked_overlay = _transformers_overlays()
    swa, chunk = sliding_window_overlay(4), chunked_overlay(3, [0])
    for q in range(12):
        for k in range(q + 1):  # the causal part, which transformers ANDs with these overlays
            assert bool(swa(0, 0, q, k)) == attends(q, k, "swa", 4)
            assert bool(chunk(0, 0, q, k)) == attends(q, k, "chunk", 3)


def test_chunked_attention_under_pack_cuts_documents_at_multiples_of_c_in_the_row():
    # stream [3][3][3] in rows of 8, chunks of 4: row 1 = 0 0 0 1 | 1 1 2 2, row 2 = 2
    lf = layout_frequency([3], [3], 8, "chunk4", "pack")
    # pieces 3, 1 | 2, 2 | 1: f = 3+1+2+2+1, 2+1+1, 1
    assert lf["chunk4"].f.tolist() == [9, 4, 1, 0, 0, 0, 0, 0]
    assert lf["chunk4"].f.tolist() == reference([3], [3], 8, "pack", "chunk", 4)[0]


def test_a_chunk_or_window_at_least_l_is_global():
    lf = layout_frequency([5, 12], [2, 1], 8, "chunk8+swa16+global")
    g = position_frequency([5, 12], [2, 1], 8)
    assert all(k.f.tolist() == g.tolist() for k in lf.kinds)


def test_short_layout_strings():
    layout = parse_layout("5*swa1024+global")
    assert layout.kinds == {LayerKind("swa", 1024): 5, LayerKind("global"): 1}
    assert parse_layout("3*chunk8K+nope").spec == "3*chunk8K+nope"
    for bad, message in [
        ("5*swa+global", "needs a size"),
        ("global4", "takes no size"),
        ("mlp", "cannot read"),
        ("0*global", "repeats a layer 0 times"),
    ]:
        with pytest.raises(FreqlabError, match=message):
            parse_layout(bad)


# real configs (their layout keys, as published in each model's config.json)
MISTRAL_7B_V01 = {"model_type": "mistral", "num_hidden_layers": 32, "sliding_window": 4096}
MISTRAL_7B_V03 = {"model_type": "mistral", "num_hidden_layers": 32, "sliding_window": None}
GEMMA2_9B = {"model_type": "gemma2", "num_hidden_layers": 42, "sliding_window": 4096, "cache_implementation": "hybrid"}
GEMMA3_4B = {
    "model_type": "gemma3",
    "text_config": {
        "model_type": "gemma3_text",
        "num_hidden_layers": 34,
        "sliding_window": 1024,
        "sliding_window_pattern": 6,
        "rope_theta": 1000000.0,
    },
}
LLAMA4_SCOUT = {
    "model_type": "llama4",
    "text_config": {
        "model_type": "llama4_text",
        "num_hidden_layers": 48,
        "attention_chunk_size": 8192,
        "no_rope_layers": [1, 1, 1, 0] * 12,
    },
}
GPT_OSS_20B = {
    "model_type": "gpt_oss",
    "num_hidden_layers": 24,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
}
QWEN2_7B = {
    "model_type": "qwen2",
    "num_hidden_layers": 28,
    "sliding_window": 131072,
    "max_window_layers": 28,
    "use_sliding_window": False,
}
PHI3_PARTIAL = {"model_type": "phi3", "num_hidden_layers": 4, "partial_rotary_factor": 0.5}


@pytest.mark.parametrize(
    ("config", "spec"),
    [
        (MISTRAL_7B_V01, "32*swa4K"),
        (MISTRAL_7B_V03, "32*global"),
        (GEMMA2_9B, "+".join(["swa4K+global"] * 21)),
        (GEMMA3_4B, "+".join(["5*swa1K+global"] * 5) + "+4*swa1K"),
        (LLAMA4_SCOUT, "+".join(["3*chunk8K+nope"] * 12)),
        (GPT_OSS_20B, "+".join(["swa128+global"] * 12)),
        (QWEN2_7B, "28*global"),
    ],
)
def test_layouts_from_real_model_configs(config, spec):
    assert layout_from_config(config).spec == spec


@pytest.mark.parametrize(
    ("config", "spec"),
    [
        ({"model_type": "qwen2", "num_hidden_layers": 4, "sliding_window": 4096}, "4*global"),
        ({"model_type": "qwen2", "num_hidden_layers": 4, "sliding_window": 4096, "max_window_layers": 2}, "4*global"),
        ({"model_type": "qwen3", "num_hidden_layers": 32, "sliding_window": 4096, "use_sliding_window": True},
         "28*global+4*swa4K"),
        ({"model_type": "qwen2", "num_hidden_layers": 8, "sliding_window": 512, "use_sliding_window": True,
          "max_window_layers": 2}, "2*global+6*swa512"),
        ({"model_type": "qwen2_moe", "num_hidden_layers": 4, "sliding_window": 4096}, "4*global"),
        ({"model_type": "qwen2", "num_hidden_layers": 100, "use_sliding_window": True}, "28*global+72*swa4K"),
        ({"model_type": "qwen2_5_vl_text", "num_hidden_layers": 100, "use_sliding_window": True}, "80*global+20*swa4K"),
    ],
)  # fmt: skip
def test_qwen_configs_slide_only_when_they_opt_in_as_transformers_reads_them(config, spec):
    """Qwen2's config class defaults use_sliding_window to false and max_window_layers to 28: a config that leaves
    them out was read as every layer sliding (4*swa4K), and one that opts in without max_window_layers as 32*swa4K."""
    assert layout_from_config(config).spec == spec
    transformers = pytest.importorskip("transformers")
    own = transformers.AutoConfig.for_model(**config)
    kinds = {"full_attention": "global", "sliding_attention": f"swa{own.sliding_window}"}
    assert [kinds[t] for t in own.layer_types] == [
        kind.kind if kind.kind == "global" else f"swa{kind.size}" for kind in layout_from_config(config).layers
    ]


@pytest.mark.parametrize(
    ("config", "spec"),
    [
        ({"model_type": "mistral", "num_hidden_layers": 2}, "2*swa4K"),
        ({"model_type": "mistral", "num_hidden_layers": 2, "sliding_window": None}, "2*global"),  # null: no window
        ({"model_type": "gemma2", "num_hidden_layers": 4}, "swa4K+global+swa4K+global"),
        ({"model_type": "gpt_oss", "num_hidden_layers": 4}, "swa128+global+swa128+global"),
        ({"model_type": "cohere2", "num_hidden_layers": 8, "sliding_window": 4096}, "3*swa4K+global+3*swa4K+global"),
        ({"model_type": "exaone4", "num_hidden_layers": 4}, "3*swa4K+global"),
        ({"model_type": "olmo3", "num_hidden_layers": 4, "sliding_window": 512}, "3*swa512+global"),
        ({"model_type": "smollm3", "num_hidden_layers": 8}, "3*global+nope+3*global+nope"),
    ],
)
def test_keys_a_config_leaves_out_are_its_config_class_defaults(config, spec):
    """A review: a Mistral config without sliding_window read as 2*global (MistralConfig's window is 4096), Cohere 2,
    EXAONE 4 and OLMo 3 without their pattern as every layer sliding, SmolLM3 without no_rope_layers as all RoPE."""
    assert layout_from_config(config).spec == spec
    transformers = pytest.importorskip("transformers")
    own = transformers.AutoConfig.for_model(**config)
    slides = "sliding_attention" if own.sliding_window else "full_attention"  # Mistral's class lists no layer_types
    types = getattr(own, "layer_types", None) or [slides] * own.num_hidden_layers
    no_rope = getattr(own, "no_rope_layers", None) or [1] * len(types)
    kinds = {"full_attention": "global", "sliding_attention": f"swa{own.sliding_window}"}
    read = layout_from_config(config).layers
    assert [kinds[t] if rope else "nope" for t, rope in zip(types, no_rope, strict=True)] == [
        kind.kind if kind.kind in ("global", "nope") else f"swa{kind.size}" for kind in read
    ]


def test_a_model_type_freqlab_does_not_know_takes_transformers_defaults(monkeypatch):
    """AFMoE is in no table of freqlab's: its config class fills in a window of 1024 on 3 of every 4 layers; without
    transformers the file alone is read (no window: every layer global)."""
    config = {"model_type": "afmoe", "num_hidden_layers": 8}
    listed = {**config, "layer_types": ["full_attention"] * 8}  # listed: read as written, transformers or not
    assert layout_from_config(listed).spec == "8*global"
    import sys

    monkeypatch.setitem(sys.modules, "transformers", None)  # not installed: import transformers raises ImportError
    assert layout_from_config(config).spec == "8*global"
    monkeypatch.undo()
    pytest.importorskip("transformers")
    assert layout_from_config(config).spec == "3*swa1K+global+3*swa1K+global"
    with pytest.raises(FreqlabError, match=r"as transformers fills them in\): layer_types\[0\] = 'linear_attention'"):
        layout_from_config({"model_type": "qwen3_next", "num_hidden_layers": 4})  # was 4*global, unsaid


def test_the_all_global_table_is_what_transformers_fills_in():
    """Model types read without importing transformers (2-3 s with torch: an adversary timed a Llama config at 2.5 s)
    must be ones whose config classes slide, chunk and drop RoPE in no layer."""
    from freqlab.frequency.layouts import _ALL_GLOBAL

    transformers = pytest.importorskip("transformers")
    for model_type in sorted(_ALL_GLOBAL):
        own = transformers.AutoConfig.for_model(model_type, num_hidden_layers=6)
        types = getattr(own, "layer_types", None) or ["full_attention"]
        assert set(types) == {"full_attention"}, model_type
        assert not getattr(own, "sliding_window", None) and not getattr(own, "no_rope_layers", None), model_type
        assert layout_from_config({"model_type": model_type, "num_hidden_layers": 6}).spec == "6*global"


def test_transformers_that_fails_to_import_or_logs_leaves_the_file_read_alone(tmp_path, monkeypatch, capfd):
    """An adversary: an installed transformers that fails to import (pinned against newer tokenizers) was a traceback
    for every type outside freqlab's tables; and its config classes' error-level notes ("Can't set head_dim", the
    whole config) were printed."""
    import sys

    config = {"model_type": "afmoe", "num_hidden_layers": 8}
    broken = tmp_path / "transformers"  # installed, and failing to import
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError('tokenizers>=0.21,<0.22 is required')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "transformers", raising=False)
    assert layout_from_config(config).spec == "8*global"
    monkeypatch.undo()
    pytest.importorskip("transformers")
    capfd.readouterr()
    assert layout_from_config({"model_type": "xcodec", "num_hidden_layers": 4, "hidden_size": 100}).spec == "4*global"
    assert capfd.readouterr() == ("", "")


def test_opted_in_sliding_freqlab_does_not_model_is_refused_and_chunks_of_0_named():
    moe = {"model_type": "qwen2_moe", "num_hidden_layers": 4, "sliding_window": 4096, "use_sliding_window": True}
    with pytest.raises(FreqlabError, match="qwen2_moe with use_sliding_window: true slides layers by a rule freqlab"):
        layout_from_config(moe)
    assert layout_from_config({**moe, "layer_types": ["full_attention"] * 4}).spec == "4*global"  # listed: read
    llama4 = {"model_type": "llama4_text", "num_hidden_layers": 4, "attention_chunk_size": 0}  # was 3*global+nope
    with pytest.raises(FreqlabError, match="layer 0 is chunked_attention but attention_chunk_size is 0"):
        layout_from_config(llama4)


def test_llama4_configs_as_published_get_transformers_defaults():
    """Llama-4-Scout's config.json has ``"no_rope_layers": []``: transformers' Llama4TextConfig then makes every 4th
    layer NoPE (``no_rope_layer_interval``) and chunks of 8192 where the key is absent; it was refused, and a config
    without the keys read as 48 global layers."""
    published = {**LLAMA4_SCOUT["text_config"], "no_rope_layers": []}
    assert layout_from_config({"model_type": "llama4", "text_config": published}).spec == "+".join(
        ["3*chunk8K+nope"] * 12
    )
    bare = {"model_type": "llama4_text", "num_hidden_layers": 6, "no_rope_layer_interval": 3}
    assert layout_from_config(bare).spec == "2*chunk8K+nope+2*chunk8K+nope"
    assert layout_from_config({**bare, "attention_chunk_size": None}).spec == "2*global+nope+2*global+nope"


def test_no_rope_layers_must_list_every_layer():
    """transformers indexes no_rope_layers by layer: [1, 1] for 4 layers is no model it builds (a review: layers 2
    and 3 were read as RoPE layers, unsaid)."""
    for model_type in ("llama4_text", "llama"):
        config = {"model_type": model_type, "num_hidden_layers": 4, "no_rope_layers": [1, 1]}
        with pytest.raises(FreqlabError, match="no_rope_layers lists 2 layers, fewer than num_hidden_layers = 4"):
            layout_from_config(config)


@pytest.mark.parametrize(
    ("key", "value"),
    [("sliding_window_pattern", "x"), ("sliding_window_pattern", 0), ("max_window_layers", "x"),
     ("max_window_layers", -1), ("no_rope_layer_interval", 0)],
)  # fmt: skip
def test_a_bad_layout_key_in_a_config_is_named(key, value):
    config = {"model_type": "llama4_text" if key == "no_rope_layer_interval" else "gemma3_text",
              "num_hidden_layers": 4, "sliding_window": 512, key: value}  # fmt: skip
    with pytest.raises(FreqlabError, match=rf"config\.json: {key} must be an integer of at least \d, got {value!r}"):
        layout_from_config(config)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"num_hidden_layers": 10**7}, "num_hidden_layers must be an integer in 1..10,000, got 10000000"),  # 35 s
        ({"sliding_window": 10**20}, "layer 0 is sliding_attention but sliding_window is 100000000000000000000"),
        ({"no_rope_layers": "0101"}, "no_rope_layers must be a list of 1 (RoPE) and 0 (NoPE), got '0101'"),
        ({"no_rope_layers": [1, 0, 1, "x"]}, "no_rope_layers must be a list of 1 (RoPE) and 0 (NoPE), got [1, 0, 1,"),
        ({"no_rope_layers": {"a": 1}}, "no_rope_layers must be a list of 1 (RoPE) and 0 (NoPE), got {'a': 1}"),
        ({"use_sliding_window": "yes"}, "use_sliding_window must be true or false, got 'yes'"),
        ({"text_config": "abc"}, "text_config must be an object, got 'abc'"),
    ],
)
def test_a_config_value_transformers_would_read_otherwise_is_refused(changes, message):
    """A review: each was read as absent or false (all layers global), or a window past 2^30 taken (swa95367431640625M),
    or ten million layers walked for a minute, where a layout string is held to the same bounds."""
    config = {"model_type": "mistral", "num_hidden_layers": 4, "sliding_window": 64, **changes}
    with pytest.raises(FreqlabError, match=re.escape(f"config.json: {message}")):
        layout_from_config(config)
    assert layout_from_config({"model_type": "llama4_text", "num_hidden_layers": 2, "no_rope_layers": [True, False]})


def test_a_layout_mapping_is_named_as_one_and_by_its_schedule_stage(tmp_path):
    """A review: a stage's `layout: {foo: 1}` was "config.json: num_hidden_layers must be ...", naming a file
    that is not there and neither the schedule nor the stage."""
    with pytest.raises(FreqlabError, match=r"^a layout given as a model config mapping: num_hidden_layers must be"):
        read_layout({"foo": 1})
    LengthHistogram.from_counts([8], [3]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(
        "histogram: h.parquet\nstages:\n  - {name: a, L: 8, tokens: 1K, layout: {foo: 1}}\n"
    )
    with pytest.raises(FreqlabError, match=r"s\.yaml: stage 1 \(a\): a layout given as a model config mapping: "):
        load_schedule(tmp_path / "s.yaml")


def test_layout_from_a_config_file_and_partial_rotary(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(PHI3_PARTIAL))
    layout = read_layout(str(tmp_path / "config.json"))
    assert layout.spec == "4*global" and layout.rotary_fraction == 0.5
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(FreqlabError, match=r"bad\.json: not a JSON model config"):
        read_layout(str(tmp_path / "bad.json"))
    with pytest.raises(FreqlabError, match=r"layer_types\[1\] = 'linear_attention'"):
        layout_from_config({"num_hidden_layers": 2, "layer_types": ["full_attention", "linear_attention"]})
    with pytest.raises(FreqlabError, match="layer 0 is sliding_attention but sliding_window is None"):
        layout_from_config({"num_hidden_layers": 1, "layer_types": ["sliding_attention"]})


def test_summaries_give_shares_and_capped_effective_length_per_kind():
    lf = layout_frequency([4096] * 10, [1] * 10, 2048, "5*swa512+global+nope")
    rows = {row["kind"]: row for row in lf.kind_rows(tokens=40960, tau=1000)}
    assert rows["global"]["effective_length"] == 1998  # f_T(i) = 20 (2048 - i) >= 1000
    assert rows["swa512"]["effective_length"] == 511 and rows["swa512"]["reach"] == 511
    assert "capped at 511 by construction" in rows["swa512"]["note"]
    wide = layout_frequency([4096] * 10, [1] * 10, 2048, "swa4K").kind_rows()[0]  # a review: "capped at 2047"
    assert wide["reach"] == 2047 and "note" not in wide
    assert rows["swa512"]["share_of_layers"] == 5 / 7 and rows["nope"]["rope"] is False
    assert "f" not in rows["nope"]


def test_a_layout_frequency_shows_each_kind_in_a_notebook():
    lf = layout_frequency([4096] * 10, [1] * 10, 2048, "5*swa512+global+nope")
    assert repr(lf).splitlines()[0].endswith("swa512 x5 (reach 511), global x1 (reach 2047), nope x1")
    html = lf._repr_html_()
    assert "swa512" in html and "75.0%" in html and len(html) < 4000
