"""``TokenCounter``: exact token counts per document, on the fastest backend verified for the tokenizer.

A counter only counts: ``count(texts)`` returns one int64 per text, the length of the token sequence the
tokenizer produces (plus ``special_tokens_added`` per text when ``add_special_tokens``). It never returns token
ids, so a backend is free to use any ranks that give the same segmentation.

Backends (:mod:`freqlab.tokenization.backends`) are tried fastest first: fastokens, tiktoken, Hugging Face
``tokenizers``, ``sentencepiece``. The last one is the *reference* (the tokenizer's own implementation:
Hugging Face for a ``tokenizer.json``, tiktoken for Tekken and ``.tiktoken`` files, ``sentencepiece`` for a
``.model``); every faster one was compared with it at load (:mod:`freqlab.tokenization.verify`), and those that
differed or failed are absent, with the reason in ``fallback_reasons``. At count time:

* a text containing a *routed* string (a Hugging Face added token, a SentencePiece user-defined piece) goes to
  the reference, which applies its own matching rules (lstrip/rstrip/normalized...) exactly, unless every routed
  string in it is *split out*: an added token Hugging Face matches on the raw text, cut out before normalizing
  and pre-tokenizing. Such a text is cut at those tokens, each counts one, and the pieces between them go to the
  first backend with the other texts (:meth:`TokenCounter._count_split`; verified at load like a backend:
  chat-formatted text is counted ~20x faster than by the reference);
* a text containing a string of :attr:`~TokenCounter.fastokens_routed` (``'ſ``, where fastokens' pre-tokenizer
  preset splits differently from the file's regex: :mod:`freqlab.tokenization.presets`) skips fastokens and goes
  to the next verified backend (tiktoken, which runs the file's own regex: ~10x cheaper than the reference to
  build, ~6x to count), a piece between split-out tokens too;
* the other texts go to the first backend in one batch; if it raises, the batch is counted text by text and a
  text the backend fails on goes to the next backend (after replacing lone surrogates, as tiktoken does:
  :func:`~freqlab.tokenization.backends.valid_unicode`). A text no backend can count is a FreqlabError.

Pickling (worker processes, Ray tasks): a counter pickles to its raw data (``tokenizer.json`` text, tiktoken
ranks, ``.model`` bytes) and its verified backend list, never to a file path, so it works on machines without
the tokenizer file or the hub, and is not verified again. Engines are built on first use, once per process:
copies with the same fingerprint share them, in a process forked after the build too (the local pool's workers
inherit what their forkserver built: :mod:`freqlab.tokenization.prebuild`). If the process cannot import the
fastokens version verified at load, fastokens is skipped there (the next backend was verified too).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import struct
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from freqlab.errors import FreqlabError
from freqlab.tokenization.backends import (
    BACKEND_FASTOKENS,
    BACKEND_TIKTOKEN,
    ENGINES,
    FASTEST_FIRST,
    FastokensRanks,
    fastokens_version,
    is_engine_failure,
    leaves_tiktoken,
    valid_unicode,
)

Credit = Callable[[str, "Sequence[int] | int"], None]  # told which backend counted the texts at which indices


def vocab_hash(tokens: Iterable[tuple[int, bytes]]) -> str:
    """Short sha256 (16 hex digits) of a vocabulary given as ``(id, token bytes)`` pairs, in id order.

    Each entry hashes as ``id (uint64 LE) | len (uint32 LE) | bytes``, so the hash changes when any token, id
    or the vocabulary size changes, and not when the file is merely re-serialised.

    >>> vocab_hash([(0, b"a"), (1, b"b")]) == vocab_hash([(1, b"b"), (0, b"a")])
    True
    """
    pack = struct.Struct("<QI").pack
    blob = b"".join(pack(token_id, len(token)) + token for token_id, token in sorted(tokens))
    return hashlib.sha256(blob).hexdigest()[:16]


@dataclass(frozen=True)
class TiktokenPlan:
    """Everything the tiktoken backend needs: ranks, pattern, and how to prepare text (NFC, prefix space)."""

    pat_str: str
    mergeable_ranks: dict[bytes, int]
    nfc: bool = False
    prefix_space: bool = False


class TokenCounter:
    """Counts tokens per text, exactly. Build one with :func:`freqlab.tokenization.load_tokenizer`.

    Attributes
    ----------
    name
        human-readable name (built-in name, file path or hub id).
    spec
        string that re-creates the counter in another process: ``load_tokenizer(c.spec, ...)``.
    backend
        the backend that counts ordinary texts (the fastest verified one), e.g. ``"fastokens"``.
    backends
        all verified backends, fastest first; the last is the reference.
    vocab_size
        number of token ids, special tokens included.
    vocab_hash
        :func:`vocab_hash` of all ``(id, token bytes)`` pairs, special tokens included.
    add_special_tokens
        whether counts include the special tokens added around each document.
    special_tokens_added
        how many tokens ``add_special_tokens`` adds per document.
    fallback_reasons
        backend -> why it was refused at load (not installed, not convertible, differed).
    fallback_reason
        the reasons of the backends faster than ``backend`` ("fastokens: ...; tiktoken: ..."),
        or None when the fastest backend runs.
    routed
        strings whose texts the fast backends cannot count alone (added tokens): the reference counts them.
    fastokens_routed
        strings whose texts fastokens' pre-tokenizer preset may count otherwise than the file's regex (``'ſ``,
        :mod:`freqlab.tokenization.presets`): those texts are counted by the next verified backend.
    split_out
        the routed added tokens a text is cut at, each counted as one token and the pieces between them by
        ``backend`` (as Hugging Face cuts them out before anything else; verified at load): texts holding only
        these never reach the reference. Empty when that verification failed or nothing faster is verified.
    threads
        Hugging Face backend only: 1 (default) encodes text by text; ``n > 1`` uses its rayon pool.
        fastokens follows ``FASTOKENS_BPE_THREADS`` (see :func:`freqlab.tokenization.single_threaded`).
    fastokens_note
        how fastokens runs the pre-tokenizer (which preset and why, see
        :mod:`freqlab.tokenization.presets`), or None.
    cache_not_written
        why the tokenizer cache could not keep this load (:func:`freqlab.tokenization.cache.cached_load`: where,
        the folder or the entry's file, and the system's reason; the next load of the file is a cold one again), or
        None.
    """

    cache_not_written: str | None = None

    def __init__(
        self,
        *,
        name: str,
        spec: str,
        vocab_size: int,
        vocab_hash: str,
        sources: Mapping[str, Any],
        backends: Sequence[str] | None = None,
        routed: Sequence[str] = (),
        split_out: Sequence[str] = (),
        fastokens_routed: Sequence[str] = (),
        add_special_tokens: bool = False,
        special_tokens_added: int = 0,
        fallback_reasons: Mapping[str, str] | None = None,
        threads: int = 1,
        fastokens_version: str | None = None,
        fastokens_note: str | None = None,
        source_digests: Mapping[str, str] | None = None,
        _engines: Engines | None = None,
    ) -> None:
        unknown = set(sources) - set(FASTEST_FIRST)
        if unknown or not sources:
            raise ValueError(f"a TokenCounter needs sources among {FASTEST_FIRST}, got {sorted(sources)}")
        self.name = name
        self.spec = spec
        self.vocab_size = int(vocab_size)
        self.vocab_hash = vocab_hash
        self.add_special_tokens = bool(add_special_tokens)
        self.special_tokens_added = int(special_tokens_added) if add_special_tokens else 0
        self.threads = max(1, int(threads))
        self._sources = dict(sources)
        order = [b for b in FASTEST_FIRST if b in self._sources] if backends is None else list(backends)
        if not order or any(b not in self._sources for b in order):
            raise ValueError(f"backends {order} need sources; have {sorted(self._sources)}")
        self.backends: tuple[str, ...] = tuple(order)
        self.routed: tuple[str, ...] = tuple(routed)
        routed_set = set(self.routed)
        self.split_out: tuple[str, ...] = tuple(s for s in split_out if s in routed_set)
        self.fastokens_routed: tuple[str, ...] = tuple(fastokens_routed)
        self.fallback_reasons: dict[str, str] = dict(fallback_reasons or {})
        self.fastokens_version = fastokens_version
        self.fastokens_note = fastokens_note
        if _engines is None:
            _engines = Engines(self._sources, self.routed, self.split_out, self.fastokens_routed)
        self._engines = _engines
        # backend -> source_digest(its source), filled on first need (the tokenizer cache stores them: hashing
        # 128k ranks costs ~0.2 s at every load otherwise)
        self._digests = {b: d for b, d in (source_digests or {}).items() if b in self._sources}
        self._counted: dict[str, int] = {}  # documents counted in this process, by backend (counted_by)
        self._counted_lock = threading.Lock()
        self._fingerprint: str | None = None

    @property
    def backend(self) -> str:
        """The backend that counts ordinary texts: the fastest verified one usable in this process."""
        return self._live_backends()[0]

    @property
    def reference(self) -> str:
        """The tokenizer's own implementation, last in ``backends``: routed texts and last resort."""
        return self.backends[-1]

    @property
    def fallback_reason(self) -> str | None:
        """Why the backends faster than ``backend`` are not used ("fastokens: not installed"), or None."""
        chosen = FASTEST_FIRST.index(self.backend)
        reasons = {**self.fallback_reasons, **self._local_refusals()}
        faster = [f"{b}: {reasons[b]}" for b in FASTEST_FIRST[:chosen] if b in reasons]
        return "; ".join(faster) or None

    @property
    def plan(self) -> TiktokenPlan | None:
        """The tiktoken backend's ranks and pattern (None without a tiktoken backend)."""
        return self._sources.get("tiktoken")

    @property
    def pattern(self) -> str | None:
        """The pre-tokenization regex of the tiktoken backend (None without one)."""
        return self.plan.pat_str if self.plan is not None else None

    def source(self, backend: str) -> Any:
        """The data a backend is built from (``tokenizer.json`` text, :class:`TiktokenPlan`, ``.model`` bytes)."""
        return self._sources[backend]

    def __repr__(self) -> str:
        return (
            f"TokenCounter(name={self.name!r}, backend={self.backend!r}, vocab_size={self.vocab_size}, "
            f"vocab_hash={self.vocab_hash!r}, add_special_tokens={self.add_special_tokens})"
        )

    def with_backends(self, backends: Sequence[str], fallback_reasons: Mapping[str, str]) -> TokenCounter:
        """A copy restricted to ``backends`` (their sources only), sharing this counter's built engines."""
        sources = {b: self._sources[b] for b in backends}
        copy = TokenCounter(
            **{**self._state(), "sources": sources, "backends": backends, "fallback_reasons": fallback_reasons},
            _engines=self._engines.restricted(sources),
        )
        return copy

    def without(self, backend: str, reason: str) -> TokenCounter:
        """A copy that does not use ``backend``, with ``reason`` in ``fallback_reasons``.

        E.g. fastokens for a small scan: building it costs each worker 1-4 s and ~100-300 MB (measured in
        scripts/bench_tokenize.md), repaid only after ~10M tokens per worker. The reference cannot be dropped.
        """
        if backend == self.reference:
            raise ValueError(f"{backend} is the reference of {self.name}; it cannot be dropped")
        kept = tuple(b for b in self.backends if b != backend)
        return self.with_backends(kept, {**self.fallback_reasons, backend: reason})

    # -- counting ---------------------------------------------------------------------------------------

    def count(self, texts: Sequence[str]) -> np.ndarray:
        """Token count of each text (int64), including ``special_tokens_added`` per text when enabled.

        >>> from freqlab.tokenization import load_tokenizer
        >>> load_tokenizer("tekken").count(["Hello world", ""]).tolist()
        [2, 0]
        """
        if isinstance(texts, (str, bytes, Mapping)):  # would count each character (key) as a text
            raise TypeError(f"count takes a sequence of texts, not a {type(texts).__name__} (count_one takes one)")
        out = np.empty(len(texts), dtype=np.int64)
        if (call := getattr(_CALL, "tally", None)) is not None:
            call.calls += 1
        if not len(texts):
            return out
        backends = self._live_backends()
        try:
            held = self._engines.holding_routed(texts)
        except TypeError:  # a text that is no string: named (the search met it first)
            self._check_texts(texts)
            raise
        if held:
            split = self._engines.splittable(texts, held) if self._splits_on(backends[0]) else []
            if split:
                self._count_split([texts[i] for i in split], split, out, backends)
            for i in sorted(set(held) - set(split)):
                out[i] = self._count_document(texts[i], i, backends[-1:])
            kept = set(held)
            plain = [i for i in range(len(texts)) if i not in kept]
            if plain:
                self._count_batch([texts[i] for i in plain], plain, out, backends)
        else:
            self._count_batch(texts, range(len(texts)), out, backends)
        return out + self.special_tokens_added

    def counted_by(self) -> dict[str, int]:
        """The documents :meth:`count` counted in this process, by the backend that counted each (a text cut at
        added tokens: the slowest backend that counted one of its pieces, the first when it has none): how many went
        past the fastest backend, routed or after a failure. A scan tallies each batch's own
        (:func:`backends_tally`; ``summary.json``: ``tokenizer.counted_by``).
        """
        with self._counted_lock:
            return dict(self._counted)

    def _tally(self, backend: str, where: Sequence[int] | int) -> None:
        """``backend`` counted the texts at ``where`` (indices of this :meth:`count` call's texts)."""
        call = getattr(_CALL, "tally", None)  # a backends_tally open on this thread: its own tally too
        if call is not None:
            call.add(backend, where)
        documents = 1 if isinstance(where, int) else len(where)
        with self._counted_lock:  # count() runs on several threads at once in a scan
            self._counted[backend] = self._counted.get(backend, 0) + documents

    def _count_split(self, texts: Sequence[str], where: Sequence[int], out: np.ndarray, backends) -> None:
        """Count texts holding :attr:`split_out` tokens as the reference does: each token is one token, and the
        text between two is tokenized on its own (Hugging Face splits added tokens out before normalizing and
        pre-tokenizing), so the pieces go to the counting backend and each text's count is its pieces' sum plus
        its tokens. Matches are leftmost-longest, as Hugging Face's; verified at load (:mod:`~.verify`).
        """
        pieces: list[str] = []
        owners: list[int] = []
        totals = np.zeros(len(texts), np.int64)
        split = self._engines.splitter.split
        for k, text in enumerate(texts):
            parts = split(text)
            totals[k] = len(parts) - 1
            for part in parts:
                if part:
                    pieces.append(part)
                    owners.append(k)
        # each text is credited to the slowest backend one of its pieces went to (a piece holding a string routed
        # past fastokens, or failing on it): counted_by says how many documents went past the fastest backend
        slowest = np.zeros(len(texts), np.int8)
        if pieces:
            counts = np.empty(len(pieces), np.int64)
            rank = {backend: k for k, backend in enumerate(backends)}
            went = np.zeros(len(pieces), np.int8)

            def credit(backend: str, at: Sequence[int] | int) -> None:
                went[_indexer(at)] = rank[backend]

            self._count_batch(pieces, range(len(pieces)), counts, backends, credit)
            owned = np.asarray(owners, np.intp)
            np.add.at(totals, owned, counts)
            np.maximum.at(slowest, owned, went)
        where = list(where)
        out[where] = totals
        for k in np.unique(slowest).tolist():
            self._tally(backends[k], [where[i] for i in np.flatnonzero(slowest == k).tolist()])

    def build_engines(self, backends: Sequence[str] | None = None) -> None:
        """Build now, side by side, ``backends`` (default: what :meth:`count` uses, :meth:`engines_used`), which would
        otherwise be built in the middle of a count, when the first text for each comes (:meth:`Engines.build`;
        nothing is run, so no backend starts its own threads).
        """
        self._engines.build(self.engines_used() if backends is None else backends)

    def built(self, backend: str) -> Any:
        """The engine of ``backend`` built in this process, or None."""
        return self._engines.built(backend)

    def adopt(self, backend: str, engine: Any) -> None:
        """Count with ``engine``, built elsewhere from this counter's source of ``backend`` (the caller's word)."""
        self._engines.put(backend, engine)

    def holding_fastokens_routed(self, texts: Sequence[str]) -> list[int]:
        """The indices of the texts holding a :attr:`fastokens_routed` string (fastokens never counts them)."""
        return self._engines.holding(self._engines.past_fastokens, texts)

    def engines_used(self) -> list[str]:
        """The backends :meth:`count` uses in this process, fastest first: :attr:`backend`, the next one when it
        counts the texts holding :attr:`fastokens_routed` strings, and the reference when routed strings that are
        not :attr:`split_out` send texts to it (texts holding added tokens that are all split out never reach it;
        it builds on a failure).
        """
        live = self._live_backends()
        first = live[0]
        split = set(self.split_out) if self._splits_on(first) else set()
        used = [first]
        if self._routes_past(live):  # tiktoken builds in ~0.05 s for Llama 3
            used.append(live[1])
        if first != self.reference and any(word not in split for word in self.routed):
            used.append(self.reference)
        return list(dict.fromkeys(used))

    def _left_to_the_next(self, texts: Sequence[str], first: str) -> list[int]:
        """The indices of the texts ``first`` leaves to the next backend: for fastokens, those holding a
        :attr:`fastokens_routed` string; for tiktoken, those it would count through its detour or normalize with
        Python's newer NFC tables (:func:`~freqlab.tokenization.backends.leaves_tiktoken`), which the reference after
        it counts exactly.
        """
        if first == BACKEND_FASTOKENS and self.fastokens_routed:
            return self.holding_fastokens_routed(texts)
        if first == BACKEND_TIKTOKEN:
            nfc = self.plan is not None and self.plan.nfc
            return [k for k, text in enumerate(texts) if leaves_tiktoken(text, nfc)]
        return []

    def _routes_past(self, backends: Sequence[str]) -> bool:
        """Whether texts holding :attr:`fastokens_routed` strings skip ``backends[0]`` (fastokens) for the next."""
        return bool(self.fastokens_routed) and backends[0] == BACKEND_FASTOKENS and len(backends) > 1

    def _splits_on(self, first: str) -> bool:
        """Whether texts are cut at :attr:`split_out` when ``first`` counts: only on the backend the split was
        verified with (a process without fastokens sends those texts to the reference).
        """
        return bool(self.split_out) and first == self.backends[0] != self.reference

    def is_built(self, backend: str | None = None) -> bool:
        """Whether ``backend`` (default: :attr:`backend`) is built in this process already: counting in this
        process then costs no start-up (the scan driver's engine choice).
        """
        return self._engines.is_built(backend or self.backend)

    def count_one(self, text: str) -> int:
        """Token count of one text (same rules as :meth:`count`)."""
        return int(self.count([text])[0])

    def counts_by(self, backend: str, texts: Sequence[str]) -> np.ndarray:
        """Counts (without special tokens) of one backend alone, no routing or fallback: for verification."""
        return self._engines.get(backend).counts(texts, self.threads)

    def _count_batch(
        self, texts: Sequence[str], where: Sequence[int], out: np.ndarray, backends, credit: Credit | None = None
    ) -> None:
        """Count ``texts`` into ``out[where]`` on ``backends[0]``, the texts it leaves to the next on those, a text
        it fails on alone; ``credit(backend, where)`` is told which backend counted which (default: the documents'
        :meth:`_tally`; the pieces of a text cut at added tokens are credited to their text).
        """
        credit = credit or self._tally
        if len(backends) > 1:
            past = self._left_to_the_next(texts, backends[0])
            if past:
                self._count_batch([texts[k] for k in past], [where[k] for k in past], out, backends[1:], credit)
                aside = set(past)
                kept = [k for k in range(len(texts)) if k not in aside]
                texts, where = [texts[k] for k in kept], [where[k] for k in kept]
        if not len(texts):
            return
        try:
            out[_indexer(where)] = self._engines.get(backends[0]).counts(texts, self.threads)
        except BaseException as exc:
            if not is_engine_failure(exc):
                raise
        else:
            credit(backends[0], where)
            return
        for text, i in zip(texts, where):  # one failing text must not cost the others their fast backend
            out[i] = self._count_document(text, i, backends, credit)

    def _check_texts(self, texts: Sequence[Any], first: int = 0) -> None:
        """A TypeError naming the first of ``texts`` that is no string (its index counted from ``first``)."""
        for index, text in enumerate(texts, first):
            if not isinstance(text, str):
                raise TypeError(f"{self.name}: text #{index} is {type(text).__name__}, not str")

    def _count_document(self, text: str, index: int, backends: Sequence[str], credit: Credit | None = None) -> int:
        self._check_texts([text], index)  # met here only: every backend refused the batch holding it
        errors = []
        # counted with its surrogates repaired (tiktoken's rule) and routed afresh: a joined pair, or U+FFFD, may
        # make a routed string
        attempt = valid_unicode(text)
        for backend in self._backends_for(attempt, backends):
            try:
                count = int(self._engines.get(backend).counts([attempt], self.threads)[0])
            except BaseException as exc:
                if not is_engine_failure(exc):
                    raise
                errors.append(f"{backend}: {_first_line(exc)}")
            else:
                (credit or self._tally)(backend, index)
                return count
        raise FreqlabError(f"{self.name}: text #{index} ({text[:40]!r}...) cannot be counted ({'; '.join(errors)})")

    def _backends_for(self, text: str, backends: Sequence[str]) -> Sequence[str]:
        """Of ``backends``, those that may count the one ``text`` as routing decides: the reference alone for a text
        holding a :attr:`routed` string; past each first backend that leaves it to the next (:meth:`_left_to_the_next`,
        as a batch does); and not tiktoken's detour where a backend after tiktoken counts exactly.
        """
        if self._engines.holding_routed([text]):
            return backends[-1:]
        while len(backends) > 1 and self._left_to_the_next([text], backends[0]):
            backends = backends[1:]
        if backends[-1] != BACKEND_TIKTOKEN and leaves_tiktoken(text, self.plan is not None and self.plan.nfc):
            backends = [b for b in backends if b != BACKEND_TIKTOKEN]
        return backends

    def _live_backends(self) -> tuple[str, ...]:
        """``backends`` without fastokens when this process lacks the version that was verified."""
        if BACKEND_FASTOKENS in self.backends and self._local_refusals():
            return tuple(b for b in self.backends if b != BACKEND_FASTOKENS)
        return self.backends

    def _local_refusals(self) -> dict[str, str]:
        if BACKEND_FASTOKENS not in self.backends:
            return {}
        here = fastokens_version()
        if here == self.fastokens_version:
            return {}
        why = "not installed in this process" if here is None else f"{here} here, {self.fastokens_version} verified"
        return {BACKEND_FASTOKENS: why}

    @property
    def rules_hash(self) -> str:
        """Short sha256 (16 hex digits) of the reference backend's data: everything that decides the counts
        (vocabulary, merges, pre-tokenizer regex, normalizer, added tokens), unlike :attr:`vocab_hash`, which a
        changed regex leaves alone. The other backends are verified equal to the reference, so they are left out:
        the hash is the same on a machine without fastokens.
        """
        return self.source_sha256(self.reference)[:16]

    def source_sha256(self, backend: str) -> str:
        """:func:`source_digest` of ``backend``'s data (kept in the tokenizer cache: hashed here only once)."""
        if backend not in self._digests:
            self._digests[backend] = source_digest(self._sources[backend])
        return self._digests[backend]

    # -- pickling -------------------------------------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        """sha256 of everything that determines the counts (used to share built engines in a process)."""
        if self._fingerprint is None:
            self._fingerprint = sources_fingerprint(
                self._sources, self.routed, self._digests, self.split_out, self.fastokens_routed
            )
        return self._fingerprint

    def _state(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "spec": self.spec,
            "vocab_size": self.vocab_size,
            "vocab_hash": self.vocab_hash,
            "sources": self._sources,
            "backends": self.backends,
            "routed": self.routed,
            "split_out": self.split_out,
            "fastokens_routed": self.fastokens_routed,
            "add_special_tokens": self.add_special_tokens,
            "special_tokens_added": self.special_tokens_added,
            "fallback_reasons": self.fallback_reasons,
            "threads": self.threads,
            "fastokens_version": self.fastokens_version,
            "fastokens_note": self.fastokens_note,
            "source_digests": self._digests,
        }

    def share_engines(self) -> None:
        """Let copies of this counter unpickled in this process (or in a process forked from it, like the local
        pool's workers) use its built engines: they are found by :attr:`fingerprint`, so only a counter of the
        very same data gets them.
        """
        with _BUILT_LOCK:
            _BUILT.setdefault(self.fingerprint, self._engines)

    def __reduce__(self):
        self.share_engines()  # unpickling in this process reuses our engines
        return (_restore_counter, (self.fingerprint, self._state()))


