"""tokenizer.json on tiktoken: byte-level BPE compiled to tiktoken only when it counts exactly like Hugging Face.

Tokenizers are trained here, on standard library source, with the ``tokenizers`` trainers; held-out documents
come from other files. fastokens is absent in this module (as on a platform without its wheel), so the
counter's backend is tiktoken or Hugging Face: these tests are about the compiled tiktoken plan.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

from freqlab.tokenization import hf as hf_module
from freqlab.tokenization import load_tokenizer
from freqlab.tokenization.bytelevel import unicode_to_byte
from freqlab.tokenization.counter import TiktokenPlan
from freqlab.tokenization.tiktoken_file import CL100K_PATTERN

from .textsource import NON_ASCII, stdlib_documents, stdlib_modules

pytestmark = pytest.mark.usefixtures("no_fastokens")

LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
    r"\s+(?!\S)|\s+"
)
EOT = "<|endoftext|>"
HELD_OUT = [*stdlib_documents(2, 2000, max_chars=600), *NON_ASCII]
TRAIN = stdlib_modules(1, 120)


def hf_counts(tokenizer: Tokenizer, texts: list[str], add_special_tokens: bool = False) -> np.ndarray:
    return np.array([len(tokenizer.encode(t, add_special_tokens=add_special_tokens)) for t in texts], dtype=np.int64)


def train(pre_tokenizer, *, normalizer=None, ignore_merges: bool = False) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tokenizer.pre_tokenizer = pre_tokenizer
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    trainer = trainers.BpeTrainer(
        vocab_size=2500,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[EOT],
        show_progress=False,
    )
    tokenizer.train_from_iterator(TRAIN, trainer)
    return tokenizer


def save(tokenizer: Tokenizer, tmp_path_factory, name: str) -> tuple[str, Tokenizer]:
    path = tmp_path_factory.mktemp("tok") / f"{name}.json"
    tokenizer.save(str(path))
    return str(path), Tokenizer.from_file(str(path))


@pytest.fixture(scope="module")
def gpt2_style(tmp_path_factory):
    """(a) GPT-2: ByteLevel pre-tokenizer with its built-in regex, ignore_merges=False."""
    return save(train(pre_tokenizers.ByteLevel(add_prefix_space=False)), tmp_path_factory, "gpt2")


def llama3_pre_tokenizer():
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


@pytest.fixture(scope="module")
def llama3_style(tmp_path_factory):
    """(b) Llama 3: Split(regex, Isolated) + ByteLevel(use_regex=False), ignore_merges=True, BOS template."""
    tokenizer = train(llama3_pre_tokenizer(), ignore_merges=True)
    tokenizer.post_processor = processors.TemplateProcessing(single=f"{EOT} $A", special_tokens=[(EOT, 0)])
    return save(tokenizer, tmp_path_factory, "llama3")


@pytest.fixture(scope="module")
def nfc_style(tmp_path_factory):
    """(c) (b) with an NFC normalizer."""
    return save(
        train(llama3_pre_tokenizer(), normalizer=normalizers.NFC(), ignore_merges=True), tmp_path_factory, "nfc"
    )


def edited(path: str, tmp_path, edit) -> str:
    """A copy of a tokenizer.json with ``edit(config)`` applied."""
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    edit(config)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(config), encoding="utf-8")
    return str(out)


# -- the fast path is taken and exact --------------------------------------------------------------------


@pytest.mark.parametrize("style", ["gpt2_style", "llama3_style", "nfc_style"])
def test_byte_level_bpe_runs_on_tiktoken_with_identical_counts(style, request):
    path, reference = request.getfixturevalue(style)
    counter = load_tokenizer(path)
    assert counter.backends == ("tiktoken", "hf-tokenizers"), counter.fallback_reason
    assert counter.fallback_reason == "fastokens: not installed"
    assert counter.vocab_size == reference.get_vocab_size() == 2500
    expected = hf_counts(reference, HELD_OUT)
    np.testing.assert_array_equal(counter.count(HELD_OUT), expected)
    assert len(HELD_OUT) > 2000 and expected.sum() > 400_000


def test_nfc_is_applied_before_tiktoken(nfc_style):
    path, reference = nfc_style
    counter = load_tokenizer(path)
    assert counter.plan.nfc is True
    decomposed = ["cafe\u0301 re\u0301sume\u0301 A\u030angstro\u0308m " * 5, "\u212b\u1e9b\u0323 \ufb01"]
    assert counter.count(decomposed).tolist() == hf_counts(reference, decomposed).tolist()


def test_added_tokens_in_text_are_counted_like_hugging_face(gpt2_style):
    path, reference = gpt2_style
    counter = load_tokenizer(path)
    texts = [f"first document{EOT}second document", f"{EOT}", "no marker here", f"a {EOT}{EOT} b"]
    expected = hf_counts(reference, texts)
    assert counter.backend == "tiktoken"
    assert counter.count(texts).tolist() == expected.tolist()
    assert expected[1] == 1  # the special token is one token, not its 13 characters' worth


def chat_texts(word: str, others: list[str]) -> list[str]:
    """Documents holding ``word`` as chat templates and concatenated corpora do: at the start, between texts,
    glued to letters, doubled, at the end, beside other scripts and whitespace."""
    texts = []
    for k, text in enumerate(others):
        texts += [
            f"{word}{text}{word}",
            f"user{word}\n\n{text}{word}assistant{word}{others[(k + 1) % len(others)]}",
            f"{text[: len(text) // 2]}{word}{word}{text[len(text) // 2 :]}",
            f" {word} {text} {word[:-1]}",
        ]
    return texts


@pytest.mark.parametrize("style", ["gpt2_style", "llama3_style", "nfc_style"])
def test_texts_with_added_tokens_are_counted_around_them_by_the_fast_backend(style, request, monkeypatch):
    """Hugging Face cuts added tokens out before normalizing and pre-tokenizing: each is one token and the text
    between two is tokenized on its own, so the fast backend counts the pieces (the reference, ~20x slower on
    chat-formatted text, is never asked), verified at load and equal to Hugging Face's own counts."""
    path, reference = request.getfixturevalue(style)
    counter = load_tokenizer(path)
    assert counter.split_out == (EOT,) and counter.backend == "tiktoken"
    texts = chat_texts(EOT, [t for t in HELD_OUT if t.strip()][:150])
    expected = hf_counts(reference, texts)
    get = counter._engines.get
    monkeypatch.setattr(counter._engines, "get", lambda b: get(b) if b != "hf-tokenizers" else pytest.fail(b))
    np.testing.assert_array_equal(counter.count(texts), expected)
    assert expected.sum() > 50_000


