"""position_frequency: f(i) = Σ_s max(|s| - i, 0) over the segments of a regime (STRING Eq. 2)."""

import numpy as np
import pytest
from frequency.reference import expand, frequency_of_segments
from hypothesis import given, settings
from hypothesis import strategies as st

from freqlab import REGIMES, FreqlabError, position_frequency, segments
from freqlab.frequency import share_at_least, share_at_most

HISTOGRAM_REGIMES = [r for r in REGIMES if r != "megatron"]  # what position_frequency gives from a histogram


def test_the_megatron_regime_is_refused_where_a_bare_array_could_not_say_it_is_approximated():
    """Megatron's windows are exact only from its indexes; from a histogram segments() computes concat and says so
    (``approximation``), which an int64 array returned here could not: the function refuses, naming the way."""
    from freqlab.frequency.exposure import exposure_histogram
    from freqlab.frequency.layouts import layout_frequency

    refused = r"the megatron regime is replayed from Megatron's indexes only.*MegatronOptions\(data_path=.*be concat"
    with pytest.raises(FreqlabError, match=refused):
        position_frequency([3, 6], [2, 1], 4, "megatron")
    with pytest.raises(FreqlabError, match=refused):  # per-kind rows and a bare exposure array: the same
        layout_frequency([10, 300], [5, 2], 256, "swa16+global", "megatron")
    with pytest.raises(FreqlabError, match=refused):
        exposure_histogram([10, 300], [5, 2], 256, "megatron")
    assert segments([3, 6], [2, 1], 4, "megatron").approximation == "concat"


def naive_broadcast(lengths, counts, L):
    """The naive numpy form: an (L x distinct lengths) broadcast."""
    i = np.arange(L)[:, None]
    return (np.maximum(np.asarray(lengths)[None, :] - i, 0) * np.asarray(counts)[None, :]).sum(axis=1)


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 30), st.integers(1, 3)), min_size=1, max_size=8, unique_by=lambda t: t[0]),
    st.integers(1, 12),
    st.sampled_from(HISTOGRAM_REGIMES),
)
def test_every_regime_matches_pair_counting_on_its_segments(pairs, L, regime):
    lengths, counts = zip(*pairs)
    segs = segments(lengths, counts, L, regime)
    expected = frequency_of_segments(expand(segs.lengths, segs.counts), L)
    f = position_frequency(lengths, counts, L, regime)
    assert f.dtype == np.int64 and f.shape == (L,)
    assert f.tolist() == expected


def test_a_single_document_of_length_L_gives_L_minus_i():
    L = 2048
    assert position_frequency([L], [1], L).tolist() == [L - i for i in range(L)]


def test_f0_is_the_number_of_tokens_in_the_segments():
    rng = np.random.default_rng(0)
    lengths = np.unique(rng.integers(1, 100_000, 5_000))
    counts = rng.integers(1, 1_000, lengths.size)
    for regime in HISTOGRAM_REGIMES:
        segs = segments(lengths, counts, 4096, regime)
        assert position_frequency(lengths, counts, 4096, regime)[0] == segs.tokens


def test_merging_histograms_adds_frequencies():
    a = position_frequency([100, 3000], [5, 2], 2048)
    b = position_frequency([100, 700], [1, 4], 2048)
    merged = position_frequency([100, 700, 3000], [6, 4, 2], 2048)
    assert (a + b == merged).all()


def test_concatenated_rows_closed_form_at_2048():
    """Concat: f(i) = rows · (L - i), linear (STRING Fig. 1c): 75.04% of mass at i <= 1024, 6.26% at i >= 1536."""
    L = 2048
    f = position_frequency([L * 1000], [1], L, "concat")
    assert f.tolist() == [1000 * (L - i) for i in range(L)]
    assert round(100 * share_at_most(f, 1024), 2) == 75.04
    assert round(100 * share_at_least(f, 1536), 2) == 6.26


