"""``.tiktoken`` files: tiktoken's BPE ranks format, one ``base64(token bytes) rank`` pair per line.

The format has no regex and no special tokens. The pattern defaults to tiktoken's ``cl100k_base`` regex
(:data:`CL100K_PATTERN`, the one of GPT-3.5/GPT-4); pass ``pattern=`` for other vocabularies (e.g. o200k's).
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from freqlab.errors import FreqlabError
from freqlab.tokenization.backends import (  # noqa: F401  (the patterns live in backends, for verify; importable here)
    CL100K_PATTERN,
    FASTOKENS_PRESETS,
    LLAMA3_PATTERN,
    O200K_PATTERN,
    TiktokenEngine,
    compiled_pattern,
    empty_match,
)
from freqlab.tokenization.counter import TiktokenPlan, TokenCounter, vocab_hash
from freqlab.tokenization.verify import read_loaded, tiktoken_counter

MAX_RANK = 2**32 - 1

LLAMA3_RANKS = 128_000
#: :func:`~freqlab.tokenization.counter.vocab_hash` of Llama 3's 128,000 ranks (its tokenizer.json's ids 0..127999,
#: Hugging Face's and llama.cpp's conversions alike)
LLAMA3_VOCAB_HASH = "80c2c66c166c6897"


def is_tiktoken_file(path: str | Path) -> bool:
    """True when a file starts with a ``<base64 token> <rank>`` line (Llama 3 ships its ranks as ``.model``)."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(1000).split()
    except OSError:
        return False
    return len(first) == 2 and first[1].isdigit() and _is_base64(first[0])


def _is_base64(token: bytes) -> bool:
    try:
        base64.b64decode(token, validate=True)
    except (ValueError, binascii.Error):
        return False
    return True


def read_tiktoken_ranks(path: str | Path) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file; FreqlabError naming the file and line on any malformed line."""
    path = Path(path)
    try:
        lines = read_loaded(path).splitlines()
    except OSError as exc:
        raise FreqlabError(f"{path}: cannot read tokenizer file ({exc.__class__.__name__}: {exc})") from exc
    ranks: dict[bytes, int] = {}
    line_of: dict[bytes, int] = {}  # token -> its line, to name both lines of a duplicate rank
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            token, rank_text = line.split()
            rank, piece = int(rank_text), base64.b64decode(token, validate=True)
        except (ValueError, binascii.Error) as exc:
            raise FreqlabError(f"{path}:{number}: not a '<base64 token> <rank>' line: {line[:60]!r}") from exc
        if not 0 <= rank <= MAX_RANK:  # tiktoken holds ranks as 32-bit unsigned integers
            raise FreqlabError(f"{path}:{number}: rank {rank} out of range (0 to 2**32 - 1)")
        ranks[piece], line_of[piece] = rank, number  # a token given again takes its last rank, as in tiktoken
    if not ranks:
        raise FreqlabError(f"{path}: empty .tiktoken file")
    token_of: dict[int, bytes] = {}
    for piece, rank in ranks.items():
        other = token_of.setdefault(rank, piece)
        if other != piece:
            first, second = sorted((line_of[other], line_of[piece]))
            raise FreqlabError(f"{path}:{second}: rank {rank} given to a second token (first on line {first})")
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise FreqlabError(f"{path}: {len(missing)} single bytes missing (e.g. {missing[0]}); not a byte-level BPE")
    return ranks


def load_tiktoken_file(
    path: str | Path, *, pattern: str | None = None, add_special_tokens: bool = False
) -> TokenCounter:
    """A counter for a ``.tiktoken`` ranks file (spec = the path; a custom ``pattern`` travels by pickle).

    Default pattern: cl100k's for ``.tiktoken`` files; for a tiktoken-format ``.model`` file (Meta ships Llama 3's
    ranks as ``tokenizer.model``) Llama 3's when it has Llama 3's 128,000 ranks, else ``pattern`` is required.
    """
    if add_special_tokens:
        raise FreqlabError(f"{path}: a .tiktoken file defines no special tokens; drop add_special_tokens")
    if pattern is not None and not (isinstance(pattern, str) and pattern):
        raise FreqlabError(f"{path}: pattern must be a non-empty regex, not {pattern!r} (None: the default)")
    ranks = read_tiktoken_ranks(path)
    vocabulary = vocab_hash((rank, token) for token, rank in ranks.items())
    if pattern is None and ".model" in Path(path).suffixes:
        # Llama 3's own ranks, not any 128,000: another model's regex would count wrongly, silently
        if len(ranks) != LLAMA3_RANKS or vocabulary != LLAMA3_VOCAB_HASH:
            what = f"{len(ranks):,} ranks" + (f" of vocabulary {vocabulary}" if len(ranks) == LLAMA3_RANKS else "")
            raise FreqlabError(f"{path}: tiktoken ranks without a regex ({what}, not Llama 3's); pass pattern=")
        pattern = LLAMA3_PATTERN
    plan = TiktokenPlan(pat_str=CL100K_PATTERN if pattern is None else pattern, mergeable_ranks=ranks)
    try:
        engine = TiktokenEngine(plan)  # a regex tiktoken rejects is the user's error, named here
    except ValueError as exc:
        raise FreqlabError(f"{path}: pattern rejected by tiktoken ({exc})") from exc
    empty = empty_match(plan.pat_str)
    if empty is not None:  # tiktoken panics on it (a Rust backtrace, then "range end index 2 out of range")
        raise FreqlabError(f"{path}: the pattern matches the empty string ({empty}): tiktoken cannot split by it")
    return tiktoken_counter(
        plan,
        name=str(path),
        spec=str(path),
        vocab_size=max(ranks.values()) + 1,
        vocab_hash=vocabulary,
        tiktoken_engine=engine,
    )
