#!/usr/bin/env python
"""One big ``.jsonl.zst`` on one worker and on two: where the counting phase goes, and what a second worker buys,
for a file of one zstd frame and for the same text in several frames (not a test; results in
``scripts/bench_bigfile.md``).

    python scripts/bench_bigfile.py make /tmp/big --corpus ../bench_corpus --chars 245e6
    python scripts/bench_bigfile.py phases /tmp/big/single.jsonl.zst --tokenizer llama3.tokenizer.json
    python scripts/bench_bigfile.py count /tmp/big/frames.jsonl.zst --tokenizer llama3.tokenizer.json --workers 2
    python scripts/bench_bigfile.py compare /tmp/big --tokenizer llama3.tokenizer.json --repeat 3

``make`` writes ``single.jsonl.zst`` (one frame, as ``zstd`` writes a file) and ``frames.jsonl.zst`` (the same bytes
in frames of ``--frame-bytes`` of content cut anywhere, even inside a line, as ``pzstd`` writes them) from the
documents of a corpus folder of ``.jsonl.zst`` parts (``scripts/bench_corpus.py`` makes one: varied real text, never
repeated), taking the parts of each kind in turn until ``--chars`` characters.

``phases``: one process, one core: bare decompression, decompression + parsing (the scan's reader), and the tokenizer
alone on the texts read (batches of 256, as a scan calls it); each a rate in characters per second.

``count``: the counting phase alone (what follows the start-up): the tokenizer is loaded and built first, then every
shard of the file is counted as a scan counts it (:func:`freqlab.scan.work.count_shard`): ``--workers 1`` in this
process on one core; ``--workers 2``: a file of one shard in this process, read on one thread and tokenized on two
(``CountJob(threads=2)``, what ``freqlab scan --workers 2`` does), a file of several shards on a pool
of two processes, each built before the clock starts (what ``--workers 2`` does). Prints one JSON line: wall and CPU
seconds, tokens, documents and the histogram's checksum (which must agree across worker counts and files).

``compare``: ``count`` for both files and both worker counts, A/B alternated ``--repeat`` times in fresh processes,
medians and the 1-worker / 2-worker ratio pair by pair, with the 1-minute load average of each run (the machine is
shared), as a Markdown table.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

KINDS_ORDER = ("code", "docs", "legal", "mail", "multilingual", "prose")


def make(out: Path, corpus: Path, chars: float, frame_bytes: int) -> None:
    """Write ``single.jsonl.zst`` and ``frames.jsonl.zst`` (see the module)."""
    import orjson
    import zstandard

    by_kind: dict[str, list[Path]] = {}
    for path in sorted(corpus.glob("*.jsonl.zst")):
        by_kind.setdefault(path.name.split("-")[0], []).append(path)
    order = [p for group in itertools.zip_longest(*by_kind.values()) for p in group if p is not None]
    body = bytearray()
    total = documents = 0
    for path in order:
        with open(path, "rb") as handle:
            data = zstandard.ZstdDecompressor().stream_reader(handle).read()
        for line in data.splitlines():
            total += len(orjson.loads(line)["text"])
            documents += 1
            body += line + b"\n"
            if total >= chars:
                break
        if total >= chars:
            break
    out.mkdir(parents=True, exist_ok=True)
    (out / "single.jsonl.zst").write_bytes(zstandard.ZstdCompressor(level=3).compress(bytes(body)))
    compressor = zstandard.ZstdCompressor(level=3)
    with open(out / "frames.jsonl.zst", "wb") as handle:
        for at in range(0, len(body), frame_bytes):
            handle.write(compressor.compress(bytes(body[at : at + frame_bytes])))
    print(f"{out}: {documents:,} documents, {total / 1e6:.1f}M characters, {len(body) / 1e6:.1f} MB", file=sys.stderr)


def _timed(function):
    wall, cpu = time.monotonic(), time.process_time()
    value = function()
    return value, time.monotonic() - wall, time.process_time() - cpu


def phases(path: str, tokenizer: str) -> None:
    """Bare decompression, decompression + parsing, tokenizing alone: rates on one core."""
    os.environ["FASTOKENS_BPE_THREADS"] = "1"
    from freqlab.corpus import open_corpus
    from freqlab.corpus.jsonl import open_binary
    from freqlab.tokenization import load_tokenizer

    def decompress() -> int:
        size = 0
        with open_binary(path) as stream:
            while block := stream.read(1 << 20):
                size += len(block)
        return size

    def parse() -> list[str]:
        texts: list[str] = []
        for shard in open_corpus(path).shards:
            for run in shard.read_runs():
                texts.extend(run if isinstance(run, list) else [run.text] if run.text else [])
        return texts

    size, wall, cpu = _timed(decompress)
    texts, parse_wall, parse_cpu = _timed(parse)
    chars = sum(map(len, texts))
    counter = load_tokenizer(tokenizer)
    counter.count(["build the backend before the clock starts"])
    tokens, count_wall, count_cpu = _timed(
        lambda: sum(int(counter.count(texts[k : k + 256]).sum()) for k in range(0, len(texts), 256))
    )
    print(f"{path}: {len(texts):,} documents, {chars / 1e6:.1f}M characters, {size / 1e6:.1f} MB, {tokens:,} tokens")
    for what, seconds, busy in (
        ("decompress", wall, cpu),
        ("decompress + parse (the scan's reader)", parse_wall, parse_cpu),
        (f"tokenize ({counter.backend}, batches of 256)", count_wall, count_cpu),
    ):
        print(f"| {what} | {seconds:.2f} | {busy:.2f} | {chars / seconds / 1e6:.0f}M |")


_COUNTER = None


def _worker_init(tokenizer: str) -> None:
    global _COUNTER
    from freqlab.tokenization import load_tokenizer, single_threaded

    single_threaded(1)
    _COUNTER = load_tokenizer(tokenizer)
    _COUNTER.build_engines()  # the backend and the reference before the clock starts


def _worker_count(shard):
    from freqlab.scan.work import ShardOptions, count_shard

    cpu = time.process_time()
    return count_shard(shard, _COUNTER, ShardOptions()), time.process_time() - cpu, os.getpid()


def count(path: str, tokenizer: str, workers: int, ranges: int = 0) -> dict:
    """The counting phase of one file on ``workers`` (see the module); one JSON-able record. ``ranges``: a file of
    one shard cut into that many byte ranges of its (estimated) decompressed content instead, each skipping its
    prefix by decompressing it (:func:`freqlab.corpus.ranges.split_bytes`).
    """
    from dataclasses import replace

    from freqlab.corpus import open_corpus
    from freqlab.corpus.jsonl import COMPRESSION_RATIO_GUESS
    from freqlab.corpus.ranges import split_bytes
    from freqlab.scan.counts import ShardCount
    from freqlab.scan.work import CountJob, ShardOptions

    shards = open_corpus(path).shards
    if ranges > 1 and len(shards) == 1:
        (whole,) = shards
        cuts = split_bytes(whole.file.size * COMPRESSION_RATIO_GUESS, 1, ranges)
        shards = [replace(whole, id=f"{whole.id}@{a}-{b}", start=a, end=b) for a, b in cuts]
    if workers == 1 or len(shards) == 1:
        from freqlab.tokenization import load_tokenizer

        job = CountJob(load_tokenizer(tokenizer), threads=workers)
        job.setup()
        job.counter.build_engines()  # the backend and the reference before the clock starts
        parts, wall, cpu = _timed(lambda: [job(shard, ShardOptions()) for shard in shards])
        busiest = cpu
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("forkserver")
        with ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init, initargs=(tokenizer,)) as pool:
            list(pool.map(time.sleep, [0.5] * workers))  # every worker started and built
            done, wall, cpu = _timed(lambda: list(pool.map(_worker_count, shards)))
        parts, cpu = [part for part, *_ in done], cpu + sum(busy for _, busy, _ in done)
        per_worker: dict[int, float] = {}
        for _, busy, pid in done:
            per_worker[pid] = per_worker.get(pid, 0.0) + busy
        busiest = max(per_worker.values())
    total = ShardCount()
    for part in parts:
        assert part.error is None, part.error
        total.merge(part)
    histogram = total.to_histogram(by_source=False)
    digest = hashlib.sha256(histogram.lengths.tobytes() + histogram.counts.tobytes()).hexdigest()[:16]
    return {
        "file": Path(path).name,
        "shards": len(shards),
        "ranges": ranges,
        "workers": workers,
        "wall": round(wall, 3),
        "cpu": round(cpu, 3),
        "busiest": round(busiest, 3),  # CPU seconds of the busiest worker: the wall time on idle cores
        "tokens": int(histogram.tokens),
        "documents": int(histogram.documents_read),
        "histogram": digest,
        "load": round(os.getloadavg()[0], 2),
    }


CONFIGS = (  # (file, workers, ranges): what `compare` runs; ratios are against the same file on 1 worker
    ("single.jsonl.zst", 1, 0),
    ("single.jsonl.zst", 2, 0),
    ("single.jsonl.zst", 2, 2),
    ("frames.jsonl.zst", 1, 0),
    ("frames.jsonl.zst", 2, 0),
)


def compare(folder: Path, tokenizer: str, repeat: int) -> None:
    """Every configuration in fresh processes, alternated, ``repeat`` times; a Markdown table of medians."""
    runs: dict[tuple[str, int, int], list[dict]] = {}
    for _ in range(repeat):
        for name, workers, ranges in CONFIGS:
            command = [sys.executable, __file__, "count", str(folder / name), "--tokenizer", tokenizer]
            command += ["--workers", str(workers), "--ranges", str(ranges)]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            runs.setdefault((name, workers, ranges), []).append(json.loads(output.splitlines()[-1]))
    digests = {run["histogram"] for group in runs.values() for run in group}
    print(f"histograms identical across files and worker counts: {len(digests) == 1} ({', '.join(digests)})")
    print(
        "| file | shards | workers | wall median (min-max) s | CPU s | busiest worker CPU s | 1 worker / this: wall "
        "(pair by pair) | 1 worker CPU / busiest worker CPU | load |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (name, workers, ranges), group in runs.items():
        walls = [run["wall"] for run in group]
        ratio = critical = ""
        if workers > 1:
            pairs = [one["wall"] / this["wall"] for one, this in zip(runs[(name, 1, 0)], group)]
            ratio = f"**{statistics.median(pairs):.2f}x** ({min(pairs):.2f}-{max(pairs):.2f})"
            if group[0]["shards"] > 1:  # a pool: each worker's CPU is its own process's
                cpus = [one["cpu"] / this["busiest"] for one, this in zip(runs[(name, 1, 0)], group)]
                critical = f"{statistics.median(cpus):.2f}x"
        loads = [run["load"] for run in group]
        print(
            f"| {name} | {group[0]['shards']}{' ranges' if ranges else ''} | {workers} | "
            f"{statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f}) | "
            f"{statistics.median(run['cpu'] for run in group):.2f} | "
            f"{statistics.median(run['busiest'] for run in group):.2f} | {ratio} | {critical} | "
            f"{min(loads):.1f}-{max(loads):.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    made = commands.add_parser("make", help="write single.jsonl.zst and frames.jsonl.zst")
    made.add_argument("out", type=Path)
    made.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parents[2] / "bench_corpus")
    made.add_argument("--chars", type=float, default=245e6)
    made.add_argument("--frame-bytes", type=int, default=4 << 20, help="content bytes per frame (default 4 MiB)")
    for name in ("phases", "count", "compare"):
        sub = commands.add_parser(name)
        sub.add_argument("path")
        sub.add_argument("--tokenizer", required=True)
        if name == "count":
            sub.add_argument("--workers", type=int, default=1)
            sub.add_argument("--ranges", type=int, default=0, help="cut a one-shard file into this many ranges")
        if name == "compare":
            sub.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from bench_scan import compile_freqlab  # the scripts' folder is on sys.path

    compile_freqlab()
    if args.command == "make":
        make(args.out, args.corpus, args.chars, args.frame_bytes)
    elif args.command == "phases":
        phases(args.path, args.tokenizer)
    elif args.command == "count":
        print(json.dumps(count(args.path, args.tokenizer, args.workers, args.ranges)))
    else:
        compare(Path(args.path), args.tokenizer, args.repeat)


if __name__ == "__main__":
    main()
