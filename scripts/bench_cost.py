#!/usr/bin/env python
"""Measure the throughput table of the cost model (``freqlab/data/throughput.json``, read by
``freqlab scan --estimate`` and by the engine rule, see :mod:`freqlab.scan.estimate`). Not a test.

Every figure is a **first pass**: each measurement runs in a fresh process (a new counter, fastokens' piece cache
empty) on text that process has never seen. The text is varied and never repeated: disjoint slices of
``scripts/bench_corpus.py``'s corpus (``--corpus``; each slice cut alike across kinds, about ``--chars``
characters), or, without ``--corpus``, bench_scan's kinds (prose, code, docs, mail, multilingual) written once
and split into disjoint groups. Per repeat r (``--repeats``) and tokenizer family (a counter's ``backend``), one
process scans, on one core (``FASTOKENS_BPE_THREADS=1``), in CPU seconds (robust to other jobs):

- slice A_r: a **first pass** (fresh counter, unseen text): the table's tokens per core-second τ (the engine
  rule's, for scans of a few GB at most);
- slice B_r: the **steady state** of a long scan (the counter warmed on A_r, B_r unseen): ``--estimate``'s τ for
  a whole corpus, where each worker's counter meets unseen text for hours;
- slice B_r again: a **repeated** text (the piece cache has seen every piece): what the old table measured, and
  why it overstated fastokens (reported, not used).

Also, each in a fresh process on unseen slices: reading alone (a scan that samples almost nothing), the
workers' start-up and the parallel efficiency of a pool on all cores, the speed-up of the default in-process
scan (fastokens' own threads and reading overlapped with tokenizing) over one core, and the **per-file cost**:
the built-in corpus's texts (1,790 standard-library files) scanned as those files, as that many ``.txt`` and
``.jsonl.zst`` files, and as one ``.jsonl.zst``, alternated; (CPU many − CPU one) / files. What a process's first
scan costs (imports, the readers' set-up) is measured apart, on one document, before the timed passes. What the
driver spends per shard (a task and its result, the checkpoint) is measured on 200 and 2,000 one-line files in each
engine (``shard_seconds``: the wall-time difference per shard). The
Hugging Face passes read every ``--hf-every``-th document of each slice (that backend is ~70x slower).
Re-run it when a tokenizer backend changes, then update the README's cost table (``freqlab scan --estimate``).

``--engine-check`` instead times both engines (in this process vs the pool, each forced through the default
path, fresh processes alternated) on the built-in corpus, 20M characters in 4 files, 10^8 and 10^9 characters,
beside what :func:`freqlab.scan.estimate.choose_engine` predicts from the table (``scripts/bench_cost_engine.md``).

    python scripts/bench_cost.py --corpus /work/bench_corpus --chars 1e8          # the shipped table
    python scripts/bench_cost.py --corpus /work/bench_corpus --engine-check
    python scripts/bench_cost.py --short                                          # a smoke run
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_scan import SHARED, corpus_slice, prepare_kind, read_texts, write_tokenizer_json

TABLE = Path(__file__).resolve().parent.parent / "freqlab" / "data" / "throughput.json"
BUILTIN = "tekken (built-in)"
TIKTOKEN = "tekken (built-in), tiktoken only"
HF = "tekken tokenizer.json + NFKC normalizer"


# --- what runs in a fresh process ---------------------------------------------------------------------------
def load_counter(label: str, work: str):
    """The counter of ``label``, built (its backend ready: building is measured apart)."""
    from freqlab.tokenization import load_tokenizer

    if label == BUILTIN:
        counter = load_tokenizer()
    elif label == TIKTOKEN:
        counter = load_tokenizer(skip_backends={"fastokens": "measured apart"})
    elif label == HF:
        counter = load_tokenizer(str(Path(work) / "tekken-nfkc.tokenizer.json"))
    else:
        counter = load_tokenizer(label)
    counter.count(["a"])  # built
    return counter


def one_document_folders(work: Path, shards: int) -> dict[int, Path]:
    """Folders of one document in one shard and in each of ``shards`` shards (made once): {shards: folder}."""
    folders = {}
    for n in sorted({1, shards}):
        folders[n] = work / f"one-document-{n}"
        if not folders[n].exists():
            folders[n].mkdir()
            for k in range(n):
                write_jsonl_zst(folders[n] / f"one-{k}.jsonl.zst", ["hello world"])
    return folders


SHARD_COUNTS = (200, 2000)  # the per-shard cost's folders: few and many one-line files


def tiny_shards(work: Path, n: int) -> Path:
    """A folder of ``n`` JSON-lines files of one short document each (made once)."""
    folder = work / f"tiny-shards-{n}"
    if not folder.exists():
        folder.mkdir()
        for k in range(n):
            (folder / f"tiny-{k}.jsonl").write_text(json.dumps({"text": f"hello world {k}"}) + "\n", encoding="utf-8")
    return folder


def scan_once(data, tokenizer, workers: int | None, **options):
    from freqlab.scan import scan

    return scan(data, tokenizer=tokenizer, workers=workers, progress=False, L=[2048], regimes=["natural"], **options)


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


def forced_engine(in_process: bool) -> None:
    """Make the default path's engine rule answer ``in_process`` (the rule's estimate kept, for the report)."""
    import dataclasses

    import freqlab.scan.estimate as estimate

    rule = estimate.choose_engine

    def forced(*args, **kwargs):
        choice = rule(*args, **kwargs)
        return None if choice is None else dataclasses.replace(choice, in_process=in_process)

    estimate.choose_engine = forced


def child(task: dict) -> dict:
    """One measurement in this (fresh) process; see :func:`run_child`."""
    what = task["what"]
    if task.get("one_core"):
        os.environ["FASTOKENS_BPE_THREADS"] = os.environ["RAYON_NUM_THREADS"] = "1"
    if what == "passes":  # one counter, its folders in turn, on one core
        import freqlab.scan  # noqa: F401  (imported before any scan, as by the command line)

        counter = load_counter(task["label"], task["work"])
        workers = 1
        if task.get("default_path"):  # the engine rule's in-process scan: fastokens' own threads, overlapped reading
            forced_engine(True)
            workers = None
        out = []
        # what the first scan of a process pays once (imports, the readers' set-up): measured apart, on one document
        tiny = one_document_folders(Path(task["work"]), 1)[1]
        first, _, _ = cpu_seconds(lambda: scan_once(str(tiny), counter, 1))
        for folder in task["folders"]:
            cpu, wall, result = cpu_seconds(
                lambda folder=folder: scan_once(folder, counter, workers, **task["options"])
            )
            out.append({"cpu": cpu, "wall": wall, "tokens": int(result.histogram.tokens), "backend": counter.backend})
        return {"passes": out, "first_scan": first}
    if what == "pool":  # a pool on every core, started as the command line starts it
        from freqlab.scan.engines.local import prestart
        from freqlab.tokenization.load import cache_entry

        counter = load_counter(task["label"], task["work"])  # writes the cache entry the forkserver builds from
        work, n = Path(task["work"]), task["workers"]
        tiny = one_document_folders(work, n)  # one document in one shard; one document in each of n shards
        here, here_wall, _ = cpu_seconds(lambda: scan_once(str(tiny[1]), counter, 1))  # a process's first scan
        # the forkserver starts (imports freqlab, builds fastokens once) and n workers fork from it: the pool's
        # start-up, as a scan of one document per worker pays it (minus the same scan in this process)
        start, start_wall, _ = cpu_seconds(
            lambda: (prestart(lambda: cache_entry(None)).join(), scan_once(str(tiny[n]), counter, n))
        )
        cpu, wall, _ = cpu_seconds(lambda: scan_once(task["folder"], counter, n))
        again, _, _ = cpu_seconds(lambda: scan_once(str(tiny[n]), counter, n))  # workers forked again, built
        return {"cpu": cpu, "wall": wall, "again": again, "start": start - here, "start_wall": start_wall - here_wall}
    if what == "engine":  # the default path with its engine forced; the counter loaded as the driver loads it
        from freqlab.corpus import open_corpus
        from freqlab.scan.driver import load_counter as driver_counter
        from freqlab.scan.estimate import choose_engine, corpus_files, load_throughput

        forced_engine(task["in_process"])
        corpus = open_corpus(task["folder"])
        starting = None
        if not task["in_process"]:  # the command line starts the forkserver (to build fastokens once for the
            from freqlab.scan.engines.local import prestart  # workers) while it loads the tokenizer
            from freqlab.tokenization.load import cache_entry

            starting = prestart(lambda: cache_entry(None))
        counter = driver_counter(None, False, corpus.estimated_bytes)
        counter.count(["a"])
        if starting is not None:
            starting.join()
        table = load_throughput(task["table"])
        files = corpus_files(corpus.shards)
        workers = min(os.cpu_count() or 1, len(corpus.shards))
        shards = len(corpus.shards)
        choice = choose_engine(
            corpus.estimated_bytes, workers, counter.backend, table, built=True, files=files, shards=shards
        )
        out = {"out": Path(tempfile.mkdtemp(dir=task["work"]))} if task.get("out") else {}  # as the command line
        cpu, wall, result = cpu_seconds(lambda: scan_once(task["folder"], counter, None, **out))
        run = result.summary["scan"]
        fast, n, e = table.families[counter.backend], workers, table.parallel_efficiency
        one_core = sum(files[k] * table.file_core_seconds.get(k, 0.0) for k in files)
        one_core += corpus.estimated_bytes / fast.bytes_per_token / fast.tokens_per_core_second
        driver = {kind: shards * table.shard_seconds.get(kind, 0.0) for kind in ("here", "pool")}
        return {
            "cpu_here": table.scan_startup_core_seconds + one_core + driver["here"],  # threads add no core-seconds
            "cpu_pool": table.scan_startup_core_seconds
            + table.worker_startup_core_seconds
            + one_core / e
            + driver["pool"],
            "wall": wall,
            "cpu": cpu,
            "tokens": int(result.histogram.tokens),
            "workers": run["workers"],
            "bytes": corpus.estimated_bytes,
            "files": files,
            "here": choice.in_process_seconds,
            "pool": choice.pool_seconds,
            "choice": "here" if choice.in_process else "pool",
        }
    raise ValueError(what)


def run_child(task: dict) -> dict:
    """:func:`child` in a fresh Python process (a new counter: fastokens' piece cache empty)."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(task)], capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"Error: a measurement failed ({task['what']}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the corpora ----------------------------------------------------------------------------------------------
def bench_slices(corpus: Path, chars: float, count: int, work: Path) -> list[tuple[Path, dict]]:
    """``count`` disjoint slices of about ``chars`` characters of a bench_corpus.py corpus: consecutive pieces of
    the files in corpus_slice's order (each kind cut alike), as folders of hard links."""
    manifest = json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))
    fraction = chars / manifest["characters"]
    if fraction * count > 1:
        raise SystemExit(f"Error: {count} slices of {chars:g} characters: {corpus} holds {manifest['characters']:,}")
    slices, taken = [], set()
    for k in range(count):
        folder, info = corpus_slice(corpus, min(fraction * (k + 1), 1.0), work / "prefixes")
        names = sorted({p.name for p in folder.iterdir()} - taken)
        taken.update(names)
        piece = work / f"slice-{k}"
        piece.mkdir(parents=True)
        for name in names:
            os.link(folder / name, piece / name)
        by_name = {e["file"]: e for e in manifest["files"]}
        chosen = [by_name[name] for name in names]
        slices.append(
            (
                piece,
                {
                    "documents": sum(e["documents"] for e in chosen),
                    "characters": sum(e["characters"] for e in chosen),
                    "files": len(chosen),
                    "origin": info["origin"].split(" (")[0] + " (scripts/bench_corpus.py)",
                },
            )
        )
    return slices


