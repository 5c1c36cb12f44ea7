"""An interrupted scan resumes from its per-shard checkpoints to the identical histogram."""

from __future__ import annotations

import functools
import json

import pytest

import freqlab.scan.work as work
from freqlab.corpus import open_corpus
from freqlab.errors import FreqlabError
from freqlab.histogram import LengthHistogram
from freqlab.scan import scan

from .conftest import assert_same_histogram, real_texts, scan_slimpajama, write_slimpajama

run = functools.partial(scan_slimpajama, workers=1)
_real_count_shard = work.count_shard


class Crash(Exception):
    pass


def crash_after(monkeypatch, shards_done: int, error=Crash) -> list:
    """Make the in-process engine fail when starting shard number ``shards_done + 1``; returns the ids run."""
    real, started = work.count_shard, []

    def count_shard(shard, *args, **kwargs):
        started.append(shard.id)
        if len(started) > shards_done:
            raise error("simulated crash")
        return real(shard, *args, **kwargs)

    monkeypatch.setattr(work, "count_shard", count_shard)
    return started


def test_a_crashed_scan_resumes_to_the_identical_histogram(tmp_path, slimpajama_dir, monkeypatch):
    full = run(slimpajama_dir)
    out = tmp_path / "out"
    crash_after(monkeypatch, 2)
    with pytest.raises(Crash):
        run(slimpajama_dir, out=out)
    assert len(list((out / "checkpoints").glob("*.parquet"))) == 2
    assert not (out / "lengths.parquet").exists()
    monkeypatch.undo()
    started = crash_after(monkeypatch, 10)  # count the shards the resumed scan runs
    resumed = run(slimpajama_dir, out=out, resume=True)
    assert started == ["chunk_2.jsonl"]
    assert resumed.summary["scan"]["resumed_shards"] == 2
    assert " tokens/s in the shards counted now (" in resumed.report()  # not the whole count's rate
    assert_same_histogram(resumed.histogram, full.histogram)
    assert_same_histogram(LengthHistogram.read_parquet(out / "lengths.parquet"), full.histogram)
    assert json.loads((out / "summary.json").read_text())["documents"] == full.summary["documents"]


@pytest.mark.parametrize("error", [Crash, KeyboardInterrupt])
def test_a_scan_of_many_shards_checkpoints_them_in_groups_and_resumes_to_the_identical_histogram(
    tmp_path, slimpajama_dir, monkeypatch, error
):
    """Above GROUP_ABOVE shards finished ones wait (up to GROUP_SECONDS) to be written together; however the scan
    ends, what waits is written before it returns."""
    import freqlab.scan.output as output

    full = run(slimpajama_dir)
    out = tmp_path / "out"
    monkeypatch.setattr(output, "GROUP_ABOVE", 1)
    monkeypatch.setattr(output, "GROUP_SECONDS", float("inf"))
    crash_after(monkeypatch, 2, error)
    with pytest.raises(error):
        run(slimpajama_dir, out=out)
    assert [p.name.startswith("group+") for p in (out / "checkpoints").glob("*.parquet")] == [True]
    monkeypatch.setattr(work, "count_shard", _real_count_shard)
    started = crash_after(monkeypatch, 10)
    resumed = run(slimpajama_dir, out=out, resume=True)
    assert started == ["chunk_2.jsonl"] and resumed.summary["scan"]["resumed_shards"] == 2
    assert_same_histogram(resumed.histogram, full.histogram)
    assert len(list((out / "checkpoints").glob("*.parquet"))) == 2  # the group, and the last shard's own (alone)


def test_resume_with_limits_cuts_at_the_same_document(tmp_path, slimpajama_dir, monkeypatch):
    full = run(slimpajama_dir, max_docs=40)
    out = tmp_path / "out"
    crash_after(monkeypatch, 1)
    with pytest.raises(Crash):
        run(slimpajama_dir, out=out, max_docs=40)
    monkeypatch.undo()
    resumed = run(slimpajama_dir, out=out, max_docs=40, resume=True)
    assert_same_histogram(resumed.histogram, full.histogram)
    assert resumed.summary["documents"]["read"] == 40


