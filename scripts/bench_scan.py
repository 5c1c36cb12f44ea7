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
this script), and per tokenizer (``--tokenizer``, repeatable: ``tekken``, a ``tokenizer.json``, or
``llama.cpp:PATH``, PATH's regex respelled as llama.cpp's converters write it).

At scale (``--corpus``): the varied corpus that ``scripts/bench_corpus.py`` wrote once (10^9 characters of every
kind, deduplicated, with a manifest whose SHA-256 are checked here), measured as one corpus, ``--fraction`` of it
(every kind cut alike). datatrove, ``hf-datasets`` and ``bare-hf`` take ~1,000 s per 10^9 characters on 2 cores:
``--baseline-fraction 0.05,0.1`` runs them on those shares of the corpus instead (each beside a freqlab scan of
the same share, whose histogram theirs must equal) and extrapolates their time to the whole corpus in proportion
to tokens from the larger share (the smaller one checks that it is linear: the line through the two gives their
start-up; the table states both).

    python scripts/bench_scan.py                          # every kind, up to 20M characters each
    python scripts/bench_scan.py --short                  # a smoke run: 2M characters a kind, one repeat
    python scripts/bench_scan.py --kinds prose --chars 1e9 --prose '/data/*.jsonl.zst' --methods freqlab,datatrove
    python scripts/bench_scan.py --tokenizer llama3.json --kinds prose,code
    python scripts/bench_corpus.py --out /work/bench_corpus --chars 1e9      # once
    python scripts/bench_scan.py --corpus /work/bench_corpus --methods freqlab,datatrove,bare-fast,bare-read \
        --baseline-fraction 0.05,0.1 --tokenizer llama3.json --tokenizer llama.cpp:llama3.json --tokenizer tekken \
        --repeats 1 --out scripts/bench_scan_1g.md
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
# the shared corpora, beside the checkout (../shared) or beside the folder of worktrees it is in (../../shared)
SHARED = str(
    next((p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if p.is_dir()), ROOT.parent / "shared")
    / "corpora"
    / "*.jsonl.zst"
)
BATCH = 1000
KINDS = ("prose", "code", "docs", "mail", "multilingual", "tiny")


def compile_freqlab() -> None:
    """Compile the freqlab that this interpreter imports to bytecode, as ``pip install`` does, before anything is
    timed: an editable checkout run with ``PYTHONDONTWRITEBYTECODE`` set (as on the machine these benchmarks were
    written on) compiles its ~85 modules from source in every process, the driver and the pool's forkserver alike
    (measured: ``import freqlab.scan`` 0.22 s against 0.16 s), which an installed freqlab never pays.
    """
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("freqlab")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            compileall.compile_dir(folder, quiet=1)


# --- inputs ------------------------------------------------------------------------------------------------
def read_texts(files: list[str]) -> list[str]:
    import zstandard

    texts = []
    for path in files:
        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
            for line in reader.read().split(b"\n"):  # not str.splitlines(): U+2028, U+0085 may stand in a string
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
    return {
        "kind": kind,
        "origin": origin,
        "copies": 1,
        "documents": len(texts),
        "characters": sum(map(len, texts)),
        "files": files,
    }


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


def tokenizer_spec(spec: str | None, work: Path) -> tuple[str | None, Path, str]:
    """(what freqlab loads, the ``tokenizer.json`` the Hugging Face methods load, a label) for ``--tokenizer``:
    the built-in Tekken (none or ``tekken``; datatrove gets Tekken's ranks as a tokenizer.json), a
    ``tokenizer.json`` as it is, or ``llama.cpp:PATH``: PATH with its contractions respelled as llama.cpp's
    converters and GGUF-derived files spell them (``(?:'[sS]|'[tT]|...)`` for ``(?i:'s|'t|...)``, the same
    splits)."""
    if spec in (None, "tekken"):
        path = work / "tekken.tokenizer.json"
        if not path.is_file():
            write_tokenizer_json(path)
        return None, path, "Tekken (built-in)"
    if spec.startswith("llama.cpp:"):
        from freqlab.tokenization.presets import CONTRACTIONS_ASCII, CONTRACTIONS_FOLDED, split_regex

        source = Path(spec.split(":", 1)[1])
        config = json.loads(source.read_text(encoding="utf-8"))
        found = split_regex(config)
        if found is None or CONTRACTIONS_FOLDED not in found[1]:
            raise SystemExit(f"Error: {source}: no Split regex with {CONTRACTIONS_FOLDED} to respell")
        node = config
        for key in found[0][:-1]:
            node = node[key]
        node[found[0][-1]] = found[1].replace(CONTRACTIONS_FOLDED, CONTRACTIONS_ASCII)
        path = work / f"llama.cpp-{source.name}"
        path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
        return str(path), path, f"{source} respelled as llama.cpp writes it ({CONTRACTIONS_ASCII[:18]}...)"
    return spec, Path(spec), f"{spec} (as shipped)" if spec.endswith(".json") else spec


