r"""The four counting backends, fastest first: fastokens, tiktoken, Hugging Face ``tokenizers``, ``sentencepiece``.

Each backend is built from plain data (``tokenizer.json`` text, tiktoken ranks, ``.model`` bytes), never from a
file path, and counts tokens per text *without* special tokens (the counter adds those). A backend may raise
on a document; the counter then counts that document with the next backend (see
:mod:`freqlab.tokenization.counter`). Known hazards, each measured here:

* tiktoken's regex engine (fancy-regex) gives up on a whitespace run of about 10^6 characters
  (``encode`` raises "Max stack size exceeded", ``encode_ordinary`` panics): :class:`TiktokenEngine` encodes a
  text with a whitespace run of 10^5 characters or more on the path that raises, and where it does (or on any
  tiktoken failure) splits the text into the same pieces with the ``regex`` module (same pattern; a tiktoken
  dependency) and BPE-encodes each piece with tiktoken itself. ``regex`` has a newer Unicode table than tiktoken
  and Hugging Face (336 code points of Unicode 16, U+11DE0-U+11DE9 among them, are ``\p{N}`` there only): where a
  backend comes after tiktoken (the reference of a ``tokenizer.json``), the counter gives texts with such runs to
  it (:func:`takes_tiktoken_detour`); where tiktoken is the reference (``.tiktoken`` files, Tekken) and cannot
  count the text itself, the detour's count stands;
* fastokens, Hugging Face and ``sentencepiece`` refuse lone surrogates (not encodable as UTF-8); tiktoken
  joins surrogate pairs and replaces lone ones with U+FFFD: the counter applies that rule
  (:func:`valid_unicode`) to such a document, routes the repaired text afresh (a joined pair may spell an added
  token) and counts it, so every backend counts the same text. :class:`TiktokenEngine` refuses them too, rather
  than repair them itself after its NFC and unseen by the routing.

fastokens spreads a batch over all cores unless ``FASTOKENS_BPE_THREADS=1`` is set before its first encode in
the process; worker processes that already run one per core call :func:`single_threaded` first.
"""

from __future__ import annotations

import base64
import functools
import importlib.metadata
import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from freqlab.fastokens_ahead import JSON as JSON_INPUT
from freqlab.fastokens_ahead import TIKTOKEN as TIKTOKEN_INPUT
from freqlab.fastokens_ahead import build_fastokens
from freqlab.tokenization.bytemap import tiktoken_to_hf_json

BACKEND_FASTOKENS = "fastokens"  # backend name: fastokens (fastest; wheels for Linux, macOS, Windows x86-64)
BACKEND_TIKTOKEN = "tiktoken"  # backend name: tiktoken (byte-level BPE compiled to a tiktoken encoding)
BACKEND_HF = "hf-tokenizers"  # backend name: Hugging Face tokenizers (any tokenizer.json)
BACKEND_SENTENCEPIECE = "sentencepiece"  # backend name: sentencepiece (.model files)
#: The backends in the order they are tried: the first one verified against the tokenizer counts.
FASTEST_FIRST = (BACKEND_FASTOKENS, BACKEND_TIKTOKEN, BACKEND_HF, BACKEND_SENTENCEPIECE)

# Meta's llama3/tokenizer.py (the same regex as Llama 3's tokenizer.json); for its tiktoken-format tokenizer.model.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
    r"\s+(?!\S)|\s+"
)

# tiktoken_ext/openai_public.py, cl100k_base (possessive quantifiers are fine: tiktoken runs its own engine).
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)


# tiktoken_ext/openai_public.py, o200k_base (GPT-4o); pass it as ``pattern=`` for an o200k ranks file.
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

# Patterns fastokens has as tiktoken encodings of its own (Tokenizer.from_tiktoken(encoding=...)).
FASTOKENS_PRESETS = {CL100K_PATTERN: "cl100k_base", O200K_PATTERN: "o200k_base"}

# Above this many characters tiktoken encodes to a numpy uint32 buffer instead of a Python list: a 10M-token
# document then costs 40 MB instead of ~360 MB of int objects. Below it the list path is faster.
_LONG_TEXT_CHARS = 1_000_000
_SURROGATE = re.compile("[\ud800-\udfff]")
# fancy-regex gives up inside one whitespace run of ~10^6 characters: encode_ordinary panics (StackOverflow),
# encode raises "Max stack size exceeded" (measured at 999,999 spaces). Runs a tenth of that are sent
# around it; the detour is exact, so the margin only costs speed on absurd documents.
_LONG_RUN_CHARS = 100_000
_LONG_WHITESPACE_RUN = re.compile(rf"\s{{{_LONG_RUN_CHARS},}}")


