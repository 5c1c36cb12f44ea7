"""Every engine gives the same exact histogram: in-process, a local process pool, and Ray."""

from __future__ import annotations

import json
import re
import socket
import sys
import time
from importlib import resources

import pytest

from freqlab.errors import FreqlabError
from freqlab.resources import binary_bytes
from freqlab.scan.engines.ray import RAY_PROBE_SECONDS, check_ray_address

from .conftest import assert_same_histogram, reference_histogram, scan_slimpajama


def test_scan_equals_the_independent_count_split_by_source(slimpajama_dir, corpus_records, counter):
    result = scan_slimpajama(slimpajama_dir, workers=1)
    expected = reference_histogram([r for shard in corpus_records for r in shard], counter)
    assert_same_histogram(result.histogram, expected)
    assert sorted(result.histogram.sources) == ["RedPajamaBook", "RedPajamaGithub", "RedPajamaStackExchange"]
    assert sum(h.tokens for h in result.histogram.sources.values()) == result.histogram.tokens
    docs = result.summary["documents"]
    assert (docs["read"], docs["tokenized"], docs["empty"], docs["skipped"]) == (90, 84, 6, {})
    assert docs["read"] == docs["tokenized"] + docs["empty"] + sum(docs["skipped"].values())


def test_the_result_does_not_depend_on_workers_or_batch_size(slimpajama_dir):
    serial = scan_slimpajama(slimpajama_dir, workers=1, batch_size=1000)
    pooled = scan_slimpajama(slimpajama_dir, workers=2, batch_size=3)
    assert_same_histogram(serial.histogram, pooled.histogram)
    assert pooled.summary["scan"]["workers"] == 2
    assert serial.summary["windows"] == pooled.summary["windows"]


def test_ray_engine_equals_the_local_engine(slimpajama_dir):
    pytest.importorskip("ray")
    local = scan_slimpajama(slimpajama_dir, workers=1)
    on_ray = scan_slimpajama(slimpajama_dir, engine="ray", workers=2)  # starts (and stops) a local 2-CPU Ray instance
    assert_same_histogram(local.histogram, on_ray.histogram)
    assert on_ray.summary["scan"]["engine"] == "ray"


