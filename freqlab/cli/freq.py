"""``freqlab freq``, ``freqlab stats`` and ``freqlab schedule``: frequency math on saved histograms."""

from __future__ import annotations

import json

import click
import polars as pl

from freqlab.cli.options import (
    POSITIONS,
    POSITIONS_NOTE,
    SEED,
    TOKENS,
    TOKENS_NOTE,
    check_layout,
    megatron_options,
    megatron_settings,
    with_tau_from,
)
from freqlab.cli.weights import budget_line, echo_mix, histogram_line, read_histogram, weights_option
from freqlab.display import percent
from freqlab.errors import FreqlabError, cannot_write
from freqlab.formats import FREQUENCY_FORMAT, FREQUENCY_VERSION, METADATA_KEY  # kept for import compatibility
from freqlab.frequency.budget import training_budget
from freqlab.frequency.exposure import DEFAULT_THRESHOLDS, TAIL_REGIMES
from freqlab.frequency.mixture import MixtureInfo, contribution_table
from freqlab.frequency.regime_table import (
    describe,
    describe_string_probe,
    human_count,
    regime_rows,
    string_probe_comparison,
)
from freqlab.frequency.regimes import BYTES_PER_POSITION, REGIMES
from freqlab.frequency.schedule import load_schedule, schedule_frequency
from freqlab.frequency.stats import DEFAULT_TAU, effective_length, share_at_least, share_at_most
from freqlab.histogram import LengthHistogram
from freqlab.resources import require_memory
from freqlab.sizes import position_label


def window_option(default=(2048,), callback=None):
    """The ``--L`` option: one or more windows (``2K``, ``128K``)."""
    return click.option(
        "--L",
        "Ls",
        type=POSITIONS,
        multiple=True,
        default=default,
        show_default=True,
        callback=callback,
        help=f"Training window, e.g. 2048 or 2K {POSITIONS_NOTE}; repeat for several.",
    )


