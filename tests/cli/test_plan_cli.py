"""``freqlab plan string|self-extend|rope|upsample``: reports, JSON, and one-line errors."""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from freqlab.cli import main
from freqlab.histogram import LengthHistogram
from freqlab.plan.rope_scaling import critical_dimension
from freqlab.plan.string import plan_string


@pytest.fixture
def hist(tmp_path):
    path = tmp_path / "lengths.parquet"
    LengthHistogram.from_counts([2048], [1000], corpus="rows").to_parquet(path)  # f(i) = 1000 (2048 - i)
    return path


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_plan_group_lists_commands():
    result = run("plan", "--help")
    assert result.exit_code == 0
    for name in ("string", "self-extend", "rope", "upsample", "harpe"):
        assert name in result.output


def test_string_with_L_alone_prints_paste_ready_blocks():
    result = run("plan", "string", "--L", 131072)
    assert result.exit_code == 0, result.output
    assert "S = 43712" in result.output
    assert "replace_with_string(max_test_length=131072, shifted_offset=43712, small_local_value=128)" in result.output
    assert '"string_config": {"shifted_offset": 43712, "local_value": 128}' in result.output


def test_string_and_self_extend_plans_print_freqlabs_own_apply_and_probe_lines():
    """A review: the plans fed freqlab.apply and freqlab probe but printed only the official patches' lines."""
    string = run("plan", "string", "--L", "4K")
    assert "  freqlab.apply.string(model, 1408, 128)\n  freqlab probe MODEL --string 1408,128\n" in string.output
    data = json.loads(run("plan", "string", "--L", "4K", "--json").output)
    assert (data["freqlab_apply"], data["freqlab_probe"]) == (
        "freqlab.apply.string(model, 1408, 128)",
        "freqlab probe MODEL --string 1408,128",
    )
    # a second review: with --extend-to or --test-length past L the lines stopped at L
    beyond = json.loads(run("plan", "string", "--L", "32K", "--extend-to", "128K", "--json").output)["extension"]
    assert (beyond["freqlab_apply"], beyond["freqlab_probe"]) == (
        "freqlab.apply.string(model, 43776, 128)",
        "freqlab probe MODEL --string 43776,128 --max-length 131072",
    )
    tested = json.loads(run("plan", "string", "--L", "4K", "--test-length", "8K", "--json").output)
    assert tested["freqlab_probe"] == "freqlab probe MODEL --string 1408,128 --max-length 8192"
    no_yarn = json.loads(run("plan", "string", "--L", "2K", "--extend-to", "3000", "--json").output)["extension"]
    assert (no_yarn["yarn"], no_yarn["freqlab_apply"], no_yarn["freqlab_probe"]) == (None, None, None)
    extend = json.loads(run("plan", "self-extend", "--L", "4K", "--extend-to", "16K", "--json").output)
    assert (extend["G"], extend["w_n"]) == (8, 776)
    assert extend["freqlab_apply"] == "freqlab.apply.self_extend(model, 8, 776)"
    assert extend["freqlab_probe"] == "freqlab probe MODEL --self-extend 8,776 --max-length 16384"


