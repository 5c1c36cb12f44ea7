"""``freqlab calibrate`` and ``--tau-from`` on the commands that take ``--tau``."""

import json
import math

from click.testing import CliRunner

from freqlab import LengthHistogram
from freqlab.cli import main


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_without_a_file_it_fits_the_paper_example():
    result = run("calibrate")
    assert result.exit_code == 0, result.output
    assert "TinyLlama 1.3B, L = 2048  1,280" in result.output
    assert "tau = 100B (geometric mean of 2 points); range 100B .. 100B" in result.output


def test_a_file_of_no_rows_is_named_and_a_measured_range_written_as_its_rows_intervals(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.csv").write_text("tokens,effective_length\n")  # a review: "no calibration points", no file
    result = run("calibrate", "empty.csv")
    assert result.exit_code == 1 and "empty.csv: no calibration points (it holds no rows)" in result.output
    LengthHistogram.from_counts([2048], [1000]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "runs.csv").write_text("tokens,effective_length,next_length\n1T,1280,1408\n4T,1792,1920\n")
    result = run("calibrate", "runs.csv", "--hist", "h.parquet", "--L", "2K")
    # f_T(E) = T (2048 - E) / 2048: (312.5B, 375B] and (250B, 500B]; the range (250B, 500B] as they are written
    assert "step" not in result.output and "range (250B, 500B]" in result.output, result.output
    (tmp_path / "mixed.csv").write_text("label,effective_length,tokens,occurrences\na,1280,,50B\nb,1280,1T,\n")
    result = run("calibrate", "mixed.csv", "--hist", "h.parquet", "--L", "2K")  # a allows 50B itself
    assert "range [50B, 375B]" in result.output, result.output


def test_a_runs_file_is_fitted_and_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # --hist is relative to the working folder, as every path on the command line
    LengthHistogram.from_counts([2048], [1000]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "runs.csv").write_text("tokens,effective_length,next_length\n1T,1280,1408\n4T,1792,1920\n")
    result = run(
        "calibrate", tmp_path / "runs.csv", "--hist", "h.parquet", "--L", "2K", "--out", tmp_path / "tau.json", "--json"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [p["tau"] for p in data["points"]] == [375e9, 500e9]  # f_T(E) = T (2048 - E) / 2048
    assert data["tau"] == math.isqrt(375 * 10**9 * 500 * 10**9) and data["range"] == [250e9, 500e9]  # rounded down
    assert json.loads((tmp_path / "tau.json").read_text())["tau"] == data["tau"]
    again = run("calibrate", tmp_path / "tau.json")  # its own output fed back: said so, not "unknown keys" (a review)
    assert again.exit_code == 1 and "a calibration written by `freqlab calibrate --out`" in again.output, again.output
    assert "give it to --tau-from" in again.output
    # a probe's report: said so, not 'unknown key(s) figure, model, results, ruler_command beside "points"'
    probe = {"model": "m", "results": [], "ruler_command": "python prepare.py ...", "figure": None}
    (tmp_path / "probe.json").write_text(json.dumps(probe))
    report = run("calibrate", tmp_path / "probe.json")
    assert report.exit_code == 1 and "probe.json: a `freqlab probe --json` report (one model's measurement)" in (
        " ".join(report.output.split())
    ), report.output


def test_tau_from_sets_tau_of_freq_and_plan(tmp_path):
    hist = tmp_path / "h.parquet"
    LengthHistogram.from_counts([2048], [1000]).to_parquet(hist)
    (tmp_path / "tau.json").write_text(json.dumps({"format": "freqlab-calibration", "tau": 500e9}))
    tau_from = run("freq", hist, "--tokens", "1T", "--json", "--tau-from", tmp_path / "tau.json")
    given = run("freq", hist, "--tokens", "1T", "--json", "--tau", "500B")
    assert tau_from.exit_code == 0, tau_from.output
    assert json.loads(tau_from.output) == json.loads(given.output)
    plan = run(
        "plan", "string", "--L", "2K", "--hist", hist, "--tokens", "1T", "--json", "--tau-from", tmp_path / "tau.json"
    )
    assert plan.exit_code == 0, plan.output
    # f_T(i) = 1e12 (2048 - i) / 2048 >= 500B up to i = 1024: the well-trained range N* = 1025
    assert json.loads(plan.output)["well_trained"]["N_star"] == 1025


def test_tau_and_tau_from_together_is_a_usage_error(tmp_path):
    (tmp_path / "tau.json").write_text(json.dumps({"format": "freqlab-calibration", "tau": 500e9}))
    result = run("plan", "string", "--L", "2K", "--tau", "1B", "--tau-from", tmp_path / "tau.json")
    assert result.exit_code == 2 and "give --tau or --tau-from, not both" in result.output


def test_a_bad_runs_file_is_one_error_line(tmp_path):
    (tmp_path / "runs.csv").write_text("tokens,effective_length\n1T,oops\n")
    result = run("calibrate", tmp_path / "runs.csv", "--L", "2K", "--hist", "x.parquet")
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: {tmp_path / 'runs.csv'}: line 2: effective_length: not a length in positions: 'oops' "
        "(use e.g. 2048, 2K or 128K (K = 1024))"
    ]


def test_options_for_the_rows_of_a_file_are_refused_without_one(tmp_path):
    # calibrate --hist X without FILE fitted the paper's points and ignored --hist (even a missing one)
    for args, named in [
        (("--hist", tmp_path / "missing.parquet"), "--hist applies"),
        (("--L", "4K", "--regime", "concat"), "--regime, --L apply"),
    ]:
        result = run("calibrate", *args)
        assert result.exit_code == 2, result.output
        assert f"Error: {named} to the rows of FILE; give FILE" in result.output


def test_keys_that_would_not_be_read_are_refused(tmp_path):
    """A review: {"points": [...], "L": 1024} ignored L (the CSV's unknown columns are refused); a tau file with
    "tau" twice took the last, and one of another version was read as this one's."""
    runs = tmp_path / "runs.json"
    runs.write_text('{"points": [{"tokens": "1T", "effective_length": 1280}], "L": 1024, "hist": "h"}')
    result = run("calibrate", runs)
    assert result.exit_code == 1 and 'unknown key(s) L, hist beside "points"' in result.output, result.output
    hist = LengthHistogram.from_counts([2048], [1000]).to_parquet(tmp_path / "h.parquet")
    for text, message in (
        ('{"format": "freqlab-calibration", "tau": 5, "tau": 7}', "key 'tau' given twice"),
        (
            '{"format": "freqlab-calibration", "version": 2, "tau": 5}',
            "version 2; this freqlab reads calibrations of version 1",
        ),
    ):
        (tmp_path / "tau.json").write_text(text)
        result = run("freq", hist, "--L", "2K", "--tau-from", tmp_path / "tau.json")
        assert result.exit_code != 0 and message in " ".join(result.output.split()), result.output
