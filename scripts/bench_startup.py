#!/usr/bin/env python
"""Benchmark the start-up of a ``freqlab`` scan on the local pool (not a test): whole processes, the tokenizer cache
cold and warm, and a timeline of where the start-up goes.

Each run is a fresh process that calls ``scan()`` twice on the same corpus (default workers: the pool on every
core), with what ``freqlab scan`` sets in its own process first (:func:`freqlab.__main__.idle_blas_threads_sleep`).
The first call pays the start-up (imports done, tokenizer load or cache hit, forkserver, workers, their
tokenizer); the second, in the same process, reuses the forkserver and the loaded counter: the steady state.
start-up = (interpreter and imports before the first scan) + (first scan - second scan). Runs: one with the cache
cold (a fresh ``FREQLAB_CACHE_DIR``: load, verify, write the entry), then ``--repeats`` with it warm.

The timeline of the last warm run marks, per process (driver, forkserver, workers), the imports, the tokenizer
load, the cache entry read, every tokenizer backend built (fastokens, Hugging Face...), the pool's workers starting
and their first shard; times from just before the interpreter starts.

    python scripts/bench_startup.py --corpus '/work/bench_corpus/*.jsonl.zst' \
        --tokenizer /work/bench_tokenizers/llama3.tokenizer.json --tokenizer tekken --out scripts/bench_startup.md
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T0_ENV, LOG_ENV = "BENCH_STARTUP_T0", "BENCH_STARTUP_LOG"
_FORKSERVER_PID = os.getpid()  # in the forkserver's copy of this module (its preload); workers fork from it
_ROLE = "driver" if __name__ == "__main__" else None
_HOOKS = Path(__file__).stem  # this file, as the module the forkserver preloads (the pool hides __main__'s __file__)


# --- the timeline (driver, and via the forkserver's preload, forkserver and workers) ----------------------------
def mark(what: str, started: float | None = None, ended: float | None = None) -> None:
    """Append ``pid role at [took] what`` to the log named by the environment (``ended``: default now)."""
    log = os.environ.get(LOG_ENV)
    if not log:
        return
    now = time.time() if ended is None else ended
    role = _ROLE or ("forkserver" if os.getpid() == _FORKSERVER_PID else "worker")
    took = now - started if started is not None else None
    with open(log, "a", encoding="utf-8") as out:
        out.write(json.dumps([os.getpid(), role, now - float(os.environ[T0_ENV]), took, what]) + "\n")


def timed(owner, name: str, label: str) -> None:
    """Wrap ``owner.name`` so that each call is marked with its duration."""
    function = getattr(owner, name)

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        started = time.time()
        try:
            return function(*args, **kwargs)
        finally:
            mark(label, started)

    setattr(owner, name, wrapper)


def install_hooks(driver: bool) -> None:
    """Mark backend builds and cache reads everywhere; pool workers' start and first shard (not in the driver:
    its pickles must name the real functions)."""
    from freqlab.tokenization import cache, counter

    get = counter.Engines.get

    def get_marked(self, backend):
        if backend in self._built:
            return get(self, backend)
        started = time.time()
        engine = get(self, backend)
        mark(f"build {backend}", started)
        return engine

    counter.Engines.get = get_marked
    timed(cache, "read_entry", "read the cache entry")
    if not driver:  # the pool's functions, patched before the forkserver's first fork: importing them now would
        os.register_at_fork(before=_hook_pool)  # delay the forkserver's tokenizer build (it imports freqlab.scan)


def _hook_pool() -> None:
    from freqlab.scan.engines import local

    if getattr(local._pool_count, "hooked", False):
        return
    try:
        from freqlab import fastokens_ahead
    except ImportError:  # a checkout from before it (a baseline on PYTHONPATH)
        fastokens_ahead = None
    if fastokens_ahead is not None and "start" in fastokens_ahead.TIMES:
        mark(
            "build fastokens ahead (from the entry's .fastokens file)",
            *map(fastokens_ahead.TIMES.get, ("start", "end")),
        )
    mark("preloaded (imports and build): first fork")
    timed(local, "_pool_init", "worker start (unpickle the job)")
    count = local._pool_count
    first = []

    @functools.wraps(count)
    def count_marked(shard, options):
        started = time.time()
        try:
            return count(shard, options)
        finally:
            if not first:
                first.append(True)
                mark("first shard", started)

    count_marked.hooked = True
    local._pool_count = count_marked


if __name__ != "__main__" and os.environ.get(T0_ENV):  # imported by the forkserver (first of its preload)
    install_hooks(driver=False)


# --- one measured process -----------------------------------------------------------------------------------------
def child(corpus: str, spec: str | None) -> None:
    """Scan twice, marking the driver's steps; print the two scans' times as JSON."""
    mark("interpreter started")
    started = time.time()
    import freqlab.__main__ as command_line

    # what `freqlab scan` sets before numpy loads (older checkouts, measured as baselines, have nothing to set)
    getattr(command_line, "idle_blas_threads_sleep", lambda: None)()
    from freqlab.scan import driver, scan
    from freqlab.scan.engines import local

    mark("import freqlab.scan", started)
    install_hooks(driver=True)
    timed(driver, "load_counter", "load the tokenizer")
    context = local._context

    def hooked_context():
        made = context()
        from multiprocessing import forkserver

        modules = list(forkserver._forkserver._preload_modules or [])
        first = "freqlab.fastokens_ahead"  # before the hooks, which import freqlab's tokenizer code
        made.set_forkserver_preload([first, _HOOKS, *(m for m in modules if m not in (first, _HOOKS))])
        return made

    local._context = hooked_context
    times = []
    before = time.time() - float(os.environ[T0_ENV])
    for run in ("first scan", "second scan"):
        started = time.time()
        result = scan(corpus, tokenizer=spec, progress=False, L=[2048], regimes=["natural"])
        times.append(time.time() - started)
        mark(run, started)
    print(
        json.dumps(
            {"before": before, "scans": times, "tokens": int(result.histogram.tokens), **result.summary["tokenizer"]}
        )
    )


def run_process(corpus: str, spec: str | None, cache: str, log: str) -> dict:
    env = {**os.environ, T0_ENV: repr(time.time()), LOG_ENV: log, "FREQLAB_CACHE_DIR": cache}
    # the forkserver imports its preload by name and ignores the driver's sys.path: the hooks' folder goes here
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).parent), env.get("PYTHONPATH")) if p)
    env.pop("FREQLAB_NO_CACHE", None)
    started = time.time()
    done = subprocess.run(
        [sys.executable, __file__, "--child", corpus, spec or ""], env=env, capture_output=True, text=True, check=False
    )
    wall = time.time() - started
    if done.returncode:
        raise SystemExit(f"Error: the measured process failed:\n{done.stderr}")
    return {"wall": wall, "load": os.getloadavg()[0], **json.loads(done.stdout.strip().splitlines()[-1])}


def bare(code: str) -> float:
    """Whole-process seconds of ``python -c code``."""
    started = time.time()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.time() - started


def timeline(log: str) -> list[str]:
    events = [json.loads(line) for line in Path(log).read_text(encoding="utf-8").splitlines()]
    first_scan_end = next(at for _, role, at, _, what in events if what == "first scan")
    rows = ["| process | step | began (s) | took (s) | ended (s) |", "|---|---|---:|---:|---:|"]
    names: dict[int, str] = {}
    for pid, role, at, took, what in events:
        if at > first_scan_end + 1e-6 and what != "first scan":
            continue  # the second scan's steps: the steady state
        if role == "worker" and pid not in names:
            names[pid] = f"worker {sum(1 for n in names.values() if n.startswith('worker')) + 1}"
        name = names.get(pid, role)
        began = at - (took or 0.0)
        rows.append(f"| {name} | {what} | {began:.2f} | {'' if took is None else f'{took:.2f}'} | {at:.2f} |")
    return rows


def measure(corpus: str, spec: str | None, repeats: int) -> list[str]:
    label = spec or "Tekken (built-in)"
    with tempfile.TemporaryDirectory(prefix="freqlab-startup-") as work:
        cache, log = os.path.join(work, "cache"), os.path.join(work, "timeline.jsonl")
        runs = [("cold", run_process(corpus, spec, cache, log))]
        for _ in range(repeats):
            Path(log).unlink(missing_ok=True)
            runs.append(("warm", run_process(corpus, spec, cache, log)))
        steps = timeline(log)
    info = runs[-1][1]
    lines = [
        f"### {label}",
        "",
        f"Backend: {info['backend']}; {info['tokens']:,} tokens counted per scan.",
        "",
        "| tokenizer cache | whole process (s) | before scan() (s) | first scan() (s) | second scan() (s) "
        "| start-up (s) | load avg |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for state, r in runs:
        first, second = r["scans"]
        startup = r["before"] + first - second
        lines.append(
            f"| {state} | {r['wall']:.2f} | {r['before']:.2f} | {first:.2f} | {second:.2f} | {startup:.2f} "
            f"| {r['load']:.1f} |"
        )
    lines += ["", "Timeline of the last warm run's first scan (seconds from just before the interpreter starts):", ""]
    return [*lines, *steps, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="/work/bench_corpus/*.jsonl.zst", help="files to scan (a glob)")
    parser.add_argument("--tokenizer", action="append", help="tokenizer.json or 'tekken' (repeatable)")
    parser.add_argument("--repeats", type=int, default=2, help="warm-cache runs (default 2)")
    parser.add_argument("--out", default=str(Path(__file__).with_name("bench_startup.md")))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1] or None)
        return
    from bench_scan import compile_freqlab  # the scripts' folder is on sys.path

    compile_freqlab()
    specs = [None if t == "tekken" else t for t in (args.tokenizer or ["tekken"])]
    interpreter = bare("pass")
    imports = bare("import freqlab.scan")
    sections = []
    for spec in specs:
        sections += measure(args.corpus, spec, args.repeats)
    header = [
        "# freqlab scan start-up: whole processes, tokenizer cache cold and warm",
        "",
        f"`python scripts/bench_startup.py --corpus '{args.corpus}' "
        + " ".join(f"--tokenizer {t}" for t in (args.tokenizer or ["tekken"]))
        + f" --repeats {args.repeats}`; {time.strftime('%Y-%m-%d %H:%M')}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores, load average at the end {'/'.join(f'{x:.1f}' for x in os.getloadavg())}.",
        "",
        f"A bare interpreter (`python -c pass`) takes {interpreter:.2f} s; `python -c 'import freqlab.scan'` "
        f"{imports:.2f} s. 'before scan()': the interpreter and imports; 'start-up': that plus the first scan()'s "
        "time over the second's (the steady state: same process, forkserver and counter); 'load avg': the 1-minute "
        "load average after the run (the machine is shared).",
        "",
    ]
    write_on_top(Path(args.out), header[0], "\n".join(header[2:] + sections))
    print("\n".join(header + sections))


def write_on_top(out: Path, title: str, body: str) -> None:
    """This run as the first section of ``out``, under its title, above the runs written there before (the file
    is the benchmark's history: the README quotes runs of several stops)."""
    previous = out.read_text(encoding="utf-8") if out.exists() else ""
    below = previous.split("\n", 1)[1].lstrip("\n") if previous.startswith(title) else previous
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    out.write_text(f"{title}\n\n## {when}: this script's run\n\n{body}\n\n{below}", encoding="utf-8")


if __name__ == "__main__":
    main()
