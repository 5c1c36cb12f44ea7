"""Exact, mergeable partial counts: what one shard contributes to a scan.

A :class:`ShardCount` holds, per source label, the token lengths of the documents it tokenized (as exact
int64 counts), its empty documents, its skipped records by reason, and the documents it left out by
sampling. Partials from any number of workers add up to the same totals in any order (integer sums), which
is why the result of a scan does not depend on the worker count or the batch size.

When the scan has a document or token limit, a partial also keeps its *log*: the ordered outcome of each
document (``code > 0``: tokenized with that many tokens, ``0``: empty, ``-k``: skipped for reason
``reasons[k-1]``), so the driver can cut it at the exact document where the limit falls (see
:func:`cut_point`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from freqlab.histogram import UNLABELLED_SOURCE, LengthHistogram, combine_sources
from freqlab.jit import njit

# Below this length counts live in a dense np.bincount array (grown in powers of two, so a source with
# documents up to 100k tokens costs ~1 MB); longer, rare documents go to a dict, so a single
# 10-million-token document costs one dict entry instead of an 80 MB array.
DENSE_LIMIT = 1 << 18


# Batches of at least this many codes are counted by the compiled pass (tokenized data: 2^16-2^21 lengths a batch);
# smaller ones by numpy (5 us against 0.5 us for 256 codes), so that a text scan (256 documents a batch; at most 4M
# characters, so more than 2^16 codes only for documents of < 62 characters) never imports numba in its workers
# (~0.15 s of start-up in their forkserver, beside the tokenizer's build, or in each worker mid-count)
COMPILED_FROM = 1 << 16


@njit(cache=True, nogil=True)
def count_codes(codes: np.ndarray, dense: np.ndarray) -> tuple[int, int, int, int]:
    """One pass over a batch of codes: each code in ``1 .. dense.size - 1`` is counted into ``dense``.

    Returns (tokens: the sum of the codes > 0, how many codes are 0, how many < 0, how many >= dense.size).
    """
    tokens = empty = negative = outside = 0
    size = dense.shape[0]
    for k in range(codes.shape[0]):
        code = codes[k]
        if code > 0:
            tokens += code
            if code < size:
                dense[code] += 1
            else:
                outside += 1
        elif code == 0:
            empty += 1
        else:
            negative += 1
    return tokens, empty, negative, outside


def _count_codes_numpy(codes: np.ndarray, dense: np.ndarray) -> tuple[int, int, int, int]:
    """:func:`count_codes` in numpy calls."""
    positive = codes[codes > 0]
    inside = positive[positive < dense.shape[0]]
    if inside.size:
        binned = np.bincount(inside)
        dense[: binned.size] += binned
    negative = int(np.count_nonzero(codes < 0))
    return int(positive.sum()), codes.size - positive.size - negative, negative, positive.size - inside.size


class CodeTotals(NamedTuple):
    """What :meth:`LengthCounts.add_codes` saw besides the lengths it counted."""

    tokens: int  # the sum of the counted lengths
    empty: int  # codes 0
    negative: int  # codes < 0


class LengthCounts:
    """Exact counts of document lengths (>= 1), mergeable: a dense bincount below DENSE_LIMIT, a dict above.

    >>> c = LengthCounts(); c.add(np.array([3, 5, 5])); c.add(np.array([10**7]))
    >>> [a.tolist() for a in c.to_arrays()]
    [[3, 5, 10000000], [1, 2, 1]]
    """

    __slots__ = ("dense", "sparse")

    def __init__(self) -> None:
        self.dense = np.zeros(0, np.int64)
        self.sparse: Counter[int] = Counter()

    def _grow(self, size: int) -> None:
        if size > self.dense.size:
            grown = np.zeros(1 << max(size - 1, 1).bit_length(), np.int64)
            grown[: self.dense.size] = self.dense
            self.dense = grown

    def add(self, lengths: np.ndarray) -> None:
        """Count each value of ``lengths`` (int64 >= 1) once."""
        self.add_codes(lengths)

    def add_codes(self, codes: np.ndarray) -> CodeTotals:
        """Count each code > 0 of ``codes`` (int64) as a length; codes 0 and < 0 are only counted in the totals.

        One pass when the lengths fit the dense array as it is (every batch but the first few): compiled for a batch
        of :data:`COMPILED_FROM` codes or more, else a few numpy calls; the lengths beyond it go through
        :meth:`_add_outside`. Both checked against a Counter in the tests.
        """
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        if self.dense.size == 0 and codes.size:  # first batch: size the dense array for its lengths
            top = int(codes.max())
            if top >= DENSE_LIMIT:
                top = int(codes[codes < DENSE_LIMIT].max(initial=0))
            self._grow(top + 1)
        size = self.dense.size
        if codes.size >= COMPILED_FROM:
            tokens, empty, negative, outside = count_codes(codes, self.dense)
        else:
            tokens, empty, negative, outside = _count_codes_numpy(codes, self.dense)
        if outside:
            self._add_outside(codes[codes >= max(size, 1)])
        return CodeTotals(int(tokens), int(empty), int(negative))

    def _add_outside(self, lengths: np.ndarray) -> None:
        """Count lengths beyond the dense array: grow it for those below DENSE_LIMIT, the dict for the rest."""
        small = lengths[lengths < DENSE_LIMIT] if int(lengths.max()) >= DENSE_LIMIT else lengths
        if small.size < lengths.size:
            values, counts = np.unique(lengths[lengths >= DENSE_LIMIT], return_counts=True)
            self.sparse.update(dict(zip(values.tolist(), counts.tolist(), strict=True)))
        if small.size:
            binned = np.bincount(small)
            self._grow(binned.size)
            self.dense[: binned.size] += binned

    def add_counts(self, lengths: np.ndarray, counts: np.ndarray) -> None:
        """Add ``counts[k]`` documents of length ``lengths[k]``."""
        small = lengths < DENSE_LIMIT
        if np.any(small):
            self._grow(int(lengths[small].max()) + 1)
            np.add.at(self.dense, lengths[small], counts[small])
        for length, count in zip(lengths[~small].tolist(), counts[~small].tolist(), strict=True):
            self.sparse[length] += count

    def merge(self, other: LengthCounts) -> None:
        """Add another partial's counts into this one."""
        self._grow(other.dense.size)
        self.dense[: other.dense.size] += other.dense
        self.sparse.update(other.sparse)

    @property
    def documents(self) -> int:
        """How many lengths were counted."""
        return int(self.dense.sum()) + sum(self.sparse.values())

    @property
    def tokens(self) -> int:
        """The sum of the counted lengths."""
        dense = int(np.dot(np.arange(self.dense.size, dtype=np.int64), self.dense))
        return dense + sum(length * count for length, count in self.sparse.items())

    def to_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted unique lengths and their counts (both int64, counts > 0)."""
        lengths = np.flatnonzero(self.dense).astype(np.int64)
        counts = self.dense[lengths]
        if self.sparse:
            big = np.array(sorted(self.sparse), np.int64)
            lengths = np.concatenate([lengths, big])
            counts = np.concatenate([counts, np.array([self.sparse[k] for k in big.tolist()], np.int64)])
        return lengths, counts


def logged_tokens(codes: np.ndarray) -> int:
    """Tokens of the tokenized documents in a log's ``codes`` (empty and skipped documents count 0)."""
    return int(np.maximum(codes, 0).sum())


