"""Length upsampling: tokens of long documents so that f_T(E) >= tau, checked against explicit mixtures."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from freqlab.errors import FreqlabError
from freqlab.histogram import LengthHistogram
from freqlab.plan.upsample import plan_upsample, plan_upsample_schedule

L, E = 1024, 600
CORPUS = [50] * 20 + [300, 900, 2500]  # natural regime: 2500 -> 1024 + 1024 + 452
LONG = [900, 2500]  # the corpus's own documents >= E


def brute_f(doc_lengths: list[int], i: int) -> int:
    """STRING Eq. 2 on explicit segments: documents cut into L-token rows plus the remainder."""
    total = 0
    for n in doc_lengths:
        pieces = [L] * (n // L) + ([n % L] if n % L else [])
        total += sum(max(s - i, 0) for s in pieces)
    return total


def smallest_copies(k: int, tau: int, long_docs: list[int]) -> int:
    """Mix k copies of the corpus with j copies of the long documents; smallest j with f_mix(E) >= tau.
    In the natural regime f(0) is the token count, so f_mix is f_T for T = the mix's own tokens."""
    j = 0
    while brute_f(CORPUS * k + long_docs * j, E) < tau:
        j += 1
    return j


@pytest.mark.parametrize("tau_multiple", [2, 5, 17])
def test_extra_tokens_match_explicit_mixtures(tau_multiple):
    k = 10
    T = k * sum(CORPUS)
    current = brute_f(CORPUS * k, E)  # = T · f(E)/f(0)
    tau = tau_multiple * current
    p = plan_upsample(LengthHistogram.from_lengths(CORPUS), L, E, T, tau=tau)
    assert p.current_occurrences == pytest.approx(current)
    j = smallest_copies(k, tau, LONG)
    # X tokens of long documents in corpus proportions = X / sum(LONG) copies of the long set
    assert math.ceil(p.extra_tokens / sum(LONG)) == j
    # X is the exact minimum: X·b reaches the gap, X - 1 does not
    a, b = brute_f(CORPUS, E) / sum(CORPUS), brute_f(LONG, E) / sum(LONG)
    assert p.per_token_corpus == pytest.approx(a) and p.per_token_long == pytest.approx(b)
    assert T * a + p.extra_tokens * b >= tau - 1e-6
    assert T * a + (p.extra_tokens - 1) * b < tau


def test_shares_of_the_resulting_mix():
    T = 10 * sum(CORPUS)
    p = plan_upsample(LengthHistogram.from_lengths(CORPUS), L, E, T, tau=5 * brute_f(CORPUS * 10, E))
    X = p.extra_tokens
    corpus_long_tokens = (900 + 2500) / sum(CORPUS)
    assert p.long_token_share == pytest.approx((T * corpus_long_tokens + X) / (T + X))
    docs_per_token, long_docs_per_token = len(CORPUS) / sum(CORPUS), 2 / sum(CORPUS)
    added_docs = X * len(LONG) / sum(LONG)
    expected = (T * long_docs_per_token + added_docs) / (T * docs_per_token + added_docs)
    assert p.long_document_share == pytest.approx(expected)


def test_fixed_budget_share():
    T = 10 * sum(CORPUS)
    current = brute_f(CORPUS * 10, E)
    p = plan_upsample(LengthHistogram.from_lengths(CORPUS), L, E, T, tau=current * 6 // 5)
    a, b = p.per_token_corpus, p.per_token_long  # 1148/4400 and 1148/3400: at most 1.29x more per token
    share = p.fixed_budget_share
    assert 0 < share < 1
    assert T * ((1 - share) * a + share * b) == pytest.approx(current * 6 // 5)
    # 3x the current occurrences cannot be reached within T: the budget must grow
    q = plan_upsample(LengthHistogram.from_lengths(CORPUS), L, E, T, tau=3 * current)
    assert q.fixed_budget_share is None and any("budget must grow" in n for n in q.notes)


def test_given_long_lengths():
    T = 10 * sum(CORPUS)
    tau = 4 * brute_f(CORPUS * 10, E)
    given = [1024, 1024, 2048]
    p = plan_upsample(LengthHistogram.from_lengths(CORPUS), L, E, T, tau=tau, long_lengths=given)
    assert p.per_token_long == pytest.approx(brute_f(given, E) / sum(given))  # (424 + 424 + 848) / 4096
    assert math.ceil(p.extra_tokens / sum(given)) == smallest_copies(10, tau, given)
    assert "given documents" in p.long_source


def test_already_reached_needs_nothing():
    p = plan_upsample(LengthHistogram.from_lengths(CORPUS), L, E, 10**12, tau=100)
    assert p.extra_tokens == 0 and any("no upsampling" in n for n in p.notes)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"E": 1024}, "0 < E < L"),
        ({"E": 5000}, "0 < E < L"),
        ({"regime": "concat"}, "do not shape f"),
        ({"long_lengths": [100, 2000]}, "must all be >= E"),
        ({"E": 1000, "histogram": [50, 60]}, "no document of at least"),
    ],
)
def test_impossible_requests(kwargs, message):
    args = {"histogram": CORPUS, "E": E, **kwargs}
    with pytest.raises(FreqlabError, match=message):
        plan_upsample(LengthHistogram.from_lengths(args.pop("histogram")), L, args.pop("E"), 10**6, tau=10**9, **args)


