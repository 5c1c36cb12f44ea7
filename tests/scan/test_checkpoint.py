"""Checkpoints round-trip exactly, are written atomically, refuse a resume with other settings, and are used only
when they can be trusted: same scan, same data file, content intact."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

from freqlab.errors import FreqlabError
from freqlab.scan.checkpoint import MANIFEST, CheckpointStore, OutputLock, safe_name
from freqlab.scan.counts import DocumentLog, ShardCount

IDENTITY = {"size": 1234, "mtime_ns": 5678}


def sample_part(log: bool, shard_id: str = "data/chunk 1.jsonl") -> ShardCount:
    part = ShardCount(shard_id=shard_id, sampled_out=4)
    codes = np.array([5, 0, 300_000, -1, 5, 7, 0], np.int64)  # 300k > the dense limit: a sparse entry
    sources = np.array([1, 1, 2, 0, 2, 1, 0], np.int32)
    labels, reasons = [None, "web", "code"], ["malformed-json"]
    part.add(codes, sources, labels, reasons)
    if log:  # each document's tokenizer backend (-1 for those without text: the skip), the blank lines before each
        backends = [np.array([0, 0, 1, -1, 0, 0, 0], np.int8)]
        gaps = [np.array([0, 2, 0, 0, 1, 0, 0], np.int64)]
        names = ["fastokens", "tiktoken"]
        part.log = DocumentLog([codes], [sources], [np.arange(7) * 2], labels, reasons, backends, names, gaps)
        part.blank_lines = 3
    return part


def state(part: ShardCount) -> tuple:
    lengths = {label: [a.tolist() for a in c.to_arrays()] for label, c in part.lengths.items()}
    return lengths, dict(part.empty), dict(part.skipped), part.sampled_out, part.documents_read, part.tokens


@pytest.mark.parametrize("log", [False, True])
def test_a_checkpoint_round_trips_exactly(tmp_path, log):
    store = CheckpointStore(tmp_path, {"tokenizer": "t"})
    store.start(resume=False)
    part = sample_part(log)
    store.save(part, IDENTITY)
    loaded = store.load(part.shard_id, IDENTITY)
    assert state(loaded) == state(part)
    assert state(part)[0] == {"web": [[5, 7], [1, 1]], "code": [[5, 300_000], [1, 1]]}
    if log:
        assert [a.tolist() for a in loaded.log.arrays()] == [a.tolist() for a in part.log.arrays()]
        assert loaded.log.backend_codes().tolist() == [0, 0, 1, -1, 0, 0, 0]
        assert loaded.log.backend_names == ["fastokens", "tiktoken"]
        assert loaded.log.gap_counts().tolist() == [0, 2, 0, 0, 1, 0, 0] and loaded.blank_lines == 3
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


def test_distinct_shard_ids_never_share_a_file_name():
    assert safe_name("a/b.jsonl") != safe_name("a_b.jsonl")
    assert "/" not in safe_name("../../etc/passwd")


def test_resume_refuses_other_settings_and_a_fresh_scan_clears_old_checkpoints(tmp_path):
    store = CheckpointStore(tmp_path, {"tokenizer": "tekken", "sample_rate": None})
    store.start(resume=False)
    store.save(sample_part(False), IDENTITY)
    other = CheckpointStore(tmp_path, {"tokenizer": "gpt2", "sample_rate": None})
    with pytest.raises(FreqlabError, match=r"other settings \(tokenizer: \"tekken\" then, \"gpt2\" now\)"):
        other.start(resume=True)
    CheckpointStore(tmp_path, {"tokenizer": "tekken", "sample_rate": None}).start(resume=True)
    assert store.load("data/chunk 1.jsonl", IDENTITY) is not None
    other.start(resume=False)  # starting over: the old partials must not leak into the new scan
    assert other.load("data/chunk 1.jsonl", IDENTITY) is None
    assert json.loads((tmp_path / MANIFEST).read_text())["fingerprint"] == {"sample_rate": None, "tokenizer": "gpt2"}


def test_resume_removes_what_interrupted_writes_left_and_nothing_else(tmp_path):
    store = CheckpointStore(tmp_path, {"tokenizer": "tekken"})
    store.start(resume=False)
    store.save(sample_part(False), IDENTITY)
    checkpoint = store.path("data/chunk 1.jsonl").name
    left = tmp_path / f".{checkpoint}.k3x9q_1.tmp"  # as write_atomic's mkstemp names it, cut by Ctrl-C
    left.write_bytes(b"PAR1 half a parquet")
    foreign = tmp_path / ".notes.abc.tmp"  # not the temporary of a checkpoint or the manifest: not ours
    foreign.write_bytes(b"mine")
    CheckpointStore(tmp_path, {"tokenizer": "tekken"}).start(resume=True)
    assert not left.exists() and foreign.exists()
    assert store.load("data/chunk 1.jsonl", IDENTITY) is not None


def test_a_damaged_checkpoint_is_recounted_not_trusted(tmp_path):
    store = CheckpointStore(tmp_path, {})
    store.start(resume=False)
    store.path("s").write_bytes(b"not parquet")
    assert store.load("s", {}) is None
    assert store.recounted == {"damaged": 1}


def test_a_checkpoint_of_another_scan_in_the_same_folder_is_never_used(tmp_path):
    # scan B starts on A's folder and is interrupted; A's checkpoints must not count as B's (issue 14, case 1)
    a = CheckpointStore(tmp_path, {"tokenizer_vocab_hash": "aaaa"})
    a.start(resume=False)
    part = sample_part(False)
    a.save(part, IDENTITY)
    b = CheckpointStore(tmp_path, {"tokenizer_vocab_hash": "bbbb"})
    (tmp_path / MANIFEST).write_text(json.dumps({"fingerprint": b.fingerprint, "hash": b.hash}))
    b.start(resume=True)
    assert b.load(part.shard_id, IDENTITY) is None
    assert b.recounted == {"made by another scan": 1}


def test_a_changed_data_file_is_recounted(tmp_path):
    store = CheckpointStore(tmp_path, {})
    store.start(resume=False)
    store.save(sample_part(False), IDENTITY)
    assert store.load("data/chunk 1.jsonl", {"size": 1235, "mtime_ns": 5678}) is None
    assert store.recounted == {"its data file changed": 1}


@pytest.mark.parametrize("log", [False, True])
def test_an_edited_checkpoint_is_recounted(tmp_path, log):
    import polars as pl

    store = CheckpointStore(tmp_path, {})
    store.start(resume=False)
    part = sample_part(log)
    store.save(part, IDENTITY)
    path = store.path(part.shard_id)
    metadata = pl.read_parquet_metadata(path)
    frame = pl.read_parquet(path)
    column = "code" if log else "count"
    edited = frame.with_columns(pl.col(column) * 2)  # doubled counts (or lengths), well-formed
    edited.write_parquet(path, metadata=metadata)
    assert store.load(part.shard_id, IDENTITY) is None
    assert store.recounted == {"damaged or edited": 1}


def test_a_damaged_manifest_is_one_line_when_resuming(tmp_path):
    store = CheckpointStore(tmp_path, {"x": 1})
    store.start(resume=False)
    for damage in (b"{", b"[]", b'{"fingerprint": {"x": 1}, "hash": "forged"}', b"\xff\xfe"):
        (tmp_path / MANIFEST).write_bytes(damage)
        with pytest.raises(FreqlabError, match="not a readable checkpoint manifest"):
            CheckpointStore(tmp_path, {"x": 1}).start(resume=True)


def test_an_output_folder_has_one_writer_at_a_time(tmp_path):
    first = OutputLock(tmp_path)
    first.acquire()
    with pytest.raises(FreqlabError, match=f"{tmp_path} is in use by another scan \\(pid "):
        OutputLock(tmp_path).acquire()
    first.release()
    second = OutputLock(tmp_path)
    second.acquire()  # free again once the first one is released
    second.release()


def test_a_fresh_scan_removes_only_the_files_freqlab_wrote(tmp_path):
    store = CheckpointStore(tmp_path, {"x": 1})
    store.start(resume=False)
    part = sample_part(False)
    store.save(part, IDENTITY)
    interrupted = tmp_path / f".{store.path('other').name}.abc123_x.tmp"  # a write cut short by a crash
    interrupted.write_bytes(b"half")
    CheckpointStore(tmp_path, {"x": 2}).start(resume=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST]


@pytest.mark.parametrize("name", ["mine.parquet", f"{safe_name('a.jsonl')}.parquet", "notes.txt", ".hidden"])
def test_a_checkpoints_folder_holding_other_files_is_refused_and_nothing_is_removed(tmp_path, name):
    import polars as pl

    store = CheckpointStore(tmp_path, {"x": 1})
    store.start(resume=False)
    store.save(sample_part(False), IDENTITY)
    foreign = tmp_path / name
    if name.endswith(".parquet"):  # a real Parquet file, even one named like a checkpoint, is not freqlab's
        pl.DataFrame({"a": [1, 2]}).write_parquet(foreign)
    else:
        foreign.write_text("my notes")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(FreqlabError) as error:
        CheckpointStore(tmp_path, {"x": 2}).start(resume=False)
    assert str(error.value) == (
        f"{tmp_path} holds files freqlab did not write ({name}); a fresh scan removes the old checkpoints there: "
        "move those files away, or choose another --out"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_the_scan_command_refuses_an_output_folder_with_foreign_checkpoints(tmp_path):
    import polars as pl
    from click.testing import CliRunner

    from freqlab.cli import main

    data = tmp_path / "a.jsonl"
    data.write_text('{"text": "hello world"}\n')
    folder = tmp_path / "out" / "checkpoints"
    folder.mkdir(parents=True)
    pl.DataFrame({"a": [1]}).write_parquet(folder / "results.parquet")
    result = CliRunner().invoke(main, ["scan", "--dataset", str(data), "--out", str(tmp_path / "out"), "-q"])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {folder} holds files freqlab did not write (results.parquet)")
    assert result.output.count("\n") == 1 and (folder / "results.parquet").exists()


@pytest.mark.parametrize("name", ["lengths.parquet", "summary.json"])
def test_a_folder_where_a_result_goes_is_refused_before_anything_is_counted(tmp_path, monkeypatch, name):
    """OUT/lengths.parquet a folder: the whole corpus was tokenized and checkpointed before 'cannot write (Is a
    directory)' (engines review). Refused at once now, nothing counted."""
    import freqlab.scan.work as work
    from freqlab.scan import scan

    data = tmp_path / "a.jsonl"
    data.write_text('{"text": "hello world"}\n')
    (tmp_path / "out" / name).mkdir(parents=True)
    monkeypatch.setattr(work, "count_shard", lambda *a, **k: pytest.fail("a shard was counted"))
    with pytest.raises(FreqlabError) as error:
        scan(str(data), out=str(tmp_path / "out"), progress=False)
    assert str(error.value) == f"{tmp_path / 'out' / name}: a folder, where the scan writes its {name}"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("summary.json", b"my precious"),
        ("summary.json", b'{"results": [1, 2]}'),
        ("lengths.parquet", b"notparquet"),
        ("lengths.parquet", "POLARS"),  # a Parquet file of another tool
        (".lock", b"tool data"),
    ],
)
def test_a_file_freqlab_did_not_write_where_a_result_goes_is_refused_and_kept(tmp_path, monkeypatch, name, content):
    """A review: OUT/summary.json, OUT/lengths.parquet and OUT/.lock of the user's were replaced (the lock truncated
    to 'pid N') without a word. Refused before anything is counted, the file untouched; a scan's own are replaced."""
    import polars as pl

    import freqlab.scan.work as work
    from freqlab.scan import scan

    data = tmp_path / "a.jsonl"
    data.write_text('{"text": "hello world"}\n')
    path = tmp_path / "out" / name
    path.parent.mkdir()
    if content == "POLARS":
        pl.DataFrame({"text": ["a b c"]}).write_parquet(path)
    else:
        path.write_bytes(content)
    before = path.read_bytes()
    with monkeypatch.context() as patched:
        patched.setattr(work, "count_shard", lambda *a, **k: pytest.fail("a shard was counted"))
        with pytest.raises(FreqlabError) as error:
            scan(str(data), out=str(tmp_path / "out"), progress=False)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == [name]  # no .lock of the refused scan left (a second review)
    if name == ".lock":
        assert str(error.value) == f"{path}: holds 'tool data', not freqlab's lock (a scan writes its pid there); " + (
            "move it away, or choose another --out"
        )
    else:
        assert str(error.value) == (
            f"{path}: a file freqlab did not write, which the scan would replace with its {name}; move it away, or "
            "choose another --out"
        )
    path.unlink()
    first = scan(str(data), out=str(tmp_path / "out"), progress=False)  # its own results: replaced by the next
    assert scan(str(data), out=str(tmp_path / "out"), progress=False).histogram.tokens == first.histogram.tokens
    summary = tmp_path / "out" / "summary.json"  # saved again by an editor (another layout): still the scan's
    summary.write_text(json.dumps(json.loads(summary.read_text()), indent=4))
    assert scan(str(data), out=str(tmp_path / "out"), progress=False).histogram.tokens == first.histogram.tokens


