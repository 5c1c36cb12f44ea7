"""``freqlab freq``, ``stats`` and ``schedule`` on saved histograms: tables, JSON, and one-line errors."""

import io
import json
import os
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from freqlab import LengthHistogram, position_frequency
from freqlab.cli import main
from freqlab.files import write_parquet
from freqlab.formats import CHECKPOINT_FORMAT
from freqlab.frequency import layout_frequency
from freqlab.scan.uncertainty import no_interval


@pytest.fixture
def hist(tmp_path):
    path = tmp_path / "lengths.parquet"
    LengthHistogram.from_counts([2048], [1000], corpus="rows").to_parquet(path)
    return path


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_freq_prints_the_paper_style_line(hist):
    result = run("freq", hist, "--L", 2048, "--regime", "natural")
    assert result.exit_code == 0, result.output
    # every document is exactly one window: f(i) = 1000 (L - i), the concatenated closed form
    assert "L=2048 natural: 75.0% of position mass at i ≤ 1024, 6.3% at i ≥ 1536" in result.output


@pytest.mark.parametrize(
    "command", [["freq"], ["stats"], ["plot", "frequency"], ["plan", "string", "--L", "2K", "--hist"]]
)
def test_a_scans_output_folder_stands_for_its_histogram(hist, tmp_path, command):
    """``freqlab scan --out OUT`` then ``freqlab freq OUT``: the folder's lengths.parquet (it said "is a
    directory"); a folder without one says what to give."""
    extra = ["--out", tmp_path / "figure.png"] if command[0] == "plot" else []
    by_file, by_folder = run(*command, hist, *extra), run(*command, tmp_path, *extra)
    assert by_file.exit_code == by_folder.exit_code == 0, by_folder.output
    assert by_folder.output == by_file.output
    (tmp_path / "empty").mkdir()
    refused = run(*command, tmp_path / "empty", *extra)
    assert refused.exit_code == 2 and "is a folder without lengths.parquet (give a histogram or a scan's --out)" in (
        refused.output
    )


def test_freq_json_and_parquet_output(hist, tmp_path):
    out = tmp_path / "freq.parquet"
    result = run("freq", hist, "--L", 1024, "--L", 2048, "--regime", "concat", "--tokens", "1T", "--json", "--out", out)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rows = {(r["L"], r["regime"]): r for r in data["results"]}
    assert rows[(2048, "concat")]["tokens_in_segments"] == 2048 * 1000
    # f_T(i) = 1T (2048 - i) / 2048 >= 100B  <=>  i <= 1843.2
    assert rows[(2048, "concat")]["effective_length"] == 1843
    frame = pl.read_parquet(out)
    f = frame.filter((pl.col("L") == 2048) & (pl.col("regime") == "concat"))["frequency"].to_numpy()
    assert (f == position_frequency([2048], [1000], 2048, "concat")).all()
    assert frame["frequency"].dtype == pl.Int64


def test_freq_parquet_carries_the_histograms_metadata(tmp_path):
    path, out = tmp_path / "lengths.parquet", tmp_path / "freq.parquet"
    h = LengthHistogram.from_counts(
        [100, 3000],
        [7, 2],
        corpus="slimpajama",
        tokenizer="tekken",
        skipped={"malformed-json": 3},
        empty_documents=1,
        meta={"vocab_hash": "abc"},
    )
    h.to_parquet(path)
    args = ("--regime", "natural", "--regime", "truncate", "--regime", "pack", "--seed", 5)
    result = run("freq", path, "--L", "2K", *args, "--out", out)
    assert result.exit_code == 0, result.output
    header = json.loads(pl.read_parquet_metadata(out)["freqlab"])
    lengths_header = json.loads(pl.read_parquet_metadata(path)["freqlab"])
    assert header["format"] == "freqlab.position_frequency" and header["version"] == 1
    assert (header["L"], header["regimes"], header["seed"]) == ([2048], ["natural", "truncate", "pack"], 5)
    provenance = {key: lengths_header[key] for key in ("corpus", "tokenizer", "skipped", "empty_documents", "meta")}
    assert (
        {key: header["histogram"][key] for key in provenance}
        == provenance
        == {
            "corpus": "slimpajama",
            "tokenizer": "tekken",
            "skipped": {"malformed-json": 3},
            "empty_documents": 1,
            "meta": {"vocab_hash": "abc"},
        }
    )
    assert (header["histogram"]["documents"], header["histogram"]["tokens"]) == (9, 6700)
    assert header["histogram"]["documents_read"] == 9 + 1 + 3
    frame = pl.read_parquet(out)
    truncate = frame.filter(pl.col("regime") == "truncate")["frequency"].to_numpy()
    assert truncate.tolist() == (7 * np.maximum(100 - np.arange(2048), 0) + 2 * (2048 - np.arange(2048))).tolist()


def test_stats_table_and_json(hist):
    result = run("stats", hist, "--json")
    assert result.exit_code == 0
    assert json.loads(result.output)["tokens"] == 2_048_000
    table = run("stats", hist).output.split("\n\n")[0]
    lines = dict(line.split("  ", 1) for line in table.splitlines())
    assert lines["tokens"].strip() == "2,048,000" and lines["median length"].strip() == "2,048"
    # the frequency rows at --tau (a review: they kept 100B): tau f(0) / f(L/2) = 7 · 2,048,000 / 1,024,000 = 14
    row = json.loads(run("stats", hist, "--L", "2K", "--tau", "7", "--json").output)["frequency"][0]
    assert (row["tau"], row["tokens_needed_at_half"]) == (7, 14)


def test_stats_shows_string_sec3_beside_freqlabs_prediction(hist):
    """STRING Sec. 3 (TinyLlama 1.3B): 1280 at f(1280) ~ 100B; 1024 at ~300B for 2K and 4K; 1.4K at 400B (4K)
    vs ~1T (2K); measured in 128-token steps. freqlab here: f_T(i) = T (2048 - i) / 2048 for both windows."""
    data = json.loads(run("stats", hist, "--json").output)["string_sec3"]
    assert data["step"] == 128 and data["tau"] == 100e9
    assert (data["calibration"]["position"], data["calibration"]["paper_occurrences"]) == (1280, 100e9)
    # f_T(1280) >= 100B  <=>  T >= 100B · 2048 / 768
    assert data["calibration"]["freqlab_tokens_needed"] == [
        {"L": 2048, "tokens": 266_666_666_667},
        {"L": 4096, "tokens": 266_666_666_667},
    ]
    paper = [(r["L"], r["tokens"], r["paper"]) for r in data["reports"]]
    assert paper == [(2048, 300e9, "1024"), (4096, 300e9, "1024"), (4096, 400e9, "1.4K"), (2048, 1e12, "1.4K")]
    # integers in the JSON, as tau is (a review found 300000000000.0 beside an int tau)
    assert all(type(r["tokens"]) is int for r in data["reports"])
    assert type(data["calibration"]["paper_occurrences"]) is int
    # i <= 2048 (1 - 100B / T): 1365, 1365, 1536, 1843; floored to 128-token steps: 1280, 1280, 1536, 1792
    assert [(r["freqlab"], r["freqlab_in_steps"]) for r in data["reports"]] == [
        (1365, 1280), (1365, 1280), (1536, 1536), (1843, 1792)
    ]  # fmt: skip
    text = run("stats", hist).output
    assert "effective length by needle retrieval in 128-token steps" in text
    assert "L=4096  400B         1.4K   1536 [1536]" in text
    assert "L=2048  around 1T    1.4K   1843 [1792]" in text
    assert "paper: effective length 1280 where f(1280) ≈ 100B (Fig. 2b)" in text


