"""The scan driver: open a corpus and a tokenizer, run the shards on an engine, merge, checkpoint, summarise.

Example (built-in corpus, default tokenizer; a second or so)::

    from freqlab.scan import scan
    result = scan(max_docs=50, progress=False)
    result.histogram.documents_read                    # 50
    result.summary["windows"][0]["share_at_most_half"]  # L=2048, natural regime
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from freqlab.corpus.base import UNREADABLE_FILE
from freqlab.errors import FreqlabError
from freqlab.frequency.regimes import REGIMES
from freqlab.frequency.stats import DEFAULT_TAU
from freqlab.histogram import LengthHistogram
from freqlab.scan.checkpoint import CheckpointStore, write_atomic
from freqlab.scan.counts import ShardCount, truncate
from freqlab.scan.engines import (
    ENGINES,
    Task,
    check_ray_address,
    default_workers,
    import_ray,
    prestart,
    run_in_process,
    run_local,
    run_ray,
)
from freqlab.scan.progress import ProgressBar
from freqlab.scan.summary import DEFAULT_L, DEFAULT_REGIMES, format_report, summarize_windows
from freqlab.scan.work import DEFAULT_BATCH_SIZE, ON_ERROR, ShardOptions

if TYPE_CHECKING:
    from freqlab.tokenize import TokenCounter

DEFAULT_OUT = "freqlab-out"


@dataclass
class ScanResult:
    """What a scan produced. ``histogram`` (split by source when the corpus labels sources) is all a plot
    needs, with ``summary["windows"]`` for the requested windows and regimes; ``out`` is the output folder."""

    histogram: LengthHistogram
    summary: dict
    out: Path | None = None

    def report(self) -> str:
        """The terminal report (a table of the summary)."""
        return format_report(self.summary)


class Ledger:
    """Merges partials; with limits, commits shards strictly in corpus order and cuts the last one exactly.

    Results arrive in any order; a shard is committed once every shard before it is, so ``max_docs`` and
    ``max_tokens`` mean "the first N documents / tokens in shard order", whatever the worker count.
    """

    def __init__(self, max_docs: int | None, max_tokens: int | None) -> None:
        self.limited = max_docs is not None or max_tokens is not None
        self.docs_left, self.tokens_left = max_docs, max_tokens
        self.total = ShardCount(shard_id="total")
        self.waiting: dict[int, ShardCount] = {}
        self.next = 0
        self.exhausted = False  # a limit was reached
        self.unreadable: list[str] = []  # ids of shards whose file failed while being read (skipped)

    def add(self, index: int, part: ShardCount) -> None:
        """Take the partial of shard ``index``; raises the first bad record's error once it is committed."""
        if not self.limited:
            self._commit(part)
            return
        self.waiting[index] = part
        while self.next in self.waiting and not self.exhausted:
            part, self.exhausted = truncate(self.waiting.pop(self.next), self.docs_left, self.tokens_left)
            self._commit(part)
            if self.docs_left is not None:
                self.docs_left -= part.documents_read
            if self.tokens_left is not None:
                self.tokens_left -= part.tokens
            self.next += 1
        if self.exhausted:
            self.waiting.clear()

    def _commit(self, part: ShardCount) -> None:
        if part.error is not None:
            raise FreqlabError(part.error)
        if part.skipped.get(UNREADABLE_FILE):
            self.unreadable.append(part.shard_id)
        self.total.merge(part)


_COUNTERS: dict[tuple, TokenCounter] = {}  # the last few loaded counters, oldest first
_COUNTERS_KEPT = 4


def _load_counter(spec: str | None, add_special_tokens: bool) -> TokenCounter:
    """load_tokenizer, remembered for repeated scans in one process (notebooks, tests): loading verifies the
    fast path and costs about a second. A tokenizer file is reloaded when it changes on disk."""
    from freqlab.tokenize import load_tokenizer

    state = None
    if isinstance(spec, (str, os.PathLike)) and os.path.isfile(spec):
        info = os.stat(spec)
        state = (os.path.abspath(spec), info.st_mtime_ns, info.st_size)
    key = (spec, bool(add_special_tokens), state)
    if key not in _COUNTERS:
        if len(_COUNTERS) >= _COUNTERS_KEPT:
            _COUNTERS.pop(next(iter(_COUNTERS)))
        _COUNTERS[key] = load_tokenizer(spec, add_special_tokens=add_special_tokens)
    return _COUNTERS[key]


