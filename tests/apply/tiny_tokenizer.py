"""A tiny byte-level BPE tokenizer trained here on the probe's own text (no download), saved with a model."""

from __future__ import annotations

from pathlib import Path

from tokenizers import ByteLevelBPETokenizer
from transformers import PreTrainedTokenizerFast

from freqlab.apply.probe import FILLER, INSTRUCTION, NEEDLE, QUERY


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    bpe = ByteLevelBPETokenizer()
    text = [INSTRUCTION, FILLER * 4, NEEDLE.format(number=123456), QUERY]
    bpe.train_from_iterator(text, vocab_size=320, min_frequency=1, special_tokens=["<s>", "</s>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>")
    return tokenizer


def save_tiny_model(path: Path, model) -> Path:
    """``model`` (a tiny random causal LM) and the tiny tokenizer in one local directory."""
    model.save_pretrained(path)
    tiny_tokenizer().save_pretrained(path)
    return path
