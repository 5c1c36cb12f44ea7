"""Every plan shows itself: a repr of one to three lines with the recommended values (under 1 KB), and HTML whose
table and code blocks hold the numbers and paste-ready settings (parsed with html.parser)."""

from __future__ import annotations

import json

from display_helpers import shown

from freqlab import LengthHistogram
from freqlab.plan import (
    evaluate_self_extend,
    peak_valley_search,
    plan_rope_scaling,
    plan_self_extend,
    plan_string,
    plan_upsample,
    string_usage,
    well_trained_range,
)

ROWS = LengthHistogram.from_counts([2048], [1000])  # f(i) = 1000 (2048 - i)


def test_string_plan():
    p = plan_string(131072)  # Sec. 4.1 default: S = L/3 rounded up to 64, W = 128
    page = shown(p)
    assert repr(p).startswith("StringPlan L = 131072: S = 43712 (S/L = 0.333), W = 128")
    assert page.rows["shift S"] == "43712 (S/L = 0.333)" and page.rows["local window W"] == "128"
    assert p.hf_patch in page.code and p.vllm_block in page.code


def test_string_plan_with_a_frequency_draws_it():
    p = plan_string(2048, histogram=ROWS, tokens=4 * 10**11)  # N* = 1537 -> S = 512 < L/3: S = 704
    page = shown(p)
    assert page.rows["well-trained range N*"] == "1537 (rule: budget)" and page.rows["shift S"].startswith("704 ")
    assert page.rows["S from the frequency rule alone"] == "512" and page.svgs == 1


def test_self_extend_plan_and_check():
    p = plan_self_extend(4096, 16384)
    page = shown(p)
    assert repr(p).startswith(f"SelfExtendPlan L = 4096 → N = 16384: G = {p.G}, w_n = {p.w_n}")
    assert page.rows["group size G, neighbour window w_n"] == f"{p.G}, {p.w_n}" and p.hf_call in page.code
    assert "max length 25,600" in page.rows["paper's G = 8, w_n = 1024 (Table 1)"]  # Eq. 8 for the paper's setting
    check = shown(evaluate_self_extend(4096, 8, 1024, 16384, well_trained=2730))
    assert check.rows["max length (L − w_n + w_n // G)·G"] == "25,600 (Eq. 8: 25,600)"
    assert check.rows["w_n + (N − w_n)/G"] == "2944 > N* = 2730"


def test_rope_plan_shows_both_config_blocks():
    p = plan_rope_scaling(4096, 16384, "yarn")
    page = shown(p)
    assert page.rows["factor"] == "4"
    assert json.loads(page.code[0]) == p.config_4x and json.loads(page.code[1]) == p.config_5x


def test_upsample_plan():
    h = LengthHistogram.from_counts([100, 1000], [90, 1])
    p = plan_upsample(h, 1024, 512, tokens=10_000, tau=1_000)  # the docstring's example: X = 2000
    page = shown(p)
    assert page.rows["extra tokens X"] == "2,000" and repr(p).startswith("UpsamplePlan E = 512")


def test_harpe_plan_and_well_trained_and_usage():
    p = peak_valley_search(4, 10_000, 40_000, 5_000, target=4096)
    page = shown(p)
    assert page.rows["heads, head dimension d"] == "4, 128" and page.code[0].startswith("[10000, ")
    assert page.rows["shortest stave min_m max_h w"] == f"{p.score.shortest:.3f}" and page.svgs == 1
    wt = shown(well_trained_range(2048, histogram=ROWS, tokens=4 * 10**11))
    assert wt.rows["well-trained range N*"] == "1537 (rule: budget)"
    usage = shown(string_usage(9, 3, 0))  # Fig. 5: positions 0..5 used after the shift
    assert usage.rows["positions used before / after"] == "9 / 6" and usage.rows["query-key pairs"] == "45"
