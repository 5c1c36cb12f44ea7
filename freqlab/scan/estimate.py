"""What a scan costs before running it: core-hours, nodes of N cores and wall time, from measured throughput.

The throughput table is one data file, ``freqlab/data/throughput.json`` (written by ``scripts/bench_cost.py``,
which says when and on what machine it measured): per tokenizer family (a counter's ``backend``), the
end-to-end tokens per core-second τ of ``freqlab scan`` with one worker (reading ``.jsonl.zst``, parsing,
tokenizing, counting) on text a fresh process has never seen (a first pass: fastokens' piece cache starts empty)
and the text bytes per token β; for every family, the bytes per core-second ρ a scan reads and parses without
tokenizing; the parallel efficiency e measured with all cores of that machine, the seconds s before a
worker counts (its forkserver starting and building the tokenizer once, the worker forking), and, for the engine
rule (:func:`choose_engine`), the core-seconds f a file costs beyond its text and the speed-up of an in-process
scan over one core.

Model, for a corpus of T tokens (B = β·T bytes), sampled at rate r (1: a full scan). A sampled scan still
reads and parses every byte, and tokenizes a fraction r of the documents. A corpus this big keeps each worker's
counter busy on text it has never seen for hours, so τ is the family's steady state where measured (a second
unseen slice on the same counter: fastokens' piece cache holds the common pieces; never a text counted again):

    core-seconds = B / ρ  +  r · T · (1/τ − β/ρ)          (= T / τ for a full scan)
    wall on n nodes of c cores = core-seconds / (n · c · e)  +  s

Shards are independent, so the work spreads over any number of cores while there are more shards than cores
(a local file is cut into parts of at least 8 MiB; hub datasets come in their own shards).

>>> table = ThroughputTable(measured="-", machine="-", source="-", read_bytes_per_core_second=100e6,
...                         parallel_efficiency=1.0, families={"tiktoken": Family(2e6, 4.0)})
>>> cost = estimate_cost(table, "tiktoken", tokens=72_000_000_000, node_cores=10)
>>> cost.core_hours, cost.nodes, cost.wall_hours
(10.0, 1, 1.0)
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from freqlab.errors import FreqlabError
from freqlab.frequency.regime_table import human_count
from freqlab.resources import binary_bytes
from freqlab.scan.uncertainty import LEVEL, SHARES, no_interval, share_intervals

THROUGHPUT_FILE = "throughput.json"  # in freqlab/data


@dataclass(frozen=True)
class Family:
    """A tokenizer family's measured throughput: tokens per core-second, end to end, and text bytes per token."""

    tokens_per_core_second: float
    bytes_per_token: float
    example: str = ""
    build_core_seconds: float | None = None  # building this backend in a process (None: not measured)
    # a second unseen text on the same counter (estimate_cost's τ where measured), and a text counted again (for
    # information: what repeated benchmarks overstate; scripts/bench_cost.md)
    steady_tokens_per_core_second: float | None = None
    repeat_tokens_per_core_second: float | None = None


@dataclass(frozen=True)
class ThroughputTable:
    """Measured throughput (see the module docstring); ``measured``/``machine``/``source`` say where it is from."""

    measured: str
    machine: str
    source: str
    read_bytes_per_core_second: float
    parallel_efficiency: float
    families: dict[str, Family] = field(default_factory=dict)
    # a worker's start-up before its first shard, on a core of its own: its wall seconds are that core's seconds
    # (measured as the wall time of a pool's start, scripts/bench_cost.md)
    worker_startup_core_seconds: float = 0.0
    process_startup_core_seconds: float = 0.0  # the pool starting, beyond its one build of the backend
    # what one file costs beyond its text, by kind ("plain", "compressed"; see corpus_files)
    file_core_seconds: dict[str, float] = field(default_factory=dict)
    in_process_speedup: float = 1.0  # the in-process scan (the backend's threads, reading overlapped) over one core
    # seconds the driver spends on each shard, one after another whatever the worker count ("here": counting it in
    # this process, checkpointing it; "pool": a worker's task, its result, the checkpoint)
    shard_seconds: dict[str, float] = field(default_factory=dict)
    scan_startup_core_seconds: float = 0.0  # the first scan of a process (imports, readers' set-up), either engine

    def build_seconds(self, family: str) -> float:
        """Core-seconds to build ``family``'s backend in a process (not measured: a whole worker's start-up)."""
        measured = self.families[family].build_core_seconds
        return self.worker_startup_core_seconds if measured is None else measured

    def family(self, name: str) -> Family:
        """The throughput of the tokenizer family ``name``, or a one-line error listing the known ones."""
        if name not in self.families:
            raise FreqlabError(
                f"no throughput measured for tokenizer family {name!r} (measured: {', '.join(self.families)}); "
                "run scripts/bench_cost.py to measure it"
            )
        return self.families[name]


