"""Position-id manipulation: PoSE's expected f over its skip sampler, its seeded replay, PI / YaRN stages."""

import random
from fractions import Fraction

import numpy as np
import pytest
from frequency.reference import expand, pairs_by_distance, pose_expectation, pose_row
from hypothesis import given, settings
from hypothesis import strategies as st

from freqlab import FreqlabError
from freqlab.frequency import position_frequency
from freqlab.frequency.pose import Pose, position_ids_from_spec
from freqlab.frequency.regimes import stream_order

histograms = st.lists(
    st.tuples(st.integers(1, 14), st.integers(1, 3)), min_size=1, max_size=4, unique_by=lambda t: t[0]
)


@settings(max_examples=100, deadline=None)
@given(histograms, st.integers(1, 8), st.integers(0, 6))
def test_pose_expectation_is_the_average_over_every_skip_of_real_position_ids(pairs, L, extra):
    lengths, counts = zip(*pairs)
    target = L + extra
    got = position_ids_from_spec({"kind": "pose", "target": target}).frequency(lengths, counts, L)
    assert got.numerator.shape == (target,)
    assert [got.value(d) for d in range(target)] == pose_expectation(expand(lengths, counts), L, target)


@settings(max_examples=60, deadline=None)
@given(histograms, st.integers(1, 8), st.integers(0, 6), st.integers(0, 5))
def test_pose_replay_reproduces_their_sampler_draw_by_draw(pairs, L, extra, seed):
    lengths, counts = zip(*pairs)
    target = L + extra
    got = Pose(target).replay(lengths, counts, L, seed)
    rng = random.Random(seed)
    f = [0] * target
    for n in stream_order(np.array(lengths), np.array(counts), seed).tolist():
        ids = pose_row(n, L, target, rng)  # train_preprocess_function_pose, transcribed
        for d, v in enumerate(pairs_by_distance(ids, lambda q, k: True, target)):
            f[d] += v
    assert got.denominator == 1 and got.numerator.tolist() == f


def test_pose_replay_converges_to_the_exact_expectation():
    lengths, L, target = [3000, 700, 4096], 1024, 4096

    def error(documents: int, seed: int) -> float:
        """Relative L1 distance of one replay from the exact expectation."""
        counts = [documents * 3 // 8, documents // 4, documents * 3 // 8]
        exact = Pose(target).frequency(lengths, counts, L)
        replay = Pose(target).replay(lengths, counts, L, seed)
        assert replay.tokens == exact.tokens  # every row trains min(n, L) tokens, whatever is drawn
        return float(np.abs(replay.f - exact.f).sum() / exact.f.sum())

    few = np.mean([error(40, seed) for seed in range(3)])
    many = np.mean([error(4000, seed) for seed in range(3)])
    assert many < 0.02 and many < few / 5  # about 1/sqrt(100) of the error with 100 times the documents


def test_a_pose_factor_gives_their_target_in_float64():
    """Their train_pose.py: int(model_max_position_embeddings * rope_scaling_factor) in float64: 100 · 1.15 is
    114.99999999999999 there, so 114 (a review: freqlab took the exact 115)."""
    assert position_ids_from_spec({"kind": "pose", "factor": 1.15}).target_for(100) == int(100 * 1.15) == 114
    assert position_ids_from_spec({"kind": "pose", "factor": "2.5"}).target_for(2048) == 5120


def test_pose_2k_to_16k_trains_every_difference_up_to_the_target():
    # their run_train_skipos.sh: 2K window, rope_scaling_factor 8 -> scaled_max_position_embeddings 16K
    pose = position_ids_from_spec({"kind": "pose", "factor": 8, "method": "yarn"})
    f = pose.frequency([100_000], [1000], 2048)
    A, R = 1024, 16384 - 2048  # a uniform on 1..1024, skip u uniform on 0..14336
    assert f.numerator.shape == (16384,) and f.tokens == 1000 * 2048
    # the largest difference, 16383, is the last query (2047 + u) and the first key (0, always in the first
    # chunk): it needs the largest skip u = R, drawn with probability 1 / (R + 1)
    assert f.value(16383) == Fraction(1000, R + 1)
    assert (f.numerator > 0).all()
    # distance 1: Lc - 2 pairs inside the two chunks in every row, and one across them when u = 0
    assert f.value(1) == 1000 * (2046 + Fraction(1, R + 1))
    # each row trains Lc(Lc + 1) / 2 pairs, so the expected pairs sum to that over the documents
    assert sum(f.numerator.tolist()) == 1000 * 2048 * 2049 // 2 * f.denominator
    assert A == (2048 + 1) // 2


def test_pose_expectation_stays_exact_beyond_int64():
    # 40 distinct row lengths: their common denominator lcm(A (target - Lc + 1)) needs more than 63 bits
    lengths = np.arange(1, 41)
    together = Pose(64).frequency(lengths, np.ones_like(lengths), 40)
    assert together.numerator.dtype == object and together.denominator >= 1 << 63
    one_by_one = sum((Pose(64).frequency([n], [1], 40) for n in lengths.tolist()[1:]), Pose(64).frequency([1], [1], 40))
    assert together == one_by_one and together.tokens == lengths.sum()
    replay = position_ids_from_spec({"kind": "pose", "target": 64, "replay": True}).frequency(
        lengths, np.ones_like(lengths), 40
    )
    assert replay.tokens == lengths.sum() and replay.numerator.dtype == np.int64


def test_pi_and_yarn_stages_report_f_on_the_original_position_scale():
    stage = position_ids_from_spec({"kind": "scaled", "method": "pi", "factor": 4})
    f = stage.frequency([5000, 300], [2, 7], 8192, "natural")
    assert f.numerator.tolist() == position_frequency([5000, 300], [2, 7], 8192, "natural").tolist()
    assert "original position scale" in f.note


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "pose", "target": "128K", "chunks": 3}, "pose: chunks must be 2"),
        ({"kind": "pose"}, "exactly one of target"),
        ({"kind": "pose", "factor": 0.5}, "pose: factor must be a scaling factor >= 1"),
        ({"kind": "pose", "target": "128K", "skip": 1}, "pose: unknown key 'skip'"),
        ({"kind": "scaled", "method": "ntk", "factor": 4}, "scaled: method must be one of pi, yarn"),
        ({"kind": "rope"}, "position ids kind must be pose or scaled, got 'rope'"),
    ],
)
def test_bad_specs_name_the_key_and_value(spec, message):
    with pytest.raises(FreqlabError, match=message):
        position_ids_from_spec(spec)


