"""HARPE figures: waveforms with the detector's extrema, and envelopes scored like stave_score."""

import numpy as np
from plot_helpers import assert_labelled

from freqlab.plan.harpe import ProminentExtrema
from freqlab.plan.waveform import DistanceGrid, rope_waveform, stave_score
from freqlab.plots import plot_envelopes, plot_waveforms
from freqlab.plots.harpe import base_label

GRID = DistanceGrid(1000, 4090, 1)  # the Attention Buckets grid
SETS = {"A": [10_000, 17_500, 18_000], "B": [10_000, 20_000, 30_000]}


def test_waveforms_mark_the_detected_extrema():
    bases = [10_000, 25_000]
    fig = plot_waveforms(bases, GRID, head_dim=128, points=None)
    assert_labelled(fig)
    waves = rope_waveform(bases, GRID.distances, 128)
    peaks, valleys = ProminentExtrema().find(waves)
    for k, ax in enumerate(fig.axes[: len(bases)]):
        curve, peak_marks, valley_marks = ax.lines
        np.testing.assert_allclose(curve.get_ydata(), waves[k])
        assert peak_marks.get_xdata().tolist() == GRID.distances[peaks[k]].tolist()
        assert valley_marks.get_xdata().tolist() == GRID.distances[valleys[k]].tolist()
    assert [t.get_text() for t in fig.axes[1].texts] == ["b = 25,000"]
    # markers in black (filled peaks, hollow valleys), never in a waveform's colour
    for ax in fig.axes[: len(bases)]:
        curve, peak_marks, valley_marks = ax.lines
        assert peak_marks.get_color() != curve.get_color() and valley_marks.get_markeredgecolor() != curve.get_color()
        assert valley_marks.get_markerfacecolor() == "white"


def test_distances_are_written_out_not_in_k():
    fig = plot_waveforms([1e6], DistanceGrid.for_target(131072), points=None)
    fig.canvas.draw()
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert "40,000" in ticks and not any("k" in t.lower() for t in ticks)
    assert "m = 32,000..130,880 step 32" in fig.axes[0].get_title()


def test_waveforms_zoom_keeps_extrema_of_the_whole_grid():
    fig = plot_waveforms([10_000], GRID, points=300)
    (curve, peaks, _valleys) = fig.axes[0].lines
    assert curve.get_xdata().size == 300
    assert peaks.get_xdata().max() < GRID.distances[300]


def test_envelopes_legend_reports_the_stave_scores():
    fig = plot_envelopes(SETS, GRID)
    assert_labelled(fig)
    *small, right = fig.axes
    # (a): one panel per set, named on its y-axis, the others in grey behind (readable step lines)
    assert [ax.get_ylabel() for ax in small] == list(SETS)
    assert all(len(ax.patches) == len(SETS) for ax in small)
    assert len({ax.get_ylim() for ax in small}) == 1
    labels = [line.get_label() for line in right.lines if not line.get_label().startswith("_")]
    expected = []
    for name, bases in SETS.items():
        score = stave_score(bases, GRID, 128)
        expected.append(f"{name}: {score.shortest:.2f} / {score.mean:.2f}")
    assert labels == expected
    # each sorted curve starts at its shortest stave
    sorted_curves = [line for line in right.lines if line.get_xdata().size > 1]
    for line, bases in zip(sorted_curves, SETS.values()):
        assert line.get_ydata()[0] == stave_score(bases, GRID, 128).shortest


def test_base_labels():
    assert [base_label(b) for b in (1_000_000, 4_540_000, 17_500, 42)] == ["1M", "4.54M", "17,500", "42"]
