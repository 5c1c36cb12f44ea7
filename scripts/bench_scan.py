#!/usr/bin/env python
"""Benchmark ``freqlab scan`` on varied, never repeated text of several kinds against datatrove, a plain
``datasets`` + ``tokenizers`` loop and the bare encode and read loops (not a test).

Kinds (``--kinds``), each real text written once to its own ``.jsonl.zst`` files (up to ``--chars`` characters a
kind; never repeated, so no piece cache warms on a second copy):

- ``prose``: the shared corpora (``--prose``, default ``../shared/corpora/*.jsonl.zst`` next to the checkout);
- ``code``: the standard library's ``.py`` sources, a file per document;
- ``docs``: installed packages' documentation: ``METADATA`` long descriptions, ``.md``/``.rst`` files, module and
  function docstrings;
- ``mail``: the standard library's e-mail test messages (small: all there is);
- ``multilingual``: installed translation catalogs (gettext ``.mo`` files: ISO names in ~100 languages) and the
  standard library's CJK test texts;
- ``tiny``: one-line documents (stdlib source lines): the per-document cost.

The same files are scanned with the same tokenizer (``--tokenizer``: the built-in Tekken by default, or a
``tokenizer.json``) several ways, each in a fresh process so peak memory is its own:

- ``freqlab``: ``freqlab.scan.scan`` on all cores (local engine), cold (the whole process, the tokenizer cache in a
  fresh folder: the first run loads and verifies, later runs hit the cache) and warm (a second scan, the steady
  state); start-up = cold - warm;
- ``freqlab-1core``: a warm ``scan(workers=1)`` (in this process: one core, end to end);
- ``datatrove``: ``JsonlReader -> TokensCounter -> LengthCounter`` with ``LocalPipelineExecutor`` on all
  cores, with the ``tokenizer.json`` (for Tekken: an equivalent built from Tekken's own ranks);
- ``hf-datasets``: ``datasets`` streaming + ``Tokenizer.encode_batch`` (rayon threads on all cores);
- ``bare-fast`` / ``bare-tiktoken`` / ``bare-hf``: the tokenizers alone on texts preloaded in memory, all cores
  (freqlab's fastest verified backend, fastokens, on its thread pool; tiktoken's ``encode_ordinary_batch``
  threads, Tekken only; ``Tokenizer.encode_batch``);
- ``bare-read``: decompress and parse the files (orjson), one core: the floor of any scan.

All histograms must be identical. Writes a Markdown table per kind (``--out``, default ``bench_scan.md`` next to
this script).

    python scripts/bench_scan.py                          # every kind, up to 20M characters each
    python scripts/bench_scan.py --short                  # a smoke run: 2M characters a kind, one repeat
    python scripts/bench_scan.py --kinds prose --chars 1e9 --prose '/data/*.jsonl.zst' --methods freqlab,datatrove
    python scripts/bench_scan.py --tokenizer llama3.json --kinds prose,code
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = str(ROOT.parent / "shared" / "corpora" / "*.jsonl.zst")  # the shared corpora, beside the checkout
BATCH = 1000
KINDS = ("prose", "code", "docs", "mail", "multilingual", "tiny")


# --- inputs ------------------------------------------------------------------------------------------------
def read_texts(files: list[str]) -> list[str]:
    import zstandard

    texts = []
    for path in files:
        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
            for line in reader.read().decode().splitlines():
                if line.strip():
                    texts.append(json.loads(line)["text"])
    return texts


def kind_texts(kind: str, chars: float, prose: list[str]) -> tuple[list[str], str]:
    """Documents of one kind (see the module docstring), in a fixed order, up to about ``chars`` characters."""
    import sysconfig

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    if kind == "prose":
        texts, origin = read_texts(prose), ", ".join(os.path.basename(p) for p in prose) or "(no --prose files)"
    elif kind == "code":
        texts = [_read(p) for p in sorted(stdlib.rglob("*.py")) if "site-packages" not in p.parts]
        origin = "standard library .py files"
    elif kind == "docs":
        texts, origin = _package_docs(chars), "installed packages' METADATA, .md/.rst files and docstrings"
    elif kind == "mail":
        folder = stdlib / "test" / "test_email" / "data"
        texts, origin = [_read(p) for p in sorted(folder.glob("msg_*.txt"))], "stdlib test_email messages"
    elif kind == "multilingual":
        texts, origin = _multilingual(stdlib), "gettext catalogs of installed packages, stdlib CJK texts"
    elif kind == "tiny":
        lines = (line.strip() for p in sorted(stdlib.rglob("*.py")) for line in _read(p).splitlines())
        texts, origin = [line for line in lines if line], "stdlib source lines, one per document"
    else:
        raise SystemExit(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    kept, size = [], 0
    for text in texts:
        if text and size < chars:
            kept.append(text)
            size += len(text)
    return kept, origin


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _package_docs(chars: float) -> list[str]:
    import ast
    import importlib.metadata
    import site

    texts: list[str] = []
    size = 0
    for dist in sorted(importlib.metadata.distributions(), key=lambda d: d.metadata["Name"] or ""):
        body = dist.metadata.get_payload() if hasattr(dist.metadata, "get_payload") else ""
        if body and body.strip():
            texts.append(body)
            size += len(body)
    roots = [Path(p) for p in site.getsitepackages()]
    for root in roots:
        for pattern in ("*.md", "*.rst"):
            for path in sorted(root.rglob(pattern)):
                texts.append(_read(path))
                size += len(texts[-1])
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if size >= chars:
                return texts
            try:
                tree = ast.parse(_read(path))
            except (SyntaxError, ValueError):
                continue
            nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef)))]
            docs = [d for d in (ast.get_docstring(n) for n in nodes) if d]
            if docs:
                texts.append("\n\n".join(docs))
                size += len(texts[-1])
    return texts


def _multilingual(stdlib: Path) -> list[str]:
    import gettext
    import site

    texts = []
    for root in site.getsitepackages():
        for path in sorted(Path(root).rglob("*.mo")):
            try:
                with open(path, "rb") as handle:
                    catalog = gettext.GNUTranslations(handle)
            except Exception:  # a damaged or foreign catalog: skipped
                continue
            strings = [v for k, v in catalog._catalog.items() if k and isinstance(v, str)]  # type: ignore[attr-defined]
            if strings:
                texts.append("\n".join(strings))
    for path in sorted((stdlib / "test" / "cjkencodings").glob("*-utf8.txt")):
        texts.append(_read(path))
    return texts


def prepare_kind(folder: Path, kind: str, chars: float, files: int, prose: list[str]) -> dict:
    """One kind's documents written once (no copy repeated) as ``files`` .jsonl.zst files (``{kind}-{k}``)."""
    import zstandard

    texts, origin = kind_texts(kind, chars, prose)
    folder.mkdir(parents=True, exist_ok=True)
    for part in range(files):
        chunk = texts[part::files]
        data = "".join(json.dumps({"text": t}) + "\n" for t in chunk).encode()
        (folder / f"{kind}-{part}.jsonl.zst").write_bytes(zstandard.ZstdCompressor(level=3).compress(data))
    return {"kind": kind, "origin": origin, "copies": 1, "documents": len(texts),
            "characters": sum(map(len, texts)), "files": files}


