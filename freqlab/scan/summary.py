"""Deprecated: ``freqlab.scan.summary`` is renamed :mod:`freqlab.scan.summary_json`, its ``summarize_windows``
:func:`~freqlab.scan.summary_json.budget_and_windows` and its ``scan_summary``
:func:`~freqlab.scan.summary_json.build_summary_json`.

Importing it warns once; its names are the new module's objects.
"""

from freqlab.deprecation import warn_renamed

__freqlab_shim__ = True
warn_renamed(
    "freqlab.scan.summary",
    "freqlab.scan.summary_json (summarize_windows: budget_and_windows, scan_summary: build_summary_json)",
)

from freqlab.scan.summary_json import *  # noqa: E402, F403
from freqlab.scan.summary_json import budget_and_windows as summarize_windows  # noqa: E402, F401
from freqlab.scan.summary_json import build_summary_json as scan_summary  # noqa: E402, F401
