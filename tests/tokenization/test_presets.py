"""Equivalent pre-tokenizer regexes take fastokens' preset: Llama 3's regex as Hugging Face ships it and as
llama.cpp's converters spell it count alike, both on the preset, confirmed on adversarial text."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

from freqlab.tokenization import load_tokenizer
from freqlab.tokenization import presets as presets_module
from freqlab.tokenization.backends import valid_unicode
from freqlab.tokenization.bytelevel import GPT2_PATTERN
from freqlab.tokenization.presets import (
    CONTRACTIONS_ASCII,
    CONTRACTIONS_FOLDED,
    SEPARATOR_PROBES,
    Preset,
    choose_preset,
    normalise,
    split_regex,
)
from freqlab.tokenization.sample import ADVERSARIAL_TEXTS
from freqlab.tokenization.tiktoken_file import CL100K_PATTERN, LLAMA3_PATTERN, O200K_PATTERN

from .textsource import NON_ASCII, stdlib_documents, stdlib_modules

LLAMA_CPP_PATTERN = LLAMA3_PATTERN.replace(CONTRACTIONS_FOLDED, CONTRACTIONS_ASCII)
HELD_OUT = [*stdlib_documents(2, 400, max_chars=800), *NON_ASCII, *(t for t in ADVERSARIAL_TEXTS if "'ſ" not in t)]


def llama3_style(pattern: str, training: list[str], vocab_size: int = 2500) -> Tokenizer:
    """A byte-level BPE behind ``Split(pattern, isolated)`` (Llama 3's layout), trained on ``training``."""
    tokenizer = Tokenizer(models.BPE(ignore_merges=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])  # fmt: skip
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(training, trainer)
    return tokenizer


def respelled(json_text: str, pattern: str) -> str:
    config = json.loads(json_text)
    config["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = pattern
    return json.dumps(config)


@pytest.fixture(scope="module")
def spellings(tmp_path_factory):
    """The same vocabulary as two tokenizer.json files: Hugging Face's spelling and llama.cpp's."""
    hf_json = llama3_style(LLAMA3_PATTERN, stdlib_modules(1, 120)).to_str()
    folder = tmp_path_factory.mktemp("spellings")
    paths = {}
    for name, pattern in (("hf", LLAMA3_PATTERN), ("llama.cpp", LLAMA_CPP_PATTERN)):
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(respelled(hf_json, pattern), encoding="utf-8")
    return paths


def fastokens_pattern(counter) -> str:
    return split_regex(json.loads(counter.source("fastokens")))[1]


def test_normalise_rewrites_llama_cpp_contractions_to_the_preset_spelling():
    assert normalise(LLAMA_CPP_PATTERN) == LLAMA3_PATTERN
    assert normalise(LLAMA3_PATTERN) == LLAMA3_PATTERN
    assert normalise(r"\s+|'[sS]") == r"\s+|'[sS]"  # a part of the group is not the group


def test_both_spellings_run_on_the_preset_with_identical_counts(spellings):
    counters = {name: load_tokenizer(str(path)) for name, path in spellings.items()}
    counts = {}
    for name, counter in counters.items():
        reference = Tokenizer.from_file(str(spellings[name]))
        assert counter.backend == "fastokens", counter.fallback_reasons
        assert fastokens_pattern(counter) == LLAMA3_PATTERN  # the spelling fastokens runs as its preset
        assert "llama3 (cl100k-style) pre-tokenizer preset" in counter.fastokens_note
        counts[name] = counter.count(HELD_OUT).tolist()
        assert counts[name] == [len(reference.encode(t, add_special_tokens=False)) for t in HELD_OUT]
    assert counts["hf"] == counts["llama.cpp"] and sum(counts["hf"]) > 50_000  # no 'ſ: the spellings agree
    assert "spelled llama.cpp's (?:'[sS]|'[tT]|...)" in counters["llama.cpp"].fastokens_note
    assert "spelled as Hugging Face ships it" in counters["hf"].fastokens_note


def test_the_preset_behaviour_is_fastokens_splitter_on_adversarial_text(spellings):
    """The preset's ``behaviour`` regex (ASCII-case contractions) is what fastokens does: Hugging Face running
    that regex counts every adversarial text like fastokens on its preset."""
    counter = load_tokenizer(str(spellings["hf"]))
    by_behaviour = Tokenizer.from_file(str(spellings["llama.cpp"]))
    texts = [*ADVERSARIAL_TEXTS, "x'ſt", "'ſ'S'ſ"]
    fast = counter.counts_by("fastokens", texts)
    assert fast.tolist() == [len(by_behaviour.encode(t, add_special_tokens=False)) for t in texts]


def test_long_s_after_an_apostrophe_skips_fastokens_only_for_the_case_insensitive_spelling(
    long_s_vocabulary, tmp_path, monkeypatch
):
    """``(?i:'s|...)`` matches ``'ſ`` (U+017F folds to "s") in Hugging Face; fastokens' preset does not. With a
    vocabulary where ``'ſt`` is one token the difference shows in the count: 1 token on the preset, 4 in
    Hugging Face (``'ſ`` and ``t`` are cut apart). The counter sends texts holding ``ſ`` to the next verified
    backend, tiktoken (which runs the file's own regex), never to the reference; fastokens counts the others."""
    texts = ["x'ſt", "a'ſt b'ſt", "hello world's"]
    for name, pattern, routed in (("cpp", LLAMA_CPP_PATTERN, ()), ("hf", LLAMA3_PATTERN, ("ſ",))):
        path = tmp_path / f"{name}.json"
        path.write_text(respelled(long_s_vocabulary, pattern), encoding="utf-8")
        counter = load_tokenizer(str(path))
        reference = Tokenizer.from_file(str(path))
        assert counter.backends == ("fastokens", "tiktoken", "hf-tokenizers") and counter.routed == ()
        assert counter.fastokens_routed == routed
        asked: list[str] = []
        get = counter._engines.get
        monkeypatch.setattr(counter._engines, "get", lambda b, get=get, asked=asked: asked.append(b) or get(b))
        assert counter.count(texts).tolist() == [len(reference.encode(t)) for t in texts]
        assert asked == (["tiktoken", "fastokens"] if routed else ["fastokens"])
    assert counter.counts_by("fastokens", ["'ſt"]).tolist() == [1]  # the preset alone would be wrong
    assert counter.counts_by("tiktoken", ["'ſt"]).tolist() == [4] == [len(reference.encode("'ſt"))]
    assert "texts containing 'ſ' go to tiktoken" in counter.fastokens_note


@pytest.fixture(scope="module")
def long_s_vocabulary() -> str:
    """A Llama-3-style tokenizer.json where ``'ſt`` is one token: fastokens' presets count ``x'ſt`` otherwise."""
    training = ["a'ſt b'ſt c'ſt 'ſt"] * 1000 + ["hello world's it’s"] * 100
    return llama3_style(LLAMA_CPP_PATTERN, training, vocab_size=400).to_str()


@pytest.mark.parametrize("pattern", [LLAMA3_PATTERN, CL100K_PATTERN, O200K_PATTERN], ids=["llama3", "cl100k", "o200k"])
def test_long_s_skips_fastokens_for_tiktoken_ranks_and_for_regexes_fastokens_knows_itself(
    long_s_vocabulary, pattern, tmp_path
):
    """fastokens runs its hand-written cl100k and o200k splitters wherever it meets their regex (a ``.tiktoken``
    file's, a ``tokenizer.json``'s): texts holding ``ſ`` skip it there too, and every count is the reference's."""
    texts = ["x'ſt", "Bu'ſt ok", "a'ſt b'ſt", "hello world's", "'ſ"]
    path = tmp_path / "tokenizer.json"
    path.write_text(respelled(long_s_vocabulary, pattern), encoding="utf-8")
    counter = load_tokenizer(str(path))
    reference = Tokenizer.from_file(str(path))
    assert counter.fastokens_routed[0] == "ſ" and counter.backend == "fastokens"  # cl100k: U+180E too
    assert counter.count(texts).tolist() == [len(reference.encode(t)) for t in texts]
    if counter.plan is None:  # cl100k's possessive quantifiers: no tiktoken backend, the reference counts them
        assert counter.backends == ("fastokens", "hf-tokenizers")
        path.write_text(respelled(long_s_vocabulary, LLAMA3_PATTERN), encoding="utf-8")
        counter = load_tokenizer(str(path))
    ranks = tmp_path / "ranks.tiktoken"  # the same vocabulary as tiktoken ranks (Llama 3's tokenizer.model format)
    ranks.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in counter.plan.mergeable_ranks.items()))
    from_ranks = load_tokenizer(str(ranks), pattern=pattern)
    assert from_ranks.fastokens_routed[0] == "ſ" and from_ranks.backend == "fastokens"  # cl100k: U+180E too
    assert "texts containing 'ſ'" in from_ranks.fastokens_note and "go to tiktoken" in from_ranks.fastokens_note
    assert from_ranks.count(texts).tolist() == from_ranks.counts_by("tiktoken", texts).tolist()
    assert from_ranks.counts_by("fastokens", ["x'ſt"]).tolist() != from_ranks.counts_by("tiktoken", ["x'ſt"]).tolist()


