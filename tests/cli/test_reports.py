"""The command line prints what the API's results say, and nothing of its own: for every command, its text is the
result's ``report()`` (after the lines that say where the inputs came from: the histogram, the budget rule) and its
``--json`` is the result's ``to_dict()`` (with what the command adds: the mix, the budget).

Each row of :data:`CASES` names a command line and how to get the same result from the API; the test runs both.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from freqlab.cli import main
from freqlab.frequency import DEFAULT_TAU
from freqlab.frequency.budget import training_budget
from freqlab.frequency.calibrate import PAPER_POINTS, calibrate
from freqlab.frequency.exposure import source_tails, tails_report
from freqlab.frequency.layouts import layout_frequency
from freqlab.frequency.schedule import load_schedule, schedule_frequency
from freqlab.histogram import LengthHistogram, combine_sources
from freqlab.plan import harpe
from freqlab.plan.rope_scaling import plan_rope_scaling
from freqlab.plan.self_extend import evaluate_self_extend, plan_self_extend
from freqlab.plan.string import plan_string
from freqlab.plan.upsample import plan_upsample

HIST = LengthHistogram.from_counts([512, 2048, 6000], [300, 1000, 40], corpus="rows")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reports")
    HIST.to_parquet(folder / "lengths.parquet")
    split = combine_sources(
        {"web": LengthHistogram.from_lengths([300] * 50), "books": LengthHistogram.from_lengths([9000] * 3)}
    )
    split.to_parquet(folder / "split.parquet")
    (folder / "s.yaml").write_text(
        "histogram: lengths.parquet\ntitle: two stages\nnotes: [a note]\n"
        "stages:\n  - {L: 2048, tokens: 1T}\n  - {L: 4096, tokens: 100B, regime: concat}\n"
    )
    return folder


def budget(tokens=None, tau=DEFAULT_TAU) -> str:
    """The budget line a command prints before a plan from a histogram."""
    b = training_budget(tokens)
    return f"budget     {b.describe()}; tau = " + {DEFAULT_TAU: "100B"}.get(tau, str(tau))


def seconds_dropped(data: dict) -> dict:
    """A HARPE plan's JSON without the time the search took (the only number that changes from run to run)."""
    return {key: value for key, value in data.items() if key != "seconds"}


def timing_dropped(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("  time: "))


def _string(d):
    return plan_string(4096)


def _string_hist(d):
    return plan_string(2048, histogram=LengthHistogram.read_parquet(d / "lengths.parquet"), tokens=400e9)


def _self_extend(d):
    return plan_self_extend(4096, 16384)


def _rope(d):
    return plan_rope_scaling(4096, 16384, "yarn")


def _upsample(d):
    return plan_upsample(LengthHistogram.read_parquet(d / "lengths.parquet"), 4096, 3072, 10**11)


def _harpe(d):
    return harpe.uniform_plan(5, 1e6, 5e6)


def _peak_valley(d):
    return harpe.peak_valley_search(4, 10_000, 40_000, 5_000, target=4096)


def _schedule(d):
    return schedule_frequency(load_schedule(d / "s.yaml"))


#: (id, command line with {d} for the files' folder, the API's result, text before its report, text after it,
#:  what --json adds or None when the command line has no --json of the same result)
CASES = [
    ("plan string", ["plan", "string", "--L", "4K"], _string, "", "", {}),
    (
        "plan string --hist",
        ["plan", "string", "--hist", "{d}/lengths.parquet", "--L", "2048", "--tokens", "400B"],
        _string_hist,
        budget(400 * 10**9) + "\n",
        "",
        {},
    ),
    (
        "plan self-extend",
        ["plan", "self-extend", "--L", "4K", "--extend-to", "16K"],
        _self_extend,
        "",
        "",
        {"evaluated": None},
    ),
    ("plan rope", ["plan", "rope", "--L", "4K", "--extend-to", "16K", "--type", "yarn"], _rope, "", "\n", None),
    (
        "plan upsample",
        [
            "plan",
            "upsample",
            "--hist",
            "{d}/lengths.parquet",
            "--L",
            "4K",
            "--tokens",
            "100B",
            "--effective-length",
            "3K",
        ],
        _upsample,
        budget(10**11) + "\n",
        "",
        {"budget": training_budget(10**11).to_dict()},
    ),
    ("plan harpe", ["plan", "harpe", "--strategy", "uniform", "--heads", "5"], _harpe, "", "", None),
    (
        "plan harpe peak-valley",
        [
            "plan",
            "harpe",
            "--heads",
            "4",
            "--b-min",
            "10000",
            "--b-max",
            "40000",
            "--stride",
            "5000",
            "--extend-to",
            "4K",
        ],
        _peak_valley,
        "",
        "",
        None,
    ),
    ("schedule", ["schedule", "{d}/s.yaml"], _schedule, "", "", {}),
]