def sources_fingerprint(
    sources: Mapping[str, Any],
    routed: Sequence[str] = (),
    digests: dict[str, str] | None = None,
    split_out: Sequence[str] = (),
    fastokens_routed: Sequence[str] = (),
) -> str:
    """sha256 over the routed strings (and those split out or routed past fastokens, when any) and each backend's
    :func:`source_digest`; ``digests``: those known already (backend -> digest), completed in place.
    """
    digests = digests if digests is not None else {}
    h = hashlib.sha256(repr(sorted(routed)).encode())
    for extra in (split_out, fastokens_routed):
        h.update(repr(sorted(extra)).encode() if extra else b"")
    for backend in sorted(sources):
        if backend not in digests:
            digests[backend] = source_digest(sources[backend])
        h.update(backend.encode() + b"\0" + digests[backend].encode())
    return h.hexdigest()


def source_digest(data: Any) -> str:
    """sha256 hex of one backend's data: ranks via :func:`vocab_hash` (with the pattern and text rules), text and
    bytes as they are.
    """
    h = hashlib.sha256()
    if isinstance(data, FastokensRanks):
        h.update((data.encoding or "").encode())
        data = data.plan
    if isinstance(data, TiktokenPlan):
        h.update(repr((data.pat_str, data.nfc, data.prefix_space, len(data.mergeable_ranks))).encode())
        h.update(vocab_hash((rank, token) for token, rank in data.mergeable_ranks.items()).encode())
    elif isinstance(data, str):
        h.update(data.encode("utf-8", "surrogatepass"))
    else:
        h.update(bytes(data))
    return h.hexdigest()