def load_throughput(path: str | Path | None = None) -> ThroughputTable:
    """The throughput table: ``path``, or freqlab's own ``data/throughput.json``."""
    try:
        source = Path(path) if path is not None else resources.files("freqlab").joinpath(f"data/{THROUGHPUT_FILE}")
        text = source.read_text(encoding="utf-8")
        data = json.loads(text)
        families = {name: Family(**values) for name, values in data.pop("families").items()}
        return ThroughputTable(**data, families=families)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FreqlabError(f"{path or THROUGHPUT_FILE}: not a readable throughput table ({exc})") from None


@dataclass(frozen=True)
class CostEstimate:
    """What a scan of ``tokens`` tokens (``bytes`` bytes of text) costs; see :func:`estimate_cost`."""

    tokens: int
    bytes: int
    family: str
    sample_rate: float | None
    core_hours: float
    node_cores: int
    wall_hours_one_node: float
    target_hours: float
    nodes: int  # nodes of node_cores cores that finish within target_hours
    wall_hours: float  # on that many nodes
    throughput: dict

    def as_dict(self) -> dict:
        """The estimate as JSON-ready data."""
        return asdict(self)


def estimate_cost(
    table: ThroughputTable,
    family: str,
    *,
    tokens: int | None = None,
    bytes: int | None = None,
    sample_rate: float | None = None,
    node_cores: int = 32,
    target_hours: float = 1.0,
) -> CostEstimate:
    """Core-hours and wall time of a scan of a corpus of ``tokens`` tokens or ``bytes`` bytes of text (one of
    them; the other follows from the family's bytes per token), with tokenizers of ``family``, sampled at
    ``sample_rate`` (None: a full scan), on nodes of ``node_cores`` cores; ``nodes`` is how many such nodes
    finish within ``target_hours``. See the module docstring for the model.
    """
    measured = table.family(family)
    if (tokens is None) == (bytes is None):
        raise FreqlabError("give the corpus size in tokens or in bytes (one of them)")
    if node_cores < 1 or not target_hours > 0:
        raise FreqlabError(f"node cores must be >= 1 and the target time positive, got {node_cores}, {target_hours}")
    beta, rho = measured.bytes_per_token, table.read_bytes_per_core_second
    tau = measured.steady_tokens_per_core_second or measured.tokens_per_core_second  # each worker's counter warm
    if tokens is None:
        tokens = round(bytes / beta)
    if bytes is None:
        bytes = round(tokens * beta)
    rate = 1.0 if sample_rate is None else float(sample_rate)
    per_token_tokenizing = max(1 / tau - beta / rho, 0.0)  # what tokenizing adds to reading, per token
    seconds = bytes / rho + rate * tokens * per_token_tokenizing if rate < 1 else tokens / tau
    node = node_cores * table.parallel_efficiency  # core-seconds per second of one node
    startup = table.worker_startup_core_seconds  # each worker, once, before its first shard
    if target_hours * 3600 < startup + 1.0:  # the wall time tends to the start-up as nodes are added
        raise FreqlabError(
            f"a target of {target_hours:g} h ({target_hours * 3600:.3g} s) is out of reach: every worker starts for "
            f"~{startup:.1f} s before its first shard, so no number of nodes finishes in less than ~{startup + 1:.0f} s"
        )
    nodes = max(1, math.ceil(seconds / (node * (target_hours * 3600 - startup))))
    return CostEstimate(
        tokens=int(tokens),
        bytes=int(bytes),
        family=family,
        sample_rate=sample_rate,
        core_hours=(seconds + nodes * node_cores * startup) / 3600,
        node_cores=node_cores,
        wall_hours_one_node=(seconds / node + startup) / 3600,
        target_hours=target_hours,
        nodes=nodes,
        wall_hours=(seconds / (nodes * node) + startup) / 3600,
        throughput={
            "tokens_per_core_second": tau,
            "first_pass_tokens_per_core_second": measured.tokens_per_core_second,
            "bytes_per_token": beta,
            "read_bytes_per_core_second": rho,
            "parallel_efficiency": table.parallel_efficiency,
            "measured": table.measured,
            "machine": table.machine,
            "source": table.source,
        },
    )


