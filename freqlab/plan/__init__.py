"""Planning: from position frequencies to STRING, Self-Extend, HARPE and RoPE-scaling settings.

Every planner starts from the well-trained range N* (:mod:`freqlab.plan.well_trained`), derived from a
frequency curve, a budget and threshold, a schedule, or a documented default.
"""

from freqlab.deprecation import renamed_attributes
from freqlab.plan.harpe import (
    HarpePlan,
    attention_buckets_search,
    candidate_bases,
    compare_sets,
    grid_from_frequency,
    harpe_table2,
    peak_valley_search,
    uniform_bases,
    uniform_plan,
)
from freqlab.plan.rope_bases import power_basis, rope_basis, truncated_basis
from freqlab.plan.rope_scaling import (
    ROPE_TYPES,
    RopeScalingPlan,
    compare_rope_scalings,
    dynamic_ntk_base,
    ntk_aware_base,
    plan_rope_scaling,
    yarn_attention_factor,
)
from freqlab.plan.self_extend import (
    SelfExtendCheck,
    SelfExtendPlan,
    evaluate_self_extend,
    plan_self_extend,
    self_extend_largest_position,
    self_extend_max_length,
    self_extend_position_matrix,
)
from freqlab.plan.string import (
    StringPlan,
    StringUsage,
    plan_string,
    recommended_range,
    string_position_histogram,
    string_position_matrix,
    string_position_row,
    string_usage,
    validated_range,
)
from freqlab.plan.upsample import UpsamplePlan, plan_upsample, plan_upsample_schedule
from freqlab.plan.waveform import DistanceGrid, rope_waveform, stave_score
from freqlab.plan.well_trained import DEFAULT_MASS, WellTrained, well_trained_range

__all__ = [
    "DEFAULT_MASS",
    "ROPE_TYPES",
    "DistanceGrid",
    "HarpePlan",
    "RopeScalingPlan",
    "SelfExtendCheck",
    "SelfExtendPlan",
    "StringPlan",
    "StringUsage",
    "UpsamplePlan",
    "WellTrained",
    "attention_buckets_search",
    "candidate_bases",
    "compare_rope_scalings",
    "compare_sets",
    "dynamic_ntk_base",
    "evaluate_self_extend",
    "grid_from_frequency",
    "harpe_table2",
    "ntk_aware_base",
    "peak_valley_search",
    "plan_rope_scaling",
    "plan_self_extend",
    "plan_string",
    "plan_upsample",
    "plan_upsample_schedule",
    "power_basis",
    "recommended_range",
    "rope_basis",
    "rope_waveform",
    "self_extend_largest_position",
    "self_extend_max_length",
    "self_extend_position_matrix",
    "stave_score",
    "string_position_histogram",
    "string_position_matrix",
    "string_position_row",
    "string_usage",
    "truncated_basis",
    "uniform_bases",
    "uniform_plan",
    "validated_range",
    "well_trained_range",
    "yarn_attention_factor",
]

# old names kept for one release: each look-up warns and gives the new object
__getattr__ = renamed_attributes(
    "freqlab.plan",
    {"plan_rope_scalings": "freqlab.plan.compare_rope_scalings"},
    submodules={"giraffe": "freqlab.plan.rope_bases"},
)
