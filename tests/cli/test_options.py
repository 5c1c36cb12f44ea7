"""One size syntax for every count flag (K = 1024 for positions, decimal for tokens), renamed flags that keep their
old names, quantiles said to be nearest-rank wherever they are printed, HARPE comparison rows named by their seed.
(`freq --out`'s metadata: tests/cli/test_freq_cli.py; `plot scan --out DIR`: tests/plots/test_plot_cli.py.)"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from freqlab.cli import main
from freqlab.histogram import LengthHistogram
from freqlab.sizes import parse_count, parse_positions, parse_tokens


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def hist(tmp_path):
    path = tmp_path / "lengths.parquet"
    h = LengthHistogram.from_counts([2048], [1000], corpus="rows", tokenizer="tekken", meta={"sample_rate": None})
    h.to_parquet(path)
    return path


def test_positions_count_k_as_1024_tokens_as_1000():
    assert [parse_positions(v) for v in ("2k", "2K", "128K", "1.5K", "1M", 4096, "4_096")] == [
        2048, 2048, 131072, 1536, 1 << 20, 4096, 4096,
    ]  # fmt: skip
    assert [parse_tokens(v) for v in ("1t", "1T", "300B", "2e9", "1.5K", "10G")] == [
        10**12, 10**12, 3 * 10**11, 2 * 10**9, 1500, 10**10,
    ]  # fmt: skip
    assert parse_count("100k", "document count") == 100_000


@pytest.mark.parametrize(
    ("value", "message"),
    [("1.1K", "must be a positive integer"), ("2B", "not a length in positions"), ("0", "positive"), ("x", "not a")],
)
def test_bad_positions_are_named(value, message):
    from freqlab.errors import FreqlabError

    with pytest.raises(FreqlabError, match=message):
        parse_positions(value)


def test_every_window_flag_takes_the_size_syntax(hist):
    by_suffix, by_number = run("freq", hist, "--L", "2k", "--json"), run("freq", hist, "--L", "2048", "--json")
    assert by_suffix.exit_code == 0, by_suffix.output
    assert json.loads(by_suffix.output)["results"] == json.loads(by_number.output)["results"]
    assert "S = 43712" in run("plan", "string", "--L", "128K").output  # L = 131072
    rope = run("plan", "rope", "--L", "4K", "--extend-to", "16K", "--type", "linear")
    assert rope.output.startswith("== linear (factor 4)")
    bad = run("freq", hist, "--L", "2.5")
    assert bad.exit_code == 2 and "Invalid value for '--L'" in bad.output and "2.5" in bad.output


@pytest.mark.parametrize("command", [["scan"], ["freq"], ["stats"], ["plan", "string"], ["plot", "windows"]])
def test_a_window_beyond_2_to_the_30_is_a_usage_error_in_every_command(hist, command):
    """f(i) is computed as a dense array of L int64 values: freqlab takes L <= 2^30 (8 GiB), and every command
    refuses a larger one the same way, at parse time (exit 2), before anything is read."""
    extra = [hist] if command[0] in ("freq", "stats", "plot") else []
    result = run(*command, *extra, "--L", "3e9")
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--L': '3e9' is not in 1..1,073,741,824" in result.output


TAU_IS = "tau must be a positive number of occurrences, a whole number from 1 to 2^63 - 1 (e.g. 100B)"


@pytest.mark.parametrize("value", ["-5", "0", "1.5", "nan", "1e400", "x"])
@pytest.mark.parametrize(
    "command", [["plan", "string", "--L", "4K", "--hist", "HIST"], ["freq", "HIST"], ["stats", "HIST"]]
)
def test_a_tau_that_is_no_occurrence_count_says_what_tau_is(hist, command, value):
    """tau is an occurrence threshold (f_T(i) >= tau, STRING Fig. 2b): its error said "a token count must be a
    non-negative integer" for -5 (and "'0' is not >= 1" for 0)."""
    result = run(*[hist if a == "HIST" else a for a in command], "--tau", value)
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[-1] == f"Error: Invalid value for '--tau': {TAU_IS}, got {value!r}"
    assert run(*[hist if a == "HIST" else a for a in command], "--tau", "1").exit_code == 0  # the least tau


def test_help_states_both_bases():
    top = run("--help").output
    assert "K = 1024, so 2K = 2048" in top and "10^9" in top
    freq_help = run("freq", "--help").output
    assert "K = 1024" in freq_help and "10^9" in freq_help