def test_schedule_command(tmp_path, hist):
    (tmp_path / "s.yaml").write_text(
        "histogram: lengths.parquet\nstages:\n  - {L: 2048, tokens: 1T}\n  - {L: 4096, tokens: 100B, regime: concat}\n"
    )
    result = run("schedule", tmp_path / "s.yaml", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["window"] == 4096 and data["tokens"] == 1_100_000_000_000
    total = 1e12 * (2048 - np.arange(2048)) / 2048 + 1e11 * (4096 - np.arange(2048)) / 4096
    assert data["effective_length"] == int(np.flatnonzero(total >= 1e11)[-1])


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("freq", "missing.parquet"), 1, "Error: missing.parquet: no such histogram file"),
        (("freq", "{hist}", "--L", "0"), 2, "Invalid value for '--L'"),
        (("freq", "{hist}", "--regime", "zigzag"), 2, "Invalid value for '--regime'"),
        (("freq", "{hist}", "--tokens", "lots"), 2, "not a token count"),
        (("stats", "{bad}"), 1, "bad.parquet: not a Parquet file: it starts with b'garbage'"),
        (("freq", "{empty}"), 1, "the histogram holds no documents"),
        (
            ("freq", "{hist}", "--out", "/proc/x.parquet"),
            1,
            "Error: /proc/x.parquet: cannot write (No such file or directory)\n",
        ),
        # a review: f(i) replaced the histogram read, or went into a .json name
        (("freq", "{hist}", "--out", "{hist}"), 2, "is the histogram read (HIST): give another file"),
        (
            ("freq", "{hist}", "--out", "{tmp}/f.json"),
            2,
            "f.json' names another format: an f(i) table is written as Parquet",
        ),
    ],
)
def test_errors_are_one_line_without_traceback(tmp_path, hist, args, code, message):
    bad = tmp_path / "bad.parquet"
    bad.write_text("garbage")
    empty = LengthHistogram.from_lengths([]).to_parquet(tmp_path / "empty.parquet")
    before = Path(hist).read_bytes()
    result = run(*[a.format(hist=hist, bad=bad, empty=empty, tmp=tmp_path) for a in args])
    assert result.exit_code == code
    assert message in result.output
    assert "Traceback" not in result.output
    assert Path(hist).read_bytes() == before and not (tmp_path / "f.json").exists()


def test_freq_out_takes_any_name_but_another_formats(hist, tmp_path):
    """Streams (/dev/stdout) and other Parquet names (f.pq) wrote f(i) before the suffix rule, which refused them (a
    review); a .json, .yaml or figure name is still refused."""
    assert run("freq", hist, "--L", 64, "--out", tmp_path / "f.pq").exit_code == 0
    assert pl.read_parquet(tmp_path / "f.pq").height == 64
    assert run("freq", hist, "--L", 64, "--out", "/dev/null").exit_code == 0
    assert run("freq", hist, "--L", 64, "--out", tmp_path / "f.png").exit_code == 2
    (tmp_path / "tokens.bin").write_bytes(b"\x02\x00" * 8)  # a typo naming a token file: kept (a review)
    kept = run("freq", hist, "--L", 64, "--out", tmp_path / "tokens.bin")
    assert kept.exit_code == 2 and "names another format: an f(i) table is written as Parquet" in kept.output
    (tmp_path / "mine.dat").write_bytes(b"\x02\x00" * 8)  # a name of no format freqlab knows: kept by its content
    kept = run("freq", hist, "--L", 64, "--out", tmp_path / "mine.dat")
    assert kept.exit_code == 2 and "exists and is not a Parquet file" in kept.output
    assert (tmp_path / "mine.dat").read_bytes() == b"\x02\x00" * 8
    assert (tmp_path / "tokens.bin").read_bytes() == b"\x02\x00" * 8
    assert run("freq", hist, "--L", 32, "--out", tmp_path / "f.pq").exit_code == 0  # a Parquet file: replaced
    (tmp_path / "empty.parquet").write_bytes(b"")  # what `--out /dev/stdout > empty.parquet` finds (a review)
    assert run("freq", hist, "--L", 32, "--out", tmp_path / "empty.parquet").exit_code == 0
    other = LengthHistogram.from_lengths([5, 9]).to_parquet(tmp_path / "other.parquet")  # another scan's histogram
    refused = run("freq", hist, "--L", 32, "--out", other)
    assert refused.exit_code == 2 and "exists and is a length histogram" in refused.output
    assert LengthHistogram.read_parquet(other).documents == 2


def test_freq_out_to_stdout_keeps_the_report_out_of_the_parquet_bytes(hist, tmp_path):
    """A review: `freq --out /dev/stdout | reader` got the Parquet bytes and then the text report (a corrupt file);
    the report goes to stderr when f(i) goes to stdout, through a pipe or redirected to a file."""
    command = [sys.executable, "-m", "freqlab", "freq", str(hist), "--L", "64", "--out", "/dev/stdout"]
    piped = subprocess.run(command, capture_output=True, check=True)
    assert pl.read_parquet(io.BytesIO(piped.stdout)).height == 64
    assert "L=64 natural" in piped.stderr.decode() and "wrote /dev/stdout" in piped.stderr.decode()
    with open(tmp_path / "f.parquet", "wb") as stdout:
        redirected = subprocess.run([*command, "--json"], stdout=stdout, stderr=subprocess.PIPE, check=True)
    assert pl.read_parquet(tmp_path / "f.parquet").height == 64
    assert json.loads(redirected.stderr)["results"][0]["L"] == 64
    # appended to what stdout holds (>> f): written at its place, not refused as "not a Parquet file" (a review)
    (tmp_path / "log").write_bytes(b"HEAD\n")
    with open(tmp_path / "log", "ab") as stdout:
        subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, check=True)
    assert (tmp_path / "log").read_bytes().startswith(b"HEAD\nPAR1")
    before = Path(hist).read_bytes()  # >> HIST: refused, the histogram kept (its footer would be the table's)
    with open(hist, "ab") as stdout:
        refused = subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE)
    assert refused.returncode == 2 and b"is the histogram read (HIST)" in refused.stderr
    assert Path(hist).read_bytes() == before
    calibrated = [sys.executable, "-m", "freqlab", "calibrate", "--out", "/dev/stdout"]  # the report not in the JSON
    with open(tmp_path / "tau.json", "wb") as stdout:
        subprocess.run(calibrated, stdout=stdout, stderr=subprocess.PIPE, check=True)
    assert json.loads((tmp_path / "tau.json").read_bytes())["format"]


def test_freq_out_replaces_only_an_f_table_it_wrote(hist, tmp_path):
    """A user's Parquet file or a scan's checkpoint named by --out was replaced (a review): only a table of f(i) that
    freq --out wrote is."""
    users = tmp_path / "users.parquet"
    pl.DataFrame({"a": [1, 2]}).write_parquet(users)
    refused = run("freq", hist, "--L", 32, "--out", users)
    assert refused.exit_code == 2 and "a Parquet file freqlab did not write as f(i)" in refused.output
    assert pl.read_parquet(users)["a"].to_list() == [1, 2]
    checkpoint = tmp_path / "checkpoint.parquet"
    write_parquet(checkpoint, pl.DataFrame({"a": [3]}), {"format": CHECKPOINT_FORMAT, "version": 1})
    assert run("freq", hist, "--L", 32, "--out", checkpoint).exit_code == 2
    assert pl.read_parquet(checkpoint)["a"].to_list() == [3]
    table = tmp_path / "f.parquet"
    assert run("freq", hist, "--L", 64, "--out", table).exit_code == 0
    assert run("freq", hist, "--L", 32, "--out", table).exit_code == 0  # its own table: replaced
    assert pl.read_parquet(table)["L"].unique().to_list() == [32]


