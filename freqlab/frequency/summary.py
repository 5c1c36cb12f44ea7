"""Deprecated: ``freqlab.frequency.summary`` is renamed :mod:`freqlab.frequency.regime_table`, its
``frequency_summary`` :func:`~freqlab.frequency.regime_table.frequency_key_numbers` and its ``regime_summaries``
:func:`~freqlab.frequency.regime_table.regime_rows`.

Importing it warns once; its names are the new module's objects.
"""

from freqlab.deprecation import warn_renamed

__freqlab_shim__ = True
warn_renamed(
    "freqlab.frequency.summary",
    "freqlab.frequency.regime_table (frequency_summary: frequency_key_numbers, regime_summaries: regime_rows)",
)

from freqlab.frequency.regime_table import *  # noqa: E402, F403
from freqlab.frequency.regime_table import frequency_key_numbers as frequency_summary  # noqa: E402, F401
from freqlab.frequency.regime_table import regime_rows as regime_summaries  # noqa: E402, F401