def test_target_lengths_have_clear_names_and_the_old_ones_still_work(tmp_path):
    mixed = LengthHistogram.from_counts([100, 2048], [1000, 10]).to_parquet(tmp_path / "mixed.parquet")
    new = run("plan", "self-extend", "--L", "4K", "--extend-to", "16K", "--json")
    old = run("plan", "self-extend", "--L", 4096, "--target", 16384, "--json")
    assert new.exit_code == 0 and json.loads(new.output) == json.loads(old.output)
    assert json.loads(new.output)["N"] == 16384
    assert "--target " not in run("plan", "self-extend", "--help").output  # hidden, not advertised
    clash = run("plan", "self-extend", "--L", "4K", "--extend-to", "16K", "--target", "8K")
    assert clash.exit_code == 2 and "disagree" in clash.output
    missing = run("plan", "self-extend", "--L", "4K")
    assert missing.exit_code == 2 and "Missing option '--extend-to'" in missing.output
    up = ("plan", "upsample", "--hist", mixed, "--tokens", "1T", "--json")
    up_new = run(*up, "--L", "2K", "--effective-length", "1.5K")
    up_old = run(*up, "--L", 2048, "--target-length", 1536)
    assert up_new.exit_code == 0, up_new.output
    assert json.loads(up_new.output) == json.loads(up_old.output) and json.loads(up_new.output)["E"] == 1536


@pytest.mark.parametrize("command", [("plot", "harpe"), ("plan", "harpe")])
def test_a_renamed_flags_default_is_shown_as_every_other_default(command):
    """A review: click brackets a show_default string, so --help said "[default: (131072)]"."""
    text = " ".join(run(*command, "--help").output.split())
    assert "128K = 131072). [default: 131072]" in text and "(131072)" not in text


def test_stats_says_quantiles_are_nearest_rank(hist):
    result = run("stats", hist)
    assert result.exit_code == 0
    assert re.search(r"^quantiles +nearest rank \(the ceil\(q·n\)-th smallest length\)$", result.output, re.M)
    assert "nearest rank" in " ".join(run("stats", "--help").output.split())
    assert json.loads(run("stats", hist, "--json").output)["quantiles"] == "nearest-rank"


def test_harpe_compare_labels_each_random_set_with_its_own_seed():
    result = run(
        "plan",
        "harpe",
        "--compare",
        "--random-sets",
        "3",
        "--seed",
        "5",
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
    )
    assert result.exit_code == 0, result.output
    assert all(f"random #{k + 1} (seed {5 + k})" in result.output for k in range(3))
    from freqlab.plan.harpe import random_sets

    # each set is reproducible alone from the seed its row names
    assert random_sets(4, 1e4, 4e4, 5e3, count=3, seed=5)[2] == random_sets(4, 1e4, 4e4, 5e3, count=1, seed=7)[0]


def test_a_histogram_option_is_called_hist_everywhere():
    """`plot string-usage` took `--histogram`; it is `--hist` as in plan, schedule, calibrate and plot recipe (the old
    name still works: tests/plots/test_plot_cli.py uses it)."""
    for command in (("plot", "string-usage"), ("plot", "recipe"), ("plan", "string"), ("schedule",), ("calibrate",)):
        shown = run(*command, "--help").output
        assert "--hist " in shown and "--histogram" not in shown, command


@pytest.mark.parametrize(
    ("command", "option", "values"),
    [
        (["plan", "string", "--hist", "{hist}", "--L", "2048"], "--regime", ["natural", "pack"]),
        (["plan", "string", "--hist", "{hist}"], "--L", ["2048", "4096"]),
        (["plan", "self-extend", "--extend-to", "16K"], "--L", ["4K", "2K"]),
        (["stats", "{hist}"], "--L", ["2048", "1024"]),
        (["plot", "string-matrix", "--out", "{tmp}/m.png"], "--L", ["9", "10"]),
        (["plot", "exposure", "{hist}", "--out", "{tmp}/e.png"], "--regime", ["natural", "truncate"]),
    ],
)
def test_a_one_value_option_given_twice_is_a_usage_error_not_the_last_one(hist, tmp_path, command, option, values):
    # click keeps the last value of a plain option silently: `--regime natural --regime pack` planned for pack alone
    args = [a.format(hist=hist, tmp=tmp_path) for a in command]
    result = run(*args, option, values[0], option, values[1])
    assert result.exit_code == 2, result.output
    message = f"Invalid value for '{option}': given 2 times ({values[0]}, {values[1]}): this command takes one"
    shown = [v if option == "--regime" else str(parse_positions(v)) for v in values]
    assert message.replace(", ".join(values), ", ".join(shown)) in result.output
    assert run(*args, option, values[0]).exit_code == 0  # once is fine