def test_string_json_with_histogram_and_budget(hist):
    result = run("plan", "string", "--hist", hist, "--L", 2048, "--tokens", "400B", "--tau", "100B", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    # f_T(i) = 400B (2048 - i)/2048 >= 100B <=> i <= 1536: N* = 1537, S = L - N* + W = 639 -> 640 < L/3: S = 704
    assert (data["N_star"], data["S_rule"], data["S"], data["W"], data["rule"]) == (1537, 640, 704, 128, "budget")
    assert data["largest_position"] == 1471 and data["within_well_trained"]
    assert data["vllm_config"] == {"string_config": {"shifted_offset": 704, "local_value": 128}}
    h = LengthHistogram.read_parquet(hist)
    assert data == json.loads(json.dumps(plan_string(2048, histogram=h, tokens=400e9, tau=100e9).to_dict()))


def test_string_reports_disagreement_with_the_papers_range(hist):
    result = run("plan", "string", "--hist", hist, "--L", 2048, "--tokens", "100T")
    assert result.exit_code == 0, result.output
    # N* = 2046: S = L - N* + W = 130 -> 192
    assert "frequency rule alone: S = 192; paper's range [L/3, L/2] (Sec. 4.1) = [704, 1024]" in result.output


def test_string_default_for_4k_stays_in_the_papers_range():
    result = run("plan", "string", "--L", 4096)
    assert result.exit_code == 0, result.output
    assert "S = 1408 (S/L = 0.344, recommended)" in result.output  # not 1344 < L/3 = 1365.3
    assert "shifted_offset=1408" in result.output


def test_string_schedule_and_usage_file(hist, tmp_path):
    schedule = tmp_path / "schedule.yaml"
    schedule.write_text(f"histogram: {hist}\nstages:\n  - {{L: 2048, tokens: 400B, regime: natural}}\n")
    usage = tmp_path / "usage.parquet"
    result = run("plan", "string", "--schedule", schedule, "--json", "--usage-out", usage)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["S"] == 704
    frame = pl.read_parquet(usage)
    assert frame.columns == ["position", "pairs_before", "pairs_after", "trained"]
    assert frame["pairs_before"].sum() == frame["pairs_after"].sum() == 2048 * 2049 // 2


def test_string_errors_are_one_line():
    result = run("plan", "string")
    assert result.exit_code == 2  # usage: no --L and no --schedule


def test_string_evaluates_a_given_S_and_labels_both_shares():
    result = run("plan", "string", "--L", "4K", "--S", int(0.33 * 4096))  # the official README's int(0.33 L)
    assert result.exit_code == 0, result.output
    assert "S = 1351 (S/L = 0.330, evaluated), W = 128" in result.output
    assert "shifted_offset=1351" in result.output
    # no corpus: f(i) = L - i, share of i >= x is (L - x)(L - x + 1) / (L (L + 1))
    assert f"overwritten positions i >= L - S = 2745: {1351 * 1352 / (4096 * 4097):.2%}" in result.output
    assert f"never-used positions i >= max(S, L - S + W) = 2873: {1223 * 1224 / (4096 * 4097):.2%}" in result.output
    assert "largest position used max(S, L - S + W) - 1 = 2872" in result.output


def test_string_with_S_past_half_the_window_never_uses_only_positions_from_S_on():
    """S > (L + W) / 2: distances below S are not shifted (Eq. 4), so positions L - S + W..S - 1 stay in use;
    the never-used share was f's share of i >= L - S + W = 1224 (49.17%), it is that of i >= S = 3000."""
    from freqlab.plan.string import string_usage

    result = run("plan", "string", "--L", "4K", "--S", "3000")
    assert result.exit_code == 0, result.output
    used = np.flatnonzero(string_usage(4096, 3000, 128).pairs_after)
    assert used.min() == 0 and used.max() == 2999 and used.size == 3000  # every position below S, none from it
    # f(i) = L - i: the share of i >= 3000 is (L - 3000)(L - 3000 + 1) / (L (L + 1))
    assert f"never-used positions i >= max(S, L - S + W) = 3000: {1096 * 1097 / (4096 * 4097):.2%}" in result.output


def test_string_beyond_L_prints_string_and_yarn_blocks():
    result = run("plan", "string", "--L", "32K", "--extend-to", "128K", "--json")
    assert result.exit_code == 0, result.output
    e = json.loads(result.output)["extension"]
    S = 10944  # L/3 rounded up to 64; the repository's rule: int((S/L)·N), factor (N/L)(1 - S/L)
    assert e["S"] == 131072 * S // 32768 == 43776 and e["yarn_factor"] == pytest.approx(4 * (1 - S / 32768))
    assert e["rule"] == "HKUNLP/STRING ruler/test_ruler_qwen2.py"
    # string_for_qwen2's call, which their script makes with yarn_factor (a review: without it the patch's rotary
    # embedding computes None * tensor); that patch does YaRN itself, which the plan says
    assert e["hf_patch"] == (
        "replace_with_string(max_test_length=131072, shifted_offset=43776, small_local_value=128, "
        "yarn_factor=2.6640625)"
    )
    assert e["yarn_factor"] == 4 * (1 - S / 32768) == 2.6640625
    text = run("plan", "string", "--L", "32K", "--extend-to", "128K").output
    assert "That patch applies YaRN itself from its yarn_factor argument" in " ".join(text.split())


def test_string_just_beyond_L_says_its_positions_pass_L_without_yarn():
    """A review: at N = 3000 for L = 2K the factor is 0.96 (no YaRN) and STRING uses positions up to 2096, said only
    inside the reasoning."""
    result = run("plan", "string", "--L", "2K", "--extend-to", "3000", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    e = out["extension"]
    assert (e["S"], e["largest_position"], e["yarn"]) == (int(704 / 2048 * 3000), 3000 - 1031 + 128 - 1, None)
    assert e["hf_patch"].endswith("small_local_value=128, yarn_factor=1.0)")
    assert (
        "at N = 3000 the repository's rule uses positions up to 2096, past L - 1 = 2047, with no YaRN (factor 0.9613 "
        "<= 1): untrained positions"
    ) in out["notes"]


def test_self_extend_plan_and_evaluation():
    result = run("plan", "self-extend", "--L", 4096, "--target", 16384, "--group", 8, "--window", 1024)
    assert result.exit_code == 0, result.output
    assert "SelfExtend.apply(model, 8, 776)" in result.output
    assert "--grp-attn-n 8 --grp-attn-w 776" in result.output
    assert "max length (L - w_n + w_n // G)·G = 25600" in result.output
    # the paper's own setting beside the recommendation, and why the maintainers' rule rejects it
    assert (
        "paper's setting (Sec. 4.1, Table 1, Llama-2 4K -> 16K): G = 8, w_n = 1024; max length 25600 here (Eq. 8), "
        "w_n + (N - w_n)/G = 2944 > N* = 2730"
    ) in result.output
    assert "(smallest G with w_n + (N - w_n)/G <= N*)" in result.output
    assert "maintainers' guess N* = 1/2..2/3 L: N* = 2048: G = 11, w_n = 605; N* = 2730: G = 8, w_n = 776" in (
        result.output
    )
    assert "llama-completion -m MODEL.gguf -c 16384 --grp-attn-n 8 --grp-attn-w 776" in result.output
    # Fig. 3: L = 7, N = 10 with the window fixed at 4 gives G = 2, w_n = 4 and exactly 10 tokens
    args = ("--L", 7, "--target", 10, "--well-trained", 7, "--min-window", 4, "--max-window", 4, "--json")
    data = json.loads(run("plan", "self-extend", *args).output)
    assert (data["G"], data["w_n"], data["max_length"]) == (2, 4, 10)


def test_self_extend_evaluates_a_given_setting_even_without_a_recommendation():
    args = ("--L", 4096, "--target", 10**6, "--group", 4, "--window", 1024)  # needs G >= 451 > 64
    result = run("plan", "self-extend", *args)
    assert result.exit_code == 0, result.output
    assert "no recommendation" in result.output
    # (4096 - 1024 + 256)·4 = 13312 < N: the largest position at N is 999999 // 4 + 768 = 250767 >= L
    assert "max length (L - w_n + w_n // G)·G = 13312" in result.output
    assert "250767 (>= L: out of distribution)" in result.output


def test_string_offers_a_larger_s_only_where_one_below_l_passes_w():
    """A second review: --L 96 --S 48 was told "or a larger S", though no S below 96 passes the default W = 128."""
    last = run("plan", "string", "--L", 96, "--S", 48).output.strip().splitlines()[-1]
    assert last.endswith("W = 128 must be much smaller than S = 48 (STRING needs W << S); use a smaller W (>= 32)")
    last = run("plan", "string", "--L", "4K", "--S", 100).output.strip().splitlines()[-1]
    assert last.endswith("use a smaller W (>= 32) or a larger S")


@pytest.mark.parametrize(
    ("args", "option", "message"),
    [
        (("string", "--L", "4K", "--W", 8), "--W", "W = 8 is below 32"),
        (("string", "--L", "4K", "--S", "4K"), "--S", "must be below the training window"),
        (("string", "--L", "4K", "--S", 100), "--W", "much smaller than S = 100 (STRING needs W << S); use a smaller W "
         "(>= 32) or a larger S"),
        # a given S below the smallest W: S is what to change (a review: --W was blamed, never given)
        (("string", "--L", 96, "--S", 20), "--S",
         "S = 20 (STRING needs W << S); no W fits (32 <= W < S): give S > 32 (and W < S)"),
        # W against the S the plan computed (L/3 rounded up to 64 = 1408), and where no W fits: exit 1 before
        (("string", "--L", "4K", "--W", 4000), "--W", "W = 4000 must be much smaller than S = 1408"),
        # no W fits an S of 32: the window is what to change (a review: it blamed the --W nobody gave)
        (("string", "--L", 96), "--L", "W = 128 must be much smaller than S = 32 (STRING"),
        (("string", "--L", "4K", "--extend-to", "2K"), "--extend-to", "not above the training window"),
        (("self-extend", "--L", "4K", "--extend-to", "2K"), "--extend-to", "not above the training window L = 4096"),
        (("self-extend", "--L", "4K", "--target", "2K"), "--extend-to", "not above the training window L = 4096"),
        (("rope", "--L", "4K", "--extend-to", "4K"), "--extend-to", "N = 4096 is not above"),
        # exit 0 (a grid below L) or exit 1 before; N = L is plan harpe's window without --L
        (("harpe", "--hist", "HIST", "--L", "4K", "--extend-to", 3600), "--extend-to", "N = 3600 is below the"),
        (("harpe", "--hist", "HIST", "--L", "4K", "--extend-to", "2K"), "--extend-to", "N = 2048 is below the"),
        # a review: --extend-to was named though not given (its default 128K is below L)
        (("harpe", "--hist", "HIST", "--L", "256K"), "--L", "L = 262144 is above --extend-to's default N = 131072"),
        (("harpe", "--hist", "HIST", "--L", "256K", "--target", "128K"), "--extend-to", "N = 131072 is below the"),
        (("harpe", "--head-dim", 2, "--heads", 4, "--extend-to", "4K"), "--head-dim", "cannot tell bases apart"),
        (("rope", "--L", "4K", "--extend-to", "8K", "--factor", 1), "--factor", "not in the range"),
        (("rope", "--L", "4K", "--extend-to", "16K", "--factor", "1e300"), "--factor",
         "factor 1e+300 stretches L = 4096 to s·L = 4.096e+303 positions, past the longest length freqlab plans"),
        (("rope", "--L", "4K", "--extend-to", "16K", "--head-dim", 6, "--partial-rotary-factor", 0.5),
         "--partial-rotary-factor", "head_dim 6 · partial_rotary_factor 0.5 = 3 rotary dimensions: RoPE rotates pairs"),
        (("rope", "--L", "4K", "--extend-to", "16K", "--head-dim", 4, "--partial-rotary-factor", 0.5),
         "--partial-rotary-factor", "= 2 rotary dimensions: ntk scaling needs at least 4"),  # --type all: ntk too
        (("upsample", "--hist", "HIST", "--effective-length", "8K", "--L", "4K"), "--effective-length",
         "E = 8192 must be below the training window L = 4096"),
        (("harpe", "--b-min", "5e6", "--b-max", "1e6"), "--b-max", "b_max = 1e+06 must be larger than b_min = 5e+06"),
        (("harpe", "--b-min", "5e6"), "--b-max", "b_max = 5e+06 must be larger than b_min = 5e+06"),
        (("harpe", "--stride", "-3"), "--stride", "must be positive"),
        (("harpe", "--heads", 200), "--heads", "200 heads need 200 distinct bases but the grid b_min + i·s has only"),
        (("harpe", "--grid", "1:x"), "--grid", "must be START:STOP[:STEP] with integers, got '1:x'"),  # exit 1 before
        (("harpe", "--grid", "0:0:0"), "--grid", "invalid distance grid start=0 stop=0 step=0"),
        (("harpe", "--grid", "100:10:1"), "--grid", "invalid distance grid start=100 stop=10 step=1"),
        # a review met these as exit 1 with the library's words
        (("harpe", "--stride", "1e7"), "--stride", "1e+07 is wider than b_max - b_min = 4e+06: no candidates"),
        (("harpe", "--strategy", "attention-buckets", "--stride", "1e5"), "--stride", "wider than b_max - b_min"),
        (("self-extend", "--L", "4K", "--extend-to", "16K", "--min-window", 2000, "--max-window", 1000),
         "--max-window", "the windows 2000..1000 are empty"),
        (("self-extend", "--L", "4K", "--extend-to", "16K", "--max-window", 300), "--max-window",
         "the windows 512..300 are empty (--min-window 512, --max-window 300)"),
        (("self-extend", "--L", "4K", "--extend-to", "16K", "--max-window", 5000), "--max-window",
         "5000 must be in 1..L - 1 = 4095"),
        (("self-extend", "--L", "4K", "--extend-to", "16K", "--well-trained", 5000), "--well-trained",
         "N* = 5000 must be in 1..L = 4096"),
    ],
)  # fmt: skip
def test_contradictory_options_are_usage_errors(hist, args, option, message):
    """README: usage errors exit 2; click names the option on the last line (not `Error:` + exit 1)."""
    result = run("plan", *(hist if a == "HIST" else a for a in args))
    assert result.exit_code == 2, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith(f"Error: Invalid value for '{option}'") and message in last


def test_rope_json_has_both_conventions():
    result = run("plan", "rope", "--L", 4096, "--target", 16384, "--type", "yarn", "--json")
    assert result.exit_code == 0, result.output
    (plan,) = json.loads(result.output)["plans"]
    assert plan["transformers_5x"] == {
        "max_position_embeddings": 16384,
        "rope_parameters": {
            "rope_type": "yarn",
            "rope_theta": 10000.0,
            "factor": 4.0,
            "original_max_position_embeddings": 4096,
        },
    }
    assert plan["transformers_4x"]["rope_scaling"]["rope_type"] == "yarn"
    text = run("plan", "rope", "--L", 4096, "--target", 16384).output
    assert all(f"== {t} " in text for t in ("linear", "ntk", "dynamic", "yarn", "longrope", "llama3"))
    assert "LongRoPE factors here are a search-free initialisation, not LongRoPE's searched factors" in text
    assert '"rope_type": "longrope"' in text and '"short_factor": [1.0, 1.0' in text


def expected_upsample(max_upweight: int) -> int:
    """X for 900 documents of 100 tokens and 10 of 4096 (L = 4096, E = 3072, T = 10B, tau = 5B), by hand: a 4096-token
    document gives E 1024 times; whole documents, each length up to max_upweight x its documents in T, then corpus
    tokens at a = 10 · 1024 / 130960."""
    a = Fraction(10 * 1024, 130960)
    gap = 5 * 10**9 - 10**10 * a
    cap = (max_upweight - 1) * 10 * 10**10 // 130960  # documents of 4096 tokens
    documents = min(cap, math.ceil(gap / 1024))
    rest = gap - documents * 1024
    return documents * 4096 + (math.ceil(rest / a) if rest > 0 else 0)


def test_upsample(hist, tmp_path):
    corpus = tmp_path / "corpus.parquet"
    LengthHistogram.from_counts([100, 4096], [900, 10]).to_parquet(corpus)
    args = ("plan", "upsample", "--hist", corpus, "--L", 4096, "--tokens", "10B", "--tau", "5B")
    args += ("--target-length", 3072)
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    a, b = 10 * 1024 / 130960, 1024 / 4096
    # the default cap (4x) runs out before tau: the rest is more corpus tokens
    assert data["extra_tokens"] == expected_upsample(4) and data["corpus_tokens_added"] > 0
    assert data["per_token_corpus"] == pytest.approx(a) and data["per_token_long"] == pytest.approx(b)
    assert data["lower_bound_tokens"] == math.ceil(Fraction(5 * 10**9 * 4096, 1024))
    assert data["budget"] == {"training_tokens": 10**10, "training_tokens_from": "tokens option"}
    wide = json.loads(run(*args, "--json", "--max-upweight", 100).output)
    assert wide["extra_tokens"] == expected_upsample(100) and wide["corpus_tokens_added"] == 0
    text = run(*args).output
    assert "documents to add" in text and "Upsampling helps" in text and "budget     T = 10B" in text


def test_upsample_with_a_schedule(tmp_path):
    LengthHistogram.from_counts([100, 4096], [900, 10]).to_parquet(tmp_path / "corpus.parquet")
    schedule = tmp_path / "schedule.json"
    schedule.write_text(
        json.dumps(
            {
                "histogram": "corpus.parquet",
                "tau": "5B",
                "stages": [
                    {"name": "short", "L": 2048, "tokens": "10B"},
                    {"name": "long", "L": 4096, "tokens": "10B"},
                ],
            }
        )
    )
    result = run("plan", "upsample", "--schedule", schedule, "--target-length", 3072, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    # the 2048 stage never reaches E = 3072, so F(E) = 1e10 · a with the single-stage a of test_upsample
    a, b = 10 * 1024 / 130960, 1024 / 4096
    assert data["current_occurrences"] == pytest.approx(1e10 * a)
    assert data["extra_tokens"] == expected_upsample(4)
    assert data["tokens"] == 2 * 10**10 and data["added_to"].startswith("stage 'long'")
    assert data["per_token_long"] == pytest.approx(b)
    assert run("plan", "upsample", "--schedule", schedule, "--target-length", 3072, "--tokens", "1B").exit_code == 2
    mismatch = run("plan", "upsample", "--schedule", schedule, "--target-length", 3072, "--L", 2048)
    assert mismatch.exit_code == 1 and "longest stage window is 4096, but --L = 2048" in mismatch.output
    assert run("plan", "upsample", "--L", 4096, "--target-length", 3072).exit_code == 2  # needs --hist


def test_upsample_with_weights(tmp_path):
    from freqlab.histogram import combine_sources

    sources = {"short": LengthHistogram.from_counts([100], [900]), "long": LengthHistogram.from_counts([4096], [10])}
    path = tmp_path / "split.parquet"
    combine_sources(sources).to_parquet(path)
    args = ("plan", "upsample", "--hist", path, "--L", 4096, "--tokens", "10B", "--tau", "5B")
    args += ("--target-length", 3072)
    # weights 1:1 are the histogram as scanned; long=3 triples the long documents, exactly (integer epochs)
    same = json.loads(run(*args, "--json", "--weights", "short=1,long=1").output)
    assert same["extra_tokens"] == expected_upsample(4)
    tripled = json.loads(run(*args, "--json", "--weights", "short=1,long=3").output)
    assert tripled["per_token_corpus"] == pytest.approx(30 * 1024 / (90000 + 30 * 4096))
    bad = run(*args, "--weights", "short=1,books=2")
    assert bad.exit_code == 1 and bad.output.count("\n") == 1 and "'books' is not in the histogram" in bad.output


def test_rope_takes_the_window_and_the_effective_length_from_a_schedule(hist, tmp_path):
    schedule = tmp_path / "schedule.yaml"
    schedule.write_text(f"histogram: {hist}\nstages:\n  - {{L: 2048, tokens: 1T}}\n  - {{L: 4096, tokens: 20B}}\n")
    result = run("plan", "rope", "--schedule", schedule, "--target", 16384, "--type", "linear", "--json")
    data = json.loads(result.output)
    assert data["L"] == 4096 and data["plans"][0]["factor"] == 4.0  # 16384 / the longest stage window
    assert data["plans"][0]["E_rule"].startswith("predicted N*, schedule rule: positions 0..")
    assert run("plan", "rope", "--schedule", schedule, "--L", 2048, "--target", 16384).exit_code == 2  # usage
    assert run("plan", "rope", "--target", 16384).exit_code == 2


def test_planners_follow_the_budget_rule_and_weights(tmp_path):
    from freqlab.histogram import combine_sources

    split, alone = tmp_path / "split.parquet", tmp_path / "rows.parquet"
    rows = LengthHistogram.from_counts([2048], [1000])
    combine_sources({"rows": rows, "short": LengthHistogram.from_counts([100], [50])}).to_parquet(split)
    rows.to_parquet(alone)
    # no --tokens: T = 1T, printed; f_T(i) = 1T (2048 - i)/2048 >= 100B <=> i <= 1843: N* = 1844
    text = run("plan", "string", "--hist", alone, "--L", 2048).output
    assert text.startswith("budget     T = 1T training tokens (freqlab default; --tokens sets it); tau = 100B")
    assert "N* = 1844 (rule: budget)" in text
    assert "(rule: mass)" in run("plan", "string", "--hist", alone, "--L", 2048, "--mass", 0.9).output
    # weights that leave out the short documents give the plan of the rows alone
    weighted = json.loads(
        run("plan", "string", "--hist", split, "--L", 2048, "--weights", "rows=1,short=0", "--json").output
    )
    assert (
        weighted["N_star"] == json.loads(run("plan", "string", "--hist", alone, "--L", 2048, "--json").output)["N_star"]
    )
    assert run("plan", "string", "--L", 2048, "--weights", "rows=1").exit_code == 2  # nothing to weight
    # the planners show the mix they planned on: its per-source table, in text and in --json
    text = run("plan", "string", "--hist", split, "--L", 2048, "--weights", "rows=1,short=0").output
    assert "mix        epochs rows=1, short=0 (--weights)" in text and "\n  short " in text
    assert weighted["mixture"]["weights"] == {"rows": 1.0, "short": 0.0}
    assert {r["source"] for r in weighted["mix_sources"]} == {"rows", "short"}
    extended = json.loads(
        run(
            "plan",
            "self-extend",
            "--hist",
            split,
            "--L",
            2048,
            "--extend-to",
            "8K",
            "--weights",
            "rows=1,short=0",
            "--json",
        ).output
    )
    assert extended["mixture"]["weights"] == {"rows": 1.0, "short": 0.0}


def test_upsample_takes_a_share_mix_and_prices_every_packing(tmp_path):
    """The README's `plan upsample --weights` with shares: the pack and best-fit alternatives are computed on a
    mix kept to a bounded number of documents (it used to ask for a 5x10^14-document stream)."""
    from click.testing import CliRunner

    from freqlab.cli import main
    from freqlab.histogram import LengthHistogram, combine_sources

    path = tmp_path / "lengths.parquet"
    combine_sources(
        {
            "code": LengthHistogram.from_lengths([50, 900, 2500, 5000] * 40),
            "web": LengthHistogram.from_lengths([40, 700, 3000, 4096] * 40),
        }
    ).to_parquet(path)
    args = [
        "plan",
        "upsample",
        "--hist",
        str(path),
        "--L",
        "4K",
        "--effective-length",
        "3K",
        "--weights",
        "code=70%,web=30%",
        "--tokens",
        "100B",  # tau not reached: the table lists what each way needs (reached, it lists none)
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    for row in (
        "the same mix under --regime pack",
        "the same mix under --regime concat",
        "the same mix under --regime best-fit",
    ):
        assert row in result.output
    # the mix it planned on and its rounding, as every planner shows it (a review: upsample said nothing of it)
    assert "mix        share code=70%, web=30% (--weights)" in result.output
    assert "largest relative error" in result.output
    data = json.loads(CliRunner().invoke(main, [*args, "--json"]).output)
    assert data["mixture"]["weights"] == {"code": 70.0, "web": 30.0} and len(data["mix_sources"]) == 2


def test_a_token_budget_beyond_int64_is_a_usage_error():
    from click.testing import CliRunner

    from freqlab.cli import main

    result = CliRunner().invoke(main, ["plan", "string", "--L", "2048", "--tokens", "1e400"])
    assert result.exit_code == 2 and "'1e400' is not in 1..9,223,372,036,854,775,807" in result.output


def test_a_budget_that_trains_no_position_blames_the_option_given(hist):
    """A review: with --tokens too small and no --tau given, the usage error named '--tau'."""
    args = ("plan", "rope", "--hist", hist, "--L", "2K", "--tokens", "1M", "--extend-to", "8K")
    result = run(*args)
    assert result.exit_code == 2 and "Invalid value for '--tokens'" in result.output, result.output
    assert "Invalid value for '--tau'" in run(*args, "--tau", "1e9").output


@pytest.mark.parametrize(
    ("command", "why", "instead"),
    [
        (("string",), "no range for STRING to keep its positions in", "drop --hist/--schedule for the paper's S = L/3"),
        (
            ("self-extend", "--extend-to", "8K"),
            "no range for Self-Extend to keep its positions in",
            "give --well-trained in place of the frequency",
        ),
        (
            ("self-extend", "--extend-to", "8K", "--group", "4", "--window", "256"),  # no N* to evaluate it against
            "no range for Self-Extend to keep its positions in",
            "give --well-trained in place of the frequency",
        ),
        (("harpe",), "every distance would be under-trained", "give --grid in place of the frequency"),
    ],
)
def test_every_plan_refuses_a_budget_that_trains_no_position_as_rope_does(hist, command, why, instead, tmp_path):
    """A review: rope refused N* = 0 naming the option; self-extend failed (exit 1) naming none, string planned on
    (S = L/2 "none well trained"), harpe made every distance 0..N - 1 its grid."""
    assert run("calibrate", "--out", tmp_path / "tau.json").exit_code == 0  # tau 100B
    cases = (
        ((), "--tokens", "1K"),
        (("--tau", "2T"), "--tau", "1T"),
        (("--tau-from", tmp_path / "tau.json"), "--tau-from", "1K"),
    )
    for extra, blamed, tokens in cases:
        result = run("plan", *command, "--hist", hist, "--L", "2K", "--tokens", tokens, *extra)
        assert result.exit_code == 2, result.output
        text = " ".join(result.output.split())
        T = "1K" if tokens == "1K" else "1T"  # not 1e+03 (a review)
        assert f"Invalid value for '{blamed}': with T = {T} tokens no position reaches tau" in text, text
        lower = "--tau" if blamed == "--tokens" else blamed  # a review: --tau-from was named --tau
        assert f"{why}; lower {lower}, raise --tokens, or {instead}" in text, text


def test_a_given_shift_is_evaluated_whatever_n_star(hist):
    """A review: refusing N* = 0 refused --S too, which evaluates a shift the user gave (a given (G, w_n) has no N* to
    be checked against: refused, where it was an exit 1 naming no option)."""
    string = json.loads(
        run("plan", "string", "--hist", hist, "--L", "2K", "--tokens", "1K", "--S", "1000", "--json").output
    )
    assert (string["S"], string["N_star"], string["within_well_trained"]) == (1000, 0, False)


def test_rope_counts_the_critical_dimension_at_the_predicted_effective_length(hist):
    # f_T(i) = 400B (2048 - i)/2048 >= 100B for i <= 1536: N* = 1537; 64 of 128 dimensions rotate
    args = ("plan", "rope", "--hist", hist, "--L", "2K", "--tokens", "400B", "--extend-to", "8K", "--type", "yarn")
    result = run(*args, "--partial-rotary-factor", 0.5)
    assert result.exit_code == 0, result.output
    assert "E = 1537 tokens (predicted N*, budget rule: positions 0..1536 well trained (effective length 1536))" in (
        result.output
    )
    assert "64 of 128 dimensions rotate (partial_rotary_factor 0.5)" in result.output
    data = json.loads(run(*args, "--partial-rotary-factor", 0.5, "--json").output)["plans"][0]
    assert (data["effective_length"], data["rotary_dim"]) == (1537, 64)
    assert data["critical_dim"] == critical_dimension(1537, 10000.0, 64) == 40
    assert data["critical_dim_L"] == critical_dimension(2048, 10000.0, 64) == 42
    given = json.loads(run("plan", "rope", "--L", "2K", "--extend-to", "8K", "--effective-length", 1000, "--json")
                       .output)["plans"][0]  # fmt: skip
    assert (given["effective_length"], given["E_rule"]) == (1000, "given")
    # a budget that trains no position: refused (a review: counted for L, it read as a whole window trained, and one
    # more token of tau moved the critical dimension from 0 to 42)
    weak = run("plan", "rope", "--hist", hist, "--L", "2K", "--tokens", "50B", "--extend-to", "8K", "--type", "yarn")
    assert weak.exit_code == 2
    assert "Invalid value for '--tokens': with T = 50B tokens no position reaches tau" in weak.output
    assert (
        "no context to count the critical dimension for; lower --tau, raise --tokens, or give --effective-length"
        in (" ".join(weak.output.split()))
    )


def test_rope_prints_each_block_under_its_transformers_versions_and_the_vllm_line():
    result = run("plan", "rope", "--L", "4K", "--extend-to", "16K", "--type", "yarn")
    assert result.exit_code == 0, result.output
    text = result.output
    legacy = json.dumps({"max_position_embeddings": 4096, "rope_theta": 10000.0,
                         "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})  # fmt: skip
    assert f"transformers 4.45-4.50 (rope_scaling):\n  {legacy}" in text
    assert "transformers 4.51-4.57 (rope_scaling):" in text and "transformers 5.0+ (rope_parameters):" in text
    assert "--max-model-len 16384" in text and "raise --max-model-len to N by hand" in text


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "1e400"])
@pytest.mark.parametrize("option", ["--rope-theta", "--factor"])
def test_rope_refuses_a_base_or_factor_that_is_no_finite_number(option, value):
    """NaN or Infinity would reach the paste-ready blocks (and be invalid JSON)."""
    result = run("plan", "rope", "--L", "4K", "--extend-to", "16K", option, value, "--json")
    assert result.exit_code == 2
    assert f"Invalid value for '{option}': {value!r} is not a finite number" in result.output
    assert "NaN" not in result.output.replace(repr(value), "") and "{" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--rope-theta", "1e308", "--type", "ntk"),
            "ntk scaling raises rope_theta 1e+308 to b · s^(d_r/(d_r-2)) = inf",
        ),
        (("--rope-theta", "1e308", "--type", "dynamic"), "dynamic scaling raises rope_theta 1e+308"),
        (
            ("--rope-theta", "1e300", "--factor", "262144", "--head-dim", "4", "--type", "ntk"),
            "= inf (s = 262144, d_r = 4)",
        ),
    ],
)
def test_rope_refuses_a_raised_base_that_overflows(args, message):
    """b · s^(d_r/(d_r-2)) past the largest float printed "rope_theta": Infinity into every block (invalid JSON)."""
    result = run("plan", "rope", "--L", "4K", "--extend-to", "16K", *args, "--json")
    assert result.exit_code == 2 and "Invalid value for '--rope-theta'" in result.output, result.output
    assert message in result.output and "Infinity" not in result.output
    assert (
        run("plan", "rope", "--L", "4K", "--extend-to", "16K", "--rope-theta", "1e308", "--type", "linear").exit_code
        == 0
    )


def test_rope_needs_a_window_of_two_positions():
    result = run("plan", "rope", "--L", "1", "--extend-to", "2")  # longrope's attention factor divides by ln L
    assert (
        result.exit_code == 2 and "Invalid value for '--L': L = 1: a RoPE-scaling plan needs a window" in result.output
    )
    assert "Traceback" not in result.output


def test_rope_prints_a_factor_just_above_1_as_given():
    result = run("plan", "rope", "--L", "4K", "--extend-to", "16K", "--factor", "1.0000001", "--type", "linear")
    assert result.exit_code == 0 and "divides positions by s = 1.0000001." in result.output, result.output
    assert "N/L = 1.0000001" not in result.output  # N/L is 4: a given factor is not called N/L


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("plan", "rope", "--head-dim", "7"), "Invalid value for '--head-dim': 7 is odd: RoPE rotates pairs"),
        (("plan", "harpe", "--head-dim", "7"), "Invalid value for '--head-dim': 7 is odd: RoPE rotates pairs"),
        (("plan", "rope", "--rope-theta", "1"), "Invalid value for '--rope-theta': 1.0 is not in the range x>1."),
        (("plan", "rope", "--rope-theta", "-5"), "Invalid value for '--rope-theta': -5.0 is not in the range x>1."),
        (("plan", "string", "--rope-theta", "0"), "Invalid value for '--rope-theta': 0.0 is not in the range x>1."),
        (("plan", "string", "--rope-theta", "nan"), "Invalid value for '--rope-theta': 'nan' is not a finite number"),
    ],
)
def test_a_bad_head_dim_or_rope_base_is_a_usage_error_in_each_plan(args, message):
    # exit 2 like every other bad option value (they were `Error: ...`, exit 1, from the plan itself)
    result = run(*args, "--L", "4K", "--extend-to", "16K")
    assert result.exit_code == 2 and message in result.output, result.output


