"""The per-shard work of a scan: read a shard, count its document lengths exactly.

:class:`CountJob` (that is, :func:`count_shard` with a tokenizer) is the only thing any engine runs
(in-process, in a process pool, or as a Ray task), in the spirit of datatrove's pipeline steps: the engines
only decide *where* it runs. A text shard's documents are tokenized in batches; a length shard (tokenized
data) yields its lengths directly. Either way the outcome of each document becomes a *code* (``> 0``: its
length in tokens, ``0``: empty, ``-k``: skipped for reason ``k``), and codes go through the same sampling,
limits and counting.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from freqlab.corpus.base import (
    BLANK_LINE,
    MISSING_TEXT_FIELD,
    NON_STRING_TEXT,
    ROW_REASONS,
    TEXT,
    UNREADABLE_FILE,
    Document,
    FileShard,
    ReadMeter,
    Run,
    UnreadableFile,
    changed_message,
    describe_error,
    metered,
)
from freqlab.corpus.fields import MISSING_FIELD, lookup
from freqlab.corpus.file_discovery import FileChanged
from freqlab.errors import FreqlabError
from freqlab.scan.counts import BACKEND_UNKNOWN, DocumentLog, ShardCount, backend_counts, cut_point, limits_reached
from freqlab.scan.settings import DEFAULT_BATCH_SIZE, ON_ERROR

if TYPE_CHECKING:
    from freqlab.tokenization.counter import BackendTally

# A batch is also flushed once it holds this many characters, so memory stays bounded by the batch and the
# single longest document, whatever the corpus size.
MAX_BATCH_CHARS = 4_000_000

Progress = Callable[[int, int], None]  # (documents, tokens) done since the last call

__all__ = ["DEFAULT_BATCH_SIZE", "ON_ERROR", "CountJob", "Sampler", "ShardOptions", "count_shard"]


@dataclass(frozen=True)
class ShardOptions:
    """How to count one shard. ``max_docs``/``max_tokens`` cap this shard (the driver cuts exactly); ``peek``: read
    one document past the cap, when there is one, and count it too, so that the driver knows whether anything
    follows it (the driver cuts it off the logged partial, ``keep_log``).
    """

    batch_size: int = DEFAULT_BATCH_SIZE
    on_error: str = "raise"
    sample_rate: float | None = None
    seed: int = 0
    by_source: bool = False
    max_docs: int | None = None
    max_tokens: int | None = None
    keep_log: bool = False
    peek: bool = False

    def capped(self, max_docs: int | None, max_tokens: int | None) -> ShardOptions:
        """These options with this shard's caps set (what the scan may still take)."""
        return replace(self, max_docs=max_docs, max_tokens=max_tokens)


class Sampler:
    """Deterministic Bernoulli(sample_rate) choice of documents, per (seed, shard id, document index).

    Uniform draws come from a PCG64 stream seeded with (seed, hash of the shard id) and are consumed in
    document order, so the choice does not depend on batch size, worker count or which worker reads the
    shard.
    """

    BLOCK = 8192

    def __init__(self, rate: float, seed: int, shard_id: str) -> None:
        digest = hashlib.blake2b(shard_id.encode("utf-8", "backslashreplace"), digest_size=8).digest()
        self.rate = rate
        self.rng = np.random.Generator(np.random.PCG64([int(seed) & (2**63 - 1), int.from_bytes(digest, "little")]))
        self.draws = np.zeros(0, bool)
        self.offset = 0  # index of draws[0] among documents

    def keep(self, index: int) -> bool:
        """Whether document ``index`` is kept (indices must not decrease between calls)."""
        at = index - self.offset
        if at >= self.draws.size:
            return bool(self.keep_range(index, 1)[0])
        return bool(self.draws[at])

    def keep_range(self, start: int, count: int) -> np.ndarray:
        """Whether each of documents ``start .. start + count - 1`` is kept (``start`` must not decrease)."""
        end = start + count
        while self.offset + self.draws.size < end:  # draw on, keeping what `start` still needs
            keep_from = min(start - self.offset, self.draws.size)
            self.offset += keep_from
            self.draws = np.concatenate([self.draws[keep_from:], self.rng.random(self.BLOCK) < self.rate])
        return self.draws[start - self.offset : end - self.offset]


