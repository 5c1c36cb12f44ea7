"""Calibrating tau (the STRING effective-length threshold, An et al., ICLR 2025, Sec. 3) from measured points."""

from __future__ import annotations

import json
import math
import os
from fractions import Fraction

import numpy as np
import pytest

from freqlab import LengthHistogram
from freqlab.errors import FreqlabError
from freqlab.frequency import effective_length
from freqlab.frequency.calibrate import (
    PAPER_POINTS,
    CalibrationPoint,
    _floor_geometric_mean,
    calibrate,
    point_from_frequency,
    point_from_record,
    read_records,
    read_tau,
)

L = 2048
FULL = np.arange(L, 0, -1, dtype=np.int64)  # one document of L tokens per row: f(i) = L - i


def test_a_point_is_the_frequency_at_its_effective_length():
    # f_T(i) = T (L - i) / L: at E = 1280 with T = 1T, 1e12 * 768 / 2048 = 375B; at the next length tested
    # (1408, the paper's 128-token step) 1e12 * 640 / 2048 = 312.5B
    p = point_from_frequency(FULL, 1e12, 1280, next_length=1408)
    assert (p.tau, p.tau_low, p.L) == (375e9, 312.5e9, L)


def test_every_tau_a_point_allows_predicts_its_measurement():
    p = point_from_frequency(FULL, 1e12, 1280, next_length=1408)
    assert effective_length(FULL, 1e12, p.tau) == 1280
    assert effective_length(FULL, 1e12, p.tau_low) == 1408  # the interval's low end: E reaches the failed length
    assert effective_length(FULL, 1e12, p.tau_low + 1) == 1407
    exact = point_from_frequency(FULL, 1e12, 1280)  # no step given: exact to the token
    assert exact.tau_low == 1e12 * 767 / 2048


def test_the_paper_example_is_100B():
    fit = calibrate(PAPER_POINTS)
    assert [p.effective_length for p in PAPER_POINTS] == [1280, 1280]
    assert [p.L for p in PAPER_POINTS] == [2048, 4096]
    assert (fit.tau, fit.range, fit.bootstrap) == (100e9, (100e9, 100e9), None)


def test_pooling_is_a_geometric_mean_with_the_range_the_points_allow():
    a = point_from_frequency(FULL, 1e12, 1280, next_length=1408)  # 375B, down to 312.5B
    b = point_from_frequency(FULL, 4e12, 1792, next_length=1920)  # 4e12 * 256 / 2048 = 500B, down to 250B
    fit = calibrate([a, b])
    assert fit.tau == round((375e9 * 500e9) ** 0.5)
    assert fit.range == (250e9, 500e9)
    assert fit.bootstrap is None  # two points: no bootstrap


def test_the_bootstrap_interval_brackets_the_estimate_and_is_reproducible():
    points = [point_from_frequency(FULL, 1e12, e, next_length=e + 128) for e in (1024, 1280, 1536, 1664)]
    fit = calibrate(points)
    taus = [p.tau for p in points]
    assert min(taus) <= fit.bootstrap[0] <= fit.tau <= fit.bootstrap[1] <= max(taus)
    assert calibrate(points).bootstrap == fit.bootstrap


def test_a_point_no_whole_tau_can_fit_is_refused_not_fitted_to_predict_past_it():
    """f_T(4) = 5/3 and f_T(5) = 5/4 at 5 tokens: tau = 1 predicted 5, not the measured 4 (and the interval printed
    [1.25, 1] inverted). Every point fitted predicts its own E exactly (checked on random small cases)."""
    import random

    from freqlab import position_frequency

    f = position_frequency(LengthHistogram.from_counts([4, 8], [5, 5]), 8)
    with pytest.raises(FreqlabError, match="no whole tau separates E = 4 from 5"):
        point_from_frequency(f, 5, 4)
    rng = random.Random(3)
    for _ in range(300):
        f = position_frequency(LengthHistogram.from_lengths([rng.randint(1, 40) for _ in range(6)]), 32)
        tokens, E = rng.randint(1, 200), rng.randint(0, 31)
        try:
            point = point_from_frequency(f, tokens, E)
        except FreqlabError:
            continue
        assert effective_length(f, tokens, point.tau) == E


