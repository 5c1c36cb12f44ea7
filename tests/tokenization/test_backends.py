"""Backends and their hazards: each document is counted exactly by the first backend that can, never skipped.

Reference values are closed forms or Tekken's own engine (tiktoken, which test_builtin checks against
mistral-common's Tekkenizer) on ordinary text.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import tiktoken
from tokenizers import Tokenizer

from freqlab.errors import FreqlabError
from freqlab.tokenization import counter as counter_module
from freqlab.tokenization import load_tokenizer, single_threaded
from freqlab.tokenization import verify as verify_module
from freqlab.tokenization.backends import LLAMA3_PATTERN, valid_unicode
from freqlab.tokenization.counter import backends_tally

from .textsource import NON_ASCII, stdlib_documents

TEXTS = [*stdlib_documents(21, 200, max_chars=1200), *NON_ASCII]
SPACES = " " * 1_000_001  # one past fancy-regex's backtracking limit


@pytest.fixture(scope="module")
def tekken():
    return load_tokenizer("tekken")


# -- long whitespace runs -------------------------------------------------------------------------------


def test_tiktoken_itself_fails_on_a_million_spaces(tekken):
    encoding = tiktoken.Encoding(
        name="t", pat_str=tekken.plan.pat_str, mergeable_ranks=tekken.plan.mergeable_ranks, special_tokens={}
    )
    with pytest.raises(ValueError, match="Max stack size exceeded"):
        encoding.encode(SPACES)  # encode_ordinary does worse: a Rust panic (StackOverflow)


def test_a_million_spaces_count_is_the_closed_form_on_every_backend(tekken):
    # A run alone is one piece; Tekken's longest space token is 64 spaces and BPE cuts the run into 64s.
    expected = -(-1_000_001 // 64)
    assert expected == 15_626
    assert tekken.counts_by("tiktoken", [SPACES]).tolist() == [expected]  # pieces by `regex`, BPE by tiktoken
    assert tekken.counts_by("fastokens", [SPACES]).tolist() == [expected]


def test_a_run_between_words_splits_as_the_pattern_says(tekken):
    # "a" | 10^6 spaces (\s+(?!\S) leaves the last one) | " b": each part counted on ordinary text.
    text = "a" + SPACES + "b"
    expected = tekken.count_one("a") + 1_000_000 // 64 + tekken.count_one(" b")
    assert tekken.counts_by("tiktoken", [text]).tolist() == [expected]
    assert tekken.count([text, "Hello world"]).tolist() == [expected, 2]


RECENT_DIGIT = "\U00011de0"  # Unicode 16: a digit to the `regex` module, unassigned to tiktoken and Hugging Face


def test_a_run_tiktoken_can_count_is_counted_by_tiktoken_not_the_detour(tekken):
    """Below fancy-regex's limit tiktoken counts a long run itself; the detour's pieces come from `regex`, whose
    newer Unicode table takes U+11DE0 for a digit (1 token more here)."""
    encoding = tiktoken.Encoding(
        name="t", pat_str=tekken.plan.pat_str, mergeable_ranks=tekken.plan.mergeable_ranks, special_tokens={}
    )
    text = " " * 100_000 + RECENT_DIGIT
    expected = len(encoding.encode_ordinary(text))
    assert tekken.counts_by("tiktoken", [text]).tolist() == [expected]
    assert tekken._engines.get("tiktoken").count_by_pieces(text) == expected + 1


def test_a_long_run_goes_from_tiktoken_to_the_reference_after_it(llama3_like):
    """A tokenizer.json's reference (Hugging Face) comes after tiktoken: texts tiktoken would count with a long
    whitespace run go to it (here a text holding ſ, which skips fastokens for tiktoken)."""
    path = llama3_like()
    counter = load_tokenizer(path)
    assert counter.backends == ("fastokens", "tiktoken", "hf-tokenizers") and counter.fastokens_routed == ("ſ",)
    texts = ["\u017f" + " " * 100_000 + RECENT_DIGIT, "\u017f" + " " * 100_000 + "x " + RECENT_DIGIT * 2, "ſ ok"]
    expected = reference_counts(path, texts)
    assert counter.count(texts).tolist() == expected
    detour = counter._engines.get("tiktoken").count_by_pieces
    assert [detour(text) for text in texts[:2]] == [expected[0] + 1, expected[1] + 2]  # what tiktoken counted


# -- lone surrogates --------------------------------------------------------------------------------------


def test_lone_surrogates_are_counted_as_tiktoken_counts_them(tekken):
    texts = ["lone \ud800 surrogate", "pair \ud83d\ude00 as two code points", "fine"]
    cleaned = [valid_unicode(t) for t in texts]
    assert cleaned[:2] == ["lone \ufffd surrogate", "pair \U0001f600 as two code points"]
    assert tekken.count(texts).tolist() == tekken.counts_by("tiktoken", cleaned).tolist()


@pytest.fixture(scope="module")
def llama3_like(tmp_path_factory):
    """A small Llama-3-style tokenizer.json (Split on Llama 3's regex, byte-level BPE): fastokens, tiktoken and
    Hugging Face all count it. A function of (normalizer, added tokens) -> the path of such a file."""
    from tokenizers import AddedToken

    from .test_presets import llama3_style

    recent = [f"x {RECENT_DIGIT}{RECENT_DIGIT} y {RECENT_DIGIT}"] * 200  # merges of its bytes: pieces then matter
    base = llama3_style(LLAMA3_PATTERN, [*stdlib_documents(3, 60, max_chars=2000), *NON_ASCII, *recent], 1200)
    folder = tmp_path_factory.mktemp("llama3_like")

    def make(normalizer=None, added=()) -> str:
        tokenizer = Tokenizer.from_str(base.to_str())
        tokenizer.normalizer = normalizer
        tokenizer.add_tokens([AddedToken(text, normalized=normalized) for text, normalized in added])
        path = folder / f"t{len(list(folder.iterdir()))}.json"
        tokenizer.save(str(path))
        return str(path)

    return make


def reference_counts(path: str, texts: list[str]) -> list[int]:
    """Hugging Face's counts of ``texts``, surrogates repaired first (it refuses them; freqlab's documented rule)."""
    reference = Tokenizer.from_file(path)
    return [len(reference.encode(valid_unicode(text), add_special_tokens=False).ids) for text in texts]


def test_a_surrogate_pair_spelling_an_added_token_is_counted_as_that_token(llama3_like):
    """fastokens refuses the unrepaired text; tiktoken took it, joined the pair itself and counted the emoji as text
    (2 tokens for 1). The counter repairs it and routes the repaired text: the added token is seen."""
    path = llama3_like(added=[("\U0001f642", False)])
    counter = load_tokenizer(path)
    texts = ["\ud83d\ude42", "hi \ud83d\ude42 there", "plain \ud800 lone", "hi \U0001f642 there"]
    assert counter.backends[:2] == ("fastokens", "tiktoken")
    assert counter.count(texts).tolist() == reference_counts(path, texts)
    assert reference_counts(path, texts[:1]) == [1]


def test_surrogates_are_repaired_before_nfc_composes(llama3_like):
    """``e``, a surrogate pair (U+1D165, a combining mark) and U+0301: the reference joins the pair, then NFC makes
    ``é`` + U+1D165; normalizing first and joining after left ``e`` uncomposed (5 tokens for 4)."""
    from tokenizers import normalizers

    path = llama3_like(normalizer=normalizers.NFC())
    counter = load_tokenizer(path)
    texts = ["e\ud834\udd65\u0301", "A\ud834\udd65\u030a", "caf\u0065\u0301"]
    assert "tiktoken" in counter.backends
    assert counter.count(texts).tolist() == reference_counts(path, texts)
    assert counter.counts_by("tiktoken", [valid_unicode(t) for t in texts]).tolist() == reference_counts(path, texts)


def test_no_tiktoken_where_nfc_may_form_a_normalized_added_token(llama3_like):
    """Hugging Face matches a ``normalized`` added token after NFC: ``Sen\u0303orita`` is ``Señorita`` then, one
    token, while the texts held back for added tokens are found in the text read. tiktoken, which would count the
    token's text as text, is no backend for such a file; fastokens (which matches them itself) stays."""
    from tokenizers import normalizers

    path = llama3_like(normalizer=normalizers.NFC(), added=[("Se\u00f1orita", True), ("<ok>", True)])
    counter = load_tokenizer(path)
    assert "tiktoken" not in counter.backends and counter.backend == "fastokens"
    assert "the normalized added token 'Señorita' holds characters NFC may make" in counter.fallback_reasons["tiktoken"]
    texts = ["Sen\u0303orita", "\u017f Sen\u0303orita", "a <ok> b"]
    assert counter.count(texts).tolist() == reference_counts(path, texts) and reference_counts(path, texts[:1]) == [1]
    ascii_only = llama3_like(normalizer=normalizers.NFC(), added=[("<ok>", True)])  # no K, ; or `: kept
    assert "tiktoken" in load_tokenizer(ascii_only).backends