class _Batch:
    """Documents waiting to be counted, in order: their codes (1 = a text to tokenize), sources, positions, and the
    blank lines met just before each (``gaps``: since the document before, sampled-out ones passed over).

    Documents read one at a time are kept in lists; a run of plain texts (:meth:`add_run`) is kept as one chunk
    (its count, label and positions), so that it costs no Python object per document (:meth:`arrays` expands it).
    """

    def __init__(self) -> None:
        self.codes: list[int] = []
        self.sources: list[int] = []
        self.positions: list[int] = []
        self.gaps: list[int] = []
        self.texts: list[str] = []
        self.chars = 0
        self.sampled_out = 0
        # (codes, sources, positions, gaps) of the documents before the lists above, oldest first
        self._chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._chunked = 0

    def __len__(self) -> int:
        return self._chunked + len(self.codes)

    def add_run(self, texts: list[str], label: int, positions: range | np.ndarray, gaps: np.ndarray) -> None:
        """Plain texts (code 1, one label), at ``positions`` in the shard, each after ``gaps`` blank lines."""
        self._seal()
        n = len(texts)
        self.texts.extend(texts)
        self.chars += sum(map(len, texts))
        if isinstance(positions, range):
            positions = np.arange(positions.start, positions.stop, dtype=np.int64)
        self._chunks.append((np.ones(n, np.int64), np.full(n, label, np.int32), positions, gaps))
        self._chunked += n

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(codes, sources, positions, gaps)`` of every document, int64, int32, int64, int64."""
        self._seal()
        if len(self._chunks) == 1:
            return self._chunks[0]
        if not self._chunks:
            return np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int64)
        return tuple(np.concatenate(column) for column in zip(*self._chunks))  # type: ignore[return-value]

    def _seal(self) -> None:
        if self.codes:
            codes, sources = np.array(self.codes, np.int64), np.array(self.sources, np.int32)
            self._chunks.append((codes, sources, np.array(self.positions, np.int64), np.array(self.gaps, np.int64)))
            self._chunked += len(self.codes)
            self.codes, self.sources, self.positions, self.gaps = [], [], [], []


class _Tally:
    """Counts batches of codes into a :class:`ShardCount`, applying this shard's caps exactly."""

    def __init__(self, shard, options: ShardOptions, on_progress: Progress | None) -> None:
        self.part = ShardCount(shard_id=shard.id)
        self.options = options
        self.log = DocumentLog()
        # label / reason -> its index in codes and sources; insertion order is index order
        self.labels: dict = {None: 0}
        self.reasons: dict[str, int] = {}
        self.backends: dict[str, int] = {}  # tokenizer backend -> its number in counted(); insertion order
        self.docs_left, self.tokens_left = options.max_docs, options.max_tokens
        self.on_progress = on_progress
        self.capped = False
        self.peeked = False  # the document after the cap was read (options.peek)
        # bytes read, for percent and ETA: as the reader's meter says, topped up to the shard's size at the end
        self.meter = ReadMeter()
        self.size = shard.size() if on_progress is not None else None
        self.bytes_reported = 0

    def bytes_read(self, finished: bool = False) -> int:
        """Bytes read since the last report (never more than the shard's size, never backwards)."""
        if self.size is None or (self.meter.probe is None and not finished):
            return 0
        done = self.size if finished else min(max(int(self.meter.probe()), self.bytes_reported), self.size)
        delta, self.bytes_reported = done - self.bytes_reported, done
        return delta

    def label(self, source) -> int:
        return self.labels.setdefault(source if self.options.by_source else None, len(self.labels))

    def reason(self, reason: str) -> int:
        """The (negative) code of a skip for ``reason``."""
        return -(self.reasons.setdefault(reason, len(self.reasons)) + 1)

    def counted(self, by_backend: BackendTally, texts: np.ndarray) -> BackendTally | np.ndarray:
        """A batch's documents per backend for :meth:`add`: when it may be cut (a cap) or is logged, the backend of
        each document as its number in :attr:`backends` (-1: no text; :data:`BACKEND_UNKNOWN`: not known), else
        the tally as it is.
        """
        if not self.options.keep_log and self.docs_left is None and self.tokens_left is None:
            return by_backend
        per_text = by_backend.codes(int(np.count_nonzero(texts)), self.backends)
        out = np.full(texts.size, -1, np.int8)
        out[texts] = BACKEND_UNKNOWN if per_text is None else per_text
        return out

    def add(
        self,
        codes: np.ndarray,
        sources: np.ndarray | int,
        positions: np.ndarray | int,
        counted: BackendTally | np.ndarray | None = None,
        gaps: np.ndarray | None = None,
    ) -> bool:
        """Count documents in order; True once this shard's cap is reached (the rest are dropped).

        ``sources``: each document's label index, or (an int) one for all; ``positions``: each document's index in
        the shard, or (an int) the first one's when they are consecutive; ``counted``: the documents per backend
        (:meth:`counted`), those of the documents kept going into ``counted_by``; ``gaps``: the blank lines met
        just before each document, those of the documents kept going into ``blank_lines``.
        """
        n = cut_point(codes, self.docs_left, self.tokens_left)
        reached = limits_reached(codes[:n], self.docs_left, self.tokens_left)  # a cut (n < size) implies it
        if reached and self.options.peek and not self.peeked and n < codes.size:
            n, self.peeked = n + 1, True  # the document after the cap (or the next batch's first)
        self.capped = reached and (self.peeked or not self.options.peek)
        codes = codes[:n]
        sources = sources if isinstance(sources, int) else sources[:n]
        tokens = self.part.add(codes, sources, list(self.labels), list(self.reasons))
        if isinstance(counted, np.ndarray):
            counted = counted[:n]
            self.part.counted_by = backend_counts(counted, list(self.backends), self.part.counted_by)
        elif counted is not None:
            self.part.counted_by.update(counted)
        if gaps is not None:
            gaps = gaps[:n]
            self.part.blank_lines += int(gaps.sum())
        if self.options.keep_log:  # counted() gave an array, or the batch has no text
            self.log.backends.append(counted if isinstance(counted, np.ndarray) else np.full(n, -1, np.int8))
            self.log.gaps.append(np.zeros(n, np.int64) if gaps is None else gaps)
            self.log.codes.append(codes.copy())  # a length reader may reuse its buffer for the next batch
            self.log.sources.append(np.full(n, sources, np.int32) if isinstance(sources, int) else sources)
            if self.options.sample_rate is not None:  # else positions are 0, 1, 2, ...: not kept
                if not isinstance(positions, np.ndarray):
                    positions = np.arange(positions, positions + n, dtype=np.int64)
                self.log.positions.append(positions[:n])
        if self.docs_left is not None:
            self.docs_left -= n
        if self.tokens_left is not None:
            self.tokens_left -= tokens
        if self.on_progress is not None:
            self.on_progress(n, tokens, self.bytes_read())
        return self.capped

    def finish(self) -> ShardCount:
        if self.on_progress is not None and (rest := self.bytes_read(finished=True)):
            self.on_progress(0, 0, rest)
        part = self.part
        part.complete = not self.capped and part.error is None
        if self.options.keep_log:
            self.log.labels = list(self.labels)
            self.log.reasons = list(self.reasons)
            self.log.backend_names = list(self.backends)
            part.log = self.log
        return part


