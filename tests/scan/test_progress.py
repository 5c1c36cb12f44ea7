"""The progress bar: documents/s, tokens/s, percent and ETA when the total is known; silent when disabled."""

from __future__ import annotations

import io

from freqlab.scan.progress import ProgressBar


def test_the_bar_shows_rates_percent_and_eta_and_ends_its_line():
    stream = io.StringIO()
    bar = ProgressBar(total_documents=200, enabled=True, stream=stream, interval=0)
    bar(50, 12_345)
    bar.close()
    text = stream.getvalue()
    assert text.startswith("\r 25.0% 50 docs, 12.3K tokens | ") and text.endswith("\n")
    assert "docs/s" in text and "tokens/s" in text and "ETA 0:" in text


def test_a_disabled_bar_writes_nothing_and_a_non_terminal_disables_it():
    stream = io.StringIO()  # not a TTY
    bar = ProgressBar(total_documents=None, stream=stream)
    bar(10, 100)
    bar.close()
    assert not bar.enabled and stream.getvalue() == "" and (bar.documents, bar.tokens) == (10, 100)
