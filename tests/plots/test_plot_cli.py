"""`freqlab plot ...`: thin commands over freqlab.plots; files written where asked, one-line errors."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from freqlab import LengthHistogram
from freqlab.cli import main


@pytest.fixture(scope="module")
def hist_file(tmp_path_factory, sourced):
    return str(sourced.to_parquet(tmp_path_factory.mktemp("h") / "lengths.parquet"))


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_frequency_one_and_three_regimes(tmp_path, hist_file):
    result = run("plot", "frequency", hist_file, "--L", 1024, "--regime", "natural", "--out", tmp_path / "f1.pdf")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"wrote {tmp_path / 'f1.pdf'}"
    assert b"/FontFile2" in (tmp_path / "f1.pdf").read_bytes()
    result = run(
        "plot",
        "frequency",
        hist_file,
        "--regime",
        "natural",
        "--regime",
        "uniform",
        "--regime",
        "concat",
        "--size",
        "two-column",
        "--out",
        tmp_path / "fig1",
        "--format",
        "png",
        "--format",
        "svg",
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"files": [str(tmp_path / "fig1.png"), str(tmp_path / "fig1.svg")]}


@pytest.mark.parametrize(
    "args",
    [
        ["windows", "{hist}", "--L", "1024", "--L", "2048", "--tokens", "100B"],
        ["effective-length", "{hist}", "--L", "2048", "--tau", "50B"],
        ["sources", "{hist}", "--L", "2048"],
        ["string-matrix", "--L", "9", "--S", "3", "--W", "1"],
        ["string-usage", "--L", "2048", "--S", "683", "--histogram", "{hist}"],
        ["harpe", "--base", "10000", "--base", "20000", "--target", "4096"],
        ["harpe", "--envelopes", "--heads", "4", "--target", "4096"],
        ["recipe", "--preset", "gemma3", "--hist", "{hist}"],
        ["exposure", "{hist}", "--L", "8K"],
    ],
)
def test_each_command_writes_a_png(tmp_path, hist_file, args):
    out = tmp_path / "fig.png"
    result = run("plot", *[a.format(hist=hist_file) for a in args], "--out", out, "--size", "3.5,2.5", "--dpi", 60)
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_exposure_without_L_names_a_longest_document_beyond_the_largest_window(tmp_path):
    path = LengthHistogram(np.array([100, 2**40]), np.array([3, 1])).to_parquet(tmp_path / "huge.parquet")
    result = run("plot", "exposure", path, "--out", tmp_path / "fig.png")
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        "Error: the longest document has 1,099,511,627,776 tokens, more than the largest window freqlab supports "
        "(2^30 = 1,073,741,824): give a window with --L (e.g. --L 128K)"
    )


def test_scan_command_writes_into_the_folder_it_is_given(tmp_path, hist_file):
    out = tmp_path / "figs"
    result = run("plot", "scan", hist_file, "--L", 2048, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    files = [Path(f) for f in json.loads(result.output)["files"]]
    assert [f.name for f in files] == ["frequency_L2048.png", "effective_length.png", "sources.png"]
    assert {f.parent for f in files} == {out}
    assert sorted(p.name for p in out.iterdir()) == sorted([".written.json", *(f.name for f in files)])  # their list
    assert not (out / "figures").exists()  # --out DIR means DIR (freqlab scan --plot writes into OUT/figures)


@pytest.mark.parametrize("name", ["x.png", "fig.PDF", "y.svg"])
def test_scan_command_refuses_a_figure_file_name_instead_of_making_a_folder_of_it(tmp_path, hist_file, name):
    result = run("plot", "scan", hist_file, "--L", 2048, "--out", tmp_path / name)
    assert (
        result.exit_code == 2
        and "names a figure file, but plot scan writes several figures into a folder" in result.output
    )
    assert not (tmp_path / name).exists()


def test_errors(tmp_path, hist_file):
    missing = run("plot", "frequency", tmp_path / "nope.parquet", "--out", tmp_path / "x.png")
    assert missing.exit_code == 1 and "no such histogram file" in missing.output
    suffix = run("plot", "frequency", hist_file, "--out", tmp_path / "x.jpg")
    assert suffix.exit_code == 1 and "give a .png, .pdf or .svg file name" in suffix.output
    size = run("plot", "frequency", hist_file, "--out", tmp_path / "x.png", "--size", "a4")
    assert size.exit_code == 2
    assert "Example" in run("plot", "frequency", "--help").output


@pytest.mark.parametrize(
    ("args", "option", "message"),
    [
        (("string-matrix", "--L", 9, "--S", 3, "--W", 3), "--W", "W = 3 must be smaller than the shift S = 3"),
        (("string-matrix", "--S", 9), "--S", "the shift S must be an integer with 0 < S < L = 9, got 9"),
        (("string-usage", "--L", "4K", "--S", 5000), "--S", "0 < S < L = 4096, got 5000"),
        (("harpe", "--base", "1e400"), "--base", "'1e400' is not a finite number"),  # drew "b = infM", exit 0
        (("harpe", "--base", "0"), "--base", "0.0 is not in the range x>1"),
        (("harpe", "--envelopes", "--heads", 200), "--heads", "setting (1M..5M, stride 30K) has 134: give at most"),
        # a review: --envelopes drew the paper's sets, byte for byte the same figure as without --base
        (("harpe", "--envelopes", "--base", "1e6"), "--base", "--envelopes draws the searched, uniform and Table 2"),
    ],
)
def test_option_values_that_contradict_each_other_are_usage_errors_as_in_plan(tmp_path, args, option, message):
    """A review met these as exit 1 with the library's words, where plan string's --S and --W exit 2 (and the
    advice for --heads named options plot harpe does not have)."""
    result = run("plot", *args, "--out", tmp_path / "x.png")
    assert result.exit_code == 2, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith(f"Error: Invalid value for '{option}'") and message in last
    assert not (tmp_path / "x.png").exists()


def test_an_output_that_cannot_be_written_is_one_line_naming_it(tmp_path, hist_file):
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where a folder would have to be
    for out, named in (("/proc/x.png", "/proc/x.png"), (blocker / "x.svg", blocker / "x.svg")):
        result = run("plot", "frequency", hist_file, "--out", out)
        assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
        assert result.output.startswith(f"Error: {named}: cannot write (") and "Errno" not in result.output


@pytest.mark.parametrize("out", ["figs/", "figs/.", "new/.."])
def test_an_out_that_names_a_folder_is_refused_with_a_format_as_without(tmp_path, hist_file, monkeypatch, out):
    """A new user: ``--out newfigs/ --format png`` wrote ./newfigs.png (pathlib drops the slash; ``x/.`` wrote x.pdf,
    ``y/..`` made y/...pdf), where every other output refuses a name that is a folder's."""
    monkeypatch.chdir(tmp_path)
    for formats in (["--format", "png"], []):
        result = run("plot", "frequency", hist_file, "--out", out, *formats)
        assert (
            result.exit_code == 1
            and result.output == f"Error: {out}: cannot write (it names a folder: give a file's name)\n"
        )
    assert sorted(os.listdir(tmp_path)) == []


