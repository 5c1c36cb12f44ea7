"""LengthHistogram: sparse (length, count) int64 pairs with provenance, merge, scale, summary and Parquet I/O."""

import json
import pickle
import re
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import polars as pl
import pytest

from freqlab import FreqlabError, LengthHistogram, effective_length, position_frequency
from freqlab.files import read_parquet, write_parquet
from freqlab.histogram import combine_sources


def test_from_lengths_counts_like_bincount():
    h = LengthHistogram.from_lengths([3, 5, 5, 2048, 3, 3])
    assert h.lengths.dtype == np.int64 and h.counts.dtype == np.int64
    assert h.lengths.tolist() == [3, 5, 2048] and h.counts.tolist() == [3, 2, 1]
    assert (h.documents, h.tokens) == (6, 9 + 10 + 2048)


def test_very_long_lengths_use_the_sparse_path():
    h = LengthHistogram.from_lengths([1 << 40, 7, 1 << 40])
    assert h.lengths.tolist() == [7, 1 << 40] and h.counts.tolist() == [1, 2]


def test_from_counts_sums_repeated_lengths():
    h = LengthHistogram.from_counts([5, 3, 5], [1, 2, 4])
    assert h.lengths.tolist() == [3, 5] and h.counts.tolist() == [2, 5]


def test_documents_read_accounts_for_empty_and_skipped_documents():
    h = LengthHistogram.from_lengths([4, 4], empty_documents=3, skipped={"malformed-json": 2})
    assert h.documents_read == 2 + 3 + 2


def test_merge_adds_counts_metadata_and_frequencies():
    a = LengthHistogram.from_lengths([10, 20, 20], corpus="c", skipped={"invalid-utf8": 1})
    b = LengthHistogram.from_lengths([20, 3000], corpus="c", empty_documents=2, skipped={"invalid-utf8": 2})
    m = a + b
    assert m.lengths.tolist() == [10, 20, 3000] and m.counts.tolist() == [1, 3, 1]
    assert m.skipped == {"invalid-utf8": 3} and m.empty_documents == 2 and m.documents_read == 3 + 2 + 2 + 3
    assert m.corpus == "c"
    f = position_frequency(m.lengths, m.counts, 2048)
    fa = position_frequency(a.lengths, a.counts, 2048)
    fb = position_frequency(b.lengths, b.counts, 2048)
    assert (f == fa + fb).all()


@pytest.mark.parametrize(
    ("left", "right", "what"),
    [
        ({"tokenizer_vocab_hash": "7d3d"}, {"tokenizer_vocab_hash": "80c2"}, "tokenizers"),
        ({"special_tokens_counted": False}, {"special_tokens_counted": True}, "special-token settings"),
        ({"sample_rate": None}, {"sample_rate": 0.1}, "sampling rates"),
    ],
)
def test_histograms_in_different_units_do_not_merge(left, right, what):
    """A review summed a Tekken histogram with a Llama 3 one (its provenance saying Tekken's hash alone), and a 10%
    sample with a whole scan (the sum's sample_rate the left side's)."""
    a = LengthHistogram.from_lengths([10, 20], meta=left)
    b = LengthHistogram.from_lengths([30], meta=right)
    for x, y in ((a, b), (b, a)):
        with pytest.raises(FreqlabError, match=f"histograms of different {what} do not add up"):
            x + y


def test_a_sample_scaled_to_a_budget_adds_to_a_whole_scan():
    """A review: the refusal of a sample beside a whole scan named no way out; scaled (scale_to_tokens), its counts
    are no sample's and it adds up."""
    whole = LengthHistogram.from_counts([10, 20], [6, 2], meta={"sample_rate": None})
    sample = LengthHistogram.from_counts([10, 20], [3, 1], meta={"sample_rate": 0.5})
    with pytest.raises(FreqlabError, match=r"scale one to the other's tokens first \(scale_to_tokens\)"):
        whole + sample
    summed = whole + sample.scale_to_tokens(whole.tokens)
    assert summed.counts.tolist() == [12, 4] and summed.meta["sample_rate"] is None
    # two scaled samples: their raw rates are no rate of the sum (it said 0.1, a review): whole counts, as a scan's
    other = LengthHistogram.from_counts([10], [5], meta={"sample_rate": 0.1}).scale_to_tokens(50)
    assert (sample.scale_to_tokens(50) + other).meta["sample_rate"] is None
    # a raw sample beside a scaled one: a sample's counts beside whole ones (it added up, labelled 0.5; left alone
    # last stop)
    made = LengthHistogram.from_lengths([10, 20]).scale_to_tokens(100)  # made in Python: no sample_rate key
    for x, y in ((sample, other), (other, sample), (sample, made), (made, sample)):
        with pytest.raises(FreqlabError, match=r"\(sample_rate 0.5\) and .* \(None\)|\(sample_rate None\) and .*0.5"):
            x + y


