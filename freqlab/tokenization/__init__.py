"""Exact token counts per document, fast: built-in Tekken, ``tokenizer.json``, ``.tiktoken``, SentencePiece
``.model`` files, hub ids; counted by the fastest backend verified against the tokenizer's own implementation.

>>> from freqlab.tokenization import load_tokenizer
>>> counter = load_tokenizer()  # Mistral Tekken, offline
>>> counter.count(["Hello world", "Bonjour le monde"]).tolist()
[2, 4]
"""

from freqlab.tokenization.backends import (
    BACKEND_FASTOKENS,
    BACKEND_HF,
    BACKEND_SENTENCEPIECE,
    BACKEND_TIKTOKEN,
    FASTEST_FIRST,
    single_threaded,
)
from freqlab.tokenization.builtin import BUILTIN_TOKENIZERS, DEFAULT_TOKENIZER
from freqlab.tokenization.counter import TokenCounter
from freqlab.tokenization.load import load_tokenizer

__all__ = [
    "BACKEND_FASTOKENS",
    "BACKEND_HF",
    "BACKEND_SENTENCEPIECE",
    "BACKEND_TIKTOKEN",
    "BUILTIN_TOKENIZERS",
    "DEFAULT_TOKENIZER",
    "FASTEST_FIRST",
    "TokenCounter",
    "load_tokenizer",
    "single_threaded",
]