def test_a_mongolian_vowel_separator_skips_fastokens_cl100k_encoding(long_s_vocabulary, tmp_path):
    """fastokens' cl100k splitter takes U+180E for whitespace (the regex does not): texts holding it skip fastokens
    for ranks read with cl100k's regex (a ``.tiktoken`` file's default), and count as tiktoken counts them."""
    json_path = tmp_path / "tokenizer.json"
    json_path.write_text(respelled(long_s_vocabulary, LLAMA3_PATTERN), encoding="utf-8")
    ranks = tmp_path / "ranks.tiktoken"
    plan = load_tokenizer(str(json_path)).plan
    ranks.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in plan.mergeable_ranks.items()))
    counter = load_tokenizer(str(ranks))  # cl100k's regex: fastokens' cl100k_base encoding
    assert counter.backend == "fastokens" and counter.fastokens_routed == ("ſ", "\u180e")
    texts = ["world\u180e's", "hello\u180e'll world", "hello world's"]
    assert counter.count(texts).tolist() == counter.counts_by("tiktoken", texts).tolist()


def test_an_apostrophe_a_normalizer_makes_before_long_s_still_skips_fastokens(long_s_vocabulary, tmp_path):
    """``’ſ`` holds no ``'ſ``, but a normalizer replacing ``’`` by ``'`` makes one: the letter alone is looked for."""
    config = json.loads(long_s_vocabulary)
    config["normalizer"] = {"type": "Replace", "pattern": {"String": "’"}, "content": "'"}
    path = tmp_path / "tokenizer.json"
    path.write_text(respelled(json.dumps(config), LLAMA3_PATTERN), encoding="utf-8")
    counter = load_tokenizer(str(path))
    reference = Tokenizer.from_file(str(path))
    texts = ["x’ſt", "a’ſt b’ſt", "it’s"]
    assert counter.backend == "fastokens" and counter.fastokens_routed == ("ſ",)
    expected = [len(reference.encode(t)) for t in texts]
    assert counter.count(texts).tolist() == expected != counter.counts_by("fastokens", texts).tolist()