def brute_f_window(doc_lengths: list[int], i: int, window: int) -> int:
    """STRING Eq. 2 on documents cut into ``window``-token rows plus the remainder (natural regime)."""
    return sum(max(min(window, n - start) - i, 0) for n in doc_lengths for start in range(0, n, window))


def write_schedule(tmp_path, stages) -> str:
    import json

    LengthHistogram.from_lengths(CORPUS).to_parquet(tmp_path / "corpus.parquet")
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps({"histogram": "corpus.parquet", "tau": 1000, "stages": stages}))
    return str(path)


def test_one_stage_schedule_equals_the_plain_planner(tmp_path):
    T = 10 * sum(CORPUS)
    path = write_schedule(tmp_path, [{"name": "only", "L": L, "tokens": T, "regime": "natural"}])
    tau = 5 * brute_f(CORPUS * 10, E)
    a = plan_upsample(LengthHistogram.from_lengths(CORPUS), L, E, T, tau=tau).to_dict()
    b = plan_upsample_schedule(path, E, tau=tau).to_dict()
    for key in ("reasoning", "added_to"):
        a.pop(key), b.pop(key)
    assert a == b


def test_two_stage_schedule_adds_to_the_longest_stage(tmp_path):
    E2, T1, T2 = 300, 40 * sum(CORPUS), 10 * sum(CORPUS)
    stages = [
        {"name": "short", "L": 512, "tokens": T1, "regime": "natural"},
        {"name": "long", "L": L, "tokens": T2, "regime": "natural"},
    ]
    path = write_schedule(tmp_path, stages)
    # F(E) = Σ_k T_k f_k(E) / f_k(0); f_k(0) is the corpus token count in the natural regime
    F = Fraction(sum(T * brute_f_window(CORPUS, E2, w) for T, w in ((T1, 512), (T2, L))), sum(CORPUS))
    long_docs = [n for n in CORPUS if n >= E2]  # 300, 900, 2500 in corpus proportions
    a = Fraction(brute_f_window(CORPUS, E2, L), sum(CORPUS))  # per token of the long stage
    b = Fraction(brute_f_window(long_docs, E2, L), sum(long_docs))
    tau = math.ceil(F + T2 * (b - a) / 2)  # about half of the long stage's budget turned into long documents
    p = plan_upsample_schedule(path, E2, tau=tau)
    assert p.added_to.startswith("stage 'long'") and p.tokens == T1 + T2 and p.L == L
    assert p.current_occurrences == F == 74000
    assert p.per_token_corpus == pytest.approx(a) and p.per_token_long == pytest.approx(b)
    assert F + p.extra_tokens * b >= tau > F + (p.extra_tokens - 1) * b  # X is the exact minimum
    long_share = Fraction(sum(long_docs), sum(CORPUS))  # both stages train on the same corpus
    X = p.extra_tokens
    assert p.long_token_share == pytest.approx(((T1 + T2) * long_share + X) / (T1 + T2 + X))
    assert F + T2 * Fraction(p.fixed_budget_share) * (b - a) == pytest.approx(tau)
    assert p.fixed_budget_share == pytest.approx(0.5, abs=1e-3)
    assert "stage 'long'" in p.reasoning and "tau - F(E)" in p.reasoning
    # the schedule's own tau (1000) is already reached: nothing to add
    assert plan_upsample_schedule(path, E2).extra_tokens == 0