def test_a_shard_cut_at_a_limit_is_counted_again_when_a_resume_needs_more_of_it(tmp_path):
    """max_docs = 12 over a (5 documents), b (10), c (10): b's checkpoint holds its first 7. a then lost 2 lines and
    the resume recounted a (3) but took b's 7 as all of b there was, and 2 of c's: not the first 12 documents of
    the corpus (engines review). A checkpoint cut at a limit is counted again on resume."""
    texts = real_texts(25)
    folder, out = tmp_path / "data", tmp_path / "out"
    write_slimpajama(folder / "a.jsonl", [(t, "x") for t in texts[:5]])
    write_slimpajama(folder / "b.jsonl", [(t, "x") for t in texts[5:15]])
    write_slimpajama(folder / "c.jsonl", [(t, "x") for t in texts[15:]])
    run(folder, out=out, max_docs=12)
    write_slimpajama(folder / "a.jsonl", [(t, "x") for t in texts[:3]])
    resumed = run(folder, out=out, max_docs=12, resume=True)
    fresh = run(folder, max_docs=12)
    assert_same_histogram(resumed.histogram, fresh.histogram)
    assert resumed.summary["scan"]["recounted_checkpoints"] == {
        "its data file changed": 1,
        "read up to the limit only": 1,
    }
    assert resumed.summary["tokens"] == fresh.summary["tokens"] and resumed.summary["documents"]["read"] == 12


def test_resume_refuses_a_scan_with_other_settings(tmp_path, slimpajama_dir):
    out = tmp_path / "out"
    run(slimpajama_dir, out=out, max_docs=10)
    with pytest.raises(FreqlabError, match=r"cannot resume .*max_docs: 10 then, 20 now"):
        run(slimpajama_dir, out=out, max_docs=20, resume=True)
    with pytest.raises(FreqlabError, match="special_tokens_counted: false then, true now"):
        run(slimpajama_dir, out=out, max_docs=10, resume=True, add_special_tokens=True)


def test_resume_refuses_a_corpus_with_a_file_added_and_says_so(tmp_path, slimpajama_dir):
    out = tmp_path / "out"
    run(slimpajama_dir, out=out, max_docs=10)
    (slimpajama_dir / "added.jsonl").write_text(json.dumps({"text": "one more"}) + "\n")
    with pytest.raises(FreqlabError) as refused:
        run(slimpajama_dir, out=out, max_docs=10, resume=True)
    message = str(refused.value)
    # what changed is named, key by key, not as two hashes
    assert "corpus_description.files: 3 then, 4 now" in message and '{"jsonl": 3} then, {"jsonl": 4} now' in message
    assert "shards.count: 3 then, 4 now" in message
    assert "now (the corpus's files or parts differ: a file added, removed" in message


def test_resume_needs_an_output_folder(slimpajama_dir):
    with pytest.raises(FreqlabError, match="resume needs an output folder"):
        run(slimpajama_dir, resume=True)


def test_an_empty_output_folder_is_refused_not_the_working_folder(slimpajama_dir, tmp_path, monkeypatch):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    with pytest.raises(FreqlabError, match="an empty path names no file or folder"):
        run(slimpajama_dir, out="")
    assert list((tmp_path / "work").iterdir()) == []


def test_another_scans_checkpoints_in_the_same_folder_are_never_used(tmp_path, slimpajama_dir, monkeypatch):
    # issue 14, case 1: scan A's checkpoints end up beside scan B's manifest (two scans on one --out, before
    # the lock existed); resuming B must count B, not report A's tokens under B's tokenizer
    out_a, out_b = tmp_path / "a", tmp_path / "b"
    run(slimpajama_dir, out=out_a)
    crash_after(monkeypatch, 1)
    with pytest.raises(Crash):
        run(slimpajama_dir, out=out_b, add_special_tokens=True)  # B: another setting, interrupted after one shard
    monkeypatch.undo()
    for checkpoint in (out_a / "checkpoints").glob("*.parquet"):  # A's checkpoints replace B's, same names
        (out_b / "checkpoints" / checkpoint.name).write_bytes(checkpoint.read_bytes())
    resumed = run(slimpajama_dir, out=out_b, add_special_tokens=True, resume=True)
    fresh = run(slimpajama_dir, add_special_tokens=True)
    assert_same_histogram(resumed.histogram, fresh.histogram)
    assert resumed.summary["scan"]["recounted_checkpoints"] == {"made by another scan": 3}
    assert "no checkpoint could be used (3 made by another scan)" in resumed.report()