def with_normalizer(vocabulary: str, normalizer: dict | None, path, pattern: str = LLAMA3_PATTERN) -> str:
    """``vocabulary`` with ``pattern`` (default: Llama 3's, as Hugging Face spells it) and ``normalizer``, written to
    ``path``."""
    config = json.loads(vocabulary)
    config["normalizer"] = normalizer
    path.write_text(respelled(json.dumps(config), pattern), encoding="utf-8")
    return str(path)


def replace(pattern: str, content: str) -> dict:
    return {"type": "Replace", "pattern": {"String": pattern}, "content": content}


@pytest.mark.parametrize(
    "normalizer, text",
    [
        (replace("Q", "ſ"), "x'Qt"),
        ({"type": "Sequence", "normalizers": [{"type": "NFC"}, replace("é", "ſ")]}, "x'e\u0301t"),  # NFC makes é
        ({"type": "Sequence", "normalizers": [{"type": "Lowercase"}, replace("ab", "Q"), replace("Q", "ſ")]}, "x'abt"),
        ({"type": "Replace", "pattern": {"Regex": "[0-9]q"}, "content": "x'ſ"}, "x'1qt"),
        ({"type": "Prepend", "prepend": "'ſ"}, "t"),
        (replace("\ufffd", "ſ"), "x'\ud800t"),  # the lone surrogate is counted as U+FFFD
    ],
    ids=["one character", "after NFC", "made by a step before", "regex", "prepend", "replacement character"],
)
def test_a_normalizer_that_may_write_long_s_leaves_fastokens_out(long_s_vocabulary, normalizer, text, tmp_path):
    """The regex sees normalized text, the routing the text read: a ``Replace`` writing ``ſ`` for ``Q`` makes
    ``x'Qt`` the ``x'ſt`` fastokens' preset splits otherwise (1 token of ``'ſt`` there, the reference's 4 pieces),
    and which texts become one no literal says (``e`` and U+0301 composed by ``NFC`` first, a ``Q`` another step
    made). fastokens is no candidate for such a file, the reason says why, and every count is the reference's
    (fastokens' 2 for 5 here, before)."""
    path = with_normalizer(long_s_vocabulary, normalizer, tmp_path / "n.json")
    counter = load_tokenizer(path)
    reference = Tokenizer.from_file(path)
    assert "fastokens" not in counter.backends
    kind = normalizer["normalizers"][-1]["type"] if normalizer["type"] == "Sequence" else normalizer["type"]
    assert f"fastokens: not used: the normalizer's {kind} step may write 'ſ'" in counter.fallback_reason
    assert counter.fastokens_note is None  # a note on how fastokens counts, where it does not: none
    texts = [text, "hello world's", "x'ſt"]
    assert counter.count(texts).tolist() == [len(reference.encode(valid_unicode(t))) for t in texts]