regime_option = click.option(
    "--regime",
    "regimes",
    type=click.Choice(REGIMES),
    multiple=True,
    default=("natural",),
    show_default=True,
    help="Data regime (repeat for several).",
)
tokens_option = click.option(
    "--tokens",
    type=TOKENS,
    default=None,
    help=f"Training budget T for f_T and the effective-length prediction, e.g. 1T or 300B {TOKENS_NOTE} "
    "[default: 1T].",
)
tau_option = with_tau_from(click.option(
    "--tau",
    type=TOKENS,
    default=int(DEFAULT_TAU),
    show_default=True,
    help=f"Occurrence threshold (STRING Fig. 2b) {TOKENS_NOTE}.",
))
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def echo_json(data) -> None:
    """Print ``data`` as indented JSON (non-ASCII kept as is)."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


@click.command("freq")
@click.argument("hist", type=click.Path(dir_okay=False))
@window_option()
@regime_option
@tokens_option
@tau_option
@click.option("--seed", type=SEED, default=0, show_default=True, help="Stream order for the pack regime.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write f(i) to this Parquet file (columns L, regime, position, frequency; the histogram's metadata).",
)
@megatron_options("the .idx the histogram was scanned from (its metadata names it)")
@weights_option
@click.option("--layout", default=None, metavar="SPEC|config.json", callback=check_layout,
              help="Attention layout: f per layer kind, e.g. 5*swa1024+global, 3*chunk8K+nope, or a model config.json "
                   "(sliding_window, layer_types, attention_chunk_size, no_rope_layers, ...).")
@click.option("--tails", is_flag=True,
              help="Per-source tail table: share of each source's tokens trained with >= 4K, 8K, ... (below the first "
                   "--L) tokens of same-document context, in the first --regime (natural or truncate).")
@json_option
def freq_command(hist, Ls, regimes, tokens, tau, seed, out, weights, layout, tails, as_json, **megatron):
    """Position frequency f(i) = Σ_s max(|s| - i, 0) of a length histogram, per window and regime.

    \b
    Example:
      freqlab freq freqlab-out/lengths.parquet --L 2048 --L 4096 --regime natural --regime concat --tokens 1T
      freqlab freq megatron-out/lengths.parquet --L 4K --regime megatron --out f.parquet   # replays the .idx
      freqlab freq lengths.parquet --L 32K --regime natural --regime pack --layout 5*swa1024+global --tails
    """
    if out:
        kept = sum(Ls) * len(regimes)
        require_memory(OUT_BYTES_PER_POSITION * kept + BYTES_PER_POSITION * max(Ls),
                       f"--out with --L {', '.join(f'{L:,}' for L in Ls)}",
                       f"a table of f(i) for {len(Ls)} window(s) × {len(regimes)} regime(s), "
                       f"{OUT_BYTES_PER_POSITION} bytes per position each")
    h, mix = read_histogram(hist, weights, regimes=regimes)
    budget = training_budget(tokens)
    options = megatron_settings(**megatron)
    replay = megatron_replay(hist, h, options, weighted=mix is not None) if "megatron" in regimes else None
    rows = regime_rows(h.lengths, h.counts, Ls, regimes, tokens=budget.tokens, tau=tau, seed=seed,
                            megatron=replay)
    layouts = _layout_rows(h, Ls, regimes, layout, budget.tokens, tau, seed) if layout is not None else None
    if tails and regimes[0] not in TAIL_REGIMES:
        raise click.UsageError(
            f"--tails splits segments by source, which only {' and '.join(TAIL_REGIMES)} keep (a {regimes[0]} "
            f"segment mixes documents): give --regime natural first, e.g. --regime natural --regime {regimes[0]}"
        )
    tail_rows = _tail_rows(h, Ls[0], regimes[0]) if tails else None
    if out:
        _write_frequencies(h, mix, Ls, regimes, seed, out, replay)
    if as_json:
        extra = {}
        if mix:
            extra = {"mixture": mix.to_dict(), "sources": contribution_table(h, mix, Ls[0], regimes[0], seed=seed)}
        if layouts is not None:
            extra["layouts"] = layouts
        if tail_rows is not None:
            extra["tails"] = tail_rows
        data = {"histogram": str(hist), "corpus": h.corpus, "tokens": h.tokens, "budget": budget.to_dict()}
        if replay is not None:
            extra["megatron"] = replay.describe()
        echo_json({**data, **extra, "results": rows})
        return
    click.echo(histogram_line(hist, h, mix))
    echo_mix(h, mix, Ls[0], regimes[0], seed=seed)
    click.echo(budget_line(budget, tau))
    if replay is not None:
        click.echo(f"megatron   GPTDataset's windows replayed from {replay.data_path}")
    for row in rows:
        click.echo(describe(row, detail=True))
    for entry in layouts or ():
        rotary = f" (rotary on {entry['rotary_fraction']:.0%} of each head)" if entry["rotary_fraction"] < 1 else ""
        click.echo(f"layout {entry['layout']} at L={entry['L']}, {entry['regime']}{rotary}")
        for kind in entry["kinds"]:
            if not kind["rope"]:
                click.echo(f"  {kind['kind']:<10} {kind['layers']:>3} layers  {kind['note']}")
                continue
            click.echo(
                f"  {kind['kind']:<10} {kind['layers']:>3} layers  {percent(kind['share_at_most_half'])} of mass at "
                f"i ≤ {kind['half']}, {percent(kind['share_at_least_three_quarters'])} at i ≥ "
                f"{kind['three_quarters']}; effective length {kind.get('effective_length', '-')}"
                + (f"  ({kind['note']})" if "note" in kind else "")
            )
    if tail_rows == []:
        click.echo(f"tails: no threshold below L={Ls[0]:,} (the smallest is {position_label(DEFAULT_THRESHOLDS[0])}): "
                   "no token of the window has that much context")
    if tail_rows:
        thresholds = list(tail_rows[0]["tails"])
        click.echo(f"share of tokens with at least N tokens of same-document context (L={tail_rows[0]['L']}, "
                   f"{tail_rows[0]['regime']}):")
        click.echo(f"  {'source':<12} {'tokens':>14}  " + "  ".join(f"{t:>7}" for t in thresholds))
        for row in tail_rows:
            click.echo(f"  {row['source']:<12} {row['tokens']:>14,}  "
                       + "  ".join(f"{percent(row['tails'][t]):>7}" for t in thresholds))
    if out:
        click.echo(f"wrote {out}")


def _layout_rows(h, Ls, regimes, layout, tokens, tau, seed) -> list[dict]:
    from freqlab.frequency.layouts import layout_frequency, read_layout

    parsed = read_layout(layout)
    return [
        layout_frequency(h.lengths, h.counts, L, parsed, regime, seed=seed).to_dict(tokens=tokens, tau=tau)
        for L in Ls
        for regime in regimes
    ]


def _tail_rows(h, L: int, regime: str) -> list[dict]:
    """The per-source tail table at the first --L, with only the thresholds below L (a token has at most L - 1
    tokens of context, so a column at t >= L is 0% by construction); [] when no threshold is below L."""
    from freqlab.frequency.exposure import source_tails

    thresholds = [t for t in DEFAULT_THRESHOLDS if t < L]
    return source_tails(h, L, regime, thresholds) if thresholds else []


#: bytes per position of each (L, regime) ``--out`` holds as a table before writing it (measured: 32 at L = 2^24)
OUT_BYTES_PER_POSITION = 32


def megatron_replay(hist, h: LengthHistogram, options=None, *, weighted: bool = False,
                    how: str = "give --data-path PREFIX (Megatron's --data-path), or --regime concat for what it "
                    "approximates"):
    """The :class:`~freqlab.frequency.megatron_replay.MegatronOptions` of ``--regime megatron`` (``options``: Megatron's
    settings; None: its defaults), their ``--data-path``, else
    the index the histogram was scanned from (``meta["megatron_index"]``), when it is there and still holds the
    histogram's documents; else FreqlabError saying what to give (a length histogram has no order to replay)."""
    import os

    from freqlab.corpus.megatron import read_index
    from freqlab.frequency.megatron_replay import MegatronOptions

    options = options or MegatronOptions()
    if options.data_path:
        return options
    if weighted:
        raise FreqlabError(f"--regime megatron replays an index, not a weighted mix; {how}")
    index = h.meta.get("megatron_index")
    if not index:
        raise FreqlabError(
            f"{hist}: --regime megatron replays Megatron's windows from its .idx, and this histogram names none "
            f"(it was not scanned whole from one Megatron index); {how}"
        )
    if not os.path.isfile(index):
        raise FreqlabError(f"{hist}: --regime megatron replays {index}, the index it was scanned from, which is gone; "
                           f"{how}")
    documents = read_index(index).documents
    if documents != h.documents_read:
        raise FreqlabError(f"{hist}: {index} now holds {documents:,} documents, the histogram {h.documents_read:,}: "
                           f"the index changed since the scan; rescan it, or {how}")
    return options.with_data_path([index])


