"""``freqlab plan ...``: settings for STRING, Self-Extend, RoPE scaling and length upsampling.

A thin layer over :mod:`freqlab.plan`; every command prints a short report (or ``--json``).
"""

from __future__ import annotations

import click

from freqlab.cli.options import (
    HEAD_DIM,
    POSITIONS,
    POSITIONS_NOTE,
    ROPE_BASE,
    FiniteFloat,
    HistogramPath,
    HomePath,
    check_output_free,
    echo_json,
    given_on_command_line,
    json_option,
    renamed_option,
    report_beside,
    require,
    usage_error,
    weights_option,
    window_option,
)
from freqlab.cli.plan_harpe import harpe_command
from freqlab.cli.plan_inputs import (  # noqa: F401  (the shared options, importable from here as before)
    PLAN_BYTES_PER_POSITION,
    extend_to_option,
    frequency_inputs,
    frequency_options,
    hist_option,
    mass_option,
    refuse_untrained,
    regime_option,
    schedule_option,
    tau_option,
    tokens_option,
)
from freqlab.cli.weights import budget_line, echo_mix, histogram_line, mix_json, read_histogram
from freqlab.errors import FreqlabError
from freqlab.files import not_parquet
from freqlab.frequency import DEFAULT_TAU
from freqlab.frequency.budget import training_budget
from freqlab.frequency.schedule import files_named, load_schedule, schedule_frequency
from freqlab.histogram import LengthHistogram
from freqlab.paths import shown
from freqlab.plan.rope_scaling import (
    DEFAULT_HEAD_DIM,
    DEFAULT_ROPE_THETA,
    ROPE_TYPES,
    check_factor,
    check_scaled_base,
    plan_rope_scaling,
    scaled_rotary_dims,
)
from freqlab.plan.self_extend import evaluate_self_extend, neighbour_windows, plan_self_extend
from freqlab.plan.string import (
    DEFAULT_ROUND,
    DEFAULT_W,
    check_local_window,
    is_usage_table,
    plan_string,
    string_usage,
)
from freqlab.plan.upsample import DEFAULT_MAX_UPWEIGHT, PACKINGS, plan_upsample, plan_upsample_schedule, receiving_stage
from freqlab.plan.well_trained import well_trained_range
from freqlab.sizes import MAX_POSITIONS


@click.group("plan")
def plan() -> None:
    """Plan long-context settings (STRING, Self-Extend, RoPE scaling, upsampling) from position frequencies.

    \b
    Examples:
      freqlab plan string --L 131072
      freqlab plan string --hist lengths.parquet --L 2048 --tokens 1T
      freqlab plan self-extend --L 4K --extend-to 16K
      freqlab plan rope --L 4K --extend-to 16K --type yarn
      freqlab plan upsample --hist lengths.parquet --L 4K --tokens 100B --effective-length 3072
      freqlab plan harpe --compare

    Sizes: positions count K = 1024 (--L 2K is 2048, --extend-to 128K is 131072); tokens are decimal
    (--tokens 1T is 10^12, B = 10^9). --extend-to (N > L) was called --target, --effective-length (E < L) was
    called --target-length: the old names still work.
    """


def register(main: click.Group) -> None:
    """Add ``freqlab plan`` and its subcommands to the command group ``main``."""
    plan.add_command(harpe_command, "harpe")
    main.add_command(plan)


# shared options: in plan_inputs (plan_harpe imports them too), imported here for the commands below


# string ----------------------------------------------------------------------------------------------------


