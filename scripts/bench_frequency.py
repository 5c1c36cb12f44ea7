"""Benchmark: exact position frequency at L = 2^20 with 10^6 distinct lengths, and packing 10^8 documents.

Baseline: the naive numpy broadcast f(i) = Σ_l c_l · max(l - i, 0), one row of positions at a time. Run in
full it would take the better part of an hour, so it is timed on a sample of positions and extrapolated
linearly (every position costs the same); its values at those positions are checked against freqlab's.

    python scripts/bench_frequency.py            # writes scripts/bench_frequency.md
"""

from __future__ import annotations

import platform
import time
from pathlib import Path

import numpy as np

from freqlab import position_frequency
from freqlab.frequency import pack_documents, segments

OUT = Path(__file__).with_suffix(".md")


def best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    L = 1 << 20
    lengths = np.unique(rng.integers(1, 1 << 23, 3_000_000))[:1_000_000]
    counts = rng.integers(1, 10_000, lengths.size)
    position_frequency(lengths, counts, L)  # compile the numba kernels outside the timing
    fast = best_of(lambda: position_frequency(lengths, counts, L))
    f = position_frequency(lengths, counts, L)

    segs = segments(lengths, counts, L)
    sample = np.linspace(0, L - 1, 64).astype(np.int64)

    def naive_rows():
        return np.array([(np.maximum(segs.lengths - i, 0) * segs.counts).sum() for i in sample])

    naive_values = naive_rows()
    assert (naive_values == f[sample]).all(), "naive broadcast disagrees with position_frequency"
    naive_sample = best_of(naive_rows, repeat=2)
    naive_full = naive_sample * L / sample.size

    docs = rng.integers(1, 4096, 100_000_000)
    pack_documents(docs[:1000], 2048)  # compile
    pack = best_of(lambda: pack_documents(docs, 2048), repeat=3)

    rows = [
        ("position_frequency, L = 2^20, 10^6 distinct lengths", f"{fast * 1e3:.1f} ms", "1x"),
        (
            "naive numpy broadcast, same input (64 positions timed, extrapolated)",
            f"{naive_full:.0f} s",
            f"{naive_full / fast:,.0f}x slower",
        ),
        ("pack_documents, 10^8 documents, L = 2048 (numba)", f"{pack:.2f} s", ""),
    ]
    lines = [
        "# bench_frequency",
        "",
        f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"numpy {np.__version__}. Best of several runs; exact int64 results checked against the baseline.",
        "",
        "| what | time | ratio |",
        "| --- | --- | --- |",
        *[f"| {a} | {b} | {c} |" for a, b, c in rows],
        "",
    ]
    OUT.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
