"""``freqlab plot ...``: the figures of :mod:`freqlab.plots` from the command line.

matplotlib is imported only when a plot command runs, so other commands start fast.
"""

from __future__ import annotations

from pathlib import Path

import click

from freqlab.cli.options import (
    POSITIONS,
    POSITIONS_NOTE,
    ROPE_BASE,
    TOKENS,
    TOKENS_NOTE,
    HistogramPath,
    HomePath,
    echo_json,
    hist_option,
    json_option,
    layout_option,
    refuse_unused,
    refuse_unused_seed,
    regime_option,
    renamed_option,
    report_beside,
    require,
    seed_option,
    tau_option,
    tau_or_default,
    tokens_option,
    usage_error,
    weights_option,
    window_option,
)
from freqlab.cli.weights import budget_line, read_histogram
from freqlab.errors import FreqlabError
from freqlab.files import check_file_name
from freqlab.frequency.budget import training_budget
from freqlab.frequency.exposure import TAIL_REGIMES
from freqlab.frequency.regimes import DEFAULT_REGIMES
from freqlab.paths import shown
from freqlab.resources import doing, require_memory
from freqlab.sizes import DEFAULT_TAU, MAX_POSITIONS

# the export formats of freqlab.plots.style.save_figure (not imported here: it imports matplotlib)
FORMATS = ("png", "pdf", "svg")


def format_option(help_text: str, default: tuple[str, ...] = ()):
    """The ``--format`` option of a figure command (png, pdf, svg; repeatable)."""
    return click.option(
        "--format",
        "formats",
        type=click.Choice(FORMATS),
        multiple=True,
        default=default,
        show_default=bool(default),
        help=help_text,
    )


class FigureSize(click.ParamType):
    """``one-column`` (3.5 in wide), ``two-column`` (7.2 in) or ``WIDTH,HEIGHT`` in inches."""

    name = "SIZE"

    def convert(self, value, param, ctx):
        """Parse a figure size (``one-column``, ``two-column`` or ``WxH`` inches), or fail as a usage error."""
        if not isinstance(value, str) or value in ("one-column", "two-column"):
            return value
        try:
            width, height = (float(v) for v in value.split(","))
        except ValueError:
            self.fail(f"{value!r} is not one-column, two-column or WIDTH,HEIGHT (inches)", param, ctx)
        if not (0 < width <= MAX_INCHES and 0 < height <= MAX_INCHES):
            self.fail(f"{value!r}: WIDTH and HEIGHT must be within 0..{MAX_INCHES} inches", param, ctx)
        return (width, height)


#: the largest side of a figure, in inches (A0 paper is 46.8 in high)
MAX_INCHES = 100
#: peak bytes per pixel of a PNG while it is drawn and written (measured: 4.0 for a 10500 x 7560 figure)
PNG_BYTES_PER_PIXEL = 8
#: the most pixels a side the PNG writer (matplotlib's Agg) draws
MAX_PIXELS = (1 << 16) - 1


def output_options(default_size: str | None):
    """--out, --format, --size, --dpi and --json, shared by every plot command."""

    def decorate(command):
        options = [
            click.option(
                "--out",
                type=HomePath(dir_okay=False),
                required=True,
                help="Output file; its suffix (.png/.pdf/.svg) is the format unless --format is given.",
            ),
            format_option("Format(s) to write next to --out (repeat for several)."),
            click.option(
                "--size",
                type=FigureSize(),
                default=default_size,
                show_default=default_size is not None,
                help="one-column (3.5 in), two-column (7.2 in) or WIDTH,HEIGHT in inches.",
            ),
            click.option("--dpi", type=click.IntRange(min=50), default=200, show_default=True, help="PNG resolution."),
            json_option,
        ]
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def _save(fig, out, formats, dpi, as_json, budget=None, tau: float = DEFAULT_TAU) -> None:
    from freqlab.plots.style import save_figure

    path = Path(check_file_name(out))  # before the suffix is looked at: "figs/" names a folder, not a file "figs"
    if not formats and path.suffix.lstrip(".").lower() not in FORMATS:
        raise FreqlabError(f"{out}: give a .png, .pdf or .svg file name, or --format")
    if "png" in (formats or [path.suffix.lstrip(".").lower()]):
        width, height = (float(x) * dpi for x in fig.get_size_inches())
        option = f"--dpi {dpi} at {fig.get_size_inches()[0]:.3g} x {fig.get_size_inches()[1]:.3g} in"
        if max(width, height) > MAX_PIXELS:
            raise FreqlabError(
                f"{option}: a {width:,.0f} x {height:,.0f}-pixel PNG; the PNG writer draws at most "
                f"{MAX_PIXELS:,} pixels a side"
            )
        require_memory(
            PNG_BYTES_PER_PIXEL * width * height,
            option,
            f"a {width:,.0f} x {height:,.0f}-pixel PNG, {PNG_BYTES_PER_PIXEL} bytes per pixel",
        )
    with doing(f"drawing {out}"):
        written = save_figure(fig, path, formats or None, dpi=dpi)
    _report_written(written, as_json, budget, tau)


