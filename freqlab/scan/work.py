"""The per-shard work of a scan: read a shard's documents, tokenize them in batches, count their lengths.

:func:`count_shard` is the only function any engine runs (in-process, in a process pool, or as a Ray task),
in the spirit of datatrove's pipeline steps: the engines only decide *where* it runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from freqlab.corpus.base import BLANK_LINE, UNREADABLE_FILE, Document, FileShard, UnreadableFile
from freqlab.errors import FreqlabError
from freqlab.scan.counts import DocumentLog, ShardCount, cut_point, limits_reached, logged_tokens

ON_ERROR = ("raise", "skip")
DEFAULT_BATCH_SIZE = 256
# A batch is also flushed once it holds this many characters, so memory stays bounded by the batch and the
# single longest document, whatever the corpus size.
MAX_BATCH_CHARS = 4_000_000


@dataclass(frozen=True)
class ShardOptions:
    """How to count one shard. ``max_docs``/``max_tokens`` cap this shard (the driver cuts exactly)."""

    batch_size: int = DEFAULT_BATCH_SIZE
    on_error: str = "raise"
    sample_rate: float | None = None
    seed: int = 0
    by_source: bool = False
    max_docs: int | None = None
    max_tokens: int | None = None
    keep_log: bool = False

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
        key = int.from_bytes(hashlib.blake2b(shard_id.encode(), digest_size=8).digest(), "little")
        self.rate = rate
        self.rng = np.random.Generator(np.random.PCG64([int(seed) & (2**63 - 1), key]))
        self.draws = np.zeros(0)
        self.offset = 0  # index of draws[0] among documents

    def keep(self, index: int) -> bool:
        """Whether document ``index`` is kept (indices must not decrease between calls)."""
        at = index - self.offset
        if at >= self.draws.size:
            self.offset += self.draws.size
            self.draws = self.rng.random(self.BLOCK) < self.rate
            at = index - self.offset
        return bool(self.draws[at])


class _Batch:
    """Documents waiting to be tokenized, in order, with the outcome of those that need no tokenizer."""

    def __init__(self) -> None:
        self.codes: list[int] = []  # 0 empty, -k skipped (reason k-1), 1 placeholder for a text
        self.sources: list[int] = []
        self.positions: list[int] = []
        self.texts: list[str] = []
        self.chars = 0

    def __len__(self) -> int:
        return len(self.codes)


class _Reader:
    """A shard's documents, with blank lines marked (files only) and a file that fails while being read turned
    into one last ``unreadable-file`` record; ``failure`` keeps that error's one-line message."""

    def __init__(self, shard) -> None:
        self.shard = shard
        self.failure: str | None = None

    def __iter__(self):
        try:
            if isinstance(self.shard, FileShard):
                yield from self.shard.read(blank_lines=True)
            else:
                yield from self.shard.read()
        except UnreadableFile as exc:
            self.failure = str(exc)
            yield Document(None, None, exc.path, UNREADABLE_FILE)


def count_shard(
    shard,
    counter,
    options: ShardOptions = ShardOptions(),
    on_progress: Callable[[int, int], None] | None = None,
) -> ShardCount:
    """Count the token lengths of one shard's documents into a :class:`ShardCount`.

    ``shard.read()`` yields documents ``(text, source, where, error)`` (see :mod:`freqlab.corpus`): a bad
    record (``text is None``) stops the shard with its ``where: error`` message when ``on_error="raise"``
    (the driver raises it) or is counted in ``skipped[error]`` with ``"skip"``; ``""`` is an empty document.
    A file that fails while being read (:class:`freqlab.corpus.base.UnreadableFile`) is one such record,
    ``unreadable-file``, after the documents read from it; the shard then ends (finished, not capped).
    Blank JSON-lines lines are no documents: they are counted in ``blank_lines``.
    Texts are tokenized ``batch_size`` at a time with ``counter.count``. ``on_progress(documents, tokens)``
    is called after each batch.
    """
    if options.on_error not in ON_ERROR:
        raise FreqlabError(f"on_error must be one of {', '.join(ON_ERROR)}, got {options.on_error!r}")
    part = ShardCount(shard_id=shard.id)
    log = DocumentLog()
    # label / reason -> its index in codes and sources; insertion order is index order, so list(d) is the table
    label_index: dict = {None: 0}
    reason_index: dict[str, int] = {}
    sampler = None
    if options.sample_rate is not None and options.sample_rate < 1.0:
        sampler = Sampler(options.sample_rate, options.seed, shard.id)
    docs_left, tokens_left = options.max_docs, options.max_tokens
    batch = _Batch()

    def flush() -> bool:
        """Count the batch; True when this shard's cap is reached."""
        nonlocal batch, docs_left, tokens_left
        if not batch:
            return False
        codes = np.array(batch.codes, np.int64)
        if batch.texts:
            lengths = np.asarray(counter.count(batch.texts), dtype=np.int64)
            if lengths.shape != (len(batch.texts),) or (lengths.size and int(lengths.min()) < 0):
                raise FreqlabError(f"tokenizer {getattr(counter, 'name', counter)!r} returned bad counts")
            codes[codes == 1] = lengths  # a text that tokenizes to nothing counts as an empty document
        sources = np.array(batch.sources, np.int32)
        positions = np.array(batch.positions, np.int64)
        n = cut_point(codes, docs_left, tokens_left)
        codes, sources, positions = codes[:n], sources[:n], positions[:n]
        capped = limits_reached(codes, docs_left, tokens_left)  # a cut (n < batch size) implies it
        part.add(codes, sources, list(label_index), list(reason_index))
        if options.keep_log:
            log.codes.append(codes)
            log.sources.append(sources)
            log.positions.append(positions)
        tokens = logged_tokens(codes)
        if docs_left is not None:
            docs_left -= n
        if tokens_left is not None:
            tokens_left -= tokens
        if on_progress is not None:
            on_progress(n, tokens)
        batch = _Batch()
        return capped

    capped = False
    reader = _Reader(shard)
    index = -1  # of the document in the shard (blank lines are not documents)
    for doc in reader:
        if doc.error == BLANK_LINE:
            part.blank_lines += 1
            continue
        index += 1
        # an unreadable file is never sampled out: it must show up
        if sampler is not None and doc.error != UNREADABLE_FILE and not sampler.keep(index):
            part.sampled_out += 1
            continue
        source = doc.source if options.by_source else None
        if doc.text is None:
            reason = doc.error or "bad record"
            if options.on_error == "raise":
                capped = flush()
                if not capped:  # the bad record lies within this shard's cap
                    part.error = (reason == UNREADABLE_FILE and reader.failure) or f"{doc.where}: {reason}"
                break
            code = -(reason_index.setdefault(reason, len(reason_index)) + 1)
        elif doc.text == "":
            code = 0
        else:
            code = 1
            batch.texts.append(doc.text)
            batch.chars += len(doc.text)
        batch.codes.append(code)
        batch.sources.append(label_index.setdefault(source, len(label_index)))
        batch.positions.append(index)
        if (
            len(batch.texts) >= options.batch_size
            or batch.chars >= MAX_BATCH_CHARS
            or len(batch) >= 8 * options.batch_size
        ) and flush():
            capped = True
            break
    else:
        capped = flush()
    part.complete = not capped and part.error is None
    if options.keep_log:
        log.labels = list(label_index)
        log.reasons = list(reason_index)
        part.log = log
    return part