def test_a_data_file_changed_since_its_checkpoint_is_recounted(tmp_path, slimpajama_dir, corpus_records):
    from .conftest import write_slimpajama

    out = tmp_path / "out"
    run(slimpajama_dir, out=out)
    changed = corpus_records[1][:-3]  # same name, other content (and size)
    write_slimpajama(slimpajama_dir / "chunk_1.jsonl", changed)
    resumed = run(slimpajama_dir, out=out, resume=True)
    assert_same_histogram(resumed.histogram, run(slimpajama_dir).histogram)
    assert resumed.summary["scan"]["resumed_shards"] == 2
    assert resumed.summary["scan"]["recounted_checkpoints"] == {"its data file changed": 1}


def test_a_data_file_rewritten_to_the_same_size_and_time_is_recounted(tmp_path, slimpajama_dir):
    """An adversary's review: a file edited in place to the same size with its modification time put back (as
    ``cp -p``, ``touch -r`` and ``rsync -t`` leave it) was resumed from its stale checkpoint; its status-change time
    (set by the system on every write and utime) tells."""
    import os

    out = tmp_path / "out"
    run(slimpajama_dir, out=out)
    path = slimpajama_dir / "chunk_1.jsonl"
    before = path.stat()
    data = path.read_bytes()
    path.write_bytes(data.replace(b"the", b"tho"))  # same size, other tokens
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    resumed = run(slimpajama_dir, out=out, resume=True)
    assert_same_histogram(resumed.histogram, run(slimpajama_dir).histogram)
    assert resumed.summary["scan"]["recounted_checkpoints"] == {"its data file changed": 1}


def test_a_checkpoint_whose_file_identity_checked_less_is_recounted_saying_so(tmp_path, slimpajama_dir):
    """A checkpoint of before the status-change time was part of a file's identity cannot tell a rewrite with its
    time put back: recounted, under its own reason (a review saw them all under 'its data file changed')."""
    import polars as pl

    from freqlab.files import write_parquet
    from freqlab.scan import checkpoint

    out = tmp_path / "out"
    run(slimpajama_dir, out=out)
    path = next((out / "checkpoints").glob("chunk_1.jsonl*"))
    frame, header = pl.read_parquet(path), checkpoint._read_header(path)
    header = {k: v for k, v in header.items() if k != "checksum"}
    header["identity"] = {k: v for k, v in header["identity"].items() if k != "ctime_ns"}
    write_parquet(path, frame, {**header, "checksum": checkpoint._checksum(frame, header)})
    resumed = run(slimpajama_dir, out=out, resume=True)
    assert_same_histogram(resumed.histogram, run(slimpajama_dir).histogram)
    reason = "written by an older freqlab, whose file identity checked less"
    assert resumed.summary["scan"]["recounted_checkpoints"] == {reason: 1}


def test_an_edited_checkpoint_is_recounted_not_trusted(tmp_path, slimpajama_dir):
    import polars as pl

    out = tmp_path / "out"
    full = run(slimpajama_dir, out=out)
    path = sorted((out / "checkpoints").glob("*.parquet"))[0]
    metadata = pl.read_parquet_metadata(path)
    pl.read_parquet(path).with_columns(pl.col("count") * 2).write_parquet(path, metadata=metadata)  # doubled
    resumed = run(slimpajama_dir, out=out, resume=True)
    assert_same_histogram(resumed.histogram, full.histogram)
    assert resumed.summary["scan"]["recounted_checkpoints"] == {"damaged or edited": 1}


def test_a_second_scan_on_the_same_folder_stops_at_once(tmp_path, slimpajama_dir):
    from freqlab.scan.checkpoint import OutputLock

    out = tmp_path / "out"
    holder = OutputLock(out)
    holder.acquire()  # another scan is writing there
    try:
        with pytest.raises(FreqlabError, match=r"is in use by another scan \(pid \d+\); wait for it"):
            run(slimpajama_dir, out=out)
    finally:
        holder.release()
    run(slimpajama_dir, out=out)  # free again


