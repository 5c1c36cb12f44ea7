"""Shared fixtures for the tokenizer tests."""

from __future__ import annotations

import sys

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from freqlab.tokenization import cache as cache_module
from freqlab.tokenization import verify as verify_module

from .textsource import stdlib_modules


@pytest.fixture
def no_fastokens(monkeypatch):
    """fastokens cannot be imported (as on a platform without its wheel): ``import fastokens`` raises."""
    monkeypatch.setitem(sys.modules, "fastokens", None)


def small_byte_level_bpe(vocab_size: int, modules: int) -> Tokenizer:
    """A GPT-2-style byte-level BPE trained on ``modules`` stdlib sources (fastokens, tiktoken and HF all run it)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(stdlib_modules(7, modules), trainer)
    return tokenizer


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory):
    """A small byte-level BPE tokenizer.json, saved as a file."""
    tokenizer = small_byte_level_bpe(600, 30)
    path = tmp_path_factory.mktemp("cached") / "tokenizer.json"
    tokenizer.save(str(path))
    return path, tokenizer


@pytest.fixture
def cache_on(tmp_path, monkeypatch):
    """The cache in a fresh folder, its statistics at zero, no counter remembered in this process."""
    monkeypatch.delenv("FREQLAB_NO_CACHE", raising=False)
    monkeypatch.setenv("FREQLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache_module, "STATS", {"hits": 0, "misses": 0, "writes": 0})
    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    return tmp_path / "cache" / "tokenizers"
