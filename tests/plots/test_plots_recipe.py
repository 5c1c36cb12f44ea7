"""The recipe figure: f_T per stage and layer kind (exact values drawn), effective length after each stage."""

import numpy as np
import pytest
from plot_helpers import assert_labelled

from freqlab import LengthHistogram
from freqlab.errors import FreqlabError
from freqlab.frequency.layouts import LayerKind
from freqlab.frequency.schedule import load_preset, parse_schedule, schedule_frequency
from freqlab.plots.recipe import plot_recipe


def test_each_stage_panel_draws_each_kind_s_scaled_frequency(histogram):
    data = {
        "layout": "2*swa256+global+nope",
        "tau": 1e6,
        "stages": [{"name": "short", "L": 1024, "tokens": "1B"}, {"name": "long", "L": 4096, "tokens": "100M"}],
    }
    result = schedule_frequency(parse_schedule(data, histogram=histogram))
    fig = plot_recipe(result)
    assert_labelled(fig)
    short, long, after = fig.axes[:3]
    lines = {line.get_label(): line for line in long.lines}
    swa, glob = LayerKind("swa", 256), LayerKind("global")
    assert lines["swa256"].get_xdata()[-1] == 255  # a sliding window stops at w - 1 by construction
    assert np.array_equal(lines["global"].get_ydata(), result.stage_scaled(1, glob)[: lines["global"].get_xdata().size])
    assert np.array_equal(lines["swa256"].get_ydata(), result.stage_scaled(1, swa)[:256])
    effective = {line.get_label(): line.get_ydata().tolist() for line in after.lines}
    assert effective["global"] == [result.effective_length(1e6, glob, stages=k) for k in (1, 2)]
    assert effective["swa256"] == [255, 255]
    assert short.get_yscale() == "log" and short.get_ylim() == long.get_ylim()  # one scale per axis
    assert "nope layers: no rotary embedding" in fig._suptitle.get_text()


def test_a_layout_without_rotary_layers_has_no_figure(histogram):
    """A review: `plot recipe --preset gemma3 --layout nope` was max() of nothing, a traceback."""
    data = {"layout": "nope", "stages": [{"L": 1024, "tokens": "1B"}]}
    with pytest.raises(
        FreqlabError, match=r"^no layer of the last stage's layout has a rotary embedding \(NoPE only\)"
    ):
        plot_recipe(schedule_frequency(parse_schedule(data, histogram=histogram)))


def test_a_preset_figure_has_a_panel_per_stage_and_one_for_effective_lengths():
    result = schedule_frequency(load_preset("llama3", histogram=LengthHistogram.from_counts([3000, 90000], [500, 3])))
    fig = plot_recipe(result)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles[0] == "(a) pretrain-8k\nL = 8K, 14.8T tokens"
    assert titles[-1] == "(h) effective length after each stage"
    assert len(titles) == 8


def test_tracks_of_one_final_kind_are_told_apart(histogram):
    """Sliding layers made global for the last stage beside layers global throughout: two tracks of the final
    global kind, each drawn black with its own label, which could not be told apart (second adversary review)."""
    data = {
        "tau": 1e6,
        "stages": [
            {"name": "short", "L": 1024, "tokens": "1B", "layout": "swa256+global"},
            {"name": "long", "L": 4096, "tokens": "100M"},
        ],
    }
    fig = plot_recipe(schedule_frequency(parse_schedule(data, histogram=histogram)))
    colors = {line.get_label(): line.get_color() for line in fig.axes[2].lines}
    assert set(colors) == {"global (was swa256)", "global (was global)"} and len(set(colors.values())) == 2


def test_a_panel_says_how_far_training_goes_below_its_floor():
    """A review: the axis starts at tau/1000, and a curve leaving the panel there read as training that stops (gemma3's
    extension stage: the panel ended at i = 61,730, positions were trained up to 98,558)."""
    h = LengthHistogram.from_counts([100, 3000], [1000, 1])
    data = {"tau": 1e6, "stages": [{"name": "only", "L": 4096, "tokens": "100M"}]}
    result = schedule_frequency(parse_schedule(data, histogram=h))
    fig = plot_recipe(result)
    panel = fig.axes[0]
    scaled = result.stage_scaled(0, LayerKind("global"))
    last = int(np.flatnonzero(scaled)[-1])
    assert last == 2999 and scaled[last] < 1e3  # under the floor, tau / 1000
    assert [t.get_text() for t in panel.texts] == [f"below 1K: trained up to\ni = {last:,}"]


def test_stage_names_are_drawn_as_written_in_the_ticks_too(histogram):
    """A review: a stage called "a $\\frac{$ b" failed `plot recipe` ("cannot write (ValueError: \\frac{)"): the
    panels' titles escaped it, the last panel's ticks did not."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    stages = [{"name": "a $\\frac{$ b", "L": 1024, "tokens": "1B"}, {"name": "pre $x^2$", "L": 2048, "tokens": "1B"}]
    fig = plot_recipe(schedule_frequency(parse_schedule({"stages": stages}, histogram=histogram)))
    FigureCanvasAgg(fig).draw()  # mathtext would raise on the first name
    ticks = [label.get_text() for label in fig.axes[2].get_xticklabels()]
    assert ticks == ["a \\$\\frac{\\$ b", "pre \\$x^2\\$"]