def _write_frequencies(
    h: LengthHistogram, mix: MixtureInfo | None, Ls, regimes, seed: int, out, megatron=None
) -> None:
    """f for every (L, regime) in one Parquet file; its ``freqlab`` metadata key holds the histogram's provenance
    (as ``lengths.parquet`` does: the corpus's counts, and the mixture when weighted), the windows, regimes, seed."""
    corpus = mix.corpus if mix is not None and mix.corpus is not None else h
    frames = [
        h.frequency_table(L, regimes, seed=seed, megatron=megatron)
        .rename({"f": "frequency"})
        .select(pl.lit(L, pl.Int64).alias("L"), "regime", "position", "frequency")
        for L in Ls
    ]
    header = {
        "format": FREQUENCY_FORMAT,
        "version": FREQUENCY_VERSION,
        "histogram": {"documents": corpus.documents, "tokens": corpus.tokens, **corpus.provenance()},
        **({"mixture": mix.to_dict()} if mix is not None else {}),
        "L": list(Ls),
        "regimes": list(regimes),
        "seed": seed,
        **({"megatron": megatron.describe()} if megatron is not None else {}),
    }
    try:
        pl.concat(frames).write_parquet(out, metadata={METADATA_KEY: json.dumps(header)})
    except OSError as exc:
        raise cannot_write(out, exc) from exc


