"""``load_tokenizer`` spec forms and their errors: files, folders, .tiktoken, hub ids (offline here)."""

from __future__ import annotations

import base64
import json
import os
import time

import numpy as np
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

from freqlab.errors import FreqlabError
from freqlab.tokenization import load_tokenizer
from freqlab.tokenization.backends import FastokensRanks
from freqlab.tokenization.builtin import builtin_path, read_tokenizer_bytes
from freqlab.tokenization.bytelevel import GPT2_PATTERN
from freqlab.tokenization.hf import HUB_HINT, hub_hint
from freqlab.tokenization.tiktoken_file import read_tiktoken_ranks

from .conftest import small_byte_level_bpe
from .textsource import NON_ASCII, stdlib_documents

TEXTS = [*stdlib_documents(5, 300, max_chars=800), *NON_ASCII]


@pytest.fixture(scope="module")
def small_bpe(tmp_path_factory):
    """A small GPT-2-style tokenizer.json trained on stdlib source, in its own folder."""
    tokenizer = small_byte_level_bpe(800, 40)
    folder = tmp_path_factory.mktemp("model")
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder, tokenizer


def hf_counts(tokenizer, texts):
    return [len(tokenizer.encode(t)) for t in texts]


def test_tokenizer_json_file_and_folder(small_bpe):
    folder, reference = small_bpe
    by_file = load_tokenizer(str(folder / "tokenizer.json"))
    by_folder = load_tokenizer(str(folder))
    assert by_file.name == by_file.spec == str(folder / "tokenizer.json")
    assert by_file.backends == by_folder.backends == ("fastokens", "tiktoken", "hf-tokenizers")
    assert by_file.vocab_hash == by_folder.vocab_hash
    assert by_file.count(TEXTS).tolist() == by_folder.count(TEXTS).tolist() == hf_counts(reference, TEXTS)


def test_model_folder_without_tokenizer_json_takes_its_tekken_json_or_tokenizer_model(tmp_path):
    # Mistral's folders hold tekken.json, SentencePiece models' tokenizer.model: a folder of either was read as
    # "<folder>/tokenizer.json: cannot read tokenizer file (FileNotFoundError ...)" (review), naming no file it holds
    from importlib import resources

    tekken, spm = tmp_path / "mistral", tmp_path / "sp"
    tekken.mkdir(), spm.mkdir()
    (tekken / "tekken.json").write_bytes(read_tokenizer_bytes(builtin_path("tekken")))
    v1 = resources.files("mistral_common").joinpath("data/tokenizer.model.v1")
    (spm / "tokenizer.model").write_bytes(v1.read_bytes())
    assert load_tokenizer(str(tekken)).count(TEXTS).tolist() == load_tokenizer("tekken").count(TEXTS).tolist()
    assert load_tokenizer(str(spm)).count(TEXTS).tolist() == load_tokenizer(str(v1)).count(TEXTS).tolist()
    assert load_tokenizer(str(spm)).name == str(spm / "tokenizer.model")
    with pytest.raises(
        FreqlabError, match=r"a folder without a tokenizer file \(tokenizer.json, tekken.json, tokenizer.model"
    ):
        load_tokenizer(str(tmp_path))
    # a tokenizer.json that is a broken link (a cache snapshot without its blob) is the folder's, never passed over
    # for the SentencePiece model beside it (a second review); a folder in its place is named a folder
    (spm / "tokenizer.json").symlink_to(tmp_path / "gone.json")
    with pytest.raises(FreqlabError, match=r"tokenizer.json: a broken link \(to .*gone.json\): the folder's tokenizer"):
        load_tokenizer(str(spm))
    (spm / "tokenizer.json").unlink()
    (spm / "tokenizer.json").mkdir()
    with pytest.raises(FreqlabError, match=r"tokenizer.json: not a regular file \(a folder\)"):
        load_tokenizer(str(spm))


@pytest.mark.parametrize("kind", ["roberta", "bert", "sequence"])
def test_a_post_processor_fastokens_cannot_read_leaves_it_on_fastokens(kind, tmp_path):
    """RoBERTa's (BART's, Longformer's) and BERT's post-processors: fastokens refuses the file (it refused the
    whole tokenizer before), so it gets it without one; counts are the reference's, with and without the two
    special tokens each adds."""
    tokenizer = small_byte_level_bpe(700, 30)
    tokenizer.add_special_tokens(["<s>", "</s>"])
    cls, sep = ("<s>", tokenizer.token_to_id("<s>")), ("</s>", tokenizer.token_to_id("</s>"))
    processor = processors.BertProcessing(sep, cls) if kind == "bert" else processors.RobertaProcessing(sep, cls)
    tokenizer.post_processor = processors.Sequence([processor]) if kind == "sequence" else processor
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    texts = [*TEXTS, "a <s> b </s> c"]
    for special, added in ((False, 0), (True, 2)):
        counter = load_tokenizer(str(tmp_path / "tokenizer.json"), add_special_tokens=special)
        assert counter.backend == "fastokens", counter.fallback_reason
        assert counter.special_tokens_added == added
        expected = [len(tokenizer.encode(t, add_special_tokens=special)) for t in texts]
        assert counter.count(texts).tolist() == expected