def test_uniform_lengths_closed_form_at_2048():
    """Lengths uniform on 1..L: f(i) = (L - i)(L - i + 1)/2, quadratic (Fig. 1b): 87.52% and 1.57%."""
    L = 2048
    direct = position_frequency(np.arange(1, L + 1), np.ones(L, np.int64), L)
    assert direct.tolist() == [(L - i) * (L - i + 1) // 2 for i in range(L)]
    assert round(100 * share_at_most(direct, 1024), 2) == 87.52
    assert round(100 * share_at_least(direct, 1536), 2) == 1.57
    # the uniform regime with the same budget gives the same curve (3 sweeps worth of tokens)
    regime = position_frequency([3 * L * (L + 1) // 2], [1], L, "uniform")
    assert (regime == 3 * direct).all()


def test_large_window_and_many_distinct_lengths_match_the_naive_broadcast():
    rng = np.random.default_rng(3)
    lengths = np.unique(rng.integers(1, 6_000, 2_000))
    counts = rng.integers(1, 10**9, lengths.size)  # large counts: int64 must stay exact
    L = 4096
    natural = segments(lengths, counts, L)
    expected = naive_broadcast(natural.lengths, natural.counts, L)
    assert (position_frequency(lengths, counts, L) == expected).all()


def test_window_of_2_pow_20_with_a_million_distinct_lengths():
    rng = np.random.default_rng(5)
    lengths = np.unique(rng.integers(1, 1 << 22, 3_000_000))[:1_000_000]
    counts = rng.integers(1, 100, lengths.size)
    f = position_frequency(lengths, counts, 1 << 20)
    assert f[0] == int(np.dot(lengths, counts))
    # spot-check positions against the definition
    segs = segments(lengths, counts, 1 << 20)
    for i in (0, 1, 12345, (1 << 20) - 1):
        assert f[i] == int(np.dot(np.maximum(segs.lengths - i, 0), segs.counts))


def test_position_frequency_rejects_bad_input():
    from freqlab import FreqlabError

    with pytest.raises(FreqlabError, match="L must be >= 1"):
        position_frequency([5], [1], 0)
    with pytest.raises(FreqlabError, match="unknown regime"):
        position_frequency([5], [1], 8, regime="natrual")


def test_more_tokens_than_int64_holds_is_an_error_not_a_wrapped_answer():
    from freqlab import FreqlabError

    with pytest.raises(FreqlabError, match="exceed exact int64"):
        position_frequency([1 << 40], [1 << 40], 2048)


def test_the_public_steps_below_position_frequency_refuse_2_pow_63_tokens_too():
    """A review: pack_documents, segment_frequency and PositionFrequency.from_segments, public, skipped the check
    that position_frequency makes: f(0) wrapped to -2^63 and the result said "no tokens in the segments"."""
    from freqlab.frequency import PositionFrequency, Segments, pack_documents, segment_frequency

    with pytest.raises(FreqlabError, match=r"^9,223,372,036,854,775,808 tokens exceed exact int64 arithmetic"):
        pack_documents([2**62, 2**62], 4)
    # one below: exact rows (L = 2^20: a window of 2^30 needed 10.7 GB free for its f, and failed on a busy machine)
    assert pack_documents([2**62, 2**62 - 1], 2**20).counts.tolist() == [1, 2**43 - 1]
    by_hand = Segments(np.array([2]), np.array([5 * 10**18]), 4, "natural")
    for compute in (segment_frequency, PositionFrequency.from_segments):
        with pytest.raises(FreqlabError, match=r"^10,000,000,000,000,000,000 tokens exceed exact int64"):
            compute(by_hand)
    with pytest.raises(FreqlabError, match="segment lengths must be integers"):
        segment_frequency(Segments(np.array([2.5]), np.array([1]), 4, "natural"))
    with pytest.raises(FreqlabError, match="segment lengths and counts must be >= 0, got -1"):
        segment_frequency(Segments(np.array([2]), np.array([-1]), 4, "natural"))


@pytest.mark.parametrize(
    ("L", "message"), [(3.0, "L must be a positive integer"), (2**40, "larger than"), (-1, "L must be >= 1")]
)
def test_segments_made_by_hand_have_their_window_checked(L, message):
    """A review: a window of 3.0 reached numba (a TypingError), 2^40 tried an 8 TB array, -1 gave an empty f."""
    from freqlab.frequency import Segments, segment_frequency

    with pytest.raises(FreqlabError, match=message):
        segment_frequency(Segments(np.array([1]), np.array([1]), L, "natural"))


def test_the_histogram_form_takes_no_fourth_argument():
    """A review: position_frequency(h, 4, "truncate", "concat") gave truncate's f, "concat" dropped unsaid."""
    from freqlab import LengthHistogram

    h = LengthHistogram.from_counts([3, 6], [2, 1])
    assert position_frequency(h, 4, "truncate").tolist() == [10, 7, 4, 1]  # 3 + 3 + 4 tokens in segments of <= 4
    with pytest.raises(FreqlabError, match="takes no fourth argument, got 'concat'"):
        position_frequency(h, 4, "truncate", "concat")
    with pytest.raises(FreqlabError, match="takes no fourth argument, got 'natural'"):  # the default too (a review)
        position_frequency(h, 4, "concat", "natural")
    assert position_frequency([3, 6], [2, 1], 4).tolist() == position_frequency(h, 4).tolist() == [12, 8, 4, 1]