def test_combining_sources_accounts_for_every_document_read_as_a_merge_does():
    """A review: combine_sources' totals left out the sources' empty and skipped documents (3 read, 0 empty, where
    + says 11 and 7); a stats of the combined file said so too."""
    a = LengthHistogram.from_counts([5], [2], empty_documents=3, skipped={"null-text": 1})
    b = LengthHistogram.from_counts([7], [1], empty_documents=4, skipped={"null-text": 2, "malformed-json": 1})
    combined, summed = combine_sources({"a": a, "b": b}), a + b
    assert (combined.documents_read, combined.empty_documents, combined.skipped) == (14, 7, summed.skipped)
    assert summed.documents_read == 14 and summed.skipped == {"null-text": 3, "malformed-json": 1}
    given = combine_sources({"a": a, "b": b}, empty_documents=0)  # the caller's totals, as a scan gives them
    assert given.empty_documents == 0 and given.skipped == summed.skipped and given.documents_read == 3 + 4
    read = combine_sources({"a": a, "b": b}, documents_read=20)  # only the read count given (a third review)
    assert (read.documents_read, read.empty_documents, read.skipped) == (20, 7, summed.skipped)


def test_combining_sources_checks_their_units_as_a_merge_does():
    """A review combined a scan with special tokens and one without through combine_sources, which + refused."""
    with_special = LengthHistogram.from_lengths([10], meta={"special_tokens_counted": True, "seed": 0})
    without = LengthHistogram.from_lengths([30], meta={"special_tokens_counted": False, "seed": 0})
    with pytest.raises(FreqlabError, match=r"source 'a' .* and source 'b' .*histograms of different special-token"):
        combine_sources({"a": with_special, "b": without})
    both = combine_sources({"a": with_special, "b": LengthHistogram.from_lengths([30], meta=with_special.meta)})
    assert both.meta == {"special_tokens_counted": True, "seed": 0} and both.tokens == 40


def test_a_merge_keeps_the_metadata_both_agree_on():
    scan = {"tokenizer_vocab_hash": "7d3d", "sample_rate": None, "seed": 0}
    a = LengthHistogram.from_lengths([10], meta={**scan, "max_docs": 5})
    b = LengthHistogram.from_lengths([30], meta={**scan, "max_docs": None})
    assert (a + b).meta == (b + a).meta == scan  # max_docs 5 was one scan's limit, not the sum's
    made = LengthHistogram.from_lengths([7])  # made in Python: its units agree with any, the sum is no scan
    assert (a + made).meta == (made + a).meta == {"tokenizer_vocab_hash": "7d3d", "sample_rate": None}
    # a review: an unknown hash (a Megatron scan's None) beside a known one lost the known one, and then a third
    # histogram of another tokenizer added up; an index one side was read from is not the sum's
    megatron = LengthHistogram.from_lengths([9], meta={"tokenizer_vocab_hash": None, "megatron_index": "/d/x.idx"})
    assert (a + megatron).meta == (megatron + a).meta == {"tokenizer_vocab_hash": "7d3d", "sample_rate": None}
    tekken = LengthHistogram.from_lengths([30], meta={"tokenizer_vocab_hash": "0b1f"})
    with pytest.raises(FreqlabError, match="histograms of different tokenizers"):
        (a + megatron) + tekken


def test_per_source_split_sums_to_the_total():
    web = LengthHistogram.from_lengths([5, 5, 9])
    book = LengthHistogram.from_lengths([9, 70000])
    h = combine_sources({"web": web, "book": book}, corpus="mix")
    assert h.lengths.tolist() == [5, 9, 70000] and h.counts.tolist() == [2, 2, 1]
    assert list(h.sources) == ["book", "web"]
    merged = h + combine_sources({"web": LengthHistogram.from_lengths([5])})
    assert merged.sources["web"].counts.tolist() == [3, 1] and merged.documents == 6


def test_scale_to_a_token_budget_keeps_the_distribution():
    h = LengthHistogram.from_counts([100, 1000], [30, 7])  # 10,000 tokens
    s = h.scale_to_tokens(10**12)
    assert s.counts.tolist() == [30 * 10**8, 7 * 10**8] and s.tokens == 10**12
    assert s.meta["scaled_from_tokens"] == 10_000


def test_summary_statistics():
    h = LengthHistogram.from_counts([10, 100, 5000], [6, 3, 1], corpus="toy")
    s = h.length_statistics(L=2048)
    assert s["documents"] == 10 and s["tokens"] == 60 + 300 + 5000
    assert s["mean"] == pytest.approx(536.0)
    assert s["median"] == 10 and s["percentiles"]["p90"] == 100 and s["percentiles"]["p99"] == 5000
    assert s["max"] == 5000
    assert s["share_tokens_longer_than_L"] == pytest.approx(5000 / 5360)
    json.dumps(s)  # serialisable


def test_parquet_round_trip_keeps_counts_and_metadata(tmp_path):
    h = LengthHistogram.from_lengths(
        [7, 7, 9000],
        corpus="sotu",
        tokenizer="tekken",
        skipped={"missing-text-field": 4},
        empty_documents=1,
        meta={"L": [2048]},
    )
    path = h.to_parquet(tmp_path / "lengths.parquet")
    back = LengthHistogram.read_parquet(path)
    assert back.lengths.tolist() == [7, 9000] and back.counts.tolist() == [2, 1]
    assert (back.corpus, back.tokenizer, back.skipped, back.empty_documents) == (
        "sotu",
        "tekken",
        {"missing-text-field": 4},
        1,
    )
    assert back.documents_read == 8 and back.meta == {"L": [2048]}
    frame = pl.read_parquet(path)
    assert frame.columns == ["length", "count"] and frame.dtypes == [pl.Int64, pl.Int64]