@pytest.mark.parametrize("flag", ["lstrip", "rstrip", "single_word"])
def test_an_added_token_matched_with_its_surroundings_goes_to_the_reference(gpt2_style, tmp_path, flag):
    """lstrip, rstrip and single_word make Hugging Face's match depend on the text around the token: not split
    out; those texts are counted by the reference, as before."""

    def flagged(config):
        config["added_tokens"][0][flag] = True

    path = edited(gpt2_style[0], tmp_path, flagged)
    counter = load_tokenizer(path)
    assert counter.split_out == () and counter.routed == (EOT,)
    texts = chat_texts(EOT, HELD_OUT[:20])
    assert counter.count(texts).tolist() == hf_counts(Tokenizer.from_file(path), texts).tolist()


def test_a_token_matched_on_normalized_text_sends_its_texts_to_the_reference(gpt2_style, tmp_path):
    """Hugging Face matches ``normalized`` added tokens in a second pass, inside what the raw-text tokens leave: cut
    in one pass, ``<ab>Z`` would be ``<ab>`` + ``Z`` (2), where Hugging Face gives ``<`` ``a`` ``b>Z`` (3)."""
    tokenizer = Tokenizer.from_file(gpt2_style[0])
    tokenizer.add_tokens(["<ab>"])  # normalized (add_tokens' default)
    tokenizer.add_special_tokens(["b>Z"])  # matched on the raw text
    path = tmp_path / "two_passes.json"
    tokenizer.save(str(path))
    counter = load_tokenizer(str(path))
    assert counter.split_out == (EOT, "b>Z") and "<ab>" in counter.routed
    texts = ["<ab>Z", "x<ab>Zy", "b>Z alone", f"{EOT}<ab>{EOT}b>Z", *chat_texts("b>Z", HELD_OUT[:20])]
    expected = hf_counts(tokenizer, texts)
    assert expected[0] == 3 and counter.count(texts).tolist() == expected.tolist()