class _FailedRead(Document):
    """The last record of a shard whose file failed while being read (a group of files' one unreadable member is a
    plain ``unreadable-file`` record: the others still count).
    """

    __slots__ = ()


def _documents(shard) -> Iterator[Document | list[str]]:
    """A shard's documents, with blank lines marked and runs of plain texts as lists (files only:
    :meth:`~freqlab.corpus.base.FileShard.read_runs`), and a file that fails while being read turned into one
    last ``unreadable-file`` record (``where`` is its one-line message).
    """
    try:
        yield from shard.read_runs() if isinstance(shard, FileShard) else shard.read()
    except UnreadableFile as exc:
        yield _FailedRead(None, None, str(exc), UNREADABLE_FILE)


def _check_counts(lengths: np.ndarray, expected: int, what) -> np.ndarray:
    if lengths.shape != (expected,) or (lengths.size and int(lengths.min()) < 0):
        raise FreqlabError(f"{what} returned bad counts")
    return lengths


def count_shard(
    shard,
    counter,
    options: ShardOptions = ShardOptions(),
    on_progress: Progress | None = None,
    threads: int = 1,
) -> ShardCount:
    """Count the token lengths of one shard's documents into a :class:`ShardCount`.

    Text shards: ``shard.read()`` yields documents ``(text, source, where, error)`` (see
    :mod:`freqlab.corpus`): a bad record (``text is None``) stops the shard with its ``where: error`` message
    when ``on_error="raise"`` (the driver raises it) or is counted in ``skipped[error]`` with ``"skip"``;
    ``""`` is an empty document. A file that fails while being read
    (:class:`freqlab.corpus.base.UnreadableFile`) gives its error, or one ``unreadable-file`` record after the
    documents read, the partial marked ``failed``: a gzip CRC or zstd checksum that fails at the end vouches for
    none of the bytes before it, so the ledger keeps none of them unless the scan's limits end before the failure
    (:func:`freqlab.scan.counts.truncate`: the same documents whatever the worker count). A file that changed while
    the shard was read (its identity is checked after the read too) gives the error, or one ``unreadable-file``
    skip and none of the shard's documents: they would mix two versions. Blank JSON-lines lines are no documents: they
    are counted in ``blank_lines``. Texts are tokenized ``batch_size`` at a time with ``counter.count``. A
    document is empty when it has no content token (an empty text, or one a tokenizer's normalizer reduces to
    nothing); special tokens (``add_special_tokens``) are counted around every other document. Length shards
    (``counter`` is not used) yield their lengths in batches. ``on_progress(documents, tokens, bytes)`` is called
    after each batch (bytes: as far as the reader's :class:`~freqlab.corpus.base.ReadMeter` says, the rest of the
    shard's size when it ends). ``threads`` > 1: batches are tokenized on that many threads while the next ones are
    read and parsed (the backends release the GIL while they encode: one file's stream, decompressed once, then
    keeps every core busy); batches are still counted in order, so the counts, caps and errors are the same. The
    counter's engines are then built first, side by side.
    """
    if options.on_error not in ON_ERROR:
        raise FreqlabError(f"on_error must be one of {', '.join(ON_ERROR)}, got {options.on_error!r}")
    tally = _Tally(shard, options, on_progress)
    sampler = None
    if options.sample_rate is not None and options.sample_rate < 1.0:
        sampler = Sampler(options.sample_rate, options.seed, shard.id)
    with metered(tally.meter):
        if shard.kind == TEXT:
            with _tokenizing(counter, threads) as tokenizing:
                _count_texts(shard, counter, options, tally, sampler, tokenizing)
        else:
            _count_lengths(shard, options, tally, sampler)
    changed = _changed_since_opened(shard)
    if changed is not None:  # counts of a file that changed under the reader mix two versions: none are kept
        return _refused(shard, options, changed)
    return tally.finish()