def tekken_ranks() -> tuple[dict[bytes, int], str]:
    """Tekken's ordinary-token ranks and regex (those of freqlab's built-in tiktoken fast path)."""
    from freqlab.tokenization import load_tokenizer

    plan = load_tokenizer("tekken").plan
    return plan.mergeable_ranks, plan.pat_str


def write_tokenizer_json(path: Path) -> None:
    """A Hugging Face tokenizer.json with Tekken's ranks and no special tokens (the usual tiktoken -> BPE
    conversion, see :mod:`freqlab.tokenization.export`: byte-level, merges derived from the ranks, ignore_merges)."""
    from freqlab.tokenization.export import tiktoken_to_hf_json

    ranks, pattern = tekken_ranks()
    path.write_text(tiktoken_to_hf_json(ranks, pattern), encoding="utf-8")


# --- the methods (each runs in its own process) --------------------------------------------------------------
def method_freqlab(folder: str, workers: int, tokenizer_json: str, spec: str | None = None) -> tuple[Counter, dict]:
    from freqlab.scan import scan

    def once():
        return scan(folder, tokenizer=spec, workers=workers, progress=False, L=[2048], regimes=["natural"])

    start = time.perf_counter()
    result = once()  # cold: tokenizer load (or the cache's entry) + fast-path verification, worker start-up
    cold = time.perf_counter() - start
    start = time.perf_counter()
    again = once()  # warm: a second scan in the same process, as in a notebook: the steady state
    warm = time.perf_counter() - start
    h = result.histogram
    assert again.histogram.counts.tolist() == h.counts.tolist()
    return Counter(dict(zip(h.lengths.tolist(), h.counts.tolist(), strict=True))), {
        "backend": result.summary["tokenizer"]["backend"],
        "cold_scan_seconds": cold,
        "warm_seconds": warm,
        "startup_seconds": max(cold - warm, 0.0),
    }