def corpus_slice(corpus: Path, fraction: float, work: Path) -> tuple[Path, dict]:
    """The share ``fraction`` of a bench_corpus.py corpus (its files checked against the manifest's SHA-256): a
    prefix of the files ordered by their rank within their kind ((k + 1/2) / files of the kind), so every kind is
    cut alike; hard links in ``work/slice-{fraction}``."""
    import hashlib

    manifest = json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))
    counts = Counter(f["kind"] for f in manifest["files"])
    seen: Counter = Counter()
    ranked = []
    for entry in manifest["files"]:
        ranked.append(((seen[entry["kind"]] + 0.5) / counts[entry["kind"]], entry))
        seen[entry["kind"]] += 1
    ranked.sort(key=lambda pair: pair[0])
    chosen, size, total = [], 0, manifest["characters"]
    for _, entry in ranked:
        if size >= fraction * total - 1:
            break
        chosen.append(entry)
        size += entry["characters"]
    for entry in chosen:
        digest = hashlib.sha256((corpus / entry["file"]).read_bytes()).hexdigest()
        if digest != entry["sha256"]:
            raise SystemExit(f"Error: {corpus / entry['file']}: SHA-256 {digest} is not the manifest's")
    folder = work / f"slice-{fraction:g}"  # the data files alone (a scan of the corpus folder would read the manifest)
    folder.mkdir(parents=True, exist_ok=True)
    for entry in chosen:
        target = folder / entry["file"]
        if not target.exists():
            try:
                os.link(corpus / entry["file"], target)
            except OSError:  # another file system
                target.symlink_to(corpus / entry["file"])
    kinds = Counter()
    for entry in chosen:
        kinds[entry["kind"]] += entry["characters"]
    origin = f"{corpus} (bench_corpus.py, manifest checked), {fraction:g} of it: " + ", ".join(
        f"{k} {v / 1e6:,.0f}M" for k, v in kinds.items()
    )
    return folder, {
        "kind": f"{size / 1e6:,.0f}M characters of varied text",
        "origin": origin,
        "copies": 1,
        "documents": sum(e["documents"] for e in chosen),
        "characters": size,
        "files": len(chosen),
    }