def test_every_command_has_help_with_an_example():
    """Every command and subcommand (a new user: freqlab cache had none, as the README says each has)."""
    import click

    from freqlab.cli import main

    def leaves(group, path):
        for name in group.list_commands(None):
            command = group.get_command(None, name)
            yield from leaves(command, (*path, name)) if isinstance(command, click.Group) else [(*path, name)]

    commands = list(leaves(main, ()))
    assert len(commands) >= 20 and ("cache",) in commands and ("plan", "string") in commands
    for command in commands:
        result = run(*command, "--help")
        assert result.exit_code == 0 and "Example" in result.output, command


def test_truncation_reports_the_tokens_it_drops(tmp_path):
    path = LengthHistogram.from_counts([5000, 100], [2, 3]).to_parquet(tmp_path / "h.parquet")
    result = run("freq", path, "--L", 2048, "--regime", "truncate")
    assert result.exit_code == 0
    assert f"({2 * (5000 - 2048) / 1e3:.3g}K tokens dropped)" in result.output


def test_one_budget_rule_printed(hist):
    # no --tokens: T = 1T, said on the budget line; f_T(i) = 1T (2048 - i)/2048 >= 100B <=> i <= 1843
    text = run("freq", hist, "--L", 2048, "--regime", "natural").output
    assert "budget     T = 1T training tokens (freqlab default; --tokens sets it); tau = 100B" in text
    assert "predicted effective length 1843 at 1T tokens" in text
    data = json.loads(run("freq", hist, "--L", 2048, "--json").output)
    assert data["budget"] == {"training_tokens": 10**12, "training_tokens_from": "default"}
    # a budget below tau: the line says the budget limits it and what budget reaches L/2
    small = run("freq", hist, "--L", 2048, "--tokens", "1M").output
    assert "predicted effective length 0 at 1M tokens: the budget limits it (T = 1M tokens against tau = 100B" in small
    assert "T >= 200B tokens trains i <= 1024" in small  # tau · 2048 / (2048 - 1024)


def test_an_effective_length_of_zero_from_the_data_is_not_blamed_on_the_budget(tmp_path):
    """Documents of one token: f(1) = 0, so no budget trains i = 1; the line said "the budget limits it"."""
    path = LengthHistogram.from_counts([1], [5]).to_parquet(tmp_path / "ones.parquet")
    text = run("freq", path, "--L", 2048, "--regime", "natural").output
    assert "predicted effective length 0 at 1T tokens: no segment is longer than one token" in text
    assert "budget limits" not in text
    data = json.loads(run("freq", path, "--L", 2048, "--json").output)
    assert data["results"][0]["longest_position"] == 0


def test_an_effective_length_of_zero_names_the_budget_for_the_longest_position_when_l_half_is_out_of_reach(tmp_path):
    """Documents of 3 tokens at L = 16: f = (3000, 2000, 1000, 0...), f(8) = 0, so no budget trains L/2; the line
    said only that, though T >= tau · f(0) / f(2) = 100B · 3 = 300B trains i <= 2."""
    path = LengthHistogram.from_counts([3], [1000]).to_parquet(tmp_path / "threes.parquet")
    text = run("freq", path, "--L", 16, "--regime", "natural", "--tokens", "1M").output
    assert (
        "predicted effective length 0 at 1M tokens: the budget limits it (T = 1M tokens against tau = 100B "
        "occurrences); no budget trains i = 8 (no segment is longer than 3 tokens); T >= 300B tokens trains i <= 2"
    ) in text
    row = json.loads(run("freq", path, "--L", 16, "--json").output)["results"][0]
    assert row["tokens_needed_at_half"] is None and row["tokens_needed_at_longest"] == 300 * 10**9
    assert run("freq", path, "--L", 16, "--tokens", "300B").output.count("predicted effective length 2 at 300B") == 1


@pytest.fixture
def split(tmp_path):
    from freqlab.histogram import combine_sources

    path = tmp_path / "split.parquet"
    sources = {"code": LengthHistogram.from_lengths([50, 900, 2500]), "web": LengthHistogram.from_lengths([40, 3000])}
    combine_sources(sources).to_parquet(path)
    return path


def test_freq_of_a_weighted_mix(split, tmp_path):
    data = json.loads(run("freq", split, "--L", 1024, "--weights", "code=2,web=1", "--json").output)
    by_hand = np.array([50, 900, 2500] * 2 + [40, 3000])
    f = position_frequency(by_hand, np.ones(by_hand.size, np.int64), 1024)
    assert data["results"][0]["tokens_in_segments"] == int(f[0]) and data["mixture"]["exact"]
    # the same key as stats and plan give the table (freq said "sources", stats' key for the corpus's own counts)
    assert "sources" not in data
    sources = {r["source"]: r for r in data["mix_sources"]}
    assert sources["code"]["token_share"] == pytest.approx(2 * 3450 / (2 * 3450 + 3040))
    text = run("freq", split, "--L", 1024, "--weights", "code=70%,web=30%").output
    assert "mix        share code=70%, web=30% (--weights); float64 weights" in text
    (tmp_path / "mix.yaml").write_text("unit: share\nweights: {code: 7, web: 3}\n")
    same = run("freq", split, "--L", 1024, "--weights", tmp_path / "mix.yaml", "--json").output
    assert (
        json.loads(same)["results"]
        == json.loads(run("freq", split, "--L", 1024, "--weights", "code=70%,web=30%", "--json").output)["results"]
    )


