"""STRING figures reproduce Fig. 5 and draw the plan module's matrices and counts."""

import numpy as np
import pytest
from plot_helpers import assert_labelled

from freqlab import position_frequency, share_at_least
from freqlab.plan.string import plan_string, string_position_row, string_usage
from freqlab.plots import plot_position_matrix, plot_string_matrices, plot_string_overview, plot_string_usage
from freqlab.plots.string import dropped_matrix


def shown(ax) -> np.ndarray:
    """The matrix an imshow axes displays, masked cells as -1."""
    data = ax.images[0].get_array()
    return np.ma.filled(data, -1)


def test_fig5_panels():
    fig = plot_string_matrices(9, 3, 1)
    assert_labelled(fig)
    a, b, c = (shown(ax) for ax in fig.axes[:3])
    # (a) positions >= N = 6 dropped: last row [-, -, -, 5, 4, 3, 2, 1, 0]
    assert a[-1].tolist() == [-1, -1, -1, 5, 4, 3, 2, 1, 0]
    # (b) shifted by S = 3 (Sec. 4.1 text): [5, 4, 3, 2, 1, 0, 2, 1, 0]
    assert b[-1].tolist() == [5, 4, 3, 2, 1, 0, 2, 1, 0]
    # (c) W = 1 added where r >= S: [6, 5, 4, 3, 2, 1, 2, 1, 0]
    assert c[-1].tolist() == [6, 5, 4, 3, 2, 1, 2, 1, 0]
    assert (c[np.triu_indices(9, 1)] == -1).all()  # upper triangle masked
    # cells are annotated with their values
    assert sorted(t.get_text() for t in fig.axes[1].texts if t.get_text().isdigit())[:3] == ["0", "0", "0"]
    assert [ax.get_title() for ax in fig.axes[:3]] == [
        "(a) drop positions ≥ N = 6",  # panel letters go before the titles
        "(b) shift by S = 3 (W = 0)",
        "(c) local window W = 1",
    ]


def test_dropped_matrix_and_generic_heatmap():
    m = dropped_matrix(4, 2)
    assert m.tolist() == [[0, -1, -1, -1], [1, 0, -1, -1], [-1, 1, 0, -1], [-1, -1, 1, 0]]
    fig = plot_position_matrix(m, title="toy")
    assert_labelled(fig)
    assert shown(fig.axes[0]).tolist() == m.tolist()


def test_fig8_overview_samples_rows_of_the_plan_module():
    L, S, W = 131072, 43008, 128
    fig = plot_string_overview(L, S, W, resolution=64)
    assert_labelled(fig)
    grid = shown(fig.axes[0])
    sample = np.linspace(0, L - 1, 64).round().astype(np.int64)
    row = string_position_row(L, S, W)
    assert grid[-1].tolist() == row[sample].tolist()  # App. A.1: starts at 88191
    assert grid[-1, 0] == 88191


def test_usage_with_training_frequency():
    L, S, W = 2048, 683, 128
    f = position_frequency([300, 1500, 5000], [40, 10, 3], L)
    fig = plot_string_usage(L, S, W, frequency=f)
    assert_labelled(fig)
    top, bottom = fig.axes[:2]
    unused = L - S + W
    # the same definition and name as `plan string`'s "never-used positions i >= L - S + W"
    label = f"never used\n(p ≥ max(S, L−S+W))\n{100 * share_at_least(f, unused):.1f}% of mass"
    assert label in [t.get_text() for t in top.texts]
    assert plan_string(L, S=S, W=W, frequency=f).unused_share == pytest.approx(share_at_least(f, unused))
    usage = string_usage(L, S, W, frequency=f)
    rope, string = bottom.lines
    np.testing.assert_array_equal(rope.get_ydata(), usage.pairs_before)
    np.testing.assert_array_equal(string.get_ydata(), usage.pairs_after)
    assert rope.get_ydata().sum() == string.get_ydata().sum() == L * (L + 1) // 2  # every pair kept, remapped
    # STRING moves pairs onto better-trained positions: higher pair-weighted mean f
    mean = [float(np.dot(y, f)) / y.sum() for y in (usage.pairs_before, usage.pairs_after)]
    assert mean[1] > mean[0]


def test_usage_without_frequency_has_one_panel():
    fig = plot_string_usage(4096, 1365, 128)
    assert_labelled(fig)
    assert len([ax for ax in fig.axes if ax.lines]) == 1


def test_self_extend_fig3():
    from freqlab.plots import plot_self_extend_matrices

    fig = plot_self_extend_matrices(7, 2, 4)  # Self-Extend Fig. 3: L = 7, G = 2, w_n = 4 reaches N = 10
    assert_labelled(fig)
    rope, grouped = (shown(ax) for ax in fig.axes[:2])
    assert rope.shape == grouped.shape == (10, 10)
    assert rope[-1].tolist() == [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
    assert grouped[-1].tolist() == [6, 6, 5, 5, 4, 4, 3, 2, 1, 0]  # exact within w_n = 4, grouped beyond
    assert grouped.max() == 6  # every position below L = 7
    assert len(fig.axes[0].patches) == 6  # the boxed RoPE cells >= L: 7, 8, 9, 7, 8, 7
