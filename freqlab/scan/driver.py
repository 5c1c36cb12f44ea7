"""The scan driver: open the corpus and the tokenizer, run the shards on an engine, merge, checkpoint, summarise.

Example (built-in corpus, default tokenizer; a second or so)::

    from freqlab.scan import scan
    result = scan(max_docs=50, progress=False)
    result.histogram.documents_read                    # 50
    result.summary["windows"][0]["share_at_most_half"]  # L=2048, natural regime
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from freqlab.corpus.base import MISSING_SOURCE, TEXT, Corpus
from freqlab.corpus.fields import field_paths
from freqlab.deprecation import renamed_attributes
from freqlab.display import Display, Displayed
from freqlab.errors import FreqlabError
from freqlab.formats import LENGTHS_FILE, SUMMARY_FILE
from freqlab.frequency.stats import DEFAULT_TAU
from freqlab.histogram import LengthHistogram
from freqlab.resources import binary_bytes
from freqlab.scan.engines import Task, default_workers, make_engine, require_worker_memory
from freqlab.scan.engines.local import prestart
from freqlab.scan.forked import check_outputs_writable
from freqlab.scan.ledger import Ledger
from freqlab.scan.output import ScanOutput
from freqlab.scan.progress import scan_progress
from freqlab.scan.settings import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_L,
    DEFAULT_REGIMES,
    ReportOptions,
    RunOptions,
    ScanSettings,
)
from freqlab.scan.summary_json import RunRecord, build_summary_json, format_report, given_eod, scan_display
from freqlab.scan.summary_json import warm_up as warm_summary
from freqlab.scan.work import CountJob, ShardOptions

if TYPE_CHECKING:
    from freqlab.tokenization import TokenCounter


@dataclass(repr=False)
class ScanResult(Displayed):
    """What a scan produced: the length histogram, its summary and the output folder.

    ``histogram`` (split by source when the corpus labels sources) is all a plot needs, with
    ``summary["windows"]`` for the requested windows and regimes. In a notebook it shows the histogram's
    numbers, the windows table and the length chart; :meth:`report` gives the terminal report.

    Parameters
    ----------
    histogram : LengthHistogram
        Document lengths in tokens.
    summary : dict
        The JSON summary (``summary.json``), with ``summary["windows"]`` per window and regime.
    out : Path or None
        The output folder, when the scan wrote one.

    Examples
    --------
    >>> from freqlab import LengthHistogram
    >>> result = ScanResult(LengthHistogram.from_lengths([2048] * 10), {"windows": []})
    >>> result.histogram.documents, result.out
    (10, None)
    """

    histogram: LengthHistogram
    summary: dict
    out: Path | None = None

    def report(self) -> str:
        """The terminal report (a table of the summary)."""
        return format_report(self.summary)

    def to_dict(self) -> dict:
        """What ``freqlab scan --json`` prints: the summary (``summary.json``)."""
        return self.summary

    def _display(self) -> Display:
        return scan_display(self)


def scan(
    dataset: str | os.PathLike[str] | Sequence[str] | Corpus | None = None,
    *,
    tokenizer=None,
    data_files=None,
    config: str | None = None,
    split: str = "train",
    text_field: str | None = None,
    source_field: str | None = None,
    format: str | None = None,
    tokens_field: str | None = None,
    length_field: str | None = None,
    eos_id: int | None = None,
    add_special_tokens: bool = False,
    L: Sequence[int] = DEFAULT_L,
    regimes: Sequence[str] = DEFAULT_REGIMES,
    tokens: int | None = None,
    corpus_tokens: int | None = None,
    tau: float = DEFAULT_TAU,
    megatron=None,
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
    r"""Tokenize a corpus and count its document lengths into a :class:`LengthHistogram`, then summarise.

    The summary gives, per window ``L`` and regime, the share of the position frequency
    ``f(i) = sum_s max(|s| - i, 0)`` (over the training segments ``s``) at ``i <= L/2`` and ``i >= 3L/4``, and the
    budget for ``f_T(L/2) >= tau`` (Sec. 3 of [1]_).

    Parameters
    ----------
    dataset : Corpus, str, list of str or None
        A corpus opened by :func:`freqlab.corpus.open_corpus` (its reader options are its own: giving any of
        ``data_files``, ``config``, ``split``, ``text_field``, ``source_field``, ``format``, ``tokens_field``,
        ``length_field``, ``eos_id`` beside it is a TypeError naming them). Or what ``open_corpus`` takes: None
        (the built-in corpus), a preset, a hub id or local paths (a list of paths is read as local files), read
        with the reader options below.
    tokenizer : str, path, TokenCounter or None
        None (the default), a built-in name, a ``tokenizer.json``, a ``.tiktoken`` file or a hub id (see
        :func:`freqlab.tokenization.load_tokenizer`), or a loaded :class:`~freqlab.tokenization.TokenCounter` (used as
        it is: its ``add_special_tokens``, its backends). A scan too small to repay fastokens' start-up on the
        next verified backend (:func:`small_scan_rule`: ~10 MB of text for tiktoken, ~0.6 MB for Hugging Face
        ``tokenizers``) loads its tokenizer without fastokens; pass a loaded counter to choose. Tokenized data
        needs none.
    data_files, config, split, text_field, source_field, format
        Reader options, as in :func:`freqlab.corpus.open_corpus`. ``format`` reads only that registered input
        format; files whose lengths are in different units (text beside tokenized data) are refused, never
        added. ``source_field`` splits the counts by source: documents without it are counted under
        ``(none)``; a field no document read has is a FreqlabError naming it and the fields of the first record.
    tokens_field, length_field, eos_id
        How tokenized data is read (:class:`freqlab.corpus.fields.ReadOptions`): a column of token ids, a column
        of lengths, the token ending each document of a plain token stream.
    add_special_tokens : bool
        Count the tokenizer's special tokens (BOS/EOS) in each document's length.
    L, regimes, tokens, corpus_tokens, tau, megatron
        What the summary computes (:class:`~freqlab.scan.settings.ReportOptions`): windows, regimes, the training
        budget (``corpus_tokens`` extrapolates a partial scan), the threshold; ``megatron``
        (:class:`~freqlab.frequency.megatron_replay.MegatronOptions`: Megatron-LM's ``--data-path``, ``--seed``,
        ``--split``, ``--reset-attention-mask``, ``--train-samples`` or epochs) makes the ``megatron`` regime
        replay GPTDataset's windows exactly (the scanned ``.idx`` when no data_path is named).
    max_docs, max_tokens, sample_rate, seed
        Partial scans: the first documents in shard order (the document that reaches ``max_tokens`` is kept
        whole); ``sample_rate`` keeps each document with that probability, deterministically per (seed, shard,
        index).
    on_error : {"raise", "skip"}
        ``"raise"`` stops at the first bad record with its file and line; ``"skip"`` counts it by reason (a
        file that fails while being read, e.g. a truncated ``.zst``, is one ``unreadable-file`` skip after the
        documents read from it; its shard counts as finished). Blank JSON-lines lines are not documents:
        ``summary["documents"]["blank_lines"]`` counts them.
    workers, batch_size, engine, address
        How it runs; none changes the result. ``workers`` defaults to all cores, or this process alone when the
        measured costs say it finishes first, the summary saying why (:func:`~freqlab.scan.estimate.choose_engine`);
        ``workers=1`` is one core. ``engine="ray"`` runs the
        shards as Ray tasks (``address``: an existing cluster; a ``host:port`` is probed first, failing in ~3 s).
    out, resume
        With ``out``, writes ``lengths.parquet``, ``summary.json`` and per-shard checkpoints; ``resume`` skips
        shards already done, after checking each checkpoint and that the scan's fingerprint is the same (it is
        the same whether the corpus was opened first or named here).
    progress : bool or None
        A tqdm progress bar, percent and ETA by bytes read where the files' sizes are known (None: in a notebook
        or when stderr is a terminal, not when piped; see :mod:`freqlab.scan.progress`).

    Returns
    -------
    ScanResult
        The histogram (split by source when the corpus labels sources), the summary, the output folder.

    Raises
    ------
    FreqlabError
        A bad parameter (before anything is read), or bad input, naming the file and line.
    TypeError
        Reader options given beside an opened corpus.

    Notes
    -----
    The arguments are gathered into :class:`~freqlab.scan.settings.ScanSettings` (what defines the result),
    :class:`~freqlab.scan.settings.RunOptions` and :class:`~freqlab.scan.settings.ReportOptions`, each
    validated in full before anything is read; :func:`scan_from_settings` takes those three directly.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    A corpus opened once (its reader options on :func:`~freqlab.corpus.open_corpus`), then scanned:

    >>> import pathlib, tempfile
    >>> from freqlab.corpus import open_corpus
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "docs.jsonl"
    >>> _ = path.write_text('{"body": "Hello world", "lang": "en"}\n'
    ...                     '{"body": "Bonjour tout le monde", "lang": "fr"}\n')
    >>> corpus = open_corpus(str(path), text_field="body", source_field="lang")
    >>> result = scan(corpus, L=[8], regimes=["natural"], progress=False)
    >>> result.histogram.lengths.tolist(), result.histogram.counts.tolist(), sorted(result.histogram.sources)
    ([2, 5], [1, 1], ['en', 'fr'])
    >>> scan(str(path), text_field="body", source_field="lang", L=[8], progress=False).histogram.tokens  # the same
    7
    >>> scan(corpus, text_field="body")
    Traceback (most recent call last):
    ...
    TypeError: text_field: reader options go to open_corpus(...), not beside an opened corpus
    """
    settings = ScanSettings(
        dataset=dataset,
        data_files=data_files,
        config=config,
        split=split,
        text_field=text_field,
        source_field=source_field,
        format=format,
        tokens_field=tokens_field,
        length_field=length_field,
        eos_id=eos_id,
        tokenizer=tokenizer,
        add_special_tokens=add_special_tokens,
        sample_rate=sample_rate,
        seed=seed,
        max_docs=max_docs,
        max_tokens=max_tokens,
        on_error=on_error,
    )
    run = RunOptions(
        engine=engine,
        workers=workers,
        address=address,
        batch_size=batch_size,
        out=out,
        resume=resume,
        progress=progress,
    )
    report = ReportOptions(L=L, regimes=regimes, tokens=tokens, corpus_tokens=corpus_tokens, tau=tau, megatron=megatron)
    return scan_from_settings(settings, run, report)


def scan_from_settings(
    settings: ScanSettings, run: RunOptions | None = None, report: ReportOptions | None = None
) -> ScanResult:
    """Run a scan described by its three validated values (see :func:`scan`; None: the defaults)."""
    start = time.monotonic()
    run = run if run is not None else RunOptions()
    report = report if report is not None else ReportOptions()
    if run.engine == "ray":
        from freqlab.scan.engines.ray import RayEngine

        RayEngine.check(run.address)  # before reading anything: Ray installed, its cluster there
    check_outputs_writable(run.out)  # in a process forked after polars ran, writing them would hang
    corpus = settings.open_corpus()
    check_out_outside_corpus(corpus, run.out)
    # the forkserver starts (and builds the cached tokenizer for the workers) while the tokenizer loads here
    starting = prestart(prebuild_entry(corpus, settings)) if pool_possible(run, corpus, settings) else None
    counter = None
    if corpus.kind == TEXT:
        counter = settings.tokenizer  # a TokenCounter already loaded (notebooks, benchmarks): used as it is
        if counter is None or isinstance(counter, (str, os.PathLike)):
            counter = load_counter(
                counter, settings.add_special_tokens, scanned_bytes(corpus, settings, len(corpus.shards))
            )
    shards = list(corpus.shards)
    ids = [shard.id for shard in shards]
    if len(set(ids)) != len(ids):
        raise FreqlabError(f"corpus {corpus.name!r} has duplicate shard ids; cannot checkpoint it")
    ledger = Ledger(settings.max_docs, settings.max_tokens, [shard.part_of() for shard in shards])
    options = ShardOptions(
        batch_size=run.batch_size,
        on_error=settings.on_error,
        sample_rate=settings.sample_rate,
        seed=settings.seed,
        by_source=corpus.has_sources,
        keep_log=ledger.limited,  # the ledger cuts logged partials exactly at the limit
        peek=ledger.limited,  # ... and sees whether anything follows it (a corpus that ends there is read whole)
    )

    if run.engine == "local" and run.workers is not None and not run.resume:  # every shard pending: refused before
        require_worker_memory(run.workers, len(shards))  # --out is touched (its checkpoints cleared: a review)
    with ScanOutput(run.out, settings.fingerprint(corpus, counter), run.resume, len(shards)) as output:
        done = output.resume_into(shards, ledger, settings.on_error)
        resumed = (ledger.total.documents_read, ledger.total.tokens, sum(shards[k].size() or 0 for k in done))
        bar = scan_progress(corpus, settings, run.progress, resumed)

        def tasks() -> Iterator[Task]:
            several = run.engine == "ray" or engine.workers > 1  # a Ray engine counts its CPUs as tasks run
            for index in dispatch_order(shards, largest_first=several and not ledger.limited):
                if ledger.done:
                    return
                if (awaited := ledger.awaited()) is not None and index not in awaited:
                    continue  # a bad record is held: only its file's parts before it are still read (then raised)
                if index not in done:
                    yield Task(index, shards[index], options.capped(ledger.docs_left, ledger.tokens_left))

        pending = len(shards) - len(done)
        choice = engine_choice(run, corpus, settings, counter, pending)
        workers = 1 if choice is not None and choice.in_process else run.workers
        engine = make_engine(run.engine, workers, pending, run.address)
        engine.reason = choice.reason if choice is not None else None
        if starting is not None:
            starting.join()  # before the pool starts (both touch the __main__ module)
        record = RunRecord(resumed_shards=len(done), shards=len(shards), resumed_documents=resumed[0])
        # a pool with fewer shards than cores (a few large compressed files) gives each worker the idle cores
        # (only text is tokenized: a corpus of token files has nothing to spread); workers asked beyond the cores
        # are no cores (--workers 100000 on one file tokenized on 100000 threads, slower than on the cores)
        spare = run.engine == "local" and corpus.kind == TEXT
        cores = default_workers()
        threads = max(1, min(run.workers or cores, cores) // engine.workers) if spare else 1
        if threads > 1 and engine.reason is None and pending:  # say why --workers 2 prints "1 worker"
            engine.reason = _overlap_reason(pending, engine.workers, threads)
        if run.engine == "local" and engine.workers == 1 and run.workers is not None:
            from freqlab.tokenization import single_threaded

            # asked for a number of workers: one thread per tokenizer call (unless the environment says otherwise,
            # or the backend already started its threads in this process), as in a pool's workers: the scan's own
            # `threads` threads call it at once, and a backend's pool beside them only adds switching (measured:
            # 2.15 s against 2.36 s on one big .jsonl.zst, 2 cores). Otherwise the caller's environment is left
            # alone (a notebook's later tokenizers would inherit it); `freqlab scan` sets it for its own process.
            single_threaded(1)
        runner = engine.run(tasks(), CountJob(counter, threads), bar)  # a generator: nothing runs before the loop
        # while the shards are counted (in this process, the tokenizer first builds, in native code), a core is to
        # spare for what the summary and the outputs will need
        warming = warm_up(report, settings.seed, run.out is not None)
        try:
            for index, part in runner:
                record.add(part)
                if part.error is None:
                    output.save(part, shards[index])
                ledger.add(index, part)
                if ledger.done:
                    break
            ledger.raise_held()  # a bad record whose file's earlier parts were all read by now (none left to wait for)
            bar.documents, bar.tokens = ledger.total.documents_read, ledger.total.tokens  # drop speculative work
        finally:
            try:
                runner.close()
                bar.close()
            finally:  # however the count ended: a thread left inside numba's compiler would hold its lock in a
                # process forked from this one (the child's own first compilation then waits for ever)
                warming.join()
        record.wall = time.monotonic() - start
        record.recounted = dict(output.recounted)
        record.nothing_to_resume = output.nothing_to_resume

        histogram = ledger.total.to_histogram(
            by_source=corpus.has_sources,
            corpus=corpus.name,
            tokenizer=counter.name if counter is not None else "",
            meta={
                "tokenizer_vocab_hash": counter.vocab_hash if counter is not None else None,
                "tokenizer_backend": counter.backend if counter is not None else None,
                "special_tokens_counted": bool(counter.add_special_tokens) if counter is not None else None,
                "sample_rate": settings.sample_rate,
                "seed": settings.seed,
                "max_docs": settings.max_docs,
                "max_tokens": settings.max_tokens,
                # the index `freq --regime megatron` replays (a length histogram has no order of its own)
                **({"megatron_index": index} if (index := scanned_index(corpus, settings)) else {}),
                # and the EOD id given to the scan, which the replay's reset mask cuts at
                **({"megatron_eod": eod} if index and (eod := given_eod(corpus)) is not None else {}),
            },
        )
        check_source_labels(corpus, histogram)
        summary = build_summary_json(settings, report, corpus, counter, engine, histogram, ledger, options, record)
        output.write(histogram, summary)
    return ScanResult(histogram, summary, run.out)


def warm_up(report: ReportOptions, seed: int, outputs: bool) -> threading.Thread:
    """Load, on a thread, what the end of a scan will need: numba and the summary's kernels
    (:func:`freqlab.scan.summary_json.warm_up`), and polars when outputs are written.

    Started as the shards start: the tokenizer then builds (in the pool's forkserver, or here in native code that
    lets go of the GIL) and this process waits, with a core to spare, where it would otherwise load these after the
    count, with every core idle but one (~0.35 s of a first scan: ``scripts/bench_startup.md``). Joined when the
    count ends, however it ends (a failed or interrupted scan waits for it too: a fork while it compiled would copy
    numba's held lock into the child); any failure is left to the real calls, which raise it. Not a daemon: Python
    ends a daemon thread inside native code (numba's LLVM) at exit by unwinding it, which can abort the process.
    """

    def load() -> None:
        with contextlib.suppress(Exception):
            if outputs:
                import polars  # noqa: F401
            warm_summary(report, seed)

    thread = threading.Thread(target=load, name="freqlab-warm-up", daemon=False)
    thread.start()
    return thread


def scanned_bytes(
    corpus: Corpus, settings: ScanSettings, pending: int, bytes_per_token: float | None = None
) -> int | None:
    """The bytes of text a scan will read, estimated: the corpus's, for its ``pending`` shards (a resumed scan
    reads the rest), at most ``max_docs`` average documents' and (given the tokenizer's ``bytes_per_token``)
    ``max_tokens`` tokens' worth (None: unknown).
    """
    if corpus.estimated_bytes is None:
        return None
    size = corpus.estimated_bytes * pending // max(len(corpus.shards), 1)
    if settings.max_docs is not None and corpus.total_documents:
        size = min(size, corpus.estimated_bytes * settings.max_docs // corpus.total_documents)
    if settings.max_tokens is not None and bytes_per_token is not None:
        size = min(size, int(settings.max_tokens * bytes_per_token))
    return size


def engine_choice(run: RunOptions, corpus: Corpus, settings: ScanSettings, counter, pending: int):
    """The :class:`~freqlab.scan.estimate.EngineChoice` of a local scan of text whose worker count the user left
    to freqlab (None otherwise: ``workers`` given is honoured, Ray and tokenized data run as asked): in this
    process on the counter already loaded, or on a pool, whichever the measured costs say finishes first
    (:func:`~freqlab.scan.estimate.choose_engine`).
    """
    if run.engine != "local" or run.workers is not None or counter is None:
        return None
    from freqlab.scan.estimate import choose_engine, corpus_files, files_read, load_throughput

    table = load_throughput()
    family = table.families.get(counter.backend)
    if family is None:
        return None
    size = scanned_bytes(corpus, settings, pending, family.bytes_per_token)
    files = {kind: n * pending // max(len(corpus.shards), 1) for kind, n in corpus_files(corpus.shards).items()}
    workers = min(default_workers(), max(pending, 1))
    where = files_read(corpus.shards) if pending == len(corpus.shards) else ""  # resumed: the reason names none
    return choose_engine(
        size, workers, counter.backend, table, built=counter.is_built(), files=files, shards=pending, where=where
    )


def check_out_outside_corpus(corpus: Corpus, out: Path | None) -> None:
    """Refuse an output folder that a later scan of the same corpus would read (inside a folder walked, or matched by
    a glob): it would read the results and checkpoints written there as data.
    """
    from freqlab.corpus.file_discovery import read_by_a_later_walk
    from freqlab.paths import file_identity
    from freqlab.scan.output import written_paths

    if out is None:
        return
    # a file of the corpus that is one of the outputs (named, or another link to it): the scan would replace it
    outputs = {file_identity(str(out / name)): name for name in (LENGTHS_FILE, SUMMARY_FILE) if (out / name).is_file()}
    for path in (path for shard in corpus.shards for path in shard.local_paths()) if outputs else ():
        if (name := outputs.get(file_identity(path))) is not None:
            raise FreqlabError(f"{path}: a file of the corpus, where the scan writes its {name}; give another --out")
    if not (corpus.folders or corpus.patterns):
        return
    written = written_paths([shard.id for shard in corpus.shards])
    through = read_by_a_later_walk(str(out), written, corpus.folders, corpus.patterns)
    if through is not None:
        raise FreqlabError(
            f"the output folder {out} is inside the corpus ({through}): a later scan of it would read what freqlab "
            "writes there (lengths.parquet, summary.json, checkpoints) as data; give an --out outside it"
        )


def pool_possible(run: RunOptions, corpus: Corpus, settings: ScanSettings | None = None) -> bool:
    """Whether a local scan may start a pool (so its forkserver is worth starting early): not with one worker or one
    shard, nor for a text corpus so small that every backend that may count it counts it in this process first, even
    unbuilt (a forkserver started for nothing builds the tokenizer on a core the scan itself needs). The backends
    that may count it: a loaded counter's own; for the built-in tokenizer (``settings.tokenizer`` None), fastokens,
    or tiktoken where a small scan leaves fastokens out (:func:`small_scan_rule`) or fastokens is not installed; for
    any other tokenizer, every measured one (which it loads with is known only once it is loaded).
    """
    workers = run.workers or default_workers()
    if run.engine != "local" or workers < 2 or len(corpus.shards) < 2:  # one shard runs in this process
        return False
    if run.workers is not None or corpus.kind != TEXT or corpus.estimated_bytes is None:
        return True
    from freqlab.scan.estimate import choose_engine, corpus_files, load_throughput

    table = load_throughput()
    n, files = min(workers, max(len(corpus.shards), 1)), corpus_files(corpus.shards)
    shards, families = len(corpus.shards), list(table.families)
    size: int | None = corpus.estimated_bytes
    if settings is not None:
        size = scanned_bytes(corpus, settings, shards)
        backend = getattr(settings.tokenizer, "backend", None)  # a counter already loaded
        if isinstance(backend, str):
            families = [backend]
        elif settings.tokenizer is None:
            small = fastokens_left_out(size, "tiktoken", table)
            families = ["tiktoken" if small or importlib.util.find_spec("fastokens") is None else "fastokens"]
    choices = [choose_engine(size, n, family, table, files=files, shards=shards) for family in families]
    return not all(choice is not None and choice.in_process for choice in choices)


def dispatch_order(shards: list, largest_first: bool) -> list[int]:
    """The order shards are handed to the engine. ``largest_first`` (several workers, no limits): by
    :meth:`~freqlab.corpus.base.Shard.work`, bytes of content to read (a compressed file's estimated), largest
    first, so that the last shards to finish are small ones and no worker idles long at the end while another
    finishes a big one (longest processing time first); results are the same in any order (exact counts, merged),
    except which of several bad records ``on_error="raise"`` reports (the first one met: a real one, not always the
    first in the files). Otherwise, and when a shard's size is unknown (Parquet row-group runs),
    corpus order: limits take the first documents (the ledger commits shards in corpus order), and one worker gains
    nothing from another order.

    >>> class Shard:
    ...     def __init__(self, size): self._size = size
    ...     def work(self): return self._size
    >>> dispatch_order([Shard(1), Shard(7), Shard(5), Shard(5)], largest_first=True)
    [1, 2, 3, 0]
    >>> dispatch_order([Shard(1), Shard(None), Shard(5)], largest_first=True)
    [0, 1, 2]
    >>> dispatch_order([Shard(1), Shard(5)], largest_first=False)
    [0, 1]
    """
    if largest_first:
        sizes = [shard.work() for shard in shards]
        if None not in sizes:
            return sorted(range(len(shards)), key=lambda k: -sizes[k])
    return list(range(len(shards)))


def prebuild_entry(corpus: Corpus, settings: ScanSettings):
    """What the pool's forkserver builds once for all workers (:mod:`freqlab.tokenization.prebuild`): a callable
    giving the tokenizer's cache entry (None: not cached yet), or None when the scan counts no text or is so small
    that fastokens may be left out (:func:`small_scan_rule`). A loaded counter (a notebook's ``load_tokenizer``)
    names the entry it was loaded from by its ``spec``: its workers fork with the engines built, where each built
    its own in every scan (workers use the forkserver's engines only when the fingerprints agree).
    """
    spec, special = settings.tokenizer, settings.add_special_tokens
    if spec is not None and not isinstance(spec, (str, os.PathLike)):  # a loaded TokenCounter
        spec, special = getattr(spec, "spec", None), getattr(spec, "add_special_tokens", special)
        if not isinstance(spec, str) or not spec:
            return None
    if corpus.kind != TEXT:
        return None
    # tiktoken's break-even is the largest: above it fastokens is always kept
    if fastokens_left_out(scanned_bytes(corpus, settings, len(corpus.shards)), "tiktoken"):
        return None
    from freqlab.tokenization.load import cache_entry

    name = None if spec is None else os.fspath(spec)
    return lambda: cache_entry(name, add_special_tokens=special)


def scanned_index(corpus: Corpus, settings: ScanSettings) -> str | None:
    """The absolute path of the Megatron ``.idx`` the corpus is, when it is exactly one and was read whole (else
    None: a partial scan's histogram is not the index's).
    """
    if settings.limited or settings.sample_rate is not None:
        return None
    paths = {getattr(shard, "path", None) for shard in corpus.shards}
    path = paths.pop() if len(paths) == 1 else None
    return path if isinstance(path, str) and path.endswith(".idx") and os.path.isabs(path) else None


def check_source_labels(corpus: Corpus, histogram: LengthHistogram) -> None:
    """A source field that no document read has is an error, never one big ``(none)`` source: it names the
    field and the fields of the corpus's first record. (Documents without the field among labelled ones are
    counted under ``(none)``, and the report says so).
    """
    if not corpus.has_sources or not histogram.sources or set(histogram.sources) != {MISSING_SOURCE}:
        return
    name = corpus.description.get("source_field")
    first = None
    for shard in corpus.shards:
        with contextlib.suppress(FreqlabError):
            first = shard.first_record()
        if first is not None:
            break
    fields = f"; fields of the first record: {field_paths(first)}" if first is not None else ""
    documents = histogram.sources[MISSING_SOURCE].documents_read
    raise FreqlabError(
        f"source field {name!r}: no document has it (all {documents:,} documents read would be "
        f"{MISSING_SOURCE!r}){fields}; give a field they have (--source-field), or --source-field '' for no split"
    )


def fastokens_break_even_bytes(backend: str, table=None) -> float | None:
    """Bytes of text above which fastokens saves time over ``backend`` in a scan; None when ``backend``'s speed
    was not measured (then fastokens is kept: it is never much slower).

    A scan this small runs in this process (:func:`~freqlab.scan.estimate.choose_engine`), where each backend
    is built once: fastokens in b_f core-seconds, then τ_f tokens per core-second; the next backend in b_n, then
    τ_n. For B bytes (β bytes per token) fastokens pays off when ``(B / β) · (1/τ_n − 1/τ_f) > b_f − b_n``
    (its verification is paid once per tokenizer file: the load cache keeps its verdict). Rates and build times
    from ``freqlab/data/throughput.json`` (scripts/bench_cost.py): ~10 MB for tiktoken, ~0.6 MB for Hugging
    Face ``tokenizers``.
    """
    from freqlab.scan.estimate import load_throughput

    table = table if table is not None else load_throughput()
    fast, slow = table.families.get("fastokens"), table.families.get(backend)
    if fast is None or slow is None or slow.tokens_per_core_second >= fast.tokens_per_core_second:
        return None
    saved_per_token = 1 / slow.tokens_per_core_second - 1 / fast.tokens_per_core_second
    later = max(table.build_seconds("fastokens") - table.build_seconds(backend), 0.0)
    return later * slow.bytes_per_token / saved_per_token


def fastokens_left_out(size: int | None, backend: str, table=None) -> bool:
    """Whether a scan of ``size`` bytes of text (None: unknown) counts with ``backend`` rather than wait for fastokens
    (below :func:`fastokens_break_even_bytes`).
    """
    limit = fastokens_break_even_bytes(backend, table)
    return size is not None and limit is not None and size < limit


def small_scan_rule(size: int | None, table=None):
    """The :func:`~freqlab.tokenization.load_tokenizer` ``fastokens_rule`` of a scan of ``size`` bytes of text (None:
    unknown, fastokens always kept): leave fastokens out when the backend that would count instead finishes
    ``size`` bytes before fastokens is ready (:func:`fastokens_break_even_bytes`).
    """
    if size is None:
        return None

    def rule(backend: str) -> str | None:
        limit = fastokens_break_even_bytes(backend, table)
        if limit is None or size >= limit:
            return None
        return (
            f"not tried for a small scan (an estimated {binary_bytes(size)} of text < {binary_bytes(limit)}: "
            f"{backend} is done before fastokens could be ready, if it loads this tokenizer; counts are identical)"
        )

    return rule


_COUNTERS: dict[tuple, TokenCounter] = {}  # the last few loaded counters, oldest first
_COUNTERS_KEPT = 4


def load_counter(
    spec: str | os.PathLike[str] | None, add_special_tokens: bool, text_bytes: int | None = None
) -> TokenCounter:
    """load_tokenizer, remembered for repeated scans in one process (notebooks, tests): loading verifies the
    fast path and costs seconds. A tokenizer file is reloaded when it changes on disk. ``text_bytes``: the size
    of the text to count, for :func:`small_scan_rule` (None: unknown).
    """
    from freqlab.tokenization import load_tokenizer
    from freqlab.tokenization.cache import cache_dir

    state = None
    if isinstance(spec, (str, os.PathLike)) and os.path.isfile(spec):
        info = os.stat(spec)
        state = (os.path.abspath(spec), info.st_mtime_ns, info.st_size)
    # the cache's folder too: a counter whose load the cache could not keep says so (cache_not_written) until it
    # is loaded through another folder, or with the cache off
    key = (spec, bool(add_special_tokens), state, text_bytes, cache_dir())
    if key not in _COUNTERS:
        if len(_COUNTERS) >= _COUNTERS_KEPT:
            _COUNTERS.pop(next(iter(_COUNTERS)))
        _COUNTERS[key] = load_tokenizer(
            None if spec is None else os.fspath(spec),
            add_special_tokens=add_special_tokens,
            fastokens_rule=small_scan_rule(text_bytes),
        )
    return _COUNTERS[key]


def _overlap_reason(shards: int, workers: int, threads: int) -> str:
    """The report's line when a scan has fewer shards than workers (a few large compressed files): each worker reads
    on one thread while its batches are tokenized on ``threads`` others (:func:`~freqlab.scan.work.count_shard`).

    >>> _overlap_reason(1, 1, 2)
    '1 shard: one worker reads it while its batches are tokenized on 2 threads'
    >>> _overlap_reason(3, 3, 2)
    '3 shards on 3 workers: each reads one while its batches are tokenized on 2 threads'
    """
    tokenized = f"its batches are tokenized on {threads} threads"
    if shards == 1:
        return f"1 shard: one worker reads it while {tokenized}"
    return f"{shards} shards on {workers} workers: each reads one while {tokenized}"


# the old name (0.1) in the module that defined it, kept for one release: the look-up warns (freqlab.deprecation)
__getattr__ = renamed_attributes("freqlab.scan.driver", {"run_scan": "freqlab.scan.driver.scan_from_settings"})
