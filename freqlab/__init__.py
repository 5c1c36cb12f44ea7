"""freqlab: how often a language model sees each relative position during training.

>>> import freqlab
>>> freqlab.position_frequency([2048], [1], 2048)[:3].tolist()
[2048, 2047, 2046]
"""

from freqlab.errors import FreqlabError
from freqlab.frequency import (
    DEFAULT_TAU,
    REGIMES,
    effective_length,
    position_at_mass,
    position_frequency,
    scale_to_budget,
    segments,
    share_at_least,
    share_at_most,
    tokens_needed,
)
from freqlab.histogram import LengthHistogram

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_TAU",
    "REGIMES",
    "FreqlabError",
    "LengthHistogram",
    "effective_length",
    "position_at_mass",
    "position_frequency",
    "scale_to_budget",
    "segments",
    "share_at_least",
    "share_at_most",
    "tokens_needed",
]