def leaves_tiktoken(text: str, nfc: bool) -> bool:
    """Whether tiktoken leaves ``text`` to the backend after it (its reference): a text it would count through its
    detour (:func:`takes_tiktoken_detour`), and, under an NFC normalizer, a text that is not NFC: Python's
    ``unicodedata`` (Unicode 14 on Python 3.11) composes and orders marks that Hugging Face's older tables do not
    know (U+11935 U+11930 is U+11938 to the first only: 4 tokens for 8, a tokenizer fuzzing review), while a text
    already NFC is left as it is by both.

    >>> leaves_tiktoken("e\u0301", nfc=True), leaves_tiktoken("\u00e9", nfc=True), leaves_tiktoken("e\u0301", nfc=False)
    (True, False, False)
    """
    if nfc and not text.isascii() and not unicodedata.is_normalized("NFC", text):
        return True
    return takes_tiktoken_detour(text)


def takes_tiktoken_detour(text: str) -> bool:
    """Whether :class:`TiktokenEngine` counts ``text`` through its detour (a whitespace run of 10^5 characters or
    more): exact but for the ``regex`` module's newer Unicode table, so a counter with a backend after tiktoken
    (its reference) gives such a text to that one.
    """
    return len(text) >= _LONG_RUN_CHARS and _LONG_WHITESPACE_RUN.search(text) is not None


def single_threaded(threads: int = 1) -> None:
    """Keep this process's tokenizer backends on ``threads`` threads (call it in each worker, before the first
    count).

    Sets ``FASTOKENS_BPE_THREADS`` (fastokens reads it at its first encode) and ``RAYON_NUM_THREADS`` (the
    Hugging Face rayon pool), unless already set: a pool of one worker per core must not oversubscribe; a pool
    with fewer shards than cores gives each worker the cores left idle.

    Parameters
    ----------
    threads : int
        Threads per tokenizer backend.
    """
    os.environ.setdefault("FASTOKENS_BPE_THREADS", str(max(1, int(threads))))
    os.environ.setdefault("RAYON_NUM_THREADS", str(max(1, int(threads))))


def fastokens_version() -> str | None:
    """The installed fastokens version, or None when it cannot be imported here."""
    try:
        import fastokens  # noqa: F401
    except ImportError:
        return None
    return _distribution_version("fastokens")


