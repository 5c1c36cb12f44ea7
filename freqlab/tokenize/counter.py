"""``TokenCounter``: exact token counts per document, from a tiktoken encoding or a Hugging Face tokenizer.

A counter only counts: ``count(texts)`` returns one int64 per text, the length of the token sequence the
tokenizer produces (without special tokens unless ``add_special_tokens``). It never returns token ids, so the
fast path is free to use any ranks that give the same segmentation.

Pickling (worker processes, Ray tasks): a counter pickles to its raw data (tiktoken ranks and pattern, or the
Hugging Face ``tokenizer.json`` text), never to a file path, so it works on machines without the tokenizer file
or the hub. Unpickling rebuilds the encoder once per process: later copies with the same fingerprint reuse it
(rebuilding the 131k Tekken encoder costs ~0.3 s; a cache hit only unpickles the data, ~50 ms).
"""

from __future__ import annotations

import hashlib
import re
import struct
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

BACKEND_TIKTOKEN = "tiktoken"
BACKEND_HF = "hf-tokenizers"

# Above this many characters a text is encoded to a numpy uint32 buffer instead of a Python list: a
# 10M-token document then costs 40 MB instead of ~360 MB of int objects. Below it the list path is faster.
_LONG_TEXT_CHARS = 1_000_000


def vocab_hash(tokens: Iterable[tuple[int, bytes]]) -> str:
    """Short sha256 (16 hex digits) of a vocabulary given as ``(id, token bytes)`` pairs, in id order.

    Each entry hashes as ``id (uint64 LE) | len (uint32 LE) | bytes``, so the hash changes when any token, id
    or the vocabulary size changes, and not when the file is merely re-serialised.

    >>> vocab_hash([(0, b"a"), (1, b"b")]) == vocab_hash([(1, b"b"), (0, b"a")])
    True
    """
    h = hashlib.sha256()
    for token_id, token in sorted(tokens):
        h.update(struct.pack("<QI", token_id, len(token)))
        h.update(token)
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class TiktokenPlan:
    """Everything needed to build the tiktoken fast path: ranks, pattern, and how to prepare text.

    ``added_contents`` are strings the Hugging Face tokenizer matches before BPE (added/special tokens); a
    text containing one of them is counted by the Hugging Face tokenizer instead (``hf_json`` must be set),
    which reproduces its matching rules (lstrip/rstrip/single_word/normalized) exactly.
    """

    pat_str: str
    mergeable_ranks: dict[bytes, int]
    nfc: bool = False
    prefix_space: bool = False
    added_contents: tuple[str, ...] = ()


