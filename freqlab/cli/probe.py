"""``freqlab probe``: measure a local model's effective length by needle retrieval (see
:mod:`freqlab.apply.probe`), with and without a STRING or Self-Extend plan applied.
"""

from __future__ import annotations

import click

from freqlab.cli.options import (
    COUNT,
    POSITIONS,
    POSITIONS_NOTE,
    SEED,
    FiniteFloat,
    HomePath,
    check_folder_reachable,
    echo_json,
    json_option,
)


def _pair(value: str | None, names: str, option: str) -> tuple[int, int] | None:
    if value is None:
        return None
    from freqlab.errors import FreqlabError
    from freqlab.sizes import parse_positions

    parts = value.split(",")
    try:
        if len(parts) != 2:
            raise FreqlabError("two values expected")
        return parse_positions(parts[0].strip(), minimum=0), parse_positions(parts[1].strip(), minimum=0)
    except FreqlabError as exc:
        raise click.BadParameter(f"{value!r} is not {names} ({exc})", param_hint=f"'{option}'") from None


def _lengths(text: str | None, maximum: int, steps: int) -> list[int]:
    from freqlab.sizes import parse_positions

    if text is not None:  # '' was taken for the defaults (a review)
        if not text.strip():
            raise click.BadParameter(f"--lengths {text!r}: give comma-separated lengths, e.g. 1K,2K,4K")
        try:
            return sorted({parse_positions(part.strip()) for part in text.split(",")})
        except Exception as exc:
            raise click.BadParameter(f"--lengths {text!r}: {exc}") from None
    return sorted({maximum * k // steps for k in range(1, steps + 1)})


def _check_before_loading(model_dir: str, plans: list, lengths: str | None, steps: int, allow_untested: bool) -> None:
    """Usage errors found before the model is loaded (seconds to minutes) and before any test runs: the lengths
    given, and the plans against the model type and the window its ``config.json`` states (whether its RoPE covers
    each head is the loaded model's to say: transformers 5 ignores a ``partial_rotary_factor`` on some types; the
    plans are applied to it before the first test, :func:`freqlab.apply.probe.probe_settings`).
    """
    import json
    from pathlib import Path

    from freqlab.apply import check_model_type
    from freqlab.apply.window import config_window
    from freqlab.errors import FreqlabError
    from freqlab.plan.self_extend import _check_group
    from freqlab.plan.string import _check_shift

    if lengths is not None:
        _lengths(lengths, 1, steps)
    try:
        config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # loading the model says what is wrong with it
    config = (config.get("text_config") or config) if isinstance(config, dict) else {}
    if not isinstance(config, dict) or not plans:
        return
    option = "--string" if plans[0][0] == "STRING" else "--self-extend"
    if isinstance(config.get("model_type"), str):  # none: loading the model tells (apply checks it there)
        try:
            check_model_type(config["model_type"], allow_untested, override="--allow-untested")
        except FreqlabError as exc:
            raise click.BadParameter(str(exc), param_hint=f"'{option}'") from None
    L = config_window(config.get)  # the window the loaded model's plans are checked against (model_window)
    if L is None:
        return
    for name, values in plans:
        try:
            _check_shift(L, *values) if name == "STRING" else _check_group(*values, L)
        except FreqlabError as exc:
            hint = "--string" if name == "STRING" else "--self-extend"
            named = f"L = {L}"  # the message names L already: said once (a review: "L = 512, got 600 (... L = 512)")
            message = str(exc).replace(named, f"{named} (the model's window)", 1) if named in str(exc) else None
            raise click.BadParameter(message or str(exc), param_hint=f"'{hint}'") from None  # L named where it bears


def _depths(text: str) -> list[float]:
    try:
        depths = [float(part) for part in text.split(",")]
    except ValueError:
        raise click.BadParameter(f"--depths {text!r}: comma-separated numbers in [0, 1] expected") from None
    if not depths or any(not 0.0 <= d <= 1.0 for d in depths):
        raise click.BadParameter(f"--depths {text!r}: every depth must be in [0, 1]")
    return list(dict.fromkeys(depths))  # once each, as --lengths (0.5,0.5 counted 0.5 twice: a review)


@click.command("probe")
@click.argument("model_dir", metavar="MODEL", type=HomePath(exists=True, file_okay=False))
@click.option(
    "--lengths",
    default=None,
    help=f"Context lengths to test, comma-separated {POSITIONS_NOTE} [default: --steps even steps up to --max-length].",
)
@click.option(
    "--max-length",
    type=POSITIONS,
    default=None,
    help="Longest default length [default: the model's max_position_embeddings; with learned positions (GPT-2), "
    "less the longest answer, 8 tokens per needle and 8 more].",
)
@click.option("--steps", type=COUNT, default=8, show_default=True, help="Number of default lengths.")
@click.option(
    "--depths",
    default="0,0.25,0.5,0.75,1",
    show_default=True,
    help="Needle phases: one needle in each n-th of the haystack, at this share of it (0: the first right after "
    "the instruction, 1: the last right before the question).",
)
@click.option("--trials", type=COUNT, default=5, show_default=True, help="Tests per (length, depth).")
@click.option("--needles", type=COUNT, default=4, show_default=True, help="Needles per prompt (the paper: 4).")
@click.option("--need", type=COUNT, default=2, show_default=True, help="Needles a test must retrieve (the paper: 2).")
@click.option(
    "--threshold",
    type=FiniteFloat(0, 1, min_open=True),
    default=0.5,
    show_default=True,
    help="Share of passing tests a length needs (freqlab's default; the paper does not state one).",
)
@click.option(
    "--string", "string_plan", multiple=True, metavar="S,W", help="Also probe with STRING (shift S, window W)."
)
@click.option(
    "--self-extend",
    "self_extend_plan",
    multiple=True,
    metavar="G,W",
    help="Also probe with Self-Extend (group G, neighbour window w_n).",
)
@click.option("--no-baseline", is_flag=True, help="With a plan, skip the stock model.")
@click.option("--batch-size", type=COUNT, default=8, show_default=True, help="Prompts generated at once.")
@click.option(
    "--dtype",
    type=click.Choice(["auto", "float32", "bfloat16", "float16", "float64"]),
    default="auto",
    show_default=True,
    help="Weights' dtype.",
)
@click.option("--device", default=None, help="torch device [default: cuda if available, else cpu].")
@click.option(
    "--attn-implementation",
    type=click.Choice(["eager", "sdpa", "flash_attention_2", "flash_attention_3"]),
    default=None,
    help="The model's attention [default: transformers' choice]; with flash-attention (installed) the plans run on "
    "their flash backend.",
)
@click.option("--seed", type=SEED, default=0, show_default=True, help="Needle numbers (the same for every setting).")
@click.option("--figure", type=HomePath(dir_okay=False), default=None, help="Write the heat map (png, pdf or svg).")
@click.option(
    "--allow-untested",
    is_flag=True,
    help="Apply the plans to a model type they are not tested on (see freqlab.apply.TESTED_MODEL_TYPES).",
)
@json_option
def probe_command(
    model_dir,
    lengths,
    max_length,
    steps,
    depths,
    trials,
    needles,
    need,
    threshold,
    string_plan,
    self_extend_plan,
    no_baseline,
    batch_size,
    dtype,
    device,
    attn_implementation,
    seed,
    figure,
    allow_untested,
    as_json,
):
    """Measure MODEL's effective length by needle retrieval, the way STRING (An et al., ICLR 2025) Sec. 3 does.

    MODEL is a local Hugging Face causal LM directory (loaded offline). Each test hides NEEDLES 6-digit numbers
    spread over a filler haystack (one in each n-th, at the phase --depths gives) and passes when the greedy
    answer names at least NEED of them. A length passes when at least THRESHOLD of its tests pass; the effective
    length is the largest tested length that passes with every shorter one passing. Needs the apply extra:
    pip install 'freqlab[apply]'.

    \b
    Examples:
      freqlab probe ./my-model --lengths 1K,2K,3K,4K --trials 20
      freqlab probe ./my-model --string 1408,128 --figure probe.png --json
    """
    from freqlab.apply import probe as p

    plans = []
    for name, given, names, option in (("STRING", string_plan, "S,W", "--string"),
                                       ("Self-Extend", self_extend_plan, "G,w_n", "--self-extend")):  # fmt: skip
        settings = list(dict.fromkeys(_pair(text, names, option) for text in given))  # the same setting once
        if len(settings) > 1:  # a second one replaced the first, unsaid (a review)
            raise click.BadParameter(
                f"given {len(given)} times ({'; '.join(given)}): a probe compares one setting of each method with the "
                "stock model; run it again for another",
                param_hint=f"'{option}'",
            )
        plans.append((name, settings[0] if settings else None))
    plans = [(name, values) for name, values in plans if values is not None]
    if no_baseline and not plans:
        raise click.UsageError("--no-baseline needs --string or --self-extend")
    depth_list = _depths(depths)
    if need > needles:
        raise click.BadParameter(f"{need} needles cannot be found among --needles {needles}", param_hint="'--need'")
    if figure:
        from pathlib import Path

        from freqlab.errors import FreqlabError
        from freqlab.plots.style import figure_formats

        if not Path(figure).suffix:  # figure_formats's words name its Python argument (formats=), no option here
            raise click.BadParameter(
                f"{figure!r} has no suffix: give a path like probe.png (png, pdf or svg)", param_hint="'--figure'"
            )
        try:
            figure_formats(figure)
        except FreqlabError as exc:
            raise click.BadParameter(str(exc), param_hint="'--figure'") from None
        check_folder_reachable(figure, "--figure")
    _check_before_loading(model_dir, plans, lengths, steps, allow_untested)
    model, tokenizer = p.load_model(model_dir, dtype, device, attn_implementation)
    config = model.config.get_text_config()
    longest = config.max_position_embeddings
    if (positions := p.learned_positions(model)) is not None:  # learned: the answer within them too
        longest = positions - p.ANSWER_TOKENS_PER_NEEDLE * needles - p.ANSWER_MARGIN  # (the defaults were refused)
    length_list = _lengths(lengths, max_length or longest, steps)
    from freqlab.apply.attention import model_window

    window = model_window(model)  # max_position_embeddings, or what a YaRN, llama3 or LongRoPE block scales it to
    builder = p.hf_builder(tokenizer, needles)
    short = [n for n in length_list if n < builder.minimum_length()]
    template = f"the needle template ({builder.minimum_length()} tokens with this tokenizer)"
    if short and lengths is None and len(short) < len(length_list):  # defaults: the ones that fit are tested (a
        # review: a run with no option failed on a small model)
        length_list = [n for n in length_list if n not in short]
        click.echo(f"note: default lengths {short} are shorter than {template}: left out", err=True)
    elif short:  # given, or every default (--steps even steps up to --max-length): the message says which
        given = "'--lengths'" if lengths is not None else "'--max-length' (the default lengths: --steps even steps)"
        raise click.BadParameter(f"lengths {short} are shorter than {template}", param_hint=given)
    # the notes on the lengths probed, once the short ones are out (a review: they named lengths never probed)
    if beyond := [n for n in length_list if n > window]:  # said, not refused: extending is what Self-Extend is for
        click.echo(
            f"note: lengths {beyond} pass the {window:,} positions the model is set up for (max_position_embeddings, "
            "or its RoPE scaling's): the stock model meets positions it was never trained on there",
            err=True,
        )
    answer = p.ANSWER_TOKENS_PER_NEEDLE * needles + p.ANSWER_MARGIN  # the most tokens a test generates
    if edge := [n for n in length_list if n <= window < n + answer]:  # a review: 512 at 512 said nothing
        click.echo(
            f"note: lengths {edge} fit the {window:,} positions the model is set up for, but their answers (up to "
            f"{answer} tokens) pass them",
            err=True,
        )
    from tqdm.auto import tqdm

    total = (len(plans) + (not no_baseline)) * len(length_list) * len(depth_list) * trials
    with tqdm(total=total, desc="needle tests", unit="test", disable=None, leave=False) as bar:
        try:
            results = p.probe_settings(
                model,
                tokenizer,
                builder,
                length_list,
                depth_list,
                plans=plans,
                baseline=not no_baseline,
                progress=bar.update,
                allow_untested=allow_untested,
                trials=trials,
                need=need,
                threshold=threshold,
                batch_size=batch_size,
                seed=seed,
            )
        except (p.ProbeStopped, p.ProbeInterrupted) as exc:  # the settings probed in full before it are reported,
            results, stopped = list(exc.results), exc  # then its error (Ctrl-C: exit 130 all the same)
        else:
            stopped = None
    written, failure = None, None
    if figure:
        from freqlab.errors import FreqlabError
        from freqlab.plots.probe import plot_probe
        from freqlab.plots.style import save_figure

        try:
            written = tuple(str(path) for path in save_figure(plot_probe(results), figure, None))
        except FreqlabError as exc:  # the results are printed all the same: the tests may have taken hours
            failure = exc
    report = p.ProbeReport(model_dir, tuple(results), p.ruler_command(model_dir, length_list), written)
    data = report.to_dict()
    if stopped is not None:  # an adversary: the JSON of a stopped probe did not say so
        data["stopped"] = str(stopped)
    echo_json(data) if as_json else click.echo(report.report())
    if stopped is not None and failure is not None:  # both said: the figure's on a line of its own first
        click.echo(f"Error: {failure}", err=True)
    if isinstance(stopped, KeyboardInterrupt):  # as scan ends one: said, and the interrupt's exit status
        import sys

        from freqlab.errors import exit_status

        click.echo(f"\n{stopped}", err=True)
        sys.exit(exit_status(stopped))
    if stopped is not None:
        raise stopped
    if failure is not None:
        raise failure


def register(main: click.Group) -> None:
    """Add ``freqlab probe`` to the command group ``main``."""
    main.add_command(probe_command)