@pytest.mark.parametrize(
    "normalizer",
    [
        {"type": "NFC"},  # Qwen2's
        {"type": "Lowercase"},
        replace("’", "'"),  # writes the apostrophe, not the letter: texts holding ſ are routed
        {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, replace(" ", "▁")]},  # Llama 2's
    ],
    ids=["NFC", "Lowercase", "apostrophe", "Llama 2"],
)
def test_a_normalizer_that_never_writes_long_s_keeps_fastokens(long_s_vocabulary, normalizer, tmp_path):
    """NFC composes nothing into ``ſ``, Lowercase maps nothing to it, a Replace or Prepend writing other text
    neither: fastokens stays, texts holding ``ſ`` go past it as without a normalizer."""
    path = with_normalizer(long_s_vocabulary, normalizer, tmp_path / "n.json")
    counter = load_tokenizer(path)
    reference = Tokenizer.from_file(path)
    assert counter.backend == "fastokens" and counter.fastokens_routed == ("ſ",)
    texts = ["x'ſt", "x’ſt a'ſt", "Hello World's", "x'e\u0301t"]
    assert counter.count(texts).tolist() == [len(reference.encode(t)) for t in texts]


def test_a_normalizer_step_fastokens_does_not_take_or_freqlab_does_not_know_may_write_long_s():
    """NFD and BertNormalizer make ``ſ`` of ``ẛ`` (U+1E9B); a step of a type not known here may write anything;
    SentencePiece's Precompiled map by its blob. (fastokens takes only NFC, Lowercase, Prepend, Replace, Sequence.)"""
    from tokenizers import normalizers

    from freqlab.tokenization.presets import normalizer_refusal

    assert "ſ" in normalizers.NFD().normalize_str("\u1e9b") and "ſ" in normalizers.BertNormalizer().normalize_str("ẛ")
    for kind in ("NFD", "BertNormalizer", "FutureStep"):
        assert f"{kind} step may write 'ſ'" in normalizer_refusal({"normalizer": {"type": kind}}, ("ſ",))
    for kind in ("NFC", "NFKC", "NFKD", "Lowercase", "Strip", "StripAccents", "Nmt", "ByteLevel"):
        assert normalizer_refusal({"normalizer": {"type": kind}}, ("ſ",)) is None
    blob = base64.b64encode(b"\x00\x01 s\x00\xc5\xbf\x00").decode()  # holds ſ's UTF-8 among its strings
    step = {"type": "Precompiled", "precompiled_charsmap": blob}
    assert normalizer_refusal({"normalizer": step}, ("ſ",)) is not None
    assert normalizer_refusal({"normalizer": step}, ()) is None  # nothing routed: nothing to refuse