class TokenCounter:
    """Counts tokens per text, exactly. Build one with :func:`freqlab.tokenize.load_tokenizer`.

    Attributes:
        name: human-readable name (built-in name, file path or hub id).
        spec: string that re-creates the counter in another process: ``load_tokenizer(c.spec, ...)``.
        backend: ``"tiktoken"`` (fast path) or ``"hf-tokenizers"``.
        vocab_size: number of token ids, special tokens included.
        vocab_hash: :func:`vocab_hash` of all ``(id, token bytes)`` pairs, special tokens included.
        add_special_tokens: whether counts include the special tokens added around each document.
        special_tokens_added: how many tokens ``add_special_tokens`` adds per document.
        fallback_reason: why a ``tokenizer.json`` did not get the tiktoken fast path (``None`` otherwise).
        threads: Hugging Face backend only: 1 (default) encodes text by text in this thread; ``n > 1`` uses
            ``encode_batch`` on the library's rayon pool (size set by ``RAYON_NUM_THREADS``; requires
            ``TOKENIZERS_PARALLELISM`` not ``false``). The tiktoken backend is always single-threaded.
    """

    def __init__(
        self,
        *,
        name: str,
        spec: str,
        vocab_size: int,
        vocab_hash: str,
        add_special_tokens: bool = False,
        special_tokens_added: int = 0,
        plan: TiktokenPlan | None = None,
        hf_json: str | None = None,
        fallback_reason: str | None = None,
        threads: int = 1,
        _encoders: Encoders | None = None,
    ) -> None:
        if plan is None and hf_json is None:
            raise ValueError("a TokenCounter needs a tiktoken plan or a Hugging Face tokenizer")
        if plan is not None and plan.added_contents and hf_json is None:
            raise ValueError("added tokens are counted by the Hugging Face tokenizer: hf_json is required")
        self.name = name
        self.spec = spec
        self.vocab_size = int(vocab_size)
        self.vocab_hash = vocab_hash
        self.add_special_tokens = bool(add_special_tokens)
        self.special_tokens_added = int(special_tokens_added) if add_special_tokens else 0
        self.fallback_reason = fallback_reason
        self.threads = max(1, int(threads))
        self._plan = plan
        self._hf_json = hf_json
        self._encoders = _encoders if _encoders is not None else Encoders(plan, hf_json)
        self._fingerprint: str | None = None

    @property
    def backend(self) -> str:
        """``"tiktoken"`` (fast path) or ``"hf-tokenizers"``."""
        return BACKEND_TIKTOKEN if self._plan is not None else BACKEND_HF

    @property
    def plan(self) -> TiktokenPlan | None:
        """The tiktoken fast path's ranks and pattern (``None`` on the Hugging Face backend)."""
        return self._plan

    @property
    def pattern(self) -> str | None:
        """The pre-tokenization regex of the tiktoken fast path (``None`` on the Hugging Face backend)."""
        return self._plan.pat_str if self._plan is not None else None

    def __repr__(self) -> str:
        return (
            f"TokenCounter(name={self.name!r}, backend={self.backend!r}, vocab_size={self.vocab_size}, "
            f"vocab_hash={self.vocab_hash!r}, add_special_tokens={self.add_special_tokens})"
        )

    # -- counting ---------------------------------------------------------------------------------------

    def count(self, texts: Sequence[str]) -> np.ndarray:
        """Token count of each text (int64), including ``special_tokens_added`` per text when enabled.

        >>> from freqlab.tokenize import load_tokenizer
        >>> load_tokenizer("tekken").count(["Hello world", ""]).tolist()
        [2, 0]
        """
        out = np.empty(len(texts), dtype=np.int64)
        if self._plan is None:
            self._count_hf(texts, out)
        else:
            self._count_tiktoken(texts, out)
        return out

    def count_one(self, text: str) -> int:
        """Token count of one text (same rules as :meth:`count`)."""
        return int(self.count([text])[0])

    def _count_tiktoken(self, texts: Sequence[str], out: np.ndarray) -> None:
        plan = self._plan
        assert plan is not None
        encoding = self._encoders.encoding
        encode = encoding.encode_ordinary
        added = self._encoders.added_tokens  # compiled search for any added token, or None
        extra = self.special_tokens_added
        for i, text in enumerate(texts):
            raw = text
            if plan.nfc and not unicodedata.is_normalized("NFC", text):
                text = unicodedata.normalize("NFC", text)
            if added is not None and (added.search(raw) or (text is not raw and added.search(text))):
                out[i] = self._hf_count_one(raw)  # added tokens: the HF matcher decides, exactly
                continue
            if plan.prefix_space and text and not text.startswith(" "):
                text = " " + text  # ByteLevel(add_prefix_space=True): HF adds it to non-empty text only
            if len(text) > _LONG_TEXT_CHARS:
                n = len(encoding.encode_to_numpy(text, disallowed_special=()))
            else:
                n = len(encode(text))
            out[i] = n + extra

    def _hf_count_one(self, text: str) -> int:
        tokenizer = self._encoders.hf
        assert tokenizer is not None
        return len(tokenizer.encode(text, add_special_tokens=self.add_special_tokens))

    def _count_hf(self, texts: Sequence[str], out: np.ndarray) -> None:
        tokenizer = self._encoders.hf
        assert tokenizer is not None
        if self.threads > 1:
            encode_batch = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)  # _fast: tokenizers>=0.21
            batch = encode_batch(list(texts), add_special_tokens=self.add_special_tokens)
            for i, encoding in enumerate(batch):
                out[i] = len(encoding)
            return
        add = self.add_special_tokens
        for i, text in enumerate(texts):
            out[i] = len(tokenizer.encode(text, add_special_tokens=add))

    # -- pickling -------------------------------------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        """sha256 of everything that determines the counts (used to share built encoders in a process)."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            plan = self._plan
            parts: list[Any] = [self.vocab_hash, self.add_special_tokens, self.special_tokens_added]
            if plan is not None:
                parts += [plan.pat_str, plan.nfc, plan.prefix_space, plan.added_contents, len(plan.mergeable_ranks)]
            h.update(repr(parts).encode())
            if plan is not None:
                h.update(vocab_hash((rank, token) for token, rank in plan.mergeable_ranks.items()).encode())
            if self._hf_json is not None:
                h.update(self._hf_json.encode())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def __reduce__(self):
        state = {
            "name": self.name,
            "spec": self.spec,
            "vocab_size": self.vocab_size,
            "vocab_hash": self.vocab_hash,
            "add_special_tokens": self.add_special_tokens,
            "special_tokens_added": self.special_tokens_added,
            "plan": self._plan,
            "hf_json": self._hf_json,
            "fallback_reason": self.fallback_reason,
            "threads": self.threads,
        }
        with _BUILT_LOCK:  # unpickling in this process reuses our encoders
            _BUILT.setdefault(self.fingerprint, self._encoders)
        return (_restore_counter, (self.fingerprint, state))


