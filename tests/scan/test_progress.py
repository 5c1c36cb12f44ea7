"""The progress bar (tqdm): percent and ETA from bytes read where sizes are known, documents and tokens/s beside
it; silent when piped or disabled; JSON lines report bytes as they are read, exactly the files' sizes in all."""

from __future__ import annotations

import io
import itertools
import json
import os
import random
from types import SimpleNamespace

import zstandard

from freqlab.corpus import open_corpus
from freqlab.scan import ShardOptions, count_shard, scan
from freqlab.scan.progress import ProgressBar, scan_progress


def test_the_bar_shows_percent_documents_and_tokens_per_second():
    stream = io.StringIO()
    bar = ProgressBar(1000, "B", enabled=True, stream=stream, interval=0)
    bar(50, 12_345, 250)
    bar.close()
    text = stream.getvalue()
    assert "25%" in text and "100%" not in text  # 250 of 1000 bytes, and the bar does not claim more at the end
    assert "50 docs, 12.3K tokens" in text and "tokens/s" in text and text.endswith("\n")


def test_a_disabled_bar_writes_nothing_and_a_non_terminal_disables_it():
    stream = io.StringIO()  # not a TTY, and no notebook here
    bar = ProgressBar(None, stream=stream)
    bar(10, 100, 5)
    bar.close()
    assert not bar.enabled and stream.getvalue() == "" and (bar.documents, bar.tokens, bar.bytes) == (10, 100, 5)


def test_resumed_counts_are_in_the_totals_not_in_the_rates():
    stream = io.StringIO()
    bar = ProgressBar(100, "docs", enabled=True, stream=stream, interval=0, resumed=(60, 6000, 0))
    bar(10, 1000)
    bar.close()
    assert bar.documents == 70 and "70%" in stream.getvalue() and "70 docs, 7K tokens" in stream.getvalue()


def _settings(**limits):
    return SimpleNamespace(**{"max_tokens": None, "max_docs": None, "sample_rate": None, **limits})


def _corpus(total_documents=None, sizes=(100, 200)):
    return SimpleNamespace(total_documents=total_documents, total_bytes=sum(sizes) if None not in sizes else None)


def test_the_unit_is_what_ends_the_scan():
    assert (b := scan_progress(_corpus(), _settings(), False)).unit == "B" and b.total == 300
    assert (b := scan_progress(_corpus(50, (100, None)), _settings(), False)).unit == "docs" and b.total == 50
    assert (b := scan_progress(_corpus(50), _settings(max_docs=10), False)).unit == "docs" and b.total == 10
    assert (b := scan_progress(_corpus(50), _settings(max_tokens=10**6), False)).unit == "tokens"
    assert scan_progress(_corpus(None, (None,)), _settings(), False).total is None  # counts and rates only


def _jsonl(path, n, compress=False):
    """n documents of random hex words (they compress ~2x only: a compressed file of several 64 KiB feeds)."""
    rng = random.Random(0)
    words = [" ".join(f"{rng.getrandbits(32):08x}" for _ in range(k % 40 + 1)) for k in range(n)]
    lines = b"".join(json.dumps({"text": w}).encode() + b"\n" for w in words)
    path.write_bytes(zstandard.ZstdCompressor().compress(lines) if compress else lines)
    return path


class _Words:
    """A token counter stub: one token per word (the scan's work, without a tokenizer)."""

    name = "words"

    def count(self, texts):
        return [len(t.split()) for t in texts]


def test_jsonl_shards_report_bytes_as_they_are_read_and_exactly_their_size_in_all(tmp_path):
    for compress in (False, True):
        path = _jsonl(tmp_path / f"c{int(compress)}.jsonl{'.zst' if compress else ''}", 6000, compress)
        (shard,) = open_corpus(str(path)).shards
        calls: list[tuple[int, int, int]] = []
        count_shard(shard, _Words(), ShardOptions(batch_size=100), lambda *report, seen=calls: seen.append(report))
        assert sum(b for _, _, b in calls) == shard.size() == os.path.getsize(path)
        # bytes arrive with the batches, not all at the end (a large file shows its percent while it is read)
        assert sum(1 for d, _, b in calls if d and b) >= 2, calls


def test_compressed_ranges_split_the_file_size_exactly(tmp_path):
    from freqlab.corpus.jsonl import JsonlShard

    path = _jsonl(tmp_path / "big.jsonl.zst", 10, compress=True)
    (whole,) = open_corpus(str(path)).shards
    size = os.path.getsize(path)
    cuts = [0, 7, 30, None]  # ranges of the estimated decompressed content
    parts = [JsonlShard(f"p{k}", whole.file, whole.fields, a, b) for k, (a, b) in enumerate(itertools.pairwise(cuts))]
    assert sum(p.size() for p in parts) == size


def test_a_scan_of_local_files_counts_every_byte(tmp_path, counter, monkeypatch):
    import freqlab.scan.driver as driver

    _jsonl(tmp_path / "a.jsonl", 500)
    _jsonl(tmp_path / "b.jsonl.zst", 700, compress=True)
    bars = []
    original = driver.scan_progress
    monkeypatch.setattr(driver, "scan_progress", lambda *a, **k: bars.append(original(*a, **k)) or bars[-1])
    result = scan(str(tmp_path), tokenizer=counter, workers=1, progress=False)
    (bar,) = bars
    assert bar.unit == "B" and bar.total == bar.bytes == sum(p.stat().st_size for p in tmp_path.iterdir())
    assert bar.documents == result.histogram.documents_read == 1200


def test_a_notebook_without_ipywidgets_gets_one_final_line_not_carriage_return_redraws(monkeypatch):
    """Jupyter keeps every chunk a text bar writes in the saved output (issue 22 found 15 of them): without the
    widget, the bar writes one line when the scan ends, and no carriage return."""
    import sys

    import freqlab.scan.progress as progress

    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    monkeypatch.setattr(progress, "has_widgets", lambda: False)
    bar = ProgressBar(1000, "B", interval=0)
    assert bar.enabled and bar.final_line and bar.bar is None
    for _ in range(15):
        bar(10, 1_000, 50)
    assert stream.getvalue() == ""  # nothing while the scan runs
    bar.close()
    text = stream.getvalue()
    assert "\r" not in text and text.count("\n") == 1 and text.endswith("\n")
    assert text.startswith("scan: ") and "75%" in text and "150 docs, 15K tokens" in text
    monkeypatch.setattr(progress, "has_widgets", lambda: True)  # the widget redraws in place: used as before
    assert not ProgressBar(1000, "B", interval=0).final_line