def test_a_token_listed_twice_takes_its_last_entrys_flags(gpt2_style, tmp_path):
    """As Hugging Face does: a plain entry followed by an lstrip one is matched with lstrip, so not split out."""

    def twice(config):
        config["added_tokens"].append({**config["added_tokens"][0], "id": 2500, "lstrip": True})

    path = edited(gpt2_style[0], tmp_path, twice)
    counter = load_tokenizer(path)
    assert counter.split_out == () and counter.routed == (EOT,)
    texts = [f"Hi  {EOT} there", *chat_texts(EOT, HELD_OUT[:10])]
    assert counter.count(texts).tolist() == hf_counts(Tokenizer.from_file(path), texts).tolist()


def test_more_added_tokens_than_the_limit_are_not_split_out(gpt2_style, tmp_path):
    """One regex over thousands of tokens would cost every position of every text (and each is verified)."""
    from freqlab.tokenization.bytelevel import SPLIT_OUT_LIMIT

    tokenizer = Tokenizer.from_file(gpt2_style[0])
    tokenizer.add_special_tokens([f"<x{k}>" for k in range(SPLIT_OUT_LIMIT)])  # with EOT: one more than the limit
    path = tmp_path / "many.json"
    tokenizer.save(str(path))
    counter = load_tokenizer(str(path))
    assert counter.split_out == () and len(counter.routed) == SPLIT_OUT_LIMIT + 1
    texts = [f"a<x7>b{EOT}", "<x1023><x0>"]
    assert counter.count(texts).tolist() == hf_counts(tokenizer, texts).tolist()


def test_a_split_that_disagrees_with_the_reference_at_load_is_not_used(gpt2_style, monkeypatch):
    """Counting around the tokens is verified like any fast backend (freqlab.tokenization.verify.split_texts):
    any text counted otherwise than by the reference refuses it, and those texts go to the reference."""
    from freqlab.tokenization import verify as verify_module
    from freqlab.tokenization.counter import TokenCounter

    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    count_split = TokenCounter._count_split

    def off_by_one(self, texts, where, out, backends):  # as a pre-tokenizer that treats a text's start apart would
        count_split(self, texts, where, out, backends)
        out[list(where)] += 1

    monkeypatch.setattr(TokenCounter, "_count_split", off_by_one)
    counter = load_tokenizer(gpt2_style[0])
    assert counter.split_out == () and counter.backend == "tiktoken"
    texts = chat_texts(EOT, HELD_OUT[:20])
    assert counter.count(texts).tolist() == hf_counts(gpt2_style[1], texts).tolist()


def test_add_special_tokens_counts_the_post_processor_tokens(llama3_style):
    path, reference = llama3_style
    counter = load_tokenizer(path, add_special_tokens=True)
    assert counter.backend == "tiktoken"
    assert counter.special_tokens_added == 1
    texts = HELD_OUT[:300]
    np.testing.assert_array_equal(counter.count(texts), hf_counts(reference, texts, add_special_tokens=True))
    np.testing.assert_array_equal(counter.count(texts), load_tokenizer(path).count(texts) + 1)