def test_a_scan_stopped_while_writing_its_results_leaves_the_earlier_pair(tmp_path, monkeypatch):
    """The last stop's note: lengths.parquet and summary.json were written one after the other, each atomically; a
    scan stopped between them left the new lengths beside the earlier scan's summary (its counts another corpus's).
    A first fix removed the summary first, which replaced a link to it by a file and lost its mode (a review). The
    new summary is made first and replaces the old right after the lengths do."""
    import freqlab.scan.output as output
    from freqlab.histogram import LengthHistogram
    from freqlab.scan import scan

    keep, out = tmp_path / "keep", tmp_path / "out"
    (tmp_path / "a.jsonl").write_text('{"text": "hello world"}\n')
    (tmp_path / "b.jsonl").write_text('{"text": "one"}\n{"text": "two three four five"}\n')
    scan(str(tmp_path / "a.jsonl"), out=str(keep), progress=False)
    (keep / "summary.json").chmod(0o640)
    out.mkdir()
    for name in ("lengths.parquet", "summary.json"):
        (out / name).symlink_to(keep / name)
    before = {name: (keep / name).read_bytes() for name in ("lengths.parquet", "summary.json")}

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(output, "write_parquet", stopped)  # stopped while the lengths are written
        with pytest.raises(KeyboardInterrupt):
            scan(str(tmp_path / "b.jsonl"), out=str(out), progress=False)
    assert {name: (keep / name).read_bytes() for name in before} == before  # the earlier pair, whole
    scan(str(tmp_path / "b.jsonl"), out=str(out), progress=False)
    assert all((out / name).is_symlink() for name in before) and (keep / "summary.json").stat().st_mode & 0o777 == 0o640
    assert LengthHistogram.read_parquet(keep / "lengths.parquet").documents == 2
    assert json.loads((keep / "summary.json").read_text())["documents"]["read"] == 2  # a pair of one scan