def test_parquet_round_trip_with_sources(tmp_path):
    h = combine_sources(
        {
            "RedPajamaBook": LengthHistogram.from_lengths([90000]),
            "RedPajamaC4": LengthHistogram.from_lengths([300, 300]),
        },
        corpus="slimpajama",
    )
    back = LengthHistogram.read_parquet(h.to_parquet(tmp_path / "h.parquet"))
    assert set(back.sources) == {"RedPajamaBook", "RedPajamaC4"}
    assert back.sources["RedPajamaC4"].counts.tolist() == [2]
    assert back.lengths.tolist() == [300, 90000] and pl.read_parquet(tmp_path / "h.parquet").columns == [
        "source",
        "length",
        "count",
    ]


@pytest.mark.parametrize("name", ["a", "z"])  # first or last: a traceback, or the source lost, before
def test_a_source_of_empty_and_skipped_documents_alone_survives_the_round_trip(tmp_path, name):
    h = combine_sources(
        {
            name: LengthHistogram.from_lengths([], empty_documents=2, skipped={"null-text": 1}, corpus=name),
            "m": LengthHistogram.from_lengths([7, 7]),
        },
        corpus="c",
        empty_documents=2,
        skipped={"null-text": 1},
    )
    back = LengthHistogram.read_parquet(h.to_parquet(tmp_path / "h.parquet"))
    assert list(back.sources) == sorted([name, "m"]) and back.documents_read == 5
    assert (back.sources[name].documents, back.sources[name].empty_documents) == (0, 2)
    assert back.sources[name].skipped == {"null-text": 1} and back.sources["m"].counts.tolist() == [2]


def test_loading_something_else_is_a_clear_error(tmp_path):
    with pytest.raises(FreqlabError, match="no such histogram file"):
        LengthHistogram.read_parquet(tmp_path / "missing.parquet")
    with pytest.raises(FreqlabError, match=r"^/dev/null: not a regular file$"):  # a review: "no such histogram file"
        LengthHistogram.read_parquet("/dev/null")
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(FreqlabError, match=r"no whole Parquet file: it ends with b'quet', not b'PAR1' \(cut short\?\)"):
        LengthHistogram.read_parquet(corrupt)
    corrupt.write_bytes(b"PAR1 this is not parquet PAR1")
    with pytest.raises(FreqlabError, match=r"corrupt\.parquet: not a readable Parquet file \("):
        LengthHistogram.read_parquet(corrupt)
    foreign = tmp_path / "foreign.parquet"
    pl.DataFrame({"length": [1], "count": [1]}).write_parquet(foreign)
    with pytest.raises(FreqlabError, match=r"not a freqlab length histogram .* LengthHistogram\.from_counts\("):
        LengthHistogram.read_parquet(foreign)


def test_a_length_on_two_rows_or_damaged_metadata_is_said_as_it_is(tmp_path):
    """A review: a length on two rows was summed silently (or, with sources, refused as "documents_read = 302 is
    fewer than the documents counted"), and metadata that is not JSON was "no 'freqlab' metadata"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = LengthHistogram.from_counts([5, 9], [2, 3]).to_parquet(tmp_path / "h.parquet")
    table, meta = pq.read_table(path), pq.read_metadata(path).metadata
    doubled = pa.concat_tables([table, table.slice(0, 1)])
    pq.write_table(doubled.replace_schema_metadata(meta), tmp_path / "twice.parquet")
    with pytest.raises(
        FreqlabError, match=r"twice\.parquet: length 5 is on 2 rows: a histogram file holds each length"
    ):
        LengthHistogram.read_parquet(tmp_path / "twice.parquet")
    cut = {**meta, b"freqlab": meta[b"freqlab"][:40]}
    pq.write_table(table.replace_schema_metadata(cut), tmp_path / "damaged.parquet")
    with pytest.raises(FreqlabError, match=r"damaged\.parquet: its 'freqlab' metadata is not JSON \(.*\); the file is"):
        LengthHistogram.read_parquet(tmp_path / "damaged.parquet")


def test_a_module_missing_while_reading_is_not_called_a_bad_file(tmp_path, monkeypatch):
    """A ModuleNotFoundError raised inside the Parquet reader was reported as "not a readable Parquet file
    (ModuleNotFoundError)": a broken installation blamed on a good histogram."""
    import freqlab.histogram

    path = LengthHistogram.from_lengths([3, 5]).to_parquet(tmp_path / "h.parquet")

    def missing(_):
        raise ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow")

    monkeypatch.setattr(freqlab.histogram, "read_parquet", missing)
    with pytest.raises(ModuleNotFoundError, match="pyarrow"):
        LengthHistogram.read_parquet(path)