@functools.cache
def _distribution_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def valid_unicode(text: str) -> str:
    r"""``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD (tiktoken's rule).

    >>> valid_unicode("a\ud83d\ude00b\ud800") == "a\U0001f600b\ufffd"
    True
    """
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def is_engine_failure(exc: BaseException) -> bool:
    """True for an exception a backend raised on a text (Rust panics arrive as BaseException subclasses)."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


@dataclass(frozen=True)
class FastokensRanks:
    """The ranks and regex of a :class:`~freqlab.tokenization.counter.TiktokenPlan` for fastokens' tiktoken loader:
    with fastokens' own encoding (``cl100k_base``, ``o200k_base``: its fastest pre-tokenizer) when the pattern
    is that encoding's, else with the plan's pattern. Loads in ~1 s for 130k ranks (a ``tokenizer.json`` export
    of the same ranks: ~4 s).
    """

    plan: Any
    encoding: str | None = None


def fastokens_input(
    source: str | FastokensRanks, exported: bool = False
) -> tuple[str, bytes | str, dict[str, str | None]]:
    """What fastokens is built from (:func:`freqlab.fastokens_ahead.build_fastokens`): ``(kind, body, how)``, the
    ``tokenizer.json`` text, or :class:`FastokensRanks` as a ``.tiktoken`` file's bytes with its encoding or
    pattern (``exported``: as the ``tokenizer.json`` export, which states the merges its loader may refuse to derive).
    """
    if isinstance(source, FastokensRanks) and exported:
        return JSON_INPUT, tiktoken_to_hf_json(source.plan.mergeable_ranks, source.plan.pat_str), {}
    if isinstance(source, FastokensRanks):
        ranks = source.plan.mergeable_ranks
        body = b"".join(base64.b64encode(token) + b" %d\n" % rank for token, rank in ranks.items())
        how = {"encoding": source.encoding} if source.encoding else {"pattern": source.plan.pat_str}
        return TIKTOKEN_INPUT, body, how
    return JSON_INPUT, source, {}


class FastokensEngine:
    """fastokens from ``tokenizer.json`` text or :class:`FastokensRanks`; ``encode_batch_flat`` returns every
    count without Python lists. ``tokenizer``: one built already from the same source (the forkserver's,
    :mod:`freqlab.fastokens_ahead`).
    """

    def __init__(self, source: str | FastokensRanks, tokenizer: Any = None) -> None:
        self.exported = False  # built from the tokenizer.json export of ranks (fastokens_input(exported=True))
        if tokenizer is not None:
            self.tokenizer = tokenizer
            return
        kind, body, how = fastokens_input(source)
        try:
            self.tokenizer = build_fastokens(kind, body, **how)
        except Exception:  # its loader derives merges from ranks and refuses some (Llama 3's
            # tokenizer.model: "did not decompose into 2 pieces"); the tokenizer.json export states them
            if not isinstance(source, FastokensRanks):
                raise
            kind, body, how = fastokens_input(source, exported=True)
            self.tokenizer = build_fastokens(kind, body, **how)
            self.exported = True

    def counts(self, texts: Sequence[str], threads: int = 1) -> np.ndarray:
        """Token counts of ``texts``, int64."""
        _, offsets = self.tokenizer.encode_batch_flat(list(texts), add_special_tokens=False)
        ends = np.frombuffer(offsets, dtype="<u8")
        if ends.size != len(texts) + 1:
            raise RuntimeError(f"fastokens returned {ends.size} offsets for {len(texts)} texts")
        return np.diff(ends).astype(np.int64)


class TiktokenEngine:
    """tiktoken with a :class:`~freqlab.tokenization.counter.TiktokenPlan` (ranks, regex, NFC, prefix space)."""

    def __init__(self, plan: Any) -> None:
        import tiktoken

        self.plan = plan
        self.encoding = tiktoken.Encoding(
            name="freqlab", pat_str=plan.pat_str, mergeable_ranks=plan.mergeable_ranks, special_tokens={}
        )

    def prepare(self, text: str) -> str:
        """The text tiktoken sees: NFC-normalized and space-prefixed when the plan says so."""
        if self.plan.nfc and not unicodedata.is_normalized("NFC", text):
            text = unicodedata.normalize("NFC", text)
        if self.plan.prefix_space and text and not text.startswith(" "):
            text = " " + text  # ByteLevel(add_prefix_space=True): Hugging Face adds it to non-empty text only
        return text

    def counts(self, texts: Sequence[str], threads: int = 1) -> np.ndarray:
        """Token counts of ``texts``, int64."""
        out = np.empty(len(texts), dtype=np.int64)
        encode = self.encoding.encode_ordinary
        for i, text in enumerate(texts):
            if not text.isascii() and _SURROGATE.search(text):  # the counter repairs it (see above)
                raise ValueError(f"text #{i} holds surrogates")
            text = self.prepare(text)
            if takes_tiktoken_detour(text):  # the buffer path raises at fancy-regex's limit, where the list path panics
                try:
                    out[i] = len(self.encoding.encode_to_numpy(text, disallowed_special=()))
                except ValueError:  # "Max stack size exceeded": a run of ~10^6 whitespace characters
                    out[i] = self.count_by_pieces(text)
                continue
            try:
                if len(text) > _LONG_TEXT_CHARS:
                    out[i] = len(self.encoding.encode_to_numpy(text, disallowed_special=()))
                else:
                    out[i] = len(encode(text))
            except BaseException as exc:
                if not is_engine_failure(exc):
                    raise
                out[i] = self.count_by_pieces(text)  # any other regex failure: the same exact detour
        return out

    def count_by_pieces(self, text: str) -> int:
        """tiktoken's count without its regex engine: the pattern's pieces (``regex`` module), each BPE-encoded
        by tiktoken. Used when fancy-regex hits its backtracking limit (whitespace runs over 10^6 chars).
        """
        encode_piece = self.encoding._encode_single_piece  # BPE of one piece, no regex split
        pieces = compiled_pattern(self.plan.pat_str).findall(text)
        return sum(len(encode_piece(piece.encode("utf-8"))) for piece in pieces)


@functools.lru_cache(maxsize=16)
def compiled_pattern(pattern: str):
    """``pattern`` compiled by the ``regex`` module (tiktoken's dependency), cached: the one compiler of the regexes
    freqlab reads itself (the detour's pieces, preset comparisons, checks of a pattern).
    """
    import regex

    return regex.compile(pattern)


def empty_match(pattern: str) -> str | None:
    r"""Where ``pattern`` can match the empty string, on which tiktoken's splitter panics (a Rust backtrace on
    stderr): ``in 'a'`` for a short text where the ``regex`` module finds such a match, else ``by its structure``
    when its shortest match is 0 characters (Python's own regex parser, foreign escapes read as what they match:
    :func:`_python_spelling`; a lookahead alone, ``(?=x)``, needs the text it looks for); None when neither finds
    one.

    >>> empty_match("a*"), empty_match(r"(?=x)|\p{L}+"), empty_match(r"(?=x)|\x{41}+"), empty_match(r"\p{L}+|\s+")
    ("in ''", 'by its structure', 'by its structure', None)
    """
    import regex

    try:
        compiled = compiled_pattern(pattern)
    except regex.error:  # a spelling of tiktoken's engine, not this one's (\x{41}): the structure alone decides
        compiled = None
    for text in ("", "a", " ", "1", "\n", "a b", ".", "é") if compiled is not None else ():
        if any(match.end() == match.start() for match in compiled.finditer(text)):
            return f"in {text!r}"
    try:
        from re import _parser  # type: ignore[attr-defined]  # Python 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse as _parser  # type: ignore[no-redef]
    try:
        shortest = _parser.parse(_python_spelling(pattern)).getwidth()[0]
    except (re.error, ValueError, OverflowError, RecursionError):
        return None
    return "by its structure" if shortest == 0 else None


#: Oniguruma / fancy-regex escapes Python's parser refuses, as what they match for the shortest-match count: one
#: character (\p{..}, \x{..}, \h, \R, \X, \e, \o{..}) or none (\G, \z, \K, a named backreference, which may be
#: empty: counted so, the check errs towards leaving tiktoken out)
_FOREIGN_ESCAPES = re.compile(
    r"\\\\"  # an escaped backslash, kept: the letter after it is no escape
    r"|\\(?:[pP](?:\{[^}]*\}|[A-Za-z])|x\{[0-9A-Fa-f]+\}|o\{[0-7]+\}|[hHRXe])"  # one character
    r"|\\(?:[GzK]|k<[^>]*>)"  # none
)


_AS_PYTHON = {"\\": "\\\\", "G": "", "z": "", "K": "", "k": ""}  # escapes not read as one character


def _python_spelling(pattern: str) -> str:
    r"""``pattern`` as Python's ``re`` parser reads it, for its shortest match: foreign escapes as one character or
    none (:data:`_FOREIGN_ESCAPES`), ``(?<name>..)`` as ``(?P<name>..)``.

    >>> _python_spelling(r"(?<g>\p{L}+)|\x{41}\h|\G"), _python_spelling(r"\\h+")
    ('(?P<g>x+)|xx|', '\\\\h+')
    """
    spelled = _FOREIGN_ESCAPES.sub(lambda m: _AS_PYTHON.get(m.group(0)[1], "x"), pattern)
    return re.sub(r"\(\?<(?![=!])", "(?P<", spelled)


class HfEngine:
    """Hugging Face ``tokenizers``; ``threads > 1`` uses ``encode_batch`` on its rayon pool."""

    def __init__(self, json_text: str, tokenizer: Any = None) -> None:
        self.tokenizer = tokenizer if tokenizer is not None else hf_tokenizer_from_str(json_text)

    def counts(self, texts: Sequence[str], threads: int = 1) -> np.ndarray:
        """Token counts of ``texts``, int64."""
        if threads > 1:
            encode_batch = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
            return np.array([len(e) for e in encode_batch(list(texts), add_special_tokens=False)], dtype=np.int64)
        encode = self.tokenizer.encode
        return np.array([len(encode(text, add_special_tokens=False)) for text in texts], dtype=np.int64)


def hf_tokenizer_from_str(json_text: str):
    """A ``tokenizers.Tokenizer`` from its JSON, with truncation and padding off (counts are full lengths)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(json_text)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class SentencePieceEngine:
    """The ``sentencepiece`` library on a serialized ``.model`` (the reference for SentencePiece models)."""

    def __init__(self, model: bytes) -> None:
        import sentencepiece

        self.processor = sentencepiece.SentencePieceProcessor(model_proto=model)

    def counts(self, texts: Sequence[str], threads: int = 1) -> np.ndarray:
        """Token counts of ``texts``, int64."""
        return np.array([len(ids) for ids in self.processor.encode(list(texts))], dtype=np.int64)


ENGINES = {
    BACKEND_FASTOKENS: FastokensEngine,
    BACKEND_TIKTOKEN: TiktokenEngine,
    BACKEND_HF: HfEngine,
    BACKEND_SENTENCEPIECE: SentencePieceEngine,
}
