"""``freqlab scan``: stream a corpus through a tokenizer into an exact length histogram, fast and resumable.

Layout (datatrove style: the per-shard work is separate from where it runs):

- :mod:`~freqlab.scan.settings`: :class:`ScanSettings` (what defines a result; its fingerprint is what
  checkpoints carry), :class:`RunOptions`, :class:`ReportOptions`;
- :mod:`~freqlab.scan.work`: :func:`count_shard`, the per-shard work (read, batch, tokenize, count);
- :mod:`~freqlab.scan.counts`: :class:`ShardCount`, exact mergeable partial counts;
- :mod:`~freqlab.scan.engines`: in-process, local process pool, Ray;
- :mod:`~freqlab.scan.ledger`: merging partials, cutting exactly at limits;
- :mod:`~freqlab.scan.checkpoint`, :mod:`~freqlab.scan.output`: checkpoints, lock and results in ``out``;
- :mod:`~freqlab.scan.summary`: position-mass shares and effective lengths, the terminal report;
- :mod:`~freqlab.scan.driver`: :func:`scan`, tying it together.

Input formats are not the scan's business: they come from :mod:`freqlab.corpus.registry`.
"""

from freqlab.scan.counts import LengthCounts, ShardCount
from freqlab.scan.driver import ScanResult, run_scan, scan
from freqlab.scan.settings import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_L,
    DEFAULT_OUT,
    DEFAULT_REGIMES,
    ReportOptions,
    RunOptions,
    ScanSettings,
)
from freqlab.scan.summary import format_report, summarize_windows
from freqlab.scan.work import ShardOptions, count_shard

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_L",
    "DEFAULT_OUT",
    "DEFAULT_REGIMES",
    "LengthCounts",
    "ReportOptions",
    "RunOptions",
    "ScanResult",
    "ScanSettings",
    "ShardCount",
    "ShardOptions",
    "count_shard",
    "format_report",
    "run_scan",
    "scan",
    "summarize_windows",
]
