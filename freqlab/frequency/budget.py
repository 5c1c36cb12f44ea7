"""The training budget T: one rule for every command that predicts an effective length (scan, freq, plot, plan).

T is the budget the user gives (``--tokens``, ``tokens=``), else :data:`DEFAULT_TOKENS` = 1T: the scale of the runs
STRING Sec. 3 reports (effective lengths at around 300B, 400B and 1T tokens; the 2K TinyLlama reached 1.4K after
around 1T). It never depends on the size of the corpus that was scanned: a sample of a few million tokens says what
the length distribution is, not how long a model trains on it. Every output prints T and where it came from
(:meth:`Budget.describe`).

The predicted effective length is the largest i with f_T(i) >= tau. It is 0 when even f_T(1) is below tau (f_T(0) = T:
a budget below tau trains nothing): then the budget limits it, and :func:`budget_note` says so with the budget that
would reach a given position (``tokens_needed``).

>>> training_budget(None).describe()
'T = 1T training tokens (freqlab default; --tokens sets it)'
>>> training_budget(300e9).describe()
'T = 300B training tokens (--tokens)'
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from freqlab.errors import FreqlabError
from freqlab.sizes import human_count

DEFAULT_TOKENS: int = 10**12


@dataclass(frozen=True)
class Budget:
    """T in tokens; ``given`` when the user chose it, else the default; ``option``: the option that sets it."""

    tokens: int
    given: bool
    option: str = "--tokens"

    @property
    def origin(self) -> str:
        """Where the budget comes from (the option, or freqlab's default)."""
        return self.option if self.given else f"freqlab default; {self.option} sets it"

    def describe(self) -> str:
        """One line: the budget and where it comes from."""
        return f"T = {human_count(self.tokens)} training tokens ({self.origin})"

    def to_dict(self) -> dict:
        """The budget as JSON-ready data."""
        origin = f"{self.option.lstrip('-')} option" if self.given else "default"
        return {"training_tokens": self.tokens, "training_tokens_from": origin}


def training_budget(tokens: int | float | None = None, option: str = "--tokens") -> Budget:
    """The budget rule: ``tokens`` when given, else :data:`DEFAULT_TOKENS`; ``option`` names what sets it (``plot
    effective-length`` takes ``--budget``: a review found its report naming ``--tokens``, which it has not).
    """
    if tokens is None:
        return Budget(DEFAULT_TOKENS, False, option)
    if isinstance(tokens, bool) or float(tokens) <= 0:
        raise FreqlabError(f"the token budget must be positive, got {tokens}")
    exact = int(tokens) if isinstance(tokens, int | np.integer) else round(float(tokens))
    return Budget(exact, True, option)


def budget_note(
    tokens: int, tau: float, needed: int | None, position: int, longest: tuple[int, int] | None = None
) -> str:
    """Why the predicted effective length is 0, and what budget reaches ``position`` (``needed``, None: never;
    then ``longest``, (the longest position any segment reaches, the budget that trains it), says what can be
    trained).

    >>> budget_note(8_440_000, 100e9, 221_000_000_000, 1024)
    'the budget limits it (T = 8.44M tokens against tau = 100B occurrences); T >= 221B tokens trains i <= 1024'
    >>> budget_note(1_000_000, 100e9, None, 8, longest=(2, 300_000_000_000)).split("; ")[1:]
    ['no budget trains i = 8 (no segment is longer than 3 tokens)', 'T >= 300B tokens trains i <= 2']
    """
    text = f"the budget limits it (T = {human_count(tokens)} tokens against tau = {human_count(tau)} occurrences)"
    if needed is None:
        if longest is None:
            return text + f"; no budget trains i = {position} (no segment is longer)"
        reach, reach_needed = longest
        text += f"; no budget trains i = {position} (no segment is longer than {reach + 1:,} tokens)"
        return text + f"; T >= {human_count(reach_needed, up=True)} tokens trains i <= {reach}"
    return text + f"; T >= {human_count(needed, up=True)} tokens trains i <= {position}"
