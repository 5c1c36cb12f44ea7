"""Equivalent pre-tokenizer regexes take fastokens' preset: Llama 3's regex as Hugging Face ships it and as
llama.cpp's converters spell it count alike, both on the preset, confirmed on adversarial text."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

from freqlab.tokenization import load_tokenizer
from freqlab.tokenization import presets as presets_module
from freqlab.tokenization.presets import (
    CONTRACTIONS_ASCII,
    CONTRACTIONS_FOLDED,
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
    assert counter.fastokens_routed == ("ſ",) and counter.backend == "fastokens"
    assert counter.count(texts).tolist() == [len(reference.encode(t)) for t in texts]
    if counter.plan is None:  # cl100k's possessive quantifiers: no tiktoken backend, the reference counts them
        assert counter.backends == ("fastokens", "hf-tokenizers")
        path.write_text(respelled(long_s_vocabulary, LLAMA3_PATTERN), encoding="utf-8")
        counter = load_tokenizer(str(path))
    ranks = tmp_path / "ranks.tiktoken"  # the same vocabulary as tiktoken ranks (Llama 3's tokenizer.model format)
    ranks.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in counter.plan.mergeable_ranks.items()))
    from_ranks = load_tokenizer(str(ranks), pattern=pattern)
    assert from_ranks.fastokens_routed[0] == "ſ" and from_ranks.backend == "fastokens"  # cl100k: U+180E too
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


def with_normalizer(vocabulary: str, normalizer: dict, path) -> str:
    """``vocabulary`` with Hugging Face's spelling of Llama 3's regex and ``normalizer``, written to ``path``."""
    config = json.loads(vocabulary)
    config["normalizer"] = normalizer
    path.write_text(respelled(json.dumps(config), LLAMA3_PATTERN), encoding="utf-8")
    return str(path)


def test_a_code_point_the_normalizer_turns_into_long_s_skips_fastokens_too(long_s_vocabulary, tmp_path):
    """The regex sees normalized text, the routing the text read: a ``Replace`` writing ``ſ`` for ``Q`` makes
    ``x'Qt`` the ``x'ſt`` fastokens' preset splits otherwise (1 token of ``'ſt`` there, the reference's 4 pieces):
    texts holding ``Q`` skip fastokens as those holding ``ſ`` do."""
    path = with_normalizer(
        long_s_vocabulary, {"type": "Replace", "pattern": {"String": "Q"}, "content": "ſ"}, tmp_path / "q.json"
    )
    counter = load_tokenizer(path)
    reference = Tokenizer.from_file(path)
    texts = ["x'Qt", "a'Qt b'ſt", "hello world's", "Q"]
    assert counter.backend == "fastokens" and counter.fastokens_routed == ("ſ", "Q")
    expected = [len(reference.encode(t)) for t in texts]
    assert counter.count(texts).tolist() == expected
    assert counter.counts_by("fastokens", ["x'Qt"]).tolist() != expected[:1]  # fastokens alone would be wrong
    assert "texts containing 'ſ', 'Q' go to hf-tokenizers" in counter.fastokens_note  # no tiktoken: a normalizer


@pytest.mark.parametrize(
    "normalizer, routed",
    [
        ({"type": "NFD"}, ("ſ", "\u1e9b")),  # ẛ decomposes into ſ and a dot above
        ({"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]}, ("ſ", "\u1e9b")),
        ({"type": "NFC"}, ("ſ",)),  # Qwen2's: composes, never writes ſ
        ({"type": "NFKC"}, ("ſ",)),  # folds ſ to s
        ({"type": "Lowercase"}, ("ſ",)),
    ],
    ids=["NFD", "NFD+StripAccents", "NFC", "NFKC", "Lowercase"],
)
def test_every_code_point_a_normalizer_turns_into_long_s_is_routed(long_s_vocabulary, normalizer, routed, tmp_path):
    """A sweep of all of Unicode through the file's own normalizer: exactly the code points it turns into text
    holding ``ſ`` (checked one by one here), no more, so a Qwen2-like ``NFC`` keeps fastokens for all but ``ſ``."""
    path = with_normalizer(long_s_vocabulary, normalizer, tmp_path / "n.json")
    config, hf = json.loads(Path(path).read_text(encoding="utf-8")), Tokenizer.from_file(path)
    choice = choose_preset(config, json.dumps(config), ["x"], hf.normalizer)
    assert choice.routed == routed and choice.refusal is None
    one_by_one = [chr(c) for c in range(0x3000) if "ſ" in hf.normalizer.normalize_str(chr(c))]
    assert [c for c in one_by_one if c != "ſ"] == [r for r in routed[1:] if ord(r) < 0x3000]


@pytest.mark.parametrize(
    "normalizer",
    [
        {"type": "Replace", "pattern": {"String": "ab"}, "content": "ſ"},
        {"type": "Replace", "pattern": {"Regex": "[0-9]q"}, "content": "x'ſ"},
        {
            "type": "Sequence",
            "normalizers": [{"type": "Replace", "pattern": {"String": "ab"}, "content": "\u1e9b"}, {"type": "NFD"}],
        },
        {"type": "Prepend", "prepend": "'ſ"},
    ],
    ids=["two characters", "regex", "then NFD", "prepend"],
)
def test_a_normalizer_writing_long_s_from_longer_text_leaves_fastokens_out(long_s_vocabulary, normalizer, tmp_path):
    """``ab`` -> ``ſ`` leaves no code point to route texts by: fastokens is no candidate for the file, the
    refusal says why, and every count is the reference's."""
    path = with_normalizer(long_s_vocabulary, normalizer, tmp_path / "n.json")
    counter = load_tokenizer(path)
    reference = Tokenizer.from_file(path)
    assert "fastokens" not in counter.backends
    reason = counter.fallback_reason
    assert "fastokens: not used: the normalizer" in reason and "'ſ'" in reason  # prepend: all of Unicode turns into ſ
    texts = ["x'abt", "x'1qt", "hello world's", "x'ſt ab"]
    assert counter.count(texts).tolist() == [len(reference.encode(t)) for t in texts]


def test_the_sweep_without_a_separator_the_normalizer_keeps_calls_it_once_per_code_point(monkeypatch):
    from tokenizers import normalizers

    from freqlab.tokenization.presets import _turned_into

    bert = normalizers.BertNormalizer()  # drops "\x00" and "\ue000", makes " " of "\n"
    swept = _turned_into(bert, ("ſ",))
    monkeypatch.setattr(presets_module, "SWEEP_SEPARATORS", ())
    assert _turned_into(bert, ("ſ",)) == swept == ["\u1e9b"]  # ẛ: strip_accents decomposes it


def test_a_normalizer_step_of_an_unknown_type_leaves_fastokens_out_when_long_s_is_routed():
    from tokenizers import normalizers

    from freqlab.tokenization.presets import normalizer_routed

    routed, refusal = normalizer_routed({"normalizer": {"type": "FutureStep"}}, normalizers.NFC(), ("ſ",))
    assert routed == ("ſ",) and "FutureStep step may write 'ſ'" in refusal
    assert normalizer_routed({"normalizer": {"type": "FutureStep"}}, normalizers.NFC(), ()) == ((), None)


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
