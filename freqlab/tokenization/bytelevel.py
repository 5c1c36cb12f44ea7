r"""Compile a Hugging Face byte-level BPE ``tokenizer.json`` into an equivalent tiktoken encoding.

Most modern tokenizers (GPT-2, Llama 3, Qwen 2, Mistral Tekken exports, ...) are byte-level BPE behind a regex
pre-tokenizer, either ``ByteLevel(use_regex=True)`` (the GPT-2 regex) or ``Sequence[Split(regex, Isolated),
ByteLevel(use_regex=False)]``. tiktoken runs the same algorithm 5-7x faster. Both split text with the regex and
BPE-merge each piece independently; they differ in how a merge is chosen:

* Hugging Face merges the adjacent pair with the lowest *merge index* (position in ``merges``);
* tiktoken merges the adjacent pair whose *concatenation* has the lowest rank.

So we give every merge result the rank of its first merge (single bytes get ranks 0..255) and require:

1. every merge ``(a, b)`` has ``a``, ``b`` and ``a + b`` in the vocabulary (byte strings via the GPT-2
   byte<->unicode map; all 256 bytes present);
2. merges producing the same token are contiguous in ``merges`` (converted tiktoken vocabularies list every
   split of a token together), so "lowest merge index" and "lowest result rank" order pairs identically;
3. ``ignore_merges=False``: tiktoken returns a piece that is itself a vocabulary token as one token without
   merging; we check Hugging Face's BPE turns every merge result, as a word, into that single token.
   ``ignore_merges=True`` is that same shortcut in Hugging Face, so then every multi-byte vocabulary token
   must be a merge result (otherwise Hugging Face could emit a token tiktoken cannot);
4. no dropout, no byte fallback, no subword prefix/suffix; normalizer none or NFC (applied with
   ``unicodedata`` before tiktoken); pre-tokenizer exactly one of the two forms above; a regex without
   constructs whose meaning differs between Oniguruma (Hugging Face) and fancy-regex (tiktoken): ``^``/``$``
   (line anchors in Oniguruma, text anchors in fancy-regex), ``\h`` (hex digit vs horizontal space), ``\w``,
   ``\b`` (Oniguruma's word characters exclude the joiner U+200D, Rust's include it), ``\R``,
   ``\X``, ``\K``, ``\G``, ``\Z``, ``\y``, ``\O``, POSIX brackets, and ``{n,m}+`` (Oniguruma:
   ``(X{n,m})+``, so cl100k's ``\p{N}{1,3}+`` keeps a run of digits whole; fancy-regex: possessive, groups
   of three). Possessive ``?+ *+ ++`` and atomic groups mean the same in both engines and are kept;
5. text the regex does not match is a piece of its own in Hugging Face (``Isolated``) but dropped by tiktoken,
   so the pattern gets one more alternative that matches exactly those gaps: ``(?:(?!P)[\s\S])+``.
   It is only reached where ``P`` fails, so it costs nothing on text ``P`` covers.

With ``ignore_merges``, a vocabulary token that is no merge result can only be emitted as a whole pre-token
piece; tokens whose own text the pre-tokenizer always cuts (special tokens stored in ``model.vocab``, the GGUF
layout of Llama 3) can never be one and are left out of the ranks.

Added tokens (special or not) are matched by Hugging Face before pre-tokenization; the counter sends any text
containing one to the Hugging Face tokenizer (exact, rare). These checks are necessary conditions, not a proof
for every vocabulary; ``load_tokenizer`` also compares counts on sample text and falls back on any difference.
"""

from __future__ import annotations

from typing import Any

from freqlab.tokenization.backends import empty_match
from freqlab.tokenization.bytemap import bytes_to_text, token_bytes, unicode_to_byte  # noqa: F401  (importable here)
from freqlab.tokenization.counter import TiktokenPlan