def test_a_weighted_mix_reports_the_corpus_counts_not_the_scaled_ones(split, tmp_path):
    """A mix of shares is a distribution (its counts are scaled by K ~ 10^12): what is printed and written as the
    histogram's documents and tokens are the corpus's (5 documents, 6,490 tokens); one pass of an epoch mix is
    shown beside them."""
    share = run("freq", split, "--L", 1024, "--weights", "code=70%,web=30%", "--out", tmp_path / "f.parquet").output
    assert f"{split}: 5 documents, 6,490 tokens (unnamed corpus); the mix weights them by shares" in share
    halves = run("freq", split, "--L", 1024, "--weights", "code=0.5,web=1").output  # said "by share" (a review)
    assert f"{split}: 5 documents, 6,490 tokens (unnamed corpus); the mix weights them by epochs that are not" in halves
    header = json.loads(pq.read_metadata(tmp_path / "f.parquet").metadata[b"freqlab"])
    assert header["histogram"]["documents"] == header["histogram"]["documents_read"] == 5
    assert header["histogram"]["tokens"] == 6490 and header["mixture"]["unit"] == "share"
    epochs = run("freq", split, "--L", 1024, "--weights", "code=2,web=1").output
    assert "5 documents, 6,490 tokens (unnamed corpus); one pass of the mix: 8 documents, 9,940 tokens" in epochs
    stats = run("stats", split, "--L", 1024, "--weights", "code=70%,web=30%").output
    assert re.search(r"documents read +5\n", stats) and re.search(r"\ntokens +6,490\n", stats)
    data = json.loads(run("stats", split, "--L", 1024, "--weights", "code=70%,web=30%", "--json").output)
    assert data["corpus_counts"] == {
        "documents_read": 5,
        "documents": 5,
        "empty_documents": 0,
        "skipped": {},
        "tokens": 6490,
    }
    # a review: the top-level counts were the mix's scaled ones (175,019,917,312 documents read), not the text's
    assert (data["documents_read"], data["documents"], data["tokens"]) == (5, 5, 6490)
    assert sum(source["documents"] for source in data["sources"].values()) == 5
    # freq --json too (a review: "tokens" was the mix's, times K = 2^31 for code=0.5,web=1, K said rounded in prose);
    # the mix's own tokens beside them, and K exact, so that f is recovered from the mix's counts exactly
    freq = json.loads(run("freq", split, "--L", 1024, "--weights", "code=0.5,web=1", "--json").output)
    K = Fraction(freq["mixture"]["scale"])
    assert freq["tokens"] == 6490 and freq["mix_tokens"] == K * (3450 // 2 + 3040) == freq["results"][0]["f"]["0"]
    assert K == 2**31 and not freq["mixture"]["exact"]
    whole = json.loads(run("freq", split, "--L", 1024, "--weights", "code=2,web=1", "--json").output)
    assert (whole["tokens"], whole["mix_tokens"], whole["mixture"]["scale"]) == (6490, 2 * 3450 + 3040, "1")


def test_stats_schedule_and_plot_scan_take_the_pack_seed_freq_takes(tmp_path, monkeypatch):
    """pack's stream order: --seed gave freq and scan another order than stats, schedule and plot scan (always 0).
    Here seed 3 packs the 61-token document whole into a row (f(40) = 17), seed 1 leaves nothing at i = 40."""
    lengths = [10, 40, 25, 33, 7, 50, 61, 3]
    hist = LengthHistogram.from_lengths(lengths).to_parquet(tmp_path / "h.parquet")
    f = {s: position_frequency(lengths, np.ones(8, np.int64), 64, "pack", seed=s) for s in (1, 3)}
    assert (int(f[1][40]), int(f[3][40])) == (0, 17)
    for seed in (1, 3):
        args = ("--L", 64, "--regime", "pack", "--tokens", "1T", "--seed", seed, "--json")
        freq_json, stats_json = (json.loads(run(command, hist, *args).output) for command in ("freq", "stats"))
        assert freq_json["seed"] == stats_json["seed"] == seed  # in the JSON, as summary.json and schedule's
        freq, stats = freq_json["results"][0], stats_json["windows"][0]
        assert stats == freq and freq["f"]["0"] == int(f[seed][0])
        schedule = tmp_path / "s.yaml"
        schedule.write_text(f"histogram: {hist}\nstages:\n  - {{name: a, L: 64, tokens: 1T, regime: pack}}\n")
        data = json.loads(run("schedule", schedule, "--seed", seed, "--json").output)
        assert data["seed"] == seed and data["effective_length"] == freq["effective_length"]
    assert json.loads(run("stats", hist, *args[:-3], "--json").output)["windows"][0]["effective_length"] == 32  # 0
    seen = []
    monkeypatch.setattr("freqlab.plots.report.scan_figures", lambda *a, **k: seen.append(k["seed"]) or [])
    result = run("plot", "scan", hist, "--L", 64, "--regime", "pack", "--seed", 3, "--out", tmp_path / "figs")
    assert result.exit_code == 0 and seen == [3], result.output
    schedule.write_text(f"histogram: {hist}\nstages:\n  - {{name: a, L: 64, tokens: 1T, regime: natural}}\n")
    unused = run("schedule", schedule, "--seed", 3)  # a seed no stage reads: refused, as freq's
    assert unused.exit_code == 2 and "--seed orders the documents of --regime pack; none is given here" in unused.output


def test_a_mix_of_shares_shows_dropped_tokens_and_tails_as_shares_of_the_mix(split):
    """A review: a float64 mix's counts are scaled by K (~8.8e12 here), and truncate's dropped tokens and the tails
    table's token column printed them as tokens (4.35T dropped of a 6,490-token corpus). At L = 1024 truncate drops
    2500 - 1024 of code's 3,450 tokens and 3000 - 1024 of web's 3,040: 0.7 · 1476/3450 + 0.3 · 1976/3040 = 49.4%."""
    share = run("freq", split, "--L", 1024, "--weights", "code=70%,web=30%", "--regime", "truncate").output
    assert "(49.4% of the mix's tokens dropped)" in share and "T tokens dropped" not in share
    stats = run("stats", split, "--L", 1024, "--weights", "code=70%,web=30%", "--regime", "truncate").output
    assert "(49.4% of the mix's tokens dropped)" in stats
    epochs = run("freq", split, "--L", 1024, "--weights", "code=2,web=1", "--regime", "truncate").output
    assert "(4.93K tokens dropped)" in epochs  # an exact mix: its count, 2 · 1476 + 1976
    tails = run("freq", split, "--L", 8192, "--weights", "code=70%,web=30%", "--tails").output
    assert re.search(r"source +mix share +1K +2K +4K\n +code +70\.0% +42\.8% +13\.1% +0\.0%\n +web +30\.0%", tails), (
        tails
    )
    assert re.search(r"source +tokens +1K +2K +4K\n +code +3,450 ", run("freq", split, "--L", 8192, "--tails").output)


def test_weights_in_stats_and_schedules(split, tmp_path):
    stats = json.loads(run("stats", split, "--weights", "code=0,web=1", "--json").output)
    # the corpus's tokens at the top level, as the text prints them; the mix (web alone) in its lengths and mix_sources
    assert stats["tokens"] == 6490 and stats["mixture"]["weights"] == {"code": 0.0, "web": 1.0}
    # the mix table under --regime's first regime, as freq's (a review: stats took natural whatever was asked)
    packed = ("--L", 1024, "--weights", "code=2,web=3", "--regime", "pack", "--json")
    table = json.loads(run("stats", split, *packed).output)["mix_sources"]
    assert table == json.loads(run("freq", split, *packed).output)["mix_sources"]
    assert {row["tail_share_basis"] for row in table} == {"each source alone"}
    schedule = tmp_path / "schedule.yaml"
    schedule.write_text(f"histogram: {split}\nstages:\n  - {{L: 1024, tokens: 1T, weights: {{code: 0, web: 1}}}}\n")
    alone = tmp_path / "web.parquet"
    LengthHistogram.from_lengths([40, 3000]).to_parquet(alone)
    weighted = json.loads(run("schedule", schedule, "--json").output)
    plain = json.loads(run("freq", alone, "--L", 1024, "--json").output)["results"][0]
    assert weighted["effective_length"] == plain["effective_length"]
    # --weights is the default of the stages that name none: with every stage naming its own, it would change nothing
    bad = run("schedule", schedule, "--weights", "x=1")
    assert bad.exit_code == 2 and "every stage names its weights, so --weights" in bad.output, bad.output


@pytest.mark.parametrize(
    ("weights", "message"),
    [("code=1", "no weight for source 'web'"), ("code=1,web=1,books=1", "'books' is not in the histogram")],
)
def test_weight_errors_are_one_line(split, weights, message):
    result = run("freq", split, "--L", 1024, "--weights", weights)
    assert result.exit_code == 1 and message in result.output and result.output.count("\n") == 1


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ("nonsense", "nonsense: not SOURCE=W,..., a mixture file or a preset"),
        ("mix.yaml", "mix.yaml: no such mixture file (presets: "),  # a file's name: said not to be SOURCE=W
        ("code=1,=2", "'=2' is not SOURCE=WEIGHT"),
        ("code=70%,web=1", "give every weight as a share (W%) or none"),
        ("code=70%,web=40%", "the shares sum to 110%, not 100%"),
        ("", "no weights given: SOURCE=W,..., a mixture file or a preset"),
    ],
)
@pytest.mark.parametrize("command", [["freq"], ["stats"], ["plan", "string"], ["plot", "windows"]])
def test_weights_that_are_no_mix_are_a_usage_error_before_the_histogram_is_read(split, command, weights, message):
    """The weights' syntax is checked as the option is parsed (exit 2, like any bad value): a histogram that does
    not match them (a missing source) is a data error found later (exit 1, above)."""
    where = ["--hist", split] if command[0] == "plan" else [split]
    result = run(*command, *where, "--L", 1024, "--weights", weights)
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--weights'" in result.output and message in result.output