def _report_written(
    paths: list[Path], as_json: bool, budget=None, tau: float = DEFAULT_TAU, note: str | None = None
) -> None:
    with report_beside(*paths):  # a figure written to stdout (--out /dev/stdout | viewer): the report on stderr
        if as_json:
            notes = {"notes": [note]} if note else {}
            echo_json({"files": [str(p) for p in paths], **({"budget": budget.to_dict()} if budget else {}), **notes})
        else:
            if budget is not None:
                click.echo(budget_line(budget, tau))
            for p in paths:
                click.echo(f"wrote {shown(p)}")
            if note:
                click.echo(f"note: {note}")


def drawn_source_count(h) -> int:
    """The sources the scan figures draw curves for (none past the most a figure draws: left out, said)."""
    from freqlab.plots.report import sources_left_out

    return 0 if sources_left_out(h) else len(h.sources or {})


def _histogram(path, regimes, weights):
    """The histogram at ``path``, weighted by ``weights`` (--weights), for ``regimes`` (a --seed none of them reads
    refused first).
    """
    refuse_unused_seed(regimes)
    return read_histogram(path, weights, regimes=regimes)[0]


#: the most bars a length panel draws (one patch each; more than a figure's width in pixels)
MAX_BINS = 4096

hist_argument = click.argument("hist", type=HistogramPath())
one_regime_option = regime_option()
#: peak bytes per position of L of a figure drawn over positions (measured at L = 2^22: 72-80 for frequency,
#: windows and effective-length, 112 for scan's figures, 144 for sources with 2 sources; 110 for string-usage at 2^22)
PLOT_BYTES_PER_POSITION = 160
#: and per position for each curve beyond the first (measured at L = 2^22-2^23: sources with 16 sources ~600 bytes per
#: position, windows with 8 windows ~310; a review found the flat bound let 16 sources at 40M positions pass)
PLOT_BYTES_PER_CURVE = 40
#: effective-length's curves, each f over its window and the budgets it is read at (measured at L = 2^22: 132 bytes a
#: position for one window, 328 for four; a review found 540 for eight passing a flat check of 160)
EFFECTIVE_LENGTH_BYTES_PER_CURVE = 80
#: plot scan's figures together (frequency, windows, effective length, sources), measured at L = 2^22 on the built-in
#: corpus (3 sources): 324 bytes a position for one window and regime, 482 for two windows, 388 for three regimes,
#: 611 for both; bounded by this plus PLOT_BYTES_PER_CURVE per window-regime curve and per source, and this per window
SCAN_BYTES_PER_WINDOW = 200


def _require_curves(
    L: int, curves: int, what: str = "", *, per_curve: int = PLOT_BYTES_PER_CURVE, base: int = 0
) -> None:
    """A figure of ``curves`` curves over ``L`` positions fits in memory, or a ResourceError naming --L (and
    ``what`` makes the curves: "16 sources"); ``per_curve``: bytes a position of each curve beyond the first,
    ``base``: more bytes a position of the figure.
    """
    per_position = base + PLOT_BYTES_PER_POSITION + per_curve * max(curves - 1, 0)
    curve = "curve" if curves == 1 else "curves"
    purpose = f"a figure of {curves} {curve} over positions, {per_position} bytes per position"
    require_memory(per_position * L, f"--L {L:,}" + (f" ({what})" if what else ""), purpose)