def kind_slices(args, count: int, work: Path) -> list[tuple[Path, dict]]:
    """Without a corpus: bench_scan's kinds written once, ``count`` files a kind, slice k the k-th file of each."""
    kinds, folder = args.kinds.split(","), work / "kinds"
    parts = [
        prepare_kind(folder, kind, args.chars * count / len(kinds), count, sorted(glob.glob(args.prose)))
        for kind in kinds
    ]
    slices = []
    for k in range(count):
        piece = work / f"slice-{k}"
        piece.mkdir(parents=True)
        for kind in kinds:
            os.link(folder / f"{kind}-{k}.jsonl.zst", piece / f"{kind}-{k}.jsonl.zst")
        texts = read_texts(sorted(map(str, piece.glob("*.zst"))))
        origin = ", ".join(p["origin"] for p in parts)
        slices.append(
            (
                piece,
                {"documents": len(texts), "characters": sum(map(len, texts)), "files": len(kinds), "origin": origin},
            )
        )
    return slices


def text_bytes(folder: Path) -> int:
    return sum(len(text.encode("utf-8")) for text in read_texts(sorted(map(str, folder.glob("*.zst")))))


def write_jsonl_zst(path: Path, texts: list[str]) -> None:
    import zstandard

    data = "".join(json.dumps({"text": t}) + "\n" for t in texts).encode()
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(data))


