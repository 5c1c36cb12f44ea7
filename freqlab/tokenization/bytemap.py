"""GPT-2's byte <-> unicode map of byte-level BPE vocabularies, and the ``tokenizer.json`` of tiktoken ranks.

Imports nothing of freqlab's: :mod:`~freqlab.tokenization.backends` (fastokens' fallback loader),
:mod:`~freqlab.tokenization.bytelevel` and :mod:`~freqlab.tokenization.export` (which re-export these names) sit
above it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence


@functools.lru_cache(maxsize=1)
def unicode_to_byte() -> dict[str, int]:
    """Inverse of GPT-2's ``bytes_to_unicode``: printable stand-in character -> byte value."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    mapping = {chr(b): b for b in printable}
    n = 0
    for b in range(256):
        if b not in printable:
            mapping[chr(256 + n)] = b
            n += 1
    return mapping


@functools.lru_cache(maxsize=1)
def _to_latin1_table() -> dict[int, int]:
    # stand-in char -> its byte as a Latin-1 code point; any other char <= 255 -> U+FFFF (fails to encode)
    table = dict.fromkeys(range(256), 0xFFFF)
    table.update({ord(ch): b for ch, b in unicode_to_byte().items()})
    return table


def token_bytes(token: str) -> bytes:
    """Bytes of a byte-level vocabulary string (``"Ġhello"`` -> ``b" hello"``); KeyError if not byte-level.

    >>> token_bytes("Ġhello")
    b' hello'
    """
    try:
        return token.translate(_to_latin1_table()).encode("latin-1")
    except UnicodeEncodeError as exc:
        raise KeyError(token[exc.start]) from None  # translate keeps positions: one char per char


def bytes_to_text(token: bytes) -> str:
    """Inverse of :func:`token_bytes`: ``b" hello"`` -> ``"Ġhello"``."""
    return token.decode("latin-1").translate(_from_latin1_table())


@functools.lru_cache(maxsize=1)
def _from_latin1_table() -> dict[int, str]:
    return {b: ch for ch, b in unicode_to_byte().items()}


def tiktoken_to_hf_json(
    mergeable_ranks: Mapping[bytes, int],
    pattern: str,
    *,
    special_tokens: Sequence[str] = (),
    bos: str | None = None,
    eos: str | None = None,
) -> str:
    """``tokenizer.json`` text for tiktoken ranks; ``special_tokens[i]`` gets id ``i``, ordinary ids follow.

    ``bos``/``eos`` (special token strings) make ``add_special_tokens=True`` produce ``bos text eos``.
    """
    offset = len(special_tokens)
    by_rank = sorted(mergeable_ranks.items(), key=lambda item: item[1])
    text = {token: bytes_to_text(token) for token, _ in by_rank}  # once per token, not once per merge side
    # Special tokens are vocabulary entries too (ids 0..offset-1), referenced by the added tokens below.
    vocab = {special: i for i, special in enumerate(special_tokens)}
    for token, rank in by_rank:
        if vocab.setdefault(text[token], rank + offset) != rank + offset:
            raise ValueError(f"ordinary token {token!r} has the text of a special token")
    merges: list[list[str]] = []
    for token, _rank in by_rank:
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in text and right in text:
                merges.append([text[left], text[right]])
    flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
    added = [{"id": i, "content": s, **flags} for i, s in enumerate(special_tokens)]
    template: list[dict] = [{"SpecialToken": {"id": bos, "type_id": 0}}] if bos else []
    template.append({"Sequence": {"id": "A", "type_id": 0}})
    template += [{"SpecialToken": {"id": eos, "type_id": 0}}] if eos else []
    post_processor = None
    if bos or eos:
        post_processor = {
            "type": "TemplateProcessing",
            "single": template,
            "pair": template,
            "special_tokens": {s: {"id": s, "ids": [special_tokens.index(s)], "tokens": [s]} for s in (bos, eos) if s},
        }
    config = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        },
        "post_processor": post_processor,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": vocab,
            "merges": merges,
        },
    }
    return json.dumps(config, ensure_ascii=False)
