"""PositionFrequency: f with its window, regime and provenance; an array where one is expected, its statistics as
methods (the same numbers as freqlab.frequency.stats), and a display with the key numbers."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from display_helpers import shown

from freqlab import FreqlabError, LengthHistogram
from freqlab.frequency import (
    PositionFrequency,
    effective_length,
    position_at_mass,
    share_at_least,
    share_at_most,
    tokens_needed,
)

# 1000 documents of 2048 tokens: f(i) = 1000 (2048 - i), the closed form of reference.md (75.04% / 6.26%)
ROWS = LengthHistogram.from_counts([2048], [1000], corpus="rows", tokenizer="tekken")


def test_it_is_the_array_where_an_array_is_expected():
    pf = ROWS.frequency(2048)
    assert isinstance(pf, PositionFrequency) and len(pf) == 2048 and pf[0] == 2_048_000 and pf[2047] == 1000
    assert np.asarray(pf).dtype == np.int64 and pf[:3].tolist() == [2_048_000, 2_047_000, 2_046_000]
    assert share_at_most(pf, 1024) == pf.share_at_most() == pytest.approx(0.7504, abs=5e-5)
    assert share_at_least(pf, 1536) == pf.share_at_least() == pytest.approx(0.0626, abs=5e-5)


def test_operators_and_array_attributes_act_on_f_as_on_the_array():
    """A new user compared two frequencies with == and got a silent False (identity): now element by element."""
    pf, again, other = ROWS.frequency(2048), ROWS.frequency(2048), ROWS.frequency(2048, "concat")
    assert isinstance(pf == again, np.ndarray) and (pf == again).all() and (pf == np.asarray(again)).all()
    assert (pf != LengthHistogram.from_counts([2048], [999]).frequency(2048)).all()
    assert (pf == other).all()  # 1000 full rows: the same segments whatever the regime
    assert (pf * 2)[:2].tolist() == [4_096_000, 4_094_000] and (pf - pf).sum() == 0 and int((pf > 1000).sum()) == 2047
    assert pf.shape == (2048,) and pf.dtype == np.int64 and pf.sum() == 1000 * 2048 * 2049 // 2
    assert np.cumsum(pf)[1] == 4_095_000 and pf.L == 2048 and pf.tokens == 2_048_000  # its own attributes first
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        pf.nothing  # noqa: B018
    with pytest.raises(TypeError, match="unhashable"):
        hash(pf)
    assert not (pf == "x").any()  # as arrays compare with a string
    # frozen: pf += 1 makes a new array (as for a tuple), out=pf is refused, a copy is a copy
    alias = pf
    alias += 1
    assert isinstance(alias, np.ndarray) and alias[0] == 2_048_001 and pf[0] == 2_048_000
    with pytest.raises(TypeError):
        np.add(pf, 0, out=pf)
    assert np.array(pf, copy=True) is not pf.f and np.asarray(pf) is pf.f


def test_f_is_read_only_and_the_callers_array_stays_writable():
    """A review: np.asarray(pf)[0] = 999 made pf.tokens 999; pf.fill(0) and pf.sort() (the array's methods) emptied
    and reordered f, and with them every statistic."""
    pf = ROWS.frequency(8)
    for change in (lambda: np.asarray(pf).__setitem__(0, 999), lambda: pf.fill(0), lambda: pf.sort()):
        with pytest.raises(ValueError, match="read-only"):
            change()
    assert pf.tokens == ROWS.tokens and pf[:2].tolist() == [2_048_000, 1_792_000]
    mine = np.array([6, 3, 1], dtype=np.int64)
    made = PositionFrequency(mine, 3, "natural", 3)
    mine[0] = 7  # the caller's array is theirs
    assert mine.flags.writeable and made.f.base is mine
    # a second review: pickle and deepcopy made f anew, writable; a list as f raised AttributeError
    import copy
    import pickle

    for again in (pickle.loads(pickle.dumps(pf)), copy.deepcopy(pf)):
        with pytest.raises(ValueError, match="read-only"):
            again.f[0] = -1
        assert again.tokens == pf.tokens
    assert PositionFrequency([3, 2, 1], 3, "natural", 1).f.tolist() == [3, 2, 1]


def test_sum_and_cumsum_are_exact_past_int64():
    """A review: Σ f(i) ≈ T·L/2 passes 2^63 at 10^13 tokens of L = 2^21, where pf.sum() and np.cumsum(pf), which the
    docstring shows, wrapped to -7,960,979,608,667,860,992."""
    pf = LengthHistogram.from_counts([10**6], [10**7]).frequency(2**21, "concat")
    exact = sum(int(v) for v in pf.f.tolist())  # Python ints, one by one
    assert exact == 10_485_764_465_041_690_624 > 2**63
    assert pf.sum() == np.sum(pf) == exact and type(pf.sum()) is int
    running = np.cumsum(pf)
    assert running.dtype == object and running[-1] == pf.cumsum()[-1] == exact and running[2] == sum(pf.f[:3].tolist())
    small = ROWS.frequency(2048)  # below 2^63: int64, as before
    assert small.cumsum().dtype == np.int64 and np.cumsum(small)[-1] == small.sum() == 1000 * 2048 * 2049 // 2
    assert small.sum(dtype=np.float64) == pytest.approx(1000 * 2048 * 2049 / 2)  # other arguments: the array's
    # a second review: keepdims, a tuple of axes and ndarray's positional order were the array's own (wrapping)
    assert pf.sum(axis=(0,)) == pf.sum(None, None, None, False) == exact
    assert np.sum(pf, keepdims=True).tolist() == [exact]


def test_statistics_match_the_functions():
    pf = ROWS.frequency(2048)
    f = np.asarray(pf)
    assert pf.effective_length(10**12) == effective_length(f, 10**12) == 1843  # README: f_T(i) >= 100B up to 1843
    assert pf.tokens_needed(1280) == tokens_needed(f, 1280) == 266_666_666_667
    assert pf.position_at_mass(0.5) == position_at_mass(f, 0.5)
    np.testing.assert_allclose(pf.scaled(2_048_000), f)
    row = pf.regime_row(10**12)
    assert (row["regime"], row["segments"], row["dropped_tokens"]) == ("natural", 1000, 0)
    assert row["effective_length"] == 1843


def test_to_frame_has_position_regime_f():
    frame = ROWS.frequency(8, "concat").to_frame()
    assert frame.columns == ["position", "regime", "f"] and frame["f"][0] == ROWS.tokens


def test_a_table_names_the_regime_computed(tmp_path):
    """A review: megatron from a histogram alone is concat's f, which the object says (its approximation) and a
    table labelled 'megatron' without a word."""
    h = LengthHistogram.from_counts([3, 6], [2, 1])
    pf = h.frequency(4, "megatron")
    assert (pf.regime, pf.approximation, pf.f.tolist()) == ("megatron", "concat", [12, 9, 6, 3])
    assert set(pf.to_frame()["regime"]) == {"megatron (as concat)"}
    table = h.frequency_table(4, ["concat", "megatron"])  # one label each, none passed off as the other
    assert table.filter(table["position"] == 1).rows() == [(1, "concat", 9), (1, "megatron (as concat)", 9)]
    written = h.write_frequencies(tmp_path / "f.parquet", [4], ["concat", "megatron"])  # its header names them alike
    assert json.loads(pl.read_parquet_metadata(written)["freqlab"])["regimes"] == ["concat", "megatron (as concat)"]


def test_display_shows_the_key_numbers():
    page = shown(ROWS.frequency(2048))
    assert page.rows["f(0): tokens in segments"] == "2,048,000" and page.rows["segments"] == "1,000"
    assert page.rows["mass at i ≤ L/2 = 1024"] == "75.0%" and page.rows["mass at i ≥ 3L/4 = 1536"] == "6.3%"
    assert page.rows["f(1024)"] == f"{1000 * 1024:,}" and page.svgs == 1
    text = repr(ROWS.frequency(2048))
    assert text.startswith("PositionFrequency natural, L = 2048: f(0) = 2,048,000 tokens in 1,000 segments")
    assert "75.0% of position mass at i ≤ 1024, 6.3% at i ≥ 1536" in text


def test_a_long_window_keeps_the_repr_and_the_svg_small():
    lengths = np.arange(1, 300_000, 7)  # 42,857 documents, all shorter than L = 1M: one segment each
    pf = LengthHistogram.from_lengths(lengths).frequency(1 << 20)
    assert len(repr(pf)) < 1000 and len(pf._repr_html_()) < 12_000
    page = shown(pf)  # the numbers, from f(i) = Σ_s max(|s| - i, 0) written out on the lengths
    assert page.rows["f(0): tokens in segments"] == f"{lengths.sum():,}"
    assert page.rows["segments"] == f"{lengths.size:,}"
    for i in (1 << 18, 1 << 19, 3 << 18, (1 << 20) - 1):
        assert page.rows[f"f({i})"] == f"{np.maximum(lengths - i, 0).sum():,}"
    # f(i) = Σ_{n > i} (n - i) c_n from suffix sums of the counts c_n, then where the cumulative mass reaches 50/80/90%
    c = np.bincount(lengths)
    above, tokens_above = np.cumsum(c[::-1])[::-1], np.cumsum((np.arange(c.size) * c)[::-1])[::-1]
    i = np.arange(c.size - 1)
    f = tokens_above[1:] - i * above[1:]
    mass = np.cumsum(f) / f.sum()
    at = [int(np.searchsorted(mass, q)) for q in (0.5, 0.8, 0.9)]
    assert page.rows["50% / 80% / 90% of mass at i ≤"] == " / ".join(map(str, at))
    assert page.rows["mass at i ≤ L/2 = 524288"] == "100.0%" and page.rows["dropped tokens"] == "0"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"L": 10}, r"^f must hold one number per position 0\.\.L-1 \(L = 10\), got int64 of shape \(3,\)$"),
        ({"regime": "zzz"}, r"^unknown regime 'zzz'; choose from natural, truncate, concat"),
        ({"segments": -5}, r"^segments must be a whole count in 0\.\.2\^63 - 1, got -5$"),
        ({"dropped_tokens": 1.5}, r"^dropped_tokens must be a whole count"),
        ({"f": np.array([3, -2, 1])}, r"^a position frequency counts occurrences, never negative: f\(1\) = -2$"),
        ({"L": "3"}, r"^L must be a positive integer, got '3'$"),
        ({"f": np.array([np.nan, -5.0, 1.0])}, r"^a position frequency is finite: f\(0\) = nan$"),  # min() is nan
        ({"f": np.array([1, "b", 1], dtype=object)}, r"^a position frequency holds numbers: f\(1\) = 'b'$"),
    ],
)
def test_a_position_frequency_made_by_hand_is_checked_as_the_regimes_make_it(given, message):
    """A review: PositionFrequency(f, L=10, regime='zzz', segments=-5) was taken, and its repr then raised."""
    made = {"f": np.array([3, 2, 1]), "L": 3, "regime": "natural", "segments": 3} | given
    with pytest.raises(FreqlabError, match=message):
        PositionFrequency(**made)
    assert PositionFrequency(np.array([3, 2, 1]), 3, "natural", 3).sum() == 6


def test_a_position_frequency_is_not_refused_for_memory_it_already_holds(monkeypatch):
    """An adversary: the check of L ran the memory check for f (10 bytes a position) again, after f was made."""
    monkeypatch.setenv("FREQLAB_MEMORY_BYTES", "5000")
    assert PositionFrequency(np.zeros(1000, np.int64), 1000, "natural", 0).L == 1000