def test_a_file_of_another_kind_is_named_for_what_it_is(tmp_path, monkeypatch):
    """An empty file, YAML or JSON given where a histogram goes said 'not a readable Parquet file (ComputeError)',
    polars' exception name; the f(i) that `freq --out` writes said it had no 'freqlab' metadata, which it has
    (new user)."""
    (tmp_path / "empty.parquet").write_bytes(b"")
    (tmp_path / "s.yaml").write_text("stages: []")
    hint = "; a length histogram is the lengths.parquet a scan writes"
    for name, what in [
        ("empty.parquet", "an empty file (0 bytes), not a Parquet file"),
        ("s.yaml", "not a Parquet file: it starts with b'stages: []' (a Parquet file starts and ends with b'PAR1')"),
    ]:
        with pytest.raises(FreqlabError) as caught:
            LengthHistogram.read_parquet(tmp_path / name)
        assert str(caught.value) == f"{tmp_path / name}: {what}{hint}"
    locked = tmp_path / "locked.parquet"
    LengthHistogram.from_counts([3], [1]).to_parquet(locked)
    import builtins

    real_open = builtins.open

    def refusing(file, *args, **kwargs):  # as for a file of another user's (the suite may run as root)
        if str(file) == str(locked):
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing)
    with pytest.raises(FreqlabError) as caught:
        LengthHistogram.read_parquet(locked)
    monkeypatch.undo()
    assert str(caught.value) == f"{locked}: cannot read (Permission denied)"  # no word of what a histogram is
    f = tmp_path / "f.parquet"
    write_parquet(f, pl.DataFrame({"i": [0], "f": [1]}), {"format": "freqlab.position_frequency", "version": 1})
    with pytest.raises(FreqlabError) as caught:
        LengthHistogram.read_parquet(f)
    assert str(caught.value) == (
        f"{f}: a freqlab file of format 'freqlab.position_frequency', not a length histogram "
        "('freqlab.length_histogram': the lengths.parquet a scan writes)"
    )


def test_its_arrays_are_read_only_as_the_histogram_is_frozen():
    """A review: h.counts[0] = -7 made documents and tokens negative; h.lengths[0] = 100 moved the median."""
    import copy
    import pickle

    h = LengthHistogram.from_counts([3, 6], [2, 1])
    for made in (h, pickle.loads(pickle.dumps(h)), copy.deepcopy(h)):  # pickle makes arrays anew (a second review)
        for array in (made.lengths, made.counts):
            with pytest.raises(ValueError, match="read-only"):
                array[0] = -7
    assert (h.documents, h.tokens, h.quantile(0.5)) == (3, 12, 3)
    given = np.array([3, 6])
    LengthHistogram.from_lengths(given)
    given[0] = 4  # the caller's array is theirs
    assert (h + h).counts.tolist() == [4, 2] and h.scale_to_tokens(24).counts.tolist() == [4, 2]


def test_bad_lengths_are_rejected():
    with pytest.raises(FreqlabError, match="lengths must be >= 1, got 0"):
        LengthHistogram.from_lengths([3, 0])
    with pytest.raises(FreqlabError, match="must be integers"):
        LengthHistogram.from_lengths([1.5])


def test_missing_values_in_a_histogram_file_are_named(tmp_path):
    h = LengthHistogram.from_lengths([5, 6])
    path = h.to_parquet(tmp_path / "h.parquet")
    metadata = pl.read_parquet_metadata(path)
    frame = pl.DataFrame({"source": ["web", None], "length": [5, 6], "count": [1, 1]})
    frame.write_parquet(path, metadata=metadata)
    with pytest.raises(FreqlabError, match="column 'source' has 1 missing value"):
        LengthHistogram.read_parquet(path)


def test_a_source_column_of_numbers_is_named(tmp_path):
    # the error named a "corpus" the file has no field for (a review)
    path = LengthHistogram.from_lengths([5, 6]).to_parquet(tmp_path / "h.parquet")
    metadata = pl.read_parquet_metadata(path)
    pl.DataFrame({"source": [1, 2], "length": [5, 6], "count": [1, 1]}).write_parquet(path, metadata=metadata)
    with pytest.raises(FreqlabError, match=r"h\.parquet: column 'source' holds Int64, not text"):
        LengthHistogram.read_parquet(path)


