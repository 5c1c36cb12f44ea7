"""``freqlab freq``, ``freqlab stats`` and ``freqlab schedule``: frequency math on saved histograms."""

from __future__ import annotations

import click

from freqlab.cli.options import (  # noqa: F401  (echo_json, json_option, tokens_option, TOKENS: importable from here)
    POSITIONS,
    POSITIONS_NOTE,
    SEED,
    TOKENS,
    TOKENS_NOTE,
    HistogramPath,
    HomePath,
    check_output_free,
    echo_json,
    hist_option,
    json_option,
    layout_option,
    megatron_options,
    megatron_settings,
    refuse_unused_megatron,
    refuse_unused_seed,
    regime_option,
    report_beside,
    seed_option,
    tau_option,
    tau_or_default,
    tokens_option,
    weights_option,
    window_option,
)
from freqlab.cli.weights import budget_line, echo_mix, histogram_line, mix_json, read_histogram
from freqlab.files import has_freqlab_header, not_parquet
from freqlab.formats import FREQUENCY_FORMAT, FREQUENCY_VERSION, LENGTHS_FORMAT, METADATA_KEY  # noqa: F401
from freqlab.frequency.budget import training_budget
from freqlab.frequency.exposure import TAIL_REGIMES, source_tails, tails_report, thresholds_below
from freqlab.frequency.layouts import layout_frequency
from freqlab.frequency.megatron_replay import replay_options
from freqlab.frequency.regime_table import describe, describe_string_probe, regime_rows, string_probe_comparison
from freqlab.frequency.regimes import BYTES_PER_POSITION
from freqlab.frequency.schedule import load_preset, load_schedule, recipe_presets, schedule_frequency
from freqlab.histogram import histogram_file
from freqlab.paths import shown
from freqlab.resources import require_memory


def _check_out(out, hist) -> None:
    """``freq --out``: a usage error for a name of another format, the histogram read, or an existing file that is
    no f(i) table of freqlab's (a length histogram, a checkpoint, a user's Parquet, a token file named by a typo);
    an empty one is written (a shell's ``> f.parquet``, ``/dev/stdout``). Stdout (a pipe, ``> f``, ``>> f``) is
    written at its place, as ``cat`` writes, whatever it holds, but for a histogram (``>> HIST``: its footer would
    be the table's).
    """
    check_output_free(
        out, "--out", ours=lambda path: has_freqlab_header(path, FREQUENCY_FORMAT), written_as="an f(i) table",
        suffix=".parquet", describe=lambda path: not_parquet(path) or "a Parquet file freqlab did not write as f(i)",
        reads=[(histogram_file(hist), "the histogram read (HIST)")],
    )  # fmt: skip


