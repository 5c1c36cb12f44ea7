"""``freqlab plan harpe``: table, JSON, paste-ready list, --compare, Attention Buckets mode, frequency link."""

from __future__ import annotations

import ast
import json

import click
import numpy as np
import pytest
from click.testing import CliRunner

from freqlab.cli.plan_harpe import harpe_command
from freqlab.histogram import LengthHistogram
from freqlab.plan.harpe import table2_bases


@click.group()
def group() -> None:
    """Stand-in for the ``plan`` group."""


group.add_command(harpe_command)


def run(*args: str):
    return CliRunner().invoke(group, ["harpe", *args])


@pytest.fixture(scope="module")
def paper_json():
    result = run("--compare", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_paper_setting_json(paper_json):
    assert paper_json["strategy"] == "peak-valley"
    assert paper_json["candidates"] == 133
    assert paper_json["grid"] == {"start": 32_000, "stop": 130_880, "step": 32, "last": 130_880, "points": 3091}
    bases = paper_json["bases"]
    assert len(bases) == 32 and len(set(bases)) == 32 and bases[0] == 1_000_000
    assert ast.literal_eval(paper_json["python"]) == bases  # the paste-ready list is the same list
    assert paper_json["detector"] == {"method": "prominent-extrema", "count": None, "separation": 10}
    # whole numbers as the bases are (a review found 1000000.0 beside int bases)
    assert [paper_json[k] for k in ("b_min", "b_max", "stride")] == [1_000_000, 5_000_000, 30_000]
    assert all(type(paper_json[k]) is int for k in ("b_min", "b_max", "stride"))


def test_compare_lists_all_sets_with_both_scores(paper_json):
    names = [c["name"] for c in paper_json["compare"]]
    assert names[:3] == ["freqlab peak-valley", "uniform (Eq. 9)", "HARPE Table 2"]
    assert sum(name.startswith("random") for name in names) == 3
    table = next(c for c in paper_json["compare"] if c["name"] == "HARPE Table 2")
    assert table["bases"] == table2_bases() and table["common_with_table2"] == 32
    ours = paper_json["compare"][0]
    assert ours["common_with_table2"] == len(ours["common_values"]) == 11
    assert all(c["shortest_stave"] <= c["mean_max"] for c in paper_json["compare"])
    assert "cannot be reproduced" in paper_json["table2_note"]


def test_compare_text_states_table2_is_not_reproducible():
    result = run("--compare", "--random-sets", "1")
    assert result.exit_code == 0, result.output
    assert "HARPE Table 2" in result.output and "random #1" in result.output
    assert "cannot be reproduced from public information" in result.output
    assert "shares 11 of 32 values with Table 2 at 0.01M" in result.output
    assert "shares 7.6 values with Table 2 on average" in result.output  # 32 · 32 / 134
    assert "not comparable" not in result.output  # the paper's setting: Table 2 is a like-for-like reference


def test_compare_outside_the_papers_setting_says_table2_is_not_like_for_like():
    """A review: 4 bases in 10K..40K scored against Table 2's 32 in 1M..5M (5.068 against 0.27-0.87) with no word,
    and "shares 0 of 32 values with Table 2 ...: " ended on an empty list."""
    result = run(
        "--heads", "4", "--b-min", "1e4", "--b-max", "4e4", "--stride", "5000", "--extend-to", "4K", "--compare"
    )
    assert result.exit_code == 0, result.output
    assert (
        "Table 2 is the paper's setting (32 heads, d = 128, bases 1M..5M); this plan has 4 heads, d = 128, bases "
        "10,000..40,000: Table 2's row is not comparable" in result.output
    )
    assert "shares 0 of 32 values with Table 2 at 0.01M resolution.\n" in result.output


def test_text_output_has_table_and_python_list():
    result = run("--heads", "4", "--b-min", "10000", "--b-max", "40000", "--stride", "5000", "--target", "4096")
    assert result.exit_code == 0, result.output
    assert "m = 1,000..4,090 step 1 (3,091 points)" in result.output
    python = result.output.split("Python:\n")[1].strip()
    bases = ast.literal_eval(python)
    assert len(bases) == 4 and bases[0] == 10_000
    for h, b in enumerate(bases):
        assert f"{h:>4}  {b:>14,}" in result.output


def test_uniform_and_ascending_order():
    result = run("--strategy", "uniform", "--heads", "5", "--order", "ascending", "--json")
    data = json.loads(result.output)
    assert data["bases"] == [1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000]


def test_attention_buckets_mode_reports_overlap_with_published():
    result = run("--strategy", "attention-buckets", "--json")
    data = json.loads(result.output)
    assert data["bases"] == [10_000, 18_000, 19_000, 20_500, 24_000, 24_500]
    assert data["published"] == [10_000, 17_500, 18_000, 19_000, 20_000, 25_000]
    assert data["common_with_published"] == [10_000, 18_000, 19_000]
    text = run("--strategy", "attention-buckets").output
    assert "in common: 3 of 6" in text


def test_grid_from_histogram_says_so(tmp_path):
    path = tmp_path / "lengths.parquet"
    LengthHistogram.from_lengths(np.array([4096] * 10 + [1000] * 30)).to_parquet(path)
    # natural regime at L = 4096: f(i) = 10·(4096 - i) + 30·max(1000 - i, 0), total 98,921,560. Mass rule (90%):
    # the mass above i is 5·(4095 - i)(4096 - i) <= 10% for i >= 2689 (1406·1407 = 1,978,242 <= 1,978,431.2),
    # so N* = 2689 + 1 and the grid covers 2690..4095
    args = ("--hist", str(path), "--target", "4096", "--heads", "3", "--stride", "1000000", "--json")
    result = run(*args, "--mass", "0.9")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["grid_reason"].startswith("distance grid from the frequency analysis")
    assert "90%" in data["grid_reason"]
    assert (data["grid"]["start"], data["grid"]["stop"], data["grid"]["step"]) == (2690, 4095, 1)
    # without --mass the one budget rule: T = 1T, f_T(i) >= 100B <=> 10 f(i) >= f(0) = 70,960 <=> i <= 3386
    data = json.loads(run(*args).output)
    assert "T = 1T training tokens, f_T(i) >= tau = 100B" in data["grid_reason"]  # not 1e+12 (a review)
    assert (data["grid"]["start"], data["grid"]["stop"]) == (3387, 4095)
    text = run("--hist", str(path), "--target", "4096", "--heads", "3", "--stride", "1000000").output
    assert "from the frequency analysis" in text


def test_grid_from_schedule(tmp_path):
    LengthHistogram.from_lengths(np.array([4096] * 3)).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "schedule.json").write_text(
        json.dumps(
            {
                "histogram": "h.parquet",
                "tau": "100B",
                "stages": [
                    {"L": 2048, "tokens": "200B", "regime": "concat"},
                    {"L": 4096, "tokens": "200B", "regime": "concat"},
                ],
            }
        )
    )
    # F(i) = 200B (2048 - i)/2048 + 200B (4096 - i)/4096 (first term only for i < 2048) >= 100B for i <= 2048
    args = ("--schedule", str(tmp_path / "schedule.json"), "--target", "4096", "--heads", "3", "--stride", "1000000")
    data = json.loads(run(*args, "--json").output)
    assert (data["grid"]["start"], data["grid"]["stop"], data["grid"]["step"]) == (2049, 4095, 1)
    assert "frequency analysis" in data["grid_reason"] and "schedule" in data["grid_reason"]
    # --L must agree with the schedule's longest window (it is no longer silently ignored)
    mismatch = run(*args, "--L", "2048")  # a usage error naming the option (a review: it named none)
    assert mismatch.exit_code == 2
    assert "Invalid value for '--L': 2,048, but the schedule's longest window is 4,096" in mismatch.output