# The regex of ByteLevel(use_regex=True) (tokenizers/src/pre_tokenizers/byte_level.rs) == tiktoken's r50k.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# \w/\b: Oniguruma's word characters exclude Join_Control (U+200D), Rust's include it.
_UNSUPPORTED_ESCAPES = set("hHRXKGZyYOwWbB")


class NotConvertible(Exception):
    """The tokenizer has a feature the tiktoken fast path cannot reproduce exactly (message: which)."""


def added_contents(config: dict[str, Any]) -> tuple[str, ...]:
    """The added tokens' strings of a parsed ``tokenizer.json`` (longest first): texts containing one are
    counted by Hugging Face, which matches them before pre-tokenization with its own rules.
    """
    contents = {t["content"] for t in config.get("added_tokens") or [] if t.get("content")}
    return tuple(sorted(contents, key=lambda s: (-len(s), s)))


SPLIT_OUT_LIMIT = 1024  # more added tokens than this: their texts go to the reference (one regex over all of them
# would cost every position of every text; each is verified at load)


def split_out_contents(config: dict[str, Any]) -> tuple[str, ...]:
    """The added tokens a count may cut a text at itself (:attr:`TokenCounter.split_out`): those Hugging Face
    matches on the raw text in its first pass, before anything else looks at the text (``normalized`` false, no
    ``lstrip``, ``rstrip`` or ``single_word``; a content listed twice takes its last entry's flags, as Hugging Face
    does). Tokens matched on normalized text come in a second pass, inside what the first leaves, so a text holding
    one goes to the reference whole. None above :data:`SPLIT_OUT_LIMIT`. Whether counting around them agrees with
    Hugging Face is verified at load for every one (:func:`freqlab.tokenization.verify.split_texts`).
    """
    last = {t["content"]: t for t in config.get("added_tokens") or [] if t.get("content")}
    plain = tuple(
        content
        for content, t in last.items()
        if t.get("normalized") is False and not any(t.get(flag) for flag in ("lstrip", "rstrip", "single_word"))
    )
    return plain if len(plain) <= SPLIT_OUT_LIMIT else ()


def compile_bytelevel_bpe(config: dict[str, Any], hf_tokenizer: Any) -> TiktokenPlan:
    """Build the tiktoken plan for a parsed ``tokenizer.json`` or raise :class:`NotConvertible` saying why.

    ``hf_tokenizer`` (the loaded ``tokenizers.Tokenizer``) is used for check 3 and the GGUF-layout check only.
    """
    model = config.get("model") or {}
    _check_model(model)
    nfc = _check_normalizer(config.get("normalizer"))
    if nfc:
        _check_normalized_added_tokens(config)
    pattern, prefix_space = _pre_tokenizer_pattern(config.get("pre_tokenizer"))
    _check_pattern(pattern)
    if (empty := empty_match(pattern)) is not None:  # tiktoken's splitter panics on an empty match
        raise NotConvertible(f"the pre-tokenizer regex matches the empty string ({empty}): tiktoken cannot split by it")
    ranks = _ranks_from_merges(model, set(added_contents(config)), hf_tokenizer)
    # Gaps (text P does not match) become pieces, as in Hugging Face's Split(behavior=Isolated).
    pat_str = f"(?:{pattern})|(?:(?!(?:{pattern}))[\\s\\S])+"
    return TiktokenPlan(pat_str=pat_str, mergeable_ranks=ranks, nfc=nfc, prefix_space=prefix_space)


def _check_model(model: dict[str, Any]) -> None:
    if model.get("type") != "BPE":
        raise NotConvertible(f"model is {model.get('type')}, not BPE")
    if model.get("dropout") not in (None, 0, 0.0):
        raise NotConvertible(f"BPE dropout={model.get('dropout')} is random")
    if model.get("byte_fallback"):
        raise NotConvertible("BPE byte_fallback is not byte-level BPE")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise NotConvertible(f"BPE {key}={model[key]!r}")