def test_cli_formats_are_the_export_formats():
    from freqlab.cli.plot import FORMATS
    from freqlab.plots.style import FORMATS as EXPORT_FORMATS

    assert FORMATS == EXPORT_FORMATS == ("png", "pdf", "svg")


def test_a_figure_is_written_whole_through_links_as_every_output_is(tmp_path, hist_file):
    # figures went to fig.savefig directly: no atomic write, links followed as they came
    (tmp_path / "real.png").write_bytes(b"old")
    (tmp_path / "link.png").symlink_to("real.png")
    result = run("plot", "frequency", hist_file, "--out", tmp_path / "link.png")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "link.png").is_symlink() and (tmp_path / "real.png").read_bytes().startswith(b"\x89PNG")
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


@pytest.mark.parametrize("command", ["sources", "string-usage"])
def test_the_pack_order_of_a_figure_takes_its_seed(tmp_path, hist_file, sourced, command, monkeypatch):
    """A review: `plot sources` and `plot string-usage` took --regime pack and refused --seed (the README: --seed
    sets the order in plot as in scan and freq); the figure drew seed 0's f."""
    import freqlab.frequency as frequency
    import freqlab.plots.sources as sources

    seen = []
    real = frequency.position_frequency
    for module in (frequency, sources):
        monkeypatch.setattr(
            module, "position_frequency", lambda *a, **kw: seen.append(kw.get("seed")) or real(*a, **kw)
        )
    args = ["--hist", hist_file] if command == "string-usage" else [hist_file]
    result = run("plot", command, *args, "--L", 1024, "--regime", "pack", "--seed", 7, "--out", tmp_path / "x.png")
    assert result.exit_code == 0, result.output
    assert seen and set(seen) == {7}
    unused = run("plot", command, *args, "--L", 1024, "--seed", 7, "--out", tmp_path / "y.png")
    assert unused.exit_code == 2 and "--seed orders the documents of --regime pack" in unused.output


