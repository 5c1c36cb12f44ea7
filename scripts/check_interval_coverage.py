"""How often a sampled scan's 95% interval holds the full corpus's share, on corpora whose lengths are lighter and
heavier tailed: the simulation behind ``freqlab.scan.uncertainty.HEAVY_TAIL_SHARE`` and the README's figures.

Each corpus is 200,000 synthetic document lengths with a known answer (:func:`mass_shares` of the whole corpus);
each trial keeps every document with probability ``rate`` (as ``--sample-rate`` does), takes the sample's
interval (:func:`share_intervals`, 400 replicates) and counts whether it holds the corpus's share, for both shares
(i <= L/2, i >= 3L/4; L = 2048, natural). Beside the coverage: how often the sample's interval carries the
heavy-tail caveat, and the median share of the sampled position mass in the largest sampled document.

    python scripts/check_interval_coverage.py --out scripts/check_interval_coverage.md    # ~30 s, 1 core
"""

from __future__ import annotations

import argparse
import datetime
import platform

import numpy as np

from freqlab.scan.uncertainty import HEAVY_TAIL_SHARE, SHARES, mass_shares, share_intervals

L, REGIME, DOCUMENTS = 2048, "natural", 200_000

CORPORA = {
    "lognormal(6.5, 1.3) lengths (web-like)": lambda rng: rng.lognormal(6.5, 1.3, DOCUMENTS),
    "98% lognormal(6.5, 1.3) + 2% lognormal(11, 1) (books, median ~60K tokens)": lambda rng: np.where(
        rng.random(DOCUMENTS) < 0.02, rng.lognormal(11, 1.0, DOCUMENTS), rng.lognormal(6.5, 1.3, DOCUMENTS)
    ),
    "Pareto(1.1) lengths from 200 tokens, capped at 5M (infinite variance)": lambda rng: np.minimum(
        (rng.pareto(1.1, DOCUMENTS) + 1) * 200, 5_000_000
    ),
}


def coverage(lengths: np.ndarray, rate: float, trials: int, rng: np.random.Generator) -> dict:
    values, counts = np.unique(lengths, return_counts=True)
    truth = mass_shares(values, counts, L, REGIME)
    held, caveats, largest = np.zeros(len(SHARES)), 0, []
    for trial in range(trials):
        kept = lengths[rng.random(lengths.size) < rate]
        ci = share_intervals(*np.unique(kept, return_counts=True), L, REGIME, replicates=400, seed=trial)
        held += [ci[share][0] <= truth[k] <= ci[share][1] for k, share in enumerate(SHARES)]
        caveats += "caveat" in ci
        largest.append(ci["largest_document_share"])
    return {"held": held / trials, "caveat": caveats / trials, "largest": float(np.median(largest))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=150)
    parser.add_argument("--out", help="write the table here (markdown) as well as printing it")
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    lines = [
        f"# Sampled scans' 95% intervals on light and heavy tails ({datetime.date.today()}, Python "
        f"{platform.python_version()})",
        "",
        f"`python scripts/check_interval_coverage.py --trials {args.trials}`: {DOCUMENTS:,} documents per corpus, "
        f"L = {L}, {REGIME}; {args.trials} samples per row. 'held': how often the interval held the corpus's share "
        f"(i <= L/2, i >= 3L/4); 'caveat': how often the interval carried the heavy-tail caveat (largest sampled "
        f"document over {HEAVY_TAIL_SHARE:.0%} of the sampled position mass).",
        "",
        "| corpus | documents sampled | held (i <= L/2) | held (i >= 3L/4) | caveat | largest document (median) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, make in CORPORA.items():
        lengths = np.maximum(make(rng), 1).astype(np.int64)
        for rate in (0.004, 0.02):
            row = coverage(lengths, rate, args.trials, rng)
            lines.append(
                f"| {name} | ~{round(rate * DOCUMENTS):,} | {row['held'][0]:.0%} | {row['held'][1]:.0%} | "
                f"{row['caveat']:.0%} | {row['largest']:.1%} |"
            )
            print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
