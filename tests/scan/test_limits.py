"""--max-docs / --max-tokens take the first documents in shard order, whatever the worker count."""

from __future__ import annotations

from freqlab.scan import scan

from .conftest import assert_same_histogram, reference_histogram, scan_slimpajama


def test_max_docs_takes_the_first_documents_in_shard_order(slimpajama_dir, corpus_records, counter):
    records = [r for shard in corpus_records for r in shard]
    # 30 documents: all of shard 0 (25) and 5 of shard 1, so the cut falls inside a shard
    serial = scan_slimpajama(slimpajama_dir, workers=1, max_docs=30)
    pooled = scan_slimpajama(slimpajama_dir, workers=2, max_docs=30)
    expected = reference_histogram(records[:30], counter)
    assert_same_histogram(serial.histogram, expected)
    assert_same_histogram(pooled.histogram, expected)
    assert serial.summary["documents"]["read"] == 30
    assert serial.summary["scan"]["partial"] == "stopped at max_docs=30"
    # two workers count shard 1 (and beyond) whole before the ledger cuts it: the rates were of that work, unsaid,
    # "4.71K docs/s" over 2.7 s beside 5,248 documents read (engines review)
    run = pooled.summary["scan"]
    counted = round(run["documents_per_second"] * run["wall_seconds"])  # shard 1 read up to its cap of 30 at least
    # one worker reads one document past the limit: whether anything follows it (a corpus that ends at the limit
    # is read whole)
    assert (
        counted > 30
        and run["documents_past_limit"] == counted - 30
        and serial.summary["scan"]["documents_past_limit"] == 1
    )
    assert ", 1 document of them past the limit (not kept) (local, 1 worker)" in serial.report()
    assert f", {counted - 30:,} documents of them past the limit (not kept) (local, 2 workers)" in pooled.report()
    assert run["partial"] == "stopped at max_docs=30"  # the result's own description: not the workers' timing


def test_max_tokens_keeps_the_document_that_reaches_the_limit_whole(slimpajama_dir, corpus_records, counter):
    records = [r for shard in corpus_records for r in shard]
    lengths = [int(counter.count([t])[0]) if t else 0 for t, _ in records]
    limit = sum(lengths[:40]) - 1  # reached by the 40th document
    for workers in (1, 2):
        result = scan_slimpajama(slimpajama_dir, workers=workers, max_tokens=limit, batch_size=4)
        assert_same_histogram(result.histogram, reference_histogram(records[:40], counter))
        assert result.histogram.tokens == sum(lengths[:40]) == limit + 1


def test_a_limit_the_corpus_ends_at_reads_it_whole(slimpajama_dir, corpus_records, counter):
    """A limit equal to the corpus (90 documents, or its tokens, or a token limit its last document reaches) stopped
    nothing: the scan is whole, not "stopped at max_docs=90" with a prefix's note and an estimate; one short of it
    is a partial scan, as before."""
    records = [r for shard in corpus_records for r in shard]
    lengths = [int(counter.count([t])[0]) if t else 0 for t, _ in records]
    whole = scan_slimpajama(slimpajama_dir, workers=1)
    for workers in (1, 2):
        for limits in ({"max_docs": 90}, {"max_tokens": sum(lengths)}, {"max_tokens": sum(lengths) - lengths[-1] + 1}):
            result = scan_slimpajama(slimpajama_dir, workers=workers, **limits)
            assert_same_histogram(result.histogram, whole.histogram)
            assert result.summary["scan"]["partial"] == "", (workers, limits)
            assert result.summary["budget"]["corpus_tokens_from"] == whole.summary["budget"]["corpus_tokens_from"]
            assert "note" not in result.summary["budget"]
        short = scan_slimpajama(slimpajama_dir, workers=workers, max_docs=89)
        assert short.summary["scan"]["partial"] == "stopped at max_docs=89"
        assert_same_histogram(short.histogram, reference_histogram(records[:89], counter))


def test_a_limit_followed_by_files_without_documents_reads_the_corpus_whole(slimpajama_dir, corpus_records, counter):
    """A review: the corpus ending at the limit was whole only when the limit fell in the last file: empty files,
    a file of blank lines after it, said "stopped at"; and shards after the limit are read up to one document only.
    """
    (slimpajama_dir / "chunk_3.jsonl").write_text("")
    (slimpajama_dir / "chunk_4.jsonl").write_text("\n\n\n")
    whole = scan_slimpajama(slimpajama_dir, workers=1)
    assert whole.summary["documents"]["blank_lines"] == 3
    for workers in (1, 2):
        for limit in (90, 91):
            result = scan_slimpajama(slimpajama_dir, workers=workers, max_docs=limit)
            assert result.summary["scan"]["partial"] == "" and result.summary["documents"] == whole.summary["documents"]
            assert_same_histogram(result.histogram, whole.histogram)
    records = [r for shard in corpus_records for r in shard]
    cut = scan_slimpajama(slimpajama_dir, workers=1, max_docs=25)  # the end of the first file: the second follows
    assert cut.summary["scan"]["partial"] == "stopped at max_docs=25"
    assert cut.summary["scan"]["documents_past_limit"] == 1  # the second file's first document, read to know
    assert_same_histogram(cut.histogram, reference_histogram(records[:25], counter))