def _check_positive_int(name: str, value: int | None) -> None:
    """A FreqlabError unless ``value`` is None or an integer >= 1."""
    if value is None:
        return
    if isinstance(value, bool) or int(value) != value:
        raise FreqlabError(f"{name} must be an integer, got {value!r}")
    if value < 1:
        raise FreqlabError(f"{name} must be at least 1, got {value!r}")


def scan(
    dataset: str | Sequence[str] | None = None,
    *,
    tokenizer: str | None = None,
    data_files=None,
    config: str | None = None,
    split: str = "train",
    text_field: str | None = None,
    source_field: str | None = None,
    add_special_tokens: bool = False,
    L: Sequence[int] = DEFAULT_L,
    regimes: Sequence[str] = DEFAULT_REGIMES,
    tokens: int | None = None,
    corpus_tokens: int | None = None,
    tau: float = DEFAULT_TAU,
    max_docs: int | None = None,
    max_tokens: int | None = None,
    sample_rate: float | None = None,
    seed: int = 0,
    on_error: str = "raise",
    workers: int | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    engine: str = "local",
    address: str | None = None,
    out: str | Path | None = None,
    resume: bool = False,
    progress: bool | None = None,
) -> ScanResult:
    """Tokenize a corpus and count its document lengths into a :class:`LengthHistogram`, then summarise.

    ``dataset`` is None (the built-in corpus), a preset, a hub id or local paths (see
    :func:`freqlab.corpus.open_corpus`); ``tokenizer`` is None (the default), a built-in name, a
    ``tokenizer.json``, a ``.tiktoken`` file or a hub id (see :func:`freqlab.tokenize.load_tokenizer`).

    Partial scans: ``max_docs``/``max_tokens`` take the first documents in shard order (the document that
    reaches ``max_tokens`` is kept whole); ``sample_rate`` keeps each document with that probability,
    deterministically per (seed, shard, index). ``on_error="raise"`` stops at the first bad record with its
    file and line; ``"skip"`` counts it by reason (a file that fails while being read, e.g. a truncated
    ``.zst``, is one ``unreadable-file`` skip after the documents read from it; its shard counts as finished).
    Blank JSON-lines lines are not documents: ``summary["documents"]["blank_lines"]`` counts them.
    ``workers`` (default: all cores) and ``batch_size`` do not change the result. ``engine="ray"`` runs the
    shards as Ray tasks (``address``: an existing cluster; a ``host:port`` is probed first, failing in ~3 s).
    With ``out``, writes ``lengths.parquet``, ``summary.json`` and per-shard checkpoints (``resume`` skips
    shards already done). ``progress``: a progress bar on stderr (None: when stderr is a terminal).
    """
    start = time.monotonic()
    _check_positive_int("workers", workers)
    _check_positive_int("batch_size", batch_size)
    _check_positive_int("max_docs", max_docs)
    _check_positive_int("max_tokens", max_tokens)
    _check_positive_int("tokens", tokens)
    _check_positive_int("corpus_tokens", corpus_tokens)
    if sample_rate is not None and not 0.0 < float(sample_rate) <= 1.0:
        raise FreqlabError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
    if on_error not in ON_ERROR:
        raise FreqlabError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}")
    if engine not in ENGINES:
        raise FreqlabError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    unknown = [r for r in regimes if r not in REGIMES]
    if unknown:
        raise FreqlabError(f"unknown regime {unknown[0]!r}; choose from {', '.join(REGIMES)}")
    if resume and out is None:
        raise FreqlabError("resume needs an output folder (out) holding the checkpoints")
    if address and engine != "ray":
        raise FreqlabError("address is for the Ray engine: add engine='ray' (--engine ray)")
    if engine == "ray":
        import_ray()  # fail before reading anything when Ray is missing
        check_ray_address(address)  # ... or its cluster is not there

    from freqlab.corpus import open_corpus

    requested_workers = workers or default_workers()
    starting = prestart() if engine == "local" and requested_workers > 1 else None
    corpus = open_corpus(
        dataset, data_files=data_files, config=config, split=split, text_field=text_field, source_field=source_field
    )
    counter = _load_counter(tokenizer, add_special_tokens)
    shards = list(corpus.shards)
    ids = [shard.id for shard in shards]
    if len(set(ids)) != len(ids):
        raise FreqlabError(f"corpus {corpus.name!r} has duplicate shard ids; cannot checkpoint it")
    sample = None if sample_rate is None or float(sample_rate) >= 1.0 else float(sample_rate)
    ledger = Ledger(max_docs, max_tokens)
    options = ShardOptions(
        batch_size=int(batch_size),
        on_error=on_error,
        sample_rate=sample,
        seed=int(seed),
        by_source=corpus.has_sources,
        keep_log=ledger.limited,  # the ledger cuts logged partials exactly at the limit
    )
    fingerprint = {
        "corpus": corpus.name,
        "corpus_description": corpus.description,
        "shards": {"count": len(ids), "ids_hash": hashlib.blake2b("\n".join(ids).encode(), digest_size=16).hexdigest()},
        "tokenizer": counter.name,
        "tokenizer_vocab_hash": counter.vocab_hash,
        "special_tokens_counted": bool(counter.add_special_tokens),
        "sample_rate": sample,
        "seed": int(seed) if sample is not None else None,
        "max_docs": max_docs,
        "max_tokens": max_tokens,
    }
    out_dir = Path(out) if out is not None else None
    store = CheckpointStore(out_dir / "checkpoints", fingerprint) if out_dir is not None else None
    if store is not None:
        store.start(resume)

    done: set[int] = set()
    if resume and store is not None:
        for index, shard in enumerate(shards):
            part = store.load(shard.id)
            if part is None or (ledger.limited and part.log is None) or (on_error == "raise" and part.skipped):
                continue
            done.add(index)
            ledger.add(index, part)

    expected = corpus.total_documents
    if expected is not None:
        expected = round(expected * (sample or 1.0))
        if max_docs is not None:
            expected = min(expected, max_docs)
    bar = ProgressBar(expected, enabled=progress)
    bar.documents, bar.tokens = ledger.total.documents_read, ledger.total.tokens  # resumed shards
    bar.base_documents, bar.base_tokens = bar.documents, bar.tokens

    def tasks() -> Iterator[Task]:
        for index, shard in enumerate(shards):
            if ledger.exhausted:
                return
            if index not in done:
                yield Task(index, shard, options.capped(ledger.docs_left, ledger.tokens_left))

    pending = len(shards) - len(done)
    n_workers = min(int(requested_workers), max(pending, 1))
    if engine == "ray":
        runner = run_ray(tasks(), counter, requested_workers, address, bar)
    elif n_workers <= 1:
        runner = run_in_process(tasks(), counter, bar)
    else:
        runner = run_local(tasks(), counter, n_workers, bar)
    if starting is not None:
        starting.join()  # before the pool starts (both touch the __main__ module)

    tokenized_now = documents_now = shards_run = 0  # the work done by this run (not resumed), for the throughput
    try:
        for index, part in runner:
            shards_run += 1
            tokenized_now += part.tokens
            documents_now += part.documents_read
            if store is not None and part.error is None:
                store.save(part)
            ledger.add(index, part)
            if ledger.exhausted:
                break
        bar.documents, bar.tokens = ledger.total.documents_read, ledger.total.tokens  # drop speculative work
    finally:
        runner.close()
        bar.close()

    wall = time.monotonic() - start
    total = ledger.total
    histogram = total.to_histogram(
        by_source=corpus.has_sources,
        corpus=corpus.name,
        tokenizer=counter.name,
        meta={
            "tokenizer_vocab_hash": counter.vocab_hash,
            "tokenizer_backend": counter.backend,
            "special_tokens_counted": bool(counter.add_special_tokens),
            "sample_rate": sample,
            "seed": int(seed),
            "max_docs": max_docs,
            "max_tokens": max_tokens,
        },
    )
    summary = _summary(
        corpus, counter, histogram, total, ledger, options,
        L=L, regimes=regimes, tokens=tokens, corpus_tokens=corpus_tokens, tau=tau,
        max_docs=max_docs, max_tokens=max_tokens, engine=engine,
        workers=n_workers if engine == "local" else requested_workers,
        wall=wall, tokenized_now=tokenized_now, documents_now=documents_now, resumed_shards=len(done),
        shards_run=shards_run, shards=len(shards),
    )
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        lengths_path, summary_path = out_dir / "lengths.parquet", out_dir / "summary.json"
        summary["outputs"] = {"lengths": str(lengths_path), "summary": str(summary_path)}
        write_atomic(lengths_path, writer=histogram.to_parquet)
        write_atomic(summary_path, (json.dumps(summary, indent=2) + "\n").encode())
    return ScanResult(histogram, summary, out_dir)