def _changed_since_opened(shard) -> str | None:
    """The one-line message when a file of ``shard`` changed since the corpus was opened (checked after the
    read, as each reader checks before it: a change during the read is caught), else None.
    """
    check = getattr(shard, "check_unchanged", None)  # a shard of another kind (a test's, a user's) may have none
    try:
        if check is not None:
            check()
    except FileChanged as exc:
        return changed_message(exc.path or shard.id, exc)
    except OSError as exc:  # the server cannot say (a remote file): the read cannot be vouched for
        return f"{shard.id}: cannot check the file is unchanged after reading it ({describe_error(exc)})"
    return None


def _refused(shard, options: ShardOptions, message: str) -> ShardCount:
    """The partial of a shard whose reading cannot be trusted: the error (``on_error="raise"``), or one
    ``unreadable-file`` skip and nothing else (``"skip"``).
    """
    tally = _Tally(shard, options.capped(None, None), None)
    if options.on_error == "raise":
        tally.part.error = message
    else:
        tally.add(np.array([tally.reason(UNREADABLE_FILE)], np.int64), 0, 0)
    return tally.finish()


class _Tokenizing:
    """How a shard's batches are tokenized: ``submit(count, texts)`` gives a handle whose ``result()`` is
    ``count(texts)``, computed on one of ``threads`` threads (at once with one); ``in_flight``: how many batches the
    reader hands over before it waits for the oldest (``threads`` + :data:`QUEUED_BATCHES`; 1 with one thread).
    """

    def __init__(self, submit: Callable, threads: int = 1) -> None:
        self.submit, self.threads = submit, threads
        self.in_flight = threads + QUEUED_BATCHES if threads > 1 else 1


