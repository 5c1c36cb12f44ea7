"""Benchmark: exact position frequency at L = 2^20 with 10^6 distinct lengths, and packing 10^8 documents.

Baseline: the naive numpy broadcast f(i) = Σ_l c_l · max(l - i, 0), one row of positions at a time. Run in
full it would take the better part of an hour, so it is timed on a sample of positions and extrapolated
linearly (every position costs the same); its values at those positions are checked against freqlab's.

    python scripts/bench_frequency.py            # writes scripts/bench_frequency.md
    python scripts/bench_frequency.py --recipes  # layouts, exposure, staged recipes at L = 128K and 1M:
                                                 # writes scripts/bench_recipes.md (a short run)
"""

from __future__ import annotations

import argparse
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


def curricula_rows(rng) -> list[tuple[str, str]]:
    """Curricula inside a stage and PoSE at L = 128K and 1M: O(L·log rows + distinct windows) for ``concat``,
    O(documents + rows) for ``pack``; PoSE's exact expectation O(target + distinct lengths)."""
    from freqlab.frequency.curricula import curriculum_from_spec
    from freqlab.frequency.pose import position_ids_from_spec

    lengths = np.unique(rng.integers(1, 1 << 20, 40_000))[:20_000]
    counts = rng.integers(1, 200, lengths.size)
    tokens = int(np.dot(lengths, counts))
    specs = [
        (
            "warm-up, linear, truncate",
            {"kind": "warmup", "start": 64, "share": 0.3, "batch_rule": "truncate"},
            "concat",
        ),
        (
            "warm-up, 8 plateaus, rechunk",
            {"kind": "warmup", "start": 64, "share": 0.3, "steps": 8, "batch_rule": "rechunk"},
            "concat",
        ),
        ("SkyLadder, sine over 70%", {"kind": "skyladder", "growth": "sine", "share": 0.7}, "concat"),
        (
            "SkyLadder, linear over 70%, document mask",
            {"kind": "skyladder", "share": 0.7, "document_mask": True},
            "pack",
        ),
        (
            "Dataset Decomposition, buckets 256..8K",
            {"kind": "dataset-decomposition", "buckets": [256, 8192]},
            "natural",
        ),
    ]
    rows = []
    for L, name in ((1 << 17, "128K"), (1 << 20, "1M")):
        for label, spec, regime in specs:
            curriculum = curriculum_from_spec(spec)
            result = curriculum.frequency(lengths, counts, L, regime)
            assert result.tokens + result.dropped_tokens <= tokens
            timed = best_of(lambda c=curriculum, L=L, r=regime: c.frequency(lengths, counts, L, r), repeat=2)
            rows.append((f"{label}, {regime}, L = {name}", f"{timed:.2f} s"))
        pose = position_ids_from_spec({"kind": "pose", "factor": 4})
        binned = lengths[:: lengths.size // 64], counts[:: lengths.size // 64]  # one common denominator: few rows
        timed = best_of(lambda L=L, pose=pose, binned=binned: pose.frequency(*binned, L, "natural"), repeat=2)
        rows.append(
            (f"PoSE exact expectation, target 4L, L = {name}, {binned[0].size} distinct lengths", f"{timed:.2f} s")
        )
    return rows


def recipes() -> None:
    """Layouts (sliding window, chunked, global), the exposure histogram and a seven-stage preset at L = 128K and 1M:
    each stays O(L + distinct lengths) per stage (``pack``: O(documents + tokens / C)), never O(tokens)."""
    from freqlab import LengthHistogram
    from freqlab.frequency.exposure import exposure_histogram, frequency_from_exposure
    from freqlab.frequency.layouts import layout_frequency
    from freqlab.frequency.schedule import load_preset, schedule_frequency

    rng = np.random.default_rng(0)
    lengths = np.unique(rng.integers(1, 1 << 21, 3_000_000))[:1_000_000]
    counts = rng.integers(1, 1000, lengths.size)
    tokens = int(np.dot(lengths, counts))
    layout = "5*swa4K+chunk8K+global+nope"
    layout_frequency(lengths[:10], counts[:10], 1024, layout)  # compile the numba kernels outside the timing
    layout_frequency(lengths[:10], counts[:10], 1024, layout, "pack")
    rows = []
    for L, name in ((1 << 17, "128K"), (1 << 20, "1M")):
        lf = layout_frequency(lengths, counts, L, layout)
        h = exposure_histogram(lengths, counts, L)
        assert (frequency_from_exposure(h) == lf["global"].f).all(), "f(i) = Σ_{c >= i} h(c) must hold exactly"
        timed = best_of(lambda L=L: layout_frequency(lengths, counts, L, layout), repeat=3)
        rows.append(
            (
                f"layout {layout}, natural, L = {name}, 10^6 distinct lengths, {tokens:.2e} tokens",
                f"{timed * 1e3:.0f} ms",
            )
        )
        timed = best_of(lambda L=L: exposure_histogram(lengths, counts, L), repeat=3)
        rows.append((f"exposure histogram h(c), natural, L = {name}, same input", f"{timed * 1e3:.0f} ms"))
    docs = np.unique(rng.integers(1, 1 << 17, 200_000))
    doc_counts = rng.integers(1, 10, docs.size)
    timed = best_of(lambda: layout_frequency(docs, doc_counts, 1 << 20, layout, "pack"), repeat=2)
    rows.append(
        (
            f"layout {layout}, pack, L = 1M, {int(doc_counts.sum()):,} documents (seeded stream walked twice)",
            f"{timed:.2f} s",
        )
    )
    h = LengthHistogram.from_counts(docs, doc_counts)
    preset = load_preset("llama3", histogram=h)
    timed = best_of(lambda: schedule_frequency(preset), repeat=2)
    rows.append(
        (
            f"preset llama3 (7 stages, 8K..128K, pack) on the pack histogram above ({h.documents:,} documents)",
            f"{timed:.2f} s",
        )
    )
    rows += curricula_rows(rng)
    lines = [
        "# bench_recipes (`python scripts/bench_frequency.py --recipes`)",
        "",
        f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"numpy {np.__version__}. Best of 2-3 runs (a short run); the exposure identity checked exactly; curricula "
        "and PoSE on 20,000 distinct lengths (~2·10^6 documents), each result's f(0) checked against its tokens.",
        "",
        "| what | time |",
        "| --- | --- |",
        *[f"| {a} | {b} |" for a, b in rows],
        "",
    ]
    OUT.with_name("bench_recipes.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipes", action="store_true", help="time layouts, exposure and a staged preset only")
    recipes() if parser.parse_args().recipes else main()
