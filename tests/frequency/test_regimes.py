"""Each regime maps documents to the attention segments of windows of length L (STRING Sec. 2.2, Fig. 1)."""

import numpy as np
import pytest
from frequency.reference import (
    concat_segments,
    expand,
    natural_segments,
    pack_segments,
    truncate_segments,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from freqlab import FreqlabError
from freqlab.frequency import (
    REGIMES,
    pack_documents,
    pack_sample,
    position_frequency,
    segments,
    share_at_least,
    share_at_most,
    stream_order,
)

histograms = st.lists(
    st.tuples(st.integers(1, 40), st.integers(1, 4)), min_size=1, max_size=12, unique_by=lambda t: t[0]
)


def as_list(segs) -> list[int]:
    return sorted(expand(segs.lengths, segs.counts))


@settings(max_examples=150, deadline=None)
@given(histograms, st.integers(1, 17))
def test_natural_truncate_concat_match_reference(pairs, L):
    lengths, counts = zip(*pairs)
    docs = expand(lengths, counts)
    assert as_list(segments(lengths, counts, L, "natural")) == sorted(natural_segments(docs, L))
    assert as_list(segments(lengths, counts, L, "truncate")) == sorted(truncate_segments(docs, L))
    assert as_list(segments(lengths, counts, L, "concat")) == sorted(concat_segments(docs, L))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=30), st.integers(1, 17))
def test_pack_matches_token_level_simulation(docs, L):
    assert as_list(pack_documents(docs, L)) == sorted(pack_segments(docs, L))


@settings(max_examples=60, deadline=None)
@given(histograms, st.integers(1, 17), st.integers(0, 3))
def test_pack_of_a_histogram_packs_its_seeded_stream_order(pairs, L, seed):
    lengths, counts = zip(*pairs)
    order = stream_order(np.array(lengths), np.array(counts), seed).tolist()
    assert sorted(order) == sorted(expand(lengths, counts))
    assert as_list(segments(lengths, counts, L, "pack", seed=seed)) == sorted(pack_segments(order, L))


def test_pack_of_a_histogram_does_not_depend_on_the_order_of_its_rows():
    """The same multiset of documents in another row order (raw arrays, not a LengthHistogram) gave another f."""
    forward = position_frequency([3, 5, 7], [4, 3, 2], 8, "pack", seed=0)
    assert forward.tolist() == position_frequency([7, 5, 3], [2, 3, 4], 8, "pack", seed=0).tolist()
    assert forward.tolist() == position_frequency([5, 3, 7, 5], [1, 4, 2, 2], 8, "pack", seed=0).tolist()