@pytest.fixture
def megatron_scan(tmp_path):
    """A Megatron index of 300 documents (EOD appended), scanned whole: its lengths.parquet names the index."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "corpus"))
    from tokenized_writers import single_sequence_documents, write_megatron

    from freqlab.scan import scan

    lengths = np.random.default_rng(1).integers(1, 400, 300).tolist()
    idx = write_megatron(tmp_path / "data" / "c_text_document", single_sequence_documents(lengths), np.uint16)
    scan(str(idx), workers=1, progress=False, out=tmp_path / "out", L=[128], regimes=["natural"])
    return idx, tmp_path / "out" / "lengths.parquet"


def test_freq_replays_the_megatron_regime_from_the_index_the_scan_read(megatron_scan, tmp_path):
    """Issue 22: `freq lengths.parquet --regime megatron` said "give --data-path", an option freq lacked; it now
    replays GPTDataset's windows from the index named in the histogram's metadata, exactly as from Python."""
    from freqlab.frequency.megatron_replay import MegatronOptions, megatron_segments
    from freqlab.frequency.position import segment_frequency

    idx, lengths = megatron_scan
    assert LengthHistogram.read_parquet(lengths).meta["megatron_index"] == str(idx)
    out = tmp_path / "f.parquet"
    result = run("freq", lengths, "--L", 128, "--regime", "megatron", "--out", out)
    assert result.exit_code == 0, result.output
    assert f"megatron   GPTDataset's windows replayed from {idx}" in result.output
    assert "--data-path]" not in result.output  # not the approximation's note
    f = pl.read_parquet(out)["frequency"].to_numpy()
    expected = segment_frequency(megatron_segments(128, MegatronOptions(str(idx))))
    np.testing.assert_array_equal(f, expected)
    h = LengthHistogram.read_parquet(lengths)
    approximation = position_frequency(h.lengths, h.counts, 128, "concat")
    assert not np.array_equal(f, approximation)  # the train split and shuffled windows, not plain concatenation
    # Megatron's settings are options of freq too
    seeded = run("freq", lengths, "--L", 128, "--regime", "megatron", "--megatron-seed", 7, "--json")
    assert json.loads(seeded.output)["megatron"]["seed"] == 7
    stats = run("stats", lengths, "--L", 128, "--regime", "megatron")
    assert stats.exit_code == 0 and "L=128 megatron: " in stats.output


def test_a_partial_scan_says_its_megatron_row_replays_the_whole_index(megatron_scan, tmp_path):
    """A review: a sampled scan's megatron row (the whole index's replay, as Megatron trains on every document) stood
    beside the sample's rows without a word, as if it were the sample's."""
    from freqlab.scan import scan
    from freqlab.scan.summary_json import WHOLE_INDEX_NOTE

    idx, _ = megatron_scan
    rows = {}
    for name, options in (("whole", {}), ("sampled", {"sample_rate": 0.5}), ("first", {"max_docs": 10})):
        result = scan(str(idx), workers=1, progress=False, L=[128], regimes=["megatron", "natural"], **options)
        rows[name] = {row["regime"]: row for row in result.summary["windows"]}
    assert "note" not in rows["whole"]["megatron"]
    for partial in ("sampled", "first"):
        megatron = rows[partial]["megatron"]
        assert megatron["note"] == WHOLE_INDEX_NOTE and megatron["f"] == rows["whole"]["megatron"]["f"]
        assert rows[partial]["natural"]["f"] != rows["whole"]["natural"]["f"]  # the sample's own
    assert rows["sampled"]["megatron"]["ci"] == {"none": no_interval("megatron")}
    assert "replays the whole index, not the sample" in no_interval("megatron")


def test_a_histogram_past_int64_tokens_is_named_by_every_command(tmp_path):
    """A review: `freq` on a histogram of 1.4·10^22 tokens said the count and not which file held it."""
    path = tmp_path / "big.parquet"
    LengthHistogram.from_counts([100, 3000], [70, 2**62]).to_parquet(path)
    plot = ("plot", "sources", "--out", tmp_path / "s.png")
    for command in (("freq",), ("stats",), ("plan", "string", "--L", "2K", "--hist"), plot):
        result = run(*command, path)
        said = f"{path}: 13,835,058,055,282,163,719,000 tokens exceed exact int64 arithmetic (2^63)"
        status = 2 if command[0] == "plan" else 1  # plan's --hist is an option: a usage error naming it (a review)
        assert result.exit_code == status and said in " ".join(result.output.split()), (command, result.output)


def test_freq_megatron_replay_takes_a_layout(megatron_scan):
    """A review: `freq --regime megatron --layout X` was refused as if no index could be replayed; global and
    sliding-window kinds are the replay's f (cut at the window), a chunked kind needs the row offsets it lacks."""
    from freqlab.frequency.megatron_replay import MegatronOptions, megatron_segments
    from freqlab.frequency.position import segment_frequency

    idx, lengths = megatron_scan
    result = run("freq", lengths, "--L", 128, "--regime", "megatron", "--layout", "swa16+global", "--json")
    assert result.exit_code == 0, result.output
    (layout,) = json.loads(result.output)["layouts"]
    expected = segment_frequency(megatron_segments(128, MegatronOptions(str(idx))))
    h = LengthHistogram.read_parquet(lengths)
    lf = layout_frequency(h.lengths, h.counts, 128, "swa16+global", "megatron", megatron=MegatronOptions(str(idx)))
    kinds = {k.kind.name: k.f for k in lf.kinds}
    np.testing.assert_array_equal(kinds["global"], expected)
    np.testing.assert_array_equal(kinds["swa16"], np.where(np.arange(128) < 16, expected, 0))
    assert [k["kind"] for k in layout["kinds"]] == ["swa16", "global"]
    chunked = run("freq", lengths, "--L", 128, "--regime", "megatron", "--layout", "chunk32+global")
    assert chunked.exit_code == 1 and "chunked attention needs each segment's offset in its row" in chunked.output


