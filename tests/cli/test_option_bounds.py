"""Every option whose size is not bounded by its syntax is estimated before work starts, and numbers at the edges
are one line (issue 23 items 5 and 7, issue 22 item 5): exact messages and exit codes, on real files.

The machine's memory is set to 1 GB through ``FREQLAB_MEMORY_BYTES`` so that the refusals do not depend on it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from freqlab.cli import main
from freqlab.histogram import LengthHistogram, combine_sources
from tests.corpus.tokenized_writers import single_sequence_documents, write_megatron


@pytest.fixture(autouse=True)
def one_gigabyte(monkeypatch):
    monkeypatch.setenv("FREQLAB_MEMORY_BYTES", "1000000000")


@pytest.fixture
def hist(tmp_path) -> Path:
    path = tmp_path / "lengths.parquet"
    combine_sources(
        {"web": LengthHistogram.from_lengths([100, 3000]), "code": LengthHistogram.from_lengths([5000])}
    ).to_parquet(path)
    return path


@pytest.fixture
def megatron_idx(tmp_path) -> Path:
    return write_megatron(tmp_path / "mg" / "corpus", single_sequence_documents([50] * 200))


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_line(result, exit_code: int, message: str) -> None:
    assert result.exit_code == exit_code, result.output
    assert result.output.rstrip("\n").splitlines()[-1] == f"Error: {message}"
    if exit_code == 1:  # not a usage error: only the line
        assert result.output.count("\n") == 1


# ---- windows: f(i) and what is computed over positions ------------------------------------------------------
def test_a_window_past_the_machines_memory_is_refused_before_f_is_allocated(hist):
    one_line(
        run("freq", hist, "--L", 2**30),
        1,
        "--L 1,073,741,824 needs ~10.7 GB of memory (f(i), 10 bytes per position), more than the 1.0 GB available",
    )
    one_line(
        run("freq", hist, "--L", "256M"),
        1,
        "--L 268,435,456 needs ~2.7 GB of memory (f(i), 10 bytes per position), more than the 1.0 GB available",
    )
    one_line(
        run("stats", hist, "--L", "256M"),
        1,
        "--L 268,435,456 needs ~2.7 GB of memory (f(i), 10 bytes per position), more than the 1.0 GB available",
    )


def test_freq_out_counts_the_table_of_every_window_and_regime(hist):
    one_line(
        run("freq", hist, "--L", "16M", "--regime", "natural", "--regime", "concat", "--out", "f.parquet"),
        1,
        "--out with --L 16,777,216 needs ~1.5 GB of memory (a table of f(i) for 1 window(s) × 2 regime(s), "
        "40 bytes per position each), more than the 1.0 GB available",
    )


def test_plan_string_over_a_billion_positions_is_refused_not_killed(hist):
    one_line(
        run("plan", "string", "--hist", hist, "--L", "1024M"),
        1,
        "--L 1,073,741,824 needs ~34.4 GB of memory (the plan's arrays over positions, 32 bytes per position), "
        "more than the 1.0 GB available",
    )


def test_a_schedules_stages_are_sized_together(hist, tmp_path):
    schedule = tmp_path / "schedule.yaml"
    schedule.write_text(f"histogram: {hist}\nstages:\n" + "  - {L: 64M, tokens: 1T}\n" * 20)
    one_line(
        run("schedule", schedule),
        1,
        f"{schedule}: stages of L = 1,342,177,280 positions in all needs ~12.3 GB of memory (every stage's f(i) "
        "and their sum F(i)), more than the 1.0 GB available",
    )


def test_scan_workers_and_batches_are_bounded(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for k in range(40):  # 40 files: 40 shards, so at most 40 workers are started
        (corpus / f"part{k}.jsonl").write_text('{"text": "hello world"}\n')
    one_line(
        run("scan", "--dataset", corpus, "--workers", 1000, "--out", tmp_path / "out", "-q"),
        1,
        "--workers 1,000 needs ~2.7 GB of memory (40 worker processes for 40 shards, ~64 MB each), more than "
        "the 1.0 GB available",
    )
    one_line(
        run("scan", "--dataset", corpus, "--batch-size", "1e9", "--out", tmp_path / "out", "-q"),
        2,
        "Invalid value for '--batch-size': '1e9' is not in 1..1,000,000",
    )


# ---- Megatron replays -----------------------------------------------------------------------------------
def test_megatron_samples_and_epochs_are_sized_before_the_replay(megatron_idx):
    scan = (
        "scan",
        "--dataset",
        megatron_idx,
        "--out",
        megatron_idx.parent / "out",
        "-q",
        "--regime",
        "megatron",
        "--L",
        64,
    )
    started = time.perf_counter()
    one_line(
        run(*scan, "--train-samples", "1T"),
        1,
        "--train-samples 1,000,000,000,000 needs ~27.2 TB of memory (the Megatron replay of 6,597,938,145 "
        "epochs of 194 sequences, 1,000,000,000,101 samples of 64 tokens), more than the 1.0 GB available",
    )
    one_line(
        run(*scan, "--epochs", "1e12"),
        1,
        "--epochs 1,000,000,000,000 needs ~4.1 PB of memory (the Megatron replay of 1,000,000,000,000 epochs "
        "of 194 sequences, 151,562,499,999,999 samples of 64 tokens), more than the 1.0 GB available",
    )
    one_line(
        run(*scan, "--data-path", f"1 {megatron_idx} 1 {megatron_idx}", "--train-samples", "1T"),
        1,
        "--train-samples 1,000,000,000,000 needs ~13.7 TB of memory (the Megatron replay of 3,315,463,918 "
        "epochs of 194 sequences, 502,500,000,071 samples of 64 tokens), more than the 1.0 GB available",
    )
    assert time.perf_counter() - started < 30  # refused before the blend's walk over 10^12 samples


def test_megatron_numbers_at_the_edges_are_usage_errors(megatron_idx):
    scan = ("scan", "--dataset", megatron_idx, "-q", "--regime", "megatron")
    bound = "9,223,372,036,854,775,807"
    one_line(
        run(*scan, "--train-samples", "1e30"), 2, f"Invalid value for '--train-samples': '1e30' is not in 1..{bound}"
    )
    one_line(run(*scan, "--epochs", "1e30"), 2, f"Invalid value for '--epochs': '1e30' is not in 1..{bound}")
    both = "--train-samples and --epochs: give one (Megatron sizes its training by one of them)"  # not Python names
    one_line(run(*scan, "--epochs", "2", "--train-samples", "5"), 2, both)
    group = run("plan", "self-extend", "--L", "4K", "--extend-to", "16K", "--group", "2000000000", "--window", "8")
    one_line(group, 2, "Invalid value for '--group': 2000000000 is not in the range 1<=x<=1073741824.")  # as 0 is
    usage = "split (--megatron-split) must be up to three non-negative weights like 969,30,1, got "
    one_line(run(*scan, "--megatron-split", "1..2"), 2, usage + "'1..2'")
    one_line(run(*scan, "--megatron-split", "1,.,2"), 2, usage + "'1,.,2'")
    one_line(run(*scan, "--megatron-split", "9" * 401), 2, usage + "'" + "9" * 58 + "…")
    # 0 is non-negative: what is wrong is the sum (a review)
    one_line(run(*scan, "--megatron-split", "0,0"), 2, usage + "'0,0': its weights sum to 0, which splits nothing")
    dropped = " (megatron-core reads only digits and dots: signs and exponents would be dropped)"
    for split in ("-1,2,0", "1e3,1", "+9,1", "969,-30,1"):  # megatron-core would read 1,2,0 / 1,3,1 / 9,1: not meant
        one_line(run(*scan, "--megatron-split", split), 2, usage + repr(split) + dropped)
    from freqlab.frequency.megatron_replay import split_vector

    for split in ("969-30-1", "train=969,valid=30,test=1", "969 30 1"):  # separators, read as megatron-core reads them
        assert split_vector(split) == split_vector("969,30,1")
    one_line(
        run(*scan, "--data-path", "1e400 mid 1 mid"),
        2,
        "data_path (--data-path) weights must be positive finite numbers, got '1e400'",
    )
    for weight in ("-1", "nan", "-inf"):  # a review: "-1 mid" looked for -1.idx
        one_line(
            run(*scan, "--data-path", f"{weight} mid"),
            2,
            f"data_path (--data-path) weights must be positive finite numbers, got '{weight}'",
        )


def test_a_megatron_data_path_that_names_nothing_is_refused_before_the_scan(megatron_idx, tmp_path, monkeypatch):
    # --data-path "" was ignored, and a missing prefix was found only after the whole scan, leaving ./freqlab-out
    monkeypatch.chdir(tmp_path)
    scan = ("scan", "--dataset", megatron_idx, "-q", "--regime", "megatron")
    one_line(
        run(*scan, "--data-path", ""),
        2,
        "Invalid value for '--data-path': names no index; leave it out to read the scanned one",
    )
    missing = tmp_path / "elsewhere"
    refused = f"Invalid value for '--data-path': {missing}.idx: no such Megatron index (data_path names prefixes"
    one_line(run(*scan, "--data-path", missing), 2, refused + " of .idx/.bin)")
    (tmp_path / "folder.idx").mkdir()  # no index file either
    one_line(
        run(*scan, "--data-path", tmp_path / "folder"),
        2,
        f"Invalid value for '--data-path': {tmp_path}/folder.idx: no such Megatron index (data_path names prefixes "
        "of .idx/.bin)",
    )
    alone = tmp_path / "alone.idx"  # an index without its .bin
    alone.write_bytes(megatron_idx.read_bytes())
    one_line(
        run(*scan, "--data-path", alone),
        2,
        f"Invalid value for '--data-path': {alone}: no alone.bin beside it (No such file or directory)",
    )
    assert not (tmp_path / "freqlab-out").exists()
    hist = tmp_path / "h.parquet"
    LengthHistogram.from_counts([50], [200]).to_parquet(hist)
    freq = ("freq", hist, "--L", 64)
    one_line(run(*freq, "--regime", "megatron", "--data-path", missing), 2, refused + " of .idx/.bin)")
    # only megatron reads it: given without it, a usage error (it ran, changing nothing, unsaid: a review)
    one_line(
        run(*freq, "--regime", "natural", "--data-path", missing),
        2,
        "--data-path applies to --regime megatron alone, not given",
    )


def test_megatron_pointers_past_the_bin_after_the_checked_head_are_one_line(tmp_path):
    """The pointers of the first 1024 sequences are checked on opening; the EOS check reads further ones."""
    documents = [[[5, 6, 7], [8, 9, 2]] for _ in range(600)]  # 1,200 sequences: 1,000 documents reach past 1,024
    idx = write_megatron(tmp_path / "corpus", documents)
    data = bytearray(idx.read_bytes())
    start = 34 + 4 * 1200
    pointers = np.frombuffer(bytes(data[start : start + 8 * 1200]), np.int64).copy()
    pointers[1024:-1] += 10**6  # the last pointer still agrees with the .bin's size
    data[start : start + 8 * 1200] = pointers.tobytes()
    idx.write_bytes(bytes(data))
    bin_path = idx.with_suffix(".bin")
    message = (
        f"{idx}: sequence 1,025 points at byte 1,012,300, outside {bin_path} (14,400 bytes); is the index corrupt?"
    )
    one_line(run("scan", "--dataset", idx, "--out", tmp_path / "out", "-q"), 1, message)
    one_line(
        run(
            "scan",
            "--dataset",
            idx,
            "--out",
            tmp_path / "out2",
            "-q",
            "--regime",
            "megatron",
            "--reset-attention-mask",
            "--L",
            64,
        ),
        1,
        message,
    )


def test_datatrove_metadata_with_thousands_of_digits_is_one_line(tmp_path):
    ds = tmp_path / "a.ds"
    ds.write_bytes(np.arange(6, dtype="<u2").tobytes())
    (tmp_path / "a.ds.index").write_bytes(np.array([2, 6], "<u8").tobytes())
    Path(f"{ds}.metadata").write_text("tekken|" + "7" * 5000 + "\n")
    one_line(
        run("scan", "--dataset", ds, "--out", tmp_path / "out", "-q"),
        1,
        f"{ds}.metadata: token size '777777777777777777… (5,000 digits); datatrove writes 2 (uint16) or 4 (uint32)",
    )


# ---- mixtures, schedules, histograms --------------------------------------------------------------------
def test_weights_beyond_float64_are_usage_errors_not_tracebacks(hist, tmp_path):
    for weight in ("1e-400", "1e400"):
        one_line(
            run("freq", hist, "--weights", f"web={weight},code=1"),
            2,
            f"Invalid value for '--weights': --weights: weight of 'web' must be 0 or within 1e-300..1e300, "
            f"got '{weight}'",
        )
    one_line(
        run("freq", hist, "--weights", "web=1e300,code=1e-300"),
        1,
        "code: weight 1e-300 is too small beside the others to keep one document of it (give 0 to leave the "
        "source out)",
    )
    # shares are named as given, with the epochs they make (the message named the epochs alone as "weight")
    (tmp_path / "share.yaml").write_text("unit: share\nweights: {web: 1, code: 1e-300}\n")
    said = run("freq", hist, "--weights", tmp_path / "share.yaml").output
    assert "code: weight 1e-300 (" in said and " epochs) is too small beside the others" in said
    (tmp_path / "percent.yaml").write_text("unit: share\nweights: {web: '70%', code: 30}\n")
    said = " ".join(run("freq", hist, "--weights", tmp_path / "percent.yaml").output.split())
    assert (
        "weight of 'web' must be a number, got '70%' (shares are relative numbers, normalised to their sum: 70" in said
    )
    result = run("freq", hist, "--weights", "web=1e-300,code=3e-300", "--L", "2K")  # tiny, but a mix: exact scale
    assert result.exit_code == 0, result.output
    assert "scaled by K = 1.79769e+308" not in result.output and "web=1e-300, code=3e-300" in result.output


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("corpus", 5, "corpus must be a string, got 5"),
        ("empty_documents", "3", "empty_documents must be a count, got '3'"),
        ("documents_read", [1], "documents_read must be a count or null, got [1]"),
        ("skipped", {"malformed-json": "x"}, "skipped.malformed-json must be a count, got 'x'"),
        ("skipped", [], "skipped must be a mapping, got []"),
        ("meta", "x", "meta must be a mapping, got 'x'"),
        ("sources", {"web": 3}, "sources.web must be a mapping, got 3"),
        ("sources", {"web": {"empty_documents": -1}}, "sources.web.empty_documents must be a count, got -1"),
    ],
)
def test_stats_on_a_header_with_wrong_types_is_one_line(hist, tmp_path, field, value, expected):
    header = json.loads(pl.read_parquet_metadata(hist)["freqlab"])
    bad = tmp_path / "bad.parquet"
    pl.read_parquet(hist).write_parquet(bad, metadata={"freqlab": json.dumps({**header, field: value})})
    one_line(run("stats", bad), 1, f"{bad}: 'freqlab' metadata field {expected}")


# ---- HARPE and figures ----------------------------------------------------------------------------------
def test_harpe_bases_must_be_finite(tmp_path):
    one_line(run("plan", "harpe", "--b-max", "inf"), 2, "Invalid value for '--b-max': 'inf' is not a finite number")
    # a RoPE base is above 1 (b^(-2j/d) falls with j): "must be positive" at parse time, then "b_min must be > 1"
    one_line(run("plan", "harpe", "--b-min", "1"), 2, "Invalid value for '--b-min': 1.0 is not in the range x>1.")
    one_line(
        run("plan", "harpe", "--stride", "nan"), 2, "Invalid value for '--stride': must be a finite number, got 'nan'"
    )


def test_harpe_searches_are_sized_in_memory_and_time_before_they_start(monkeypatch):
    one_line(
        run("plan", "harpe", "--head-dim", 10**9),
        2,
        "Invalid value for '--head-dim': 1000000000 is not in the range 2<=x<=8192.",  # sizes.MAX_HEAD_DIM
    )
    monkeypatch.setenv("FREQLAB_MAX_SECONDS", "5")
    one_line(
        run("plan", "harpe", "--head-dim", 8192),
        1,
        "--head-dim (d/2) = 4,096 would take ~34 s (waveforms of 134 bases at 3,091 distances, 4,096 terms "
        "each), more than the 5 s freqlab allows ($FREQLAB_MAX_SECONDS sets it)",
    )
    one_line(
        run("plan", "harpe", "--stride", "1e-9"),
        1,
        "--stride/--b-min/--b-max (candidate bases) = 4e+15 needs ~3.2e+05 PB of memory (waveforms of 4e+15 bases "
        "at 3,091 distances, 64 terms each), more than the 1.0 GB available",
    )
    one_line(  # a review met a 300-digit count, twice on one ~700-character line, blaming --stride alone
        run("plan", "harpe", "--b-max", "1e300"),
        1,
        "--stride/--b-min/--b-max (candidate bases) = 3.33e+295 needs ~2.7e+285 PB of memory (waveforms of "
        "3.33e+295 bases at 3,091 distances, 64 terms each), more than the 1.0 GB available",
    )
    one_line(
        run("plan", "harpe", "--compare", "--random-sets", 10**8),
        1,
        "--random-sets 100,000,000 needs ~204.8 GB of memory (100,000,000 sets of 32 bases), more than the "
        "1.0 GB available",
    )
    one_line(
        run("plan", "harpe", "--grid", "0:100000000000:1"),
        1,
        "--grid/--extend-to (distances) = 100,000,000,001 needs ~348.4 TB of memory (waveforms of 134 bases at "
        "100,000,000,001 distances, 64 terms each), more than the 1.0 GB available",
    )
    one_line(
        run("plan", "harpe", "--strategy", "attention-buckets", "--grid", "0:100000000000:1"),
        1,
        "--grid 0:100000000000:1 needs ~800.0 GB of memory (100,000,000,001 distances), more than the 1.0 GB available",
    )


def test_a_peak_separation_past_the_grid_is_the_whole_grid():
    """--separation 1e9 costs what the grid's size does: the window is clipped to the grid either way."""
    started = time.perf_counter()
    wide = run("plan", "harpe", "--separation", 10**9, "--json")
    assert time.perf_counter() - started < 30
    whole = run("plan", "harpe", "--separation", 3091, "--json")
    # one extremum per base at most: some bases have none, and the search says so (it picked them at d = 0)
    assert wide.exit_code == whole.exit_code == 1 and wide.output == whole.output
    assert "have no peak or no valley on the grid 32000..130880 (3091 points)" in wide.output


