"""Every engine gives the same exact histogram: in-process, a local process pool, and Ray."""

from __future__ import annotations

import sys

import pytest

from freqlab.errors import FreqlabError
from freqlab.scan import scan

from .conftest import assert_same_histogram, reference_histogram


def run(folder, **options):
    return scan("slimpajama", data_files=str(folder / "*.jsonl"), L=[512], regimes=["natural"], progress=False,
                **options)


def test_scan_equals_the_independent_count_split_by_source(slimpajama_dir, corpus_records, counter):
    result = run(slimpajama_dir, workers=1)
    expected = reference_histogram([r for shard in corpus_records for r in shard], counter)
    assert_same_histogram(result.histogram, expected)
    assert sorted(result.histogram.sources) == ["RedPajamaBook", "RedPajamaGithub", "RedPajamaStackExchange"]
    assert sum(h.tokens for h in result.histogram.sources.values()) == result.histogram.tokens
    docs = result.summary["documents"]
    assert (docs["read"], docs["tokenized"], docs["empty"], docs["skipped"]) == (90, 84, 6, {})
    assert docs["read"] == docs["tokenized"] + docs["empty"] + sum(docs["skipped"].values())


def test_the_result_does_not_depend_on_workers_or_batch_size(slimpajama_dir):
    serial = run(slimpajama_dir, workers=1, batch_size=1000)
    pooled = run(slimpajama_dir, workers=2, batch_size=3)
    assert_same_histogram(serial.histogram, pooled.histogram)
    assert pooled.summary["scan"]["workers"] == 2
    assert serial.summary["windows"] == pooled.summary["windows"]


def test_ray_engine_equals_the_local_engine(slimpajama_dir):
    pytest.importorskip("ray")
    local = run(slimpajama_dir, workers=1)
    on_ray = run(slimpajama_dir, engine="ray", workers=2)  # starts (and stops) a local 2-CPU Ray instance
    assert_same_histogram(local.histogram, on_ray.histogram)
    assert on_ray.summary["scan"]["engine"] == "ray"


def test_ray_engine_without_ray_installed_says_how_to_install_it(slimpajama_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(FreqlabError, match=r"pip install 'freqlab\[ray\]'"):
        run(slimpajama_dir, engine="ray")
