"""RoPE scaling config blocks: formulas, and both Hugging Face conventions accepted without warnings.

The installed transformers (5.x) is checked live for both blocks: 5.x reads ``rope_parameters`` and still
converts a 4.x ``rope_scaling`` block. The 4.x block's keys are also checked against the 4.x validators
(transformers 4.4x-4.57 ``modeling_rope_utils._validate_*``: linear {rope_type, factor}; dynamic {rope_type,
factor} (+ original_max_position_embeddings optional); yarn {rope_type, factor} + optional attention_factor,
beta_fast, beta_slow, original_max_position_embeddings (as in the published Qwen2.5/Qwen3 configs);
llama3 {rope_type, factor, original_max_position_embeddings, low_freq_factor, high_freq_factor}; longrope
{rope_type, short_factor, long_factor} + optional attention_factor, factor, original_max_position_embeddings;
``factor`` a float; ``rope_theta`` a top-level key).
"""

from __future__ import annotations

import json
import logging
import math
import warnings

import pytest

from freqlab.errors import FreqlabError
from freqlab.plan.rope_scaling import (
    BASE_ASSUMED,
    LONGROPE_LABEL,
    ROPE_TYPES,
    VLLM_ATTENTION_FACTOR,
    VLLM_MAX_MODEL_LEN,
    check_factor,
    compare_rope_scalings,
    critical_dimension,
    dynamic_ntk_base,
    longrope_attention_factor,
    longrope_factors,
    ntk_aware_base,
    plan_rope_scaling,
    rotary_dims,
    scaled_rotary_dims,
    yarn_attention_factor,
)

transformers = pytest.importorskip("transformers", reason="transformers is a test dependency (pyproject [test])")

V4_KEYS = {  # required, optional keys of `rope_scaling` in transformers 4.x
    "linear": ({"rope_type", "factor"}, set()),
    "dynamic": ({"rope_type", "factor"}, {"original_max_position_embeddings"}),
    "yarn": (
        {"rope_type", "factor"},
        {"attention_factor", "beta_fast", "beta_slow", "original_max_position_embeddings"},
    ),
    "llama3": (
        {"rope_type", "factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"},
        set(),
    ),
    "longrope": (
        {"rope_type", "short_factor", "long_factor"},
        {"attention_factor", "factor", "original_max_position_embeddings"},
    ),
}


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        if record.levelno >= logging.WARNING:
            self.messages.append(record.getMessage())


def load_without_warnings(block: dict):
    """LlamaConfig(**block), failing on any Python warning or transformers logger warning."""
    handler = _Collect()
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            config = transformers.LlamaConfig(**block)
    finally:
        logger.removeHandler(handler)
    assert [str(w.message) for w in caught] == []
    assert handler.messages == []
    return config


@pytest.mark.parametrize("rope_type", ROPE_TYPES)
def test_5x_block_loads_without_warnings(rope_type):
    p = plan_rope_scaling(4096, 16384, rope_type, rope_theta=10000.0, head_dim=128)
    config = load_without_warnings(p.config_5x)
    assert config.rope_parameters == p.config_5x["rope_parameters"]
    assert config.max_position_embeddings == p.config_5x["max_position_embeddings"]


@pytest.mark.parametrize("rope_type", ROPE_TYPES)
def test_4x_block_loads_without_warnings_and_matches_4x_validators(rope_type):
    p = plan_rope_scaling(4096, 16384, rope_type, rope_theta=10000.0, head_dim=128)
    block = p.config_4x
    config = load_without_warnings(p.config_4x)
    assert config.rope_parameters["rope_theta"] == block["rope_theta"]
    assert p.config_4x == block  # loading did not edit the plan (transformers edits the dict it gets)
    if rope_type == "ntk":
        assert block["rope_scaling"] is None
        return
    scaling = block["rope_scaling"]
    required, optional = V4_KEYS[rope_type]
    assert required <= set(scaling) <= required | optional
    assert isinstance(scaling["factor"], float)
    assert config.rope_parameters["rope_type"] == rope_type
    assert config.rope_parameters["factor"] == scaling["factor"]


