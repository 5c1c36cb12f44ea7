"""count_shard: one shard's documents, tokenized in batches, counted exactly (real files, real tokenizer)."""

from __future__ import annotations

import pytest

from freqlab.corpus import open_corpus
from freqlab.scan.work import Sampler, ShardOptions, count_shard

from .conftest import reference_histogram, write_slimpajama


@pytest.mark.parametrize("batch_size", [1, 3, 1000])
def test_a_shard_counts_like_one_document_at_a_time(tmp_path, corpus_records, counter, batch_size):
    path = write_slimpajama(tmp_path / "chunk.jsonl", corpus_records[1])
    (shard,) = open_corpus("slimpajama", data_files=str(path)).shards
    part = count_shard(shard, counter, ShardOptions(batch_size=batch_size, by_source=True))
    got = part.to_histogram(by_source=True)
    expected = reference_histogram(corpus_records[1], counter)
    assert got.lengths.tolist() == expected.lengths.tolist() and got.counts.tolist() == expected.counts.tolist()
    assert {k: v.counts.sum() for k, v in got.sources.items()} == {
        k: v.counts.sum() for k, v in expected.sources.items()
    }
    assert part.documents_read == len(corpus_records[1]) == 35 and part.complete


def test_a_ten_million_token_document_is_counted_exactly_in_bounded_memory(tmp_path, counter):
    # Tekken's pre-tokenizer splits digits one by one (\p{N}) and each digit is a token: 10M digits, 10M tokens
    assert counter.count(["1234567890"]).tolist() == [10]
    text = "1234567890" * 1_000_000
    path = write_slimpajama(tmp_path / "big.jsonl", [("tiny doc", "a"), (text, "a"), ("", "a")])
    del text
    shards = open_corpus(str(path)).shards
    assert len(shards) == 2  # 10 MB: two byte ranges, and the long line, crossing into the second, counts once
    part = count_shard(shards[0], counter, ShardOptions(batch_size=64))
    rest = count_shard(shards[1], counter, ShardOptions(batch_size=64))
    assert (rest.documents_read, sum(rest.empty.values())) == (1, 1)  # the empty document after it
    part.merge(rest)
    h = part.to_histogram(by_source=False)
    tiny = int(counter.count(["tiny doc"])[0])
    assert (h.lengths.tolist(), h.counts.tolist(), h.empty_documents) == ([tiny, 10_000_000], [1, 1], 1)
    assert part.lengths[None].dense.nbytes <= 1024  # the long document is one sparse entry, not an 80 MB array


def test_sampling_is_deterministic_per_document_and_independent_of_batching(tmp_path, corpus_records, counter):
    records = [r for shard in corpus_records for r in shard]
    path = write_slimpajama(tmp_path / "all.jsonl", records)
    (shard,) = open_corpus(str(path)).shards
    runs = [
        count_shard(shard, counter, ShardOptions(batch_size=b, sample_rate=0.5, seed=7, keep_log=True))
        for b in (1, 5, 500)
    ]
    positions = [r.log.arrays()[2].tolist() for r in runs]
    assert positions[0] == positions[1] == positions[2]
    kept = positions[0]
    sampler = Sampler(0.5, 7, shard.id)  # the same draws, one document at a time
    assert kept == [i for i in range(len(records)) if sampler.keep(i)]
    assert runs[0].documents_read + runs[0].sampled_out == len(records) == 90
    assert 25 <= len(kept) <= 65
    expected = reference_histogram([records[i] for i in kept], counter)
    assert runs[2].to_histogram(by_source=False).counts.tolist() == expected.counts.tolist()
    other_seed = count_shard(shard, counter, ShardOptions(sample_rate=0.5, seed=8, keep_log=True))
    assert other_seed.log.arrays()[2].tolist() != kept


def test_sampler_rate_over_many_documents():
    def kept(shard_id: str, n: int = 100_000) -> list[int]:
        sampler = Sampler(0.1, 0, shard_id)
        return [i for i in range(n) if sampler.keep(i)]

    assert abs(len(kept("shard-x")) - 10_000) < 400  # 4 standard deviations
    assert kept("shard-x") == kept("shard-x")
    assert kept("shard-x") != kept("shard-y")  # shards draw independently