#: batches handed to the tokenizing threads beyond one per thread: a thread done with its batch takes the next at
#: once instead of waiting for the reader, who shares the cores with them (one 190M-character .jsonl.zst on 2 threads,
#: Llama 3, counting phase, 6 runs alternated: 1.10-1.17 s against 1.18-1.41 s with none queued, 1.10-1.21 s with 3;
#: a batch is at most :data:`MAX_BATCH_CHARS` characters)
QUEUED_BATCHES = 2


@contextlib.contextmanager
def _tokenizing(counter, threads: int) -> Iterator[_Tokenizing]:
    """A shard's :class:`_Tokenizing`. With ``threads`` > 1 the counter's engines are built first, side by side
    (:meth:`~freqlab.tokenization.TokenCounter.build_engines`: not the reference in the middle of the count), the
    batches run on the process's tokenizing threads (:class:`_TokenizingThreads`), and when the shard ends, however
    it ends, its batches not started are cancelled and those running are waited for. The threads are given back
    when the shard ends by an exception (an interrupt can land in the pool's own bookkeeping, leaving a thread it no
    longer knows of: only a shut-down pool tells such a thread to end, and the interpreter's exit waits for it) and
    after a shard that tokenized a text of :data:`KEEP_THREADS_BELOW` characters or more. Building the engines on a
    thread while the first batches were read saved 4-5% on one big file, but left signals arriving during the build
    to Python's lock cleanup (tracebacks and hangs on a second Ctrl-C, a failing build that could not be
    interrupted): withdrawn.
    """
    if threads <= 1:
        yield _Tokenizing(_Counted)
        return
    build = getattr(counter, "build_engines", None)
    if build is not None:
        build()
    pool, handles, longest = _TokenizingThreads.use(threads), [], 0

    def submit(count: Callable, texts: list[str]) -> Future:
        nonlocal longest
        longest = max(longest, max(map(len, texts)))
        handles[:] = [handle for handle in handles if not handle.done()]  # at most `in_flight` kept
        handles.append(pool.executor.submit(count, texts))
        return handles[-1]

    ended = False
    try:
        yield _Tokenizing(submit, threads)
        ended = True
    finally:
        for handle in handles:
            handle.cancel()
        try:
            wait(handles)
        finally:
            pool.done(give_back=not ended or longest >= KEEP_THREADS_BELOW, idle=ended)


#: a shard that tokenized a text this long (characters) gives its tokenizing threads back when it ends: fastokens
#: keeps each thread's buffers as large as the longest text it counted (measured: 1,141 MiB resident after a scan of
#: one 20M-character document of letters without spaces, against 353 MiB once its threads ended); new threads
#: (~2.6 ms each) cost such a shard less than 10% of its count
KEEP_THREADS_BELOW = 1 << 20


class _TokenizingThreads:
    """The tokenizing threads of this process, ``threads`` of them, kept from shard to shard: fastokens sets up each
    new thread it counts on (~2.6 ms, measured, against 13-28 us to count a 2,000-character text), so threads
    started for each shard cost a corpus of small files that much per file (5,000 files of 2,000 characters: 27 s,
    against 8 s on one thread). A shard takes the current pool with :meth:`use` and ends with :meth:`done`; a pool
    given back is no one's next, and is shut down when the last shard using it is done (scans on several threads
    of one process share it). Idle threads are joined at exit by concurrent.futures.
    """

    current: ClassVar[dict[int, _TokenizingThreads]] = {}  # the pool the next shard takes, by thread count
    lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, threads: int) -> None:
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="freqlab-tokenize")
        self.threads, self.users, self.given_back = threads, 0, False

    @classmethod
    def use(cls, threads: int) -> _TokenizingThreads:
        """The current pool of ``threads`` threads (started on first use), taken by one more shard."""
        with cls.lock:
            pool = cls.current.get(threads)
            if pool is None:
                pool = cls.current[threads] = cls(threads)
            pool.users += 1
            return pool

    def done(self, give_back: bool, idle: bool) -> None:
        """A shard using the pool is done; ``give_back``: the pool is no one's next. Shut down once it is given back
        and no shard uses it (waited for when ``idle``: the shard's batches all ended, its threads end at once).
        """
        with self.lock:
            self.users -= 1
            if give_back and self.current.get(self.threads) is self:
                del self.current[self.threads]
                self.given_back = True
            last = self.given_back and self.users == 0
        if last:
            self.executor.shutdown(wait=idle)