def test_a_summary_linked_to_the_lengths_is_refused_before_anything_is_counted(tmp_path):
    """A third review: OUT/summary.json -> lengths.parquet (dangling) passed the checks; the scan wrote its lengths
    there, then its summary over them, and said it wrote both."""
    from freqlab.scan import scan

    data = tmp_path / "a.jsonl"
    data.write_text('{"text": "hello world"}\n')
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "summary.json").symlink_to("lengths.parquet")
    with pytest.raises(FreqlabError, match=r"summary\.json and .*lengths\.parquet lead to one file"):
        scan(str(data), out=str(tmp_path / "out"), progress=False)
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["summary.json"]


@pytest.mark.parametrize("name", ["summary.json", "lengths.parquet"])
def test_a_fifo_where_a_result_goes_is_refused_without_waiting_on_it(tmp_path, name):
    """A review: the check of OUT/summary.json or OUT/lengths.parquet opened a FIFO there and hung, holding the lock."""
    from freqlab.scan import scan

    data = tmp_path / "a.jsonl"
    data.write_text('{"text": "hello world"}\n')
    (tmp_path / "out").mkdir()
    os.mkfifo(tmp_path / "out" / name)
    with pytest.raises(FreqlabError, match="a file freqlab did not write"):
        scan(str(data), out=str(tmp_path / "out"), progress=False)