def test_records_from_csv_and_json(tmp_path, monkeypatch):
    LengthHistogram.from_counts([L], [1000]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "runs.csv").write_text(
        "label,tokens,effective_length,next_length\nstep 1,1T,1280,1408\nstep 2,4T,1792,1920\n"
    )
    rows = read_records(tmp_path / "runs.csv")
    points = [point_from_record(r, hist=tmp_path / "h.parquet", L=L, base=tmp_path) for r in rows]
    assert [(p.label, p.tau) for p in points] == [("step 1", 375 * 10**9), ("step 2", 500 * 10**9)]
    # the rows of one file share f: the histogram is read once (a review: 2,000 rows, 2,000 reads, 17 s)
    import freqlab.histogram

    reads, read = [], freqlab.histogram.as_histogram
    monkeypatch.setattr(freqlab.histogram, "as_histogram", lambda source: reads.append(source) or read(source))
    shared: dict = {}
    again = [point_from_record(r, hist=tmp_path / "h.parquet", L=L, frequencies=shared) for r in rows * 3]
    assert again == points * 3 and len(reads) == 1 and list(shared) == [(str(tmp_path / "h.parquet"), L, "natural")]
    monkeypatch.undo()
    # a row's own hist is relative to its file's folder; --hist, given on the command line, is not
    own = point_from_record({**rows[0], "hist": "h.parquet"}, L=L, base=tmp_path)
    assert own.tau == 375 * 10**9
    held = LengthHistogram.from_counts([L], [1000])  # a notebook's histogram (a review: Path(it), a TypeError)
    assert point_from_record(rows[0], hist=held, L=L).tau == 375 * 10**9
    with pytest.raises(FreqlabError, match=r"h\.parquet: no such histogram file"):
        point_from_record(rows[0], hist="h.parquet", L=L, base=tmp_path)
    # missing next to the file, present in the working folder: never read from there (a tau of another histogram)
    elsewhere = tmp_path / "runs"
    elsewhere.mkdir()
    monkeypatch.chdir(tmp_path)  # holds an h.parquet
    with pytest.raises(FreqlabError, match=r"line 2: .*runs/h\.parquet: no such histogram file"):
        point_from_record({**rows[0], "hist": "h.parquet"}, L=L, base=elsewhere)
    monkeypatch.setenv("HOME", str(tmp_path))  # ~ is the home folder, not a folder named ~ beside the file
    assert point_from_record({**rows[0], "hist": "~/h.parquet"}, L=L, base=elsewhere).tau == 375 * 10**9
    (tmp_path / "runs.json").write_text(json.dumps({"points": [{"effective_length": 1280, "occurrences": "100B"}]}))
    (point,) = [point_from_record(r) for r in read_records(tmp_path / "runs.json")]
    assert (point.tau, point.tau_low) == (100e9, 100e9)


def test_bad_records_name_the_line(tmp_path):
    (tmp_path / "runs.csv").write_text("tokens,effective_length\n1T,12x\n")
    (row,) = read_records(tmp_path / "runs.csv")
    with pytest.raises(FreqlabError, match=r"runs.csv: line 2: effective_length: not a length in positions: '12x'"):
        point_from_record(row, hist="h.parquet", L=L)
    (tmp_path / "runs.csv").write_text("tokens,effective_length,budget\n1T,12,3\n")
    with pytest.raises(FreqlabError, match=r"unknown column\(s\) 'budget' \(known: "):
        read_records(tmp_path / "runs.csv")
    (tmp_path / "runs.csv").write_text("tokens , effective_length , regime\n1T , 12 , natural \n")  # (two reviews)
    (row,) = read_records(tmp_path / "runs.csv")
    assert (row["tokens"], row["effective_length"], row["regime"]) == ("1T", "12", "natural")
    (tmp_path / "runs.json").write_text('[{"effective_length": 12, "tokns": "1T"}]')
    with pytest.raises(FreqlabError, match=r"runs\.json: point 1: unknown key\(s\) tokns"):
        read_records(tmp_path / "runs.json")
    (tmp_path / "runs.csv").write_text("tokens,effective_length\n1T,12\n")
    (row,) = read_records(tmp_path / "runs.csv")
    with pytest.raises(FreqlabError, match="line 2: no histogram"):
        point_from_record(row, L=L)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("true", "not a token count"),  # a JSON boolean is not 1 token
        ("-5", "positive integer"),
        ("1e999", "not a token count"),  # JSON reads it as inf
        ('"1e400"', "past 2\\^63"),  # exact, but past int64
    ],
)
def test_json_numbers_are_checked_as_strings_are(tmp_path, value, reason):
    LengthHistogram.from_counts([L], [1000]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "runs.json").write_text(f'[{{"tokens": {value}, "effective_length": 1280}}]')
    (row,) = read_records(tmp_path / "runs.json")
    with pytest.raises(FreqlabError, match=rf"runs\.json: point 1: tokens.*{reason}"):
        point_from_record(row, hist=tmp_path / "h.parquet", L=L)
    (tmp_path / "runs.json").write_text('[{"tokens": "1T", "effective_length": 1280.7}]')  # not cut to 1280
    (row,) = read_records(tmp_path / "runs.json")
    with pytest.raises(FreqlabError, match=r"effective_length: .*got 1280\.7"):
        point_from_record(row, hist=tmp_path / "h.parquet", L=L)


