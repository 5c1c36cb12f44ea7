"""Needle-retrieval heat map (An et al., ICLR 2025, Fig. 4 style): tested length (x) by needle depth (y), the
share of passing tests in each cell; one panel per model setting, the effective length marked.
"""

from __future__ import annotations

from collections.abc import Sequence

from freqlab.plots.style import freqlab_style, new_figure, plain


def plot_probe(results: Sequence, *, size="two-column"):
    """One heat map per :class:`freqlab.apply.probe.ProbeResult` (share of tests retrieving at least ``need``
    needles); a dashed line at the effective length (the rule of :mod:`freqlab.apply.probe`).
    """
    results = list(results)
    with freqlab_style():
        fig, axes = new_figure(size, aspect=0.36 if len(results) > 1 else 0.5, ncols=len(results), squeeze=False)
        for ax, result in zip(axes[0], results):
            image = ax.imshow(
                result.cell_accuracy,
                vmin=0.0,
                vmax=1.0,
                cmap="RdYlGn",
                aspect="auto",
                origin="upper",
                interpolation="nearest",
            )
            ax.set_xticks(range(len(result.lengths)), [f"{n:,}" for n in result.lengths], rotation=45, ha="right")
            ax.set_yticks(range(len(result.depths)), [f"{d:.0%}" for d in result.depths])
            ax.set_xlabel("context length (tokens)")
            ax.set_ylabel("needle phase (depth)")
            E = result.effective_length
            label = plain(result.label)
            title = f"{label}: effective length {E:,}" if E else f"{label}: no tested length passes"
            ax.set_title(title, fontsize="medium")
            if E:
                ax.axvline(list(result.lengths).index(E) + 0.5, color="black", ls="--", lw=1)
        fig.colorbar(
            image, ax=list(axes[0]), label=f"share of tests with ≥ {results[0].need} of {results[0].needles} needles"
        )
    return fig