def test_ray_engine_without_ray_installed_says_how_to_install_it(slimpajama_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(FreqlabError, match=r"pip install 'freqlab\[ray\]'"):
        scan_slimpajama(slimpajama_dir, engine="ray")


def closed_port() -> int:
    """A local TCP port nobody listens on: bound, then closed (connecting is refused at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_ray_address_fails_in_seconds_with_one_line(slimpajama_dir):
    pytest.importorskip("ray")
    address = f"127.0.0.1:{closed_port()}"
    start = time.monotonic()
    with pytest.raises(FreqlabError) as caught:
        scan_slimpajama(slimpajama_dir, engine="ray", address=address)
    assert time.monotonic() - start < 5  # ray.init alone retries for ~25 s
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"cannot reach the Ray cluster at {address} (Connection refused); ")
    assert "ray start --head" in message and "drop --address" in message


def test_the_ray_probe_times_out_after_its_limit_and_passes_other_address_forms(monkeypatch):
    calls = []

    def silent(address, timeout):
        calls.append((address, timeout))
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    with pytest.raises(FreqlabError, match=r"at 192\.0\.2\.1:6379 \(no answer within 3 s\)"):
        check_ray_address("192.0.2.1:6379")
    assert calls == [(("192.0.2.1", 6379), RAY_PROBE_SECONDS)] and RAY_PROBE_SECONDS == 3.0
    for passed in (None, "", "auto", "local", "ray://head:10001"):
        check_ray_address(passed)  # Ray resolves these itself
    assert len(calls) == 1
    with pytest.raises(FreqlabError, match=r"Ray address 'head': expected HOST:PORT"):
        check_ray_address("head")


def test_the_probe_accepts_a_listening_port():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_ray_address(f"127.0.0.1:{server.getsockname()[1]}")  # no error


def test_fastokens_break_even_is_its_extra_build_time_over_the_time_it_saves_per_byte():
    from freqlab.scan.driver import fastokens_break_even_bytes
    from freqlab.scan.estimate import Family, ThroughputTable

    table = ThroughputTable(
        measured="-",
        machine="-",
        source="-",
        read_bytes_per_core_second=1e9,
        parallel_efficiency=1.0,
        worker_startup_core_seconds=2.0,
        families={
            "fastokens": Family(40e6, 4.0, "", 1.5),
            "tiktoken": Family(4e6, 4.0, "", 0.1),
            "hf-tokenizers": Family(0.4e6, 4.0),
        },
    )
    # (B / 4) * (1/τ_n - 1/40e6) = 1.5 - 0.1 core-seconds (each built once, in this process)
    assert fastokens_break_even_bytes("tiktoken", table) == pytest.approx(4 * 1.4 / (1 / 4e6 - 1 / 40e6))  # 24.9 MB
    # Hugging Face's build was not measured: a whole worker's start-up (2.0 s), longer than fastokens' build
    assert fastokens_break_even_bytes("hf-tokenizers", table) == 0
    assert fastokens_break_even_bytes("sentencepiece", table) is None  # not measured: fastokens kept


def test_the_small_scan_rule_leaves_fastokens_out_only_below_the_next_backends_break_even():
    from freqlab.scan.driver import fastokens_break_even_bytes, small_scan_rule

    # the shipped table (freqlab/data/throughput.json, measured by scripts/bench_cost.py), read as plain JSON: the
    # break-even (b_f - b_n) · β_n / (1/τ_n - 1/τ_f), ~9 MiB before tiktoken and ~0.6 MiB before Hugging Face
    shipped = json.loads(resources.files("freqlab").joinpath("data/throughput.json").read_text(encoding="utf-8"))
    fast = shipped["families"]["fastokens"]
    limit = {b: fastokens_break_even_bytes(b) for b in ("tiktoken", "hf-tokenizers")}
    for backend, bytes_even in limit.items():
        slow = shipped["families"][backend]
        saved = 1 / slow["tokens_per_core_second"] - 1 / fast["tokens_per_core_second"]
        expected = (fast["build_core_seconds"] - slow["build_core_seconds"]) * slow["bytes_per_token"] / saved
        assert bytes_even == pytest.approx(expected)
    assert 6 << 20 < limit["tiktoken"] < 16 << 20 and 1 << 18 < limit["hf-tokenizers"] < 1 << 20
    rule = small_scan_rule(6 << 20)  # 6 MiB: tiktoken finishes first, Hugging Face does not
    assert f"(an estimated 6.0 MiB of text < {binary_bytes(limit['tiktoken'])}: tiktoken is done" in rule("tiktoken")
    assert rule("hf-tokenizers") is None and rule("sentencepiece") is None
    expected = f"not tried for a small scan (an estimated 256 KiB of text < {binary_bytes(limit['hf-tokenizers'])}"
    assert small_scan_rule(1 << 18)("hf-tokenizers").startswith(expected)
    assert small_scan_rule(None) is None  # unknown size: fastokens is verified and kept


def engine_table(**overrides):
    from freqlab.scan.estimate import Family, ThroughputTable

    values = dict(
        measured="-",
        machine="-",
        source="-",
        read_bytes_per_core_second=1e9,
        parallel_efficiency=0.8,
        worker_startup_core_seconds=2.0,
        process_startup_core_seconds=0.5,
        families={
            "fastokens": Family(40e6, 4.0, "", 1.5),
            "tiktoken": Family(4e6, 4.0, "", 0.1),
            "sentencepiece": Family(1e6, 4.0),
        },
    )
    return ThroughputTable(**{**values, **overrides})


def test_the_engine_is_in_process_while_it_finishes_before_a_pool_would_start_and_count():
    from freqlab.scan.estimate import choose_engine

    table = engine_table()
    # tiktoken, 40 MB = 10M tokens: here 0.1 + 2.5 s; on 2 workers 0.5 + 0.1 + 2.5 / (2 * 0.8) s
    choice = choose_engine(40 * 10**6, 2, "tiktoken", table)
    assert (choice.in_process_seconds, choice.pool_seconds) == pytest.approx((2.6, 0.6 + 2.5 / 1.6))
    assert not choice.in_process
    assert choice.reason.startswith("2 workers: 38 MiB of text on tiktoken take an estimated ~2.2 s")
    # the break-even: T/τ (1 - 1/(n e)) = p (+ b when the driver has built the backend already)
    for family, built in (("tiktoken", False), ("tiktoken", True), ("fastokens", True), ("fastokens", False)):
        rate = table.families[family].tokens_per_core_second
        saved = 0.5 + (table.build_seconds(family) if built else 0.0)
        even = 4.0 * rate * saved / (1 - 1 / 1.6)  # bytes
        assert choose_engine(int(even * 0.99), 2, family, table, built).in_process
        assert not choose_engine(int(even * 1.01), 2, family, table, built).in_process
    assert even == pytest.approx(4.0 * 40e6 * 0.5 / 0.375)  # fastokens, unbuilt: 213 MB
    # a backend the driver has built already counts here up to 4 x bigger scans (fastokens: 1.5 s of build saved)
    reason = choose_engine(600 * 10**6, 2, "fastokens", table, True).reason
    assert "fastokens (already built here) take an estimated ~" in reason
    assert not choose_engine(600 * 10**6, 2, "fastokens", table).in_process
    # no choice to make: one worker, an unknown size, a family never measured
    assert choose_engine(10**6, 1, "tiktoken", table) is None
    assert choose_engine(None, 2, "tiktoken", table) is None
    assert choose_engine(10**6, 2, "hf-tokenizers", table) is None
    # a build never measured costs a whole worker's start-up
    assert choose_engine(10**6, 2, "sentencepiece", table).in_process_seconds == pytest.approx(2.0 + 0.25)


def test_files_the_first_scan_and_the_backends_threads_enter_both_engines_as_measured():
    from freqlab.scan.estimate import choose_engine

    table = engine_table(
        file_core_seconds={"plain": 0.0001, "compressed": 0.0005},
        in_process_speedup=1.2,
        scan_startup_core_seconds=0.25,
    )
    # fastokens, built here, 160 MB = 40M tokens = 1 s on one core; 1,000 plain + 200 compressed files = 0.2 s
    choice = choose_engine(160 * 10**6, 2, "fastokens", table, built=True, files={"plain": 1000, "compressed": 200})
    here = 0.25 + 0.2 + 1.0 / 1.2  # c + F·f + T/(τ·s)
    pool = 0.25 + 0.5 + 1.5 + (0.2 + 1.0) / (2 * 0.8)  # c + p + b + (F·f + T/τ)/(n·e)
    assert (choice.in_process_seconds, choice.pool_seconds) == pytest.approx((here, pool))
    assert choice.in_process and "153 MiB of text in 1,200 files on fastokens (already built here)" in choice.reason
    # the break-even, built: T/τ · (1/s - 1/(n·e)) = p + b - F·f · (1 - 1/(n·e)); files move it down
    for files in ({}, {"compressed": 4000}, {"plain": 4000, "other": 10**6}):  # a kind never measured costs nothing
        opening = 0.0005 * files.get("compressed", 0) + 0.0001 * files.get("plain", 0)
        tokens = 40e6 * (0.5 + 1.5 - opening * (1 - 1 / 1.6)) / (1 / 1.2 - 1 / 1.6)
        assert choose_engine(int(4 * tokens * 0.99), 2, "fastokens", table, True, files).in_process
        assert not choose_engine(int(4 * tokens * 1.01), 2, "fastokens", table, True, files).in_process
    assert 4 * tokens == pytest.approx(4 * 40e6 * (2 - 0.4 * 0.375) / (1 / 1.2 - 1 / 1.6))  # 1,421 MB
    # the first scan's cost is paid by both engines: it never decides
    assert choose_engine(10**9, 2, "tiktoken", table).in_process_seconds - choose_engine(
        10**9, 2, "tiktoken", engine_table(in_process_speedup=1.2)
    ).in_process_seconds == pytest.approx(0.25)


def test_the_drivers_time_per_shard_enters_both_engines_undivided_by_the_workers():
    """The driver takes each shard's result and checkpoints it one after another, however many workers count."""
    from freqlab.scan.estimate import choose_engine

    table = engine_table(shard_seconds={"here": 0.0004, "pool": 0.0005})
    few = choose_engine(40 * 10**6, 2, "tiktoken", table, shards=10)
    many = choose_engine(40 * 10**6, 2, "tiktoken", table, shards=5010)
    assert many.in_process_seconds - few.in_process_seconds == pytest.approx(5000 * 0.0004)
    assert many.pool_seconds - few.pool_seconds == pytest.approx(5000 * 0.0005)
    assert not few.in_process and many.in_process  # 10M tokens: a pool for 10 shards, here for 5,010
    older = engine_table()  # a table measured before shard_seconds: nothing charged per shard
    assert choose_engine(4 * 10**7, 2, "tiktoken", older, shards=5010) == choose_engine(4 * 10**7, 2, "tiktoken", older)


@pytest.mark.parametrize(
    ("text_bytes", "files", "shards", "in_process"),
    [
        (31_500_000, {"plain": 1790}, 7, True),  # the built-in corpus: 1,790 small .py files in 7 shards
        (4_000_000, {"plain": 2000}, 2000, True),  # 2,000 JSON-lines files of 2,000 characters, a shard each
        (18 * 10**6, {"compressed": 4}, 4, True),  # 20M characters in 4 .jsonl.zst
        (95 * 10**6, {"compressed": 10}, 10, True),  # 10^8 characters (as the driver estimates it)
        (794 * 10**6, {"compressed": 102}, 102, False),  # 10^9 characters in 102 .jsonl.zst (estimated: 4x the files)
    ],
)
def test_the_shipped_table_keeps_small_scans_here_and_sends_10_9_characters_to_the_pool(
    text_bytes, files, shards, in_process
):
    from freqlab.scan.estimate import choose_engine, load_throughput

    t = json.loads(resources.files("freqlab").joinpath("data/throughput.json").read_text(encoding="utf-8"))
    fast = t["families"]["fastokens"]
    counting = text_bytes / fast["bytes_per_token"] / fast["tokens_per_core_second"]
    opening = sum(n * t["file_core_seconds"][kind] for kind, n in files.items())
    here = t["scan_startup_core_seconds"] + opening + counting / t["in_process_speedup"]  # built by the driver
    here += shards * t["shard_seconds"]["here"]
    pool = t["scan_startup_core_seconds"] + t["process_startup_core_seconds"] + fast["build_core_seconds"]
    pool += (opening + counting) / (2 * t["parallel_efficiency"]) + shards * t["shard_seconds"]["pool"]
    choice = choose_engine(text_bytes, 2, "fastokens", load_throughput(), built=True, files=files, shards=shards)
    assert (choice.in_process_seconds, choice.pool_seconds) == pytest.approx((here, pool))
    assert choice.in_process is in_process  # what scripts/bench_cost_engine.md measured faster (whole processes)


def test_a_scan_opens_each_file_of_a_shard_of_files_and_one_per_part(tmp_path):
    import zstandard

    from freqlab.corpus import open_corpus
    from freqlab.scan.estimate import corpus_files

    builtin = open_corpus(None)
    assert corpus_files(builtin.shards) == {"plain": builtin.description["files"], "compressed": 0}
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n')
    (tmp_path / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b'{"text": "y"}\n'))
    (tmp_path / "c.txt").write_text("z")
    assert corpus_files(open_corpus(str(tmp_path)).shards) == {"plain": 2, "compressed": 1}


