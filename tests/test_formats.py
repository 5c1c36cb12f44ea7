"""Every file freqlab writes matches its definition in freqlab.formats: each is written here through the code that
writes it (a scan, ``freqlab freq --out``, ``freqlab plan string --usage-out``, ``freqlab calibrate --out``, the
checkpoint store) and read back
with polars: columns and their dtypes, the JSON header's keys under the ``freqlab`` Parquet metadata key, its format
name and version."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from freqlab import formats
from freqlab.cli import main
from freqlab.formats import METADATA_KEY, TableFormat
from freqlab.histogram import LengthHistogram, combine_sources
from freqlab.scan import scan
from freqlab.scan.checkpoint import CheckpointStore
from freqlab.scan.counts import DocumentLog, ShardCount


def check_table(path, fmt: TableFormat, optional: tuple[str, ...] = ()) -> dict:
    """The file has exactly ``fmt``'s columns (plus the ``optional`` ones named) with their dtypes, and its header
    (returned) has ``fmt``'s format, version and keys."""
    schema = {name: str(dtype) for name, dtype in pl.read_parquet_schema(path).items()}
    assert schema == {**fmt.columns, **{name: fmt.optional[name] for name in optional}}
    metadata = pl.read_parquet_metadata(path)
    if fmt.name is None:
        assert METADATA_KEY not in metadata
        return {}
    header = json.loads(metadata[METADATA_KEY])
    assert (header["format"], header["version"]) == (fmt.name, fmt.version)
    assert set(fmt.header) <= set(header) <= {*fmt.header, *fmt.header_optional}
    return header


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    """A real scan of a small Parquet corpus whose records carry their length (no tokenizer), written out."""
    folder = tmp_path_factory.mktemp("scan")
    corpus = folder / "corpus.parquet"
    pl.DataFrame({"n": [3, 5, 5, 9, 0]}).write_parquet(corpus)
    out = folder / "out"
    scan(str(corpus), length_field="n", L=[8], workers=1, out=out, progress=False)
    return out


def test_lengths_parquet_of_a_scan(scanned):
    path = scanned / formats.LENGTHS_FILE
    header = check_table(path, formats.LENGTHS)
    assert pl.read_parquet(path).rows() == [(3, 1), (5, 2), (9, 1)]
    assert header["empty_documents"] == 1


def test_lengths_parquet_split_by_source_has_the_source_column_and_the_unlabelled_source(tmp_path):
    split = combine_sources({"web": LengthHistogram.from_lengths([3, 4], corpus="web")})
    merged = split + LengthHistogram.from_lengths([7])  # documents without a label join as their own source
    path = merged.to_parquet(tmp_path / "lengths.parquet")
    check_table(path, formats.LENGTHS, ("source",))
    assert sorted(set(pl.read_parquet(path)["source"])) == [formats.UNLABELLED_SOURCE, "web"]


def test_summary_json_of_a_scan(scanned):
    summary = json.loads((scanned / formats.SUMMARY_FILE).read_text())
    assert set(formats.SUMMARY_KEYS) <= set(summary) <= {*formats.SUMMARY_KEYS, *formats.SUMMARY_OPTIONAL_KEYS}
    assert summary["outputs"]["lengths"].endswith(formats.LENGTHS_FILE)


def test_checkpoints_and_their_manifest_of_a_scan(scanned):
    folder = scanned / formats.CHECKPOINTS_DIR
    manifest = json.loads((folder / formats.CHECKPOINT_MANIFEST).read_text())
    assert tuple(sorted(manifest)) == tuple(sorted(formats.MANIFEST_KEYS))
    fingerprint = manifest["fingerprint"]
    assert fingerprint["version"] == formats.FINGERPRINT_VERSION
    # the corpus is read by a length field: the read options are part of the fingerprint
    assert set(fingerprint) == {*formats.FINGERPRINT_KEYS, *formats.FINGERPRINT_OPTIONAL_KEYS}
    (checkpoint,) = folder.glob("*.parquet")
    header = check_table(checkpoint, formats.CHECKPOINT_COUNTS)
    assert header["documents_read"] == 5


@pytest.mark.parametrize("positions", [False, True])
def test_a_checkpoint_holding_a_document_log(tmp_path, positions):
    store = CheckpointStore(tmp_path, {"tokenizer": "t"})
    store.start(resume=False)
    codes, sources = np.array([5, 0, 7], np.int64), np.array([0, 0, 0], np.int32)
    part = ShardCount(shard_id="shard.jsonl")
    part.add(codes, sources, [None], [])
    part.log = DocumentLog([codes], [sources], [np.array([0, 2, 4])] if positions else [], [None], [])
    store.save(part, {"size": 1})
    (path,) = tmp_path.glob("*.parquet")
    check_table(path, formats.CHECKPOINT_LOG, ("position",) if positions else ())


