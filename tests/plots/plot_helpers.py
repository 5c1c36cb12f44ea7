"""Checks shared by the plot tests: every drawn axes is labelled, and texts can be found."""

from matplotlib.figure import Figure


def drawn_axes(fig: Figure):
    """Visible axes that hold data (lines, patches, images, collections), colorbars excluded."""
    return [
        ax
        for ax in fig.axes
        if ax.get_visible()
        and ax.get_label() != "<colorbar>"
        and (ax.lines or ax.patches or ax.images or ax.collections or ax.containers)
    ]


def assert_labelled(fig: Figure) -> None:
    """Each axes with data has an x label (its own, the figure's supxlabel, or a sibling's sharing its x-axis)
    and a y label (its own or one on an axes in the same row)."""
    assert isinstance(fig, Figure)
    axes = drawn_axes(fig)
    assert axes, "the figure draws nothing"
    sup = fig._supxlabel.get_text() if getattr(fig, "_supxlabel", None) is not None else ""
    for ax in axes:
        siblings = ax.get_shared_x_axes().get_siblings(ax)
        assert ax.get_xlabel() or sup or any(s.get_xlabel() for s in siblings), f"no x label on {ax.get_title()!r}"
        row = [o for o in fig.axes if abs(o.get_position().y0 - ax.get_position().y0) < 1e-6]
        assert ax.get_ylabel() or any(o.get_ylabel() for o in row), f"no y label on {ax.get_title()!r}"


def texts(fig: Figure) -> list[str]:
    """Every text drawn in the figure (annotations, titles, legend entries)."""
    found = [t.get_text() for t in fig.findobj(lambda artist: hasattr(artist, "get_text"))]
    return [t for t in found if t]