@pytest.mark.parametrize("value", ["-5", "0"])
def test_a_length_below_one_gets_one_message(value):
    """-5 said "must be a non-negative integer" while 0 was refused too ("'0' is not in 1..")."""
    result = run("scan", "--L", value)
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        f"Error: Invalid value for '--L': a length in positions must be a positive integer, got {value!r}"
    )


@pytest.mark.parametrize(("text", "value"), [("0.9", 0.9), ("90%", 0.9), (" 12.5% ", 0.125), ("1e-3", 1e-3)])
def test_a_share_is_a_fraction_or_a_percentage(text, value):
    """The README writes --mass's default as 90%; '90%' was "not a valid float" (two reviews)."""
    from freqlab.cli.options import Share

    assert Share().convert(text, None, None) == pytest.approx(value)


@pytest.mark.parametrize(("text", "max_open"), [("100%", True), ("0%", False), ("150%", False), ("nan%", False)])
def test_a_share_out_of_its_range_is_a_usage_error(text, max_open):
    import click

    from freqlab.cli.options import Share

    with pytest.raises(click.BadParameter, match="is not a share in"):
        Share(max_open=max_open).convert(text, None, None)
    assert Share(max_open=False).convert("100%", None, None) == 1.0


def test_an_output_replaces_only_a_file_of_its_own_kind_freqlab_wrote(tmp_path, monkeypatch):
    """A review: plan string --usage-out and calibrate --out replaced any file: the scan's histogram being read, the
    corpus, a schedule, the runs file being fitted. Each now replaces only what it wrote (freq --out's rule)."""
    from click.testing import CliRunner

    from freqlab import LengthHistogram
    from freqlab.cli import main

    monkeypatch.chdir(tmp_path)
    LengthHistogram.from_counts([2048], [10]).to_parquet("h.parquet")
    (tmp_path / "runs.json").write_text('[{"tokens": "1T", "effective_length": 1280, "next_length": 1408}]\n')
    (tmp_path / "mine.json").write_text('{"a": 1}\n')
    (tmp_path / "c.jsonl").write_text('{"text": "a"}\n')
    import polars as pl

    pl.DataFrame({"x": [1]}).write_parquet("user.parquet")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    string = ("plan", "string", "--L", "2K", "--hist", "h.parquet", "--usage-out")
    calibrate = ("calibrate", "runs.json", "--hist", "h.parquet", "--L", "2K", "--out")
    cases = [
        ((*string, "h.parquet"), "'h.parquet' is a file read (--hist): give another file"),
        ((*string, "user.parquet"), "'user.parquet' exists and is a Parquet file freqlab did not write as a usage"),
        ((*string, "c.jsonl"), "'c.jsonl' names another format: a STRING usage table is written as Parquet"),
        ((*calibrate, "runs.json"), "'runs.json' is the runs read (FILE): give another file"),
        ((*calibrate, "mine.json"), "'mine.json' exists and is a file freqlab did not write: --out replaces only a"),
        ((*calibrate, "h.parquet"), "'h.parquet' names another format: a calibration is written as JSON"),
        # a review: JSON or Parquet under a token stream's or tokenizer's name
        ((*calibrate, "tau.npy"), "'tau.npy' names another format: a calibration is written as JSON"),
        ((*string, "u.tiktoken"), "'u.tiktoken' names another format: a STRING usage table is written as Parquet"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2 and message in " ".join(result.output.split()), (args, result.output)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    # what they wrote, they replace
    for args in ((*string, "u.parquet"), (*string, "u.parquet"), (*calibrate, "tau.json"), (*calibrate, "tau.json")):
        assert CliRunner().invoke(main, args).exit_code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("freq", "{hist}", "--L", 64, "--data-path", "x", "--train-samples", 5),
         "--data-path/--train-samples apply to --regime megatron alone, not given"),
        (("freq", "{hist}", "--L", 64, "--reset-attention-mask"), "--reset-attention-mask applies to --regime"),
        (("scan", "--megatron-seed", 3, "--out", "{tmp}/o"), "--megatron-seed applies to --regime megatron alone"),
        (("plan", "string", "--L", "4K", "--rope-theta", "1e6"), "--rope-theta needs --extend-to"),
        (("plan", "harpe", "--strategy", "uniform", "--peaks", 3), "--peaks needs --strategy peak-valley"),
        (("plan", "harpe", "--strategy", "attention-buckets", "--separation", 3), "--separation needs --strategy"),
        (("freq", "{hist}", "--L", 64, "--regime", "natural", "--seed", 7),
         "--seed orders the documents of --regime pack; none is given here: the natural f(i) would"),
        (("plot", "windows", "{hist}", "--L", 64, "--regime", "concat", "--seed", 7, "--out", "{tmp}/o.png"),
         "--seed orders the documents of --regime pack; none is given here: the concat f(i)"),
        (("freq", "{hist}", "--L", 64, "--regime", "megatron", "--data-path", "x", "--seed", 7),
         "--seed orders the documents of --regime pack; none is given here: the megatron f(i)"),
        (("stats", "{hist}", "--L", 64, "--regime", "concat", "--seed", 7),
         "--seed orders the documents of --regime pack; none is given here: the concat f(i)"),
        (("stats", "{hist}", "--seed", 7),
         "--seed orders the documents of --regime pack; none is given here: the natural"),
        (("plot", "scan", "{hist}", "--L", 64, "--regime", "natural", "--seed", 7, "--out", "{tmp}/o"),
         "--seed orders the documents of --regime pack; none is given here"),
        (("scan", "--regime", "natural", "--seed", 6, "--out", "{tmp}/o"),
         "--seed orders the documents of --regime pack or megatron and draws the --sample-rate sample; none is"),
    ],
)  # fmt: skip
def test_an_option_the_command_would_not_read_is_a_usage_error(tmp_path, args, message):
    """A review: each of these ran and exited 0, the option changing nothing and nothing said."""
    hist = LengthHistogram.from_lengths([10, 40]).to_parquet(tmp_path / "h.parquet")
    result = run(*(str(a).format(hist=hist, tmp=tmp_path) for a in args))
    assert result.exit_code == 2 and message in result.output, result.output
    assert not (tmp_path / "o").exists()  # refused before anything is counted