def literal_search_regex(words: Iterable[str]) -> re.Pattern[str]:
    """A regex that finds any of ``words``, as a trie (``<s>``, ``</s>`` -> ``<(?:s>|/s>)``).

    Checking 1000 special tokens one by one would scan each text 1000 times; the trie is one pass, and the
    regex engine skips ahead to the possible first characters.

    >>> bool(literal_search_regex(["<s>", "</s>", "[INST]"]).search("a </s> b"))
    True
    """
    return _trie_regex(words, longest=False)


def longest_match_regex(words: Iterable[str]) -> re.Pattern[str]:
    """A regex whose matches are ``words`` leftmost-longest, as Hugging Face matches added tokens: a trie whose
    every branch prefers going on (``<a>``, ``<ab>`` -> ``<a(?:>|b>)``; ``ab``, ``abc`` -> ``ab(?:c)?``), so at
    each position the regex engine tries one branch per character, however many words there are.

    >>> longest_match_regex(["ab", "abc", "b"]).findall("abcab b")
    ['abc', 'ab', 'b']
    """
    return _trie_regex(words, longest=True)


def _trie_regex(words: Iterable[str], longest: bool) -> re.Pattern[str]:
    """The trie of ``words`` as a regex: matching the longest word at a position (``longest``), or stopping at the
    first word that ends there (enough for "does one occur"). A trie deeper than Python's and ``re``'s recursion
    (a word of ~500 characters, hundreds of words each a prefix of the next) is a flat alternation instead.
    """
    words = [word for word in words if word]
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}  # a word ends here

    def emit(node: dict) -> str:
        if "" in node and not longest:
            return ""  # anything longer is irrelevant for "does one occur"
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        inner = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        # greedy: the longer word first, this one when no longer matches
        return f"(?:{inner})?" if "" in node else inner

    try:
        return re.compile(emit(trie) if trie else "(?!)")
    except RecursionError:
        return _alternation(words)


