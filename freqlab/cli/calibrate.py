"""``freqlab calibrate``: fit tau from measured (budget, effective length) pairs (see
:mod:`freqlab.frequency.calibrate`).
"""

from __future__ import annotations

from pathlib import Path

import click

from freqlab.cli.options import (
    POSITIONS_NOTE,
    HomePath,
    check_output_free,
    echo_json,
    hist_option,
    json_option,
    regime_option,
    report_beside,
    window_option,
)
from freqlab.errors import FreqlabError
from freqlab.paths import shown


def _describe_json(path: str) -> str | None:
    """What a JSON file of freqlab's other than a calibration is (a scan's summary), for the refusal to replace it."""
    from freqlab.files import starts_with
    from freqlab.scan.output import SUMMARY_START

    return "a scan's summary" if starts_with(path, SUMMARY_START) else None


@click.command("calibrate")
@click.argument("file", type=HomePath(dir_okay=False), required=False)
@hist_option("Length histogram (Parquet) of the runs' data, for rows without a hist column.")
@regime_option(help="Data regime for rows without a regime column.")
@window_option(help=f"Training window for rows without an L column {POSITIONS_NOTE}.")
@click.option(
    "--out",
    type=HomePath(dir_okay=False),
    default=None,
    help="Write the fit as JSON (read by --tau-from of freq, schedule, plan and plot).",
)
@json_option
@click.pass_context
def calibrate_command(ctx, file, hist, regime, L, out, as_json):
    """Fit the occurrence threshold tau from your own measured effective lengths.

    FILE (CSV with a header, or JSON: a list of objects) has one row per checkpoint: effective_length and
    tokens (the checkpoint's training budget), optionally next_length (the next length tested, which failed),
    label, L, hist, regime; or effective_length with occurrences (f_T(E) known already). Each row gives
    tau = f_T(E), valid down to f_T(next_length); the fit is their geometric mean, with the range the rows allow
    and (3+ rows) a 95% bootstrap interval. Without FILE: the STRING paper's two TinyLlama points (Sec. 3).

    \b
    Examples:
      freqlab calibrate                                       # the paper's example: tau = 100B
      freqlab calibrate runs.csv --hist lengths.parquet --L 4K --out tau.json
      freqlab plan string --L 4K --hist lengths.parquet --tokens 1T --tau-from tau.json
    """
    from freqlab.frequency.calibrate import (
        PAPER_POINTS,
        calibrate,
        is_calibration_file,
        point_from_record,
        read_records,
    )

    if out:  # before the fit: a file of the user's (the runs read, a CSV, a histogram) is not replaced by the JSON
        check_output_free(
            out, "--out", ours=is_calibration_file, written_as="a calibration", suffix=".json",
            reads=[(file, "the runs read (FILE)")], describe=_describe_json,
        )  # fmt: skip

    if file is None:
        given = [
            param.opts[0]
            for param in ctx.command.params
            if param.name in ("hist", "regime", "L")
            and ctx.get_parameter_source(param.name) is not click.core.ParameterSource.DEFAULT
        ]
        if given:
            raise click.UsageError(
                f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to the rows of FILE; "
                "give FILE (without it, the paper's two points are fitted, which carry their own)"
            )
        points, source = PAPER_POINTS, "built-in example: STRING (An et al., ICLR 2025) Sec. 3, Fig. 2b"
    else:
        base = Path(file).parent
        frequencies: dict = {}  # f of each histogram file, window and regime, computed once for all the rows
        points = [
            point_from_record(r, hist=hist, regime=regime, L=L, base=base, frequencies=frequencies)
            for r in read_records(file)
        ]
        if not points:  # a review: "no calibration points" named no file
            raise FreqlabError(f"{file}: no calibration points (it holds no rows)")
        source = file
    fit = calibrate(points)
    if out:
        fit.write_json(out)
    with report_beside(out):  # the calibration written to stdout (> tau.json): the report on stderr, after it
        if as_json:
            echo_json({**fit.to_dict(), "source": source, **({"written": out} if out else {})})
            return
        click.echo(f"points from {source}")
        click.echo(fit.report())
        if out:
            click.echo(f"wrote {shown(out)} (use it with --tau-from)")


def register(main: click.Group) -> None:
    """Add ``freqlab calibrate`` to the command group ``main``."""
    main.add_command(calibrate_command)