@pytest.mark.parametrize("command", [("stats",), ("freq", "--L", 64), ("plan", "string", "--L", 64, "--hist")])
def test_a_histogram_of_no_documents_is_an_error_naming_its_file(tmp_path, command):
    """A review: stats printed a median of 0, plan said "the histogram holds no documents" naming no file."""
    empty = LengthHistogram.from_counts([], []).to_parquet(tmp_path / "empty.parquet")
    args = (*command, empty) if command[0] == "plan" else (command[0], empty, *command[1:])
    result = run(*args)
    # plan's --hist is an option: a usage error naming it, as a folder given there is (a review)
    assert result.exit_code == (2 if command[0] == "plan" else 1), result.output
    assert f"{empty}: the histogram holds no documents (every one read was empty or skipped)" in result.output
    assert ("Invalid value for '--hist'" in result.output) == (command[0] == "plan")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("plan", "upsample", "--L", 64, "--hist", "{hist}", "--effective-length", 30, "--max-upweight", "nan"),
         "Invalid value for '--max-upweight': 'nan' is not a finite number"),
        (("plan", "rope", "--L", "4K", "--extend-to", "16K", "--partial-rotary-factor", "nan"),
         "Invalid value for '--partial-rotary-factor': 'nan' is not a finite number"),
        (("scan", "--estimate", "--target-hours", "nan"), "Invalid value for '--target-hours': 'nan' is not a finite"),
        (("plan", "upsample", "--L", 64, "--hist", "{hist}", "--effective-length", 30, "--long-hist", "{hist}"),
         "Invalid value for '--long-hist': {hist}: documents of 10 tokens; the documents added must be at least"),
    ],
)  # fmt: skip
def test_a_range_option_refuses_nan_and_a_long_histogram_too_short_names_its_file(tmp_path, args, message):
    """A review: click's FloatRange lets nan through (every comparison false): --max-upweight nan reached the
    library ("max_upweight must be ...", exit 1); --long-hist's documents below E named neither option nor file."""
    hist = LengthHistogram.from_lengths([10, 40]).to_parquet(tmp_path / "h.parquet")
    result = run(*(str(a).format(hist=hist) for a in args))
    assert result.exit_code == 2 and message.format(hist=hist) in " ".join(result.output.split()), result.output


def test_every_float_option_is_a_finite_float():
    """click's FloatRange passes nan (a review): the CLI's float options are FiniteFloat."""
    from pathlib import Path

    import freqlab.cli

    folder = Path(freqlab.cli.__file__).parent
    uses = [p.name for p in folder.glob("*.py") if "click.FloatRange(" in p.read_text() and p.name != "options.py"]
    assert uses == []
    assert (folder / "options.py").read_text().count("click.FloatRange(") == 0