def require_scan_figures(Ls, regimes, sources: int) -> None:
    """The figures of ``plot scan`` (and ``scan --plot``) for windows ``Ls``, ``regimes`` and ``sources`` fit in
    memory, or a ResourceError naming --L.
    """
    curves = len(Ls) * max(len(regimes), 1)
    what = ", ".join(
        f"{n} {word}{'s' if n != 1 else ''}"
        for n, word in ((len(Ls), "window"), (max(len(regimes), 1), "regime"), (sources, "source"))
    )
    _require_curves(max(Ls), curves + sources + 1, what, base=SCAN_BYTES_PER_WINDOW * len(Ls))


def _require_source_curves(L: int, h, note: str = "") -> None:
    """:func:`_require_curves` of a figure with one curve per source and one of them all (``note``: where L came
    from, when the user gave none).
    """
    sources = len(h.sources or {})
    _require_curves(L, sources + 1, "; ".join(x for x in (note, f"{sources} sources" if sources else "") if x))


def _drawable(ctx: click.Context, param, value):
    """--L of a figure: its curves over positions are sized before anything is read."""
    if value:
        L = max(value) if isinstance(value, tuple) else value
        require_memory(
            PLOT_BYTES_PER_POSITION * L,
            f"--L {L:,}",
            f"a figure's curves over positions, {PLOT_BYTES_PER_POSITION} bytes per position",
        )
    return value


L_option = window_option(default=2048, callback=_drawable)


@click.group("plot")
def plot_group() -> None:
    """Figures for papers: position frequency, windows, effective length, sources, STRING, HARPE.

    \b
    Examples:
      freqlab plot frequency freqlab-out/lengths.parquet --L 2048 --regime natural --out fig1.pdf
      freqlab plot frequency lengths.parquet --regime natural --regime uniform --regime concat --out fig1.png
      freqlab plot string-matrix --L 9 --S 3 --W 1 --out fig5.png
    """


@plot_group.command("frequency", short_help="Position frequency and segment lengths (STRING Fig. 1 layout).")
@hist_argument
@L_option
@regime_option(multiple=True)
@click.option(
    "--bins", type=click.IntRange(1, MAX_BINS), default=32, show_default=True, help="Bins of the length bars."
)
@seed_option
@weights_option
@output_options("one-column")
def frequency_command(hist, L, regimes, bins, seed, weights, out, formats, size, dpi, as_json):
    """STRING Fig. 1 layout: segment-length bars and f(i) on twin axes, i <= L/2 and i >= 3L/4 shaded.

    One regime gives one panel; several give one panel each (natural, uniform, concat = Fig. 1a/b/c).

    \b
    Example:
      freqlab plot frequency freqlab-out/lengths.parquet --L 2048 --regime natural --size one-column --out f.pdf
    """
    from freqlab.plots.frequency import MIN_PANEL_WIDTH, plot_position_frequency, plot_regimes, regime_grid

    h = _histogram(hist, regimes, weights)
    _require_curves(L, len(regimes), f"{len(regimes)} regimes" if len(regimes) > 1 else "")
    if len(regimes) == 1:
        fig = plot_position_frequency(h, L, regimes[0], bins=bins, seed=seed, size=size)
    else:
        fig = plot_regimes(h, L, regimes, bins=bins, seed=seed, size=size)
        rows, cols = regime_grid(len(regimes), size)
        if cols < min(3, len(regimes)) and not as_json:  # the panels did not fit side by side: say how they went
            click.echo(
                f"panels: {rows} rows of {cols} (side by side each needs {MIN_PANEL_WIDTH:g} in; "
                "--size two-column puts 3 in a row)"
            )
    _save(fig, out, formats, dpi, as_json)


@plot_group.command("windows", short_help="f_T for several windows at one token budget (STRING Fig. 3 layout).")
@hist_argument
@window_option(multiple=True, default=(2048, 4096), callback=_drawable)
@one_regime_option
@tokens_option
@seed_option
@weights_option
@output_options("one-column")
def windows_command(hist, Ls, regime, tokens, seed, weights, out, formats, size, dpi, as_json):
    """STRING Fig. 3 layout: f_T(i) for several windows at the same token budget.

    \b
    Example:
      freqlab plot windows freqlab-out/lengths.parquet --L 2048 --L 4096 --tokens 1T --out windows.png
    """
    from freqlab.plots.frequency import plot_windows

    budget = training_budget(tokens)
    _require_curves(max(Ls), len(Ls), f"{len(Ls)} windows")
    fig = plot_windows(_histogram(hist, regime, weights), Ls, regime, tokens=budget.tokens, seed=seed, size=size)
    _save(fig, out, formats, dpi, as_json, budget)