def test_a_uint64_count_above_2_63_is_refused_never_shown_negative(tmp_path):
    path = LengthHistogram.from_counts([3, 5], [2, 7]).to_parquet(tmp_path / "h.parquet")
    metadata = pl.read_parquet_metadata(path)
    edited = pl.DataFrame({"length": [3, 5], "count": pl.Series([2**63 + 5, 7], dtype=pl.UInt64)})
    edited.write_parquet(path, metadata=metadata)
    with pytest.raises(FreqlabError) as error:
        LengthHistogram.read_parquet(path)
    assert str(error.value) == f"{path}: counts must be at most 2^63 - 1 (exact int64 counts), got {2**63 + 5}"
    with pytest.raises(
        FreqlabError, match=r"^lengths are float64 values of 2\^53 or more \(1e\+19\), which hold no exact"
    ):
        LengthHistogram.from_counts([1e19], [1])
    # a review: a whole float past 2^53 was taken as the count it no longer holds (a pandas Int64 column with an NA,
    # cast to float: 2^53 + 1 is the float 2^53); below 2^53 every integer is a float
    with pytest.raises(FreqlabError, match=r"^counts are float64 values of 2\^53 or more \(9007199254740992\), which"):
        LengthHistogram.from_counts([3], [float(2**53 + 1)])
    assert LengthHistogram.from_counts([3.0], [float(2**53 - 1)]).counts.tolist() == [2**53 - 1]
    # a review: float32 from 2^24 on (a pandas float32 column of 16,777,217 holds 16,777,216) passed as exact, and
    # float16 counts warned of an overflow comparing with 2^53
    with pytest.raises(FreqlabError, match=r"^counts are float32 values of 2\^24 or more \(16777216\), which"):
        LengthHistogram.from_counts([3], np.array([16777217], np.float32))
    assert LengthHistogram.from_counts([3], np.array([2**24 - 1], np.float32)).counts.tolist() == [2**24 - 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert LengthHistogram.from_counts([3, 5], np.array([3, 5], np.float16)).counts.tolist() == [3, 5]
        with pytest.raises(FreqlabError, match=r"^counts are float16 values of 2\^11 or more \(4000\)"):
            LengthHistogram.from_counts([3], np.array([4000], np.float16))
    top = LengthHistogram.from_counts(np.array([3], np.uint64), np.array([2**63 - 1], np.uint64))
    assert top.counts.tolist() == [2**63 - 1]  # the largest int64 is exact


def test_merging_a_split_with_an_unsplit_histogram_keeps_the_unlabelled_part():
    split = combine_sources({"web": LengthHistogram.from_lengths([5])})
    merged = split + LengthHistogram.from_lengths([7, 7])
    assert merged.sources["(none)"].counts.tolist() == [2] and merged.documents == 3


# --- the notebook API: frequency, frequency_table, summary, display ------------------------------------------------


def test_frequency_is_position_frequency_with_provenance():
    h = LengthHistogram.from_counts([300, 5000], [7, 2], corpus="toy", tokenizer="tekken")
    for regime in ("natural", "truncate", "concat", "uniform"):
        pf = h.frequency(2048, regime)
        expected = position_frequency(h.lengths, h.counts, 2048, regime)
        np.testing.assert_array_equal(np.asarray(pf), expected)
        np.testing.assert_array_equal(position_frequency(h, 2048, regime), expected)  # a histogram is accepted
        assert (pf.L, pf.regime, pf.corpus, pf.tokenizer) == (2048, regime, "toy", "tekken")
    truncated = h.frequency(2048, "truncate")
    assert truncated.dropped_tokens == 2 * (5000 - 2048) and truncated.segments == 9
    # natural: 5000 = 2048 + 2048 + 904, so 7 + 3·2 segments
    assert h.frequency(2048).segments == 13 and position_frequency(h, L=2048, regime="concat")[0] == h.tokens


def test_frequency_table_is_long_and_exact():
    h = LengthHistogram.from_counts([3, 6], [2, 1])
    table = h.frequency_table(4, ["natural", "concat", "uniform"])
    assert table.columns == ["position", "regime", "f"] and table.height == 12 and table["f"].dtype == pl.Int64
    wide = table.pivot(on="regime", index="position", values="f").sort("position")
    assert wide["natural"].to_list() == [12, 8, 4, 1]  # 6 -> 4 + 2: segments 3, 3, 4, 2
    assert wide["concat"].to_list() == [12, 9, 6, 3]  # 12 tokens in rows of 4


def test_summary_holds_nearest_rank_quantiles_and_the_frequency_rows():
    h = LengthHistogram.from_lengths([1, 2, 3, 4] * 25 + [4096] * 10)
    s = h.length_statistics(2048, ["natural", "concat"], tokens=10**6, tau=1000)
    assert s["quantiles"] == "nearest-rank" and s["median"] == 3  # ceil(0.5 · 110) = 55th smallest length
    assert [row["regime"] for row in s["frequency"]] == ["natural", "concat"]
    natural = s["frequency"][0]
    f = position_frequency(h, 2048)
    assert natural["f"] == {str(i): int(f[i]) for i in (0, 512, 1024, 1536, 2047)}
    assert natural["effective_length"] == effective_length(f, 10**6, 1000)
    json.dumps(s)  # JSON-serialisable
    assert "frequency" not in h.length_statistics()  # no window, no frequency
    empty = LengthHistogram.from_lengths([], empty_documents=3).length_statistics(2048)
    assert empty["frequency"] == [] and empty["documents_read"] == 3  # same keys, no rows: f is 0 everywhere


def test_repr_is_short_whatever_the_size_and_the_html_holds_the_numbers():
    from display_helpers import shown

    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 10**7, 2 * 10**5)
    sources = {
        f"source-{k:02d}": LengthHistogram.from_lengths(lengths[k::40], corpus=f"source-{k:02d}") for k in range(40)
    }
    h = combine_sources(sources, corpus="big " * 100, tokenizer="tekken", skipped={"malformed-json": 3})
    text = repr(h)
    assert len(text) < 1000 and len(text.splitlines()) <= 3
    assert f"{h.documents:,} documents, {h.tokens:,} tokens" in text and "(+34 more)" in text
    page = shown(h)
    assert page.rows["documents with tokens"] == f"{h.documents:,}" and page.rows["tokens"] == f"{h.tokens:,}"
    assert page.rows["p10 / p90 / p99 (nearest rank)"] == " / ".join(f"{h.quantile(q):,}" for q in (0.1, 0.9, 0.99))
    assert page.rows["skipped"] == "malformed-json: 3" and page.svgs == 1
    sources_table = page.tables[1]
    assert sources_table[0] == ["source", "documents", "tokens", "share of tokens"]
    assert sources_table[-1] == ["… 16 more rows"]  # 40 sources, 24 shown
    assert len(h._repr_html_()) < 20_000


def test_an_empty_histogram_displays_too():
    from display_helpers import shown

    page = shown(LengthHistogram.from_lengths([], empty_documents=2))
    assert page.rows["empty documents"] == "2"
    assert repr(LengthHistogram.from_lengths([])) == "LengthHistogram: no documents"


