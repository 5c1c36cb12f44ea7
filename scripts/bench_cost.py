#!/usr/bin/env python
"""Measure the throughput table of the cost model (``freqlab/data/throughput.json``, read by
``freqlab scan --estimate``, see :mod:`freqlab.scan.estimate`). Not a test.

On bench_scan's varied text (``--kinds``: prose from ``../shared/corpora`` or ``--prose``, code, docs, mail,
multilingual; each kind written once, never repeated, about ``--chars`` characters in all), in this process, warm
(tokenizer loaded and a first scan run), in CPU seconds (robust to other jobs on the machine), best of
``--repeats``:

- per tokenizer family (a counter's ``backend``): tokens per core-second of ``scan()`` with one worker (in
  this process: one core, end to end) and UTF-8 text bytes per token. Measured: the built-in Tekken
  (``tiktoken``) and Tekken's ``tokenizer.json`` with an NFKC normalizer, which has no tiktoken fast path
  (``hf-tokenizers``); ``--tokenizer`` adds others (a new backend becomes a new family);
- reading alone: bytes per core-second of a scan that samples almost nothing (every line read and parsed);
- parallel efficiency: CPU seconds of the default tokenizer's scan on one core / those on all cores (driver
  and workers: what running in parallel adds), once the workers' start-up (their tokenizer build, measured
  apart on a scan of one document per worker) is taken out: a full-corpus scan pays it once per worker.

Writes the table (``--table``) and a Markdown summary next to this script. Re-run it when a tokenizer backend
changes (e.g. a new fast tier), then update the README's cost table (``freqlab scan --estimate``).

    python scripts/bench_cost.py --chars 20e6
    python scripts/bench_cost.py --corpus /work/bench_corpus --chars 1e8   # on scripts/bench_corpus.py's varied corpus
    python scripts/bench_cost.py --short        # a smoke run: 2M characters, one repeat
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_scan import SHARED, corpus_slice, prepare_kind, read_texts, write_tokenizer_json

TABLE = Path(__file__).resolve().parent.parent / "freqlab" / "data" / "throughput.json"


def cpu_seconds(run) -> tuple[float, float, object]:
    """CPU seconds (user + system) that ``run()`` costs this process and every process it starts (sampled every
    20 ms, so a worker's last 20 ms may be missed), its wall time, and its result. CPU time, unlike wall time,
    does not grow when other jobs share the machine: it is what a core-hour pays for."""
    import psutil

    me = psutil.Process()

    def children() -> dict[int, float]:
        times = {}
        for child in me.children(recursive=True):
            try:
                cpu = child.cpu_times()
                times[child.pid] = cpu.user + cpu.system
            except psutil.Error:  # ended meanwhile
                pass
        return times

    before, seen, done = children(), {}, threading.Event()  # a forkserver may be running from an earlier scan

    def sample() -> None:
        while not done.is_set():
            seen.update(children())
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    start, own = time.perf_counter(), time.process_time()
    sampler.start()
    result = run()
    own, wall = time.process_time() - own, time.perf_counter() - start
    done.set()
    sampler.join()
    seen.update(children())
    return own + sum(cpu - before.get(pid, 0.0) for pid, cpu in seen.items()), wall, result


def best(repeats: int, run) -> tuple[float, float, object]:
    """The run of ``repeats`` with the fewest CPU seconds: (CPU seconds, wall seconds, result)."""
    return min((cpu_seconds(run) for _ in range(repeats)), key=lambda measured: measured[0])


def build_seconds(spec, family: str, repeats: int) -> float:
    """CPU seconds to build ``family``'s backend of the tokenizer ``spec`` in a process (the least of ``repeats``)."""
    from freqlab.tokenization import load_tokenizer
    from freqlab.tokenization.backends import ENGINES

    counter = load_tokenizer(spec) if isinstance(spec, str) else spec
    source = counter.source(family)
    times = []
    for _ in range(repeats):
        start = time.process_time()
        ENGINES[family](source)
        times.append(time.process_time() - start)
    return min(times)


def scan_once(data, tokenizer, workers: int, **options):
    from freqlab.scan import scan

    return scan(
        str(data), tokenizer=tokenizer, workers=workers, progress=False, L=[2048], regimes=["natural"], **options
    )


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def hf_only_tokenizer(path: Path) -> Path:
    """Tekken's tokenizer.json with an NFKC normalizer: the Hugging Face backend (no tiktoken fast path)."""
    write_tokenizer_json(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["normalizer"] = {"type": "NFKC"}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def slimpajama_table(path: Path, tokens: int = 627 * 10**9, node_cores: int = 32) -> list[str]:
    """What ``freqlab scan --estimate --corpus-tokens 627B`` says per family and sample rate, as Markdown rows."""
    from freqlab.scan.estimate import estimate_cost, human_hours, load_throughput

    table = load_throughput(path)
    rows = [
        f"| tokenizer family | scan | core-hours | one node of {node_cores} cores | nodes of {node_cores} cores "
        "for ≤ 1 h |",
        "|---|---|---:|---:|---:|",
    ]
    for family in table.families:
        for rate in (None, 0.01, 0.001):
            cost = estimate_cost(table, family, tokens=tokens, sample_rate=rate, node_cores=node_cores)
            scan = "full" if rate is None else f"--sample-rate {rate:g}"
            rows.append(
                f"| {family} | {scan} | {cost.core_hours:,.1f} | {human_hours(cost.wall_hours_one_node)} "
                f"| {cost.nodes} ({human_hours(cost.wall_hours)}) |"
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=float, default=20e6, help="Approximate corpus size in characters.")
    parser.add_argument("--prose", default=SHARED, help="Glob of the prose .jsonl.zst files (field 'text').")
    parser.add_argument("--kinds", default="prose,code,docs,mail,multilingual", help="Kinds of text (bench_scan).")
    parser.add_argument(
        "--corpus",
        default=None,
        help="Measure on the varied corpus of scripts/bench_corpus.py instead (every kind, cut alike "
        "to about --chars characters).",
    )
    parser.add_argument("--short", action="store_true", help="A smoke run: 2M characters, one repeat.")
    parser.add_argument("--tokenizer", action="append", default=[], help="Another tokenizer to measure.")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--table", default=str(TABLE))
    parser.add_argument("--out", default=str(Path(__file__).with_name("bench_cost.md")))
    args = parser.parse_args()
    if args.short:
        args.chars, args.repeats = min(args.chars, 2e6), 1

    with tempfile.TemporaryDirectory(prefix="freqlab-cost-") as work:
        measure(args, Path(work))


def measure(args, work: Path) -> None:
    """Build the corpus in ``work``, measure, write the table and the Markdown summary."""
    load = os.getloadavg()[0]  # the machine may be shared: the table records how busy it was
    if args.corpus:
        manifest = json.loads(Path(args.corpus, "manifest.json").read_text(encoding="utf-8"))
        folder, info = corpus_slice(Path(args.corpus), args.chars / manifest["characters"], work)
    else:
        folder = work / "corpus"
        kinds = args.kinds.split(",")
        parts = [
            prepare_kind(folder, kind, args.chars / len(kinds), 4, sorted(glob.glob(args.prose))) for kind in kinds
        ]
        info = {
            "origin": ", ".join(f"{p['kind']} ({p['characters'] / 1e6:.1f}M chars)" for p in parts),
            "copies": 1,
            "documents": sum(p["documents"] for p in parts),
            "characters": sum(p["characters"] for p in parts),
            "files": 4 * len(kinds),
        }
    text_bytes = sum(len(text.encode("utf-8")) for text in read_texts(sorted(map(str, folder.glob("*.zst")))))
    from freqlab.tokenization import load_tokenizer

    hf_only = str(hf_only_tokenizer(work / "tekken-nfkc.tokenizer.json"))
    # the built-in Tekken on each of its exact backends (loaded here: a scan of a small corpus would skip fastokens)
    labels = [
        (load_tokenizer(), "tekken (built-in)"),
        (load_tokenizer(skip_backends={"fastokens": "measured apart"}), "tekken (built-in), tiktoken only"),
        (hf_only, "tekken tokenizer.json + NFKC normalizer"),
        *((spec, spec) for spec in args.tokenizer),
    ]

    families, rows = {}, []
    for spec, label in labels:
        scan_once(folder, spec, 1, max_docs=10)  # warm: tokenizer load and verification
        seconds, wall, result = best(args.repeats, lambda spec=spec: scan_once(folder, spec, 1))
        tokens, family = result.histogram.tokens, result.summary["tokenizer"]["backend"]
        families.setdefault(
            family,
            {
                "tokens_per_core_second": round(tokens / seconds),
                "bytes_per_token": round(text_bytes / tokens, 3),
                "example": label,
                "build_core_seconds": round(build_seconds(spec, family, args.repeats), 2),
            },
        )
        rows.append((family, label, tokens, seconds, wall))
        print(f"{family}: {tokens / seconds / 1e6:.2f}M tokens per core-second", file=sys.stderr, flush=True)
    read_seconds, _, _ = best(args.repeats, lambda: scan_once(folder, labels[1][0], 1, sample_rate=1e-9))
    # Parallel efficiency: the CPU seconds of one core's scan over those of a scan on all cores (the driver and
    # its workers: start-up, pickling, merging), both warm (the forkserver and the tokenizer already loaded).
    all_seconds, all_wall, _ = best(args.repeats, lambda: scan_once(folder, labels[0][0], args.workers))
    startup, _, _ = best(args.repeats, lambda: scan_once(folder, labels[0][0], args.workers, max_docs=args.workers))
    efficiency = min(rows[0][3] / max(all_seconds - startup, 1e-9), 1.0)
    load = max(load, os.getloadavg()[0])
    table = {
        "measured": datetime.date.today().isoformat(),
        "machine": f"{os.cpu_count()} cores ({cpu_model()}), {platform.system()}, Python {platform.python_version()}, "
        f"load average {load:.1f}",
        "source": f"scripts/bench_cost.py: {info['documents']:,} documents, {text_bytes / 1e6:.0f} MB of text "
        f"({info['origin']}, x{info['copies']}) in .jsonl.zst",
        "read_bytes_per_core_second": round(text_bytes / read_seconds),
        "parallel_efficiency": round(efficiency, 3),
        "worker_startup_core_seconds": round(startup / args.workers, 2),
        # a worker's start-up without building its backend (fastokens, in the pool measured above)
        "process_startup_core_seconds": round(
            max(startup / args.workers - families["fastokens"]["build_core_seconds"], 0.0), 2
        ),
        "families": families,
    }
    Path(args.table).write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    lines = [
        "# freqlab scan cost model: measured throughput",
        "",
        f"{table['measured']}, {table['machine']}; {table['source']}. Written to `freqlab/data/throughput.json`.",
        "",
        "| family | tokenizer | tokens | CPU (s) | wall (s) | tokens per core-second | bytes per token |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for family, name, tokens, seconds, wall in rows:
        lines.append(
            f"| {family} | {name} | {tokens:,} | {seconds:.2f} | {wall:.2f} | {tokens / seconds / 1e6:.2f}M "
            f"| {text_bytes / tokens:.2f} |"
        )
    lines += [
        "",
        f"Reading and parsing alone (sample rate 1e-9): {read_seconds:.2f} s, "
        f"{text_bytes / read_seconds / 1e6:.0f} MB of text per core-second. All {args.workers} cores (local "
        f"engine, warm): {all_seconds:.2f} CPU seconds in {all_wall:.2f} s, of which {startup:.2f} start the "
        f"workers (their tokenizer); parallel efficiency without it {efficiency:.2f}. Load average up to "
        f"{load:.1f} (CPU seconds do not depend on it; wall times do).",
    ]
    lines += ["", "## SlimPajama-627B (the README's table)", "", *slimpajama_table(Path(args.table))]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
