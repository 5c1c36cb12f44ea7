"""``freqlab plan harpe``: per-head RoPE bases (HARPE Eq. 9, Algorithm 1; Attention Buckets search).

A thin layer over :mod:`freqlab.plan.harpe`. The ``plan`` group (``freqlab/cli/plan.py``) adds
:data:`harpe_command`; the frequency options (--hist, --schedule, --L, --tokens, ...) are shared with it.
"""

from __future__ import annotations

import click

from freqlab.cli.options import (
    POSITIONS,
    POSITIONS_NOTE,
    POSITIVE_NUMBER,
    ROPE_BASE,
    SEED,
    WAVEFORM_HEAD_DIM,
    echo_json,
    given_on_command_line,
    json_option,
    refuse_unused,
    renamed_option,
    require,
    usage_error,
)
from freqlab.cli.plan_inputs import (
    frequency_inputs,
    frequency_options,
    refuse_untrained,
    refuse_unused_frequency_options,
)
from freqlab.plan import harpe
from freqlab.plan.waveform import DistanceGrid
from freqlab.plan.well_trained import well_trained_range

STRATEGIES = ("peak-valley", "uniform", "attention-buckets")

TABLE2_NOTE = harpe.TABLE2_NOTE  # importable from here as before


@click.command("harpe")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="peak-valley", show_default=True)
@click.option("--heads", type=click.IntRange(min=1), default=None, help="Heads N [32; 6 for attention-buckets].")
@click.option("--head-dim", type=WAVEFORM_HEAD_DIM, default=128, show_default=True, help="Head dimension d (even).")
@click.option("--b-min", type=ROPE_BASE, default=None, help="Smallest base [1e6; 10000 for attention-buckets].")
@click.option("--b-max", type=ROPE_BASE, default=None, help="Largest base [5e6; 30000 for attention-buckets].")
@click.option(
    "--stride", type=POSITIVE_NUMBER, default=None, help="Candidate stride s [30000; 500 for attention-buckets]."
)
@renamed_option(
    "--extend-to",
    "--target",
    "target",
    type=POSITIONS.within(1024),
    default=harpe.PAPER_TARGET,
    show_default=True,
    help=f"Length the model is extended to, at least 1K {POSITIONS_NOTE}.",
)
@click.option(
    "--grid",
    "grid_text",
    default=None,
    metavar="START:STOP:STEP",
    help="Distance grid [Attention Buckets grid scaled to --extend-to: 32000:130880:32 for 128K].",
)
@click.option(
    "--separation",
    type=click.IntRange(min=1),
    default=harpe.ProminentExtrema.separation,
    show_default=True,
    help="Peak-valley: an extremum dominates ± this many grid points.",
)
@click.option(
    "--peaks", type=click.IntRange(min=1), default=None, help="Peak-valley: keep only the N highest peaks [all]."
)
@click.option(
    "--order",
    type=click.Choice(("selection", "ascending")),
    default="selection",
    show_default=True,
    help="Head order: as selected (b_min first) or ascending like Table 2.",
)
@click.option("--compare", is_flag=True, help="Score against the uniform set, Table 2 and random sets.")
@click.option("--random-sets", type=click.IntRange(min=0), default=3, show_default=True, help="With --compare.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of random set #1 (#k: seed + k - 1).")
@frequency_options(f"Training window for --hist {POSITIONS_NOTE} [default: --extend-to; --schedule: its longest].")
@json_option
def harpe_command(
    strategy, heads, head_dim, b_min, b_max, stride, target, grid_text, separation, peaks, order,
    compare, random_sets, seed, hist, schedule, L, regime, tokens, tau, mass, weights, as_json,
):  # fmt: skip
    """Per-head RoPE bases for HARPE: peak-valley search (Algorithm 1), uniform (Eq. 9), or the
    Attention Buckets search HARPE cites.

    \b
    Examples:
      freqlab plan harpe                              # paper setting: 32 heads, 1M..5M, s = 30k, 128K
      freqlab plan harpe --compare                    # vs uniform, HARPE Table 2 and random sets
      freqlab plan harpe --strategy attention-buckets # their public defaults, vs their published list
      freqlab plan harpe --hist lengths.parquet --L 128K --tokens 1T    # grid = under-trained [N*, N)
      freqlab plan harpe --schedule schedule.yaml     # N* from a multi-stage schedule
      freqlab plan harpe --heads 8 --b-min 10000 --b-max 500000 --stride 5000 --extend-to 32K --json

    --extend-to was called --target (still accepted). Sizes: K = 1024 positions (128K = 131072).
    """
    if not compare:
        refuse_unused("random_sets", "seed", needed="--compare (the random sets compared with the plan)")
    for option, value in (("--b-min", b_min), ("--b-max", b_max), ("--stride", stride)):
        if value is not None:
            require(value > 0, option, f"must be positive, got {value:g}")
    if strategy != "peak-valley":
        refuse_unused("separation", "peaks", needed="--strategy peak-valley (the peak-valley search)")
    if grid_text and given_on_command_line("target"):  # a review: --extend-to was dropped without a word
        raise click.UsageError("--grid sets the distances that --extend-to would scale the grid to: give one of them")
    if strategy == "uniform" and given_on_command_line("stride"):
        raise click.UsageError("--stride needs --strategy peak-valley or attention-buckets (uniform spreads the bases "
                               "evenly between --b-min and --b-max, HARPE Eq. 9)")  # fmt: skip
    if strategy == "attention-buckets":
        if hist or schedule:
            raise click.UsageError("--hist/--schedule derive the grid for peak-valley and uniform only")
        if given_on_command_line("target"):
            raise click.UsageError(
                "--extend-to scales the peak-valley and uniform grid; attention-buckets searches its own distances "
                "(--grid START:STOP:STEP)"
            )
        _attention_buckets(heads, head_dim, b_min, b_max, stride, grid_text, as_json)
        return
    heads = heads or harpe.PAPER_HEADS
    b_min = harpe.PAPER_B_MIN if b_min is None else b_min
    b_max = harpe.PAPER_B_MAX if b_max is None else b_max
    stride = harpe.PAPER_STRIDE if stride is None else stride
    require(b_max > b_min, "--b-max", f"b_max = {b_max:g} must be larger than b_min = {b_min:g} (defaults 1e6..5e6)")
    if strategy != "uniform":  # (uniform reads no stride)
        _require_candidates(b_min, b_max, stride)

    choice, mix = _grid_choice(grid_text, target, hist, schedule, L, regime, tokens, tau, mass, weights, as_json)
    if strategy == "uniform":
        plan = harpe.uniform_plan(heads, b_min, b_max, head_dim=head_dim, grid=choice)
    else:
        detector = harpe.ProminentExtrema(peaks, separation)
        plan = usage_error(
            lambda: harpe.peak_valley_search(
                heads, b_min, b_max, stride, head_dim=head_dim, grid=choice, detector=detector
            )
        )
    compared = harpe.compare_sets(plan, random_count=random_sets, seed=seed) if compare else None
    if compare and strategy == "uniform":
        compared = compared[1:]  # the uniform set is already the plan

    if as_json:
        data = plan.to_dict(order)
        if compared is not None:
            data["compare"] = [c.to_dict() for c in compared]
            data["table2_note"] = TABLE2_NOTE
        echo_json({**data, **mix})
        return
    click.echo(plan.report(order))
    if compared is not None:
        click.echo(f"\n{harpe.comparison_report(plan, compared)}")