def test_an_empty_name_is_refused_not_the_working_folders_tokenizer(small_bpe, tmp_path, monkeypatch):
    # pathlib reads '' as '.': the working folder's tokenizer.json was loaded
    folder, _ = small_bpe
    monkeypatch.chdir(folder)  # it holds a tokenizer.json
    with pytest.raises(FreqlabError, match="an empty path names no file or folder"):
        load_tokenizer("")


def test_spec_recreates_the_counter(small_bpe):
    folder, _ = small_bpe
    counter = load_tokenizer(str(folder / "tokenizer.json"))
    again = load_tokenizer(counter.spec)
    assert (again.vocab_hash, again.backends, again.vocab_size) == (counter.vocab_hash, counter.backends, 800)
    assert load_tokenizer(load_tokenizer().spec).name == "tekken"


def test_tiktoken_file_counts_like_the_tokenizer_it_was_exported_from(small_bpe, tmp_path):
    # Export the trained tokenizer's ranks in .tiktoken format; with GPT-2's regex it must count identically.
    folder, reference = small_bpe
    fast = load_tokenizer(str(folder))
    path = tmp_path / "small.tiktoken"
    path.write_text(
        "".join(f"{base64.b64encode(token).decode()} {rank}\n" for token, rank in fast.plan.mergeable_ranks.items())
    )
    counter = load_tokenizer(str(path), pattern=GPT2_PATTERN)
    assert counter.backends == ("fastokens", "tiktoken") and counter.spec == str(path)
    assert counter.count(TEXTS).tolist() == hf_counts(reference, TEXTS)


def test_cl100k_pattern_runs_on_fastokens_own_cl100k_with_tiktoken_counts(small_bpe, tmp_path):
    folder, _ = small_bpe
    ranks = load_tokenizer(str(folder)).plan.mergeable_ranks
    path = tmp_path / "small.tiktoken"
    path.write_text("".join(f"{base64.b64encode(token).decode()} {rank}\n" for token, rank in ranks.items()))
    counter = load_tokenizer(str(path))  # default pattern: cl100k's, fastokens' own "cl100k_base" encoding
    assert counter.backends == ("fastokens", "tiktoken"), counter.fallback_reasons
    texts = [*TEXTS, "<|endoftext|> is text here", "a\n\n  ", "x \n\n \n", "I'M 1234567 89"]
    assert counter.counts_by("fastokens", texts).tolist() == counter.counts_by("tiktoken", texts).tolist()


def test_tiktoken_file_default_pattern_is_cl100k(tmp_path):
    path = tmp_path / "bytes.tiktoken"
    path.write_text("".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256)))
    counter = load_tokenizer(str(path))
    assert "\\p{N}{1,3}+" in counter.pattern  # cl100k's digit groups
    assert counter.source("fastokens") == FastokensRanks(counter.plan, "cl100k_base")  # fastokens' own cl100k
    assert counter.count(["héllo 2024"]).tolist() == [len("héllo 2024".encode())]  # bytes only: one token each
    with pytest.raises(FreqlabError, match="no special tokens"):
        load_tokenizer(str(path), add_special_tokens=True)
    with pytest.raises(FreqlabError, match="pattern must be a non-empty regex, not ''"):  # not cl100k's, silently
        load_tokenizer(str(path), pattern="")
    for other in ("tekken", "org/model"):  # a pattern no load would use is refused, not ignored
        with pytest.raises(FreqlabError, match="pattern= is for tiktoken ranks files"):
            load_tokenizer(other, pattern=r"\S+")