def test_add_prefix_space_is_reproduced(gpt2_style, tmp_path):
    path, _ = gpt2_style
    path = edited(path, tmp_path, lambda c: c["pre_tokenizer"].update(add_prefix_space=True))
    reference = Tokenizer.from_file(path)
    counter = load_tokenizer(path)
    assert counter.backend == "tiktoken" and counter.plan.prefix_space
    texts = ["", " ", "word", " word", "\nword", *HELD_OUT[:200]]
    assert counter.count(texts).tolist() == hf_counts(reference, texts).tolist()


def test_merges_out_of_training_order_are_caught_by_verification(llama3_style, tmp_path):
    # Moving a late merge first passes the structural checks, but tiktoken may then build that token from a
    # split Hugging Face has no merge for: the load-time comparison sees different counts and falls back. Which
    # late merge does so depends on the text trained on (this interpreter's standard library: the last merge on
    # 3.11, the twelfth from the end on 3.13), so the late merges are moved first one at a time: each one kept
    # on tiktoken counts held-out text exactly like Hugging Face, and one of them is refused by verification.
    path, _ = llama3_style
    with open(path, encoding="utf-8") as f:
        merges = len(json.load(f)["model"]["merges"])
    texts = HELD_OUT[:100]
    for k in range(merges - 1, merges - 41, -1):

        def move_merge_first(config, k=k):
            config["model"]["merges"].insert(0, config["model"]["merges"].pop(k))

        moved = edited(path, tmp_path, move_merge_first)
        counter = load_tokenizer(moved)
        if counter.backends == ("hf-tokenizers",):
            break
        np.testing.assert_array_equal(counter.count(texts), hf_counts(Tokenizer.from_file(moved), texts))
    else:
        pytest.fail("none of the last 40 merges, moved first, was refused")
    assert_falls_back(moved, "verification: text #")


def test_legacy_space_separated_merges_are_read(gpt2_style, tmp_path):
    path = edited(
        gpt2_style[0], tmp_path, lambda c: c["model"].update(merges=[" ".join(m) for m in c["model"]["merges"]])
    )
    counter = load_tokenizer(path)
    assert counter.backend == "tiktoken", counter.fallback_reason
    texts = HELD_OUT[:200]
    np.testing.assert_array_equal(counter.count(texts), hf_counts(Tokenizer.from_file(path), texts))


def test_gguf_layout_special_tokens_in_the_vocabulary_keep_the_fast_path(llama3_style, tmp_path):
    # GGUF-converted tokenizers keep special tokens in model.vocab only: with ignore_merges Hugging Face would
    # emit one only for a whole pre-token piece equal to it, and the regex always cuts "<|endoftext|>" at "<|".
    path, _ = llama3_style
    path = edited(path, tmp_path, lambda c: c.update(added_tokens=[], post_processor=None))
    reference = Tokenizer.from_file(path)
    assert reference.token_to_id(EOT) == 0 and not reference.get_added_tokens_decoder()
    counter = load_tokenizer(path)
    assert counter.backends == ("tiktoken", "hf-tokenizers"), counter.fallback_reasons
    assert counter.routed == ()  # "<|endoftext|>" in text is ordinary text now
    texts = [f"a{EOT}b", EOT, f" {EOT}\n", *HELD_OUT[:300]]
    np.testing.assert_array_equal(counter.count(texts), hf_counts(reference, texts))
    assert counter.count_one(EOT) == len(reference.encode(EOT).ids) > 1


def test_a_vocabulary_token_that_can_be_a_whole_piece_but_no_merge_result_falls_back(llama3_style, tmp_path):
    path, _ = llama3_style
    path = edited(path, tmp_path, lambda c: c["model"]["vocab"].update(qqqqqq=2500))  # one regex piece, no merges
    assert_falls_back(path, "1 vocabulary tokens (e.g. 'qqqqqq') are no merge result")


