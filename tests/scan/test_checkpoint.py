"""Checkpoints round-trip exactly, are written atomically, and refuse a resume with other settings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from freqlab.errors import FreqlabError
from freqlab.scan.checkpoint import MANIFEST, CheckpointStore, safe_name
from freqlab.scan.counts import DocumentLog, ShardCount


def sample_part(log: bool) -> ShardCount:
    part = ShardCount(shard_id="data/chunk 1.jsonl", sampled_out=4)
    codes = np.array([5, 0, 300_000, -1, 5, 7, 0], np.int64)  # 300k > the dense limit: a sparse entry
    sources = np.array([1, 1, 2, 0, 2, 1, 0], np.int32)
    labels, reasons = [None, "web", "code"], ["malformed-json"]
    part.add(codes, sources, labels, reasons)
    if log:
        part.log = DocumentLog([codes], [sources], [np.arange(7) * 2], labels, reasons)
    return part


def state(part: ShardCount) -> tuple:
    lengths = {label: [a.tolist() for a in c.to_arrays()] for label, c in part.lengths.items()}
    return lengths, dict(part.empty), dict(part.skipped), part.sampled_out, part.documents_read, part.tokens


@pytest.mark.parametrize("log", [False, True])
def test_a_checkpoint_round_trips_exactly(tmp_path, log):
    store = CheckpointStore(tmp_path, {"tokenizer": "t"})
    store.start(resume=False)
    part = sample_part(log)
    store.save(part)
    loaded = store.load(part.shard_id)
    assert state(loaded) == state(part)
    assert state(part)[0] == {"web": [[5, 7], [1, 1]], "code": [[5, 300_000], [1, 1]]}
    if log:
        assert [a.tolist() for a in loaded.log.arrays()] == [a.tolist() for a in part.log.arrays()]
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


def test_distinct_shard_ids_never_share_a_file_name():
    assert safe_name("a/b.jsonl") != safe_name("a_b.jsonl")
    assert "/" not in safe_name("../../etc/passwd")


def test_resume_refuses_other_settings_and_a_fresh_scan_clears_old_checkpoints(tmp_path):
    store = CheckpointStore(tmp_path, {"tokenizer": "tekken", "sample_rate": None})
    store.start(resume=False)
    store.save(sample_part(False))
    other = CheckpointStore(tmp_path, {"tokenizer": "gpt2", "sample_rate": None})
    with pytest.raises(FreqlabError, match=r"other settings \(tokenizer: \"tekken\" then, \"gpt2\" now\)"):
        other.start(resume=True)
    CheckpointStore(tmp_path, {"tokenizer": "tekken", "sample_rate": None}).start(resume=True)
    assert store.load("data/chunk 1.jsonl") is not None
    other.start(resume=False)  # starting over: the old partials must not leak into the new scan
    assert other.load("data/chunk 1.jsonl") is None
    assert json.loads((tmp_path / MANIFEST).read_text()) == {"sample_rate": None, "tokenizer": "gpt2"}


def test_a_damaged_checkpoint_is_recounted_not_trusted(tmp_path):
    store = CheckpointStore(tmp_path, {})
    store.start(resume=False)
    store.path("s").write_bytes(b"not parquet")
    assert store.load("s") is None