@dataclass(frozen=True)
class EngineChoice:
    """Where a scan runs: in this process or on a pool of ``workers`` processes, with the estimated wall times
    that decided it (:func:`choose_engine`) and the reason said in the summary.
    """

    in_process: bool
    workers: int
    in_process_seconds: float
    pool_seconds: float
    reason: str


def choose_engine(
    text_bytes: int | None,
    workers: int,
    family: str,
    table: ThroughputTable,
    built: bool = False,
    files: dict[str, int] | None = None,
    shards: int = 0,
    where: str | None = None,
) -> EngineChoice | None:
    """In this process or on a pool of ``workers`` processes, whichever the measured costs say finishes first a
    scan of ``text_bytes`` bytes of text in ``files`` (files by kind, :func:`corpus_files`) counted by the
    backend ``family`` (None: the size or the family's speed is unknown, or one worker: no choice to make).

    For T = B/β tokens at τ tokens per core-second (first pass; parallel efficiency e), F_k files of kind k at
    f_k core-seconds each (F·f = Σ F_k·f_k), with b the core-seconds to build the backend in a process, p the
    seconds the pool takes to start beyond that build (the forkserver's imports overlap it, then the workers
    fork), c those of a process's first scan (imports, readers' set-up: both engines pay them) and s the
    speed-up of an in-process scan over one core (the backend's own threads, reading overlapped with tokenizing;
    all from ``throughput.json``), and for ``shards`` shards S the seconds the driver spends on each, one after
    another (d_here counting and checkpointing it; d_pool a task and its result, the checkpoint). ``where``: what
    the reason says the text is in (:func:`files_read`; "": nothing; default: the files opened, as "N files").

        in this process  =  c + (0 if the driver's counter has built it already, else b) + F·f + T / (τ · s) + S·d_here
        pool of n        =  c + p + b (built once, in the forkserver the workers fork from) + (F·f + T/τ) / (n · e)
                            + S·d_pool

    Measured on 2 cores (``scripts/bench_cost_engine.md``, whole processes): the built-in corpus (1,790 files)
    finishes first in this process, 10^9 characters in 102 ``.jsonl.zst`` on the pool. Counts are the same
    either way.

    >>> table = ThroughputTable(measured="-", machine="-", source="-", read_bytes_per_core_second=100e6,
    ...                         parallel_efficiency=1.0, families={"fastokens": Family(20e6, 5.0, "", 1.0)},
    ...                         process_startup_core_seconds=0.5, file_core_seconds={"compressed": 0.001},
    ...                         in_process_speedup=1.25)
    >>> choice = choose_engine(100 * 10**6, 2, "fastokens", table, built=True)  # 0.8 s here, 1.5 + 0.5 s there
    >>> choice.in_process, choice.in_process_seconds, choice.pool_seconds
    (True, 0.8, 2.0)
    >>> choose_engine(100 * 10**6, 2, "fastokens", table, files={"compressed": 1000}).in_process_seconds  # + b + F·f
    2.8
    >>> choose_engine(10**9, 2, "fastokens", table, built=True).in_process  # 8 s here, 6.5 s on the pool
    False
    """
    measured = table.families.get(family)
    if text_bytes is None or measured is None or workers < 2:
        return None
    tokens = text_bytes / measured.bytes_per_token
    counting = tokens / measured.tokens_per_core_second
    files = files or {}
    opening = sum(count * table.file_core_seconds.get(kind, 0.0) for kind, count in files.items())
    build, first = table.build_seconds(family), table.scan_startup_core_seconds
    here = first + (0.0 if built else build) + opening + counting / table.in_process_speedup
    here += shards * table.shard_seconds.get("here", 0.0)
    pool = first + table.process_startup_core_seconds + build
    pool += (opening + counting) / (workers * table.parallel_efficiency) + shards * table.shard_seconds.get("pool", 0.0)
    size = f"{binary_bytes(text_bytes)} of text"
    if where:
        size += f" in {where}"
    elif where is None and sum(files.values()) > 1:
        size += f" in {sum(files.values()):,} files"
    ready = "already built here" if built else f"built once here, {build:.1f} s"
    if here <= pool:
        reason = (
            f"in this process: {size} on {family} ({ready}) take an estimated ~{here:.1f} s, before a pool of"
            f" {workers} workers would (~{pool:.1f} s: {family} built once for them, then they start); counts are"
            " identical"
        )
    else:
        reason = (
            f"{workers} workers: {size} on {family} take an estimated ~{pool:.1f} s on the pool, ~{here:.1f} s in this"
            " process"
        )
    return EngineChoice(here <= pool, workers, here, pool, reason)