def shard_outcome(part) -> tuple:
    """Everything a ShardCount says: lengths, empties, skips by reason, the log, the error, finished or capped."""
    h = part.to_histogram(by_source=True)
    log = [a.tolist() for a in part.log.arrays()] if part.log is not None else None
    return (
        h.lengths.tolist(),
        h.counts.tolist(),
        h.empty_documents,
        dict(h.skipped),
        part.documents_read,
        part.sampled_out,
        part.blank_lines,
        log,
        part.error,
        part.complete,
    )


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_tokenizing_while_the_next_batch_is_read_counts_exactly_as_one_thread(
    tmp_path, corpus_records, counter, on_error
):
    records = [r for shard in corpus_records for r in shard]
    path = write_slimpajama(tmp_path / "all.jsonl", records)
    lines = path.read_bytes().split(b"\n")
    lines[40:40] = [b"{not json", b""]  # a bad record and a blank line in the middle
    path.write_bytes(b"\n".join(lines))
    (shard,) = open_corpus(str(path)).shards
    options = [ShardOptions(batch_size=b, on_error=on_error, by_source=True, keep_log=True) for b in (1, 3, 1000)]
    options += [
        ShardOptions(batch_size=4, on_error=on_error, keep_log=True, max_docs=33),
        ShardOptions(batch_size=2, on_error=on_error, keep_log=True, max_tokens=20_000),
        ShardOptions(batch_size=5, on_error=on_error, keep_log=True, sample_rate=0.5, seed=3),
    ]
    for option in options:
        serial = shard_outcome(count_shard(shard, counter, option))
        for threads in (2, 3):  # up to `threads` batches tokenized at once, counted in order
            assert shard_outcome(count_shard(shard, counter, option, threads=threads)) == serial
    whole = shard_outcome(count_shard(shard, counter, options[1], threads=2))
    if on_error == "raise":  # the 40 documents before the bad line, then its error
        assert whole[4] == 40 and ":41: malformed-json (Expecting property name" in whole[8] and not whole[9]
    else:
        assert whole[4] == 91 and whole[3] == {"malformed-json": 1} and whole[9]


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_truncated_compressed_file_counts_the_same_on_two_threads(tmp_path, corpus_records, counter, on_error):
    from .test_unreadable_files import truncated_zst

    path = tmp_path / "cut.jsonl.zst"
    kept = truncated_zst(path, [text for shard in corpus_records for text, _ in shard])
    (shard,) = open_corpus(str(path)).shards
    option = ShardOptions(batch_size=3, on_error=on_error, keep_log=True)
    serial = shard_outcome(count_shard(shard, counter, option))
    assert shard_outcome(count_shard(shard, counter, option, threads=2)) == serial
    if on_error == "skip":  # the file's one skip (read in 1 MiB blocks: the cut is met before any line)
        assert serial[3] == {"unreadable-file": 1} and serial[9] and serial[4] <= kept + 1
    else:
        assert "ends inside a zstd frame); is the file truncated or corrupt?" in serial[8] and not serial[9]


def test_a_tokenizer_failing_on_the_second_thread_fails_the_shard(tmp_path, corpus_records):
    class Failing:
        name = "failing"

        def count(self, texts):
            raise RuntimeError("the tokenizer broke")

    path = write_slimpajama(tmp_path / "all.jsonl", corpus_records[0])
    (shard,) = open_corpus(str(path)).shards
    with pytest.raises(RuntimeError, match="the tokenizer broke"):
        count_shard(shard, Failing(), ShardOptions(batch_size=2), threads=2)


def test_two_tokenizing_threads_run_two_batches_at_once_and_count_them_in_order(tmp_path, corpus_records):
    """The first two batches' calls wait for each other at a barrier: they meet only if both run at once (one
    after the other, the barrier breaks after 10 s)."""
    import threading

    import numpy as np

    class Meeting:
        name = "meeting"

        def __init__(self, meet: bool) -> None:
            self.barrier = threading.Barrier(2, timeout=10) if meet else None
            self.calls = 0
            self.lock = threading.Lock()

        def count(self, texts):
            with self.lock:
                self.calls += 1
                first_two = self.calls <= 2
            if first_two and self.barrier is not None:
                self.barrier.wait()
            return np.array([len(text.split()) for text in texts], np.int64)

    path = write_slimpajama(tmp_path / "all.jsonl", corpus_records[0])
    (shard,) = open_corpus(str(path)).shards
    option = ShardOptions(batch_size=2, keep_log=True)
    one = shard_outcome(count_shard(shard, Meeting(meet=False), option))
    assert shard_outcome(count_shard(shard, Meeting(meet=True), option, threads=2)) == one
    assert one[4] == len(corpus_records[0]) > 4  # several batches