#: the ``stats`` keys that count documents and tokens (the corpus's, also when a mix is weighted from it)
COUNT_KEYS = ("documents_read", "documents", "empty_documents", "skipped", "tokens")


@click.command("stats")
@click.argument("hist", type=click.Path(dir_okay=False))
@click.option("--L", "L", type=POSITIONS, default=2048, show_default=True, help=f"Training window {POSITIONS_NOTE}.")
@click.option("--regime", "regimes", type=click.Choice(REGIMES), multiple=True,
              help="Also the position-mass shares and predicted effective length at --L in this regime (repeat for "
              "several; megatron replays the index the histogram was scanned from, with Megatron's defaults).")
@tokens_option
@tau_option
@weights_option
@json_option
def stats_command(hist, L, regimes, tokens, tau, weights, as_json):
    """Summary of a length histogram: documents, tokens, mean, median and percentiles (nearest rank: the
    ceil(q·n)-th smallest length, never interpolated), long-document share; and what STRING Sec. 3 reports for
    TinyLlama 1.3B (2K and 4K windows) beside freqlab's prediction for the same windows and budgets on this
    histogram.

    \b
    With --regime or --tokens, also the windows table of freqlab freq at --L (natural when no --regime), and the
    STRING comparison at --tau.

    \b
    Example:
      freqlab stats freqlab-out/lengths.parquet --L 4096 --json
      freqlab stats freqlab-out/lengths.parquet --L 4K --regime natural --regime concat --tokens 300B
    """
    h, mix = read_histogram(hist, weights, regimes=regimes)
    summary = h.length_statistics(L)
    probe = string_probe_comparison(h.lengths, h.counts, tau=tau)
    windows, budget = None, None
    if regimes or tokens is not None:
        budget = training_budget(tokens)
        how = "freqlab freq takes --data-path PREFIX (Megatron's --data-path), or use --regime concat"
        replay = megatron_replay(hist, h, weighted=mix is not None, how=how) if "megatron" in regimes else None
        windows = regime_rows(h.lengths, h.counts, [L], regimes or ("natural",), tokens=budget.tokens, tau=tau,
                                   megatron=replay)
    # counts are the corpus's; with weights, the length distribution (mean, quantiles, shares) is the mix's
    counts = summary if mix is None or mix.corpus is None else mix.corpus.length_statistics(L)
    if as_json:
        extra = {"mixture": mix.to_dict(), "mix_sources": contribution_table(h, mix, L, "natural")} if mix else {}
        corpus = {"corpus_counts": {k: counts[k] for k in COUNT_KEYS}} if mix else {}
        if windows is not None:
            extra = {**extra, "budget": budget.to_dict(), "windows": windows}
        echo_json({**summary, **corpus, **extra, "string_sec3": probe})
        return
    rows = [
        ("corpus", counts["corpus"] or "-"),
        ("tokenizer", counts["tokenizer"] or "-"),
        ("documents read", f"{counts['documents_read']:,}"),
        ("documents with tokens", f"{counts['documents']:,}"),
        ("empty documents", f"{counts['empty_documents']:,}"),
        ("skipped", ", ".join(f"{k}: {v:,}" for k, v in counts["skipped"].items()) or "0"),
        ("tokens", f"{counts['tokens']:,}"),
        *([("lengths below", "of the mix the weights make")] if mix else []),
        ("mean length", f"{summary['mean']:,.1f}"),
        ("median length", f"{summary['median']:,}"),
        ("p10 / p90 / p99", " / ".join(f"{summary['percentiles'][p]:,}" for p in ("p10", "p90", "p99"))),
        ("quantiles", "nearest rank (the ceil(q·n)-th smallest length)"),
        ("max length", f"{summary['max']:,}"),
        (f"tokens in documents > {L}", percent(summary['share_tokens_longer_than_L'])),
    ]
    for name, info in counts.get("sources", {}).items():
        rows.append((f"source {name}", f"{info['documents']:,} documents, {info['tokens']:,} tokens"))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        click.echo(f"{name:<{width}}  {value}")
    echo_mix(h, mix, L, "natural")
    if windows is not None:
        click.echo("")
        click.echo(budget_line(budget, tau))
        for row in windows:
            click.echo(describe(row, detail=True))
    click.echo("")
    for line in describe_string_probe(probe):
        click.echo(line)


