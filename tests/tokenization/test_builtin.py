"""Built-in Tekken: identical counts to mistral-common's own ``Tekkenizer`` on real text."""

from __future__ import annotations

import pickle
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from mistral_common.tokens.tokenizers.tekken import Tekkenizer

from freqlab.tokenization import BUILTIN_TOKENIZERS, load_tokenizer
from freqlab.tokenization.builtin import _LEGACY_TEKKEN_SPECIALS, builtin_path, read_tokenizer_bytes

from .textsource import NON_ASCII, stdlib_modules

TEXTS = [*stdlib_modules(0, 200), *NON_ASCII, "", " ", "\n"]


@pytest.fixture(scope="module")
def tekken():
    return load_tokenizer()


def mistral_common_file(name: str) -> Path:
    return Path(str(resources.files("mistral_common").joinpath(f"data/{name}")))


@pytest.fixture(scope="module")
def reference():
    return Tekkenizer.from_file(mistral_common_file("tekken_240911.json"))


@pytest.mark.parametrize("name", ["tekken-240911", "tekken-240718"])
def test_the_shipped_tekken_files_are_mistral_commons_byte_for_byte(name):
    """freqlab ships mistral-common's Tekken files zstd-compressed (the default job then needs no mistral-common)."""
    shipped = builtin_path(name)
    assert shipped.name.endswith(".json.zst") and shipped.stat().st_size < 2_000_000
    original = mistral_common_file(f"tekken_{name.split('-')[1]}.json").read_bytes()
    assert read_tokenizer_bytes(shipped) == original


def test_default_is_tekken_on_fastokens_verified_against_tiktoken(tekken):
    assert tekken.name == "tekken"
    assert tekken.spec == "tekken"
    assert tekken.backends == ("fastokens", "tiktoken")  # tiktoken is Tekkenizer's own engine: the reference
    assert tekken.backend == "fastokens"
    assert tekken.vocab_size == 131_072
    assert tekken.fallback_reason is None and tekken.fallback_reasons == {}
    assert tekken.add_special_tokens is False


@pytest.mark.parametrize("backend", ["fastokens", "tiktoken"])
def test_each_backend_alone_counts_like_tekkenizer(tekken, reference, backend):
    texts = TEXTS[:60]
    expected = [len(reference.encode(t, bos=False, eos=False)) for t in texts]
    assert tekken.counts_by(backend, texts).tolist() == expected


def test_counts_equal_tekkenizer_on_200_stdlib_modules(tekken, reference):
    expected = np.array([len(reference.encode(t, bos=False, eos=False)) for t in TEXTS], dtype=np.int64)
    got = tekken.count(TEXTS)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)
    assert got.sum() > 700_000  # it really was 200 modules of real code


def test_special_tokens_are_bos_and_eos(reference):
    counter = load_tokenizer("tekken", add_special_tokens=True)
    texts = TEXTS[:20]
    expected = [len(reference.encode(t, bos=True, eos=True)) for t in texts]
    assert counter.count(texts).tolist() == expected
    assert counter.special_tokens_added == 2
    assert counter.count([""]).tolist() == [2]


def test_ranks_and_special_offset_match_tekkenizer(tekken, reference):
    # Ordinary token ids are rank + 1000 in Tekken; the counter uses the same 130,072 ranks.
    assert reference.num_special_tokens == 1000
    assert tekken.plan.mergeable_ranks == reference._model._mergeable_ranks
    assert tekken.plan.pat_str == reference._model._pat_str
    ids = reference.encode("Hello world", bos=False, eos=False)
    assert min(ids) >= 1000
    assert len(ids) == tekken.count_one("Hello world") == 2


def test_legacy_special_token_names_match_mistral_common():
    assert [str(t["token_str"].value) for t in Tekkenizer.DEPRECATED_SPECIAL_TOKENS] == list(_LEGACY_TEKKEN_SPECIALS)


def test_vocab_hash_is_stable(tekken):
    assert tekken.vocab_hash == "7d3d79c97d909d41"  # a change here means a different vocabulary
    # The 240718 and 240911 releases share vocabulary and regex (they differ in image settings only).
    assert load_tokenizer("tekken-240718").vocab_hash == tekken.vocab_hash
    assert set(BUILTIN_TOKENIZERS) >= {"tekken", "tekken-240911", "tekken-240718"}


def test_long_document_uses_bounded_memory_path_with_same_count(tekken, reference):
    text = "".join(TEXTS[:40])
    text = (text * (1_100_000 // len(text) + 1))[:1_100_000]  # > 1M chars: the numpy buffer path
    assert tekken.count_one(text) == len(reference.encode(text, bos=False, eos=False))


def test_pickle_round_trip_counts_identically(tekken):
    clone = pickle.loads(pickle.dumps(tekken))
    assert (clone.name, clone.spec, clone.vocab_hash, clone.backend) == (
        tekken.name,
        tekken.spec,
        tekken.vocab_hash,
        tekken.backend,
    )
    np.testing.assert_array_equal(clone.count(TEXTS[:10]), tekken.count(TEXTS[:10]))


def test_pickle_rebuilds_in_a_fresh_process_cache(tekken, monkeypatch):
    from freqlab.tokenization import counter as counter_module

    payload = pickle.dumps(tekken)
    monkeypatch.setattr(counter_module, "_BUILT", {})  # as in a new worker process
    clone = pickle.loads(payload)
    assert clone._engines is not tekken._engines
    np.testing.assert_array_equal(clone.count(TEXTS[:10]), tekken.count(TEXTS[:10]))


def write_small_tekken(path, *, vocab_first: bool) -> None:
    """A tiny Tekken file: 256 bytes + "ab", "abc" used; "abcd", "xy" listed beyond the vocab size (unused)."""
    import base64
    import json

    extra = [b"ab", b"abc", b"abcd", b"xy"]
    vocab = [
        {"rank": i, "token_bytes": base64.b64encode(t).decode(), "token_str": t.decode("latin-1")}
        for i, t in enumerate([bytes([b]) for b in range(256)] + extra)
    ]
    config = {
        "pattern": r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        "num_vocab_tokens": len(vocab),
        "default_vocab_size": 25 + 258,
        "default_num_special_tokens": 25,
        "version": "v3",
    }
    data = {"vocab": vocab, "config": config} if vocab_first else {"config": config, "vocab": vocab}
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("vocab_first", [True, False])
def test_tekken_file_path_with_other_special_count_matches_tekkenizer(tmp_path, vocab_first):
    path = tmp_path / "tekken_small.json"
    write_small_tekken(path, vocab_first=vocab_first)
    counter = load_tokenizer(str(path))
    reference = Tekkenizer.from_file(path)
    texts = ["abcd abc ab xy", "xyxy abcabc", *NON_ASCII]
    assert counter.backends == ("fastokens", "tiktoken") and counter.vocab_size == 283 and counter.name == str(path)
    assert counter.count(texts).tolist() == [len(reference.encode(t, bos=False, eos=False)) for t in texts]
    assert counter.count(["abcd", "xy"]).tolist() == [2, 2]  # "abcd" and "xy" are beyond the vocab size
    assert load_tokenizer(str(path), add_special_tokens=True).count(["abcd"]).tolist() == [
        len(reference.encode("abcd", bos=True, eos=True))
    ]


def test_builtin_file_by_path_is_the_builtin(tekken):
    by_path = load_tokenizer(str(builtin_path("tekken")))
    assert (by_path.vocab_hash, by_path.vocab_size, by_path.backend) == (tekken.vocab_hash, 131_072, "fastokens")
