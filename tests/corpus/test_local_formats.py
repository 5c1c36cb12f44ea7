"""Every local format yields exactly the documents (texts and source labels) that were written, in order."""

from __future__ import annotations

import json
import os
import pickle
import re
import tracemalloc
from collections import Counter

import pytest
from corpus_helpers import SETS, expected, jsonl_bytes, read_all, write_bytes, write_jsonl, write_parquet

from freqlab.corpus import MISSING_SOURCE, builtin_corpus, open_corpus
from freqlab.corpus.columnar import BATCH_ROWS
from freqlab.errors import FreqlabError

JSONL_NAMES = ["part.jsonl", "part.jsonl.gz", "part.json.gz", "part.jsonl.zst", "part.json", "part.ndjson"]


@pytest.mark.parametrize("name", JSONL_NAMES)
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_json_lines_in_every_compression(tmp_path, records, name, ensure_ascii):
    path = write_jsonl(tmp_path / name, records, ensure_ascii)
    corpus = open_corpus("slimpajama", data_files=str(path))
    assert corpus.name == "slimpajama (local files)"
    assert corpus.has_sources
    assert read_all(corpus) == expected(records)
    docs = list(corpus.documents())
    assert [d.where for d in docs] == [f"{path}:{i}" for i in range(1, len(records) + 1)]
    assert corpus.total_documents is None  # unknown without reading the file
    fmt = corpus.description["formats"]
    assert sum(fmt.values()) == 1


def test_a_file_url_is_its_local_path(tmp_path, records):
    """A review: file:///data/x.jsonl was "no such file or directory" (file:// is documented as local)."""
    path = write_jsonl(tmp_path / "a b.jsonl", records, True)
    url = "file://" + str(path).replace(" ", "%20")
    assert read_all(open_corpus(url, source_field="meta.redpajama_set_name")) == expected(records)
    assert read_all(open_corpus("slimpajama", data_files=[url.replace("file://", "FILE://localhost")])) == expected(
        records
    )
    assert read_all(open_corpus("slimpajama", data_files=[url.replace("file://", "file:")])) == expected(records)
    # a second review: what follows file:// is a host, never a preset, a Hub id or a relative path
    for url in ("file://allenai/c4", "file://slimpajama", "file://data/corpus", "local://x/y"):
        with pytest.raises(FreqlabError, match="is read as a host"):
            open_corpus(url)
    for url in ("file:relative.jsonl", "file://localhost"):
        with pytest.raises(FreqlabError, match=r"URL names an absolute path .*; none is given"):
            open_corpus(url)
    # a glob's ? is the path's, not a URL query (a fourth review: chunk?/ read the folder chunk instead)
    for name in ("chunk1", "chunk2", "chunk"):
        write_jsonl(tmp_path / name / "a.jsonl", records, True)
    globbed = open_corpus("file://" + str(tmp_path / "chunk?" / "*.jsonl"), source_field="meta.redpajama_set_name")
    assert sorted(read_all(globbed)) == sorted(expected(records) * 2)
    with pytest.raises(FreqlabError, match="is read as a host"):
        open_corpus("file://[bad/x")  # one line, not urlsplit's "Invalid IPv6 URL"


@pytest.mark.parametrize("meta_as_json_string", [False, True], ids=["struct-meta", "json-string-meta"])
def test_parquet_with_struct_or_json_string_meta(tmp_path, records, meta_as_json_string):
    path = write_parquet(tmp_path / "part.parquet", records, meta_as_json_string)
    corpus = open_corpus("slimpajama", data_files=str(path))
    assert read_all(corpus) == expected(records)
    assert corpus.total_documents == len(records)  # from the Parquet footer
    assert [d.where for d in corpus.documents()][-1] == f"{path}:row {len(records)}"