@pytest.mark.parametrize("fails", [("write",), ("flush", "close")])
def test_a_lock_a_full_disk_cannot_take_is_one_line_naming_it(tmp_path, monkeypatch, fails):
    """A review: with 0 bytes free a scan said "Error: [Errno 28] No space left on device", no file named, and left
    an empty .lock behind; again where the pid went into the buffer and its flush failed, then the close's (on a
    disk filled to the byte: a second review)."""
    import errno

    import freqlab.scan.checkpoint as checkpoint
    from freqlab.scan import scan

    data = tmp_path / "a.jsonl"
    data.write_text('{"text": "hello world"}\n')
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def __getattr__(self, name):
            if name in fails:

                def full(*args):
                    if name == "close":
                        self.handle.close()
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

                return full
            return getattr(self.handle, name)

    monkeypatch.setattr(checkpoint.os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    with pytest.raises(FreqlabError, match=r"/out/\.lock: cannot write \(no space left on the device; free some"):
        scan(str(data), out=str(tmp_path / "out"), progress=False)
    assert not (tmp_path / "out" / ".lock").exists()


def test_an_out_that_is_a_device_is_named_no_folder(tmp_path):
    """A review: --out /dev/null said "/dev/null: cannot use as output folder (File exists)"."""
    from freqlab.scan import scan

    data = tmp_path / "a.jsonl"
    data.write_text('{"text": "hello world"}\n')
    with pytest.raises(FreqlabError, match=r"^/dev/null: not a folder; --out names the folder the results go in$"):
        scan(str(data), out="/dev/null", progress=False)


def test_a_fifo_where_the_lock_goes_is_named_as_such(tmp_path):
    """A review: it said "OUT: cannot use as output folder (File or stream is not seekable.)"."""
    from freqlab.scan import scan

    data = tmp_path / "a.jsonl"
    data.write_text('{"text": "hello world"}\n')
    (tmp_path / "out").mkdir()
    os.mkfifo(tmp_path / "out" / ".lock")
    with pytest.raises(FreqlabError, match=r"\.lock: not a file \(a FIFO, a device\), where freqlab keeps its lock"):
        scan(str(data), out=str(tmp_path / "out"), progress=False)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "out" / ".lock").st_mode)
    os.unlink(tmp_path / "out" / ".lock")
    (tmp_path / "out" / ".lock").mkdir()  # a folder there (a second review: the message named OUT)
    with pytest.raises(FreqlabError, match=r"\.lock: a folder, where freqlab keeps its lock"):
        scan(str(data), out=str(tmp_path / "out"), progress=False)


