"""``--weights`` and the budget line: what freq, stats, schedule, plan and plot share about the training mix.

``--weights`` turns a histogram split by source into the training mix (:mod:`freqlab.frequency.mixture`); every
command that predicts an effective length prints the budget rule it used (:mod:`freqlab.frequency.budget`).
"""

from __future__ import annotations

from collections.abc import Iterable

import click

from freqlab.errors import FreqlabError
from freqlab.frequency.budget import Budget
from freqlab.frequency.mixture import (
    PRESETS,
    Mixture,
    MixtureInfo,
    contribution_table,
    describe_table,
    weighted_histogram,
)
from freqlab.frequency.regime_table import human_count
from freqlab.histogram import LengthHistogram

WEIGHTS_HELP = (
    "Train on a weighted mix of the histogram's sources: epochs per source (SOURCE=W%,... for shares of training "
    f"tokens), a YAML/JSON mixture file, or a published mix ({', '.join(PRESETS)})."
)


def _checked(ctx: click.Context, param, value):
    """A --weights that is no mix (bad syntax, a missing or malformed file) is a usage error, found before the
    histogram is read."""
    if value is not None:
        try:
            Mixture.parse(value)
        except FreqlabError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
    return value


weights_option = click.option("--weights", default=None, metavar="SOURCE=W,...|FILE|PRESET", help=WEIGHTS_HELP,
                              callback=_checked)


def _remember(ctx: click.Context, param, value):
    ctx.meta["freqlab.weights"] = _checked(ctx, param, value)
    return value


#: ``--weights`` for commands that pass it on through :func:`current_weights` instead of a parameter
weights_meta_option = click.option(
    "--weights", default=None, metavar="SOURCE=W,...|FILE|PRESET", help=WEIGHTS_HELP, expose_value=False,
    callback=_remember,
)


def current_weights() -> str | None:
    """The ``--weights`` of the running command (given through :data:`weights_meta_option`)."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get("freqlab.weights")


def read_histogram(
    path, weights: str | None, *, regimes: str | Iterable[str] = ()
) -> tuple[LengthHistogram, MixtureInfo | None]:
    """The histogram at ``path``, weighted into the training mix when ``weights`` is given; ``regimes``: what
    will be computed from it (a float64 mix for a regime that walks documents is kept to a bounded count)."""
    from freqlab.frequency.regimes import expands_documents

    h = LengthHistogram.read_parquet(path)
    if weights is None:
        return h, None
    return weighted_histogram(h, weights, stream=expands_documents(regimes))


def record_mix(mix: LengthHistogram, info: MixtureInfo | None, L: int, regime: str, *, seed: int = 0) -> None:
    """Show the mix as the commands that print it do (:func:`echo_mix`), or with ``--json`` keep it for
    :func:`mix_json`: planners read their histogram deep inside their options and print their own JSON."""
    ctx = click.get_current_context()
    if info is None:
        return
    if ctx.params.get("as_json"):
        rows = contribution_table(mix, info, L, regime, seed=seed)
        ctx.meta["freqlab.mix"] = {"mixture": info.to_dict(), "mix_sources": rows}
    else:
        click.echo(histogram_line(ctx.params.get("hist") or "histogram", mix, info))
        echo_mix(mix, info, L, regime, seed=seed)


def mix_json() -> dict:
    """``{"mixture": ..., "mix_sources": [...]}`` kept by :func:`record_mix` for this command's JSON, or {}."""
    ctx = click.get_current_context(silent=True)
    return {} if ctx is None else ctx.meta.get("freqlab.mix", {})


def histogram_line(path, h: LengthHistogram, info: MixtureInfo | None) -> str:
    """``PATH: N documents, T tokens (corpus)``: the corpus's own counts, and with weights what one pass of the mix
    holds (integer epochs) or that the mix is a distribution (shares: its counts are scaled, not documents)."""
    corpus = h if info is None or info.corpus is None else info.corpus
    line = f"{path}: {corpus.documents:,} documents, {corpus.tokens:,} tokens ({corpus.corpus or 'unnamed corpus'})"
    if info is None:
        return line
    if info.exact:
        return line + f"; one pass of the mix: {h.documents:,} documents, {h.tokens:,} tokens"
    return line + "; the mix weights them by share (its counts are scaled, see below)"


def echo_mix(mix: LengthHistogram, info: MixtureInfo | None, L: int, regime: str, *, seed: int = 0) -> None:
    """The per-source contribution table of a weighted mix (nothing without weights)."""
    if info is None:
        return
    for line in describe_table(contribution_table(mix, info, L, regime, seed=seed), info, L):
        click.echo(line)


def budget_line(budget: Budget, tau: float) -> str:
    """``budget     T = 1T training tokens (freqlab default; --tokens sets it); tau = 100B``."""
    return f"budget     {budget.describe()}; tau = {human_count(tau)}"
