"""freqlab.fastokens_ahead: fastokens built from the file beside a cache entry, before freqlab is imported; the file
is read back only whole and unchanged, and it builds the very tokenizer the counter builds."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from freqlab import fastokens_ahead
from freqlab.fastokens_ahead import JSON, TIKTOKEN, build_fastokens, input_file, input_path, read_input
from freqlab.tokenization.backends import FastokensEngine, FastokensRanks, fastokens_input
from freqlab.tokenization.counter import TiktokenPlan
from freqlab.tokenization.tiktoken_file import LLAMA3_PATTERN

TEXTS = ["Hello world, it's 2026.", "  spaces\tand\r\nlines  ", "déjà vu 日本語 1234567", ""]


@pytest.fixture(scope="module")
def json_text() -> str:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(["hello world, it's the world of words and spaces"] * 50, trainer)
    return tokenizer.to_str()


def counts(tokenizer, texts=TEXTS) -> list[int]:
    return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]


def test_the_file_round_trips_and_builds_what_the_counter_builds(json_text, tmp_path):
    entry = tmp_path / "key.pickle"
    kind, body, how = fastokens_input(json_text)
    assert (kind, body, how) == (JSON, json_text, {})
    input_path(entry).write_bytes(input_file("d1g3st", kind, body, **how))
    header, read = read_input(entry)
    assert header["digest"] == "d1g3st" and header["kind"] == JSON and read == json_text.encode()
    built = build_fastokens(header["kind"], read)
    assert counts(built) == counts(FastokensEngine(json_text).tokenizer) == counts(Tokenizer.from_str(json_text))


def test_tiktoken_ranks_are_written_as_a_tiktoken_file_with_their_pattern(tmp_path):
    ranks = {bytes([b]): b for b in range(256)} | {b"he": 256, b"ll": 257, b"hell": 258, b"hello": 259}
    source = FastokensRanks(TiktokenPlan(LLAMA3_PATTERN, ranks))
    kind, body, how = fastokens_input(source)
    assert kind == TIKTOKEN and how == {"pattern": LLAMA3_PATTERN} and body.count(b"\n") == len(ranks)
    entry = tmp_path / "key.pickle"
    input_path(entry).write_bytes(input_file("x", kind, body, **how))
    header, read = read_input(entry)
    built = build_fastokens(header["kind"], read, header.get("encoding"), header.get("pattern"))
    assert counts(built, ["hello hello", "hell"]) == [3, 1]  # "hello", " ", "hello"; "hell"
    assert counts(built, TEXTS) == counts(FastokensEngine(source).tokenizer, TEXTS)


def test_a_damaged_missing_or_foreign_file_is_never_read(json_text, tmp_path):
    entry = tmp_path / "key.pickle"
    assert read_input(entry) is None  # missing
    whole = input_file("d", JSON, json_text)
    for damaged in (whole[:-1], whole[:-1] + b"!", b"not json\n" + json_text.encode(), b"", b"{}\nbody"):
        input_path(entry).write_bytes(damaged)
        assert read_input(entry) is None
    header = json.loads(whole.split(b"\n", 1)[0]) | {"format": 0}  # another format's
    input_path(entry).write_bytes(json.dumps(header).encode() + b"\n" + json_text.encode())
    assert read_input(entry) is None


def test_take_gives_the_tokenizer_only_for_the_digest_it_was_built_from(json_text, tmp_path, monkeypatch):
    entry = tmp_path / "key.pickle"
    input_path(entry).write_bytes(input_file("right", JSON, json_text))
    monkeypatch.setattr(fastokens_ahead, "_BUILT", {})
    fastokens_ahead._build_from(str(entry))
    assert fastokens_ahead.take("other") is None and fastokens_ahead.take(None) is None
    assert counts(fastokens_ahead.take("right")) == counts(Tokenizer.from_str(json_text))
    input_path(entry).write_bytes(input_file("broken", JSON, "{not a tokenizer"))
    fastokens_ahead._build_from(str(entry))  # a build that fails leaves nothing: the prebuild builds its own
    assert fastokens_ahead.take("broken") is None


def test_importing_it_imports_nothing_of_freqlab_but_itself_and_starts_no_thread_unasked():
    code = (
        "import sys, threading, freqlab.fastokens_ahead as f\n"
        "print(sorted(m for m in sys.modules if m.startswith(('freqlab', 'numpy'))), threading.active_count())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['freqlab',", "'freqlab.fastokens_ahead']", "1"]
