"""The published recipes shipped as data: each loads, cites its sources, and marks every number it assumes."""

import numpy as np
import pytest

from freqlab import FreqlabError, LengthHistogram
from freqlab.frequency.schedule import load_preset, load_schedule, recipe_presets, schedule_frequency

PRESETS = ("llama3", "prolong", "fu2024", "gemma3", "skyladder", "qwen2.5")


def test_the_issue_s_recipes_are_all_shipped():
    assert set(PRESETS) <= set(recipe_presets())


@pytest.mark.parametrize("name", PRESETS)
def test_every_window_and_budget_has_a_source_or_an_assumed_mark(name):
    schedule = load_preset(name, histogram="unused.parquet")
    assert schedule.title and schedule.sources
    for stage in schedule.stages:
        marked = dict(stage.provenance)
        for key in ("L", "tokens"):
            assert marked[key].startswith(("source: ", "assumed: ")), (stage.name, key)


def test_llama3_states_six_long_stages_from_8k_to_128k_over_about_800b_tokens():
    stages = load_preset("llama3", histogram="unused.parquet").stages
    long = stages[1:]
    assert len(long) == 6 and long[-1].L == 128 * 1024 and stages[0].L == 8 * 1024
    assert sum(stage.tokens for stage in long) == 800 * 10**9
    assert all("tokens" in stage.assumed for stage in long)  # the split is not stated (Sec. 3.4.2)
    assert "L" not in long[-1].assumed


@pytest.mark.parametrize("name", PRESETS)
def test_every_regime_has_a_source_or_an_assumed_mark_and_a_total_less_an_assumed_part_is_assumed(name):
    """A review: Qwen2.5-Turbo's and Llama 3's long stages gave their regime bare; Gemma 3's 3.99T and Qwen2.5's
    17.84T, a stated total less an assumed stage, were marked as stated."""
    for stage in load_preset(name, histogram="unused.parquet").stages:
        assert dict(stage.provenance)["regime"].startswith(("source: ", "assumed: ")), stage.name
        if "less" in dict(stage.provenance)["tokens"]:
            assert "tokens" in stage.assumed, stage.name


def test_skyladder_grows_its_window_over_the_share_of_steps_its_code_takes():
    """SkyLadder's dm8 (lit_gpt/packed_dataset.py): one position every 8 optimizer steps from 32, so 8K after
    (8192 - 32) · 8 = 65,280 of the 100,000 steps pretrain/tinyllama.py runs (was 1.0, marked assumed: a review)."""
    stage = load_preset("skyladder", histogram="unused.parquet").stages[0]
    assert stage.curriculum["share"] == (8192 - 32) * 8 / 100_000 == 0.6528
    assert "curriculum.share" not in stage.assumed and "65,280" in dict(stage.provenance)["curriculum.share"]


def test_gemma3_is_five_local_layers_of_1024_per_global_layer():
    schedule = load_preset("gemma3", histogram="unused.parquet")
    assert {stage.layout.spec for stage in schedule.stages} == {"5*swa1K+global"}
    assert "Sec. 2" in dict(schedule.provenance)["layout"]


def test_presets_run_on_a_histogram_object():
    h = LengthHistogram.from_counts([3000, 70000], [50, 2])
    result = schedule_frequency(load_preset("prolong", histogram=h))
    assert result.window == 512 * 1024 and result.frequencies[0][0] == 50 * 3000 + 2 * 70000


def test_a_curriculum_stage_is_the_curricula_module_scaled_to_its_tokens():
    from freqlab.frequency.curricula import curriculum_from_spec

    h = LengthHistogram.from_counts([3000, 20000], [50, 3])
    schedule = load_preset("skyladder", histogram=h)
    stage = schedule.stages[0]
    assert stage.curriculum["start"] == 32 and stage.curriculum["kind"] == "skyladder"
    result = schedule_frequency(schedule)
    direct = curriculum_from_spec(stage.curriculum).frequency(
        h.lengths, h.counts, stage.L, stage.regime, stage_tokens=stage.tokens
    )  # concat: the stage's own 100B tokens in rows of 8K, exactly
    assert direct.denominator == 1  # SkyLadder is deterministic given the histogram
    np.testing.assert_array_equal(result.frequencies[0], direct.numerator)


def test_a_curriculum_given_as_a_rate_is_refused_inside_a_stage(tmp_path):
    LengthHistogram.from_counts([3000], [5]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(
        "histogram: h.parquet\nstages:\n  - {L: 4K, tokens: 1B, regime: concat,"
        " curriculum: {kind: skyladder, rate: 8, batch: 4}}\n"
    )
    with pytest.raises(FreqlabError, match=r"takes share .* not rate"):
        schedule_frequency(load_schedule(tmp_path / "s.yaml"))
    # a warm-up has no rate at all: its own unknown key, not SkyLadder's words (a review)
    (tmp_path / "w.yaml").write_text(
        "histogram: h.parquet\nstages:\n  - {L: 4K, tokens: 1B, regime: concat,"
        " curriculum: {kind: warmup, start: 64, share: 0.5, rate: 8}}\n"
    )
    with pytest.raises(FreqlabError, match=r"stage 1 \(stage-1\): curriculum: .*unknown key 'rate'"):
        schedule_frequency(load_schedule(tmp_path / "w.yaml"))
