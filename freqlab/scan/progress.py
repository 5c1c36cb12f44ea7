"""A one-line progress bar on stderr: documents/s, tokens/s and, when the total is known, percent and ETA."""

from __future__ import annotations

import sys
import time

from freqlab.frequency.summary import human_count


def _clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class ProgressBar:
    """Call it with (documents, tokens) increments; it redraws at most every ``interval`` seconds.

    Disabled (a no-op) when ``enabled`` is False; ``enabled=None`` means "when stderr is a terminal".
    """

    def __init__(self, total_documents: int | None = None, enabled: bool | None = None, stream=None,
                 interval: float = 0.25) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
        self.total = total_documents
        self.interval = interval
        self.documents = 0
        self.tokens = 0
        self.base_documents = 0  # counted before this run (resumed): not part of the rates
        self.base_tokens = 0
        self.start = time.monotonic()
        self.drawn = 0.0
        self.width = 0

    def __call__(self, documents: int, tokens: int) -> None:
        self.documents += documents
        self.tokens += tokens
        if self.enabled and time.monotonic() - self.drawn >= self.interval:
            self.draw()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        docs_rate = (self.documents - self.base_documents) / elapsed
        token_rate = (self.tokens - self.base_tokens) / elapsed
        text = (
            f"{human_count(self.documents)} docs, {human_count(self.tokens)} tokens | "
            f"{human_count(docs_rate)} docs/s, {human_count(token_rate)} tokens/s | {_clock(elapsed)}"
        )
        if self.total:
            share = min(self.documents / self.total, 1.0)
            eta = (self.total - self.documents) / docs_rate if docs_rate > 0 else 0.0
            text = f"{share:6.1%} " + text + f" ETA {_clock(eta)}"
        return text

    def draw(self) -> None:
        text = self.line()
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)
        self.drawn = time.monotonic()

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self.enabled:
            self.draw()
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False
