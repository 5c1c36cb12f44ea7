"""``freqlab scan``: tokenize a corpus, count document lengths, report what they mean for training windows."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from freqlab.cli.options import (
    COUNT,
    SEED,
    TOKENS,
    TOKENS_NOTE,
    FiniteFloat,
    HomePath,
    Share,
    echo_json,
    given_on_command_line,
    given_once,
    json_option,
    megatron_options,
    megatron_settings,
    refuse_empty,
    refuse_unused,
    refuse_unused_megatron,
    refuse_unused_seed,
    regime_option,
    tau_option,
    tau_or_default,
    tokens_option,
    window_option,
)
from freqlab.errors import FreqlabError, exit_status, interrupt_of
from freqlab.formats import FIGURES_DIR
from freqlab.frequency.position import refuse_megatron
from freqlab.paths import printable, shown
from freqlab.scan import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_OUT,
    DEFAULT_REGIMES,
    ReportOptions,
    RunOptions,
    ScanResult,
    ScanSettings,
    scan_from_settings,
)
from freqlab.scan.settings import ENGINES, ON_ERROR


@click.command("scan")
@click.option(
    "--dataset",
    multiple=True,  # to see a second one (click keeps the last silently)
    callback=given_once(refuse_empty, instead="one corpus per scan (several files: a folder, a glob or --data-files)"),
    metavar="NAME|ID|PATH",
    help="Preset (e.g. slimpajama), Hugging Face dataset id, or a local file/folder/glob "
    "(more files: --data-files). Default: the built-in corpus (Python standard library source).",
)
@click.option("--config", default=None, help="Hugging Face dataset configuration (an error for local files).")
@click.option(
    "--split",
    default="train",
    show_default=True,
    help="Dataset split (Hugging Face datasets, saved DatasetDict folders, datasets cache folders).",
)
@click.option(
    "--data-files",
    multiple=True,
    callback=refuse_empty,
    metavar="GLOB",
    help="Local copies of a preset's files (the preset's field mapping applies); repeatable.",
)
@click.option(
    "--format",
    "input_format",
    default=None,
    metavar="NAME",
    help="Read only local files of this input format (jsonl, parquet, arrow, txt, megatron, datatrove, "
    "token-stream); others in folders/globs are passed over and counted, a file named explicitly is "
    "read in it. Needed when a folder mixes text and tokenized files (never added together).",
)
@click.option("--text-field", default=None, help="Field holding the text (dotted path for nested fields).")
@click.option("--source-field", default=None, help="Field holding the source label, to split counts by source.")
@click.option(
    "--tokens-field",
    default=None,
    help="Tokenized data: column of token-id lists (default: input_ids when there is no text column).",
)
@click.option("--length-field", default=None, help="Tokenized data: column of document lengths.")
@click.option(
    "--eos-id",
    type=click.IntRange(min=0),
    default=None,
    help="Tokenized data: the EOS token id (splits .npy / lit-gpt token streams; checked elsewhere).",
)
@click.option(
    "--tokenizer",
    multiple=True,  # to see a second one
    callback=given_once(refuse_empty, instead="one tokenizer per scan (run one scan per tokenizer to compare them)"),
    metavar="NAME|PATH|ID",
    help="Built-in name, tokenizer.json (or its folder), .tiktoken file, .model file (SentencePiece, or "
    "Llama 3's tiktoken tokenizer.model) or Hugging Face model id. Default: built-in.",
)
@click.option("--add-special-tokens", is_flag=True, help="Count BOS/EOS and other special tokens too.")
@window_option(multiple=True, default=(2048,))
@regime_option(multiple=True, default=DEFAULT_REGIMES)
@megatron_options("the scanned .idx")
@tokens_option
@tau_option
@click.option(
    "--corpus-tokens",
    type=TOKENS,
    default=None,
    help=f"Full corpus size in tokens, to extrapolate a partial scan (flagged in the summary) {TOKENS_NOTE}.",
)
@click.option(
    "--max-docs",
    type=COUNT,
    default=None,
    help="Stop after this many documents read, skipped ones included (e.g. 100000 or 100K).",
)
@click.option(
    "--max-tokens",
    type=TOKENS,
    default=None,
    help="Stop once this many tokens are counted (the last document is kept whole), e.g. 10M.",
)
@click.option(
    "--sample-rate",
    type=Share(max_open=False),  # 0.1 or 10%
    default=None,
    help="Keep each document with this probability (seeded, deterministic).",
)
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed for --sample-rate and the pack regime.")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (a Ray cluster uses all its CPUs). Default: all cores.",
)
@click.option(
    "--batch-size",
    type=COUNT.within(1, 10**6),
    default=DEFAULT_BATCH_SIZE,
    show_default=True,
    help="Documents per tokenizer call.",
)
@click.option(
    "--engine",
    type=click.Choice(ENGINES),
    default="local",
    show_default=True,
    help="local: process pool on this machine; ray: Ray tasks (pip install 'freqlab[ray]').",
)
@click.option("--address", default=None, help="Ray cluster address (--engine ray). Default: start a local Ray.")
@click.option(
    "--out",
    type=HomePath(file_okay=False),
    default=DEFAULT_OUT,
    show_default=True,
    help="Output folder: lengths.parquet, summary.json, checkpoints/.",
)
@click.option("--resume", is_flag=True, help="Skip shards already checkpointed in --out by the same scan.")
@click.option(
    "--on-error",
    type=click.Choice(ON_ERROR),
    default="raise",
    show_default=True,
    help="Bad records: stop with file:line, or skip and count them by reason.",
)
@click.option(
    "--estimate",
    is_flag=True,
    help="Do not scan: say what a scan costs (core-hours, nodes, wall time) from measured throughput, "
    "for a corpus of --corpus-tokens or --corpus-bytes (with --sample-rate: a sampled scan).",
)
@click.option(
    "--corpus-bytes",
    type=COUNT,
    default=None,
    metavar="BYTES",
    help="--estimate: corpus size in bytes of text (e.g. 2.5T; decimal, T = 10^12).",
)
@click.option(
    "--node-cores", type=click.IntRange(min=1), default=32, show_default=True, help="--estimate: cores per node."
)
@click.option(
    "--target-hours",
    type=FiniteFloat(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="--estimate: how many nodes finish within this time.",
)
@click.option(
    "--lengths",
    type=HomePath(dir_okay=False),
    default=None,
    help="--estimate with --sample-rate: OUT/lengths.parquet of a smaller sampled scan of the corpus, "
    "to predict the error bar of the mass shares.",
)
@click.option(
    "--quiet", "-q", is_flag=True, help="No progress bar (there is none when stderr is piped or redirected either)."
)
@click.option("--plot", is_flag=True, help="Also write the main figures into OUT/figures.")
@click.option(
    "--plot-format",
    "plot_formats",
    type=click.Choice(["png", "pdf", "svg"]),
    multiple=True,
    default=("png",),
    show_default=True,
    help="Figure format(s) for --plot (repeat for several).",
)
@json_option
def scan_command(
    dataset,
    config,
    split,
    data_files,
    input_format,
    text_field,
    source_field,
    tokens_field,
    length_field,
    eos_id,
    tokenizer,
    add_special_tokens,
    Ls,
    regimes,
    data_path,
    megatron_seed,
    megatron_split,
    reset_attention_mask,
    train_samples,
    epochs,
    tokens,
    tau,
    corpus_tokens,
    max_docs,
    max_tokens,
    sample_rate,
    seed,
    workers,
    batch_size,
    engine,
    address,
    out,
    resume,
    on_error,
    estimate,
    corpus_bytes,
    node_cores,
    target_hours,
    lengths,
    quiet,
    plot,
    plot_formats,
    as_json,
):
    """Count document lengths in tokens and report the position-frequency shares per window.

    Reads documents, tokenizes them (without special tokens unless --add-special-tokens), writes the
    length histogram to OUT/lengths.parquet and the summary to OUT/summary.json, and prints e.g.
    "L=2048 natural: 81.2% of position mass at i ≤ 1024, 4.6% at i ≥ 1536".

    \b
    Examples:
      freqlab scan                                   # built-in corpus, default tokenizer, L=2048
      freqlab scan --dataset slimpajama --L 2K --max-docs 100K
      freqlab scan --dataset slimpajama --data-files '/data/SlimPajama/train/chunk*/*.jsonl.zst' --L 2048
      freqlab scan --dataset 'corpus/*.jsonl.zst' --tokenizer tokenizer.json --on-error skip --json
      freqlab scan --dataset slimpajama --engine ray --address auto --out runs/sp --resume
      freqlab scan --L 2K --L 4K --plot --plot-format pdf
      freqlab scan --dataset /data/megatron/corpus_text_document.idx --L 4096   # tokenized: no tokenizer
      freqlab scan --estimate --corpus-tokens 627B --node-cores 64 --sample-rate 0.001
    """
    tau = tau_or_default(tau)
    if address and engine != "ray":
        raise click.UsageError("--address needs --engine ray")
    if dataset is None and not data_files and (unused := given_on_command_line("config", "split", "input_format")):
        raise click.UsageError(f"{'/'.join(unused)}: for a dataset or data files, not the built-in corpus")
    if plot_formats and not plot and given_on_command_line("plot_formats"):  # it drew nothing, unsaid
        raise click.UsageError("--plot-format needs --plot (the figures it chooses the format of)")
    if not estimate:  # a review: a scan ran with them, unsaid
        refuse_unused(
            "corpus_bytes", "node_cores", "target_hours", "lengths", needed="--estimate (the cost estimate, not a scan)"
        )
    if estimate:
        if (corpus_tokens is None) == (corpus_bytes is None):
            raise click.UsageError("--estimate needs the corpus size: --corpus-tokens or --corpus-bytes (one of them)")
        # options of a scan that an estimate would take without a word (a review: --max-docs 10 gave the whole
        # corpus's 4.0 core-hours)
        # (an adversary: --tokens, --tau, --eos-id and --tokens-field were taken unsaid too)
        unused = given_on_command_line(
            "dataset", "data_files", "max_docs", "max_tokens", "resume", "on_error", "workers", "engine", "address",
            "out", "plot", "text_field", "source_field", "add_special_tokens", "batch_size", "tokens", "tau",
            "eos_id", "tokens_field", "length_field", "data_path",
        )  # fmt: skip
        if unused:
            raise click.UsageError(
                f"{', '.join(unused)}: --estimate sizes a whole scan of --corpus-tokens/--corpus-bytes from measured "
                "costs, reading nothing: drop them, or drop --estimate to scan"
            )
        if lengths is not None and sample_rate is None:
            raise click.UsageError("--lengths sizes a --sample-rate sample's intervals: give --sample-rate too")
        if lengths is None:  # the windows, regimes and seed of the error bar, which only --lengths gives
            refuse_unused("Ls", "regimes", "seed", needed="--lengths under --estimate (the error bar they size)")
        from freqlab.scan.estimate import estimate_scan

        result = estimate_scan(
            tokenizer=tokenizer,
            tokens=corpus_tokens,
            bytes=corpus_bytes,
            sample_rate=sample_rate,
            node_cores=node_cores,
            target_hours=target_hours,
            lengths=lengths,
            L=Ls,
            regimes=regimes,
            seed=seed,
        )
        report = result.pop("report")
        echo_json(result) if as_json else click.echo(report)
        return
    if tokens_field and length_field:  # ScanSettings would name them as Python does (a review)
        raise click.UsageError("--tokens-field and --length-field: give one (lists of token ids, or their lengths)")
    try:  # every parameter is checked before anything is read: a bad one is a usage error (exit 2)
        settings = ScanSettings(
            dataset=dataset,
            data_files=list(data_files) or None,
            config=config,
            split=split,
            format=input_format,
            text_field=text_field,
            source_field=source_field,
            tokens_field=tokens_field,
            length_field=length_field,
            eos_id=eos_id,
            tokenizer=tokenizer,
            add_special_tokens=add_special_tokens,
            sample_rate=sample_rate,
            seed=seed,
            max_docs=max_docs,
            max_tokens=max_tokens,
            on_error=on_error,
        )
        run = RunOptions(
            engine=engine,
            workers=workers,
            address=address,
            batch_size=batch_size,
            out=out,
            resume=resume,
            progress=False if quiet else None,
        )
        if sample_rate is None:  # the seed draws the sample, orders pack (and megatron's stand-in, pack or concat)
            refuse_unused_seed(regimes, seeded=("pack", "megatron"), also=" and draws the --sample-rate sample")
        if plot:  # the figures after Fig. 1 use the first regime: refused before the scan, not after it
            refuse_megatron(regimes[0])
        megatron = None
        refuse_unused_megatron(regimes)
        if "megatron" in regimes:
            megatron = megatron_settings(
                data_path, megatron_seed, megatron_split, reset_attention_mask, train_samples, epochs
            )
        report = ReportOptions(
            L=Ls, regimes=regimes, tokens=tokens, corpus_tokens=corpus_tokens, tau=tau, megatron=megatron
        )
    except FreqlabError as exc:
        raise click.UsageError(str(exc)) from None
    if plot:  # a file of the user's named like a figure: refused now, not after the whole corpus is counted
        from freqlab.corpus.presets import PRESETS
        from freqlab.plots.report import check_figures_free, figure_names

        preset = PRESETS.get(dataset) if dataset is not None else None
        labelled = source_field if source_field is not None else preset.source_field if preset else None
        sources = bool(labelled) or (dataset is None and not data_files)  # the built-in corpus has sources
        check_figures_free(Path(out) / FIGURES_DIR, figure_names(Ls, plot_formats, sources=sources))
        from freqlab.cli.plot import require_scan_figures

        require_scan_figures(Ls, regimes, 1 if sources else 0)  # sized before the scan (the sources: at least one)
    from freqlab.tokenization import single_threaded

    # this process is the command's own: each tokenizer call on one thread (the scan's threads and workers are the
    # parallelism; see freqlab.scan.driver), unless the environment already says otherwise
    single_threaded(1)
    started = time.time()
    try:
        result = scan_from_settings(settings, run, report)
    except (KeyboardInterrupt, SystemError) as error:
        interrupt = interrupt_of(error)
        if interrupt is None:
            raise
        # this scan's own checkpoints (an earlier scan's, not yet cleared when the interrupt came, resume nothing)
        saved = [p for p in (Path(out) / "checkpoints").glob("*.parquet") if resume or p.stat().st_mtime >= started]
        if saved:
            where = printable(f"{out}/checkpoints")
            said = f"finished shards are checkpointed in {where}; run the same command with --resume to continue"
        else:  # a promise of checkpoints would send the user to a --resume that resumes nothing
            said = "no shard had finished, so nothing is checkpointed; run the same command to start again"
        click.echo(f"\ninterrupted: {said}", err=True)
        sys.exit(exit_status(interrupt))
    show(result, as_json)
    if plot:
        from freqlab.cli.plot import drawn_source_count, require_scan_figures
        from freqlab.plots import scan_figures  # matplotlib only when figures are asked for
        from freqlab.plots.report import sources_left_out

        try:  # sized before the scan for one source: the histogram says how many there are (a review)
            require_scan_figures(Ls, regimes, drawn_source_count(result.histogram))
        except FreqlabError as exc:
            raise FreqlabError(
                f"{exc}; the histogram is saved in {shown(Path(out) / 'lengths.parquet')}: draw it with freqlab plot "
                "scan and a smaller --L"
            ) from None
        written = scan_figures(
            result.histogram, Ls, regimes, Path(out) / FIGURES_DIR, plot_formats, tokens=tokens, tau=tau, seed=seed
        )
        for path in written:
            click.echo(f"wrote {shown(path)}", err=as_json)  # stderr under --json, so stdout stays JSON
        if note := sources_left_out(result.histogram):
            click.echo(f"note: {note}", err=as_json)


def show(result: ScanResult, as_json: bool) -> None:
    """Print a scan result: the report table, or the summary as JSON."""
    if as_json:
        echo_json(result.to_dict())
    else:
        click.echo(result.report())


def register(main: click.Group) -> None:
    """Add ``freqlab scan`` to the ``freqlab`` command group."""
    main.add_command(scan_command)