def _alternation(words: Iterable[str]) -> re.Pattern[str]:
    """The words as one flat alternation, the longest first: leftmost-longest as the trie is (at a position the
    first alternative that matches is the longest word there), without its nesting, but tried word by word.
    """
    ordered = sorted({word for word in words if word}, key=lambda word: (-len(word), word))
    return re.compile("|".join(map(re.escape, ordered)) if ordered else "(?!)")


class LiteralFinder:
    """Finds any of ``words`` in a text: one :func:`literal_search_regex` per first character.

    Python's ``re`` skips ahead to a pattern's literal prefix (a fast substring search) but tries an alternation
    of several first characters at every position: on code, adding ``'ſ`` to Llama 3's 256 ``<|...|>`` added
    tokens made one search of the trie ~4x slower than the counting itself. Grouped by first character, each
    search has a literal prefix. A group whose words all hold one character beyond Latin-1 (``ſ``, U+017F) is first
    looked for by that character alone (``in``): a text of Latin-1 characters cannot hold it (Python answers at
    once), and in another ``in`` looks for one character ~5x faster than ``re`` for two (0.06 against 0.3 s per
    10^9 characters of varied text, measured for ``'ſ``).

    >>> bool(LiteralFinder(["<s>", "</s>", "'\u017f"]).search("it's </s>"))
    True
    """

    def __init__(self, words: Iterable[str]) -> None:
        groups: dict[str, list[str]] = {}
        for word in words:
            if word:
                groups.setdefault(word[0], []).append(word)
        self._searches = [_prefiltered(group) for _, group in sorted(groups.items())]

    def search(self, text: str) -> bool:
        """True when ``text`` contains one of the words."""
        return any(search(text) for search in self._searches)