class _Recording:
    """A counter that records the threads it counts on and how many calls run at once (each call sleeps a little)."""

    name = "recording"

    def __init__(self, pause: float = 0.0) -> None:
        import threading

        self.pause, self.threads, self.running, self.lock = pause, set(), 0, threading.Lock()

    def count(self, texts):
        import threading
        import time

        import numpy as np

        with self.lock:
            self.threads.add(threading.current_thread())  # the object: a new thread may reuse an ident
            self.running += 1
        time.sleep(self.pause)
        with self.lock:
            self.running -= 1
        return np.array([len(text.split()) for text in texts], np.int64)


def test_shards_are_tokenized_on_the_same_threads_one_after_another(tmp_path, corpus_records):
    """fastokens sets up each new thread it counts on (~2.6 ms): threads started per shard cost small files that."""
    shards = []
    for k, records in enumerate(corpus_records):
        (shard,) = open_corpus(str(write_slimpajama(tmp_path / f"{k}.jsonl", records))).shards
        shards.append(shard)
    counter, option = _Recording(), ShardOptions(batch_size=2, keep_log=True)
    for shard in shards * 3:
        assert shard_outcome(count_shard(shard, counter, option, threads=2)) == shard_outcome(
            count_shard(shard, _Recording(), option)
        )
    assert len(counter.threads) == 2 and len(shards) * 3 >= 6


def test_a_capped_shard_leaves_no_batch_running_when_it_returns(tmp_path, corpus_records):
    path = write_slimpajama(tmp_path / "all.jsonl", [r for shard in corpus_records for r in shard])
    (shard,) = open_corpus(str(path)).shards
    counter = _Recording(pause=0.05)
    part = count_shard(shard, counter, ShardOptions(batch_size=1, keep_log=True, max_docs=3), threads=3)
    assert counter.running == 0 and part.documents_read == 3


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning")  # on purpose
def test_the_reader_hands_over_two_batches_beyond_the_threads_then_waits_for_the_oldest(tmp_path):
    """While the first batch's count is held, the reader hands over threads + QUEUED_BATCHES = 4 batches in all (the
    other three are counted at once) and no fifth: what a shard holds in memory stays bounded."""
    import json
    import threading
    import time

    import numpy as np

    from freqlab.scan.work import QUEUED_BATCHES

    class HoldingTheFirst:
        name = "holding"

        def __init__(self) -> None:
            self.calls, self.lock, self.seen = 0, threading.Lock(), []

        def count(self, texts):
            with self.lock:
                self.calls += 1
            if texts == ["w "]:  # the first batch, by its text: the threads may start batch 2 before it
                deadline = time.monotonic() + 10
                while self.calls < 2 + QUEUED_BATCHES and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(0.3)  # a fifth batch, were it handed over, would be counted meanwhile
                self.seen.append(self.calls)
            return np.array([len(text.split()) for text in texts], np.int64)

    path = tmp_path / "all.jsonl"  # eight one-text batches: an empty document ends each run of texts
    path.write_text("".join(json.dumps({"text": "w " * k}) + '\n{"text": ""}\n' for k in range(1, 9)))
    (shard,) = open_corpus(str(path)).shards
    option = ShardOptions(batch_size=1, keep_log=True)
    counter = HoldingTheFirst()
    assert 2 + QUEUED_BATCHES == 4
    assert shard_outcome(count_shard(shard, counter, option, threads=2)) == shard_outcome(
        count_shard(shard, _Recording(), option)
    )
    assert counter.seen == [4]


def test_batches_queued_when_the_cap_is_reached_are_cancelled_not_counted(tmp_path):
    """Capped at the first document: the first batch's count returns after the reader has queued three more; the
    threads then take batches 2 and 3 (held), and batch 4, still queued, is cancelled: at most 3 calls, never 4."""
    import json
    import threading
    import time

    import numpy as np

    class Slow:
        name = "slow"

        def __init__(self) -> None:
            self.calls, self.lock = 0, threading.Lock()

        def count(self, texts):
            with self.lock:
                self.calls += 1
            # the first batch (by its text: the threads may start batch 2 first) returns soon, later ones are held
            time.sleep(0.3 if texts == ["w "] else 1.0)
            return np.array([len(text.split()) for text in texts], np.int64)

    path = tmp_path / "all.jsonl"  # one-text batches: an empty document ends each run of texts
    path.write_text("".join(json.dumps({"text": "w " * k}) + '\n{"text": ""}\n' for k in range(1, 9)))
    (shard,) = open_corpus(str(path)).shards
    counter = Slow()
    part = count_shard(shard, counter, ShardOptions(batch_size=1, keep_log=True, max_docs=1), threads=2)
    assert (part.documents_read, part.tokens) == (1, 1)
    assert counter.calls <= 3