def limits_reached(kept: np.ndarray, max_docs: int | None, max_tokens: int | None) -> bool:
    """Whether the kept documents (``codes`` of an ordered log) reach ``max_docs`` or ``max_tokens``."""
    return (max_docs is not None and kept.size >= max_docs) or (
        max_tokens is not None and logged_tokens(kept) >= max_tokens
    )


def cut_point(codes: np.ndarray, max_docs: int | None, max_tokens: int | None) -> int:
    """How many documents of an ordered log to keep under the limits.

    Documents are taken in order while fewer than ``max_docs`` were taken and fewer than ``max_tokens``
    tokens were counted: the document that reaches the token limit is kept whole (lengths are never
    truncated, which would distort the histogram).

    >>> cut_point(np.array([5, 0, 7, 3]), None, 6), cut_point(np.array([5, 0, 7, 3]), 2, None)
    (3, 2)
    """
    n = codes.size
    if max_docs is not None:
        n = min(n, max(int(max_docs), 0))
    if max_tokens is not None:
        if max_tokens <= 0:
            return 0
        cumulative = np.cumsum(np.maximum(codes[:n], 0))
        reached = int(np.searchsorted(cumulative, max_tokens, side="left"))  # first index with sum >= limit
        n = min(n, reached + 1)
    return n