def test_5x_and_4x_blocks_agree():
    for p in compare_rope_scalings(8192, 131072, rope_theta=500000.0):
        if p.rope_type == "ntk":
            assert p.config_5x["rope_parameters"]["rope_theta"] == p.config_4x["rope_theta"]
            continue
        five = dict(p.config_5x["rope_parameters"])
        assert five.pop("rope_theta") == p.config_4x["rope_theta"] == 500000.0
        if p.rope_type == "longrope":  # 4.x: the original length is max_position_embeddings (module docstring)
            assert five.pop("original_max_position_embeddings") == p.config_4x["max_position_embeddings"] == 8192
            assert five == p.config_4x["rope_scaling"] and p.config_5x["max_position_embeddings"] == 131072
            continue
        assert five == p.config_4x["rope_scaling"]
        assert p.config_5x["max_position_embeddings"] == p.config_4x["max_position_embeddings"]


def test_factor_and_max_position_embeddings():
    blocks = {p.rope_type: p for p in compare_rope_scalings(4096, 16384)}
    assert all(p.factor == 4.0 for p in blocks.values())
    assert blocks["linear"].config_5x["max_position_embeddings"] == 16384
    assert blocks["yarn"].config_5x["max_position_embeddings"] == 16384  # = factor · original
    assert blocks["yarn"].config_5x["rope_parameters"]["original_max_position_embeddings"] == 4096
    assert blocks["dynamic"].config_5x["max_position_embeddings"] == 4096  # scaling starts beyond L
    assert blocks["llama3"].config_5x["rope_parameters"]["low_freq_factor"] == 1.0
    assert blocks["llama3"].config_5x["rope_parameters"]["high_freq_factor"] == 4.0


def test_llama31_shape():
    p = plan_rope_scaling(8192, 131072, "llama3", rope_theta=500000.0, factor=8.0)
    assert p.config_4x["rope_scaling"] == {
        "rope_type": "llama3",
        "factor": 8.0,
        "original_max_position_embeddings": 8192,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
    }
    load_without_warnings(p.config_5x)


def test_ntk_aware_base_formula():
    # base' = base · s^(d/(d-2)); d = 128, s = 4: 10000 · 4^(64/63)
    assert ntk_aware_base(10000.0, 4.0, 128) == pytest.approx(10000 * 4 ** (64 / 63))
    assert ntk_aware_base(10000.0, 4.0, 128) == pytest.approx(40889.94243, rel=1e-9)
    p = plan_rope_scaling(4096, 16384, "ntk")
    assert p.config_5x["rope_parameters"] == {"rope_type": "default", "rope_theta": ntk_aware_base(1e4, 4.0, 128)}


def test_dynamic_base_and_yarn_temperature():
    # at n = L the dynamic base is unchanged; at n = N it is b · (s² - s + 1)^(d/(d-2))
    assert dynamic_ntk_base(1e4, 4.0, 128, 4096, 4096) == pytest.approx(1e4)
    assert dynamic_ntk_base(1e4, 4.0, 128, 4096, 16384) == pytest.approx(1e4 * 13 ** (128 / 126))
    assert yarn_attention_factor(4.0) == pytest.approx(0.1 * math.log(4) + 1)


def test_giraffe_zero_shot_note_quotes_table4_and_projects_nothing():
    p = plan_rope_scaling(4096, 16384, "linear")  # factor 4
    assert "Sec. 5.2, Table 4" in p.reasoning
    assert "fine-tuned at factor 4: 7100 at eval factor 4, 16000 at eval factor 8" in p.reasoning
    assert "fine-tuned at factor 1 (the base model): 0 at all lengths at eval factor 1, 4200 at eval factor 2" in (
        p.reasoning
    )
    assert "fine-tuned at factor 16: 16000 at eval factor 16, 16000 at eval factor 32" in p.reasoning
    assert "32768" not in p.reasoning  # no projection 2 · N from the window
    # the measurement does not depend on the requested window or target
    q = plan_rope_scaling(4096, 65536, "linear")
    assert p.reasoning[p.reasoning.index("Giraffe") :] == q.reasoning[q.reasoning.index("Giraffe") :]
    assert "131072" not in q.reasoning