@pytest.mark.parametrize("option", [("--random-sets", "5"), ("--seed", "3")])
def test_random_set_options_without_compare_are_usage_errors(option):
    """They set nothing without --compare and were dropped without a word (a review)."""
    result = run(*option)
    assert result.exit_code == 2
    assert f"Error: {option[0]} needs --compare (the random sets compared with the plan)" in result.output


def test_usage_errors_exit_2(tmp_path):
    odd = run("--head-dim", "127")  # was a FreqlabError (exit 1) from the waveform, while `plan rope` said exit 2
    assert odd.exit_code == 2 and "Invalid value for '--head-dim': 127 is odd: RoPE rotates pairs" in odd.output
    assert run("--strategy", "attention-buckets", "--head-dim", "127").exit_code == 2
    assert run("--grid", "1:2", "--hist", str(tmp_path / "x.parquet")).exit_code == 2
    assert run("--tokens", "1T").exit_code == 2  # needs --hist
    assert run("--strategy", "nope").exit_code == 2
    assert run("--strategy", "attention-buckets", "--hist", str(tmp_path / "x.parquet")).exit_code == 2


def test_help_has_an_example():
    result = run("--help")
    assert result.exit_code == 0 and "freqlab plan harpe --compare" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--strategy", "attention-buckets", "--heads", 2),
         "Invalid value for '--heads': attention-buckets starts from its seed bases 10,000, 18,000, 19,000: at least"),
        (("--strategy", "attention-buckets", "--heads", 3, "--b-min", 50000, "--b-max", 60000, "--stride", 500),
         "attention-buckets starts from its seed bases 10,000, 18,000, 19,000, outside 50,000..60,000"),
        (("--strategy", "attention-buckets", "--heads", 100),
         "Invalid value for '--heads': 100 bases requested but only 41 distinct seed + candidate bases"),
        (("--strategy", "attention-buckets", "--extend-to", "8K"),
         "--extend-to scales the peak-valley and uniform grid; attention-buckets searches its own distances"),
        (("--strategy", "uniform", "--stride", 5000), "--stride needs --strategy peak-valley or attention-buckets"),
        (("--grid", "32000:130880:32", "--extend-to", "4K"),
         "--grid sets the distances that --extend-to would scale the grid to: give one of them"),
        # its old name, --target, is as given (an adversary's review: dropped, or called the default)
        (("--strategy", "attention-buckets", "--target", "8K"),
         "--extend-to scales the peak-valley and uniform grid; attention-buckets searches its own distances"),
        (("--grid", "32000:130880:32", "--target", "4K"),
         "--grid sets the distances that --extend-to would scale the grid to: give one of them"),
    ],
)  # fmt: skip
def test_options_a_strategy_would_not_honour_are_usage_errors(args, message):
    """A review: attention-buckets gave 3 bases for --heads 2 and 10,000 below --b-min 50,000 (its seed), --heads 100
    was exit 1 naming no option, and --extend-to with it or with --grid, --stride with uniform, were dropped."""
    result = run(*map(str, args))
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output


def test_uniform_reads_no_stride_so_none_is_checked():
    """Uniform spreads the bases evenly (Eq. 9): a range narrower than the default stride is no error for it."""
    result = run("--strategy", "uniform", "--heads", "3", "--b-min", "1000000", "--b-max", "1000010")
    assert result.exit_code == 0, result.output


def test_a_stride_equal_to_the_range_as_written_has_one_candidate():
    """An adversary's review: the command checked the stride in binary floats (0.2 > 10000.3 - 10000.1 there) and
    refused what the search counts as one candidate, 10000.3."""
    result = run("--heads", "2", "--b-min", "10000.1", "--b-max", "10000.3", "--stride", "0.2", "--grid", "1000:1100")
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("[10000.1, 10000.3]")