@pytest.mark.parametrize("damage", [b"{", b"[]", b'{"fingerprint": {}, "hash": "forged"}'])
def test_a_damaged_manifest_is_one_line(tmp_path, slimpajama_dir, damage):
    out = tmp_path / "out"
    run(slimpajama_dir, out=out)
    (out / "checkpoints" / "manifest.json").write_bytes(damage)
    with pytest.raises(FreqlabError, match=r"manifest\.json: not a readable checkpoint manifest") as caught:
        run(slimpajama_dir, out=out, resume=True)
    assert "\n" not in str(caught.value)


def test_a_damaged_manifest_says_what_lets_a_fresh_scan_run(tmp_path, slimpajama_dir):
    """A review: it said "rescan without --resume", which then refused the folder for the manifest it could not
    read (a file freqlab did not write): the message names moving it away, which lets the fresh scan run."""
    out = tmp_path / "out"
    run(slimpajama_dir, out=out)
    (out / "checkpoints" / "manifest.json").write_bytes(b"{")
    with pytest.raises(FreqlabError, match="move it away and rescan without --resume, or choose another --out"):
        run(slimpajama_dir, out=out, resume=True)
    (out / "checkpoints" / "manifest.json").rename(tmp_path / "manifest.json")
    assert run(slimpajama_dir, out=out).histogram.documents_read == run(slimpajama_dir).histogram.documents_read


def test_a_local_corpus_resumes_however_its_folder_is_spelled(tmp_path, slimpajama_dir, monkeypatch):
    """A review: a scan of `corp` resumed as `./corp/` or by its absolute path was refused ("corpus: corp then,
    ./corp/ now"), the same files: a long scan resumed from another working folder started over."""
    local = functools.partial(scan, progress=False, workers=1, L=[512], regimes=["natural"])
    out, corp = tmp_path / "out", slimpajama_dir.rename(tmp_path / "corp")  # "slimpajama" names the preset
    monkeypatch.chdir(tmp_path)
    whole = local("corp", out=out)
    for spelling in ("./corp/", str(corp)):
        resumed = local(spelling, out=out, resume=True)
        assert resumed.summary["scan"]["resumed_shards"] == len(open_corpus(spelling).shards)
        assert_same_histogram(resumed.histogram, whole.histogram)
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.jsonl").write_text('{"text": "another corpus"}\n')
    with pytest.raises(FreqlabError, match=r"cannot resume from .*root"):  # another folder still refused
        local(str(other), out=out, resume=True)
    # a preset's --data-files alike (a second review): relative, then absolute
    preset = functools.partial(local, "slimpajama", out=tmp_path / "preset")
    whole = preset(data_files="corp/*.jsonl")
    assert_same_histogram(preset(data_files=f"{corp}/*.jsonl", resume=True).histogram, whole.histogram)


def test_without_sampling_a_limited_scan_logs_no_positions(tmp_path, slimpajama_dir):
    # issue 14, case 6: with --max-docs, a shard's log is kept per document; positions (0, 1, 2...) are not stored
    # (each document's tokenizer backend is: a cut keeps the counts per backend of the documents it keeps)
    import polars as pl

    out = tmp_path / "out"
    run(slimpajama_dir, out=out, max_docs=40)
    for path in (out / "checkpoints").glob("*.parquet"):
        assert pl.read_parquet(path).columns == ["source_index", "code", "backend", "blank_before"]


def test_a_crashed_scan_of_a_multi_frame_zst_resumes_from_its_finished_parts(tmp_path, monkeypatch):
    """Parts cut where frames start are checkpointed like any shard: the resumed scan counts the others only."""
    import zstandard

    from freqlab.corpus import open_corpus, ranges
    from freqlab.scan import scan

    monkeypatch.setattr(ranges, "MIN_RANGE_BYTES", 4096)  # small parts: the file is cut
    body = b"".join(json.dumps({"text": "word " * (k % 89) + str(k)}).encode() + b"\n" for k in range(3000))
    path = tmp_path / "a.jsonl.zst"
    path.write_bytes(b"".join(zstandard.compress(body[at : at + 7001]) for at in range(0, len(body), 7001)))
    parts = [shard.id for shard in open_corpus(str(path)).shards]
    assert len(parts) > 4 and parts[0].startswith("a.jsonl.zst@frames0-")
    full = scan(str(path), workers=1, progress=False)
    out = tmp_path / "out"
    crash_after(monkeypatch, 3)
    with pytest.raises(Crash):
        scan(str(path), workers=1, progress=False, out=str(out))
    monkeypatch.undo()
    monkeypatch.setattr(ranges, "MIN_RANGE_BYTES", 4096)
    started = crash_after(monkeypatch, len(parts))
    resumed = scan(str(path), workers=1, progress=False, out=str(out), resume=True)
    assert started == parts[3:] and resumed.summary["scan"]["resumed_shards"] == 3  # one worker: corpus order
    assert_same_histogram(resumed.histogram, full.histogram)
    assert resumed.histogram.documents_read == 3000