@click.command("schedule")
@click.argument("file", type=click.Path(dir_okay=False), required=False)
@click.option("--preset", default=None, metavar="NAME",
              help="A published recipe shipped with freqlab (llama3, prolong, fu2024, gemma3, skyladder, qwen2.5) "
                   "instead of FILE; numbers its sources do not state are marked assumed.")
@click.option("--hist", type=click.Path(dir_okay=False), default=None,
              help="Default histogram for the stages [default: the schedule's; a preset: the built-in corpus].")
@click.option("--layout", default=None, metavar="SPEC|config.json", callback=check_layout,
              help="Attention layout for every stage that names none, e.g. 5*swa1024+global or a model config.json.")
@tau_option
@weights_option
@json_option
def schedule_command(file, preset, hist, layout, tau, weights, as_json):
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
    from freqlab.frequency.schedule import load_preset

    if bool(file) == bool(preset):
        raise click.UsageError("give a schedule FILE or --preset NAME (one of them)")
    corpus = None
    if preset:
        corpus = hist or builtin_histogram()
        schedule = load_preset(preset, histogram=corpus, weights=weights)
    else:
        schedule = load_schedule(file, histogram=hist, weights=weights)
    if layout is not None:
        schedule = with_layout(schedule, layout)
    result = schedule_frequency(schedule)
    data = schedule_report(result, tau, name=str(file or f"preset {preset}"))
    if as_json:
        echo_json(data)
        return
    _echo_schedule(data, tau, corpus)


def builtin_histogram():
    """The built-in corpus (the Python standard library of this interpreter, default tokenizer), scanned."""
    from freqlab.scan import scan

    return scan(progress=False).histogram


def with_layout(schedule, layout):
    """``schedule`` with ``layout`` given to every stage that has none."""
    from dataclasses import replace

    from freqlab.frequency.layouts import read_layout

    parsed = read_layout(layout)
    return replace(schedule, stages=tuple(s if s.layout else replace(s, layout=parsed) for s in schedule.stages))


