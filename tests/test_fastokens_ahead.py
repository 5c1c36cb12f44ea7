"""freqlab.fastokens_ahead: fastokens built from the file beside a cache entry, before freqlab is imported; the file
is read back only whole, unchanged and regular, and it builds the very tokenizer the counter builds."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from freqlab import fastokens_ahead
from freqlab.fastokens_ahead import (
    JSON,
    TIKTOKEN,
    build_fastokens,
    input_file,
    input_identity,
    input_path,
    read_header,
    read_input,
)
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
    input_path(entry).write_bytes(input_file(kind, body, **how))
    header, read = read_input(entry)
    assert header["identity"] == input_identity(JSON, json_text) == read_header(entry)["identity"]
    assert read == json_text.encode() and header["kind"] == JSON and header["how"] == {}
    built = build_fastokens(header["kind"], read, **header["how"])
    assert counts(built) == counts(FastokensEngine(json_text).tokenizer) == counts(Tokenizer.from_str(json_text))


def test_tiktoken_ranks_are_written_as_a_tiktoken_file_with_their_pattern(tmp_path):
    ranks = {bytes([b]): b for b in range(256)} | {b"he": 256, b"ll": 257, b"hell": 258, b"hello": 259}
    source = FastokensRanks(TiktokenPlan(LLAMA3_PATTERN, ranks))
    kind, body, how = fastokens_input(source)
    assert kind == TIKTOKEN and how == {"pattern": LLAMA3_PATTERN} and body.count(b"\n") == len(ranks)
    assert input_identity(kind, body, **how) != input_identity(kind, body, pattern=r"\S+")  # how is part of it
    entry = tmp_path / "key.pickle"
    input_path(entry).write_bytes(input_file(kind, body, **how))
    header, read = read_input(entry)
    built = build_fastokens(header["kind"], read, **header["how"])
    assert counts(built, ["hello hello", "hell"]) == [3, 1]  # "hello", " ", "hello"; "hell"
    assert counts(built, TEXTS) == counts(FastokensEngine(source).tokenizer, TEXTS)


@pytest.mark.parametrize("memfd", [True, False], ids=["in-memory", "temporary-folder"])
def test_a_tiktoken_build_leaves_no_file_behind(tmp_path, monkeypatch, memfd):
    """fastokens reads tiktoken ranks from a file: on Linux an anonymous one in memory (a worker killed mid-build left
    a 2 MB /tmp/freqlab-* folder behind, which the exit hook could not remove), elsewhere a temporary folder."""
    import tempfile

    if memfd and not hasattr(os, "memfd_create"):
        pytest.skip("no memfd_create on this platform")
    if not memfd:
        monkeypatch.delattr(os, "memfd_create", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ranks = {bytes([b]): b for b in range(256)} | {b"he": 256, b"ll": 257, b"hell": 258, b"hello": 259}
    kind, body, how = fastokens_input(FastokensRanks(TiktokenPlan(LLAMA3_PATTERN, ranks)))
    seen = []
    real = fastokens_ahead._ranks_path

    def watched(data):
        with real(data) as path:
            seen.append((path, os.path.isfile(path)))
            yield path

    monkeypatch.setattr(fastokens_ahead, "_ranks_path", contextlib.contextmanager(watched))
    built = build_fastokens(kind, body, **how)
    assert counts(built, ["hello hello", "hell"]) == [3, 1]
    ((path, existed),) = seen
    assert existed and path.startswith("/proc/self/fd/" if memfd else str(tmp_path))
    assert list(tmp_path.iterdir()) == [] and not fastokens_ahead._SCRATCH


def test_a_damaged_edited_missing_or_foreign_file_is_never_read(json_text, tmp_path):
    entry = tmp_path / "key.pickle"
    assert read_input(entry) is None and read_header(entry) is None  # missing
    whole = input_file(JSON, json_text)
    line, body = whole.split(b"\n", 1)
    other = input_file(JSON, json_text.replace("world", "wurld"))
    for damaged in (whole[:-1], whole + b"!", b"not json\n" + body, b"", b"{}\nbody", line + b"\n" + body[:-1] + b"!"):
        input_path(entry).write_bytes(damaged)
        assert read_input(entry) is None
    input_path(entry).write_bytes(line + b"\n" + other.split(b"\n", 1)[1][: len(body)].ljust(len(body)))
    assert read_input(entry) is None  # another body of the same length under this header: its identity differs
    header = json.loads(line) | {"format": 1}  # another format's
    input_path(entry).write_bytes(json.dumps(header).encode() + b"\n" + body)
    assert read_input(entry) is None


@pytest.mark.parametrize(
    "change",
    [
        {"format": 2.0},
        {"size": True},
        {"kind": "pickle"},
        {"kind": ["json"]},
        {"how": {"foo": "1"}},
        {"how": {"pattern": 1}},
        {"identity": None},
    ],
)
def test_a_header_of_other_fields_or_types_is_no_input(json_text, tmp_path, change):
    entry = tmp_path / "key.pickle"
    line, body = input_file(JSON, json_text).split(b"\n", 1)
    header = json.loads(line) | change
    input_path(entry).write_bytes(json.dumps(header).encode() + b"\n" + body)
    assert read_header(entry) is None and read_input(entry) is None


def test_a_header_nested_past_pythons_recursion_is_no_input(tmp_path):
    entry = tmp_path / "key.pickle"
    for line in (b"[" * 60000, b'{"format": 2, "how": ' + b"[" * 60000):
        input_path(entry).write_bytes(line + b"\n")
        assert read_header(entry) is None and read_input(entry) is None


def test_a_process_ending_mid_build_removes_the_builds_temporary_folder(tmp_path):
    """The exit hook ends a process still building at once (os._exit): the ranks file it wrote goes first."""
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
    kind, body, how = fastokens_input(FastokensRanks(TiktokenPlan(LLAMA3_PATTERN, ranks)))
    entry = tmp_path / "key.pickle"
    input_path(entry).write_bytes(input_file(kind, body * 1, **how))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    code = (
        "import threading, freqlab.fastokens_ahead as f\n"
        "started = threading.Event()\n"
        "build = f.build_fastokens\n"
        "def slow(*a, **k):\n"
        "    import fastokens\n"
        "    real = fastokens.Tokenizer.from_tiktoken\n"
        "    def held(*b, **c):\n"
        "        started.set(); threading.Event().wait(30); return real(*b, **c)\n"
        "    fastokens.Tokenizer.from_tiktoken = held\n"
        "    return build(*a, **k)\n"
        "f.build_fastokens = slow\n"
        f"f.start_building(f._build_from, {str(entry)!r})\n"
        "started.wait(30)\n"
    )
    env = {**os.environ, "TMPDIR": str(scratch)}
    env.pop(fastokens_ahead.ENV, None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0 and done.stderr == ""
    assert list(scratch.iterdir()) == []


def test_a_fifo_or_a_device_in_its_place_is_refused_at_once(tmp_path):
    """Opened without blocking and checked before any read: a FIFO would block the forkserver, /dev/zero never end."""
    entry = tmp_path / "key.pickle"
    os.mkfifo(input_path(entry))
    done = []
    reader = threading.Thread(target=lambda: done.append(read_input(entry)), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert done == [None]
    os.unlink(input_path(entry))
    os.symlink("/dev/zero", input_path(entry))
    assert read_input(entry) is None and read_header(entry) is None


def test_take_gives_the_tokenizer_only_for_the_identity_it_was_built_from(json_text, tmp_path, monkeypatch):
    entry = tmp_path / "key.pickle"
    input_path(entry).write_bytes(input_file(JSON, json_text))
    monkeypatch.setattr(fastokens_ahead, "_BUILT", {})
    fastokens_ahead._build_from(str(entry))
    assert fastokens_ahead.take("other") is None and fastokens_ahead.take(None) is None
    assert counts(fastokens_ahead.take(input_identity(JSON, json_text))) == counts(Tokenizer.from_str(json_text))
    input_path(entry).write_bytes(input_file(JSON, "{not a tokenizer"))
    fastokens_ahead._build_from(str(entry))  # a build that fails leaves nothing: the prebuild builds its own
    assert fastokens_ahead.take(input_identity(JSON, "{not a tokenizer")) is None


def test_importing_it_imports_nothing_of_freqlab_but_itself_and_starts_no_thread_unasked():
    code = (
        "import sys, threading, freqlab.fastokens_ahead as f\n"
        "print(sorted(m for m in sys.modules if m.startswith(('freqlab', 'numpy'))), threading.active_count())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != fastokens_ahead.ENV}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['freqlab',", "'freqlab.fastokens_ahead']", "1"]