@dataclass
class ShardCount:
    """The partial result of one shard (or the merge of several).

    ``lengths[source]``: tokenized documents per source label (``None`` when the corpus has no sources);
    ``empty[source]``: empty documents; ``skipped``: records skipped by reason; ``sampled_out``: documents
    left out by ``sample_rate``; ``blank_lines``: blank JSON-lines lines met (not records, so not documents);
    ``counted_by``: the documents handed to the tokenizer, by the backend that counted each
    (:meth:`~freqlab.tokenization.counter.TokenCounter.counted_by`; under a limit, those of the documents kept: the
    log keeps each one's; None: unknown, from an older checkpoint, or a caller's counter that counts a batch in
    several calls);
    ``complete``: the shard was read to its end (not stopped at a limit);
    ``error``: first bad record's message when ``on_error="raise"`` (the shard stops there and the driver
    raises it once it knows the record is within the scan's limits);
    ``failed``: the shard's file failed while being read, after these documents (``on_error="skip"``: its last
    record is that ``unreadable-file`` skip): a checksum failing at the end vouches for none of them, so the scan
    keeps none (:func:`unvouched`) unless its limits end it before the failure (:func:`truncate`).
    """

    shard_id: str = ""
    lengths: dict[str | None, LengthCounts] = field(default_factory=dict)
    empty: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    sampled_out: int = 0
    blank_lines: int = 0
    counted_by: Counter | None = field(default_factory=Counter)  # None: unknown (an older checkpoint's)
    complete: bool = True
    error: str | None = None
    log: DocumentLog | None = None
    failed: bool = False

    @property
    def documents_read(self) -> int:
        """Every record this partial accounts for: tokenized + empty + skipped."""
        return self.documents + sum(self.empty.values()) + sum(self.skipped.values())

    @property
    def documents(self) -> int:
        """Tokenized documents (empty and skipped ones excluded)."""
        return sum(counts.documents for counts in self.lengths.values())

    @property
    def tokens(self) -> int:
        """Tokens of the tokenized documents."""
        return sum(counts.tokens for counts in self.lengths.values())

    def add(self, codes: np.ndarray, sources: np.ndarray | int, labels: list, reasons: list[str]) -> int:
        """Count a batch of document outcomes (see the module docstring for ``codes``); returns its tokens.

        ``sources``: each document's index into ``labels``, or (an int) one index for the whole batch.
        """
        if isinstance(sources, int) or len(labels) == 1:
            groups = [(labels[sources if isinstance(sources, int) else 0], slice(None))]
        else:
            groups = [(labels[s], sources == s) for s in np.unique(sources).tolist()]
        tokens = negatives = 0
        for label, mask in groups:
            counts = self.lengths.get(label) or LengthCounts()
            seen = counts.add_codes(codes[mask])
            if seen.tokens:  # a label appears among the lengths only once it has a document
                self.lengths[label] = counts
            if seen.empty:
                self.empty[label] += seen.empty
            tokens += seen.tokens
            negatives += seen.negative
        if negatives:
            negative = codes[codes < 0]
            for code, count in zip(*np.unique(negative, return_counts=True), strict=True):
                self.skipped[reasons[-int(code) - 1]] += int(count)
        return tokens

    def add_log(self, log: DocumentLog) -> None:
        """Count a whole log's documents and keep the log (a partial rebuilt from its log)."""
        codes, sources, _ = log.arrays()
        self.add(codes, sources, log.labels, log.reasons)
        self.log = log

    def merge(self, other: ShardCount) -> None:
        """Add another partial into this one (order does not matter)."""
        for label, counts in other.lengths.items():
            self.lengths.setdefault(label, LengthCounts()).merge(counts)
        self.empty.update(other.empty)
        self.skipped.update(other.skipped)
        self.sampled_out += other.sampled_out
        self.blank_lines += other.blank_lines
        if self.counted_by is None or other.counted_by is None:  # one unknown: the sum is unknown
            self.counted_by = None
        else:
            self.counted_by.update(other.counted_by)

    def to_histogram(self, *, by_source: bool, **metadata) -> LengthHistogram:
        """The exact LengthHistogram of this partial, split by source when ``by_source``."""
        skipped = dict(sorted(self.skipped.items()))
        if not by_source:
            total = LengthCounts()
            for counts in self.lengths.values():
                total.merge(counts)
            lengths, counts = total.to_arrays()
            return LengthHistogram(
                lengths, counts, skipped=skipped, empty_documents=sum(self.empty.values()), **metadata
            )
        labels = sorted({*self.lengths, *self.empty}, key=lambda s: (s is None, s or ""))
        sources = {}
        for label in labels:
            name = UNLABELLED_SOURCE if label is None else str(label)
            lengths, counts = (self.lengths[label] if label in self.lengths else LengthCounts()).to_arrays()
            part = LengthHistogram(lengths, counts, corpus=name, empty_documents=int(self.empty.get(label, 0)))
            sources[name] = sources[name].merge(part) if name in sources else part
        return combine_sources(
            sources,
            documents_read=self.documents_read,
            skipped=skipped,
            empty_documents=sum(self.empty.values()),
            **metadata,
        )


BACKEND_UNKNOWN = -2  # a logged document's tokenizer backend, not known (-1: no text to tokenize)


def backend_counts(codes: np.ndarray, names: list[str], into: Counter | None) -> Counter | None:
    """``into`` plus the documents per backend of ``codes`` (int8: each document's backend as its index in
    ``names``, -1 for none); None (unknown) when ``into`` is or any code is :data:`BACKEND_UNKNOWN`.
    """
    if into is None or (codes.size and int(codes.min()) == BACKEND_UNKNOWN):
        return None
    numbers = np.bincount(codes[codes >= 0], minlength=len(names))
    into.update({name: int(k) for name, k in zip(names, numbers.tolist(), strict=True) if k})
    return into