def _check_normalizer(normalizer: dict[str, Any] | None) -> bool:
    """True when the normalizer is NFC, False when there is none; NotConvertible otherwise."""
    if normalizer is None:
        return False
    steps = normalizer.get("normalizers", []) if normalizer.get("type") == "Sequence" else [normalizer]
    kinds = {step.get("type") for step in steps}
    if not kinds:
        return False
    if kinds != {"NFC"}:
        raise NotConvertible(f"normalizer {'+'.join(sorted(str(k) for k in kinds))} is not supported (only NFC)")
    return True


#: the ASCII characters NFC makes of other text (U+212A KELVIN SIGN -> K, U+037E -> ;, U+1FEF -> `): every other
#: character it makes is beyond ASCII (a sweep of all of Unicode, tests/tokenization)
NFC_MADE_ASCII = frozenset("K;`")


def _check_normalized_added_tokens(config: dict[str, Any]) -> None:
    """NotConvertible when NFC may form a ``normalized`` added token's text from text not holding it (``Se\u0303``
    -> ``Sẽ``, U+212A -> ``K``): Hugging Face matches such a token after normalizing, while the texts held back
    for it are found in the text read; tiktoken would count the token's text as ordinary text.
    """
    for token in config.get("added_tokens") or []:
        content = token.get("content") or ""
        if token.get("normalized") and any(ord(ch) >= 0x80 or ch in NFC_MADE_ASCII for ch in content):
            raise NotConvertible(
                f"the normalized added token {content!r} holds characters NFC may make of other text (any beyond "
                "ASCII, K, ; and `): it cannot be looked for in the text read"
            )


def _pre_tokenizer_pattern(pre: dict[str, Any] | None) -> tuple[str, bool]:
    """(regex, add_prefix_space) of a supported byte-level pre-tokenizer; NotConvertible otherwise."""
    if pre is None:
        raise NotConvertible("no pre-tokenizer (not byte-level BPE)")
    steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    kinds = [step.get("type") for step in steps]
    if kinds == ["ByteLevel"] and steps[0].get("use_regex", True):
        return GPT2_PATTERN, bool(steps[0].get("add_prefix_space", False))
    if kinds == ["Split", "ByteLevel"]:
        split, byte_level = steps
        regex = (split.get("pattern") or {}).get("Regex")
        if regex is None:
            raise NotConvertible("Split on a literal string, not a regex")
        if split.get("behavior") != "Isolated" or split.get("invert"):
            raise NotConvertible(f"Split behavior {split.get('behavior')} invert={split.get('invert')}")
        if byte_level.get("use_regex", True) or byte_level.get("add_prefix_space", False):
            raise NotConvertible("ByteLevel after Split must have use_regex=False and add_prefix_space=False")
        return regex, False
    raise NotConvertible(f"pre-tokenizer {'+'.join(str(k) for k in kinds)} is not supported")


def _check_pattern(pattern: str) -> None:
    """Reject regex constructs that Oniguruma and fancy-regex read differently (see module docstring)."""
    in_class = 0
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            if pattern[i + 1] in _UNSUPPORTED_ESCAPES:
                raise NotConvertible(f"regex escape \\{pattern[i + 1]} differs between regex engines")
            i += 2
            if pattern.startswith("{", i):  # \p{L}, \x{2028}: the braces belong to the escape
                i = pattern.find("}", i) + 1 or len(pattern)
            continue
        if ch == "[":
            if pattern.startswith("[:", i) and in_class:
                raise NotConvertible("POSIX bracket classes differ between regex engines")
            in_class += 1
        elif ch == "]" and in_class:
            in_class -= 1
        elif not in_class and ch in "^$":
            raise NotConvertible(f"regex anchor {ch!r} means line in Oniguruma, text in fancy-regex")
        elif not in_class and ch == "}" and pattern.startswith("+", i + 1):
            raise NotConvertible("regex '{n,m}+' repeats the interval in Oniguruma, is possessive in fancy-regex")
        i += 1