def test_gpt2_byte_map_matches_transformers():
    bytes_to_unicode = pytest.importorskip("transformers.convert_slow_tokenizer").bytes_to_unicode

    assert unicode_to_byte() == {ch: b for b, ch in bytes_to_unicode().items()}


# -- otherwise: Hugging Face, with the reason --------------------------------------------------------------


def assert_falls_back(path: str, reason_part: str) -> None:
    counter = load_tokenizer(path)
    assert counter.backends == ("hf-tokenizers",)
    assert reason_part in counter.fallback_reasons["tiktoken"]
    assert counter.fallback_reason == f"fastokens: not installed; tiktoken: {counter.fallback_reasons['tiktoken']}"
    reference = Tokenizer.from_file(path)
    texts = HELD_OUT[:100]
    np.testing.assert_array_equal(counter.count(texts), hf_counts(reference, texts))


def test_lowercase_normalizer_falls_back(llama3_style, tmp_path):
    path = edited(llama3_style[0], tmp_path, lambda c: c.update(normalizer={"type": "Lowercase"}))
    assert_falls_back(path, "normalizer Lowercase")


def test_wordpiece_falls_back(tmp_path):
    vocab = {"[UNK]": 0, **{ch: i + 1 for i, ch in enumerate("abcdefghijklmnopqrstuvwxyz_")}, "##s": 28}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "wordpiece.json"
    tokenizer.save(str(path))
    assert_falls_back(str(path), "model is WordPiece")


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"\s+$|\S+|\s+", "anchor '$'"),
        (r"\w+|\W+", r"\w"),
        (r"\h+|\H+", r"\h"),
        # tiktoken's own cl100k regex: "\p{N}{1,3}+" is possessive there, a repeated interval in Oniguruma
        (CL100K_PATTERN, "'{n,m}+' repeats the interval"),
    ],
)
def test_regexes_that_engines_read_differently_fall_back(llama3_style, tmp_path, pattern, reason):
    path = edited(
        llama3_style[0], tmp_path, lambda c: c["pre_tokenizer"]["pretokenizers"][0].update(pattern={"Regex": pattern})
    )
    assert_falls_back(path, reason)


def test_possessive_quantifiers_and_atomic_groups_keep_the_fast_path(llama3_style, tmp_path):
    # Same meaning in Oniguruma and fancy-regex: kept, and verified equal on held-out text.
    pattern = LLAMA3_PATTERN.replace(r"[^\r\n\p{L}\p{N}]?\p{L}+", r"[^\r\n\p{L}\p{N}]?+\p{L}++")
    pattern = pattern.replace(r" ?[^\s\p{L}\p{N}]+[\r\n]*", r"(?> ?[^\s\p{L}\p{N}]+)[\r\n]*+")
    assert pattern.count("++") == 1 and "(?>" in pattern
    path = edited(
        llama3_style[0], tmp_path, lambda c: c["pre_tokenizer"]["pretokenizers"][0].update(pattern={"Regex": pattern})
    )
    counter = load_tokenizer(path)
    assert counter.backend == "tiktoken", counter.fallback_reason
    texts = HELD_OUT[:400]
    np.testing.assert_array_equal(counter.count(texts), hf_counts(Tokenizer.from_file(path), texts))


def test_non_contiguous_merges_for_one_token_fall_back(llama3_style, tmp_path):
    def duplicate_a_merge_later(config):
        merges = config["model"]["merges"]
        left, right = merges[10]
        # another split of the same token, listed far from the first one
        merged = left + right
        merges.append([merged[:1], merged[1:]] if [merged[:1], merged[1:]] != merges[10] else [left, right])

    path = edited(llama3_style[0], tmp_path, duplicate_a_merge_later)
    counter = load_tokenizer(path)
    assert counter.backend == "hf-tokenizers"
    assert "not contiguous" in counter.fallback_reasons["tiktoken"] or "missing" in counter.fallback_reasons["tiktoken"]


