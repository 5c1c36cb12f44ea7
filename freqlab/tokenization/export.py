"""Export a tiktoken-style vocabulary (e.g. the built-in Tekken) as a Hugging Face ``tokenizer.json``.

Useful to run the same vocabulary through Hugging Face ``tokenizers`` (benchmarks, cross-checks). The export
follows the usual tiktoken -> Hugging Face conversion (as for Llama 3): pre-tokenizer ``Split(pattern,
Isolated)`` + ``ByteLevel(use_regex=False)``; BPE with ``ignore_merges=True``; the merges are *every* split
``(x, y)`` of every token ``t = x + y`` with ``x``, ``y`` in the vocabulary, ordered by ``rank(t)``: tiktoken
merges any adjacent pair whose concatenation is a token, lowest rank first, and so does this merge list.
Special tokens get ids ``0..n-1`` (vocabulary entries and added tokens); ordinary token ``r`` gets ``r + n``.
"""

from __future__ import annotations

from freqlab.tokenization.builtin import builtin_path, read_tekken_json, tekken_plan, tekken_special_tokens
from freqlab.tokenization.bytemap import tiktoken_to_hf_json  # defined in bytemap, below backends (which uses it)


def tekken_to_hf_json(name: str = "tekken") -> str:
    """The built-in Tekken as ``tokenizer.json`` text (ids as in ``Tekkenizer``; BOS/EOS template)."""
    path = builtin_path(name)
    data = read_tekken_json(path)  # read once: the ranks and the special tokens come from the same file
    plan, _, _ = tekken_plan(data, path)
    specials = tekken_special_tokens(data)
    return tiktoken_to_hf_json(plan.mergeable_ranks, plan.pat_str, special_tokens=specials, bos="<s>", eos="</s>")
