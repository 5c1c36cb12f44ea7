"""A data file that changes while its shard is read is never counted: its counts would be of neither version.

Each reader checks the file's identity (size, modification and status-change times; a remote file's size and
ETag) before it reads, and the scan checks it again after the shard is read: a file rewritten in place, even to the
same size, is one line naming it (exit 1), or with ``on_error="skip"`` one ``unreadable-file`` skip and none of its
documents. The rewrite happens at a fixed point of the read (after the first batch is counted), so the tests
are deterministic.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from freqlab.errors import FreqlabError
from freqlab.scan import scan, work

from .conftest import assert_same_histogram, real_texts, reference_histogram, write_slimpajama

LABEL = "RedPajamaBook"
OLD = 1_600_000_000  # an mtime in the past: the rewrite's mtime always differs from it


def rewrite_in_place(path) -> None:
    """Same size, other bytes: each letter ``e`` becomes ``o`` (the JSON stays valid)."""
    data = path.read_bytes()
    with open(path, "r+b") as handle:
        handle.write(data.replace(b"e", b"o"))
    assert path.stat().st_size == len(data)


@pytest.fixture
def after_first_batch(monkeypatch):
    """``arm(action)``: ``action()`` runs once, when the scan counts its first batch (the read is under way)."""
    armed: list = []
    add = work._Tally.add

    def add_after(self, *args, **kwargs):
        if armed:
            armed.pop()()
        return add(self, *args, **kwargs)

    monkeypatch.setattr(work._Tally, "add", add_after)
    return armed.append


@pytest.fixture
def two_files(tmp_path):
    texts = real_texts(30)
    folder = tmp_path / "data"
    write_slimpajama(folder / "a.jsonl", [(t, LABEL) for t in texts[:20]])
    write_slimpajama(folder / "b.jsonl", [(t, LABEL) for t in texts[20:]])
    for name in ("a.jsonl", "b.jsonl"):
        os.utime(folder / name, (OLD, OLD))
    return folder, texts


def run(folder, **options):
    return scan(
        str(folder),
        L=[256],
        regimes=["natural"],
        progress=False,
        workers=1,
        batch_size=4,
        source_field="meta.redpajama_set_name",
        **options,
    )


def test_a_file_rewritten_in_place_during_its_read_is_refused(two_files, after_first_batch):
    folder, _ = two_files
    after_first_batch(lambda: rewrite_in_place(folder / "a.jsonl"))
    with pytest.raises(FreqlabError) as error:
        run(folder)
    message = str(error.value)
    assert message.startswith(f"{folder / 'a.jsonl'} changed while it was being read (same size, but modified")
    assert "\n" not in message


def test_a_corpus_opened_before_a_file_changed_says_to_open_it_again(two_files):
    """A review: open_corpus, then a file appended to, then scan(corpus) said "rescan it", which failed the same way
    with the same corpus object every time: the stamp is the corpus's, taken when it was opened."""
    from freqlab.corpus import open_corpus

    folder, _ = two_files
    corpus = open_corpus(str(folder), source_field="meta.redpajama_set_name")
    with open(folder / "a.jsonl", "a") as handle:
        handle.write('{"text": "one more", "meta": {"redpajama_set_name": "x"}}\n')
    said = r"a\.jsonl changed .*: rescan it \(a corpus from open_corpus: open it again\)"
    with pytest.raises(FreqlabError, match=said):
        scan(corpus, L=[256], regimes=["natural"], progress=False, workers=1)
    reopened = open_corpus(str(folder), source_field="meta.redpajama_set_name")
    assert scan(reopened, L=[256], regimes=["natural"], progress=False, workers=1).histogram.documents == 31


def test_a_rewrite_with_its_modification_time_put_back_is_refused_too(two_files, after_first_batch):
    folder, _ = two_files
    path = folder / "a.jsonl"

    def rewrite_and_restore_time() -> None:
        rewrite_in_place(path)
        os.utime(path, ns=(OLD * 10**9, OLD * 10**9))  # touch -r, cp -p: size and mtime as they were

    after_first_batch(rewrite_and_restore_time)
    with pytest.raises(
        FreqlabError, match=r"changed while it was being read \(same size and modification time, but its"
    ):
        run(folder)