def corpus_files(shards) -> dict[str, int]:
    """Files a scan of ``shards`` opens, by kind (``compressed`` by suffix, else ``plain``), for the per-file term
    of :func:`choose_engine`: each file of a shard of whole files, or one per shard (a file or a part of one,
    each opened by the worker that reads it).

    >>> from types import SimpleNamespace as S
    >>> corpus_files([S(files=(S(path="a.py"), S(path="b.py"))), S(file=S(path="c.jsonl.zst")), S()])
    {'plain': 3, 'compressed': 1}
    """
    from freqlab.corpus.jsonl import is_compressed  # the suffixes freqlab decompresses (loaded with any shard)

    counts = {"plain": 0, "compressed": 0}
    for shard in shards:
        for file in _shard_files(shard):
            counts["compressed" if is_compressed(str(getattr(file, "path", ""))) else "plain"] += 1
    return counts


def files_read(shards) -> str:
    """What a scan of ``shards`` reads, for a report: ``"102 files"``, or ``"6 parts of 1 file"`` when files are
    read in parts (a part is opened as a file is, so :func:`corpus_files` counts openings).

    >>> from types import SimpleNamespace as S
    >>> files_read([S(files=(S(path="a.py"), S(path="b.py")))]), files_read([S(file=S(path="c.zst"))] * 6)
    ('2 files', '6 parts of 1 file')
    """
    paths = [str(getattr(file, "path", "")) for shard in shards for file in _shard_files(shard)]
    distinct = len(set(paths))
    files = f"{distinct:,} file{'s' if distinct != 1 else ''}"
    return files if len(paths) == distinct else f"{len(paths):,} parts of {files}"


def _shard_files(shard) -> list:
    return list(getattr(shard, "files", None) or [getattr(shard, "file", None)])


def sampled_error(lengths, counts, L: int, regime: str, documents: int, *, seed: int = 0) -> dict | None:
    """The error bar a sampled scan of ``documents`` documents would give, from the length histogram of an
    earlier (smaller) sample ``(lengths, counts)``: its bootstrap interval (:mod:`freqlab.scan.uncertainty`)
    with the half-width scaled by √(n / documents), n the documents it holds (the 1/√n law of independent
    sampling, checked in the tests). Returns ``{share: half-width}`` with ``level`` (and the interval's ``caveat``
    when the sample is heavy-tailed: there the law holds less well), or None (see
    :func:`~freqlab.scan.uncertainty.no_interval`).
    """
    counts = np.asarray(counts, np.int64)
    ci = share_intervals(lengths, counts, L, regime, seed=seed)
    if ci is None or documents < 1:
        return None
    scale = math.sqrt(int(counts.sum()) / documents)
    error = {"level": ci["level"], **{share: (ci[share][1] - ci[share][0]) / 2 * scale for share in SHARES}}
    return {**error, "caveat": ci["caveat"]} if "caveat" in ci else error