@plot_group.command("effective-length", short_help="Effective length vs training tokens (STRING Fig. 2 layout).")
@hist_argument
@window_option(multiple=True, default=(2048, 4096), callback=_drawable)
@one_regime_option
@tau_option
@click.option("--budget", type=TOKENS, default=None, help=f"Budget T for panel (b) {TOKENS_NOTE} [default: 1T].")
@seed_option
@weights_option
@output_options("two-column")
def effective_length_command(hist, Ls, regime, tau, budget, seed, weights, out, formats, size, dpi, as_json):
    """STRING Fig. 2 layout: predicted effective length vs training tokens, with the threshold tau.

    \b
    Example:
      freqlab plot effective-length freqlab-out/lengths.parquet --L 2048 --L 4096 --tau 100B --out eff.pdf
    """
    from freqlab.plots.frequency import plot_effective_length

    tau = tau_or_default(tau)
    rule = training_budget(budget, option="--budget")
    h = _histogram(hist, regime, weights)
    what = f"{len(Ls)} windows" if len(Ls) > 1 else ""
    _require_curves(max(Ls), len(Ls), what, per_curve=EFFECTIVE_LENGTH_BYTES_PER_CURVE)
    fig = plot_effective_length(h, Ls, regime, budget=rule.tokens, tau=tau, seed=seed, size=size)
    _save(fig, out, formats, dpi, as_json, rule, tau)


@plot_group.command("sources", short_help="Length CCDF and position frequency per corpus source.")
@hist_argument
@L_option
@one_regime_option
@seed_option
@weights_option
@output_options("two-column")
def sources_command(hist, L, regime, seed, weights, out, formats, size, dpi, as_json):
    """Length CCDF and position frequency per corpus source (histograms scanned with source labels).

    \b
    Example:
      freqlab plot sources freqlab-out/lengths.parquet --L 2048 --out sources.png
    """
    from freqlab.plots.sources import plot_sources

    refuse_unused_seed(regime)  # a review: --regime pack was taken, its --seed refused
    h, mix = read_histogram(hist, weights, regimes=regime)
    _require_source_curves(L, h)
    corpus = mix.corpus if mix is not None else None  # the legend counts the corpus's documents, not the mix's
    _save(plot_sources(h, L, regime, seed=seed, size=size, corpus=corpus), out, formats, dpi, as_json)


@plot_group.command("exposure", short_help="Tokens by same-document context per source, and the tail table.")
@hist_argument
@window_option(help=f"Training window {POSITIONS_NOTE} [default: the longest document].")
@regime_option(choices=TAIL_REGIMES, help="Data regime (one in which a segment is one source's document).")
@weights_option
@output_options("two-column")
def exposure_command(hist, L, regime, weights, out, formats, size, dpi, as_json):
    """(a) Share of tokens trained with at least c tokens of same-document context per source, f(c)/f(0); (b) the
    share of each source's tokens beyond 4K, 8K, ... of context.

    \b
    Example:
      freqlab plot exposure freqlab-out/lengths.parquet --out exposure.png
    """
    from freqlab.plots.exposure import plot_exposure

    h = _histogram(hist, regime, weights)
    window = L if L is not None else (int(h.lengths[-1]) if h.lengths.size else 1)  # the longest document
    if window <= MAX_POSITIONS:  # sized as the other figures, before anything is drawn (a review: it had no check);
        # a longer one is plot_exposure's to name
        _require_source_curves(window, h, "" if L is not None else "the longest document: no --L given")
    _save(plot_exposure(h, L, regime, size=size), out, formats, dpi, as_json)