def _merge_pair(merge: Any) -> tuple[str, str]:
    if isinstance(merge, str):
        left, sep, right = merge.partition(" ")
        if not sep:
            raise NotConvertible(f"malformed merge {merge!r}")
        return left, right
    if isinstance(merge, list | tuple) and len(merge) == 2:
        return str(merge[0]), str(merge[1])
    raise NotConvertible(f"malformed merge {merge!r}")


def _ranks_from_merges(model: dict[str, Any], added: set[str], hf_tokenizer: Any) -> dict[bytes, int]:
    vocab: dict[str, int] = model.get("vocab") or {}
    as_bytes: dict[str, bytes] = {}
    for token in vocab:
        try:
            as_bytes[token] = token_bytes(token)
        except KeyError as exc:
            if token not in added:  # added tokens are matched on raw text, they need not be byte-level
                raise NotConvertible(f"vocabulary is not byte-level (token {token!r}, char {exc.args[0]!r})") from None
    ranks: dict[bytes, int] = {}
    singles = {b for b in as_bytes.values() if len(b) == 1}
    if len(singles) != 256:
        raise NotConvertible(f"{256 - len(singles)} of the 256 single bytes are missing from the vocabulary")
    for b in range(256):
        ranks[bytes([b])] = b
    previous: bytes | None = None
    for merge in model.get("merges") or []:
        left, right = _merge_pair(merge)
        result = left + right
        if left not in as_bytes or right not in as_bytes or result not in as_bytes:
            raise NotConvertible(f"merge {left!r} + {right!r} uses a token missing from the vocabulary")
        merged = as_bytes[result]
        if merged in ranks:
            if merged != previous and len(merged) > 1:
                raise NotConvertible(f"merges producing {result!r} are not contiguous: merge order != rank order")
        else:
            ranks[merged] = len(ranks)
        previous = merged
    unreachable = [t for t, b in as_bytes.items() if b not in ranks and t not in added]
    if model.get("ignore_merges"):
        unreachable = [t for t in unreachable if not _never_a_piece(hf_tokenizer, as_bytes[t])]
        if unreachable:
            raise NotConvertible(f"{len(unreachable)} vocabulary tokens (e.g. {unreachable[0]!r}) are no merge result")
    else:
        _check_words_are_tokens(hf_tokenizer, [t for t, b in as_bytes.items() if len(b) > 1 and b in ranks])
    return ranks


# Texts put after a token to see where the pre-tokenizer ends its first piece in context.
_CONTEXTS = ("", " ", "a", "A", "0", ".", "\n", "<", "_", "|>")


def _never_a_piece(hf_tokenizer: Any, token: bytes) -> bool:
    """True when the pre-tokenizer cuts ``token``'s own text before its end, also followed by other text.

    With ``ignore_merges`` Hugging Face emits a vocabulary token that is no merge result only when a whole
    pre-token piece equals it. Special tokens stored in ``model.vocab`` (the GGUF layout, e.g. Llama 3's
    ``<|begin_of_text|>``) are never one: the regex splits ``<|`` off. Such tokens can be left out of the
    ranks; the load-time verification checks the result like any other plan.
    """
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        return False
    pre = hf_tokenizer.pre_tokenizer
    if pre is None or not text:
        return False
    normalizer = hf_tokenizer.normalizer
    for context in _CONTEXTS:
        whole = text + context
        if normalizer is not None:
            whole = normalizer.normalize_str(whole)
        pieces = pre.pre_tokenize_str(whole)
        if not pieces or pieces[0][1][1] >= len(text):  # (piece, (start, end)): the first piece covers the token
            return False
    return True


def _check_words_are_tokens(hf_tokenizer: Any, tokens: list[str]) -> None:
    """Check 3: Hugging Face's BPE maps each merge result, seen as a word, to that one token."""
    model = hf_tokenizer.model
    for token in tokens:
        pieces = model.tokenize(token)
        if len(pieces) != 1:
            raise NotConvertible(
                f"BPE splits vocabulary token {token!r} into {len(pieces)} tokens (tiktoken would not)"
            )
