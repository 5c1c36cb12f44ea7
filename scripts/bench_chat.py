"""Chat-formatted text: documents holding a tokenizer's added tokens, counted around them or by the reference.

Every document of a varied corpus (``scripts/bench_corpus.py``'s ``.jsonl.zst`` parts; each text used once) goes
into one Llama 3 chat turn pair, a user turn and an assistant turn, with the template's markers
(``<|begin_of_text|>``, ``<|start_header_id|>``, ``<|end_header_id|>``, ``<|eot_id|>``): what an SFT or chat
corpus rendered with its template holds. The same scan then runs in this process (one worker: both counters'
engines built once, here; on a pool, the counter made here without ``split_out``, which no cache entry holds, would
be built in every worker of every scan) with the
counter as loaded (texts cut at the markers, the pieces counted by the fast backend: ``TokenCounter.split_out``)
and with the same counter without ``split_out`` (every such text counted by the Hugging Face reference, as
before), each timed on its second scan. The histograms must be identical. A third scan, of the same documents
with every marker's ``<|`` written ``< |`` (no added token left: plain text), is the yardstick for what counting
around the tokens costs.

    python scripts/bench_chat.py --corpus /work/bench_corpus --tokenizer llama3.tokenizer.json --chars 60e6
"""

from __future__ import annotations

import argparse
import glob
import io
import json
import os
import platform
import tempfile
import time
from pathlib import Path

TEMPLATE = (
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n{user}<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n{assistant}<|eot_id|>"
)


def make_chats(corpus: str, out: Path, chars: float, template: str = TEMPLATE) -> tuple[int, int]:
    """Write chat documents from the corpus's texts (two texts per document, each used once) to ``out``; returns
    (documents, characters)."""
    import zstandard

    documents = characters = 0
    out.mkdir(parents=True, exist_ok=True)
    for k, path in enumerate(sorted(glob.glob(os.path.join(corpus, "*.jsonl.zst")))):
        with open(path, "rb") as fh:
            lines = zstandard.ZstdDecompressor().stream_reader(fh).read().splitlines()
        texts = [json.loads(line)["text"] for line in lines]
        buffer = io.StringIO()
        for user, assistant in zip(texts[::2], texts[1::2], strict=False):
            chat = template.format(user=user, assistant=assistant)
            buffer.write(json.dumps({"text": chat}) + "\n")
            documents, characters = documents + 1, characters + len(chat)
            if characters >= chars:
                break
        (out / f"chat-{k:04d}.jsonl.zst").write_bytes(zstandard.compress(buffer.getvalue().encode("utf-8")))
        if characters >= chars:
            break
    return documents, characters


def timed_scans(folder: Path, counter) -> tuple[float, list]:
    from freqlab.scan import scan

    scan(str(folder), tokenizer=counter, workers=1, progress=False)  # the counter's engines, built here
    start = time.perf_counter()
    result = scan(str(folder), tokenizer=counter, workers=1, progress=False)
    return time.perf_counter() - start, [result.histogram.lengths.tolist(), result.histogram.counts.tolist()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True, help="Folder of .jsonl.zst parts (scripts/bench_corpus.py).")
    parser.add_argument("--tokenizer", required=True, help="A Llama 3 tokenizer.json.")
    parser.add_argument("--chars", type=float, default=60e6, help="Characters of chat documents to make.")
    parser.add_argument("--out", default=str(Path(__file__).with_name("bench_chat.md")))
    args = parser.parse_args()

    from freqlab.tokenization import load_tokenizer
    from freqlab.tokenization.counter import TokenCounter

    counter = load_tokenizer(args.tokenizer)
    if not counter.split_out:
        raise SystemExit(f"Error: {args.tokenizer}: no added token is split out ({counter.backends})")
    routed = TokenCounter(**{**counter._state(), "split_out": ()})  # every chat document to the reference
    with tempfile.TemporaryDirectory(prefix="freqlab-chat-") as work:
        folder = Path(work) / "chat"
        documents, characters = make_chats(args.corpus, folder, args.chars)
        split_seconds, split_histogram = timed_scans(folder, counter)
        routed_seconds, routed_histogram = timed_scans(folder, routed)
        make_chats(args.corpus, Path(work) / "plain", args.chars, TEMPLATE.replace("<|", "< |"))
        plain_seconds, _ = timed_scans(Path(work) / "plain", counter)
    if split_histogram != routed_histogram:
        raise SystemExit("Error: the two histograms differ")
    tokens = sum(length * count for length, count in zip(*split_histogram, strict=True))
    lines = [
        "# Chat-formatted text: counted around the added tokens, or by the reference",
        "",
        f"`python scripts/bench_chat.py --corpus {args.corpus} --tokenizer {args.tokenizer} --chars {args.chars:g}`;"
        f" {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, Python {platform.python_version()},"
        f" {os.cpu_count()} cores, load average at the end {os.getloadavg()[0]:.1f}.",
        "",
        f"{documents:,} chat documents, {characters:,} characters, {tokens:,} tokens (backend {counter.backend});"
        " one process, one worker, the second scan of each timed; identical histograms.",
        "",
        "| texts holding added tokens | scan (s) | tokens/s |",
        "|---|---:|---:|",
        f"| cut at the tokens, pieces on {counter.backend} (`split_out`) | {split_seconds:.2f} |"
        f" {tokens / split_seconds / 1e6:.1f}M |",
        f"| counted whole by the reference ({counter.reference}) | {routed_seconds:.2f} |"
        f" {tokens / routed_seconds / 1e6:.1f}M |",
        f"| (the same documents, markers written `< \\|`: no added token; tokens differ) | {plain_seconds:.2f} | |",
        "",
        f"Ratio: {routed_seconds / split_seconds:.1f}x.",
        "",
    ]
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
