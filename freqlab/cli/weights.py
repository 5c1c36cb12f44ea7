"""``--weights`` and the budget line: what freq, stats, schedule, plan and plot share about the training mix.

``--weights`` turns a histogram split by source into the training mix (:mod:`freqlab.frequency.mixture`); every
command that predicts an effective length prints the budget rule it used (:mod:`freqlab.frequency.budget`).
"""

from __future__ import annotations

from collections.abc import Iterable

import click

from freqlab.cli.options import WEIGHTS_HELP, weights_option  # noqa: F401  (importable from here as before)
from freqlab.display import counted
from freqlab.errors import FreqlabError, ParameterError
from freqlab.frequency.budget import Budget
from freqlab.frequency.mixture import (
    MixtureInfo,
    contribution_table,
    describe_table,
    weighted_histogram,
)
from freqlab.frequency.regime_table import human_count
from freqlab.histogram import LengthHistogram
from freqlab.paths import printable


def read_histogram(
    path, weights: str | None, *, regimes: str | Iterable[str] = (), option: str | None = None
) -> tuple[LengthHistogram, MixtureInfo | None]:
    """The histogram at ``path``, weighted into the training mix when ``weights`` is given; ``regimes``: what
    will be computed from it (a float64 mix for a regime that walks documents is kept to a bounded count). A
    histogram of no documents, or of 2^63 tokens or more, is an error naming the file (stats printed a median of 0,
    plan an error naming none); given by ``option`` (plan's ``--hist``), a usage error naming it, as a folder is.
    """
    from freqlab.frequency.regimes import expands_documents

    try:
        h = LengthHistogram.read_parquet(path)
        if h.documents == 0:
            raise FreqlabError(f"{path}: the histogram holds no documents (every one read was empty or skipped)")
        try:  # every command that reads it computes f, in int64: past 2^63 tokens, an error naming the file (a review)
            h.int64_tokens()
        except FreqlabError as exc:
            raise FreqlabError(f"{path}: {exc}") from None
    except FreqlabError as exc:  # a review: plan's missing --hist was exit 1 naming no option, a folder exit 2
        if option is None:
            raise
        raise ParameterError(str(exc), option) from None
    if weights is None:
        return h, None
    return weighted_histogram(h, weights, stream=expands_documents(regimes))


def mix_json(mix: LengthHistogram, info: MixtureInfo | None, L: int, regime: str, *, seed: int = 0) -> dict:
    """``{"mixture": ..., "mix_sources": [...]}`` of a weighted mix for a command's JSON ({} without weights)."""
    if info is None:
        return {}
    return {"mixture": info.to_dict(), "mix_sources": contribution_table(mix, info, L, regime, seed=seed)}


def histogram_line(path, h: LengthHistogram, info: MixtureInfo | None) -> str:
    """``PATH: N documents, T tokens (corpus)``: the corpus's own counts, and with weights what one pass of the mix
    holds (integer epochs) or that the mix is a distribution (shares: its counts are scaled, not documents).
    """
    corpus = h if info is None or info.corpus is None else info.corpus
    counts = counted(corpus.documents, "document")
    if corpus.documents_read > corpus.documents:  # a new user's review: the scan said 7 read, freq 5 documents
        counts += f" (of {corpus.documents_read:,} read: {not_counted(corpus)})"
    counts += f", {counted(corpus.tokens, 'token')}"
    line = printable(f"{path}: {counts} ({corpus.corpus or 'unnamed corpus'})")
    if info is None:
        return line
    if info.exact:
        return line + f"; one pass of the mix: {counted(h.documents, 'document')}, {counted(h.tokens, 'token')}"
    unit = "shares" if info.mixture.unit == "share" else "epochs that are not whole"
    return line + f"; the mix weights them by {unit} (its counts are scaled, see below)"


def not_counted(h: LengthHistogram) -> str:
    """What of the documents read is not in the counts: ``1 empty, 1 skipped``."""
    skipped = sum(h.skipped.values())
    parts = [f"{n:,} {what}" for n, what in ((h.empty_documents, "empty"), (skipped, "skipped")) if n]
    rest = h.documents_read - h.documents - h.empty_documents - skipped
    return ", ".join(parts + ([f"{rest:,} not counted"] if rest > 0 else []))


def echo_mix(mix: LengthHistogram, info: MixtureInfo | None, L: int, regime: str, *, seed: int = 0) -> None:
    """The per-source contribution table of a weighted mix (nothing without weights)."""
    if info is None:
        return
    for line in describe_table(contribution_table(mix, info, L, regime, seed=seed), info, L):
        click.echo(line)


def budget_line(budget: Budget, tau: float) -> str:
    """``budget     T = 1T training tokens (freqlab default; --tokens sets it); tau = 100B``."""
    return f"budget     {budget.describe()}; tau = {human_count(tau)}"