def test_resume_refuses_checkpoints_of_a_tokenizer_whose_rules_changed_under_the_same_vocabulary(
    tmp_path, slimpajama_dir, corpus_records
):
    # Same vocabulary, other pre-tokenizer: the vocabulary hash alone cannot tell them apart, the counts differ
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    from freqlab.tokenization import load_tokenizer

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator([text for shard in corpus_records for text, _ in shard], trainer)
    split, whole = tmp_path / "split.json", tmp_path / "whole.json"
    tokenizer.save(str(split))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.save(str(whole))
    a, b = load_tokenizer(str(split)), load_tokenizer(str(whole))
    assert a.vocab_hash == b.vocab_hash and a.rules_hash != b.rules_hash

    out = tmp_path / "out"
    first = run(slimpajama_dir, out=out, tokenizer=str(split))
    with pytest.raises(FreqlabError, match=r"cannot resume .*tokenizer_rules_hash"):
        run(slimpajama_dir, out=out, tokenizer=str(whole), resume=True)
    assert run(slimpajama_dir, tokenizer=str(whole)).histogram.tokens != first.histogram.tokens


def duplicate(folder):
    """A second path to a file the walk reads (after it, by name): read once, reported as a duplicate."""
    (folder / "zz_link.jsonl").symlink_to(sorted(folder.glob("*.jsonl"))[0])


@pytest.mark.parametrize(
    ("name", "key"),
    [
        (".DS_Store", "hidden_entries"),
        ("README.md", "ignored_files"),
        ("notes.parquet", "other_formats"),
        (duplicate, "duplicate_files"),
    ],
)
def test_a_file_the_walk_passes_over_appearing_in_the_corpus_folder_does_not_stop_a_resume(
    tmp_path, slimpajama_dir, monkeypatch, name, key
):
    out = tmp_path / "out"
    folder = functools.partial(scan, str(slimpajama_dir), workers=1, progress=False, out=out, format="jsonl")
    full = folder(out=None)
    parts = [shard.id for shard in open_corpus(str(slimpajama_dir)).shards]
    crash_after(monkeypatch, 2)
    with pytest.raises(Crash):
        folder()
    monkeypatch.undo()
    if callable(name):
        name(slimpajama_dir)
    else:
        (slimpajama_dir / name).write_bytes(b"\0")
    started = crash_after(monkeypatch, len(parts))  # count the shards the resumed scan runs
    resumed = folder(resume=True)
    assert started == parts[2:] and resumed.summary["scan"]["resumed_shards"] == 2  # the checkpoints are used
    assert_same_histogram(resumed.histogram, full.histogram)
    assert resumed.summary["corpus"]["description"][key] == ({"parquet": 1} if key == "other_formats" else 1)
    # and once more: the run went on under its checkpoints' fingerprint
    assert folder(resume=True).summary["scan"]["resumed_shards"] == len(parts)


def test_a_pool_scan_interrupted_after_its_first_checkpoint_resumes_to_the_identical_histogram(
    tmp_path, slimpajama_dir, monkeypatch, pool_kept
):
    """Several workers take the largest shards first, in no fixed order of ending: interrupted once one is
    checkpointed, the scan resumes with the others and gives the histogram of an uninterrupted one."""
    from freqlab.scan.output import ScanOutput

    full = scan_slimpajama(slimpajama_dir)
    save, saved = ScanOutput.save, []

    def interrupted_after_one(self, part, shard):
        save(self, part, shard)
        saved.append(shard.id)
        raise KeyboardInterrupt

    monkeypatch.setattr(ScanOutput, "save", interrupted_after_one)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        scan_slimpajama(slimpajama_dir, out=str(out))
    monkeypatch.setattr(ScanOutput, "save", save)
    assert len(saved) == 1 and saved[0] in {path.name for path in slimpajama_dir.iterdir()}  # whichever ended first
    resumed = scan_slimpajama(slimpajama_dir, out=str(out), resume=True)
    assert resumed.summary["scan"]["resumed_shards"] == 1 and resumed.summary["scan"]["workers"] == 2
    assert_same_histogram(resumed.histogram, full.histogram)