def test_figures_are_sized_before_they_are_drawn(hist, tmp_path):
    png = tmp_path / "f.png"
    one_line(
        run("plot", "frequency", hist, "--L", "16M", "--out", png),
        1,
        "--L 16,777,216 needs ~2.7 GB of memory (a figure's curves over positions, 160 bytes per position), "
        "more than the 1.0 GB available",
    )
    one_line(
        run("plot", "string-usage", "--L", "1024M", "--S", "300M", "--out", png),
        1,
        "--L 1,073,741,824 needs ~171.8 GB of memory (a figure's curves over positions, 160 bytes per position), "
        "more than the 1.0 GB available",
    )
    one_line(
        run("plot", "frequency", hist, "--dpi", 100_000, "--out", png),
        1,
        "--dpi 100000 at 3.5 x 2.52 in: a 350,000 x 252,000-pixel PNG; the PNG writer draws at most 65,535 "
        "pixels a side",
    )
    one_line(
        run("plot", "frequency", hist, "--dpi", 3000, "--size", "20,20", "--out", png),
        1,
        "--dpi 3000 at 20 x 20 in needs ~28.8 GB of memory (a 60,000 x 60,000-pixel PNG, 8 bytes per pixel), "
        "more than the 1.0 GB available",
    )
    one_line(
        run("plot", "frequency", hist, "--size", "inf,3", "--out", png),
        2,
        "Invalid value for '--size': 'inf,3': WIDTH and HEIGHT must be within 0..100 inches",
    )
    one_line(
        run("plot", "frequency", hist, "--bins", 10**9, "--out", png),
        2,
        "Invalid value for '--bins': 1000000000 is not in the range 1<=x<=4096.",
    )
    one_line(
        run("freq", hist, "--regime", "pack", "--seed", -1),
        2,
        "Invalid value for '--seed': -1 is not in the range x>=0.",
    )
    assert not png.exists()
    result = run("plot", "frequency", hist, "--dpi", 100_000, "--out", tmp_path / "f.pdf")  # vector: no pixels
    assert result.exit_code == 0, result.output


def test_plot_sources_with_ten_thousand_sources_is_refused_in_one_line(tmp_path):
    path = tmp_path / "many.parquet"
    combine_sources({f"s{k}": LengthHistogram.from_lengths([k + 1]) for k in range(10_000)}).to_parquet(path)
    one_line(
        run("plot", "sources", path, "--out", tmp_path / "s.png"),
        1,
        "the histogram has 10,000 sources with documents; a per-source figure draws at most 16 (one curve and legend "
        "entry each): merge the smaller ones first (freqlab.histogram.combine_sources), or list them with "
        "freqlab stats",
    )
    assert not (tmp_path / "s.png").exists()