# --- the methods (each runs in its own process) --------------------------------------------------------------
def method_freqlab(folder: str, workers: int, tokenizer_json: str, spec: str | None = None) -> tuple[Counter, dict]:
    from freqlab.scan import scan

    def once():
        # workers=None: the default a user gets (the engine rule may keep a small scan in this process)
        return scan(folder, tokenizer=spec, workers=None, progress=False, L=[2048], regimes=["natural"])

    start = time.perf_counter()
    result = once()  # cold: tokenizer load (or the cache's entry) + fast-path verification, worker start-up
    cold = time.perf_counter() - start
    start = time.perf_counter()
    again = once()  # warm: a second scan in the same process, as in a notebook: the steady state
    warm = time.perf_counter() - start
    h = result.histogram
    assert again.histogram.counts.tolist() == h.counts.tolist()
    return Counter(dict(zip(h.lengths.tolist(), h.counts.tolist(), strict=True))), {
        "backend": result.summary["tokenizer"]["backend"]
        + (" in this process" if "in this process" in (result.summary["scan"].get("engine_reason") or "") else ""),
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
        "timed_seconds": time.perf_counter() - start,
        "backend": counter.backend,
    }


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
    spec = args.tokenizer[0] if args.tokenizer else None
    hist, extra = METHODS[args.method](args.folder, args.workers, args.tokenizer_json, spec)
    seconds = time.perf_counter() - start
    histogram = sorted(hist.items()) if hist is not None else None
    Path(args.result).write_text(json.dumps({"seconds": seconds, "histogram": histogram, **extra}))
    if args.method.startswith("freqlab"):  # the process then ends as `freqlab scan` ends (no collector pass)
        from freqlab.__main__ import leave_to_the_system

        leave_to_the_system()


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
    command = [
        sys.executable,
        __file__,
        "--child",
        method,
        "--folder",
        str(folder),
        "--workers",
        str(workers),
        "--tokenizer-json",
        str(tokenizer_json),
        "--result",
        str(result),
    ]
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
    return {
        "method": method,
        "wall": wall,
        "peak_rss": peak,
        "histogram": hist,
        "load": load,
        "tokens": tokens,
        **{k: v for k, v in data.items() if k != "histogram"},
    }


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
            entries.append(
                (r, "freqlab (warm)", "a second scan() in the same process: steady state", r["warm_seconds"])
            )
            startup = (
                f"start-up (first scan - second): {r['startup_seconds']:.1f} s with the tokenizer cache warm, "
                f"{r.get('startup_first', r['startup_seconds']):.1f} s on the first run (cache cold)"
            )
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
    lines += [
        "",
        "'freqlab (cold) ÷ this': freqlab's end-to-end tokens/s over the row's. The fast rows are the best",
        "of a few runs; 'load avg': 1-minute load average when the run started (the machine is shared).",
        "Peak RSS sums the process tree (workers included).",
    ]
    if startup:
        lines += ["", startup + "."]
    if "freqlab-1core" in seconds_of and "bare-fast" in seconds_of:
        per_core = seconds_of["bare-fast"] * workers  # bare-fast runs on every core's thread
        one_core = seconds_of["freqlab-1core"]
        lines += [
            "",
            f"Steady state per core: a warm one-core scan takes {one_core:.1f} s where the "
            f"bare encode loop takes {per_core:.1f} core-seconds ({per_core / one_core:.0%} "
            "of its speed; a scan's pool of workers adds its start-up, above).",
        ]
    if "freqlab-1core" in seconds_of:
        per_second = info["documents"] / seconds_of["freqlab-1core"]
        lines += ["", f"A warm one-core scan counts {per_second / 1e6:.2f}M documents per second, end to end."]
    if "freqlab-1core" in seconds_of and "bare-read" in seconds_of:
        share = seconds_of["bare-read"] / seconds_of["freqlab-1core"]
        lines += [
            "",
            f"On one core, reading and parsing alone (bare-read) is {share:.0%} of a whole scan "
            f"(freqlab-1core): tokenizing and counting are the other {1 - share:.0%}.",
        ]
    return "\n".join(lines)


def _difference(a: Counter, b: Counter) -> str:
    keys = [k for k in set(a) | set(b) if a[k] != b[k]]
    tokens = sum(k * v for k, v in a.items()) - sum(k * v for k, v in b.items())
    return f"{len(keys)} lengths differ, tokens {tokens:+,}"


SLOW = ("datatrove", "hf-datasets", "bare-hf")  # on --baseline-fraction slices, extrapolated
SLIMPAJAMA_TOKENS = 627e9