def test_freq_megatron_without_an_index_says_what_to_give(megatron_scan, tmp_path, hist):
    idx, lengths = megatron_scan
    result = run("freq", hist, "--regime", "megatron")
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert "this histogram names none (it was not scanned whole from one Megatron index); give --data-path" in (
        result.output
    )
    stats = run("stats", hist, "--regime", "megatron")
    assert stats.exit_code == 1 and "freqlab freq takes --data-path PREFIX" in stats.output  # stats has none
    idx.rename(idx.with_name("moved.idx"))
    idx.with_suffix(".bin").rename(idx.with_name("moved.bin"))
    from tokenized_writers import single_sequence_documents, write_megatron  # on sys.path: the fixture put it

    write_megatron(idx.with_suffix(""), single_sequence_documents([5, 6, 7]), np.uint16)  # another index there
    changed = run("freq", lengths, "--L", 128, "--regime", "megatron")
    assert changed.exit_code == 1 and "now holds 3 documents, the histogram 300" in changed.output
    # as many documents, two lengths moved by one token (a review: only the count was compared)
    scanned = np.random.default_rng(1).integers(1, 400, 300).tolist()  # the fixture's lengths
    scanned[0], scanned[1] = scanned[0] + 1, scanned[1] - 1 if scanned[1] > 1 else scanned[1] + 1
    write_megatron(idx.with_suffix(""), single_sequence_documents(scanned), np.uint16)
    moved_lengths = run("freq", lengths, "--L", 128, "--regime", "megatron")
    assert (
        moved_lengths.exit_code == 1
        and "holds documents of other lengths than the histogram (its 300 documents" in (moved_lengths.output)
    )
    idx.unlink()
    gone = run("freq", lengths, "--L", 128, "--regime", "megatron")
    assert gone.exit_code == 1 and f"replays {idx}, the index it was scanned from, which is gone" in gone.output
    moved = run("freq", lengths, "--L", 128, "--regime", "megatron", "--data-path", idx.with_name("moved"))
    assert moved.exit_code == 0, moved.output


def test_stats_takes_tokens_and_regimes(hist):
    """`stats --regime R --tokens T` adds freq's lines for --L (the same numbers), and the budget; without them
    stats prints what it always did."""
    stats = run("stats", hist, "--L", 2048, "--regime", "natural", "--regime", "concat", "--tokens", "300B")
    freq = run("freq", hist, "--L", 2048, "--regime", "natural", "--regime", "concat", "--tokens", "300B")
    assert stats.exit_code == 0 and freq.exit_code == 0
    lines = [line for line in freq.output.splitlines() if line.startswith(("L=", "    f_T", "budget"))]
    assert len(lines) == 5 and all(line in stats.output.splitlines() for line in lines)
    data = json.loads(run("stats", hist, "--L", 2048, "--tokens", "300B", "--json").output)
    assert [w["regime"] for w in data["windows"]] == ["natural"] and data["budget"]["training_tokens"] == 300e9
    # f_T(i) = 300B (2048 - i) / 2048 >= 100B  <=>  i <= 1365.33
    assert data["windows"][0]["effective_length"] == 1365
    assert "windows" not in json.loads(run("stats", hist, "--json").output)


# --- layouts, tail tables, staged recipes and presets ------------------------------------------------------------


def test_freq_layout_gives_f_per_layer_kind(hist, tmp_path):
    # 1000 rows of 2048: f(i) = 1000 (2048 - i); a window of 512 keeps i < 512
    result = run("freq", hist, "--L", 2048, "--layout", "3*swa512+global+nope", "--tokens", "1T", "--json")
    assert result.exit_code == 0, result.output
    kinds = {k["kind"]: k for k in json.loads(result.output)["layouts"][0]["kinds"]}
    assert kinds["swa512"]["layers"] == 3 and kinds["swa512"]["reach"] == 511
    assert kinds["swa512"]["f"]["0"] == 2048000 and kinds["swa512"]["f"]["512"] == 0
    assert kinds["global"]["f"]["512"] == 1000 * (2048 - 512)
    assert kinds["nope"]["rope"] is False and "f" not in kinds["nope"]
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "gpt_oss", "num_hidden_layers": 4, "sliding_window": 128})
    )
    text = run("freq", hist, "--layout", tmp_path / "config.json").output
    assert "layout swa128+global+swa128+global at L=2048, natural" in text and re.search(r"swa128 +2 layers", text)
    assert "reach capped at 127 by construction" in text


def test_freq_tails_per_source(tmp_path):
    from freqlab.histogram import combine_sources

    h = combine_sources(
        {"web": LengthHistogram.from_lengths([1000] * 50), "books": LengthHistogram.from_lengths([20000, 9000])}
    )
    path = h.to_parquet(tmp_path / "split.parquet")
    data = json.loads(run("freq", path, "--L", "32K", "--tails", "--json").output)
    tails = {row["source"]: row["tails"] for row in data["tails"]}
    assert tails["books"]["4K"] == (15904 + 4904) / 29000 and tails["web"]["8K"] == 0.0
    assert list(tails["(all)"]) == ["4K", "8K", "16K"]
    # only thresholds below L: at L = 8K a token has at most 8191 tokens of context, so no 8K column; fewer than
    # three below L: L/8, L/4, L/2 beside them
    data = json.loads(run("freq", path, "--L", "8K", "--tails", "--json").output)
    assert [list(row["tails"]) for row in data["tails"]] == [["1K", "2K", "4K"]] * 3
    # the books' 20000 tokens cut to 8K windows at natural: 8192 + 8192 + 3616 and 9000 -> 8192 + 808 segments;
    # the tokens with >= 4096 of context: 4096 + 4096 + 0 + 4096 + 0
    assert {row["source"]: row["tails"]["4K"] for row in data["tails"]}["books"] == 3 * 4096 / 29000


def test_freq_tails_of_a_short_window_take_its_eighth_quarter_and_half_as_plot_exposure_does(tmp_path):
    """A review: `freq --tails --L 4K` said "no threshold below L" where `plot exposure --L 4K` drew L/8, L/4, L/2."""
    from freqlab.histogram import combine_sources

    h = combine_sources(
        {"web": LengthHistogram.from_lengths([1000] * 50), "books": LengthHistogram.from_lengths([20000, 9000])}
    )
    path = h.to_parquet(tmp_path / "split.parquet")
    text = run("freq", path, "--L", "4K", "--tails").output
    assert "  source               tokens      512       1K       2K" in text.splitlines()
    tails = {
        row["source"]: row["tails"]
        for row in json.loads(run("freq", path, "--L", "4K", "--tails", "--json").output)["tails"]
    }
    # web: documents of 1000 tokens, 488 of them with >= 512 of context each; books at 4K windows: 20000 = 4 x 4096
    # + 3616, 9000 = 2 x 4096 + 808: (4096 - 1024) x 6 + (3616 - 1024) tokens with >= 1K of context, of 29000
    assert tails["web"] == {"512": 488 / 1000, "1K": 0.0, "2K": 0.0}
    assert tails["books"]["1K"] == ((4096 - 1024) * 6 + 3616 - 1024) / 29000


def test_freq_tails_refuse_a_regime_that_mixes_sources(tmp_path, hist):
    result = CliRunner().invoke(main, ["freq", str(hist), "--L", "4K", "--regime", "pack", "--tails"])
    assert result.exit_code == 2
    assert "--tails splits segments by source" in result.output and "--regime natural --regime pack" in result.output
    # natural first, then pack: the tails are natural's, the other summaries pack's too
    text = run("freq", hist, "--L", "32K", "--regime", "natural", "--regime", "pack", "--tails").output
    assert "(L=32768, natural)" in text


