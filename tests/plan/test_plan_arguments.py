"""The planners' numeric arguments, given through the Python API: a value that is not what the argument means (NaN,
a fraction of a position, zero, a well-trained range beyond L) is one FreqlabError naming it, never a Python
ValueError or ZeroDivisionError, a silently truncated number, or a config transformers cannot load."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from freqlab import FreqlabError, LengthHistogram
from freqlab.frequency import load_schedule
from freqlab.plan.rope_scaling import plan_rope_scaling
from freqlab.plan.self_extend import (
    evaluate_self_extend,
    plan_self_extend,
    self_extend_largest_position,
    self_extend_position_matrix,
)
from freqlab.plan.string import plan_string, string_usage, string_yarn
from freqlab.plan.upsample import plan_upsample

NAN = float("nan")
H = LengthHistogram.from_counts([100, 3000], [90, 10])
F = np.arange(2048, 0, -1)

CASES = [
    (lambda: plan_string(2048, W=NAN), "W must be a positive integer, got nan"),
    (lambda: plan_string(2048, W=40.7), "W must be a positive integer, got 40.7"),  # was used as 40
    (lambda: plan_string(2048, test_length=NAN), "test length must be a positive integer, got nan"),
    (lambda: plan_string(2048, extend_to=4096.9), "extend_to N must be a positive integer, got 4096.9"),
    (lambda: plan_string(2048, round_to=0), "round_to must be a positive integer, got 0"),  # said "L too small"
    (lambda: string_usage(10, 3, 1, length=5.5), "sequence length must be a positive integer, got 5.5"),
    (lambda: string_yarn(2048, 700, 128, 4096, ratio=NAN), "the shift ratio must be a positive finite number"),
    (lambda: plan_upsample(H, 2048, 1536, NAN), "the token budget must be a positive finite number, got nan"),
    (lambda: plan_upsample(H, 2048, 1536, 10**12, tau=NAN), "tau must be a positive finite number, got nan"),
    (lambda: plan_upsample(H, 2048, 1536, 10**12, tau=0), "tau must be a positive finite number, got 0"),
    (lambda: plan_upsample(H, 2048, 1536, 10**12, max_upweight=NAN), "max_upweight must be a positive finite number"),
    (lambda: evaluate_self_extend(4096, 8, 1024, 16384, well_trained=NAN), r"well_trained N\* must be a positive"),
    (lambda: evaluate_self_extend(4096, 8, 1024, 16384, well_trained=-5), r"well_trained N\* must be a positive"),
    (lambda: evaluate_self_extend(4096, 8, 1024, 16384, well_trained=10**9), r"N\* must be an integer in 1\.\.L"),
    (lambda: plan_self_extend(4096, 16384, default_fraction=NAN), "default_fraction must be a positive finite number"),
    (lambda: plan_self_extend(4096, 16384, max_group=NAN), "max_group must be an integer of at least 2, got nan"),
    (lambda: plan_self_extend(4096, 16384, min_window=1.5), "min_window must be a positive integer, got 1.5"),
    (
        lambda: self_extend_position_matrix(6, 0, 2),
        "group size G must be an integer from 1 to 1,073,741,824, got 0",
    ),  # divided by 0
    (lambda: self_extend_position_matrix(6, -1, 2), "group size G must be an integer from 1 to 1,073,741,824, got -1"),
    (lambda: self_extend_largest_position(10, 0, 4), "group size G must be an integer from 1 to 1,073,741,824, got 0"),
    # past 2^63 torch's floor division wrapped (tensor([5]) // 2**63 == -1): applied, silently wrong (apply review)
    (
        lambda: self_extend_position_matrix(6, 2**63, 2),
        f"group size G must be an integer from 1 to 1,073,741,824, got {2**63}",
    ),
    (
        lambda: plan_rope_scaling(2048, 8192, "yarn", attention_factor=NAN),
        "attention_factor must be a positive finite number",
    ),
    (
        lambda: plan_rope_scaling(2048, 8192, "yarn", attention_factor=-1),
        "attention_factor must be a positive finite number",
    ),
    (
        lambda: plan_rope_scaling(2048, 8192, "llama3", low_freq_factor=0.0),
        "low_freq_factor must be a positive finite number",
    ),
    (
        lambda: plan_rope_scaling(2048, 8192, "llama3", high_freq_factor=NAN),
        "high_freq_factor must be a positive finite",
    ),
    (
        lambda: plan_string(2048, tokens=10**400, frequency=F),
        r"the token budget must be a positive finite number, got 1000",
    ),
    (lambda: plan_string(2048, tokens=0.4, frequency=F), "the token budget must be at least 1 token, got 0.4"),
    (lambda: plan_string(2048, tokens=10**12, mass=0.8, frequency=F), "give tokens .* or mass .*, not both"),
    (lambda: plan_string(2048, mass="0.5", frequency=F), "mass must be a positive number, got '0.5'"),
    (
        lambda: plan_string(2048, tokens=Decimal("sNaN"), frequency=F),
        "the token budget must be a positive finite number",
    ),
    # what the command line refuses is refused here, not left unused
    (lambda: plan_string(2048, tokens=10**9), "tokens and mass apply to a histogram or a frequency"),
    (lambda: plan_string(2048, mass=0.5, tau=10**9, frequency=F), "tau is the budget rule's threshold"),
    (lambda: plan_string(2048, tau=10**9), "tau applies to a histogram, a frequency or a schedule"),
    (lambda: plan_self_extend(4096, 16384, well_trained=2000, tokens=10**9), "a given N\\* takes no tokens"),
]


@pytest.mark.parametrize(("call", "message"), CASES)
def test_a_value_the_argument_cannot_mean_is_named(call, message):
    with pytest.raises(FreqlabError, match=message):
        call()


def test_numbers_of_every_numeric_type_are_taken():
    """Checked values are used as the floats they were checked as: a Fraction attention_factor broke the plan's
    text, numpy floats broke max_upweight's exact cap, Decimal budgets were refused."""
    from decimal import Decimal
    from fractions import Fraction

    block = plan_rope_scaling(4096, 16384, "yarn", attention_factor=Fraction(11, 10)).config_5x
    assert block["rope_parameters"]["attention_factor"] == 1.1
    corpus = LengthHistogram.from_counts([100, 3000, 5000], [900, 10, 1])
    for cap in (np.float64(4.0), np.float32(4.0), Fraction(4), 4, 4.0):  # the cap binds: 578,784,000 (None: 484.8M)
        assert plan_upsample(corpus, 4096, 2000, 10**9, tau=3 * 10**8, max_upweight=cap).extra_tokens == 578_784_000
    assert (
        plan_string(2048, tokens=Decimal("1e12"), frequency=F).N_star
        == plan_string(2048, tokens=10**12, frequency=F).N_star
    )


def test_a_llama3_block_with_a_zero_low_freq_factor_no_longer_reaches_transformers():
    """low_freq_factor 0 made a block whose llama3 RoPE init divides by zero in transformers; numbers that are
    fine still pass, as Python or numpy numbers."""
    import numpy as np

    plan = plan_rope_scaling(2048, 8192, "llama3", low_freq_factor=np.float64(1.0), high_freq_factor=4)
    assert plan.config_5x["rope_parameters"]["low_freq_factor"] == 1.0


def test_a_schedule_with_tokens_or_mass_is_refused(tmp_path):
    (tmp_path / "s.yaml").write_text("stages:\n  - {name: a, L: 2048, tokens: 1T}\n")
    H.to_parquet(tmp_path / "h.parquet")
    schedule = str(tmp_path / "s.yaml")
    for extra in ({"tokens": 10**9}, {"mass": 0.5}):
        with pytest.raises(FreqlabError, match="a schedule sets its own budget"):
            plan_string(2048, schedule=load_schedule(schedule, histogram=str(tmp_path / "h.parquet")), **extra)