def test_tiktoken_format_model_file_needs_its_regex(tmp_path):
    # Meta ships Llama 3's ranks as tokenizer.model (tiktoken format): Llama 3's regex for its 128,000 ranks,
    # otherwise the regex must be given (a wrong one would count wrongly, silently).
    path = tmp_path / "tokenizer.model"
    path.write_text("".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256)))
    with pytest.raises(FreqlabError, match="256 ranks, not Llama 3's\\); pass pattern="):
        load_tokenizer(str(path))
    counter = load_tokenizer(str(path), pattern=GPT2_PATTERN)
    assert counter.pattern == GPT2_PATTERN and counter.count(["héllo"]).tolist() == [6]
    # 128,000 ranks that are not Llama 3's were counted with Llama 3's regex (tokenizer review): its own ranks only
    tokens = [bytes([b]) for b in range(256)] + [bytes([a, b]) for a in range(256) for b in range(256)]
    tokens += [bytes([a, b, c]) for a in range(256) for b in range(256) for c in (32, 101)][: 128_000 - len(tokens)]
    path.write_text("".join(f"{base64.b64encode(t).decode()} {rank}\n" for rank, t in enumerate(tokens)))
    with pytest.raises(
        FreqlabError, match=r"\(128,000 ranks of vocabulary [0-9a-f]{16}, not Llama 3's\); pass pattern="
    ):
        load_tokenizer(str(path))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("this is not json", "not a Hugging Face tokenizer.json"),
        ('{"version": "1.0"}', "not a Hugging Face tokenizer.json"),
        ('{"model": {"type": "Nonsense"}}', "not a Hugging Face tokenizer.json"),
        ("", "not a Hugging Face tokenizer.json"),
    ],
)
def test_bad_tokenizer_json_names_the_file(tmp_path, content, message):
    path = tmp_path / "tokenizer.json"
    path.write_text(content)
    with pytest.raises(FreqlabError, match=message) as info:
        load_tokenizer(str(path))
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_tokenizer_json_that_makes_hugging_face_panic_is_one_line(tmp_path):
    # tokenizers panics loading a byte-level BPE with a continuing_subword_prefix ("slice index starts at 1 but
    # ends at 0"); the panic is a BaseException, which went past the except and out as a traceback (review)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tokenizer.train_from_iterator(["the quick brown fox"] * 9, trainers.BpeTrainer(initial_alphabet=alphabet))
    config = json.loads(tokenizer.to_str())
    config["model"]["continuing_subword_prefix"] = "##"
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(config))
    with pytest.raises(FreqlabError, match=r"not a Hugging Face tokenizer.json \(slice index starts at 1") as info:
        load_tokenizer(str(path))
    assert str(path) in str(info.value)


def test_bad_tekken_json_names_the_file(tmp_path):
    path = tmp_path / "tekken_broken.json"
    path.write_text('{"config": {"pattern": "x", "default_vocab_size": 10}, "vocab": []}')
    with pytest.raises(FreqlabError, match="not a valid Tekken tokenizer file") as info:
        load_tokenizer(str(path))
    assert str(path) in str(info.value)


def test_bad_tiktoken_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.tiktoken"
    path.write_text("IQ== 0\nnot-base64!! x\n")
    with pytest.raises(FreqlabError, match=r"bad\.tiktoken:2: not a '<base64 token> <rank>' line"):
        load_tokenizer(str(path))


def _byte_ranks(*extra: str) -> str:
    """A .tiktoken file: the 256 single bytes at ranks 0-255 (lines 1-256), then ``extra`` lines."""
    return "\n".join([f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)] + list(extra)) + "\n"


@pytest.mark.parametrize(
    "extra, message",
    [
        # tiktoken holds ranks as uint32: these failed deep inside with struct.error / OverflowError tracebacks
        (["YWI= -5"], r"x\.tiktoken:257: rank -5 out of range \(0 to 2\*\*32 - 1\)"),
        (["YWI= 4294967296"], r"x\.tiktoken:257: rank 4294967296 out of range"),
        (["YWI= 5"], r"x\.tiktoken:257: rank 5 given to a second token \(first on line 6\)"),
        (["YWI= 300", "YWM= 300"], r"x\.tiktoken:258: rank 300 given to a second token \(first on line 257\)"),
    ],
)
def test_bad_tiktoken_rank_names_the_line(tmp_path, extra, message):
    path = tmp_path / "x.tiktoken"
    path.write_text(_byte_ranks(*extra))
    with pytest.raises(FreqlabError, match=message):
        load_tokenizer(str(path))


def test_tiktoken_token_given_again_takes_its_last_rank_as_tiktoken_reads_it(tmp_path):
    from tiktoken.load import load_tiktoken_bpe

    path = tmp_path / "x.tiktoken"
    path.write_text(_byte_ranks("YWI= 300", "YWI= 301", "YWJj 4294967294"))
    assert read_tiktoken_ranks(path) == load_tiktoken_bpe(str(path))
    assert read_tiktoken_ranks(path)[b"ab"] == 301
    assert load_tokenizer(str(path)).count_one("ab abc") == 3  # "ab", " ", "abc" (2**32 - 1 is tiktoken's "no merge")