def test_the_ascii_nfc_makes_of_other_text_is_k_semicolon_and_backtick():
    """What the tiktoken plan's check assumes, swept over all of Unicode."""
    import unicodedata

    from freqlab.tokenization.bytelevel import NFC_MADE_ASCII

    made = {
        ch
        for c in range(0x80, 0x110000)
        if not 0xD800 <= c < 0xE000
        for ch in unicodedata.normalize("NFC", chr(c))
        if ch.isascii()
    }
    assert made == NFC_MADE_ASCII == set("K;`")


def test_texts_that_are_no_strings_are_named(tekken, llama3_like):
    """One string (or a dict) is no list of texts; a text of another type is named by its place and type, on a
    counter that looks for routed strings (added tokens, ſ) first too."""
    with_added = load_tokenizer(llama3_like(added=[("<ok>", False)]))
    for counter in (tekken, with_added):
        for texts in ("abc", {"a": 1}):
            with pytest.raises(TypeError, match=r"count takes a sequence of texts, not a (str|dict)"):
                counter.count(texts)
        for texts, message in (([None], "text #0 is NoneType"), (["ok", b"x"], "text #1 is bytes")):
            with pytest.raises(TypeError, match=message):
                counter.count(texts)


def test_the_counter_says_which_backend_counted_each_document(llama3_like):
    """Plain texts and a text cut at an added token (its pieces on fastokens) count for fastokens, a text holding
    ſ for tiktoken, a text holding a normalized added token for the reference; documents, not pieces."""
    counter = load_tokenizer(llama3_like(added=[("<ok>", False), ("<norm>", True)]))
    assert counter.split_out == ("<ok>",)
    before = counter.counted_by()
    counter.count(["plain", "a <ok> b <ok> c", "it'ſ", "x <norm> y", "more plain"])
    after = counter.counted_by()
    assert {b: after.get(b, 0) - before.get(b, 0) for b in after} == {
        "fastokens": 3,
        "tiktoken": 1,
        "hf-tokenizers": 1,
    }