def test_a_corpus_file_that_is_an_output_is_refused_before_it_is_replaced(tmp_path):
    """A review: ``--dataset c/lengths.parquet --out c`` replaced the corpus with its histogram. A freqlab histogram
    scanned as lengths (--length-field), named or through another hard link, is refused too."""
    import polars as pl

    from freqlab.scan import scan

    corpus = tmp_path / "c" / "lengths.parquet"
    corpus.parent.mkdir()
    pl.DataFrame({"text": ["a b c"] * 5}).write_parquet(corpus)
    with pytest.raises(FreqlabError, match=r"c/lengths\.parquet: a file of the corpus, where the scan writes its len"):
        scan(str(corpus), out=str(tmp_path / "c"), progress=False)
    assert pl.read_parquet(corpus).columns == ["text"]
    scan(str(corpus), out=str(tmp_path / "h"), progress=False)  # a histogram freqlab wrote, read as lengths below
    histogram = tmp_path / "h" / "lengths.parquet"
    os.link(histogram, tmp_path / "linked.parquet")
    for named in (histogram, tmp_path / "linked.parquet"):
        before = histogram.read_bytes()
        with pytest.raises(FreqlabError) as error:
            scan(str(named), length_field="length", out=str(tmp_path / "h"), progress=False)
        assert str(error.value).endswith(": a file of the corpus, where the scan writes its lengths.parquet; give "
                                         "another --out")  # fmt: skip
        assert histogram.read_bytes() == before


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_written_files_get_the_mode_the_umask_gives_not_0600(tmp_path, umask):
    previous = os.umask(umask)
    try:
        store = CheckpointStore(tmp_path / "out", {"x": 1})
        store.start(resume=False)
        store.save(sample_part(False), IDENTITY)
    finally:
        os.umask(previous)
    for path in (tmp_path / "out" / MANIFEST, store.path(sample_part(False).shard_id)):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_a_dangling_symlink_as_output_folder_is_one_clear_line(tmp_path):
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(FreqlabError) as error:
        OutputLock(link).acquire()
    assert str(error.value) == (
        f"{link}: a symlink to {tmp_path / 'gone'}, which does not exist; create that folder or choose another --out"
    )