@pytest.mark.parametrize("spec", ["missing/tokenizer.json", "./nowhere", "/no/such/vocab.tiktoken"])
def test_missing_file_names_the_path(spec):
    with pytest.raises(FreqlabError, match="no such tokenizer file") as info:
        load_tokenizer(spec)
    assert spec in str(info.value)


def test_spec_that_is_nothing_says_what_is_accepted():
    with pytest.raises(FreqlabError, match="not a file, a built-in") as info:
        load_tokenizer("what is this?")
    assert "tekken" in str(info.value)


@pytest.mark.parametrize(
    ("spec", "close"),
    [
        ("tekkn", "tekken"),
        ("Tekken", "tekken"),
        ("TEKKEN", "tekken"),
        ("tekken_240911", "tekken-240911"),
        ("tekken-2407", "tekken-240718"),
        ("gpt2", None),
        ("meta-llama/Llama-3.1-8B", None),
    ],
)
def test_a_name_near_a_built_in_is_pointed_to_it_and_every_built_in_is_listed(spec, close):
    # the hub's failure listed only "tekken" and no close match for "Tekken" or "tekken_240911" (review)
    hint = hub_hint(spec)
    assert hint.endswith("a built-in name (tekken, tekken-240911, tekken-240718)")
    assert hint.startswith(f"did you mean {close!r}? ") if close else hint == HUB_HINT


def test_a_spec_that_is_no_hub_id_gets_the_same_hint():
    with pytest.raises(FreqlabError, match=r"^tokenizer 'Tekken\?': not a file, a built-in or a hub id; did you mean"):
        load_tokenizer("Tekken?")


def test_unreachable_hub_fails_fast_with_one_line_and_a_hint(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # nothing cached
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    start = time.monotonic()
    with pytest.raises(FreqlabError) as info:
        load_tokenizer("mistralai/Mistral-Nemo-Base-2407")
    elapsed = time.monotonic() - start
    message = str(info.value)
    assert elapsed < 5
    assert "\n" not in message
    assert "'mistralai/Mistral-Nemo-Base-2407'" in message and HUB_HINT in message


def test_offline_mode_fails_at_once(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    start = time.monotonic()
    with pytest.raises(FreqlabError, match="HF_HUB_OFFLINE is set"):
        load_tokenizer("gpt2@main")
    assert time.monotonic() - start < 1


def test_hub_id_found_in_the_local_cache_loads_offline(small_bpe, monkeypatch, tmp_path):
    """A cached hub tokenizer loads without network, exactly as huggingface_hub laid it out."""
    folder, reference = small_bpe
    from huggingface_hub import constants

    repo = tmp_path / "models--org--small"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "tokenizer.json").write_bytes((folder / "tokenizer.json").read_bytes())
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    counter = load_tokenizer("org/small")
    assert (counter.name, counter.spec, counter.backend) == ("org/small", "org/small", "fastokens")
    np.testing.assert_array_equal(counter.count(TEXTS[:50]), hf_counts(reference, TEXTS[:50]))


def test_a_reference_that_panics_on_sample_text_is_a_clear_error(tmp_path):
    """Hugging Face panics ("AddedVocabulary bad split") on some texts with a normalized NUL token under
    BertNormalizer: one FreqlabError naming the file, not a PanicException escaping load_tokenizer."""
    pytest.importorskip("fastokens")  # the reference counts sample text only when a faster backend is compared
    from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers, trainers

    from freqlab.errors import FreqlabError
    from freqlab.tokenization import load_tokenizer

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=200, show_progress=False, special_tokens=["[UNK]"])
    tokenizer.train_from_iterator(["hello world foo bar"] * 100, trainer)
    tokenizer.add_tokens([AddedToken("\x00", normalized=True)])
    path = tmp_path / "panics.json"
    tokenizer.save(str(path))
    with pytest.raises(FreqlabError, match=r"panics\.json: the hf-tokenizers reference fails on sample text"):
        load_tokenizer(str(path))


