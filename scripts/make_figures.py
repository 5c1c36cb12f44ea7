"""Regenerate every figure in ``figures/`` from what runs offline, deterministically.

    python scripts/make_figures.py                  # scan the built-in corpus (about 10-20 s), write figures/
    python scripts/make_figures.py --quick --out /tmp/figs   # no corpus scan: a synthetic histogram (tests)
    python scripts/make_figures.py --histogram freqlab-out/lengths.parquet   # your own scanned corpus

The corpus figures use, in order of preference: ``--histogram``; a scan of the built-in corpus (the Python
standard library of this interpreter, with the default tokenizer, split by source); with ``--quick``, a
seeded synthetic histogram (lognormal lengths in three sources), which the test suite uses to stay fast.
The STRING, Self-Extend and HARPE figures need no corpus (closed forms and the planners). ``figures/README.md``
lists every figure with the command that made it.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np

from freqlab import LengthHistogram, position_frequency
from freqlab.histogram import combine_sources
from freqlab.plots import save_figure

ROOT = Path(__file__).resolve().parents[1]
L = 2048
DPI = 170


def synthetic_histogram(seed: int = 0) -> LengthHistogram:
    """Three sources with lognormal lengths (medians ~250, ~900 and ~5000 tokens), seeded: a stand-in with a
    natural-looking, heavy-tailed distribution when no corpus scan is wanted."""
    rng = np.random.default_rng(seed)
    parts = {
        name: LengthHistogram.from_lengths(np.maximum(1, rng.lognormal(mu, sigma, n).astype(np.int64)), corpus=name)
        for name, mu, sigma, n in (("web", 5.5, 1.0, 20_000), ("code", 6.8, 1.2, 6_000), ("books", 8.5, 1.0, 800))
    }
    return combine_sources(parts, corpus="synthetic (lognormal, seed 0)")


def corpus_histogram(args) -> tuple[LengthHistogram, str]:
    if args.histogram:
        return LengthHistogram.read_parquet(args.histogram), f"--histogram {args.histogram}"
    if args.quick:
        return synthetic_histogram(), "--quick (synthetic histogram)"
    from freqlab.scan import scan

    result = scan(progress=False)
    return result.histogram, "built-in corpus scan (freqlab.scan.scan(), default tokenizer)"


def figures(h: LengthHistogram) -> dict[str, tuple[Callable, str]]:
    """name -> (function returning a Figure, one-line description)."""
    from freqlab import plots
    from freqlab.plan.harpe import PAPER_B_MAX, PAPER_B_MIN, peak_valley_search, table2_bases, uniform_bases

    f = position_frequency(h.lengths, h.counts, L)

    @functools.cache
    def harpe_plan():
        return peak_valley_search()  # the paper's setting: 32 heads, 1M..5M, stride 30k, 128K (run once)

    def string_usage():
        from freqlab.plan.string import plan_string

        plan = plan_string(L, frequency=f)
        return plots.plot_string_usage(L, plan.S, plan.W, frequency=f)

    def envelopes():
        plan = harpe_plan()
        sets = {
            "freqlab search": plan.bases,
            "uniform (Eq. 9)": uniform_bases(32, PAPER_B_MIN, PAPER_B_MAX),
            "Table 2": table2_bases(),
        }
        return plots.plot_envelopes(sets, plan.grid)

    out = {
        "fig1_regimes": (
            lambda: plots.plot_regimes(h, L),
            "STRING Fig. 1a/b/c: natural, uniform, concat, L = 2048 (2K); bars: % of segments per bin of 64 positions; "
            "f(i) on one scale across the panels, the bars on each panel's own",
        ),
        "fig1_natural": (
            lambda: plots.plot_position_frequency(h, L),
            "STRING Fig. 1a alone, one column (bins of 64 positions)",
        ),
        "fig2_effective_length": (
            lambda: plots.plot_effective_length(h, (2048, 4096)),
            "STRING Fig. 2: predicted effective length vs training tokens T, tau = 100B = 10^11",
        ),
        "fig3_windows": (
            lambda: plots.plot_windows(h, (2048, 4096)),
            "STRING Fig. 3: 2K (2048) vs 4K (4096) windows at T = 1T = 10^12 tokens",
        ),
        "string_fig5": (lambda: plots.plot_string_matrices(9, 3, 1), "STRING Fig. 5: L = 9, S = 3, W = 0 and 1"),
        "string_fig8": (
            lambda: plots.plot_string_overview(131072, 43008, 128),
            "STRING Fig. 8a: Llama 3.1 128K (131,072), S = 42K (43,008), W = 128",
        ),
        "string_usage": (string_usage, "positions STRING uses vs RoPE's at L = 2048, S from plan_string"),
        "self_extend_fig3": (
            lambda: plots.plot_self_extend_matrices(7, 2, 4),
            "Self-Extend Fig. 3: L = 7, G = 2, w_n = 4, N = 10",
        ),
        "harpe_waveforms": (
            lambda: plots.plot_waveforms(harpe_plan().bases[:3], harpe_plan().grid),
            "HARPE: waveforms of the first three searched bases; peaks (filled) and valleys (hollow); "
            "distances written out (decimal grid 32,000..130,880)",
        ),
        "harpe_envelopes": (
            envelopes,
            "HARPE: envelopes of the searched, uniform and Table 2 sets; (a) one panel per set, the others in grey",
        ),
    }

    def recipe():
        from freqlab.frequency.schedule import load_preset, schedule_frequency

        return plots.plot_recipe(schedule_frequency(load_preset("gemma3", histogram=h)))

    out["recipe_gemma3"] = (
        recipe,
        "preset gemma3 (5 sliding-window layers of 1K : 1 global; 32K then 128K): f_T per stage and layer kind "
        "(log occurrences, one scale per axis) and the effective length after each stage, tau = 100B = 10^11",
    )
    if h.sources:
        out["sources"] = (lambda: plots.plot_sources(h, L), "length CCDF and f per corpus source")
        out["exposure"] = (
            lambda: plots.plot_exposure(h),
            "tokens with at least c tokens of same-document context per source, and the share beyond 4K, 8K, ...",
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "figures", help="output folder (default: figures/)")
    parser.add_argument("--quick", action="store_true", help="no corpus scan: use a synthetic histogram")
    parser.add_argument("--histogram", type=Path, default=None, help="a scanned lengths.parquet to use instead")
    parser.add_argument("--format", dest="formats", action="append", choices=["png", "pdf", "svg"], default=None)
    parser.add_argument("--only", action="append", default=None, help="make only these figures (repeatable)")
    parser.add_argument("--no-readme", action="store_true", help="do not rewrite OUT/README.md")
    args = parser.parse_args(argv)
    formats = args.formats or ["png"]
    started = time.perf_counter()
    h, source = corpus_histogram(args)
    print(f"histogram: {source}: {h.documents:,} documents, {h.tokens:,} tokens", file=sys.stderr)
    table = figures(h)
    names = args.only or list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        parser.error(f"unknown figure(s) {', '.join(unknown)}; choose from {', '.join(table)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        make, _ = table[name]
        for path in save_figure(make(), args.out / name, formats, dpi=DPI):
            print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB)", file=sys.stderr)
    if not args.no_readme:
        write_readme(args.out, table, h, source, formats)
    print(f"done in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


def write_readme(out: Path, table, h: LengthHistogram, source: str, formats) -> None:
    lines = [
        "# Figures",
        "",
        "Every file here is written by `python scripts/make_figures.py` (deterministic: rerunning it gives the same",
        "bytes with the same Python installation, whose standard library is the built-in corpus).",
        "Units, as in the papers and stated on every axis: positions and lengths count K = 1024 (2K = 2048,",
        "128K = 131,072); tokens and occurrences are decimal, M = 10^6, B = 10^9, T = 10^12 (1T tokens = 10^12);",
        "counts below a million are written out, and HARPE's distances (a decimal grid) too.",
        f"Corpus figures use: {source}; corpus `{h.corpus}`, tokenizer",
        f"`{h.tokenizer or '-'}`, {h.documents:,} documents, {h.tokens:,} tokens. One figure alone:",
        "`python scripts/make_figures.py --only NAME`. The same figures from the command line are",
        "`freqlab plot ...` (see `freqlab plot --help`).",
        "",
        "| figure | what | command |",
        "| --- | --- | --- |",
    ]
    for name, (_, what) in table.items():
        files = ", ".join(f"[{name}.{fmt}]({name}.{fmt})" for fmt in formats)
        lines.append(f"| {files} | {what} | `python scripts/make_figures.py --only {name}` |")
    (out / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