def test_a_forked_child_starts_its_own_tokenizing_threads(tmp_path, corpus_records):
    """A child forked after a scan has none of its parent's threads: it must not queue batches for them."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    path = write_slimpajama(tmp_path / "all.jsonl", corpus_records[0])
    (shard,) = open_corpus(str(path)).shards
    option = ShardOptions(batch_size=2, keep_log=True)
    expected = shard_outcome(count_shard(shard, _Recording(), option, threads=2))  # the parent's threads started
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply_async(_outcome_on_threads, (shard, option)).get(timeout=60)
    assert got == expected


def _outcome_on_threads(shard, option) -> tuple:
    return shard_outcome(count_shard(shard, _Recording(), option, threads=2))


class _Building:
    """A counter that records whether its shard was being read when its engines were built."""

    name = "building"

    def __init__(self, monkeypatch, shard, fail: bool = False) -> None:
        self.fail, self.reading, self.read_before_build = fail, [], None
        read, reading = type(shard).read_runs, self.reading

        def read_runs(self):
            reading.append(True)
            yield from read(self)

        monkeypatch.setattr(type(shard), "read_runs", read_runs)

    def build_engines(self) -> None:
        self.read_before_build = bool(self.reading)
        if self.fail:
            raise MemoryError("the build ran out of memory")

    def count(self, texts):
        import numpy as np

        return np.array([len(text.split()) for text in texts], np.int64)


def test_a_shard_on_threads_builds_the_tokenizer_before_it_reads(tmp_path, monkeypatch, corpus_records):
    """Built first, side by side: a build running beside the reading left signals to Python's lock cleanup."""
    path = write_slimpajama(tmp_path / "all.jsonl", corpus_records[0])
    (shard,) = open_corpus(str(path)).shards
    option = ShardOptions(batch_size=2, keep_log=True)
    one = shard_outcome(count_shard(shard, _Building(monkeypatch, shard), option))
    counter = _Building(monkeypatch, shard)
    assert shard_outcome(count_shard(shard, counter, option, threads=2)) == one
    assert counter.read_before_build is False


def test_a_build_failing_fails_the_shard_before_it_is_read(tmp_path, monkeypatch, corpus_records):
    path = write_slimpajama(tmp_path / "all.jsonl", corpus_records[0])
    (shard,) = open_corpus(str(path)).shards
    counter = _Building(monkeypatch, shard, fail=True)
    with pytest.raises(MemoryError, match="ran out of memory"):
        count_shard(shard, counter, ShardOptions(batch_size=2), threads=2)
    assert not counter.reading


def test_a_shard_with_a_long_text_gives_its_threads_back(tmp_path, monkeypatch, corpus_records):
    """fastokens keeps each thread's buffers as large as the longest text it counted (~1 GB after a 20M-character
    one): the threads that counted such a text end with its shard; threads that counted only short texts stay."""
    from freqlab.scan import work

    (shard,) = open_corpus(str(write_slimpajama(tmp_path / "all.jsonl", corpus_records[0]))).shards
    option = ShardOptions(batch_size=2, keep_log=True)
    longest = max(len(text) for text, _ in corpus_records[0])
    monkeypatch.setattr(work, "KEEP_THREADS_BELOW", longest + 1)  # every text of the shard is short
    first, second = _Recording(), _Recording()
    count_shard(shard, first, option, threads=2)
    count_shard(shard, second, option, threads=2)
    kept = first.threads | second.threads  # the same two threads (a shard may use one of them only)
    assert len(kept) <= 2 and all(thread.is_alive() for thread in kept)
    monkeypatch.setattr(work, "KEEP_THREADS_BELOW", longest)  # the shard's longest text is long
    first, second = _Recording(), _Recording()
    count_shard(shard, first, option, threads=2)
    count_shard(shard, second, option, threads=2)
    assert first.threads and second.threads and not first.threads & second.threads
    for thread in first.threads | second.threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in first.threads | second.threads)


def test_a_shard_ended_by_an_exception_leaves_no_tokenizing_thread_behind(tmp_path, corpus_records):
    """An interrupt can land in the thread pool's own bookkeeping and leave a thread that the pool no longer knows
    of; the interpreter's exit waits for every thread, so the pool is shut down: each of its threads then ends."""

    class Interrupted(_Recording):
        def count(self, texts):
            super().count(texts)
            raise KeyboardInterrupt

    (shard,) = open_corpus(str(write_slimpajama(tmp_path / "all.jsonl", corpus_records[0]))).shards
    counter = Interrupted(pause=0.05)
    with pytest.raises(KeyboardInterrupt):
        count_shard(shard, counter, ShardOptions(batch_size=2), threads=2)
    assert counter.threads
    for thread in counter.threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in counter.threads)