@plan.command("string")
@frequency_options()
@click.option("--W", "W", type=POSITIONS, default=DEFAULT_W, show_default=True, help="Local window (>= 32, << S).")
@click.option(
    "--S", "S", type=POSITIONS, default=None,
    help="Evaluate this shift S (e.g. the official README's int(0.33 L)) [default: recommend one].",
)  # fmt: skip
@click.option(
    "--round-to",
    type=POSITIONS,
    default=DEFAULT_ROUND,
    show_default=True,
    help="Round S to a multiple of this.",
)
@click.option("--test-length", type=POSITIONS, default=None, help="max_test_length for the HF patch [default: L].")
@renamed_option(
    "--extend-to", "--target", "N", type=POSITIONS, default=None,
    help=f"Test length N > L: STRING + YaRN by the STRING repository's rule {POSITIONS_NOTE}.",
)  # fmt: skip
@click.option(
    "--rope-theta", type=ROPE_BASE, default=None,
    help="The model's RoPE base, for the YaRN blocks [default: 10000, with a note].",
)  # fmt: skip
@click.option(
    "--usage-out",
    type=HomePath(dir_okay=False),
    default=None,
    help="Write per-position usage before/after STRING and f(p) to this Parquet file.",
)
@json_option
def string_command(
    L, hist, regime, tokens, tau, schedule, mass, weights, W, S, round_to, test_length, N, rope_theta, usage_out,
    as_json,
):  # fmt: skip
    """STRING shift S and local window W, with paste-ready HF and vLLM blocks (Sec. 4.1); or evaluate a given S.

    S keeps every position STRING uses (up to max(S, L - S + W) - 1) within the well-trained N* predicted from
    --hist/--schedule, inside the paper's range L/3 <= S <= L/2 (default L/3, rounded up to --round-to).

    \b
    Examples:
      freqlab plan string --L 131072
      freqlab plan string --L 4K --S 1351                # the official README's int(0.33 L)
      freqlab plan string --hist lengths.parquet --L 2048 --tokens 1T --tau 100B
      freqlab plan string --L 32K --extend-to 128K      # STRING + YaRN (the repository's Qwen2 rule)
      freqlab plan string --schedule schedule.yaml --json
    """
    usage_error(lambda: check_local_window(W))
    if usage_out:  # before the plan: a file of the user's (a histogram, a schedule) is not replaced by the table
        check_output_free(
            usage_out, "--usage-out", ours=is_usage_table,
            written_as="a STRING usage table", suffix=".parquet",
            describe=lambda path: not_parquet(path) or "a Parquet file freqlab did not write as a usage table",
            reads=[(name, "a file the schedule names") for name in _schedule_files(schedule)],
        )  # fmt: skip
    L, inputs, mix = frequency_inputs(L, hist, regime, tokens, tau, schedule, mass, weights, as_json=as_json)
    if S is not None:
        require(S < L, "--S", f"S = {S} must be below the training window L = {L}")
    if N is not None:
        require(N > L, "--extend-to", f"N = {N} is not above the training window L = {L}")
    elif rope_theta is not None:  # read by the YaRN blocks alone (a review: it changed nothing, unsaid)
        raise click.UsageError("--rope-theta needs --extend-to (the base of the STRING + YaRN blocks past L)")
    p = usage_error(lambda: plan_string(L, W=W, S=S, round_to=round_to, test_length=test_length, extend_to=N,
                                        rope_theta=rope_theta, **inputs))  # fmt: skip
    if S is None:  # a given S is evaluated against any N*, 0 included (a review: --S was refused here too)
        refuse_untrained(p.well_trained, schedule, "no range for STRING to keep its positions in",
                         "drop --hist/--schedule for the paper's S = L/3")  # fmt: skip
    if usage_out:
        string_usage(p.L, p.S, p.W, frequency=p.well_trained.frequency).write_parquet(usage_out)
    with report_beside(usage_out):  # the table written to stdout: the report on stderr
        if as_json:
            echo_json({**p.to_dict(), **mix})
            return
        click.echo(p.report())
        if usage_out:
            click.echo(f"\nwrote {shown(usage_out)}")


def _schedule_files(schedule) -> list[str]:
    """The files ``--schedule`` names (none when it cannot be read: the command says why, once, when it reads it)."""
    if not schedule:
        return []
    try:
        return files_named(load_schedule(schedule))
    except FreqlabError:
        return []


# self-extend -----------------------------------------------------------------------------------------------