def test_schedule_with_a_layout_reports_reach_beyond_earlier_windows(tmp_path, hist):
    (tmp_path / "s.yaml").write_text(
        "histogram: lengths.parquet\nlayout: swa256+global\n"
        "stages:\n  - {name: short, L: 1024, tokens: 1T}\n  - {name: long, L: 2048, tokens: 100B}\n"
    )
    data = json.loads(run("schedule", tmp_path / "s.yaml", "--json").output)
    reach = {(r["stage"], r["kind"]): r["beyond"] for r in data["reach"]}
    # the long stage: rows of 2048, f(1024) / f(0) = 1/2 of its 100B tokens had >= 1024 tokens of context
    assert reach[("long", "global")] == {"1024": 0.5e11 / 1.1e12} and reach[("long", "swa256")] == {"1024": 0.0}
    kinds = {k["kind"]: k for k in data["kinds"]}
    assert kinds["swa256"]["effective_length"] == 255 and kinds["swa256"]["reach_cap"] == 255
    assert kinds["swa256"]["share_at_most_half"] == 1.0 and kinds["swa256"]["share_at_least_three_quarters"] == 0.0
    assert data["stages"][1]["effective_length_after"]["swa256"] == 255
    text = run("schedule", tmp_path / "s.yaml").output
    assert "long             global     W=1024: 4.55%" in text


def test_a_layout_without_a_full_attention_layer_says_the_headline_is_no_layers(tmp_path, hist):
    """Every layer slides (Mistral 7B v0.1): the data's f, and the effective length from it, belong to no layer;
    the report said "effective length 2048" beside "swa256: 255" with nothing to tell them apart."""
    (tmp_path / "s.yaml").write_text(
        "histogram: lengths.parquet\nlayout: 4*swa256\nstages:\n  - {name: a, L: 2048, tokens: 1T}\n"
    )
    data = json.loads(run("schedule", tmp_path / "s.yaml", "--json").output)
    assert data["full_attention"] is False and data["stages"][0]["full_attention"] is False
    assert data["stages"][0]["effective_length_after"] == {"swa256": 255}
    text = run("schedule", tmp_path / "s.yaml").output
    assert "effective length alone (of full attention, no layer here): " in text
    assert "(of full attention, which no stage's layout has: its layers below)" in text
    (tmp_path / "few.yaml").write_text(
        "histogram: lengths.parquet\nlayout: 4*swa256\nstages:\n  - {name: a, L: 2048, tokens: 10B}\n"
    )  # both notes in one parenthesis (a review: "(of full attention, no layer here) (its 10B tokens ≤ τ)")
    text = run("schedule", tmp_path / "few.yaml").output
    assert (
        "effective length alone (of full attention, no layer here; its 10B tokens < τ: no position reaches τ): 0"
        in (text)
    )
    (tmp_path / "g.yaml").write_text(
        "histogram: lengths.parquet\nlayout: 3*swa256+swa4096\nstages:\n  - {name: a, L: 2048, tokens: 1T}\n"
    )  # a window longer than L attends globally
    assert json.loads(run("schedule", tmp_path / "g.yaml", "--json").output)["full_attention"] is True
    (tmp_path / "m.yaml").write_text(
        "histogram: lengths.parquet\nstages:\n  - {name: a, L: 2048, tokens: 1T, layout: 4*swa256}\n"
        "  - {name: b, L: 2048, tokens: 1T}\n"
    )
    mixed = run("schedule", tmp_path / "m.yaml").output
    assert "(of full attention, which not every stage has: its layers below)" in mixed
    freq = json.loads(run("freq", hist, "--L", 2048, "--layout", "4*swa256", "--json").output)
    assert freq["layouts"][0]["full_attention"] is False
    text = run("freq", hist, "--L", 2048, "--layout", "4*swa256").output
    assert "no RoPE layer attends the whole window: the L=2048 rows above are no layer's" in text
    assert json.loads(run("freq", hist, "--L", 2048, "--layout", "chunk2K+nope", "--json").output)["layouts"][0][
        "full_attention"
    ]


def test_schedule_presets_cite_sources_and_mark_assumed_numbers(hist):
    result = run("schedule", "--preset", "llama3", "--hist", hist, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [s["L"] for s in data["stages"]] == [8192, 16384, 32768, 49152, 65536, 98304, 131072]
    assert sum(s["tokens"] for s in data["stages"][1:]) == 800 * 10**9  # Sec. 3.4.2: ~800B over six stages
    assert data["stages"][1]["assumed"] == ["L", "tokens"]
    assert "Sec. 3.4.2" in data["stages"][6]["provenance"]["L"] and "3.4.2" in data["sources"][0]
    text = run("schedule", "--preset", "gemma3", "--hist", hist).output
    assert "layers swa1K: effective length 1023 (reach capped at 1023 by construction)" in text
    for args, message in [
        (("schedule",), "give a schedule FILE or --preset NAME"),
        (("schedule", "--preset", "gpt5", "--hist", hist), "unknown recipe preset 'gpt5'"),
    ]:
        bad = run(*args)
        assert bad.exit_code in (1, 2) and message in bad.output and "Traceback" not in bad.output


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ("", "an empty layout"),
        ("swa99999999999999999999", "is not in 1..1,073,741,824 (2^30)"),
        ("99999999999*global", "a layout holds 1..10,000 layers"),
        ("5*swb1024", "cannot read '5*swb1024'"),
    ],
)
def test_a_bad_layout_is_a_usage_error_before_any_work(hist, layout, message):
    for command in (("freq", hist), ("schedule", "--preset", "llama3", "--hist", hist)):
        result = run(*command, "--layout", layout)
        assert result.exit_code == 2 and "Invalid value for '--layout'" in result.output
        assert message in result.output


def test_every_path_given_with_a_tilde_is_in_the_home_folder(hist, tmp_path, monkeypatch):
    # the shell leaves ~ unexpanded after --out= and in quotes
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "h.parquet").write_bytes(hist.read_bytes())
    for args, written in [
        (("freq", "~/h.parquet", "--L", 2048, "--out=~/g.parquet"), "g.parquet"),  # an input path too
        (("freq", hist, "--L", 2048, "--out=~/f.parquet"), "f.parquet"),
        (("plot", "frequency", hist, "--L", 2048, "--out=~/f.png"), "f.png"),
        (("plot", "scan", hist, "--out=~/figures"), "figures"),
        (("calibrate", "--out=~/tau.json"), "tau.json"),
        (("freq", hist, "--L", 2048, "--tau-from=~/tau.json", "--out=~/t.parquet"), "t.parquet"),
    ]:
        result = run(*args)
        assert result.exit_code == 0, (args, result.output)
        assert (tmp_path / "home" / written).exists(), args
    assert not (tmp_path / "~").exists()
    (tmp_path / "~").mkdir()  # a relative folder named ~ is written to and shown as such
    assert "wrote ./~/f.parquet" in run("freq", hist, "--L", 2048, "--out", "./~/f.parquet").output