PREFIX_NOTE = (
    "max_docs/max_tokens keep the first documents in shard order: a prefix, not a random sample, so the "
    "lengths and the corpus-size estimate may be biased (sample_rate gives an unbiased sample)"
)


def estimate_corpus_tokens(tokens: int, documents: int, read: int) -> int:
    """``tokens * documents / read`` rounded to the nearest integer (halves up), in exact integer arithmetic.

    >>> estimate_corpus_tokens(82031920993190389, 910925047, 861425549)  # float division: ...184, off by 6
    86745664292135178
    """
    return (2 * tokens * documents + read) // (2 * read)


def _summary(corpus, counter, histogram: LengthHistogram, total: ShardCount, ledger: Ledger, options: ShardOptions,
             *, L, regimes, tokens, corpus_tokens, tau, max_docs, max_tokens, engine, workers, wall, tokenized_now,
             documents_now, resumed_shards, shards_run, shards) -> dict:
    read = histogram.documents_read
    tokenized, empty, skipped = histogram.documents, histogram.empty_documents, dict(histogram.skipped)
    assert read == tokenized + empty + sum(skipped.values()), "every document read must be accounted for"
    seen = read + total.sampled_out
    from_checkpoints = resumed_shards > 0 and shards_run == 0
    reasons = []
    if options.sample_rate is not None:
        reasons.append(f"sampled at rate {options.sample_rate} (seed {options.seed})")
    if ledger.exhausted:
        limits = [f"max_docs={max_docs}" if max_docs else "", f"max_tokens={max_tokens}" if max_tokens else ""]
        reasons.append("stopped at " + " / ".join(x for x in limits if x))
    partial = "; ".join(reasons)
    # a partial scan's estimate of the full corpus: tokens per document read, times the corpus's documents,
    # in exact integer arithmetic (Python ints: no float rounding at 10^12 tokens), rounded to nearest
    estimate = None
    if partial and read:
        documents = corpus.total_documents if ledger.exhausted else seen
        if documents:
            estimate = estimate_corpus_tokens(int(histogram.tokens), int(documents), int(read))
    windows = summarize_windows(
        histogram, L, regimes, tokens=tokens, corpus_tokens=corpus_tokens, estimated_corpus_tokens=estimate,
        tau=tau, partial=bool(partial), seed=options.seed,
    )
    if ledger.exhausted:
        windows["budget"]["note"] = PREFIX_NOTE
    lengths = histogram.summary()
    summary = {
        "corpus": {
            "name": corpus.name,
            "description": corpus.description,
            "shards": shards,
            "total_documents": corpus.total_documents,
            "has_sources": corpus.has_sources,
        },
        "tokenizer": {
            "name": counter.name,
            "vocab_hash": counter.vocab_hash,
            "vocab_size": counter.vocab_size,
            "backend": counter.backend,
            "special_tokens_counted": bool(counter.add_special_tokens),
        },
        "documents": {
            "read": read,
            "tokenized": tokenized,
            "empty": empty,
            "skipped": skipped,
            "sampled_out": total.sampled_out,
            "blank_lines": total.blank_lines,
            "unreadable_files": sorted(ledger.unreadable),
        },
        "tokens": histogram.tokens,
        "lengths": {k: lengths[k] for k in ("mean", "median", "percentiles", "min", "max", "distinct_lengths")},
        "scan": {
            "engine": engine,
            "workers": workers,
            "batch_size": options.batch_size,
            "on_error": options.on_error,
            "partial": partial,
            "resumed_shards": resumed_shards,
            "wall_seconds": wall,
            "tokens_tokenized_this_run": tokenized_now,
            # None: nothing was read by this run (every shard came from a checkpoint), no speed to report
            "documents_per_second": None if from_checkpoints else documents_now / wall if wall > 0 else 0.0,
            "tokens_per_second": None if from_checkpoints else tokenized_now / wall if wall > 0 else 0.0,
        },
    }
    if histogram.sources:
        summary["sources"] = {
            name: {"documents": h.documents, "empty": h.empty_documents, "tokens": h.tokens}
            for name, h in histogram.sources.items()
        }
    summary.update(windows)
    return summary
