"""freqlab: how often a language model sees each relative position during training.

>>> import freqlab
>>> freqlab.position_frequency([2048], [1], 2048)[:3].tolist()
[2048, 2047, 2046]

The names below are loaded on first use (``import freqlab`` itself is instant, so the command line starts fast).
"""

from __future__ import annotations

import importlib

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

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'freqlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # next time: a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
