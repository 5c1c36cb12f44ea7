"""The exposure histogram h(c) (tokens by left context) and per-source tail tables."""

import numpy as np
import pytest
from frequency.reference import expand, masked_pair_frequency, regime_rows
from hypothesis import given, settings
from hypothesis import strategies as st

from freqlab import FreqlabError, LengthHistogram
from freqlab.frequency import position_frequency, segments, stream_order
from freqlab.frequency.exposure import (
    exposure_from_frequency,
    exposure_histogram,
    frequency_from_exposure,
    segment_exposure,
    source_tails,
    tail_shares,
)
from freqlab.frequency.layouts import layout_frequency
from freqlab.histogram import combine_sources

histograms = st.lists(
    st.tuples(st.integers(1, 30), st.integers(1, 3)), min_size=1, max_size=8, unique_by=lambda t: t[0]
)
REGIMES = ("natural", "truncate", "pack", "concat", "best-fit")


@settings(max_examples=80, deadline=None)
@given(histograms, st.integers(1, 20), st.sampled_from(REGIMES), st.integers(1, 9))
def test_exposure_counts_tokens_by_visible_context_and_sums_to_f(pairs, L, regime, w):
    lengths, counts = zip(*pairs)
    docs = expand(lengths, counts)
    if regime == "pack":
        docs = stream_order(np.array(lengths), np.array(counts), 2).tolist()
    rows, doc_mask = regime_rows(docs, L, regime)
    f_ref, h_ref = masked_pair_frequency(rows, doc_mask, L)
    h = exposure_histogram(lengths, counts, L, regime, seed=2)
    f = position_frequency(lengths, counts, L, regime, seed=2)
    assert h.dtype == np.int64 and h.tolist() == h_ref
    # f(i) = sum over c >= i of h(c), exactly; and back
    assert frequency_from_exposure(h).tolist() == f.tolist() == f_ref
    assert exposure_from_frequency(f).tolist() == h.tolist()
    # a sliding-window layer: every query with more context than w - 1 keys sees exactly w - 1
    f_swa = layout_frequency(lengths, counts, L, f"swa{w}", regime, seed=2).kinds[0].f
    assert exposure_from_frequency(f_swa).tolist() == masked_pair_frequency(rows, doc_mask, L, "swa", w)[1]


def test_exposure_of_one_segment_is_flat():
    assert segment_exposure(segments([4], [1], 4)).tolist() == [1, 1, 1, 1]
    assert int(exposure_histogram([5000], [3], 2048).sum()) == 15000


def test_tail_shares_are_f_at_t_over_f0():
    f = position_frequency([10000], [1], 10000)
    assert tail_shares(f, (4096, 8192, 16384)) == {4096: 5904 / 10000, 8192: 1808 / 10000, 16384: 0.0}


def test_source_tails_split_by_source_and_window():
    h = combine_sources(
        {"web": LengthHistogram.from_lengths([1000] * 50), "books": LengthHistogram.from_lengths([20000, 9000])}
    )
    rows = {row["source"]: row for row in source_tails(h, thresholds=(4096, 8192))}
    assert rows["books"]["tails"] == {"4K": (15904 + 4904) / 29000, "8K": (11808 + 808) / 29000}
    assert rows["web"]["tails"] == {"4K": 0.0, "8K": 0.0}
    assert rows["(all)"]["tokens"] == 79000 and rows["(all)"]["tails"]["8K"] == pytest.approx(12616 / 79000)
    capped = {row["source"]: row for row in source_tails(h, L=8192, thresholds=(4096, 8192))}
    # windows of 8K: 20000 -> 8192 + 8192 + 3616, 9000 -> 8192 + 808; no token has 8K of context
    assert capped["books"]["tails"]["8K"] == 0.0
    assert capped["books"]["tails"]["4K"] == (2 * 4096 + 4096 + 0) / 29000
    with pytest.raises(FreqlabError, match="per-source tails need a regime"):
        source_tails(h, regime="pack")


def test_a_source_called_all_keeps_its_row_beside_the_total():
    """The total's row was labelled "all" and replaced a source of that name (its 10 tokens were lost)."""
    h = combine_sources({"all": LengthHistogram.from_lengths([10]), "b": LengthHistogram.from_lengths([20, 20])})
    rows = source_tails(h, thresholds=(4,))
    assert [(row["source"], row["tokens"]) for row in rows] == [("all", 10), ("b", 40), ("(all)", 50)]
    assert [row["total"] for row in rows] == [False, False, True]  # a source called "(all)" is told apart so
    assert rows[0]["tails"]["4"] == 6 / 10  # a document of 10: tokens 4..9 have at least 4 tokens of context
