"""Export a tiktoken-style vocabulary (e.g. the built-in Tekken) as a Hugging Face ``tokenizer.json``.

Useful to run the same vocabulary through Hugging Face ``tokenizers`` (benchmarks, cross-checks). The export
follows the usual tiktoken -> Hugging Face conversion (as for Llama 3): pre-tokenizer ``Split(pattern,
Isolated)`` + ``ByteLevel(use_regex=False)``; BPE with ``ignore_merges=True``; the merges are *every* split
``(x, y)`` of every token ``t = x + y`` with ``x``, ``y`` in the vocabulary, ordered by ``rank(t)``: tiktoken
merges any adjacent pair whose concatenation is a token, lowest rank first, and so does this merge list.
Special tokens get ids ``0..n-1`` (vocabulary entries and added tokens); ordinary token ``r`` gets ``r + n``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from freqlab.tokenize.builtin import builtin_path, read_tekken_json, tekken_plan, tekken_special_tokens
from freqlab.tokenize.bytelevel import bytes_to_text


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


def tekken_to_hf_json(name: str = "tekken") -> str:
    """The built-in Tekken as ``tokenizer.json`` text (ids as in ``Tekkenizer``; BOS/EOS template)."""
    path = builtin_path(name)
    data = read_tekken_json(path)  # read once: the ranks and the special tokens come from the same file
    plan, _, _ = tekken_plan(data, path)
    specials = tekken_special_tokens(data)
    return tiktoken_to_hf_json(plan.mergeable_ranks, plan.pat_str, special_tokens=specials, bos="<s>", eos="</s>")
