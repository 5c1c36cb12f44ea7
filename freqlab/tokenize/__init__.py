"""Exact token counts per document, fast: built-in Tekken, ``tokenizer.json`` files, ``.tiktoken`` files, hub ids.

>>> from freqlab.tokenize import load_tokenizer
>>> counter = load_tokenizer()  # Mistral Tekken, offline
>>> counter.count(["Hello world", "Bonjour le monde"]).tolist()
[2, 4]
"""

from freqlab.tokenize.builtin import BUILTIN_TOKENIZERS, DEFAULT_TOKENIZER
from freqlab.tokenize.counter import BACKEND_HF, BACKEND_TIKTOKEN, TokenCounter
from freqlab.tokenize.load import load_tokenizer

__all__ = [
    "BACKEND_HF",
    "BACKEND_TIKTOKEN",
    "BUILTIN_TOKENIZERS",
    "DEFAULT_TOKENIZER",
    "TokenCounter",
    "load_tokenizer",
]