def literal_search_regex(words: Iterable[str]) -> re.Pattern[str]:
    """A regex that finds any of ``words``, as a trie (``<s>``, ``</s>`` -> ``<(?:s>|/s>)``).

    Checking 1000 special tokens one by one would scan each text 1000 times; the trie is one pass, and the
    regex engine skips ahead to the possible first characters.

    >>> bool(literal_search_regex(["<s>", "</s>", "[INST]"]).search("a </s> b"))
    True
    """
    trie: dict = {}
    for word in words:
        if not word:
            continue
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}  # end of a word: anything longer is irrelevant for "does one occur"

    def emit(node: dict) -> str:
        if "" in node:
            return ""
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items())]
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return re.compile(emit(trie) if trie else "(?!)")


class Encoders:
    """The built (expensive) encoders behind a counter; the Hugging Face one is built on first use.

    On the tiktoken backend the Hugging Face tokenizer only counts texts containing added tokens, so a
    worker that never meets one never pays for parsing ``tokenizer.json``.
    """

    def __init__(self, plan: TiktokenPlan | None, hf_json: str | None, *, hf: Any = None) -> None:
        self.encoding: Any = None  # tiktoken.Encoding
        if plan is not None:
            import tiktoken

            self.encoding = tiktoken.Encoding(
                name="freqlab", pat_str=plan.pat_str, mergeable_ranks=plan.mergeable_ranks, special_tokens={}
            )
        self.added_tokens = literal_search_regex(plan.added_contents) if plan and plan.added_contents else None
        self._hf_json = hf_json
        self._hf = hf
        self._lock = threading.Lock()

    @property
    def hf(self) -> Any:
        """The ``tokenizers.Tokenizer`` (built from the JSON on first access)."""
        if self._hf is None and self._hf_json is not None:
            with self._lock:
                if self._hf is None:
                    self._hf = hf_tokenizer_from_str(self._hf_json)
        return self._hf


def hf_tokenizer_from_str(json_text: str):
    """A ``tokenizers.Tokenizer`` from its JSON, with truncation and padding off (counts are full lengths)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(json_text)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


_BUILT_LOCK = threading.Lock()
_BUILT: dict[str, Encoders] = {}  # fingerprint -> encoders, per process (a worker unpickles many copies)


def _restore_counter(fingerprint: str, state: dict) -> TokenCounter:
    with _BUILT_LOCK:
        encoders = _BUILT.get(fingerprint)
        if encoders is None:
            encoders = Encoders(state["plan"], state["hf_json"])
            _BUILT[fingerprint] = encoders
    counter = TokenCounter(**state, _encoders=encoders)
    counter._fingerprint = fingerprint
    return counter
