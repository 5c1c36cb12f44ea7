"""Context-window curricula inside a stage, each against real rows and attention masks built token by token."""

import re
from fractions import Fraction
from math import floor

import numpy as np
import pytest
from frequency.reference import (
    dd_expected_segments,
    dd_get_binary,
    expand,
    frequency_of_segments,
    seqlen_reshape_frequency,
    token_rows,
    windowed_rows_frequency,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from freqlab import FreqlabError
from freqlab.frequency.curricula import ROW_REGIMES, DatasetDecomposition, SkyLadder, Warmup, curriculum_from_spec
from freqlab.frequency.regimes import stream_order

histograms = st.lists(
    st.tuples(st.integers(1, 30), st.integers(1, 3)), min_size=1, max_size=6, unique_by=lambda t: t[0]
)


def ordered_docs(lengths, counts, regime, seed):
    """The documents in the order the rows take them: concat's order does not matter; pack/natural: seeded."""
    if regime == "concat":
        return expand(lengths, counts)
    return stream_order(np.array(lengths), np.array(counts), seed).tolist()


def warmup_window(row, rows, L, start, share, steps, multiple, batch):
    """DeepSpeed's fixed_linear / plateau window of the step holding ``row``, in exact rationals (its engine asks
    the scheduler for ``global_steps + 1`` before step ``global_steps``)."""
    total_steps = -(-rows // batch)
    warm = floor(share * total_steps)
    s = row // batch
    if s >= warm:
        return L
    if steps == "linear":
        raw = floor(start + Fraction(L - start) * (s + 1) / warm)
    else:
        raw = start + floor(Fraction(L - start) * floor(Fraction(s * steps, warm)) / steps)
    return min(raw // multiple * multiple, L)


def skyladder_window(k, rows, L, growth, rate, share, start, batch, round_to):
    """Their ``calculate_mask_length*`` for sample k, scalar Python floats as in lit_gpt/packed_dataset.py, where
    ``final_mask_length`` is their ``block_size``: L + 1 tokens (pretrain/tinyllama.py's inputs and the last label).
    """
    final = L + 1
    cp = batch * int(share * -(-rows // batch)) if share is not None else (final - start) * batch * rate
    if share is None and growth == "linear":  # calculate_linear_schedule: no changing point
        w = start + k // (batch * rate)
    elif k >= cp:
        w = final
    elif growth == "linear":
        w = start + int((final - start) * (k / cp))
    elif growth == "sine":
        w = start + int((final - start) * np.sin((np.pi / 2) * (k / cp)))
    else:
        w = int(start * (final / start) ** (k / cp))
    if round_to:
        w = (w // round_to) * round_to
        if w == 0:
            w = start
    return min(w, L)


@settings(max_examples=120, deadline=None)
@given(histograms, st.integers(2, 9), st.sampled_from(ROW_REGIMES), st.just("truncate"), st.data())
def test_warmup_matches_rows_trained_token_by_token(pairs, L, regime, rule, data):
    lengths, counts = zip(*pairs)
    multiple = data.draw(st.sampled_from([m for m in (1, 2) if L % m == 0]))  # another is refused (below)
    start = data.draw(st.integers(1, L // multiple)) * multiple
    steps = data.draw(st.sampled_from(["linear", 1, 2, 3]))
    share = data.draw(st.sampled_from([Fraction(1), Fraction(1, 2), Fraction(3, 10)]))
    batch = data.draw(st.integers(1, 3))
    seed = data.draw(st.integers(0, 2))
    spec = {"kind": "warmup", "start": start, "share": str(share), "steps": steps, "batch_rule": rule,
            "multiple": multiple, "batch": batch}  # fmt: skip
    got = curriculum_from_spec(spec).frequency(lengths, counts, L, regime, seed=seed)
    docs = ordered_docs(lengths, counts, regime, seed)
    rows = len(token_rows(docs, L, regime))
    windows = [warmup_window(r, rows, L, start, share, steps, multiple, batch) for r in range(rows)]
    f, dropped = windowed_rows_frequency(docs, L, regime, windows, rule)
    assert got.denominator == 1 and got.numerator.tolist() == f
    assert got.dropped_tokens == dropped
    assert got.tokens + dropped == sum(docs)  # truncate drops the row tails


@settings(max_examples=150, deadline=None)
@given(histograms, st.integers(2, 12), st.sampled_from(["concat", "pack"]), st.data())
def test_rechunk_matches_megatron_deepspeeds_seqlen_reshape_transcribed(pairs, L, regime, data):
    """batch_rule rechunk against data_post_process (pretrain_gpt.py) run on numpy arrays of token indices."""
    lengths, counts = zip(*pairs)
    start = data.draw(st.integers(1, L))
    steps = data.draw(st.sampled_from(["linear", 1, 2, 3]))
    share = data.draw(st.sampled_from([Fraction(1), Fraction(1, 2), Fraction(3, 10)]))
    micro_batch = data.draw(st.integers(1, 3))
    batch = micro_batch * data.draw(st.integers(1, 2))
    seed = data.draw(st.integers(0, 2))
    spec = {"kind": "warmup", "start": start, "share": str(share), "steps": steps, "batch_rule": "rechunk",
            "batch": batch, "micro_batch": micro_batch}  # fmt: skip
    got = curriculum_from_spec(spec).frequency(lengths, counts, L, regime, seed=seed)
    docs = ordered_docs(lengths, counts, regime, seed)
    rows = len(token_rows(docs, L, regime))
    windows = [warmup_window(r, rows, L, start, share, steps, 1, batch) for r in range(rows)]
    f, dropped = seqlen_reshape_frequency(docs, L, regime, windows, micro_batch)
    assert got.denominator == 1 and got.numerator.tolist() == f and got.dropped_tokens == dropped


@settings(max_examples=120, deadline=None)
@given(histograms, st.integers(2, 9), st.sampled_from(ROW_REGIMES), st.data())
def test_skyladder_matches_fragments_attended_token_by_token(pairs, L, regime, data):
    lengths, counts = zip(*pairs)
    growth = data.draw(st.sampled_from(["linear", "sine", "exponential"]))
    start = data.draw(st.integers(1, L))
    batch = data.draw(st.integers(1, 3))
    by_rate = data.draw(st.booleans())
    rate = data.draw(st.integers(1, 3)) if by_rate else None
    share = None if by_rate else data.draw(st.sampled_from([Fraction(1), Fraction(7, 10), Fraction(1, 4)]))
    round_to = data.draw(st.sampled_from([None, 2, 4])) if regime == "concat" else None  # dm path only
    round_to = round_to if round_to is None or round_to <= L + 1 else None  # past L + 1: refused (below)
    seed = data.draw(st.integers(0, 2))
    spec = {"kind": "skyladder", "growth": growth, "start": start, "batch": batch}
    spec |= {"rate": rate} if by_rate else {"share": str(share)}
    if round_to:
        spec["round"] = round_to
    got = curriculum_from_spec(spec).frequency(lengths, counts, L, regime, seed=seed)
    docs = ordered_docs(lengths, counts, regime, seed)
    rows = len(token_rows(docs, L, regime))
    windows = [skyladder_window(k, rows, L, growth, rate, share, start, batch, round_to) for k in range(rows)]
    f, dropped = windowed_rows_frequency(docs, L, regime, windows, "fragments", offset=int(regime != "concat"))
    assert got.numerator.tolist() == f and dropped == 0 and got.tokens == sum(docs)


def test_rechunk_is_seqlen_reshape_and_truncate_drops_the_row_tails():
    # 8 rows of 8 tokens (concat), windows 2, 4, 4, 6, 6, 8 over the first 6 rows (share 3/4 of 8), then 8
    spec = {"kind": "warmup", "start": 2, "share": 0.75, "batch_rule": "rechunk", "multiple": 2}
    rechunk = curriculum_from_spec(spec).frequency([64], [1], 8, "concat")
    truncate = curriculum_from_spec(spec | {"batch_rule": "truncate"}).frequency([64], [1], 8, "concat")
    run_rows, windows = Warmup(2, Fraction(3, 4), multiple=2).runs(8, 8)
    assert windows.tolist() == [2, 4, 6, 8] and run_rows.tolist() == [1, 2, 2, 3]
    assert truncate.tokens == 2 + 2 * 4 + 2 * 6 + 3 * 8 and truncate.dropped_tokens == 64 - 46
    # a micro-batch of one row of 8 inputs (9 tokens): w = 2: 3 pieces of 3 tokens (inputs 0-1, 3-4, 6-7) and the
    # tail (6-7), ceil(9 / 3) = 3 rows kept, odd, so 2; w = 4: 1 piece (0-3) and the tail (4-7), both kept; w = 6:
    # 1 piece (0-5) and the tail (2-7), both kept (2-5 twice); w = 8: the row whole
    assert rechunk.numerator.tolist()[:2] == [
        1 * 2 * 2 + 2 * 2 * 4 + 2 * 2 * 6 + 3 * 8,
        1 * 2 * 1 + 2 * 2 * 3 + 2 * 2 * 5 + 3 * 7,
    ]
    assert rechunk.dropped_tokens == 4  # positions 2, 5, 6 and 7 of the first row
    # the review's case: 16 tokens at L = 8, window 5 then 8: pieces of tokens 0-5 and 3-8, then the row whole
    review = {"kind": "warmup", "start": 5, "share": 0.5, "steps": 1, "batch_rule": "rechunk"}
    assert curriculum_from_spec(review).frequency([16], [1], 8, "concat").numerator.tolist() == [
        18, 15, 12, 9, 6, 3, 2, 1,
    ]  # fmt: skip


def test_rechunk_needs_rows_of_equal_length_and_micro_batches_that_fill_a_step():
    spec = {"kind": "warmup", "start": 2, "share": 0.5, "batch_rule": "rechunk"}
    with pytest.raises(
        FreqlabError, match="reshapes micro-batches of equal rows of L \\+ 1 tokens, which regime natural"
    ):
        curriculum_from_spec(spec).frequency([64], [1], 8, "natural")
    with pytest.raises(FreqlabError, match="micro_batch must be a divisor of batch = 4"):
        curriculum_from_spec(spec | {"batch": 4, "micro_batch": 3})
    with pytest.raises(FreqlabError, match="micro_batch must be given with batch_rule: rechunk only"):
        curriculum_from_spec(spec | {"batch_rule": "truncate", "micro_batch": 2})
    with pytest.raises(FreqlabError, match="micro_batch must be at most 2\\^31 rows"):  # b (L + 1) wrapped around
        curriculum_from_spec(spec | {"batch": 3 << 60, "micro_batch": 3 << 60})


def test_skyladder_grows_to_their_block_of_l_plus_one_tokens():
    """Their final_mask_length is their block_size, L + 1 (a review: freqlab grew to L). lin100p from 32 at L = 64
    over 10 rows: w(k) = 32 + int(33 k / 10); the rate form reaches the end (L + 1 - 32) * B * r rows in."""
    ladder = curriculum_from_spec({"kind": "skyladder", "growth": "linear", "share": 1, "start": 32})
    run_rows, windows = ladder.runs(rows=10, L=64)
    assert np.repeat(windows, run_rows).tolist() == [32, 35, 38, 41, 45, 48, 51, 55, 58, 61]
    f = ladder.frequency([640], [1], 64, "concat").numerator  # rows of 64 cut into fragments of w, concatenated
    pairs = [sum(max(0, w - i) * (64 // w) + max(0, 64 % w - i) for w in windows) for i in (40, 41, 42)]
    assert f[40:43].tolist() == pairs
    assert f[40:43].tolist() == [79, 72, 66]
    assert SkyLadder("sine", rate=8, start=32, batch=4).changing_point(10**6, 64) == 33 * 32


def test_skyladder_by_rate_grows_past_the_changing_point_when_rounded():
    """Their dm{r}inc{R}: calculate_linear_schedule has no changing point; the window is rounded down to R, then
    capped at their final length (a review: freqlab took L + 1 at the changing point and rounded it, so round 5 at
    L = 8 kept windows of 5 for good, where theirs reach whole rows of 8 at start + k >= 10)."""
    spec = {"kind": "skyladder", "growth": "linear", "rate": 1, "batch": 1, "start": 4, "round": 5}
    run_rows, windows = curriculum_from_spec(spec).runs(rows=20, L=8)
    assert np.repeat(windows, run_rows).tolist() == [4] + [5] * 5 + [8] * 14  # 4 + k rounded to 5: 0 -> start 4
    f = curriculum_from_spec(spec).frequency([160], [1], 8, "concat").numerator
    assert f.tolist() == [160, 134, 108, 82, 61, 42, 28, 14]


def test_skyladder_round_larger_than_l_is_refused():
    """A round past their final window L + 1 rounds every window down to 0, which their code turns into start: the
    whole stage would train at start without a word (a review: round 4K at L = 2K gave f = 0 past i = 31). Round L
    (or L + 1) is a step: start, then whole rows from the changing point (L + 1 rounds down to L, capped at L)."""
    spec = {"kind": "skyladder", "share": 0.5, "round": 4096}
    with pytest.raises(FreqlabError, match=r"round 4096 is larger than L \+ 1 = 2049 \(their final window\): every"):
        curriculum_from_spec(spec).frequency([10**6], [1], 2048, "concat")
    run_rows, windows = curriculum_from_spec({**spec, "round": 9, "start": 2}).runs(rows=10, L=8)
    assert np.repeat(windows, run_rows).tolist() == [2] * 5 + [8] * 5
    run_rows, windows = curriculum_from_spec({**spec, "round": 8, "start": 2}).runs(rows=10, L=8)
    assert np.repeat(windows, run_rows).tolist() == [2] * 5 + [8] * 5


def test_skyladder_rounds_the_window_only_without_a_document_mask():
    """Their intradm path (lit_gpt/packed_dataset.py, calculate_mask_length) takes no inc{R}: freqlab rounded
    there too, a schedule their code does not run."""
    spec = {"kind": "skyladder", "rate": 1, "batch": 1, "start": 2, "round": 4}
    assert curriculum_from_spec(spec).frequency([64], [1], 8, "concat").tokens == 64
    for regime in ("pack", "natural"):
        with pytest.raises(FreqlabError, match=f"round 4 with a document mask \\(regime '{regime}'\\)"):
            curriculum_from_spec(spec).frequency([64], [1], 8, regime)


def test_skyladder_dm8_climbs_one_position_every_8_steps():
    # their README: dm8 means "the local window size w will increase by 1 every 8 steps"
    ladder = curriculum_from_spec({"kind": "skyladder", "rate": 8, "batch": 4, "start": 32})
    run_rows, windows = ladder.runs(rows=10_000, L=64)
    assert windows[:3].tolist() == [32, 33, 34] and run_rows[:3].tolist() == [32, 32, 32]  # 8 steps of 4 rows
    assert windows[-1] == 64 and run_rows[-1] == 10_000 - 32 * 32


def test_skyladder_schedule_runs_equal_the_per_row_formula_on_long_stages():
    rows, L = 200_000, 4096
    for growth in ("linear", "sine", "exponential"):
        ladder = SkyLadder(growth, share=Fraction(7, 10), start=32, batch=16)
        run_rows, windows = ladder.runs(rows, L)
        k = np.arange(rows)
        direct = np.array(
            [skyladder_window(int(i), rows, L, growth, None, Fraction(7, 10), 32, 16, None) for i in k[::997]]
        )
        assert np.repeat(windows, run_rows)[::997].tolist() == direct.tolist()


@pytest.mark.parametrize("regime", ROW_REGIMES)
@pytest.mark.parametrize(
    "spec",
    [
        {"kind": "warmup", "start": 2, "share": 0.5},
        {"kind": "warmup", "start": 2, "share": 0.75, "steps": 3, "batch_rule": "truncate"},
    ],
)
def test_in_a_stage_batch_counts_the_stages_steps_not_the_histograms_rows(spec, regime):
    """A review: a stage of 100B tokens at L = 8K with batch 512 has ~23,842 steps, but the warm-up counted
    ceil(rows / 512) steps of its histogram's ~1,000 rows, two, and vanished (f as concat without it). The histogram's
    rows stand for the stage's: row k is the stage's row k·T_s/T_h. A stage of B times its histogram's tokens, B rows
    per step, therefore trains its histogram's row k at step k: the histogram's own schedule with batch 1."""
    lengths, counts, L, B = [3, 9, 17, 60], [5, 2, 3, 1], 8, 512  # 144 tokens: 18 rows of 8 under concat
    tokens = 3 * 5 + 9 * 2 + 17 * 3 + 60
    per_row = curriculum_from_spec(spec).frequency(lengths, counts, L, regime, seed=3)
    stage = curriculum_from_spec(spec | {"batch": B}).frequency(
        lengths, counts, L, regime, seed=3, stage_tokens=B * tokens
    )
    # concat walks the stage's own 18·B rows (B of each window); pack and natural the histogram's, each standing for
    # the middle of its block of B (step k)
    times = B if regime == "concat" else 1
    assert stage.numerator.tolist() == (times * per_row.numerator).tolist()
    plain = curriculum_from_spec(spec | {"batch": B}).frequency(lengths, counts, L, regime, seed=3)
    assert plain.numerator.tolist() != per_row.numerator.tolist()  # the histogram alone: one step, no ramp at all
    # a stage of the histogram's own tokens is the histogram's schedule, batch and all
    same = curriculum_from_spec(spec | {"batch": 2}).frequency(lengths, counts, L, regime, seed=3, stage_tokens=tokens)
    alone = curriculum_from_spec(spec | {"batch": 2}).frequency(lengths, counts, L, regime, seed=3)
    assert same.numerator.tolist() == alone.numerator.tolist()


@pytest.mark.parametrize("growth", ["linear", "sine", "exponential"])
def test_a_skyladder_row_of_a_pack_stage_takes_the_window_of_the_middle_of_its_block(growth):
    """SkyLadder counts samples, not steps: under pack (rows walked one by one) row k of the histogram takes their
    window at the stage's row ⌊(k + 1/2)·c⌋ of ⌈rows·c⌉, the middle of the block it stands for."""
    ladder = SkyLadder(growth, share=Fraction(3, 5), start=4, batch=16)
    rows, L, c = 50, 64, Fraction(200)
    run_rows, windows = ladder.runs(rows, L, c)
    stage = rows * 200
    expected = [
        skyladder_window((2 * k + 1) * 200 // 2, stage, L, growth, None, Fraction(3, 5), 4, 16, None)
        for k in range(rows)
    ]
    assert np.repeat(windows, run_rows).tolist() == expected


@pytest.mark.parametrize("micro_batch", [1, 8, 64])
@pytest.mark.parametrize("c", [3, 1000])
def test_a_concat_stage_walks_its_own_rows_exactly(micro_batch, c):
    """A second review: row k took the window of the stage's row k·c, the first of its block (biased low: f(512)
    226B against 250.8B replayed), and under rechunk every row was a micro-batch of its own (f the same for
    micro_batch 1, 8 and 64). concat's rows are the stream cut every L tokens: the stage of c times the histogram's
    tokens is the histogram of one document of those tokens, computed so, exactly."""
    L, T = 64, 10 * 64 + 17
    spec = {
        "kind": "warmup",
        "start": 8,
        "share": 0.5,
        "batch": 64,
        "batch_rule": "rechunk",
        "micro_batch": micro_batch,
    }
    staged = curriculum_from_spec(spec).frequency([T], [1], L, "concat", stage_tokens=c * T)
    whole = curriculum_from_spec(spec).frequency([c * T], [1], L, "concat")  # the stage's stream, as a histogram
    assert staged.numerator.tolist() == whole.numerator.tolist() and staged.dropped_tokens == whole.dropped_tokens
    ladder = {"kind": "skyladder", "share": 0.6, "start": 4, "growth": "sine", "batch": 16}
    assert (
        curriculum_from_spec(ladder).frequency([T], [1], L, "concat", stage_tokens=c * T).numerator.tolist()
        == curriculum_from_spec(ladder).frequency([c * T], [1], L, "concat").numerator.tolist()
    )
    if micro_batch > 1:  # a pack stage's rows cannot stand for the stage's micro-batches: refused, not guessed
        with pytest.raises(FreqlabError, match="rechunk under regime 'pack' in a schedule's stage of another size"):
            curriculum_from_spec(spec).frequency([T], [1], L, "pack", stage_tokens=c * T)


def test_a_warmup_row_of_a_stage_takes_the_window_of_the_stage_row_it_stands_for():
    """Rows 0..9 of a histogram stand for the middles of the stage's blocks, ⌊(k + 1/2)·5/2⌋ = 1, 3, 6, 8, 11, ... of
    25 (5 steps of 5 rows, the first 2 warming up from 2: DeepSpeed's fixed_linear 2 + 6·(s + 1)/2 = 5, 8 at steps 0
    and 1)."""
    warm = Warmup(2, Fraction(1, 2), batch=5)
    run_rows, windows = warm.runs(10, 8, Fraction(5, 2))
    rows = [warmup_window((2 * k + 1) * 5 // 4, 25, 8, 2, Fraction(1, 2), "linear", 1, 5) for k in range(10)]
    assert np.repeat(windows, run_rows).tolist() == rows == [5, 5, 8, 8, 8, 8, 8, 8, 8, 8]
    with pytest.raises(FreqlabError, match=r"stage_tokens must be a positive integer below 2\^63 .* got 0"):
        warm.frequency([8], [10], 8, stage_tokens=0)
    with pytest.raises(FreqlabError, match=r"stage_tokens must be a positive integer below 2\^63"):  # OverflowError
        warm.frequency([8], [10], 8, stage_tokens=2**63)
    with pytest.raises(FreqlabError, match="skyladder: rate counts steps of the histogram's own rows"):
        SkyLadder(rate=2, batch=1, start=2).frequency([8], [10], 8, stage_tokens=800)


def test_skyladder_document_mask_must_agree_with_the_regime():
    with pytest.raises(FreqlabError, match="document_mask: true contradicts regime 'concat'"):
        curriculum_from_spec({"kind": "skyladder", "share": 0.5, "document_mask": True}).frequency(
            [9], [1], 4, "concat"
        )


@pytest.mark.parametrize(
    ("n", "pieces"),
    [(257, [8]), (300, [8]), (256, []), (1 << 14, [13, 12, 11, 10, 9, 8]), (3 * 8193 + 600, [13, 13, 13, 9])],
)
def test_dataset_decomposition_pieces_follow_get_binary(n, pieces):
    # a piece of 2^k + 1 tokens (2^k inputs and their labels) with k = floor(log2(m - 1)), at most 13, at least 8
    assert pieces == dd_get_binary(n, 8, 13)[0]
    assert DatasetDecomposition(8, 13).pieces(n)[0] == {k: pieces.count(k) for k in sorted(set(pieces), reverse=True)}


def test_dataset_decomposition_counts_the_pieces_of_a_huge_document_without_listing_them():
    """A 2^36-token document in buckets 2..8: a list of its ~7.6·10^9 pieces was a bare MemoryError (a review).
    n = 2^36: q = (n - 1 - 16) // 9 + 1 whole pieces of 2^3 + 1 first, leaving m = n - 9q = 10 = one more piece of
    2^3 + 1 and 1 token; f(i) = (q + 1)(8 - i), and every token outside the 8-token segments is dropped."""
    n = 1 << 36
    q = (n - 1 - 16) // 9 + 1
    assert n - 9 * q == 10
    assert DatasetDecomposition(1, 3).pieces(n) == ({3: q + 1}, 1)
    f = curriculum_from_spec({"kind": "dataset-decomposition", "buckets": [2, 8]}).frequency([n], [1], 8)
    assert f.dropped_tokens == n - 8 * (q + 1)
    assert f.denominator == 1 and f.numerator.tolist() == [(q + 1) * (8 - i) for i in range(8)]


@settings(max_examples=150, deadline=None)
@given(histograms, st.integers(0, 3), st.integers(0, 2))
def test_dataset_decomposition_is_exact_from_the_histogram(pairs, lo, extra):
    lengths, counts = zip(*pairs)
    hi = lo + extra
    dd = curriculum_from_spec({"kind": "dataset-decomposition", "buckets": [1 << lo, 1 << hi], "curriculum": "grow-p2"})
    L = 1 << hi
    got = dd.frequency(lengths, counts, L)
    segs, dropped = [], 0
    for n in expand(lengths, counts):
        ks, left = dd_get_binary(n, lo, hi)
        segs += [1 << k for k in ks]
        dropped += left
    assert got.numerator.tolist() == frequency_of_segments(segs, L) and got.dropped_tokens == dropped


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 3)), min_size=1, max_size=4, unique_by=lambda t: t[0]))
def test_dataset_decomposition_random_split_expectation_follows_every_draw(pairs):
    lengths, counts = zip(*pairs)
    dd = curriculum_from_spec({"kind": "dataset-decomposition", "buckets": [2, 4], "randomize": True})
    got = dd.frequency(lengths, counts, 4)
    expected = [Fraction(0)] * 4
    for n, c in pairs:
        for size, pieces in dd_expected_segments(n, 1, 2).items():
            for i in range(size):
                expected[i] += c * pieces * (size - i)
    assert [got.value(i) for i in range(4)] == expected
    assert got.dropped_tokens == sum(n * c for n, c in pairs) - expected[0]


def test_dataset_decomposition_random_split_replays_get_binary_with_a_seed():
    dd = curriculum_from_spec(
        {"kind": "dataset-decomposition", "buckets": [2, 4, 8], "randomize": True, "replay": True}
    )
    got = dd.frequency([40, 7], [3, 2], 8, seed=5)
    rng = np.random.default_rng(5)
    choices, p = np.arange(3, 0, -1), np.array([1, 2, 4]) / 7

    segs = []
    for n in stream_order(np.array([40, 7]), np.array([3, 2]), 5).tolist():
        ks, _ = dd_get_binary(n, 1, 3, lambda: int(rng.choice(choices, p=p)))
        segs += [1 << k for k in ks]
    assert got.numerator.tolist() == frequency_of_segments(segs, 8)


def test_dataset_decomposition_counted_in_int64_refuses_what_int64_cannot_hold():
    """2^62 documents of 5 tokens (one piece of 4 each: f = 2^62 · [4, 3, 2, 1]) wrapped to negative counts; 40
    tokens raised a bare OverflowError. Refused in one line as the other curricula refuse it; the exact expectation of
    the random split, in Python integers, still answers."""
    dd = curriculum_from_spec({"kind": "dataset-decomposition", "buckets": [4, 4]})
    for n in (5, 9, 40):
        with pytest.raises(FreqlabError, match=r"^[\d,]+ tokens exceed exact int64 arithmetic \(2\^63\)"):
            dd.frequency([n], [2**62], 4)
    assert dd.frequency([5], [2**60], 4).numerator.tolist() == [2**62, 3 * 2**60, 2**61, 2**60]
    random = curriculum_from_spec({"kind": "dataset-decomposition", "buckets": [4, 4], "randomize": True})
    assert [random.frequency([5], [2**62], 4).value(i) for i in range(4)] == [2**64, 3 * 2**62, 2**63, 2**62]


def test_dataset_decomposition_replays_converge_to_the_expectation():
    dd = DatasetDecomposition(1, 3, randomize=True)
    exact = dd.frequency([300, 77], [40, 60], 8)
    replays = [
        DatasetDecomposition(1, 3, randomize=True, replayed=True).frequency([300, 77], [40, 60], 8, seed=s)
        for s in range(20)
    ]
    mean = np.mean([r.f for r in replays], axis=0)
    assert np.abs(mean - exact.f).max() < 0.01 * exact.f[0]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "warmup", "start": 64, "share": 1.5}, "warmup: share must be a share of the stage in (0, 1]"),
        (
            {"kind": "warmup", "start": 64, "share": 0.1, "batch_rule": "pad"},
            "batch_rule must be one of truncate, rechunk",
        ),
        ({"kind": "warmup", "start": 64, "share": 0.1, "stepz": 3}, "warmup: unknown key 'stepz'"),
        ({"kind": "skyladder", "rate": 8}, "rate needs batch"),
        ({"kind": "skyladder", "rate": 8, "share": 0.5}, "exactly one of rate"),
        ({"kind": "dataset-decomposition", "buckets": [256, 1000]}, "bucket 1000 is not a power of two"),
        ({"kind": "dataset-decomposition", "curriculum": [1, 2]}, "curriculum must be 6 positive finite odds"),
        (  # a review: inf was taken where nan was refused
            {"kind": "dataset-decomposition", "buckets": [256, 512], "curriculum": [float("inf"), 1]},
            "curriculum must be 2 positive finite odds",
        ),
        (  # a second review: an integer past float64 was an OverflowError traceback
            {"kind": "dataset-decomposition", "buckets": [256, 512], "curriculum": [1, 10**400]},
            "curriculum must be 2 positive finite odds",
        ),
        ({"kind": "ladder"}, "curriculum kind must be one of warmup, skyladder, dataset-decomposition, got 'ladder'"),
        # a review: a list is unhashable, so the lookup was a TypeError traceback
        (
            {"kind": ["warmup"]},
            "curriculum kind must be one of warmup, skyladder, dataset-decomposition, got ['warmup']",
        ),
    ],
)
def test_bad_specs_name_the_key_and_value(spec, message):
    with pytest.raises(FreqlabError, match=re.escape(message)):
        curriculum_from_spec(spec)


def test_the_random_split_expectation_is_refused_for_very_long_documents():
    dd = curriculum_from_spec({"kind": "dataset-decomposition", "randomize": True})
    with pytest.raises(FreqlabError, match=r"longest document \(200,000 tokens, more than 131,072\); use replay: true"):
        dd.frequency([200_000], [1], 8192)


def test_a_regime_without_rows_is_refused():
    with pytest.raises(FreqlabError, match="regime 'uniform' has no row order"):
        curriculum_from_spec({"kind": "warmup", "start": 2, "share": 1}).frequency([9], [1], 4, "uniform")


def test_warmup_windows_stay_exact_when_steps_times_L_exceed_int64():
    warm_steps, L = 1 << 40, 1 << 30  # (L + 1)(steps + 1) >= 2^62: Python integers
    at = Warmup(64, Fraction(1)).window(L, warm_steps)
    steps = np.array([0, 1 << 20, (1 << 39) + 7, warm_steps - 1])
    assert at(steps).tolist() == [(64 * warm_steps + (L - 64) * (int(s) + 1)) // warm_steps for s in steps]


def test_a_warmup_multiple_that_does_not_divide_L_is_refused():
    """DeepSpeed rounds its window down to difficulty_step: with L = 9 and step 4 it trains 8 at every step, still
    ramping after the warm-up (its unrounded window reaches 12 at step 24), where freqlab switched to 9 at S_w."""
    with pytest.raises(FreqlabError, match="warmup: multiple 4 does not divide the window L = 9"):
        curriculum_from_spec({"kind": "warmup", "start": 8, "share": 0.6, "multiple": 4}).frequency([9], [10], 9)


@pytest.mark.parametrize(("start", "L", "warm", "multiple"), [(2, 4, 4, 1), (8, 64, 10, 8), (64, 2048, 1000, 8)])
def test_warmup_windows_are_deepspeeds_fixed_linear_as_its_engine_calls_it(start, L, warm, multiple):
    """DeepSpeed's CurriculumScheduler (fixed_linear = fixed_root of degree 1, float64) at global_steps + 1, what its
    engine passes before each step: the window of step 0 is already above start, the last warm step's is L.
    freqlab read step s as s/S_w, one step behind (the docstring's own example: windows 2, 2, 3, 3 for 2, 3, 3, 4)."""

    def deepspeed(global_steps):
        difficulty = floor((float(global_steps) / warm) ** 1.0 * (L - start) + start)
        difficulty -= difficulty % multiple
        return min(difficulty, L)

    steps = np.arange(warm)
    assert Warmup(start, Fraction(1), multiple=multiple).window(L, warm)(steps).tolist() == [
        deepspeed(s + 1) for s in range(warm)
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"kind": "skyladder", "rate": 2**40, "batch": 2**40},
            "rate × batch = 1.21e+24 rows per +1 token is past 2^62",
        ),
        ({"kind": "warmup", "start": 8, "share": 0.5, "batch": 10**20}, "batch must be an integer in 1..2^62"),
        ({"kind": "skyladder", "rate": 2**63, "batch": 1}, "rate must be an integer in 1..2^62"),
    ],
)
def test_spec_integers_past_int64_arithmetic_are_one_line(spec, message):
    """A review met an OverflowError traceback (numpy's int64 divisor) for SkyLadder's rate × batch."""
    with pytest.raises(FreqlabError, match=re.escape(message)):
        curriculum_from_spec(spec).frequency([100], [10], 64, "concat")


@pytest.mark.parametrize(
    "spec", [{"kind": "skyladder", "rate": 8, "batch": 1, "start": 4}, {"kind": "warmup", "start": 4, "share": 0.5}]
)
@pytest.mark.parametrize("regime", ["natural", "pack"])
def test_a_curriculum_refuses_more_rows_than_it_can_walk(spec, regime):
    """One 2^40-token document at L = 8 is 2^37 rows, walked one by one: it ran for hours (a review)."""
    with pytest.raises(FreqlabError, match=r"walks a curriculum's rows one by one, here 137,438,953,472 rows, more"):
        curriculum_from_spec(spec).frequency([2**40], [1], 8, regime)