def test_bpe_dropout_is_refused(small_bpe, tmp_path):
    """A BPE with dropout drops merges at random in Hugging Face, the reference: five copies of one text counted
    [47, 45, 44, 38, 41], then [48, 44, 40, 39, 41] (a tokenizer fuzzing review); no histogram of it is exact."""
    import json

    config = json.loads(small_bpe[1].to_str())
    config["model"]["dropout"] = 0.5
    (tmp_path / "dropout.json").write_text(json.dumps(config))
    with pytest.raises(FreqlabError, match=r'dropout\.json: BPE dropout 0\.5: .*set "dropout": null in the model'):
        load_tokenizer(str(tmp_path / "dropout.json"))
    config["model"]["dropout"] = None  # as the message says: the same tokenizer without it
    (tmp_path / "none.json").write_text(json.dumps(config))
    assert load_tokenizer(str(tmp_path / "none.json")).count(TEXTS[:3]).tolist() == hf_counts(small_bpe[1], TEXTS[:3])


@pytest.mark.parametrize(
    "pattern",
    [
        r"\s*|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+",
        r"(?=x)|\p{L}+|\s+|\p{N}|[^\s\p{L}\p{N}]+",
        r"\p{L}+|\s+|\p{N}|[^\s\p{L}\p{N}]+|(?<g>)(?=7)",  # a named group as Oniguruma spells it (adversary review)
        r"(?=z)|\x{7A}+|\p{L}+|\s+|\p{N}|[^\s\p{L}\p{N}]+",  # an escape the regex module refuses (second review)
    ],
)
def test_a_tokenizer_json_regex_that_can_match_nothing_leaves_tiktoken_out_without_a_panic(
    small_bpe, tmp_path, capfd, pattern
):
    """A Split regex that can match the empty string (at once, or only before an 'x': a lookahead alone) made
    tiktoken's splitter panic while the sample text was counted: a Rust panic message and backtrace on stderr at
    every cold load, the scan then going on (tokenizer review). tiktoken is now left out with the reason, before
    it runs; the counts stay the reference's."""
    folder, _ = small_bpe
    config = json.loads((folder / "tokenizer.json").read_text())
    config["pre_tokenizer"] = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ],
    }
    (tmp_path / "tokenizer.json").write_text(json.dumps(config))
    counter = load_tokenizer(str(tmp_path / "tokenizer.json"))
    where = "in ''" if pattern.startswith(r"\s*") else "by its structure"
    assert counter.fallback_reasons["tiktoken"] == (
        f"the pre-tokenizer regex matches the empty string ({where}): tiktoken cannot split by it"
    )
    texts = [*TEXTS, "x marks the spot", "axe xx x"]
    assert counter.count(texts).tolist() == [
        len(e)
        for e in Tokenizer.from_file(str(tmp_path / "tokenizer.json")).encode_batch(texts, add_special_tokens=False)
    ]
    assert "panicked" not in capfd.readouterr().err


@pytest.mark.parametrize("pattern", ["a*", r"\s*|\w+", "(?:)"])
def test_a_pattern_that_matches_the_empty_string_is_one_line(small_bpe, tmp_path, pattern):
    """tiktoken panics on such a pattern (a Rust backtrace on stderr, then 'range end index 2 out of range for slice
    of length 0', naming nothing: a tokenizer fuzzing review)."""
    from freqlab.tokenization.bytelevel import token_bytes

    vocab = small_bpe[1].get_vocab()
    path = tmp_path / "r.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(token_bytes(t)) + b" %d\n" % i for t, i in vocab.items()))
    with pytest.raises(FreqlabError, match=r"r\.tiktoken: the pattern matches the empty string \(in '"):
        load_tokenizer(str(path), pattern=pattern)


@pytest.mark.parametrize(
    ("pattern", "found"),
    [
        (r"\\Ks*", None),  # a literal backslash, then K: at least 2 characters, not \K (third adversary review)
        (r"\\Ga*|\s+", None),
        (r"\x{41}*|\\h", "by its structure"),  # \\h read as \h made Python's parser fail: no verdict, a panic
        (r"(?=z)|[\h]+", "by its structure"),
        (r"\p{L}+|\\\h+", None),  # a literal backslash, then \h
    ],
)
def test_escaped_backslashes_are_no_escapes_to_the_empty_match_check(pattern, found):
    from freqlab.tokenization.backends import empty_match

    assert empty_match(pattern) == found


def test_a_tokenizer_that_is_no_regular_file_is_refused_not_read(tmp_path):
    """A review: a FIFO named as the tokenizer blocked the cache's hash for good, a link to /dev/zero filled memory."""
    fifo, zero = tmp_path / "fifo.json", tmp_path / "zero.json"
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    for path in (fifo, zero):
        with pytest.raises(FreqlabError, match=r"not a regular file \(a FIFO, socket or device\)"):
            load_tokenizer(str(path))
