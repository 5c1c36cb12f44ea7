"""An interrupted scan resumes from its per-shard checkpoints to the identical histogram."""

from __future__ import annotations

import functools
import json

import pytest

import freqlab.scan.work as work
from freqlab.errors import FreqlabError
from freqlab.histogram import LengthHistogram

from .conftest import assert_same_histogram, scan_slimpajama

run = functools.partial(scan_slimpajama, workers=1)


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
    assert_same_histogram(resumed.histogram, full.histogram)
    assert_same_histogram(LengthHistogram.read_parquet(out / "lengths.parquet"), full.histogram)
    assert json.loads((out / "summary.json").read_text())["documents"] == full.summary["documents"]


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


def test_resume_refuses_a_scan_with_other_settings(tmp_path, slimpajama_dir):
    out = tmp_path / "out"
    run(slimpajama_dir, out=out, max_docs=10)
    with pytest.raises(FreqlabError, match=r"cannot resume .*max_docs: 10 then, 20 now"):
        run(slimpajama_dir, out=out, max_docs=20, resume=True)
    with pytest.raises(FreqlabError, match="special_tokens_counted: false then, true now"):
        run(slimpajama_dir, out=out, max_docs=10, resume=True, add_special_tokens=True)


def test_resume_needs_an_output_folder(slimpajama_dir):
    with pytest.raises(FreqlabError, match="resume needs an output folder"):
        run(slimpajama_dir, resume=True)