def staged_group(store: CheckpointStore, log: bool, shards: int = 3) -> list[ShardCount]:
    """``shards`` partials staged and written together: one group file."""
    parts = [sample_part(log, f"data/chunk {k}.jsonl") for k in range(shards)]
    parts[1].sampled_out = 9  # partials that differ
    for part in parts:
        store.stage(part, {**IDENTITY, "size": len(part.shard_id)})
    store.flush()
    return parts


@pytest.mark.parametrize("log", [False, True])
def test_partials_staged_together_round_trip_exactly_from_one_group_file(tmp_path, log):
    store = CheckpointStore(tmp_path, {"tokenizer": "t"})
    store.start(resume=False)
    parts = staged_group(store, log)
    (group,) = tmp_path.glob("group+*.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([MANIFEST, group.name])
    again = CheckpointStore(tmp_path, {"tokenizer": "t"})
    again.start(resume=True)
    for part in parts:
        loaded = again.load(part.shard_id, {**IDENTITY, "size": len(part.shard_id)})
        assert state(loaded) == state(part)
    assert again.load("data/chunk 3.jsonl", IDENTITY) is None and again.recounted == {}  # none: not recounted
    store.stage(sample_part(log), IDENTITY)  # staged alone: its own checkpoint, as save() writes it
    store.flush()
    assert store.path("data/chunk 1.jsonl").exists() and len(list(tmp_path.glob("group+*"))) == 1


def test_an_edited_partial_of_a_group_is_recounted_alone(tmp_path):
    import polars as pl

    store = CheckpointStore(tmp_path, {})
    store.start(resume=False)
    parts = staged_group(store, log=False)
    (group,) = tmp_path.glob("group+*.parquet")
    metadata, frame = pl.read_parquet_metadata(group), pl.read_parquet(group)
    rows = json.loads(metadata["freqlab"])["group"][0]["rows"]
    edited = frame.with_columns(pl.when(pl.int_range(pl.len()) == rows).then(pl.col("count") + 1).otherwise("count"))
    edited.write_parquet(group, metadata=metadata)  # the second partial's first row
    again = CheckpointStore(tmp_path, {})
    loaded = [again.load(part.shard_id, {**IDENTITY, "size": len(part.shard_id)}) for part in parts]
    assert [part is None for part in loaded] == [False, True, False]
    assert again.recounted == {"damaged or edited": 1}
    (group,) = tmp_path.glob("group+*.parquet")
    group.write_bytes(b"PAR1 not a parquet file")  # a damaged group file: all it held is recounted
    again = CheckpointStore(tmp_path, {})
    assert again.load(parts[0].shard_id, IDENTITY) is None and again.recounted == {"damaged": 1}  # one file


def test_a_shard_checkpointed_alone_and_again_in_a_group_uses_the_trusted_one(tmp_path):
    """Resumed after its file changed, a shard is counted and checkpointed again, perhaps in a group, beside its
    old checkpoint: the one made from the file as it is now is used, and nothing is said to be recounted."""
    store = CheckpointStore(tmp_path, {})
    store.start(resume=False)
    store.save(sample_part(False, "data/chunk 0.jsonl"), {"size": 1})
    parts = staged_group(store, log=False)
    again = CheckpointStore(tmp_path, {})
    assert state(again.load(parts[0].shard_id, {**IDENTITY, "size": len(parts[0].shard_id)})) == state(parts[0])
    assert again.recounted == {}
    assert again.load(parts[0].shard_id, {"size": 2}) is None and again.recounted == {"its data file changed": 1}


def test_a_fresh_scan_removes_group_files_and_their_interrupted_writes(tmp_path):
    store = CheckpointStore(tmp_path, {"x": 1})
    store.start(resume=False)
    staged_group(store, log=True)
    (tmp_path / ".group+0123456789abcdef.parquet.k3x9q_1.tmp").write_bytes(b"half")
    (tmp_path / "group+notes.parquet").write_text("mine")  # named like one, but not: refused, nothing removed
    with pytest.raises(FreqlabError, match=r"holds files freqlab did not write \(group\+notes.parquet\)"):
        CheckpointStore(tmp_path, {"x": 2}).start(resume=False)
    (tmp_path / "group+notes.parquet").unlink()
    CheckpointStore(tmp_path, {"x": 2}).start(resume=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST]


def test_a_flush_cut_short_keeps_its_partials_staged_for_the_next(tmp_path, monkeypatch):
    """Ctrl-C can land in a group's write: the partials stay staged, and the scan's exit writes them."""
    from freqlab.scan import checkpoint

    store = CheckpointStore(tmp_path, {})
    store.start(resume=False)
    parts = [sample_part(False, f"data/chunk {k}.jsonl") for k in range(3)]
    for part in parts:
        store.stage(part, IDENTITY)
    write = checkpoint.write_parquet

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint, "write_parquet", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.flush()
    assert store.staged == 3
    monkeypatch.setattr(checkpoint, "write_parquet", write)
    store.flush()
    assert store.staged == 0
    again = CheckpointStore(tmp_path, {})
    assert [state(again.load(part.shard_id, IDENTITY)) for part in parts] == [state(part) for part in parts]


def test_partials_with_other_columns_are_grouped_apart_not_written_one_by_one(tmp_path):
    """A sampled shard's log has a position column, a shard cut by a limit may have none: one group each."""
    store = CheckpointStore(tmp_path, {})
    store.start(resume=False)
    parts = [sample_part(True, f"data/chunk {k}.jsonl") for k in range(6)]
    for part in parts[3:]:
        part.log.positions.clear()  # no position column
    for part in parts:
        store.stage(part, IDENTITY)
    store.flush()
    assert len(list(tmp_path.glob("group+*.parquet"))) == 2 and len(list(tmp_path.glob("*.parquet"))) == 2
    again = CheckpointStore(tmp_path, {})
    assert [state(again.load(part.shard_id, IDENTITY)) for part in parts] == [state(part) for part in parts]


def test_a_file_named_like_a_group_but_not_as_freqlab_names_one_is_not_read_as_a_checkpoint(tmp_path):
    store = CheckpointStore(tmp_path, {})
    store.start(resume=False)
    (tmp_path / "group+x.parquet").write_bytes(b"not freqlab's")
    assert store.load("data/chunk 1.jsonl", IDENTITY) is None and store.recounted == {}


def test_the_lock_file_is_never_opened_through_a_symbolic_link(tmp_path):
    # opening it for writing truncated whatever the link led to, before any other check refused the folder
    (tmp_path / "victim.txt").write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / ".lock").symlink_to(tmp_path / "victim.txt")
    with pytest.raises(FreqlabError, match=r"out/\.lock: a symbolic link; remove it or choose another --out$"):
        OutputLock(out).acquire()
    assert (tmp_path / "victim.txt").read_text() == "precious"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="planting another user's link needs root")
