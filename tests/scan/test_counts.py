"""Partial counts are exact, mergeable in any order, and cut exactly at a limit."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from freqlab.scan import counts as counts_module
from freqlab.scan.counts import BACKEND_UNKNOWN, DENSE_LIMIT, DocumentLog, LengthCounts, ShardCount, cut_point, truncate

lengths_strategy = st.lists(
    st.one_of(st.integers(1, 3000), st.integers(DENSE_LIMIT - 2, DENSE_LIMIT + 2), st.integers(1, 10**9)),
    max_size=200,
)


@given(lengths_strategy, st.integers(1, 7))
@settings(max_examples=60, deadline=None)
def test_length_counts_equal_a_plain_counter_whatever_the_split(values, pieces):
    expected = Counter(values)
    parts = [LengthCounts() for _ in range(pieces)]
    for k, value in enumerate(values):  # spread values over partials, then merge them back in reverse order
        parts[k % pieces].add(np.array([value], np.int64))
    total = LengthCounts()
    for part in reversed(parts):
        total.merge(part)
    lengths, counts = total.to_arrays()
    assert lengths.dtype == counts.dtype == np.int64
    assert dict(zip(lengths.tolist(), counts.tolist(), strict=True)) == expected
    assert lengths.tolist() == sorted(expected)


codes_strategy = st.lists(
    st.one_of(
        st.integers(-3, 0), st.integers(1, 3000), st.integers(DENSE_LIMIT - 2, DENSE_LIMIT + 2), st.integers(1, 10**9)
    ),
    max_size=200,
)


@given(st.lists(codes_strategy, max_size=5), st.sampled_from([0, 50, 1 << 16]))
@settings(max_examples=80, deadline=None)
def test_add_codes_counts_the_positive_codes_and_totals_the_rest_like_a_plain_loop(batches, compiled_from):
    """The compiled pass, the numpy one, both in one scan (batches above and below ``COMPILED_FROM``), and the
    dense array's growth batch after batch, against a Counter."""
    counts, expected, totals = LengthCounts(), Counter(), [0, 0, 0]
    for batch in batches:
        saved, counts_module.COMPILED_FROM = counts_module.COMPILED_FROM, compiled_from
        try:
            seen = counts.add_codes(np.array(batch, np.int64))
        finally:
            counts_module.COMPILED_FROM = saved
        assert seen == (sum(c for c in batch if c > 0), batch.count(0), sum(c < 0 for c in batch))
        expected.update(c for c in batch if c > 0)
        totals = [a + b for a, b in zip(totals, seen, strict=True)]
    lengths, found = counts.to_arrays()
    assert dict(zip(lengths.tolist(), found.tolist(), strict=True)) == expected
    assert counts.documents == sum(expected.values()) and counts.tokens == totals[0]


def test_a_ten_million_token_document_costs_one_dict_entry_not_a_huge_array():
    counts = LengthCounts()
    counts.add(np.array([10_000_000, 5, 5], np.int64))
    assert counts.dense.nbytes <= 64 and dict(counts.sparse) == {10_000_000: 1}
    assert [a.tolist() for a in counts.to_arrays()] == [[5, 10_000_000], [2, 1]]


def naive_cut(codes, max_docs, max_tokens):
    taken = tokens = 0
    for code in codes:
        if (max_docs is not None and taken >= max_docs) or (max_tokens is not None and tokens >= max_tokens):
            break
        taken += 1
        tokens += max(code, 0)
    return taken


@given(
    st.lists(st.integers(-2, 50), max_size=40),
    st.one_of(st.none(), st.integers(0, 45)),
    st.one_of(st.none(), st.integers(0, 400)),
)
@settings(max_examples=200, deadline=None)
def test_cut_point_takes_documents_in_order_until_a_limit_is_reached(codes, max_docs, max_tokens):
    assert cut_point(np.array(codes, np.int64), max_docs, max_tokens) == naive_cut(codes, max_docs, max_tokens)