def _forget_tokenizing_threads() -> None:
    """In a forked child: none of the parent's threads run here, so its pools are not this process's."""
    _TokenizingThreads.current = {}
    _TokenizingThreads.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_tokenizing_threads)


class _Counted:
    """``count(texts)`` computed now, with a Future's ``result()``."""

    def __init__(self, count: Callable, texts: list[str]) -> None:
        self.value = count(texts)

    def result(self):
        return self.value


def _count_texts(
    shard,
    counter,
    options: ShardOptions,
    tally: _Tally,
    sampler: Sampler | None,
    tokenizing: _Tokenizing,
) -> None:
    part = tally.part
    batch = _Batch()
    specials = getattr(counter, "special_tokens_added", 0)
    from freqlab.tokenization.counter import backends_tally

    def count(texts: list[str]) -> tuple[Any, dict[str, int]]:
        """``counter.count`` (the caller's own, if it wraps a TokenCounter) and its documents per backend."""
        with backends_tally() as tally:
            return counter.count(texts), tally

    # (batch, its counts' handle), oldest first: up to `in_flight` batches tokenized while the next one is read
    counting: deque[tuple[_Batch, Any]] = deque()

    def settle(keep: int = 0) -> bool:
        """Count the batches being tokenized into the tally, oldest first, until ``keep`` are left; True once the
        shard's cap is reached.
        """
        while len(counting) > keep:
            if _settle_one(*counting.popleft()):
                return True
        return False

    def _settle_one(done: _Batch, handle) -> bool:
        part.sampled_out += done.sampled_out
        codes, sources, positions, gaps = done.arrays()
        counted = None
        if handle is not None:
            counts, by_backend = handle.result()
            lengths = _check_counts(
                np.asarray(counts, np.int64),
                len(done.texts),
                f"tokenizer {getattr(counter, 'name', counter)!r}",
            )
            if specials:  # no content token (whitespace a normalizer removes): empty, so no special tokens either
                lengths[lengths == specials] = 0
            texts = codes == 1
            codes[texts] = lengths  # a text that tokenizes to nothing counts as an empty document
            counted = tally.counted(by_backend, texts)
        return tally.add(codes, sources, positions, counted, gaps)

    def flush(last: bool = False, trailing: bool = True) -> bool:
        """Hand the batch read to the tokenizer, after counting the oldest ones beyond ``in_flight`` - 1 (``last``:
        count them all now, and, ``trailing``, the blank lines met since the last document: not before a record that
        follows, whose gap they are).
        """
        nonlocal batch
        if settle(keep=tokenizing.in_flight - 1):
            return True
        if batch:
            counting.append((batch, tokenizing.submit(count, batch.texts) if batch.texts else None))
        else:  # only documents sampled out: nothing to tokenize
            part.sampled_out += batch.sampled_out
        batch = _Batch()
        if not last:
            return tokenizing.submit is _Counted and settle()
        if settle():
            return True
        if trailing:  # read to here within the cap: the blank lines after its last document too
            part.blank_lines += blank
        return False

    index = -1  # of the document in the shard (blank lines are not documents)
    plain = tally.label(None)  # the label of a document without source (runs have none)
    # blank lines met since the last document kept in a batch: they go with the next one (a cap that stops before it
    # leaves them out, as it leaves out the documents past it), or, after the last, with the whole shard
    blank = 0

    def add_run(texts: list[str]) -> bool:
        """A run of plain texts: the same codes, labels, positions and gaps as one document at a time, in bulk."""
        nonlocal index, blank
        first, index = index + 1, index + len(texts)
        positions: range | np.ndarray = range(first, index + 1)
        gaps = np.zeros(len(texts), np.int64)
        if texts.__class__ is Run:  # blank lines between its texts
            gaps[:] = texts.gaps  # type: ignore[attr-defined]
        gaps[0] += blank
        if sampler is not None:
            kept = np.flatnonzero(sampler.keep_range(first, len(texts)))
            batch.sampled_out += len(texts) - kept.size
            met = np.cumsum(gaps)  # blank lines up to each text: a kept one takes those since the kept one before
            gaps = np.diff(met[kept], prepend=0)
            blank = int(met[-1] - (met[kept[-1]] if kept.size else 0))  # after the last kept: the next document's
            texts, positions = [texts[i] for i in kept], first + kept
        else:
            blank = 0
        if texts:
            batch.add_run(texts, plain, positions, gaps)
        full = len(batch.texts) >= options.batch_size or len(batch) >= 8 * options.batch_size
        return (full or batch.chars >= MAX_BATCH_CHARS) and flush()

    for doc in _documents(shard):
        if isinstance(doc, list):  # a run (list or Run)
            if add_run(doc):
                return
            continue
        if doc.error == BLANK_LINE:
            blank += 1
            continue
        index += 1
        # a bad record (an unreadable file too) is never sampled out: it is an error or a counted skip in a sample
        # as in the whole scan (a review: a malformed line not drawn was "left out by sampling", exit 0)
        if sampler is not None and doc.text is not None and not sampler.keep(index):
            batch.sampled_out += 1
            continue
        if doc.text is None:
            reason = doc.error or "bad record"
            if options.on_error == "raise":
                if not flush(last=True):  # the bad record lies within this shard's cap
                    part.error = doc.where if reason == UNREADABLE_FILE else f"{doc.where}: {reason}"
                    if doc.detail:
                        part.error += f" ({doc.detail})"
                    if reason == MISSING_TEXT_FIELD:
                        part.error += missing_field_hint(shard)
                    elif reason == NON_STRING_TEXT:  # a builder's type guessing may have made it
                        part.error += getattr(shard, "non_string_note", "")
                    if reason != UNREADABLE_FILE and (damage := _compressed_damage(shard)):
                        part.error += f"; {damage}"
                    elif reason not in (UNREADABLE_FILE, MISSING_TEXT_FIELD):  # (the field's hint says what to do)
                        part.error += SKIP_HINT
                return
            if doc.__class__ is _FailedRead:  # none of the documents before count, unless limits end first
                # this shard's cap reached before the failure: the scan ends there (the blank lines before it are
                # its gap, below: counted once, a review)
                if flush(last=True, trailing=False):
                    return
                part.failed = True
            code = tally.reason(reason)
        elif doc.text == "":
            code = 0
        else:
            code = 1
            batch.texts.append(doc.text)
            batch.chars += len(doc.text)
        batch.codes.append(code)
        batch.sources.append(tally.label(doc.source))
        batch.positions.append(index)
        batch.gaps.append(blank)
        blank = 0
        if (
            len(batch.texts) >= options.batch_size
            or batch.chars >= MAX_BATCH_CHARS
            or len(batch) >= 8 * options.batch_size
        ) and flush():
            return
    flush(last=True)


