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
    and a y label (its own or one on an axes in the same row, or, panels stacked in one column, in that column)."""
    assert isinstance(fig, Figure)
    axes = drawn_axes(fig)
    assert axes, "the figure draws nothing"
    sup = fig._supxlabel.get_text() if getattr(fig, "_supxlabel", None) is not None else ""
    for ax in axes:
        siblings = ax.get_shared_x_axes().get_siblings(ax)
        assert ax.get_xlabel() or sup or any(s.get_xlabel() for s in siblings), f"no x label on {ax.get_title()!r}"
        row = [o for o in fig.axes if abs(o.get_position().y0 - ax.get_position().y0) < 1e-6]
        column = [o for o in fig.axes if abs(o.get_position().x0 - ax.get_position().x0) < 1e-6]
        stacked = all(abs(o.get_position().x0 - ax.get_position().x0) < 1e-6 for o in drawn_axes(fig))
        assert ax.get_ylabel() or any(o.get_ylabel() for o in row + (column if stacked else [])), (
            f"no y label on {ax.get_title()!r}"
        )


def overlapping_texts(fig: Figure) -> list[tuple[str, str]]:
    """Pairs of visible texts (tick labels, titles, axis labels, notes) whose drawn boxes overlap, and texts that
    leave the figure (paired with ``<outside>``), once the figure is drawn."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from freqlab.plots import freqlab_style

    canvas = FigureCanvasAgg(fig)
    with freqlab_style():
        canvas.draw()
    renderer = canvas.get_renderer()
    tick_labels, drawn_ticks = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                tick_labels.update((id(tick.label1), id(tick.label2)))
            if ax.get_visible() and axis.get_visible():  # the ticks inside the view, the ones drawn
                drawn_ticks += [t for tick in axis._update_ticks() for t in (tick.label1, tick.label2)]
    texts = [
        t
        for t in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_window_extent"))
        if id(t) not in tick_labels
    ]
    shown = [
        t for t in texts + drawn_ticks if t.get_visible() and t.get_text() and all(p.get_visible() for p in _parents(t))
    ]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in shown]
    found = [
        (text, "<outside>")
        for text, box in boxes
        if box.x0 < fig.bbox.x0 - 1 or box.y0 < fig.bbox.y0 - 1 or box.x1 > fig.bbox.x1 + 1 or box.y1 > fig.bbox.y1 + 1
    ]
    for k, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[k + 1 :]:
            if box_a.overlaps(box_b) and box_a.width and box_b.width:
                inter_w = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
                inter_h = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
                if inter_w > 1 and inter_h > 1:  # more than touching
                    found.append((a, b))
    return found


def _parents(artist):
    """The axes an artist belongs to (empty for figure texts), for visibility."""
    ax = getattr(artist, "axes", None)
    return [ax] if ax is not None else []


def texts(fig: Figure) -> list[str]:
    """Every text drawn in the figure (annotations, titles, legend entries)."""
    found = [t.get_text() for t in fig.findobj(lambda artist: hasattr(artist, "get_text"))]
    return [t for t in found if t]
