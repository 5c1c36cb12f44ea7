"""Frequency math: data regimes, exact position frequency f(i), statistics and schedules."""

from freqlab.deprecation import renamed_attributes
from freqlab.frequency.exposure import exposure_histogram, source_tails
from freqlab.frequency.layouts import layout_frequency, layout_from_config, parse_layout
from freqlab.frequency.position import position_frequency, segment_frequency
from freqlab.frequency.regimes import REGIMES, Segments, pack_documents, pack_sample, segments, stream_order
from freqlab.frequency.result import PositionFrequency
from freqlab.frequency.schedule import Schedule, Stage, load_preset, load_schedule, parse_tokens, schedule_frequency
from freqlab.frequency.stats import (
    DEFAULT_TAU,
    effective_length,
    position_at_mass,
    scale_to_budget,
    share_at_least,
    share_at_most,
    tokens_needed,
)

__all__ = [
    "DEFAULT_TAU",
    "REGIMES",
    "PositionFrequency",
    "Schedule",
    "Segments",
    "Stage",
    "effective_length",
    "exposure_histogram",
    "layout_frequency",
    "layout_from_config",
    "load_preset",
    "load_schedule",
    "pack_documents",
    "pack_sample",
    "parse_layout",
    "parse_tokens",
    "position_at_mass",
    "position_frequency",
    "scale_to_budget",
    "schedule_frequency",
    "segment_frequency",
    "segments",
    "share_at_least",
    "share_at_most",
    "source_tails",
    "stream_order",
    "tokens_needed",
]

# old submodule names (0.1), kept for one release: each look-up warns and gives the module (freqlab.deprecation)
__getattr__ = renamed_attributes(
    "freqlab.frequency",
    {},
    submodules={
        "megatron": "freqlab.frequency.megatron_replay",
        "summary": "freqlab.frequency.regime_table",
    },
)