@click.command("freq")
@click.argument("hist", type=HistogramPath())
@window_option(multiple=True, default=(2048,))
@regime_option(multiple=True)
@tokens_option
@tau_option
@seed_option
@click.option(
    "--out",
    type=HomePath(dir_okay=False),
    default=None,
    help="Write f(i) to this Parquet file (columns L, regime, position, frequency; the histogram's metadata): full "
    "attention's f, also with --layout (each layer kind's: freqlab.frequency.layout_frequency).",
)
@megatron_options("the .idx the histogram was scanned from (its metadata names it)")
@weights_option
@layout_option()
@click.option(
    "--tails",
    is_flag=True,
    help="Per-source tail table: share of each source's tokens trained with >= 4K, 8K, ... (below the first "
    "--L) tokens of same-document context, in the first --regime (natural or truncate).",
)
@json_option
def freq_command(hist, Ls, regimes, tokens, tau, seed, out, weights, layout, tails, as_json, **megatron):
    """Position frequency f(i) = Σ_s max(|s| - i, 0) of a length histogram, per window and regime.

    \b
    Example:
      freqlab freq freqlab-out/lengths.parquet --L 2048 --L 4096 --regime natural --regime concat --tokens 1T
      freqlab freq megatron-out/lengths.parquet --L 4K --regime megatron --out f.parquet   # replays the .idx
      freqlab freq lengths.parquet --L 32K --regime natural --regime pack --layout 5*swa1024+global --tails
    """
    tau = tau_or_default(tau)
    if out:
        _check_out(out, hist)
        kept = sum(Ls) * len(regimes)
        require_memory(
            OUT_BYTES_PER_POSITION * kept + BYTES_PER_POSITION * max(Ls),
            f"--out with --L {', '.join(f'{L:,}' for L in Ls)}",
            f"a table of f(i) for {len(Ls)} window(s) × {len(regimes)} regime(s), "
            f"{OUT_BYTES_PER_POSITION} bytes per position each",
        )
    refuse_unused_megatron(regimes)
    refuse_unused_seed(regimes)
    h, mix = read_histogram(hist, weights, regimes=regimes)
    budget = training_budget(tokens)
    replay = None
    if "megatron" in regimes:  # as scan: the Megatron options matter to that regime alone
        replay = replay_options(hist, h, megatron_settings(**megatron), weighted=mix is not None)
    rows = regime_rows(h.lengths, h.counts, Ls, regimes, tokens=budget.tokens, tau=tau, seed=seed, megatron=replay)
    layouts = None
    if layout is not None:
        layouts = [  # the megatron regime's replay too (a review: refused as if there were no index to replay)
            layout_frequency(h.lengths, h.counts, L, layout, r, seed=seed, megatron=replay) for L in Ls for r in regimes
        ]
    if tails and regimes[0] not in TAIL_REGIMES:
        raise click.UsageError(
            f"--tails splits segments by source, which only {' and '.join(TAIL_REGIMES)} keep (the {regimes[0]} "
            f"count does not keep each segment's source): give --regime natural first, e.g. --regime natural "
            f"--regime {regimes[0]}"
        )
    tail_rows = _tail_rows(h, Ls[0], regimes[0]) if tails else None
    corpus = mix.corpus if mix is not None and mix.corpus is not None else h  # whose counts are the corpus's
    if out:
        h.write_frequencies(
            out, Ls, regimes, seed=seed, megatron=replay, corpus=corpus, mixture=None if mix is None else mix.to_dict()
        )
    with report_beside(out):  # f(i) written to stdout: the report goes to stderr, not after the Parquet bytes
        if as_json:
            extra = mix_json(h, mix, Ls[0], regimes[0], seed=seed)  # the key stats and plan give it (was "sources")
            if layouts is not None:
                extra["layouts"] = [entry.to_dict(tokens=budget.tokens, tau=tau) for entry in layouts]
            if tail_rows is not None:
                extra["tails"] = tail_rows
            # the corpus's tokens, as stats gives them (a review: a mix of shares gave its counts scaled by K); the
            # mix's own, in the unit of its f, beside them
            data = {"histogram": str(hist), "corpus": h.corpus, "tokens": corpus.tokens}
            data |= {"mix_tokens": h.tokens} if mix is not None else {}
            data["budget"] = budget.to_dict()
            data["seed"] = seed  # pack's stream order (as a scan's summary.json and schedule --json give it)
            if replay is not None:
                extra["megatron"] = replay.describe()
            echo_json({**data, **extra, "results": rows})
            return
        click.echo(histogram_line(hist, h, mix))
        echo_mix(h, mix, Ls[0], regimes[0], seed=seed)
        click.echo(budget_line(budget, tau))
        if replay is not None:
            click.echo(f"megatron   GPTDataset's windows replayed from {replay.data_path or replay.index}")
        scaled = mix is not None and not mix.exact  # a float64 mix's counts are scaled by K: shares, not counts
        for row in rows:
            click.echo(describe(row, detail=True, scaled=scaled))
        for entry in layouts or ():
            click.echo(entry.report(tokens=budget.tokens, tau=tau))
        if tail_rows is not None:
            click.echo(tails_report(tail_rows, Ls[0], scaled=scaled))
        if out:
            click.echo(f"wrote {shown(out)}")