def test_the_f_parquet_of_freq_out(tmp_path):
    hist = LengthHistogram.from_lengths([3, 6, 6]).to_parquet(tmp_path / "lengths.parquet")
    out = tmp_path / "f.parquet"
    result = CliRunner().invoke(main, ["freq", str(hist), "--L", "4", "--regime", "natural", "--out", str(out)])
    assert result.exit_code == 0, result.output
    header = check_table(out, formats.FREQUENCY)
    assert (header["L"], header["regimes"]) == ([4], ["natural"])
    segments = [3, 4, 2, 4, 2]  # natural: 6 is cut into 4 + 2
    assert pl.read_parquet(out)["frequency"].to_list() == [sum(max(s - i, 0) for s in segments) for i in range(4)]


@pytest.mark.parametrize("with_histogram", [False, True])
def test_the_usage_parquet_of_plan_string(tmp_path, with_histogram):
    usage = tmp_path / "usage.parquet"
    hist = ["--hist", str(LengthHistogram.from_lengths([1024] * 4).to_parquet(tmp_path / "h.parquet"))]
    args = ["plan", "string", "--L", "1024", "--usage-out", str(usage), *(hist if with_histogram else [])]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    header = check_table(usage, formats.USAGE, ("trained",) if with_histogram else ())
    assert pl.read_parquet(usage)["position"].to_list() == list(range(1024))
    assert (header["L"], header["S"], header["W"]) == (1024, 384, 128)  # S = L/3 rounded up to 64; W = 128


def test_the_calibration_json_of_calibrate(tmp_path):
    out = tmp_path / "tau.json"
    assert CliRunner().invoke(main, ["calibrate", "--out", str(out)]).exit_code == 0
    data = json.loads(out.read_text())
    assert tuple(data) == formats.CALIBRATION_KEYS
    assert (data["format"], data["version"]) == (formats.CALIBRATION_FORMAT, formats.CALIBRATION_VERSION)
    assert data["tau"] == 100e9  # the STRING paper's two TinyLlama points (Sec. 3) give tau = 100B


def test_the_old_names_are_the_definitions():
    from freqlab import histogram
    from freqlab.cli import freq
    from freqlab.scan import checkpoint, settings

    assert (histogram.FORMAT, histogram.FORMAT_VERSION) == (formats.LENGTHS_FORMAT, formats.LENGTHS_VERSION)
    assert histogram.UNLABELLED_SOURCE == formats.UNLABELLED_SOURCE == "(none)"
    assert freq.FREQUENCY_FORMAT == formats.FREQUENCY_FORMAT == "freqlab.position_frequency"
    assert (checkpoint.FORMAT, checkpoint.VERSION, checkpoint.MANIFEST) == (
        "freqlab.scan.checkpoint", 3, "manifest.json",
    )  # fmt: skip
    assert settings.FINGERPRINT_VERSION == formats.FINGERPRINT_VERSION == 3  # 3: the tokenizer's rules hash


def test_the_versions_on_disk_today():
    """A version changes only with a deliberate bump here (and a reader for the files of the old one, or a refusal)."""
    f = formats
    # checkpoints 3: counted_by (documents per tokenizer backend); one of version 2 is recounted ("from another
    # freqlab version"), as any other of another version
    assert (f.LENGTHS_VERSION, f.FREQUENCY_VERSION, f.CHECKPOINT_VERSION, f.FINGERPRINT_VERSION) == (1, 1, 3, 3)
    # usage 1: the header (format, version, L, S, W) that --usage-out recognises before replacing a file
    assert formats.USAGE.version == 1 and formats.METADATA_KEY == "freqlab"


def test_a_group_of_checkpoints(tmp_path):
    """Small shards' partials written together: the group's header lists theirs, their rows follow one another."""
    import polars as pl

    store = CheckpointStore(tmp_path, {"tokenizer": "t"})
    store.start(resume=False)
    for k in range(2):
        part = ShardCount(shard_id=f"shard-{k}.jsonl")
        part.add(np.array([5, 0, 7][: k + 2], np.int64), np.zeros(k + 2, np.int32), [None], [])
        store.stage(part, {"size": k})
    store.flush()
    (path,) = tmp_path.glob("group+*.parquet")
    header = json.loads(pl.read_parquet_metadata(path)[formats.METADATA_KEY])
    assert tuple(header) == formats.CHECKPOINT_GROUP_HEADER and header["format"] == formats.CHECKPOINT_FORMAT
    assert [set(part) for part in header["group"]] == [set(formats.CHECKPOINT_COUNTS.header)] * 2
    assert sum(part["rows"] for part in header["group"]) == pl.read_parquet(path).height
    assert {name: str(dtype) for name, dtype in pl.read_parquet_schema(path).items()} == (
        formats.CHECKPOINT_COUNTS.columns
    )