def _grid_choice(
    grid_text, target, hist, schedule, L, regime, tokens, tau, mass, weights, as_json
) -> tuple[harpe.GridChoice, dict]:
    """The distance grid (given, from the frequency's N*, or the default) and the mix's JSON (see
    :func:`~freqlab.cli.plan_inputs.frequency_inputs`).
    """
    if grid_text and (hist or schedule):
        raise click.UsageError("give either --grid or --hist/--schedule, not both")
    if grid_text:
        refuse_unused_frequency_options("--hist, not --grid")
        if unused := given_on_command_line("L", "regime", "weights"):
            raise click.UsageError(f"{'/'.join(unused)}: --grid sets the grid itself (they derive it from --hist)")
        return harpe.GridChoice(_parse_grid(grid_text), f"distance grid given: {grid_text}"), {}
    if hist or schedule:
        window, inputs, mix = frequency_inputs(
            L, hist, regime, tokens, tau, schedule, mass, weights, as_json=as_json, default_L=target
        )
        # the grid is the under-trained [N*, N) of the window: N = L (the window without --L) trains it at L
        if not given_on_command_line("target"):  # a review: the error named --extend-to, which was not given
            require(
                target >= window,
                "--L",
                f"L = {window} is above --extend-to's default N = {target} (the length the model is extended to): "
                "give --extend-to N >= L",
            )
        require(target >= window, "--extend-to", f"N = {target} is below the training window L = {window}")
        wt = well_trained_range(window, **inputs)
        refuse_untrained(wt, schedule, "every distance would be under-trained", "give --grid in place of the frequency")
        return harpe.grid_from_frequency(wt, target), mix
    refuse_unused("L", "regime", needed="--hist (the frequency to derive the grid from)")
    refuse_unused("weights", needed="--hist or --schedule (the frequency to derive the grid from)")
    refuse_unused_frequency_options("--hist or --schedule")
    return harpe.default_grid(target), {}