def _tail_rows(h, L: int, regime: str) -> list[dict]:
    """The per-source tail table at the first --L, with only the thresholds below L (a token has at most L - 1
    tokens of context, so a column at t >= L is 0% by construction); a window of at most 16K takes L/8, L/4 and L/2
    beside them, as ``plot exposure`` does (:func:`~freqlab.frequency.exposure.thresholds_below`; a review: the
    two disagreed).
    """
    thresholds = thresholds_below(L)
    return source_tails(h, L, regime, thresholds) if thresholds else []  # L = 1: no context to share


#: bytes per position of each (L, regime) ``--out`` holds as a table before writing it (measured 25-35: one window
#: of 2^24 positions, or 2 windows × 2 regimes of 2^23 and 2^22; a review measured 106-114 before write_frequencies
#: stopped listing every row's regime label, and `--L 256M --out` was killed past the bound of 32)
OUT_BYTES_PER_POSITION = 40


#: the ``stats`` keys that count documents and tokens (the corpus's, also when a mix is weighted from it)
COUNT_KEYS = ("documents_read", "documents", "empty_documents", "skipped", "tokens")


@click.command("stats")
@click.argument("hist", type=HistogramPath())
@window_option(default=2048)
@regime_option(
    multiple=True,
    default=(),
    help="Also the position-mass shares and predicted effective length at --L in this regime (repeat for "
    "several; megatron replays the index the histogram was scanned from, with Megatron's defaults).",
)
@tokens_option
@tau_option
@seed_option
@weights_option
@json_option
def stats_command(hist, L, regimes, tokens, tau, seed, weights, as_json):
    """Summary of a length histogram: documents, tokens, mean, median and percentiles (nearest rank: the
    ceil(q·n)-th smallest length, never interpolated), long-document share; and what STRING Sec. 3 reports for
    TinyLlama 1.3B (2K and 4K windows) beside freqlab's prediction for the same windows and budgets on this
    histogram.

    \b
    With --regime or --tokens, also the windows table of freqlab freq at --L (natural when no --regime), and the
    STRING comparison at --tau. --json holds the natural row at --L under "frequency" in any case (the
    histogram's statistics, LengthHistogram.length_statistics), the table under "windows".

    \b
    Example:
      freqlab stats freqlab-out/lengths.parquet --L 4096 --json
      freqlab stats freqlab-out/lengths.parquet --L 4K --regime natural --regime concat --tokens 300B
    """
    tau = tau_or_default(tau)
    refuse_unused_seed(regimes or ("natural",))  # the windows table's regime without --regime
    h, mix = read_histogram(hist, weights, regimes=regimes)
    summary = h.length_statistics(L, tau=tau)  # its frequency rows at --tau too (a review: always 100B)
    probe = string_probe_comparison(h.lengths, h.counts, tau=tau)
    windows, budget = None, None
    if regimes or tokens is not None:
        budget = training_budget(tokens)
        how = "freqlab freq takes --data-path PREFIX (Megatron's --data-path), or use --regime concat"
        replay = replay_options(hist, h, weighted=mix is not None, how=how) if "megatron" in regimes else None
        windows = regime_rows(
            h.lengths, h.counts, [L], regimes or ("natural",), tokens=budget.tokens, tau=tau, seed=seed, megatron=replay
        )
    # counts are the corpus's; with weights, the length distribution (mean, quantiles, shares) is the mix's
    counts = summary if mix is None or mix.corpus is None else mix.corpus.length_statistics(L)
    first = (regimes or ("natural",))[0]  # the mix table's regime, as freq's and plan's (a review: always natural)
    if as_json:
        extra = mix_json(h, mix, L, first, seed=seed)
        # the counts are the corpus's at the top level too, as the text shows them (a review: a mix's are scaled to
        # keep fractional weights exact, no documents); "corpus_counts" as before
        corpus = {"corpus_counts": {k: counts[k] for k in COUNT_KEYS}} if mix else {}
        counted = {k: counts[k] for k in (*COUNT_KEYS, "sources") if k in counts} if mix else {}
        if windows is not None:
            extra = {**extra, "budget": budget.to_dict(), "seed": seed, "windows": windows}
        echo_json({**summary, **counted, **corpus, **extra, "string_sec3": probe})
        return
    click.echo(h.report(L, corpus=None if mix is None else mix.corpus))
    echo_mix(h, mix, L, first, seed=seed)
    if windows is not None:
        click.echo("")
        click.echo(budget_line(budget, tau))
        for row in windows:
            click.echo(describe(row, detail=True, scaled=mix is not None and not mix.exact))
    click.echo("")
    for line in describe_string_probe(probe):
        click.echo(line)


