"""Benchmark: start-up of the command line, ``freqlab --help`` and ``freqlab --version``, target under 0.3 s.

Each command runs as a fresh process (``subprocess``, output discarded after checking it), N times after one
warm-up run; the table gives the median and the fastest wall time, and the time over the named baseline measured
in the same run: the interpreter's own start-up, ``python -c pass``. ``import freqlab`` and the CLI load nothing
heavy (numba, polars, matplotlib, numpy are imported by the commands that compute); the last row shows what an
eager import of those would cost, for comparison.

    python scripts/bench_cli.py            # writes scripts/bench_cli.md
    python scripts/bench_cli.py --runs 41
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).with_suffix(".md")
TARGET = 0.3  # seconds, for --help and --version (issue 16)
HEAVY = "import numba, polars, matplotlib.pyplot, numpy"


def freqlab_command() -> list[str]:
    """The ``freqlab`` console script next to this interpreter (as a user runs it), else ``python -m freqlab``."""
    script = Path(sys.executable).with_name("freqlab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "freqlab"]


def timed(argv: list[str], runs: int, expect: str) -> list[float]:
    """Wall times of ``runs`` fresh processes (after one warm-up), each checked to exit 0 and print ``expect``."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    times = []
    for k in range(runs + 1):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, env=env)
        seconds = time.perf_counter() - start
        if done.returncode != 0 or expect not in done.stdout:
            raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stdout[-300:]}{done.stderr[-300:]}")
        if k:  # the first run warms the file cache
            times.append(seconds)
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="timed runs per command (median reported)")
    args = parser.parse_args(argv)
    python, cli = sys.executable, freqlab_command()
    cases = [
        ("`python -c pass` (baseline: interpreter start-up)", [python, "-c", "pass"], "", False),
        ('`python -c "import freqlab"`', [python, "-c", "import freqlab; print(freqlab.__version__)"], ".", False),
        ("`freqlab --help`", [*cli, "--help"], "Commands:", True),
        ("`freqlab --version`", [*cli, "--version"], "version", True),
        ("`freqlab scan --help` (loads the scan command)", [*cli, "scan", "--help"], "--dataset", False),
        (f'`python -c "{HEAVY}"` (eager imports, for comparison)', [python, "-c", f"{HEAVY}; print(1)"], "1", False),
    ]
    rows, baseline = [], None
    for name, command, expect, targeted in cases:
        times = timed(command, args.runs, expect)
        median = statistics.median(times)
        baseline = median if baseline is None else baseline
        over = "-" if median is baseline else f"+{(median - baseline) * 1e3:.0f} ms ({median / baseline:.1f}x)"
        verdict = ("yes" if median < TARGET else "NO") if targeted else ""
        rows.append((name, f"{median:.3f} s", f"{min(times):.3f} s", over, verdict))
        print(f"{name}: median {median:.3f} s, fastest {min(times):.3f} s", flush=True)
    OUT.write_text(report(rows, args.runs))
    print(OUT.read_text())


def report(rows: list[tuple[str, ...]], runs: int) -> str:
    """scripts/bench_cli.md: the machine, the method, and one table row per command."""
    machine = (
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared), "
        f"{platform.python_implementation()} {platform.python_version()}."
    )
    method = (
        f'Wall time of a fresh process, {runs} runs each after one warm-up; "over baseline" is against '
        f"`python -c pass` measured in the same run. Target for `--help` and `--version`: under {TARGET} s."
    )
    header = ("command", "median", "fastest", "over baseline", "under target")
    table = [header, tuple("---" for _ in header), *rows]
    return "\n".join(["# bench_cli", "", f"{machine} {method}", "", *("| " + " | ".join(r) + " |" for r in table), ""])


if __name__ == "__main__":
    main()