@plan.command("self-extend")
@frequency_options()
@extend_to_option
@click.option(
    "--well-trained",
    type=POSITIONS,
    default=None,
    help="Well-trained range N* [default: from the frequency, else 2/3 of L].",
)
@click.option(
    "--group", "G", type=click.IntRange(min=1, max=MAX_POSITIONS), default=None, help="Evaluate this group size G ..."
)
@click.option("--window", "w_n", type=POSITIONS.within(0), default=None, help="... with this neighbour window.")
@click.option("--min-window", type=POSITIONS, default=None, help="Smallest w_n [default: L/8, at least 1].")
@click.option("--max-window", type=POSITIONS, default=None, help="Largest w_n [default: L/4].")
@json_option
def self_extend_command(
    L, hist, regime, tokens, tau, schedule, mass, weights, N, well_trained, G, w_n, min_window, max_window, as_json
):
    """Self-Extend group size G and neighbour window w_n, or evaluate a given (G, w_n); Eq. 8.

    \b
    Examples:
      freqlab plan self-extend --L 4K --extend-to 16K
      freqlab plan self-extend --L 4K --extend-to 16K --group 8 --window 1024
      freqlab plan self-extend --hist lengths.parquet --L 4K --extend-to 32K --tokens 2T
    """
    if (G is None) != (w_n is None):
        raise click.UsageError("give --group and --window together")
    require(well_trained is None or not (hist or schedule), "--well-trained",
            "sets N* itself: drop --hist/--schedule, or --well-trained")  # fmt: skip
    L, inputs, mix = frequency_inputs(L, hist, regime, tokens, tau, schedule, mass, weights, as_json=as_json)
    require(N > L, "--extend-to", f"N = {N} is not above the training window L = {L}: Self-Extend extends beyond L "
                                  "(within L, see `freqlab plan string`)")  # fmt: skip
    if w_n is not None:
        require(w_n < L, "--window", f"w_n = {w_n} must be below the training window L = {L}")
    if well_trained is not None:
        require(0 < well_trained <= L, "--well-trained", f"N* = {well_trained} must be in 1..L = {L}")
    for option, value in (("--min-window", min_window), ("--max-window", max_window)):
        if value is not None:
            require(0 < value < L, option, f"{value} must be in 1..L - 1 = {L - 1}")
    if min_window is not None or max_window is not None:  # against the other's default (L/8, L/4) when not given
        lo, hi = neighbour_windows(L, min_window, max_window)
        option = "--max-window" if max_window is not None else "--min-window"
        require(lo <= hi, option, f"the windows {lo}..{hi} are empty (--min-window {lo}, --max-window {hi})")
    else:  # the defaults L/8 and L/4 need L >= 8 (a review: L = 1 was exit 1, naming no option)
        require(L >= 8, "--L", f"L = {L}: the default neighbour windows L/8..L/4 are empty below L = 8")
    try:
        p = plan_self_extend(L, N, well_trained=well_trained, min_window=min_window, max_window=max_window, **inputs)
        failure = None
    except FreqlabError as exc:
        # N* = 0 leaves nothing to evaluate a given (G, w_n) against either (it was an exit 1 naming no option)
        refuse_untrained(well_trained_range(L, given=well_trained, **inputs), schedule,
                         "no range for Self-Extend to keep its positions in",
                         "give --well-trained in place of the frequency")  # fmt: skip
        if G is None:
            raise
        p, failure = None, str(exc)  # a given (G, w_n) is still evaluated
    check = None
    if G is not None:
        N_star = p.N_star if p is not None else well_trained_range(L, given=well_trained, **inputs).N
        check = evaluate_self_extend(L, G, w_n, N, well_trained=N_star)
    if as_json:
        data = p.to_dict() if p is not None else {"method": "self-extend", "L": L, "N": N, "error": failure}
        echo_json({**data, "evaluated": None if check is None else check.to_dict(), **mix})
        return
    click.echo(p.report() if p is not None else f"no recommendation: {failure}")
    if check is not None:
        click.echo(f"\n{check.report()}")


# rope ------------------------------------------------------------------------------------------------------