def test_a_csv_with_a_byte_order_mark_or_a_repeated_column(tmp_path):
    (tmp_path / "runs.csv").write_bytes(b"\xef\xbb\xbftokens,effective_length\n1T,1280\n")  # as spreadsheets save
    (row,) = read_records(tmp_path / "runs.csv")
    assert (row["tokens"], row["effective_length"]) == ("1T", "1280")
    (tmp_path / "runs.csv").write_text("tokens,tokens,effective_length\n1T,2T,1280\n")
    with pytest.raises(FreqlabError, match="column\\(s\\) given twice: tokens"):
        read_records(tmp_path / "runs.csv")


def test_written_fits_are_read_back(tmp_path):
    path = calibrate(PAPER_POINTS).write_json(tmp_path / "tau.json")
    assert read_tau(path) == 100e9
    (tmp_path / "other.json").write_text('{"tau": 5}')
    with pytest.raises(FreqlabError, match=r"other\.json: not a freqlab calibration file"):
        read_tau(tmp_path / "other.json")


@pytest.mark.parametrize("value", ["-1", "NaN", "1e400", "true", "0.5", "1e30"])
def test_a_tau_file_holds_what_tau_would_take(tmp_path, value):
    (tmp_path / "tau.json").write_text("[1]")
    with pytest.raises(FreqlabError, match="not a freqlab calibration file"):
        read_tau(tmp_path / "tau.json")
    (tmp_path / "tau.json").write_text(f'{{"format": "freqlab-calibration", "tau": {value}}}')
    with pytest.raises(FreqlabError, match=r"tau\.json: (tau = .* is not an occurrence count|not a freqlab)"):
        read_tau(tmp_path / "tau.json")


def test_a_binary_or_missing_file_is_one_line(tmp_path):
    (tmp_path / "runs.csv").write_bytes(b"tokens,effective_length\n\xd0\x00\xff\n")
    with pytest.raises(FreqlabError, match=r"runs\.csv: not a UTF-8 text file \(byte 24\)"):
        read_records(tmp_path / "runs.csv")
    (tmp_path / "tau.json").write_bytes(b"\x7fELF\xd0\xff")
    with pytest.raises(FreqlabError, match=r"tau\.json: not a UTF-8 text file \(byte 4\)"):
        read_tau(tmp_path / "tau.json")
    with pytest.raises(FreqlabError, match=r"gone\.json: cannot read calibration file \(No such file"):
        read_tau(tmp_path / "gone.json")


def test_a_fit_is_a_whole_count_that_predicts_each_points_own_length():
    """tau was round(exp(mean(log f_T(E)))): 667 for f_T(1) = 2000/3 (the fit then predicted 0, not 1), one above
    f_T(700) = 126581003187.6 at 300B tokens, ~40 above past 2^53."""
    from freqlab import position_frequency

    mixed = ([100, 3000, 5000, 777], [70, 10, 3, 11])
    cases = (([3], [1], 1000, 1, 4), (*mixed, 300 * 10**9, 700, 2048), (*mixed, 123456789012345678, 700, 2048))
    for lengths, counts, tokens, E, L_ in cases:
        f = position_frequency(lengths, counts, L_, "natural")
        exact = Fraction(int(f[E]) * tokens, int(f[0]))
        point = point_from_frequency(f, tokens, E)
        fit = calibrate([point])
        assert point.tau == fit.tau == math.floor(exact)
        assert effective_length(f, tokens, fit.tau) == E
    with pytest.raises(FreqlabError, match="below one occurrence"):  # f_T(2) = 1/3: tau 0 was written
        point_from_frequency([3, 2, 1, 0], 1, 2)
    with pytest.raises(FreqlabError, match=r"1\.7 is not a whole position"):
        point_from_frequency([3, 2, 1, 0], 100, 1.7)
    # the geometric mean rounded down exactly: sqrt(375e9 * 500e9) = 433012701892.2...
    f = [2048 - i for i in range(2048)]
    pair = [point_from_frequency(f, T, E) for T, E in ((10**12, 1280), (4 * 10**12, 1792))]
    assert calibrate(pair).tau == math.isqrt(375 * 10**9 * 500 * 10**9) == 433012701892


