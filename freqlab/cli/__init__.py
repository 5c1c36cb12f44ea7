"""Command line: a thin layer over the Python API.

Each command lives in its own module (``freq``, ``scan``, ``plan``, ``plot``), loaded only when that command runs,
so ``freqlab --help`` and ``--version`` start in a fraction of a second. User-facing errors
(:class:`freqlab.errors.FreqlabError`) become one line on stderr and exit status 1; usage errors exit with 2, as
click does. The console script (:func:`freqlab.__main__.run`) exits with 130 on Ctrl-C and 143 on SIGTERM, each
with one line (``freqlab scan`` says how to resume), never a traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from pathlib import Path

import click

from freqlab.errors import BROKEN_PIPE, INTERRUPTED, exit_status

# command -> (module that registers it, one-line help shown by `freqlab --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "cache": ("freqlab.cli.cache", "The tokenizer cache: its folder, files and size; --clear removes them."),
    "calibrate": ("freqlab.cli.calibrate", "Fit tau from measured (budget, effective length) pairs of your own runs."),
    "freq": ("freqlab.cli.freq", "Position frequency f(i) of a saved length histogram, per window and regime."),
    "plan": ("freqlab.cli.plan", "Long-context settings from position frequencies: STRING, Self-Extend, ..."),
    "probe": ("freqlab.cli.probe", "Measure a local model's effective length: needle retrieval over lengths x depths."),
    "plot": ("freqlab.cli.plot", "Figures: position frequency, windows, effective length, STRING, HARPE."),
    "scan": ("freqlab.cli.scan", "Count document lengths in tokens and report the position-frequency shares."),
    "schedule": ("freqlab.cli.freq", "Position frequency of a multi-stage training schedule (YAML/JSON)."),
    "stats": ("freqlab.cli.freq", "Mass shares, quantiles and effective lengths of a saved histogram."),
}


class _Group(click.Group):
    """Loads each command's module on first use, and turns FreqlabError (and plain I/O errors) into one line."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            importlib.import_module(COMMANDS[name][0]).register(self)
        return self.commands.get(name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][1]) for name in self.list_commands(ctx)])

    def invoke(self, ctx: click.Context):
        from freqlab.errors import FreqlabError, ParameterError, describe_os_error
        from freqlab.paths import printable

        try:
            try:
                return super().invoke(ctx)
            except ParameterError as exc:  # a value of one option, found wrong by the library: a usage error too
                raise click.BadParameter(str(exc), param_hint=f"'{exc.option}'") from None
        except click.ClickException as exc:  # a usage error quoting a value: on one line, as freqlab's own errors
            exc.message = printable(exc.message)
            if isinstance(exc, click.NoSuchOption) and exc.ctx is not None:
                _suggest_other_case(exc, exc.ctx)
            raise
        except BrokenPipeError:  # `freqlab ... | head`: the reader has all it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
            sys.exit(BROKEN_PIPE)
        except (FreqlabError, OSError, EOFError) as exc:  # EOFError: data ending early, which click takes for Ctrl-D
            message = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)
            if isinstance(exc, EOFError):
                message = f"unexpected end of data ({message or 'EOFError'})"
            click.echo(f"Error: {printable(message)}", err=True)
            sys.exit(1)


def _suggest_other_case(exc: click.NoSuchOption, ctx: click.Context) -> None:
    """Suggest the option spelled with other case first (options are case-sensitive: ``--l 4K`` meant ``--L``, where
    click suggested ``--S, --W``, a review).
    """
    params = ctx.command.get_params(ctx)  # --help too
    shown = [param for param in params if not getattr(param, "hidden", False)]  # not --target for --TARGET
    names = [name for param in shown for name in (*param.opts, *param.secondary_opts)]
    same = [name for name in names if name.lower() == exc.option_name.lower() and name != exc.option_name]
    if same:
        exc.possibilities = same  # type: ignore[misc]  # click computes them once, at construction


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="freqlab")
def main() -> None:
    """freqlab: position frequencies of training data, and long-context settings planned from them.

    \b
    Examples:
      freqlab scan                       # built-in corpus, default tokenizer, L=2048
      freqlab freq lengths.parquet --L 2K --regime natural --regime concat
      freqlab plan string --L 128K

    \b
    Sizes: every count flag takes a number with an optional suffix.
      positions (windows L, target lengths, S, W): K = 1024, so 2K = 2048 and 128K = 131072
      tokens (budgets, tau, limits) and other counts: K, M, B, T = 10^3, 10^6, 10^9, 10^12 (1T = 10^12)
    """


_PACKAGE = Path(__file__).resolve().parents[1]  # freqlab/
_python_warning_line = warnings.formatwarning


def _warning_line(message, category, filename, lineno, line=None) -> str:
    """``warnings.formatwarning`` of the command line: freqlab's own warnings as one line, like its errors (not
    Python's file, line number and source line); other packages' warnings as Python shows them.
    """
    if Path(filename).resolve().is_relative_to(_PACKAGE):
        return f"Warning: {message}\n"
    return _python_warning_line(message, category, filename, lineno, line)


def main_entry() -> None:
    """:data:`main` as a program: click's own errors shown as click shows them, freqlab's warnings as one line
    (interrupts: see :func:`freqlab.__main__.run`).
    """
    warnings.formatwarning = _warning_line
    for stream in (sys.stdout, sys.stderr):  # a name that is not UTF-8 in a report: escaped, not an encoding error
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):  # once the file is written
            stream.reconfigure(errors="backslashreplace")
    try:
        main(standalone_mode=False)
    except click.exceptions.Abort as abort:  # an interrupt outside the command (click's own handling, start-up)
        click.echo("\ninterrupted", err=True)
        interrupt = abort.__cause__ or abort.__context__  # click raises Abort from the KeyboardInterrupt
        sys.exit(exit_status(interrupt) if isinstance(interrupt, KeyboardInterrupt) else INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except MemoryError:
        # every option that sizes an allocation is estimated before it (freqlab.resources): this one was not
        click.echo("Error: out of memory, beyond what freqlab estimated for the options given", err=True)
        sys.exit(1)