@plot_group.command("recipe", short_help="A staged recipe: f per stage and layer kind, effective length after each.")
@click.argument("file", type=HomePath(dir_okay=False), required=False)
@click.option("--preset", default=None, metavar="NAME", help="A published recipe (see freqlab schedule --preset).")
@hist_option("Default histogram for the stages [default: the schedule's; a preset: the built-in corpus].")
@layout_option("Layout for stages that name none.")
@tau_option
@output_options("two-column")
def recipe_command(file, preset, hist, layout, tau, out, formats, size, dpi, as_json):
    """Small multiples of f_T(i) per stage and layer kind (one scale per axis, log occurrences), and the predicted
    effective length after each stage per layer kind.

    \b
    Example:
      freqlab plot recipe --preset gemma3 --out gemma3.png
      freqlab plot recipe schedule.yaml --layout 5*swa1024+global --out recipe.pdf
    """
    from freqlab.cli.freq import read_schedule
    from freqlab.frequency.schedule import schedule_frequency
    from freqlab.plots.recipe import plot_recipe

    schedule = read_schedule(file, preset, hist, layout)
    _save(plot_recipe(schedule_frequency(schedule), tau, size=size), out, formats, dpi, as_json)


@plot_group.command("scan", short_help="The main figures of a saved histogram (as a default `freqlab scan --plot`).")
@hist_argument
@window_option(multiple=True, default=(2048,), callback=_drawable)
@regime_option(multiple=True, default=DEFAULT_REGIMES)  # as freqlab scan's: the same figures (a review)
@tokens_option
@tau_option
@seed_option
@weights_option
@click.option(
    "--out",
    type=HomePath(file_okay=False),
    default="freqlab-out/figures",
    show_default=True,
    help="Folder the figures are written into (created if needed); those this command wrote there last time go "
    "first (listed in its .written.json, while unchanged).",
)
@format_option("Format(s) (repeat for several).", default=("png",))
@json_option
def scan_command(hist, Ls, regimes, tokens, tau, seed, weights, out, formats, as_json):
    """The main figures of a saved histogram (what `freqlab scan --plot` writes into OUT/figures, with --L and
    --regime defaulting to the scan's defaults: give the scan's own to draw its figures), into --out.

    \b
    Example:
      freqlab plot scan freqlab-out/lengths.parquet --L 2K --L 4K --regime natural --regime concat --out figs
    """
    from freqlab.plots.report import scan_figures, sources_left_out

    if Path(out).suffix.lstrip(".").lower() in FORMATS:  # not a folder named x.png
        raise click.BadParameter(
            f"{out!r} names a figure file, but plot scan writes several figures into a folder: give a folder "
            "(e.g. figures), or one figure with plot frequency/windows/... --out FILE",
            param_hint="'--out'",
        )
    tau = tau_or_default(tau)
    budget = training_budget(tokens)
    h = _histogram(hist, regimes, weights)
    require_scan_figures(Ls, regimes, drawn_source_count(h))
    figures = scan_figures(h, Ls, regimes, out, formats, tokens=budget.tokens, tau=tau, seed=seed)
    _report_written(figures, as_json, budget, tau, note=sources_left_out(h))


@plot_group.command("string-matrix", short_help="STRING position matrices for a small window (Fig. 5).")
@window_option(type=POSITIONS.within(2, 64), default=9, help="Window (small).")
@click.option("--S", "S", type=POSITIONS, default=3, show_default=True, help="Shift offset S.")
@click.option("--W", "W", type=POSITIONS.within(0), default=1, show_default=True, help="Local window W.")
@output_options("two-column")
def string_matrix_command(L, S, W, out, formats, size, dpi, as_json):
    """STRING Fig. 5: the position matrix with tail dropped, shifted by S, and with local window W.

    \b
    Example:
      freqlab plot string-matrix --L 9 --S 3 --W 1 --out fig5.png
    """
    from freqlab.plots.string import plot_string_matrices

    _save(usage_error(lambda: plot_string_matrices(L, S, W, size=size)), out, formats, dpi, as_json)