@plan.command("rope")
@frequency_options("Training window L [--schedule: its longest].")
@extend_to_option
@click.option(
    "--type",
    "types",
    type=click.Choice((*ROPE_TYPES, "all")),
    multiple=True,
    default=("all",),
    show_default=True,
    help="Scaling type (repeat for several).",
)
@click.option("--rope-theta", type=ROPE_BASE, default=None, help="The model's RoPE base [default: 10000, with a note].")
@click.option(
    "--head-dim", type=HEAD_DIM, default=None, help="The model's head dimension d [default: 128, with a note]."
)
@click.option(
    "--partial-rotary-factor",
    type=FiniteFloat(0, 1, min_open=True),
    default=1.0,
    show_default=True,
    help="Share of the head dimension that rotates (only those dimensions count).",
)
@click.option(
    "--factor",
    type=FiniteFloat(1, min_open=True),
    default=None,
    help="Scaling factor s > 1, s·L at most 2^30 positions [default: N / L].",
)
@click.option(
    "--effective-length",
    "E",
    type=POSITIONS,
    default=None,
    help="Context, in tokens, the critical dimension is counted for: dimensions whose period exceeds it never "
    "completed a turn [default: N* from --hist/--schedule, the well-trained positions 0..N*-1, i.e. the effective "
    "length freq prints + 1; else L].",
)
@json_option
def rope_command(
    L, hist, regime, tokens, tau, schedule, mass, weights, N, types, rope_theta, head_dim, partial_rotary_factor,
    factor, E, as_json,
):  # fmt: skip
    """RoPE-scaling config blocks, labelled by transformers version (4.x `rope_scaling`, 5.x `rope_parameters`).

    With --hist (or --schedule) the critical dimension is counted for a context of N* tokens, the predicted
    well-trained positions 0..N*-1 (the effective length is N* - 1; dimensions whose period 2π·b^(2j/d) exceeds
    N* never completed a turn within it).

    \b
    Examples:
      freqlab plan rope --L 4K --extend-to 16K
      freqlab plan rope --L 8K --extend-to 128K --type llama3 --rope-theta 500000 --json
      freqlab plan rope --hist lengths.parquet --L 4K --tokens 1T --extend-to 16K --type yarn
      freqlab plan rope --schedule schedule.yaml --extend-to 128K --type yarn
    """
    chosen = ROPE_TYPES if "all" in types else tuple(dict.fromkeys(types))
    rotary = {  # rotary dimensions per type; usage errors naming both values, before the histogram is read
        t: usage_error(
            lambda t=t: scaled_rotary_dims(t, head_dim or DEFAULT_HEAD_DIM, partial_rotary_factor),
            "--partial-rotary-factor",
        )
        for t in chosen
    }
    require(E is None or not (hist or schedule), "--effective-length",
            "sets E itself: drop --hist/--schedule, or --effective-length")  # fmt: skip
    L, inputs, mix = frequency_inputs(L, hist, regime, tokens, tau, schedule, mass, weights, as_json=as_json)
    require(N > L, "--extend-to", f"N = {N} is not above the training window L = {L}: nothing to extend")
    require(E is None or E <= L, "--effective-length", f"E = {E} exceeds the training window L = {L}: E <= L")
    require(L >= 2, "--L", f"L = {L}: a RoPE-scaling plan needs a window of at least 2 positions")
    s = usage_error(lambda: check_factor(factor, L, N), "--factor")
    for t, d_r in rotary.items():  # NTK's raised base must stay a finite number
        usage_error(
            lambda t=t, d_r=d_r: check_scaled_base(t, rope_theta or DEFAULT_ROPE_THETA, s, d_r, L, N), "--rope-theta"
        )
    E_rule = None
    if E is None and (hist or schedule):
        wt = well_trained_range(L, **inputs)
        # N* counts the well-trained positions 0..N*-1: a context of N* tokens, whose largest distance is the
        # effective length the other commands print (N* - 1)
        # N* = 0: no context was trained, and counting for L would read as a whole window trained (a review)
        refuse_untrained(wt, schedule, "no context to count the critical dimension for",
                         "give --effective-length in place of the frequency")  # fmt: skip
        E = wt.N
        E_rule = f"predicted N*, {wt.rule} rule: positions 0..{wt.N - 1} well trained (effective length {wt.N - 1})"
    plans = [
        plan_rope_scaling(
            L, N, t, rope_theta=rope_theta, head_dim=head_dim, factor=factor,
            partial_rotary_factor=partial_rotary_factor, effective_length=E, E_rule=E_rule,
        )
        for t in chosen
    ]  # fmt: skip
    if as_json:
        echo_json({"method": "rope", "L": L, "N": N, "plans": [p.to_dict() for p in plans], **mix})
        return
    for p in plans:
        click.echo(p.report())
        click.echo("")


# upsample --------------------------------------------------------------------------------------------------