def test_a_histogram_of_no_documents_has_no_length_statistics():
    """Its mean, median, percentiles, min and max are None (JSON null in a scan's summary.json), not 0: a median of
    0 reads as documents of 0 tokens (a review: a scan of empty documents wrote "mean": 0.0)."""
    stats = LengthHistogram.from_lengths([], empty_documents=2).length_statistics(64)
    assert (stats["documents_read"], stats["mean"], stats["median"], stats["min"], stats["max"]) == (2, *[None] * 4)
    assert set(stats["percentiles"].values()) == {None} and stats["frequency"] == []
    report = LengthHistogram.from_lengths([], empty_documents=2).report(64)
    assert re.search(r"mean length +-\nmedian length +-\np10 / p90 / p99 +- / - / -\n", report), report
    assert LengthHistogram.from_lengths([7, 9]).length_statistics()["min"] == 7  # one document or more: numbers
    with pytest.raises(FreqlabError, match="L must be a positive integer, got '2K'"):  # int()'s "invalid literal"
        LengthHistogram.from_lengths([7, 9]).length_statistics("2K")


def test_parquet_paths_read_and_written_alike(tmp_path, monkeypatch):
    # to_parquet("~/h") made a ./~ folder while read_parquet read the home folder; to_parquet("") was a raw
    # IsADirectoryError
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    h = LengthHistogram.from_counts([3, 7], [2, 1], corpus="rows")
    assert h.to_parquet("~/h.parquet") == tmp_path / "home" / "h.parquet"
    assert LengthHistogram.read_parquet("~/h.parquet").counts.tolist() == [2, 1]
    assert not (tmp_path / "~").exists()
    for empty in ("", b""):
        with pytest.raises(FreqlabError, match=r"^an empty path names no file or folder$"):
            h.to_parquet(empty)


def test_a_scans_output_folder_reads_as_its_histogram(tmp_path):
    """Schedules and calibration files name histograms too: a scan's --out folder stands for its lengths.parquet."""
    h = LengthHistogram.from_counts([10, 20], [3, 4])
    h.to_parquet(tmp_path / "out" / "lengths.parquet")
    back = LengthHistogram.read_parquet(tmp_path / "out")
    assert (back.lengths.tolist(), back.counts.tolist()) == ([10, 20], [3, 4])
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        FreqlabError, match=r"empty: a folder without lengths\.parquet \(give a histogram or a scan's --out\)$"
    ):
        LengthHistogram.read_parquet(tmp_path / "empty")
    (tmp_path / "dataset" / "lengths.parquet").mkdir(parents=True)  # an adversary: a Parquet dataset's folder
    with pytest.raises(FreqlabError, match=r"dataset: a folder, not a histogram file \(nor a scan's --out"):
        LengthHistogram.read_parquet(tmp_path / "dataset")


def test_documents_past_int64_are_refused_not_wrapped():
    """2^62 + 2^62 documents summed to -2^63 in int64 (then the median raised IndexError and the written file was
    refused by freq); repeated lengths were summed in int64 too."""
    for lengths in ([1, 2], [1, 1]):
        with pytest.raises(FreqlabError, match=r"counts 9,223,372,036,854,775,808 documents, 2\^63 or more"):
            LengthHistogram.from_counts(lengths, [2**62, 2**62])
    assert LengthHistogram.from_counts([1, 2], [2**62, 2**62 - 1]).documents == 2**63 - 1
    with pytest.raises(FreqlabError, match="a length's count would pass 2\\^63 documents"):
        LengthHistogram.from_lengths([5, 7]).scale_to_tokens(10**30)


def test_quantiles_are_exact_ranks():
    """ceil(q n) in exact arithmetic: float gave the 22nd of 300 for q = 0.07 (0.07 * 300 = 21.000000000000004)
    and the 2^61-th for the median of 2^61 + 2^61 + 1 documents (q n rounded to 2^61)."""
    assert LengthHistogram.from_counts(range(1, 301), [1] * 300).quantile(0.07) == 21
    assert LengthHistogram.from_counts([1, 2], [2**61, 2**61 + 1]).quantile(0.5) == 2
    assert LengthHistogram.from_counts([1, 2], [2**61 + 1, 2**61]).quantile(0.5) == 1


