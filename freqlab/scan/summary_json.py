"""A scan's ``summary.json`` (:func:`build_summary_json`, its format in :mod:`freqlab.formats`) and how it reads
(:func:`format_report`, :func:`scan_display`): what a length histogram implies for training windows, position-mass
shares and effective lengths.

For each window L and regime, :func:`freqlab.frequency.regime_table.regime_rows` of
f = position_frequency(histogram, L, regime) (STRING Eq. 2, f(i) = Σ_segments max(|s| - i, 0)), notably:

- ``share_at_most_half``: Σ_{i ≤ L/2} f(i) / Σ_i f(i), the share of position mass in the first half;
- ``share_at_least_three_quarters``: share of the mass at i ≥ 3L/4, the positions STRING finds
  under-trained (Sec. 3: the left-skewed frequency distribution);
- ``effective_length``: the largest i with f_T(i) = f(i) · T / f(0) ≥ tau after T training tokens (STRING
  Sec. 3, Fig. 2b; tau is an empirical, model-dependent threshold, default 100B).

The budget T follows the one rule of :mod:`freqlab.frequency.budget`: ``tokens`` when given, else 1T, whatever the
size of the corpus scanned. ``corpus_tokens`` extrapolates a partial scan's length distribution to a full corpus (the
corpus size the summary reports), which the summary flags.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from freqlab.corpus.base import NON_STRING_TEXT
from freqlab.corpus.hub import TYPE_GUESS_NOTE, TYPE_GUESSING_BUILDERS
from freqlab.display import Display, clip, first_few, listed, name_column, percent, quantity
from freqlab.frequency.budget import Budget, training_budget
from freqlab.frequency.regime_table import describe, human_count, regime_rows
from freqlab.frequency.regimes import check_window
from freqlab.frequency.stats import DEFAULT_TAU
from freqlab.histogram import UNLABELLED_SOURCE, LengthHistogram, histogram_display
from freqlab.paths import printable, printable_lines
from freqlab.scan.settings import DEFAULT_L, DEFAULT_REGIMES
from freqlab.scan.uncertainty import add_intervals, describe_interval

PREFIX_NOTE = (
    "max_docs/max_tokens keep the first documents in shard order: a prefix, not a random sample, so the "
    "lengths and the corpus-size estimate may be biased (sample_rate gives an unbiased sample)"
)


def budget_and_windows(
    histogram: LengthHistogram,
    L: Sequence[int] = DEFAULT_L,
    regimes: Sequence[str] = DEFAULT_REGIMES,
    *,
    tokens: int | None = None,
    corpus_tokens: int | None = None,
    estimated_corpus_tokens: int | None = None,
    tau: float = DEFAULT_TAU,
    partial: bool = False,
    seed: int = 0,
    megatron=None,
) -> dict:
    """The ``budget`` and ``windows`` parts of a scan summary.

    Corpus size: ``corpus_tokens`` when given, else ``estimated_corpus_tokens`` for a partial scan (when
    the scan could estimate it), else the tokens counted. The training budget T is ``tokens`` when given,
    else 1T (:func:`freqlab.frequency.budget.training_budget`). ``extrapolated`` is True when the frequencies of
    the counted tokens are scaled to a corpus of another size.

    Ten 4096-token documents in 2048-token windows: 20 full segments, f(i) = 20 · (2048 - i), and with
    T = 40960 = f(0), f_T(i) >= 1000 up to i = 1998.

    >>> h = LengthHistogram.from_lengths([4096] * 10)
    >>> s = budget_and_windows(h, [2048], ["natural"], tokens=40960, tau=1000)
    >>> w = s["windows"][0]
    >>> s["budget"]["training_tokens"], w["segments"], round(w["share_at_most_half"], 4), w["effective_length"]
    (40960, 20, 0.7504, 1998)
    """
    counted = histogram.tokens
    if corpus_tokens is not None:
        size, origin = int(corpus_tokens), "corpus_tokens option"
    elif partial and estimated_corpus_tokens:
        size, origin = int(estimated_corpus_tokens), "estimated from the partial scan"
    else:
        size, origin = counted, "tokens counted" + (" (partial scan)" if partial else "")
    rule = training_budget(tokens)
    training = rule.tokens
    budget = {
        "tau": tau,
        "corpus_tokens": size,
        "corpus_tokens_from": origin,
        "training_tokens": training,
        "training_tokens_from": "tokens option" if rule.given else "default",
        "tokens_counted": counted,
        "extrapolated": counted > 0 and size != counted,
    }
    for window in L:
        check_window(window)
    windows = []
    if counted > 0:
        windows = regime_rows(
            histogram.lengths,
            histogram.counts,
            L,
            regimes,
            tokens=training,
            tau=tau,
            seed=seed,
            megatron=megatron,
        )
    return {"budget": budget, "windows": windows}


def _eos_note(eos: dict | None) -> str:
    """``; EOS appended (token 2, ...)`` from the corpus description of tokenized data, when it says."""
    if not eos:
        return ""
    appended, token, checked = eos.get("appended"), eos.get("eos_id"), eos.get("documents_checked")
    how = eos.get("from", "")
    if how.startswith("separator"):
        return f"; documents end with the EOS separator {token} (counted)"
    if appended:
        return f"; EOS {token} appended and counted ({how}: all {checked:,} documents checked end with it)"
    if appended is False:
        return f"; no EOS appended ({how}, {checked:,} documents checked)"
    return f"; EOS unknown (some of {checked:,} documents checked end with {token})" if token is not None else ""


def _special_note(tok: dict) -> str:
    """What ``--add-special-tokens`` did: how many tokens each document got, or that the tokenizer adds none."""
    if not tok["special_tokens_counted"]:
        return "no special tokens"
    added = tok.get("special_tokens_added")
    if added is None:  # a summary written before the count was kept
        return "special tokens counted"
    if not added:
        return "--add-special-tokens: none added (the tokenizer has no post-processor adding any)"
    return f"special tokens counted: {added} per document"


def _counts(by_name: dict[str, int]) -> str:
    """``2 jsonl, 1 parquet``."""
    return ", ".join(f"{n:,} {name}" for name, n in by_name.items())


def _within(paths: list[str], root: str | None) -> list[str]:
    """The files passed over as the report names them: from the folder they and the files read share
    (``train/a.jsonl`` and ``validation/a.jsonl`` are two), else by their names.
    """
    absolute = [os.path.abspath(path) for path in paths]  # specs may be relative, the root is absolute
    try:
        base = os.path.commonpath([os.path.dirname(path) for path in absolute] + ([root] if root else []))
    except ValueError:  # paths on different drives
        return [os.path.basename(path) for path in paths]
    return [os.path.relpath(path, base) for path in absolute]


def format_report(summary: dict) -> str:
    """The terminal report of a scan summary (see :func:`freqlab.scan.scan`)."""
    lines = []
    corpus, tok, docs = summary["corpus"], summary["tokenizer"], summary["documents"]
    lines.append(f"corpus     {printable(corpus['name'])}")
    description = corpus.get("description") or {}
    if "files" in description:  # local data: say what was passed over, so no file goes missing silently
        files = description["files"]
        ignored = f"{description.get('ignored_files', 0):,} ignored"
        if description.get("other_formats"):  # left out by --format, and any passed over for another reason
            rest = description.get("ignored_files", 0) - sum(description["other_formats"].values())
            other = f"; {rest:,} for another reason" if rest > 0 else ""  # a review: 11 ignored said of 10
            ignored += f" ({_counts(description['other_formats'])} not of --format {description.get('format')}{other})"
        elif description.get("ignored_examples"):  # which: a file the user expected to count is seen at once
            names = [printable(name) for name in _within(description["ignored_examples"], description.get("root"))]
            ignored += f": {first_few(names, total=description.get('ignored_files', 0))}"
        passed = [f"{description.get('empty_files', 0):,} empty", ignored]
        for key, what in (
            ("duplicate_files", "duplicate"),
            ("not_regular_files", "not regular"),
            ("hidden_entries", "hidden"),
        ):
            if description.get(key):
                passed.append(f"{description[key]:,} {what}")
        formats = description.get("formats") or {}
        several = len({label.split(".")[0] for label in formats}) > 1  # jsonl and jsonl.zst are one format
        by_format = f": {_counts(formats)}" if several else ""  # several formats read: how many of each
        split = f", split {printable(description['split'])}" if description.get("split") else ""
        lines.append(f"files      {files:,} file{'s' if files != 1 else ''}{by_format}{split} ({', '.join(passed)})")
        if named := description.get("splits_named"):  # a local copy of a dataset repository: its splits added up
            splits = ", ".join(f"{split} {n:,}" for split, n in named.items())
            lines.append(
                f"           files named for several splits, all read ({splits}): to read one split, give its files "
                "alone (its folder or a glob)"
            )
    if tok is None:
        lines.append("tokenizer  none: lengths read from tokenized data" + _eos_note(description.get("eos")))
    else:
        special = _special_note(tok)
        lines.append(f"tokenizer  {printable(tok['name'])} ({tok['backend']}, vocab {tok['vocab_size']:,}, {special})")
        if tok.get("fallback_reason"):
            lines.append(f"           {tok['fallback_reason']}")
        if tok.get("fastokens_note"):
            lines.append(f"           {tok['fastokens_note']}")
        counted = tok.get("counted_by") or {}
        if set(counted) - {tok["backend"]}:  # some documents went past the first backend: how many, to which
            shares = "; ".join(f"{backend} {n:,}" for backend, n in counted.items())
            lines.append(f"           documents counted by {shares}")
        if tok.get("cache_not_written"):
            from freqlab.tokenization.cache import CHANGED_WHILE_LOADED

            hint = (
                "; set FREQLAB_CACHE_DIR to a writable folder (FREQLAB_NO_CACHE=1: no cache)"
                if tok["cache_not_written"] != CHANGED_WHILE_LOADED
                else ""
            )
            lines.append(
                f"           tokenizer cache not written ({printable(tok['cache_not_written'])}): each run loads and"
                f" checks the tokenizer again{hint}"
            )
    skipped = docs["skipped"]
    reasons = ", ".join(f"{k}: {v:,}" for k, v in sorted(skipped.items()))
    lines.append(
        f"documents  {docs['read']:,} read = {docs['tokenized']:,} tokenized + {docs['empty']:,} empty"
        f" + {sum(skipped.values()):,} skipped" + (f" ({reasons})" if reasons else "")
    )
    if (
        skipped.get(NON_STRING_TEXT)
        and description.get("kind") == "builder"
        and description.get("id") in TYPE_GUESSING_BUILDERS
    ):
        lines.append(f"           non-string-text {TYPE_GUESS_NOTE}")
    if docs.get("sampled_out"):
        lines.append(f"           {docs['sampled_out']:,} left out by sampling")
    if docs.get("blank_lines"):
        blank = docs["blank_lines"]
        # under a limit, those before the last document kept
        lines.append(f"           {blank:,} blank line{'s' if blank != 1 else ''} passed over (not records)")
    if docs.get("unreadable_files"):
        shown = first_few([printable(name) for name in docs["unreadable_files"]])
        # none of their documents are counted (a failed checksum vouches for none): each file is one skip, or each
        # part of a file read in parts (name@bytes; a review read "one skip each" as one per file)
        lines.append(
            "           files (or parts of files, name@bytes) that failed while read (none of their documents counted,"
            f" one skip each): {shown}"
        )
    lengths = summary["lengths"]
    if summary["tokens"]:
        lines.append(
            f"tokens     {summary['tokens']:,} (mean {lengths['mean']:,.0f}, median {lengths['median']:,},"
            f" p99 {lengths['percentiles']['p99']:,}, max {lengths['max']:,} per document; nearest-rank quantiles)"
        )
    else:  # no length to describe: a median of 0 would read as documents of length 0
        lines.append(f"tokens     {summary['tokens']:,} (no document with a token)")
    run = summary["scan"]
    workers = f"{run['engine']}, {run['workers']} worker{'s' if run['workers'] != 1 else ''}"
    if run.get("nodes") is not None:  # Ray: the CPUs of the nodes that ran tasks, and the retries
        nodes, retries = len(run["nodes"]), run.get("retries", 0)
        cpus = run["workers"]
        workers = f"{run['engine']}, {cpus} CPU{'s' if cpus != 1 else ''} on {nodes} node{'s' if nodes != 1 else ''}"
        workers += f", {retries} shard{'s' if retries != 1 else ''} retried" if retries else ""
    if run["documents_per_second"] is None:  # a resume that found every shard checkpointed
        speed = "all shards from checkpoints"
    else:
        speed = f"{human_count(run['documents_per_second'])} docs/s, {human_count(run['tokens_per_second'])} tokens/s"
        if run.get("resumed_shards"):  # the rates are this run's, not the whole count's
            speed += " in the shards counted now"
        if run.get("documents_past_limit"):
            speed += f", {quantity(run['documents_past_limit'], 'document')} of them past the limit (not kept)"
        if run.get("documents_in_failed_files"):
            speed += (
                f", {quantity(run['documents_in_failed_files'], 'document')} of them in files that failed (not kept)"
            )
    lines.append(f"time       {run['wall_seconds']:.1f} s, {speed} ({workers})")
    if run.get("engine_reason"):
        lines.append(f"           {run['engine_reason']}")
    if run.get("partial"):
        lines.append(f"partial    {run['partial']}")
    if run.get("resumed_shards"):
        recounted = run.get("recounted_checkpoints") or {}
        detail = "; ".join(f"{n:,} recounted: {why}" for why, n in sorted(recounted.items()))
        detail = f" ({detail})" if detail else ""
        lines.append(f"resumed    {quantity(run['resumed_shards'], 'shard')} from checkpoints{detail}")
    elif run.get("recounted_checkpoints"):
        detail = "; ".join(f"{n:,} {why}" for why, n in sorted(run["recounted_checkpoints"].items()))
        lines.append(f"resumed    no checkpoint could be used ({detail})")
    elif run.get("nothing_to_resume"):
        lines.append("resumed    nothing: the output folder held no checkpoints; every shard was counted now")
    if summary.get("sources"):
        lines.append("")
        head, *names = name_column(list(summary["sources"]))  # one line each, cut, blank quoted (a review)
        lines.append(f"{head}  {'documents':>12}  {'tokens':>16}  {'share':>6}")
        total = max(summary["tokens"], 1)
        for shown, s in zip(names, summary["sources"].values(), strict=True):
            share = percent(s["tokens"] / total)
            lines.append(f"{shown}  {s['documents']:>12,}  {s['tokens']:>16,}  {share:>6}")
        if UNLABELLED_SOURCE in summary["sources"]:
            named = description.get("source_field")
            lines.append(f"{UNLABELLED_SOURCE}: documents without the source field" + (f" {named!r}" if named else ""))
    budget = summary["budget"]
    lines.append("")
    note = ", extrapolated" if budget["extrapolated"] else ""
    rule = Budget(budget["training_tokens"], budget["training_tokens_from"] == "tokens option")
    lines.append(
        f"budget     {rule.describe()}; "
        f"corpus {human_count(budget['corpus_tokens'])} tokens ({budget['corpus_tokens_from']}{note}); "
        f"tau = {human_count(budget['tau'])}"
    )
    if budget.get("note"):
        lines.append(f"note       {budget['note']}")
    for w in summary["windows"]:
        lines.append(describe(w, detail=True))
        if w.get("ci", {}).get("level"):
            lines.append(f"    {describe_interval(w)}")
    if not summary["windows"]:
        lines.append("no tokens counted: no position frequencies to report")
    outputs = summary.get("outputs")
    if outputs:
        lines.append("")
        lines.append("wrote      " + ", ".join(printable(path) for path in outputs.values()))
    # names and labels come from the data and the command line: a terminal shows them, not obeys them (each is
    # escaped where it is put in, a newline included; a line of the report may hold several, as the windows' do)
    return printable_lines(lines)


def estimate_corpus_tokens(tokens: int, documents: int, read: int) -> int:
    """``tokens * documents / read`` rounded to the nearest integer (halves up), in exact integer arithmetic.

    >>> estimate_corpus_tokens(82031920993190389, 910925047, 861425549)  # float division: ...184, off by 6
    86745664292135178
    """
    return (2 * tokens * documents + read) // (2 * read)


WHOLE_INDEX_NOTE = (
    "replayed from the whole index, as Megatron trains on it: every document, not only those this partial scan read"
)


def _megatron_options(report, corpus):
    """The megatron regime's options, reading the scanned index when one was scanned and none is named."""
    if "megatron" not in report.regimes:
        return None
    from freqlab.frequency.megatron_replay import MegatronOptions

    paths = sorted({shard.path for shard in corpus.shards if isinstance(getattr(shard, "path", None), str)})
    options = (report.megatron or MegatronOptions()).with_data_path(paths)
    return options if options.eod_id is not None else replace(options, eod_id=given_eod(corpus))