def test_a_text_cut_at_added_tokens_counts_for_the_slowest_backend_of_its_pieces(llama3_like):
    """A piece holding ſ goes past fastokens to tiktoken: its text is tiktoken's (it was fastokens' before), in
    the process's counts and in a scan's per-text tally alike; a text of added tokens alone is fastokens'."""
    path = llama3_like(added=[("<ok>", False)])
    counter = load_tokenizer(path)
    texts = ["a <ok> it'ſ <ok> b", "<ok><ok>", "plain <ok> x", "it'ſ"]
    before = counter.counted_by()
    with backends_tally() as tally:
        assert counter.count(texts).tolist() == reference_counts(path, texts)
    after = counter.counted_by()
    assert {b: after.get(b, 0) - before.get(b, 0) for b in after} == {"fastokens": 2, "tiktoken": 2}
    index = {"fastokens": 0, "tiktoken": 1}
    assert tally.codes(len(texts), index).tolist() == [1, 0, 0, 1]


# -- a backend that fails on one document ------------------------------------------------------------------


class FailsOnBoom:
    """Wraps an engine; raises on any batch holding a text with "BOOM" (as a Rust engine error would)."""

    def __init__(self, engine, exc: BaseException):
        self.engine, self.exc, self.calls = engine, exc, 0

    def counts(self, texts, threads=1):
        self.calls += 1
        if any("BOOM" in t for t in texts):
            raise self.exc
        return self.engine.counts(texts, threads)


@pytest.mark.parametrize("exc", [RuntimeError("PCRE2 match limit"), type("PanicException", (BaseException,), {})()])
def test_a_failing_document_falls_to_the_next_backend_the_others_stay(tekken, exc):
    counter = pickle.loads(pickle.dumps(tekken))
    counter._engines = counter._engines.restricted(counter._sources)  # private engines: patch without leaking
    flaky = FailsOnBoom(counter._engines.get("fastokens"), exc)
    counter._engines.put("fastokens", flaky)
    texts = [*TEXTS[:20], "BOOM goes the document", *TEXTS[20:40]]
    np.testing.assert_array_equal(counter.count(texts), tekken.counts_by("tiktoken", texts))
    assert flaky.calls == 1 + len(texts)  # the batch, then each text alone: only "BOOM" left fastokens


