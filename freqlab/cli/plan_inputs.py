"""The inputs every ``freqlab plan`` command shares (--L, --hist, --regime, --tokens, --tau, --schedule, --mass,
--weights; the first ones defined in :mod:`freqlab.cli.options`) and their resolution into the planners' frequency
keywords; ``plan`` and ``plan_harpe`` both import it.
"""

from __future__ import annotations

import click

from freqlab.cli import options
from freqlab.cli.options import (
    POSITIONS,
    POSITIONS_NOTE,
    HomePath,
    Share,
    given_on_command_line,
    refuse_unused,
    renamed_option,
    tau_option,
    tokens_option,
    weights_option,
)
from freqlab.cli.weights import budget_line, echo_mix, histogram_line, mix_json, read_histogram
from freqlab.frequency import DEFAULT_TAU
from freqlab.frequency.budget import training_budget
from freqlab.frequency.schedule import load_schedule, schedule_frequency
from freqlab.plan.well_trained import DEFAULT_MASS, FrequencyInputs
from freqlab.resources import require_memory

hist_option = options.hist_option()
regime_option = options.regime_option()
extend_to_option = renamed_option(
    "--extend-to", "--target", "N", type=POSITIONS, required=True, help=f"Length N to extend to (> L) {POSITIONS_NOTE}."
)
schedule_option = click.option(
    "--schedule", type=HomePath(dir_okay=False), default=None, help="Multi-stage schedule (YAML/JSON)."
)
mass_option = click.option(
    "--mass",
    type=Share(),  # 0.9 or 90%
    default=DEFAULT_MASS,
    show_default=True,
    help="Mass rule without a budget (freqlab's, not a paper's): N* holds this share of position occurrences.",
)


def frequency_options(window_help: str = f"Training window {POSITIONS_NOTE} [default: the schedule's longest]."):
    """--L, --hist, --regime, --tokens, --tau, --schedule, --mass, --weights: the inputs of the well-trained N*."""
    window_option = options.window_option(help=window_help)
    shared = (
        window_option,
        hist_option,
        regime_option,
        tokens_option,
        tau_option,
        schedule_option,
        mass_option,
        weights_option,
    )

    def decorate(func):
        for option in reversed(shared):
            func = option(func)
        return func

    return decorate


#: peak bytes per position of L of a plan from a histogram (measured at L = 2^23: 17 for string and self-extend,
#: 30 for string with --usage-out, 16 for harpe)
PLAN_BYTES_PER_POSITION = 32


def frequency_inputs(
    L, hist, regime, tokens, tau, schedule, mass, weights, *, as_json: bool, default_L: int | None = None
) -> tuple[int, FrequencyInputs, dict]:
    """Resolve the :func:`frequency_options` into the window, the planners' frequency keywords and the mix's JSON
    (``{}`` without --weights, or with --json off: then the mix and the budget line are printed).

    The window is --L, else the schedule's longest window, else ``default_L``. A histogram's budget follows the one
    rule (--tokens, else 1T: :mod:`freqlab.frequency.budget`) unless --mass is given; the budget line is printed.
    """
    # --mass only when given: its default (0.9) stands for the API's mass=None, which the budget rule leaves alone
    inputs: FrequencyInputs = {"tokens": tokens, "tau": tau, "mass": mass if given_on_command_line("mass") else None}
    _refuse_options_that_set_nothing(hist, schedule)
    if schedule:
        sf = schedule_frequency(load_schedule(schedule, histogram=hist, weights=weights))
        if L is not None and sf.window != L:  # the planners' error named no option (a review)
            raise click.BadParameter(
                f"{L:,}, but the schedule's longest window is {sf.window:,}: leave --L out, or give {sf.window:,}",
                param_hint="'--L'",
            )
        return (sf.window if L is None else L), {**inputs, "schedule": sf}, {}
    L = default_L if L is None else L
    if L is None:
        raise click.UsageError("give --L (or a --schedule)")
    if hist:
        require_memory(
            PLAN_BYTES_PER_POSITION * L,
            f"--L {L:,}",
            f"the plan's arrays over positions, {PLAN_BYTES_PER_POSITION} bytes per position",
        )
        h, mix = read_histogram(hist, weights, regimes=regime, option="--hist")
        if mix is not None and not as_json:
            click.echo(histogram_line(hist, h, mix))
            echo_mix(h, mix, L, regime)
        if tokens is not None or not given_on_command_line("mass"):
            budget = training_budget(tokens)
            inputs["tokens"] = budget.tokens
            if not as_json:
                click.echo(budget_line(budget, DEFAULT_TAU if tau is None else tau))
        return L, {**inputs, "histogram": h, "regime": regime}, mix_json(h, mix, L, regime) if as_json else {}
    if weights:
        raise click.UsageError("--weights weights the sources of a --hist (or the stages of a --schedule)")
    refuse_unused_frequency_options("--hist or --schedule")
    return L, inputs, {}


def _refuse_options_that_set_nothing(hist, schedule) -> None:
    """Usage errors for frequency options the chosen source of f does not use (each was dropped without a word):
    a schedule's stages set the budget and the regime; the mass rule takes no budget or threshold; without
    --hist or --schedule no regime is read.
    """
    if schedule:
        if unused := given_on_command_line("tokens", "mass", "regime"):
            raise click.UsageError(f"{'/'.join(unused)}: a --schedule's stages set them (budget, regime, rule)")
    elif hist:
        if given_on_command_line("mass") and (budget := given_on_command_line("tokens", "tau", "tau_from")):
            raise click.UsageError(
                f"--mass is the rule without a budget: it takes no {'/'.join(budget)} (give one rule or the other)"
            )
    else:
        refuse_unused("regime", needed="--hist (the regime the histogram's documents are cut in)")


def refuse_unused_frequency_options(needed: str) -> None:
    """A usage error naming the options that set N* from a frequency (``--tokens``, ``--tau``, ``--tau-from``,
    ``--mass``) given on the command line where none is: the plan took its default and said nothing.
    """
    refuse_unused("tokens", "tau", "tau_from", "mass", needed=f"{needed} (it sets the well-trained range from f)")


def refuse_untrained(wt, schedule, needed_for: str, instead: str) -> None:
    """A usage error when the frequency's budget trains no position (N* = 0), naming the option to change: --tau
    when given, else the budget (a review: rope refused, self-extend failed naming no option, string and harpe
    planned on).
    """
    if wt.N > 0 or wt.rule not in ("budget", "schedule"):
        return
    more = "the schedule's stage tokens" if schedule else "--tokens"
    # the option to blame: the tau option given, else the budget (reviews: "--tau" never given was named, also for
    # --tau-from); a schedule's own tau is the schedule file's
    given = given_on_command_line("tau", "tau_from")
    blamed = given[0] if given else ("--schedule" if schedule else "--tokens")
    lower = given[0] if given else ("the schedule's tau or --tau" if schedule else "--tau")
    options.require(False, blamed, f"{wt.explanation}: {needed_for}; lower {lower}, raise {more}, or {instead}")
