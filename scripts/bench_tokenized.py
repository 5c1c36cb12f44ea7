#!/usr/bin/env python
"""Benchmark ``freqlab scan`` on tokenized data (not a test): speed on a large Megatron index, and identity of
the histogram with tokenizing the same text.

1. Speed: a synthetic Megatron index of ``--documents`` single-sequence documents (geometric lengths, mean
   ~600 tokens), written with numpy following ``indexed_dataset.py``'s layout; its ``.bin`` is a sparse file
   of the right size (only its size and the first documents' last tokens are read). ``freqlab scan`` runs in
   a fresh process (all cores); peak memory is the sum of the RSS of it and its workers, sampled every 50 ms
   (the index is read with plain reads into reused buffers, so RSS is what the scan holds). Run at 10x fewer
   documents too, to show the memory is flat and the time linear; and once more after emptying the page cache
   (``/proc/sys/vm/drop_caches``, root only), so the index is read from disk.
2. Identity: ``../shared/corpora/*.jsonl.zst`` (beside the checkout; ``--corpus``) tokenized with the built-in
   Tekken (exported as a ``tokenizer.json``) into a datatrove ``.ds`` (``DocumentTokenizer``,
   ``eos_token="</s>"``) and into a Megatron index written here from HF ``tokenizers`` ids plus the EOD (as
   ``--append-eod``); both scanned, compared with ``freqlab scan`` of the text (Tekken via tiktoken) with one
   token added per document.

    python scripts/bench_tokenized.py --documents 1e8 --out scripts/bench_tokenized.md
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

SHARED = str(Path(__file__).resolve().parents[2] / "shared" / "corpora" / "*.jsonl.zst")  # beside the checkout
EOD = 2  # </s> in Tekken


def write_synthetic_index(prefix: Path, documents: int, seed: int = 0, block: int = 1 << 24) -> int:
    """A Megatron index of ``documents`` one-sequence documents, int32 tokens; returns the token count."""
    rng = np.random.default_rng(seed)
    tokens = 0
    idx = open(f"{prefix}.idx", "wb")  # noqa: SIM115 - written in three passes, the second reads it back
    idx.write(b"MMIDIDX\x00\x00" + struct.pack("<Q", 1) + struct.pack("<B", 4))
    idx.write(struct.pack("<Q", documents) + struct.pack("<Q", documents + 1))
    lengths_at = idx.tell()
    for start in range(0, documents, block):  # sequence lengths
        lengths = np.minimum(rng.geometric(1 / 600, min(block, documents - start)), 1 << 20).astype(np.int32)
        idx.write(lengths.tobytes())
    pointer = 0
    idx.flush()
    with open(f"{prefix}.idx", "rb") as again:  # pointers: 4 bytes per token before each sequence
        again.seek(lengths_at)
        for start in range(0, documents, block):
            lengths = np.frombuffer(again.read(4 * min(block, documents - start)), np.int32).astype(np.int64)
            ends = pointer + 4 * np.cumsum(lengths)
            idx.write(np.concatenate([[pointer], ends[:-1]]).tobytes())
            pointer = int(ends[-1])
            tokens += int(lengths.sum())
    for start in range(0, documents + 1, block):  # document_indices: 0, 1, ..., documents
        idx.write(np.arange(start, min(start + block, documents + 1), dtype=np.int64).tobytes())
    idx.close()
    with open(f"{prefix}.bin", "wb") as data:
        data.truncate(pointer)  # sparse: the right size, no disk used
    return tokens


def timed_scan(args: list[str]) -> dict:
    """Run ``freqlab scan ARGS --json`` in a fresh process: wall time, peak RSS of it and its workers, summary."""
    import psutil

    start = time.perf_counter()
    process = subprocess.Popen(
        [shutil.which("freqlab") or "freqlab", "scan", *args, "--json", "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = 0
    parent = psutil.Process(process.pid)
    while process.poll() is None:
        try:
            rss = parent.memory_info().rss + sum(c.memory_info().rss for c in parent.children(recursive=True))
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.05)
    out, err = process.communicate()
    wall = time.perf_counter() - start
    if process.returncode:
        raise SystemExit(f"freqlab scan failed: {err.strip()}")
    return {"wall": wall, "peak_mb": peak / 2**20, "summary": json.loads(out)}


def drop_page_cache() -> bool:
    """Empty the kernel's page cache (root only), so the next scan reads the index from disk."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
        return True
    except OSError:
        return False