def test_parquet_is_read_in_bounded_batches(tmp_path, records):
    many = records * (2 * BATCH_ROWS // len(records) + 1)  # more rows than two batches
    path = write_parquet(tmp_path / "many.parquet", many)
    assert read_all(open_corpus("slimpajama", data_files=str(path))) == expected(many)


def test_text_files_one_document_per_file(tmp_path, records):
    folder = tmp_path / "texts"
    folder.mkdir()
    for i, record in enumerate(records):
        (folder / f"doc{i:03d}.txt").write_text(record["text"], encoding="utf-8")
    corpus = open_corpus(str(folder))
    assert not corpus.has_sources
    assert read_all(corpus) == expected(records, sources=False)
    assert corpus.total_documents == len(records)
    assert [d.where for d in corpus.documents()][:2] == [str(folder / "doc000.txt"), str(folder / "doc001.txt")]


def test_text_files_are_grouped_into_shards(tmp_path, records):
    from freqlab.corpus.text import FILES_PER_SHARD

    folder = tmp_path / "texts"
    folder.mkdir()
    count = FILES_PER_SHARD + 3
    for i in range(count):
        (folder / f"{i:04d}.txt").write_text(records[i % len(records)]["text"], encoding="utf-8")
    corpus = open_corpus(str(folder))
    assert [len(shard.files) for shard in corpus.shards] == [FILES_PER_SHARD, 3]
    assert [shard.id for shard in corpus.shards] == [f"0000.txt (+{FILES_PER_SHARD - 1} files)", "0256.txt (+2 files)"]
    assert sum(1 for _ in corpus.documents()) == count


def test_utf8_bom_is_not_part_of_the_text(tmp_path, records):
    path = write_bytes(tmp_path / "bom.jsonl", b"\xef\xbb\xbf" + json.dumps(records[0]).encode())
    assert read_all(open_corpus("slimpajama", data_files=str(path))) == expected(records[:1])
    txt = tmp_path / "bom.txt"
    txt.write_bytes(b"\xef\xbb\xbf" + records[0]["text"].encode())
    assert read_all(open_corpus(str(txt))) == [(records[0]["text"], None)]


def test_saved_dataset(tmp_path, records):
    import datasets

    folder = tmp_path / "saved"
    datasets.Dataset.from_list(records).save_to_disk(str(folder), num_shards=2)
    corpus = open_corpus("slimpajama", data_files=str(folder))
    assert len(corpus.shards) == 2
    assert corpus.description["formats"] == {"arrow": 2}
    assert corpus.total_documents == len(records)
    assert read_all(corpus) == expected(records)
    # a glob over the folder reads the Arrow files and passes over the metadata JSON
    globbed = open_corpus("slimpajama", data_files=str(folder / "*"))
    assert read_all(globbed) == expected(records)
    assert globbed.description["ignored_files"] == 2  # state.json, dataset_info.json
    # an Arrow file its state.json does not list is not read (as datasets does not), and said so
    import shutil

    shutil.copy(folder / "data-00000-of-00002.arrow", folder / "data-00005-of-00002.arrow")
    extra = open_corpus("slimpajama", data_files=str(folder))
    assert read_all(extra) == expected(records) and extra.description["ignored_files"] == 1


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("state.json", "[1, 2]"),
        ("state.json", '{"_data_files": [{"name": "x"}]}'),
        ("state.json", '{"_data_files": "data-00000-of-00002.arrow"}'),
        ("dataset_dict.json", '["train"]'),
        ("dataset_dict.json", '{"splits": "train"}'),
    ],
)
def test_saved_dataset_metadata_of_the_wrong_shape_is_one_line_naming_it(tmp_path, records, name, content):
    """A review met AttributeError, KeyError and TypeError tracebacks from hand-edited metadata."""
    import datasets

    folder = tmp_path / "saved"
    datasets.DatasetDict({"train": datasets.Dataset.from_list(records)}).save_to_disk(str(folder))
    path = folder / name if name == "dataset_dict.json" else folder / "train" / name
    path.write_text(content)
    with pytest.raises(FreqlabError) as raised:
        open_corpus(str(folder))
    assert re.match(rf"{re.escape(str(path))}: cannot read saved-dataset metadata \(no list of", str(raised.value))