def test_a_document_no_backend_can_count_is_a_clear_error(tekken):
    counter = pickle.loads(pickle.dumps(tekken))
    counter._engines = counter._engines.restricted(counter._sources)
    for backend in counter.backends:
        counter._engines.put(backend, FailsOnBoom(counter._engines.get(backend), RuntimeError("broken")))
    with pytest.raises(FreqlabError, match=r"text #1 \('BOOM'...\) cannot be counted \(fastokens: broken; tik"):
        counter.count(["fine", "BOOM"])


# -- without fastokens ----------------------------------------------------------------------------------


def test_without_fastokens_tekken_counts_on_tiktoken(no_fastokens, tekken):
    counter = load_tokenizer("tekken")
    assert counter.backends == ("tiktoken",)
    assert counter.fallback_reason == "fastokens: not installed"
    np.testing.assert_array_equal(counter.count(TEXTS), tekken.count(TEXTS))


def test_a_worker_without_fastokens_uses_the_next_verified_backend(tekken, monkeypatch):
    payload = pickle.dumps(tekken)
    monkeypatch.setattr(counter_module, "_BUILT", {})
    monkeypatch.setattr(counter_module, "fastokens_version", lambda: "0.0.1")  # another version in the worker
    clone = pickle.loads(payload)
    assert clone.backend == "tiktoken"
    assert clone.fallback_reason == f"fastokens: 0.0.1 here, {tekken.fastokens_version} verified"
    np.testing.assert_array_equal(clone.count(TEXTS[:50]), tekken.count(TEXTS[:50]))


# -- shipping counters to workers -------------------------------------------------------------------------


def test_pickle_carries_data_not_paths_and_is_not_verified_again(tekken, monkeypatch):
    from freqlab.tokenization.builtin import builtin_path

    payload = pickle.dumps(tekken)
    assert str(builtin_path("tekken")).encode() not in payload
    monkeypatch.setattr(counter_module, "_BUILT", {})  # a fresh worker

    def no_verification(*args, **kwargs):
        raise AssertionError("workers must not verify again")

    monkeypatch.setattr(verify_module._Comparison, "run", no_verification)
    clone = pickle.loads(payload)
    assert clone.backends == tekken.backends and clone.fastokens_version == tekken.fastokens_version
    np.testing.assert_array_equal(clone.count(TEXTS), tekken.count(TEXTS))


def test_single_threaded_sets_both_thread_pools_unless_already_set(monkeypatch):
    import os

    monkeypatch.delenv("FASTOKENS_BPE_THREADS", raising=False)
    monkeypatch.setenv("RAYON_NUM_THREADS", "3")
    single_threaded()
    assert os.environ["FASTOKENS_BPE_THREADS"] == "1"
    assert os.environ["RAYON_NUM_THREADS"] == "3"  # the user's explicit choice stands


def test_counter_counts_in_a_spawned_worker_on_fastokens(tekken):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn, initializer=single_threaded) as pool:
        counts = pool.submit(tekken.count, TEXTS[:100]).result(timeout=120)
        backend = pool.submit(getattr, tekken, "backend").result(timeout=60)
    assert backend == "fastokens"
    np.testing.assert_array_equal(counts, tekken.count(TEXTS[:100]))


# -- a third-party engine is verified, never trusted ------------------------------------------------------


class OffByOne:
    """A fastokens stand-in that miscounts texts longer than 1000 characters by one token."""

    def __init__(self, source):
        from freqlab.tokenization.backends import FastokensEngine

        self.engine = FastokensEngine(source)

    def counts(self, texts, threads=1):
        return self.engine.counts(texts) + np.array([len(t) > 1000 for t in texts], dtype=np.int64)


def _tiktoken_file(tmp_path, tekken) -> str:
    """Tekken's first 5000 ranks as a .tiktoken file with Tekken's regex (a vocabulary not cached yet)."""
    import base64

    ranks = [(t, r) for t, r in tekken.plan.mergeable_ranks.items() if r < 5000]
    path = tmp_path / "small.tiktoken"
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks))
    return str(path)


def test_a_backend_that_miscounts_one_verification_text_is_refused(tekken, tmp_path, monkeypatch):
    from freqlab.tokenization import backends

    monkeypatch.setitem(backends.ENGINES, "fastokens", OffByOne)
    monkeypatch.setattr(verify_module, "_VERIFIED", {})  # verify afresh, and forget it afterwards
    counter = load_tokenizer(_tiktoken_file(tmp_path, tekken), pattern=tekken.pattern)
    assert counter.backends == ("tiktoken",)
    assert counter.fallback_reasons["fastokens"].startswith("verification: text #")
    assert counter.fallback_reason == f"fastokens: {counter.fallback_reasons['fastokens']}"