@dataclass
class DocumentLog:
    """Ordered per-document outcomes of a shard, kept only when the scan has limits."""

    codes: list[np.ndarray] = field(default_factory=list)  # int64 per batch, see module docstring
    sources: list[np.ndarray] = field(default_factory=list)  # int32 indices into labels, per batch
    # int64 index of each document in its shard; empty when nothing is sampled out (then 0, 1, 2, ...)
    positions: list[np.ndarray] = field(default_factory=list)
    labels: list = field(default_factory=lambda: [None])
    reasons: list[str] = field(default_factory=list)
    # int8 per batch: each document's tokenizer backend, its index in backend_names (-1: no text; BACKEND_UNKNOWN);
    # empty when not kept (a checkpoint of before), then a cut's documents per backend are unknown
    backends: list[np.ndarray] = field(default_factory=list)
    backend_names: list[str] = field(default_factory=list)
    # int64 per batch: the blank lines met just before each document (since the one before); empty when not kept
    gaps: list[np.ndarray] = field(default_factory=list)

    def backend_codes(self) -> np.ndarray | None:
        """:attr:`backends` as one int8 array, one code per document; None when not kept."""
        return self._per_document(self.backends, np.int8)

    def gap_counts(self) -> np.ndarray | None:
        """:attr:`gaps` as one int64 array, one count per document; None when not kept."""
        return self._per_document(self.gaps, np.int64)

    def _per_document(self, parts: list[np.ndarray], dtype) -> np.ndarray | None:
        if not parts:  # not kept (a checkpoint of before), unless there is no document to keep it for
            return None if any(c.size for c in self.codes) else np.zeros(0, dtype)
        return np.concatenate(parts)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The whole log as three arrays: codes (int64), source indices (int32), positions (int64)."""

        def join(parts: list[np.ndarray], dtype) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype)

        codes = join(self.codes, np.int64)
        positions = join(self.positions, np.int64) if self.positions else np.arange(codes.size, dtype=np.int64)
        return codes, join(self.sources, np.int32), positions


def unvouched(part: ShardCount) -> ShardCount:
    """A partial whose file ``failed`` while being read, as the scan keeps it: one ``unreadable-file`` skip and none
    of the documents read before the failure (its other counts, blank lines and sampled-out ones, neither).
    """
    from freqlab.corpus.base import UNREADABLE_FILE  # the corpus layer's reason name (imported here: no cycle)

    return ShardCount(shard_id=part.shard_id, skipped=Counter({UNREADABLE_FILE: 1}))


def truncate(part: ShardCount, max_docs: int | None, max_tokens: int | None) -> tuple[ShardCount, bool]:
    """The prefix of a logged partial that fits the limits, and whether the limits are now exhausted.

    Deterministic whatever the worker read beyond the limit: documents sampled out are counted up to the
    last kept document, a bad record (``error``) is kept only if it lies within the limits, and a file that
    ``failed`` is :func:`unvouched` when its failure does (the limits then go on past it).
    """
    assert part.log is not None, "only a logged partial can be cut"
    codes, sources, positions = part.log.arrays()
    n = cut_point(codes, max_docs, max_tokens)
    if part.failed and n == codes.size:  # the failure, its last record, lies within the limits
        return unvouched(part), max_docs is not None and max_docs <= 1  # one record read, no token
    exhausted = limits_reached(codes[:n], max_docs, max_tokens)
    if n == codes.size and not exhausted:  # all of it fits (a trailing bad record, if any, too)
        return part, False
    # the documents per backend of those kept: as they are when unknown, or none were tokenized (token files);
    # unknown when the log has no backends (a checkpoint of before)
    backends = part.log.backend_codes()
    counted_by = part.counted_by
    if counted_by:
        counted_by = None if backends is None else backend_counts(backends[:n], part.log.backend_names, Counter())
    # the blank lines before the documents kept (a checkpoint of before: those the worker met)
    gaps = part.log.gap_counts()
    blank_lines = part.blank_lines if gaps is None else int(gaps[:n].sum())
    cut = ShardCount(shard_id=part.shard_id, complete=False, blank_lines=blank_lines, counted_by=counted_by)
    cut.sampled_out = int(positions[n - 1]) + 1 - n if n else 0
    log = DocumentLog(
        [codes[:n]], [sources[:n]], [positions[:n]], part.log.labels, part.log.reasons,
        backends=[] if backends is None else [backends[:n]], backend_names=part.log.backend_names,
        gaps=[] if gaps is None else [gaps[:n]],
    )  # fmt: skip
    cut.add_log(log)
    return cut, True