def _parse_grid(text: str) -> DistanceGrid:
    parts = text.split(":")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        values = []
    require(len(values) in (2, 3), "--grid", f"must be START:STOP[:STEP] with integers, got {text!r}")
    return usage_error(lambda: DistanceGrid(*values), "--grid")


def _attention_buckets(heads, head_dim, b_min, b_max, stride, grid_text, as_json) -> None:
    heads = heads or harpe.BUCKETS_BASES
    seed = ", ".join(f"{b:,}" for b in harpe.BUCKETS_SEED)
    # their search starts from its seed bases: fewer heads, or a range without them, would not be what was asked
    # (a review: --heads 2 gave 3 bases, --b-min 50000 gave 10,000 among them)
    require(heads >= len(harpe.BUCKETS_SEED), "--heads", f"attention-buckets starts from its seed bases {seed}: at "
            f"least {len(harpe.BUCKETS_SEED)}, got {heads}")  # fmt: skip
    if b_min is None and b_max is None and stride is None:
        candidates = harpe.BUCKETS_CANDIDATES
    else:
        lo = harpe.BUCKETS_B_MIN if b_min is None else b_min
        hi = harpe.BUCKETS_B_MAX if b_max is None else b_max
        step = harpe.BUCKETS_STRIDE if stride is None else stride
        require(hi > lo, "--b-max", f"b_max = {hi:g} must be larger than b_min = {lo:g} (defaults 10000..30000)")
        _require_candidates(lo, hi, step)
        require(lo <= min(harpe.BUCKETS_SEED) and max(harpe.BUCKETS_SEED) <= hi, "--b-min/--b-max",
                f"attention-buckets starts from its seed bases {seed}, outside {lo:,g}..{hi:,g}: give a range "
                "that holds them")  # fmt: skip
        candidates = [lo, *harpe.candidate_bases(lo, hi, step).tolist()]
    pool = len({float(b) for b in (*harpe.BUCKETS_SEED, *candidates)})
    require(heads <= pool, "--heads", f"{heads} bases requested but only {pool} distinct seed + candidate bases")
    grid = _parse_grid(grid_text) if grid_text else harpe.BUCKETS_GRID
    bases = harpe.attention_buckets_search(heads, candidates, grid=grid, head_dim=head_dim)
    result = harpe.BucketsSearch(bases, heads, candidates, grid, head_dim)
    echo_json(result.to_dict()) if as_json else click.echo(result.report())


def _require_candidates(b_min: float, b_max: float, stride: float) -> None:
    """A usage error naming --stride when b_min + i·s has no candidate up to b_max, counted as the search counts
    (on the numbers as written: 10000.1..10000.3 by 0.2 has one, which a check in binary floats refused).
    """
    ok = usage_error(lambda: harpe.candidate_count(b_min, b_max, stride), "--stride") >= 1
    require(ok, "--stride", f"{stride:g} is wider than b_max - b_min = {b_max - b_min:g}: no candidates")
