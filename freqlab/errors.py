"""The one exception type users see: bad input or bad parameters, with a message naming the culprit."""

from __future__ import annotations


class FreqlabError(ValueError):
    """A user-facing error. The CLI prints its message on one line and exits with status 1.

    Messages name the file, line or value at fault, e.g. ``lengths.parquet: not a freqlab histogram``.
    """