def test_scans_on_three_threads_of_one_process_share_the_tokenizing_threads_while_giving_them_back(
    tmp_path, monkeypatch, corpus_records
):
    """One scan's shards give the threads back (long texts) while another's are using them: the pool is shut down
    only when the last shard using it is done, and both count exactly."""
    import threading

    from freqlab.scan import work

    (shard,) = open_corpus(str(write_slimpajama(tmp_path / "all.jsonl", corpus_records[0]))).shards
    option = ShardOptions(batch_size=2, keep_log=True)
    expected = shard_outcome(count_shard(shard, _Recording(), option))
    longest = max(len(text) for text, _ in corpus_records[0])
    errors, outcomes = [], []

    def scan_again(times: int) -> None:
        try:
            for _ in range(times):
                outcomes.append(shard_outcome(count_shard(shard, _Recording(pause=0.001), option, threads=2)))
        except Exception as exc:  # reported by the test
            errors.append(exc)

    monkeypatch.setattr(work, "KEEP_THREADS_BELOW", longest)  # every shard gives its threads back
    runners = [threading.Thread(target=scan_again, args=(20,)) for _ in range(3)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join(timeout=120)
    assert errors == [] and outcomes == [expected] * 60
    assert work._TokenizingThreads.current.get(2) is None  # given back by the last shard


def test_only_a_shard_whose_own_read_failed_is_marked_failed(counter, tmp_path):
    """A group of files (a .txt group) reports an unreadable member as one record and goes on: its other
    documents count, and the partial is not marked failed (the ledger would drop them all); a file whose stream
    fails at its end is (none of its documents then count, unless the limits end before)."""
    from dataclasses import dataclass

    from freqlab.corpus.base import UNREADABLE_FILE, Document, Shard
    from freqlab.scan.counts import unvouched
    from freqlab.scan.ledger import Ledger

    @dataclass(frozen=True)
    class Group(Shard):
        id: str

        def read(self):
            yield Document("one two", None, "a.txt")
            yield Document(None, None, "b.txt", UNREADABLE_FILE)
            yield Document("three", None, "c.txt")

    part = count_shard(Group("g"), counter, ShardOptions(on_error="skip"))
    assert not part.failed and (part.documents, part.skipped) == (2, {UNREADABLE_FILE: 1})
    import gzip

    data = bytearray(gzip.compress(b'{"text": "four five"}\n{"text": "six"}\n', compresslevel=0))
    data[-8] ^= 0xFF  # its CRC
    (tmp_path / "f.jsonl.gz").write_bytes(bytes(data))
    (shard,) = open_corpus(str(tmp_path / "f.jsonl.gz")).shards
    failed = count_shard(shard, counter, ShardOptions(on_error="skip", keep_log=True))
    assert failed.failed and failed.documents == 2
    ledger = Ledger(None, None)
    ledger.add(0, failed)
    assert (ledger.total.documents_read, ledger.total.skipped) == (1, unvouched(failed).skipped)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"batch_size": 3},
        {"sample_rate": 0.4, "seed": 2},
        {"max_docs": 37},
        {"max_tokens": 900},
        {"sample_rate": 0.5, "max_docs": 11, "seed": 5},
    ],
)
def test_blank_lines_inside_runs_count_as_line_by_line(tmp_path, counter, monkeypatch, options):
    """Blank lines between plain records ride in the run (its gaps, a review's 4x): every count a scan keeps, blank
    lines, sampled-out documents and a limit's cut included, is the one of reading the file a line at a time."""
    import json
    import random

    from freqlab.corpus.jsonl import JsonlShard

    rng = random.Random(7)
    lines = []
    for k in range(400):
        lines.append(json.dumps({"text": f"document {k} " * rng.randint(1, 6)}))
        lines.extend([""] * rng.choice([0, 0, 1, 2]) + ["  "] * (rng.random() < 0.05))
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n\n")
    (shard,) = open_corpus(str(tmp_path / "a.jsonl")).shards
    fast = count_shard(shard, counter, ShardOptions(**options))
    monkeypatch.setattr(JsonlShard, "record_runs", JsonlShard.records)  # a Document per line
    slow = count_shard(shard, counter, ShardOptions(**options))
    kept = [(p.blank_lines, p.sampled_out, p.documents_read, p.complete, p.empty, p.skipped) for p in (fast, slow)]
    assert kept[0] == kept[1] and fast.blank_lines > (100 if not options else 0)
    histograms = [p.to_histogram(by_source=False) for p in (fast, slow)]
    assert histograms[0].lengths.tolist() == histograms[1].lengths.tolist()
    assert histograms[0].counts.tolist() == histograms[1].counts.tolist()