def test_a_text_repaired_of_its_surrogates_is_routed_afresh(long_s_vocabulary, tmp_path, monkeypatch):
    """A text no backend takes as it is (a lone surrogate: fastokens and Hugging Face refuse it; no tiktoken beside
    a Lowercase normalizer) is counted again with U+FFFD in its place: that text goes where routing sends it, never
    back to fastokens when it holds a string routed past it."""
    from freqlab.tokenization.counter import LiteralFinder

    path = with_normalizer(long_s_vocabulary, {"type": "Lowercase"}, tmp_path / "t.json")
    counter = load_tokenizer(path)
    assert counter.backends == ("fastokens", "hf-tokenizers")
    monkeypatch.setattr(counter._engines, "past_fastokens", LiteralFinder(["ſ", "\ufffd"]))
    handed: list[tuple[str, list[str]]] = []
    get = counter._engines.get

    def recording(backend):
        engine = get(backend)

        class Recorded:
            def counts(self, texts, threads):
                handed.append((backend, list(texts)))
                return engine.counts(texts, threads)

        return Recorded()

    monkeypatch.setattr(counter._engines, "get", recording)
    reference = Tokenizer.from_file(path)
    assert counter.count(["x'\ud800t"]).tolist() == [len(reference.encode("x'\ufffdt"))]
    assert ("fastokens", ["x'\ufffdt"]) not in handed and ("hf-tokenizers", ["x'\ufffdt"]) in handed


def test_the_cl100k_regex_in_a_tokenizer_json_routes_the_mongolian_vowel_separator(long_s_vocabulary, tmp_path):
    """fastokens runs its own cl100k splitter on a ``tokenizer.json`` with cl100k's regex too, where it takes
    U+180E for whitespace: ``world\u180e's`` 6 tokens there, 7 in Hugging Face. Texts holding it go past fastokens."""
    path = with_normalizer(long_s_vocabulary, None, tmp_path / "c.json", pattern=CL100K_PATTERN)
    counter = load_tokenizer(path)
    reference = Tokenizer.from_file(path)
    assert counter.backend == "fastokens" and counter.fastokens_routed == ("ſ", "\u180e")
    texts = ["world\u180e's", "a\u180e'll go", "hello world's"]
    assert counter.count(texts).tolist() == [len(reference.encode(t)) for t in texts]
    assert counter.counts_by("fastokens", texts[:1]).tolist() != [len(reference.encode(texts[0]))]


def test_a_regex_that_splits_differently_from_the_preset_is_run_by_pcre2(monkeypatch):
    """Confirmation is by behaviour: a candidate whose pieces differ on any probe is not taken, and fastokens
    gets the file's regex in a spelling it cannot mistake for the preset."""
    wrong = Preset("wrong", LLAMA3_PATTERN, LLAMA_CPP_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}{1,2}"))
    monkeypatch.setattr(presets_module, "PRESETS", {LLAMA3_PATTERN: wrong})
    config = json.loads(respelled(llama3_style(LLAMA3_PATTERN, ["tiny"], 300).to_str(), LLAMA_CPP_PATTERN))
    choice = choose_preset(config, json.dumps(config), ["no digits here"])
    assert choice.preset is None and "not run as its wrong preset" in choice.note
    assert "'0 12 123 1234" in choice.note  # the first adversarial text with a run of digits
    assert split_regex(json.loads(choice.json_text))[1] == f"(?:{LLAMA_CPP_PATTERN})"


def test_a_regex_that_is_no_preset_is_left_as_it_is():
    config = json.loads(llama3_style(r"\s+|\S+", ["tiny"], 300).to_str())
    text = json.dumps(config)
    assert choose_preset(config, text, ["x"]) == presets_module.PresetChoice(text)


def test_counts_stay_int64(spellings):
    assert load_tokenizer(str(spellings["llama.cpp"])).count(["a", "b c"]).dtype == np.int64