def schedule_report(result, tau: float, *, name: str) -> dict:
    """The JSON of ``freqlab schedule``: totals, per stage (with per-kind effective lengths alone and after the
    stage, and the provenance of its numbers), the per-kind reach table."""
    schedule = result.schedule
    total = result.total
    window = result.window
    checkpoints = sorted({window // 4, window // 2, (3 * window) // 4, window - 1})
    kinds = result.kind_names
    stages = []
    for k, stage in enumerate(schedule.stages):
        row = {
            "name": stage.name,
            "L": stage.L,
            "tokens": stage.tokens,
            "regime": stage.regime,
            "histogram": str(getattr(stage.histogram, "corpus", None) or stage.histogram),
            "weights": stage.weights,
            "layout": stage.layout.spec if stage.layout else "global",
            "effective_length_alone": _effective_alone(result, k, tau),
            "effective_length_after": {kind.name: result.effective_length(tau, kind, stages=k + 1)
                                       for kind in kinds if kind.rope},
        }
        for key in ("curriculum", "position_ids", "mixture"):
            if getattr(stage, key) is not None:
                row[key] = getattr(stage, key)
        if stage.provenance:
            row["provenance"] = dict(stage.provenance)
            row["assumed"] = list(stage.assumed)
        stages.append(row)
    return {
        "schedule": name,
        "title": schedule.title,
        "sources": list(schedule.sources),
        "notes": list(schedule.notes),
        **({"provenance": dict(schedule.provenance)} if schedule.provenance else {}),
        "window": window,
        "tokens": result.tokens,
        "tau": float(tau),
        "effective_length": result.effective_length(tau),
        "share_at_most_half": share_at_most(total, window // 2),
        "share_at_least_three_quarters": share_at_least(total, (3 * window) // 4),
        "occurrences": {str(i): float(total[i]) for i in checkpoints},
        "kinds": [_kind_row(result, kind, tau) for kind in kinds],
        "stages": stages,
        "reach": result.reach_table(),
    }


def _kind_row(result, kind, tau: float) -> dict:
    """One layer kind over the whole schedule: its reach cap, effective length and mass shares (NoPE: a note)."""
    row = {"kind": kind.name, "rope": kind.rope, "reach_cap": kind.reach(result.window) if kind.size else None}
    if not kind.rope:
        return {**row, "note": "no rotary embedding: no position frequency; left out of RoPE plans"}
    total, window = result.kind_total(kind), result.window
    return {
        **row,
        "effective_length": result.effective_length(tau, kind),
        "share_at_most_half": share_at_most(total, window // 2),
        "share_at_least_three_quarters": share_at_least(total, (3 * window) // 4),
    }


def _echo_schedule(data: dict, tau: float, corpus) -> None:
    if data["title"]:
        click.echo(data["title"])
    for source in data["sources"]:
        click.echo(f"  source: {source}")
    if corpus is not None and not isinstance(corpus, str):
        click.echo(f"histogram: built-in corpus {corpus.corpus} ({corpus.documents:,} documents, "
                   f"{corpus.tokens:,} tokens, tokenizer {corpus.tokenizer or '-'})")
    window = data["window"]
    click.echo(f"{data['schedule']}: {len(data['stages'])} stages, {human_count(data['tokens'])} tokens, "
               f"longest window {window}")
    click.echo(f"budget     T = the stages' tokens (the schedule's); tau = {human_count(tau)}")
    for stage in data["stages"]:
        assumed = f"  [assumed: {', '.join(stage['assumed'])}]" if stage.get("assumed") else ""
        after = ", ".join(f"{k} {v}" for k, v in stage["effective_length_after"].items())
        click.echo(
            f"  {stage['name']:<16} L={stage['L']:<7} {human_count(stage['tokens']):>7} tokens  {stage['regime']:<8}"
            f"  effective length alone: {stage['effective_length_alone']}; after it: {after}"
            + (f"  (weights {stage['weights']})" if stage["weights"] else "") + assumed
        )
    click.echo(
        f"all stages: effective length {data['effective_length']} at τ = {human_count(tau)}; "
        f"{percent(data['share_at_most_half'])} of position mass at i ≤ {window // 2}, "
        f"{percent(data['share_at_least_three_quarters'])} at i ≥ {(3 * window) // 4}"
    )
    for kind in data["kinds"]:
        if not kind["rope"]:
            click.echo(f"  layers {kind['kind']}: {kind['note']}")
        elif kind["reach_cap"] is not None:
            click.echo(f"  layers {kind['kind']}: effective length {kind['effective_length']} "
                       f"(reach capped at {kind['reach_cap']} by construction)")
        elif len(data["kinds"]) > 1:
            click.echo(f"  layers {kind['kind']}: effective length {kind['effective_length']}")
    for i, value in data["occurrences"].items():
        click.echo(f"  F({i}) = {human_count(value)}")
    rows = [row for row in data["reach"] if row["beyond"]]
    if rows:
        click.echo("share of all training tokens that reached each earlier stage's window (context >= W):")
        for row in rows:
            shares = ", ".join(f"W={w}: {100 * v:.3g}%" if v is not None else f"W={w}: n/a (PoSE: position ids skip)"
                               for w, v in row["beyond"].items())
            click.echo(f"  {row['stage']:<16} {row['kind']:<10} {shares}")
    for note in data["notes"]:
        click.echo(f"note: {note}")


def _effective_alone(result, k: int, tau: float) -> int:
    return effective_length(result.frequencies[k], result.schedule.stages[k].tokens, tau)


def register(main: click.Group) -> None:
    """Add ``freqlab freq``, ``stats`` and ``schedule`` to the command group ``main``."""
    for command in (freq_command, stats_command, schedule_command):
        main.add_command(command)