def test_a_small_default_scan_runs_in_this_process_and_counts_what_the_pool_counts(slimpajama_dir, monkeypatch):
    monkeypatch.setattr("freqlab.scan.driver.default_workers", lambda: 2)  # as on a 2-core machine
    chosen = scan_slimpajama(slimpajama_dir)
    pooled = scan_slimpajama(slimpajama_dir, workers=2)  # workers given: honoured
    assert_same_histogram(chosen.histogram, pooled.histogram)
    run = chosen.summary["scan"]
    assert (run["engine"], run["workers"]) == ("local", 1)
    assert re.match(r"in this process: \d+ KiB of text in 3 files on ", run["engine_reason"]), run["engine_reason"]
    assert run["engine_reason"] in chosen.report()
    assert pooled.summary["scan"]["workers"] == 2 and "engine_reason" not in pooled.summary["scan"]


def test_a_scan_of_a_corpus_too_big_for_one_process_keeps_the_pool(slimpajama_dir, pool_kept):
    run = scan_slimpajama(slimpajama_dir).summary["scan"]
    assert run["workers"] == 2 and run["engine_reason"].startswith("2 workers: 102,400 MiB of text in 3 files on ")


def test_a_ray_scan_with_nothing_left_to_count_starts_no_ray_and_reports_nothing_ran(monkeypatch):
    from freqlab.scan.engines.ray import RayEngine

    monkeypatch.setitem(sys.modules, "ray", None)  # would fail if the engine tried to start Ray
    engine = RayEngine(workers=8)
    assert list(engine.run(iter([]), job=None)) == []  # every shard came from a checkpoint
    run = engine.describe()
    assert (run["workers"], run["nodes"], run["retries"], run["cluster_cpus"]) == (0, [], 0, None)