def builtin_layouts(work: Path) -> tuple[dict[str, str | None], int, int]:
    """The built-in corpus's texts in four layouts: the corpus itself (its ``.py`` files), as many ``.txt`` files,
    as many one-document ``.jsonl.zst`` files, one ``.jsonl.zst``. Returns the layouts, files and text bytes."""
    from freqlab.corpus import open_corpus

    texts = [doc.text for shard in open_corpus(None).shards for doc in shard.read()]
    txt, zst, one = work / "files-txt", work / "files-zst", work / "files-one"
    for folder in (txt, zst, one):
        folder.mkdir()
    for k, text in enumerate(texts):
        (txt / f"{k:05d}.txt").write_text(text, encoding="utf-8", errors="surrogatepass")
        write_jsonl_zst(zst / f"{k:05d}.jsonl.zst", [text])
    write_jsonl_zst(one / "all.jsonl.zst", texts)
    layouts = {"built-in (.py files)": None, ".txt files": str(txt), ".jsonl.zst files": str(zst), "one": str(one)}
    return layouts, len(texts), sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)


# --- the table ------------------------------------------------------------------------------------------------
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


def build_seconds(label: str, work: str, family: str, repeats: int) -> float:
    """CPU seconds to build ``family``'s backend of the tokenizer ``label`` in a process (the least of ``repeats``)."""
    from freqlab.tokenization.backends import ENGINES

    source = load_counter(label, work).source(family)
    times = []
    for _ in range(repeats):
        start = time.process_time()
        ENGINES[family](source)
        times.append(time.process_time() - start)
    return min(times)


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