#: what a bad record's error ends with (a new user's review: a missing field said it, a malformed line did not)
SKIP_HINT = "; --on-error skip counts such records as skipped"


def _compressed_damage(shard) -> str | None:
    """What a bad record's error adds about the shard's compressed stream, for shards that can say (JSON lines)."""
    check = getattr(shard, "compressed_damage", None)
    return check() if check is not None else None


def missing_field_hint(shard) -> str:
    """What to do about a record without the text field: the field looked for, the fields the file's first record
    has (as the Parquet reader names a file's columns), and the option; "" when the shard cannot say.
    """
    fields = getattr(shard, "fields", None)
    if fields is None:
        return ""
    first = None
    with contextlib.suppress(Exception):  # a hint only: the error stands without it
        first = shard.first_record() if hasattr(shard, "first_record") else None
    if first and lookup(first, fields.text) is not MISSING_FIELD:  # the field is right: this record lacks it
        return (
            f" (no field {fields.text!r} in this record, though the file's first record has it;"
            " --on-error skip counts such records as skipped)"
        )
    seen = f"; the file's first record has {', '.join(map(repr, first))}" if first else ""
    ids = next((name for name, value in (first or {}).items() if _is_token_list(value)), None)
    if ids is not None:  # a review: JSON lines of token ids were pointed at --text-field only
        return (
            f" (no field {fields.text!r}{seen}; {ids!r} holds token ids: --dataset json --data-files FILE "
            f"--tokens-field {ids} counts their lists; or give --text-field)"
        )
    return f" (no field {fields.text!r}{seen}; give --text-field, a dotted path for a nested one)"