def test_a_backend_that_cannot_load_is_refused_with_its_error(tekken, tmp_path, monkeypatch):
    import fastokens

    def broken(*args, **kwargs):
        raise ValueError("model error: unsupported tokenizer.json")

    monkeypatch.setattr(fastokens.Tokenizer, "from_tiktoken", broken)  # how tiktoken ranks reach fastokens
    monkeypatch.setattr(fastokens.Tokenizer, "from_json_str", broken)  # and, when that refuses, their export
    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    counter = load_tokenizer(_tiktoken_file(tmp_path, tekken), pattern=tekken.pattern)
    assert counter.backends == ("tiktoken",)
    assert counter.fallback_reasons == {
        "fastokens": "failed to load or count sample text (model error: unsupported tokenizer.json)"
    }


def test_ranks_fastokens_cannot_load_reach_it_through_their_tokenizer_json_export(tekken, tmp_path, monkeypatch):
    import fastokens

    def refuses(*args, **kwargs):  # what fastokens 0.3.5 says of Llama 3's tokenizer.model
        raise ValueError("model error: tiktoken token did not decompose into 2 pieces (got 3)")

    monkeypatch.setattr(fastokens.Tokenizer, "from_tiktoken", refuses)
    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    counter = load_tokenizer(_tiktoken_file(tmp_path, tekken), pattern=tekken.pattern)
    assert counter.backends == ("fastokens", "tiktoken") and counter.fallback_reasons == {}
    np.testing.assert_array_equal(counter.counts_by("fastokens", TEXTS), counter.counts_by("tiktoken", TEXTS))


def test_a_scan_can_drop_fastokens_for_a_small_workload_but_never_the_reference(tekken):
    small = tekken.without("fastokens", "small scan")
    assert small.backends == ("tiktoken",) and small.fallback_reason == "fastokens: small scan"
    np.testing.assert_array_equal(small.count(TEXTS[:30]), tekken.count(TEXTS[:30]))
    assert pickle.loads(pickle.dumps(small)).backends == ("tiktoken",)
    with pytest.raises(ValueError, match="tiktoken is the reference"):
        tekken.without("tiktoken", "no")


# -- NFC on the tiktoken backend --------------------------------------------------------------------------


def test_a_text_that_is_not_nfc_goes_from_tiktoken_to_the_reference(tmp_path):
    """Under an NFC normalizer (Qwen2's) tiktoken normalizes with Python's unicodedata, whose newer tables compose
    U+11935 U+11930 into U+11938 where Hugging Face's do not: 4 tokens for 8 (a tokenizer fuzzing review). A text
    that is not NFC goes to the reference; one already NFC stays on tiktoken."""
    from tokenizers import Regex, models, normalizers, pre_tokenizers, trainers

    from freqlab.tokenization.sample import default_verify_texts

    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])  # fmt: skip
    trainer = trainers.BpeTrainer(
        vocab_size=2000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(default_verify_texts(), trainer)
    tokenizer.save(str(tmp_path / "nfc.json"))
    counter = load_tokenizer(str(tmp_path / "nfc.json"), skip_backends={"fastokens": "as a small scan leaves it"})
    assert counter.backends == ("tiktoken", "hf-tokenizers") and counter.plan.nfc
    texts = ["\U00011935\U00011930", "Dives Akuru \U00011935\U00011930 text", "cafe\u0301", "caf\u00e9", "plain"]
    expected = [len(tokenizer.encode(t).ids) for t in texts]
    assert counter.counts_by("tiktoken", texts[:1]).tolist() != expected[:1]  # what tiktoken alone counted
    before = counter.counted_by()
    assert counter.count(texts).tolist() == expected
    after = counter.counted_by()
    counted = {b: after.get(b, 0) - before.get(b, 0) for b in after}
    assert counted == {"hf-tokenizers": 3, "tiktoken": 2}  # the three that are not NFC
    with_fastokens = load_tokenizer(str(tmp_path / "nfc.json"))  # a text routed past fastokens meets the rule too
    assert with_fastokens.count([*texts, "\u017f " + texts[0]]).tolist() == [
        *expected,
        len(tokenizer.encode("\u017f " + texts[0]).ids),
    ]