def median(values) -> float:
    return statistics.median(values)


def spread(values, scale: float = 1.0, digits: int = 2) -> str:
    """``median (min-max)``."""
    return f"{median(values) * scale:.{digits}f} ({min(values) * scale:.{digits}f}-{max(values) * scale:.{digits}f})"


def measure(args, work: Path) -> None:
    """Cut the slices in ``work``, measure, write the table and the Markdown summary."""
    loads = [os.getloadavg()[0]]  # the machine may be shared: the table records how busy it was
    started = datetime.datetime.now(datetime.UTC)
    families_measured = [BUILTIN, TIKTOKEN, HF, *args.tokenizer]
    # slices: per family and repeat, A and B; then reading, the pool and the in-process speed-up (one each)
    wanted = 2 * args.repeats + 2
    if args.corpus:
        slices = bench_slices(Path(args.corpus), args.chars, wanted, work)
    else:
        slices = kind_slices(args, wanted, work)
    hf_only_tokenizer(work / "tekken-nfkc.tokenizer.json")
    sizes = [text_bytes(folder) for folder, _ in slices]
    base = {"work": str(work), "options": {}}

    families, rows, firsts = {}, [], []  # firsts: what each process's first scan (one document) cost
    for label in families_measured:
        runs = []
        for r in range(args.repeats):
            # the slow Hugging Face backend: every --hf-every-th document of each slice (unseen, every kind alike)
            a, b = slices[2 * r][0], slices[2 * r + 1][0]
            if label == HF and args.hf_every > 1:
                a, b = every(a, args.hf_every, work / f"hf-a{r}"), every(b, args.hf_every, work / f"hf-b{r}")
            task = {**base, "what": "passes", "label": label, "folders": [str(a), str(b), str(b)], "one_core": True}
            answer = run_child(task)
            firsts.append(answer["first_scan"])
            out = answer["passes"]
            runs.append((out, text_bytes(a) if label == HF and args.hf_every > 1 else sizes[2 * r]))
            loads.append(os.getloadavg()[0])
            print(f"{label} repeat {r}: " + ", ".join(f"{p['tokens'] / p['cpu'] / 1e6:.2f}M" for p in out), flush=True)
        family = runs[0][0][0]["backend"]
        first = [out[0]["tokens"] / out[0]["cpu"] for out, _ in runs]
        steady = [out[1]["tokens"] / out[1]["cpu"] for out, _ in runs]
        repeated = [out[2]["tokens"] / out[2]["cpu"] for out, _ in runs]
        beta = median(size / out[0]["tokens"] for out, size in runs)
        families.setdefault(
            family,
            {
                "tokens_per_core_second": round(median(first)),
                "bytes_per_token": round(beta, 3),
                "example": label,
                "build_core_seconds": round(build_seconds(label, str(work), family, args.repeats), 2),
                "steady_tokens_per_core_second": round(median(steady)),
                "repeat_tokens_per_core_second": round(median(repeated)),
            },
        )
        rows.append((family, label, runs, first, steady, repeated))

    reading, pooled = slices[-2][0], slices[-1][0]
    read_task = {**base, "what": "passes", "label": TIKTOKEN, "folders": [str(reading)], "one_core": True}
    read = run_child({**read_task, "options": {"sample_rate": 1e-9}})["passes"][0]
    read_rate = sizes[-2] / read["cpu"]
    # on one unseen slice, each a fresh process, alternated: one core; the default in-process scan (fastokens'
    # own threads, reading overlapped); a pool on every core
    one_core = {**base, "what": "passes", "label": BUILTIN, "folders": [str(pooled)], "one_core": True}
    alone, inproc, pools = [], [], []
    for _ in range(args.repeats):
        alone.append(run_child(one_core)["passes"][0])
        inproc.append(run_child({**one_core, "one_core": False, "default_path": True})["passes"][0])
        pools.append(
            run_child({**base, "what": "pool", "label": BUILTIN, "folder": str(pooled), "workers": args.workers})
        )
        loads.append(os.getloadavg()[0])
    # the pool's counting: its CPU less its workers' start (forked again from the running forkserver)
    efficiency = min(median(a["cpu"] for a in alone) / max(median(p["cpu"] - p["again"] for p in pools), 1e-9), 1.0)
    speedup = min(a["wall"] for a in alone) / min(b["wall"] for b in inproc)  # the least disturbed of each

    # per-file cost: the built-in corpus's texts in four layouts, A/B alternated, fresh processes
    layouts, files, layout_bytes = builtin_layouts(work)
    per_layout: dict[str, list[float]] = {name: [] for name in layouts}
    for _ in range(args.repeats + 1):
        for name, folder in layouts.items():
            out = run_child({**base, "what": "passes", "label": BUILTIN, "folders": [folder], "one_core": True})
            per_layout[name].append(out["passes"][0]["cpu"])
    loads.append(os.getloadavg()[0])
    one = median(per_layout["one"])
    file_costs = {name: (median(cpus) - one) / (files - 1) for name, cpus in per_layout.items() if name != "one"}

    # per-shard cost: folders of one-line JSON-lines files (a shard each), few and many, each engine forced, the
    # checkpoints written as the command line writes them: the driver's wall seconds per shard, from the difference
    few, many = SHARD_COUNTS
    per_shard: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.repeats):
        for here in (True, False):
            walls = [
                run_child({**base, "what": "engine", "folder": str(tiny_shards(work, n)), "in_process": here,
                           "table": args.table, "out": True})["wall"]
                for n in SHARD_COUNTS
            ]  # fmt: skip
            per_shard[here].append((walls[1] - walls[0]) / (many - few))
    loads.append(os.getloadavg()[0])

    load = max(loads)
    build = families["fastokens"]["build_core_seconds"]
    pool_start = median(p["start_wall"] for p in pools)
    table = {
        "measured": started.date().isoformat(),
        "machine": f"{os.cpu_count()} cores ({cpu_model()}), {platform.system()}, Python {platform.python_version()}, "
        f"load average {min(loads):.1f}-{load:.1f}",
        "source": f"scripts/bench_cost.py, first passes (a fresh process per measurement, text never seen): "
        f"{len(slices)} disjoint slices of {slices[0][1]['origin']}, ~{args.chars / 1e6:,.0f}M characters "
        f"each, in .jsonl.zst",
        "read_bytes_per_core_second": round(read_rate),
        "parallel_efficiency": round(efficiency, 3),
        # a worker's wait before its first shard: the forkserver starting and building fastokens once, the
        # workers forking from it (wall seconds on the idle machine); and the same without the build
        "worker_startup_core_seconds": round(pool_start, 2),
        "process_startup_core_seconds": round(max(pool_start - build, 0.0), 2),
        "file_core_seconds": {
            "plain": round(max(file_costs[".txt files"], 0.0), 6),
            "compressed": round(max(file_costs[".jsonl.zst files"], 0.0), 6),
        },
        "scan_startup_core_seconds": round(median(firsts), 3),
        "in_process_speedup": round(max(speedup, 1.0), 3),
        "shard_seconds": {"here": round(median(per_shard[True]), 6), "pool": round(median(per_shard[False]), 6)},
        "families": families,
    }
    Path(args.table).write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")

    lines = [
        "# freqlab scan cost model: measured throughput (first passes)",
        "",
        f"{started:%Y-%m-%d %H:%M} UTC, {table['machine']}; {table['source']}. Written to "
        f"`freqlab/data/throughput.json`.",
        "",
        "Tokens per core-second, one core, each repeat in a fresh process on slices it has never seen (median "
        "(min-max) of the repeats): the first pass is the table's τ; the steady state is a second unseen slice "
        "on the same counter; repeated is that slice again (piece cache warm: the old table's method).",
        "",
        "| family | tokenizer | first pass | steady state | repeated text | repeated ÷ first | bytes per token |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for family, label, _runs, first, steady, repeated in rows:
        lines.append(
            f"| {family} | {label} | {spread(first, 1e-6)}M | {spread(steady, 1e-6)}M | {spread(repeated, 1e-6)}M "
            f"| {median(repeated) / median(first):.2f} | {families[family]['bytes_per_token']:.2f} |"
        )
    lines += [
        "",
        "Slices (documents, characters, files): "
        + "; ".join(f"{info['documents']:,}, {info['characters'] / 1e6:.1f}M, {info['files']}" for _, info in slices)
        + ".",
        "",
        f"Reading and parsing alone (sample rate 1e-9, fresh process): {read['cpu']:.2f} CPU s, "
        f"{read_rate / 1e6:.0f} MB of text per core-second. One unseen slice ({sizes[-1] / 1e6:.0f} MB), "
        f"{args.repeats} fresh processes each, alternated: one core {spread([a['cpu'] for a in alone])} CPU s "
        f"({spread([a['wall'] for a in alone])} s wall); the default in-process scan (fastokens' own threads, "
        f"reading overlapped) {spread([b['wall'] for b in inproc])} s wall, {spread([b['cpu'] for b in inproc])} "
        f"CPU s: {speedup:.2f}x one core (the least wall time of each); a pool of {args.workers} "
        f"{spread([p['wall'] for p in pools])} s wall, {spread([p['cpu'] for p in pools])} CPU s, of which "
        f"{spread([p['again'] for p in pools])} fork and start the workers (a scan of one document per worker, the "
        f"forkserver running): parallel efficiency without it {efficiency:.2f}. Starting the pool as the command "
        f"line does (the forkserver imports freqlab and builds fastokens once; a scan of one document per worker, "
        f"less the same scan in this process): {spread([p['start_wall'] for p in pools])} s wall, "
        f"{spread([p['start'] for p in pools])} CPU s; less fastokens' build ({build:.2f} core-seconds, measured "
        f"apart): `process_startup_core_seconds` {max(pool_start - build, 0.0):.2f}.",
        "",
        f"Per-file cost: the built-in corpus's {files:,} texts ({layout_bytes / 1e6:.1f} MB), one core, CPU seconds, "
        f"median (min-max) of {args.repeats + 1} fresh processes per layout, layouts alternated:",
        "",
        "| layout | CPU s | per file (ms) |",
        "|---|---:|---:|",
    ]
    for name, cpus in per_layout.items():
        cost = "-" if name == "one" else f"{file_costs[name] * 1e3:.3f}"
        lines.append(f"| {name if name != 'one' else 'one .jsonl.zst'} | {spread(cpus)} | {cost} |")
    lines += [
        "",
        f"The table's `file_core_seconds`: `plain` the `.txt` layout's, `compressed` the `.jsonl.zst` layout's. "
        f"A process's first scan (one document, before the timed passes): {spread(firsts)} CPU s "
        f"(`scan_startup_core_seconds`). Load average {min(loads):.1f}-{load:.1f} "
        "during the run (CPU seconds hardly depend on it; wall times do).",
        "",
        f"Per-shard cost (`shard_seconds`): {few:,} and {many:,} one-line JSON-lines files (a shard each), the "
        f"engine forced, checkpoints written, {args.repeats} fresh processes each, alternated; wall seconds of the "
        f"driver per shard, from the difference: in this process {spread(per_shard[True], 1e3, 3)} ms, on the "
        f"pool {spread(per_shard[False], 1e3, 3)} ms.",
        "",
        "## SlimPajama-627B (the README's table)",
        "",
        *slimpajama_table(Path(args.table)),
    ]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def every(folder: Path, step: int, into: Path) -> Path:
    """Every ``step``-th document of ``folder``'s files, in one ``.jsonl.zst`` in ``into``."""
    into.mkdir()
    write_jsonl_zst(into / "every.jsonl.zst", read_texts(sorted(map(str, folder.glob("*.zst"))))[::step])
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=float, default=20e6, help="Approximate characters of each slice.")
    parser.add_argument("--prose", default=SHARED, help="Glob of the prose .jsonl.zst files (field 'text').")
    parser.add_argument("--kinds", default="prose,code,docs,mail,multilingual", help="Kinds of text (bench_scan).")
    parser.add_argument("--corpus", default=None, help="scripts/bench_corpus.py's varied corpus: slices of it.")
    parser.add_argument("--short", action="store_true", help="A smoke run: 2M characters, one repeat.")
    parser.add_argument("--tokenizer", action="append", default=[], help="Another tokenizer to measure.")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--hf-every", type=int, default=10, help="The Hugging Face passes read every n-th document.")
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--table", default=str(TABLE))
    parser.add_argument("--out", default=str(Path(__file__).with_name("bench_cost.md")))
    parser.add_argument("--engine-check", action="store_true", help="Time both engines against the rule's estimate.")
    parser.add_argument("--runs", type=int, default=3, help="--engine-check: runs of each engine per corpus.")
    parser.add_argument("--only", help="--engine-check: only the corpora whose name contains this.")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    if args.short:
        args.chars, args.repeats = min(args.chars, 2e6), 1
    with tempfile.TemporaryDirectory(prefix="freqlab-cost-") as work:
        if args.engine_check:
            engine_check(args, Path(work))
        else:
            measure(args, Path(work))


