"""The scan's progress bar: ``tqdm.auto`` (a widget in Jupyter, a bar on a terminal), quiet when piped.

Engines report ``(documents, tokens, bytes)`` increments (:data:`freqlab.scan.engines.base.Progress`). The bar counts
what says most about the time left:

- ``tokens`` up to ``max_tokens`` or ``documents`` up to ``max_docs`` when the scan is capped (it stops there);
- otherwise ``bytes`` read over the corpus's total bytes when every shard knows its size (local files: percent
  and ETA; JSON lines report bytes as they are read, other formats when a shard ends);
- otherwise documents over the corpus's document count when known, else plain counts and rates.

Documents, tokens and tokens/s are always shown beside the bar. ``enabled=None`` shows the bar in a notebook
(an IPython kernel) or when stderr is a terminal, and nothing when it is piped or redirected; False (``--quiet``,
``progress=False``) never shows it. With ipywidgets installed (``pip install 'freqlab[notebook]'``) a notebook gets
tqdm's widget; without it, one final line when the scan ends (a text bar redrawn with carriage returns would leave
every redraw in the notebook's saved output).
"""

from __future__ import annotations

import sys
import time
import warnings

from freqlab.frequency.regime_table import human_count


def in_notebook() -> bool:
    """True inside a Jupyter (IPython kernel) session, where stderr is not a terminal but a bar still shows."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def has_widgets() -> bool:
    """Whether ipywidgets can be imported (tqdm's notebook widget needs it)."""
    import importlib.util

    return importlib.util.find_spec("ipywidgets") is not None


def _tqdm_class(stream):
    """tqdm.auto's choice (the notebook widget in Jupyter when ipywidgets is there, else the text bar), without
    its warning about a missing ipywidgets: the text bar works in Jupyter too.
    """
    if stream is sys.stderr and in_notebook():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from tqdm.auto import tqdm
        return tqdm
    from tqdm.std import tqdm

    return tqdm


class ProgressBar:
    """Call it with ``(documents, tokens, bytes)`` increments; :meth:`close` at the end.

    ``unit`` is ``"B"`` (bytes, shown in KiB/MiB/GiB), ``"docs"`` or ``"tokens"``; ``total`` is in that unit (None:
    no percent). ``resumed``: (documents, tokens, bytes) of shards finished before this run, counted in the
    totals but not in the rates. A disabled bar (``enabled=False``, or ``None`` off a terminal and outside a
    notebook) counts but draws nothing. The bar is redrawn at most every ``interval`` seconds.
    """

    def __init__(
        self,
        total: int | None = None,
        unit: str = "docs",
        enabled: bool | None = None,
        stream=None,
        interval: float = 0.25,
        resumed: tuple[int, int, int] = (0, 0, 0),
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = in_notebook() or bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
        # a notebook without ipywidgets: no bar redrawn with carriage returns, one line at the end instead
        self.final_line = bool(
            enabled
            and self.stream is sys.stderr
            and in_notebook()
            and not has_widgets()
            and not getattr(self.stream, "isatty", lambda: False)()
        )
        self.unit = unit
        self.total = total
        self.interval = interval
        # what shards finished before this run (a resumed scan) counted: in the totals, not in the rates
        self.documents, self.tokens, self.bytes = resumed
        self.base_documents, self.base_tokens, self.base_bytes = resumed
        self.start = time.monotonic()
        self.drawn = 0.0
        self.bar = self._new_bar() if enabled and not self.final_line else None

    def __call__(self, documents: int, tokens: int, nbytes: int = 0) -> None:
        """Add a batch's documents, tokens and bytes, and redraw when due."""
        self.documents += documents
        self.tokens += tokens
        self.bytes += nbytes
        if self.bar is not None and time.monotonic() - self.drawn >= self.interval:
            self.draw()

    @property
    def base_done(self) -> int:
        """What resumed shards counted, in the bar's unit."""
        return {"B": self.base_bytes, "docs": self.base_documents, "tokens": self.base_tokens}[self.unit]

    @property
    def done(self) -> int:
        """Progress in the bar's unit."""
        return {"B": self.bytes, "docs": self.documents, "tokens": self.tokens}[self.unit]

    def postfix(self) -> str:
        """``1.2K docs, 8.44M tokens, 4.66M tokens/s`` (rates of this run only)."""
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = (self.tokens - self.base_tokens) / elapsed
        return f"{human_count(self.documents)} docs, {human_count(self.tokens)} tokens, {human_count(rate)} tokens/s"

    def _new_bar(self):
        return _tqdm_class(self.stream)(
            total=self.total,
            unit=self.unit,
            unit_scale=True,
            unit_divisor=1024 if self.unit == "B" else 1000,
            initial=self.done,
            file=self.stream,
            dynamic_ncols=True,
            mininterval=self.interval,
            leave=True,
            desc="scan",
        )

    def draw(self) -> None:
        """Redraw the bar."""
        done = self.done
        if self.total is not None:
            done = min(done, self.total)
        self.bar.set_postfix_str(self.postfix(), refresh=False)
        self.bar.update(done - self.bar.n)
        self.drawn = time.monotonic()

    def close(self) -> None:
        """Draw the final state and end the bar (or write the one final line)."""
        if self.enabled and self.final_line:
            from tqdm.std import tqdm

            done = self.done if self.total is None else min(self.done, self.total)
            line = tqdm.format_meter(
                done,
                self.total,
                time.monotonic() - self.start,
                prefix="scan",
                unit=self.unit,
                unit_scale=True,
                unit_divisor=1024 if self.unit == "B" else 1000,
                postfix=self.postfix(),
                initial=self.base_done,
            )
            self.stream.write(line.replace("\r", "") + "\n")
            self.stream.flush()
            self.enabled = False
        elif self.enabled:
            self.draw()
            self.bar.refresh()
            self.bar.close()
            self.enabled = False


def scan_progress(corpus, settings, enabled: bool | None, resumed: tuple[int, int, int] = (0, 0, 0)) -> ProgressBar:
    """The bar of a scan of ``corpus`` under ``settings`` (limits, sampling): see the module docstring."""
    expected = corpus.total_documents
    if expected is not None:
        expected = round(expected * (settings.sample_rate or 1.0))
    total_bytes = corpus.total_bytes
    if settings.max_tokens is not None:
        total, unit = settings.max_tokens, "tokens"
    elif settings.max_docs is not None:
        total, unit = min(settings.max_docs, expected or settings.max_docs), "docs"
    elif total_bytes:
        total, unit = total_bytes, "B"
    else:
        total, unit = expected, "docs"
    return ProgressBar(total, unit, enabled, resumed=resumed)