def _prefiltered(words: list[str]) -> Callable[[str], object]:
    """The search for ``words``, first for a character beyond Latin-1 they all hold, when there is one."""
    search = literal_search_regex(words).search
    shared = set.intersection(*(set(word) for word in words))
    rare = sorted(ch for ch in shared if ord(ch) > 0xFF)
    if not rare:
        return search
    first = rare[0]
    return lambda text: first in text and search(text)


JOIN_BELOW_CHARACTERS = 1024  # texts shorter than this on average are searched for routed strings joined


class Engines:
    """The built (expensive) backend engines behind a counter, each built on first use in this process.

    A worker that never meets a routed text never builds the reference; one whose fastokens runs never
    builds tiktoken.
    """

    def __init__(
        self,
        sources: Mapping[str, Any],
        routed: Sequence[str] = (),
        split_out: Sequence[str] = (),
        fastokens_routed: Sequence[str] = (),
        built: Mapping | None = None,
    ) -> None:
        self._sources = dict(sources)
        self._built: dict[str, Any] = dict(built or {})
        self._locks = {backend: threading.Lock() for backend in self._sources}  # one per backend: two build at once
        self.routed = LiteralFinder(routed) if any(routed) else None
        out = {word for word in split_out if word}
        self.splitter = longest_match_regex(out) if out else None
        rest = [word for word in routed if word not in out]
        self.referenced = LiteralFinder(rest) if any(rest) else None  # texts holding one go to the reference
        self.past_fastokens = LiteralFinder(fastokens_routed) if any(fastokens_routed) else None
        # One search over the texts joined by "\x00" finds whether any text holds a routed string, unless a
        # routed string contains "\x00" itself (then a match could span two texts).
        self.joinable = not any("\x00" in word for word in (*routed, *fastokens_routed))

    def holding_routed(self, texts: Sequence[str]) -> list[int]:
        """The indices of the texts that hold a routed string, in order."""
        return self.holding(self.routed, texts)

    def holding(self, finder: LiteralFinder | None, texts: Sequence[str]) -> list[int]:
        r"""The indices of the texts in which ``finder`` finds a word, in order. Short texts are first searched
        together, joined by "\x00" (one search instead of one per text: 500,000 one-line texts 0.01 s against
        0.18 s); long ones one by one, as the join would copy them (60M characters of varied text: 0.023 s against
        0.03-0.06 s).
        """
        if finder is None:
            return []
        search = finder.search
        short = len(texts) * JOIN_BELOW_CHARACTERS > sum(map(len, texts))
        if self.joinable and short and not search("\x00".join(texts)):
            return []
        return [i for i, text in enumerate(texts) if search(text)]

    def splittable(self, texts: Sequence[str], held: Sequence[int]) -> list[int]:
        """Of the texts ``held`` (indices holding a routed string), those whose routed strings are all split out."""
        if self.splitter is None:
            return []
        referenced = self.referenced.search if self.referenced is not None else None
        return [i for i in held if referenced is None or not referenced(texts[i])]

    def get(self, backend: str) -> Any:
        """The engine of ``backend``, built on first use."""
        engine = self._built.get(backend)
        if engine is None:
            with self._locks[backend]:
                engine = self._built.get(backend)
                if engine is None:
                    engine = self._built[backend] = ENGINES[backend](self._sources[backend])
        return engine

    def build(self, backends: Sequence[str]) -> None:
        """Build ``backends`` now, side by side: each but the first on a thread of its own, all joined before this
        returns (the backends release the GIL while they build: Llama 3's fastokens and Hugging Face reference take
        0.90-0.98 s and 0.31-0.32 s one after the other, 0.92-0.94 s together). A build's exception is raised here;
        backends already built start no thread (a scan asks again for every shard).
        """
        backends = [b for b in backends if b not in self._built]
        failures: list[BaseException] = []

        def build_one(backend: str) -> None:
            try:
                self.get(backend)
            except BaseException as exc:  # a Rust panic too: raised again below, in the caller's thread
                failures.append(exc)

        # not daemons (a thread inherits that from the one starting it, the forkserver's prebuild included): at
        # exit, Python ends a daemon thread still inside a backend's native build by unwinding its stack, which
        # aborts the process ("FATAL: exception not rethrown"); a build is waited for instead (< 1 s)
        threads = [
            threading.Thread(target=build_one, args=(b,), name=f"freqlab-build-{b}", daemon=False) for b in backends[1:]
        ]
        for thread in threads:
            thread.start()
        try:
            if backends:
                build_one(backends[0])
        finally:
            for thread in threads:
                thread.join()
        if failures:
            raise failures[0]

    def is_built(self, backend: str) -> bool:
        """Whether ``backend``'s engine is already built in this process (building it again costs nothing)."""
        return backend in self._built

    def built(self, backend: str) -> Any:
        """``backend``'s engine when it is built in this process, else None."""
        return self._built.get(backend)

    def put(self, backend: str, engine: Any) -> None:
        """Register an engine built elsewhere (the loader's Hugging Face tokenizer: parse the JSON once)."""
        self._built[backend] = engine

    def routing_past_fastokens(self, fastokens_routed: Sequence[str]) -> Engines:
        """A copy (the same built engines) whose texts holding a string of ``fastokens_routed`` skip fastokens."""
        copy = self.restricted(self._sources)
        copy.past_fastokens = LiteralFinder(fastokens_routed) if any(fastokens_routed) else None
        copy.joinable = self.joinable and not any("\x00" in word for word in fastokens_routed)
        return copy

    def restricted(self, sources: Mapping[str, Any]) -> Engines:
        """A copy that knows only the backends of ``sources``."""
        copy = Engines(sources, built={b: e for b, e in self._built.items() if b in sources})
        copy.routed, copy.joinable = self.routed, self.joinable
        copy.splitter, copy.referenced, copy.past_fastokens = self.splitter, self.referenced, self.past_fastokens
        return copy