def engine_check(args, work: Path) -> None:
    """Both engines on four corpora, each run a fresh process (the engine forced through the default path),
    in-process and pool alternated, beside the rule's estimates from ``--table``."""
    if not args.corpus:
        raise SystemExit("Error: --engine-check needs --corpus (scripts/bench_corpus.py's corpus)")
    corpus = Path(args.corpus)
    small = work / "small-4-files"
    small.mkdir()
    folder, _ = corpus_slice(corpus, 0.02, work / "prefixes")
    texts = read_texts(sorted(map(str, folder.glob("*.zst"))))
    for k in range(4):
        write_jsonl_zst(small / f"part-{k}.jsonl.zst", texts[k::4])
    many = work / "many-small-files"  # 2,000 JSON-lines files of 2,000 characters (a shard each)
    many.mkdir()
    pieces = ["".join(texts)[k * 2000 : (k + 1) * 2000] for k in range(2000)]
    for k, piece in enumerate(pieces):
        (many / f"doc-{k:04d}.jsonl").write_text(json.dumps({"text": piece}) + "\n", encoding="utf-8")
    corpora = {
        "built-in corpus (1,790 .py files)": None,
        "2,000 files of 2,000 characters": str(many),
        f"{sum(map(len, texts)) / 1e6:.0f}M characters in 4 files": str(small),
        "10^8 characters": str(corpus_slice(corpus, 0.1, work / "p1")[0]),
        "10^9 characters": str(corpus_slice(corpus, 1.0, work / "p2")[0]),
    }
    started, loads = datetime.datetime.now(datetime.UTC), [os.getloadavg()[0]]
    lines = [
        "# Engine rule check: in this process vs a pool of 2, measured and predicted",
        "",
        "",
        "",
        "| corpus | files | MB of text (estimated) | predicted here (s) | measured here (s) | predicted pool (s) "
        "| measured pool (s) | rule picks | faster measured |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    cpu_rows = [
        "",
        "CPU seconds of the same runs (the driver and its workers; robust to other jobs on the machine), predicted "
        "from the same table: in this process c + F·f + T/τ + S·d_here, on the pool c + p + b + (F·f + T/τ)/e "
        "+ S·d_pool (the forkserver's imports, overlapped with the driver's in wall time, not in it):",
        "",
        "| corpus | predicted here | measured here | predicted pool | measured pool |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, folder in corpora.items():
        times: dict[bool, list[float]] = {True: [], False: []}
        cpus: dict[bool, list[float]] = {True: [], False: []}
        if args.only and args.only not in name:
            continue
        for _ in range(args.runs):
            for here in (True, False):
                task = {"what": "engine", "folder": folder, "in_process": here, "table": args.table, "out": True}
                out = run_child({**task, "work": str(work)})
                times[here].append(out["wall"])
                cpus[here].append(out["cpu"])
                loads.append(os.getloadavg()[0])
        here, pool = median(times[True]), median(times[False])
        lines.append(
            f"| {name} | {sum(out['files'].values()):,} | {out['bytes'] / 1e6:,.0f} | {out['here']:.2f} "
            f"| {spread(times[True])} "
            f"| {out['pool']:.2f} | {spread(times[False])} | {out['choice']} | {'here' if here <= pool else 'pool'} |"
        )
        cpu_rows.append(
            f"| {name} | {out['cpu_here']:.2f} | {spread(cpus[True])} | {out['cpu_pool']:.2f} | {spread(cpus[False])} |"
        )
        print(lines[-1], flush=True)
    lines[2] = (
        f"{started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores ({cpu_model()}), load average {min(loads):.1f}-"
        f"{max(loads):.1f}; `python scripts/bench_cost.py --corpus {args.corpus} --engine-check --runs {args.runs}`: "
        "each run a fresh process, the built-in Tekken loaded as the driver loads it (built), then `scan()` (with "
        "an output folder: checkpoints written) timed "
        "with the engine rule forced to each answer (in this process: fastokens' own threads, reading overlapped; "
        "the pool: one worker per core), the two alternated; median (min-max) wall seconds of the scan. Predicted: "
        "`choose_engine` from the table (`freqlab/data/throughput.json`)."
    )
    lines += cpu_rows
    out_path = Path(args.out).with_name("bench_cost_engine.md") if args.out.endswith("bench_cost.md") else args.out
    Path(out_path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
