"""``freqlab scan``: stream a corpus through a tokenizer into an exact length histogram, fast and resumable.

Layout (datatrove style: the per-shard work is separate from where it runs):

- :mod:`~freqlab.scan.work`: :func:`count_shard`, the per-shard work (read, batch, tokenize, count);
- :mod:`~freqlab.scan.counts`: :class:`ShardCount`, exact mergeable partial counts;
- :mod:`~freqlab.scan.engines`: in-process, local process pool, Ray;
- :mod:`~freqlab.scan.checkpoint`: per-shard checkpoints for ``resume``;
- :mod:`~freqlab.scan.summary`: position-mass shares and effective lengths, the terminal report;
- :mod:`~freqlab.scan.driver`: :func:`scan`, tying it together.
"""

from freqlab.scan.counts import LengthCounts, ShardCount
from freqlab.scan.driver import DEFAULT_OUT, ScanResult, scan
from freqlab.scan.summary import (
    DEFAULT_L,
    DEFAULT_REGIMES,
    format_report,
    summarize_windows,
)
from freqlab.scan.work import DEFAULT_BATCH_SIZE, ShardOptions, count_shard

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_L",
    "DEFAULT_OUT",
    "DEFAULT_REGIMES",
    "LengthCounts",
    "ScanResult",
    "ShardCount",
    "ShardOptions",
    "count_shard",
    "format_report",
    "scan",
    "summarize_windows",
]
