"""The main figures for a scanned corpus in one call: what ``freqlab scan --plot`` writes into ``--out``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from freqlab.errors import FreqlabError
from freqlab.files import forget_written, not_written, record_written
from freqlab.formats import FIGURES_WRITTEN
from freqlab.frequency import DEFAULT_TAU, REGIMES
from freqlab.frequency.budget import training_budget
from freqlab.frequency.regimes import DEFAULT_REGIMES, check_windows
from freqlab.plots.axes import as_histogram
from freqlab.plots.frequency import plot_effective_length, plot_regimes, plot_windows
from freqlab.plots.sources import plot_sources
from freqlab.plots.style import drawn_sources, figure_formats, save_figure


def scan_figures(
    histogram,
    Ls: Sequence[int] = (2048,),
    regimes: Sequence[str] = DEFAULT_REGIMES,
    out_dir: str | Path = "freqlab-out/figures",
    formats: Sequence[str] = ("png",),
    *,
    tokens: float | None = None,
    tau: float = DEFAULT_TAU,
    seed: int = 0,
) -> list[Path]:
    """Write the main figures of a histogram into the folder ``out_dir`` (created if needed) and return the files
    written (``freqlab scan --plot`` passes OUT/figures); the figures this function wrote there last time are taken
    away first, while still as written (:func:`freqlab.files.forget_written`), and a file of the user's named like
    a figure is refused (:func:`check_figures_free`), not replaced.

    - ``frequency_L{L}``: one STRING Fig. 1 panel per regime, for each window L;
    - ``windows``: f_T for every L at the same budget ``tokens`` (Fig. 3 layout; with two or more windows);
    - ``effective_length``: predicted effective length vs training tokens, tau marked (Fig. 2 layout);
    - ``sources``: length CCDF and f per source (when the histogram is split by source, into at most
      :data:`~freqlab.plots.style.MAX_SOURCES` sources with documents: :func:`sources_left_out` says why not).

    The effective-length and window figures use the first regime; ``tokens`` is the training budget T of
    the window comparison and of the f_T panel (None: 1T, the STRING Fig. 3 budget).

    Parameters
    ----------
    histogram : LengthHistogram or tuple
        Document lengths: a LengthHistogram or a ``(lengths, counts)`` pair.
    Ls : sequence of int
        Windows L.
    regimes : sequence of str
        Regimes of the f(i) panels (the first for the other figures); a scan's own by default.
    out_dir : str or Path
        Folder written into (created if needed).
    formats : sequence of str
        Formats of each figure.
    tokens : float, optional
        Training budget T of the window comparison and the f_T panel.
    tau : float
        Threshold of the effective length, f_T(i) >= tau.
    seed : int
        Seed of the shuffled document order, in the regimes that need one.

    Returns
    -------
    list of Path
        The files written.

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.
    """
    tokens = training_budget(tokens).tokens  # the one budget rule: 1T unless given
    h = as_histogram(histogram)
    Ls = check_windows(Ls)
    regimes = list(regimes)
    if not Ls or not regimes:
        raise FreqlabError("scan_figures needs at least one window L and one regime")
    unknown = [r for r in regimes if r not in REGIMES]
    if unknown:
        raise FreqlabError(f"unknown regime {unknown[0]!r}; choose from {', '.join(REGIMES)}")
    folder = Path(out_dir)
    with_sources = bool(h.sources) and sources_left_out(h) is None
    check_figures_free(folder, figure_names(Ls, formats, sources=with_sources))
    forget_written(folder)  # the figures this folder got last time (another corpus's, other windows)
    written: list[Path] = []

    def save(figure, name: str) -> None:  # listed as each is written: an interrupted run's figures go next time too
        for fmt in dict.fromkeys(figure_formats(name, formats)):
            path = save_figure(figure, folder / name, [fmt])[0]
            record_written(folder, [path.name])
            written.append(path)

    for L in Ls:
        save(plot_regimes(h, L, regimes, seed=seed), f"frequency_L{L}")
    if len(Ls) > 1:
        save(plot_windows(h, Ls, regimes[0], tokens=tokens, seed=seed), "windows")
    save(plot_effective_length(h, Ls, regimes[0], budget=tokens, tau=tau, seed=seed), "effective_length")
    if with_sources:
        save(plot_sources(h, Ls[0], regimes[0], seed=seed), "sources")
    return written


def sources_left_out(histogram) -> str | None:
    """Why :func:`scan_figures` leaves out the ``sources`` figure of a histogram split by source (more sources than a
    figure draws: the other figures are still written, a review: they were written and then the scan failed), else
    None.
    """
    try:
        drawn_sources(as_histogram(histogram))
    except FreqlabError as exc:
        return f"no sources figure: {exc}"
    return None


def figure_names(Ls: Sequence[int], formats: Sequence[str] = ("png",), *, sources: bool = True) -> list[str]:
    """The names of the files :func:`scan_figures` writes for the windows ``Ls`` in ``formats`` (``sources``: with
    the per-source figure, drawn for a histogram split by source).

    >>> figure_names([2048, 4096], ["png"], sources=False)
    ['frequency_L2048.png', 'frequency_L4096.png', 'windows.png', 'effective_length.png']
    """
    stems = [f"frequency_L{int(L)}" for L in Ls] + ["windows"] * (len(Ls) > 1) + ["effective_length"]
    stems += ["sources"] * sources
    return [f"{stem}.{fmt}" for stem in stems for fmt in dict.fromkeys(figure_formats("figure", formats))]


def check_figures_free(folder: str | Path, names: Sequence[str]) -> None:
    """Refuse (:class:`~freqlab.errors.FreqlabError`) when a file in ``folder`` has one of these figure ``names`` and
    is not one freqlab drew there last, as drawn (:func:`freqlab.files.not_written`): drawing would replace it.
    ``freqlab scan --plot`` asks this before it counts, :func:`scan_figures` before it draws.
    """
    folder = Path(folder)
    if os.path.lexists(folder) and not folder.is_dir():  # a file, a FIFO, a link to none or in a loop
        raise FreqlabError(f"{folder}: not a folder, where the figures go; move it away, or choose another folder")
    listed = folder / FIGURES_WRITTEN
    if os.path.lexists(listed) and not listed.is_symlink() and not listed.is_file():  # a FIFO would block its write
        raise FreqlabError(f"{listed}: not a file, where freqlab lists the figures it draws; move it away")
    found = not_written(folder, names)
    if found:
        raise FreqlabError(
            f"{folder / found[0]}: a file freqlab did not draw there (or changed since), which a figure would "
            "replace; move it away, or choose another folder for the figures"
        )