def test_rope_help_states_the_bounds_of_the_base_never_none():
    text = " ".join(run("plan", "rope", "--help").output.split())
    assert "[default: 10000, with a note]. [x>1]" in text and "None" not in text


def test_a_base_not_given_is_said_in_a_note_for_the_yarn_and_rope_blocks():
    """STRING + YaRN follows a Qwen2 script (base 1000000): its blocks held rope_theta 10000 without a word."""
    from freqlab.plan.rope_scaling import BASE_ASSUMED

    for args in (("plan", "string", "--L", "32K"), ("plan", "rope", "--L", "4K", "--type", "yarn")):
        assumed = run(*args, "--extend-to", "128K")
        assert (
            assumed.exit_code == 0
            and f"note: {BASE_ASSUMED}" in assumed.output
            and '"rope_theta": 10000.0' in (assumed.output)
        )
        given = run(*args, "--extend-to", "128K", "--rope-theta", "1e6")
        assert BASE_ASSUMED not in given.output and '"rope_theta": 1000000.0' in given.output


def test_rope_refuses_an_effective_length_beyond_the_training_window():
    # it was accepted (E = 100K against L = 4K: every dimension "completed a turn", longrope's ramp counted there)
    result = run("plan", "rope", "--L", "4K", "--extend-to", "16K", "--effective-length", "100K")
    assert result.exit_code == 2
    assert "Invalid value for '--effective-length': E = 102400 exceeds the training window L = 4096: E <= L" in (
        result.output
    )
    assert run("plan", "rope", "--L", "4K", "--extend-to", "16K", "--effective-length", "4K").exit_code == 0
    from freqlab.errors import FreqlabError
    from freqlab.plan.rope_scaling import plan_rope_scaling

    with pytest.raises(FreqlabError, match=r"^effective length E = 4097 exceeds the training window L = 4096"):
        plan_rope_scaling(4096, 16384, "longrope", effective_length=4097)


