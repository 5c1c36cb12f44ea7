"""Command line: a thin layer over the Python API.

Each command lives in its own module (``freq``, ``scan``, ``plan``, ``plot``) and is registered here.
User-facing errors (:class:`freqlab.errors.FreqlabError`) become one line on stderr and exit status 1;
usage errors exit with status 2, as click does.
"""

from __future__ import annotations

import sys

import click

from freqlab.errors import FreqlabError


class _Group(click.Group):
    """Turns FreqlabError (and plain I/O errors) into one line instead of a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except FreqlabError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(1)
        except OSError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(1)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="freqlab")
def main() -> None:
    """freqlab: position frequencies of training data, and long-context settings planned from them.

    \b
    Examples:
      freqlab scan                       # built-in corpus, default tokenizer, L=2048
      freqlab freq lengths.parquet --L 2048 --regime natural --regime concat
      freqlab plan string --L 2048
    """


def _register() -> None:
    # Each command module adds its commands to `main`; a module that is not there yet is skipped.
    import importlib

    for name in ("freq", "scan", "plan", "plot"):
        try:
            module = importlib.import_module(f"freqlab.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"freqlab.cli.{name}":
                raise
            continue
        module.register(main)


_register()