@plot_group.command("string-usage", short_help="Positions STRING uses vs RoPE's, with their training frequency.")
@window_option(type=POSITIONS.within(2), required=True, callback=_drawable)
@click.option(
    "--S",
    "S",
    type=POSITIONS,
    default=None,
    help="Shift offset S [default: L/3 rounded up to 64, plan string's without frequency information].",
)
@click.option("--W", "W", type=POSITIONS.within(0), default=128, show_default=True, help="Local window W.")
@hist_option("Length histogram: adds how often training saw each position.", old_name="--histogram")
@one_regime_option
@seed_option
@weights_option
@output_options("one-column")
def string_usage_command(L, S, W, hist, regime, seed, weights, out, formats, size, dpi, as_json):
    """Positions STRING uses vs RoPE's for a large window, with the training frequency of each.

    \b
    Example:
      freqlab plot string-usage --L 2K --S 683 --hist freqlab-out/lengths.parquet --out usage.png
    """
    from freqlab.frequency import position_frequency
    from freqlab.plan.string import recommended_range
    from freqlab.plots.string import plot_string_usage

    if hist is None:  # a review: both were dropped unsaid
        refuse_unused("regime", "seed", "weights", needed="--hist (the frequency drawn beside the positions)")
    if S is None:
        S = recommended_range(L)[0]
    f = None
    if hist is not None:
        h = _histogram(hist, regime, weights)
        f = position_frequency(h.lengths, h.counts, L, regime, seed=seed)
    _save(usage_error(lambda: plot_string_usage(L, S, W, frequency=f, size=size)), out, formats, dpi, as_json)


@plot_group.command("harpe", short_help="HARPE waveforms with peaks/valleys, or base-set envelopes.")
@click.option(
    "--base",
    "bases",
    type=ROPE_BASE,
    multiple=True,
    help="Bases whose waveforms to draw (repeat); default: the first three of the search.",
)
@renamed_option(
    "--extend-to",
    "--target",
    "target",
    type=POSITIONS.within(1024),
    default=131072,
    show_default=True,
    help=f"Length the model is extended to {POSITIONS_NOTE}.",
)
@click.option("--heads", type=click.IntRange(min=1), default=32, show_default=True, help="Heads (bases per set).")
@click.option("--envelopes", is_flag=True, help="Draw the envelopes of the searched, uniform and Table 2 sets.")
@output_options(None)
def harpe_command(bases, target, heads, envelopes, out, formats, size, dpi, as_json):
    """HARPE: waveforms with peaks and valleys, or (--envelopes) the head-wise max envelope of the
    peak-valley search, the uniform set (Eq. 9) and Table 2, at the paper's setting (1M..5M, stride 30k).
    Default size: one-column for waveforms, two-column for envelopes.

    \b
    Examples:
      freqlab plot harpe --base 1e6 --base 2.5e6 --out waves.png
      freqlab plot harpe --envelopes --size two-column --out envelopes.pdf

    --extend-to was called --target (still accepted).
    """
    from freqlab.plan import harpe
    from freqlab.plots.harpe import plot_envelopes, plot_waveforms

    envelope_sets = "--envelopes draws the searched, uniform and Table 2 sets: give --base for waveforms without it"
    require(not (envelopes and bases), "--base", envelope_sets)  # a review: the bases were dropped unsaid
    if bases and not envelopes:  # an adversary: --heads 100000 drew the bases given, unsaid
        refuse_unused("heads", needed="--envelopes or no --base (the bases it searches)")
    if envelopes or not bases:  # the paper's grid of bases, which this command does not let change
        most = harpe.candidate_count(harpe.PAPER_B_MIN, harpe.PAPER_B_MAX, harpe.PAPER_STRIDE) + 1
        require(
            heads <= most,
            "--heads",
            f"{heads} heads need {heads} distinct bases; the paper's setting (1M..5M, stride 30K) has {most}: "
            "give at most that (freqlab plan harpe --b-min/--b-max/--stride searches other ranges)",
        )
        plan = usage_error(lambda: harpe.peak_valley_search(heads, target=target))
    if envelopes:
        uniform = harpe.uniform_bases(heads, harpe.PAPER_B_MIN, harpe.PAPER_B_MAX)
        sets = {"freqlab search": plan.bases, "uniform (Eq. 9)": uniform}
        if heads == 32:
            sets["Table 2"] = harpe.table2_bases()
        fig = plot_envelopes(sets, plan.grid, target=target, size=size or "two-column")
    else:
        fig = plot_waveforms(list(bases) or plan.bases[:3], target=target, size=size or "one-column")
    _save(fig, out, formats, dpi, as_json)


def register(main: click.Group) -> None:
    """Add ``freqlab plot`` and its subcommands to the command group ``main``."""
    main.add_command(plot_group)