def method_freqlab_1core(folder: str, workers: int, tokenizer_json: str, spec: str | None = None):
    """A warm scan on one core (in-process), timed: what a core costs end to end, against ``bare-read``."""
    from freqlab.tokenization import single_threaded

    single_threaded()  # before the first encode: fastokens would otherwise spread a batch over every core
    from freqlab.scan import scan
    from freqlab.tokenization import load_tokenizer

    counter = load_tokenizer(spec)  # fastokens when installed, whatever the corpus size
    scan(folder, tokenizer=counter, workers=1, progress=False, max_docs=2)  # warm
    start = time.perf_counter()
    result = scan(folder, tokenizer=counter, workers=1, progress=False, L=[2048], regimes=["natural"])
    h = result.histogram
    return Counter(dict(zip(h.lengths.tolist(), h.counts.tolist(), strict=True))), {
        "timed_seconds": time.perf_counter() - start, "backend": counter.backend}


def method_bare_read(folder: str, workers: int, tokenizer_json: str, spec: str | None = None):
    """Decompress and parse every line (orjson), one core: no tokenizer, no counting (histogram: none)."""
    import orjson

    from freqlab.corpus.jsonl import open_binary

    start = time.perf_counter()
    documents = 0
    for path in sorted(glob.glob(os.path.join(folder, "*.jsonl.zst"))):
        with open_binary(path) as stream:
            for line in stream:
                documents += len(orjson.loads(line)["text"]) >= 0
    return None, {"timed_seconds": time.perf_counter() - start, "documents": documents}


def method_bare_fast(folder: str, workers: int, tokenizer_json: str, spec: str | None = None):
    """freqlab's fastest verified backend (fastokens) on preloaded texts, on its own thread pool (all cores)."""
    os.environ["FASTOKENS_BPE_THREADS"] = str(workers)
    from freqlab.tokenization import load_tokenizer

    counter = load_tokenizer(spec)
    texts = _preloaded(folder)
    counter.counts_by(counter.backend, texts[:1])  # builds the engine: start-up, not encoding
    start = time.perf_counter()
    counts = counter.counts_by(counter.backend, texts)
    return Counter(counts.tolist()), {"timed_seconds": time.perf_counter() - start, "backend": counter.backend}


def method_datatrove(folder: str, workers: int, tokenizer_json: str, spec: str | None = None) -> tuple[Counter, dict]:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.tokens.counter import LengthCounter, TokensCounter

    logs = tempfile.mkdtemp(prefix="datatrove-logs-")
    tasks = len(glob.glob(os.path.join(folder, "*.jsonl.zst")))
    LocalPipelineExecutor(
        pipeline=[
            JsonlReader(folder, glob_pattern="*.jsonl.zst", compression="zstd"),
            TokensCounter(tokenizer_name_or_path=tokenizer_json, batch_size=BATCH),
            LengthCounter(),
        ],
        tasks=tasks,
        workers=workers,
        logging_dir=logs,
    ).run()
    stats = json.loads(Path(logs, "stats.json").read_text())
    lengths = next(step for step in stats if "Document length counter" in step["name"])["stats"]
    hist = Counter({int(k): int(v["total"] if isinstance(v, dict) else v) for k, v in lengths.items()})
    return hist, {}