def test_a_budget_that_trains_no_position_says_so_never_n_star_minus_one_is_minus_one(hist):
    # the command line refuses it (above); the Python API plans on and says so
    report = plan_string(2048, histogram=LengthHistogram.read_parquet(hist), tokens=1000).report()
    assert "(no position is well trained: N* = 0)" in report and "(none well trained)" in report
    assert "= -1" not in report and "0..-1" not in report


@pytest.mark.parametrize(
    "args",
    [("string", "--L", "4K", "--tokens", "5T"), ("string", "--L", "4K", "--mass", "0.2"),
     ("rope", "--L", "4K", "--extend-to", "16K", "--tau", "1"),
     ("self-extend", "--L", "4K", "--extend-to", "16K", "--tokens", "1T", "--tau", "1"),
     ("string", "--L", "4K", "--tau-from", "TAU"), ("harpe", "--tau", "1e9"), ("harpe", "--mass", "0.5"),
     ("harpe", "--grid", "100:4000", "--tokens", "1T")],
)  # fmt: skip
def test_frequency_options_without_a_frequency_are_usage_errors(args, tmp_path):
    """They set the well-trained range from a histogram's f: without one the plan took its default (rule: default)
    and exited 0, as if they had been used."""
    assert run("calibrate", "--out", tmp_path / "tau.json").exit_code == 0
    result = run("plan", *[tmp_path / "tau.json" if a == "TAU" else a for a in args])
    assert result.exit_code == 2 and re.search(r"needs? --hist", result.output), result.output
    assert run("plan", "string", "--L", "4K", "--mass", "nan").exit_code == 2  # nan passed click's range check