def _is_token_list(value) -> bool:
    return isinstance(value, list) and bool(value) and all(type(v) is int for v in value)


def _count_lengths(shard, options: ShardOptions, tally: _Tally, sampler: Sampler | None) -> None:
    part = tally.part
    index = 0  # of the next document in the shard
    try:
        for batch in shard.read_lengths():
            codes = np.asarray(batch.lengths, np.int64)
            if codes.ndim != 1 or (codes.size and int(codes.min()) < -len(batch.reasons)):
                raise FreqlabError(f"{batch.where}: negative document lengths")
            first, index = index, index + codes.size
            positions: np.ndarray | int = first
            if sampler is not None:  # a row that is no document is never sampled out (as a text's bad record)
                kept = sampler.keep_range(first, codes.size) | (codes < 0)
                part.sampled_out += int(codes.size - np.count_nonzero(kept))
                codes, positions = codes[kept], first + np.flatnonzero(kept)
            label = tally.label(batch.source)
            if batch.reasons and codes.size and int(codes.min()) < 0:  # rows that are no documents
                bad = codes < 0
                if options.on_error == "raise":
                    k = int(np.argmax(bad))
                    # the rows before it first: a cap reached there ends the shard before the bad row
                    if tally.add(codes[:k], label, positions if isinstance(positions, int) else positions[:k]):
                        return
                    row = k if isinstance(positions, int) else int(positions[k]) - first
                    reason = batch.reasons[-int(codes[k]) - 1]
                    # the hint as a text's bad record (a review: a token column's null row had none)
                    part.error = f"{batch.row(row)}: {reason} ({ROW_REASONS[reason]}){SKIP_HINT}"  # type: ignore[misc]
                    return
                skip_codes = np.zeros(len(batch.reasons), np.int64)
                for code in np.unique(codes[bad]).tolist():
                    skip_codes[-code - 1] = tally.reason(batch.reasons[-code - 1])
                codes = codes.copy()  # the reader's buffer
                codes[bad] = skip_codes[-codes[bad] - 1]
            if tally.add(codes, label, positions):
                return
    except UnreadableFile as exc:
        if options.on_error == "raise":
            part.error = str(exc)
            return
        part.failed = True  # as a text file's (above): the ledger keeps none of its documents
        tally.add(np.array([tally.reason(UNREADABLE_FILE)], np.int64), 0, index)


class CountJob:
    """What every worker runs on each shard: :func:`count_shard` with this counter (None for a corpus of
    tokenized data). Picklable: an engine ships it once per worker and calls :meth:`setup` there first.
    """

    def __init__(self, counter, threads: int = 1) -> None:
        self.counter = counter
        self.threads = threads

    def setup(self) -> None:
        """Prepare this worker process: tokenizers use one thread per call (set before a tokenizer's first count):
        one worker per core already, or, in a pool with fewer workers than cores, ``threads`` calls at once on the
        worker's own threads (:func:`count_shard`), which also keeps reading beside them.
        """
        from tqdm.std import TqdmDefaultWriteLock

        from freqlab.tokenization import single_threaded

        single_threaded(1)
        # tqdm (which datasets uses while streaming) would make its lock a multiprocessing semaphore: a worker
        # stopped at the end of a failed scan leaves it behind and the resource tracker warns about it
        TqdmDefaultWriteLock.mp_lock = None

    def __call__(self, shard, options: ShardOptions, on_progress: Progress | None = None) -> ShardCount:
        """Count ``shard`` with the job's tokenizer (see :func:`count_shard`)."""
        # cores to spare (fewer shards than cores): reading and tokenizing overlap, on `threads` threads
        return count_shard(shard, self.counter, options, on_progress, threads=self.threads)