def test_the_pooled_tau_is_the_exact_floor_of_the_geometric_mean_of_large_and_many_points():
    """A review: 1,000 points near 2^63 took 71 s (a float estimate ~21,000 off, corrected a unit per step); the
    floor of the n-th root of the exact product, checked against integer arithmetic, at any size."""
    rng = np.random.default_rng(0)
    for values in (
        [int(v) for v in rng.integers(2**62, 2**63 - 1, 2000, dtype=np.int64)],
        [int(v) for v in rng.integers(1, 10**6, 50)],
        [10**18 + 1] * 3,  # exactly an integer: its own floor
        [2, 8],
    ):
        tau = _floor_geometric_mean([Fraction(v) for v in values])
        product = math.prod(values)
        assert tau ** len(values) <= product < (tau + 1) ** len(values)
    assert _floor_geometric_mean([Fraction(7, 3), Fraction(100)]) == math.isqrt(700 // 3) == 15  # 15.27...


def test_hostile_points_files_are_one_line_naming_the_place(tmp_path):
    (tmp_path / "runs.csv").write_text("tokens,effective_length\n300B,700,extra\n")
    with pytest.raises(FreqlabError, match=r"runs\.csv: line 2: 1 field\(s\) more than the header's 2"):
        read_records(tmp_path / "runs.csv")
    (tmp_path / "runs.csv").write_text("tokens,effective_length\n1T,12\n\n\n1T,12x\n")  # blank lines counted
    assert [row["_where"] for row in read_records(tmp_path / "runs.csv")] == [
        f"{tmp_path / 'runs.csv'}: line 2",
        f"{tmp_path / 'runs.csv'}: line 5",
    ]
    (tmp_path / "runs.json").write_text('[{"effective_length": 700, "occurrences": "1B", "effective_length": 900}]')
    with pytest.raises(FreqlabError, match=r"runs\.json: key 'effective_length' given twice"):
        read_records(tmp_path / "runs.json")
    for extra in ({"tokens": "1T"}, {"next_length": 800}):
        (tmp_path / "runs.json").write_text(json.dumps([{"effective_length": 700, "occurrences": "1B", **extra}]))
        (row,) = read_records(tmp_path / "runs.json")
        with pytest.raises(FreqlabError, match="occurrences is f_T\\(E\\) itself"):
            point_from_record(row)
    (tmp_path / "runs.json").write_text(json.dumps([{"effective_length": 7, "tokens": "1T", "hist": 5}]))
    (row,) = read_records(tmp_path / "runs.json")
    with pytest.raises(FreqlabError, match=r"point 1: hist must be text, got 5"):
        point_from_record(row, L=L)
    (tmp_path / "tau.json").write_text(json.dumps({"format": "freqlab-calibration", "tau": 1.5}))
    with pytest.raises(FreqlabError, match="not an occurrence count, a whole number"):
        read_tau(tmp_path / "tau.json")


def test_the_bootstrap_of_identical_points_is_that_point():
    """exp(mean(log)) drifted: three points of 100B gave the interval [99999999999.9998, 99999999999.9998]."""
    fit = calibrate([PAPER_POINTS[0]] * 3)
    assert fit.tau == 10**11 and fit.bootstrap == (1e11, 1e11)


def test_the_report_says_which_points_the_pooled_tau_does_not_predict():
    """The geometric mean of the points' tau need not lie where every point allows it: E = 1280 and E = 1300 at 1T
    (next lengths 1408) allow (312.5B, 375B] and (312.5B, 365.2B]; their mean, 370B, predicts less than 1300 for the
    second, which the report said nothing about. Points the pooled tau fits: no note."""
    agreeing = calibrate([point_from_frequency(FULL, 1e12, 1280, next_length=1408),
                          point_from_frequency(FULL, 2e12, 1664, next_length=1792)])  # fmt: skip
    assert agreeing.tau == 375 * 10**9  # both allow it: (312.5B, 375B] and (250B, 375B]
    assert not any(line.startswith("note:") for line in agreeing.estimate_lines())
    near = calibrate([point_from_frequency(FULL, 1e12, 1280, next_length=1408),
                      point_from_frequency(FULL, 1e12, 1300, next_length=1408)])  # fmt: skip
    (note,) = [line for line in near.estimate_lines() if line.startswith("note:")]
    # the bound it passes in digits: rounded outward, (313B, 366B] could seem to hold a tau printed 366B (a review)
    assert note == (
        "note: tau = 370B (370,084,977,572) predicts another E for E = 1300 (it allows tau <= 365,234,375,000); "
        "every point allows tau in (313B, 365B]"
    )
    apart = calibrate([point_from_frequency(FULL, 1e12, 1024, next_length=1152),
                       point_from_frequency(FULL, 1e12, 1792, next_length=1920)])  # fmt: skip
    (note,) = [line for line in apart.estimate_lines() if line.startswith("note:")]
    assert note == (  # 250B is below what E = 1024 allows and above what E = 1792 does
        "note: tau = 250B (250,000,000,000) predicts another E for E = 1024 (it allows tau > 437,500,000,000), "
        "E = 1792 (it allows tau <= 125,000,000,000); no tau fits every point"
    )


def test_an_interval_narrower_than_three_digits_is_written_rounded_outward_never_as_one_number():
    # 133.52B-133.77B was written "(134B, 134B]" (a review): an interval that looked empty
    point = CalibrationPoint("r4", 1500, tau=133_770_000_000, tau_low=133_520_000_000.0, tokens=5 * 10**11)
    assert point.interval() == "(133B, 134B]"


def test_points_given_as_occurrences_allow_their_tau_alone_and_the_fit_of_equal_ones_predicts_them():
    """A point given as occurrences allows exactly its tau ([v, v]); the open interval (tau_low, tau] of a measured
    point left it out, so the one-point fit and the paper's two 100B points were said to predict another E, with
    "no tau fits every point", right beside the table showing that tau."""
    paper = calibrate(PAPER_POINTS)
    assert [row[-1] for row in paper.table()[1]] == ["[100B, 100B]"] * 2
    assert not any(line.startswith("note:") for line in paper.estimate_lines())
    other = CalibrationPoint("other", 1000, 2 * 10**11, 2e11)
    (note,) = [line for line in calibrate([PAPER_POINTS[0], other]).estimate_lines() if line.startswith("note:")]
    assert note == (
        f"note: tau = 141B (141,421,356,237) predicts another E for {PAPER_POINTS[0].label} (it allows tau = "
        "100,000,000,000 alone), other (it allows tau = 200,000,000,000 alone); no tau fits every point"
    )
    measured = point_from_frequency(FULL, 1e12, 1280, next_length=1408)  # allows (312.5B, 375B]
    assert measured.interval() == "(312B, 375B]"  # rounded outward: 312.5B is not allowed, 312.6B is
    assert not measured.allows(312_500_000_000) and measured.allows(375 * 10**9)


def test_an_effective_length_of_0_is_refused_saying_what_it_means(tmp_path):
    """A review: probe reports 0 when no tested length passes; calibrate refused it as "must be a positive integer"."""
    from freqlab.errors import FreqlabError
    from freqlab.frequency.calibrate import point_from_record

    for value in (0, "0"):
        with pytest.raises(FreqlabError, match=r"^runs.csv:2: effective_length 0 \(freqlab probe's answer when no"):
            point_from_record({"_where": "runs.csv:2", "effective_length": value, "occurrences": "100B"})


def test_a_probe_that_passed_every_length_is_a_lower_bound_not_a_point():
    """A review: E = L (every probed length up to the window passed) was refused as "outside the window 0..L-1",
    with nothing said of why or what to do."""
    with pytest.raises(
        FreqlabError, match=r"run 3: effective length 4 is the whole window .*leave the row out, or probe"
    ):
        point_from_frequency([4, 3, 2, 1], tokens=400, effective_length=4, label="run 3")


def test_a_calibration_file_is_read_within_bounds_and_its_tau_exactly(tmp_path):
    """A review: --tau-from /dev/zero grew until killed, a FIFO without a writer waited forever, and a tau past 2^53
    was rounded through float (--tau keeps it exact)."""

    from freqlab.frequency.calibrate import FORMAT, read_tau

    with pytest.raises(FreqlabError, match=r"/dev/zero: not a regular file; calibration file is read from a file"):
        read_tau("/dev/zero")
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(FreqlabError, match=r"pipe\.json: not a regular file"):
        read_tau(fifo)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (16 << 20) + b"{}")
    with pytest.raises(FreqlabError, match=r"big\.json: more than 16,777,216 bytes"):
        read_tau(big)
    opened = len(os.listdir("/proc/self/fd"))
    for _ in range(5):  # a folder: refused, its descriptor closed (a second review: one leaked per call)
        with pytest.raises(FreqlabError, match="not a regular file"):
            read_tau(tmp_path)
    assert len(os.listdir("/proc/self/fd")) == opened
    exact = tmp_path / "tau.json"
    exact.write_text(json.dumps({"format": FORMAT, "tau": 2**53 + 5}))
    assert read_tau(exact) == 2**53 + 5