def test_a_test_length_up_to_S_is_said_to_change_nothing():
    text = run("plan", "string", "--L", "4K", "--test-length", "1K").output
    assert "note: test length 1024 is at most S = 1408: no distance reaches S, so STRING changes nothing" in text
    assert "changes nothing" not in run("plan", "string", "--L", "4K", "--test-length", "2K").output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("string", "--schedule", "S", "--tokens", "5T"), "--tokens: a --schedule's stages set them"),
        (("string", "--schedule", "S", "--mass", "0.5"), "--mass: a --schedule's stages set them (budget"),
        (("string", "--L", "2K", "--hist", "H", "--mass", "0.6", "--tokens", "1T"), "--mass is the rule without a"),
        (("string", "--L", "2K", "--hist", "H", "--mass", "0.6", "--tau", "1B"), "it takes no --tau"),
        (("string", "--L", "2K", "--regime", "concat"), "--regime needs --hist"),
        (("harpe", "--regime", "concat"), "--regime needs --hist (the frequency"),
        (("harpe", "--grid", "100:2000:10", "--L", "2K"), "--L: --grid sets the grid itself"),
        (("upsample", "--schedule", "S", "--effective-length", "1500", "--regime", "concat"),
         "--regime: a --schedule's stages set them"),
        (("self-extend", "--L", "4K", "--extend-to", "16K", "--well-trained", "3000", "--hist", "H"),
         "sets N* itself"),
        (("rope", "--L", "4K", "--extend-to", "16K", "--effective-length", "3000", "--hist", "H"), "sets E itself"),
    ],
)  # fmt: skip
def test_options_the_chosen_frequency_does_not_use_are_usage_errors(args, message, tmp_path):
    """Each printed the same plan as without it, exit 0 (second review of this stop's changes)."""
    hist = LengthHistogram.from_counts([3000, 500], [10, 50]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(f"histogram: {hist}\nstages:\n  - {{name: a, L: 2048, tokens: 1T}}\n")
    result = run("plan", *[{"H": hist, "S": tmp_path / "s.yaml"}.get(a, a) for a in args])
    assert result.exit_code == 2 and message in result.output, result.output
    assert run("plan", "string", "--schedule", tmp_path / "s.yaml", "--tau", "1B").exit_code == 0  # it uses tau


def test_self_extend_below_8_positions_names_l():
    """A review: `plan self-extend --L 1 --extend-to 2` was exit 1, naming no option (the default windows L/8..L/4
    are empty there)."""
    result = CliRunner().invoke(main, ["plan", "self-extend", "--L", "4", "--extend-to", "16"])
    assert result.exit_code == 2
    message = "Invalid value for '--L': L = 4: the default neighbour windows L/8..L/4 are empty below L = 8"
    assert message in result.output


def test_self_extend_rule_of_thumb_is_not_rounded_onto_the_threshold():
    """A review: 1024 + 5119/3 = 2730.33 was shown "2730 (> N* = 2730)", a rejection that read as a tie."""
    result = run("plan", "self-extend", "--L", "4K", "--extend-to", 6143, "--group", 3, "--window", 1024)
    assert "w_n + (N - w_n)/G = 2730.33 (> N* = 2730)" in result.output
    assert "w_n + (N - w_n)/G = 2729.67 <= 2730" in result.output  # the plan's own choice, G = 3, w_n = 1023
    # 1/G past a whole number with G = 256: 2730.0039, not "2730.00 (> N* = 2730)" (a second review)
    fine = run("plan", "self-extend", "--L", "4K", "--extend-to", 5281, "--group", 256, "--window", 2720)
    assert "w_n + (N - w_n)/G = 2730.004 (> N* = 2730)" in fine.output


def test_rope_on_a_schedule_that_trains_no_position_names_what_to_raise(tmp_path, hist):
    """A second review: the advice was "raise --tokens", an option refused beside --schedule."""
    path = tmp_path / "s.yaml"
    path.write_text(f"histogram: {hist}\nstages:\n  - {{name: short, L: 2048, tokens: 1000}}\n")
    result = run("plan", "rope", "--schedule", path, "--extend-to", "8K", "--type", "yarn")
    assert result.exit_code == 2
    assert (
        "lower the schedule's tau or --tau, raise the schedule's stage tokens, or give --effective-length"
        in " ".join(result.output.split())
    )


def test_a_factor_within_rounding_of_n_over_l_is_n_over_l():
    """A review: --factor 4.000000001 for 4K -> 16K kept max_position_embeddings = 16384 beside that factor, and
    transformers 5.x warned that it did not match max_position_embeddings / original_max_position_embeddings."""
    blocks = json.loads(
        run(
            "plan", "rope", "--L", "4K", "--extend-to", "16K", "--type", "yarn", "--factor", "4.000000001", "--json"
        ).output
    )["plans"][0]["blocks"]
    assert {b["config"]["max_position_embeddings"] for b in blocks} <= {4096, 16384}
    parameters = [b["config"].get("rope_parameters") or b["config"]["rope_scaling"] for b in blocks]
    assert {p["factor"] for p in parameters} == {4.0}


def test_upsample_from_a_budget_below_tau_says_no_position_reaches_it_and_prints_readable_percentages(hist):
    """A review: --tokens 1 printed "predicted effective length 0" (T < tau: no position reaches tau, not position 0)
    and "+138378378378300.0%" more training. The bound is tau L / (L - E) = 10^11 · 2048 / 148 = 1.38T tokens."""
    text = run("plan", "upsample", "--hist", hist, "--L", "2K", "--effective-length", 1900, "--tokens", 1).output
    assert "now f_T(E) = 0: a = 0.07227 per token, no position reaches tau (T = 1 < tau = 100B)" in text
    assert "no position reaches tau (T < tau). Each" in text  # the reasoning too (a second review)
    bound = next(line for line in text.splitlines() if line.strip().startswith("bound:"))
    assert bound.split()[-3:] == ["1.38T", "+1.38T", "+1.38e+14%"]


def test_a_long_hist_that_cannot_be_read_is_a_usage_error_naming_it(hist, tmp_path):
    """A review: a missing or non-Parquet --long-hist was exit 1 naming no option, an empty one exit 2 naming it."""
    (tmp_path / "x.txt").write_text("not a histogram\n")
    for given, said in (
        ("nope.parquet", "nope.parquet: no such histogram file"),
        (tmp_path / "x.txt", "not a Parquet"),
    ):
        args = ("plan", "upsample", "--hist", hist, "--L", "2K", "--effective-length", 1900, "--long-hist", given)
        result = run(*args)
        assert result.exit_code == 2 and "Invalid value for '--long-hist'" in result.output and said in result.output


def test_string_with_no_s_between_32_and_l_asks_for_a_longer_window():
    """A second review: --L 33 --S 20 was told "give S > 32", though no S below L = 33 is."""
    last = run("plan", "string", "--L", 33, "--S", 20).output.strip().splitlines()[-1]
    assert last == (
        "Error: Invalid value for '--L': W = 128 must be much smaller than S = 20 (STRING needs W << S); no W fits "
        "(32 <= W < S < L): give a window of at least 34 positions"
    )
