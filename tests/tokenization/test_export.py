"""Cross-check: the built-in Tekken exported as a Hugging Face tokenizer.json counts like Tekken, on both paths."""

from __future__ import annotations

import numpy as np
import pytest
from tokenizers import Tokenizer

from freqlab.tokenization import load_tokenizer
from freqlab.tokenization.export import tekken_to_hf_json

from .textsource import NON_ASCII, stdlib_documents

TEXTS = [*stdlib_documents(11, 300, max_chars=1000), *NON_ASCII]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = tmp_path_factory.mktemp("tekken") / "tokenizer.json"
    path.write_text(tekken_to_hf_json(), encoding="utf-8")
    return str(path), Tokenizer.from_file(str(path)), load_tokenizer(str(path)), load_tokenizer("tekken")


def hf_counts(tokenizer, texts, add_special_tokens=False):
    return np.array([len(tokenizer.encode(t, add_special_tokens=add_special_tokens)) for t in texts])


def test_export_compiles_back_to_the_same_vocabulary(exported):
    _, _, compiled, builtin = exported
    assert compiled.backends == ("fastokens", "tiktoken", "hf-tokenizers"), compiled.fallback_reasons
    assert compiled.vocab_size == builtin.vocab_size == 131_072
    assert compiled.vocab_hash == builtin.vocab_hash == "7d3d79c97d909d41"


def test_hugging_face_compiled_and_builtin_counts_agree(exported):
    _, reference, compiled, builtin = exported
    expected = hf_counts(reference, TEXTS)
    np.testing.assert_array_equal(compiled.count(TEXTS), expected)
    np.testing.assert_array_equal(builtin.count(TEXTS), expected)


def test_special_token_text_follows_each_tokenizers_rules(exported):
    # Hugging Face matches special tokens in raw text ("<s>" is 1 token); Tekkenizer.encode does not (3 tokens).
    path, reference, compiled, builtin = exported
    text = "states_<s>[<t>]"
    assert compiled.count_one(text) == len(reference.encode(text, add_special_tokens=False)) == 8
    assert builtin.count_one(text) == 9
    with_bos_eos = load_tokenizer(path, add_special_tokens=True)
    assert with_bos_eos.special_tokens_added == 2
    assert with_bos_eos.count_one("Hello world") == len(reference.encode("Hello world", add_special_tokens=True)) == 4