def test_a_target_shorter_than_the_window_is_refused():
    with pytest.raises(FreqlabError, match="pose: target 1000 is shorter than the window L = 2048"):
        Pose(1000).frequency([5000], [1], 2048)


def test_an_expectation_whose_common_denominator_outgrows_what_can_be_held_is_refused_in_one_line(monkeypatch):
    """Thousands of distinct row lengths make the least common denominator of A·(R + 1) thousands of digits long
    (values of that size over a target of 512K positions would take tens of GB): refused before, with the way out."""
    from freqlab.errors import FreqlabError
    from freqlab.frequency.pose import MAX_DENOMINATOR_BITS, position_ids_from_spec

    monkeypatch.setenv("FREQLAB_MEMORY_BYTES", str(200 << 20))  # 200 MB: values of ~2^15 bits over 32K positions
    lengths = np.arange(1000, 6000)
    assert MAX_DENOMINATOR_BITS == 1 << 20
    with pytest.raises(FreqlabError, match=r"more than 17,066 bits \(values too large to hold 32,768 of them\); bin"):
        position_ids_from_spec({"kind": "pose", "factor": 4}).frequency(lengths, np.ones_like(lengths), 8192)
    replayed = position_ids_from_spec({"kind": "pose", "factor": 4, "replay": True})
    assert replayed.frequency(lengths, np.ones_like(lengths), 8192).tokens == int(lengths.sum())


def test_a_huge_pose_factor_is_refused_in_one_short_line():
    pose = position_ids_from_spec({"kind": "pose", "factor": "1e400"})
    with pytest.raises(FreqlabError) as error:
        pose.frequency([10], [1], 8)
    assert str(error.value) == "pose: target 8e+400 (factor 1e+400 · L = 8) is larger than freqlab supports (2^30)"
    with pytest.raises(FreqlabError, match=r"^pose: target 2147483648 \(factor 2 · L = 1,073,741,824\) is larger"):
        position_ids_from_spec({"kind": "pose", "factor": 2}).target_for(1 << 30)


def test_an_unknown_rotary_method_is_one_line_naming_the_choices():
    with pytest.raises(FreqlabError, match=r"method.*one of pi, yarn"):
        position_ids_from_spec({"kind": "pose", "target": 6, "method": "bogus"})


@pytest.mark.parametrize("replay", [False, True])
def test_pose_counts_the_tokens_beyond_each_documents_row_as_dropped(replay):
    """One row per document, its first min(n, L) tokens: a 10-token document at L = 4 trains 4 and leaves 6, which
    were not counted anywhere (tokens 10, dropped 0 for 16 tokens read); the regime is said to be unused."""
    f = position_ids_from_spec({"kind": "pose", "target": 8, "replay": replay}).frequency([10, 3], [1, 2], 4, "concat")
    assert (f.tokens, f.dropped_tokens) == (4 + 3 + 3, 6)
    assert "the stage's regime is not used" in f.note


@pytest.mark.parametrize(
    "spec",
    [
        {"kind": "scaled", "method": "yarn", "factor": 2},
        {"kind": "pose", "target": 1024},
        {"kind": "dataset-decomposition", "buckets": [256, 512]},
    ],
)
def test_position_id_and_curriculum_stages_refuse_megatron_rows_they_would_mislabel(spec):
    from freqlab.errors import FreqlabError
    from freqlab.frequency.curricula import curriculum_from_spec

    recipe = curriculum_from_spec(spec) if spec["kind"] == "dataset-decomposition" else position_ids_from_spec(spec)
    with pytest.raises(FreqlabError, match="the megatron regime is replayed from Megatron's indexes only"):
        recipe.frequency([10, 300], [5, 2], 512, "megatron")
