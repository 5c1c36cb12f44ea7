"""The same SlimPajama-schema records scanned through every reading path give the same exact histogram."""

from __future__ import annotations

import gzip
import json

import pytest
import zstandard

from freqlab.scan import scan

from .conftest import assert_same_histogram, reference_histogram


def lines(records) -> bytes:
    return "".join(
        json.dumps({"text": text, "meta": {"redpajama_set_name": label}}) + "\n" for text, label in records
    ).encode()


@pytest.fixture
def records(corpus_records):
    return [r for shard in corpus_records for r in shard][:40]


@pytest.fixture
def expected(records, counter):
    return reference_histogram(records, counter)


def run(dataset, **options):
    return scan(dataset, L=[256], regimes=["natural"], progress=False, workers=1, **options)


def test_compressed_json_lines(tmp_path, records, expected):
    (tmp_path / "a.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines(records[:15])))
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(lines(records[15:])))
    result = run("slimpajama", data_files=[str(tmp_path / "a.jsonl.zst"), str(tmp_path / "b.jsonl.gz")])
    assert_same_histogram(result.histogram, expected)


def test_parquet_with_the_source_label_as_a_json_string(tmp_path, records, expected):
    import polars as pl

    frame = pl.DataFrame(
        {
            "text": [t for t, _ in records],
            "meta": [json.dumps({"redpajama_set_name": label}) for _, label in records],
        }
    )
    frame.write_parquet(tmp_path / "part.parquet")
    assert_same_histogram(run("slimpajama", data_files=str(tmp_path / "*.parquet")).histogram, expected)


def test_datasets_streaming_of_local_files(tmp_path, records, expected):
    (tmp_path / "part.jsonl").write_bytes(lines(records))
    result = run("json", data_files=str(tmp_path / "part.jsonl"), source_field="meta.redpajama_set_name")
    assert_same_histogram(result.histogram, expected)


def test_a_dataset_saved_with_save_to_disk(tmp_path, records, expected):
    from datasets import Dataset

    Dataset.from_list([{"text": t, "meta": {"redpajama_set_name": label}} for t, label in records]).save_to_disk(
        str(tmp_path / "saved")
    )
    result = run(str(tmp_path / "saved"), source_field="meta.redpajama_set_name")
    assert_same_histogram(result.histogram, expected)