def test_giraffe_factor16_note_is_for_linear_only():
    linear = plan_rope_scaling(4096, 65536, "linear", rope_theta=10000)  # factor 16
    (note,) = linear.notes
    # Table 1 / Table 4 (train = eval = 16): non-zero up to 16000, 0 from 17500; the paper expected ~32000
    assert "up to 16000 tokens (0 from 17500)" in note and "roughly 32000" in note and "Table 1" in note
    for rope_type in ("ntk", "dynamic", "yarn", "llama3"):
        assert plan_rope_scaling(4096, 65536, rope_type, rope_theta=10000, head_dim=128).notes == (), rope_type
        assert "Giraffe" not in plan_rope_scaling(4096, 65536, rope_type).reasoning
    assert plan_rope_scaling(4096, 32768, "linear", rope_theta=1e4).notes == ()  # factor 8: nothing measured to quote
    assert plan_rope_scaling(4096, 32768, "linear").notes == (BASE_ASSUMED,)  # the base not given


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((4096, 4096, "linear"), {}, "not above the training window"),
        ((4096, 2048, "yarn"), {}, "not above the training window"),
        ((4096, 8192, "ntk-by-parts"), {}, "unknown RoPE scaling type"),
        ((4096, 8192, "ntk"), {"head_dim": 7}, "head_dim"),
        ((4096, 8192, "dynamic"), {"head_dim": 2}, "head_dim must be an even integer from 4 to 8192"),
        ((4096, 8192, "longrope"), {"head_dim": 10**6}, "from 4 to 8192, got 1000000"),  # 23 MB of output before
        ((4096, 8192, "linear"), {"factor": 0.5}, "must exceed 1"),
    ],
)
def test_bad_requests(args, kwargs, message):
    with pytest.raises(FreqlabError, match=message):
        plan_rope_scaling(*args, **kwargs)


# --- critical dimension and partial rotary dimensions -----------------------------------------------------------


def closed_form_critical(length: int, base: float, d: int) -> int:
    """Liu et al. 2024 (Scaling Laws of RoPE-based Extrapolation): 2⌈(d/2)·log_b(L/2π)⌉."""
    return 2 * math.ceil(d / 2 * math.log(length / (2 * math.pi)) / math.log(base))


def test_critical_dimension_of_llama2_is_92():
    # Llama 2: b = 10000, d = 128, L = 4096 -> (d/2) log_b(L/2π) = 45.03 -> 92 (Liu et al. 2024)
    assert critical_dimension(4096, 10000.0, 128) == 92 == closed_form_critical(4096, 10000.0, 128)