@settings(max_examples=60, deadline=None)
@given(histograms, st.integers(1, 17), st.integers(0, 3), st.integers(1, 30))
def test_pack_sample_walks_each_kept_document_as_its_weight_in_documents(pairs, L, seed, documents):
    """Reference: every document of the weighted stream packed into rows of L, its pieces counted weight times."""
    from freqlab.frequency import regimes

    lengths, counts = (np.array(x) for x in zip(*sorted(pairs)))  # the sample walks the lengths in order
    sample = pack_sample(lengths, counts, L, seed=seed, documents=documents)
    if counts.sum() <= documents:  # small enough: the exact regime
        assert as_list(sample) == as_list(segments(lengths, counts, L, "pack", seed=seed))
        return
    kept = np.maximum(np.rint(counts * (documents / counts.sum())), 1).astype(int)
    docs, weights = [], []
    for n, c, m in zip(lengths.tolist(), counts.tolist(), kept.tolist()):  # weights add up to each length's count
        docs += [n] * m
        weights += [c // m + 1] * (c % m) + [c // m] * (m - c % m)
    order = regimes.seeded_rng(seed).permutation(len(docs))  # the seeded shuffle of the kinds, as the stream
    stream = [docs[k] for k in order]
    weight = [weights[k] for k in order]
    expected, offset = {}, 0  # pieces by length, each weighing its document's weight
    for n, w in zip(stream, weight):
        while n:
            piece = min(n, L - offset)  # what is left of the row, or the document's end
            expected[piece] = expected.get(piece, 0) + w
            n, offset = n - piece, (offset + piece) % L
    assert dict(zip(sample.lengths.tolist(), sample.counts.tolist())) == expected
    assert sample.tokens == int(lengths @ counts)  # f(0): the corpus's tokens, exactly


@settings(max_examples=40, deadline=None)
@given(histograms, st.integers(1, 17), st.integers(0, 3), st.integers(1, 30), st.randoms(use_true_random=False))
def test_pack_sample_is_the_same_for_any_rows_of_the_same_documents(pairs, L, seed, documents, rng):
    """Zero counts, a length split over two rows, another order: the same sample (a zero count was walked as a
    document of weight 0 that still filled its row: 2^25 documents of 2048 tokens and a row (1000, 0) at L = 4096
    gave f(1024) 40% low; the rows' order changed the sample)."""
    lengths, counts = zip(*pairs)
    rows = [(n, c) for n, c in pairs] + [(max(lengths) + 1, 0)]
    n, c = rows[0]
    rows[0:1] = [(n, c // 2), (n, c - c // 2)]  # one length split over two rows
    rng.shuffle(rows)
    shuffled = pack_sample(*(list(x) for x in zip(*rows)), L, seed=seed, documents=documents)
    assert as_list(shuffled) == as_list(pack_sample(lengths, counts, L, seed=seed, documents=documents))


def test_pack_sample_keeps_the_share_of_rare_long_documents():
    """2^20 documents of 200 tokens and 2,000 of 5,000-6,999 tokens, once each (2.7% of the tokens): scaled to 2^14
    documents, every long one rounded to none (the pack rows of freq and scan summaries showed no position past 199
    in use, 0.0% at i >= 3L/4); the weighted sample keeps them, within 5% of the whole stream's f (which itself
    moves by up to 2.5% from seed to seed here: where 2,000 long documents start in their rows)."""
    lengths = np.concatenate([[200], np.arange(5000, 7000)])
    counts = np.concatenate([[1 << 20], np.ones(2000, dtype=np.int64)])
    whole = position_frequency(lengths, counts, 4096, "pack")
    sampled = pack_sample(lengths, counts, 4096, documents=1 << 14)
    f = np.zeros(4096, dtype=np.int64)
    for n, c in zip(sampled.lengths.tolist(), sampled.counts.tolist()):
        f[:n] += c * (n - np.arange(n))
    assert f[0] == whole[0] == int(lengths @ counts)
    assert f[3072] == pytest.approx(whole[3072], rel=0.05) and whole[3072] > 0
    assert share_at_least(f, 3072) == pytest.approx(share_at_least(whole, 3072), rel=0.05)


def test_pack_sample_of_half_the_tokens_in_sixteen_documents():
    """2^34 one-token documents and 16 of 2^30 tokens: scaled down, the pack row said no segment is longer than one
    token; the weighted sample walks one long document weighing 16."""
    sampled = pack_sample([1, 1 << 30], [1 << 34, 16], 4096, documents=1 << 12)
    assert sampled.tokens == (1 << 34) + (16 << 30)
    full_rows = sampled.counts[sampled.lengths == 4096]
    assert full_rows.size and (16 << 30) // 4096 - 16 <= full_rows[0] <= (16 << 30) // 4096


def test_natural_splits_long_documents_into_full_windows_and_a_remainder():
    s = segments([5000, 100], [1, 3], 2048, "natural")
    assert dict(zip(s.lengths.tolist(), s.counts.tolist())) == {100: 3, 904: 1, 2048: 2}


def test_truncate_reports_dropped_tokens():
    s = segments([5000, 100], [2, 3], 2048, "truncate")
    assert dict(zip(s.lengths.tolist(), s.counts.tolist())) == {100: 3, 2048: 2}
    assert s.dropped_tokens == 2 * (5000 - 2048)
    assert s.tokens + s.dropped_tokens == 2 * 5000 + 3 * 100


def test_uniform_spends_the_same_budget_on_lengths_1_to_L():
    L = 8
    sweep = L * (L + 1) // 2  # 36 tokens for one document of each length
    s = segments([sweep * 5], [1], L, "uniform")
    assert s.lengths.tolist() == list(range(1, L + 1)) and s.counts.tolist() == [5] * L
    # a budget that is not a multiple of the sweep: the 18 leftover tokens become one extra segment each of
    # lengths spread over 1..L in bit-reversed order (1, 5, 3, 7, 2 sum to 18), so the shape stays uniform
    s = segments([sweep * 2 + 18], [1], L, "uniform")
    assert s.tokens == sweep * 2 + 18
    assert dict(zip(s.lengths.tolist(), s.counts.tolist())) == {1: 3, 2: 3, 3: 3, 4: 2, 5: 3, 6: 2, 7: 3, 8: 2}
    # leftovers that end between two spread lengths: 1 + 5 + 3 = 9, then one segment of the remaining 2
    s = segments([11], [1], L, "uniform")
    assert dict(zip(s.lengths.tolist(), s.counts.tolist())) == {1: 1, 2: 1, 3: 1, 5: 1}


@pytest.mark.parametrize("L", [2048, 131072])
def test_uniform_keeps_its_closed_form_shares_far_below_one_sweep(L):
    """Lengths uniform on 1..L: 87.52% of mass at i <= L/2 and 1.57% at i >= 3L/4 (STRING Fig. 1b) even when the
    budget (8.4M tokens) is a fraction of one sweep L(L+1)/2 (8.6G tokens at 128K)."""
    f = position_frequency([8_442_997], [1], L, "uniform")
    assert f[0] == 8_442_997
    assert share_at_most(f, L // 2) == pytest.approx(0.8752, abs=0.003)
    assert share_at_least(f, 3 * L // 4) == pytest.approx(0.0157, abs=0.002)


@pytest.mark.parametrize("regime", ["natural", "concat", "uniform", "pack"])
def test_every_regime_but_truncate_conserves_tokens(regime):
    rng = np.random.default_rng(7)
    lengths = np.unique(rng.integers(1, 20_000, 300))
    counts = rng.integers(1, 50, lengths.size)
    s = segments(lengths, counts, 2048, regime)
    assert s.tokens == int(np.dot(lengths, counts))
    assert s.lengths.max() <= 2048 and s.lengths.min() >= 1


def test_pack_equals_natural_when_every_length_is_a_multiple_of_L():
    lengths, counts = [2048, 4096, 10240], [3, 2, 5]
    natural = segments(lengths, counts, 2048, "natural")
    packed = segments(lengths, counts, 2048, "pack", seed=11)
    assert natural.lengths.tolist() == packed.lengths.tolist() == [2048]
    assert natural.counts.tolist() == packed.counts.tolist() == [3 + 2 * 2 + 5 * 5]


def test_pack_cuts_a_document_that_straddles_a_row_boundary():
    # rows of 10: [3 | 5 | 2 of the 6] [4 of the 6 | 6 of the 20] [10 of the 20] [4 of the 20]
    s = pack_documents([3, 5, 6, 20], 10)
    assert sorted(expand(s.lengths, s.counts)) == sorted([3, 5, 2, 4, 6, 10, 4])


def test_pack_handles_ten_million_documents():
    docs = np.full(10_000_000, 7, dtype=np.int64)
    s = pack_documents(docs, 2048)
    assert s.tokens == 70_000_000
    # the row boundary at token 2048k cuts a document exactly when 7 does not divide 2048k
    boundaries = 70_000_000 // 2048
    cut = sum(1 for k in range(1, boundaries + 1) if (2048 * k) % 7)
    assert s.counts[s.lengths == 7].sum() == 10_000_000 - cut


@pytest.mark.parametrize(
    ("lengths", "counts", "L", "regime", "message"),
    [
        ([0, 5], [1, 1], 8, "natural", "lengths must be >= 1, got 0"),
        ([-3], [1], 8, "natural", "lengths must be >= 1, got -3"),
        ([3], [-1], 8, "natural", "counts must be >= 0"),
        ([3], [1], 0, "natural", "L must be >= 1"),
        ([3], [1], 2.5, "natural", "L must be a positive integer"),
        ([3], [1], 8, "zigzag", "unknown regime 'zigzag'"),
        ([3], [1], 1 << 40, "natural", "larger than freqlab supports"),
        ([3], [1 << 40], 8, "pack", "stream of 1,099,511,627,776 documents"),
        ([3.5], [1], 8, "natural", "lengths must be integers, got 3.5"),  # the value named
        ([4, float("nan")], [1, 1], 8, "natural", "lengths must be integers, got nan"),
        (["a"], [1], 8, "natural", "must be integers"),
        ([3, None], [1, 1], 8, "natural", "lengths must be integers, got None"),  # a TypeError from a comparison
        (None, [1], 8, "natural", "lengths must be integers, got None"),
        (
            [3, 5],
            [1, 2**64],
            8,
            "natural",
            r"counts must be at most 2\^63 - 1 \(exact int64 counts\), got 18446744073709551616",
        ),
        ([[3, 5]], [[1, 2]], 8, "natural", r"lengths must be a 1-D sequence, got shape \(1, 2\)"),  # never flattened
        ([3, 4], [1], 8, "natural", "differ in size"),
    ],
)
def test_bad_input_is_a_clear_error(lengths, counts, L, regime, message):
    with pytest.raises(FreqlabError, match=message):
        segments(lengths, counts, L, regime)


def test_regime_names():
    assert REGIMES == ("natural", "truncate", "concat", "uniform", "pack", "best-fit", "megatron")


@pytest.mark.parametrize("seed", [-1, 1.5, True, "7", None])
def test_a_seed_that_is_no_count_is_one_freqlab_error(seed):
    """numpy's own errors came through (ValueError "expected non-negative integer", TypeError "SeedSequence ...")."""
    with pytest.raises(FreqlabError, match=r"seed must be a non-negative integer, got "):
        position_frequency([5, 6], [1, 1], 4, "pack", seed=seed)
    assert (
        position_frequency([5, 6], [1, 1], 4, "pack", seed=np.int64(3)).tolist()
        == position_frequency([5, 6], [1, 1], 4, "pack", seed=3).tolist()
    )


def test_the_summary_rows_walk_a_large_histogram_as_a_weighted_sample(monkeypatch):
    """regime_rows (freq, stats, scan summaries) above PACK_SAMPLE_DOCUMENTS: the rare long documents are kept."""
    from freqlab.frequency import regime_table, regimes

    monkeypatch.setattr(regimes, "PACK_SAMPLE_DOCUMENTS", 1 << 12)
    lengths = np.concatenate([[200], np.arange(5000, 5400)])
    counts = np.concatenate([[1 << 18], np.ones(400, dtype=np.int64)])
    row = regime_table.regime_rows(lengths, counts, [4096], ["pack"], tokens=10**12)[0]
    assert row["tokens_in_segments"] == int(lengths @ counts) and row["f"]["3072"] > 0
    assert row["note"] == (
        "pack shuffles a stream of 262,544 documents: walked as a weighted sample of about 2^12, every length kept, "
        "f(0) exact, the rest an estimate of the whole stream's f (LengthHistogram.frequency, which freq --out and "
        "--layout take: exact for the seed, slower)"
    )


def test_the_seed_and_the_sample_size_are_checked_whatever_the_regime():
    """A review: seed=-1 passed wherever no regime read it (natural), and pack_sample(documents=nan) failed in numpy
    ("repeats may not contain negative values") while 0, -3 and True were taken."""
    for regime in ("natural", "concat", "pack"):
        with pytest.raises(FreqlabError, match=r"^seed must be a non-negative integer, got -1"):
            position_frequency([5], [1], 4, regime, seed=-1)
    for documents in (float("nan"), 0, -3, True, 2.5):
        with pytest.raises(FreqlabError, match=r"^documents \(the sample's size\) must be a positive integer, got"):
            pack_sample([100, 30_000], [10**8, 1], 4096, documents=documents)
    for documents in (5, 5.0, np.int64(5), np.array(5)):  # whole numbers all (a second review)
        assert pack_sample([3], [2], 4, documents=documents).counts.tolist() == [1, 1, 1]  # 3 | 1+2 walked whole


def test_one_window_or_several_is_a_list_of_checked_windows():
    """A review: scan(L=np.int64(2048)), regime_rows(..., 2048, ...) and scan_figures(h, 2048) said "'numpy.int64'
    (or 'int') object is not iterable" where plot_windows took a bare window."""
    from freqlab.frequency.regime_table import regime_rows
    from freqlab.frequency.regimes import check_windows

    assert check_windows(2048) == check_windows(np.int64(2048)) == check_windows(np.array(2048)) == [2048]
    assert check_windows(range(1, 3)) == check_windows(np.array([1, 2])) == [1, 2]
    assert check_windows({2048}) == check_windows(L for L in [2048]) == check_windows({2048: 1}.keys()) == [2048]
    for bad, message in [
        ("2K", "a list of them, got '2K'"),
        (2048.0, "got 2048.0"),
        ([], "at least one window"),
        ([2048, [4096]], r"got \[4096\]"),  # numpy's "inhomogeneous shape" before (a review)
    ]:
        with pytest.raises(FreqlabError, match=message):
            check_windows(bad)
    assert regime_rows([10], [1], np.int64(8), ["natural"]) == regime_rows([10], [1], [8], ["natural"])
    assert regime_rows([10], [1], 8, "natural") == regime_rows([10], [1], [8], ["natural"])  # was 'n', 'a', ...


@pytest.mark.parametrize(
    ("lengths", "counts", "message"),
    [([3], [2.5], "counts must be integers, got 2.5"), ([3], [-1], "counts must be >= 0"), ([0], [1], "lengths")],
)
def test_stream_order_checks_its_histogram(lengths, counts, message):
    """A review: numpy's "Cannot cast array data" and "negative dimensions are not allowed"."""
    with pytest.raises(FreqlabError, match=message):
        stream_order(np.array(lengths), np.array(counts))