def test_a_header_that_reads_fewer_documents_than_it_counts_is_refused(tmp_path):
    """documents_read: 2 over 5 counted documents was read as it was (stats: "documents read 2, with tokens 5")."""
    path = LengthHistogram.from_lengths([3, 3, 4, 9, 9], empty_documents=1).to_parquet(tmp_path / "h.parquet")
    frame, metadata = read_parquet(path)
    header = json.loads(metadata["freqlab"])
    assert header["documents_read"] == 6
    write_parquet(tmp_path / "edited.parquet", frame, {**header, "documents_read": 2})
    with pytest.raises(FreqlabError, match=r"edited\.parquet: documents_read = 2 is fewer than the documents "
                       r"counted: 5 with tokens \+ 1 empty \+ 0 skipped"):  # fmt: skip
        LengthHistogram.read_parquet(tmp_path / "edited.parquet")


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"empty_documents": -5}, "empty_documents must be a whole count in 0..2^63 - 1, got -5"),  # read was -4
        ({"skipped": {"malformed-json": -1}}, "skipped['malformed-json'] must be a whole count in 0..2^63 - 1, got -1"),
        ({"documents_read": -1}, "documents_read must be a whole count in 0..2^63 - 1, got -1"),
        ({"empty_documents": 2.5}, "empty_documents must be a whole count in 0..2^63 - 1, got 2.5"),
        # a review read a header of 10^30 documents (stats printed them); 2^63 passes int64 (the README's bound)
        ({"documents_read": 10**30}, f"documents_read must be a whole count in 0..2^63 - 1, got {10**30}"),
        ({"skipped": {"bad": 2**63}}, f"skipped['bad'] must be a whole count in 0..2^63 - 1, got {2**63}"),
        (
            {"skipped": {"a": 2**62, "b": 2**62}},
            "the documents counted, empty and skipped add up to 9.22e+18, past 2^63",
        ),
    ],
)
def test_what_a_histogram_reports_beside_its_counts_is_whole_counts(metadata, message):
    with pytest.raises(FreqlabError, match=re.escape(message)):
        LengthHistogram.from_counts([3], [1], **metadata)
    h = LengthHistogram.from_counts([3], [1], empty_documents=np.int64(2), skipped={"x": np.int64(1)})
    assert (h.documents_read, type(h.empty_documents), type(h.skipped["x"])) == (4, int, int)


def test_a_histogram_of_a_newer_version_is_refused(tmp_path):
    """version 99 in the header was read as version 1 (the formats module: a version it does not know is refused)."""
    path = LengthHistogram.from_lengths([3, 4]).to_parquet(tmp_path / "h.parquet")
    frame, metadata = read_parquet(path)
    header = json.loads(metadata["freqlab"])
    assert header["version"] == 1
    for version, shown in [(99, "99"), ("1", "'1'"), (0, "0")]:
        write_parquet(tmp_path / "edited.parquet", frame, {**header, "version": version})
        with pytest.raises(FreqlabError, match=f"a length histogram of version {shown}; this freqlab reads version 1"):
            LengthHistogram.read_parquet(tmp_path / "edited.parquet")


def test_a_scale_may_be_a_numpy_float_and_a_huge_one_is_one_line():
    assert LengthHistogram.from_counts([5], [4]).scale_to_tokens(np.float32(10.0)).counts.tolist() == [2]
    with pytest.raises(FreqlabError, match="a length's count would pass 2\\^63 documents"):  # not an OverflowError
        LengthHistogram.from_counts([5], [4]).scale_to_tokens(10**400)


@pytest.mark.parametrize("tokens", [0.5, True, "1M", None, 0, 1e9 + 0.5, float("inf"), float("nan")])
def test_a_scale_that_is_no_whole_token_count_is_refused(tokens):
    """0.5 and True gave an empty histogram without a word, '1M' a TypeError."""
    with pytest.raises(FreqlabError, match="token budget must be"):
        LengthHistogram.from_lengths([5, 7]).scale_to_tokens(tokens)


def test_each_method_names_a_bad_argument():
    """A review of the API: a string quantile raised Python's TypeError and True was read as 1; nan and -1 gave a
    share of tokens of 0.0 and 1.0; corpus=5 failed later in len(); no regimes got polars' "cannot concat empty list";
    one regime as a string was read letter by letter ("unknown regime 'c'"); tokens=nan failed converting to an
    integer, and 400.7 was reported as a budget of 400."""
    h = LengthHistogram.from_counts([3, 6], [2, 1])
    refused = [
        (lambda: h.quantile("0.5"), "quantile must be a number in [0, 1], got '0.5'"),
        (lambda: h.quantile(True), "quantile must be a number in [0, 1], got True"),
        (lambda: h.quantile(float("nan")), "quantile must be a number in [0, 1], got nan"),
        (lambda: h.share_of_tokens_longer_than(float("nan")), "L must be a number >= 0, got nan"),
        (lambda: h.share_of_tokens_longer_than(-1), "L must be a number >= 0, got -1"),
        (lambda: LengthHistogram.from_lengths([3], corpus=5), "corpus must be a string, got 5"),
        (lambda: h.frequency_table(4, []), "regimes names no regime: give one or several"),
        (lambda: h.length_statistics(4, tokens=float("nan")), "the token budget must be a positive finite number"),
    ]
    for call, message in refused:
        with pytest.raises(FreqlabError) as error:
            call()
        assert str(error.value).startswith(message), (message, str(error.value))
    assert h.share_of_tokens_longer_than(0) == 1.0 and h.share_of_tokens_longer_than(4) == 0.5
    # what a number is, a second review found refused: floats (3 * L / 4), numpy scalars and 0-d arrays, Fractions,
    # Decimals; a corpus of None (none); no regimes for the statistics (no rows)
    for x in (4.0, np.float64(4.0), Fraction(4), np.array(4), np.int64(4)):
        assert h.share_of_tokens_longer_than(x) == 0.5
    for q in (0.5, Decimal("0.5"), np.array(0.5), np.float32(0.5), Fraction(1, 2)):
        assert h.quantile(q) == 3
    assert LengthHistogram.from_lengths([3], corpus=None).corpus == ""
    # a third review: past float64 an int is infinite (not nan), past 4,300 digits still one line; a timedelta64 is
    # no number; a Decimal is taken as written, to its last digit
    assert h.share_of_tokens_longer_than(10**400) == 0.0
    with pytest.raises(FreqlabError, match=r"^quantile must be a number in \[0, 1\], got an integer of 16,610 bits"):
        h.quantile(10**5000)
    with pytest.raises(FreqlabError, match=r"^quantile must be a number in \[0, 1\], got np.timedelta64\(1\)"):
        h.quantile(np.timedelta64(1))
    assert LengthHistogram.from_lengths([1, 2]).quantile(Decimal("0.50000000000000000001")) == 2
    assert h.length_statistics(4, ())["frequency"] == []
    statistics = h.length_statistics(4, "concat", tokens=400.7, tau=150)
    assert [row["regime"] for row in statistics["frequency"]] == ["concat"]
    assert statistics["frequency"][0]["budget_tokens"] == 400.7
    assert h.length_statistics(4, tokens=400, tau=150)["frequency"][0]["budget_tokens"] == 400


