#!/usr/bin/env python
"""Make the corpus of the engine benchmark (``scripts/bench_engine.md``; not a test): one ``.jsonl.zst`` of varied
real text, never repeated: the standard library's and installed packages' ``.py``, ``.md``, ``.rst`` and ``.txt``
files, each file one document, deduplicated by content, in path order, up to ``--chars`` characters.

    python scripts/bench_engine.py /tmp/varied.jsonl.zst --chars 245e6
    freqlab scan /tmp/varied.jsonl.zst --workers 1      # then time whole processes, e.g. with /usr/bin/time -v
    freqlab scan /tmp/varied.jsonl.zst --workers 2
"""

from __future__ import annotations

import argparse
import hashlib
import site
import sys
import sysconfig
from pathlib import Path

SUFFIXES = (".py", ".md", ".rst", ".txt")


def sources() -> list[Path]:
    """Folders to read: the standard library, then site-packages (the venv's and the user's)."""
    roots = [Path(sysconfig.get_paths()["stdlib"]), *map(Path, site.getsitepackages())]
    return [root for root in roots if root.is_dir()]


def documents(limit: float):
    """Distinct non-empty texts of the files under :func:`sources`, until ``limit`` characters."""
    seen: set[bytes] = set()
    total = 0
    for root in sources():
        for path in sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
            if not text.strip() or digest in seen:
                continue
            seen.add(digest)
            yield text
            total += len(text)
            if total >= limit:
                return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="the .jsonl.zst to write")
    parser.add_argument("--chars", type=float, default=245e6, help="characters of text (default 245e6)")
    args = parser.parse_args()
    import orjson
    import zstandard

    count = chars = 0
    with open(args.out, "wb") as raw, zstandard.ZstdCompressor(level=3).stream_writer(raw) as out:
        for text in documents(args.chars):
            out.write(orjson.dumps({"text": text}) + b"\n")
            count += 1
            chars += len(text)
    print(f"{args.out}: {count:,} documents, {chars / 1e6:.1f}M characters", file=sys.stderr)


if __name__ == "__main__":
    main()