def run_corpus(args, work: Path, spec: str | None) -> str:
    """Every method on a bench_corpus.py corpus (``--corpus``, ``--fraction`` of it) with one tokenizer; the slow
    ones on ``--baseline-fraction`` slices of it (each beside a freqlab scan of the same slice, for the
    histogram), their time on the whole extrapolated (see :func:`corpus_table`)."""
    corpus = Path(args.corpus)
    folder, info = corpus_slice(corpus, args.fraction, work)
    freqlab_spec, tokenizer_json, label = tokenizer_spec(spec, work)
    runs = work / ("runs-" + "".join(c if c.isalnum() else "-" for c in label)[:60])
    runs.mkdir(exist_ok=True)  # results and the tokenizer cache (cold on this tokenizer's first run)
    fractions = sorted({float(f) for f in args.baseline_fraction.split(",")}) if args.baseline_fraction else []
    rows = []
    for method in args.methods.split(","):
        slices = [(folder, info)]
        if method in SLOW and fractions:
            slices = [corpus_slice(corpus, args.fraction * f, work) for f in fractions]
        for where, what in slices:
            print(f"{label}: {method} on {what['characters'] / 1e6:,.0f}M characters ...", file=sys.stderr, flush=True)
            repeats = args.repeats if method in FAST else 1
            row = best_of(repeats, method, where, args.workers, tokenizer_json, runs, freqlab_spec)
            row["characters"] = what["characters"]
            if where != folder and "error" not in row:
                row["reference"] = measure("freqlab", where, args.workers, tokenizer_json, runs, freqlab_spec)
            rows.append(row)
            print(f"  {row.get('wall', 0):.1f} s {row.get('error', '')}", file=sys.stderr, flush=True)

    def plain(value):  # histograms as [length, count] pairs: the raw results, to re-draw the table later
        if isinstance(value, Counter):
            return sorted(value.items())
        return {k: plain(v) for k, v in value.items()} if isinstance(value, dict) else value

    (runs / "rows.json").write_text(json.dumps({"info": info, "rows": [plain(r) for r in rows]}))
    return corpus_table(rows, info, args.workers, label)