@click.command("schedule")
@click.argument("file", type=HomePath(dir_okay=False), required=False)
@click.option(
    "--preset",
    default=None,
    metavar="NAME",
    help="A published recipe shipped with freqlab (llama3, prolong, fu2024, gemma3, skyladder, qwen2.5) "
    "instead of FILE; numbers its sources do not state are marked assumed.",
)
@hist_option("Default histogram for the stages [default: the schedule's; a preset: the built-in corpus].")
@layout_option("Attention layout for every stage that names none, e.g. 5*swa1024+global or a model config.json.")
@tau_option
@seed_option
@weights_option
@json_option
def schedule_command(file, preset, hist, layout, tau, seed, weights, as_json):
    """Position frequency after a multi-stage schedule: stage frequencies scaled to their budgets add up, per layer
    kind of the attention layout; the share of all training tokens that reached each earlier stage's window.

    \b
    Example schedule.yaml:
      histogram: freqlab-out/lengths.parquet
      layout: 5*swa1024+global            # optional: f per layer kind
      stages:
        - {name: pretrain, L: 2048, tokens: 1T, regime: natural}
        - {name: long, L: 8192, tokens: 20B, regime: pack}
    Run:
      freqlab schedule schedule.yaml --json
      freqlab schedule --preset llama3                 # a published recipe on the built-in corpus
    """
    schedule = read_schedule(file, preset, hist, layout, weights)
    if not any(stage.curriculum or stage.position_ids for stage in schedule.stages):  # they may draw with it
        refuse_unused_seed([stage.regime for stage in schedule.stages])
    result = schedule_frequency(schedule, seed=seed)
    echo_json(result.to_dict(tau)) if as_json else click.echo(result.report(tau))


def read_schedule(file, preset, hist, layout, weights=None):
    """The schedule of ``FILE`` or ``--preset`` (a preset's stages default to the built-in corpus), with
    ``--layout`` for the stages that name none.
    """
    if bool(file) == bool(preset):
        raise click.UsageError("give a schedule FILE or --preset NAME (one of them)")
    if preset:
        if preset not in (names := recipe_presets()):  # before the built-in corpus is scanned for it
            raise click.BadParameter(f"unknown recipe preset {preset!r}; choose one of {', '.join(names)}",
                                     param_hint="'--preset'")  # fmt: skip
        schedule = load_preset(preset, histogram=hist or builtin_histogram(), weights=weights)
    else:
        schedule = load_schedule(file, histogram=hist, weights=weights)
    return schedule if layout is None else schedule.with_layout(layout)


def builtin_histogram():
    """The built-in corpus (the Python standard library of this interpreter, default tokenizer), scanned."""
    from freqlab.scan import scan

    return scan(progress=False).histogram


def with_layout(schedule, layout):
    """``schedule`` with ``layout`` given to every stage that has none (:meth:`Schedule.with_layout`)."""
    return schedule.with_layout(layout)


def register(main: click.Group) -> None:
    """Add ``freqlab freq``, ``stats`` and ``schedule`` to the command group ``main``."""
    for command in (freq_command, stats_command, schedule_command):
        main.add_command(command)