def test_a_resume_that_finds_no_checkpoints_says_it_started_over(tmp_path, slimpajama_dir):
    """--resume on a folder without a scan's checkpoints started over without a word (engines review)."""
    resumed = run(slimpajama_dir, out=tmp_path / "out", resume=True)
    assert resumed.summary["scan"]["nothing_to_resume"] is True and resumed.summary["scan"]["resumed_shards"] == 0
    assert "resumed    nothing: the output folder held no checkpoints; every shard was counted now" in resumed.report()
    again = run(slimpajama_dir, out=tmp_path / "out", resume=True)
    assert again.summary["scan"]["nothing_to_resume"] is False and "resumed    nothing" not in again.report()
    # a manifest and no checkpoint beside it (a scan stopped before its first shard ended): the same (adversary review)
    for checkpoint in (tmp_path / "out" / "checkpoints").glob("*.parquet"):
        checkpoint.unlink()
    bare = run(slimpajama_dir, out=tmp_path / "out", resume=True)
    assert bare.summary["scan"]["nothing_to_resume"] is True and bare.summary["scan"]["recounted_checkpoints"] == {}


def test_a_builder_scan_resumed_after_its_files_changed_recounts_them(tmp_path):
    """A review: `--dataset json --data-files 'rp/*.jsonl' --resume` after a file shrank from 340 to 100 documents
    reported the old 680 documents: the builder's shards recorded no identity. They record the stamps of the local
    files they read (size, mtime, ctime), as local paths do, so a changed file is recounted."""
    texts = real_texts(12)
    folder = tmp_path / "rp"
    write_slimpajama(folder / "a.jsonl", [(t, "x") for t in texts[:6]])
    write_slimpajama(folder / "b.jsonl", [(t, "x") for t in texts[6:]])
    files, out = str(folder / "*.jsonl"), tmp_path / "out"
    first = scan("json", data_files=files, out=out, progress=False, workers=1, tokenizer="tekken")
    assert first.histogram.documents_read == 12
    write_slimpajama(folder / "b.jsonl", [(t, "x") for t in texts[6:8]])  # b shrinks: 6 documents -> 2
    resumed = scan("json", data_files=files, out=out, resume=True, progress=False, workers=1, tokenizer="tekken")
    fresh = scan("json", data_files=files, progress=False, workers=1, tokenizer="tekken")
    assert resumed.histogram.documents_read == fresh.histogram.documents_read == 8
    assert_same_histogram(resumed.histogram, fresh.histogram)


def test_a_datatrove_file_whose_index_changed_is_recounted_on_resume(tmp_path):
    """A review: a datatrove shard's identity was its .ds only, but its lengths come from NAME.ds.index: an index
    rewritten (the .ds untouched) was resumed from the stale checkpoint."""
    import numpy as np

    folder = tmp_path / "data"
    folder.mkdir()
    for name in ("a", "b"):
        (folder / f"{name}.ds").write_bytes(np.full(12, 7, "<u2").tobytes())
        (folder / f"{name}.ds.index").write_bytes(np.array([3, 7, 12], "<u8").tobytes())
    out = tmp_path / "out"
    first = scan(str(folder), out=str(out), L=[16], regimes=["natural"], progress=False, workers=1)
    assert first.histogram.documents == 6
    (folder / "b.ds.index").write_bytes(np.array([5, 7, 12], "<u8").tobytes())  # other lengths, the same tokens
    resumed = scan(str(folder), out=str(out), resume=True, L=[16], regimes=["natural"], progress=False, workers=1)
    assert resumed.summary["scan"]["resumed_shards"] == 1
    assert sorted(resumed.histogram.lengths.repeat(resumed.histogram.counts).tolist()) == [2, 3, 4, 5, 5, 5]