def test_arrow_files_in_stream_and_file_format(tmp_path, records):
    import pyarrow as pa

    table = pa.Table.from_pylist(records[:10])
    with pa.OSFile(str(tmp_path / "a.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=3)
    table = pa.Table.from_pylist(records[10:])
    with pa.OSFile(str(tmp_path / "b.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=3)
    corpus = open_corpus("slimpajama", data_files=str(tmp_path))
    assert corpus.description["formats"] == {"arrow": 2}
    assert corpus.total_documents == len(records)  # from the batch headers
    assert read_all(corpus) == expected(records)
    assert [d.where for d in corpus.shards[1].read()][-1] == f"{tmp_path / 'b.arrow'}:row {len(records) - 10}"


def test_saved_dataset_dict_reads_the_requested_split(tmp_path, records):
    import datasets

    folder = tmp_path / "saved_dict"
    half = len(records) // 2
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(records[:half]), "validation": datasets.Dataset.from_list(records[half:])}
    ).save_to_disk(str(folder))
    assert read_all(open_corpus("slimpajama", data_files=str(folder))) == expected(records[:half])
    validation = open_corpus("slimpajama", data_files=str(folder), split="validation")
    assert read_all(validation) == expected(records[half:])
    # the other split's files are passed over and counted, as the report says; one that cannot be read stops nothing
    assert validation.description["ignored_files"] == 1 and "train" in validation.description["ignored_examples"][0]
    (folder / "train" / "state.json").unlink()
    assert read_all(open_corpus("slimpajama", data_files=str(folder), split="validation")) == expected(records[half:])


def test_a_glob_over_a_saved_split_passes_over_its_map_results(tmp_path, records):
    """A review: ``saved/train/*.arrow`` read the .map() copy beside the split's data (20 documents read as 40),
    where the folder itself reads the split alone and says what it passed over."""
    import datasets

    folder = tmp_path / "saved"
    datasets.DatasetDict({"train": datasets.Dataset.from_list(records)}).save_to_disk(str(folder))
    saved = datasets.load_from_disk(str(folder))["train"]
    saved.map(lambda row: {"text": row["text"] + "!"}, load_from_cache_file=False)
    (mapped,) = (folder / "train").glob("cache-*.arrow")
    for spec in (folder / "train" / "*.arrow", folder / "train", folder / "*" / "*.arrow"):
        corpus = open_corpus("slimpajama", data_files=str(spec))
        assert read_all(corpus) == expected(records), spec
        assert corpus.description["ignored_examples"] == [str(mapped)], spec
    assert read_all(open_corpus("slimpajama", data_files=str(mapped))) == [  # named, it is read as asked
        (text + "!", source) for text, source in expected(records)
    ]


def test_a_datasets_cache_folder_reads_the_requested_split_alone(tmp_path, records, monkeypatch):
    """load_dataset's prepared data: one Arrow file per split (or shard) and a .map() result beside them; all three
    were read and added up (50 train + 10 test + 50 mapped: 110) and --split could not choose."""
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    half = len(records) // 2
    write_jsonl(tmp_path / "train.jsonl", records[:half])
    write_jsonl(tmp_path / "test.jsonl", records[half:])
    files = {"train": str(tmp_path / "train.jsonl"), "test": str(tmp_path / "test.jsonl")}
    loaded = datasets.load_dataset("json", data_files=files, cache_dir=str(tmp_path / "cache"))
    loaded["train"].map(lambda row: {"text": row["text"].upper()})
    (info,) = (tmp_path / "cache").rglob("dataset_info.json")
    names = sorted(p.name for p in info.parent.glob("*.arrow"))
    assert names[0].startswith("cache-") and names[1:] == ["json-test.arrow", "json-train.arrow"]
    for spec in (info.parent, tmp_path / "cache"):  # the folder, or the cache above it
        corpus = open_corpus("slimpajama", data_files=str(spec))
        assert read_all(corpus) == expected(records[:half])
        ignored = [name for name in corpus.description["ignored_examples"] if name.endswith(".arrow")]
        assert sorted(name.rsplit("/", 1)[-1] for name in ignored) == names[:2]
    # a glob over the folder's Arrow files takes the splits it names, not the .map() result beside them
    corpus = open_corpus("slimpajama", data_files=str(info.parent / "*.arrow"))
    assert read_all(corpus) == expected(records[half:] + records[:half])  # json-test.arrow, json-train.arrow
    assert [name.rsplit("/", 1)[-1] for name in corpus.description["ignored_examples"]] == names[:1]
    test = open_corpus("slimpajama", data_files=str(info.parent), split="test")
    assert read_all(test) == expected(records[half:]) and test.description["split"] == "test"  # the report says it
    with pytest.raises(FreqlabError, match=r"without split 'dev' \(splits: train, test\): choose one with --split"):
        open_corpus(str(info.parent), split="dev")


@pytest.mark.parametrize("layout", ["shards", "folders"])
def test_a_folder_of_files_named_for_several_splits_is_read_whole_and_says_so(tmp_path, records, layout):
    """A local copy of a Hub dataset (data/train-00000-of-00001.parquet beside data/test-...) or a corpus cut into
    train/ and dev/ folders: read whole, as every folder, and the description counts the files of each split named
    (the report says so: they were added up without a word). Read as datasets names splits (dev is validation)."""
    half = len(records) // 2
    names = {"shards": ("data/train-00000-of-00001.jsonl", "data/test-00000-of-00001-5ab1b5eb.jsonl"),
             "folders": ("train/chunk1/a.jsonl", "dev/chunk1/a.jsonl")}[layout]  # fmt: skip
    for name, part in zip(names, (records[:half], records[half:]), strict=True):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(tmp_path / name, part)
    write_jsonl(tmp_path / "notes.jsonl", records[:1])  # named for no split
    corpus = open_corpus("slimpajama", data_files=str(tmp_path))
    assert Counter(read_all(corpus)) == Counter(expected(records[:1] + records))
    other = "test" if layout == "shards" else "validation"
    assert corpus.description["splits_named"] == dict(sorted({other: 1, "train": 1}.items()))
    assert "split" not in corpus.description
    alone = "data/train-*" if layout == "shards" else "train"  # one split's files: a glob, or its folder
    one = open_corpus("slimpajama", data_files=str(tmp_path / alone))
    assert "splits_named" not in one.description
    with pytest.raises(FreqlabError, match="--split 'test' applies to Hugging Face datasets"):
        open_corpus("slimpajama", data_files=str(tmp_path), split="test")


def _arrow_stream(path, texts):
    import pyarrow as pa

    table = pa.table({"text": texts})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


@pytest.mark.parametrize(
    ("path", "split"),
    [("wiki_train.jsonl", "train"), ("train_v2/a.jsonl", "train"), ("dev/x.jsonl", "validation"),
     ("data/test-00000-of-00001-5ab1b5eb.parquet", "test"), ("Test.jsonl", None), ("en.train.jsonl", "train"),
     ("a.val.jsonl.zst", "validation"), ("latest.jsonl", None),
     ("x/retrain/a.jsonl", None), ("a.jsonl", None)],
)  # fmt: skip
def test_split_words_are_read_as_datasets_reads_them(path, split):
    """A split word between separators, in a folder or the file's name (datasets' "**/*[-._ 0-9/]train[-._ 0-9]*"):
    wiki_train.jsonl and train_v2/ were missed."""
    from freqlab.corpus.file_discovery import split_named

    assert split_named(path.replace("/", os.sep)) == split


def test_a_glob_of_folders_named_for_splits_says_so(tmp_path, monkeypatch):
    for name in ("train", "test"):
        write_jsonl(tmp_path / "hub" / name / "a.jsonl", [{"text": name}])
    corpus = open_corpus(str(tmp_path / "hub" / "*"))
    assert corpus.description["splits_named"] == {"test": 1, "train": 1}
    monkeypatch.chdir(tmp_path / "hub")  # a pattern whose first part is a wildcard: its folder is the working one
    assert open_corpus("*").description["splits_named"] == {"test": 1, "train": 1}


def test_a_datasets_cache_folder_missing_a_shard_is_refused_and_lookalikes_are_plain_folders(tmp_path):
    """A split written in shards (json-train-0000k-of-00002.arrow) with one gone was read short (300 of 600
    documents, exit 0); a cache folder whose metadata does not say which files are the split is an error (read
    whole, it adds up its splits and .map() copies); a folder with a dataset_info.json and no Arrow file beside it
    is a folder like any other."""
    cache = tmp_path / "cache"
    cache.mkdir()
    info = {"builder_name": "json", "dataset_name": "json", "splits": {"train": {"name": "train", "num_examples": 4}}}
    (cache / "dataset_info.json").write_text(json.dumps(info))
    for k in range(2):
        _arrow_stream(cache / f"json-train-0000{k}-of-00002.arrow", [f"doc {k} a", f"doc {k} b"])
    assert len(read_all(open_corpus(str(cache)))) == 4
    (cache / "json-train-00001-of-00002.arrow").unlink()
    with pytest.raises(FreqlabError, match=r"is not one whole run of shards \(json-train-00000-of-00002.arrow; 2 "):
        open_corpus(str(cache))
    _arrow_stream(cache / "json-train-00001-of-00002.arrow", ["x"])
    _arrow_stream(cache / "json-train-00002-of-00002.arrow", ["y"])  # one too many: read twice, or a stale one
    with pytest.raises(FreqlabError, match="one too many twice"):
        open_corpus(str(cache))
    (cache / "json-train-00002-of-00002.arrow").unlink()
    for bad in ("{not json", json.dumps({**info, "builder_name": None, "dataset_name": None})):
        (cache / "dataset_info.json").write_text(bad)  # metadata that does not say which files are the split
        with pytest.raises(FreqlabError, match=r"dataset_info\.json"):
            open_corpus(str(cache))
    plain = tmp_path / "plain"
    (plain / "data").mkdir(parents=True)
    (plain / "dataset_info.json").write_text(json.dumps(info))
    write_jsonl(plain / "data" / "part.jsonl", [{"text": "x"}])
    assert len(read_all(open_corpus(str(plain)))) == 1
    (plain / "dataset_info.json").write_text("{not json")
    assert len(read_all(open_corpus(str(plain)))) == 1


def test_folders_globs_sorting_and_ignored_files(tmp_path, records):
    root = tmp_path / "SlimPajama" / "train"
    write_jsonl(root / "chunk2" / "example_train_0.jsonl.zst", records[10:])
    write_jsonl(root / "chunk1" / "example_train_1.jsonl.zst", records[5:10])
    write_jsonl(root / "chunk1" / "example_train_0.jsonl.zst", records[:5])
    (root / "chunk1" / "README.md").write_text("not data")
    (root / ".cache").mkdir()
    write_jsonl(root / ".cache" / "hidden.jsonl", records)  # hidden folders are not entered

    by_folder = open_corpus("slimpajama", data_files=str(root.parent))
    assert read_all(by_folder) == expected(records)  # sorted: chunk1/0, chunk1/1, chunk2/0
    # shard ids: paths relative to the files' common folder
    assert [shard.id for shard in by_folder.shards] == [
        "chunk1/example_train_0.jsonl.zst",
        "chunk1/example_train_1.jsonl.zst",
        "chunk2/example_train_0.jsonl.zst",
    ]
    assert by_folder.description["ignored_files"] == 1
    assert by_folder.description["formats"] == {"jsonl.zst": 3}

    by_glob = open_corpus("slimpajama", data_files=str(root / "chunk*" / "*.jsonl.zst"))
    assert read_all(by_glob) == expected(records)
    assert [s.id for s in by_glob.shards] == [
        "chunk1/example_train_0.jsonl.zst",
        "chunk1/example_train_1.jsonl.zst",
        "chunk2/example_train_0.jsonl.zst",
    ]
    # the same file named twice is read once
    twice = open_corpus("slimpajama", data_files=[str(root / "chunk1"), str(root / "chunk1" / "*.zst")])
    assert read_all(twice) == expected(records[:10])


def test_dataset_path_without_preset_has_text_only_unless_source_field_given(tmp_path, records):
    path = write_jsonl(tmp_path / "data.jsonl", records)
    plain = open_corpus(str(path))
    assert not plain.has_sources
    assert read_all(plain) == expected(records, sources=False)
    labelled = open_corpus(str(path), source_field="meta.redpajama_set_name")
    assert labelled.has_sources
    assert read_all(labelled) == expected(records)
    # data_files without a dataset: the same as a path
    assert read_all(open_corpus(data_files=str(path))) == expected(records, sources=False)


def test_field_overrides_and_missing_source_label(tmp_path):
    rows = [{"content": "a", "meta": {"redpajama_set_name": "X"}}, {"content": "b", "meta": {}}, {"content": "c"}]
    path = write_jsonl(tmp_path / "code.jsonl", rows)
    corpus = open_corpus("slimpajama", data_files=str(path), text_field="content")
    assert read_all(corpus) == [("a", "X"), ("b", MISSING_SOURCE), ("c", MISSING_SOURCE)]


def test_mixed_formats_in_one_folder(tmp_path, records):
    write_jsonl(tmp_path / "a.jsonl.gz", records[:6])
    write_parquet(tmp_path / "b.parquet", records[6:12], meta_as_json_string=True)
    (tmp_path / "c.txt").write_text(records[12]["text"] or "", encoding="utf-8")
    corpus = open_corpus("slimpajama", data_files=str(tmp_path))
    assert read_all(corpus) == [*expected(records[:12]), (records[12]["text"], MISSING_SOURCE)]
    assert corpus.description["formats"] == {"jsonl.gz": 1, "parquet": 1, "txt": 1}
    assert corpus.total_documents is None  # the JSON-lines file has no cheap count


def test_shards_are_small_picklable_and_read_the_same_after_pickling(tmp_path, records):
    write_jsonl(tmp_path / "a.jsonl.zst", records)
    write_parquet(tmp_path / "b.parquet", records)
    corpus = open_corpus("slimpajama", data_files=str(tmp_path))
    for shard in corpus.shards:
        blob = pickle.dumps(shard)
        assert len(blob) < 1000
        assert list(pickle.loads(blob).read()) == list(shard.read())
    assert len({shard.id for shard in corpus.shards}) == len(corpus.shards)


def test_memory_stays_bounded_while_streaming_a_big_file(tmp_path):
    # ~25 MB of JSON lines (the whole standard library, one line per file, no huge file): streaming holds one
    # line plus 1 MiB buffers and one decompression step, never the file.
    lines, size = [], 0
    for doc in builtin_corpus().documents():
        if len(doc.text) < 200_000:
            lines.append(json.dumps({"text": doc.text}))
            size += len(lines[-1])
        if size > 25_000_000:
            break
    body = "\n".join(lines).encode()
    path = write_bytes(tmp_path / "big.jsonl.zst", body)
    corpus = open_corpus(str(path))
    tracemalloc.start()
    count = sum(1 for _ in corpus.documents())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == len(lines)
    assert len(body) > 25_000_000
    assert peak < 6_000_000


def test_a_huge_single_document_is_one_record(tmp_path, records):
    # ~10 million tokens' worth of text (40 MB) in one line: read as one document, memory ~ a few copies of it.
    text = (records[0]["text"] + "\n") * (40_000_000 // (len(records[0]["text"]) + 1))
    record = {"text": text, "meta": {"redpajama_set_name": SETS[2]}}
    path = write_bytes(tmp_path / "huge.jsonl.zst", json.dumps(record).encode())
    docs = list(open_corpus("slimpajama", data_files=str(path)).documents())
    assert len(docs) == 1
    assert docs[0].text == text
    assert docs[0].source == SETS[2]


def test_zstd_files_of_several_frames(tmp_path, records):
    # pzstd and concatenated .zst files hold several frames: all are read
    import zstandard

    compressor = zstandard.ZstdCompressor()
    frames = b"".join(compressor.compress(jsonl_bytes(records[i : i + 5])) for i in range(0, len(records), 5))
    path = tmp_path / "frames.jsonl.zst"
    path.write_bytes(frames)
    assert read_all(open_corpus("slimpajama", data_files=str(path))) == expected(records)


def test_source_field_can_be_turned_off(tmp_path, records):
    path = write_jsonl(tmp_path / "a.jsonl", records)
    corpus = open_corpus("slimpajama", data_files=str(path), source_field="")
    assert not corpus.has_sources
    assert read_all(corpus) == expected(records, sources=False)


def test_a_corpus_of_json_lines_loads_no_other_reader(tmp_path, records):
    """Formats are tried in order and their modules imported as they are reached: JSON lines (the first) never
    import the Parquet reader's pyarrow (~0.03 s before a scan's pool can start); a folder holding other files does,
    and the order of claims is the same either way."""
    import subprocess
    import sys

    write_jsonl(tmp_path / "only" / "a.jsonl.zst", records)
    (tmp_path / "mixed").mkdir()
    write_jsonl(tmp_path / "mixed" / "a.jsonl", records)
    (tmp_path / "mixed" / "notes.md").write_text("not data")
    code = """
import sys
from freqlab.corpus import open_corpus
from freqlab.corpus.registry import format_of, formats
corpus = open_corpus(sys.argv[1])
loaded = "freqlab.corpus.columnar" in sys.modules or "pyarrow" in sys.modules
names = ["a.jsonl.zst", "a.json.gz", "a.parquet", "a.arrow", "a.txt", "a.idx", "a.bin", "a.ds", "a.md"]
lazily = [getattr(format_of(name), "name", None) for name in names]
eagerly = [next((f.name for f in formats().values() if f.claims(name)), None) for name in names]
print(len(corpus.shards) > 0, loaded, lazily == eagerly, len(set(lazily)) > 4)
"""
    for folder, loaded in (("only", "False"), ("mixed", "True")):
        done = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / folder)], capture_output=True, text=True, check=True
        )
        assert done.stdout.split() == ["True", loaded, "True", "True"]