def method_hf_datasets(folder: str, workers: int, tokenizer_json: str, spec: str | None = None):
    from datasets import load_dataset
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(tokenizer_json)
    files = sorted(glob.glob(os.path.join(folder, "*.jsonl.zst")))
    stream = load_dataset("json", data_files=files, split="train", streaming=True)
    hist: Counter = Counter()
    batch: list[str] = []
    for record in stream:
        batch.append(record["text"])
        if len(batch) == BATCH:
            hist.update(len(e.ids) for e in tokenizer.encode_batch(batch, add_special_tokens=False))
            batch = []
    if batch:
        hist.update(len(e.ids) for e in tokenizer.encode_batch(batch, add_special_tokens=False))
    return hist, {}


def _preloaded(folder: str) -> list[str]:
    return read_texts(sorted(glob.glob(os.path.join(folder, "*.jsonl.zst"))))


def method_bare_tiktoken(folder: str, workers: int, tokenizer_json: str, spec: str | None = None):
    import tiktoken

    ranks, pattern = tekken_ranks()
    encoding = tiktoken.Encoding("tekken", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    texts = _preloaded(folder)
    start = time.perf_counter()
    lengths = [len(ids) for ids in encoding.encode_ordinary_batch(texts, num_threads=workers)]
    return Counter(lengths), {"timed_seconds": time.perf_counter() - start}


def method_bare_hf(folder: str, workers: int, tokenizer_json: str, spec: str | None = None):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(tokenizer_json)
    texts = _preloaded(folder)
    start = time.perf_counter()
    hist: Counter = Counter()
    for k in range(0, len(texts), BATCH):
        hist.update(len(e.ids) for e in tokenizer.encode_batch(texts[k : k + BATCH], add_special_tokens=False))
    return hist, {"timed_seconds": time.perf_counter() - start}


FAST = ("freqlab", "freqlab-1core", "bare-read", "bare-fast", "bare-tiktoken")
METHODS = {
    "freqlab": method_freqlab,
    "freqlab-1core": method_freqlab_1core,
    "bare-read": method_bare_read,
    "bare-fast": method_bare_fast,
    "datatrove": method_datatrove,
    "hf-datasets": method_hf_datasets,
    "bare-tiktoken": method_bare_tiktoken,
    "bare-hf": method_bare_hf,
}


def run_child(args) -> None:
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.workers))
    os.environ["FREQLAB_CACHE_DIR"] = str(Path(args.result).parent / "tokenizer-cache")  # cold on the first run
    start = time.perf_counter()
    hist, extra = METHODS[args.method](args.folder, args.workers, args.tokenizer_json, args.tokenizer)
    seconds = time.perf_counter() - start
    histogram = sorted(hist.items()) if hist is not None else None
    Path(args.result).write_text(json.dumps({"seconds": seconds, "histogram": histogram, **extra}))


# --- the driver ----------------------------------------------------------------------------------------------
def peak_tree_rss(process) -> int:
    import psutil

    try:
        procs = [process, *process.children(recursive=True)]
        return sum(p.memory_info().rss for p in procs if p.is_running())
    except psutil.Error:
        return 0


def measure(method: str, folder: Path, workers: int, tokenizer_json: Path, work: Path, spec: str | None) -> dict:
    import psutil

    result = work / f"{method}.json"
    command = [sys.executable, __file__, "--child", method, "--folder", str(folder), "--workers", str(workers),
               "--tokenizer-json", str(tokenizer_json), "--result", str(result)]
    if spec:
        command += ["--tokenizer", spec]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    process, peak, done = psutil.Process(child.pid), 0, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, peak_tree_rss(process))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, stderr = child.communicate()
    done.set()
    sampler.join()
    wall = time.perf_counter() - start
    if child.returncode != 0:
        return {"method": method, "error": stderr.decode(errors="replace").strip().splitlines()[-1:]}
    data = json.loads(result.read_text())
    hist = Counter({int(k): int(v) for k, v in data["histogram"]}) if data["histogram"] is not None else None
    tokens = sum(k * v for k, v in hist.items()) if hist is not None else None
    return {"method": method, "wall": wall, "peak_rss": peak, "histogram": hist, "load": load, "tokens": tokens,
            **{k: v for k, v in data.items() if k != "histogram"}}


