"""Planning: from position frequencies to STRING, Self-Extend, HARPE and RoPE-scaling settings.

Every planner starts from the well-trained range N* (:mod:`freqlab.plan.well_trained`), derived from a
frequency curve, a budget and threshold, a schedule, or a documented default.
"""

from freqlab.plan.giraffe import power_basis, rope_basis, truncated_basis
from freqlab.plan.rope_scaling import (
    ROPE_TYPES,
    RopeScalingPlan,
    dynamic_ntk_base,
    ntk_aware_base,
    plan_rope_scaling,
    plan_rope_scalings,
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
    string_position_histogram,
    string_position_matrix,
    string_position_row,
    string_usage,
    validated_range,
)
from freqlab.plan.upsample import UpsamplePlan, plan_upsample
from freqlab.plan.well_trained import DEFAULT_MASS, WellTrained, well_trained_range

__all__ = [
    "DEFAULT_MASS",
    "ROPE_TYPES",
    "RopeScalingPlan",
    "SelfExtendCheck",
    "SelfExtendPlan",
    "StringPlan",
    "StringUsage",
    "UpsamplePlan",
    "WellTrained",
    "dynamic_ntk_base",
    "evaluate_self_extend",
    "ntk_aware_base",
    "plan_rope_scaling",
    "plan_rope_scalings",
    "plan_self_extend",
    "plan_string",
    "plan_upsample",
    "power_basis",
    "rope_basis",
    "self_extend_largest_position",
    "self_extend_max_length",
    "self_extend_position_matrix",
    "string_position_histogram",
    "string_position_matrix",
    "string_position_row",
    "string_usage",
    "truncated_basis",
    "validated_range",
    "well_trained_range",
    "yarn_attention_factor",
]
