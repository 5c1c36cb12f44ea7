"""``freqlab scan``: stream a corpus through a tokenizer into an exact length histogram, fast and resumable.

Layout (datatrove style: the per-shard work is separate from where it runs):

- :mod:`~freqlab.scan.settings`: :class:`ScanSettings` (what defines a result; its fingerprint is what
  checkpoints carry), :class:`RunOptions`, :class:`ReportOptions`;
- :mod:`~freqlab.scan.work`: :func:`count_shard`, the per-shard work (read, batch, tokenize, count);
- :mod:`~freqlab.scan.counts`: :class:`ShardCount`, exact mergeable partial counts;
- :mod:`~freqlab.scan.engines`: in-process, local process pool, Ray;
- :mod:`~freqlab.scan.ledger`: merging partials, cutting exactly at limits;
- :mod:`~freqlab.scan.checkpoint`, :mod:`~freqlab.scan.output`: checkpoints, lock and results in ``out``;
- :mod:`~freqlab.scan.summary_json`: ``summary.json`` (position-mass shares and effective lengths), the terminal
  report;
- :mod:`~freqlab.scan.driver`: :func:`scan`, tying it together.

Input formats are not the scan's business: they come from :mod:`freqlab.corpus.registry`.
"""

from freqlab.deprecation import renamed_attributes
from freqlab.scan.counts import LengthCounts, ShardCount
from freqlab.scan.driver import ScanResult, scan, scan_from_settings
from freqlab.scan.settings import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_L,
    DEFAULT_OUT,
    DEFAULT_REGIMES,
    ReportOptions,
    RunOptions,
    ScanSettings,
)
from freqlab.scan.summary_json import budget_and_windows, format_report
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
    "budget_and_windows",
    "count_shard",
    "format_report",
    "scan",
    "scan_from_settings",
]

# old names kept for one release: each look-up warns and gives the new object
__getattr__ = renamed_attributes(
    "freqlab.scan",
    {
        "run_scan": "freqlab.scan.scan_from_settings",
        "summarize_windows": "freqlab.scan.budget_and_windows",
    },
    submodules={"summary": "freqlab.scan.summary_json"},
)