def test_a_sampled_scan_whose_limit_the_corpus_ends_at_is_the_unlimited_scan(slimpajama_dir):
    """A review: with --sample-rate and a limit equal to the documents kept, the scan was whole but left out the
    documents sampled out after the last kept one (sampled_out 12 against 13, and a smaller estimate)."""
    unlimited = scan_slimpajama(slimpajama_dir, workers=1, sample_rate=0.5, seed=0)  # its last 2 sampled out
    kept = unlimited.summary["documents"]["read"]
    limited = scan_slimpajama(slimpajama_dir, workers=1, sample_rate=0.5, seed=0, max_docs=kept)
    assert limited.summary["documents"] == unlimited.summary["documents"]
    assert limited.summary["documents"]["sampled_out"] == 47
    assert limited.summary["budget"] == unlimited.summary["budget"]
    assert limited.summary["scan"]["partial"] == unlimited.summary["scan"]["partial"] == "sampled at rate 0.5 (seed 0)"


def test_limits_with_sampling_are_deterministic_and_flagged_as_an_extrapolation(slimpajama_dir):
    a = scan_slimpajama(slimpajama_dir, workers=1, max_docs=20, sample_rate=0.5, seed=3)
    b = scan_slimpajama(slimpajama_dir, workers=2, max_docs=20, sample_rate=0.5, seed=3, batch_size=2)
    assert_same_histogram(a.histogram, b.histogram)
    assert a.summary["documents"] == b.summary["documents"]
    assert a.summary["documents"]["read"] == 20
    # JSON lines: the corpus size is unknown, so a scan stopped at a limit cannot estimate it
    assert a.summary["budget"]["corpus_tokens_from"] == "tokens counted (partial scan)"
    assert not a.summary["budget"]["extrapolated"]


def test_a_sampled_scan_extrapolates_to_the_documents_it_saw(slimpajama_dir):
    sampled = scan_slimpajama(slimpajama_dir, workers=1, sample_rate=0.5, seed=3)
    docs, budget = sampled.summary["documents"], sampled.summary["budget"]
    assert docs["read"] + docs["sampled_out"] == 90
    assert budget["extrapolated"] and budget["corpus_tokens_from"] == "estimated from the partial scan"
    assert budget["corpus_tokens"] == (2 * sampled.histogram.tokens * 90 + docs["read"]) // (2 * docs["read"])
    assert budget["training_tokens"] == 10**12  # the one budget rule: 1T without tokens, whatever the corpus size
    given = scan_slimpajama(slimpajama_dir, workers=1, max_docs=20, corpus_tokens=10**12, tokens=5 * 10**11)
    assert given.summary["budget"]["corpus_tokens"] == 10**12 and given.summary["budget"]["extrapolated"]
    assert given.summary["windows"][0]["budget_tokens"] == 5 * 10**11


def test_the_corpus_estimate_is_exact_integer_arithmetic():
    from fractions import Fraction

    from freqlab.scan.summary_json import estimate_corpus_tokens

    # tokens * documents / read, rounded half up, without float: float division is off by 6 here
    tokens, documents, read = 82031920993190389, 910925047, 861425549
    exact = Fraction(tokens * documents, read)
    assert estimate_corpus_tokens(tokens, documents, read) == int(exact + Fraction(1, 2)) == 86745664292135178
    assert round(tokens * documents / read) == 86745664292135184
    assert estimate_corpus_tokens(5, 1, 2) == 3 and estimate_corpus_tokens(7, 3, 3) == 7


def test_a_prefix_scan_estimates_the_corpus_with_a_bias_note(tmp_path, corpus_records):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from freqlab.scan.summary_json import PREFIX_NOTE

    records = [r for shard in corpus_records for r in shard]
    path = tmp_path / "all.parquet"  # Parquet: the footer gives the corpus's 90 documents
    pq.write_table(pa.table({"text": [t for t, _ in records]}), path)
    prefix = scan(str(path), L=[512], regimes=["natural"], progress=False, workers=1, max_docs=20)
    budget = prefix.summary["budget"]
    assert budget["corpus_tokens_from"] == "estimated from the partial scan"
    assert budget["corpus_tokens"] == (2 * prefix.histogram.tokens * 90 + 20) // 40
    assert budget["note"] == PREFIX_NOTE and "not a random sample" in PREFIX_NOTE
    assert f"note       {PREFIX_NOTE}" in prefix.report()
    sampled = scan(str(path), L=[512], regimes=["natural"], progress=False, workers=1, sample_rate=0.5)
    assert "note" not in sampled.summary["budget"]  # a random sample: unbiased, no note
    docs = sampled.summary["documents"]
    assert sampled.summary["budget"]["corpus_tokens"] == (2 * sampled.histogram.tokens * 90 + docs["read"]) // (
        2 * docs["read"]
    )