def test_sum_adds_histograms():
    """A review: sum([h, h]) raised TypeError (sum starts from 0, which had no meaning for a histogram)."""
    h = LengthHistogram.from_counts([3, 6], [2, 1])
    total = sum([h, h, h])
    assert total.counts.tolist() == [6, 3] and total.documents_read == 9 and sum([h]) is h
    with pytest.raises(TypeError):
        1 + h


def test_a_histogram_equals_its_parquet_round_trip_and_hashes_by_its_counts(tmp_path):
    """A review: ``==`` compared identity (a histogram and the file it wrote were unequal)."""
    h = combine_sources(
        {"a": LengthHistogram.from_lengths([3, 4]), "b": LengthHistogram.from_lengths([9], empty_documents=2)},
        corpus="toy",
        meta={"seed": 3},
    )
    back = LengthHistogram.read_parquet(h.to_parquet(tmp_path / "h.parquet"))
    assert back == h and hash(back) == hash(h) and len({h, back}) == 1
    assert LengthHistogram.from_lengths([3, 5]) == LengthHistogram.from_lengths([5, 3])
    assert LengthHistogram.from_lengths([3]) != LengthHistogram.from_lengths([4])
    assert LengthHistogram.from_lengths([3]) != LengthHistogram.from_lengths([3], corpus="other")
    assert h != h.with_meta(sources=None)  # the split is part of it
    assert pickle.loads(pickle.dumps(h)) == h and "_hash" not in pickle.loads(pickle.dumps(h)).__dict__
    # a source of nothing is no row of the file: equal without it (an adversary)
    with_empty = LengthHistogram.from_lengths(
        [3], sources={"a": LengthHistogram.from_lengths([3]), "b": h.from_lengths([])}
    )
    assert with_empty == LengthHistogram.read_parquet(with_empty.to_parquet(tmp_path / "e.parquet"))


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"sources": True}, r"^sources must be a mapping of source name to LengthHistogram, got True$"),
        ({"sources": {"a": 3}}, r"^sources must map source names \(strings\) to LengthHistograms, got 'a': 3$"),
        ({"skipped": [1]}, r"^skipped must be a mapping \(a dict\), got \[1\]$"),
        ({"meta": 5}, r"^meta must be a mapping \(a dict\), got 5$"),
        (
            {"meta": {"x": {"y": object()}}},
            r"^meta\['x'\]\['y'\] is <object object at .*: a histogram's meta holds JSON",
        ),
        ({"meta": {1: 2}}, r"^meta has a key that is no string: \[1\]$"),
        ({"meta": {"when": np.datetime64("2020-01-01")}}, r"^meta holds a value JSON has no form for \(Object of"),
        ({"skipped": {1: 2}}, r"^skipped must map reasons \(strings\) to counts, got \{1: 2\}$"),
    ],
)
def test_sources_skipped_and_meta_of_the_wrong_type_are_refused_when_made(given, message):
    """A review: sources=True was accepted, then repr, + and to_parquet raised AttributeError; a meta value JSON has
    no form for failed in to_parquet."""
    with pytest.raises(FreqlabError, match=message):
        LengthHistogram.from_lengths([3], **given)


def test_meta_and_skipped_given_as_none_or_with_numpy_values_round_trip(tmp_path):
    """A review: meta=None wrote a file read_parquet refused; np.int64 in meta failed in json.dumps."""
    h = LengthHistogram.from_lengths([3], meta={"seed": np.int64(3), "shape": (1, np.float32(0.5))}, skipped=None)
    assert h.meta == {"seed": 3, "shape": [1, 0.5]} and h.skipped == {}
    assert LengthHistogram.read_parquet(h.to_parquet(tmp_path / "h.parquet")) == h
    plain = LengthHistogram.from_lengths([3], meta=None)
    assert LengthHistogram.read_parquet(plain.to_parquet(tmp_path / "p.parquet")).meta == {}
    with pytest.raises(FreqlabError, match=r"^report needs a window L"):
        plain.report(None)


def test_one_document_is_said_in_the_singular():
    """A review: "1 documents, 1 tokens", "1 tokens in 1 segments"."""
    one = LengthHistogram.from_lengths([1])
    assert repr(one).startswith("LengthHistogram: 1 document, 1 token; lengths 1..1")
    assert "f(0) = 1 token in 1 segment;" in repr(one.frequency(1))
    assert repr(LengthHistogram.from_lengths([3, 5])).startswith("LengthHistogram: 2 documents, 8 tokens;")
