"""SentencePiece ``.model`` files: real Mistral / Llama-2-style vocabularies, counted exactly like ``sentencepiece``.

Fixtures are the SentencePiece models shipped in mistral-common: ``tokenizer.model.v1`` (Mistral 7B v0.1,
Llama-2 style, 32,000 pieces) and ``mistral_instruct_tokenizer_240323.model.v3`` (32,768 pieces, with
user-defined ``[REFERENCE_DOC_n]`` pieces).
"""

from __future__ import annotations

import io
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from freqlab.errors import FreqlabError
from freqlab.resources import binary_bytes
from freqlab.tokenization import load_tokenizer
from freqlab.tokenization.sentencepiece import parse_sentencepiece_model

from .textsource import NON_ASCII, stdlib_documents, stdlib_modules

TEXTS = [*stdlib_documents(31, 300, max_chars=1500), *NON_ASCII, "", " ", "  two leading", "tab\tand\nnewline  "]


def mistral_model(name: str) -> Path:
    return Path(str(resources.files("mistral_common").joinpath(f"data/{name}")))


V1 = mistral_model("tokenizer.model.v1")
V3 = mistral_model("mistral_instruct_tokenizer_240323.model.v3")


def sp_counts(path: Path, texts, **options) -> list[int]:
    processor = spm.SentencePieceProcessor(model_file=str(path))
    return [len(ids) for ids in processor.encode(list(texts), **options)]


@pytest.fixture(scope="module")
def v1():
    return load_tokenizer(str(V1))


@pytest.mark.parametrize("path", [V1, V3])
def test_reader_agrees_with_the_protobuf_definition(path):
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(path.read_bytes())
    model = parse_sentencepiece_model(path.read_bytes())
    assert model.pieces == tuple(p.piece for p in proto.pieces)
    assert model.scores == tuple(p.score for p in proto.pieces)
    assert model.types == tuple(p.type for p in proto.pieces)
    spec, norm = proto.trainer_spec, proto.normalizer_spec
    assert (model.model_type, model.byte_fallback, model.bos_id, model.eos_id) == (
        spec.model_type, spec.byte_fallback, spec.bos_id, spec.eos_id,
    )  # fmt: skip
    assert (model.add_dummy_prefix, model.remove_extra_whitespaces, model.normalizer_name) == (
        norm.add_dummy_prefix, norm.remove_extra_whitespaces, norm.name,
    )  # fmt: skip


def test_llama2_style_model_runs_on_fastokens_with_sentencepiece_counts(v1):
    assert v1.backends == ("fastokens", "hf-tokenizers", "sentencepiece")
    assert v1.vocab_size == 32_000
    assert v1.fallback_reasons == {"tiktoken": "a SentencePiece model is not byte-level BPE"}
    expected = sp_counts(V1, TEXTS)
    assert v1.count(TEXTS).tolist() == expected
    assert sum(expected) > 100_000


@pytest.mark.parametrize("backend", ["fastokens", "hf-tokenizers"])
def test_each_converted_backend_alone_counts_like_sentencepiece(v1, backend):
    texts = stdlib_modules(40, 30)  # whole files: indentation runs, "▁▁▁▁" pieces, byte fallback
    assert v1.counts_by(backend, texts).tolist() == sp_counts(V1, texts)


def test_add_special_tokens_counts_bos_and_eos():
    counter = load_tokenizer(str(V1), add_special_tokens=True)
    assert counter.special_tokens_added == 2
    texts = TEXTS[:50]
    assert counter.count(texts).tolist() == sp_counts(V1, texts, add_bos=True, add_eos=True)


def test_user_defined_pieces_are_counted_by_sentencepiece():
    counter = load_tokenizer(str(V3))
    assert counter.backend == "fastokens" and "[REFERENCE_DOC_1]" in counter.routed
    texts = ["see [REFERENCE_DOC_1] and [REFERENCE_DOC_12]", "no reference", "[INST] stays text [/INST]"]
    expected = sp_counts(V3, texts)
    assert counter.count(texts).tolist() == expected
    assert expected[0] < sp_counts(V3, ["see [REFERENCE_DOC_ 1] and [REFERENCE_DOC_ 12]"])[0]  # one piece each