@pytest.mark.parametrize("length", [100, 1000, 2730, 4096, 8192, 131072])
@pytest.mark.parametrize(("base", "d"), [(10000.0, 128), (500000.0, 128), (10000.0, 64), (1e6, 32)])
def test_critical_dimension_counts_the_periods_within_the_length(length, base, d):
    periods = [2 * math.pi * base ** (2 * j / d) for j in range(d // 2)]  # one per rotary pair
    assert critical_dimension(length, base, d) == 2 * sum(p <= length for p in periods)
    assert critical_dimension(length, base, d) == min(closed_form_critical(length, base, d), d)


def test_rope_plans_count_the_critical_dimension_at_the_effective_length():
    p = plan_rope_scaling(4096, 16384, "yarn", effective_length=2730, E_rule="predicted N*")
    assert p.critical_dim == critical_dimension(2730, 10000.0, 128) == 86 < p.critical_dim_L == 92
    assert "within E = 2730 tokens (predicted N*)" in p.reasoning and "(counted for L = 4096: 92)" in p.reasoning
    assert p.to_dict()["critical_dim"] == 86
    q = plan_rope_scaling(4096, 16384, "yarn")  # no prediction: L, said so
    assert (q.critical_dim, q.E_rule) == (92, "window") and "no effective length given" in q.reasoning


def test_partial_rotary_factor_counts_only_the_rotary_dimensions():
    assert rotary_dims(128, 0.25) == 32 and rotary_dims(80, 0.4) == 32
    p = plan_rope_scaling(4096, 16384, "ntk", head_dim=128, partial_rotary_factor=0.25)
    assert p.rotary_dim == 32
    # NTK-aware base over the rotary dimensions: b · s^(d_r/(d_r - 2)) with d_r = 32
    assert p.config_5x["rope_parameters"]["rope_theta"] == pytest.approx(1e4 * 4 ** (32 / 30))
    assert p.critical_dim == critical_dimension(4096, 1e4, 32) == closed_form_critical(4096, 1e4, 32)
    linear = plan_rope_scaling(4096, 16384, "linear", partial_rotary_factor=0.5)
    assert linear.config_4x["partial_rotary_factor"] == 0.5  # 4.x: a top-level key
    assert linear.config_5x["rope_parameters"]["partial_rotary_factor"] == 0.5  # 5.x: inside rope_parameters
    with pytest.raises(FreqlabError, match="partial_rotary_factor"):
        plan_rope_scaling(4096, 16384, "linear", partial_rotary_factor=1.5)


def test_every_block_names_its_versions_and_vllm_gets_the_length_by_hand():
    for p in compare_rope_scalings(4096, 16384):
        assert [b.label for b in p.blocks][-1] == "transformers 5.0+ (rope_parameters)"
        assert p.vllm_command.endswith("--max-model-len 16384")
        assert json.loads(p.vllm_command.split("--hf-overrides '")[1].split("'")[0]) == {
            "rope_parameters": p.config_5x["rope_parameters"]
        }
    assert "--max-model-len" in VLLM_MAX_MODEL_LEN
    yarn = plan_rope_scaling(4096, 16384, "yarn", attention_factor=1.0)
    assert VLLM_ATTENTION_FACTOR in yarn.notes and "#46280" in VLLM_ATTENTION_FACTOR


def test_the_rope_planner_refuses_them_too():
    for options in (
        {"rope_theta": float("nan")},
        {"rope_theta": float("inf")},
        {"factor": float("inf")},
        {"factor": float("nan")},
    ):
        with pytest.raises(FreqlabError, match=r"must exceed 1 and be finite|must be a positive finite number"):
            plan_rope_scaling(4096, 16384, "yarn", **options)


def test_a_factor_stretches_L_to_at_most_2_to_the_30_positions():
    """s · L is the length a factor scales for; freqlab plans targets up to 2^30 (``--extend-to``'s bound). Past it,
    NTK's base b · s^(d/(d-2)) overflowed to inf and was printed as ``"rope_theta": Infinity`` (not JSON)."""
    assert check_factor(None, 4096, 16384) == 4.0
    assert check_factor(2**18, 4096, 16384) == 2**18  # s · L = 2^30 exactly
    ntk = plan_rope_scaling(4096, 16384, "ntk", factor=2**18)
    assert math.isfinite(ntk.config_5x["rope_parameters"]["rope_theta"])
    too_far = (
        "factor 1e+300 stretches L = 4096 to s·L = 4.096e+303 positions, past the longest length freqlab plans "
        "(2^30): a factor must be at most 2^30 / L = 262144 (N / L = 4)"
    )
    for rope_type in ROPE_TYPES:
        with pytest.raises(FreqlabError) as error:
            plan_rope_scaling(4096, 16384, rope_type, factor=1e300)
        assert str(error.value) == too_far
    with pytest.raises(FreqlabError, match=r"^factor 262144.5 stretches L = 4096 to s·L = 1.074e\+09 positions"):
        check_factor(2**18 + 0.5, 4096, 16384)


@pytest.mark.parametrize(
    ("rope_type", "factor", "says"),
    [
        ("linear", 2.0, "factor 2 is below N / L = 4: it stretches L = 4096 to s·L = 8192 positions only, so "
                        "positions from there to N = 16384 fall beyond the trained range after scaling"),
        ("yarn", 2.0, "factor 2 is below N / L = 4"),
        ("llama3", 8.0, "factor 8 exceeds N / L = 4: it scales for s·L = 32768 positions, more than N = 16384 needs"),
        ("dynamic", 2.0, "factor 2 differs from N / L = 4: dynamic NTK grows the base with the sequence length n"),
        ("ntk", 4.0, None),  # N / L: nothing to say
    ],
)  # fmt: skip
def test_a_factor_other_than_N_over_L_says_what_it_does_to_the_plan(rope_type, factor, says):
    p = plan_rope_scaling(4096, 16384, rope_type, factor=factor)
    factor_notes = [n for n in p.notes if n.startswith("factor ") and "N / L" in n]
    assert factor_notes == ([] if says is None else [factor_notes[0]]) and (says is None or says in factor_notes[0])


def test_an_odd_or_too_small_rotary_dimension_names_head_dim_and_partial_rotary_factor():
    with pytest.raises(FreqlabError) as error:
        rotary_dims(6, 0.5)
    assert str(error.value) == (
        "head_dim 6 · partial_rotary_factor 0.5 = 3 rotary dimensions: RoPE rotates pairs of dimensions, so they "
        "must be an even number >= 2"
    )
    assert scaled_rotary_dims("linear", 4, 0.5) == 2  # one rotary pair: linear, YaRN, llama3, LongRoPE take it
    assert plan_rope_scaling(4096, 16384, "linear", head_dim=4, partial_rotary_factor=0.5).rotary_dim == 2
    for rope_type in ("ntk", "dynamic"):  # their exponent d_r / (d_r - 2)
        with pytest.raises(FreqlabError, match=rf"= 2 rotary dimensions: {rope_type} scaling needs at least 4 \("):
            plan_rope_scaling(4096, 16384, rope_type, head_dim=4, partial_rotary_factor=0.5)


def yarn_ramp_factor(s: float, theta: float, d_r: int, E: int, j: int) -> float:
    """YaRN's by-parts ramp for pair j written out (Peng et al., ICLR 2024, Sec. 3.2, alpha 1, beta 32), as the
    LongRoPE rescale factor lambda (frequency theta_j / lambda): 1 / ((1 - gamma)/s + gamma)."""
    turns = E / (2 * math.pi * theta ** (2 * j / d_r))
    gamma = 0.0 if turns < 1 else 1.0 if turns > 32 else (turns - 1) / 31
    return 1 / ((1 - gamma) / s + gamma)


@pytest.mark.parametrize(
    ("s", "theta", "d_r", "E"),
    [(4.0, 1e4, 128, 4096), (32.0, 1e4, 96, 4096), (8.0, 5e5, 128, 8192), (3.0, 1e4, 64, 2730)],
)
def test_longrope_long_factor_is_yarns_ramp_per_pair(s, theta, d_r, E):
    got = longrope_factors(s, theta, d_r, E)
    assert len(got) == d_r // 2
    assert got == pytest.approx([yarn_ramp_factor(s, theta, d_r, E, j) for j in range(d_r // 2)], rel=1e-14)
    assert got == sorted(got) and got[0] == 1.0  # never decreasing (LongRoPE's constraint); the fastest pair kept
    # exactly the pairs past the critical dimension (period > E: no full turn within E) are interpolated by s
    assert got.count(s) == (d_r - critical_dimension(E, theta, d_r)) // 2


def test_longrope_blocks_have_one_factor_per_rotary_pair_and_say_what_they_are():
    p = plan_rope_scaling(4096, 16384, "longrope", head_dim=128)
    five, four = p.config_5x, p.config_4x
    assert five["max_position_embeddings"] == 16384 and four["max_position_embeddings"] == 4096
    params = five["rope_parameters"]
    assert {k: v for k, v in params.items() if k not in ("short_factor", "long_factor")} == {
        "rope_type": "longrope",
        "rope_theta": 10000.0,
        "factor": 4.0,
        "original_max_position_embeddings": 4096,
    }  # no attention_factor: transformers' own rule applies
    assert params["short_factor"] == [1.0] * 64  # within L: the stock angles
    assert params["long_factor"] == longrope_factors(4.0, 1e4, 128, 4096)
    assert four["rope_scaling"]["long_factor"] == params["long_factor"]
    assert LONGROPE_LABEL == "search-free initialisation, not LongRoPE's searched factors"
    assert LONGROPE_LABEL in p.reasoning and any(LONGROPE_LABEL in n for n in p.notes)
    assert "arXiv:2402.13753" in p.reasoning and "Phi-3" in p.reasoning
    assert f"sqrt(1 + ln s / ln L) = {math.sqrt(1 + math.log(4) / math.log(4096)):.4f}" in p.reasoning
    assert "18 pairs whose period exceeds E get s = 4, 21 keep 1" in p.reasoning  # 64 - 18 - 21 = 25 on the ramp
    partial = plan_rope_scaling(4096, 16384, "longrope", head_dim=128, partial_rotary_factor=0.5)
    assert len(partial.config_5x["rope_parameters"]["long_factor"]) == 32 == partial.rotary_dim // 2
    assert len(partial.config_4x["rope_scaling"]["short_factor"]) == 32


def test_a_head_dim_not_given_is_said_where_the_block_depends_on_it():
    """A review: --head-dim defaulted to 128 without a word; a head_dim-16 model then failed past L on LongRoPE's 64
    factors, and NTK's base for head_dim 64 is 10000·4^(64/62) = 41,829, not the 40,890 printed for 128."""
    for rope_type in ROPE_TYPES:
        assumed = plan_rope_scaling(4096, 16384, rope_type, rope_theta=1e4)
        assert "head_dim 128 assumed" in assumed.reasoning
        notes = [n for n in assumed.notes if n.startswith("head_dim = 128 assumed")]
        assert len(notes) == (rope_type in ("ntk", "longrope")), rope_type  # the blocks that hold it
        given = plan_rope_scaling(4096, 16384, rope_type, rope_theta=1e4, head_dim=64)
        assert "head_dim 64, rope_theta" in given.reasoning
        assert given.notes == tuple(n for n in assumed.notes if not n.startswith("head_dim"))
    ntk = plan_rope_scaling(4096, 16384, "ntk", rope_theta=1e4, head_dim=64).config_5x["rope_parameters"]
    assert ntk["rope_theta"] == pytest.approx(1e4 * 4 ** (64 / 62)) and round(ntk["rope_theta"]) == 41829


def test_longrope_before_4_51_takes_one_list_at_every_length():
    """transformers 4.45-4.47 compute a Llama's LongRoPE angles once, at load, from long_factor (s·L > L), 4.48-4.50
    from short_factor (no sequence length at load: the stock angles past L, no extension); dynamic_rope_update
    switches by length from 4.51 (read from each version's modeling_rope_utils and modeling_llama). A review: one
    4.45-4.57 block said short_factor (1) within L, true from 4.51 only."""
    p = plan_rope_scaling(4096, 16384, "longrope", rope_theta=1e4, head_dim=128)
    once, switching, five = p.blocks
    assert (once.since, once.until, switching.since, switching.until) == ("4.45", "4.51", "4.51", "5.0")
    long = five.config["rope_parameters"]["long_factor"]
    assert once.config["rope_scaling"]["short_factor"] == once.config["rope_scaling"]["long_factor"] == long
    assert (
        switching.config["rope_scaling"]["short_factor"] == [1.0] * 64 == five.config["rope_parameters"]["short_factor"]
    )
    assert "the 4.45-4.50 block sets short_factor = long_factor" in p.reasoning


def test_longrope_ramp_is_counted_at_the_effective_length():
    """A shorter effective length E leaves more pairs without a full turn within it: more of them get s."""
    at_L = plan_rope_scaling(4096, 16384, "longrope").config_5x["rope_parameters"]["long_factor"]
    at_E = plan_rope_scaling(4096, 16384, "longrope", effective_length=2730).config_5x["rope_parameters"]["long_factor"]
    assert at_E == longrope_factors(4.0, 1e4, 128, 2730) != at_L
    assert at_E.count(4.0) == (128 - 86) // 2 == 21 > at_L.count(4.0) == 18  # critical dims 86 and 92


def test_longrope_attention_factor_is_transformers_rule():
    assert longrope_attention_factor(32.0, 4096) == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)))
    assert longrope_attention_factor(1.0, 4096) == 1.0


def test_the_base_note_alone_says_nothing_of_the_factor():
    """The YaRN note on a factor other than N / L was added whenever any note was (the base's too, at N / L)."""
    assert plan_rope_scaling(2048, 8192, "yarn").notes == (BASE_ASSUMED,)