def speed(folder: Path, documents: int) -> list[dict]:
    rows = []
    for n in (documents // 10, documents):
        prefix = folder / f"synthetic_{n}"
        begin = time.perf_counter()
        tokens = write_synthetic_index(prefix, n)
        written = time.perf_counter() - begin
        args = ["--dataset", f"{prefix}.idx", "--L", "4096", "--regime", "natural"]
        run = timed_scan([*args, "--out", str(folder / f"out_{n}")])  # the page cache as the writer left it
        summary = run["summary"]
        assert summary["documents"]["read"] == n and summary["tokens"] == tokens
        cold = timed_scan([*args, "--out", str(folder / f"cold_{n}")]) if drop_page_cache() else None
        rows.append(
            {
                "documents": n,
                "tokens": tokens,
                "idx_gb": os.path.getsize(f"{prefix}.idx") / 1e9,
                "write_s": written,
                **{k: run[k] for k in ("wall", "peak_mb")},
                "scan_s": summary["scan"]["wall_seconds"],
                "workers": summary["scan"]["workers"],
                "cold_s": cold["wall"] if cold else None,
            }
        )
        os.remove(f"{prefix}.idx")
        os.remove(f"{prefix}.bin")
    return rows


def identity(folder: Path, sources: list[str]) -> dict:
    import zstandard
    from datatrove.data import Document
    from datatrove.pipeline.tokens import DocumentTokenizer
    from tokenizers import Tokenizer

    from freqlab.scan import scan
    from freqlab.tokenization.export import tekken_to_hf_json

    texts = []
    for path in sources:
        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
            texts += [json.loads(line)["text"] for line in reader.read().decode().splitlines() if line.strip()]
    tokenizer_json = folder / "tokenizer.json"
    tokenizer_json.write_text(tekken_to_hf_json(), encoding="utf-8")
    os.environ["HF_HUB_OFFLINE"] = "1"
    begin = time.perf_counter()
    DocumentTokenizer(
        str(folder / "ds"),
        tokenizer_name_or_path=str(tokenizer_json),
        eos_token="</s>",
        shuffle_documents=False,
        save_filename="corpus",
    ).run(iter(Document(text=t, id=str(k)) for k, t in enumerate(texts)))
    datatrove_s = time.perf_counter() - begin
    hf = Tokenizer.from_file(str(tokenizer_json))
    ids = [[*e.ids, EOD] for e in hf.encode_batch(texts, add_special_tokens=False)]
    lengths = np.array([len(x) for x in ids], np.int64)
    prefix = folder / "corpus_text_document"
    (folder / "corpus_text_document.bin").write_bytes(np.concatenate(ids).astype(np.int32).tobytes())
    with open(f"{prefix}.idx", "wb") as idx:
        idx.write(b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 4, lengths.size, lengths.size + 1))
        idx.write(lengths.astype(np.int32).tobytes())
        idx.write((4 * np.concatenate([[0], np.cumsum(lengths)[:-1]])).astype(np.int64).tobytes())
        idx.write(np.arange(lengths.size + 1, dtype=np.int64).tobytes())
    jsonl = folder / "texts.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")

    def pairs(result, shift=0) -> list[tuple[int, int]]:
        h = result.histogram
        out = dict(zip((h.lengths + shift).tolist(), h.counts.tolist()))
        if h.empty_documents:
            out[shift] = out.get(shift, 0) + h.empty_documents
        return sorted(out.items())

    text = scan(str(jsonl), tokenizer="tekken", progress=False)
    (ds,) = (folder / "ds").glob("*.ds")
    from_ds = scan(str(ds), progress=False)
    from_idx = scan(f"{prefix}.idx", progress=False)
    return {
        "documents": len(texts),
        "tokens": int(text.histogram.tokens) + len(texts),
        "same_ds": pairs(text, 1) == pairs(from_ds),
        "same_idx": pairs(text, 1) == pairs(from_idx),
        "text_s": text.summary["scan"]["wall_seconds"],
        "ds_s": from_ds.summary["scan"]["wall_seconds"],
        "idx_s": from_idx.summary["scan"]["wall_seconds"],
        "datatrove_tokenize_s": datatrove_s,
        "eos": from_ds.summary["corpus"]["description"]["eos"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=float, default=1e8)
    parser.add_argument("--corpus", nargs="*", default=sorted(glob.glob(SHARED)))
    parser.add_argument("--out", default=str(Path(__file__).with_suffix(".md")))
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench_tokenized_", dir=os.environ.get("BENCH_TMP")))
    try:
        rows = speed(folder, int(args.documents))
        same = identity(folder, args.corpus) if args.corpus else None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    lines = [
        "# bench_tokenized",
        "",
        f"`python scripts/bench_tokenized.py --documents {args.documents:.0e}`, {os.cpu_count()} cores; one run.",
        "",
        "| documents | tokens | .idx (GB) | write .idx (s) | freqlab scan, whole process (s) | scan() wall (s) "
        "| documents/s | peak RSS, process + workers (MB) | whole process, page cache emptied first (s) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cold = f"{r['cold_s']:.1f}" if r["cold_s"] is not None else "not measured (needs root)"
        lines.append(
            f"| {r['documents']:,} | {r['tokens']:,} | {r['idx_gb']:.2f} | {r['write_s']:.1f} | "
            f"{r['wall']:.1f} | {r['scan_s']:.1f} | {r['documents'] / r['scan_s']:.3g} | "
            f"{r['peak_mb']:,.0f} | {cold} |"
        )
    if same:
        lines += [
            "",
            f"Identity on {', '.join(os.path.basename(c) for c in args.corpus)}: {same['documents']:,} "
            f"documents, {same['tokens']:,} tokens with the EOS. Histogram of `freqlab scan` of the text "
            f"(Tekken, +1 per document) equal to the datatrove `.ds` one: **{same['same_ds']}**; to the "
            f"Megatron index one: **{same['same_idx']}**. Scan times: text {same['text_s']:.1f} s, .ds "
            f"{same['ds_s']:.2f} s, .idx {same['idx_s']:.2f} s (datatrove's tokenization took "
            f"{same['datatrove_tokenize_s']:.1f} s). EOS check of the .ds: {same['eos']}.",
        ]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