def test_chat_markers_are_counted_around_on_the_preset_and_long_s_pieces_by_tiktoken(tmp_path, monkeypatch):
    """Llama 3's added tokens (``<|eot_id|>``...) are split out and the text around them counted by fastokens; in
    a text that also holds ``'ſ`` the piece holding it goes to tiktoken. Every count is Hugging Face's, and the
    reference is never asked."""
    tokenizer = llama3_style(LLAMA3_PATTERN, stdlib_modules(1, 60), vocab_size=1500)
    markers = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    tokenizer.add_special_tokens(markers)
    path = tmp_path / "chat.json"
    tokenizer.save(str(path))
    counter = load_tokenizer(str(path))
    assert counter.backend == "fastokens" and set(counter.split_out) == set(markers)
    assert counter.fastokens_routed == ("ſ",) and counter.backends[1] == "tiktoken"
    bos, start, end, eot = markers
    chats = [f"{bos}{start}user{end}\n\n{t}{eot}{start}assistant{end}\n\n{t[::-1]}{eot}" for t in HELD_OUT[:100]]
    long_s = [f"{bos}it'ſ {t}{eot}" for t in HELD_OUT[:5]]
    reference = Tokenizer.from_file(str(path))
    expected = [len(reference.encode(t, add_special_tokens=False)) for t in chats + long_s]
    asked = []
    get = counter._engines.get
    monkeypatch.setattr(counter._engines, "get", lambda backend: asked.append(backend) or get(backend))
    assert counter.count(chats + long_s).tolist() == expected
    assert "hf-tokenizers" not in asked and asked.count("tiktoken") == 1  # one batch: the 5 pieces with 'ſ