def test_a_compressed_file_is_one_shard_decompressed_once_and_counts_like_its_plain_parts(tmp_path, monkeypatch):
    """A compressed stream is never cut (each part would decompress the prefix it skips); the same lines as a
    plain file cut into many ranges give the identical histogram on any worker count."""
    import json

    import zstandard

    from freqlab.corpus import open_corpus, ranges
    from freqlab.scan import scan

    monkeypatch.setattr(ranges, "MIN_RANGE_BYTES", 4096)  # small parts: the plain file is cut
    lines = "".join(json.dumps({"text": "word " * (k % 97) + str(k)}) + "\n" for k in range(4000)).encode()
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "a.jsonl").write_bytes(lines)
    (tmp_path / "zst").mkdir()
    (tmp_path / "zst" / "a.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines))
    assert len(open_corpus(str(tmp_path / "plain")).shards) > 4
    assert [s.id for s in open_corpus(str(tmp_path / "zst")).shards] == ["a.jsonl.zst"]
    results = [
        scan(str(tmp_path / folder), workers=workers, progress=False)
        for folder in ("plain", "zst")
        for workers in (1, 2)
    ]
    first = results[0].histogram
    assert first.documents == 4000
    for result in results[1:]:
        assert result.histogram.lengths.tolist() == first.lengths.tolist()
        assert result.histogram.counts.tolist() == first.counts.tolist()


def test_a_multi_frame_zst_is_cut_where_frames_start_and_counts_like_one_reader_on_any_worker_count(
    tmp_path, monkeypatch
):
    """Frames cut inside lines (as ``pzstd`` cuts them): the parts, counted on one worker or two, give the
    histogram of the plain file and of the single-frame stream; a bad line is the same error (file and line) or
    the same skip, and every line read is counted or skipped."""
    import json

    import zstandard

    from freqlab.corpus import open_corpus, ranges
    from freqlab.scan import scan

    monkeypatch.setattr(ranges, "MIN_RANGE_BYTES", 4096)  # small parts: the file is cut
    lines = [json.dumps({"text": "word " * (k % 97) + str(k)}).encode() for k in range(4000)]
    lines[2999] = b'{"text": broken'
    body = b"\n".join(lines) + b"\n"
    frames = b"".join(zstandard.compress(body[at : at + 5000]) for at in range(0, len(body), 5000))
    for name, data in (
        ("plain/a.jsonl", body),
        ("one/a.jsonl.zst", zstandard.compress(body)),
        ("framed/a.jsonl.zst", frames),
    ):
        (tmp_path / name).parent.mkdir()
        (tmp_path / name).write_bytes(data)
    framed = str(tmp_path / "framed")
    shards = open_corpus(framed).shards
    assert len(shards) > 4 and all(shard.frames is not None for shard in shards)
    assert len(open_corpus(str(tmp_path / "one")).shards) == 1
    first = None
    for folder in ("plain", "one", "framed"):
        for workers in (1, 2):
            result = scan(str(tmp_path / folder), workers=workers, progress=False, on_error="skip")
            first = first or result
            assert result.histogram.lengths.tolist() == first.histogram.lengths.tolist(), (folder, workers)
            assert result.histogram.counts.tolist() == first.histogram.counts.tolist(), (folder, workers)
            docs = result.summary["documents"]
            assert (docs["read"], docs["skipped"]) == (4000, {"malformed-json": 1})
            assert docs["read"] == docs["tokenized"] + docs["empty"] + sum(docs["skipped"].values())
            with pytest.raises(FreqlabError, match=r"a\.jsonl(\.zst)?:3000: malformed-json"):
                scan(str(tmp_path / folder), workers=workers, progress=False, out=str(tmp_path / "out"))


def test_the_engine_reason_names_the_parts_of_a_file_read_in_parts_as_parts(tmp_path, monkeypatch):
    """A file cut into parts is one file: the report said "in 6 files" for the six parts of one."""
    import zstandard

    from freqlab.corpus import open_corpus, ranges
    from freqlab.scan import scan

    monkeypatch.setattr("freqlab.scan.driver.default_workers", lambda: 2)
    monkeypatch.setattr(ranges, "MIN_RANGE_BYTES", 4096)
    body = b"".join(b'{"text": "word %d"}\n' % k for k in range(3000))
    (tmp_path / "a.jsonl.zst").write_bytes(
        b"".join(zstandard.compress(body[at : at + 5000]) for at in range(0, len(body), 5000))
    )
    (tmp_path / "b.jsonl").write_bytes(b"".join(body.splitlines(keepends=True)[:5]))
    parts = len(open_corpus(str(tmp_path)).shards)
    assert parts > 3
    reason = scan(str(tmp_path), progress=False).summary["scan"]["engine_reason"]
    assert re.match(rf"in this process: \d+ KiB of text in {parts} parts of 2 files on ", reason), reason


def test_a_pool_with_fewer_shards_than_cores_gives_its_workers_the_idle_cores(monkeypatch):
    import os

    from freqlab.scan.work import CountJob

    for name in ("FASTOKENS_BPE_THREADS", "RAYON_NUM_THREADS"):
        monkeypatch.setenv(name, "-")  # recorded: restored (or removed) after the test
        monkeypatch.delenv(name)
    CountJob(None, threads=3).setup()  # three calls at once on the worker's threads, each on one thread
    assert os.environ["FASTOKENS_BPE_THREADS"] == os.environ["RAYON_NUM_THREADS"] == "1"


def test_a_scan_in_this_process_leaves_the_callers_thread_settings_alone_unless_workers_are_asked(
    slimpajama_dir, tmp_path, monkeypatch
):
    import os

    names = ("FASTOKENS_BPE_THREADS", "RAYON_NUM_THREADS")
    for name in names:
        monkeypatch.setenv(name, "-")  # recorded: restored (or removed) after the test
        monkeypatch.delenv(name)
    (tmp_path / "one.jsonl").write_text((slimpajama_dir / "chunk_0.jsonl").read_text())
    scan_slimpajama(tmp_path)  # a notebook's scan(): its later tokenizers keep their own threads
    assert [os.environ.get(name) for name in names] == [None, None]
    scan_slimpajama(tmp_path, workers=2)  # a worker count asked: one thread per call, as in a pool's workers
    assert [os.environ.get(name) for name in names] == ["1", "1"]


def test_fewer_shards_than_workers_asked_says_why_the_report_shows_fewer_workers(slimpajama_dir, tmp_path, monkeypatch):
    # --workers 2 on one file printed "(local, 1 worker)" alone: the second core tokenizes while the worker reads
    from freqlab.scan import driver

    started = []
    monkeypatch.setattr(driver, "prestart", lambda *a: started.append(a))  # one shard: no pool, so no forkserver
    monkeypatch.setattr(driver, "default_workers", lambda: 2)  # two cores, as CI's machine
    (tmp_path / "one.jsonl").write_text((slimpajama_dir / "chunk_0.jsonl").read_text())
    one = scan_slimpajama(tmp_path, workers=2)
    assert started == []
    run = one.summary["scan"]
    assert (run["engine"], run["workers"]) == ("local", 1)
    assert run["engine_reason"] == ("1 shard: one worker reads it while its batches are tokenized on 2 threads")
    assert run["engine_reason"] in one.report()
    assert "engine_reason" not in scan_slimpajama(tmp_path, workers=1).summary["scan"]  # one core: nothing to say
    three = scan_slimpajama(slimpajama_dir, workers=2).summary["scan"]  # three shards, two workers: no spare core
    assert three["workers"] == 2 and "engine_reason" not in three
    # workers asked beyond the cores are no threads: a review's --workers 100000 tokenized one file on 100000
    many = scan_slimpajama(tmp_path, workers=100_000)
    assert many.summary["scan"]["engine_reason"] == run["engine_reason"]
    assert (
        many.histogram.counts.tolist() == one.histogram.counts.tolist()
        and many.histogram.tokens == one.histogram.tokens
    )


def test_the_forkserver_is_started_early_only_where_the_backend_that_counts_may_choose_the_pool(monkeypatch):
    """A forkserver started for nothing builds the tokenizer on a core the in-process scan needs: the built-in
    tokenizer's backend is known before it loads (fastokens, or tiktoken for a small scan), any other's is not."""
    pytest.importorskip("fastokens")  # without it the built-in tokenizer counts on tiktoken, which may pool
    from freqlab.scan.driver import RunOptions, ScanSettings, load_counter, pool_possible
    from freqlab.scan.estimate import choose_engine, corpus_files, load_throughput

    monkeypatch.setattr("freqlab.scan.driver.default_workers", lambda: 2)
    settings = ScanSettings()  # the built-in corpus and tokenizer: 30 MiB in 1,790 files
    corpus = settings.open_corpus()
    table, files, shards = load_throughput(), corpus_files(corpus.shards), len(corpus.shards)
    for family, here in (("fastokens", True), ("tiktoken", False)):  # the shipped table: fastokens counts it here
        assert choose_engine(corpus.estimated_bytes, 2, family, table, files=files, shards=shards).in_process is here
    assert not pool_possible(RunOptions(), corpus, settings)
    assert pool_possible(RunOptions(), corpus, ScanSettings(tokenizer="tokenizer.json"))  # tiktoken may count it
    assert pool_possible(RunOptions(), corpus)  # nothing known of the tokenizer
    assert pool_possible(RunOptions(workers=2), corpus, settings)  # workers asked for: a pool
    loaded = load_counter(None, False)  # a counter already loaded: its own backend decides
    assert loaded.backend == "fastokens" and not pool_possible(RunOptions(), corpus, ScanSettings(tokenizer=loaded))
    assert pool_possible(RunOptions(), corpus, ScanSettings(max_docs=10**6, tokenizer="tokenizer.json"))
    assert not pool_possible(RunOptions(), corpus, ScanSettings(max_docs=3, tokenizer="tokenizer.json"))  # ~50 KB


WORKER_STATE = """
import gc
from concurrent.futures import ProcessPoolExecutor
import freqlab.scan.engines.preload  # as a test or a docs build may: the collector stays on here
from freqlab.scan.engines import local
local.start_forkserver()
with ProcessPoolExecutor(1, mp_context=local._context()) as pool:
    frozen, enabled = (pool.submit(call).result() for call in (gc.get_freeze_count, gc.isenabled))
print(frozen > 10_000, enabled, gc.isenabled(), gc.get_freeze_count())
"""


def test_the_pools_workers_inherit_the_forkservers_objects_frozen_and_collect_their_own():
    """What the forkserver loaded is frozen before each fork (gc.freeze's advice for a fork without exec), and the
    collector is on again in the worker; a process that merely imports the preloaded module keeps its collector."""
    import subprocess

    result = subprocess.run(
        [sys.executable, "-c", WORKER_STATE], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.split() == ["True", "True", "True", "0"]


def test_several_workers_take_the_largest_shards_first_and_a_limited_scan_takes_them_in_order(
    slimpajama_dir, monkeypatch, pool_kept
):
    """Largest first, so that no worker idles long at the end (results do not depend on the order); with limits,
    the first documents are taken: shards go in corpus order."""
    from freqlab.scan.engines.local import LocalEngine

    run, seen = LocalEngine.run, []

    def recording(self, tasks, job, progress=None):
        def recorded():
            for task in tasks:
                seen.append(task.shard.id)
                yield task

        return run(self, recorded(), job, progress)

    monkeypatch.setattr(LocalEngine, "run", recording)
    sizes = {path.name: path.stat().st_size for path in slimpajama_dir.iterdir()}
    assert len(set(sizes.values())) == 3
    whole = scan_slimpajama(slimpajama_dir)
    assert seen == sorted(sizes, key=sizes.get, reverse=True) != sorted(sizes)
    seen.clear()
    assert_same_histogram(whole.histogram, scan_slimpajama(slimpajama_dir, workers=1).histogram)
    assert seen == []  # one worker: in this process, in corpus order
    scan_slimpajama(slimpajama_dir, max_docs=80)
    assert seen == sorted(sizes)


def test_a_forkserver_gone_before_the_workers_start_is_one_error_with_the_resume_hint(monkeypatch):
    """The forkserver killed while it builds the tokenizer, before it forked a worker (the out-of-memory killer's
    likeliest target): the pool's first fork met a broken pipe, which the command line took for its reader gone
    (`| head`) and exited 141 with nothing said (engines review). The pipe to the forkserver breaks as it would."""
    from multiprocessing import forkserver

    import freqlab.scan.engines.local as local
    from freqlab.scan.engines.base import Task
    from freqlab.scan.work import ShardOptions

    def broken(fds):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(forkserver, "connect_to_new_process", broken)
    with pytest.raises(FreqlabError) as caught:
        list(local.LocalEngine(2).run(iter([Task(0, "shard", ShardOptions())]), job=None))
    assert str(caught.value) == (
        "the worker pool's forkserver process died (killed, or out of memory) before it started the workers "
        "(BrokenPipeError); finished shards are checkpointed: run again with --resume"
    )


def test_a_connection_error_of_a_shards_own_read_is_that_error(monkeypatch):
    """A shard whose read raises ConnectionResetError (a reader of the user's, over a network) was reported as the
    forkserver's death on a pool, while one worker said what it was (adversary review): only starting a worker is."""
    from concurrent.futures import Future

    import freqlab.scan.engines.local as local
    from freqlab.scan.engines.base import Task
    from freqlab.scan.work import ShardOptions

    def failed(self, fn, *args, **kwargs):
        future = Future()
        future.set_exception(ConnectionResetError(104, "Connection reset by peer"))
        return future

    monkeypatch.setattr(local.ProcessPoolExecutor, "submit", failed)
    with pytest.raises(ConnectionResetError):
        list(local.LocalEngine(2).run(iter([Task(0, "shard", ShardOptions())]), job=None))