def corpus_table(rows: list[dict], info: dict, workers: int, tokenizer: str) -> str:
    """One tokenizer's table on the whole corpus: each method's time, tokens/s, datatrove's time over it and its
    share of the bare encode loop's tokens/s. A slow method measured on slices is extrapolated to the corpus's
    tokens in proportion from its largest slice (datatrove's time is linear in tokens: a second, smaller slice
    checks it, the line through the two giving its start-up)."""
    failed = [r for r in rows if "error" in r]
    done = [r for r in rows if "error" not in r]
    full = [r for r in done if r["characters"] == info["characters"]]
    freqlab = next((r for r in full if r["method"] == "freqlab"), None)
    if freqlab is None:
        return f"### {tokenizer}\n\nfreqlab failed: {failed[0]['error'] if failed else 'not run'}"
    reference, tokens, chars = freqlab["histogram"], freqlab["tokens"], info["characters"]
    bare = next((r for r in full if r["method"] == "bare-fast"), None)
    bare_rate = tokens / bare["timed_seconds"] if bare else None
    estimates, notes = {}, []

    def baseline_of(seconds: float) -> str:
        return f"{seconds / (freqlab['wall'] - freqlab['warm_seconds']):.1f}x freqlab (cold)"

    for method in SLOW:
        measured = sorted(
            (r for r in done if r["method"] == method and r["characters"] != chars), key=lambda r: r["characters"]
        )
        if not measured:
            continue
        largest = measured[-1]
        estimates[method] = largest["wall"] * tokens / largest["tokens"]
        per_m = ", ".join(
            f"{r['wall']:.1f} s for {r['tokens'] / 1e6:,.1f}M tokens ({r['characters'] / 1e6:,.1f}M "
            f"characters, load {r['load']:.1f}): {r['tokens'] / r['wall'] / 1e6:.3f}M tokens/s"
            for r in measured
        )
        check = ""
        if len(measured) >= 2:
            (n1, t1), (n2, t2) = ((r["tokens"], r["wall"]) for r in (measured[0], measured[-1]))
            start = t1 - (t2 - t1) / (n2 - n1) * n1
            along = start + (t2 - start) * tokens / n2
            check = (
                f" The line through the two ({t1:.1f} s at {n1 / 1e6:.1f}M tokens, {t2:.1f} s at "
                f"{n2 / 1e6:.1f}M) meets zero tokens at {start:+.1f} s (a start-up, or slices whose texts "
                f"count at different speeds) and gives {along:.0f} s for the corpus "
                f"({baseline_of(along)})."
            )
        notes.append(
            f"{method}: {per_m}. Extrapolated to the corpus's {tokens / 1e6:,.1f}M tokens in proportion "
            f"to tokens from the largest slice: {estimates[method]:.0f} s.{check}"
        )
    baseline = estimates.get("datatrove") or next((r["wall"] for r in full if r["method"] == "datatrove"), None)
    lines = [
        f"### {info.get('kind', 'corpus')}, {tokenizer}",
        "",
        f"Input: {info['origin']} = {info['documents']:,} documents, {chars:,} characters in {info['files']} "
        f".jsonl.zst files; tokenizer {tokenizer} (freqlab backend: {freqlab.get('backend')}); {workers} workers on "
        f"{os.cpu_count()} cores; tokens counted: {tokens:,}.",
        "",
        "| method | timed | characters | time (s) | tokens/s | datatrove ÷ this | % of bare-fast | peak RSS (MB) "
        "| load avg | same histogram |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def line(label: str, timed: str, r: dict, seconds: float, counted: int, ratio: str, same: str) -> None:
        rate = counted / seconds
        whole = label.startswith("freqlab") and "slice" not in label  # a slice is not compared with the whole's loop
        share = f"{rate / bare_rate:.0%}" if bare_rate and whole else ""
        lines.append(
            f"| {label} | {timed} | {r['characters'] / 1e6:,.0f}M | {seconds:.1f} | {rate / 1e6:.2f}M | "
            f"{ratio} | {share} | {r['peak_rss'] / 2**20:.0f} | {r['load']:.1f} | {same} |"
        )

    def same_as(r: dict, ref: Counter) -> str:
        if r["histogram"] is None:
            return "-"
        return "yes" if r["histogram"] == ref else f"NO ({_difference(r['histogram'], ref)})"

    def vs(seconds: float) -> str:
        return f"{baseline / seconds:.1f}x" if baseline else ""

    for r in done:
        if r["characters"] == chars:
            if r["method"] == "freqlab":
                cold = r["wall"] - r["warm_seconds"]
                line(
                    "freqlab (cold)",
                    "whole process: start-up, tokenizer load, read, count",
                    r,
                    cold,
                    tokens,
                    vs(cold),
                    same_as(r, reference),
                )
                line(
                    "freqlab (warm)",
                    "a second scan() in the same process: steady state",
                    r,
                    r["warm_seconds"],
                    tokens,
                    vs(r["warm_seconds"]),
                    same_as(r, reference),
                )
            elif r["method"] == "bare-read":
                line("bare-read", "decompress + parse (orjson), one core", r, r["timed_seconds"], tokens, "", "-")
            elif r.get("timed_seconds") is not None:
                line(
                    r["method"],
                    "encode call only, texts preloaded",
                    r,
                    r["timed_seconds"],
                    tokens,
                    vs(r["timed_seconds"]),
                    same_as(r, reference),
                )
            else:
                line(r["method"], "whole process", r, r["wall"], tokens, vs(r["wall"]), same_as(r, reference))
        else:
            ref = r["reference"]
            own_ref = ref.get("histogram") if "error" not in ref else None
            line(
                f"{r['method']} (slice)",
                "whole process, on a slice",
                r,
                r["wall"],
                r["tokens"],
                "",
                same_as(r, own_ref) if own_ref is not None else "no reference",
            )
            if own_ref is not None:
                cold = ref["wall"] - ref["warm_seconds"]
                line(
                    "freqlab (cold, slice)",
                    "the same slice, whole process",
                    {**ref, "characters": r["characters"]},
                    cold,
                    r["tokens"],
                    f"{r['wall'] / cold:.1f}x",
                    "-",
                )
    for method, seconds in estimates.items():
        lines.append(
            f"| {method} (extrapolated) | the slices' times extrapolated to the corpus (below) | "
            f"{chars / 1e6:,.0f}M | {seconds:.0f} | {tokens / seconds / 1e6:.2f}M | "
            f"{baseline / seconds:.2f}x | | | | |"
        )
    for r in failed:
        lines.append(f"| {r['method']} | failed: {' '.join(r['error'])} | | | | | | | | |")
    cores = min(workers, os.cpu_count() or workers)
    per_core = tokens / (freqlab["warm_seconds"] * cores)
    startup = freqlab["wall"] - freqlab["warm_seconds"] - freqlab["cold_scan_seconds"]  # before scan() is called
    lines += [
        "",
        "'datatrove ÷ this': datatrove's time on the whole corpus (extrapolated where it ran on slices) over "
        "the row's; '% of bare-fast': the row's tokens/s over the bare encode loop's (fastokens on preloaded "
        "texts, all cores). Fast rows: the best of a few runs; 'load avg': 1-minute load average when the run "
        "started (the machine may be shared); peak RSS sums the process tree.",
        "",
        *notes,
        "",
        f"Start-up (first scan's time - second's): {freqlab['startup_seconds']:.1f} s "
        f"(tokenizer cache warm), {freqlab.get('startup_first', freqlab['startup_seconds']):.1f} s on the first "
        f"run (cache cold); the whole process's first scan {freqlab['wall'] - freqlab['warm_seconds']:.1f} s "
        f"of which ~{max(startup, 0):.1f} s is the interpreter and imports before it.",
        "",
        f"Steady state: {per_core / 1e6:.1f}M tokens per core-second ({tokens:,} tokens in "
        f"{freqlab['warm_seconds']:.1f} s on {cores} cores): SlimPajama-627B ({SLIMPAJAMA_TOKENS / 1e9:.0f}B "
        f"tokens) would take {SLIMPAJAMA_TOKENS / per_core / 3600:.1f} core-hours at this rate.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"Kinds of text, among {', '.join(KINDS)}.")
    parser.add_argument("--chars", type=float, default=20e6, help="At most this many characters per kind.")
    parser.add_argument("--prose", default=SHARED, help="Glob of the prose .jsonl.zst files (field 'text').")
    parser.add_argument(
        "--short", action="store_true", help="A smoke run: 2M characters a kind, one run of each method."
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--files", type=int, default=4, help="Files per kind.")
    parser.add_argument(
        "--tokenizer",
        action="append",
        default=[],
        help="Tokenizer: tekken (the built-in, default), a tokenizer.json, or llama.cpp:PATH (PATH's "
        "regex respelled as llama.cpp writes it); repeatable: a table each.",
    )
    parser.add_argument(
        "--corpus",
        default=None,
        help="A corpus built by bench_corpus.py (folder with manifest.json), measured as one corpus.",
    )
    parser.add_argument("--fraction", type=float, default=1.0, help="With --corpus: this share of it (every kind).")
    parser.add_argument(
        "--baseline-fraction",
        default=None,
        help="With --corpus: run datatrove, hf-datasets and bare-hf on this share of the corpus "
        "(comma-separated: each; two check that time is linear in tokens) and extrapolate.",
    )
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
    compile_freqlab()
    work = Path(args.work or tempfile.mkdtemp(prefix="freqlab-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    sections = []
    if args.corpus:
        for spec in args.tokenizer or [None]:
            sections.append(run_corpus(args, work, spec))
            Path(args.out).write_text(_report(sections, args))  # after each tokenizer: a long run leaves its tables
        print(_report(sections, args))
        return
    prose = sorted(glob.glob(args.prose))
    for spec in args.tokenizer or [None]:
        freqlab_spec, tokenizer_json, label = tokenizer_spec(spec, work)
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
            runs = work / f"{kind}-runs-{len(sections)}"  # results and the tokenizer cache, outside the corpus
            runs.mkdir(exist_ok=True)
            for method in args.methods.split(","):
                print(f"{kind}: running {method} ...", file=sys.stderr, flush=True)
                repeats = args.repeats if method in FAST else 1
                rows.append(best_of(repeats, method, folder, args.workers, tokenizer_json, runs, freqlab_spec))
                if "error" not in rows[-1]:
                    print(f"  {rows[-1]['wall']:.1f} s, {rows[-1]['tokens']} tokens", file=sys.stderr, flush=True)
                else:
                    print(f"  failed: {rows[-1]['error']}", file=sys.stderr, flush=True)
            sections.append(table(rows, info, args.workers, label))
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