@pytest.mark.parametrize(
    ("pattern", "behavior"), [(GPT2_PATTERN, "isolated"), (r"\s+", "removed")], ids=["gpt2-split", "whitespace-removed"]
)
def test_a_regex_fastokens_splits_otherwise_at_the_mongolian_vowel_separator_routes_it(pattern, behavior, tmp_path):
    """fastokens takes U+180E for whitespace under some regexes (a fuzzing review: ``x\u180e'll`` 5 tokens for 6 under
    GPT-2's regex in a ``tokenizer.json``, ``a\u180eb`` 2 for 5 under ``Split(\\s+, removed)``), which Hugging Face
    does not: the counts of SEPARATOR_PROBES are compared at load, and texts holding it skip fastokens, saying so."""
    tokenizer = Tokenizer(models.BPE())
    split = pre_tokenizers.Split(Regex(pattern), behavior=behavior)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([split, pre_tokenizers.ByteLevel(use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(stdlib_documents(2, 30, max_chars=2000), trainer)
    tokenizer.save(str(tmp_path / "t.json"))
    counter = load_tokenizer(str(tmp_path / "t.json"))
    reference = [len(tokenizer.encode(t).ids) for t in SEPARATOR_PROBES]
    assert counter.backend == "fastokens" and counter.fastokens_routed[-1:] == ("\u180e",)
    assert (
        f"texts containing '\\u180e' go to {counter.backends[1]} (U+180E: fastokens counts " in counter.fastokens_note
    )
    assert counter.count(list(SEPARATOR_PROBES)).tolist() == reference
    assert (
        counter.counts_by("fastokens", list(SEPARATOR_PROBES)).tolist() != reference
    )  # fastokens alone would be wrong


def test_a_regex_fastokens_splits_alike_keeps_the_mongolian_vowel_separator(tmp_path):
    """Built-in Tekken (its ranks and regex): fastokens counts the probes as tiktoken does, so no text is routed for
    U+180E (the search for a routed string would cost every text of the default tokenizer)."""
    tekken = load_tokenizer("tekken")
    assert "\u180e" not in tekken.fastokens_routed and tekken.backend == "fastokens"
    probes = list(SEPARATOR_PROBES)
    assert tekken.counts_by("fastokens", probes).tolist() == tekken.counts_by("tiktoken", probes).tolist()


@pytest.mark.parametrize("script", ["Latin", "Greek"])
def test_a_script_property_in_the_regex_leaves_fastokens_out(script, tmp_path):
    """fastokens' PCRE2 reads \\p{Latin} as Script_Extensions, Hugging Face's Oniguruma as Script: U+00B7 MIDDLE DOT
    is Latin (and Greek) to the first, Common to the second ('a ·' 3 tokens for 2, a tokenizer fuzzing review);
    such a file is counted without fastokens, saying why, and a .tiktoken file with that pattern too."""
    import fastokens

    pattern = rf"\p{{{script}}}+|\P{{{script}}}+"
    texts = ["a ·", "Le point · médian", "col · legi", "α · β", "l·l"]
    tokenizer = llama3_style(pattern, [*stdlib_documents(2, 20, max_chars=2000), *texts * 20], vocab_size=400)
    tokenizer.save(str(tmp_path / "t.json"))
    reference = [len(tokenizer.encode(t).ids) for t in texts]
    alone = fastokens.Tokenizer.from_json_str(tokenizer.to_str())
    assert [len(e.ids) for e in alone.encode_batch(texts)] != reference  # what fastokens would have counted
    counter = load_tokenizer(str(tmp_path / "t.json"))
    assert "fastokens" not in counter.backends and counter.count(texts).tolist() == reference
    why = f"\\p{{{script}}} in the regex is no general category: fastokens reads a script as its Script_Extensions"
    assert counter.fallback_reasons["fastokens"].startswith(why)
    # the same ranks as a .tiktoken file with the pattern: tiktoken (the reference there) reads Script too
    import tiktoken

    from freqlab.tokenization.bytelevel import token_bytes

    ranks = {token_bytes(t): i for t, i in json.loads(tokenizer.to_str())["model"]["vocab"].items()}
    (tmp_path / "t.tiktoken").write_bytes(b"".join(base64.b64encode(b) + b" %d\n" % i for b, i in ranks.items()))
    from_ranks = load_tokenizer(str(tmp_path / "t.tiktoken"), pattern=pattern)
    encoding = tiktoken.Encoding("t", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    assert from_ranks.count(texts).tolist() == [len(encoding.encode_ordinary(t)) for t in texts]
    assert from_ranks.fallback_reasons["fastokens"].startswith(why.replace("Hugging Face", "tiktoken"))


def test_the_mongolian_vowel_separator_between_unknown_characters_is_probed(tmp_path):
    """A BPE with an unknown token fused (fuse_unk) behind Split(\\s+): Oniguruma fuses U+180E into one <unk> with the
    unknown characters around it, fastokens' PCRE2 splits there ('本\\u180e本' 3 tokens for 1); the load-time probes
    put only ASCII beside it, so nothing was routed (a tokenizer fuzzing review)."""
    from freqlab.tokenization.sample import default_verify_texts

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"\s+"), "isolated")
    trainer = trainers.BpeTrainer(vocab_size=1000, special_tokens=["<unk>"], limit_alphabet=60, show_progress=False)
    tokenizer.train_from_iterator(default_verify_texts(), trainer)
    tokenizer.save(str(tmp_path / "t.json"))
    texts = ["ᠮᠣᠩᠭᠣᠯ\u180eᠠ", "本\u180e本", "²\u180e½"]
    reference = [len(tokenizer.encode(t).ids) for t in texts]
    counter = load_tokenizer(str(tmp_path / "t.json"))
    assert counter.counts_by("fastokens", texts).tolist() != reference  # fastokens alone
    assert counter.backend == "fastokens" and counter.fastokens_routed[-1:] == ("\u180e",)
    assert counter.count(texts).tolist() == reference == [1, 1, 1]


@pytest.mark.parametrize(
    "pattern",
    [r"\p{L&}+", r"\pL+|\p{Lu}", r"[\p{Letter}\p{N}]+", r"\P{L}+", r"\p{gc=L}+", r"\p{IsL}+", r"\\p{Latin}|\p{L}+"],
)
def test_general_categories_however_spelled_keep_fastokens(pattern):
    """Only a property that is no general category leaves fastokens out; an escaped backslash before p is text."""
    from freqlab.tokenization.presets import script_refusal

    assert script_refusal([pattern], "Hugging Face") is None