def best_of(repeats: int, *args) -> dict:
    """The fastest of a few runs (the machine may be shared: the minimum is the least disturbed)."""
    runs = [measure(*args) for _ in range(repeats)]
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return runs[0]
    best = min(ok, key=lambda r: r.get("timed_seconds") or r["wall"] - r.get("warm_seconds", 0))
    if "startup_seconds" in ok[0]:
        best["startup_first"] = ok[0]["startup_seconds"]  # the first run: tokenizer cache cold
    return best


def table(rows: list[dict], info: dict, workers: int, tokenizer: str) -> str:
    done = [r for r in rows if "error" not in r]
    counted = [r for r in done if r["histogram"] is not None]
    freqlab = next((r for r in counted if r["method"] == "freqlab"), counted[0])
    reference, tokens = freqlab["histogram"], freqlab["tokens"]
    lines = [
        f"### {info.get('kind', 'corpus')}",
        "",
        f"Input: {info['origin']} x{info['copies']} = {info['documents']:,} documents, "
        f"{info['characters'] / 1e6:,.0f}M characters in {info['files']} .jsonl.zst files; tokenizer {tokenizer} "
        f"(freqlab backend: {freqlab.get('backend')}); {workers} workers on {os.cpu_count()} cores; "
        f"tokens counted: {tokens:,}.",
        "",
        "| method | timed | time (s) | tokens/s | freqlab (cold) ÷ this | peak RSS (MB) | load avg | same histogram |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    entries = []
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['method']} | failed: {' '.join(r['error'])} | | | | | | |")
            continue
        if r["method"] == "freqlab":
            first = r["wall"] - r["warm_seconds"]  # the process ran a second (warm) scan after the first
            entries.append((r, "freqlab (cold)", "whole process: start-up, tokenizer load, read, count", first))
            entries.append((r, "freqlab (warm)", "a second scan() in the same process: steady state",
                            r["warm_seconds"]))
            startup = (f"start-up (first scan - second): {r['startup_seconds']:.1f} s with the tokenizer cache warm, "
                       f"{r.get('startup_first', r['startup_seconds']):.1f} s on the first run (cache cold)")
        elif r["method"] == "freqlab-1core":
            entries.append((r, r["method"], "a warm scan(workers=1): one core, end to end", r["timed_seconds"]))
        elif r["method"] == "bare-read":
            entries.append((r, r["method"], "decompress + parse (orjson), one core, no tokenizer", r["timed_seconds"]))
        elif r.get("timed_seconds") is not None:
            entries.append((r, r["method"], "encode call only, texts preloaded", r["timed_seconds"]))
        else:
            entries.append((r, r["method"], "whole process", r["wall"]))
    startup = locals().get("startup")
    cold = tokens / entries[0][3] if entries and entries[0][0] is freqlab else None
    seconds_of = {label: seconds for _, label, _, seconds in entries}
    for r, label, timed, seconds in entries:
        rate = (r["tokens"] or tokens) / seconds  # bare-read counts no tokens: the corpus's, per second read
        if r["histogram"] is None:
            same = "-"
        else:
            same = "yes" if r["histogram"] == reference else f"NO ({_difference(r['histogram'], reference)})"
        ratio = f"{cold / rate:.2f}x" if cold else ""
        lines.append(
            f"| {label} | {timed} | {seconds:.1f} | {rate / 1e6:.2f}M | {ratio} | {r['peak_rss'] / 2**20:.0f} "
            f"| {r['load']:.1f} | {same} |"
        )
    lines += ["", "'freqlab (cold) ÷ this': freqlab's end-to-end tokens/s over the row's. The fast rows are the best",
              "of a few runs; 'load avg': 1-minute load average when the run started (the machine is shared).",
              "Peak RSS sums the process tree (workers included)."]
    if startup:
        lines += ["", startup + "."]
    if "freqlab-1core" in seconds_of and "bare-fast" in seconds_of:
        per_core = seconds_of["bare-fast"] * workers  # bare-fast runs on every core's thread
        one_core = seconds_of["freqlab-1core"]
        lines += ["", f"Steady state per core: a warm one-core scan takes {one_core:.1f} s where the "
                  f"bare encode loop takes {per_core:.1f} core-seconds ({per_core / one_core:.0%} "
                  "of its speed; a scan's pool of workers adds its start-up, above)."]
    if "freqlab-1core" in seconds_of and "bare-read" in seconds_of:
        share = seconds_of["bare-read"] / seconds_of["freqlab-1core"]
        lines += ["", f"On one core, reading and parsing alone (bare-read) is {share:.0%} of a whole scan "
                  f"(freqlab-1core): tokenizing and counting are the other {1 - share:.0%}."]
    return "\n".join(lines)