@pytest.mark.parametrize(
    ("args", "given"),
    [(("--regime", "pack"), "--regime"), (("--seed", "3"), "--seed"), (("--weights", "a=1"), "--weights")],
)
def test_string_usage_refuses_frequency_options_without_a_histogram(tmp_path, args, given):
    """A review: without --hist they drew the same figure, byte for byte, as without them (plan string refuses)."""
    result = run("plot", "string-usage", "--L", "2K", *args, "--out", tmp_path / "u.png")
    assert result.exit_code == 2 and not (tmp_path / "u.png").exists()
    assert result.output.strip().splitlines()[-1] == (
        f"Error: {given} needs --hist (the frequency drawn beside the positions)"
    )


def test_harpe_heads_beside_bases_is_refused(tmp_path):
    """An adversary: `plot harpe --base 1e6 --heads 100000` drew the bases given; --heads sized nothing."""
    result = run("plot", "harpe", "--base", "1e6", "--heads", 8, "--out", tmp_path / "h.png")
    assert result.exit_code == 2 and not (tmp_path / "h.png").exists()
    assert (
        result.output.strip().splitlines()[-1]
        == "Error: --heads needs --envelopes or no --base (the bases it searches)"
    )


def test_string_usage_takes_plan_strings_default_shift(tmp_path, monkeypatch):
    """`plot string-usage --L 4K` asked for --S, where `plan string --L 4K` takes L/3 rounded up to 64 (1408): the
    figure of the plan's own default needed a number looked up elsewhere (new user)."""
    import freqlab.plots.string as string_plots

    drawn = []
    real = string_plots.plot_string_usage
    monkeypatch.setattr(
        string_plots, "plot_string_usage", lambda L, S, W, **kw: drawn.append((L, S, W)) or real(L, S, W, **kw)
    )
    result = run("plot", "string-usage", "--L", "4K", "--out", tmp_path / "u.png")
    assert result.exit_code == 0, result.output
    assert drawn == [(4096, 1408, 128)]


def test_a_figure_of_many_curves_is_sized_by_its_curves(tmp_path, monkeypatch):
    """A review: plot exposure had no memory check (2.65 GB drawn under a 300 MB bound), and the others' flat 160
    bytes per position let 16 sources at 40M positions pass (~24 GB needed): each curve beyond the first adds."""
    from freqlab.histogram import combine_sources

    parts = {f"s{i}": LengthHistogram.from_counts([100 + i, 3000], [5, 2]) for i in range(16)}
    path = combine_sources(parts).to_parquet(tmp_path / "src16.parquet")
    monkeypatch.setenv("FREQLAB_MEMORY_BYTES", str(300_000_000))
    for command in ("exposure", "sources"):
        result = run("plot", command, path, "--L", "1M", "--out", tmp_path / f"{command}.png")
        assert result.exit_code == 1 and result.output.strip().splitlines()[-1] == (
            "Error: --L 1,048,576 (16 sources) needs ~838.9 MB of memory (a figure of 17 curves over positions, "
            "800 bytes per position), more than the 300.0 MB available"
        ), result.output
    monkeypatch.setenv("FREQLAB_MEMORY_BYTES", str(80_000_000))  # one curve's 65.5 MB fits, three curves' do not
    windows = run("plot", "windows", path, *("--L", "400K", "--L", "300K", "--L", "200K"), "--out", tmp_path / "w.png")
    assert windows.exit_code == 1 and "Error: --L 409,600 (3 windows) needs ~98.3 MB of memory" in windows.output
    # a review: effective-length, several regimes of frequency and plot scan were sized as one curve (160 bytes a
    # position) and took 2-3.4x that (540 bytes a position for 8 windows of effective-length)
    three = ("--L", "400K", "--L", "300K", "--L", "200K")
    effective = run("plot", "effective-length", path, *three, "--out", tmp_path / "e.png")
    assert (
        "Error: --L 409,600 (3 windows) needs ~131.1 MB of memory (a figure of 3 curves over positions, 320 bytes"
        in (effective.output)
    )
    regimes = ("--regime", "natural", "--regime", "concat")
    frequency = run("plot", "frequency", path, "--L", "400K", *regimes, "--out", tmp_path / "f.png")
    assert "Error: --L 409,600 (2 regimes) needs ~81.9 MB of memory (a figure of 2 curves" in frequency.output
    figures = run("plot", "scan", path, "--L", "100K", "--regime", "natural", "--out", tmp_path / "figs")
    assert figures.exit_code == 1 and (
        "Error: --L 102,400 (1 window, 1 regime, 16 sources) needs ~106.5 MB of memory (a figure of 18 curves over "
        "positions, 1040 bytes per position)"
    ) in " ".join(figures.output.split())