def test_shard_count_accounts_for_every_document_by_source():
    part = ShardCount()
    labels, reasons = [None, "web", "code"], ["malformed-json"]
    part.add(np.array([5, 0, 7, -1, 5, 0]), np.array([1, 1, 2, 0, 2, 2], np.int32), labels, reasons)
    assert (part.documents, part.tokens, part.documents_read) == (3, 17, 6)
    assert dict(part.skipped) == {"malformed-json": 1} and dict(part.empty) == {"web": 1, "code": 1}
    h = part.to_histogram(by_source=True)
    assert (h.lengths.tolist(), h.counts.tolist(), h.empty_documents, h.documents_read) == ([5, 7], [2, 1], 2, 6)
    assert {k: (v.lengths.tolist(), v.counts.tolist(), v.empty_documents) for k, v in h.sources.items()} == {
        "code": ([5, 7], [1, 1], 1),
        "web": ([5], [1], 1),
    }
    flat = part.to_histogram(by_source=False)
    assert flat.sources is None and flat.documents_read == 6


def test_truncate_keeps_the_exact_prefix_and_counts_sampled_out_documents_up_to_it():
    codes = np.array([4, 0, 6, 3, 9])
    part = ShardCount(shard_id="s", sampled_out=10, complete=True)
    part.add(codes, np.zeros(5, np.int32), [None], [])
    # documents at shard positions 0, 2, 3, 7, 9: the others were sampled out
    part.log = DocumentLog([codes], [np.zeros(5, np.int32)], [np.array([0, 2, 3, 7, 9])], [None], [])
    cut, exhausted = truncate(part, max_docs=None, max_tokens=10)  # 4 + 0 + 6 reaches 10 at the 3rd document
    assert exhausted and (cut.documents_read, cut.tokens, cut.sampled_out) == (3, 10, 1)
    same, exhausted = truncate(part, max_docs=100, max_tokens=None)
    assert same is part and not exhausted
    part.error = "f.jsonl:12: malformed-json"  # a bad record after the logged documents
    assert truncate(part, max_docs=5, max_tokens=None)[0].error is None  # the limit falls before it
    assert truncate(part, max_docs=6, max_tokens=None)[0].error == "f.jsonl:12: malformed-json"


def test_truncate_keeps_the_documents_per_backend_of_the_documents_it_keeps():
    """Each logged document's backend (-1: no text) gives the counts of the prefix kept; a log without them (a
    checkpoint of before) or with one unknown gives None: unknown, not the whole shard's."""
    codes = np.array([4, 0, -1, 6, 3, 9])
    backends = np.array([0, 1, -1, 1, 2, 0], np.int8)
    names = ["fastokens", "tiktoken", "hf-tokenizers"]

    def logged(kept_backends: list) -> ShardCount:
        part = ShardCount(shard_id="s", counted_by=Counter({"fastokens": 2, "tiktoken": 2, "hf-tokenizers": 1}))
        part.add(codes, np.zeros(6, np.int32), [None], ["malformed-json"])
        part.log = DocumentLog([codes], [np.zeros(6, np.int32)], [], [None], ["malformed-json"], kept_backends, names)
        return part

    cut, exhausted = truncate(logged([backends]), max_docs=4, max_tokens=None)
    assert exhausted and cut.documents_read == 4 and cut.counted_by == {"fastokens": 1, "tiktoken": 2}
    assert cut.log.backend_codes().tolist() == [0, 1, -1, 1]  # kept with the log (a cut of a cut is exact too)
    assert truncate(logged([backends]), max_docs=2, max_tokens=None)[0].counted_by == {"fastokens": 1, "tiktoken": 1}
    assert truncate(logged([]), max_docs=4, max_tokens=None)[0].counted_by is None
    unknown = backends.copy()
    unknown[4] = BACKEND_UNKNOWN
    assert truncate(logged([unknown]), max_docs=5, max_tokens=None)[0].counted_by is None
    assert truncate(logged([unknown]), max_docs=4, max_tokens=None)[0].counted_by == {"fastokens": 1, "tiktoken": 2}


def test_truncate_keeps_the_blank_lines_before_the_documents_it_keeps():
    codes = np.array([4, 0, 6, 3])
    part = ShardCount(shard_id="s", blank_lines=2 + 1 + 3 + 4)  # 4 after the last document
    part.add(codes, np.zeros(4, np.int32), [None], [])
    part.log = DocumentLog([codes], [np.zeros(4, np.int32)], [], [None], [], gaps=[np.array([2, 0, 1, 3])])
    assert [truncate(part, max_docs=k, max_tokens=None)[0].blank_lines for k in (1, 2, 3, 4)] == [2, 2, 3, 6]
    assert truncate(part, max_docs=5, max_tokens=None)[0].blank_lines == 10  # all of it fits: the trailing 4 too
    part.log.gaps = []  # a checkpoint of before: those the worker met
    assert truncate(part, max_docs=2, max_tokens=None)[0].blank_lines == 10