def test_skipped_it_counts_one_unreadable_file_and_none_of_its_documents(two_files, after_first_batch, counter):
    folder, texts = two_files
    after_first_batch(lambda: rewrite_in_place(folder / "a.jsonl"))
    result = run(folder, on_error="skip")
    assert result.summary["documents"]["skipped"] == {"unreadable-file": 1}
    only_b = reference_histogram([(t, LABEL) for t in texts[20:]], counter)  # a.jsonl's first batch is not kept
    assert result.histogram.lengths.tolist() == only_b.lengths.tolist()
    assert result.histogram.counts.tolist() == only_b.counts.tolist()
    assert result.summary["documents"]["tokenized"] == 10


def test_an_unchanged_file_is_counted_as_always(two_files, counter):
    folder, texts = two_files
    assert_same_histogram(run(folder).histogram, reference_histogram([(t, LABEL) for t in texts], counter))


def test_a_token_stream_rewritten_during_its_read_is_refused(tmp_path, after_first_batch, monkeypatch):
    from freqlab.corpus import token_files

    monkeypatch.setattr(token_files, "CHUNK_TOKENS", 1000)  # ten batches
    path = tmp_path / "tokens.npy"
    np.save(path, np.tile(np.arange(1, 11, dtype=np.uint16), 1000))  # documents of 9 tokens + EOS 10
    os.utime(path, (OLD, OLD))
    size = path.stat().st_size
    # same size, other documents: an EOS every 5 tokens
    after_first_batch(lambda: np.save(path, np.tile(np.arange(6, 11, dtype=np.uint16), 2000)))
    with pytest.raises(FreqlabError, match=r"tokens\.npy changed while it was being read \(same size"):
        scan(str(path), eos_id=10, L=[16], regimes=["natural"], progress=False, workers=1)
    assert path.stat().st_size == size


def test_a_file_a_builder_streams_rewritten_during_its_read_is_refused(two_files, after_first_batch):
    """A review: `--dataset json --data-files FILE` counted a file edited during the scan, mixing two versions,
    where `--dataset FILE` refuses it: the builder's shards check the files they stream before and after, too."""
    folder, _ = two_files
    after_first_batch(lambda: rewrite_in_place(folder / "a.jsonl"))
    with pytest.raises(FreqlabError) as error:
        scan("json", data_files=str(folder / "a.jsonl"), progress=False, workers=1, batch_size=4, tokenizer="tekken")
    assert str(error.value).startswith(f"{folder / 'a.jsonl'} changed while it was being read (same size, but modified")


def test_a_builder_file_changed_before_its_shard_starts_is_named_and_skippable(two_files):
    """A second review: a change found before the builder's shard read said "Error: size 47850026 -> 47850039 bytes"
    (no file) and aborted under --on-error skip; it is an unreadable file naming the path, as on local paths."""
    from freqlab.corpus import open_corpus

    folder, _ = two_files
    files = str(folder / "*.jsonl")
    corpus = open_corpus("json", data_files=files)  # the files stamped here
    with open(folder / "b.jsonl", "a") as handle:
        handle.write('{"text": "one more"}\n')
    with pytest.raises(FreqlabError) as error:
        scan(corpus, progress=False, workers=1, tokenizer="tekken")
    assert str(error.value).startswith(f"{folder / 'b.jsonl'} changed while it was being read (size ")
    corpus = open_corpus("json", data_files=files)
    with open(folder / "a.jsonl", "a") as handle:
        handle.write('{"text": "and another"}\n')
    result = scan(corpus, on_error="skip", progress=False, workers=1, tokenizer="tekken")
    assert result.histogram.skipped == {"unreadable-file": 1} and result.histogram.documents == 11  # b's alone


def test_a_datatrove_index_rewritten_during_its_read_is_refused(tmp_path, after_first_batch, monkeypatch):
    """A review: the change check covered the .ds, not NAME.ds.index the lengths are read from."""
    from freqlab.corpus import token_files

    monkeypatch.setattr(token_files, "BATCH_DOCUMENTS", 10)  # ten batches
    path = tmp_path / "t.ds"
    path.write_bytes(np.full(200, 7, "<u2").tobytes())
    index = tmp_path / "t.ds.index"
    index.write_bytes(np.arange(2, 201, 2, dtype="<u8").tobytes())  # 100 documents of 2 tokens
    os.utime(index, (OLD, OLD))
    after_first_batch(lambda: index.write_bytes(np.r_[np.arange(4, 197, 4), 198, 199, 200].astype("<u8").tobytes()))
    with pytest.raises(FreqlabError, match=r"t\.ds\.index changed while it was being read"):
        scan(str(path), L=[16], regimes=["natural"], progress=False, workers=1)
