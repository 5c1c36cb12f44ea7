"""Every plan shows itself: a repr of one to three lines with the recommended values (under 1 KB), and HTML whose
table and code blocks hold the numbers and paste-ready settings (parsed with html.parser)."""

from __future__ import annotations

import json

import numpy as np
from display_helpers import shown

from freqlab import LengthHistogram
from freqlab.frequency import effective_length, position_frequency
from freqlab.histogram import combine_sources
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
    p = plan_string(2048, histogram=ROWS, tokens=4 * 10**11)  # N* = 1537 -> S = L - N* + W = 640 < L/3: S = 704
    page = shown(p)
    assert page.rows["well-trained range N*"] == "1537 (rule: budget)" and page.rows["shift S"].startswith("704 ")
    assert page.rows["S from the frequency rule alone"] == "640" and page.svgs == 1
    assert page.rows["largest position used, max(S, L − S + W) − 1"] == "1471 (within N* − 1 = 1536)"
    assert page.rows["mass at overwritten positions ≥ L − S = 1344"] == f"{100 * p.overwritten_share:.2f}%"
    assert page.rows["mass at never-used positions ≥ max(S, L − S + W) = 1472"] == f"{100 * p.unused_share:.2f}%"


def test_self_extend_plan_and_check():
    p = plan_self_extend(4096, 16384)
    page = shown(p)
    assert repr(p).startswith(f"SelfExtendPlan L = 4096 → N = 16384: G = {p.G}, w_n = {p.w_n}")
    assert page.rows["group size G, neighbour window w_n"] == f"{p.G}, {p.w_n}" and p.hf_call in page.code
    assert "max length 25,600" in page.rows["paper's G = 8, w_n = 1024 (Table 1)"]  # Eq. 8 for the paper's setting
    guess = "N* = 2048: G = 11, w_n = 605; N* = 2730: G = 8, w_n = 776"
    assert page.rows["maintainers' guess N* = 1/2..2/3 L"] == guess
    assert "llama-completion -m MODEL.gguf -c 16384 --grp-attn-n 8 --grp-attn-w 776" in page.code
    check = shown(evaluate_self_extend(4096, 8, 1024, 16384, well_trained=2730))
    assert check.rows["max length (L − w_n + w_n // G)·G"] == "25,600 (Eq. 8: 25,600)"
    assert check.rows["w_n + (N − w_n)/G"] == "2944 > N* = 2730"


def test_rope_plan_shows_both_config_blocks():
    p = plan_rope_scaling(4096, 16384, "yarn")
    page = shown(p)
    assert page.rows["factor"] == "4"
    assert [json.loads(code) for code in page.code[:-1]] == [b.config for b in p.blocks]
    assert page.code[-1] == p.vllm_command and "--max-model-len 16384" in p.vllm_command


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


def test_upsample_plan_numbers_are_the_closed_form():
    # natural, L = 1024, E = 512: a 100-token document holds E 0 times, a 1000-token one 1000 - 512 = 488 times, so
    # f_T(512) = 488 at T = 10,000; tau = 1000 needs ceil((1000 - 488) / 488) = 2 more 1000-token documents (X = 2000);
    # training longer needs ceil(1000 / (488 / 10,000)) = 20,492 tokens, the bound tau L / (L - E) = 2000
    h = LengthHistogram.from_counts([100, 1000], [90, 1])
    page = shown(plan_upsample(h, 1024, 512, tokens=10_000, tau=1_000))
    assert page.rows["f_T(E) now"] == "488" and page.rows["ceiling (L − E)/L per token"] == "0.5"
    assert page.rows["no mix reaches tau below"] == "2,000 tokens"
    assert page.rows["extra tokens X"] == "2,000" and page.rows["documents added"].startswith("2 documents of 1,000..")
    assert page.rows["a = f(E)/f(0), b per added token"] == f"{488 / 10_000:.4g}, {488 / 1000:.4g}"
    options = {row[0]: row[1:] for row in page.tables[-1][1:]}
    assert options["more tokens of the same mix (natural)"] == ["20,492", "+10,492", "+104.9%"]
    assert options["add the documents of this plan"] == ["12,000", "+2,000", "+20.0%"]
    assert page.rows["verdict"].startswith("Upsampling helps: the addition trains E 10.00x as often per token")


def test_self_extend_rows_are_eq8():
    p = plan_self_extend(4096, 16384)
    page = shown(p)
    max_length = (4096 - p.w_n + p.w_n // p.G) * p.G  # Eq. 8 with integer groups
    assert page.rows["max length (L − w_n + w_n // G)·G"].startswith(f"{max_length:,} ")
    assert f"max length {max_length:,}" in repr(p)


def test_harpe_stave_is_the_attention_buckets_waveform():
    # w_b(m) = (2/√d) Σ_j cos(m b^(-2j/d)) (Attention Buckets), written out here with numpy
    p = peak_valley_search(4, 10_000, 40_000, 5_000, target=4096)
    m = p.grid.distances[:, None, None].astype(np.float64)
    j = np.arange(p.head_dim // 2)
    w = 2 / np.sqrt(p.head_dim) * np.cos(m * np.asarray(p.bases)[None, :, None] ** (-2 * j / p.head_dim)).sum(-1)
    envelope = w.max(axis=1)
    page = shown(p)
    assert page.rows["shortest stave min_m max_h w"] == f"{envelope.min():.3f}"
    assert page.rows["mean_m max_h w"] == f"{envelope.mean():.3f}"
    assert page.code[0] == "[" + ", ".join(f"{b:.0f}" for b in p.bases) + "]"


def test_plans_of_a_big_histogram_keep_their_reprs_short():
    # 20,000 documents of up to 10^6 tokens from 40 sources: the reprs stay at 1-3 lines under 1 KB (shown checks it),
    # the HTML a few kB, and the plans' N* is where f_T falls below tau
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 10**6, 20_000)
    big = combine_sources(
        {f"source-{k:02d}": LengthHistogram.from_lengths(lengths[k::40]) for k in range(40)},
        corpus="big",
        tokenizer="tekken",
    )
    f = position_frequency(big.lengths, big.counts, 131072)
    n_star = effective_length(f, 10**12, 10**11) + 1
    plans = [
        well_trained_range(131072, histogram=big, tokens=10**12),
        plan_string(131072, histogram=big, tokens=10**12),
        plan_self_extend(32768, 131072, histogram=big, tokens=10**12),
        plan_upsample(big, 131072, 120000, tokens=10**12, tau=10**11),
        plan_rope_scaling(131072, 524288, "yarn"),
    ]
    for plan in plans:
        shown(plan)
        assert len(plan._repr_html_()) < 12_000, type(plan).__name__
    assert shown(plans[1]).rows["well-trained range N*"] == f"{n_star} (rule: budget)"
    upsample = shown(plans[3])
    assert upsample.rows["documents added"].count("documents of") == 3  # 40 sources added, 3 named
    assert upsample.rows["extra tokens X"] == f"{plans[3].extra_tokens:,}" and plans[3].extra_tokens > 0
    assert shown(plans[4]).rows["factor"] == "4"  # 512K / 128K


def test_the_never_used_row_of_a_given_S_past_half_the_window_starts_at_S():
    """It named L − S + W = 1224 beside the share of i >= 3000 (plan_string(4096, S=3000))."""
    from freqlab.plan.string import plan_string

    html = plan_string(4096, S=3000)._repr_html_()
    assert "never-used positions ≥ max(S, L − S + W) = 3000" in html and "= 1224" not in html