def invoke(args, d) -> str:
    result = CliRunner().invoke(main, [a.format(d=d) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(("args", "api", "before", "after", "extra"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_text_is_the_results_report(files, args, api, before, after, extra):
    result = api(files)
    assert timing_dropped(invoke(args, files)) == timing_dropped(before + result.report() + "\n" + after)


@pytest.mark.parametrize(
    ("args", "api", "extra"),
    [(c[1], c[2], c[5]) for c in CASES if c[5] is not None],
    ids=[c[0] for c in CASES if c[5] is not None],
)
def test_the_json_is_the_results_to_dict(files, args, api, extra):
    expected = json.loads(json.dumps({**api(files).to_dict(), **extra}))
    assert json.loads(invoke([*args, "--json"], files)) == expected


def test_rope_prints_each_types_report_and_its_json_lists_their_dicts(files):
    plans = [plan_rope_scaling(4096, 16384, t) for t in ("linear", "yarn")]
    args = ["plan", "rope", "--L", "4K", "--extend-to", "16K", "--type", "linear", "--type", "yarn"]
    assert invoke(args, files) == "".join(p.report() + "\n\n" for p in plans)
    data = json.loads(invoke([*args, "--json"], files))
    assert data["plans"] == json.loads(json.dumps([p.to_dict() for p in plans]))


def test_self_extend_with_a_given_group_adds_the_checks_report(files):
    plan = plan_self_extend(4096, 16384)
    check = evaluate_self_extend(4096, 8, 1024, 16384, well_trained=plan.N_star)
    args = ["plan", "self-extend", "--L", "4K", "--extend-to", "16K", "--group", "8", "--window", "1024"]
    assert invoke(args, files) == f"{plan.report()}\n\n{check.report()}\n"
    assert json.loads(invoke([*args, "--json"], files))["evaluated"] == json.loads(json.dumps(check.to_dict()))


def test_harpe_in_ascending_order_with_the_comparison(files):
    plan = harpe.uniform_plan(5, 1e6, 5e6)
    compared = harpe.compare_sets(plan, random_count=1)[1:]  # the uniform set is the plan itself
    args = [
        "plan",
        "harpe",
        "--strategy",
        "uniform",
        "--heads",
        "5",
        "--order",
        "ascending",
        "--compare",
        "--random-sets",
        "1",
    ]
    expected = f"{plan.report('ascending')}\n\n{harpe.comparison_report(plan, compared)}\n"
    assert timing_dropped(invoke(args, files)) == timing_dropped(expected)
    data = json.loads(invoke([*args, "--json"], files))
    assert seconds_dropped(data) == seconds_dropped(json.loads(json.dumps({
        **plan.to_dict("ascending"), "compare": [c.to_dict() for c in compared], "table2_note": harpe.TABLE2_NOTE,
    })))  # fmt: skip


def test_attention_buckets_is_its_search_report(files):
    bases = harpe.attention_buckets_search()
    search = harpe.BucketsSearch(bases, harpe.BUCKETS_BASES, list(harpe.BUCKETS_CANDIDATES), harpe.BUCKETS_GRID, 128)
    args = ["plan", "harpe", "--strategy", "attention-buckets"]
    assert invoke(args, files) == search.report() + "\n"
    assert json.loads(invoke([*args, "--json"], files)) == json.loads(json.dumps(search.to_dict()))


def test_calibrate_prints_where_the_points_come_from_then_the_fits_report(files):
    fit = calibrate(PAPER_POINTS)
    output = invoke(["calibrate"], files)
    assert output == f"points from built-in example: STRING (An et al., ICLR 2025) Sec. 3, Fig. 2b\n{fit.report()}\n"
    data = json.loads(invoke(["calibrate", "--json"], files))
    assert {k: v for k, v in data.items() if k != "source"} == json.loads(json.dumps(fit.to_dict()))


def test_freq_prints_each_frequencys_report_then_the_layouts_and_the_tails(files):
    h = LengthHistogram.read_parquet(files / "split.parquet")
    tokens = training_budget(None).tokens
    windows, regimes = (16384, 2048), ("natural", "concat")
    args = [
        "freq",
        "{d}/split.parquet",
        "--L",
        "16K",
        "--L",
        "2K",
        "--regime",
        "natural",
        "--regime",
        "concat",
        "--layout",
        "3*swa512+global",
        "--tails",
    ]
    lines = invoke(args, files).splitlines()
    reports = [h.frequency(L, r).report(tokens) for L in windows for r in regimes]
    layouts = [
        layout_frequency(h.lengths, h.counts, L, "3*swa512+global", r).report(tokens=tokens)
        for L in windows
        for r in regimes
    ]
    tails = tails_report(source_tails(h, 16384, "natural", [2048, 4096, 8192]), 16384)  # below 16K, with L/8
    assert "\n".join(lines[2:]) == "\n".join([*reports, *layouts, tails])  # after the histogram and budget lines
    data = json.loads(invoke([*args, "--json"], files))
    assert data["results"] == json.loads(
        json.dumps([h.frequency(L, r).to_dict(tokens) for L in windows for r in regimes])
    )
    assert tails_report([], 2048).startswith("tails: no threshold below L=2,048")


def test_stats_prints_the_histograms_report_first(files):
    h = LengthHistogram.read_parquet(files / "lengths.parquet")
    output = invoke(["stats", "{d}/lengths.parquet", "--L", "4K"], files)
    assert output.startswith(h.report(4096) + "\n\n")


def test_a_schedules_own_tau_is_used_unless_tau_is_given(files):
    """`freqlab schedule` and `freqlab plot recipe` read --tau as the plans do: not given, the schedule's own tau
    (before, their --tau defaulted to 100B and overrode it)."""
    schedule = files / "tau.yaml"
    schedule.write_text((files / "s.yaml").read_text().replace("title:", "tau: 1T\ntitle:"))
    result = schedule_frequency(load_schedule(schedule))
    data = json.loads(invoke(["schedule", str(schedule), "--json"], files))
    assert data["tau"] == 1e12 and data["effective_length"] == result.effective_length(1e12)
    assert json.loads(invoke(["schedule", str(schedule), "--tau", "100B", "--json"], files))["tau"] == 1e11