def test_verification_on_sample_text_catches_what_checks_miss(llama3_style, monkeypatch):
    """If a compiled plan ever disagreed with Hugging Face, the load-time comparison falls back."""
    path, reference = llama3_style
    compile_for_real = hf_module.compile_bytelevel_bpe

    def wrong_regex(config, tokenizer):
        plan = compile_for_real(config, tokenizer)
        return TiktokenPlan(pat_str=r"\S+|\s+", mergeable_ranks=plan.mergeable_ranks)  # not Llama 3's regex

    monkeypatch.setattr(hf_module, "compile_bytelevel_bpe", wrong_regex)
    counter = load_tokenizer(path, verify_texts=["x = f(a, b)  # it's"])
    assert counter.backend == "hf-tokenizers"
    assert counter.fallback_reasons["tiktoken"].startswith("verification: text #0")
    assert counter.count(HELD_OUT[:50]).tolist() == hf_counts(reference, HELD_OUT[:50]).tolist()


# -- shipping counters to workers ---------------------------------------------------------------------------


def test_counters_pickle_with_their_data(gpt2_style, tmp_path, monkeypatch):
    from freqlab.tokenization import counter as counter_module

    fast = load_tokenizer(gpt2_style[0])
    slow = load_tokenizer(edited(gpt2_style[0], tmp_path, lambda c: c.update(normalizer={"type": "Lowercase"})))
    texts = [*HELD_OUT[:50], f"x{EOT}y"]
    expected = [fast.count(texts), slow.count(texts)]
    payloads = [pickle.dumps(fast), pickle.dumps(slow)]
    monkeypatch.setattr(counter_module, "_BUILT", {})
    clones = [pickle.loads(p) for p in payloads]
    assert [c.backend for c in clones] == ["tiktoken", "hf-tokenizers"]
    assert [c.split_out for c in clones] == [(EOT,), ()] and clones[1].fallback_reason == slow.fallback_reason
    for clone, want in zip(clones, expected):
        np.testing.assert_array_equal(clone.count(texts), want)


def test_hf_backend_threads_do_not_change_counts(llama3_style, tmp_path):
    path = edited(llama3_style[0], tmp_path, lambda c: c.update(normalizer={"type": "Lowercase"}))
    one = load_tokenizer(path, threads=1)
    two = load_tokenizer(path, threads=2)
    np.testing.assert_array_equal(one.count(HELD_OUT[:200]), two.count(HELD_OUT[:200]))


def test_counter_works_in_a_spawned_worker_process(gpt2_style):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    counter = load_tokenizer(gpt2_style[0])
    texts = [*HELD_OUT[:100], f"a{EOT}b"]
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        in_worker = pool.submit(counter.count, texts).result(timeout=60)
    np.testing.assert_array_equal(in_worker, counter.count(texts))


def test_a_common_added_token_leaves_verification_the_text_around_it(gpt2_style, tmp_path):
    """Texts holding a routed string are the reference's, so verification left them out: an added " " left the
    fast backends almost nothing to be compared on. The text between the routed strings is verified instead."""
    from freqlab.tokenization.sample import default_verify_texts
    from freqlab.tokenization.verify import verification_texts

    tokenizer = Tokenizer.from_file(gpt2_style[0])
    tokenizer.add_special_tokens([" "])
    path = tmp_path / "space.json"
    tokenizer.save(str(path))
    counter = load_tokenizer(str(path))
    plain = verification_texts(counter, None)
    held = verification_texts(counter, None, held=True)
    assert len(held) > len(default_verify_texts()) // 2 and len(plain) > len(default_verify_texts())
    assert not any(" " in text or EOT in text for text in plain)
    texts = HELD_OUT[:50]
    assert counter.count(texts).tolist() == hf_counts(tokenizer, texts).tolist()