def _first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type name when the message is empty)."""
    return str(exc).splitlines()[0] if str(exc).strip() else exc.__class__.__name__


_CALL = threading.local()  # .tally: the BackendTally open on this thread


def _indexer(where: Sequence[int] | int):
    """Indices of a call's texts as numpy takes them: every text (a range) as a slice (a list of indices costs ~25 ns
    a text: tiny documents), one index as it is, others as a list (a tuple would index several dimensions).
    """
    if isinstance(where, range):
        return slice(where.start, where.stop)
    return where if isinstance(where, int) else list(where)


class BackendTally(dict):
    """The documents each backend counted (the dict: backend -> documents) in the :meth:`TokenCounter.count` calls
    made while it was open (:func:`backends_tally`), and which texts: :meth:`codes` says, for one call's texts,
    the backend of each, so that a scan cut at a limit inside a batch keeps the counts of the documents it keeps.
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0  # count() calls made while open
        self._where: list[tuple[str, Sequence[int] | int]] = []

    def add(self, backend: str, where: Sequence[int] | int) -> None:
        """``backend`` counted the texts at ``where`` (indices of the call's texts)."""
        self[backend] = self.get(backend, 0) + (1 if isinstance(where, int) else len(where))
        self._where.append((backend, where))

    def codes(self, texts: int, index: dict[str, int]) -> np.ndarray | None:
        """The backend of each of the ``texts`` texts of the one call tallied, as its number in ``index`` (a name
        not there yet is added), int8, or -1 for every text when no TokenCounter counted (a caller's own counter);
        None when that is not known: not one call, or not every text of it counted once (a caller's counter that
        counts a batch in several calls, or counts other texts).
        """
        if self.calls == 0 and not self:
            return np.full(texts, -1, np.int8)
        if self.calls != 1 or sum(self.values()) != texts:
            return None
        out = np.full(texts, -1, np.int8)
        for backend, where in self._where:
            out[_indexer(where)] = index.setdefault(backend, len(index))
        return out if texts == 0 or int(out.min()) >= 0 else None


@contextlib.contextmanager
def backends_tally() -> Iterator[BackendTally]:
    """A :class:`BackendTally` that gets, while open, the documents each backend counts in
    :meth:`TokenCounter.count` calls on this thread: a scan's batch is tallied so, whatever else counts meanwhile on
    other threads, and whatever wraps the counter (a caller's object whose ``count`` calls a TokenCounter's). A tally
    opened inside keeps its own.
    """
    outer = getattr(_CALL, "tally", None)
    _CALL.tally = tally = BackendTally()
    try:
        yield tally
    finally:
        _CALL.tally = outer


_BUILT_LOCK = threading.Lock()
_BUILT: dict[str, Engines] = {}  # fingerprint -> engines, per process (a worker unpickles many copies)


def _restore_counter(fingerprint: str, state: dict) -> TokenCounter:
    with _BUILT_LOCK:
        engines = _BUILT.get(fingerprint)
        if engines is None:
            engines = Engines(
                state["sources"], state["routed"], state.get("split_out", ()), state.get("fastokens_routed", ())
            )
            _BUILT[fingerprint] = engines
    counter = TokenCounter(**state, _engines=engines)
    counter._fingerprint = fingerprint
    return counter