def given_eod(corpus) -> int | None:
    """The EOD id the user gave the scan (``--eos-id``): the one Megatron's reset mask cuts at, whether or not the
    documents end with it (a review: the replay inferred its own, and dropped the mask when the endings were mixed).
    """
    eos = (corpus.description or {}).get("eos") or {}
    return eos.get("eos_id") if eos.get("from") == "eos_id option" else None


@dataclass
class RunRecord:
    """What this run did (as opposed to what resumed checkpoints held): for throughput and the summary."""

    resumed_shards: int = 0
    shards: int = 0
    resumed_documents: int = 0  # read from checkpoints
    shards_run: int = 0
    documents_now: int = 0
    tokens_now: int = 0
    wall: float = 0.0
    recounted: dict[str, int] = field(default_factory=dict)
    nothing_to_resume: bool = False  # asked to resume, the folder held no checkpoints

    def add(self, part) -> None:
        """Add a shard's part to the record."""
        self.shards_run += 1
        self.tokens_now += part.tokens
        self.documents_now += part.documents_read


def warm_up(report, seed: int = 0) -> None:
    """Load what :func:`budget_and_windows` will need for ``report``'s regimes (numba and their kernels, compiled or
    read from numba's cache: ~0.3 s the first time in a process) by summarising three documents, one longer than
    the window and two shorter, in a 64-token window (a kernel's code does not depend on the window: a small one
    costs nothing); the result is dropped. The ``megatron`` regime is left out (it reads its index).
    """
    regimes = [r for r in report.regimes if r != "megatron"]
    if regimes:
        tiny = LengthHistogram.from_lengths([1, 2, 129])
        budget_and_windows(tiny, [64], regimes, tokens=report.tokens, tau=report.tau, seed=seed)


