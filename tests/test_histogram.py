"""LengthHistogram: sparse (length, count) int64 pairs with provenance, merge, scale, summary and Parquet I/O."""

import json

import numpy as np
import polars as pl
import pytest

from freqlab import FreqlabError, LengthHistogram, position_frequency
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
    s = h.summary(L=2048)
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


def test_loading_something_else_is_a_clear_error(tmp_path):
    with pytest.raises(FreqlabError, match="no such histogram file"):
        LengthHistogram.read_parquet(tmp_path / "missing.parquet")
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(FreqlabError, match="not a readable Parquet file"):
        LengthHistogram.read_parquet(corrupt)
    foreign = tmp_path / "foreign.parquet"
    pl.DataFrame({"length": [1], "count": [1]}).write_parquet(foreign)
    with pytest.raises(FreqlabError, match="not a freqlab length histogram"):
        LengthHistogram.read_parquet(foreign)


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


def test_merging_a_split_with_an_unsplit_histogram_keeps_the_unlabelled_part():
    split = combine_sources({"web": LengthHistogram.from_lengths([5])})
    merged = split + LengthHistogram.from_lengths([7, 7])
    assert merged.sources["(none)"].counts.tolist() == [2] and merged.documents == 3
