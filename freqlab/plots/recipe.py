"""A staged training recipe in one figure: f per stage and per layer kind, and the effective length after each stage.

:func:`plot_recipe` takes an evaluated schedule (:func:`freqlab.frequency.schedule.schedule_frequency`, a preset or a
schedule file) and draws small multiples, one panel per stage, of each layer kind's occurrences
f_T(i) = f(i) · T / f(0) (log scale; one x and one y scale across the panels), with the stage's window and the
threshold tau marked; the last panel gives the predicted effective length (largest i with F(i) >= tau, F summed
over the stages so far) after each stage, per layer kind. A sliding-window kind stops at its window by construction;
NoPE layers carry no position frequency and are left out (named in the legend).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from freqlab.errors import FreqlabError
from freqlab.frequency.layouts import GLOBAL
from freqlab.plots.axes import (
    count_units,
    format_log_counts,
    format_positions,
    grid_shape,
    panel_letters,
    position_label,
    position_units,
    position_xaxis,
    with_units,
)
from freqlab.plots.style import COLORS, NOTE_SIZE, PALETTE, freqlab_style, new_figure, plain


def plot_recipe(result, tau: float | None = None, *, size="two-column", columns: int = 3) -> Figure:
    """Small multiples of f_T per stage and layer kind, and the effective length after each stage per kind.

    Parameters
    ----------
    result : ScheduleFrequency
        A schedule's frequencies (:func:`freqlab.frequency.schedule_frequency`).
    tau : float, optional
        Threshold of the effective length; default the schedule's.
    size : str or tuple of float
        Figure size: ``one-column``, ``two-column`` or ``(width, height)`` in inches.
    columns : int
        Panels per row.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (shows itself in Jupyter).

    Examples
    --------
    >>> from freqlab import LengthHistogram
    >>> from freqlab.frequency.schedule import load_preset, schedule_frequency
    >>> h = LengthHistogram.from_counts([3000, 70000], [50, 2])
    >>> result = schedule_frequency(load_preset("gemma3", histogram=h))
    >>> [ax.get_title().splitlines()[0] for ax in plot_recipe(result).axes]
    ['(a) pretrain-32k', '(b) extend-128k', '(c) effective length after each stage']
    """
    from freqlab.frequency.regime_table import human_count

    schedule = result.schedule
    tau = schedule.tau if tau is None else float(tau)
    stages = schedule.stages
    kinds = [kind for kind in result.kind_names if kind.rope]
    if not kinds:  # a review: max() of nothing, a traceback
        raise FreqlabError(
            "no layer of the last stage's layout has a rotary embedding (NoPE only): no position frequency to draw"
        )
    # black for the global layers; each track of layers that went two ways (global (was swa1K)) a colour of its own
    colors = {kind: ("black" if kind == GLOBAL else PALETTE[k % len(PALETTE)]) for k, kind in enumerate(kinds)}
    window = result.window
    rows, cols = grid_shape(len(stages) + 1, columns)
    with freqlab_style():
        fig, axes = new_figure(size, aspect=0.32 * rows + 0.08, nrows=rows, ncols=cols, squeeze=False)
        flat = list(axes.flat)
        top = max(float(result.stage_scaled(k, kind).max()) for k in range(len(stages)) for kind in kinds)
        floor = max(tau / 1e3, 1.0)  # the axis starts three decades under tau: how far training goes below, said
        for k, (ax, stage) in enumerate(zip(flat, stages)):
            below = 0  # the last position trained at all, where the curves run under the axis's floor
            for kind in kinds:
                scaled = result.stage_scaled(k, kind)
                if not scaled.any():
                    continue
                reach = int(np.flatnonzero(scaled)[-1]) + 1
                if scaled[reach - 1] < floor:
                    below = max(below, reach - 1)
                front = kind.kind != "global"  # a capped kind coincides with the global curve below its reach: on top
                ax.plot(
                    np.arange(reach),
                    scaled[:reach],
                    color=colors[kind],
                    lw=1.8 if front else 1.0,
                    zorder=3 if front else 2,
                    label=kind.name,
                )
            ax.axhline(tau, color=COLORS["threshold"], ls=":", lw=0.8, label=f"τ = {human_count(tau)}")
            ax.axvline(stage.L, color="0.6", ls="--", lw=0.6)
            ax.set_yscale("log")
            ax.set_ylim(floor, top * 2)
            if below:  # a review: the axis's floor made training seem to stop where the curve left the panel
                note = f"below {human_count(floor)}: trained up to\ni = {below:,}"
                ax.text(0.97, 0.04, note, transform=ax.transAxes, ha="right", va="bottom", fontsize=NOTE_SIZE)
            position_xaxis(ax, window)
            format_log_counts(ax.yaxis)
            ax.set_title(f"{plain(stage.name)}\nL = {position_label(stage.L)}, {human_count(stage.tokens)} tokens")
        units = count_units(flat[0].yaxis)
        for k, ax in enumerate(flat[: len(stages)]):
            if k % cols == 0:  # one y scale for every stage panel: labelled once per row
                ax.set_ylabel(with_units("f_T(i)", units))
        last = flat[len(stages)]
        x = np.arange(len(stages))
        for kind in kinds:
            after = [result.effective_length(tau, kind, stages=k + 1) for k in range(len(stages))]
            last.plot(x, after, marker="o", ms=3, color=colors[kind], lw=1.0, label=kind.name)
        last.set_xticks(x, [plain(stage.name) for stage in stages], rotation=30, ha="right")  # drawn as written
        last.set_xlabel("after stage")
        last.set_ylim(0, window)
        format_positions(last.yaxis, window)
        last.set_ylabel(with_units("effective length", position_units(last.yaxis)))
        last.set_title("effective length after each stage")
        last.text(0.02, 0.95, f"τ = {human_count(tau)}", transform=last.transAxes, va="top", fontsize=NOTE_SIZE)
        for ax in flat[len(stages) + 1 :]:
            ax.set_visible(False)
        handles, labels = flat[0].get_legend_handles_labels()
        nope = [kind.name for kind in result.kind_names if not kind.rope]
        if nope:
            fig.suptitle(f"{', '.join(nope)} layers: no rotary embedding, no position frequency", fontsize=NOTE_SIZE)
        by_label = dict(zip(labels, handles))
        fig.legend(by_label.values(), by_label.keys(), loc="outside lower center", ncols=max(1, len(by_label)))
        panel_letters(flat[: len(stages) + 1])
    return fig