def test_effective_length_names_its_own_budget_option(tmp_path, hist_file):
    """A review: it reported "T = 300B training tokens (--tokens)", an option it does not have (its is --budget)."""
    given = run("plot", "effective-length", hist_file, "--budget", "300B", "--out", tmp_path / "e.png")
    assert given.exit_code == 0 and "T = 300B training tokens (--budget); tau = 100B" in given.output
    default = run("plot", "effective-length", hist_file, "--out", tmp_path / "e.png")
    assert "T = 1T training tokens (freqlab default; --budget sets it)" in default.output
    data = json.loads(
        run("plot", "effective-length", hist_file, "--budget", "1T", "--out", tmp_path / "e.png", "--json").output
    )
    assert data["budget"]["training_tokens_from"] == "budget option"


def test_exposure_sized_at_the_longest_document_says_no_l_was_given(tmp_path, monkeypatch):
    """A review: "--L 500,000,000 needs ~80.0 GB" named an option the user had not given."""
    path = LengthHistogram.from_lengths([5_000_000]).to_parquet(tmp_path / "long.parquet")
    monkeypatch.setenv("FREQLAB_MEMORY_BYTES", str(100_000_000))
    result = run("plot", "exposure", path, "--out", tmp_path / "x.png")
    assert result.exit_code == 1 and result.output.startswith(
        "Error: --L 5,000,000 (the longest document: no --L given) needs ~800.0 MB of memory"
    ), result.output


def test_scan_plot_sizes_its_figures_again_once_the_sources_are_known(tmp_path, monkeypatch):
    """A second review: scan --plot sized its figures for one source before the scan and drew 16 sources' figures
    that plot scan refuses under the same memory."""
    path = tmp_path / "src16.jsonl"
    path.write_text(
        "".join(json.dumps({"text": "word " * (5 + 3 * i), "src": f"s{i % 16}"}) + "\n" for i in range(160))
    )
    monkeypatch.setenv("FREQLAB_MEMORY_BYTES", str(50_000_000))
    args = ("--dataset", path, "--source-field", "src", "--L", "64K", "--regime", "natural", "--workers", 1)
    result = run("scan", *args, "--tokenizer", "tekken", "--out", tmp_path / "o", "--plot")
    assert result.exit_code == 1, result.output
    assert "Error: --L 65,536 (1 window, 1 regime, 16 sources) needs ~" in result.output
    assert "the histogram is saved in" in result.output and (tmp_path / "o" / "lengths.parquet").exists()


def test_plot_scan_draws_what_scan_plot_draws_and_says_when_it_leaves_the_sources_out(tmp_path, hist_file):
    """A review: plot scan's default was natural alone where scan --plot draws natural, pack and concat (so it replaced
    scan's three-panel figure in the same folder with one panel); with more sources than a figure draws it wrote two
    figures and failed."""
    from freqlab.histogram import combine_sources
    from freqlab.plots import scan_figures
    from freqlab.scan import DEFAULT_REGIMES

    result = run("plot", "scan", hist_file, "--out", tmp_path / "cli")
    assert result.exit_code == 0, result.output
    api = scan_figures(LengthHistogram.read_parquet(hist_file), [2048], DEFAULT_REGIMES, tmp_path / "api")
    assert [p.name for p in api] == ["frequency_L2048.png", "effective_length.png", "sources.png"]
    for path in api:
        assert (tmp_path / "cli" / path.name).read_bytes() == path.read_bytes(), path.name
    many = combine_sources({f"s{k}": LengthHistogram.from_lengths([10 + k, 500]) for k in range(17)})
    result = run("plot", "scan", many.to_parquet(tmp_path / "many.parquet"), "--out", tmp_path / "many")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("note: no sources figure: the histogram has 17 sources with documents; a per-source")
    assert sorted(os.listdir(tmp_path / "many")) == [".written.json", "effective_length.png", "frequency_L2048.png"]