def test_an_output_folder_behind_another_users_link_in_a_shared_folder_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (tmp_path / "theirs").mkdir()
    (shared / "run").symlink_to(tmp_path / "theirs")
    os.lchown(shared / "run", 12345, 12345)
    with pytest.raises(FreqlabError, match=r"cannot write \(another user's symbolic link in a shared folder"):
        OutputLock(shared / "run").acquire()
    assert os.listdir(tmp_path / "theirs") == []


def test_a_failed_file_round_trips_and_an_older_checkpoint_of_one_is_recounted(tmp_path):
    """``failed`` (a file that failed while read: none of its documents count) is kept in the header; a checkpoint
    written before it existed, holding an unreadable-file skip, counted that file's documents: it is not used (a
    resume from one gave 21 documents where a fresh scan gives 9)."""
    from freqlab.corpus.base import UNREADABLE_FILE
    from freqlab.files import write_parquet
    from freqlab.scan.checkpoint import _checksum, _read_checkpoint

    store = CheckpointStore(tmp_path, {"tokenizer": "t"})
    store.start(resume=False)
    part = ShardCount(shard_id="b.jsonl.zst", failed=True)
    part.skipped[UNREADABLE_FILE] = 1
    store.save(part, IDENTITY)
    assert store.load("b.jsonl.zst", IDENTITY).failed
    path = store.path("b.jsonl.zst")
    frame, header = _read_checkpoint(path)
    del header["failed"]  # as an older freqlab wrote it, with a checksum of its own header
    header["checksum"] = _checksum(frame, {k: v for k, v in header.items() if k != "checksum"})
    write_parquet(path, frame, header)
    assert store.load("b.jsonl.zst", IDENTITY) is None


def test_workers_refused_for_memory_leave_the_output_folder_as_it_was(tmp_path, monkeypatch):
    """A review: --workers past the memory was refused after --out was taken, its earlier checkpoints cleared and a
    new .lock and manifest left; the refusal now comes first."""
    from freqlab.resources import ResourceError
    from freqlab.scan import scan

    for name in "abc":
        (tmp_path / f"{name}.jsonl").write_text('{"text": "hello world"}\n' * 3)
    out = tmp_path / "out"
    scan(str(tmp_path / "*.jsonl"), out=str(out), workers=1, progress=False)
    before = {path: path.stat().st_mtime_ns for path in out.rglob("*")}
    monkeypatch.setenv("FREQLAB_MEMORY_BYTES", str(100 << 20))  # 3 workers need ~192 MB
    with pytest.raises(ResourceError, match=r"^--workers 3 needs ~.* \(3 worker processes for 3 shards"):
        scan(str(tmp_path / "*.jsonl"), out=str(out), workers=3, progress=False)
    assert {path: path.stat().st_mtime_ns for path in out.rglob("*")} == before