def trained_with_user_defined(path: Path, symbols: list[str]) -> Path:
    """A SentencePiece BPE model (identity normalization, spaces kept) with ``symbols`` user-defined, at ``path``."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(stdlib_documents(5, 600, max_chars=400)),
        model_writer=model,
        model_type="bpe",
        vocab_size=1000,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        byte_fallback=True,
        user_defined_symbols=symbols,
        minloglevel=2,
    )
    path.write_bytes(model.getvalue())
    return path


def test_user_defined_pieces_holding_the_space_mark_are_found_where_sentencepiece_finds_them(tmp_path):
    """SentencePiece matches user-defined pieces on its normalized text, where each space is ``▁`` and a ``▁`` comes
    first: ``▁qz▁x`` is in ``a qz x b``, ``a qz▁x`` and, at the start, ``qz▁x``. Looked for as written, such texts
    stayed on fastokens (3 tokens for ``qzx`` where SentencePiece has 1 piece ``▁qzx``); they go to the reference."""
    path = trained_with_user_defined(tmp_path / "user.model", ["\u2581qzx", "qq\u2581", "\u2581qz\u2581x"])
    counter = load_tokenizer(str(path))
    assert counter.backend == "fastokens"
    assert {"qzx", " qzx", "qq ", "qq\u2581", "qz\u2581x", " qz x"} <= set(counter.routed)
    texts = ["qzx", "a qzx b", "xqq z", "a\u2581qzx", "qz\u2581x", "a qz x b", "qz x", "no such piece"]
    assert counter.count(texts).tolist() == sp_counts(path, texts)
    assert sp_counts(path, ["qzx", "qz\u2581x"]) == [1, 1]


def test_a_user_defined_piece_of_spaces_leaves_the_model_to_sentencepiece(tmp_path):
    """``▁▁`` is in nearly every text once spaces are ``▁`` (a text starting with a space, two spaces): no string
    finds those texts, so fastokens and Hugging Face are refused, saying why, and SentencePiece counts."""
    path = trained_with_user_defined(tmp_path / "spaces.model", ["\u2581\u2581", "\u2581qzx"])
    counter = load_tokenizer(str(path))
    assert counter.backends == ("sentencepiece",)
    assert "user-defined piece '▁▁' is made of spaces" in counter.fallback_reason
    texts = ["\u2581hello", " hello", "a  b", "\u2581", "plain"]
    assert counter.count(texts).tolist() == sp_counts(path, texts)


def test_lone_surrogates_follow_the_tiktoken_rule(v1):
    assert v1.count(["a \ud800 b"]).tolist() == sp_counts(V1, ["a \ufffd b"])


def test_unigram_model_is_counted_by_sentencepiece_itself(tmp_path):
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(stdlib_documents(3, 400, max_chars=400)),
        model_writer=model,
        vocab_size=300,
        model_type="unigram",
    )
    path = tmp_path / "unigram.model"
    path.write_bytes(model.getvalue())
    counter = load_tokenizer(str(path))
    assert counter.backends == ("sentencepiece",)
    assert counter.fallback_reasons["fastokens"] == "SentencePiece unigram model, not BPE"
    assert counter.count(TEXTS[:50]).tolist() == sp_counts(path, TEXTS[:50])


def test_sentencepiece_is_required_to_verify(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "sentencepiece", None)
    with pytest.raises(FreqlabError, match=r"pip install 'freqlab\[sentencepiece\]'") as info:
        load_tokenizer(str(V1))
    assert str(V1) in str(info.value)


def test_a_file_that_is_no_model_names_the_file(tmp_path):
    path = tmp_path / "broken.model"
    path.write_bytes(b"\x0a\xff\xff\xff")
    with pytest.raises(FreqlabError, match="not a SentencePiece model") as info:
        load_tokenizer(str(path))
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_counts_are_int64_and_match_on_a_long_document(v1):
    text = "".join(stdlib_modules(60, 20))
    got = v1.count([text])
    assert got.dtype == np.int64 and got.tolist() == sp_counts(V1, [text])


@pytest.mark.parametrize(
    ("size", "chosen"),
    [(1 << 18, "hf-tokenizers"), (53 << 20, "fastokens")],  # Hugging Face's break-even is ~0.5 MiB (throughput.json)
)
def test_a_small_scan_keeps_fastokens_when_the_next_backend_is_not_tiktoken(size, chosen):
    """The small-scan rule weighs fastokens' start-up against the backend that would count instead: for a
    SentencePiece model that is Hugging Face ``tokenizers`` (tiktoken cannot run it), ~100x slower than fastokens,
    so a 53 MiB scan (issue 22: 47 s on Hugging Face) runs on fastokens; only a tiny one skips it."""
    from freqlab.scan.driver import small_scan_rule

    counter = load_tokenizer(str(V1), fastokens_rule=small_scan_rule(size))
    assert counter.backend == chosen
    assert counter.count(TEXTS).tolist() == sp_counts(V1, TEXTS)
    if chosen == "hf-tokenizers":
        reason = counter.fallback_reasons["fastokens"]
        assert reason.startswith(f"not tried for a small scan (an estimated {binary_bytes(size)} of text")
        assert "fastokens" not in counter._engines._built  # neither built nor verified


def _with_pieces(path: Path, out: Path, extra: list[tuple[str, float, int]]) -> Path:
    """The model at ``path`` with ``extra`` pieces (piece, score, type) appended, as a vocabulary extension does."""
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(path.read_bytes())
    for piece, score, kind in extra:
        added = proto.pieces.add()
        added.piece, added.score, added.type = piece, score, kind
    out.write_bytes(proto.SerializeToString())
    return out


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        # SentencePiece merges the leftmost pair of equal score ('qjx': 3 pieces), the merge list 'jx' first (2)
        ([("jx", 0.0, 1), ("qj", 0.0, 1), ("xk", 0.0, 1)], "'jx' share a score: SentencePiece merges the leftmost"),
        # an UNUSED piece is merged into and split again by SentencePiece ('qjxk': 5), left out of the merges (3)
        ([("qj", 0.0, 5), ("jx", -0.5, 1)], "UNUSED piece 'qj': SentencePiece merges into it and splits it again"),
    ],
    ids=["tied-scores", "unused-piece"],
)
def test_a_model_the_merge_list_cannot_follow_is_counted_by_sentencepiece(tmp_path, extra, why):
    path = _with_pieces(trained_with_user_defined(tmp_path / "base.model", []), tmp_path / "extended.model", extra)
    counter = load_tokenizer(str(path))
    assert counter.backends == ("sentencepiece",) and why in counter.fallback_reason
    texts = ["qjx", "xqjxkq", "qjxk", "a qjx b"]
    assert counter.count(texts).tolist() == sp_counts(path, texts)
