"""freqlab: how often a language model sees each relative position during training.

>>> import freqlab
>>> freqlab.position_frequency([2048], [1], 2048)[:3].tolist()
[2048, 2047, 2046]
>>> h = freqlab.LengthHistogram.from_lengths([2048] * 10, corpus="rows")
>>> pf = h.frequency(2048)          # in a notebook: a table of its key numbers and a plot of f(i)
>>> pf.segments, pf[1024], round(pf.share_at_most(1024), 3)
(10, 10240, 0.75)

The names below are loaded on first use (``import freqlab`` itself is instant, so the command line starts fast).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "FreqlabError": "freqlab.errors",
    "LengthHistogram": "freqlab.histogram",
    "DEFAULT_TAU": "freqlab.frequency",
    "REGIMES": "freqlab.frequency",
    "effective_length": "freqlab.frequency",
    "position_at_mass": "freqlab.frequency",
    "position_frequency": "freqlab.frequency",
    "scale_to_budget": "freqlab.frequency",
    "segments": "freqlab.frequency",
    "share_at_least": "freqlab.frequency",
    "share_at_most": "freqlab.frequency",
    "tokens_needed": "freqlab.frequency",
    "Mixture": "freqlab.frequency.mixture",
    "weighted_histogram": "freqlab.frequency.mixture",
}

# what the notebooks use: results, summaries, planners (issue 16)
_EXPORTS.update(
    {
        "PositionFrequency": "freqlab.frequency",
        "ScanResult": "freqlab.scan",
        "describe": "freqlab.frequency.regime_table",
        "frequency_key_numbers": "freqlab.frequency.regime_table",
        "human_count": "freqlab.frequency.regime_table",
        "regime_rows": "freqlab.frequency.regime_table",
        "compare_sets": "freqlab.plan",
        "evaluate_self_extend": "freqlab.plan",
        "peak_valley_search": "freqlab.plan",
        "plan_rope_scaling": "freqlab.plan",
        "plan_self_extend": "freqlab.plan",
        "plan_string": "freqlab.plan",
        "plan_upsample": "freqlab.plan",
        "uniform_plan": "freqlab.plan",
        "well_trained_range": "freqlab.plan",
        "parse_positions": "freqlab.sizes",
        "parse_tokens": "freqlab.sizes",
        "position_label": "freqlab.sizes",
    }
)
if TYPE_CHECKING:  # what the lazy table below resolves to, visible to type checkers and IDEs (never run)
    from freqlab import apply, corpus, frequency, plan, plots, scan, tokenization
    from freqlab.errors import FreqlabError
    from freqlab.frequency import (
        DEFAULT_TAU,
        REGIMES,
        PositionFrequency,
        effective_length,
        position_at_mass,
        position_frequency,
        scale_to_budget,
        segments,
        share_at_least,
        share_at_most,
        tokens_needed,
    )
    from freqlab.frequency.mixture import Mixture, weighted_histogram
    from freqlab.frequency.regime_table import describe, frequency_key_numbers, human_count, regime_rows
    from freqlab.histogram import LengthHistogram
    from freqlab.plan import (
        compare_sets,
        evaluate_self_extend,
        peak_valley_search,
        plan_rope_scaling,
        plan_self_extend,
        plan_string,
        plan_upsample,
        uniform_plan,
        well_trained_range,
    )
    from freqlab.scan import ScanResult
    from freqlab.sizes import parse_positions, parse_tokens, position_label

# subpackages reachable as attributes after a plain `import freqlab` (freqlab.plots.plot_regimes(...))
_SUBPACKAGES = ("apply", "corpus", "frequency", "plan", "plots", "scan", "tokenization")

# old name -> (what it is now, as a dotted path): kept for one release, each look-up warns (freqlab.deprecation)
_RENAMED = {
    "tokenize": "freqlab.tokenization",
    "frequency_summary": "freqlab.frequency_key_numbers",
    "regime_summaries": "freqlab.regime_rows",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"freqlab.{name}")
    module = _EXPORTS.get(name)
    if name in _RENAMED:
        from freqlab.deprecation import renamed_attributes

        return renamed_attributes("freqlab", _RENAMED)(name)
    if module is None:
        raise AttributeError(f"module 'freqlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # next time: a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_SUBPACKAGES})