def build_summary_json(
    settings, report, corpus, counter, engine, histogram: LengthHistogram, ledger, options, record: RunRecord
) -> dict:
    """The summary of a scan (``summary.json``): corpus, tokenizer, document accounting, lengths, the run, and
    per window and regime the mass shares and effective lengths (:func:`budget_and_windows`).
    """
    total = ledger.total
    # this run's reads not kept: past a limit's cut, or in files that then failed (the ledger counts both sources of
    # what it keeps as it commits them: checkpoints waiting behind a limit are committed after the scan starts)
    not_kept = max(record.documents_now - (histogram.documents_read - ledger.resumed_documents), 0)
    failed_now = ledger.failed_documents
    read = histogram.documents_read
    tokenized, empty, skipped = histogram.documents, histogram.empty_documents, dict(histogram.skipped)
    assert read == tokenized + empty + sum(skipped.values()), "every document read must be accounted for"
    seen = read + total.sampled_out
    from_checkpoints = record.resumed_shards > 0 and record.shards_run == 0
    reasons = []
    if options.sample_rate is not None:
        reasons.append(f"sampled at rate {options.sample_rate} (seed {options.seed})")
    stopped = ledger.exhausted and not ledger.read_all  # a limit the corpus ends at stops nothing
    if stopped:
        limits = [
            f"max_docs={settings.max_docs}" if settings.max_docs else "",
            f"max_tokens={settings.max_tokens}" if settings.max_tokens else "",
        ]
        reasons.append("stopped at " + " / ".join(x for x in limits if x))
    partial = "; ".join(reasons)
    # a partial scan's estimate of the full corpus: tokens per document read, times the corpus's documents,
    # in exact integer arithmetic (Python ints: no float rounding at 10^12 tokens), rounded to nearest
    estimate = None
    if partial and read:
        documents, drawn = corpus.total_documents if stopped else seen, read
        if options.sample_rate is not None and documents:  # a bad record is never sampled out: every one is read,
            bad = sum(skipped.values())  # only the good ones drawn at the rate (a review: 5% bad lines halved it)
            documents, drawn = documents - bad, read - bad
        if documents and documents > 0 and drawn > 0:  # total_documents: None when the corpus cannot count them
            estimate = estimate_corpus_tokens(int(histogram.tokens), int(documents), int(drawn))
    windows = budget_and_windows(
        histogram,
        report.L,
        report.regimes,
        tokens=report.tokens,
        corpus_tokens=report.corpus_tokens,
        estimated_corpus_tokens=estimate,
        tau=report.tau,
        partial=bool(partial),
        seed=options.seed,
        megatron=_megatron_options(report, corpus),
    )
    if stopped:
        windows["budget"]["note"] = PREFIX_NOTE
    for row in windows["windows"]:
        if partial and row["regime"] == "megatron":  # it replays the index itself, not the documents read (review)
            row["note"] = WHOLE_INDEX_NOTE
    if options.sample_rate is not None:  # a sample: its shares get error bars (freqlab.scan.uncertainty)
        add_intervals(windows["windows"], histogram.lengths, histogram.counts, seed=options.seed)
    lengths = histogram.length_statistics()
    wall = record.wall
    summary = {
        "corpus": {
            "name": corpus.name,
            "description": corpus.description,
            "shards": record.shards,
            "total_documents": corpus.total_documents,
            "has_sources": corpus.has_sources,
        },
        "tokenizer": None
        if counter is None
        else {
            "name": counter.name,
            "vocab_hash": counter.vocab_hash,
            "vocab_size": counter.vocab_size,
            "backend": counter.backend,
            "backends": list(counter.backends),
            "fallback_reason": counter.fallback_reason or None,
            "fastokens_note": counter.fastokens_note if counter.backend == "fastokens" else None,
            "fallback_reasons": dict(counter.fallback_reasons),
            "special_tokens_counted": bool(counter.add_special_tokens),
            "special_tokens_added": counter.special_tokens_added,  # per document
            "cache_not_written": getattr(counter, "cache_not_written", None),
            # documents handed to the tokenizer, by the backend that counted each (routed, or after a failure)
            # (a resumed scan's checkpoints may name a backend this counter lacks: listed after its own; None when
            # some came from a checkpoint of freqlab's version 2, which did not keep them)
            "counted_by": None
            if total.counted_by is None
            else {
                b: total.counted_by[b]
                for b in dict.fromkeys([*counter.backends, *sorted(total.counted_by)])
                if total.counted_by.get(b)
            },
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
        "lengths": {
            k: lengths[k] for k in ("mean", "median", "percentiles", "quantiles", "min", "max", "distinct_lengths")
        },
        "scan": {
            **engine.describe(),
            "batch_size": options.batch_size,
            "on_error": options.on_error,
            "seed": options.seed,  # pack's stream order and the sample's (a review: not recorded, not reproducible)
            "partial": partial,
            "resumed_shards": record.resumed_shards,
            "recounted_checkpoints": record.recounted,
            "nothing_to_resume": record.nothing_to_resume,
            "wall_seconds": wall,
            "tokens_tokenized_this_run": record.tokens_now,
            # workers count their shards past a limit's cut before the ledger reaches it: done (the rates include
            # them), not kept; how many depends on the workers' timing. Apart from them: the documents read from
            # files that then failed (each kept as one unreadable-file skip)
            "documents_past_limit": max(not_kept - failed_now, 0),
            "documents_in_failed_files": failed_now,
            # None: nothing was read by this run (every shard came from a checkpoint), no speed to report
            "documents_per_second": None if from_checkpoints else record.documents_now / wall if wall > 0 else 0.0,
            "tokens_per_second": None if from_checkpoints else record.tokens_now / wall if wall > 0 else 0.0,
        },
    }
    if histogram.sources:
        summary["sources"] = {
            name: {"documents": h.documents, "empty": h.empty_documents, "tokens": h.tokens}
            for name, h in histogram.sources.items()
        }
    summary.update(windows)
    return summary


def scan_display(result) -> Display:
    """What a :class:`~freqlab.scan.ScanResult` shows: the histogram's numbers, the scan's own (time, workers,
    partial), one line of position-mass shares per window and, in HTML, the windows table and the length chart.
    """
    summary, h = result.summary, result.histogram
    shown = histogram_display(h)
    title = f"ScanResult {clip(h.corpus, 80)!r}" + (f" ({clip(h.tokenizer, 60)})" if h.tokenizer else "")
    windows = summary.get("windows", [])
    shares = listed([f"L={w['L']} {w['regime']} {percent(w['share_at_most_half'])}" for w in windows], 4)
    lines = [f"mass at i ≤ L/2: {shares}"] if windows else []
    run = summary.get("scan", {})
    where = f"written to {result.out}" if result.out is not None else "not written (no out folder)"
    lines.append(f"{where}" + (f"; partial: {run['partial']}" if run.get("partial") else ""))
    rows = [*shown.rows]
    if run:
        workers = f"{run['workers']} worker{'s' if run['workers'] != 1 else ''}"
        rows.append(("time", f"{run['wall_seconds']:.1f} s ({run['engine']}, {workers})"))
    budget = summary.get("budget", {})
    if budget:
        rows.append(("budget T", f"{human_count(budget['training_tokens'])} tokens ({budget['training_tokens_from']})"))
    header = ("L", "regime", "mass i ≤ L/2", "mass i ≥ 3L/4", "50% / 90% of mass at i ≤", "effective length")
    table = (
        header,
        [
            (
                str(w["L"]),
                w["regime"] + (f" ({w['approximation']})" if w.get("approximation") else ""),
                percent(w["share_at_most_half"]),
                percent(w["share_at_least_three_quarters"]),
                f"{w['position_at_mass']['50%']} / {w['position_at_mass']['90%']}",
                str(w.get("effective_length", "-")),
            )
            for w in windows
        ],
    )
    return Display(title, shown.headline, lines, rows, table if windows else None, figure=shown.figure)