def test_an_empty_path_is_a_usage_error_naming_the_option_and_nothing_is_written(hist, tmp_path, monkeypatch):
    # pathlib reads '' as the working folder: scan --out "" wrote its outputs there, plan string --hist "" was ignored
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    for args, name in [
        (("scan", "--out", ""), "--out"),
        (("freq", hist, "--L", 2048, "--out", ""), "--out"),
        (("freq", "", "--L", 2048), "HIST"),
        (("plan", "string", "--hist", ""), "--hist"),
        (("plot", "scan", hist, "--out", ""), "--out"),
        (("calibrate", "--out", ""), "--out"),
    ]:
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert f"Invalid value for '{name}': an empty path names no file or folder" in result.output, result.output
    assert sorted(tmp_path.iterdir()) == before
    for args, name in [(("freq", hist, "--L", 2048, "--out", "-"), "--out"), (("freq", "-", "--L", 2048), "HIST")]:
        result = run(*args)  # '-' is not standard output or input: it names no file here
        assert result.exit_code == 2, (args, result.output)
        assert (
            f"Invalid value for '{name}': '-' is no file here (standard input and output are not read" in result.output
        )
    (tmp_path / "-").write_bytes(hist.read_bytes())  # unless a file has that name
    assert run("stats", "-").exit_code == 0
    (tmp_path / "-").unlink()
    for name in ("--dataset", "--data-files", "--tokenizer"):  # names of files, presets, Hugging Face ids
        result = run("scan", name, "")
        assert result.exit_code == 2, (name, result.output)
        assert f"Invalid value for '{name}': is empty: it names nothing" in (result.output)
    assert sorted(tmp_path.iterdir()) == before


def undecodable_name(folder, name: bytes) -> str:
    """``name`` (not UTF-8) as Python holds it; the test is skipped where the file system refuses such names."""
    text = os.fsdecode(name)
    try:
        (folder / text).touch()
        (folder / text).unlink()
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    return text


def test_output_names_that_are_not_utf8_are_written_and_read_back(hist, tmp_path, monkeypatch):
    # polars takes UTF-8 names only: freq --out $'\xff' and plan string --usage-out printed its TypeError, and
    # scan --out $'\xff' failed at its first checkpoint, leaving the folder behind
    name = undecodable_name(tmp_path, b"\xff")
    monkeypatch.chdir(tmp_path)
    for args, written in [
        (("freq", hist, "--L", 2048, "--out", f"{name}f.parquet"), f"{name}f.parquet"),
        (("plan", "string", "--hist", hist, "--L", 2048, "--usage-out", f"{name}u.parquet"), f"{name}u.parquet"),
        (("scan", "--out", name, "--max-docs", 20, "--workers", 1, "--quiet"), f"{name}/lengths.parquet"),
    ]:
        result = run(*args)
        assert result.exit_code == 0, (args, result.output)
        assert (tmp_path / written).is_file(), args
    result = run("stats", f"{name}/lengths.parquet", "--json")
    assert result.exit_code == 0 and json.loads(result.output)["documents"] == 20, result.output


def test_a_name_with_a_newline_is_shown_on_the_errors_one_line(tmp_path):
    result = run("freq", tmp_path / "nothere\n", "--L", 2048)
    assert result.exit_code == 1
    assert result.output == f"Error: {tmp_path}/nothere\\n: no such histogram file\n"


def test_usage_errors_reports_and_json_stay_on_their_lines(hist, tmp_path, monkeypatch):
    # a newline or an escape sequence in a value split a usage error or a "wrote" line, or drove the terminal;
    # --json printed a name that is not UTF-8 as a raw byte (invalid UTF-8)
    monkeypatch.chdir(tmp_path)
    weights = run("freq", hist, "--weights", "no\nsuch\x1b[31m")
    assert weights.exit_code == 2 and "Invalid value for '--weights': no\\nsuch\\x1b[31m: not SOURCE=W" in (
        weights.output
    )
    wrote = run("freq", hist, "--L", 2048, "--out", "a\nb.parquet")
    assert wrote.exit_code == 0 and "wrote a\\nb.parquet" in wrote.output
    assert (tmp_path / "a\nb.parquet").is_file()
    named = tmp_path / "h\n\x1b\u202e.parquet"
    named.write_bytes(hist.read_bytes())
    first = run("freq", named, "--L", 2048).output.splitlines()[0]
    assert first == f"{tmp_path}/h\\n\\x1b\\u202e.parquet: 1,000 documents, 2,048,000 tokens (rows)"
    name = undecodable_name(tmp_path, b"\xff.json")
    result = run("calibrate", "--out", name, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.encode("utf-8"))["written"] == name and (tmp_path / name).is_file()


def test_schedule_and_mix_reports_show_names_from_files_without_obeying_them(tmp_path, hist):
    # a title or a stage name with a newline printed a line of its own; ESC and CR drove the terminal
    (tmp_path / "s.yaml").write_text(
        'title: "T\\e[31mitle\\rX"\nhistogram: lengths.parquet\n'
        'stages:\n  - {name: "pre\\e[41mtrain\\nfake line", L: 2048, tokens: 1T}\n'
    )
    report = run("schedule", tmp_path / "s.yaml").output
    assert report.splitlines()[0] == "T\\x1b[31mitle\\rX"
    assert "  pre\\x1b[41mtrain\\nfake line L=2048" in report and "\x1b" not in report and "\r" not in report
    from freqlab.histogram import combine_sources

    labelled = tmp_path / "labelled.parquet"
    sources = {"we\x1bb": LengthHistogram.from_lengths([50, 900]), "co\nde": LengthHistogram.from_lengths([40])}
    combine_sources(sources).to_parquet(labelled)
    (tmp_path / "mix.json").write_text(json.dumps({"weights": {"we\x1bb": 1, "co\nde": 2}}))
    mixed = run("freq", labelled, "--L", 1024, "--weights", tmp_path / "mix.json").output
    assert "\x1b" not in mixed and "  co\\nde " in mixed and "  we\\x1bb " in mixed


def test_a_stage_error_from_a_curriculum_names_the_schedule_file(tmp_path, hist):
    (tmp_path / "s.yaml").write_text(
        "histogram: lengths.parquet\nstages:\n  - {name: a, L: 2048, tokens: 1T, curriculum: {kind: warmup}}\n"
    )
    result = run("schedule", tmp_path / "s.yaml")
    assert result.exit_code == 1 and f"Error: {tmp_path / 's.yaml'}: stage 1 (a): curriculum: warmup:" in result.output


def test_a_window_given_twice_is_one_window(hist):
    """--L 2K --L 2048 printed two identical rows (plot windows drew two identical curves)."""
    data = json.loads(run("freq", hist, "--L", "2K", "--L", 2048, "--L", 1024, "--json").output)
    assert [row["L"] for row in data["results"]] == [2048, 1024]


def test_a_regime_given_twice_is_one_regime(hist, tmp_path):
    """--regime natural --regime natural printed two rows and freq --out wrote every (L, regime, position) twice."""
    args = ("--L", 1024, "--regime", "natural", "--regime", "pack", "--regime", "natural")
    data = json.loads(run("freq", hist, *args, "--json", "--out", tmp_path / "f.parquet").output)
    assert [row["regime"] for row in data["results"]] == ["natural", "pack"]
    assert pl.read_parquet(tmp_path / "f.parquet").height == 2 * 1024


def test_the_histogram_line_says_what_of_the_documents_read_is_not_counted(tmp_path):
    """A new user's review: the scan said 7 read (1 empty, 1 skipped), freq "5 documents", with no word of the 2."""
    h = LengthHistogram.from_lengths([2, 6], corpus="a.jsonl")
    h = LengthHistogram(h.lengths, h.counts, corpus="a.jsonl", documents_read=5, empty_documents=1,
                        skipped={"malformed-json": 1, "null-text": 1})  # fmt: skip
    h.to_parquet(tmp_path / "h.parquet")
    first = run("freq", tmp_path / "h.parquet", "--L", 16).output.splitlines()[0]
    assert first == f"{tmp_path / 'h.parquet'}: 2 documents (of 5 read: 1 empty, 2 skipped), 8 tokens (a.jsonl)"