@plan.command("upsample")
@window_option(help="Training window L [--schedule: its longest].")
@renamed_option(
    "--effective-length",
    "--target-length",
    "E",
    type=POSITIONS,
    required=True,
    help=f"Effective length E to reach (< L) {POSITIONS_NOTE}.",
)
@hist_option
@tokens_option
@tau_option
@regime_option
@schedule_option
@click.option(
    "--long-hist",
    type=HistogramPath(),
    default=None,
    help="Histogram of documents to add in their own proportions [default: the corpus's best, ranked].",
)
@click.option(
    "--max-upweight",
    type=FiniteFloat(min=1),
    default=DEFAULT_MAX_UPWEIGHT,
    show_default=True,
    help="Add each document length up to this many times its share of T (Muennighoff et al. 2023: ~4 epochs).",
)
@weights_option
@json_option
def upsample_command(L, E, hist, tokens, tau, regime, schedule, long_hist, max_upweight, weights, as_json):
    """What makes f_T(E) >= tau: documents ranked by contribution, more tokens, another packing, side by side.

    Documents of the corpus are ranked by occurrences of E per token and the best added first; the report gives the
    bound T >= tau L/(L - E) that no mix beats, what training longer or another packing would cost, and says plainly
    when upsampling cannot help. With --schedule the occurrences are the schedule's F(E) and the documents join its
    last stage with the longest window (--hist is then the default corpus of its stages).

    \b
    Examples:
      freqlab plan upsample --hist lengths.parquet --L 4K --tokens 100B --effective-length 3K
      freqlab plan upsample --schedule schedule.yaml --effective-length 6000
    """
    try:  # a missing or unreadable file too: a usage error naming the option, as an empty one (a review)
        long_lengths = LengthHistogram.read_parquet(long_hist) if long_hist else None
    except FreqlabError as exc:
        raise click.BadParameter(str(exc), param_hint="'--long-hist'") from None
    if long_lengths is not None and long_lengths.documents == 0:  # "long_lengths is empty" named no file (a review)
        raise click.BadParameter(f"{long_hist}: the histogram holds no documents", param_hint="'--long-hist'")
    if long_lengths is not None and (short := long_lengths.lengths[long_lengths.lengths < E]).size:  # the API said
        # "long_lengths must all be >= E", naming neither the option nor the file (a review)
        raise click.BadParameter(
            f"{long_hist}: documents of {int(short.min()):,} tokens; the documents added must be at least "
            f"--effective-length E = {E:,} long",
            param_hint="'--long-hist'",
        )
    mix = None  # the weighted mix of --hist, when --weights gives one
    if schedule:
        if unused := given_on_command_line("tokens", "regime"):
            raise click.UsageError(f"{'/'.join(unused)}: a --schedule's stages set them; drop them with --schedule")
        sf = schedule_frequency(load_schedule(schedule, histogram=hist, weights=weights))
        window = sf.schedule.stages[receiving_stage(sf)].L  # the stage the documents join (not a PoSE target)
        if L is not None and window != L:
            raise FreqlabError(f"the schedule's longest stage window is {window}, but --L = {L}")
        require(window > E, "--effective-length", f"E = {E} must be below the training window L = {window}")
        p = plan_upsample_schedule(sf, E, tau=tau, long_lengths=long_lengths, max_upweight=max_upweight)
        budget = None
    else:
        if hist is None or L is None:
            raise click.UsageError("give --hist and --L (or a --schedule)")
        require(E < L, "--effective-length", f"E = {E} must be below the training window L = {L}")
        tau = DEFAULT_TAU if tau is None else tau
        budget = training_budget(tokens)
        h, mix = read_histogram(hist, weights, regimes=(regime, *PACKINGS), option="--hist")  # the alternatives too
        p = plan_upsample(
            h, L, E, budget.tokens, tau=tau, regime=regime, long_lengths=long_lengths, max_upweight=max_upweight
        )
    if as_json:
        weighted = mix_json(h, mix, L, regime) if mix is not None else {}  # its rounding too (a review: unsaid)
        echo_json({**p.to_dict(), **({"budget": budget.to_dict()} if budget else {}), **weighted})
        return
    if mix is not None:  # the mix its numbers come from, with its largest rounding error, as every other plan says
        click.echo(histogram_line(hist, h, mix))
        echo_mix(h, mix, L, regime)
    click.echo(budget_line(budget, tau) if budget else f"budget     T = the stages' tokens ({schedule})")
    click.echo(p.report())