def format_estimate(cost: CostEstimate, errors: list[dict] | None = None) -> str:
    """The terminal report of an estimate."""
    t = cost.throughput
    what = "full scan" if cost.sample_rate is None else f"sampled scan at rate {cost.sample_rate:g}"
    first = t.get("first_pass_tokens_per_core_second", t["tokens_per_core_second"])
    steady = "" if first == t["tokens_per_core_second"] else f", steady state; a first pass {human_count(first)}"
    within = (
        f"{cost.nodes} nodes finish within {cost.target_hours:g} h ({human_hours(cost.wall_hours)})"
        if cost.nodes > 1
        else f"one node finishes within {cost.target_hours:g} h"
    )
    lines = [
        f"corpus     {human_count(cost.tokens)} tokens, {human_count(cost.bytes)}B of text "
        f"({t['bytes_per_token']:.2f} bytes per token)",
        f"throughput {human_count(t['tokens_per_core_second'])} tokens per core-second ({cost.family}{steady}); "
        f"reading alone {t['read_bytes_per_core_second'] / 1e6:,.0f} MB per core-second; "
        f"parallel efficiency {t['parallel_efficiency']:.2f}",
        f"           measured {t['measured']} on {t['machine']} ({t['source']})",
        f"{what}: {cost.core_hours:,.1f} core-hours; one node of {cost.node_cores} cores: "
        f"{human_hours(cost.wall_hours_one_node)}; {within}",
    ]
    for row in errors or []:
        if row["error"] is None:
            lines.append(f"error bar  L={row['L']} {row['regime']}: none ({no_interval(row['regime'])})")
            continue
        e = row["error"]
        lines.append(
            f"error bar  L={row['L']} {row['regime']}, {human_count(row['documents'])} documents sampled: "
            f"±{100 * e['share_at_most_half']:.2g} points at i ≤ {row['L'] // 2}, "
            f"±{100 * e['share_at_least_three_quarters']:.2g} at i ≥ {3 * row['L'] // 4} "
            f"({100 * LEVEL:g}% interval, from {human_count(row['from_documents'])} documents)"
            + (f"; {e['caveat']}" if "caveat" in e else "")
        )
    return "\n".join(lines)


def human_hours(hours: float) -> str:
    """``45 s``, ``12 min``, ``3.4 h``."""
    if hours < 1 / 60:
        return f"{hours * 3600:.0f} s"
    if hours < 1:
        return f"{hours * 60:.0f} min"
    return f"{hours:,.1f} h"


def estimate_scan(
    *,
    tokenizer: str | None = None,
    tokens: int | None = None,
    bytes: int | None = None,
    sample_rate: float | None = None,
    node_cores: int = 32,
    target_hours: float = 1.0,
    lengths: str | Path | None = None,
    L=(2048,),
    regimes=("natural",),
    seed: int = 0,
    table: ThroughputTable | None = None,
) -> dict:
    """``freqlab scan --estimate``: the cost of a scan with ``tokenizer`` (its family is its counter's backend)
    of a corpus of ``tokens`` tokens or ``bytes`` bytes (:func:`estimate_cost`) and, for a sampled scan with the
    length histogram of an earlier sample of the corpus (``lengths``: a ``lengths.parquet``), the error bar of
    its mass shares per window and regime (:func:`sampled_error`). Returns ``{"cost": ..., "error_bars": [...]}``.
    """
    from freqlab.histogram import LengthHistogram
    from freqlab.scan.driver import load_counter

    family = load_counter(tokenizer, False).backend
    cost = estimate_cost(
        table or load_throughput(),
        family,
        tokens=tokens,
        bytes=bytes,
        sample_rate=sample_rate,
        node_cores=node_cores,
        target_hours=target_hours,
    )
    errors = []
    if lengths is not None and sample_rate is not None:
        sample = LengthHistogram.read_parquet(lengths)
        if sample.documents < 2:
            raise FreqlabError(f"{lengths}: fewer than two documents, no error bar to scale")
        documents = round(sample_rate * cost.tokens * sample.documents / sample.tokens)
        for window in L:
            for regime in regimes:
                error = sampled_error(sample.lengths, sample.counts, window, regime, documents, seed=seed)
                errors.append(
                    {
                        "L": window,
                        "regime": regime,
                        "documents": documents,
                        "from_documents": sample.documents,
                        "error": error,
                    }
                )
    return {"cost": cost.as_dict(), "error_bars": errors, "report": format_estimate(cost, errors)}