def test_schedule_inputs_a_review_met_said_plainly(tmp_path):
    """An unknown preset was exit 1 after the built-in corpus was scanned; a mixture file with weights misspelt read
    'unit' as a source; a schedule file's name with a newline broke the report's first line."""
    result = run("schedule", "--preset", "llama4")
    assert result.exit_code == 2 and "Invalid value for '--preset': unknown recipe preset 'llama4'" in result.output
    hist = LengthHistogram.from_lengths([10, 40]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "mix.yaml").write_text("unit: share\nweigths: {a: 1}\n")
    result = run("stats", hist, "--weights", tmp_path / "mix.yaml")
    assert result.exit_code == 2 and "'unit' without 'weights'" in result.output, result.output
    odd = tmp_path / "a\nb.yaml"
    stages = '  - {name: "x\\ny", L: 16, tokens: 1K}\n  - {L: 32, tokens: 1K}\n'  # YAML's "\n": a newline
    odd.write_text(f"histogram: {hist}\nstages:\n{stages}")
    result = run("schedule", odd)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"histogram: {hist}" and lines[1].endswith("a\\nb.yaml: 2 stages, 2K tokens, longest window 32")
    assert all("\x1b" not in line for line in result.output.splitlines()) and "  x\\ny " in result.output


def test_outputs_refuse_every_file_the_command_reads_and_take_a_usage_table_from_before_its_header(tmp_path):
    """A second review: --usage-out /dev/stdout >> schedule.yaml appended Parquet to the schedule, --out /dev/stdout
    >> tau.json to the --tau-from file; a usage table written before the header was refused as not freqlab's."""
    import subprocess
    import sys

    import polars as pl

    hist = LengthHistogram.from_lengths([10, 40]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(f"histogram: {hist}\nstages:\n  - {{L: 2048, tokens: 1T}}\n")
    assert run("calibrate", "--out", tmp_path / "tau.json").exit_code == 0
    freqlab = [sys.executable, "-m", "freqlab"]
    for args, target, option in (
        (["plan", "string", "--schedule", "s.yaml", "--usage-out", "/dev/stdout"], "s.yaml", "--schedule"),
        (
            ["freq", "h.parquet", "--L", "64", "--tau-from", "tau.json", "--out", "/dev/stdout"],
            "tau.json",
            "--tau-from",
        ),
    ):
        before = (tmp_path / target).read_bytes()
        with open(tmp_path / target, "ab") as appended:
            result = subprocess.run(freqlab + args, cwd=tmp_path, stdout=appended, stderr=subprocess.PIPE, text=True)
        assert result.returncode == 2 and f"is a file read ({option}): give another file" in result.stderr
        assert (tmp_path / target).read_bytes() == before
    # and the files the schedule names (a fourth review: its weights file took the table)
    (tmp_path / "mix.yaml").write_text("unit: epochs\nweights: {(none): 1}\n")
    (tmp_path / "w.yaml").write_text(f"histogram: {hist}\nweights: mix.yaml\nstages:\n  - {{L: 2048, tokens: 1T}}\n")
    with open(tmp_path / "mix.yaml", "ab") as appended:
        args = ["plan", "string", "--schedule", "w.yaml", "--usage-out", "/dev/stdout"]
        result = subprocess.run(freqlab + args, cwd=tmp_path, stdout=appended, stderr=subprocess.PIPE, text=True)
    assert result.returncode == 2 and "is a file the schedule names: give another file" in result.stderr
    old = tmp_path / "usage.parquet"
    pl.DataFrame({"position": [0], "pairs_before": [1], "pairs_after": [1]}).write_parquet(old)
    assert run("plan", "string", "--L", "2K", "--usage-out", old).exit_code == 0


def test_a_second_reviews_messages(tmp_path):
    """An empty --long-hist said "long_lengths is empty"; calibrate --out on a
    scan's summary called it a file freqlab did not write; a preset's title named the layout --layout replaced."""
    hist = LengthHistogram.from_lengths([10, 40]).to_parquet(tmp_path / "h.parquet")
    empty = LengthHistogram.from_counts([], []).to_parquet(tmp_path / "e.parquet")
    result = run("plan", "upsample", "--L", 64, "--hist", hist, "--effective-length", 30, "--long-hist", empty)
    assert result.exit_code == 2 and f"{empty}: the histogram holds no documents" in result.output
    summary = tmp_path / "summary.json"
    summary.write_text('{\n  "corpus": {\n    "name": "x"\n  }\n}\n')
    result = run("calibrate", "--out", summary)
    assert result.exit_code == 2 and "exists and is a scan's summary: --out replaces only a calibration" in " ".join(
        result.output.split()
    )
    result = run("schedule", "--preset", "gemma3", "--layout", "global", "--hist", hist)
    assert result.exit_code == 0 and result.output.splitlines()[0].endswith("(layout global given instead)")


def test_a_third_reviews_inputs(tmp_path):
    """--weights mix.yaml and --layout config.json were no click paths, so --out /dev/stdout >> them appended Parquet;
    a bad --tau-from file was exit 1 naming no option; a title said "instead" of a layout the preset never had."""
    import os
    import subprocess
    import sys

    from freqlab.histogram import combine_sources

    combine_sources({"a": LengthHistogram.from_lengths([10]), "b": LengthHistogram.from_lengths([40])}).to_parquet(
        tmp_path / "h.parquet"
    )
    (tmp_path / "mix.yaml").write_text("unit: epochs\nweights: {a: 1, b: 2}\n")
    (tmp_path / "config.json").write_text('{"num_hidden_layers": 2}')
    for option, value in (("--weights", "mix.yaml"), ("--layout", "config.json")):
        before = (tmp_path / value).read_bytes()
        with open(tmp_path / value, "ab") as appended:
            args = ["freq", "h.parquet", "--L", "64", option, value, "--out", "/dev/stdout"]
            result = subprocess.run(
                [sys.executable, "-m", "freqlab", *args],
                cwd=tmp_path,
                stdout=appended,
                stderr=subprocess.PIPE,
                text=True,
            )
        assert result.returncode == 2 and f"is a file read ({option})" in result.stderr, result.stderr
        assert (tmp_path / value).read_bytes() == before
    # a choice's word that names a file in the folder is no file read (a fourth review: --regime natural, a log
    # named natural, was refused); a --weights path with ~ is one
    (tmp_path / "natural").write_text("log\n")
    with open(tmp_path / "natural", "ab") as appended:
        args = ["freq", "h.parquet", "--L", "64", "--regime", "natural", "--out", "/dev/stdout"]
        ran = subprocess.run(
            [sys.executable, "-m", "freqlab", *args], cwd=tmp_path, stdout=appended, stderr=subprocess.PIPE
        )
    assert ran.returncode == 0 and (tmp_path / "natural").read_bytes().startswith(b"log\nPAR1")
    before = (tmp_path / "mix.yaml").read_bytes()
    with open(tmp_path / "mix.yaml", "ab") as appended:
        args = ["freq", "h.parquet", "--L", "64", "--weights", "~/mix.yaml", "--out", "/dev/stdout"]
        ran = subprocess.run(
            [sys.executable, "-m", "freqlab", *args], cwd=tmp_path, stdout=appended, stderr=subprocess.PIPE,
            env={**os.environ, "HOME": str(tmp_path)},
        )  # fmt: skip
    assert ran.returncode == 2 and (tmp_path / "mix.yaml").read_bytes() == before
    (tmp_path / "tau.json").write_text('{"format": "freqlab-calibration", "tau": 5, "version": true}')
    result = run("freq", tmp_path / "h.parquet", "--L", 64, "--tau-from", tmp_path / "tau.json")
    assert (
        result.exit_code == 2 and "Invalid value for '--tau-from'" in result.output and "version true" in result.output
    )
    result = run("schedule", "--preset", "llama3", "--layout", "global", "--hist", tmp_path / "h.parquet")
    assert result.exit_code == 0 and result.output.splitlines()[0].endswith("(layout global given)")


@pytest.mark.parametrize(
    ("args", "suggested"),
    [
        (("plan", "string", "--l", "4K"), "'--L'"),
        (("plan", "string", "--s", "100"), "'--S'"),
        (("scan", "--l", "2K"), "'--L'"),
        (("scan", "--HELP", "x"), "'--help'"),  # click's own options too (an adversary's review: --L was said)
    ],
)
def test_an_option_spelled_in_the_wrong_case_is_suggested_in_the_right_one(args, suggested):
    """Options are case-sensitive: a new user's ``--l 4K`` was told "Did you mean one of: --S, --W" (difflib's)."""
    result = run(*args)
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == f"Error: No such option '{args[-2]}'. Did you mean {suggested}?"