def _difference(a: Counter, b: Counter) -> str:
    keys = [k for k in set(a) | set(b) if a[k] != b[k]]
    tokens = sum(k * v for k, v in a.items()) - sum(k * v for k, v in b.items())
    return f"{len(keys)} lengths differ, tokens {tokens:+,}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"Kinds of text, among {', '.join(KINDS)}.")
    parser.add_argument("--chars", type=float, default=20e6, help="At most this many characters per kind.")
    parser.add_argument("--prose", default=SHARED, help="Glob of the prose .jsonl.zst files (field 'text').")
    parser.add_argument("--short", action="store_true",
                        help="A smoke run: 2M characters a kind, one run of each method.")
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--files", type=int, default=4, help="Files per kind.")
    parser.add_argument("--tokenizer", default=None, help="Tokenizer spec (default: the built-in Tekken).")
    parser.add_argument("--repeats", type=int, default=3, help="Runs of the fast methods (the best is kept).")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--out", default=str(Path(__file__).with_name("bench_scan.md")))
    parser.add_argument("--work", default=None, help="Working folder (default: a temporary one).")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--method", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--tokenizer-json", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--result", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.method = args.child
        run_child(args)
        return
    if args.short:
        args.chars, args.repeats = min(args.chars, 2e6), 1
    work = Path(args.work or tempfile.mkdtemp(prefix="freqlab-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.tokenizer and args.tokenizer.endswith(".json"):
        tokenizer_json = Path(args.tokenizer)  # the same file for every method
    else:
        tokenizer_json = work / "tekken.tokenizer.json"
        if not tokenizer_json.is_file():
            write_tokenizer_json(tokenizer_json)
    prose = sorted(glob.glob(args.prose))
    sections = []
    for kind in args.kinds.split(","):
        folder = work / kind
        if not (work / f"{kind}.json").is_file():
            info = prepare_kind(folder, kind, args.chars, args.files, prose)
            (work / f"{kind}.json").write_text(json.dumps(info))
        info = json.loads((work / f"{kind}.json").read_text())
        if not info["documents"]:
            sections.append(f"### {kind}\n\nNo text found ({info['origin']}).")
            continue
        rows = []
        for method in args.methods.split(","):
            print(f"{kind}: running {method} ...", file=sys.stderr, flush=True)
            repeats = args.repeats if method in FAST else 1
            runs = work / f"{kind}-runs"  # results and the tokenizer cache, outside the corpus folder
            runs.mkdir(exist_ok=True)
            rows.append(best_of(repeats, method, folder, args.workers, tokenizer_json, runs, args.tokenizer))
            if "error" not in rows[-1]:
                print(f"  {rows[-1]['wall']:.1f} s, {rows[-1]['tokens']} tokens", file=sys.stderr, flush=True)
            else:
                print(f"  failed: {rows[-1]['error']}", file=sys.stderr, flush=True)
        sections.append(table(rows, info, args.workers, args.tokenizer or "Tekken (built-in)"))
        Path(args.out).write_text(_report(sections, args))  # after each kind: a long run leaves its tables
    print(_report(sections, args))


def _report(sections: list[str], args) -> str:
    load = os.getloadavg()
    return (
        "# freqlab scan benchmark: varied text, by kind\n\n"
        f"`python scripts/bench_scan.py {' '.join(sys.argv[1:])}`; {time.strftime('%Y-%m-%d %H:%M')}, "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, load average at the end "
        f"{load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}.\n\n" + "\n\n".join(sections) + "\n"
    )


if __name__ == "__main__":
    main()
